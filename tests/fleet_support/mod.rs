//! Test hosts for fleet tests: network namespaces joined to this machine by
//! veth pairs in a private /24, each running its own sshd (a generated host
//! key, one authorized test key) on its veth address. Everything is made by
//! the test and removed on drop, also when a test fails or panics.
//!
//! The namespaces share this machine's filesystem, so what a "remote" run
//! leaves behind lands here: every host gets its own empty directory as its
//! TMPDIR (sshd's `SetEnv`), and leftovers are checked there, never in /tmp
//! at large, where other tests work at the same time.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Every name this module gives a namespace or link starts with this.
pub const PREFIX: &str = "vpfleet";

/// One sshd in one namespace.
pub struct FleetHost {
    /// The name an inventory gives it.
    pub name: String,
    pub ns: String,
    /// The host side of the veth pair (in this machine's namespace).
    pub link: String,
    /// This machine's address on the link.
    pub gateway: String,
    /// The namespace's address on the link; sshd listens there.
    pub addr: String,
    pub port: u16,
    /// Its TMPDIR: where the remote side of a run puts its files.
    pub remote_tmp: PathBuf,
    sshd: Option<Child>,
}

/// An extra sshd started in a host's namespace (another port, other settings).
struct ExtraSshd {
    child: Child,
}

/// Namespaces with sshd, and the keys and files to reach them.
pub struct Fleet {
    pub hosts: Vec<FleetHost>,
    /// Keys, sshd configs, known_hosts, remote temporary directories.
    pub dir: tempfile::TempDir,
    /// The /24 the fleet uses: "10.254.N".
    pub net: String,
    /// Whether the `unreachable` route for the /24 is installed (it keeps a
    /// link taken down from sending the fleet's traffic to the default route).
    guard_route: bool,
    extra: Vec<ExtraSshd>,
    silent: Vec<String>,
}

fn run(cmd: &[&str]) -> bool {
    Command::new(cmd[0])
        .args(&cmd[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run_out(cmd: &[&str]) -> String {
    Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Why a fleet cannot be made on this machine, if it cannot.
pub fn missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        return Some("needs root to make network namespaces".into());
    }
    for (path, pkg) in [
        ("/usr/sbin/sshd", "openssh-server"),
        ("/usr/bin/ssh-keygen", "openssh-client"),
        ("/usr/bin/ssh", "openssh-client"),
    ] {
        if !Path::new(path).exists() {
            return Some(format!("{path} is missing (install {pkg})"));
        }
    }
    if !run(&["ip", "-V"]) {
        return Some("ip is missing (install iproute2)".into());
    }
    None
}

static FLEETS: AtomicU32 = AtomicU32::new(0);

impl Fleet {
    /// Makes `n` hosts named `names[i]` (at most 60). Panics if making
    /// them fails on a machine that has what it needs (call `missing`
    /// first); what was made until then is removed.
    pub fn start(names: &[&str]) -> Fleet {
        assert!(names.len() <= 60);
        let k = FLEETS.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let dir = tempfile::Builder::new()
            .prefix("vpfleet.")
            .tempdir()
            .unwrap();
        // A /24 no other fleet of ours uses now.
        let mut octet = (pid.wrapping_mul(7).wrapping_add(k * 17)) % 240 + 8;
        let mut tries = 0;
        while !run_out(&["ip", "route", "show", &format!("10.254.{octet}.0/24")])
            .trim()
            .is_empty()
            || !run_out(&[
                "ip",
                "-4",
                "addr",
                "show",
                "to",
                &format!("10.254.{octet}.0/24"),
            ])
            .trim()
            .is_empty()
        {
            octet = (octet + 1 - 8) % 240 + 8;
            tries += 1;
            assert!(tries < 240, "no free /24 in 10.254.0.0/16");
        }
        let net = format!("10.254.{octet}");
        let mut fleet = Fleet {
            hosts: Vec::new(),
            dir,
            net: net.clone(),
            guard_route: false,
            extra: Vec::new(),
            silent: Vec::new(),
        };
        // A link that goes down must not send 10.254.N.x to the default route.
        fleet.guard_route = run(&["ip", "route", "add", "unreachable", &format!("{net}.0/24")]);
        assert!(fleet.guard_route, "adding the guard route for {net}.0/24");
        fleet.keygen("id");
        fleet.keygen("wrong_id");
        std::fs::copy(fleet.path("id.pub"), fleet.path("authorized_keys")).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let mut known = String::new();
        for (i, name) in names.iter().enumerate() {
            let ns = format!("{PREFIX}-{pid}-{k}-{i}");
            let link = format!("vpflt{:04}{}{i:02}h", pid % 10000, k % 10);
            let peer = format!("vpflt{:04}{}{i:02}n", pid % 10000, k % 10);
            let gateway = format!("{net}.{}", 4 * i + 1);
            let addr = format!("{net}.{}", 4 * i + 2);
            let remote_tmp = fleet.dir.path().join(format!("remote-{name}"));
            std::fs::create_dir(&remote_tmp).unwrap();
            assert!(run(&["ip", "netns", "add", &ns]), "ip netns add {ns}");
            fleet.hosts.push(FleetHost {
                name: name.to_string(),
                ns: ns.clone(),
                link: link.clone(),
                gateway: gateway.clone(),
                addr: addr.clone(),
                port: 22,
                remote_tmp,
                sshd: None,
            });
            let ok = run(&[
                "ip", "link", "add", &link, "type", "veth", "peer", "name", &peer,
            ]) && run(&["ip", "link", "set", &peer, "netns", &ns])
                && run(&["ip", "addr", "add", &format!("{gateway}/30"), "dev", &link])
                && run(&["ip", "link", "set", &link, "up"])
                && run(&[
                    "ip",
                    "-n",
                    &ns,
                    "addr",
                    "add",
                    &format!("{addr}/30"),
                    "dev",
                    &peer,
                ])
                && run(&["ip", "-n", &ns, "link", "set", &peer, "up"])
                && run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            assert!(ok, "setting up namespace {ns}");
            fleet.keygen(&format!("host_key_{i}"));
            let host_pub =
                std::fs::read_to_string(fleet.path(&format!("host_key_{i}.pub"))).unwrap();
            known.push_str(&format!("{addr} {host_pub}"));
            let remote_tmp = fleet.hosts[i].remote_tmp.clone();
            let child = fleet.spawn_sshd(i, 22, &remote_tmp, None);
            fleet.hosts[i].sshd = Some(child);
        }
        std::fs::write(fleet.path("known_hosts"), known).unwrap();
        for i in 0..fleet.hosts.len() {
            fleet.wait_listening(i, 22);
        }
        fleet
    }

    /// A file in the fleet's directory.
    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn keygen(&self, name: &str) {
        assert!(run(&[
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "vpfleet-test",
            "-f",
            &self.path(name)
        ]));
    }

    /// Starts sshd in host `i`'s namespace on `port`, with `tmp` as its
    /// sessions' TMPDIR and, if given, `path_first` before the usual PATH.
    fn spawn_sshd(&self, i: usize, port: u16, tmp: &Path, path_first: Option<&Path>) -> Child {
        let h = &self.hosts[i];
        let mut path = String::from("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        if let Some(first) = path_first {
            path = format!("{}:{path}", first.display());
        }
        let config = self.path(&format!("sshd_config_{i}_{port}"));
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress {addr}\nHostKey {key}\nAuthorizedKeysFile {auth}\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPidFile {pid}\n\
                 Subsystem sftp internal-sftp\nMaxStartups 50\nSetEnv TMPDIR={tmp} PATH={path}\n",
                addr = h.addr,
                key = self.path(&format!("host_key_{i}")),
                auth = self.path("authorized_keys"),
                pid = self.path(&format!("sshd_{i}_{port}.pid")),
                tmp = tmp.display(),
            ),
        )
        .unwrap();
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &h.ns,
                "/usr/sbin/sshd",
                "-D",
                "-e",
                "-f",
                &config,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.path(&format!("sshd_{i}_{port}.log"))).unwrap())
            .spawn()
            .expect("starting sshd")
    }

    /// Waits (at most 10 s) until `addr:port` accepts connections.
    fn wait_listening(&self, i: usize, port: u16) {
        let addr = &self.hosts[i].addr;
        let sa: SocketAddr = format!("{addr}:{port}").parse().unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < until,
                "sshd on {addr}:{port} did not start: {}",
                std::fs::read_to_string(self.path(&format!("sshd_{i}_{port}.log")))
                    .unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts a second sshd in host `i`'s namespace on `port` whose
    /// sessions find `uname` in a directory of its own first: `uname -m`
    /// there prints `machine`, as on a host of that architecture. Its
    /// TMPDIR is `tmp`. Returns the address.
    pub fn fake_arch_sshd(&mut self, i: usize, port: u16, machine: &str, tmp: &Path) -> String {
        let bin = self.dir.path().join(format!("fake-{machine}-bin"));
        std::fs::create_dir_all(&bin).unwrap();
        let uname = bin.join("uname");
        std::fs::write(
            &uname,
            format!(
                "#!/bin/sh\n# uname as on an {machine} machine\ncase \"$1\" in -m|-p|-i) echo {machine} ;; *) exec /usr/bin/uname \"$@\" ;; esac\n"
            ),
        )
        .unwrap();
        assert!(run(&["chmod", "755", &uname.display().to_string()]));
        let child = self.spawn_sshd(i, port, tmp, Some(&bin));
        self.extra.push(ExtraSshd { child });
        self.wait_listening(i, port);
        self.hosts[i].addr.clone()
    }

    /// An address in the fleet's /24 that nobody answers: its packets go
    /// out on host `i`'s link to a MAC address no one has and are dropped
    /// there, so a connection waits for its timeout (no ARP, nothing leaves
    /// this machine).
    pub fn silent_addr(&mut self, i: usize) -> String {
        let addr = format!("{}.{}", self.net, 250 - self.silent.len());
        let link = self.hosts[i].link.clone();
        assert!(run(&[
            "ip",
            "route",
            "add",
            &format!("{addr}/32"),
            "dev",
            &link
        ]));
        assert!(run(&[
            "ip",
            "neigh",
            "add",
            &addr,
            "lladdr",
            "02:00:5e:00:00:fe",
            "dev",
            &link,
            "nud",
            "permanent"
        ]));
        self.silent.push(addr.clone());
        addr
    }

    /// Takes host `i`'s link down: its address becomes unreachable (the
    /// guard route answers "no route to host" at once).
    pub fn link_down(&self, i: usize) {
        assert!(run(&["ip", "link", "set", &self.hosts[i].link, "down"]));
    }

    /// A virtperf `ssh:` spec for host `i`.
    pub fn spec(&self, i: usize, name: &str) -> String {
        let h = &self.hosts[i];
        format!(
            "ssh:root@{}:{},identity={},known-hosts={},name={name}",
            h.addr,
            h.port,
            self.path("id"),
            self.path("known_hosts")
        )
    }

    /// What is left in host `i`'s TMPDIR (empty when a run cleaned up).
    pub fn leftovers(&self, i: usize) -> Vec<PathBuf> {
        leftovers_in(&self.hosts[i].remote_tmp)
    }
}

/// The entries of `dir`.
pub fn leftovers_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default()
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for extra in &mut self.extra {
            let _ = extra.child.kill();
            let _ = extra.child.wait();
        }
        for h in &mut self.hosts {
            if let Some(sshd) = &mut h.sshd {
                let _ = sshd.kill();
                let _ = sshd.wait();
            }
            // Sessions still open (an ssh master of Ansible's, a remote
            // agent): every process left in our namespace, by its pid.
            for pid in run_out(&["ip", "netns", "pids", &h.ns]).split_whitespace() {
                if let Ok(pid) = pid.parse::<i32>() {
                    // SAFETY: kill has no memory preconditions; the pid is one
                    // the kernel listed in our own namespace.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            run(&["ip", "link", "del", &h.link]);
            run(&["ip", "netns", "del", &h.ns]);
        }
        for addr in &self.silent {
            run(&["ip", "route", "del", &format!("{addr}/32")]);
        }
        if self.guard_route {
            run(&[
                "ip",
                "route",
                "del",
                "unreachable",
                &format!("{}.0/24", self.net),
            ]);
        }
    }
}
