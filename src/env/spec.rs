//! Environment specs as typed on the command line:
//! `host`, `docker[:cpus=2,memory=2g,...]`, `podman[:...]`,
//! `qemu[:smp=2,memory=2g,accel=auto|kvm|tcg,...]`, `ssh:USER@HOST[:PORT][,opt=v]`,
//! each with optional `count=N` and `name=LABEL`.

use std::collections::BTreeMap;

use crate::core::options::CliError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvKind {
    Host,
    Docker,
    Podman,
    Qemu,
    Ssh,
}

impl EnvKind {
    pub fn name(self) -> &'static str {
        match self {
            EnvKind::Host => "host",
            EnvKind::Docker => "docker",
            EnvKind::Podman => "podman",
            EnvKind::Qemu => "qemu",
            EnvKind::Ssh => "ssh",
        }
    }

    /// Options each kind accepts (besides count and name).
    fn options(self) -> &'static [&'static str] {
        match self {
            EnvKind::Host => &[],
            EnvKind::Docker | EnvKind::Podman => {
                &["cpus", "memory", "cpuset", "image", "storage", "network"]
            }
            EnvKind::Qemu => &[
                "smp", "memory", "accel", "cpu", "kernel", "modules", "cache", "disk", "net",
                "port",
            ],
            EnvKind::Ssh => &["host-key-check", "identity", "known-hosts"],
        }
    }
}

/// A parsed `--env` value.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub kind: EnvKind,
    pub label: String,
    pub count: usize,
    /// `USER@HOST` and port for ssh.
    pub target: Option<(String, Option<u16>)>,
    pub opts: BTreeMap<String, String>,
    /// The text as given.
    pub text: String,
}

impl Spec {
    pub fn opt(&self, key: &str) -> Option<&str> {
        self.opts.get(key).map(String::as_str)
    }

    pub fn parse(text: &str) -> Result<Spec, CliError> {
        let bad = |msg: String| CliError::Usage(format!("--env {text}: {msg}"));
        let (kind_word, rest) = match text.split_once(':') {
            Some((k, r)) => (k, r),
            None => (text, ""),
        };
        let kind = match kind_word {
            "host" => EnvKind::Host,
            "docker" => EnvKind::Docker,
            "podman" => EnvKind::Podman,
            "qemu" => EnvKind::Qemu,
            "ssh" => EnvKind::Ssh,
            other => {
                return Err(bad(format!(
                    "unknown environment '{other}': use host, docker, podman, qemu or ssh:USER@HOST[:PORT]"
                )))
            }
        };
        let mut pairs = rest;
        let mut target = None;
        if kind == EnvKind::Ssh {
            let (dest, tail) = match rest.split_once(',') {
                Some((d, t)) => (d, t),
                None => (rest, ""),
            };
            let (userhost, port) = match dest.rsplit_once(':') {
                Some((uh, p)) => (
                    uh,
                    Some(
                        p.parse::<u16>()
                            .map_err(|_| bad(format!("'{p}' is not a port number (1-65535)")))?,
                    ),
                ),
                None => (dest, None),
            };
            let valid = |s: &str| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            };
            match userhost.split_once('@') {
                Some((u, h)) if valid(u) && valid(h) => {}
                _ => {
                    return Err(bad(
                        "expected ssh:USER@HOST[:PORT] (letters, digits, '.', '_' and '-' only)"
                            .into(),
                    ))
                }
            }
            target = Some((userhost.to_string(), port));
            pairs = tail;
        }
        let mut opts = BTreeMap::new();
        let mut count = 1;
        let mut label = None;
        for pair in pairs.split(',').filter(|p| !p.is_empty()) {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(bad(format!("'{pair}' is not KEY=VALUE")));
            };
            match k {
                "count" => {
                    count = v
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| (1..=64).contains(&n))
                        .ok_or_else(|| bad(format!("count={v}: expected 1 to 64")))?;
                }
                "name" => {
                    if v.is_empty() {
                        return Err(bad("name= needs a label".into()));
                    }
                    label = Some(v.to_string());
                }
                k if kind.options().contains(&k) => {
                    opts.insert(k.to_string(), v.to_string());
                }
                other => {
                    let allowed: Vec<&str> = kind
                        .options()
                        .iter()
                        .copied()
                        .chain(["count", "name"])
                        .collect();
                    return Err(bad(format!(
                        "unknown option '{other}' for {}: use {}",
                        kind.name(),
                        allowed.join(", ")
                    )));
                }
            }
        }
        validate(kind, &opts).map_err(bad)?;
        Ok(Spec {
            kind,
            label: label.unwrap_or_else(|| text.to_string()),
            count,
            target,
            opts,
            text: text.to_string(),
        })
    }
}

fn validate(kind: EnvKind, opts: &BTreeMap<String, String>) -> Result<(), String> {
    let choice = |key: &str, allowed: &[&str]| -> Result<(), String> {
        match opts.get(key) {
            Some(v) if !allowed.contains(&v.as_str()) => {
                Err(format!("{key}={v}: use {}", allowed.join(" or ")))
            }
            _ => Ok(()),
        }
    };
    let positive = |key: &str| -> Result<(), String> {
        match opts.get(key) {
            Some(v) if !v.parse::<f64>().is_ok_and(|x| x > 0.0) => {
                Err(format!("{key}={v}: expected a positive number"))
            }
            _ => Ok(()),
        }
    };
    let size = |key: &str| -> Result<(), String> {
        match opts.get(key) {
            Some(v) if crate::core::units::Bytes::parse(v).is_err() => {
                Err(format!("{key}={v}: expected a size such as 512m or 2g"))
            }
            _ => Ok(()),
        }
    };
    match kind {
        EnvKind::Docker | EnvKind::Podman => {
            positive("cpus")?;
            size("memory")?;
            choice("storage", &["overlay", "volume", "tmpfs"])?;
            choice("network", &["bridge", "host"])?;
        }
        EnvKind::Qemu => {
            positive("smp")?;
            size("memory")?;
            size("disk")?;
            choice("accel", &["auto", "kvm", "tcg"])?;
            choice("cache", &["none", "writeback"])?;
            choice("net", &["user", "none"])?;
            if let Some(v) = opts.get("port") {
                if !v.parse::<u16>().is_ok_and(|p| p > 0) {
                    return Err(format!("port={v}: expected a TCP port, 1 to 65535"));
                }
            }
        }
        EnvKind::Ssh => choice("host-key-check", &["on", "off"])?,
        EnvKind::Host => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        let d = Spec::parse("docker:cpus=0.5,memory=2g,count=2,name=small").unwrap();
        assert_eq!(d.kind, EnvKind::Docker);
        assert_eq!(d.count, 2);
        assert_eq!(d.label, "small");
        assert_eq!(d.opt("cpus"), Some("0.5"));
        let q = Spec::parse("qemu:smp=2,memory=2g,accel=tcg").unwrap();
        assert_eq!(q.label, "qemu:smp=2,memory=2g,accel=tcg");
        let s = Spec::parse("ssh:bench@10.0.0.2:2222,host-key-check=off").unwrap();
        assert_eq!(s.target, Some(("bench@10.0.0.2".into(), Some(2222))));
        assert_eq!(Spec::parse("host").unwrap().kind, EnvKind::Host);
    }

    #[test]
    fn refuses_bad_specs_with_the_fix() {
        for (bad, needle) in [
            ("vmware", "unknown environment"),
            ("docker:cpu=2", "use cpus"),
            ("docker:cpus=-1", "positive"),
            ("qemu:accel=hvf", "auto or kvm or tcg"),
            ("docker:count=0", "1 to 64"),
            ("ssh:host-only", "USER@HOST"),
            ("ssh:a@b;rm -rf /", "USER@HOST"),
            ("ssh:a@b:99999", "port"),
            ("docker:storage=nfs", "overlay"),
            ("qemu:net=tap", "user or none"),
            ("qemu:port=0", "1 to 65535"),
        ] {
            let err = Spec::parse(bad).unwrap_err().to_string();
            assert!(err.contains(needle), "{bad}: {err}");
            assert!(err.contains("--env"), "{bad}: {err}");
        }
    }
}
