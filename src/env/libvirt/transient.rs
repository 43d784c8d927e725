//! The transient domain virtperf defines when no `domain=` is given: its
//! XML (vCPUs, memory, CPU mode checked against libvirt's capabilities,
//! pinning, disks, NIC, the kernel and initramfs with the modules the
//! settings need), `virsh create`, the agent's serial socket, and the
//! sweep of what an earlier killed run left.

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::virsh::{log_file, pid_file};
use super::xml::{self, CpuCaps, DomainXml};
use super::{LibvirtEnvironment, PREFIX};
use crate::core::signals;
use crate::core::units::Bytes;
use crate::env::qemu::initramfs;
use crate::env::{Launched, OnHost};
use crate::sys::bounded::run_cleanup;
use crate::sys::owner::{self, Owner};

/// The kernel command line (the console on ttyS0 goes to a log file).
const APPEND: &str = "console=ttyS0 panic=-1 quiet loglevel=4";
/// The guest's address on libvirt's user-mode network (as QEMU's).
const GUEST_IP: &str = "10.0.2.15/24";

/// How many transient domains this process has made (their names' suffix).
static MADE: AtomicUsize = AtomicUsize::new(0);

impl LibvirtEnvironment {
    /// The kernel modules a transient domain's settings need beyond the
    /// initramfs's own, refused when the guest kernel lacks one.
    pub(super) fn extra_modules(&self) -> Result<Vec<&'static str>> {
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
    pub(super) fn cpu_element(&self, virt_type: &str) -> Result<String> {
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
    pub(super) fn cputune(&self, vcpus: usize) -> Result<String> {
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
    pub(super) fn domain_xml(
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

    pub(super) fn virt_type(&self) -> &'static str {
        match self.spec.opt("accel") {
            Some("kvm") => "kvm",
            _ => "qemu",
        }
    }

    /// Destroys transient domains whose owner died before its cleanup.
    pub(super) fn sweep(&self) {
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
    pub(super) fn attach(&self, socket: &Path) -> Result<std::process::Child> {
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

    pub(super) fn launch_transient(&self, index: usize) -> Result<Launched> {
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
            crate::env::qemu::scratch_disk(&disk, size)?;
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

    pub(super) fn remember(&self, index: usize, live: &DomainXml) {
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
}

/// `0-3` (the only form a spec's value can take: commas separate options)
/// as its CPUs.
pub(super) fn cpu_list(text: &str) -> Option<Vec<usize>> {
    let (a, b) = match text.split_once('-') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => {
            let n = text.parse().ok()?;
            (n, n)
        }
    };
    (a <= b && b < 4096).then(|| (a..=b).collect())
}
