//! Workloads: one file per workload, each declaring its option table and
//! needs, all implementing one `Workload` trait and chosen by `Kind`.

pub mod cpu;
pub mod disk;
pub mod fileio;
pub mod memory;
pub mod microops;
pub mod mutex;
pub mod oltp;
pub mod threads;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;

use crate::core::options::{OptionSpec, Values};
use crate::core::result::{Fairness, Latency, Metric};
use crate::engine::{self, EngineOptions};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences the progress lines of prepare and cleanup ("Creating files for
/// the test..."): the agent runs those steps itself, and their chatter would
/// break the host's progress line.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Prints a prepare/cleanup progress line on stderr unless quiet.
pub fn progress(line: std::fmt::Arguments) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("{line}");
    }
}

/// What a workload needs from the environment it runs in; the runner checks
/// these before anything starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Writes files (under a test directory).
    pub disk: bool,
    /// Talks to a network peer.
    pub network: bool,
}

/// The categories of seed 001's overhead ranking a metric can feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// "Computing power": LINPACK.
    Computing,
    /// "Disk I/O": bonnie++'s block write, rewrite and read.
    DiskIo,
    /// "Network I/O": netperf's five tests.
    NetworkIo,
    /// "Disk read latency", in times slower.
    DiskLatency,
    /// "Micro-operations", in times slower.
    MicroOps,
}

/// What a workload declares about one metric it produces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricDef {
    /// snake_case, as in the result document.
    pub name: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// One of the few figures a user reads first (each measurement once:
    /// not both `x_ns` and `x_cycles`); the family Holm's correction covers.
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
}

/// The sub-command of a single-workload invocation, as in sysbench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Prepare,
    Run,
    Cleanup,
}

impl Command {
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
    /// The workload's own section of the text summary ("CPU speed: ...").
    pub text: String,
    /// Event latencies (ns), kept for `--histogram`; not in the document.
    pub histogram: Option<engine::Histogram>,
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
            ..Measurement::default()
        }
    }
}

/// One workload, built from validated options.
pub trait Workload {
    /// Creates what the run needs (files); most workloads need nothing.
    fn prepare(&mut self) -> Result<()> {
        Ok(())
    }

    /// Measures once.
    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement>;

    /// Removes what `prepare` created, including leftovers of an
    /// interrupted run.
    fn cleanup(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Every workload virtperf knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cpu,
    Memory,
    Threads,
    Mutex,
    Microops,
    Fileio,
    Disk,
    /// The sysbench OLTP tests, each under its own name.
    Oltp(oltp::Test),
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::Cpu,
        Kind::Memory,
        Kind::Threads,
        Kind::Mutex,
        Kind::Microops,
        Kind::Fileio,
        Kind::Disk,
        Kind::Oltp(oltp::Test::ReadWrite),
        Kind::Oltp(oltp::Test::ReadOnly),
        Kind::Oltp(oltp::Test::WriteOnly),
        Kind::Oltp(oltp::Test::PointSelect),
        Kind::Oltp(oltp::Test::UpdateIndex),
        Kind::Oltp(oltp::Test::UpdateNonIndex),
        Kind::Oltp(oltp::Test::Insert),
        Kind::Oltp(oltp::Test::Delete),
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Memory => "memory",
            Kind::Threads => "threads",
            Kind::Mutex => "mutex",
            Kind::Microops => "microops",
            Kind::Fileio => "fileio",
            Kind::Disk => "disk",
            Kind::Oltp(t) => t.name(),
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.name() == name)
    }

    pub fn summary(self) -> &'static str {
        match self {
            Kind::Cpu => "CPU: prime numbers up to --cpu-max-prime by trial division (sysbench cpu)",
            Kind::Memory => {
                "Memory: sysbench-compatible block transfers, or STREAM bandwidth (--memory-mode=stream)"
            }
            Kind::Threads => "Scheduler: threads yielding while holding a few mutexes (sysbench threads)",
            Kind::Mutex => "Mutex: lock/unlock storms over many mutexes (sysbench mutex)",
            Kind::Disk => {
                "Disk: bonnie++-style block write, rewrite, read, seeks and file create/stat/delete"
            }
            Kind::Fileio => {
                "File I/O: sysbench fileio modes on test files (prepare, run, cleanup)"
            }
            Kind::Microops => {
                "Micro-operations in cycles (system calls, faults, pipes, CPUID exits) with a VM-safe TSC timer"
            }
            Kind::Oltp(t) => t.summary(),
        }
    }

    pub fn options(self) -> &'static [OptionSpec] {
        match self {
            Kind::Cpu => cpu::OPTIONS,
            Kind::Memory => memory::OPTIONS,
            Kind::Threads => threads::OPTIONS,
            Kind::Mutex => mutex::OPTIONS,
            Kind::Microops => microops::OPTIONS,
            Kind::Fileio => fileio::OPTIONS,
            Kind::Disk => disk::OPTIONS,
            Kind::Oltp(_) => oltp::OPTIONS,
        }
    }

    pub fn needs(self) -> Needs {
        match self {
            Kind::Fileio | Kind::Disk | Kind::Oltp(_) => Needs {
                disk: true,
                network: false,
            },
            _ => Needs::default(),
        }
    }

    /// Builds the workload from its validated options.
    pub fn build(self, values: &Values) -> Result<Box<dyn Workload>> {
        Ok(match self {
            Kind::Cpu => Box::new(cpu::CpuWorkload::new(values)),
            Kind::Memory => Box::new(memory::MemoryWorkload::new(values)?),
            Kind::Threads => Box::new(threads::ThreadsWorkload::new(values)),
            Kind::Mutex => Box::new(mutex::MutexWorkload::new(values)),
            Kind::Microops => Box::new(microops::MicroopsWorkload::new(values)?),
            Kind::Fileio => Box::new(fileio::FileioWorkload::new(values)?),
            Kind::Disk => Box::new(disk::DiskWorkload::new(values)?),
            Kind::Oltp(t) => Box::new(oltp::OltpWorkload::new(t, values)?),
        })
    }
}
