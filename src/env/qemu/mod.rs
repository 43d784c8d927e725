//! The `qemu` driver: direct kernel boot of a guest kernel with an initramfs
//! made here (virtperf as init), the agent on the second serial port (the
//! first carries the kernel console to a log), and a scratch disk formatted
//! ext4 on the host and attached as virtio-blk. Unless `net=none`, a virtio
//! NIC on QEMU's user-mode network (restricted: no way out) with a host
//! loopback port forwarded to `port=` (5201) in the guest, for network
//! workloads. `accel=auto` probes KVM with a short boot and falls back to
//! TCG, saying so. QEMU dies with this process (the parent-death signal:
//! nothing else would stop a VM whose host was killed), and the VM's
//! directory, named after its owner, is swept by the next run if that
//! owner was killed before removing it.

pub mod guest;
pub mod initramfs;
mod kvm_memo;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::def::{Check, DriverDef, EnvOption};
use super::{Environment, Launched, NetNeed, OnHost, Route, Spec};
use crate::core::observer::{Observer, Silent};
use crate::sys::owner::{self, Owner};

pub const DEF: DriverDef = DriverDef {
    name: "qemu",
    summary:
        "a QEMU VM booting this machine's kernel with virtperf as init (KVM if it works, else TCG)",
    target: None,
    options: &[
        EnvOption::new("smp", Check::Whole(1, 255), "virtual CPUs, 1 to 255"),
        EnvOption::new(
            "memory",
            Check::Size(128 << 20),
            "guest memory, e.g. 2g (at least 128m)",
        ),
        EnvOption::new(
            "accel",
            Check::Choice(&["auto", "kvm", "tcg"]),
            "accelerator (auto tries KVM, falls back to TCG)",
        ),
        EnvOption::new("cpu", Check::Text, "QEMU's -cpu model"),
        EnvOption::new(
            "kernel",
            Check::Text,
            "guest kernel (default: the host's, from /boot)",
        ),
        EnvOption::new("modules", Check::Text, "the kernel's modules directory"),
        EnvOption::new(
            "cache",
            Check::Choice(&["none", "writeback"]),
            "scratch disk cache mode",
        ),
        EnvOption::new(
            "disk",
            Check::Size(16 << 20),
            "scratch disk size, e.g. 8g (at least 16m)",
        ),
        EnvOption::new(
            "net",
            Check::Choice(&["user", "none"]),
            "user-mode NIC, or none",
        ),
        EnvOption::new(
            "port",
            Check::Port,
            "the guest port forwarded from host loopback (5201)",
        ),
    ],
    probe_by_default: true,
    build: |spec| Ok(Box::new(QemuEnvironment::new(spec.clone())?)),
    probe,
};

fn probe(spec: &Spec) -> (bool, String) {
    if which(QEMU).is_none() {
        return (
            false,
            format!("{QEMU} not found: apt-get install qemu-system-x86"),
        );
    }
    match QemuEnvironment::new(spec.clone()).and_then(|mut e| {
        e.prepare(&Silent)?;
        Ok(e)
    }) {
        Ok(e) => (true, format!("accelerator {}", e.accel_name())),
        Err(err) => (false, format!("{err:#}")),
    }
}
use crate::core::units::Bytes;

pub struct QemuEnvironment {
    spec: Spec,
    /// What the plan's network jobs need (`use_network`).
    need: NetNeed,
    dir: Option<tempfile::TempDir>,
    kernel: PathBuf,
    accel: &'static str,
}

pub const QEMU: &str = "qemu-system-x86_64";

const APPEND: &str = "console=ttyS0 panic=-1 quiet loglevel=4";

/// The KVM probe's kernel line: the kernel's banner on the console as soon
/// as it has decompressed itself (`earlyprintk`, not `quiet`), which a
/// guest that KVM runs reaches in a fraction of a second and one that hangs
/// (nested KVM on these machines stops in the decompressor) never does.
const PROBE_APPEND: &str = "console=ttyS0 panic=-1 loglevel=5 earlyprintk=ttyS0";

/// How long the KVM probe waits for the kernel's banner, and for the agent's
/// hello. Waiting the whole 8 s for a hello that never comes was most of
/// `virtperf envs` (8.8 s) and of a comparison's start on these machines.
const PROBE_BANNER: Duration = Duration::from_secs(3);
const PROBE_HELLO: Duration = Duration::from_secs(8);

/// A port on the host's loopback that nothing uses right now, for TCP and
/// UDP alike (both are forwarded when a server runs in the guest).
fn free_loopback_port() -> Result<u16> {
    for _ in 0..50 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .context("finding a free loopback port to forward into the guest")?;
        let port = listener.local_addr()?.port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    bail!("found no loopback port free for both TCP and UDP in 50 tries")
}

/// Whether the guest's console shows the kernel's banner ("Linux version"),
/// read from the first 64 KiB of its file.
fn console_shows_banner(console: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(console) else {
        return false;
    };
    let mut head = Vec::new();
    if file.take(64 << 10).read_to_end(&mut head).is_err() {
        return false;
    }
    head.windows(b"Linux version".len())
        .any(|w| w == b"Linux version")
}

/// Whether a nested KVM guest actually boots here, and the memo that said
/// it does not (None when the probe ran): asked once per process.
static KVM_WORKS: OnceLock<(bool, Option<&'static Path>)> = OnceLock::new();

impl QemuEnvironment {
    pub fn new(spec: Spec) -> Result<QemuEnvironment> {
        Ok(QemuEnvironment {
            spec,
            need: NetNeed::default(),
            dir: None,
            kernel: PathBuf::new(),
            accel: "tcg",
        })
    }

    fn dir(&self) -> &Path {
        self.dir.as_ref().expect("prepared").path()
    }

    /// The guest's address on QEMU's user-mode network, and the default port
    /// forwarded to it from the host (`port=` changes it).
    pub const GUEST_IP: &'static str = "10.0.2.15/24";
    pub const DEFAULT_PORT: u16 = 5201;

    fn command(
        &self,
        accel: &str,
        index: usize,
        disk: Option<&Path>,
        forward: Option<(u16, u16)>,
    ) -> Command {
        self.command_with(accel, index, disk, forward, APPEND)
    }

    fn command_with(
        &self,
        accel: &str,
        index: usize,
        disk: Option<&Path>,
        forward: Option<(u16, u16)>,
        append: &str,
    ) -> Command {
        let mut cmd = Command::new(QEMU);
        let smp = self.spec.opt("smp").unwrap_or("2");
        let mem = self
            .spec
            .opt("memory")
            .and_then(|m| Bytes::parse(m).ok())
            .map(|b| b.0 >> 20)
            .unwrap_or(2048);
        let cpu = self
            .spec
            .opt("cpu")
            .unwrap_or(if accel == "kvm" { "host" } else { "max" });
        let console = self.dir().join(format!("console-{index}.log"));
        cmd.args(["-nodefaults", "-display", "none", "-no-reboot"])
            // Threads named by role ("CPU 0/TCG"), for the host's accounting.
            .args(["-name", "virtperf,debug-threads=on"])
            .args(["-machine", &format!("q35,accel={accel}")])
            .args(["-cpu", cpu, "-smp", smp, "-m", &mem.to_string()])
            .arg("-kernel")
            .arg(&self.kernel)
            .arg("-initrd")
            .arg(self.dir().join("initramfs.cpio"))
            .arg("-append")
            .arg(match forward {
                Some(_) => format!("{append} virtperf.ip={}", Self::GUEST_IP),
                None => append.to_string(),
            })
            .arg("-serial")
            .arg(format!("file:{}", console.display()))
            .args(["-serial", "stdio"]);
        if let Some((host, guest)) = forward {
            cmd.arg("-netdev")
                .arg(self.netdev(host, guest))
                .args(["-device", "virtio-net-pci,netdev=net0"]);
        }
        if let Some(disk) = disk {
            let cache = self.spec.opt("cache").unwrap_or("none");
            cmd.arg("-drive").arg(format!(
                "file={},if=virtio,format=raw,cache={cache}",
                qemu_escape(&disk.display().to_string())
            ));
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        die_with_this_process(&mut cmd);
        cmd
    }

    /// The user-mode network. Restricted (the guest reaches nothing, only
    /// the forwarded port reaches it) unless the plan has a network job:
    /// a client in the guest must reach a server on the host (QEMU makes the
    /// guest's connections from the host; 10.0.2.2 is the host's loopback),
    /// and a server in the guest answers UDP, which restricted QEMU drops
    /// even through a forwarded port (tried: TCP passes, UDP replies do
    /// not). The guest runs only virtperf as init, which dials only the
    /// server the host names. A server in the guest gets the host port
    /// forwarded for TCP and UDP alike.
    fn netdev(&self, host: u16, guest: u16) -> String {
        let restrict = if self.need.to_host || self.need.to_env {
            "off"
        } else {
            "on"
        };
        let mut out =
            format!("user,id=net0,restrict={restrict},hostfwd=tcp:127.0.0.1:{host}-:{guest}");
        if self.need.to_env {
            out.push_str(&format!(",hostfwd=udp:127.0.0.1:{host}-:{guest}"));
        }
        out
    }

    /// Whether KVM boots a guest, from the memo of a failed probe since the
    /// host booted (and which memo said so) or from a probe.
    fn probe_kvm_once(&self) -> (bool, Option<&'static Path>) {
        static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
        let dir = DIR.get_or_init(kvm_memo::default_dir).as_deref();
        let key = which(QEMU).and_then(|q| kvm_memo::key(&q, &self.kernel));
        if let (Some(dir), Some(key)) = (dir, &key) {
            if kvm_memo::failed_before(dir, key) {
                return (false, Some(dir));
            }
        }
        let works = self.probe_kvm();
        if let (false, Some(dir), Some(key)) = (works, dir, &key) {
            kvm_memo::remember_failure(dir, key);
        }
        (works, None)
    }

    /// Boots once with KVM and waits for the agent's hello; gives up at
    /// once when the kernel's banner has not reached the console within
    /// [`PROBE_BANNER`].
    fn probe_kvm(&self) -> bool {
        if std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
            .is_err()
        {
            return false;
        }
        let console = self.dir().join("console-999.log");
        let Ok(mut child) = self
            .command_with("kvm", 999, None, None, PROBE_APPEND)
            .spawn()
        else {
            return false;
        };
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut r = std::io::BufReader::new(stdout);
            let mut line = String::new();
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                if line.contains("\"hello\"") {
                    let _ = tx.send(());
                    return;
                }
                line.clear();
            }
        });
        let started = Instant::now();
        let mut ok = false;
        let mut banner = false;
        while started.elapsed() < PROBE_HELLO {
            if rx.recv_timeout(Duration::from_millis(50)).is_ok() {
                ok = true;
                break;
            }
            // The console is a file of this directory that only QEMU writes;
            // a few KiB are read at most, and only its start.
            banner = banner || console_shows_banner(&console);
            if !banner && started.elapsed() >= PROBE_BANNER {
                break;
            }
            if matches!(child.try_wait(), Ok(Some(_))) {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        ok
    }
}

impl QemuEnvironment {
    /// The accelerator chosen by `prepare` (after the KVM probe).
    pub fn accel_name(&self) -> &'static str {
        self.accel
    }
}

impl Environment for QemuEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn prepare(&mut self, obs: &dyn Observer) -> Result<()> {
        if self.dir.is_some() {
            return Ok(());
        }
        which(QEMU).ok_or_else(|| {
            anyhow!("{QEMU} not found: install qemu-system-x86 to use --env qemu")
        })?;
        let (kernel, modules) =
            initramfs::kernel_and_modules(self.spec.opt("kernel"), self.spec.opt("modules"))?;
        owner::sweep_dirs(&std::env::temp_dir(), DIR_PREFIX);
        let tag = Owner::me().map(Owner::tag).unwrap_or_default();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{tag}-"))
            .tempdir()
            .context("creating a directory for the VM's files")?;
        let binary = std::fs::read("/proc/self/exe").context("reading this binary")?;
        let image = initramfs::build(&binary, &modules)?;
        std::fs::write(dir.path().join("initramfs.cpio"), image)?;
        self.kernel = kernel;
        self.dir = Some(dir);
        self.accel = match self.spec.opt("accel").unwrap_or("auto") {
            "kvm" => "kvm",
            "tcg" => "tcg",
            _ => {
                let (works, memo) = *KVM_WORKS.get_or_init(|| self.probe_kvm_once());
                if !works {
                    let how = memo.map_or_else(String::new, |d| {
                        format!("; {}", kvm_memo::remembered_note(d))
                    });
                    obs.note(&format!(
                        "qemu: KVM did not boot a guest here (nested KVM fails on this machine{how}); using TCG emulation",
                    ));
                }
                if works {
                    "kvm"
                } else {
                    "tcg"
                }
            }
        };
        Ok(())
    }

    fn launch(&self, index: usize) -> Result<Launched> {
        let disk = self.dir().join(format!("scratch-{index}.img"));
        let size = self
            .spec
            .opt("disk")
            .and_then(|d| Bytes::parse(d).ok())
            .map(|b| b.0)
            .unwrap_or(8 << 30);
        scratch_disk(&disk, size)?;
        let forwarded = match self.spec.opt("net").unwrap_or("user") {
            "none" => None,
            _ => {
                let guest = self
                    .spec
                    .opt("port")
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(Self::DEFAULT_PORT);
                Some((free_loopback_port()?, guest))
            }
        };
        let child = self
            .command(self.accel, index, Some(&disk), forwarded)
            .spawn()
            .with_context(|| format!("starting {QEMU}"))?;
        let console = self.dir().join(format!("console-{index}.log"));
        Ok(Launched {
            child,
            cleanup: Some(Box::new(move || {
                let _ = std::fs::remove_file(disk);
            })),
            console: Some(console),
            workdir: "/scratch".into(),
            forwarded,
            on_host: OnHost::Tree,
        })
    }

    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(90)
    }

    fn use_network(&mut self, need: NetNeed) {
        self.need = need;
    }

    /// The guest dials QEMU's gateway, 10.0.2.2, which QEMU turns into a
    /// connection from the host to its own loopback: the server binds there.
    fn route_to_host(&self, _index: usize) -> Result<Route> {
        if self.spec.opt("net") == Some("none") {
            bail!("--env {}: net=none gives the guest no network for a network test: leave net=none out", self.spec.text);
        }
        Ok(Route {
            bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            dial_ip: std::net::IpAddr::from([10, 0, 2, 2]),
            dial_port: None,
            path: "QEMU user network (guest to host)".into(),
        })
    }

    /// The server binds the guest's address on the forwarded port; the host
    /// dials the loopback port QEMU forwards to it (TCP and UDP).
    fn route_to_env(&self, _index: usize, forwarded: Option<(u16, u16)>) -> Result<Route> {
        let (host, guest) = forwarded.ok_or_else(|| {
            anyhow!(
                "--env {}: net=none gives the guest no network for a network test: leave net=none out",
                self.spec.text
            )
        })?;
        let ip = Self::GUEST_IP.split('/').next().unwrap_or_default();
        Ok(Route {
            bind: std::net::SocketAddr::new(ip.parse()?, guest),
            dial_ip: std::net::IpAddr::from([127, 0, 0, 1]),
            dial_port: Some(host),
            path: "QEMU user network (host port forwarded to guest)".into(),
        })
    }
}

/// A sparse scratch disk image of `size` bytes at `path`, formatted ext4
/// (the guest's init mounts it on /scratch).
pub fn scratch_disk(path: &Path, size: u64) -> Result<()> {
    let f = std::fs::File::create(path).context("creating the scratch disk")?;
    f.set_len(size)?;
    drop(f);
    let out = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-E", "lazy_itable_init=1,lazy_journal_init=1"])
        .arg(path)
        .output()
        .map_err(|e| anyhow!("mkfs.ext4 not found ({e}): install e2fsprogs"))?;
    if !out.status.success() {
        bail!(
            "mkfs.ext4 on the scratch disk failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Makes the child get SIGKILL when this process ends, however it ends (a
/// VM's stdin closing does not stop it). The signal follows the thread that
/// spawned it: launches happen on the thread that owns the session.
fn die_with_this_process(cmd: &mut Command) {
    // SAFETY: getpid is async-signal-safe; it runs before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: prctl and getppid are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the call above took effect.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("virtperf ended while starting QEMU"));
            }
            Ok(())
        });
    }
}

/// The VM's directory in TMPDIR: `virtperf-qemu-OWNER-XXXXXX`.
pub const DIR_PREFIX: &str = "virtperf-qemu-";

/// A value inside QEMU's comma-separated option syntax: a comma is doubled
/// (a TMPDIR with a comma stays one path).
pub fn qemu_escape(value: &str) -> String {
    value.replace(',', ",,")
}

pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comma_in_the_temporary_directory_stays_in_the_drive_path() {
        let dir = tempfile::Builder::new()
            .prefix("virtperf,test,file=evil-")
            .tempdir()
            .unwrap();
        let env = QemuEnvironment {
            need: NetNeed::default(),
            spec: Spec::parse("qemu").unwrap(),
            kernel: PathBuf::from("/boot/vmlinuz"),
            accel: "tcg",
            dir: Some(dir),
        };
        let disk = env.dir().join("scratch-0.img");
        let cmd = env.command("tcg", 0, Some(&disk), None);
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let drive = &args[args.iter().position(|a| a == "-drive").unwrap() + 1];
        let path = drive
            .strip_prefix("file=")
            .and_then(|d| d.strip_suffix(",if=virtio,format=raw,cache=none"))
            .unwrap();
        // QEMU reads ",," as one comma: undoubling gives the path back.
        assert_eq!(path.replace(",,", ","), disk.display().to_string());
        assert!(!path.replace(",,", "").contains(','), "{drive}");
    }
}
