//! An sshd of the tests' own, in a network namespace they make (tests/env.rs
//! reaches it as an `ssh:` target, tests/libvirt.rs as a remote libvirt).

use std::path::Path;
use std::process::{Command as Std, Stdio};

use super::{skip, succeeds as run};

/// A fresh ed25519 key pair without a passphrase at `path` (and `path.pub`).
pub fn keygen(path: &Path) {
    let path = path.display().to_string();
    let ok = run(&["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", &path]);
    assert!(ok, "ssh-keygen -f {path} failed");
}

/// An sshd in a network namespace of our own, torn down on drop.
pub struct SshHost {
    ns: String,
    veth: String,
    pub dir: tempfile::TempDir,
    sshd: std::process::Child,
    /// Its address (port 2222).
    pub addr: String,
}

impl SshHost {
    pub fn start() -> Option<SshHost> {
        SshHost::start_forcing(None)
    }

    /// As `start`, with every session running `command` whatever the
    /// client asks (sshd's ForceCommand).
    pub fn start_forcing(command: Option<&str>) -> Option<SshHost> {
        SshHost::start_with(command, &[])
    }

    /// As `start_forcing`, with these variables set in every session
    /// (sshd's SetEnv: TMPDIR, PATH).
    pub fn start_with(command: Option<&str>, env: &[(&str, &str)]) -> Option<SshHost> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let sshd = Path::new("/usr/sbin/sshd");
        if !root || !sshd.exists() || !run(&["ip", "-V"]) {
            skip("needs root, iproute2 and openssh-server for a namespaced sshd");
            return None;
        }
        // Names and addresses of this process's own, and of this host's
        // among its others (tests that hold no lock run beside each other).
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let nth = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 10;
        let id = std::process::id() % 1000 * 10 + nth;
        let ns = format!("vpssh{id}");
        let veth = format!("vpe{id}");
        let peer = format!("vpi{id}");
        // A /30 that exists only between this host and the test's namespace.
        let octet = 16 + (id % 200) as u8;
        let (host_ip, ns_ip) = (format!("10.251.{octet}.1"), format!("10.251.{octet}.2"));
        let ok = run(&["ip", "netns", "add", &ns])
            && run(&[
                "ip", "link", "add", &veth, "type", "veth", "peer", "name", &peer,
            ])
            && run(&["ip", "link", "set", &peer, "netns", &ns])
            && run(&["ip", "addr", "add", &format!("{host_ip}/30"), "dev", &veth])
            && run(&["ip", "link", "set", &veth, "up"])
            && run(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{ns_ip}/30"),
                "dev",
                &peer,
            ])
            && run(&["ip", "-n", &ns, "link", "set", &peer, "up"])
            && run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        assert!(ok, "setting up the namespace failed");
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
        keygen(&dir.path().join("host_key"));
        keygen(&dir.path().join("id"));
        std::fs::copy(p("id.pub"), p("authorized_keys")).unwrap();
        let host_pub = std::fs::read_to_string(p("host_key.pub")).unwrap();
        std::fs::write(p("known_hosts"), format!("[{ns_ip}]:2222 {host_pub}")).unwrap();
        std::fs::write(
            p("sshd_config"),
            format!(
                "Port 2222\nListenAddress {ns_ip}\nHostKey {}\nAuthorizedKeysFile {}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPidFile {}\n",
                p("host_key"),
                p("authorized_keys"),
                p("sshd.pid")
            ) + &command.map(|c| format!("ForceCommand {c}\n")).unwrap_or_default()
                + &env
                    .iter()
                    .map(|(k, v)| format!("SetEnv {k}={v}\n"))
                    .collect::<String>(),
        )
        .unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let child = Std::new("ip")
            .args([
                "netns",
                "exec",
                &ns,
                "/usr/sbin/sshd",
                "-D",
                "-e",
                "-f",
                &p("sshd_config"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Ready once it listens (it has read its configuration and keys).
        let at: std::net::SocketAddr = format!("{ns_ip}:2222").parse().unwrap();
        let listens = super::wait_until(std::time::Duration::from_secs(10), || {
            std::net::TcpStream::connect_timeout(&at, std::time::Duration::from_millis(200)).is_ok()
        });
        assert!(listens, "sshd in {ns} does not listen on {at}");
        Some(SshHost {
            ns,
            veth,
            dir,
            sshd: child,
            addr: ns_ip,
        })
    }

    pub fn spec(&self) -> String {
        format!(
            "ssh:root@{}:2222,identity={},known-hosts={},name=sshbox",
            self.addr,
            self.dir.path().join("id").display(),
            self.dir.path().join("known_hosts").display()
        )
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
        run(&["ip", "netns", "pids", &self.ns]);
        run(&["ip", "link", "del", &self.veth]);
        run(&["ip", "netns", "del", &self.ns]);
    }
}
