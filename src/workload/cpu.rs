//! `cpu`: sysbench's CPU test. One event checks every number from 3 to
//! `--cpu-max-prime` for primality by trial division with 64-bit integers,
//! bounded by a floating-point square root.

use std::hint::black_box;

use anyhow::Result;

use crate::core::options::{OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::engine::{self, EngineOptions, Worker};
use crate::workload::import::sysbench::SysbenchTestImport;
use crate::workload::{Measurement, MetricDef, Needs, Workload, WorkloadDef};

/// The cpu workload's headline metric: prime-search events per second.
pub const EVENTS_PER_SEC: &str = "events_per_sec";

pub const OPTIONS: &[OptionSpec] = &[OptionSpec::new(
    "cpu-max-prime",
    OptKind::Int {
        min: 3,
        max: 1 << 40,
    },
    "10000",
    "upper limit for primes generator",
)];

pub const DEF: WorkloadDef = WorkloadDef {
    name: "cpu",
    summary: "CPU: prime numbers up to --cpu-max-prime by trial division (sysbench cpu)",
    options: OPTIONS,
    engine: engine::ALL,
    needs: Needs::NONE,
    metrics: &[MetricDef::new(EVENTS_PER_SEC, "events/s", true, true, None)],
    area: crate::workload::Area::Cpu,
    sysbench: Some(crate::workload::SysbenchTest {
        summary: "CPU performance test",
        options: "  --cpu-max-prime=N upper limit for primes generator [10000]\n",
        required_for_run: &[],
    }),
    build,
};

/// sysbench's cpu test read back (`virtperf import`): 1.0's `Prime numbers
/// limit: N` and `events per second:`, 0.4's `Maximum prime number checked
/// in CPU test: N` (its events per second from events and total time).
pub const SYSBENCH_IMPORT: SysbenchTestImport = SysbenchTestImport {
    defs: &[&DEF],
    claims: |log| {
        log.has("Prime numbers limit:")
            || log.has("Maximum prime number checked in CPU test:")
            || log.has("Doing CPU performance benchmark")
    },
    read: |log, _| {
        let limit = if log.old {
            log.required("Maximum prime number checked in CPU test:")?
        } else {
            log.required("Prime numbers limit:")?
        };
        let mut imp = log.imported(&DEF);
        imp.option("cpu-max-prime", limit);
        let eps = match log.number("events per second:")? {
            Some(x) => x,
            None => log.events_per_sec(),
        };
        imp.declared(EVENTS_PER_SEC, eps);
        imp.own("total_time_s", log.total_time_s, "s", false);
        Ok(imp)
    },
};

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(CpuWorkload::new(values)))
}

pub struct CpuWorkload {
    max_prime: u64,
}

impl CpuWorkload {
    pub fn new(values: &Values) -> CpuWorkload {
        CpuWorkload {
            max_prime: values.int("cpu-max-prime"),
        }
    }
}

/// Counts primes in `3..max_prime` exactly as sysbench does: `c % l` on
/// 64-bit integers while `l <= sqrt(c)` compared as doubles. `black_box`
/// on the inputs keeps the compiler from folding the sweep.
#[inline(never)]
#[allow(clippy::manual_is_multiple_of)] // the same `%` as sysbench's C loop
pub fn count_primes(max_prime: u64) -> u64 {
    let max_prime = black_box(max_prime);
    let mut n = 0u64;
    let mut c = 3u64;
    while c < max_prime {
        let t = (c as f64).sqrt();
        let mut l = 2u64;
        while (l as f64) <= t {
            if c % l == 0 {
                break;
            }
            l += 1;
        }
        if (l as f64) > t {
            n += 1;
        }
        c += 1;
    }
    n
}

struct CpuWorker {
    max_prime: u64,
    primes: u64,
}

impl Worker for CpuWorker {
    fn event(&mut self) -> Result<bool> {
        self.primes = black_box(count_primes(self.max_prime));
        Ok(true)
    }
}

/// sysbench's section of the report: the rate of events.
fn speed(outcome: &engine::Outcome) -> String {
    speed_text(outcome.events_per_sec())
}

fn speed_text(events_per_sec: f64) -> String {
    format!("CPU speed:\n    events per second: {events_per_sec:>8.2}\n")
}

impl Workload for CpuWorkload {
    fn header(&self, engine: &EngineOptions) -> String {
        let debug = if engine.debug {
            "Doing CPU performance benchmark\n\n"
        } else {
            ""
        };
        format!("{debug}Prime numbers limit: {}\n\n", self.max_prime)
    }

    fn text_of(&self, doc: &crate::core::result::ResultDoc) -> Option<String> {
        doc.metric(EVENTS_PER_SEC).map(speed_text)
    }

    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        let workers = (0..engine.threads)
            .map(|_| CpuWorker {
                max_prime: self.max_prime,
                primes: 0,
            })
            .collect();
        let mut opts = engine.clone();
        opts.section = Some(std::sync::Arc::new(speed));
        let (outcome, workers) = engine::run(&opts, workers)?;
        let eps = outcome.events_per_sec();
        let mut m = Measurement::from_outcome(&outcome, engine.percentile);
        m.metrics = vec![Metric::new(EVENTS_PER_SEC, eps, "events/s", true)];
        m.text = speed(&outcome);
        m.details = serde_json::json!({
            "primes_found_per_event": workers.first().map(|w| w.primes).unwrap_or(0)
        });
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_primes_like_sysbench() {
        // Primes below 10000 are 1229; sysbench's loop starts at 3, so 2 is
        // not counted.
        assert_eq!(count_primes(10_000), 1228);
        assert_eq!(count_primes(20), 7); // 3 5 7 11 13 17 19
        assert_eq!(count_primes(3), 0);
    }
}
