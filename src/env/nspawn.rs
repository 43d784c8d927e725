//! The `nspawn` driver: the agent in a systemd-nspawn container over a
//! directory root file system made here of only the static binary (and the
//! `/usr` and `/etc/os-release` nspawn looks for), with nspawn's stub init
//! as its PID 1 (`--as-pid2`) and its standard streams piped (`--pipe`).
//! The host's network by default, a veth pair to a namespace of virtperf's
//! with `network=veth`. `cpus=`/`memory=` are unit properties of the scope
//! systemd makes for the container, so they need systemd as PID 1; where it
//! is not, they are refused with the reason, and the container is put in a
//! cgroup of virtperf's own (on the hierarchies nspawn uses), which ends
//! every process of it at cleanup and lets the next run sweep what a
//! killed one left. nspawn's version and the network go into the
//! fingerprint.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};

use super::def::{systemd_is_init, Check, DriverDef, EnvOption};
use super::syscontainer::{self as sc, Containers, InstanceNet};
use super::vethns;
use super::{Environment, Launched, OnHost, Route, Spec};
use crate::core::observer::Observer;
use crate::sys::owner;

/// The prefix of this driver's directories in TMPDIR, machines (and so
/// their cgroups) and network namespaces: `virtperf-nspawn-OWNER-...`.
const PREFIX: &str = "virtperf-nspawn-";

/// The port a server inside a veth container listens on.
const INSIDE_PORT: u16 = 12866;

/// Where systemd-nspawn keeps its per-machine mount propagation
/// directories and its locks on root directories.
const NSPAWN_RUN: &str = "/run/systemd/nspawn";

const OPTIONS: &[EnvOption] = &[
    EnvOption::new(
        "cpus",
        Check::ScopeLimit(&Check::HostCpus),
        "CPU limit (the scope's CPUQuota=; needs systemd as PID 1)",
    ),
    EnvOption::new(
        "memory",
        Check::ScopeLimit(&Check::HostMemory(6 << 20)),
        "memory limit (the scope's MemoryMax=; needs systemd as PID 1), e.g. 512m",
    ),
    sc::NETWORK,
];

pub const DEF: DriverDef = DriverDef {
    name: "nspawn",
    summary: "a systemd-nspawn container over a directory of only the static binary",
    target: None,
    options: OPTIONS,
    probe_by_default: true,
    build: |spec| Ok(Box::new(NspawnEnvironment::new(spec.clone()))),
    probe: probe_spec,
};

fn probe_spec(spec: &Spec) -> (bool, String) {
    let found = version().map(|v| {
        format!(
            "systemd-nspawn {v}, network {}{}",
            sc::network_mode(spec),
            match systemd_is_init() {
                Ok(()) => String::new(),
                Err(why) => format!(" (no cpus=/memory=: {why})"),
            }
        )
    });
    match found {
        Ok(detail) => (true, detail),
        Err(e) => (false, format!("{e:#}")),
    }
}

/// This machine's systemd-nspawn version (`252 (252.39-1~deb12u2)`), or
/// why it cannot be used; found once.
fn version() -> Result<String> {
    static FOUND: OnceLock<Result<String, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| find_version().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow!(e))
}

fn find_version() -> Result<String> {
    sc::tool_version("systemd-nspawn", "systemd-container", |text| {
        text.lines()
            .next()
            .and_then(|l| l.strip_prefix("systemd "))
            .map(|v| v.trim().to_string())
    })
}

/// The cgroup hierarchies nspawn places its container on when systemd is
/// not PID 1: the one v2 hierarchy, or (hybrid) the named `systemd` one and
/// the unified one beside the v1 controllers.
fn nspawn_hierarchies() -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() {
        return vec![root.to_path_buf()];
    }
    ["systemd", "unified"]
        .iter()
        .map(|h| root.join(h))
        .filter(|h| h.join("cgroup.procs").exists())
        .collect()
}

/// The lock systemd-nspawn takes on root directory `dir` (by its device
/// and inode); it is left when nspawn is killed.
fn lock_of(dir: &Path) -> Option<PathBuf> {
    let m = std::fs::metadata(dir).ok()?;
    Some(Path::new(NSPAWN_RUN).join(format!("locks/inode-{}:{}", m.dev(), m.ino())))
}

/// Removes what nspawn leaves in /run when killed: machine `name`'s
/// propagation directory and the lock on root directory `rootfs`.
fn remove_run_files(name: &str, rootfs: &Path) {
    let _ = std::fs::remove_dir_all(Path::new(NSPAWN_RUN).join("propagate").join(name));
    if let Some(lock) = lock_of(rootfs) {
        let _ = std::fs::remove_file(lock);
    }
}

/// Ends what runs killed before their cleanup left: containers (by their
/// cgroups), nspawn's files in /run, network namespaces; the run
/// directories go after (`sweep_run_dir` for each).
fn sweep() {
    sc::sweep_cgroups(&[], PREFIX);
    vethns::sweep(PREFIX);
    if let Ok(entries) = std::fs::read_dir(Path::new(NSPAWN_RUN).join("propagate")) {
        for e in entries.flatten() {
            let dead = e
                .file_name()
                .to_str()
                .and_then(|n| owner::in_name(n, PREFIX))
                .is_some_and(|o| o.is_dead());
            if dead {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// The locks a killed run's containers left on their root directories.
fn sweep_run_dir(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if let Some(lock) = lock_of(&e.path().join("rootfs")) {
            let _ = std::fs::remove_file(lock);
        }
    }
}

pub struct NspawnEnvironment {
    spec: Spec,
    ct: Containers,
    /// Whether systemd is PID 1 (it then makes the container's scope).
    systemd: bool,
}

impl NspawnEnvironment {
    pub fn new(spec: Spec) -> NspawnEnvironment {
        NspawnEnvironment {
            spec,
            ct: Containers::new("nspawn"),
            systemd: false,
        }
    }

    /// nspawn's command line for machine `name` over `rootfs`.
    fn command(&self, name: &str, rootfs: &Path) -> Command {
        let mut cmd = Command::new("systemd-nspawn");
        cmd.args(["--quiet", "--register=no", "--pipe", "--as-pid2"])
            .args(["--resolv-conf=off", "--timezone=off", "--link-journal=no"])
            .arg("--directory")
            .arg(rootfs)
            .args(["--machine", name, "--chdir=/work"]);
        if self.systemd {
            if let Some(c) = self.spec.opt("cpus").and_then(|c| c.parse::<f64>().ok()) {
                cmd.arg(format!("--property=CPUQuota={}%", (c * 100.0).round()));
            }
            if let Some(m) = sc::memory_bytes(&self.spec) {
                cmd.arg(format!("--property=MemoryMax={m}"));
            }
        } else {
            // No scope to make: nspawn stays in the cgroup it is started
            // in, one of virtperf's own.
            cmd.arg("--keep-unit");
        }
        cmd.args(["/virtperf", "agent"]);
        cmd
    }
}

/// Makes cgroup `name` on each of `hierarchies` and has the process
/// `cmd` starts join them before it runs.
fn join_own_cgroup(cmd: &mut Command, name: &str, hierarchies: &[PathBuf]) -> Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let mut files = Vec::new();
    for h in hierarchies {
        let dir = h.join(name);
        std::fs::create_dir(&dir)
            .with_context(|| format!("making cgroup {} for the container", dir.display()))?;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .with_context(|| format!("opening {}/cgroup.procs", dir.display()))?;
        files.push(f);
    }
    // SAFETY: between fork and exec only write(2), async-signal-safe,
    // runs; the files stay open in the closure until the command is dropped.
    unsafe {
        cmd.pre_exec(move || {
            for f in &files {
                // "0": the writing process itself.
                if libc::write(f.as_raw_fd(), b"0\n".as_ptr().cast(), 2) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok(())
}

impl Environment for NspawnEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn prepare(&mut self, _obs: &dyn Observer) -> Result<()> {
        if self.ct.prepared() {
            return Ok(());
        }
        let version = version()?;
        sweep();
        let dir = sc::run_dir(PREFIX, &sweep_run_dir)?;
        self.ct.set_prepared(dir, version);
        self.systemd = systemd_is_init().is_ok();
        Ok(())
    }

    fn launch(&self, index: usize) -> Result<Launched> {
        let (name, ct) = self.ct.next(PREFIX, index)?;
        let binary = self.ct.dir()?.join("virtperf");
        let launched = sc::make_rootfs(&ct.join("rootfs"), &binary, true)
            .and_then(|rootfs| self.start(index, &name, &rootfs));
        if launched.is_err() {
            sc::kill_cgroups(&name);
            let _ = std::fs::remove_dir_all(&ct);
        }
        launched
    }

    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn route_to_host(&self, index: usize) -> Result<Route> {
        Ok(sc::route(
            self.ct.pair(index),
            true,
            "systemd-nspawn",
            INSIDE_PORT,
        ))
    }

    fn route_to_env(&self, index: usize, _forwarded: Option<(u16, u16)>) -> Result<Route> {
        Ok(sc::route(
            self.ct.pair(index),
            false,
            "systemd-nspawn",
            INSIDE_PORT,
        ))
    }

    fn settings(&self, _index: usize) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        s.insert("runtime".into(), "systemd-nspawn".into());
        s.insert("nspawn_version".into(), self.ct.version.clone());
        s.insert("network".into(), sc::network_mode(&self.spec).into());
        for key in ["cpus", "memory"] {
            if let Some(v) = self.spec.opt(key) {
                s.insert(key.into(), v.into());
            }
        }
        s
    }
}

impl NspawnEnvironment {
    /// Starts systemd-nspawn for machine `name` over `rootfs`, in a veth
    /// namespace where `network=veth` and, without systemd, in a cgroup of
    /// its own.
    fn start(&self, index: usize, name: &str, rootfs: &Path) -> Result<Launched> {
        let net = InstanceNet::create(&self.spec, PREFIX, index)?;
        let mut cmd = self.command(name, rootfs);
        if let Some(ns) = &net.ns {
            vethns::join_in_child(&mut cmd, ns.path())?;
            self.ct.set_pair(index, ns);
        }
        if !self.systemd {
            join_own_cgroup(&mut cmd, name, &nspawn_hierarchies())?;
        }
        // nspawn's own chatter ("Attempted to remove disk file system
        // under /run/systemd/nspawn/propagate/...", printed as it ends)
        // is kept, bounded, by the session and shown only with an error.
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting systemd-nspawn (apt-get install systemd-container)")?;
        let name = name.to_string();
        let rootfs = rootfs.to_path_buf();
        Ok(Launched {
            child,
            // A killed nspawn leaves its container running: every process
            // in the container's cgroup is killed, then nspawn's files in
            // /run, the namespace and the directory go.
            cleanup: Some(Box::new(move || {
                sc::kill_cgroups(&name);
                remove_run_files(&name, &rootfs);
                drop(net);
                if let Some(ct) = rootfs.parent() {
                    let _ = std::fs::remove_dir_all(ct);
                }
            })),
            console: None,
            workdir: "/work".into(),
            forwarded: None,
            on_host: OnHost::Tree,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_without_systemd_as_init_are_refused_naming_the_reason_and_the_fix() {
        let parsed = Spec::parse("nspawn:cpus=1");
        match systemd_is_init() {
            Ok(()) => assert!(parsed.is_ok()),
            Err(why) => {
                let err = parsed.unwrap_err().to_string();
                assert!(err.contains(&why), "{err}");
                assert!(err.contains("leave cpus= and memory= out"), "{err}");
            }
        }
        assert!(Spec::parse("nspawn:network=veth").is_ok());
    }
}
