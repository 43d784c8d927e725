//! What a workload declares about itself, in one place: its name and summary,
//! the options it accepts, what it needs from the environment it runs in, the
//! metrics it produces with their metadata, and how to build it. Help, option
//! checks, the agent's work directory, headline metrics and seed 001's
//! categories all come from here, so nothing else names a workload.

use anyhow::Result;

use super::Workload;
use crate::core::options::{OptionSpec, Values};
use crate::core::result::Metric;
use crate::stats::ranking::Category;

/// What a workload needs from the environment it runs in; checked before
/// anything starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// The option naming the directory it writes into; an agent points it at
    /// the environment's scratch space unless the user gave one.
    pub workdir: Option<&'static str>,
    /// Has prepare and cleanup steps, which an agent runs around each run.
    pub prepare: bool,
    /// Talks to a network peer: how the host gives it one when it runs in
    /// an environment (see `NetworkPeer`).
    pub network: Option<&'static NetworkPeer>,
    /// Must run as root.
    pub root: bool,
}

impl Needs {
    /// Nothing beyond a CPU and memory.
    pub const NONE: Needs = Needs {
        workdir: None,
        prepare: false,
        network: None,
        root: false,
    };
}

/// How a workload that talks to a network peer is given one when it runs in
/// an environment: by default the host starts a server reachable from the
/// environment and points the job at it; with the placement option set to
/// `placement_env` the agent starts the server inside and the host runs the
/// job (the client) against it. A job naming its peer (`address_option`
/// given) runs as given.
#[derive(Debug)]
pub struct NetworkPeer {
    /// The option naming the peer as `HOST:PORT`.
    pub address_option: &'static str,
    /// The option saying where the server runs.
    pub placement_option: &'static str,
    /// Its value for "inside the environment" (any other: on the host).
    pub placement_env: &'static str,
    /// The option carrying the secret a server started for a run requires
    /// (fresh for each; redacted wherever options are shown).
    pub secret_option: &'static str,
    /// Starts a server listening on `addr` (port 0: a free one, TCP and UDP
    /// alike) that serves only clients proving `secret`, bounded in
    /// sessions, sizes and idle time; dropping it stops it.
    pub serve: fn(std::net::SocketAddr, &str) -> Result<Box<dyn PeerServer>>,
}

/// Two peers are the same when they name the same options (a workload's
/// declaration; a const may live at more than one address).
impl PartialEq for NetworkPeer {
    fn eq(&self, other: &NetworkPeer) -> bool {
        self.address_option == other.address_option
            && self.placement_option == other.placement_option
    }
}

impl Eq for NetworkPeer {}

/// A running peer server; dropped, it stops and frees its port.
pub trait PeerServer: Send {
    fn addr(&self) -> std::net::SocketAddr;
}

impl NetworkPeer {
    /// Whether `values` ask for the server inside the environment.
    pub fn server_inside(&self, values: &Values) -> bool {
        values.has(self.placement_option)
            && values.text(self.placement_option) == self.placement_env
    }

    /// Whether `values` name a peer of their own.
    pub fn address_given(&self, values: &Values) -> bool {
        values.was_given(self.address_option) && !values.text(self.address_option).is_empty()
    }
}

/// What a workload declares about one metric it produces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricDef {
    /// snake_case, as in the result document; a leading or trailing `*`
    /// stands for any text (`*_ns`: every operation's time).
    pub name: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// One of the few figures a user reads first, each measurement once (not
    /// both `x_ns` and `x_cycles`): the family of the verdict's correction.
    pub headline: bool,
    /// The seed 001 category it feeds, if any.
    pub category: Option<Category>,
}

impl MetricDef {
    pub const fn new(
        name: &'static str,
        unit: &'static str,
        higher_is_better: bool,
        headline: bool,
        category: Option<Category>,
    ) -> MetricDef {
        MetricDef {
            name,
            unit,
            higher_is_better,
            headline,
            category,
        }
    }

    /// Whether a produced metric's name is this one.
    pub fn matches(&self, name: &str) -> bool {
        if let Some(suffix) = self.name.strip_prefix('*') {
            name.ends_with(suffix)
        } else if let Some(prefix) = self.name.strip_suffix('*') {
            name.starts_with(prefix)
        } else {
            name == self.name
        }
    }
}

/// A produced metric, with the unit and direction its declaration in
/// `table` gives (the first that matches `name`). Panics on an undeclared
/// name: that is a bug in the workload, which the registry test catches.
pub fn metric_from(table: &[MetricDef], name: &str, value: f64) -> Metric {
    let def = table
        .iter()
        .find(|d| d.matches(name))
        .unwrap_or_else(|| panic!("metric {name} is not declared in its workload's table"));
    Metric::new(name, value, def.unit, def.higher_is_better)
}

/// A sysbench built-in test as sysbench 1.0.20 names it in `--help`
/// ("cpu - CPU performance test") and lists its options in `help` (the
/// lines after "cpu options:", in its layout and words).
#[derive(Debug, Clone, Copy)]
pub struct SysbenchTest {
    pub summary: &'static str,
    pub options: &'static str,
    /// Options sysbench refuses to run without ("Missing required
    /// argument").
    pub required_for_run: &'static [&'static str],
}

/// The part of a machine a workload measures: a report's overview gives
/// one slowdown per environment and area.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Area {
    Cpu,
    Memory,
    Disk,
    Network,
    Oltp,
    MicroOps,
}

impl Area {
    pub const ALL: [Area; 6] = [
        Area::Cpu,
        Area::Memory,
        Area::Disk,
        Area::Network,
        Area::Oltp,
        Area::MicroOps,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Area::Cpu => "CPU",
            Area::Memory => "memory",
            Area::Disk => "disk",
            Area::Network => "network",
            Area::Oltp => "OLTP",
            Area::MicroOps => "micro-ops",
        }
    }
}

/// One workload, as the registry lists it.
pub struct WorkloadDef {
    pub name: &'static str,
    pub summary: &'static str,
    /// The workload's own options.
    pub options: &'static [OptionSpec],
    /// The engine options it accepts (`engine::ALL` for event-driven
    /// workloads); the others are refused with a message saying so.
    pub engine: &'static [&'static str],
    pub needs: Needs,
    /// Every metric it produces; the first that matches a name wins.
    pub metrics: &'static [MetricDef],
    /// What part of a machine it measures, for a report's overview.
    pub area: Area,
    /// For sysbench's own tests: how sysbench 1.0.20 lists and describes
    /// it, for the `sysbench` persona's help.
    pub sysbench: Option<SysbenchTest>,
    /// Builds it from validated options.
    pub build: fn(&Values) -> Result<Box<dyn Workload>>,
}

impl WorkloadDef {
    /// The option tables a job of this workload is parsed against.
    pub fn option_tables(&self) -> (Vec<OptionSpec>, &'static [OptionSpec]) {
        let engine = crate::engine::OPTIONS
            .iter()
            .filter(|o| self.engine.contains(&o.name))
            .copied()
            .collect();
        (engine, self.options)
    }

    /// Whether `name` is one of this workload's options (engine ones included).
    pub fn accepts(&self, name: &str) -> bool {
        self.engine.contains(&name) || self.options.iter().any(|o| o.name == name)
    }

    /// The declaration of a metric it produced.
    pub fn metric(&self, name: &str) -> Option<&'static MetricDef> {
        self.metrics.iter().find(|m| m.matches(name))
    }
}

impl std::fmt::Debug for WorkloadDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WorkloadDef({})", self.name)
    }
}

impl PartialEq for WorkloadDef {
    fn eq(&self, other: &WorkloadDef) -> bool {
        self.name == other.name
    }
}

/// A finished run: its document and the workload's own text section
/// (here, beside the definitions, so that the runners of workloads and of
/// scripts share it without importing each other).
pub struct Executed {
    pub doc: crate::core::result::ResultDoc,
    pub text: String,
    /// Event latencies (ns), for `--histogram`.
    pub histogram: Option<crate::engine::Histogram>,
    /// What each engine thread did, for sysbench's `--debug` lines.
    pub threads: Vec<crate::engine::ThreadStats>,
}
