//! `threads`: sysbench's scheduler test. One event takes one of
//! `--thread-locks` mutexes (round robin) `--thread-yields` times, yielding
//! the CPU while holding it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Result;

use crate::core::options::{OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::engine::{self, EngineOptions, Worker};
use crate::workload::import::sysbench::SysbenchTestImport;
use crate::workload::{Measurement, MetricDef, Needs, Workload, WorkloadDef};

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "thread-yields",
        OptKind::Int {
            min: 0,
            max: u32::MAX as u64,
        },
        "1000",
        "number of yields to do per request",
    ),
    OptionSpec::new(
        "thread-locks",
        OptKind::Int {
            min: 1,
            max: 1 << 20,
        },
        "8",
        "number of locks per thread",
    ),
];

pub const DEF: WorkloadDef = WorkloadDef {
    name: "threads",
    summary: "Scheduler: threads yielding while holding a few mutexes (sysbench threads)",
    options: OPTIONS,
    engine: engine::ALL,
    needs: Needs::NONE,
    metrics: &[
        MetricDef::new("events_per_sec", "events/s", true, true, None),
        MetricDef::new("total_time_s", "s", false, false, None),
    ],
    area: crate::workload::Area::Cpu,
    sysbench: Some(crate::workload::SysbenchTest {
        summary: "Threads subsystem performance test",
        options: "  --thread-yields=N number of yields to do per request [1000]\n  --thread-locks=N  number of locks per thread [8]\n",
        required_for_run: &[],
    }),
    build,
};

/// sysbench's threads test read back (`virtperf import`). 1.0 prints no
/// line of its own for it, so a log with no other test's lines is taken
/// as threads (tried last); 0.4 says `Doing thread subsystem performance
/// test` and `Thread yields per test: N Locks used: M`.
pub const SYSBENCH_IMPORT: SysbenchTestImport = SysbenchTestImport {
    defs: &[&DEF],
    claims: |log| !log.old || log.has("Doing thread subsystem performance test"),
    read: |log, _| {
        let mut imp = log.imported(&DEF);
        if let Some((_, rest)) = log.after("Thread yields per test:") {
            if let Some((y, rest)) = crate::workload::import::leading_number(rest) {
                imp.option("thread-yields", y);
                if let Some((_, locks)) = rest.split_once("Locks used:") {
                    if let Some((l, _)) = crate::workload::import::leading_number(locks) {
                        imp.option("thread-locks", l);
                    }
                }
            }
        }
        imp.declared("events_per_sec", log.events_per_sec());
        imp.declared("total_time_s", log.total_time_s);
        Ok(imp)
    },
};

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(ThreadsWorkload::new(values)))
}

pub struct ThreadsWorkload {
    yields: u64,
    locks: usize,
}

impl ThreadsWorkload {
    pub fn new(values: &Values) -> ThreadsWorkload {
        ThreadsWorkload {
            yields: values.int("thread-yields"),
            locks: values.int("thread-locks") as usize,
        }
    }
}

/// Keeps each mutex on its own cache line, so neighbours do not contend.
#[repr(align(64))]
#[derive(Default)]
struct PaddedMutex(Mutex<()>);

struct ThreadsWorker {
    locks: Arc<Vec<PaddedMutex>>,
    next_lock: Arc<AtomicUsize>,
    yields: u64,
}

impl Worker for ThreadsWorker {
    fn event(&mut self) -> Result<bool> {
        let n = self.next_lock.fetch_add(1, Ordering::Relaxed) % self.locks.len();
        let lock = &self.locks[n].0;
        for _ in 0..self.yields {
            let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
            std::thread::yield_now();
            drop(guard);
        }
        Ok(true)
    }
}

impl Workload for ThreadsWorkload {
    /// sysbench says what it runs only under `--debug`.
    fn header(&self, engine: &EngineOptions) -> String {
        if !engine.debug {
            return String::new();
        }
        format!(
            "Doing thread subsystem performance test\nThread yields per test: {} Locks used: {}\n",
            self.yields, self.locks
        )
    }

    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        let locks = Arc::new((0..self.locks).map(|_| PaddedMutex::default()).collect());
        let next_lock = Arc::new(AtomicUsize::new(0));
        let workers = (0..engine.threads)
            .map(|_| ThreadsWorker {
                locks: Arc::clone(&locks),
                next_lock: Arc::clone(&next_lock),
                yields: self.yields,
            })
            .collect();
        let (outcome, _) = engine::run(engine, workers)?;
        let eps = outcome.events_per_sec();
        let secs = outcome.duration.as_secs_f64();
        let mut m = Measurement::from_outcome(&outcome, engine.percentile);
        m.metrics = vec![
            Metric::new("events_per_sec", eps, "events/s", true),
            Metric::new("total_time_s", secs, "s", false),
        ];
        // sysbench prints nothing of its own here: the general statistics
        // say it all.
        Ok(m)
    }
}
