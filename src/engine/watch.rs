//! The calling thread while the workers run: interim lines every
//! `--report-interval`, sysbench's full report at each of
//! `--report-checkpoints`, and the stop at `--time` plus `--forced-shutdown`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::shared::{Shared, ThreadTotals};
use super::{new_histogram, report, summarize, EngineOptions, Interim, Outcome};

/// While the workers run: hands `report` the interval's figures every
/// `--report-interval`, prints the full report at each of
/// `--report-checkpoints` (counting afresh after each), and at `--time` plus
/// `--forced-shutdown` stops the process with the report so far, as
/// sysbench does; returns once every thread has finished, with when the
/// last checkpoint report was.
pub(super) fn watch(
    opts: &EngineOptions,
    shared: &Shared,
    start: Instant,
    report: &mut dyn FnMut(&Interim),
) -> Option<Instant> {
    let mut last_checkpoint = None;
    let mut last_events = 0u64;
    let mut tick = 1u32;
    // sysbench skips a checkpoint already past when its thread starts.
    let mut checkpoints = opts.checkpoints.iter().filter(|c| !c.is_zero()).peekable();
    let forced_at = opts
        .forced_shutdown
        .zip(opts.time)
        .map(|(grace, time)| start + time + grace);
    let all_done = || shared.finished.load(Ordering::Acquire) >= opts.threads;
    loop {
        let interim_due = opts.report_interval.map(|every| start + every * tick);
        let checkpoint_due = checkpoints.peek().map(|c| start + **c);
        let Some(due) = [interim_due, checkpoint_due, forced_at]
            .into_iter()
            .flatten()
            .min()
        else {
            return last_checkpoint;
        };
        while Instant::now() < due {
            if all_done() {
                return last_checkpoint;
            }
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(20)));
        }
        if all_done() {
            return last_checkpoint;
        }
        if interim_due == Some(due) {
            let every = opts.report_interval.expect("interim due");
            last_events = report_interim(opts, shared, every, tick, last_events, report);
            tick += 1;
        }
        if checkpoint_due == Some(due) {
            let at = *checkpoints.next().expect("checkpoint due");
            let mut part = take_since_checkpoint(shared, start);
            let now = Instant::now();
            part.interval = now - last_checkpoint.unwrap_or(start);
            last_checkpoint = Some(now);
            opts.observer.interim(&format!(
                "[ {}s ] Checkpoint report:\n{}",
                at.as_secs(),
                full_report(opts, &part)
            ));
        }
        if forced_at == Some(due) {
            let mut part = take_since_checkpoint(shared, start);
            part.interval = Instant::now() - last_checkpoint.unwrap_or(start);
            let unfinished =
                opts.threads - shared.finished.load(Ordering::Acquire).min(opts.threads);
            let mut text =
                String::from("FATAL: The --max-time limit has expired, forcing shutdown...\n");
            if unfinished > 0 {
                text.push_str(&format!(
                    "\nNumber of unfinished transactions on forced shutdown: {unfinished}\n"
                ));
            }
            text.push_str(&full_report(opts, &part));
            opts.observer.interim(&text);
            std::process::exit(2);
        }
    }
}

/// What the threads did since the last checkpoint, counted afresh from
/// here; its duration is the whole run's so far, as sysbench's total time.
pub(super) fn take_since_checkpoint(shared: &Shared, start: Instant) -> Outcome {
    let mut histogram = new_histogram();
    let mut threads = Vec::with_capacity(shared.since_checkpoint.len());
    for t in &shared.since_checkpoint {
        let part = std::mem::replace(
            &mut *t.lock().expect("checkpoint totals"),
            ThreadTotals::new(),
        );
        let mut stats = part.stats;
        if !part.histogram.is_empty() {
            stats.min = Duration::from_nanos(part.histogram.min());
            stats.max = Duration::from_nanos(part.histogram.max());
        }
        histogram.add(&part.histogram).expect("same bounds");
        threads.push(stats);
    }
    Outcome {
        duration: start.elapsed(),
        interval: start.elapsed(),
        events: threads.iter().map(|t| t.events).sum(),
        histogram,
        threads,
    }
}

/// sysbench's full report of `part`: the workload's section, then the
/// general statistics, latency and fairness, and a blank line.
fn full_report(opts: &EngineOptions, part: &Outcome) -> String {
    let section = opts.section.as_ref().map(|s| s(part)).unwrap_or_default();
    let latency = summarize(&part.histogram, opts.percentile);
    format!(
        "{section}{}",
        report::general(
            part.duration.as_secs_f64(),
            part.events,
            Some(&latency),
            Some(&part.fairness()),
            opts.percentile,
        )
    )
}

/// Hands `report` the figures of interval `tick` (of `every`); returns the
/// events counted so far.
fn report_interim(
    opts: &EngineOptions,
    shared: &Shared,
    every: Duration,
    tick: u32,
    last_events: u64,
    report: &mut dyn FnMut(&Interim),
) -> u64 {
    let events: u64 = shared
        .counters
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum();
    let mut merged = new_histogram();
    for h in &shared.interval {
        let mut h = h.lock().expect("interval histogram");
        merged.add(&*h).expect("same bounds");
        h.reset();
    }
    let lat = if merged.is_empty() || opts.percentile == 0.0 {
        0.0
    } else {
        merged.value_at_quantile(opts.percentile / 100.0) as f64 / 1e6
    };
    report(&Interim {
        time_total: (every * tick).as_secs_f64(),
        time_interval: every.as_secs_f64(),
        threads: opts.threads,
        events: events - last_events,
        latency_pct_ms: lat,
        percentile: opts.percentile,
    });
    events
}
