//! libvirt through `virsh` subprocesses: every call bounded in time and in
//! what it prints (`sys::bounded`), its errors worded with the fix, a
//! domain's state and XML read; where the host finds a local domain's pid
//! file and log; and the shutdown of a domain, polite first, destroyed
//! when it does not stop.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};

use super::xml::{self, DomainXml};
use super::LibvirtEnvironment;
use crate::core::signals;
use crate::core::text;
use crate::sys::bounded::{run_bounded, run_cleanup, Bounded, Limits};

impl LibvirtEnvironment {
    pub(super) fn virsh_command(&self, args: &[&str]) -> Command {
        virsh_command(&self.uri, args)
    }

    pub(super) fn virsh(&self, args: &[&str]) -> Result<String> {
        self.virsh_limited(args, Limits::new(self.timeout))
    }

    pub(super) fn virsh_within(&self, args: &[&str], limit: Duration) -> Result<String> {
        self.virsh_limited(args, Limits::new(limit))
    }

    /// Runs to its end after Ctrl-C: a command that makes something (a
    /// domain, a started guest) must say whether it did, so it is undone.
    pub(super) fn virsh_finishing(&self, args: &[&str]) -> Result<String> {
        self.virsh_limited(args, Limits::new(self.timeout).finishing())
    }

    pub(super) fn virsh_limited(&self, args: &[&str], limits: Limits) -> Result<String> {
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
    pub(super) fn state_of(&self, name: &str) -> Result<String> {
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

    pub(super) fn dumpxml(&self, name: &str, inactive: bool) -> Result<DomainXml> {
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
}

/// The pid file of a local domain's QEMU, where the host can read it (for
/// the noise check: the VM's own CPU use is not another process's load).
pub(super) fn pid_file(uri: &str, name: &str) -> Option<PathBuf> {
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
pub(super) fn log_file(uri: &str, name: &str) -> Option<PathBuf> {
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
pub(super) fn virsh_command(uri: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("virsh");
    cmd.args(["-q", "-c", uri]).args(args);
    cmd.env("LC_ALL", "C").process_group(0);
    cmd
}

/// How long a domain virtperf started gets, after Ctrl-C, to power off
/// on ACPI before it is destroyed: the run must end promptly, and
/// virtperf's own init ignores ACPI.
pub(super) const INTERRUPTED_GRACE: Duration = Duration::from_secs(10);

/// Shuts a domain down: waits briefly for it to power off by itself (it
/// does after "bye"; only when `by_itself` says it may), asks (ACPI), and
/// destroys it when `limit` has passed.
/// After Ctrl-C nothing told the guest to stop: it is asked at once and
/// given at most [`INTERRUPTED_GRACE`]; after a second Ctrl-C it is
/// destroyed at once.
pub(super) fn shut_down(uri: &str, name: &str, limit: Duration, by_itself: bool) {
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
