//! The state the threads of one run share: the event budget, the stop
//! flag, the per-thread counters and histograms the interim and checkpoint
//! reports read, and the first error.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::core::signals;

use super::{new_histogram, EngineOptions, Histogram, Stop, ThreadStats};

/// State shared by the threads of one run.
pub(super) struct Shared {
    /// Events not yet claimed, when `--events` limits the run.
    pub(super) remaining: Option<AtomicU64>,
    pub(super) stop: AtomicBool,
    pub(super) start: OnceLock<Instant>,
    /// Published per thread after every batch, for interim reports.
    pub(super) counters: Vec<AtomicU64>,
    pub(super) interval: Vec<Mutex<Histogram>>,
    /// Per thread since the last checkpoint, for `--report-checkpoints`
    /// and `--forced-shutdown`; empty when neither is asked for.
    pub(super) since_checkpoint: Vec<Mutex<ThreadTotals>>,
    pub(super) finished: AtomicUsize,
    pub(super) error: Mutex<Option<anyhow::Error>>,
}

impl Shared {
    /// The state of a run under `opts`, before any thread starts.
    pub(super) fn new(opts: &EngineOptions) -> Shared {
        Shared {
            remaining: opts.events.map(AtomicU64::new),
            stop: AtomicBool::new(false),
            start: OnceLock::new(),
            counters: (0..opts.threads).map(|_| AtomicU64::new(0)).collect(),
            interval: (0..opts.threads)
                .map(|_| Mutex::new(new_histogram()))
                .collect(),
            since_checkpoint: if opts.checkpoints.is_empty() && opts.forced_shutdown.is_none() {
                Vec::new()
            } else {
                (0..opts.threads)
                    .map(|_| Mutex::new(ThreadTotals::new()))
                    .collect()
            },
            finished: AtomicUsize::new(0),
            error: Mutex::new(None),
        }
    }

    /// Claims up to `want` events; 0 when the event budget is spent.
    pub(super) fn claim(&self, want: u64) -> u64 {
        let Some(remaining) = &self.remaining else {
            return want;
        };
        let mut got = 0;
        let _ = remaining.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
            got = r.min(want);
            Some(r - got)
        });
        got
    }
}

/// One thread's events since the last checkpoint.
pub(super) struct ThreadTotals {
    pub(super) histogram: Histogram,
    pub(super) stats: ThreadStats,
}

impl ThreadTotals {
    pub(super) fn new() -> ThreadTotals {
        ThreadTotals {
            histogram: new_histogram(),
            stats: ThreadStats::default(),
        }
    }

    pub(super) fn record(&mut self, per_event_ns: u64, n: u64, busy: Duration) {
        self.histogram.saturating_record_n(per_event_ns, n);
        self.stats.events += n;
        self.stats.busy += busy;
    }
}

/// Records `n` events of `per_event_ns` each (taking `busy`) where the
/// interim and checkpoint reports read them.
pub(super) fn publish(
    shared: &Shared,
    tid: usize,
    per_event_ns: u64,
    n: u64,
    busy: Duration,
    interim: bool,
) {
    if interim {
        shared.interval[tid]
            .lock()
            .expect("interval histogram")
            .saturating_record_n(per_event_ns, n);
    }
    if let Some(t) = shared.since_checkpoint.get(tid) {
        t.lock()
            .expect("checkpoint totals")
            .record(per_event_ns, n, busy);
    }
}

pub(super) fn fail(shared: &Shared, error: anyhow::Error) {
    shared.stop.store(true, Ordering::Relaxed);
    let mut slot = shared.error.lock().expect("error slot");
    if slot.is_none() {
        *slot = Some(error);
    }
}

pub(super) fn should_stop(shared: &Shared, now: Instant, deadline: Option<Instant>) -> bool {
    stopped(shared, now, deadline).is_some()
}

/// Why the thread should stop now, if it should.
pub(super) fn stopped(shared: &Shared, now: Instant, deadline: Option<Instant>) -> Option<Stop> {
    if deadline.is_some_and(|d| now >= d) {
        Some(Stop::TimeLimit)
    } else if shared.stop.load(Ordering::Relaxed) || signals::interrupted() {
        Some(Stop::Done)
    } else {
        None
    }
}
