//! One command of a container engine (docker or podman), as root or as
//! rootless Podman's user, bounded in time so a hung daemon is named
//! instead of hanging the run; and the sweep of what killed runs left.

use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};

use super::rootless::Rootless;
use super::Spec;
use crate::sys::bounded::{run_bounded, Bounded, Limits};
use crate::sys::owner::Owner;

/// The label naming the virtperf process that started a container (see
/// `sys::owner`).
pub const OWNER_LABEL: &str = "virtperf.owner";

/// How long one engine command may take unless `timeout=` says: a hung
/// daemon must not hang virtperf.
const ENGINE_TIMEOUT: Duration = Duration::from_secs(60);

/// The bound on engine commands for this spec.
pub(super) fn engine_limit(spec: &Spec) -> Duration {
    spec.opt("timeout")
        .and_then(|t| t.parse().ok())
        .map_or(ENGINE_TIMEOUT, Duration::from_secs)
}

/// An engine command, as root or as rootless Podman's user.
pub(super) fn engine_command(cli: &str, user: Option<&Rootless>) -> Command {
    user.map_or_else(|| Command::new(cli), |r| r.command(cli))
}

/// Runs one engine command within `limit`, feeding it `input`; a command
/// that does not end is killed and named with the fix.
pub(super) fn engine(
    cli: &str,
    user: Option<&Rootless>,
    args: &[&str],
    input: Option<&[u8]>,
    limit: Duration,
) -> Result<Output> {
    let mut cmd = engine_command(cli, user);
    cmd.args(args);
    run_bounded(cmd, input, Limits::new(limit)).map_err(|e| match e {
        Bounded::TimedOut(limit) => anyhow!(
            "`{cli} {}` did not finish within {} s: is the {cli} engine hung? (check `systemctl status {cli}`; {cli}:timeout=SECONDS raises the bound)",
            args.first().copied().unwrap_or_default(),
            limit.as_secs()
        ),
        Bounded::Interrupted => crate::core::signals::Interrupted.into(),
        Bounded::Failed(e) => anyhow!("{cli} not found ({e}): install it to use --env {cli}"),
    })
}

/// The engine's version, or why it cannot be reached.
pub fn engine_version(cli: &str, user: Option<&Rootless>, limit: Duration) -> Result<String> {
    let out = engine(
        cli,
        user,
        &["version", "--format", "{{.Server.Version}}"],
        None,
        limit,
    )?;
    if !out.status.success() {
        bail!(
            "the {cli} engine is not reachable: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Removes the containers (with their anonymous volumes) of virtperf runs
/// that were killed before their cleanup and whose agent did not end by
/// itself; once per engine and process. Returns how many went.
pub(super) fn sweep_dead_owners(
    cli: &'static str,
    user: Option<&Rootless>,
    limit: Duration,
) -> usize {
    static SWEPT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    {
        let key = format!("{cli} {}", user.map_or("", |r| &r.user));
        let mut swept = SWEPT.lock().unwrap_or_else(|p| p.into_inner());
        if swept.contains(&key) {
            return 0;
        }
        swept.push(key);
    }
    // What a command printed, also when it failed for some of its
    // arguments (a container that went meanwhile).
    let quiet = |args: &[&str]| {
        engine(cli, user, args, None, limit)
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let filter = format!("label={OWNER_LABEL}");
    let Some(ids) = quiet(&["ps", "-aq", "--filter", &filter]) else {
        return 0;
    };
    let ids: Vec<&str> = ids.split_whitespace().collect();
    if ids.is_empty() {
        return 0;
    }
    // The name (Docker writes it with a leading '/'), then the owner.
    let format = format!("{{{{.Name}}}} {{{{index .Config.Labels \"{OWNER_LABEL}\"}}}}");
    let mut args = vec!["inspect", "--format", &format];
    args.extend(&ids);
    let Some(owners) = quiet(&args) else {
        return 0;
    };
    let dead: Vec<&str> = owners
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, tag)| Owner::parse(tag.trim()).is_some_and(|o| o.is_dead()))
        .map(|(name, _)| name.trim_start_matches('/'))
        .collect();
    if dead.is_empty() {
        return 0;
    }
    let mut args = vec!["rm", "-f", "-v"];
    args.extend(&dead);
    let _ = quiet(&args);
    dead.len()
}
