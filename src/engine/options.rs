//! The engine's options as sysbench names and reads them (`--threads`,
//! `--time`, `--events`, `--rate`, `--report-checkpoints`,
//! `--forced-shutdown`, ...), and the typed [`EngineOptions`] a run takes.

use std::sync::Arc;
use std::time::Duration;

use crate::core::observer::Observer;
use crate::core::options::{OptKind, OptionSpec, Values};

use super::Outcome;

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

/// What a workload says of a part of its run in sysbench's full report,
/// before the general statistics ("CPU speed: ..."): at a checkpoint and
/// on a forced shutdown.
pub type Section = Arc<dyn Fn(&Outcome) -> String + Send + Sync>;

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
    /// `threads` threads with no limit of time or events (set either with
    /// struct update), no warm-up, rate, report or checkpoint, the 95th
    /// percentile, and no interim lines: a workload run from code (its
    /// tests), not from a command line.
    pub fn silent(threads: usize) -> EngineOptions {
        EngineOptions {
            threads,
            time: None,
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
