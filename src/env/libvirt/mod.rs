//! The `libvirt` driver: a guest as libvirt runs it. With no `domain=`, a
//! transient domain (`virsh create`) boots this machine's kernel with
//! virtperf's initramfs, as the `qemu` driver does, under the settings
//! given (vCPUs, memory, CPU mode, pinning, disk bus and cache, NIC model),
//! so one guest can be measured under different libvirt settings; it
//! vanishes when it powers off or is destroyed. With `domain=NAME`, an
//! existing domain: started if it is off (and shut down afterwards if
//! virtperf started it), refused while it runs unless `shared=yes`,
//! reverted to `snapshot=` first when given, and reached over the agent's
//! channel it has or over ssh to the address libvirt reports. A network
//! test's peer meets a transient guest through the user-mode network's
//! gateway, and `domain=` reached over ssh on the libvirt network it
//! shares with the host (the guest's address is known and reachable); a
//! `domain=` reached over its socket is refused for them.
//!
//! Through `virsh` subprocesses, not the libvirt C library: the binary
//! stays static (it is copied into guests and containers), virsh speaks
//! every transport libvirt has (local sockets, `qemu+ssh://`, TLS) with the
//! user's own configuration and credentials, and each call is bounded in
//! time like every other external command here (`sys::bounded`). Its XML
//! output is read by a small bounded reader (`xml`).
//!
//! The agent's stdin and stdout travel over the guest's second serial port
//! (ttyS1, where virtperf's init already speaks for the qemu driver), which
//! libvirt binds to a unix socket in the domain's directory; the host
//! connects to it and hands the socket to the session. An 8250 UART is
//! built into Debian's kernels and emulated the same under TCG and KVM, so
//! it needs no module, no udev and no guest agent; a virtio-serial
//! `<channel>` named `org.virtperf.agent` is taken too in a domain of the
//! user's that runs `virtperf agent` on it. A domain's socket is on the
//! machine libvirt runs on, so a remote `uri=` reaches a domain over ssh.
//!
//! Domains and directories are named after their owner, so a run killed
//! before its cleanup has what it left swept by the next run.
//!
//! This file holds the driver's options, its checks and the `Environment`
//! it implements; `virsh` runs libvirt's client, `transient` defines and
//! boots the domain virtperf makes, `domain` handles an existing one, and
//! `xml` reads what libvirt answers.

mod domain;
mod transient;
mod virsh;
pub mod xml;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::def::{Check, DriverDef, EnvOption};
use super::qemu::{initramfs, which};
use super::{Environment, Launched, NetNeed, Route, Spec};
use crate::core::observer::Observer;
use crate::sys::owner::{self, Owner};

pub const DEF: DriverDef = DriverDef {
    name: "libvirt",
    summary: "a libvirt domain: a transient one booting this machine's kernel with virtperf as init, or an existing one (domain=NAME)",
    target: None,
    options: &[
        EnvOption::new(
            "uri",
            Check::Text,
            "libvirt connection (default qemu:///system; qemu:///session, qemu+ssh://HOST/system)",
        ),
        EnvOption::new(
            "domain",
            Check::Text,
            "an existing domain to run in (default: a transient domain of virtperf's)",
        ),
        EnvOption::new(
            "shared",
            Check::Choice(&["no", "yes"]),
            "run in a domain that is already running (default no: refused)",
        ),
        EnvOption::new(
            "snapshot",
            Check::Text,
            "revert domain= to this snapshot before it starts for a run",
        ),
        EnvOption::new("vcpus", Check::Whole(1, 255), "virtual CPUs (2)"),
        EnvOption::new(
            "memory",
            Check::Size(128 << 20),
            "guest memory, e.g. 2g (at least 128m)",
        ),
        EnvOption::new(
            "accel",
            Check::Choice(&["tcg", "kvm"]),
            "domain type: tcg (type='qemu', the default) or kvm",
        ),
        EnvOption::new(
            "cpu",
            Check::Text,
            "CPU: maximum (default), host-model, host-passthrough or a named model such as qemu64",
        ),
        EnvOption::new(
            "pin",
            Check::CpuList,
            "host CPUs for the vCPUs, e.g. 0-1 (one each when the counts match, else shared)",
        ),
        EnvOption::new(
            "disk-bus",
            Check::Choice(&["virtio", "scsi", "sata"]),
            "scratch disk bus (virtio)",
        ),
        EnvOption::new(
            "disk-cache",
            Check::Choice(&["none", "writeback", "writethrough", "directsync", "unsafe"]),
            "scratch disk cache mode (none)",
        ),
        EnvOption::new(
            "disk",
            Check::Size(16 << 20),
            "scratch disk size, e.g. 8g (at least 16m)",
        ),
        EnvOption::new(
            "net",
            Check::Choice(&["virtio", "e1000", "e1000e", "rtl8139", "none"]),
            "NIC model on libvirt's user-mode network, or none (virtio)",
        ),
        EnvOption::new(
            "kernel",
            Check::Text,
            "guest kernel (default: the host's, from /boot)",
        ),
        EnvOption::new("modules", Check::Text, "the kernel's modules directory"),
        EnvOption::new(
            "user",
            Check::Text,
            "ssh user for a domain reached over its network (root)",
        ),
        EnvOption::new("identity", Check::Text, "ssh private key file"),
        EnvOption::new("known-hosts", Check::Text, "ssh known_hosts file"),
        EnvOption::new(
            "host-key-check",
            Check::Choice(&["on", "off"]),
            "check the guest's ssh host key (default on)",
        ),
        EnvOption::new(
            "timeout",
            Check::Whole(1, 3600),
            "seconds a virsh command, a wait for an address or for its sshd, or a shutdown may take (60)",
        ),
    ],
    probe_by_default: true,
    build: |spec| Ok(Box::new(LibvirtEnvironment::new(spec.clone())?)),
    probe,
};

/// The options that shape the domain virtperf defines; an existing domain
/// runs as it is defined.
const TRANSIENT_ONLY: &[&str] = &[
    "vcpus",
    "memory",
    "accel",
    "cpu",
    "pin",
    "disk-bus",
    "disk-cache",
    "disk",
    "net",
    "kernel",
    "modules",
];
/// The options for a domain reached over ssh.
pub(super) const SSH_ONLY: &[&str] = &["user", "identity", "known-hosts", "host-key-check"];

const DEFAULT_URI: &str = "qemu:///system";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The prefix of transient domains' names and of their directories.
pub const PREFIX: &str = "virtperf-libvirt-";
fn probe(spec: &Spec) -> (bool, String) {
    let env = match LibvirtEnvironment::new(spec.clone()) {
        Ok(e) => e,
        Err(e) => return (false, format!("{e:#}")),
    };
    if which("virsh").is_none() {
        return (
            false,
            "virsh not found: apt-get install libvirt-clients (and libvirt-daemon-system for a local hypervisor)".into(),
        );
    }
    // One short call: it connects and asks for versions, starting nothing.
    let limit = env.timeout.min(Duration::from_secs(10));
    match env.virsh_within(&["version"], limit) {
        Ok(out) => {
            let hv = out
                .lines()
                .find_map(|l| l.trim().strip_prefix("Running hypervisor:"))
                .unwrap_or("")
                .trim();
            (true, format!("{} ({hv})", env.uri))
        }
        Err(e) => (false, format!("{e:#}")),
    }
}

/// What the instances' launches learnt, for the fingerprint and the
/// network tests' routes.
#[derive(Default)]
struct Instances {
    /// Per instance: the XML essentials of the domain it ran in.
    settings: BTreeMap<usize, BTreeMap<String, String>>,
    /// Per instance of `domain=` reached over ssh: the guest's address.
    addresses: BTreeMap<usize, IpAddr>,
}

pub struct LibvirtEnvironment {
    spec: Spec,
    uri: String,
    timeout: Duration,
    need: NetNeed,
    /// The transient domain's files (initramfs, disks, logs, sockets).
    dir: Option<tempfile::TempDir>,
    kernel: PathBuf,
    modules: PathBuf,
    /// The transient domain's `<cpu>`, checked against libvirt's
    /// capabilities.
    cpu: String,
    state: Mutex<Instances>,
    /// Whether virtperf started `domain=` (and so shuts it down after).
    started: std::sync::Arc<AtomicBool>,
    /// Whether `reboot` has just reverted and started `domain=`.
    fresh: AtomicBool,
}

impl LibvirtEnvironment {
    pub fn new(spec: Spec) -> Result<LibvirtEnvironment> {
        let uri = spec.opt("uri").unwrap_or(DEFAULT_URI).to_string();
        let timeout = spec
            .opt("timeout")
            .and_then(|t| t.parse().ok())
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_TIMEOUT);
        let env = LibvirtEnvironment {
            spec,
            uri,
            timeout,
            need: NetNeed::default(),
            dir: None,
            kernel: PathBuf::new(),
            modules: PathBuf::new(),
            cpu: String::new(),
            state: Mutex::new(Instances::default()),
            started: Default::default(),
            fresh: AtomicBool::new(false),
        };
        env.check_options()?;
        Ok(env)
    }

    fn domain(&self) -> Option<&str> {
        self.spec.opt("domain")
    }

    /// Options that do not fit together are refused before anything runs.
    fn check_options(&self) -> Result<()> {
        let s = &self.spec;
        if !self.uri.contains(':') {
            bail!(
                "--env {}: uri={} is not a libvirt URI: give one such as qemu:///system, qemu:///session or qemu+ssh://HOST/system",
                s.text,
                self.uri
            );
        }
        match self.domain() {
            Some(d) => {
                if let Some(k) = TRANSIENT_ONLY.iter().find(|k| s.opt(k).is_some()) {
                    bail!(
                        "--env {}: {k}= shapes the domain virtperf defines; domain={d} runs as it is defined: leave {k}= out (virsh edit {d} changes it)",
                        s.text
                    );
                }
            }
            None => {
                if let Some(k) = ["shared", "snapshot"]
                    .iter()
                    .chain(SSH_ONLY)
                    .find(|k| s.opt(k).is_some())
                {
                    bail!(
                        "--env {}: {k}= is for an existing domain: give domain=NAME, or leave {k}= out",
                        s.text
                    );
                }
                if self.remote() {
                    bail!(
                        "--env {}: uri={} is remote, and a transient domain boots this machine's kernel and initramfs, which that libvirt cannot read: give domain=NAME of a domain there",
                        s.text,
                        self.uri
                    );
                }
            }
        }
        if s.count > 1 && self.domain().is_some() {
            bail!(
                "--env {}: one domain runs one instance: leave count= out, or use transient domains (no domain=)",
                s.text
            );
        }
        Ok(())
    }

    /// Whether the connection goes to another machine (`qemu+ssh://HOST/...`).
    fn remote(&self) -> bool {
        let rest = self.uri.split_once("://").map(|(_, r)| r).unwrap_or("");
        let host = rest.split('/').next().unwrap_or("");
        let host = host.rsplit('@').next().unwrap_or(host);
        !host.is_empty() && !["localhost", "127.0.0.1", "[::1]"].contains(&host)
    }

    fn dir(&self) -> &Path {
        self.dir.as_ref().expect("prepared").path()
    }
}

impl Environment for LibvirtEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    /// `reboot=each-run`: see [`LibvirtEnvironment::reboot_domain`].
    fn reboot(&self, _index: usize) -> Result<()> {
        self.reboot_domain()
    }

    /// A transient domain is defined anew at every launch, and a domain
    /// virtperf started has just booted; a shared running one has not.
    fn launch_is_fresh(&self) -> bool {
        self.domain().is_none() || self.started.load(Ordering::SeqCst)
    }

    fn prepare(&mut self, _obs: &dyn Observer) -> Result<()> {
        // A network test that cannot run here is refused before a guest
        // boots for it, with the reason its route gives; in `domain=`,
        // the route is known once the guest has its address.
        match self.domain() {
            Some(name) if self.need.any() => self.check_network_reach(name)?,
            Some(_) => {}
            None => {
                if self.need.to_env {
                    self.route_to_env(0, None)?;
                }
                if self.need.to_host {
                    self.route_to_host(0)?;
                }
            }
        }
        if self.dir.is_some() || self.domain().is_some() {
            return Ok(());
        }
        which("virsh").ok_or_else(|| {
            anyhow!("virsh not found: install libvirt-clients (and libvirt-daemon-system) to use --env libvirt")
        })?;
        // The connection answers, before anything is built.
        self.virsh(&["uri"])?;
        let (kernel, modules) =
            initramfs::kernel_and_modules(self.spec.opt("kernel"), self.spec.opt("modules"))?;
        self.kernel = std::fs::canonicalize(&kernel)
            .with_context(|| format!("kernel={}", kernel.display()))?;
        self.modules = modules;
        let extra = self.extra_modules()?;
        self.cpu = self.cpu_element(self.virt_type())?;
        // pin= names CPUs this machine has.
        self.cputune(1)?;
        self.sweep();
        owner::sweep_dirs(&std::env::temp_dir(), PREFIX);
        let tag = Owner::me().map(Owner::tag).unwrap_or_default();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{tag}-"))
            .tempdir()
            .context("creating a directory for the domain's files")?;
        // QEMU runs as libvirt's user (libvirt-qemu under qemu:///system):
        // it must pass through, not list, the directory; libvirt hands it
        // each file it needs.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711))?;
        let binary = std::fs::read("/proc/self/exe").context("reading this binary")?;
        let image = initramfs::build_with(&binary, &self.modules, &extra)?;
        std::fs::write(dir.path().join("initramfs.cpio"), image)?;
        self.dir = Some(dir);
        Ok(())
    }

    fn launch(&self, index: usize) -> Result<Launched> {
        match self.domain() {
            Some(name) => self.launch_existing(index, name),
            None => self.launch_transient(index),
        }
    }

    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(90).max(self.timeout)
    }

    fn use_network(&mut self, need: NetNeed) {
        self.need = need;
    }

    fn settings(&self, index: usize) -> BTreeMap<String, String> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .settings
            .get(&index)
            .cloned()
            .unwrap_or_default()
    }

    /// A transient domain's guest dials the user-mode network's gateway,
    /// 10.0.2.2, which QEMU turns into a connection from the host to its
    /// own loopback. `domain=` reached over ssh dials this host's address
    /// on the network it shares with the guest, where the server binds.
    fn route_to_host(&self, index: usize) -> Result<Route> {
        if self.domain().is_some() {
            let (guest, host) = self.guest_and_host(index)?;
            return Ok(Route {
                bind: SocketAddr::new(host, 0),
                dial_ip: host,
                dial_port: None,
                path: format!("libvirt network (guest {guest} to host {host})"),
            });
        }
        if self.spec.opt("net") == Some("none") {
            bail!(
                "--env {}: net=none gives the guest no network for a network test: leave net=none out",
                self.spec.text
            );
        }
        Ok(Route {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            dial_ip: IpAddr::from([10, 0, 2, 2]),
            dial_port: None,
            path: "libvirt user network (guest to host)".into(),
        })
    }

    /// The server in `domain=` reached over ssh binds the guest's address,
    /// which the host dials; a transient domain's user-mode network
    /// forwards no port, so its server runs on the host.
    fn route_to_env(&self, index: usize, _forwarded: Option<(u16, u16)>) -> Result<Route> {
        if self.domain().is_some() {
            let (guest, host) = self.guest_and_host(index)?;
            return Ok(Route {
                bind: SocketAddr::new(guest, crate::workload::net::protocol::DEFAULT_PORT),
                dial_ip: guest,
                dial_port: None,
                path: format!("libvirt network (host {host} to guest {guest})"),
            });
        }
        let peer = &crate::workload::net::PEER;
        bail!(
            "--env {}: a server inside a transient libvirt guest is not reachable from the host (libvirt's user-mode network forwards no port): leave out --{}={}, so the server runs on the host and the guest dials it, or use domain= of a domain on a libvirt network, reached over ssh",
            self.spec.text,
            peer.placement_option,
            peer.placement_env
        )
    }
}

impl Drop for LibvirtEnvironment {
    fn drop(&mut self) {
        if let Some(name) = self.domain().map(str::to_string) {
            self.stop_started(&name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::domain::{first_ipv4, sshd_not_up_yet};
    use super::transient::cpu_list;
    use super::virsh::{log_file, pid_file};
    use super::*;

    fn env(text: &str) -> Result<LibvirtEnvironment> {
        LibvirtEnvironment::new(Spec::parse(text)?)
    }

    #[test]
    fn options_that_do_not_fit_together_are_refused_with_the_fix() {
        let e = |t: &str| env(t).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e("libvirt:domain=web,vcpus=2").contains("leave vcpus= out"));
        assert!(e("libvirt:shared=yes").contains("give domain=NAME"));
        assert!(e("libvirt:snapshot=s1").contains("give domain=NAME"));
        assert!(e("libvirt:uri=qemu+ssh://far/system").contains("give domain=NAME"));
        assert!(e("libvirt:uri=nonsense").contains("not a libvirt URI"));
        assert!(e("libvirt:domain=web,count=2").contains("count="));
        assert!(env("libvirt:uri=qemu+ssh://far/system,domain=web").is_ok());
        assert!(env("libvirt:uri=qemu:///session,vcpus=1,memory=1g,cpu=qemu64").is_ok());
    }

    #[test]
    fn network_tests_that_cannot_run_are_refused_naming_the_option_and_the_fix() {
        let e = |t: &str, inside: bool| {
            let env = env(t).unwrap();
            let r = if inside {
                env.route_to_env(0, None)
            } else {
                env.route_to_host(0)
            };
            r.err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert!(e("libvirt", true).contains("leave out --net-server=env"));
        // domain= has a route once its launch found the guest's address.
        assert!(e("libvirt:domain=web", false).contains("not reached over its network"));
        assert!(e("libvirt:domain=web", true).contains("not reached over its network"));
        assert!(e("libvirt:net=none", false).contains("leave net=none out"));
        let to_host = env("libvirt").unwrap().route_to_host(0).unwrap();
        assert_eq!(to_host.dial_ip, std::net::IpAddr::from([10, 0, 2, 2]));
        // Refused in prepare, before anything is built or booted.
        let prepared = |t: &str, to_host: bool, to_env: bool| {
            let mut env = env(t).unwrap();
            env.use_network(NetNeed { to_host, to_env });
            env.prepare(&crate::core::observer::Silent)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(prepared("libvirt", true, true).contains("--net-server=env"));
        assert!(prepared("libvirt:net=none", true, false).contains("leave net=none out"));
    }

    #[test]
    fn a_domain_reached_over_ssh_meets_its_peer_on_the_network_it_shares_with_the_host() {
        let e = env("libvirt:domain=web").unwrap();
        e.state
            .lock()
            .unwrap()
            .addresses
            .insert(0, IpAddr::from([127, 0, 0, 2]));
        let to_host = e.route_to_host(0).unwrap();
        assert_eq!(to_host.dial_ip, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(to_host.bind, SocketAddr::from(([127, 0, 0, 1], 0)));
        assert!(to_host.path.starts_with("libvirt network"), "{to_host:?}");
        let to_env = e.route_to_env(0, None).unwrap();
        assert_eq!(to_env.bind, SocketAddr::from(([127, 0, 0, 2], 12866)));
        assert_eq!(to_env.dial_ip, IpAddr::from([127, 0, 0, 2]));
        // Another instance has no address: no route.
        assert!(e.route_to_host(1).is_err());
    }

    #[test]
    fn remote_uris_are_told_from_local_ones() {
        for (uri, remote) in [
            ("qemu:///system", false),
            ("qemu:///session", false),
            ("qemu+ssh://root@far/system", true),
            ("qemu+tcp://localhost/system", false),
        ] {
            let mut e = env("libvirt").unwrap();
            e.uri = uri.into();
            assert_eq!(e.remote(), remote, "{uri}");
        }
    }

    #[test]
    fn pinning_and_addresses_read_as_meant() {
        assert_eq!(cpu_list("0-3"), Some(vec![0, 1, 2, 3]));
        assert_eq!(cpu_list("1"), Some(vec![1]));
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_list("0-99999"), None);
        let out = " vnet0  52:54:00:aa:bb:cc  ipv6  fe80::1/64\n vnet0  52:54:00:aa:bb:cc  ipv4  192.168.122.7/24\n";
        assert_eq!(first_ipv4(out).as_deref(), Some("192.168.122.7"));
        assert_eq!(first_ipv4(" lo 00:00 ipv4 127.0.0.1/8"), None);
        assert_eq!(first_ipv4("ipv4 not-an-address"), None);
        assert!(sshd_not_up_yet(
            "ssh: connect to host 10.1.1.1 port 22: Connection refused"
        ));
        assert!(!sshd_not_up_yet("Host key verification failed."));
        assert!(!sshd_not_up_yet(
            "root@10.1.1.1: Permission denied (publickey)."
        ));
        let e = env("libvirt:pin=0-1").unwrap();
        assert_eq!(
            e.cputune(2).unwrap(),
            "<cputune><vcpupin vcpu='0' cpuset='0'/><vcpupin vcpu='1' cpuset='1'/></cputune>"
        );
        assert_eq!(
            e.cputune(3).unwrap(),
            "<cputune><vcpupin vcpu='0' cpuset='0-1'/><vcpupin vcpu='1' cpuset='0-1'/><vcpupin vcpu='2' cpuset='0-1'/></cputune>"
        );
    }

    #[test]
    fn pid_files_are_only_local() {
        assert_eq!(
            pid_file("qemu:///system", "d"),
            Some(PathBuf::from("/run/libvirt/qemu/d.pid"))
        );
        assert_eq!(pid_file("qemu+ssh://far/system", "d"), None);
        assert_eq!(
            log_file("qemu:///system", "d"),
            Some(PathBuf::from("/var/log/libvirt/qemu/d.log"))
        );
        assert_eq!(log_file("qemu+ssh://far/system", "d"), None);
    }
}
