//! The driver registry: every environment driver, one line each, and what
//! comes from it — the driver a spec names, the driver built for a spec and
//! `--env` help. Spec parsing (`spec`) and `virtperf envs` (`probe`) read
//! the same list.

use anyhow::Result;

use super::{docker, group, host, qemu, ssh, DriverDef, Environment, Spec};

/// Every environment driver, one line each.
pub static DRIVERS: &[&DriverDef] = &[
    &host::DEF,
    &docker::DOCKER,
    &docker::PODMAN,
    &qemu::DEF,
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
        String::from("Environments (--env SPEC; every spec also takes count=N and name=LABEL):\n");
    for d in DRIVERS {
        out.push_str(&format!("  {}\n      {}\n", d.usage(), d.summary));
        for o in d.options {
            out.push_str(&format!("      {:<16} {}\n", o.key, o.help));
        }
    }
    out
}

/// Builds the driver for a spec.
pub fn driver(spec: &Spec) -> Result<Box<dyn Environment>> {
    (spec.driver.build)(spec)
}
