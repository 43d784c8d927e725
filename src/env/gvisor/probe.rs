//! What this machine's runsc is and which of its platforms and network
//! modes start a sandbox here, each tried for real (a trivial `runsc do`
//! under a deadline) and found once per process: the KVM platform hangs
//! under nested KVM, and an old runsc refuses its own network stack on a
//! new kernel. A refusal names the reason and the option that avoids it.

use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{anyhow, bail, Result};

use crate::sys::bounded::{run_bounded, Bounded, Limits};

/// How long a trial sandbox may take to start and run `true`: one that
/// starts does so in well under a second; KVM's hang is cut here.
const TRIAL: Duration = Duration::from_secs(4);

/// How long `runsc --version` and `runsc help platforms` may take.
const QUICK: Duration = Duration::from_secs(20);

/// The runsc found on this machine.
#[derive(Debug, Clone)]
pub struct Runsc {
    /// As `runsc --version` prints it (`0.0~20221219.0`).
    pub version: String,
    /// The platforms it was built with (`ptrace`, `kvm`, `systrap`...).
    pub platforms: Vec<String>,
}

fn runsc_output(
    args: &[&str],
    tmp: Option<&std::path::Path>,
    limit: Duration,
) -> Result<std::process::Output, Bounded> {
    let mut cmd = Command::new("runsc");
    cmd.args(args);
    // `runsc do` keeps its root file system's overlay in TMPDIR.
    if let Some(tmp) = tmp {
        cmd.env("TMPDIR", tmp);
    }
    let mut limits = Limits::new(limit);
    // SIGTERM first: runsc then removes the sandbox it was starting.
    limits.grace = Some(Duration::from_secs(2));
    run_bounded(cmd, None, limits)
}

/// This machine's runsc, or why there is none to use.
pub fn runsc() -> Result<Runsc> {
    static FOUND: OnceLock<Result<Runsc, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| find().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow!(e))
}

fn find() -> Result<Runsc> {
    let out = runsc_output(&["--version"], None, QUICK).map_err(|e| match e {
        Bounded::Failed(e) => anyhow!("runsc not found ({e}): apt-get install runsc"),
        _ => anyhow!("`runsc --version` did not answer"),
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("runsc version "))
        .map(|v| v.trim().to_string())
        .ok_or_else(|| anyhow!("`runsc --version` printed no version: {}", text.trim()))?;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("runsc {version} needs root to make its sandbox here: run virtperf as root");
    }
    let out = runsc_output(&["help", "platforms"], None, QUICK)
        .map_err(|_| anyhow!("`runsc help platforms` did not answer"))?;
    let platforms = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()))
        .map(str::to_string)
        .collect();
    Ok(Runsc { version, platforms })
}

/// Why a trivial sandbox on `platform` with `network` does not run here,
/// if it does not; each pair is tried once per process.
pub fn trial(platform: &str, network: &str) -> Option<String> {
    static TRIED: Mutex<Vec<(String, Option<String>)>> = Mutex::new(Vec::new());
    let key = format!("{platform}/{network}");
    let mut tried = TRIED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, why)) = tried.iter().find(|(k, _)| *k == key) {
        return why.clone();
    }
    let why = run_trial(platform, network);
    tried.push((key, why.clone()));
    why
}

fn run_trial(platform: &str, network: &str) -> Option<String> {
    if platform == "kvm" {
        if let Err(e) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
        {
            return Some(format!(
                "/dev/kvm cannot be opened ({e}): KVM is not offered to this machine"
            ));
        }
    }
    // A directory of its own for runsc's state and `runsc do`'s overlay,
    // so that nothing of the trial outlives it.
    let dir = tempfile::Builder::new()
        .prefix("virtperf-gvisor-trial-")
        .tempdir()
        .ok()?;
    let state = dir.path().join("state");
    std::fs::create_dir(&state).ok()?;
    let root = state.to_string_lossy().into_owned();
    let args = [
        "--root",
        &root,
        "--platform",
        platform,
        "--network",
        network,
        "do",
        "true",
    ];
    let why = match runsc_output(&args, Some(dir.path()), TRIAL) {
        Ok(out) if out.status.success() => None,
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            Some(explain(last.trim()))
        }
        Err(Bounded::TimedOut(t)) if platform == "kvm" => Some(format!(
            "a sandbox on the kvm platform did not start within {} s (nested KVM hangs on machines that are themselves VMs)",
            t.as_secs()
        )),
        Err(Bounded::TimedOut(t)) => Some(format!("a trial sandbox did not start within {} s", t.as_secs())),
        Err(Bounded::Interrupted) => Some("interrupted".into()),
        Err(Bounded::Failed(e)) => Some(format!("runsc could not be started: {e}")),
    };
    super::delete_all(&state, QUICK);
    why
}

/// runsc's message, with what it means where virtperf knows.
fn explain(message: &str) -> String {
    if message.contains("root network namespace") {
        format!(
            "{message} (this runsc looks for /proc/sys/net/core/rmem_default to tell the host's namespace, and this kernel shows that file in every namespace; a newer runsc tells them apart)"
        )
    } else {
        message.to_string()
    }
}

/// The platform to use: the one asked for, refused with its reason where
/// it cannot start here; or the best that starts (systrap, kvm, ptrace),
/// with a note on the better ones passed over.
pub fn choose_platform(runsc: &Runsc, asked: Option<&str>) -> Result<(String, Option<String>)> {
    let offered = |p: &str| runsc.platforms.iter().any(|x| x == p);
    if let Some(p) = asked {
        if !offered(p) {
            bail!(
                "--env gvisor:platform={p}: this runsc ({}) offers only {}: use platform={} or install a newer runsc",
                runsc.version,
                runsc.platforms.join(", "),
                runsc.platforms.first().map_or("ptrace", String::as_str)
            );
        }
        if let Some(why) = trial(p, "none") {
            bail!(
                "--env gvisor:platform={p} cannot start a sandbox here: {why}; use platform=ptrace"
            );
        }
        return Ok((p.to_string(), None));
    }
    let mut passed = Vec::new();
    for p in ["systrap", "kvm", "ptrace"] {
        if !offered(p) {
            continue;
        }
        match trial(p, "none") {
            None => {
                let note = (!passed.is_empty()).then(|| passed.join("; "));
                return Ok((p.to_string(), note));
            }
            Some(why) => passed.push(format!("{p}: {why}")),
        }
    }
    bail!(
        "runsc {} starts no sandbox here on any of its platforms ({})",
        runsc.version,
        passed.join("; ")
    )
}

/// The network mode to use: as asked, with `sandbox` (gVisor's own network
/// stack) refused with its reason where it cannot start; by default
/// `sandbox` where it starts, otherwise `host` with a note.
pub fn choose_network(
    platform: &str,
    asked: Option<&str>,
) -> Result<(&'static str, Option<String>)> {
    match asked {
        Some("none") => Ok(("none", None)),
        Some("host") => Ok(("host", None)),
        Some(_) => match trial(platform, "sandbox") {
            None => Ok(("sandbox", None)),
            Some(why) => bail!(
                "--env gvisor:network=sandbox: gVisor's own network stack does not start here: {why}; use network=host (the host kernel's stack, in the sandbox's own namespace)"
            ),
        },
        None => match trial(platform, "sandbox") {
            None => Ok(("sandbox", None)),
            Some(why) => Ok((
                "host",
                Some(format!("gVisor's own network stack does not start here ({why}); using network=host")),
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_platform_this_runsc_lacks_is_refused_naming_those_it_has() {
        let runsc = Runsc {
            version: "0.0~20221219.0".into(),
            platforms: vec!["ptrace".into(), "kvm".into()],
        };
        let err = choose_platform(&runsc, Some("systrap"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("platform=systrap"), "{err}");
        assert!(err.contains("ptrace, kvm"), "{err}");
        assert!(err.contains("platform=ptrace"), "{err}");
    }

    #[test]
    fn the_root_namespace_refusal_is_explained() {
        let text = explain("cannot run with network enabled in root network namespace");
        assert!(text.contains("rmem_default"), "{text}");
        assert_eq!(explain("other"), "other");
    }
}
