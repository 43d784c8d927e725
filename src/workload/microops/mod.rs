//! `microops`: what rdtscbench's micro-operation figures meant to measure,
//! timed honestly (no CPUID in the timed region), plus the trap cost itself,
//! on a host that may flip between a fast and a slow state while it runs.
//!
//! **Passes.** The selected operations are measured in passes: every
//! operation in turn, a slice of timed batches each, again and again until
//! the common `--time` is spent (a pass lasts about [`PASS_SECONDS`]; each
//! operation gets the same wall time per pass: its batches per pass come from
//! a short untimed warm-up, then from what its slices actually cost, untimed
//! setup included; a batch grows only if a long `--time` would otherwise
//! keep more than a million samples). A slow stretch of the host then falls on all
//! operations alike instead of on one operation's whole sample. A *pass
//! result* is the median of one operation's batches in one pass, so one
//! interrupt does not move it. With `--repeats=N` (or `--time=0`) the run is
//! a fixed count instead: N batches per operation, spread evenly over up to
//! [`MAX_COUNT_PASSES`] passes. Defaults: `--time=10` gives about 100 passes,
//! and the whole default run (all operations, with the timer's calibration
//! and the warm-ups) lasts about 10.5 s.
//!
//! **Figures.** Per operation: the median and p99 of all its batches (ticks
//! per operation), and the modes of its pass results ([`modes`]): when the
//! host ran in two states, e.g. "415 cyc 60% / 600 cyc 40%".
//!
//! **Headline.** `<op>_ns` and `<op>_cycles` are the 5th percentile of the
//! operation's batches: what it costs when the host does not slow it. The
//! noise of a shared VM is one-sided, a delay added to some batches, and it
//! comes as a mixture of states whose shares change from run to run (on a
//! 2-vCPU EPYC VM, getpid took 138 ns in the fast state and about 190 in the
//! slow one, on the host and in Docker alike, with the slow share anywhere
//! between 0 and 80% of a run). A mean of the pass results (this headline
//! until 2026-11) moves with the shares, which belong to the moment, not to
//! the environment: in 20 runs each of host, Docker and Podman side by side,
//! the paired noise of that mean was 7.4% (root mean square over the 28
//! rows; getpid 9.7%, page_fault 7.4%), of the 5th percentile 3.7% (getpid
//! 0.7%, page_fault 0.6%, pipe_echo 8.4% against 13.7%), while the minimum
//! was at the mercy of one lucky batch (pipe_echo 23%). So does Chen and
//! Revels' "Robust benchmarking in noisy environments" (2016) argue for
//! microbenchmarks, where every source of noise only adds time. Under the
//! 5th percentile the effects stayed where the mean put them (Docker's
//! getpid +25% against +28%, open_close 19× both). `mean_ns` keeps the
//! 10%-trimmed mean of the pass results, the mean cost over this run's
//! mixture, and the modes beside it say whether there was one; `compare`
//! can flag an operation whose `multimodal` is true as it flags a noisy run.
//!
//! **Result document.** `details.<op>` for each measured operation:
//! ```text
//! { "what": str, "batch": int, "count": int (batches), "passes": int (pass results),
//!   "headline_cycles", "median_cycles", "p99_cycles", "geomean_cycles", "min_cycles",
//!   "mean_cycles": float,
//!   "headline_ns", "median_ns", "p99_ns", "geomean_ns", "min_ns", "mean_ns": float,
//!   "multimodal": bool,
//!   "modes": [ {"cycles": float, "ns": float, "share": float 0..1}, ... ] }
//! ```
//! `modes` is ordered lowest first, its shares sum to 1, and it has one entry
//! when `multimodal` is false (also when fewer than [`modes::MIN_VALUES`]
//! passes were run, too few to tell). Besides the operations, `details.timer`
//! describes the clock and `details.passes` the schedule: `{"count": int,
//! "schedule": "time" | "count", "span_s": float, "order": [op names]}`.

pub mod fresh;
mod modes;
mod ops;
pub mod timer;

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::core::options::{CliError, OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::engine::EngineOptions;
use crate::stats::{median, sorted_median};
use crate::workload::{Category, Measurement, MetricDef, Needs, Workload, WorkloadDef};
use ops::{Op, Scratch};
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
        "timed batches per operation, a fixed count instead of passes over --time (0 = spread over --time)",
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
    // --time spreads the passes over the run; nothing else of the engine applies.
    engine: &["time"],
    needs: Needs::NONE,
    metrics: METRICS,
    area: crate::workload::Area::MicroOps,
    sysbench: None,
    build,
};

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(MicroopsWorkload::new(values)?))
}

/// Every metric `microops` can produce. The headline of each operation is
/// its `_ns` figure (the `_cycles` one is the same measurement in another
/// unit); seed 001's micro-operations feed its "micro-operations" category.
pub const METRICS: &[MetricDef] = &[
    ns("getpid_ns", true),
    cycles("getpid_cycles"),
    ns("sysconf_ns", true),
    cycles("sysconf_cycles"),
    ns("gettimeofday_ns", true),
    cycles("gettimeofday_cycles"),
    ns("malloc_1m_ns", true),
    cycles("malloc_1m_cycles"),
    ns("malloc_1g_ns", true),
    cycles("malloc_1g_cycles"),
    ns("pipe_echo_ns", true),
    cycles("pipe_echo_cycles"),
    ns("simplemath_ns", true),
    cycles("simplemath_cycles"),
    ns("cpuid_ns", false),
    cycles("cpuid_cycles"),
    ns("clock_gettime_ns", false),
    cycles("clock_gettime_cycles"),
    ns("page_fault_ns", false),
    cycles("page_fault_cycles"),
    ns("mmap_munmap_ns", false),
    cycles("mmap_munmap_cycles"),
    ns("ctx_switch_ns", false),
    cycles("ctx_switch_cycles"),
    ns("futex_wake_ns", false),
    cycles("futex_wake_cycles"),
    ns("open_close_ns", false),
    cycles("open_close_cycles"),
];

const fn ns(name: &'static str, seed_001: bool) -> MetricDef {
    let category = if seed_001 {
        Some(Category::MicroOps)
    } else {
        None
    };
    MetricDef::new(name, "ns", false, true, category)
}

const fn cycles(name: &'static str) -> MetricDef {
    MetricDef::new(name, "cycles", false, false, None)
}

/// About how long one pass over all operations lasts under `--time`: short
/// beside the host's slow stretches (a tenth of a second to tens of seconds),
/// so each pass result mostly sees one state.
pub const PASS_SECONDS: f64 = 0.1;
const MIN_TIME_PASSES: u64 = 20;
const MAX_TIME_PASSES: u64 = 10_000;
/// Under a fixed `--repeats`, the most passes the batches are spread over.
pub const MAX_COUNT_PASSES: u64 = 100;
/// An operation's batch grows (when `--batch` is not given) so that a long
/// `--time` keeps at most this many samples of it in memory.
const MAX_SAMPLES: f64 = 1_000_000.0;
/// Untimed warm-up per operation, which also measures what a batch costs.
const WARMUP: Duration = Duration::from_millis(5);
/// An operation's headline, ticks per operation: the [`HEADLINE_QUANTILE`]
/// of its batches (`low`, from [`summarize`]; see the module doc), but never below what the timer resolves, one tick over a
/// batch. Under QEMU's TCG an emulated CPUID cost less than the timed empty
/// pair varies, every sample netted to 0, and a headline of 0 made the
/// comparison's row "not comparable" (there is no ratio to 0).
fn headline_ticks(low: f64, batch: u64) -> f64 {
    low.max(1.0 / batch.max(1) as f64)
}

/// The share of an operation's batches at or below its headline.
const HEADLINE_QUANTILE: f64 = 0.05;

/// Share of the pass results trimmed from each end for `mean_ns`.
const TRIM: f64 = 0.10;

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

/// When the passes end.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Schedule {
    /// Until this much time is spent (at least one pass).
    Time(Duration),
    /// Exactly this many passes.
    Passes(u64),
}

/// One operation's part of the run.
struct Series {
    op: Op,
    batch: u64,
    /// Under `Schedule::Time`: batches per pass. Under `Passes`: in total.
    batches: u64,
    /// Under `Schedule::Time`: the wall time each pass should give it.
    slice: f64,
    /// Wall time spent in its slices so far, untimed parts included.
    wall: f64,
    samples: Vec<f64>,
    pass_results: Vec<f64>,
}

/// How many of `total` batches fall in pass `k` of `passes`, spread so that
/// every pass gets the same number, give or take one, and the sum is exact.
pub fn batches_in_pass(total: u64, passes: u64, k: u64) -> u64 {
    let at = |k: u64| (k as u128 * total as u128 / passes as u128) as u64;
    at(k + 1) - at(k)
}

/// Summary of one operation's samples (ticks per operation).
#[derive(Debug, Clone, PartialEq)]
pub struct OpSummary {
    /// The [`HEADLINE_QUANTILE`] of the samples.
    pub low: f64,
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
    let p99 = s[((n as f64 * 0.99).ceil() as usize).clamp(1, n) - 1];
    // Zero samples (an op faster than the timer's jitter) are floored at one
    // tick so the geometric mean stays defined.
    let geomean = (s.iter().map(|x| x.max(1.0).ln()).sum::<f64>() / n as f64).exp();
    OpSummary {
        low: sorted_quantile(&s, HEADLINE_QUANTILE),
        median: sorted_median(&s),
        p99,
        geomean,
        min: s[0],
        count: n,
    }
}

/// The `q` quantile of the ascending `sorted` (the lower of two
/// neighbours, a value the timer gave; the lowest at q = 0); 0 for none.
pub fn sorted_quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n => sorted[((n as f64 * q).floor() as usize).min(n - 1)],
    }
}

/// The mean of `values` without the lowest and highest `trim` share.
pub fn trimmed_mean(values: &[f64], trim: f64) -> f64 {
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    let cut = (s.len() as f64 * trim).floor() as usize;
    let kept = &s[cut..s.len() - cut];
    kept.iter().sum::<f64>() / kept.len() as f64
}

/// "415 cyc 60% / 600 cyc 40%".
fn describe_modes(modes: &[(f64, f64)]) -> String {
    modes
        .iter()
        .map(|(cycles, share)| format!("{cycles:.0} cyc {:.0}%", share * 100.0))
        .collect::<Vec<_>>()
        .join(" / ")
}

impl MicroopsWorkload {
    /// The series and the schedule: a fixed count, or batches per pass
    /// sized from an untimed warm-up so each operation gets the same wall
    /// time in every pass.
    fn plan(
        &self,
        timer: &Timer,
        scratch: &mut Scratch,
        time: Option<Duration>,
    ) -> Result<(Vec<Series>, Schedule)> {
        let series = |op: Op, batch: u64, batches: u64, slice: f64| Series {
            op,
            batch,
            batches,
            slice,
            wall: 0.0,
            samples: Vec::new(),
            pass_results: Vec::new(),
        };
        let batch_of = |op: Op| {
            if self.batch > 0 {
                self.batch
            } else {
                op.defaults().0
            }
        };
        let time = match time {
            Some(t) if self.repeats == 0 => t,
            _ => {
                let list: Vec<Series> = self
                    .ops
                    .iter()
                    .map(|&op| {
                        let repeats = if self.repeats > 0 {
                            self.repeats
                        } else {
                            op.defaults().1
                        };
                        series(op, batch_of(op), repeats, 0.0)
                    })
                    .collect();
                let most = list.iter().map(|s| s.batches).max().unwrap_or(1);
                return Ok((list, Schedule::Passes(most.clamp(1, MAX_COUNT_PASSES))));
            }
        };
        let passes = ((time.as_secs_f64() / PASS_SECONDS).round() as u64)
            .clamp(MIN_TIME_PASSES, MAX_TIME_PASSES);
        let share = time.as_secs_f64() / self.ops.len() as f64;
        let slice = share / passes as f64;
        let mut list = Vec::new();
        let mut warmup = Vec::new();
        for &op in &self.ops {
            let mut batch = batch_of(op);
            let started = Instant::now();
            let mut done = 0u64;
            while done < 2 || started.elapsed() < WARMUP {
                warmup.clear();
                op.measure_into(timer, batch, 1, scratch, &mut warmup)?;
                done += 1;
            }
            let mut cost = started.elapsed().as_secs_f64() / done as f64;
            if self.batch == 0 && share / cost > MAX_SAMPLES {
                let grow = (share / cost / MAX_SAMPLES).ceil() as u64;
                batch *= grow;
                cost *= grow as f64;
            }
            let per_pass = ((slice / cost).round() as u64).max(1);
            list.push(series(op, batch, per_pass, slice));
        }
        Ok((list, Schedule::Time(time)))
    }
}

impl Workload for MicroopsWorkload {
    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        if fresh::wanted() {
            let args = fresh::args(&self.ops, self.repeats, self.batch, engine.time);
            // The run's own time, its calibration and warm-ups, and room
            // for a slow guest; a fixed count is bounded by the hour.
            let limit = engine.time.map_or(Duration::from_secs(3600), |t| {
                t * 3 + Duration::from_secs(60)
            });
            return fresh::run(&args, limit);
        }
        // main pins them too; a library caller may not have.
        crate::sys::malloc::pin_thresholds();
        let started = Instant::now();
        let timer = Timer::calibrate();
        let mut scratch = Scratch::default();
        let (mut series, schedule) = self.plan(&timer, &mut scratch, engine.time)?;
        let measuring = Instant::now();
        let passes = measure(&mut series, schedule, &timer, &mut scratch, measuring)?;
        let span = measuring.elapsed();
        drop(scratch);

        let mut m = Measurement::default();
        let mut details = serde_json::Map::new();
        let mut text = format!(
            "Timer: {}, TSC {} MHz{}, empty pair {} ticks subtracted, accuracy {:.3}%\n\
             Passes: {passes} over {:.1} s, every operation in turn\n\n\
             {:<14}{:>10}{:>10}{:>10}{:>10}{:>8}{:>9}  {}\n",
            timer.source.describe(),
            (timer.tsc_hz / 1e6).round(),
            if timer.invariant {
                " (invariant)"
            } else {
                " (not invariant)"
            },
            timer.overhead,
            timer.accuracy_pct,
            span.as_secs_f64(),
            "operation",
            "cycles*",
            "median",
            "p99",
            "ns*",
            "passes",
            "batches",
            "modes of the pass results"
        );
        let mut events = 0u64;
        let mut any_multimodal = false;
        for s in &series {
            let (n, multimodal) = report_series(s, &timer, &mut m, &mut details, &mut text);
            events += n;
            any_multimodal |= multimodal;
        }
        text.push_str(&format!(
            "\ncycles per operation; * headline: the {:.0}th percentile of the batches, the cost when the host does \
             not slow the operation (<op>_cycles, <op>_ns); median and p99 are over all batches\n",
            HEADLINE_QUANTILE * 100.0
        ));
        if any_multimodal {
            text.push_str(
                "Some operations had two or more faces: the host ran in different states \
                 during the run; read ratios between environments with that in mind.\n",
            );
        }
        details.insert(
            "passes".into(),
            serde_json::json!({
                "count": passes,
                "schedule": match schedule {
                    Schedule::Time(_) => "time",
                    Schedule::Passes(_) => "count",
                },
                "span_s": span.as_secs_f64(),
                "order": series.iter().map(|s| s.op.name()).collect::<Vec<_>>(),
            }),
        );
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
        if fresh::in_child() {
            details.insert(fresh::TEXT_KEY.into(), text.clone().into());
        }
        m.details = serde_json::Value::Object(details);
        m.text = text;
        Ok(m)
    }
}

/// Runs the passes of `schedule` over `series`, every operation in turn,
/// from `measuring` on; the number of passes.
fn measure(
    series: &mut [Series],
    schedule: Schedule,
    timer: &Timer,
    scratch: &mut Scratch,
    measuring: Instant,
) -> Result<u64> {
    let mut passes = 0u64;
    loop {
        for s in series.iter_mut() {
            let n = match schedule {
                Schedule::Time(_) => s.batches,
                Schedule::Passes(p) => batches_in_pass(s.batches, p, passes),
            };
            if n == 0 {
                continue;
            }
            let from = s.samples.len();
            let t = Instant::now();
            s.op.measure_into(timer, s.batch, n, scratch, &mut s.samples)?;
            s.wall += t.elapsed().as_secs_f64();
            s.pass_results.push(median(&s.samples[from..]));
            if let Schedule::Time(_) = schedule {
                // The warm-up's estimate of a batch's cost can be far
                // off (malloc's thresholds move, the host changes
                // state): steer the next slice by what the run saw.
                let cost = s.wall / s.samples.len() as f64;
                s.batches = ((s.slice / cost).round() as u64).max(1);
            }
        }
        passes += 1;
        let done = match schedule {
            Schedule::Passes(p) => passes >= p,
            // Stop where the next pass would end further past the
            // deadline than this one ends before it.
            Schedule::Time(t) => {
                let spent = measuring.elapsed();
                spent + spent / passes as u32 / 2 >= t
            }
        };
        if done {
            break;
        }
    }
    Ok(passes)
}

/// One operation's metrics, details and line of the report; the events it
/// ran and whether its pass results had more than one mode.
fn report_series(
    s: &Series,
    timer: &Timer,
    m: &mut Measurement,
    details: &mut serde_json::Map<String, serde_json::Value>,
    text: &mut String,
) -> (u64, bool) {
    let sum = summarize(&s.samples);
    let headline = headline_ticks(sum.low, s.batch);
    let mean = trimmed_mean(&s.pass_results, TRIM);
    let found = modes::modes(&s.pass_results);
    let multimodal = modes::is_multimodal(&found);
    let cyc = |t: f64| timer.ticks_to_cycles(t);
    let ns = |t: f64| timer.ticks_to_ns(t);
    let name = s.op.name();
    m.metrics.push(Metric::new(
        &format!("{name}_cycles"),
        cyc(headline),
        "cycles",
        false,
    ));
    m.metrics.push(Metric::new(
        &format!("{name}_ns"),
        ns(headline),
        "ns",
        false,
    ));
    let mode_cycles: Vec<(f64, f64)> = found.iter().map(|x| (cyc(x.value), x.share)).collect();
    details.insert(
        name.to_string(),
        serde_json::json!({
            "what": s.op.describe(),
            "batch": s.batch,
            "count": sum.count,
            "passes": s.pass_results.len(),
            "headline_cycles": cyc(headline),
            "median_cycles": cyc(sum.median), "p99_cycles": cyc(sum.p99),
            "geomean_cycles": cyc(sum.geomean), "min_cycles": cyc(sum.min),
            "mean_cycles": cyc(mean),
            "headline_ns": ns(headline),
            "median_ns": ns(sum.median), "p99_ns": ns(sum.p99),
            "geomean_ns": ns(sum.geomean), "min_ns": ns(sum.min),
            "mean_ns": ns(mean),
            "multimodal": multimodal,
            "modes": found.iter().map(|x| serde_json::json!({
                "cycles": cyc(x.value), "ns": ns(x.value), "share": x.share,
            })).collect::<Vec<_>>(),
        }),
    );
    text.push_str(&format!(
        "{:<14}{:>10.0}{:>10.0}{:>10.0}{:>10.1}{:>8}{:>9}  {}\n",
        name,
        cyc(headline),
        cyc(sum.median),
        cyc(sum.p99),
        ns(headline),
        s.pass_results.len(),
        sum.count,
        if multimodal {
            describe_modes(&mode_cycles)
        } else {
            "one".to_string()
        }
    ));
    (s.batch * sum.count as u64, multimodal)
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

    #[test]
    fn batches_spread_evenly_and_exactly_over_passes() {
        for (total, passes) in [(20, 20), (1000, 100), (7, 3), (3, 10), (1, 1)] {
            let per: Vec<u64> = (0..passes)
                .map(|k| batches_in_pass(total, passes, k))
                .collect();
            assert_eq!(per.iter().sum::<u64>(), total, "{total}/{passes}");
            let (lo, hi) = (per.iter().min().unwrap(), per.iter().max().unwrap());
            assert!(hi - lo <= 1, "{total}/{passes}: {per:?}");
        }
    }

    #[test]
    fn the_headline_is_the_fast_state_whatever_its_share() {
        // Batches in a fast (415) and a slow (600) state: whether the host
        // spent 60% or 10% of the run fast, the headline is the fast cost;
        // the median jumps between the modes and the trimmed mean follows
        // the shares.
        let mix = |fast: usize| {
            let mut v = vec![415.0; fast];
            v.extend(vec![600.0; 100 - fast]);
            v
        };
        let (a, b) = (mix(60), mix(10));
        assert_eq!(headline_ticks(summarize(&a).low, 100), 415.0);
        assert_eq!(headline_ticks(summarize(&b).low, 100), 415.0);
        assert_eq!((median(&a), median(&b)), (415.0, 600.0));
        let (ta, tb) = (trimmed_mean(&a, TRIM), trimmed_mean(&b, TRIM));
        assert!(tb - ta > 0.4 * (600.0 - 415.0), "{ta} {tb}");
        // One lucky batch does not move it, as it moves the minimum.
        let mut lucky = mix(50);
        lucky[0] = 200.0;
        assert_eq!(headline_ticks(summarize(&lucky).low, 100), 415.0);
        // Below 5% the fast state is too rare to be the run's figure.
        assert_eq!(headline_ticks(summarize(&mix(3)).low, 100), 600.0);
        assert_eq!(sorted_quantile(&[], 0.05), 0.0);
        assert_eq!(sorted_quantile(&[1.0, 2.0, 3.0], 0.0), 1.0);
    }

    #[test]
    fn the_metric_table_covers_every_operation_once() {
        for op in ops::ALL {
            let ns = METRICS
                .iter()
                .find(|d| d.name == format!("{}_ns", op.name()))
                .unwrap();
            let cycles = METRICS
                .iter()
                .find(|d| d.name == format!("{}_cycles", op.name()))
                .unwrap();
            assert!(ns.headline && !cycles.headline, "{}", op.name());
            assert_eq!((ns.unit, cycles.unit), ("ns", "cycles"));
            assert!(!ns.higher_is_better && !cycles.higher_is_better);
            assert_eq!(cycles.category, None);
        }
        assert_eq!(METRICS.len(), 2 * ops::ALL.len());
        let seed: Vec<&str> = METRICS
            .iter()
            .filter(|d| d.category == Some(Category::MicroOps))
            .map(|d| d.name)
            .collect();
        assert_eq!(
            seed,
            [
                "getpid_ns",
                "sysconf_ns",
                "gettimeofday_ns",
                "malloc_1m_ns",
                "malloc_1g_ns",
                "pipe_echo_ns",
                "simplemath_ns"
            ]
        );
    }

    #[test]
    fn a_headline_below_the_timers_resolution_is_the_resolution_not_zero() {
        assert_eq!(headline_ticks(summarize(&[0.0; 8]).low, 20), 0.05);
        assert_eq!(headline_ticks(summarize(&[0.0, 0.0, 0.0]).low, 0), 1.0);
        assert_eq!(headline_ticks(summarize(&[30.0; 8]).low, 20), 30.0);
    }

    #[test]
    fn a_short_timed_run_passes_over_every_operation() {
        let mut w = MicroopsWorkload {
            ops: vec![Op::Getpid, Op::Simplemath, Op::OpenClose],
            repeats: 0,
            batch: 0,
        };
        let engine = EngineOptions {
            time: Some(Duration::from_millis(400)),
            ..EngineOptions::silent(1)
        };
        let m = w.run(&engine).unwrap();
        let passes = m.details["passes"]["count"].as_u64().unwrap();
        // A loaded machine and a debug build make slices long; passes are
        // still more than one, and the run ends near its time.
        assert!(passes >= 2, "{passes}");
        for op in ["getpid", "simplemath", "open_close"] {
            let d = &m.details[op];
            assert_eq!(d["passes"].as_u64(), Some(passes), "{op}");
            assert!(d["count"].as_u64().unwrap() >= passes, "{op}");
            let shares: f64 = d["modes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["share"].as_f64().unwrap())
                .sum();
            assert!((shares - 1.0).abs() < 1e-9, "{op}");
            assert!(d["headline_ns"].as_f64().unwrap() > 0.0, "{op}");
        }
        let span = m.details["passes"]["span_s"].as_f64().unwrap();
        assert!((0.3..5.0).contains(&span), "{span}");
        assert_eq!(m.metrics.len(), 6);
    }
}
