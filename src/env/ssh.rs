//! The `ssh:USER@HOST[:PORT]` driver: copies this binary into a fresh
//! temporary directory on the target, runs the agent there over the same
//! connection and removes the directory afterwards. It uses the system ssh
//! client in batch mode; host-key checking stays on unless
//! `host-key-check=off`; every remote path is single-quoted.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::def::{Check, DriverDef, EnvOption};
use super::{Environment, Launched, OnHost, Spec};

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

    fn remote(&self, script: &str, input: Option<&[u8]>) -> Result<String> {
        let mut child = self
            .ssh()
            .arg(script)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running ssh (install openssh-client)")?;
        if let Some(data) = input {
            child.stdin.take().expect("piped").write_all(data)?;
        }
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "ssh {}: {}",
                self.spec.text,
                String::from_utf8_lossy(&out.stderr).trim()
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
}

impl Environment for SshEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn launch(&self, _index: usize) -> Result<Launched> {
        let dir = self.remote("mktemp -d /tmp/virtperf.XXXXXXXX", None)?;
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
        let binary = std::fs::read("/proc/self/exe").context("reading this binary")?;
        self.remote(
            &format!("cat > {q}/virtperf && chmod 700 {q}/virtperf && mkdir {q}/work"),
            Some(&binary),
        )?;
        let child = self
            .ssh()
            .arg(format!("{q}/virtperf agent; rc=$?; rm -rf {q}; exit $rc"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("running ssh")?;
        let ssh = self.ssh();
        let program = ssh.get_program().to_owned();
        let args: Vec<_> = ssh.get_args().map(|a| a.to_owned()).collect();
        let cleanup_dir = dir.clone();
        Ok(Launched {
            child,
            cleanup: Some(Box::new(move || {
                // Normally the remote shell removed it; this covers a kill.
                let _ = Command::new(program)
                    .args(args)
                    .arg(format!("rm -rf {}", sh_quote(&cleanup_dir)))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
