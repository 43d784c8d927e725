//! Workloads: one file or folder per workload, each declaring itself in one
//! `WorkloadDef` (options, needs, metrics) listed in the registry, all
//! implementing one `Workload` trait; the typed `Job` (workload, command,
//! option values) and its execution.

pub mod cpu;
pub mod disk;
pub mod fileio;
pub mod linpack;
pub mod lua;
pub mod memory;
pub mod microops;
pub mod mutex;
pub mod net;
pub mod oltp;
pub mod threads;

mod def;
pub mod import;
mod job;
pub mod registry;
mod run;

pub use crate::stats::ranking::Category;
pub use def::{
    metric_from, Area, Executed, MetricDef, Needs, NetworkPeer, PeerServer, SysbenchTest,
    WorkloadDef,
};
pub use job::{Job, JobWire};
pub use registry::{
    def_of_result, detect_import, find, import_format, import_kinds, names, IMPORT_FORMATS,
    WORKLOADS,
};
pub use run::{execute, execute_announced};

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::core::observer::Observer;
use crate::core::result::{Fairness, Latency, Metric};
use crate::engine::{self, EngineOptions};

/// The sub-command of a single-workload invocation, as in sysbench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Prepare,
    Run,
    Cleanup,
}

impl Command {
    pub fn name(self) -> &'static str {
        match self {
            Command::Prepare => "prepare",
            Command::Run => "run",
            Command::Cleanup => "cleanup",
        }
    }

    pub fn parse(word: &str) -> Option<Command> {
        match word {
            "prepare" => Some(Command::Prepare),
            "run" => Some(Command::Run),
            "cleanup" => Some(Command::Cleanup),
            _ => None,
        }
    }
}

/// What a workload measured in one run. The engine's raw outcome is turned
/// into this by the workload, which knows what its events mean.
#[derive(Clone, Default)]
pub struct Measurement {
    pub duration: Duration,
    pub events: u64,
    pub metrics: Vec<Metric>,
    pub latency: Option<Latency>,
    pub fairness: Option<Fairness>,
    pub details: serde_json::Value,
    /// The workload's own section of the text summary after the run
    /// ("CPU speed: ..."), as sysbench prints it.
    pub text: String,
    /// Event latencies (ns), kept for `--histogram`; not in the document.
    pub histogram: Option<engine::Histogram>,
    /// The network path to the peer, for workloads that have one
    /// (`EnvInfo::net_path`).
    pub net_path: Option<String>,
    /// What each engine thread did, for sysbench's `--debug` lines.
    pub threads: Vec<engine::ThreadStats>,
}

impl Measurement {
    /// The common parts of a measurement from an engine outcome.
    pub fn from_outcome(outcome: &engine::Outcome, percentile: f64) -> Measurement {
        Measurement {
            duration: outcome.duration,
            events: outcome.events,
            latency: Some(engine::summarize(&outcome.histogram, percentile)),
            fairness: Some(outcome.fairness()),
            histogram: Some(outcome.histogram.clone()),
            threads: outcome.threads.clone(),
            ..Measurement::default()
        }
    }
}

/// One workload, built from validated options.
pub trait Workload {
    /// Creates what the run needs (files); most workloads need nothing.
    fn prepare(&mut self, _obs: &dyn Observer) -> Result<()> {
        Ok(())
    }

    /// Checks what a run needs that `prepare` makes, before the run's text
    /// announces it ("Threads started!"): an OLTP run's database and tables.
    fn ready(&mut self) -> Result<()> {
        Ok(())
    }

    /// What the run's text says before it starts, as sysbench prints it
    /// between the options and "Initializing worker threads..." ("Prime
    /// numbers limit: 10000" and a blank line); most workloads say nothing.
    fn header(&self, _engine: &EngineOptions) -> String {
        String::new()
    }

    /// Measures once.
    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement>;

    /// Its own section of the text (`Measurement::text`) as read back from
    /// a result document, for a run that came back from an environment
    /// (whose agent sends the document, not the text); None where the
    /// document cannot say it as the run would have.
    fn text_of(&self, _doc: &crate::core::result::ResultDoc) -> Option<String> {
        None
    }

    /// Removes what `prepare` created, including leftovers of an
    /// interrupted run.
    fn cleanup(&mut self, _obs: &dyn Observer) -> Result<()> {
        Ok(())
    }

    /// Where the workload's files are, for workloads that write files: the
    /// result records the file system there (`EnvInfo::storage`).
    fn files_dir(&self) -> Option<&Path> {
        None
    }
}
