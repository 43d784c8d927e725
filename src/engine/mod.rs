//! The engine every event-based workload runs on: threads released together
//! behind a barrier, `--time`/`--events` limits (whichever comes first), an
//! optional warm-up, open-loop `--rate`, interim `--report-interval` lines,
//! and per-event latency in an HDR histogram with per-thread counters.

mod histogram;
pub mod report;
pub(crate) mod rng;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

pub use histogram::{new_histogram, summarize, Histogram};
pub use rng::FastRng;

use crate::core::fatal::SysbenchFatal;
use crate::core::observer::Observer;
use crate::core::options::{OptKind, OptionSpec, Values};
use crate::core::result::Fairness;
use crate::core::signals;

/// One thread's share of a workload.
pub trait Worker: Send {
    /// Executes one event. Returns `Ok(false)` when this was the thread's
    /// last event (for workloads with a fixed amount of work per thread).
    fn event(&mut self) -> Result<bool>;

    /// Whether events are so short that timing each would cost more than
    /// the event: the engine then times batches and records each batch's
    /// mean per event.
    fn batchable(&self) -> bool {
        false
    }

    /// Called once in the thread when its measured phase ends, and timed as
    /// part of it: completes outstanding asynchronous work, or the final
    /// fsync that sysbench's `--file-fsync-end` asks for.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// The options the engine reads, with sysbench's names and defaults. A
/// workload accepts the ones its definition names (all of them for the
/// event-driven workloads).
pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "threads",
        OptKind::Int {
            min: 0,
            max: 100_000,
        },
        "1",
        "number of threads to use (0: one per CPU this process may use here)",
    ),
    OptionSpec::new(
        "time",
        OptKind::Float { min: 0.0, max: 1e9 },
        "10",
        "limit for total execution time in seconds (0 = no limit)",
    ),
    OptionSpec::new(
        "events",
        OptKind::Int {
            min: 0,
            max: u64::MAX,
        },
        "0",
        "limit for total number of events (0 = no limit)",
    ),
    OptionSpec::new(
        "warmup-time",
        OptKind::Float { min: 0.0, max: 1e9 },
        "0",
        "run events this many seconds with statistics disabled before measuring",
    ),
    OptionSpec::new(
        "rate",
        OptKind::Float {
            min: 0.0,
            max: 1e12,
        },
        "0",
        "average events per second, open loop with Poisson arrivals (0 = unlimited)",
    ),
    OptionSpec::new(
        "report-interval",
        OptKind::Float { min: 0.0, max: 1e9 },
        "0",
        "print interim statistics every N seconds (0 = off)",
    ),
    OptionSpec::new(
        "percentile",
        OptKind::Float {
            min: 0.0,
            max: 100.0,
        },
        "95",
        "latency percentile shown in the summary, 0 to leave it out (all of p50..p99.9 are in --json)",
    ),
    OptionSpec::new(
        "report-checkpoints",
        OptKind::Text,
        "",
        "print the full report at each of these seconds from the start (a comma-separated list), counting afresh after each",
    ),
    OptionSpec::new(
        "forced-shutdown",
        OptKind::Text,
        "off",
        "seconds (N, or N% of --time) to wait after --time for events still running before stopping the process with the report so far (exit 2), or off",
    ),
    OptionSpec::new(
        "thread-stack-size",
        OptKind::Text,
        "",
        "stack size of each worker thread, such as 64K (at least 256K is used; default: the platform's)",
    ),
    OptionSpec::new(
        "debug",
        OptKind::Bool,
        "off",
        "print sysbench's debugging lines: why each thread stopped and per-thread statistics",
    ),
];

/// Every engine option's name: what an event-driven workload accepts.
pub const ALL: &[&str] = &[
    "threads",
    "time",
    "events",
    "warmup-time",
    "rate",
    "report-interval",
    "percentile",
    "report-checkpoints",
    "forced-shutdown",
    "thread-stack-size",
    "debug",
];

/// The engine's limits and modes, from the engine options.
#[derive(Clone)]
pub struct EngineOptions {
    pub threads: usize,
    /// `None`: no time limit.
    pub time: Option<Duration>,
    /// `None`: no event limit. A total across threads.
    pub events: Option<u64>,
    pub warmup: Duration,
    /// Events per second across all threads, open loop; 0 = as fast as possible.
    pub rate: f64,
    pub report_interval: Option<Duration>,
    pub percentile: f64,
    /// `--report-checkpoints`: when the full report is printed, each
    /// counting afresh from the one before (sorted).
    pub checkpoints: Vec<Duration>,
    /// `--forced-shutdown`: how long after `--time` the events still
    /// running may take before the process stops with the report so far.
    pub forced_shutdown: Option<Duration>,
    /// `--thread-stack-size`, at least [`MIN_STACK`]; `None`: the platform's.
    pub stack_size: Option<usize>,
    /// `--debug`: why each thread stopped, and per-thread statistics.
    pub debug: bool,
    /// The workload's part of a checkpoint's or a forced shutdown's report.
    pub section: Option<Section>,
    /// Where interim lines go.
    pub observer: Arc<dyn Observer>,
}

/// The least stack a worker thread gets whatever `--thread-stack-size`
/// says: sysbench's 64K default is enough for its C loop, not for a Lua
/// state or a Rust panic's unwinding.
pub const MIN_STACK: usize = 256 * 1024;

/// `--forced-shutdown` as sysbench 1.0.20 reads it for a run of `time_s`
/// whole seconds: the grace in seconds, None when off (or without a time
/// limit), or Err with the value it refuses. Empty is 5% of the time,
/// `N%` a share of it.
pub fn forced_shutdown(text: &str, time_s: u64) -> Result<Option<u64>, String> {
    if time_s == 0 {
        return Ok(None);
    }
    if text.is_empty() {
        return Ok(Some(time_s / 20));
    }
    if text.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    // strtol: leading blanks, a sign, digits; what follows must be nothing
    // or a per cent sign.
    let body = text.trim_start();
    let (negative, digits_from) = match body.as_bytes().first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let digits: String = body[digits_from..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let rest = &body[digits_from + digits.len()..];
    let n = digits.parse::<i64>().unwrap_or(0);
    // sysbench keeps the value as an unsigned int.
    let n = (if negative { -n } else { n }) as u32 as u64;
    if rest.starts_with('%') {
        return Ok(Some(n * time_s / 100 % (1 << 32)));
    }
    if digits.is_empty() || !rest.is_empty() {
        return Err(text.to_string());
    }
    Ok(Some(n))
}

/// `--report-checkpoints` as sysbench reads it: whole seconds from the
/// start, comma-separated (empty items skipped), at most 256, sorted; or
/// Err with the item it refuses.
pub fn checkpoints(text: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for item in text.split(',').filter(|i| !i.is_empty()) {
        match item.parse::<i64>() {
            Ok(n) if (0..=i64::from(i32::MAX)).contains(&n) => out.push(n as u64),
            _ => return Err(item.to_string()),
        }
    }
    if out.len() > MAX_CHECKPOINTS {
        return Err(format!("more than {MAX_CHECKPOINTS} checkpoints"));
    }
    out.sort_unstable();
    Ok(out)
}

/// sysbench's limit on `--report-checkpoints`.
pub const MAX_CHECKPOINTS: usize = 256;

/// A size as sysbench's option parser reads one (`64K`): leading digits,
/// then K, M, G or T (any case) as powers of 1024; anything else is 0.
pub fn sysbench_size(text: &str) -> u64 {
    let digits: String = text.chars().take_while(|c| c.is_ascii_digit()).collect();
    let n = digits.parse::<u64>().unwrap_or(0);
    match text[digits.len()..].chars().next() {
        None => n,
        Some(c) => match "KMGT".find(c.to_ascii_uppercase()) {
            Some(i) if !digits.is_empty() => n << (10 * (i + 1)),
            _ => 0,
        },
    }
}

impl std::fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineOptions")
            .field("threads", &self.threads)
            .field("time", &self.time)
            .field("events", &self.events)
            .field("warmup", &self.warmup)
            .field("rate", &self.rate)
            .field("report_interval", &self.report_interval)
            .field("percentile", &self.percentile)
            .field("checkpoints", &self.checkpoints)
            .field("forced_shutdown", &self.forced_shutdown)
            .field("stack_size", &self.stack_size)
            .field("debug", &self.debug)
            .finish_non_exhaustive()
    }
}

impl EngineOptions {
    /// The engine options among `v`; those a workload does not accept keep
    /// their defaults.
    pub fn from_values(v: &Values, observer: Arc<dyn Observer>) -> EngineOptions {
        let secs = |x: f64| (x > 0.0).then(|| Duration::from_secs_f64(x));
        let float = |name: &str, default: f64| if v.has(name) { v.float(name) } else { default };
        let int = |name: &str, default: u64| if v.has(name) { v.int(name) } else { default };
        let text = |name: &str| v.has(name).then(|| v.text(name));
        EngineOptions {
            threads: threads(v),
            time: secs(float("time", 10.0)),
            events: Some(int("events", 0)).filter(|&n| n > 0),
            warmup: Duration::from_secs_f64(float("warmup-time", 0.0)),
            rate: float("rate", 0.0),
            report_interval: secs(float("report-interval", 0.0)),
            percentile: float("percentile", 95.0),
            checkpoints: text("report-checkpoints")
                .and_then(|t| checkpoints(t).ok())
                .unwrap_or_default()
                .into_iter()
                .map(Duration::from_secs)
                .collect(),
            forced_shutdown: forced_shutdown(
                text("forced-shutdown").unwrap_or("off"),
                float("time", 10.0) as u64,
            )
            .ok()
            .flatten()
            .map(Duration::from_secs),
            stack_size: text("thread-stack-size")
                .filter(|t| !t.is_empty())
                .map(|t| (sysbench_size(t) as usize).max(MIN_STACK)),
            debug: v.has("debug") && v.flag("debug"),
            section: None,
            observer,
        }
    }
}

/// `--threads` as a count: 0 is one thread per CPU this process may use
/// where it runs (its CPU set, and a cgroup CPU quota rounded up), so one
/// suite entry uses all of each environment's CPUs, as LINPACK does.
pub fn threads(v: &Values) -> usize {
    let given = if v.has("threads") {
        v.int("threads")
    } else {
        1
    };
    match given {
        0 => crate::sys::fingerprint::usable_cpus() as usize,
        n => n as usize,
    }
}

/// What one thread did during the measured phase.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadStats {
    pub events: u64,
    /// Sum of this thread's event latencies.
    pub busy: Duration,
    /// Its shortest and longest event (batched events: a batch's mean).
    pub min: Duration,
    pub max: Duration,
    /// Why it stopped.
    pub stop: Stop,
}

/// Why a thread stopped measuring (sysbench says so under `--debug`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Stop {
    /// `--events` was spent.
    EventLimit,
    /// `--time` was up.
    TimeLimit,
    /// The worker had no more to do, or the run was stopped (an error,
    /// Ctrl-C).
    #[default]
    Done,
}

impl Stop {
    /// sysbench's `--debug` line for it, if it has one.
    pub fn debug_line(self) -> Option<&'static str> {
        match self {
            Stop::EventLimit => Some("Event limit exceeded, exiting..."),
            Stop::TimeLimit => Some("Time limit exceeded, exiting..."),
            Stop::Done => None,
        }
    }
}

/// What the measured phase produced.
pub struct Outcome {
    /// From the start of the measured phase.
    pub duration: Duration,
    /// What the figures cover: the whole phase, or since the last
    /// `--report-checkpoints` report (which counts afresh, as sysbench's).
    pub interval: Duration,
    pub events: u64,
    /// Event latencies in nanoseconds, all threads merged.
    pub histogram: Histogram,
    pub threads: Vec<ThreadStats>,
}

impl Outcome {
    /// Events per second over what the figures cover.
    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 / self.interval.as_secs_f64().max(1e-9)
    }

    pub fn fairness(&self) -> Fairness {
        let events: Vec<f64> = self.threads.iter().map(|t| t.events as f64).collect();
        let times: Vec<f64> = self.threads.iter().map(|t| t.busy.as_secs_f64()).collect();
        let (events_avg, events_stddev) = mean_stddev(&events);
        let (exec_time_avg, exec_time_stddev) = mean_stddev(&times);
        Fairness {
            events_avg,
            events_stddev,
            exec_time_avg,
            exec_time_stddev,
        }
    }
}

fn mean_stddev(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// State shared by the threads of one run.
struct Shared {
    /// Events not yet claimed, when `--events` limits the run.
    remaining: Option<AtomicU64>,
    stop: AtomicBool,
    start: OnceLock<Instant>,
    /// Published per thread after every batch, for interim reports.
    counters: Vec<AtomicU64>,
    interval: Vec<Mutex<Histogram>>,
    /// Per thread since the last checkpoint, for `--report-checkpoints`
    /// and `--forced-shutdown`; empty when neither is asked for.
    since_checkpoint: Vec<Mutex<ThreadTotals>>,
    finished: AtomicUsize,
    error: Mutex<Option<anyhow::Error>>,
}

impl Shared {
    /// Claims up to `want` events; 0 when the event budget is spent.
    fn claim(&self, want: u64) -> u64 {
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
struct ThreadTotals {
    histogram: Histogram,
    stats: ThreadStats,
}

impl ThreadTotals {
    fn new() -> ThreadTotals {
        ThreadTotals {
            histogram: new_histogram(),
            stats: ThreadStats::default(),
        }
    }

    fn record(&mut self, per_event_ns: u64, n: u64, busy: Duration) {
        self.histogram.saturating_record_n(per_event_ns, n);
        self.stats.events += n;
        self.stats.busy += busy;
    }
}

/// Records `n` events of `per_event_ns` each (taking `busy`) where the
/// interim and checkpoint reports read them.
fn publish(shared: &Shared, tid: usize, per_event_ns: u64, n: u64, busy: Duration, interim: bool) {
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

/// Largest batch: bounds how far a batched thread can overrun `--time`.
const MAX_BATCH: u64 = 1 << 16;
/// Batches of tiny events grow until one takes about this long.
const BATCH_TARGET: Duration = Duration::from_micros(50);

/// One interim report's figures (`--report-interval`), for a workload that
/// reports in words of its own (a Lua script's hook).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interim {
    /// Seconds since the start, at this report.
    pub time_total: f64,
    /// Seconds the report covers.
    pub time_interval: f64,
    pub threads: usize,
    /// Events in the interval.
    pub events: u64,
    /// The interval's `--percentile` latency, ms.
    pub latency_pct_ms: f64,
    pub percentile: f64,
}

impl Interim {
    /// sysbench's default interim line:
    /// `[ 2s ] thds: 2 eps: 4312.33 lat (ms,95%): 0.23`.
    pub fn line(&self) -> String {
        format!(
            "[ {}s ] thds: {} eps: {:.2} lat (ms,{}%): {:.2}",
            self.time_total,
            self.threads,
            self.events as f64 / self.time_interval,
            self.percentile,
            self.latency_pct_ms
        )
    }
}

/// Runs `workers` (one per thread) under `opts`, and returns the outcome
/// together with the workers, so a workload can read what they counted.
/// Interim reports go to the observer as sysbench's default line.
pub fn run<W: Worker>(opts: &EngineOptions, workers: Vec<W>) -> Result<(Outcome, Vec<W>)> {
    run_reporting(opts, workers, &mut |i| opts.observer.interim(&i.line()))
}

/// What a workload says of a part of its run in sysbench's full report,
/// before the general statistics ("CPU speed: ..."): at a checkpoint and
/// on a forced shutdown.
pub type Section = Arc<dyn Fn(&Outcome) -> String + Send + Sync>;

/// [`run`], handing every interim report (`--report-interval`) to
/// `report`, on the calling thread.
pub fn run_reporting<W: Worker>(
    opts: &EngineOptions,
    workers: Vec<W>,
    report: &mut dyn FnMut(&Interim),
) -> Result<(Outcome, Vec<W>)> {
    assert_eq!(workers.len(), opts.threads, "one worker per thread");
    if opts.time.is_none() && opts.events.is_none() {
        return Err(anyhow!(
            "--time=0 and --events=0 together would run forever: set one of them"
        ));
    }
    let shared = Arc::new(Shared {
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
    });
    let ready = Gate::new(opts.threads + 1);
    let go = Gate::new(opts.threads + 1);
    let shared = &*shared;
    let (ready, go) = (&ready, &go);

    let joined = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(opts.threads);
        for (tid, worker) in workers.into_iter().enumerate() {
            let spawned = refused_spawn(tid).map_or_else(
                || {
                    let mut builder = std::thread::Builder::new().name(format!("worker-{tid}"));
                    if let Some(size) = opts.stack_size {
                        builder = builder.stack_size(size);
                    }
                    builder.spawn_scoped(scope, move || {
                        thread_main(tid, worker, opts, shared, ready, go)
                    })
                },
                Err,
            );
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The threads already started are waiting at the gate:
                    // release them unrun, and let the scope join them.
                    ready.cancel();
                    go.cancel();
                    return Err(anyhow!(
                        "cannot start worker thread {} of {} ({e}): lower --threads or raise the process or memory limit",
                        tid + 1,
                        opts.threads
                    ));
                }
            }
        }
        ready.wait();
        // Threads warm up between the two gates; the clock starts after.
        go.wait();
        let start = Instant::now();
        let _ = shared.start.set(start);
        let last_checkpoint = watch(opts, shared, start, report);
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        Ok((start, last_checkpoint, results))
    });
    let (start, last_checkpoint, results) = joined?;
    let mut workers = Vec::with_capacity(opts.threads);
    let mut threads = Vec::with_capacity(opts.threads);
    let mut histogram = new_histogram();
    let mut end = start;
    for result in results {
        let (worker, mut stats, hist, finished_at) =
            result.map_err(|_| anyhow!("a worker thread panicked"))?;
        if !hist.is_empty() {
            stats.min = Duration::from_nanos(hist.min());
            stats.max = Duration::from_nanos(hist.max());
        }
        histogram.add(&hist).expect("histograms share bounds");
        workers.push(worker);
        threads.push(stats);
        end = end.max(finished_at);
    }
    if let Some(err) = shared.error.lock().expect("error slot").take() {
        return Err(err);
    }
    signals::check()?;
    if let Some(at) = last_checkpoint {
        // After a checkpoint the report covers what came since, as sysbench's.
        let mut part = take_since_checkpoint(shared, start);
        for (t, whole) in part.threads.iter_mut().zip(&threads) {
            t.stop = whole.stop;
        }
        part.duration = end - start;
        part.interval = end.saturating_duration_since(at);
        return Ok((part, workers));
    }
    let events = threads.iter().map(|t| t.events).sum();
    Ok((
        Outcome {
            duration: end - start,
            interval: end - start,
            events,
            histogram,
            threads,
        },
        workers,
    ))
}

#[cfg(test)]
thread_local! {
    /// Tests make the spawn of this worker fail as a process limit would.
    static REFUSE_SPAWN: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The error the OS would give for spawning worker `tid`, when a test asks.
fn refused_spawn(_tid: usize) -> Option<std::io::Error> {
    #[cfg(test)]
    if REFUSE_SPAWN.with(|r| r.get()) == Some(_tid) {
        return Some(std::io::Error::from_raw_os_error(libc::EAGAIN));
    }
    None
}

/// A one-shot barrier that can be called off: when a worker thread cannot
/// be started, the ones already waiting are released instead of waiting
/// forever.
struct Gate {
    /// (arrived, called off)
    state: Mutex<(usize, bool)>,
    opened: Condvar,
    parties: usize,
}

impl Gate {
    fn new(parties: usize) -> Gate {
        Gate {
            state: Mutex::new((0, false)),
            opened: Condvar::new(),
            parties,
        }
    }

    /// Waits until every party arrived (true) or the gate was called off.
    fn wait(&self) -> bool {
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

    fn cancel(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
        self.opened.notify_all();
    }
}

type ThreadResult<W> = (W, ThreadStats, Histogram, Instant);

fn thread_main<W: Worker>(
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

fn fail(shared: &Shared, error: anyhow::Error) {
    shared.stop.store(true, Ordering::Relaxed);
    let mut slot = shared.error.lock().expect("error slot");
    if slot.is_none() {
        *slot = Some(error);
    }
}

fn should_stop(shared: &Shared, now: Instant, deadline: Option<Instant>) -> bool {
    stopped(shared, now, deadline).is_some()
}

/// Why the thread should stop now, if it should.
fn stopped(shared: &Shared, now: Instant, deadline: Option<Instant>) -> Option<Stop> {
    if deadline.is_some_and(|d| now >= d) {
        Some(Stop::TimeLimit)
    } else if shared.stop.load(Ordering::Relaxed) || signals::interrupted() {
        Some(Stop::Done)
    } else {
        None
    }
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

/// While the workers run: hands `report` the interval's figures every
/// `--report-interval`, prints the full report at each of
/// `--report-checkpoints` (counting afresh after each), and at `--time` plus
/// `--forced-shutdown` stops the process with the report so far, as
/// sysbench does; returns once every thread has finished, with when the
/// last checkpoint report was.
fn watch(
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
fn take_since_checkpoint(shared: &Shared, start: Instant) -> Outcome {
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

#[cfg(test)]
mod tests {
    use super::*;

    struct Sleeper {
        nap: Duration,
        left: Option<u64>,
    }

    impl Worker for Sleeper {
        fn event(&mut self) -> Result<bool> {
            std::thread::sleep(self.nap);
            if let Some(n) = &mut self.left {
                *n -= 1;
                return Ok(*n > 0);
            }
            Ok(true)
        }
    }

    struct Spinner;
    impl Worker for Spinner {
        fn event(&mut self) -> Result<bool> {
            std::hint::black_box(0u64);
            Ok(true)
        }
        fn batchable(&self) -> bool {
            true
        }
    }

    fn opts(threads: usize) -> EngineOptions {
        EngineOptions {
            threads,
            time: Some(Duration::from_millis(300)),
            events: None,
            warmup: Duration::ZERO,
            rate: 0.0,
            report_interval: None,
            percentile: 95.0,
            checkpoints: Vec::new(),
            forced_shutdown: None,
            stack_size: None,
            debug: false,
            section: None,
            observer: Arc::new(crate::core::observer::Silent),
        }
    }

    fn sleepers(n: usize, nap_ms: u64) -> Vec<Sleeper> {
        (0..n)
            .map(|_| Sleeper {
                nap: Duration::from_millis(nap_ms),
                left: None,
            })
            .collect()
    }

    #[test]
    fn a_thread_that_cannot_start_fails_the_run_without_a_hang() {
        // Issue 14, item 3: the engine panicked, and the threads already
        // started waited at the barrier forever.
        REFUSE_SPAWN.with(|r| r.set(Some(3)));
        let started = Instant::now();
        let result = run(&opts(6), sleepers(6, 1));
        REFUSE_SPAWN.with(|r| r.set(None));
        let err = result.err().expect("the run fails").to_string();
        assert!(err.contains("cannot start worker thread 4 of 6"), "{err}");
        assert!(err.contains("--threads"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        // The engine still works afterwards.
        assert!(run(&opts(2), sleepers(2, 1)).is_ok());
    }

    #[test]
    fn event_limit_is_exact_across_threads() {
        let mut o = opts(3);
        o.time = None;
        o.events = Some(25);
        let (out, _) = run(&o, sleepers(3, 1)).unwrap();
        assert_eq!(out.events, 25);
        assert_eq!(out.threads.iter().map(|t| t.events).sum::<u64>(), 25);
        assert_eq!(out.histogram.len(), 25);
    }

    #[test]
    fn time_limit_stops_the_run() {
        let (out, _) = run(&opts(2), sleepers(2, 10)).unwrap();
        let secs = out.duration.as_secs_f64();
        assert!((0.29..0.45).contains(&secs), "{secs}");
        // 2 threads × ~30 events of 10 ms each.
        assert!((40..=62).contains(&out.events), "{}", out.events);
        let lat = out.histogram.value_at_quantile(0.5) as f64 / 1e6;
        assert!((9.5..15.0).contains(&lat), "{lat}");
    }

    #[test]
    fn batching_keeps_counts_exact_and_time_bounded() {
        let mut o = opts(1);
        o.time = Some(Duration::from_millis(200));
        let (out, _) = run(&o, vec![Spinner]).unwrap();
        assert!(
            out.duration < Duration::from_millis(260),
            "{:?}",
            out.duration
        );
        assert_eq!(out.histogram.len(), out.events);
        assert!(out.events > 100_000, "{}", out.events);
    }

    #[test]
    fn workers_with_fixed_work_end_the_run() {
        let mut o = opts(2);
        o.time = Some(Duration::from_secs(5));
        let workers = (0..2)
            .map(|_| Sleeper {
                nap: Duration::from_millis(1),
                left: Some(7),
            })
            .collect();
        let (out, _) = run(&o, workers).unwrap();
        assert_eq!(out.events, 14);
        assert!(out.duration < Duration::from_secs(1));
        let f = out.fairness();
        assert_eq!(f.events_avg, 7.0);
        assert_eq!(f.events_stddev, 0.0);
    }

    #[test]
    fn open_loop_follows_the_rate_and_counts_queueing() {
        let mut o = opts(1);
        o.time = Some(Duration::from_secs(1));
        o.rate = 200.0;
        let (out, _) = run(&o, sleepers(1, 1)).unwrap();
        assert!((140..=260).contains(&out.events), "{}", out.events);
        // Events at 200/s on one thread that each take 10 ms must queue.
        let (slow, _) = run(&o, sleepers(1, 10)).unwrap();
        assert!(slow.events <= 105, "{}", slow.events);
        assert!(slow.histogram.value_at_quantile(0.9) > 50_000_000);
    }

    #[test]
    fn a_rate_the_workers_fall_a_queue_behind_fails_as_sysbench() {
        let mut o = opts(2);
        o.time = Some(Duration::from_secs(5));
        // Events of 1 ms at a billion a second: the queue fills at once.
        o.rate = 1e9;
        let err = run(&o, sleepers(2, 1)).err().expect("refused");
        let fatal = err
            .downcast_ref::<SysbenchFatal>()
            .expect("sysbench's words");
        assert!(
            fatal.fatal.starts_with("The event queue is full."),
            "{fatal:?}"
        );
        assert!(err.to_string().contains("--rate=1000000000"), "{err}");
    }

    #[test]
    fn errors_stop_every_thread() {
        struct Failing;
        impl Worker for Failing {
            fn event(&mut self) -> Result<bool> {
                Err(anyhow!("disk on fire"))
            }
        }
        let err = run(&opts(1), vec![Failing]).err().unwrap();
        assert!(err.to_string().contains("disk on fire"));
    }

    #[test]
    fn general_options_read_as_sysbench_reads_them() {
        assert_eq!(forced_shutdown("off", 10), Ok(None));
        assert_eq!(forced_shutdown("OFF", 10), Ok(None));
        assert_eq!(forced_shutdown("", 20), Ok(Some(1)));
        assert_eq!(forced_shutdown("3", 10), Ok(Some(3)));
        assert_eq!(forced_shutdown("50%", 20), Ok(Some(10)));
        assert_eq!(forced_shutdown("5", 0), Ok(None));
        assert!(forced_shutdown("abc", 10).is_err());
        assert!(forced_shutdown("5x", 10).is_err());
        assert_eq!(checkpoints("3,1,,2"), Ok(vec![1, 2, 3]));
        assert_eq!(checkpoints(""), Ok(vec![]));
        assert_eq!(checkpoints("1,-2"), Err("-2".to_string()));
        assert!(checkpoints(&vec!["1"; 257].join(",")).is_err());
        assert_eq!(sysbench_size("64K"), 64 << 10);
        assert_eq!(sysbench_size("2m"), 2 << 20);
        assert_eq!(sysbench_size("512"), 512);
        assert_eq!(sysbench_size("abc"), 0);
        assert_eq!(sysbench_size("5X"), 0);
    }

    #[test]
    fn checkpoints_report_and_count_afresh() {
        let recording = Arc::new(crate::core::observer::Recording::default());
        let mut o = opts(1);
        o.time = Some(Duration::from_millis(2500));
        o.checkpoints = vec![Duration::from_secs(1), Duration::from_secs(2)];
        o.observer = Arc::clone(&recording) as Arc<dyn Observer>;
        o.section = Some(Arc::new(|part: &Outcome| {
            format!("part of {} events\n", part.events)
        }));
        let (out, _) = run(&o, sleepers(1, 10)).unwrap();
        let reports: Vec<String> = recording
            .events()
            .into_iter()
            .filter_map(|e| match e {
                crate::core::observer::Event::Interim(t) => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(reports.len(), 2, "{reports:?}");
        assert!(reports[0].starts_with("[ 1s ] Checkpoint report:\npart of "));
        assert!(reports[1].starts_with("[ 2s ] Checkpoint report:\n"));
        assert!(reports[0].contains("\nGeneral statistics:\n"));
        // The last report covers the last half second, its rate too.
        assert!((20..=55).contains(&out.events), "{}", out.events);
        assert!(out.duration > Duration::from_secs(2));
        assert!(
            out.interval < Duration::from_millis(700),
            "{:?}",
            out.interval
        );
    }

    #[test]
    fn threads_say_why_they_stopped() {
        let mut o = opts(2);
        o.time = None;
        o.events = Some(10);
        let (out, _) = run(&o, sleepers(2, 1)).unwrap();
        assert!(out.threads.iter().all(|t| t.stop == Stop::EventLimit));
        assert!(out
            .threads
            .iter()
            .all(|t| t.min <= t.max && t.min > Duration::ZERO));
        let (out, _) = run(&opts(1), sleepers(1, 10)).unwrap();
        assert_eq!(out.threads[0].stop, Stop::TimeLimit);
        let mut o = opts(1);
        o.stack_size = Some(MIN_STACK);
        let done = vec![Sleeper {
            nap: Duration::from_millis(1),
            left: Some(3),
        }];
        let (out, _) = run(&o, done).unwrap();
        assert_eq!(out.threads[0].stop, Stop::Done);
    }

    #[test]
    fn refuses_a_run_without_limits() {
        let mut o = opts(1);
        o.time = None;
        let err = run(&o, sleepers(1, 1)).err().unwrap();
        assert!(err.to_string().contains("--time=0"));
    }
}
