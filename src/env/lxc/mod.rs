//! The `lxc` driver: the agent in an LXC system container that
//! `lxc-execute` starts from a root file system made here of only the
//! static binary (LXC's own static `init.lxc` is its PID 1, the agent its
//! child). Unprivileged where the machine gives root subordinate ids,
//! privileged otherwise with the reason (`config`); `cpus=`/`memory=` as
//! cgroup limits; the host's network by default, a veth pair to a
//! namespace of virtperf's with `network=veth`. The run's directory, the
//! containers and their cgroups carry their owner's name, so what a killed
//! run left is swept by the next; LXC's version, the mode and the network
//! go into the fingerprint.

mod config;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::def::{Check, DriverDef, EnvOption};
use super::syscontainer::{self as sc, Containers, InstanceNet};
use super::vethns;
use super::{Environment, Launched, OnHost, Route, Spec};
use crate::core::observer::Observer;
use config::{Config, Mode};

/// The prefix of this driver's directories in TMPDIR, containers (and so
/// their cgroups) and network namespaces: `virtperf-lxc-OWNER-...`.
const PREFIX: &str = "virtperf-lxc-";

/// The port a server inside a veth container listens on.
const INSIDE_PORT: u16 = 12866;

const OPTIONS: &[EnvOption] = &[
    EnvOption::new(
        "cpus",
        Check::HostCpus,
        "CPU limit as a cgroup CPU quota, e.g. 1.5",
    ),
    EnvOption::new(
        "memory",
        Check::HostMemory(6 << 20),
        "memory limit as a cgroup limit, e.g. 512m or 2g (at least 6m)",
    ),
    sc::NETWORK,
    EnvOption::new(
        "mode",
        Check::Choice(&["unprivileged", "privileged"]),
        "unprivileged: root mapped onto root's subordinate ids (the default where /etc/subuid gives root 65536); privileged: the host's ids",
    ),
];

pub const DEF: DriverDef = DriverDef {
    name: "lxc",
    summary:
        "an LXC system container (lxc-execute) over a root file system of only the static binary",
    target: None,
    options: OPTIONS,
    probe_by_default: true,
    build: |spec| Ok(Box::new(LxcEnvironment::new(spec.clone()))),
    probe: probe_spec,
};

fn probe_spec(spec: &Spec) -> (bool, String) {
    let found = version().and_then(|v| {
        let mode = config::choose_mode(spec.opt("mode"))?;
        let why = match &mode {
            Mode::Privileged(Some(why)) => format!(" ({why})"),
            _ => String::new(),
        };
        Ok(format!(
            "LXC {v}, {}{why}, network {}",
            mode.name(),
            sc::network_mode(spec)
        ))
    });
    match found {
        Ok(detail) => (true, detail),
        Err(e) => (false, format!("{e:#}")),
    }
}

/// This machine's LXC version, or why it cannot be used; found once.
fn version() -> Result<String> {
    static FOUND: OnceLock<Result<String, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| find_version().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow!(e))
}

fn find_version() -> Result<String> {
    sc::tool_version("lxc-execute", "lxc", |text| {
        let v = text.trim();
        v.starts_with(|c: char| c.is_ascii_digit())
            .then(|| v.to_string())
    })
}

/// Ends what runs killed before their cleanup left: containers (by their
/// cgroups), LXC's `lxc.pivot` once no container is left, network
/// namespaces.
fn sweep() {
    sc::sweep_cgroups(&["lxc.payload.", "lxc.monitor."], PREFIX);
    remove_idle_pivot();
    vethns::sweep(PREFIX);
}

/// Ends container `name`: its processes (by its cgroups) and its cgroups,
/// then LXC's `lxc.pivot` if no container is left.
fn end_container(name: &str) {
    sc::kill_cgroups(&format!("lxc.payload.{name}"));
    sc::kill_cgroups(&format!("lxc.monitor.{name}"));
    remove_idle_pivot();
}

/// Removes the `lxc.pivot` cgroup LXC makes for its monitors (and never
/// removes) where no LXC container, of virtperf's or anyone's, has a
/// cgroup on that hierarchy; removing a cgroup fails anyway while
/// anything is in it.
fn remove_idle_pivot() {
    for h in sc::hierarchies() {
        let busy = std::fs::read_dir(&h).is_ok_and(|d| {
            d.flatten().any(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.starts_with("lxc.payload.") || n.starts_with("lxc.monitor.")
            })
        });
        if !busy {
            let _ = std::fs::remove_dir(h.join("lxc.pivot"));
        }
    }
}

pub struct LxcEnvironment {
    spec: Spec,
    ct: Containers,
    mode: Mode,
    v1: bool,
}

impl LxcEnvironment {
    pub fn new(spec: Spec) -> LxcEnvironment {
        LxcEnvironment {
            spec,
            ct: Containers::new("lxc"),
            mode: Mode::Privileged(None),
            v1: true,
        }
    }

    /// Writes container `name`'s root file system and configuration in
    /// `ct`; returns the configuration's path.
    fn make_container(&self, ct: &Path, name: &str, index: usize) -> Result<std::path::PathBuf> {
        let rootfs = sc::make_rootfs(&ct.join("rootfs"), &self.ct.dir()?.join("virtperf"), false)?;
        if let Mode::Unprivileged(range) = &self.mode {
            chown_tree(&rootfs, range.uid, range.gid)?;
        }
        let hostname = format!("virtperf-{index}");
        let cfg = Config {
            name,
            hostname: &hostname,
            rootfs: &rootfs,
            mode: &self.mode,
            cpus: self.spec.opt("cpus").and_then(|c| c.parse().ok()),
            memory: sc::memory_bytes(&self.spec),
            v1: self.v1,
        };
        let path = ct.join("config");
        std::fs::write(&path, cfg.text()).context("writing the container's LXC configuration")?;
        Ok(path)
    }
}

/// Gives `dir` and everything in it to `uid`:`gid` (never following links).
fn chown_tree(dir: &Path, uid: u64, gid: u64) -> Result<()> {
    let (uid, gid) = (uid as u32, gid as u32);
    std::os::unix::fs::lchown(dir, Some(uid), Some(gid))
        .with_context(|| format!("giving {} to the container's root", dir.display()))?;
    for entry in std::fs::read_dir(dir)?.flatten() {
        if entry.file_type()?.is_dir() {
            chown_tree(&entry.path(), uid.into(), gid.into())?;
        } else {
            std::os::unix::fs::lchown(entry.path(), Some(uid), Some(gid))?;
        }
    }
    Ok(())
}

impl Environment for LxcEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn prepare(&mut self, obs: &dyn Observer) -> Result<()> {
        if self.ct.prepared() {
            return Ok(());
        }
        let version = version()?;
        let mode = config::choose_mode(self.spec.opt("mode"))?;
        if let Mode::Privileged(Some(why)) = &mode {
            obs.note(&format!("lxc: running a privileged container: {why}"));
        }
        let limited = self.spec.opt("cpus").is_some() || self.spec.opt("memory").is_some();
        let v1 = sc::cgroup_v1();
        if limited && !v1 && !Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            bail!(
                "--env {}: no cgroup hierarchy here holds the cpu and memory controllers, so LXC cannot limit them: leave cpus= and memory= out",
                self.spec.text
            );
        }
        sweep();
        let dir = sc::run_dir(PREFIX, &|_| {})?;
        if matches!(mode, Mode::Unprivileged(_)) {
            // The container's root, an unprivileged id, passes through to
            // its root file system.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711))?;
        }
        std::fs::create_dir(dir.path().join("state"))?;
        self.ct.set_prepared(dir, version);
        self.mode = mode;
        self.v1 = v1;
        Ok(())
    }

    fn launch(&self, index: usize) -> Result<Launched> {
        let (name, ct) = self.ct.next(PREFIX, index)?;
        std::fs::create_dir(&ct)?;
        let launched = self
            .make_container(&ct, &name, index)
            .and_then(|cfg| self.start(index, &name, &ct, &cfg));
        if launched.is_err() {
            end_container(&name);
            let _ = std::fs::remove_dir_all(&ct);
        }
        launched
    }

    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn route_to_host(&self, index: usize) -> Result<Route> {
        Ok(sc::route(self.ct.pair(index), true, "LXC", INSIDE_PORT))
    }

    fn route_to_env(&self, index: usize, _forwarded: Option<(u16, u16)>) -> Result<Route> {
        Ok(sc::route(self.ct.pair(index), false, "LXC", INSIDE_PORT))
    }

    fn settings(&self, _index: usize) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        s.insert("runtime".into(), "lxc".into());
        s.insert("lxc_version".into(), self.ct.version.clone());
        s.insert("mode".into(), self.mode.name().into());
        if let Mode::Privileged(Some(why)) = &self.mode {
            s.insert("mode_reason".into(), why.clone());
        }
        s.insert("network".into(), sc::network_mode(&self.spec).into());
        for key in ["cpus", "memory"] {
            if let Some(v) = self.spec.opt(key) {
                s.insert(key.into(), v.into());
                let cg = if self.v1 { "v1" } else { "v2" };
                s.insert("cgroup".into(), cg.into());
            }
        }
        s
    }
}

impl LxcEnvironment {
    /// Starts `lxc-execute` for container `name` in `ct` with
    /// configuration `cfg`, in a veth namespace where `network=veth`.
    fn start(&self, index: usize, name: &str, ct: &Path, cfg: &Path) -> Result<Launched> {
        let state = self.ct.dir()?.join("state");
        let net = InstanceNet::create(&self.spec, PREFIX, index)?;
        let mut cmd = Command::new("lxc-execute");
        cmd.arg("-P")
            .arg(&state)
            .args(["-n", name, "-f"])
            .arg(cfg)
            .arg("-o")
            .arg(ct.join("lxc.log"))
            .args(["-l", "ERROR", "--", "/virtperf", "agent"]);
        if let Some(ns) = &net.ns {
            vethns::join_in_child(&mut cmd, ns.path())?;
            self.ct.set_pair(index, ns);
        }
        // lxc-execute's own errors ("lxc-execute: NAME: ... Failed to
        // ...") are kept, bounded, by the session and shown only with an
        // error; they are in its log too (`-o`), which goes with the
        // container's directory.
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting lxc-execute (apt-get install lxc)")?;
        let name = name.to_string();
        let ct = ct.to_path_buf();
        Ok(Launched {
            child,
            // The container dies with lxc-execute; what is left of it (a
            // hung agent, its cgroups) is killed and removed, then its
            // namespace and directory.
            cleanup: Some(Box::new(move || {
                end_container(&name);
                drop(net);
                let _ = std::fs::remove_dir_all(ct);
            })),
            console: None,
            workdir: "/work".into(),
            forwarded: None,
            on_host: OnHost::Tree,
        })
    }
}
