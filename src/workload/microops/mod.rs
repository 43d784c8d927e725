//! `microops`: what rdtscbench's micro-operation figures meant to measure,
//! timed honestly (no CPUID in the timed region), plus the trap cost itself.
//! Per operation: median, p99, geometric mean and count, in cycles and ns.

mod ops;
pub mod timer;

use std::time::Instant;

use anyhow::Result;

use crate::core::options::{CliError, OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::engine::EngineOptions;
use crate::workload::{Category, Measurement, MetricDef, Needs, Workload, WorkloadDef};
use ops::Op;
use timer::Timer;

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "ops",
        OptKind::Text,
        "all",
        "comma-separated operations, or all: getpid, sysconf, gettimeofday, malloc_1m, malloc_1g, pipe_echo, simplemath, cpuid, clock_gettime, page_fault, mmap_munmap, ctx_switch, futex_wake, open_close",
    ),
    OptionSpec::new(
        "repeats",
        OptKind::Int {
            min: 0,
            max: 10_000_000,
        },
        "0",
        "timed batches per operation (0 = each operation's default)",
    ),
    OptionSpec::new(
        "batch",
        OptKind::Int {
            min: 0,
            max: 1_000_000,
        },
        "0",
        "operations per timed batch (0 = each operation's default)",
    ),
];

pub const DEF: WorkloadDef = WorkloadDef {
    name: "microops",
    summary: "Micro-operations in cycles (system calls, faults, pipes, CPUID exits) with a VM-safe TSC timer",
    options: OPTIONS,
    engine: &[],
    needs: Needs::NONE,
    metrics: &[
    // Seed 001's micro-operations, then every other operation.
    MetricDef::new("getpid_ns", "ns", false, true, Some(Category::MicroOps)),
    MetricDef::new("sysconf_ns", "ns", false, true, Some(Category::MicroOps)),
    MetricDef::new("gettimeofday_ns", "ns", false, true, Some(Category::MicroOps)),
    MetricDef::new("malloc_1m_ns", "ns", false, true, Some(Category::MicroOps)),
    MetricDef::new("malloc_1g_ns", "ns", false, true, Some(Category::MicroOps)),
    MetricDef::new("pipe_echo_ns", "ns", false, true, Some(Category::MicroOps)),
    MetricDef::new("simplemath_ns", "ns", false, true, Some(Category::MicroOps)),
    MetricDef::new("*_ns", "ns", false, true, None),
    // The same measurements in cycles: not counted again.
    MetricDef::new("*_cycles", "cycles", false, false, None),
],
    build,
};

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(MicroopsWorkload::new(values)?))
}

pub struct MicroopsWorkload {
    ops: Vec<Op>,
    repeats: u64,
    batch: u64,
}

impl MicroopsWorkload {
    pub fn new(values: &Values) -> Result<MicroopsWorkload> {
        let list = values.text("ops");
        let ops = if list == "all" {
            ops::ALL.to_vec()
        } else {
            list.split(',')
                .map(|name| {
                    Op::from_name(name.trim()).ok_or_else(|| CliError::InvalidValue {
                        name: "ops".into(),
                        value: list.to_string(),
                        allowed: format!(
                            "all, or a comma-separated list of {}",
                            ops::ALL
                                .iter()
                                .map(|o| o.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(MicroopsWorkload {
            ops,
            repeats: values.int("repeats"),
            batch: values.int("batch"),
        })
    }
}

/// Summary of one operation's samples (ticks per operation).
#[derive(Debug, Clone, PartialEq)]
pub struct OpSummary {
    pub median: f64,
    pub p99: f64,
    pub geomean: f64,
    pub min: f64,
    pub count: usize,
}

pub fn summarize(samples: &[f64]) -> OpSummary {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    let p99 = s[((n as f64 * 0.99).ceil() as usize).clamp(1, n) - 1];
    // Zero samples (an op faster than the timer's jitter) are floored at one
    // tick so the geometric mean stays defined.
    let geomean = (s.iter().map(|x| x.max(1.0).ln()).sum::<f64>() / n as f64).exp();
    OpSummary {
        median,
        p99,
        geomean,
        min: s[0],
        count: n,
    }
}

impl Workload for MicroopsWorkload {
    fn run(&mut self, _engine: &EngineOptions) -> Result<Measurement> {
        let started = Instant::now();
        let timer = Timer::calibrate();
        let mut m = Measurement::default();
        let mut details = serde_json::Map::new();
        let mut text = format!(
            "Timer: {}, TSC {} MHz{}, empty pair {} ticks subtracted, accuracy {:.3}%\n\n{:<14}{:>14}{:>14}{:>14}{:>14}{:>8}\n",
            timer.source.describe(),
            (timer.tsc_hz / 1e6).round(),
            if timer.invariant { " (invariant)" } else { " (not invariant)" },
            timer.overhead,
            timer.accuracy_pct,
            "operation",
            "median cyc",
            "p99 cyc",
            "geomean cyc",
            "median ns",
            "count"
        );
        let mut events = 0u64;
        for op in &self.ops {
            let (def_batch, def_repeats) = op.defaults();
            let batch = if self.batch > 0 {
                self.batch
            } else {
                def_batch
            };
            let repeats = if self.repeats > 0 {
                self.repeats
            } else {
                def_repeats
            };
            let samples = op.measure(&timer, batch, repeats)?;
            events += batch * repeats;
            let s = summarize(&samples);
            let cyc = |t: f64| timer.ticks_to_cycles(t);
            let ns = |t: f64| timer.ticks_to_ns(t);
            m.metrics.push(Metric::new(
                &format!("{}_cycles", op.name()),
                cyc(s.median),
                "cycles",
                false,
            ));
            m.metrics.push(Metric::new(
                &format!("{}_ns", op.name()),
                ns(s.median),
                "ns",
                false,
            ));
            details.insert(
                op.name().to_string(),
                serde_json::json!({
                    "what": op.describe(),
                    "batch": batch,
                    "count": s.count,
                    "median_cycles": cyc(s.median), "p99_cycles": cyc(s.p99),
                    "geomean_cycles": cyc(s.geomean), "min_cycles": cyc(s.min),
                    "median_ns": ns(s.median), "p99_ns": ns(s.p99),
                    "geomean_ns": ns(s.geomean), "min_ns": ns(s.min),
                }),
            );
            text.push_str(&format!(
                "{:<14}{:>14.0}{:>14.0}{:>14.0}{:>14.1}{:>8}\n",
                op.name(),
                cyc(s.median),
                cyc(s.p99),
                cyc(s.geomean),
                ns(s.median),
                s.count
            ));
        }
        details.insert(
            "timer".into(),
            serde_json::json!({
                "source": timer.source.describe(),
                "tsc_invariant": timer.invariant,
                "tsc_hz": timer.tsc_hz,
                "empty_pair_ticks": timer.overhead,
                "accuracy_pct": timer.accuracy_pct,
            }),
        );
        m.duration = started.elapsed();
        m.events = events;
        m.details = serde_json::Value::Object(details);
        m.text = text;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_samples() {
        let s = summarize(&[4.0, 1.0, 2.0, 8.0]);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.p99, 8.0);
        assert!((s.geomean - (64f64).powf(0.25)).abs() < 1e-9);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.count, 4);
        let odd = summarize(&[5.0, 1.0, 3.0]);
        assert_eq!(odd.median, 3.0);
    }
}
