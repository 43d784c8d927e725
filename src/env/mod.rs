//! Environments: where a plan of workloads runs. Every driver starts a
//! process whose stdin and stdout reach a virtperf agent (a local child, a
//! container, a VM's serial port, an SSH session). This file holds the
//! `Environment` trait every driver implements and what a launch hands
//! over; around it, `registry` lists the drivers, `session` holds one live
//! agent process, `run` holds an environment's instances from start to end
//! (`count=N` started together, `reboot=`, cleanup always), `exchange`
//! speaks the agent protocol for one plan, `peer` owns each job's network
//! peer from placement to stop (over the driver's `net::Route`), `load`
//! stamps the host's view of a run's load, and `combine` sums simultaneous
//! instances' results.

mod combine;
pub mod def;
pub mod docker;
mod engine_cli;
mod exchange;
pub mod group;
pub mod gvisor;
pub mod host;
pub mod libvirt;
mod load;
pub mod lxc;
pub mod net;
pub mod nspawn;
mod peer;
pub mod probe;
pub mod qemu;
mod registry;
mod rootless;
mod run;
mod runtime;
mod session;
pub mod spec;
pub mod ssh;
mod syscontainer;
mod tarball;
mod vethns;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::Duration;

use anyhow::Result;

use crate::core::observer::Observer;
use crate::workload::Job;
pub use combine::{combine, combine_group};
pub use def::{DriverDef, Reboot, Spec};
pub use exchange::{InstanceOutcome, OnResult};
pub use net::Route;
pub use peer::NetNeed;
pub use registry::{driver, find_driver, help, DRIVERS};
pub use run::{run, run_with, Opened};
pub use session::{message_in, MAX_LINE};

/// A started agent process, as a driver hands it over.
pub struct Launched {
    pub child: Child,
    /// Runs after the process has ended or was killed (remove a container,
    /// a temporary directory...).
    pub cleanup: Option<Box<dyn FnOnce() + Send>>,
    /// A log worth showing when the agent dies (a VM's console).
    pub console: Option<PathBuf>,
    /// Where file workloads should write, inside the environment.
    pub workdir: String,
    /// A TCP port forwarded from the host's loopback into the instance, as
    /// (host port, port inside): how a host-side client reaches a server
    /// there (QEMU's user-mode network).
    pub forwarded: Option<(u16, u16)>,
    /// Where the host sees the instance's CPU use.
    pub on_host: OnHost,
}

/// Where the host can see an instance's CPU use, so that the noise check
/// tells work done on its behalf from other processes' load (see
/// `sys::monitor`).
pub enum OnHost {
    /// It runs on another machine (SSH): the agent's figures stand.
    Elsewhere,
    /// The launched process tree is all of it (the host agent; QEMU with
    /// its vCPU threads).
    Tree,
    /// Also a container's processes, counted by its cgroup: this returns
    /// the pid of its init once it runs.
    Container(Box<dyn Fn() -> Option<u32> + Send>),
    /// Also a container's processes, which have no cgroup of their own
    /// (rootless Podman on cgroup v1) and are not below the launched
    /// process (conmon is their parent): its init's tree, whose pid this
    /// returns once it runs.
    Detached(Box<dyn Fn() -> Option<u32> + Send>),
}

impl OnHost {
    /// Whether a container or VM runs, with a runtime's helpers outside it
    /// working on its behalf.
    pub(crate) fn has_helpers(&self) -> bool {
        matches!(self, OnHost::Container(_) | OnHost::Detached(_))
    }
}

/// One way of running agents.
pub trait Environment {
    fn spec(&self) -> &Spec;

    /// One-time set-up shared by all instances (an image, an initramfs);
    /// what the user should know (a fallback taken) goes to `obs`.
    fn prepare(&mut self, _obs: &dyn Observer) -> Result<()> {
        Ok(())
    }

    /// Starts instance `index` (of `spec().count`).
    fn launch(&self, index: usize) -> Result<Launched>;

    /// `reboot=each-run` or `each-round`: brings instance `index`, which has just been
    /// ended, back to a fresh boot before it is launched again (an ssh
    /// target's `reboot` and the wait for it). By default nothing: a fresh
    /// launch is a fresh boot (a new VM, a new container).
    fn reboot(&self, _index: usize) -> Result<()> {
        Ok(())
    }

    /// Whether a launch starts from a fresh boot (a new VM or container),
    /// so that `reboot=` need not reboot before the first run.
    fn launch_is_fresh(&self) -> bool {
        true
    }

    /// Whether the agent works on this machine's own file system (the host
    /// agent), so that what a killed agent left in a directory the user
    /// named can be cleaned up from here.
    fn shares_files(&self) -> bool {
        false
    }

    /// How long the agent may take to say hello (a VM boots first).
    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(30)
    }

    /// How long a job may take here before the agent is declared hung.
    fn job_deadline(&self, job: &Job) -> Duration {
        job.deadline()
    }

    /// The name instance `index` reports under: the spec's label, numbered
    /// when there are several copies (a group's members have their own).
    fn instance_label(&self, index: usize) -> String {
        let s = self.spec();
        if s.count > 1 {
            format!("{}#{}", s.label, index + 1)
        } else {
            s.label.clone()
        }
    }

    /// The kind instance `index` reports (its driver's name).
    fn instance_kind(&self, _index: usize) -> String {
        self.spec().driver.name.to_string()
    }

    /// What the plan's network jobs need, told before `prepare` and any
    /// launch, so the driver can open exactly that (QEMU's user network to
    /// the host, a forwarded port).
    fn use_network(&mut self, _need: NetNeed) {}

    /// How a client in instance `index` (which has said hello) reaches a
    /// server on the host: where the host server binds (only where the
    /// instance reaches it) and what the client dials.
    fn route_to_host(&self, _index: usize) -> Result<Route> {
        Ok(Route::loopback("loopback"))
    }

    /// How the host reaches a server inside instance `index`: where it
    /// binds inside and what the host dials (`forwarded` is the instance's
    /// forwarded port, if any).
    fn route_to_env(&self, _index: usize, _forwarded: Option<(u16, u16)>) -> Result<Route> {
        Ok(Route::loopback("loopback"))
    }

    /// How instance `index` is set up, as the driver knows it and the
    /// guest cannot see (a libvirt domain's XML essentials), for the
    /// fingerprint; empty where there is nothing beyond what the agent
    /// reports.
    fn settings(&self, _index: usize) -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// Why instance `index` failed, when the driver knows (an OOM kill),
    /// given how the launched process ended if it has (a container
    /// engine's client exits with the container's code).
    fn explain_exit_status(&self, _index: usize, _status: Option<ExitStatus>) -> Option<String> {
        None
    }
}
