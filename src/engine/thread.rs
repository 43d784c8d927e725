//! One worker thread's life: the gates that release every thread together,
//! the warm-up, then the measured phase, closed loop (as fast as possible,
//! tiny events timed in batches) or open loop (Poisson arrivals at `--rate`).

use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::core::fatal::SysbenchFatal;
use crate::core::signals;

use super::shared::{fail, publish, should_stop, stopped, Shared};
use super::{new_histogram, EngineOptions, FastRng, Histogram, Stop, ThreadStats, Worker};

/// Largest batch: bounds how far a batched thread can overrun `--time`.
const MAX_BATCH: u64 = 1 << 16;
/// Batches of tiny events grow until one takes about this long.
const BATCH_TARGET: Duration = Duration::from_micros(50);

/// A one-shot barrier that can be called off: when a worker thread cannot
/// be started, the ones already waiting are released instead of waiting
/// forever.
pub(super) struct Gate {
    /// (arrived, called off)
    state: Mutex<(usize, bool)>,
    opened: Condvar,
    parties: usize,
}

impl Gate {
    pub(super) fn new(parties: usize) -> Gate {
        Gate {
            state: Mutex::new((0, false)),
            opened: Condvar::new(),
            parties,
        }
    }

    /// Waits until every party arrived (true) or the gate was called off.
    pub(super) fn wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0 += 1;
        if s.0 >= self.parties {
            self.opened.notify_all();
        }
        while s.0 < self.parties && !s.1 {
            s = self.opened.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        !s.1
    }

    pub(super) fn cancel(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
        self.opened.notify_all();
    }
}

pub(super) type ThreadResult<W> = (W, ThreadStats, Histogram, Instant);

pub(super) fn thread_main<W: Worker>(
    tid: usize,
    mut worker: W,
    opts: &EngineOptions,
    shared: &Shared,
    ready: &Gate,
    go: &Gate,
) -> ThreadResult<W> {
    let mut hist = new_histogram();
    let mut stats = ThreadStats::default();
    if !ready.wait() {
        return (worker, stats, hist, Instant::now());
    }
    if !opts.warmup.is_zero() {
        let until = Instant::now() + opts.warmup;
        while Instant::now() < until && !signals::interrupted() {
            match worker.event() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    fail(shared, e);
                    break;
                }
            }
        }
    }
    if !go.wait() {
        return (worker, stats, hist, Instant::now());
    }
    let start = *shared.start.wait();
    let deadline = opts.time.map(|t| start + t);
    let result = if opts.rate > 0.0 {
        open_loop(
            tid,
            &mut worker,
            opts,
            shared,
            deadline,
            &mut hist,
            &mut stats,
        )
    } else {
        closed_loop(
            tid,
            &mut worker,
            opts,
            shared,
            deadline,
            &mut hist,
            &mut stats,
        )
    };
    match result.and_then(|stop| worker.finish().map(|()| stop)) {
        Ok(stop) => stats.stop = stop,
        Err(e) => fail(shared, e),
    }
    shared.finished.fetch_add(1, Ordering::Release);
    (worker, stats, hist, Instant::now())
}

/// As fast as possible: each batch is timed with one clock read, the end of
/// one batch being the start of the next.
fn closed_loop<W: Worker>(
    tid: usize,
    worker: &mut W,
    opts: &EngineOptions,
    shared: &Shared,
    deadline: Option<Instant>,
    hist: &mut Histogram,
    stats: &mut ThreadStats,
) -> Result<Stop> {
    let batchable = worker.batchable();
    let record_interval = opts.report_interval.is_some();
    let mut batch: u64 = 1;
    let mut t0 = Instant::now();
    loop {
        if let Some(stop) = stopped(shared, t0, deadline) {
            return Ok(stop);
        }
        let want = shared.claim(batch);
        if want == 0 {
            return Ok(Stop::EventLimit);
        }
        let mut done = 0;
        let mut more = true;
        while done < want {
            let again = worker.event()?;
            done += 1;
            if !again {
                more = false;
                break;
            }
        }
        let t1 = Instant::now();
        if let Some(per_event) = (elapsed_ns(t0, t1)).checked_div(done) {
            let elapsed = t1 - t0;
            let per_event = per_event.max(1);
            hist.saturating_record_n(per_event, done);
            publish(shared, tid, per_event, done, elapsed, record_interval);
            stats.events += done;
            stats.busy += elapsed;
            shared.counters[tid].store(stats.events, Ordering::Relaxed);
            if batchable && elapsed < BATCH_TARGET && batch < MAX_BATCH {
                batch *= 2;
            }
        }
        if let Some(remaining) = &shared.remaining {
            // Unused claims go back for other threads.
            if done < want {
                remaining.fetch_add(want - done, Ordering::Relaxed);
            }
        }
        if !more {
            return Ok(Stop::Done);
        }
        t0 = t1;
    }
}

/// How many arrivals sysbench's event queue holds (its MAX_QUEUE_LEN):
/// workers that many events behind `--rate` cannot serve it, and the run
/// fails as sysbench's does rather than report a rate it did not deliver.
pub const RATE_QUEUE: f64 = 131_072.0;

/// Poisson arrivals at `rate / threads` per thread: the sum over threads is a
/// Poisson stream at `rate`. Latency runs from the scheduled arrival, so time
/// spent queued behind a slow event counts.
fn open_loop<W: Worker>(
    tid: usize,
    worker: &mut W,
    opts: &EngineOptions,
    shared: &Shared,
    deadline: Option<Instant>,
    hist: &mut Histogram,
    stats: &mut ThreadStats,
) -> Result<Stop> {
    let mut rng = FastRng::new(0x5eed_0000 + tid as u64);
    let mean_gap = opts.threads as f64 / opts.rate;
    let mut arrival = Instant::now();
    loop {
        arrival += Duration::from_secs_f64(rng.exponential(mean_gap));
        let now = Instant::now();
        if let Some(stop) = stopped(shared, now.max(arrival), deadline) {
            return Ok(stop);
        }
        // Every thread lags alike, so the arrivals waiting across threads
        // are about this thread's lag at the whole rate.
        if now > arrival && (now - arrival).as_secs_f64() * opts.rate > RATE_QUEUE {
            return Err(SysbenchFatal {
                ours: format!(
                    "the workers fell {RATE_QUEUE} events behind --rate={}: lower --rate or add --threads",
                    opts.rate
                ),
                fatal: "The event queue is full. This means the worker threads are unable to keep up with the specified event generation rate".into(),
                hint: None,
            }
            .into());
        }
        if arrival > now {
            sleep_until(arrival, shared, deadline);
            if let Some(stop) = stopped(shared, Instant::now(), deadline) {
                return Ok(stop);
            }
        }
        if shared.claim(1) == 0 {
            return Ok(Stop::EventLimit);
        }
        let begun = Instant::now();
        let more = worker.event()?;
        let end = Instant::now();
        let latency = (end - arrival).as_nanos() as u64;
        hist.saturating_record(latency.max(1));
        publish(
            shared,
            tid,
            latency.max(1),
            1,
            end - begun,
            opts.report_interval.is_some(),
        );
        stats.events += 1;
        stats.busy += end - begun;
        shared.counters[tid].store(stats.events, Ordering::Relaxed);
        if !more {
            return Ok(Stop::Done);
        }
    }
}

fn elapsed_ns(from: Instant, to: Instant) -> u64 {
    (to - from).as_nanos() as u64
}

fn sleep_until(when: Instant, shared: &Shared, deadline: Option<Instant>) {
    loop {
        let now = Instant::now();
        if now >= when || should_stop(shared, now, deadline) {
            return;
        }
        // Short naps keep the thread responsive to stop and Ctrl-C.
        std::thread::sleep((when - now).min(Duration::from_millis(50)));
    }
}
