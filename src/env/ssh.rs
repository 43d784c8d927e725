//! The `ssh:USER@HOST[:PORT]` driver: copies this binary into a fresh
//! temporary directory on the target, runs the agent there over the same
//! connection and removes the directory afterwards (in the target's
//! `TMPDIR`, /tmp without one). It uses the system ssh
//! client in batch mode; host-key checking stays on unless
//! `host-key-check=off`; every remote path is single-quoted.

use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::def::{Check, DriverDef, EnvOption};
use super::{Environment, Launched, OnHost, Route, Spec};
use crate::sys::bounded::{run_bounded, run_cleanup, Bounded, Limits};

/// How long a small set-up command over ssh (mktemp, rm, a probe) may take
/// unless `timeout=` says: a target that connects and then hangs is given up
/// on within this.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The upload of the binary may take SETUP_TIMEOUT plus this per MiB.
const UPLOAD_PER_MIB: Duration = Duration::from_secs(1);

pub const DEF: DriverDef = DriverDef {
    name: "ssh",
    summary:
        "any machine reachable by ssh: the binary is copied to a temporary directory and removed",
    target: Some("USER@HOST[:PORT]"),
    options: &[
        EnvOption::new(
            "host-key-check",
            Check::Choice(&["on", "off"]),
            "check the host key (default on)",
        ),
        EnvOption::new("identity", Check::Text, "the private key file"),
        EnvOption::new("known-hosts", Check::Text, "the known_hosts file"),
        EnvOption::new(
            "reboot-command",
            Check::Text,
            "with reboot=each-run or each-round: the command that reboots the target (default 'sudo -n reboot')",
        ),
        EnvOption::new(
            "reboot-timeout",
            Check::Whole(10, 3600),
            "with reboot=each-run or each-round: seconds the target may take to come back with a new boot (default 300)",
        ),
        EnvOption::new(
            "timeout",
            Check::Whole(1, 86400),
            "seconds one set-up command (mktemp, the upload, rm) may take (default: 30 for each small command, the upload 30 + 1 per MiB)",
        ),
    ],
    probe_by_default: false,
    build: |spec| Ok(Box::new(SshEnvironment::new(spec.clone()))),
    probe: |spec| match SshEnvironment::new(spec.clone()).check() {
        Ok(()) => (true, "reachable".into()),
        Err(e) => (false, format!("{e:#}")),
    },
};

pub struct SshEnvironment {
    spec: Spec,
}

/// Quotes a word for a POSIX shell.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl SshEnvironment {
    pub fn new(spec: Spec) -> SshEnvironment {
        SshEnvironment { spec }
    }

    fn ssh(&self) -> Command {
        let (dest, port) = self.spec.target.clone().expect("ssh specs have a target");
        let mut cmd = Command::new("ssh");
        cmd.args(["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]);
        // A connection that stops answering is noticed within a minute.
        cmd.args([
            "-o",
            "ServerAliveInterval=15",
            "-o",
            "ServerAliveCountMax=4",
        ]);
        if self.spec.opt("host-key-check") == Some("off") {
            cmd.args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
            ]);
        } else {
            cmd.args(["-o", "StrictHostKeyChecking=yes"]);
        }
        if let Some(kh) = self.spec.opt("known-hosts") {
            cmd.arg("-o").arg(format!("UserKnownHostsFile={kh}"));
        }
        if let Some(id) = self.spec.opt("identity") {
            cmd.args(["-o", "IdentitiesOnly=yes", "-i", id]);
        }
        if let Some(p) = port {
            cmd.args(["-p", &p.to_string()]);
        }
        // "--" ends ssh's options: the destination can never be one.
        cmd.arg("--").arg(dest);
        cmd
    }

    fn given_timeout(&self) -> Option<Duration> {
        self.spec
            .opt("timeout")
            .and_then(|t| t.parse().ok())
            .map(Duration::from_secs)
    }

    /// A small command's limit.
    fn timeout(&self) -> Duration {
        self.given_timeout().unwrap_or(SETUP_TIMEOUT)
    }

    /// The upload's limit, scaled by its size.
    fn upload_timeout(&self, bytes: usize) -> Duration {
        self.given_timeout()
            .unwrap_or_else(|| SETUP_TIMEOUT + UPLOAD_PER_MIB * (bytes as u32).div_ceil(1 << 20))
    }

    /// Runs `script` on the target, feeding it `input`; it must end within
    /// `limit` or it is killed.
    fn remote(&self, script: &str, input: Option<&[u8]>) -> Result<String> {
        self.remote_within(script, input, self.timeout())
    }

    fn remote_within(&self, script: &str, input: Option<&[u8]>, limit: Duration) -> Result<String> {
        self.remote_limited(script, input, Limits::new(limit))
    }

    fn remote_limited(&self, script: &str, input: Option<&[u8]>, limits: Limits) -> Result<String> {
        let mut cmd = self.ssh();
        cmd.arg(script);
        let what = script.split_whitespace().next().unwrap_or("");
        let out = run_bounded(cmd, input, limits).map_err(|e| match e {
            Bounded::TimedOut(limit) => anyhow::anyhow!(
                "ssh {}: '{what}' did not finish within {} s (timeout={}): the target or the connection hangs",
                self.spec.text,
                limit.as_secs(),
                limit.as_secs()
            ),
            Bounded::Interrupted => crate::core::signals::Interrupted.into(),
            Bounded::Failed(e) => e.context("running ssh (install openssh-client)"),
        })?;
        if !out.status.success() {
            bail!(
                "ssh {}: {}",
                self.spec.text,
                crate::core::text::terminal_safe(String::from_utf8_lossy(&out.stderr).trim(), 4000)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

impl SshEnvironment {
    /// Whether the target answers (for `virtperf envs`).
    pub fn check(&self) -> Result<()> {
        self.remote("true", None).map(|_| ())
    }

    /// The target's kernel boot id: a reboot changes it.
    fn boot_id(&self) -> Result<String> {
        let id = self.remote("cat /proc/sys/kernel/random/boot_id", None)?;
        match id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            true => Ok(id),
            false => bail!(
                "ssh {}: the target's /proc/sys/kernel/random/boot_id reads {:?}, not a boot id: reboot=each-run needs a Linux target",
                self.spec.text,
                crate::core::text::one_line(&id, 60)
            ),
        }
    }
}

/// How often a rebooting target is asked whether it is back.
const REBOOT_POLL: Duration = Duration::from_secs(2);

impl Environment for SshEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    /// Connecting is not booting: `reboot=each-run` reboots before the
    /// first run too.
    fn launch_is_fresh(&self) -> bool {
        false
    }

    /// `reboot=each-run`: runs `reboot-command` on the target and waits
    /// until it answers with another boot id, within `reboot-timeout`.
    fn reboot(&self, _index: usize) -> Result<()> {
        let before = self.boot_id()?;
        let command = self.spec.opt("reboot-command").unwrap_or("sudo -n reboot");
        let limit = Duration::from_secs(
            self.spec
                .opt("reboot-timeout")
                .and_then(|t| t.parse().ok())
                .unwrap_or(300),
        );
        let began = std::time::Instant::now();
        // The connection may drop as the target goes down: not an error.
        // What counts is the boot id it comes back with.
        if let Err(e) = self.remote(command, None) {
            if e.is::<crate::core::signals::Interrupted>() {
                return Err(e);
            }
        }
        loop {
            crate::core::signals::check()?;
            if let Ok(now) = self.boot_id() {
                if now != before {
                    return Ok(());
                }
            }
            if began.elapsed() >= limit {
                bail!(
                    "ssh {}: the target did not come back with a new boot within {} s of '{command}' (reboot-timeout={}): check that the command reboots it (reboot-command=, e.g. 'sudo -n reboot' with passwordless sudo for reboot) and that it comes back on the network",
                    self.spec.text,
                    limit.as_secs(),
                    limit.as_secs()
                );
            }
            std::thread::sleep(REBOOT_POLL);
        }
    }

    fn launch(&self, _index: usize) -> Result<Launched> {
        // In the target's TMPDIR when it has one (a test's namespace shares
        // this machine's /tmp and gives each target its own).
        // Run to its end even after Ctrl-C: only its output names the
        // directory it made, which is then removed below.
        let dir = self.remote_limited(
            "mktemp -d \"${TMPDIR:-/tmp}/virtperf.XXXXXXXX\"",
            None,
            Limits::new(self.timeout()).finishing(),
        )?;
        if dir.is_empty()
            || !dir
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
        {
            bail!(
                "ssh {}: unexpected temporary directory name {dir:?}",
                self.spec.text
            );
        }
        let q = sh_quote(&dir);
        // Also after an interrupt (the upload stopped by Ctrl-C), within a bound.
        let limit = self.timeout().min(Duration::from_secs(30));
        let remove = |why: anyhow::Error| {
            // The directory exists but nothing owns it yet.
            let mut rm = self.ssh();
            rm.arg(format!("rm -rf {q}"));
            run_cleanup(rm, limit);
            why
        };
        if crate::core::signals::interrupted() {
            return Err(remove(crate::core::signals::Interrupted.into()));
        }
        let binary = std::fs::read("/proc/self/exe").context("reading this binary")?;
        self.remote_within(
            &format!("cat > {q}/virtperf && chmod 700 {q}/virtperf && mkdir {q}/work"),
            Some(&binary),
            self.upload_timeout(binary.len()),
        )
        .map_err(remove)?;
        // The agent runs in the background with the session's stdin, its pid
        // recorded, so a cleanup after an abort can stop it: a dropped ssh
        // connection does not.
        let child = self
            .ssh()
            .arg(agent_script(&q))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("running ssh")
            .map_err(remove)?;
        let mut cleanup = self.ssh();
        cleanup.arg(cleanup_script(&q));
        // Bounded as the removal above (when the user pressed Ctrl-C twice,
        // briefly).
        Ok(Launched {
            child,
            cleanup: Some(Box::new(move || {
                // Normally the remote shell removed it; this covers a kill.
                let limit = if crate::core::signals::hurried() {
                    limit.min(Duration::from_secs(5))
                } else {
                    limit
                };
                let _ = run_cleanup(cleanup, limit);
            })),
            console: None,
            workdir: format!("{dir}/work"),
            forwarded: None,
            on_host: OnHost::Elsewhere,
        })
    }

    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(60)
    }

    /// The remote host dials this host's address on the interface that
    /// faces it (found by routing, no packet sent); the server binds only
    /// that address.
    fn route_to_host(&self, _index: usize) -> Result<Route> {
        let (remote, local) = self.addresses()?;
        Ok(Route {
            bind: std::net::SocketAddr::new(local, 0),
            dial_ip: local,
            dial_port: None,
            path: format!("ssh ({remote} to {local})"),
        })
    }

    /// The server binds the remote's address this host reaches it at.
    fn route_to_env(&self, _index: usize, _forwarded: Option<(u16, u16)>) -> Result<Route> {
        let (remote, local) = self.addresses()?;
        Ok(Route {
            bind: std::net::SocketAddr::new(remote, 12866),
            dial_ip: remote,
            dial_port: None,
            path: format!("ssh ({local} to {remote})"),
        })
    }
}

impl SshEnvironment {
    /// The remote host's address and this host's address towards it.
    fn addresses(&self) -> Result<(std::net::IpAddr, std::net::IpAddr)> {
        use std::net::ToSocketAddrs;
        let (target, _) = self
            .spec
            .target
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("ssh needs USER@HOST"))?;
        let host = target.rsplit('@').next().unwrap_or(target);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let remote = (host, 22)
            .to_socket_addrs()
            .with_context(|| format!("resolving {host}"))?
            .next()
            .ok_or_else(|| anyhow::anyhow!("{host} has no address"))?;
        Ok((remote.ip(), super::net::local_address_towards(remote.ip())?))
    }
}

/// The remote command of a session: the agent in `dir` (quoted), its pid
/// in `dir/pid`; the directory goes when it ends.
fn agent_script(q: &str) -> String {
    format!(
        "exec 3<&0; {q}/virtperf agent <&3 3<&- & echo $! > {q}/pid; wait $!; rc=$?; rm -rf {q}; exit $rc"
    )
}

/// Stops an agent that is still running (the host gave up on it) and
/// removes its directory.
fn cleanup_script(q: &str) -> String {
    format!("if [ -f {q}/pid ]; then kill -9 \"$(cat {q}/pid)\" 2>/dev/null; fi; rm -rf {q}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abandoned_remote_agent_is_stopped_and_its_directory_removed() {
        // Issue 14, item 9, run with sh on this machine: the session script
        // records the agent's pid; the cleanup kills it and removes the dir.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("session");
        std::fs::create_dir(&d).unwrap();
        let q = sh_quote(&d.display().to_string());
        // A stand-in agent that ignores its input and SIGTERM.
        std::fs::write(
            d.join("virtperf"),
            "#!/bin/sh\ntrap '' TERM\nexec sleep 600\n",
        )
        .unwrap();
        std::process::Command::new("chmod")
            .args(["700", &d.join("virtperf").display().to_string()])
            .status()
            .unwrap();
        let mut session = Command::new("sh")
            .args(["-c", &agent_script(&q)])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while !d.join("pid").exists() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(100));
        let pid: i32 = std::fs::read_to_string(d.join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The connection drops: the session shell dies, the agent does not.
        session.kill().unwrap();
        session.wait().unwrap();
        // SAFETY: signal 0 only checks that the process exists.
        assert_eq!(unsafe { libc::kill(pid, 0) }, 0, "the stand-in agent runs");
        let ok = Command::new("sh")
            .args(["-c", &cleanup_script(&q)])
            .status()
            .unwrap();
        assert!(ok.success());
        assert!(!d.exists());
        let until = std::time::Instant::now() + Duration::from_secs(5);
        let gone = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
                .unwrap_or(true)
        };
        while !gone() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(), "the agent was stopped");
    }

    #[test]
    fn quoting_survives_hostile_text() {
        assert_eq!(sh_quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(sh_quote("x'; rm -rf /; '"), "'x'\\''; rm -rf /; '\\'''");
    }

    #[test]
    fn destination_follows_the_end_of_options() {
        let env =
            SshEnvironment::new(Spec::parse("ssh:bench@example-host:2222,identity=/k").unwrap());
        let args: Vec<String> = env
            .ssh()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let dd = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(args[dd + 1], "bench@example-host");
        assert!(args.contains(&"BatchMode=yes".to_string()));
        assert!(args.contains(&"StrictHostKeyChecking=yes".to_string()));
        assert!(args.contains(&"2222".to_string()));
    }
}
