//! The `host` driver: the agent as a child process of this very binary, so a
//! host run goes through exactly the same path as every other environment.

use std::process::Stdio;

use anyhow::{Context, Result};

use super::def::DriverDef;
use super::{Environment, Launched, OnHost, Spec};
use crate::sys::owner::{self, Owner};

pub const DEF: DriverDef = DriverDef {
    name: "host",
    summary: "this machine: the agent as a child process of this binary",
    target: None,
    options: &[],
    probe_by_default: true,
    build: |spec| Ok(Box::new(HostEnvironment::new(spec.clone()))),
    probe: |_| {
        (
            true,
            format!(
                "{} CPUs, hypervisor {}",
                crate::sys::fingerprint::online_cpus(),
                crate::sys::fingerprint::hypervisor_signature()
                    .map(|h| crate::sys::fingerprint::hypervisor_name(&h).to_string())
                    .unwrap_or_else(|| "none".into())
            ),
        )
    },
};

/// The agent's work directory: `virtperf-host-OWNER-INDEX-XXXXXX` in TMPDIR.
pub const DIR_PREFIX: &str = "virtperf-host-";

pub struct HostEnvironment {
    spec: Spec,
}

impl HostEnvironment {
    pub fn new(spec: Spec) -> HostEnvironment {
        HostEnvironment { spec }
    }
}

impl Environment for HostEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn shares_files(&self) -> bool {
        true
    }

    fn launch(&self, index: usize) -> Result<Launched> {
        let mut cmd = crate::sys::this_binary().context("finding this binary")?;
        // Named after this process: a run killed before its cleanup leaves
        // its directory to the next one, which removes it.
        let tmp = std::env::temp_dir();
        owner::sweep_dirs(&tmp, DIR_PREFIX);
        let tag = Owner::me().map(Owner::tag).unwrap_or_default();
        let workdir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{tag}-{index}-"))
            .tempdir()
            .context("creating a work directory")?
            .keep();
        let spawned = cmd
            .arg("agent")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) => {
                // Nothing owns the directory yet: remove it here.
                let _ = std::fs::remove_dir_all(&workdir);
                return Err(e).context("starting the agent");
            }
        };
        let dir = workdir.clone();
        Ok(Launched {
            child,
            cleanup: Some(Box::new(move || {
                let _ = std::fs::remove_dir_all(dir);
            })),
            console: None,
            workdir: workdir.to_string_lossy().into_owned(),
            forwarded: None,
            on_host: OnHost::Tree,
        })
    }
}
