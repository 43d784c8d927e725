//! The `gvisor` driver: the agent in a gVisor sandbox, started by runsc
//! itself (no Docker) from an OCI bundle made here of only the static
//! binary. Each instance runs in a network namespace of its own with a
//! veth pair to the host, as a container on an engine's bridge, and
//! network workloads cross it. `platform=` and `network=` are probed (see
//! `probe`); the platform, runsc's version and the network mode go into the
//! fingerprint. Everything lives in one directory named after its owner
//! (runsc's state, the bundles) and namespaces named the same way: a killed
//! run's are swept by the next.

mod bundle;
mod probe;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::def::{Check, DriverDef, EnvOption};
use super::vethns::{self, VethNamespace};
use super::{Environment, Launched, NetNeed, OnHost, Route, Spec};
use crate::core::observer::Observer;
use crate::sys::bounded::{run_bounded, run_cleanup, Limits};
use crate::sys::owner::{self, Owner};

/// The prefix of this driver's directories in TMPDIR and of its network
/// namespaces: `virtperf-gvisor-OWNER-...`.
const PREFIX: &str = "virtperf-gvisor-";

/// The port a server inside a sandbox listens on (its own namespace).
const INSIDE_PORT: u16 = 12866;

/// How long a runsc command (`delete`, `list`) may take unless `timeout=`.
const RUNSC_TIMEOUT: Duration = Duration::from_secs(60);

const OPTIONS: &[EnvOption] = &[
    EnvOption::new(
        "platform",
        Check::Choice(&["ptrace", "systrap", "kvm"]),
        "how gVisor intercepts system calls (default: the best that starts here, probed)",
    ),
    EnvOption::new(
        "network",
        Check::Choice(&["sandbox", "host", "none"]),
        "gVisor's own network stack, the host kernel's (in the sandbox's own namespace), or none (default: sandbox where it starts, else host)",
    ),
    EnvOption::new(
        "overlay",
        Check::Choice(&["none", "root", "all"]),
        "mounts wrapped in an overlay held in memory (runsc --overlay2=...:memory)",
    ),
    EnvOption::new(
        "file-access",
        Check::Choice(&["exclusive", "shared"]),
        "runsc's validation of the root file system",
    ),
    EnvOption::new(
        "timeout",
        Check::Whole(1, 86400),
        "seconds one runsc command (delete, list) may take (60)",
    ),
];

pub const DEF: DriverDef = DriverDef {
    name: "gvisor",
    summary: "a gVisor sandbox (runsc) over a bundle of only the static binary, no Docker needed",
    target: None,
    options: OPTIONS,
    probe_by_default: true,
    build: |spec| Ok(Box::new(GvisorEnvironment::new(spec.clone()))),
    probe: probe_spec,
};

fn probe_spec(spec: &Spec) -> (bool, String) {
    let chosen = probe::runsc().and_then(|runsc| {
        let (platform, _) = probe::choose_platform(&runsc, spec.opt("platform"))?;
        let (network, _) = probe::choose_network(&platform, spec.opt("network"))?;
        Ok(format!(
            "runsc {}, platform {platform}, network {network}",
            runsc.version
        ))
    });
    match chosen {
        Ok(detail) => (true, detail),
        Err(e) => (false, format!("{e:#}")),
    }
}

/// The bound on runsc commands for this spec.
fn runsc_limit(spec: &Spec) -> Duration {
    spec.opt("timeout")
        .and_then(|t| t.parse().ok())
        .map_or(RUNSC_TIMEOUT, Duration::from_secs)
}

/// Force-deletes every container runsc keeps in state directory `root`.
fn delete_all(root: &Path, limit: Duration) {
    let root_arg = root.to_string_lossy().into_owned();
    let mut list = Command::new("runsc");
    list.args(["--root", &root_arg, "list", "-quiet"]);
    let Ok(out) = run_bounded(list, None, Limits::new(limit)) else {
        return;
    };
    for id in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        let mut delete = Command::new("runsc");
        delete.args(["--root", &root_arg, "delete", "-force", id]);
        run_cleanup(delete, limit);
    }
}

/// Removes what runs killed before their cleanup left: their sandboxes,
/// directories and network namespaces.
fn sweep(limit: Duration) {
    vethns::sweep(PREFIX);
    let tmp = std::env::temp_dir();
    let Ok(entries) = std::fs::read_dir(&tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let dead = name
            .to_str()
            .and_then(|n| owner::in_name(n, PREFIX))
            .is_some_and(|o| o.is_dead());
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if dead && is_dir {
            delete_all(&entry.path().join("state"), limit);
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// One instance's network: the namespace's addresses.
#[derive(Clone, Copy)]
struct Addresses {
    host: Ipv4Addr,
    inside: Ipv4Addr,
}

pub struct GvisorEnvironment {
    spec: Spec,
    need: NetNeed,
    /// The run's directory: runsc's state, this binary's copy, the bundles.
    dir: Option<tempfile::TempDir>,
    version: String,
    platform: String,
    network: &'static str,
    /// Each live instance's addresses, by index.
    addresses: Mutex<BTreeMap<usize, Addresses>>,
    /// Launches so far: each container's id and bundle are new.
    launches: AtomicUsize,
}

impl GvisorEnvironment {
    pub fn new(spec: Spec) -> GvisorEnvironment {
        GvisorEnvironment {
            spec,
            need: NetNeed::default(),
            dir: None,
            version: String::new(),
            platform: String::new(),
            network: "none",
            addresses: Mutex::new(BTreeMap::new()),
            launches: AtomicUsize::new(0),
        }
    }

    fn dir(&self) -> Result<&Path> {
        self.dir
            .as_ref()
            .map(tempfile::TempDir::path)
            .ok_or_else(|| anyhow!("gvisor: launched before prepare"))
    }

    /// runsc's global flags for this environment's sandboxes.
    fn runsc_flags(&self, state: &Path) -> Vec<String> {
        let mut flags = vec![
            "--root".to_string(),
            state.to_string_lossy().into_owned(),
            "--platform".into(),
            self.platform.clone(),
            "--network".into(),
            self.network.into(),
        ];
        if let Some(o) = self.spec.opt("overlay") {
            let value = if o == "none" {
                "none".to_string()
            } else {
                format!("{o}:memory")
            };
            flags.push(format!("--overlay2={value}"));
        }
        if let Some(a) = self.spec.opt("file-access") {
            flags.push(format!("--file-access={a}"));
        }
        flags
    }

    fn addresses(&self, index: usize) -> Result<Addresses> {
        if self.network == "none" {
            bail!(
                "--env {}: network=none gives the sandbox no network: leave network= out or use network=host",
                self.spec.text
            );
        }
        self.addresses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&index)
            .copied()
            .ok_or_else(|| anyhow!("gvisor: instance {index} has no network namespace"))
    }
}

impl Environment for GvisorEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn use_network(&mut self, need: NetNeed) {
        self.need = need;
    }

    fn prepare(&mut self, obs: &dyn Observer) -> Result<()> {
        if self.dir.is_some() {
            return Ok(());
        }
        let runsc = probe::runsc()?;
        let (platform, note) = probe::choose_platform(&runsc, self.spec.opt("platform"))?;
        if let Some(note) = note {
            obs.note(&format!("gvisor: using platform {platform} ({note})"));
        }
        let (network, note) = probe::choose_network(&platform, self.spec.opt("network"))?;
        if let Some(note) = note {
            obs.note(&format!("gvisor: {note}"));
        }
        if network == "none" && (self.need.to_host || self.need.to_env) {
            bail!(
                "--env {}: network=none gives the sandbox no network, and the plan has network tests: leave network= out or use network=host",
                self.spec.text
            );
        }
        if self.need.to_env {
            // Seen here: the host's client gets no answer from a server in
            // the sandbox, and the job hangs until its deadline.
            bail!(
                "--env {}: a server inside a gVisor sandbox (--net-server=env) is not supported yet: the host's client gets no answer through it; leave --net-server out, so the server runs on the host and the sandbox dials it",
                self.spec.text
            );
        }
        sweep(runsc_limit(&self.spec));
        let tag = Owner::me().map(Owner::tag).unwrap_or_default();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{tag}-"))
            .tempdir()
            .context("creating a directory for the sandboxes' bundles")?;
        std::fs::create_dir(dir.path().join("state"))?;
        let exe = std::env::current_exe().context("finding this binary")?;
        std::fs::copy(&exe, dir.path().join("virtperf"))
            .context("copying this binary for the sandboxes' root file system")?;
        self.dir = Some(dir);
        self.version = runsc.version;
        self.platform = platform;
        self.network = network;
        Ok(())
    }

    fn launch(&self, index: usize) -> Result<Launched> {
        let dir = self.dir()?;
        let n = self.launches.fetch_add(1, Ordering::Relaxed);
        let id = format!("virtperf-{}-{index}-{n}", std::process::id());
        let bundle_dir = dir.join(format!("bundle-{index}-{n}"));
        let made = bundle::make(
            &bundle_dir,
            &dir.join("virtperf"),
            &format!("virtperf-{index}"),
        );
        let launched = made.and_then(|bundle| self.start(index, &id, &bundle));
        if launched.is_err() {
            let _ = std::fs::remove_dir_all(&bundle_dir);
        }
        launched
    }

    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(60)
    }

    /// The host server binds the host's end of the instance's veth pair.
    fn route_to_host(&self, index: usize) -> Result<Route> {
        let a = self.addresses(index)?;
        Ok(Route {
            bind: SocketAddr::new(IpAddr::V4(a.host), 0),
            dial_ip: IpAddr::V4(a.host),
            dial_port: None,
            path: format!("gVisor {} network, veth (sandbox to host)", self.network),
        })
    }

    /// The server inside listens on the sandbox's end of the veth pair.
    fn route_to_env(&self, index: usize, _forwarded: Option<(u16, u16)>) -> Result<Route> {
        let a = self.addresses(index)?;
        Ok(Route {
            bind: SocketAddr::new(IpAddr::V4(a.inside), INSIDE_PORT),
            dial_ip: IpAddr::V4(a.inside),
            dial_port: None,
            path: format!("gVisor {} network, veth (host to sandbox)", self.network),
        })
    }

    fn settings(&self, _index: usize) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        s.insert("runtime".into(), "runsc".into());
        s.insert("runsc_version".into(), self.version.clone());
        s.insert("platform".into(), self.platform.clone());
        s.insert("network".into(), self.network.into());
        for key in ["overlay", "file-access"] {
            if let Some(v) = self.spec.opt(key) {
                s.insert(key.replace('-', "_"), v.into());
            }
        }
        s
    }
}

impl GvisorEnvironment {
    /// Starts `runsc run` for instance `index` over `bundle`, in a network
    /// namespace of its own unless network=none.
    fn start(&self, index: usize, id: &str, bundle: &Path) -> Result<Launched> {
        let state = self.dir()?.join("state");
        let ns = match self.network {
            "none" => None,
            _ => Some(VethNamespace::create(PREFIX, index)?),
        };
        let mut cmd = Command::new("runsc");
        cmd.args(self.runsc_flags(&state));
        cmd.arg("run").arg("--bundle").arg(bundle).arg(id);
        if let Some(ns) = &ns {
            vethns::join_in_child(&mut cmd, ns.path())?;
        }
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting runsc (apt-get install runsc)")?;
        if let Some(ns) = &ns {
            let a = Addresses {
                host: ns.host_ip,
                inside: ns.inside_ip,
            };
            self.addresses
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(index, a);
        }
        let limit = runsc_limit(&self.spec);
        let id = id.to_string();
        let bundle: PathBuf = bundle.to_path_buf();
        Ok(Launched {
            child,
            // A sandbox whose agent ended is gone already; a hung one is
            // deleted, then its namespace and bundle.
            cleanup: Some(Box::new(move || {
                let mut delete = Command::new("runsc");
                delete
                    .arg("--root")
                    .arg(&state)
                    .args(["delete", "-force", &id]);
                run_cleanup(delete, limit);
                drop(ns);
                let _ = std::fs::remove_dir_all(bundle);
            })),
            console: None,
            workdir: "/work".into(),
            forwarded: None,
            on_host: OnHost::Tree,
        })
    }
}
