//! An existing domain (`domain=NAME`): reverted to `snapshot=`, started if
//! it is off (and shut down after if virtperf started it), refused while it
//! runs unless `shared=yes`, and reached over its agent socket or over ssh
//! to the address libvirt reports; rebooted for `reboot=`.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::virsh::{pid_file, shut_down};
use super::xml::{self, WayIn};
use super::{LibvirtEnvironment, SSH_ONLY};
use crate::core::signals;
use crate::core::text;
use crate::env::ssh::SshEnvironment;
use crate::env::{Environment, Launched, OnHost, Spec};

/// How the host reaches the agent in `domain=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// Over the unix socket of its serial port or channel.
    Socket,
    /// Over ssh to the address libvirt reports.
    Ssh,
}

impl LibvirtEnvironment {
    /// Reverts `domain=` to `snapshot=`; a domain someone else runs is
    /// refused first (unless `shared=yes`).
    pub(super) fn revert(&self, name: &str, snapshot: &str) -> Result<()> {
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
    pub(super) fn start(&self, name: &str) -> Result<()> {
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
    pub(super) fn stop_started(&self, name: &str) {
        if !self.started.swap(false, Ordering::SeqCst) {
            return;
        }
        shut_down(&self.uri, name, self.timeout, true);
    }

    /// How the host reaches the agent in `domain=`, from its definition:
    /// its socket where libvirt runs on this machine, else ssh to its
    /// network's address; a domain with neither is refused with the fix.
    pub(super) fn way_in(&self, name: &str) -> Result<Reach> {
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
    pub(super) fn check_network_reach(&self, name: &str) -> Result<()> {
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
    pub(super) fn guest_and_host(&self, index: usize) -> Result<(IpAddr, IpAddr)> {
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
        Ok((guest, crate::env::net::local_address_towards(guest)?))
    }

    pub(super) fn launch_existing(&self, index: usize, name: &str) -> Result<Launched> {
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
    pub(super) fn reach(&self, index: usize, name: &str, reach: Reach) -> Result<Launched> {
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
            driver: &crate::env::ssh::DEF,
            label: self.spec.label.clone(),
            count: 1,
            // The domain's own reboot hook reboots it, not ssh's.
            reboot: crate::env::def::Reboot::No,
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
    pub(super) fn wait_for_sshd(&self, ssh: &SshEnvironment, name: &str, addr: &str) -> Result<()> {
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
    pub(super) fn address(&self, name: &str) -> Result<String> {
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
    pub(super) fn reboot_domain(&self) -> anyhow::Result<()> {
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

/// Whether ssh failed the way it does while the guest is still booting
/// (nothing listens yet, the interface is not up), not for a reason that
/// waiting does not cure.
pub(super) fn sshd_not_up_yet(message: &str) -> bool {
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
pub(super) fn first_ipv4(out: &str) -> Option<String> {
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
