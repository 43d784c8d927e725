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

pub mod xml;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::def::{Check, DriverDef, EnvOption};
use super::qemu::{initramfs, which};
use super::ssh::SshEnvironment;
use super::{Environment, Launched, NetNeed, OnHost, Route, Spec};
use crate::core::observer::Observer;
use crate::core::signals;
use crate::core::text;
use crate::core::units::Bytes;
use crate::sys::bounded::{run_bounded, run_cleanup, Bounded, Limits};
use crate::sys::owner::{self, Owner};
use xml::{CpuCaps, DomainXml, WayIn};

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
const SSH_ONLY: &[&str] = &["user", "identity", "known-hosts", "host-key-check"];

const DEFAULT_URI: &str = "qemu:///system";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The prefix of transient domains' names and of their directories.
pub const PREFIX: &str = "virtperf-libvirt-";
/// The kernel command line (the console on ttyS0 goes to a log file).
const APPEND: &str = "console=ttyS0 panic=-1 quiet loglevel=4";
/// The guest's address on libvirt's user-mode network (as QEMU's).
const GUEST_IP: &str = "10.0.2.15/24";

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

/// How the host reaches the agent in `domain=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Over the unix socket of its serial port or channel.
    Socket,
    /// Over ssh to the address libvirt reports.
    Ssh,
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

/// How many transient domains this process has made (their names' suffix).
static MADE: AtomicUsize = AtomicUsize::new(0);

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

    fn virsh_command(&self, args: &[&str]) -> Command {
        virsh_command(&self.uri, args)
    }

    fn virsh(&self, args: &[&str]) -> Result<String> {
        self.virsh_limited(args, Limits::new(self.timeout))
    }

    fn virsh_within(&self, args: &[&str], limit: Duration) -> Result<String> {
        self.virsh_limited(args, Limits::new(limit))
    }

    /// Runs to its end after Ctrl-C: a command that makes something (a
    /// domain, a started guest) must say whether it did, so it is undone.
    fn virsh_finishing(&self, args: &[&str]) -> Result<String> {
        self.virsh_limited(args, Limits::new(self.timeout).finishing())
    }

    fn virsh_limited(&self, args: &[&str], limits: Limits) -> Result<String> {
        let what = args.first().copied().unwrap_or("");
        let limits = Limits {
            kept: xml::MAX_XML as u64,
            ..limits
        };
        let out = run_bounded(self.virsh_command(args), None, limits).map_err(|e| match e {
            Bounded::TimedOut(t) => anyhow!(
                "uri={}: 'virsh {what}' did not finish within {} s: libvirt or the connection hangs (timeout= gives it longer)",
                self.uri,
                t.as_secs()
            ),
            Bounded::Interrupted => signals::Interrupted.into(),
            Bounded::Failed(e) => e.context(
                "running virsh: install libvirt-clients (apt-get install libvirt-clients)",
            ),
        })?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let err = text::terminal_safe(err.trim(), 2000);
            if err.contains("failed to connect to the hypervisor") {
                bail!(
                    "uri={}: libvirt does not answer ({}): start libvirtd (or virtqemud), or give uri= of one that runs",
                    self.uri,
                    text::one_line(&err.lines().map(str::trim).collect::<Vec<_>>().join("; "), 400)
                );
            }
            bail!("uri={}: virsh {what}: {err}", self.uri);
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// The domain's state as `virsh domstate` words it ("running", "shut
    /// off", ...).
    fn state_of(&self, name: &str) -> Result<String> {
        self.virsh(&["domstate", "--", name]).map_err(|e| {
            let msg = format!("{e:#}");
            if msg.contains("failed to get domain") || msg.contains("Domain not found") {
                anyhow!(
                    "--env {}: domain={name} does not exist on {}: `virsh -c {} list --all` lists the domains there; define it first (virsh define FILE.xml) or correct domain=",
                    self.spec.text,
                    self.uri,
                    self.uri
                )
            } else {
                e
            }
        })
    }

    fn dumpxml(&self, name: &str, inactive: bool) -> Result<DomainXml> {
        let mut args = vec!["dumpxml"];
        if inactive {
            args.push("--inactive");
        }
        args.extend(["--", name]);
        let text = self.virsh(&args)?;
        DomainXml::parse(&text).map_err(|e| {
            anyhow!(
                "uri={}: the XML of domain {name} does not read: {e}",
                self.uri
            )
        })
    }

    fn dir(&self) -> &Path {
        self.dir.as_ref().expect("prepared").path()
    }

    /// The kernel modules a transient domain's settings need beyond the
    /// initramfs's own, refused when the guest kernel lacks one.
    fn extra_modules(&self) -> Result<Vec<&'static str>> {
        let mut extra = Vec::new();
        let bus = self.spec.opt("disk-bus").unwrap_or("virtio");
        let net = self.spec.opt("net").unwrap_or("virtio");
        let mut want = |opt: String, modules: &[&'static str]| -> Result<()> {
            for m in modules {
                if !initramfs::has_module(&self.modules, m) {
                    bail!(
                        "--env {}: {opt} needs the guest kernel's {m} driver, which {} has neither as a module nor built in: use the virtio default, or a kernel that has it (kernel=, modules=)",
                        self.spec.text,
                        self.modules.display()
                    );
                }
                extra.push(*m);
            }
            Ok(())
        };
        match bus {
            "scsi" => want(format!("disk-bus={bus}"), &["virtio_scsi", "sd_mod"])?,
            "sata" => want(format!("disk-bus={bus}"), &["ahci", "sd_mod"])?,
            _ => {}
        }
        match net {
            "e1000" => want(format!("net={net}"), &["e1000"])?,
            "e1000e" => want(format!("net={net}"), &["e1000e"])?,
            "rtl8139" => want(format!("net={net}"), &["8139cp"])?,
            _ => {}
        }
        Ok(extra)
    }

    /// The CPU element for `cpu=`, checked against what libvirt says this
    /// domain type can do (`virsh domcapabilities`): under TCG, QEMU
    /// emulates a CPU, so host-passthrough is refused there, and named
    /// models that need what TCG does not emulate are unusable.
    fn cpu_element(&self, virt_type: &str) -> Result<String> {
        let cpu = self.spec.opt("cpu").unwrap_or("maximum");
        let caps_text = self.virsh(&[
            "domcapabilities",
            "--virttype",
            virt_type,
            "--arch",
            "x86_64",
            "--machine",
            "q35",
        ])?;
        let caps = CpuCaps::parse(&caps_text)
            .map_err(|e| anyhow!("uri={}: domcapabilities does not read: {e}", self.uri))?;
        let accel = if virt_type == "qemu" { "tcg" } else { "kvm" };
        let models = caps.usable_models(8).join(", ");
        let mode = match cpu {
            "maximum" | "host-model" | "host-passthrough" => {
                if caps.mode_supported(cpu) != Some(true) {
                    let why = if cpu == "host-passthrough" && accel == "tcg" {
                        " (TCG emulates its CPU: there is no host CPU to pass through)"
                    } else {
                        ""
                    };
                    bail!(
                        "--env {}: cpu={cpu}: libvirt reports that mode unsupported for accel={accel}{why}: use cpu=maximum, cpu=host-model or a usable model ({models})",
                        self.spec.text
                    );
                }
                format!("<cpu mode='{cpu}'/>")
            }
            model => match caps.model_usable(model) {
                Some(true) => format!(
                    "<cpu mode='custom' match='exact'><model fallback='forbid'>{}</model></cpu>",
                    xml::escape(model)
                ),
                Some(false) => bail!(
                    "--env {}: cpu={model}: libvirt reports this model unusable with accel={accel} (it needs features this hypervisor cannot give): use one of {models}, cpu=maximum or cpu=host-model",
                    self.spec.text
                ),
                None => bail!(
                    "--env {}: cpu={model}: not a CPU model libvirt knows here: use one of {models}, cpu=maximum or cpu=host-model (virsh domcapabilities lists them all)",
                    self.spec.text
                ),
            },
        };
        Ok(mode)
    }

    /// `pin=0-1` as one `<vcpupin>` per vCPU: one CPU each when the counts
    /// match, the whole set for every vCPU otherwise.
    fn cputune(&self, vcpus: usize) -> Result<String> {
        let Some(list) = self.spec.opt("pin") else {
            return Ok(String::new());
        };
        let cpus = cpu_list(list).ok_or_else(|| {
            anyhow!(
                "--env {}: pin={list}: expected CPU numbers such as 0-3",
                self.spec.text
            )
        })?;
        if let Some(bad) = cpus
            .iter()
            .find(|c| !Path::new(&format!("/sys/devices/system/cpu/cpu{c}")).exists())
        {
            bail!(
                "--env {}: pin={list}: this machine has no CPU {bad}: give CPUs it has (nproc says how many)",
                self.spec.text
            );
        }
        let mut out = String::from("<cputune>");
        for v in 0..vcpus {
            let set = if cpus.len() == vcpus {
                cpus[v].to_string()
            } else {
                list.to_string()
            };
            out.push_str(&format!(
                "<vcpupin vcpu='{v}' cpuset='{}'/>",
                xml::escape(&set)
            ));
        }
        out.push_str("</cputune>");
        Ok(out)
    }

    /// The transient domain's XML.
    fn domain_xml(
        &self,
        name: &str,
        cpu: &str,
        disk: &Path,
        console: &Path,
        socket: &Path,
    ) -> Result<String> {
        let vcpus: usize = self
            .spec
            .opt("vcpus")
            .and_then(|v| v.parse().ok())
            .unwrap_or(2);
        let mem = self
            .spec
            .opt("memory")
            .and_then(|m| Bytes::parse(m).ok())
            .map(|b| b.0 >> 20)
            .unwrap_or(2048);
        let virt_type = self.virt_type();
        let bus = self.spec.opt("disk-bus").unwrap_or("virtio");
        let (dev, disk_arg) = match bus {
            "virtio" => ("vda", ""),
            _ => ("sda", " virtperf.disk=sda"),
        };
        let cache = self.spec.opt("disk-cache").unwrap_or("none");
        let net = self.spec.opt("net").unwrap_or("virtio");
        let p = |p: &Path| xml::escape(&p.display().to_string());
        let mut cmdline = format!("{APPEND}{disk_arg}");
        let mut devices = String::new();
        if bus == "scsi" {
            devices.push_str("<controller type='scsi' model='virtio-scsi'/>");
        }
        devices.push_str(&format!(
            "<disk type='file' device='disk'><driver name='qemu' type='raw' cache='{cache}'/><source file='{}'/><target dev='{dev}' bus='{bus}'/></disk>",
            p(disk)
        ));
        if net != "none" {
            let model = if net == "rtl8139" { "rtl8139" } else { net };
            devices.push_str(&format!(
                "<interface type='user'><model type='{model}'/></interface>"
            ));
            cmdline.push_str(&format!(" virtperf.ip={GUEST_IP}"));
        }
        devices.push_str(&format!(
            "<serial type='file'><source path='{}'/><target port='0'/></serial>",
            p(console)
        ));
        devices.push_str(&format!(
            "<serial type='unix'><source mode='bind' path='{}'/><target port='1'/></serial>",
            p(socket)
        ));
        devices.push_str("<memballoon model='none'/>");
        Ok(format!(
            "<domain type='{virt_type}'>\n  <name>{}</name>\n  <memory unit='MiB'>{mem}</memory>\n  <vcpu placement='static'>{vcpus}</vcpu>\n  {}\n  <os><type arch='x86_64' machine='q35'>hvm</type><kernel>{}</kernel><initrd>{}</initrd><cmdline>{}</cmdline></os>\n  {cpu}\n  <on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>\n  <devices>{devices}</devices>\n</domain>\n",
            xml::escape(name),
            self.cputune(vcpus)?,
            p(&self.kernel),
            p(&self.dir().join("initramfs.cpio")),
            xml::escape(&cmdline),
        ))
    }

    fn virt_type(&self) -> &'static str {
        match self.spec.opt("accel") {
            Some("kvm") => "kvm",
            _ => "qemu",
        }
    }

    /// Destroys transient domains whose owner died before its cleanup.
    fn sweep(&self) {
        let Ok(names) = self.virsh_within(&["list", "--name"], Duration::from_secs(10)) else {
            return;
        };
        for name in names.lines().map(str::trim) {
            if owner::in_name(name, PREFIX).is_some_and(|o| o.is_dead()) {
                let _ = self.virsh_within(&["destroy", "--", name], Duration::from_secs(20));
                if let Some(log) = log_file(&self.uri, name) {
                    let _ = std::fs::remove_file(log);
                }
            }
        }
    }

    /// Connects to the agent's socket, which libvirt made for the domain
    /// (allowing a moment for it to appear), and returns a process that
    /// relays the guest's output, with the socket as its stdin: `cat`
    /// ends when the socket closes, as QEMU does when the guest powers off.
    fn attach(&self, socket: &Path) -> Result<std::process::Child> {
        let until = Instant::now() + Duration::from_secs(10);
        let stream = loop {
            match std::os::unix::net::UnixStream::connect(socket) {
                Ok(s) => break s,
                Err(e) if Instant::now() >= until => {
                    return Err(anyhow!(e).context(format!(
                        "connecting to the agent's socket {}",
                        socket.display()
                    )))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        let to_guest: OwnedFd = stream.try_clone()?.into();
        let from_guest: OwnedFd = stream.into();
        let mut child = Command::new("cat")
            .stdin(Stdio::from(from_guest))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("starting cat to read the guest's serial port")?;
        child.stdin = Some(ChildStdin::from(to_guest));
        Ok(child)
    }

    fn launch_transient(&self, index: usize) -> Result<Launched> {
        let tag = Owner::me().map(Owner::tag).unwrap_or_default();
        let n = MADE.fetch_add(1, Ordering::SeqCst);
        let name = format!("{PREFIX}{tag}-{n}");
        let disk = self.dir().join(format!("scratch-{n}.img"));
        let console = self.dir().join(format!("console-{n}.log"));
        let socket = self.dir().join(format!("agent-{n}.sock"));
        let file = self.dir().join(format!("domain-{n}.xml"));
        let mut files = vec![disk.clone(), console.clone(), socket.clone(), file.clone()];
        // libvirt's QEMU log of the domain: one per run would pile up.
        // Removed after the domain is destroyed, when libvirt has written
        // its last line.
        files.extend(log_file(&self.uri, &name));
        let remove_files = move || {
            for f in &files {
                let _ = std::fs::remove_file(f);
            }
        };
        let undo = |name: &str| {
            let mut destroy = self.virsh_command(&["destroy", "--", name]);
            destroy.stdin(Stdio::null());
            run_cleanup(destroy, Duration::from_secs(30));
        };
        let size = self
            .spec
            .opt("disk")
            .and_then(|d| Bytes::parse(d).ok())
            .map(|b| b.0)
            .unwrap_or(8 << 30);
        let made = (|| -> Result<String> {
            super::qemu::scratch_disk(&disk, size)?;
            let text = self.domain_xml(&name, &self.cpu, &disk, &console, &socket)?;
            std::fs::write(&file, text).context("writing the domain's XML")?;
            signals::check()?;
            self.virsh_finishing(&["create", &file.display().to_string()])
        })();
        if let Err(e) = made {
            // `create` may have made the domain before failing to say so.
            undo(&name);
            remove_files();
            return Err(e);
        }
        let attached = (|| -> Result<_> {
            signals::check()?;
            let child = self.attach(&socket)?;
            let live = self.dumpxml(&name, false)?;
            Ok((child, live))
        })();
        let (child, live) = match attached {
            Ok(x) => x,
            Err(e) => {
                undo(&name);
                remove_files();
                return Err(e);
            }
        };
        self.remember(index, &live);
        let pid_file = pid_file(&self.uri, &name);
        let destroy = {
            let mut c = self.virsh_command(&["destroy", "--", &name]);
            c.stdin(Stdio::null());
            c
        };
        Ok(Launched {
            child,
            cleanup: Some(Box::new(move || {
                // Normally the guest has powered off and the transient
                // domain is gone; this covers an abort.
                run_cleanup(destroy, Duration::from_secs(30));
                remove_files();
            })),
            console: Some(console),
            workdir: "/scratch".into(),
            forwarded: None,
            on_host: match pid_file {
                Some(p) => OnHost::Container(Box::new(move || {
                    std::fs::read_to_string(&p).ok()?.trim().parse().ok()
                })),
                None => OnHost::Elsewhere,
            },
        })
    }

    fn remember(&self, index: usize, live: &DomainXml) {
        let mut settings = live.essentials();
        settings.insert("uri".into(), self.uri.clone());
        if let Some(s) = self.spec.opt("snapshot") {
            settings.insert("snapshot".into(), s.to_string());
        }
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .settings
            .insert(index, settings);
    }

    /// Reverts `domain=` to `snapshot=`; a domain someone else runs is
    /// refused first (unless `shared=yes`).
    fn revert(&self, name: &str, snapshot: &str) -> Result<()> {
        self.virsh_finishing(&["snapshot-revert", "--", name, snapshot])
            .map_err(|e| {
                anyhow!(
                    "--env {}: snapshot={snapshot}: reverting domain={name} failed ({e:#}): `virsh snapshot-list {name}` lists its snapshots",
                    self.spec.text
                )
            })?;
        Ok(())
    }

    /// Starts `domain=` (it is off), remembering that virtperf did.
    fn start(&self, name: &str) -> Result<()> {
        let r = self.virsh_finishing(&["start", "--", name]);
        if r.is_ok() {
            self.started.store(true, Ordering::SeqCst);
        }
        r.map(|_| ())
            .with_context(|| format!("--env {}: starting domain={name}", self.spec.text))
    }

    /// Shuts `domain=` down if virtperf started it: it may power off by
    /// itself (virtperf's init does after "bye"); else an ACPI shutdown,
    /// and after the timeout a hard stop.
    fn stop_started(&self, name: &str) {
        if !self.started.swap(false, Ordering::SeqCst) {
            return;
        }
        shut_down(&self.uri, name, self.timeout, true);
    }

    /// How the host reaches the agent in `domain=`, from its definition:
    /// its socket where libvirt runs on this machine, else ssh to its
    /// network's address; a domain with neither is refused with the fix.
    fn way_in(&self, name: &str) -> Result<Reach> {
        let ways = self.dumpxml(name, true)?.ways_in();
        let local_socket = ways.iter().any(|w| matches!(w, WayIn::Socket(_))) && !self.remote();
        if local_socket {
            return Ok(Reach::Socket);
        }
        if ways.contains(&WayIn::Network) {
            return Ok(Reach::Ssh);
        }
        bail!(
            "--env {}: domain={name} has no way in for the agent: give it a <serial type='unix'> bound on port 1 (virtperf's initramfs speaks there) or a <channel type='unix'> named {} (a guest running `virtperf agent` on it){}, or a network interface whose address `virsh domifaddr {name}` reports and sshd with user=",
            self.spec.text,
            xml::CHANNEL_NAME,
            if self.remote() { " on this machine's libvirt (a remote domain's socket is out of reach)" } else { "" }
        )
    }

    /// A network test in `domain=` needs the guest's network, which the
    /// host reaches only when it reaches the agent over it (ssh): a
    /// domain reached over its socket is refused before it starts.
    fn check_network_reach(&self, name: &str) -> Result<()> {
        self.state_of(name)?;
        if self.way_in(name)? == Reach::Socket {
            bail!(
                "--env {}: domain={name} is reached over its agent socket, and virtperf cannot tell how the guest's network meets the host's, so a network test cannot run there: give the domain a libvirt network whose address `virsh domifaddr {name}` reports and sshd (it is then reached over ssh with user=, identity=, known-hosts=) and no agent socket, or use a transient domain (leave domain= out)",
                self.spec.text
            );
        }
        Ok(())
    }

    /// The guest's address (instance `index` of `domain=`, reached over
    /// ssh) and this host's address towards it, for a network test's
    /// route.
    fn guest_and_host(&self, index: usize) -> Result<(IpAddr, IpAddr)> {
        let guest = self
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .addresses
            .get(&index)
            .copied()
            .ok_or_else(|| {
                anyhow!(
                    "--env {}: domain={} is not reached over its network, so a network test has no route to it: give it a libvirt network and sshd, and no agent socket",
                    self.spec.text,
                    self.domain().unwrap_or("")
                )
            })?;
        Ok((guest, super::net::local_address_towards(guest)?))
    }

    fn launch_existing(&self, index: usize, name: &str) -> Result<Launched> {
        let shared = self.spec.opt("shared") == Some("yes");
        let fresh = self.fresh.swap(false, Ordering::SeqCst);
        let mut state = self.state_of(name)?;
        let reach = self.way_in(name)?;
        let ours = self.started.load(Ordering::SeqCst);
        if state.starts_with("running") && !shared && !ours {
            bail!(
                "--env {}: domain={name} is running, maybe with someone's work: shut it down first (virsh shutdown {name}), or add shared=yes to run in it as it is",
                self.spec.text
            );
        }
        if let Some(snapshot) = self.spec.opt("snapshot") {
            if !fresh {
                self.revert(name, snapshot)?;
                state = self.state_of(name)?;
            }
        }
        if state.starts_with("shut off") {
            self.start(name)?;
        } else if !state.starts_with("running") {
            bail!(
                "--env {}: domain={name} is {state}: resume it (virsh resume {name}) or shut it down (virsh shutdown {name}) first",
                self.spec.text
            );
        }
        let result = self.reach(index, name, reach);
        if result.is_err() {
            self.stop_started(name);
        }
        result
    }

    /// Reaches the agent in running `domain=`: over its socket, or over ssh
    /// to the address libvirt reports.
    fn reach(&self, index: usize, name: &str, reach: Reach) -> Result<Launched> {
        signals::check()?;
        let live = self.dumpxml(name, false)?;
        self.remember(index, &live);
        let stop = {
            let started = self.started.clone();
            let uri = self.uri.clone();
            let name = name.to_string();
            let timeout = self.timeout;
            // Only virtperf's init powers off after "bye"; a guest
            // reached over ssh is asked at once.
            let by_itself = reach == Reach::Socket;
            move || {
                if started.swap(false, Ordering::SeqCst) {
                    shut_down(&uri, &name, timeout, by_itself);
                }
            }
        };
        if reach == Reach::Socket {
            let socket = live.agent_socket().ok_or_else(|| {
                anyhow!(
                    "--env {}: domain={name} runs without its agent socket in its live XML",
                    self.spec.text
                )
            })?;
            let child = self.attach(Path::new(&socket))?;
            let pid_file = pid_file(&self.uri, name);
            return Ok(Launched {
                child,
                cleanup: Some(Box::new(stop)),
                console: None,
                workdir: if live.direct_boot() {
                    "/scratch".into()
                } else {
                    "/var/tmp".into()
                },
                forwarded: None,
                on_host: match pid_file {
                    Some(p) => OnHost::Container(Box::new(move || {
                        std::fs::read_to_string(&p).ok()?.trim().parse().ok()
                    })),
                    None => OnHost::Elsewhere,
                },
            });
        }
        let addr = self.address(name)?;
        if let Ok(ip) = addr.parse::<IpAddr>() {
            self.state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .addresses
                .insert(index, ip);
        }
        let user = self.spec.opt("user").unwrap_or("root");
        let mut opts = BTreeMap::new();
        for k in SSH_ONLY.iter().filter(|k| **k != "user") {
            if let Some(v) = self.spec.opt(k) {
                opts.insert(k.to_string(), v.to_string());
            }
        }
        opts.insert("timeout".into(), self.timeout.as_secs().to_string());
        let target = format!("{user}@{addr}");
        let ssh = SshEnvironment::new(Spec {
            driver: &super::ssh::DEF,
            label: self.spec.label.clone(),
            count: 1,
            // The domain's own reboot hook reboots it, not ssh's.
            reboot: super::def::Reboot::No,
            target: Some((target.clone(), None)),
            opts,
            text: format!("ssh:{target} (domain={name})"),
            members: Vec::new(),
        });
        self.wait_for_sshd(&ssh, name, &addr)?;
        let mut launched = ssh.launch(0)?;
        let ssh_cleanup = launched.cleanup.take();
        launched.cleanup = Some(Box::new(move || {
            if let Some(c) = ssh_cleanup {
                c();
            }
            stop();
        }));
        Ok(launched)
    }

    /// Waits, within the timeout, until the guest's sshd answers: a guest
    /// has its address (a DHCP lease) well before its sshd has started.
    /// A refusal that waiting does not cure (the host key, the user's key)
    /// is reported at once.
    fn wait_for_sshd(&self, ssh: &SshEnvironment, name: &str, addr: &str) -> Result<()> {
        let until = Instant::now() + self.timeout;
        loop {
            let why = match ssh.check() {
                Ok(()) => return Ok(()),
                Err(e) if e.is::<signals::Interrupted>() => return Err(e),
                Err(e) if !sshd_not_up_yet(&format!("{e:#}")) => return Err(e),
                Err(e) => e,
            };
            if Instant::now() >= until {
                bail!(
                    "--env {}: domain={name} has address {addr}, but no sshd answered there within {} s ({}): start sshd in the guest and let port 22 through its firewall; timeout= waits longer",
                    self.spec.text,
                    self.timeout.as_secs(),
                    text::one_line(&format!("{why:#}"), 300)
                );
            }
            std::thread::sleep(Duration::from_millis(500));
            signals::check()?;
        }
    }

    /// The domain's first IPv4 address as libvirt reports it (DHCP lease,
    /// guest agent, ARP), waited for within the timeout while it boots.
    fn address(&self, name: &str) -> Result<String> {
        let until = Instant::now() + self.timeout;
        loop {
            signals::check()?;
            for source in ["lease", "agent", "arp"] {
                if let Ok(out) = self.virsh_within(
                    &["domifaddr", "--source", source, "--", name],
                    Duration::from_secs(10),
                ) {
                    if let Some(ip) = first_ipv4(&out) {
                        return Ok(ip);
                    }
                }
            }
            if Instant::now() >= until {
                bail!(
                    "--env {}: domain={name} has no address libvirt reports within {} s (virsh domifaddr {name} shows none): put it on a libvirt network with DHCP, or run qemu-guest-agent in it; timeout= waits longer",
                    self.spec.text,
                    self.timeout.as_secs()
                );
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Before a run that must start from a fresh boot (`reboot=each-run`):
    /// a transient domain is defined anew at every launch, a fresh boot
    /// already; `domain=` with `snapshot=` is reverted to it and started;
    /// a shared domain that runs on is rebooted; one virtperf shut down
    /// after the last run is started by the next launch.
    fn reboot_domain(&self) -> anyhow::Result<()> {
        let Some(name) = self.domain() else {
            return Ok(());
        };
        let state = self.state_of(name)?;
        let running = state.starts_with("running");
        let ours = self.started.load(Ordering::SeqCst);
        if let Some(snapshot) = self.spec.opt("snapshot") {
            if running && !ours && self.spec.opt("shared") != Some("yes") {
                bail!(
                    "--env {}: domain={name} is running, maybe with someone's work: shut it down first, or add shared=yes",
                    self.spec.text
                );
            }
            self.revert(name, snapshot)?;
            if self.state_of(name)?.starts_with("shut off") {
                self.start(name)?;
            } else if running && !ours {
                // Reverted to a running state: virtperf made it run.
                self.started.store(true, Ordering::SeqCst);
            }
            self.fresh.store(true, Ordering::SeqCst);
            return Ok(());
        }
        if running {
            self.virsh_finishing(&["reboot", "--", name])
                .with_context(|| format!("--env {}: rebooting domain={name}", self.spec.text))?;
        }
        Ok(())
    }
}

/// The pid file of a local domain's QEMU, where the host can read it (for
/// the noise check: the VM's own CPU use is not another process's load).
fn pid_file(uri: &str, name: &str) -> Option<PathBuf> {
    let path = uri.split_once("://")?.1;
    if !path.starts_with('/') {
        return None;
    }
    match path.split('?').next()? {
        "/system" => Some(PathBuf::from(format!("/run/libvirt/qemu/{name}.pid"))),
        "/session" => {
            let run = std::env::var_os("XDG_RUNTIME_DIR")?;
            Some(Path::new(&run).join(format!("libvirt/qemu/run/{name}.pid")))
        }
        _ => None,
    }
}

/// The QEMU log libvirt keeps for a local domain.
fn log_file(uri: &str, name: &str) -> Option<PathBuf> {
    let path = uri.split_once("://")?.1;
    if !path.starts_with('/') {
        return None;
    }
    match path.split('?').next()? {
        "/system" => Some(PathBuf::from(format!("/var/log/libvirt/qemu/{name}.log"))),
        "/session" => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
            Some(cache.join(format!("libvirt/qemu/log/{name}.log")))
        }
        _ => None,
    }
}

/// `virsh` on connection `uri`, messages in English whatever the user's
/// locale, and out of the terminal's process group: Ctrl-C is for virtperf,
/// which decides what a half-done virsh command leaves to undo.
fn virsh_command(uri: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("virsh");
    cmd.args(["-q", "-c", uri]).args(args);
    cmd.env("LC_ALL", "C").process_group(0);
    cmd
}

/// How long a domain virtperf started gets, after Ctrl-C, to power off
/// on ACPI before it is destroyed: the run must end promptly, and
/// virtperf's own init ignores ACPI.
const INTERRUPTED_GRACE: Duration = Duration::from_secs(10);

/// Shuts a domain down: waits briefly for it to power off by itself (it
/// does after "bye"; only when `by_itself` says it may), asks (ACPI), and
/// destroys it when `limit` has passed.
/// After Ctrl-C nothing told the guest to stop: it is asked at once and
/// given at most [`INTERRUPTED_GRACE`]; after a second Ctrl-C it is
/// destroyed at once.
fn shut_down(uri: &str, name: &str, limit: Duration, by_itself: bool) {
    // Finishing: the state must still be read after Ctrl-C, when this runs.
    let off = || {
        run_bounded(
            virsh_command(uri, &["domstate", "--", name]),
            None,
            Limits::new(Duration::from_secs(10)).finishing(),
        )
        .map(|o| {
            !o.status.success()
                || String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .starts_with("shut off")
        })
        .unwrap_or(false)
    };
    // Up to `d`, or the grace once interrupted (also while it waits).
    let wait = |d: Duration| {
        let start = Instant::now();
        loop {
            if off() {
                return true;
            }
            let d = if signals::interrupted() {
                d.min(INTERRUPTED_GRACE)
            } else {
                d
            };
            if start.elapsed() >= d || signals::hurried() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    };
    let by_itself = if signals::interrupted() || !by_itself {
        Duration::ZERO
    } else {
        Duration::from_secs(5)
    };
    if !signals::hurried() {
        if wait(by_itself) {
            return;
        }
        run_cleanup(
            virsh_command(uri, &["shutdown", "--", name]),
            Duration::from_secs(20),
        );
        if wait(limit) {
            return;
        }
    }
    run_cleanup(
        virsh_command(uri, &["destroy", "--", name]),
        Duration::from_secs(30),
    );
}

/// `0-3` (the only form a spec's value can take: commas separate options)
/// as its CPUs.
fn cpu_list(text: &str) -> Option<Vec<usize>> {
    let (a, b) = match text.split_once('-') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => {
            let n = text.parse().ok()?;
            (n, n)
        }
    };
    (a <= b && b < 4096).then(|| (a..=b).collect())
}

/// Whether ssh failed the way it does while the guest is still booting
/// (nothing listens yet, the interface is not up), not for a reason that
/// waiting does not cure.
fn sshd_not_up_yet(message: &str) -> bool {
    [
        "Connection refused",
        "No route to host",
        "Connection timed out",
        "Connection reset",
        "Connection closed",
        "kex_exchange_identification",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// The first IPv4 address in `virsh domifaddr` output (its table's
/// "ipv4  A.B.C.D/N" cells).
fn first_ipv4(out: &str) -> Option<String> {
    out.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        words.find(|w| *w == "ipv4")?;
        let addr = words.next()?.split('/').next()?;
        addr.parse::<std::net::Ipv4Addr>()
            .ok()
            .filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
            .map(|ip| ip.to_string())
    })
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
