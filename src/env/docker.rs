//! The `docker` and `podman` drivers: an image holding only the static
//! virtperf binary, imported from a tarball made here (no registry needed)
//! and cached by the binary's checksum — or any `image=IMG` with the binary
//! mounted in. Containers are labelled and always removed; an OOM kill is
//! reported as one.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::{EnvKind, Environment, Launched, Spec};

pub struct DockerEnvironment {
    spec: Spec,
    /// `docker` or `podman`.
    cli: &'static str,
    image: String,
    /// A volume created for storage=volume, removed at the end.
    volume: Option<String>,
    run_id: String,
}

impl DockerEnvironment {
    pub fn new(spec: Spec) -> Result<DockerEnvironment> {
        let cli = if spec.kind == EnvKind::Podman {
            "podman"
        } else {
            "docker"
        };
        Ok(DockerEnvironment {
            cli,
            image: String::new(),
            volume: None,
            run_id: format!("{}-{}", std::process::id(), rand_suffix()),
            spec,
        })
    }

    fn container_name(&self, index: usize) -> String {
        format!("virtperf-{}-{index}", self.run_id)
    }
}

fn rand_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{nanos:08x}")
}

/// The engine's version, or why it cannot be reached.
pub fn engine_version(cli: &str) -> Result<String> {
    let out = Command::new(cli)
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow!("{cli} not found ({e}): install it to use --env {cli}"))?;
    if !out.status.success() {
        bail!(
            "the {cli} engine is not reachable: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A POSIX tar archive holding one executable file, `name`.
pub fn single_file_tar(name: &str, data: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name.as_bytes());
    let octal = |field: &mut [u8], value: u64| {
        let text = format!("{:0width$o}\0", value, width = field.len() - 1);
        field.copy_from_slice(text.as_bytes());
    };
    octal(&mut header[100..108], 0o755);
    octal(&mut header[108..116], 0);
    octal(&mut header[116..124], 0);
    octal(&mut header[124..136], data.len() as u64);
    octal(&mut header[136..148], 0);
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|&b| b as u32).sum();
    let text = format!("{sum:06o}\0 ");
    header[148..156].copy_from_slice(text.as_bytes());
    let mut out = header.to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.extend_from_slice(&[0u8; 1024]);
    out
}

impl Environment for DockerEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn prepare(&mut self) -> Result<()> {
        engine_version(self.cli)?;
        if let Some(img) = self.spec.opt("image") {
            self.image = img.to_string();
        } else {
            let sha = crate::fingerprint::binary_sha256()
                .ok_or_else(|| anyhow!("cannot read this binary to put it in an image"))?;
            self.image = format!("virtperf-agent:{}", &sha[..16]);
            let exists = Command::new(self.cli)
                .args(["image", "inspect", &self.image])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !exists {
                let exe = std::fs::read("/proc/self/exe").context("reading this binary")?;
                let tar = single_file_tar("virtperf", &exe);
                let mut child = Command::new(self.cli)
                    .args([
                        "import",
                        "--change",
                        "ENTRYPOINT [\"/virtperf\"]",
                        "-",
                        &self.image,
                    ])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .with_context(|| format!("running {} import", self.cli))?;
                child
                    .stdin
                    .take()
                    .expect("piped")
                    .write_all(&tar)
                    .context("sending the image tarball")?;
                let out = child.wait_with_output()?;
                if !out.status.success() {
                    bail!(
                        "{} import failed: {}",
                        self.cli,
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
            }
        }
        if self.spec.opt("storage") == Some("volume") {
            let name = format!("virtperf-{}", self.run_id);
            let ok = Command::new(self.cli)
                .args(["volume", "create", &name])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                bail!("{} volume create {name} failed", self.cli);
            }
            self.volume = Some(name);
        }
        Ok(())
    }

    fn launch(&self, index: usize) -> Result<Launched> {
        let name = self.container_name(index);
        let mut cmd = Command::new(self.cli);
        cmd.args(["run", "-i", "--name", &name, "--label", "virtperf=1"]);
        cmd.args(["--workdir", "/work"]);
        if let Some(cpus) = self.spec.opt("cpus") {
            cmd.args(["--cpus", cpus]);
        }
        if let Some(mem) = self.spec.opt("memory") {
            cmd.args(["--memory", mem]);
        }
        if let Some(set) = self.spec.opt("cpuset") {
            cmd.args(["--cpuset-cpus", set]);
        }
        if let Some(net) = self.spec.opt("network") {
            cmd.args(["--network", net]);
        }
        match (self.spec.opt("storage"), &self.volume) {
            (Some("tmpfs"), _) => {
                cmd.args(["--tmpfs", "/work:exec"]);
            }
            (Some("volume"), Some(vol)) => {
                cmd.args(["-v", &format!("{vol}:/work")]);
            }
            _ => {}
        }
        if self.spec.opt("image").is_some() {
            let exe = std::env::current_exe()?;
            cmd.args(["-v", &format!("{}:/virtperf:ro", exe.display())]);
            cmd.args(["--entrypoint", "/virtperf"]);
        }
        cmd.arg(&self.image).arg("agent");
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("running {} run", self.cli))?;
        let cli = self.cli;
        let last = index + 1 == self.spec.count;
        let volume = self.volume.clone().filter(|_| last);
        Ok(Launched {
            child,
            cleanup: Some(Box::new(move || {
                let _ = Command::new(cli)
                    .args(["rm", "-f", &name])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                if let Some(v) = volume {
                    let _ = Command::new(cli)
                        .args(["volume", "rm", "-f", &v])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                }
            })),
            console: None,
            workdir: "/work".into(),
            forwarded: None,
        })
    }

    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn explain_exit(&self, index: usize) -> Option<String> {
        let out = Command::new(self.cli)
            .args([
                "inspect",
                "-f",
                "{{.State.OOMKilled}} {{.State.ExitCode}}",
                &self.container_name(index),
            ])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if text.starts_with("true") {
            Some(format!(
                "the container was killed for running out of memory (OOM; memory={}): give it more memory",
                self.spec.opt("memory").unwrap_or("unlimited")
            ))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tarball_has_a_valid_header_and_padding() {
        let tar = single_file_tar("virtperf", b"hello");
        assert_eq!(tar.len() % 512, 0);
        assert_eq!(&tar[..8], b"virtperf");
        assert_eq!(&tar[257..262], b"ustar");
        assert_eq!(&tar[512..517], b"hello");
        // Checksum: the sum of the header with the checksum field as spaces.
        let mut h = tar[..512].to_vec();
        let stored = u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        h[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, h.iter().map(|&b| b as u32).sum::<u32>());
    }
}
