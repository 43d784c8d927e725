//! The `group` driver: different environments started together —
//! `group:ssh:a@vm1+ssh:b@vm2`, `group:host+docker:cpus=1`. Every member is
//! an ordinary spec with its own driver; the group launches each once, and
//! `env::run` waits until all have said hello and are ready, then releases
//! them with one "go" each, as it does for `count=N` copies of one
//! environment. Each member is reported under its own label and kind, and
//! the scheduler sums them.

use std::time::Duration;

use anyhow::Result;

use super::def::DriverDef;
use super::{Environment, Launched, NetNeed, Route, Spec};
use crate::core::observer::Observer;
use crate::workload::Job;

/// The most members one group may have.
pub const MAX_MEMBERS: usize = 16;

pub const DEF: DriverDef = DriverDef {
    name: "group",
    summary: "different environments started together (members joined by '+', 2 to 16, each an ordinary spec with its own name=; no '+' inside a member): all ready, then released at once; each member reported and their sum",
    target: Some("SPEC+SPEC[+...]"),
    options: &[],
    probe_by_default: false,
    build: |spec| Ok(Box::new(GroupEnvironment::new(spec)?)),
    probe: |spec| {
        let mut ok = true;
        let mut details = Vec::new();
        for m in &spec.members {
            let (available, detail) = (m.driver.probe)(m);
            ok &= available;
            details.push(format!(
                "{}: {}",
                m.label,
                if available { "available" } else { detail.as_str() }
            ));
        }
        (ok, details.join("; "))
    },
};

pub struct GroupEnvironment {
    spec: Spec,
    members: Vec<Box<dyn Environment>>,
}

impl GroupEnvironment {
    pub fn new(spec: &Spec) -> Result<GroupEnvironment> {
        let members = spec
            .members
            .iter()
            .map(|m| (m.driver.build)(m))
            .collect::<Result<Vec<_>>>()?;
        Ok(GroupEnvironment {
            spec: spec.clone(),
            members,
        })
    }
}

impl Environment for GroupEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn prepare(&mut self, obs: &dyn Observer) -> Result<()> {
        for m in &mut self.members {
            let label = m.spec().label.clone();
            m.prepare(obs)
                .map_err(|e| e.context(format!("preparing group member {label}")))?;
        }
        Ok(())
    }

    /// Member `index`, its one instance.
    fn launch(&self, index: usize) -> Result<Launched> {
        self.members[index].launch(0)
    }

    fn boot_deadline(&self) -> Duration {
        self.members
            .iter()
            .map(|m| m.boot_deadline())
            .max()
            .unwrap_or(Duration::from_secs(30))
    }

    fn job_deadline(&self, job: &Job) -> Duration {
        self.members
            .iter()
            .map(|m| m.job_deadline(job))
            .max()
            .unwrap_or_else(|| job.deadline())
    }

    fn explain_exit_status(
        &self,
        index: usize,
        status: Option<std::process::ExitStatus>,
    ) -> Option<String> {
        self.members.get(index)?.explain_exit_status(0, status)
    }

    fn instance_label(&self, index: usize) -> String {
        self.members[index].spec().label.clone()
    }

    fn instance_kind(&self, index: usize) -> String {
        self.members[index].spec().driver.name.to_string()
    }

    // A network job in member `index` meets its peer as that member's own
    // driver arranges it (a container's bridge, QEMU's user network, ...).
    fn use_network(&mut self, need: NetNeed) {
        for m in &mut self.members {
            m.use_network(need);
        }
    }

    fn route_to_host(&self, index: usize) -> Result<Route> {
        self.members[index].route_to_host(0)
    }

    fn route_to_env(&self, index: usize, forwarded: Option<(u16, u16)>) -> Result<Route> {
        self.members[index].route_to_env(0, forwarded)
    }
}
