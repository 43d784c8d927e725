//! Environment specs as typed on the command line:
//! `host`, `docker[:cpus=2,memory=2g,...]`, `podman[:...]`,
//! `qemu[:smp=2,memory=2g,accel=auto|kvm|tcg,...]`, `ssh:USER@HOST[:PORT][,opt=v]`,
//! each with optional `count=N` and `name=LABEL`.

use std::collections::BTreeMap;

use super::def::DriverDef;
use crate::core::options::CliError;

/// A parsed `--env` value.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub driver: &'static DriverDef,
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
        let driver = super::find_driver(kind_word).ok_or_else(|| {
            bad(format!(
                "unknown environment '{kind_word}': use {} (see 'virtperf envs --help')",
                super::DRIVERS
                    .iter()
                    .map(|d| d.usage())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let mut pairs = rest;
        let mut target = None;
        if driver.target.is_some() {
            let (dest, tail) = match rest.split_once(',') {
                Some((d, t)) => (d, t),
                None => (rest, ""),
            };
            let (userhost, port) = match dest.rsplit_once(':') {
                Some((uh, p)) => (
                    uh,
                    Some(
                        p.parse::<u16>()
                            .ok()
                            .filter(|&p| p > 0)
                            .ok_or_else(|| bad(format!("'{p}' is not a port number (1-65535)")))?,
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
        let mut seen = std::collections::BTreeSet::new();
        for pair in pairs.split(',').filter(|p| !p.is_empty()) {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(bad(format!("'{pair}' is not KEY=VALUE")));
            };
            if !seen.insert(k) {
                return Err(bad(format!("{k}= is given twice: give each option once")));
            }
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
                k => match driver.option(k) {
                    Some(option) => {
                        if let Some(why) = option.check.refuse(k, v) {
                            return Err(bad(why));
                        }
                        opts.insert(k.to_string(), v.to_string());
                    }
                    None => {
                        let allowed: Vec<&str> = driver
                            .options
                            .iter()
                            .map(|o| o.key)
                            .chain(["count", "name"])
                            .collect();
                        return Err(bad(format!(
                            "unknown option '{k}' for {}: use {}",
                            driver.name,
                            allowed.join(", ")
                        )));
                    }
                },
            }
        }
        Ok(Spec {
            driver,
            label: label.unwrap_or_else(|| text.to_string()),
            count,
            target,
            opts,
            text: text.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        let d = Spec::parse("docker:cpus=0.5,memory=2g,count=2,name=small").unwrap();
        assert_eq!(d.driver.name, "docker");
        assert_eq!(d.count, 2);
        assert_eq!(d.label, "small");
        assert_eq!(d.opt("cpus"), Some("0.5"));
        let q = Spec::parse("qemu:smp=2,memory=2g,accel=tcg").unwrap();
        assert_eq!(q.label, "qemu:smp=2,memory=2g,accel=tcg");
        let s = Spec::parse("ssh:bench@10.0.0.2:2222,host-key-check=off").unwrap();
        assert_eq!(s.target, Some(("bench@10.0.0.2".into(), Some(2222))));
        assert_eq!(Spec::parse("host").unwrap().driver.name, "host");
        for good in [
            "docker:image=debian:12",
            "docker:image=registry.local:5000/team/img@sha256:ab12",
            "docker:cpuset=0-1,memory=6m",
            "qemu:smp=4,memory=128m",
        ] {
            assert!(Spec::parse(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn refuses_bad_specs_with_the_fix() {
        for (bad, needle) in [
            ("vmware", "unknown environment"),
            ("docker:cpu=2", "use cpus"),
            ("docker:cpus=-1", "above 0"),
            ("qemu:accel=hvf", "auto or kvm or tcg"),
            ("docker:count=0", "1 to 64"),
            ("ssh:host-only", "USER@HOST"),
            ("ssh:a@b;rm -rf /", "USER@HOST"),
            ("ssh:a@b:99999", "port"),
            ("docker:storage=nfs", "overlay"),
            ("qemu:net=tap", "user or none"),
            ("qemu:port=0", "1 to 65535"),
            // Issue 14, item 5: an image can never become an engine option.
            ("docker:image=--privileged", "image name"),
            ("docker:image=--entrypoint=/bin/sh", "image name"),
            ("podman:image=-v", "image name"),
            ("docker:image=a b", "image name"),
            // Item 14: loose numbers and sizes, duplicates.
            ("docker:cpus=inf", "above 0"),
            ("docker:cpus=1e400", "above 0"),
            ("docker:cpus=NaN", "above 0"),
            ("docker:memory=0", "too small"),
            ("docker:cpuset=--all", "CPU numbers"),
            ("qemu:smp=1.5", "whole number"),
            ("qemu:smp=0", "whole number"),
            ("qemu:memory=1", "too small"),
            ("qemu:cpu=-help", "'-'"),
            ("ssh:a@b:0", "port"),
            ("ssh:a@b,identity=-oProxyCommand=x", "'-'"),
            ("docker:cpus=1,cpus=2", "twice"),
            ("docker:count=1,count=2", "twice"),
        ] {
            let err = Spec::parse(bad).unwrap_err().to_string();
            assert!(err.contains(needle), "{bad}: {err}");
            assert!(err.contains("--env"), "{bad}: {err}");
        }
    }
}
