//! What the system-container drivers (`lxc`, `nspawn`) share: a root file
//! system made on the spot of only the static binary, the memory check
//! done before anything starts, the choice of network (the host's, or a
//! veth pair to a namespace of virtperf's own, see `vethns`), and the
//! cgroups such a container lives in: found by name on every mounted
//! hierarchy, their processes killed and the directories removed at the
//! end, and those of a run killed before its cleanup swept by the next
//! (names carry their owner, as `sys::owner` makes them).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::def::{Check, EnvOption};
use super::vethns::VethNamespace;
use super::{Route, Spec};
use crate::sys::bounded::{run_bounded, Bounded, Limits};
use crate::sys::owner::{self, Owner};

/// Where cgroup hierarchies are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// How long the processes of a container's cgroups may take to die.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// The `network=` option both drivers take.
pub const NETWORK: EnvOption = EnvOption::new(
    "network",
    Check::Choice(&["host", "veth"]),
    "host: the host's network (the default); veth: a network namespace of its own with a veth pair to the host, as a container on an engine's bridge",
);

/// The bytes of `memory=`, when given (checked by then).
pub fn memory_bytes(spec: &Spec) -> Option<u64> {
    spec.opt("memory")
        .and_then(|m| crate::core::units::Bytes::parse(m).ok())
        .map(|b| b.0)
}

/// Whether this process runs as root; the tools need it here.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A system-container tool's version from its `--version` (`parse` reads
/// it; bounded to 20 s), or why the driver cannot be used: the tool missing
/// (with the package that has it), silent, or not run as root.
pub fn tool_version(
    program: &str,
    package: &str,
    parse: fn(&str) -> Option<String>,
) -> Result<String> {
    let mut cmd = std::process::Command::new(program);
    cmd.arg("--version");
    let out =
        run_bounded(cmd, None, Limits::new(Duration::from_secs(20))).map_err(|e| match e {
            Bounded::Failed(e) => anyhow!("{program} not found ({e}): apt-get install {package}"),
            _ => anyhow!("`{program} --version` did not answer"),
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = parse(&text).ok_or_else(|| {
        anyhow!(
            "`{program} --version` printed no version: {}",
            crate::core::text::one_line(text.trim(), 80)
        )
    })?;
    if !is_root() {
        bail!("{program} {v} needs root to start its containers here: run virtperf as root");
    }
    Ok(v)
}

/// Makes root file system `dir` (which must not exist): `virtperf`
/// hard-linked to `binary` (a copy of this binary in the same directory
/// tree), an empty `/work`, and with `os_tree` the little systemd-nspawn
/// looks for to take a directory for an OS tree (`/usr`, `/etc/os-release`).
pub fn make_rootfs(dir: &Path, binary: &Path, os_tree: bool) -> Result<PathBuf> {
    std::fs::create_dir_all(dir.join("work")).context("making the container's root file system")?;
    for d in ["proc", "sys", "dev", "tmp"] {
        std::fs::create_dir_all(dir.join(d))?;
    }
    if os_tree {
        std::fs::create_dir_all(dir.join("usr"))?;
        std::fs::create_dir_all(dir.join("etc"))?;
        std::fs::write(dir.join("etc/os-release"), "NAME=virtperf\nID=virtperf\n")?;
    }
    std::fs::hard_link(binary, dir.join("virtperf"))
        .context("putting virtperf in the container's root file system")?;
    Ok(dir.to_path_buf())
}

/// A run's private directory in TMPDIR, `PREFIX<owner>-XXXX`, with a copy
/// of this binary in it; what runs killed before their cleanup left in
/// TMPDIR is removed first (by `sweep_dir` for each).
pub fn run_dir(prefix: &str, sweep_dir: &dyn Fn(&Path)) -> Result<tempfile::TempDir> {
    sweep_tmp(prefix, sweep_dir);
    let tag = Owner::me().map(Owner::tag).unwrap_or_default();
    let dir = tempfile::Builder::new()
        .prefix(&format!("{prefix}{tag}-"))
        .tempdir()
        .context("creating a directory for the containers' root file systems")?;
    let exe = std::env::current_exe().context("finding this binary")?;
    std::fs::copy(&exe, dir.path().join("virtperf"))
        .context("copying this binary for the containers' root file systems")?;
    Ok(dir)
}

/// Removes the run directories in TMPDIR whose owner is dead, after
/// `sweep_dir` has ended what ran there.
fn sweep_tmp(prefix: &str, sweep_dir: &dyn Fn(&Path)) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let dead = name
            .to_str()
            .and_then(|n| owner::in_name(n, prefix))
            .is_some_and(|o| o.is_dead());
        if dead && entry.file_type().is_ok_and(|t| t.is_dir()) {
            sweep_dir(&entry.path());
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A container's name: `PREFIX<owner>-<index>-<n>`.
pub fn container_name(prefix: &str, index: usize, n: usize) -> String {
    let tag = Owner::me().map(Owner::tag).unwrap_or_default();
    format!("{prefix}{tag}-{index}-{n}")
}

/// The mounted cgroup hierarchies: each v1 controller's (and the named
/// `systemd` one and an empty unified one beside them), or the one v2
/// hierarchy.
pub fn hierarchies() -> Vec<PathBuf> {
    let root = Path::new(CGROUP_ROOT);
    if root.join("cgroup.controllers").exists() {
        return vec![root.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| p.join("cgroup.procs").exists())
        .collect();
    out.sort();
    out
}

/// Whether cgroup v1's cpu and memory controllers are mounted (a v1 or
/// hybrid host), as opposed to a v2 hierarchy that holds them.
pub fn cgroup_v1() -> bool {
    Path::new(CGROUP_ROOT)
        .join("memory/memory.limit_in_bytes")
        .exists()
}

/// The processes in cgroup directory `dir` and every one below it.
fn procs_below(dir: &Path, out: &mut Vec<i32>) {
    if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        out.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
    }
    for sub in subdirs(dir) {
        procs_below(&sub, out);
    }
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Removes cgroup directory `dir` and those below it, deepest first;
/// whether it is gone.
fn remove_tree(dir: &Path) -> bool {
    for sub in subdirs(dir) {
        remove_tree(&sub);
    }
    std::fs::remove_dir(dir).is_ok() || !dir.exists()
}

/// Kills every process in the cgroups named `name` on every hierarchy and
/// removes those cgroups; bounded in time. Whether all went.
pub fn kill_cgroups(name: &str) -> bool {
    let dirs: Vec<PathBuf> = hierarchies()
        .into_iter()
        .map(|h| h.join(name))
        .filter(|d| d.is_dir())
        .collect();
    let until = Instant::now() + KILL_WAIT;
    loop {
        let mut pids = Vec::new();
        for d in &dirs {
            procs_below(d, &mut pids);
        }
        for &pid in &pids {
            if pid > 1 {
                // SAFETY: kill takes plain integers; these processes are
                // the container's, found in its own cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        let gone = dirs.iter().all(|d| remove_tree(d));
        if gone {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ends and removes the cgroups, on every hierarchy, whose name after
/// `strip` (a tool's own prefix, such as LXC's `lxc.payload.`) is
/// `PREFIX<owner>-...` with a dead owner.
pub fn sweep_cgroups(strip: &[&str], prefix: &str) {
    let mut names = Vec::new();
    for h in hierarchies() {
        for dir in subdirs(&h) {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let bare = strip
                .iter()
                .find_map(|s| name.strip_prefix(s))
                .unwrap_or(name);
            let dead = owner::in_name(bare, prefix).is_some_and(|o| o.is_dead());
            if dead && !names.iter().any(|n: &String| n == name) {
                names.push(name.to_string());
            }
        }
    }
    for name in names {
        kill_cgroups(&name);
    }
}

/// What a system-container driver holds between `prepare` and the end of
/// its run, alike for both: the run's directory (made by `prepare`), the
/// tool's version, each live veth instance's (host, inside) addresses and
/// the count of launches (which names containers uniquely).
pub struct Containers {
    /// The driver's name, for the error of a launch before `prepare`.
    driver: &'static str,
    dir: Option<tempfile::TempDir>,
    pub version: String,
    pairs: Mutex<BTreeMap<usize, (Ipv4Addr, Ipv4Addr)>>,
    launches: AtomicUsize,
}

impl Containers {
    pub fn new(driver: &'static str) -> Containers {
        Containers {
            driver,
            dir: None,
            version: String::new(),
            pairs: Mutex::new(BTreeMap::new()),
            launches: AtomicUsize::new(0),
        }
    }

    /// Whether `prepare` has made the run's directory.
    pub fn prepared(&self) -> bool {
        self.dir.is_some()
    }

    /// Keeps the run's directory and the tool's version (`prepare`'s end).
    pub fn set_prepared(&mut self, dir: tempfile::TempDir, version: String) {
        self.dir = Some(dir);
        self.version = version;
    }

    /// The run's directory.
    pub fn dir(&self) -> Result<&Path> {
        self.dir
            .as_ref()
            .map(tempfile::TempDir::path)
            .ok_or_else(|| anyhow!("{}: launched before prepare", self.driver))
    }

    /// Instance `index`'s next container: its name and its directory in
    /// the run's directory (not made yet).
    pub fn next(&self, prefix: &str, index: usize) -> Result<(String, PathBuf)> {
        let dir = self.dir()?;
        let n = self.launches.fetch_add(1, Ordering::Relaxed);
        let name = container_name(prefix, index, n);
        Ok((name, dir.join(format!("ct-{index}-{n}"))))
    }

    /// Instance `index`'s veth pair, if it has one.
    pub fn pair(&self, index: usize) -> Option<(Ipv4Addr, Ipv4Addr)> {
        self.pairs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&index)
            .copied()
    }

    /// Records instance `index`'s veth pair (host, inside).
    pub fn set_pair(&self, index: usize, ns: &VethNamespace) {
        self.pairs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(index, (ns.host_ip, ns.inside_ip));
    }
}

/// One instance's network: none of its own (the host's), or a namespace
/// with a veth pair to the host.
pub struct InstanceNet {
    pub ns: Option<VethNamespace>,
}

impl InstanceNet {
    /// The network `network=` asks for instance `index` (host by default).
    pub fn create(spec: &Spec, prefix: &str, index: usize) -> Result<InstanceNet> {
        let ns = match spec.opt("network") {
            Some("veth") => Some(VethNamespace::create(prefix, index)?),
            _ => None,
        };
        Ok(InstanceNet { ns })
    }
}

/// The network mode a spec asks for.
pub fn network_mode(spec: &Spec) -> &'static str {
    match spec.opt("network") {
        Some("veth") => "veth",
        _ => "host",
    }
}

/// A route over the host's loopback or over an instance's veth pair
/// (`host`, `inside`: the pair's addresses); `tool` and `towards` name the
/// path as results record it.
pub fn route(pair: Option<(Ipv4Addr, Ipv4Addr)>, to_host: bool, tool: &str, port: u16) -> Route {
    match pair {
        None => Route::loopback(&format!("{tool}, host network (loopback)")),
        Some((host, inside)) => {
            let (bind, dir) = if to_host {
                (SocketAddr::new(IpAddr::V4(host), 0), "container to host")
            } else {
                (
                    SocketAddr::new(IpAddr::V4(inside), port),
                    "host to container",
                )
            };
            Route {
                bind,
                dial_ip: bind.ip(),
                dial_port: None,
                path: format!("{tool}, veth ({dir})"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_are_named_apart_and_refuse_a_launch_before_prepare() {
        let mut c = Containers::new("lxc");
        assert!(!c.prepared());
        let err = c.next("virtperf-lxc-", 0).unwrap_err().to_string();
        assert_eq!(err, "lxc: launched before prepare");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        c.set_prepared(dir, "5.0.2".into());
        assert!(c.prepared());
        let (a, da) = c.next("virtperf-lxc-", 0).unwrap();
        let (b, db) = c.next("virtperf-lxc-", 0).unwrap();
        assert_ne!(a, b);
        assert_eq!(da, path.join("ct-0-0"));
        assert_eq!(db, path.join("ct-0-1"));
        assert!(a.starts_with("virtperf-lxc-") && a.ends_with("-0-0"), "{a}");
        assert_eq!(c.pair(0), None);
    }

    #[test]
    fn the_rootfs_holds_the_binary_work_and_for_nspawn_an_os_tree() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("virtperf");
        std::fs::write(&binary, b"binary").unwrap();
        let root = make_rootfs(&dir.path().join("r"), &binary, true).unwrap();
        assert_eq!(std::fs::read(root.join("virtperf")).unwrap(), b"binary");
        assert!(root.join("work").is_dir());
        assert!(root.join("usr").is_dir());
        assert!(root.join("etc/os-release").is_file());
        let plain = make_rootfs(&dir.path().join("p"), &binary, false).unwrap();
        assert!(!plain.join("usr").exists());
    }

    #[test]
    fn a_route_over_the_host_network_is_loopback_and_over_veth_the_pair() {
        let r = route(None, true, "LXC", 1);
        assert!(r.dial_ip.is_loopback());
        let pair = (Ipv4Addr::new(10, 213, 0, 1), Ipv4Addr::new(10, 213, 0, 2));
        let to_host = route(Some(pair), true, "LXC", 7);
        assert_eq!(to_host.bind.ip(), IpAddr::V4(pair.0));
        assert_eq!(to_host.bind.port(), 0);
        let to_env = route(Some(pair), false, "LXC", 7);
        assert_eq!(to_env.bind, SocketAddr::new(IpAddr::V4(pair.1), 7));
        assert!(to_env.path.contains("host to container"));
    }
}
