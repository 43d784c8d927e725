//! `virtperf envs`: which environments this machine can run, and where it
//! cannot, why. `compare` uses the same checks to pick its defaults.

use std::fmt::Write as _;

use super::{Spec, DRIVERS};

/// One environment's verdict.
pub struct Probe {
    pub spec: Spec,
    pub available: bool,
    pub detail: String,
}

pub fn probe(s: &Spec) -> Probe {
    let (available, detail) = (s.driver.probe)(s);
    Probe {
        spec: s.clone(),
        available,
        detail,
    }
}

/// Every driver that is tried by default, plus the given targets.
pub fn probe_all(extra: &[Spec]) -> Vec<Probe> {
    let mut specs: Vec<Spec> = DRIVERS
        .iter()
        .filter(|d| d.probe_by_default)
        .map(|d| Spec::parse(d.name).expect("a bare driver name parses"))
        .collect();
    specs.extend(extra.iter().cloned());
    specs.iter().map(probe).collect()
}

/// The environments `compare` uses by default: every available one.
pub fn available() -> Vec<Spec> {
    probe_all(&[])
        .into_iter()
        .filter(|p| p.available)
        .map(|p| p.spec)
        .collect()
}

pub fn report(extra: &[Spec]) -> String {
    let mut out = String::new();
    for p in probe_all(extra) {
        let _ = writeln!(
            out,
            "{:<28} {:<14} {}",
            p.spec.label,
            if p.available {
                "available"
            } else {
                "unavailable"
            },
            p.detail
        );
    }
    out
}
