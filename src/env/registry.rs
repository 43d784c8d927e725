//! The driver registry: every environment driver, one line each, and what
//! comes from it — the driver a spec names, the driver built for a spec and
//! `--env` help. Spec parsing (`spec`) and `virtperf envs` (`probe`) read
//! the same list.

use anyhow::Result;

use super::{
    docker, group, gvisor, host, libvirt, lxc, nspawn, qemu, ssh, DriverDef, Environment, Spec,
};

/// Every environment driver, one line each.
pub static DRIVERS: &[&DriverDef] = &[
    &host::DEF,
    &docker::DOCKER,
    &docker::PODMAN,
    &gvisor::DEF,
    &lxc::DEF,
    &nspawn::DEF,
    &qemu::DEF,
    &libvirt::DEF,
    &ssh::DEF,
    &group::DEF,
];

/// The driver of that name.
pub fn find_driver(name: &str) -> Option<&'static DriverDef> {
    DRIVERS.iter().copied().find(|d| d.name == name)
}

/// `--env` help, generated from the drivers.
pub fn help() -> String {
    let mut out =
        String::from("Environments (--env SPEC; every spec also takes count=N, name=LABEL and reboot=each-run|each-round):\n");
    for d in DRIVERS {
        out.push_str(&format!("  {}\n      {}\n", d.usage(), d.summary));
        for o in d.options {
            // A choice's values are listed from its check, so the help
            // cannot name other values than the parser takes.
            let values = match o.check {
                super::def::Check::Choice(words) if !o.help.contains(&words.join("|")) => {
                    format!(" ({})", words.join("|"))
                }
                _ => String::new(),
            };
            out.push_str(&format!("      {:<16} {}{values}\n", o.key, o.help));
        }
    }
    out
}

/// Builds the driver for a spec.
pub fn driver(spec: &Spec) -> Result<Box<dyn Environment>> {
    (spec.driver.build)(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the registry promises of every driver: a unique name that a
    /// spec can name, options that spec parsing and `--env` help can use,
    /// and nothing an engine's command line could take for an option.
    #[test]
    fn every_driver_is_consistent() {
        let mut seen = Vec::new();
        let help = help();
        for d in DRIVERS {
            assert!(!seen.contains(&d.name), "{} listed twice", d.name);
            seen.push(d.name);
            assert!(
                !d.name.is_empty() && d.name.chars().all(|c| c.is_ascii_lowercase()),
                "{}: a driver's name is one lowercase word",
                d.name
            );
            assert_eq!(find_driver(d.name), Some(*d));
            assert!(!d.summary.is_empty(), "{} has no summary", d.name);
            assert!(d.usage().starts_with(d.name), "{}: {}", d.name, d.usage());
            assert!(help.contains(&d.usage()), "{} missing from help", d.name);
            assert!(help.contains(d.summary), "{}'s summary missing", d.name);
            // Issue 52, item 11: every value a choice takes is in the help.
            for o in d.options {
                if let super::super::def::Check::Choice(words) = o.check {
                    assert!(
                        help.contains(&words.join("|")),
                        "{} {}: values missing from help",
                        d.name,
                        o.key
                    );
                }
            }

            // The kind parses as a spec: alone when it takes no target,
            // and otherwise the refusal says how to give one.
            match d.target {
                None => {
                    let spec = Spec::parse(d.name).unwrap();
                    assert_eq!(spec.driver, *d);
                    assert_eq!(spec.label, d.name);
                    assert_eq!(spec.count, 1);
                }
                Some(target) => {
                    let err = Spec::parse(d.name).unwrap_err().to_string();
                    let form = format!("{}:{target}", d.name);
                    assert!(err.contains(&form), "{}: {err}", d.name);
                    // `virtperf envs` probes the default drivers by name.
                    assert!(!d.probe_by_default, "{} needs a target", d.name);
                }
            }

            let mut keys = Vec::new();
            for o in d.options {
                assert!(!keys.contains(&o.key), "{}: {} twice", d.name, o.key);
                keys.push(o.key);
                assert!(
                    !["count", "name"].contains(&o.key),
                    "{}: {} is every spec's own option",
                    d.name,
                    o.key
                );
                assert!(
                    !o.key.is_empty()
                        && o.key
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                    "{}: option '{}' is not kebab-case",
                    d.name,
                    o.key
                );
                assert_eq!(d.option(o.key).map(|x| x.key), Some(o.key));
                assert!(!o.help.is_empty(), "{}: {} has no help", d.name, o.key);
                assert!(
                    help.contains(&format!("{:<16} {}", o.key, o.help)),
                    "{}: {} missing from help",
                    d.name,
                    o.key
                );
                for value in ["-1", "--privileged", "-"] {
                    assert!(
                        o.check.refuse(o.key, value).is_some(),
                        "{}: {}={value} would reach an engine's command line as an option",
                        d.name,
                        o.key
                    );
                }
            }
        }
        // An unknown kind is refused with every driver offered.
        let err = Spec::parse("no-such-driver").unwrap_err().to_string();
        for d in DRIVERS {
            assert!(err.contains(&d.usage()), "{} not offered: {err}", d.name);
        }
    }
}
