//! `mutex`: sysbench's mutex test. Every thread runs one event: `--mutex-locks`
//! times it spins `--mutex-loops` empty iterations, then locks a random one of
//! `--mutex-num` mutexes and increments a shared counter.

use std::sync::{Arc, Mutex};

use anyhow::Result;

use crate::core::options::{OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::engine::{self, EngineOptions, FastRng, Worker};
use crate::workload::import::sysbench::SysbenchTestImport;
use crate::workload::{Measurement, MetricDef, Needs, Workload, WorkloadDef};

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "mutex-num",
        OptKind::Int {
            min: 1,
            max: 1 << 24,
        },
        "4096",
        "total size of mutex array",
    ),
    OptionSpec::new(
        "mutex-locks",
        OptKind::Int {
            min: 1,
            max: u32::MAX as u64,
        },
        "50000",
        "number of mutex locks to do per thread",
    ),
    OptionSpec::new(
        "mutex-loops",
        OptKind::Int {
            min: 0,
            max: u32::MAX as u64,
        },
        "10000",
        "number of empty loops to do outside mutex lock",
    ),
];

pub const DEF: WorkloadDef = WorkloadDef {
    name: "mutex",
    summary: "Mutex: lock/unlock storms over many mutexes (sysbench mutex)",
    options: OPTIONS,
    engine: engine::ALL,
    needs: Needs::NONE,
    metrics: &[
        // A fixed amount of work per thread: the time it takes is the figure.
        MetricDef::new("total_time_s", "s", false, true, None),
        MetricDef::new("events_per_sec", "events/s", true, false, None),
    ],
    area: crate::workload::Area::Cpu,
    sysbench: Some(crate::workload::SysbenchTest {
        summary: "Mutex performance test",
        options: "  --mutex-num=N   total size of mutex array [4096]\n  --mutex-locks=N number of mutex locks to do per thread [50000]\n  --mutex-loops=N number of empty loops to do outside mutex lock [10000]\n",
        required_for_run: &[],
    }),
    build,
};

/// sysbench's mutex test read back (`virtperf import`). 1.0 prints no line
/// of its own for it; a run of it has one event per thread, which is how
/// it is told from threads (`--kind sysbench:mutex` says so outright).
/// 0.4 says `Doing mutex performance test`.
pub const SYSBENCH_IMPORT: SysbenchTestImport = SysbenchTestImport {
    defs: &[&DEF],
    claims: |log| {
        if log.old {
            log.has("Doing mutex performance test")
        } else {
            !log.has("Doing ") && log.events == log.threads
        }
    },
    read: |log, _| {
        let mut imp = log.imported(&DEF);
        imp.declared("total_time_s", log.total_time_s);
        imp.declared("events_per_sec", log.events_per_sec());
        Ok(imp)
    },
};

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(MutexWorkload::new(values)))
}

pub struct MutexWorkload {
    num: usize,
    locks: u64,
    loops: u64,
}

impl MutexWorkload {
    pub fn new(values: &Values) -> MutexWorkload {
        MutexWorkload {
            num: values.int("mutex-num") as usize,
            locks: values.int("mutex-locks"),
            loops: values.int("mutex-loops"),
        }
    }
}

#[repr(align(64))]
struct PaddedCounter(Mutex<u64>);

struct MutexWorker {
    mutexes: Arc<Vec<PaddedCounter>>,
    locks: u64,
    loops: u64,
    rng: FastRng,
}

impl Worker for MutexWorker {
    fn event(&mut self) -> Result<bool> {
        let n = self.mutexes.len() as u64;
        for _ in 0..self.locks {
            let pick = self.rng.below(n) as usize;
            for _ in 0..self.loops {
                // An empty loop the compiler must keep, like sysbench's
                // ck_pr_barrier(): an empty asm statement that may touch
                // memory. (A compiler_fence alone let LLVM delete the loop.)
                // SAFETY: an empty instruction sequence.
                unsafe { std::arch::asm!("", options(nostack, preserves_flags)) };
            }
            let mut guard = self.mutexes[pick]
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            *guard += 1;
        }
        // One event per thread.
        Ok(false)
    }
}

impl Workload for MutexWorkload {
    /// sysbench says what it runs only under `--debug`.
    fn header(&self, engine: &EngineOptions) -> String {
        if engine.debug {
            "Doing mutex performance test\n".into()
        } else {
            String::new()
        }
    }

    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        let mutexes: Arc<Vec<PaddedCounter>> = Arc::new(
            (0..self.num)
                .map(|_| PaddedCounter(Mutex::new(0)))
                .collect(),
        );
        let workers = (0..engine.threads)
            .map(|tid| MutexWorker {
                mutexes: Arc::clone(&mutexes),
                locks: self.locks,
                loops: self.loops,
                rng: FastRng::new(tid as u64 + 7),
            })
            .collect();
        let (outcome, _) = engine::run(engine, workers)?;
        let total: u64 = mutexes
            .iter()
            .map(|m| *m.0.lock().unwrap_or_else(|p| p.into_inner()))
            .sum();
        let eps = outcome.events_per_sec();
        let secs = outcome.duration.as_secs_f64();
        let mut m = Measurement::from_outcome(&outcome, engine.percentile);
        m.metrics = vec![
            Metric::new("events_per_sec", eps, "events/s", true),
            Metric::new("total_time_s", secs, "s", false),
        ];
        m.details = serde_json::json!({ "lock_acquisitions": total });
        // sysbench prints nothing of its own here; the lock count is in
        // the document's details.
        Ok(m)
    }
}
