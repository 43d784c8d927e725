//! Environment specs as typed on the command line:
//! `host`, `docker[:cpus=2,memory=2g,...]`, `podman[:...]`,
//! `qemu[:smp=2,memory=2g,accel=auto|kvm|tcg,...]`, `ssh:USER@HOST[:PORT][,opt=v]`,
//! `lxc[:cpus=1,memory=512m,network=host|veth,mode=...]`, `nspawn[:network=host|veth]`,
//! each with optional `count=N`, `name=LABEL` and `reboot=each-run|each-round`; and `group:SPEC+SPEC...`,
//! different environments started together. The `Spec` type lives beside
//! `DriverDef` in `def` (each names the other); its parsing is here.

use std::collections::BTreeMap;

use super::def::{Reboot, Spec};
use crate::core::options::CliError;

impl Spec {
    pub fn parse(text: &str) -> Result<Spec, CliError> {
        let bad = |msg: String| CliError::Usage(format!("--env {text}: {msg}"));
        if text == super::group::DEF.name {
            return Err(bad(
                "a group needs its members: group:SPEC+SPEC[+...], e.g. group:ssh:a@vm1+ssh:b@vm2"
                    .into(),
            ));
        }
        if let Some(rest) = text.strip_prefix("group:") {
            return Spec::parse_group(text, rest);
        }
        let (kind_word, rest) = match text.split_once(':') {
            Some((k, r)) => (k, r),
            None => (text, ""),
        };
        let driver = super::find_driver(kind_word).ok_or_else(|| bad(unknown_kind(kind_word)))?;
        let mut pairs = rest;
        let mut target = None;
        if driver.target.is_some() {
            let (dest, tail) = parse_target(rest, &bad)?;
            target = Some(dest);
            pairs = tail;
        }
        let mut opts = BTreeMap::new();
        let mut count = 1;
        let mut reboot = Reboot::No;
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
                "reboot" => {
                    reboot = reboot_of(v).ok_or_else(|| {
                        bad(format!("reboot={v}: use each-run, each-round or no"))
                    })?;
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
                            .chain(["count", "name", "reboot"])
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
            reboot,
            target,
            opts,
            text: text.to_string(),
            members: Vec::new(),
        })
    }

    /// `group:SPEC+SPEC[+...]`: every member an ordinary spec, started once,
    /// with a label of its own.
    fn parse_group(text: &str, rest: &str) -> Result<Spec, CliError> {
        let bad = |msg: String| CliError::Usage(format!("--env {text}: {msg}"));
        let parts: Vec<&str> = rest.split('+').collect();
        if parts.len() < 2 {
            return Err(bad(
                "a group needs at least two members joined by '+', e.g. group:host+host:name=b"
                    .into(),
            ));
        }
        if parts.len() > super::group::MAX_MEMBERS {
            return Err(bad(format!(
                "{} members: a group has at most {}",
                parts.len(),
                super::group::MAX_MEMBERS
            )));
        }
        let mut members: Vec<Spec> = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let which = format!("member {} '{part}'", i + 1);
            if part.is_empty() {
                return Err(bad(format!(
                    "member {} is empty: join member specs with single '+' signs",
                    i + 1
                )));
            }
            if *part == "group" || part.starts_with("group:") {
                return Err(bad(format!(
                    "{which}: a group cannot hold a group; list its members instead"
                )));
            }
            let m = Spec::parse(part).map_err(|e| {
                let msg = e.to_string();
                let inner = msg
                    .strip_prefix(&format!("--env {part}: "))
                    .unwrap_or(&msg)
                    .to_string();
                bad(format!("{which}: {inner}"))
            })?;
            if m.count > 1 {
                return Err(bad(format!(
                    "{which}: count= inside a group is not supported; list the member again with another name= instead"
                )));
            }
            if m.reboot != Reboot::No {
                return Err(bad(format!(
                    "{which}: reboot= inside a group is not supported; measure the member on its own with reboot=each-run"
                )));
            }
            if let Some(other) = members.iter().position(|x| x.label == m.label) {
                return Err(bad(format!(
                    "members {} and {} are both labelled '{}': give one a name= of its own (e.g. {}:name=b)",
                    other + 1,
                    i + 1,
                    m.label,
                    part.split(':').next().unwrap_or(part)
                )));
            }
            members.push(m);
        }
        Ok(Spec {
            driver: &super::group::DEF,
            label: text.to_string(),
            count: members.len(),
            reboot: Reboot::No,
            target: None,
            opts: BTreeMap::new(),
            text: text.to_string(),
            members,
        })
    }
}

/// An environment kind no driver has: the near miss it was probably
/// meant as, and every driver's syntax.
fn unknown_kind(kind_word: &str) -> String {
    let hint = crate::core::options::nearest(kind_word, super::DRIVERS.iter().map(|d| d.name))
        .map(|d| format!(" (did you mean '{d}'?)"))
        .unwrap_or_default();
    format!(
        "unknown environment '{kind_word}'{hint}: use {} (see 'virtperf envs --help')",
        super::DRIVERS
            .iter()
            .map(|d| d.usage())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `reboot=`'s value as a `Reboot`.
fn reboot_of(word: &str) -> Option<Reboot> {
    match word {
        "each-run" => Some(Reboot::EachRun),
        "each-round" => Some(Reboot::EachRound),
        "no" => Some(Reboot::No),
        _ => None,
    }
}

/// The target at the head of `rest` (ssh's `USER@HOST[:PORT]`), and the
/// options after it; `bad` words an error about the whole spec.
fn parse_target<'a>(
    rest: &'a str,
    bad: &dyn Fn(String) -> CliError,
) -> Result<((String, Option<u16>), &'a str), CliError> {
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
                "expected ssh:USER@HOST[:PORT] (letters, digits, '.', '_' and '-' only)".into(),
            ))
        }
    }
    Ok(((userhost.to_string(), port), tail))
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
    fn a_group_holds_different_members_each_once() {
        let g = Spec::parse("group:ssh:a@10.0.0.2:2222+host:name=b+docker:cpus=1").unwrap();
        assert_eq!(g.driver.name, "group");
        assert_eq!(g.count, 3);
        assert_eq!(
            g.label,
            "group:ssh:a@10.0.0.2:2222+host:name=b+docker:cpus=1"
        );
        let kinds: Vec<&str> = g.members.iter().map(|m| m.driver.name).collect();
        assert_eq!(kinds, ["ssh", "host", "docker"]);
        assert_eq!(g.members[0].target, Some(("a@10.0.0.2".into(), Some(2222))));
        assert_eq!(g.members[1].label, "b");
        assert!(Spec::parse("host").unwrap().members.is_empty());
        let many = format!(
            "group:{}",
            (0..17)
                .map(|i| format!("host:name=h{i}"))
                .collect::<Vec<_>>()
                .join("+")
        );
        assert!(Spec::parse(&many)
            .unwrap_err()
            .to_string()
            .contains("at most 16"));
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
            // Groups: a bad member is named, with the member's own fix.
            ("group", "needs its members"),
            ("group:host", "at least two members"),
            (
                "group:host+vmware",
                "member 2 'vmware': unknown environment",
            ),
            (
                "group:host+docker:cpu=2",
                "member 2 'docker:cpu=2': unknown option",
            ),
            ("group:host++host:name=b", "member 2 is empty"),
            ("group:host+host", "both labelled 'host'"),
            ("group:host+group:host+host", "cannot hold a group"),
            ("group:host+docker:count=2", "count= inside a group"),
            ("group:ssh:a@b;x+host", "member 1"),
        ] {
            let err = Spec::parse(bad).unwrap_err().to_string();
            assert!(err.contains(needle), "{bad}: {err}");
            assert!(err.contains("--env"), "{bad}: {err}");
        }
    }
}
