//! `virtperf envs`: which environments this machine can run, and where it
//! cannot, why. `compare` uses the same checks to pick its defaults.

use std::fmt::Write as _;

use super::qemu::{self, QemuEnvironment};
use super::{docker, EnvKind, Environment, Spec};

/// One environment's verdict.
pub struct Probe {
    pub spec: Spec,
    pub available: bool,
    pub detail: String,
}

fn spec(text: &str) -> Spec {
    Spec::parse(text).expect("built-in spec parses")
}

pub fn probe(s: &Spec) -> Probe {
    let (available, detail) = match s.kind {
        EnvKind::Host => (
            true,
            format!(
                "{} CPUs, hypervisor {}",
                crate::sys::fingerprint::online_cpus(),
                crate::sys::fingerprint::hypervisor_signature().unwrap_or_else(|| "none".into())
            ),
        ),
        EnvKind::Docker | EnvKind::Podman => match docker::engine_version(s.kind.name()) {
            Ok(v) => (true, format!("engine {v}")),
            Err(e) => (false, format!("{e:#}")),
        },
        EnvKind::Qemu => {
            if qemu::which(qemu::QEMU).is_none() {
                (
                    false,
                    format!("{} not found: apt-get install qemu-system-x86", qemu::QEMU),
                )
            } else {
                match QemuEnvironment::new(s.clone()).and_then(|mut e| {
                    e.prepare()?;
                    Ok(e)
                }) {
                    Ok(e) => (true, format!("accelerator {}", e.accel_name())),
                    Err(err) => (false, format!("{err:#}")),
                }
            }
        }
        EnvKind::Ssh => match super::ssh::SshEnvironment::new(s.clone()).check() {
            Ok(()) => (true, "reachable".into()),
            Err(e) => (false, format!("{e:#}")),
        },
    };
    Probe {
        spec: s.clone(),
        available,
        detail,
    }
}

/// host, docker, podman and qemu, plus the given targets.
pub fn probe_all(extra: &[Spec]) -> Vec<Probe> {
    let mut specs = vec![spec("host"), spec("docker"), spec("podman"), spec("qemu")];
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
