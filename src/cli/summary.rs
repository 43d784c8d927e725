//! The text summary of one run, laid out as sysbench prints it so that
//! existing scripts that grep its output keep working.

use crate::core::result::ResultDoc;
use crate::engine::Histogram;

/// A latency histogram in logarithmic buckets (about 5% wide), as sysbench's
/// `--histogram` prints it after "Threads started!", before the results:
/// only buckets with events, bars rounded as sysbench rounds them, and its
/// closing line of one space.
pub fn render_histogram(h: &Histogram) -> String {
    let mut out = String::from(
        "Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n",
    );
    if h.is_empty() {
        out.push_str(" \n");
        return out;
    }
    let start = h.min().max(1);
    let rows: Vec<(f64, u64)> = h
        .iter_log(start, 1.05)
        .filter(|v| v.count_since_last_iteration() > 0)
        .map(|v| {
            (
                v.value_iterated_to() as f64 / 1e6,
                v.count_since_last_iteration(),
            )
        })
        .collect();
    let most = rows.iter().map(|r| r.1).max().unwrap_or(1);
    for (ms, count) in rows {
        let stars = (count as f64 * 40.0 / most as f64 + 0.5).floor() as usize;
        out.push_str(&format!("{ms:>12.3} |{:<40} {count}\n", "*".repeat(stars)));
    }
    out.push_str(" \n");
    out
}

/// What sysbench says of a run's options before it starts (its
/// print_run_mode), read from the job's values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMode {
    pub threads: u64,
    pub rate: f64,
    pub report_interval: f64,
    pub checkpoints: Vec<u64>,
    pub debug: bool,
    /// The run checks what it reads (`--validate`).
    pub validate: bool,
    /// `--rand-seed`; 0 is the current time.
    pub rand_seed: u64,
    /// `--time` plus `--forced-shutdown`, in whole seconds, when forced.
    pub forced_at: Option<u64>,
}

impl RunMode {
    /// From a job's values: the options it has, defaults for the rest.
    pub fn of(v: &crate::core::options::Values) -> RunMode {
        let float = |n: &str| if v.has(n) { v.float(n) } else { 0.0 };
        let flag = |n: &str| v.has(n) && v.flag(n);
        let text = |n: &str| if v.has(n) { v.text(n) } else { "" };
        let time = if v.has("time") {
            v.float("time") as u64
        } else {
            10
        };
        let forced = if v.has("forced-shutdown") {
            crate::engine::forced_shutdown(v.text("forced-shutdown"), time)
                .ok()
                .flatten()
        } else {
            None
        };
        RunMode {
            threads: (crate::engine::threads(v) as u64).max(1),
            rate: float("rate"),
            report_interval: float("report-interval"),
            checkpoints: crate::engine::checkpoints(text("report-checkpoints")).unwrap_or_default(),
            debug: flag("debug"),
            validate: flag("validate"),
            rand_seed: if v.has("rand-seed") {
                v.int("rand-seed")
            } else {
                0
            },
            forced_at: forced.map(|grace| time + grace),
        }
    }
}

/// sysbench's lines after the banner, before the workload's own header.
pub fn preamble(m: &RunMode) -> String {
    let number = |x: f64| {
        if x.fract() == 0.0 {
            format!("{x:.0}")
        } else {
            format!("{x}")
        }
    };
    let mut out = format!(
        "Running the test with following options:\nNumber of threads: {}\n",
        m.threads
    );
    if m.rate > 0.0 {
        out.push_str(&format!(
            "Target transaction rate: {}/sec\n",
            number(m.rate)
        ));
    }
    if m.report_interval > 0.0 {
        out.push_str(&format!(
            "Report intermediate results every {} second(s)\n",
            number(m.report_interval)
        ));
    }
    if !m.checkpoints.is_empty() {
        let list: Vec<String> = m.checkpoints.iter().map(|c| c.to_string()).collect();
        out.push_str(&format!(
            "Report checkpoint(s) at {} seconds\n",
            list.join(", ")
        ));
    }
    if m.debug {
        out.push_str("Debug mode enabled.\n\n");
    }
    if m.validate {
        out.push_str("Validation checks: on.\n\n");
    }
    if m.rand_seed != 0 {
        out.push_str(&format!(
            "Initializing random number generator from seed ({}).\n\n",
            m.rand_seed
        ));
    } else {
        out.push_str("Initializing random number generator from current time\n\n");
    }
    if let Some(at) = m.forced_at {
        out.push_str(&format!("Forcing shutdown in {at} seconds\n"));
    }
    out.push('\n');
    out
}

/// sysbench's `--debug` lines as each worker thread starts.
pub fn workers_started(threads: u64) -> String {
    (0..threads)
        .map(|i| {
            format!(
                "DEBUG: Worker thread (#{i}) started\nDEBUG: Worker thread (#{i}) initialized\n"
            )
        })
        .collect()
}

/// sysbench's `--debug` lines once the workers are done: why each stopped,
/// then "Done.".
pub fn workers_done(threads: &[crate::engine::ThreadStats]) -> String {
    let mut out: String = threads
        .iter()
        .filter_map(|t| t.stop.debug_line())
        .map(|l| format!("{l}\n"))
        .collect();
    out.push_str("Done.\n\n");
    out
}

/// The workload's header, then sysbench's lines as the workers start.
pub fn started(header: &str) -> String {
    format!("{header}Initializing worker threads...\n\nThreads started!\n\n")
}

/// Everything after the run: the workload's section, the general
/// statistics, latency and fairness, as sysbench 1.0 prints them.
pub fn results(doc: &ResultDoc, workload_text: &str, percentile: f64) -> String {
    let mut out = String::from(workload_text);
    out.push_str(&crate::engine::report::general(
        doc.duration_s,
        doc.events,
        doc.latency_ms.as_ref(),
        doc.fairness.as_ref(),
        percentile,
    ));
    out.push('\n');
    out
}

/// A warning for a run that something else competed with (steal, other
/// processes' load), for standard error: sysbench's text stays its own.
pub fn noise_warning(doc: &ResultDoc) -> Option<String> {
    let m = &doc.monitor;
    (m.cpu_steal_pct > 5.0 || m.foreign_busy_pct > 10.0).then(|| {
        format!(
            "Warning: noisy measurement: steal {:.1}%, other load {:.1}% of the CPUs",
            m.cpu_steal_pct, m.foreign_busy_pct
        )
    })
}

/// A whole run's text at once (a result that came back from an
/// environment): the banner line, the preamble of the run's options, the
/// workload's header, and the results.
pub fn render(
    doc: &ResultDoc,
    banner: &str,
    (mode, header): (&RunMode, &str),
    workload_text: &str,
    percentile: f64,
) -> String {
    format!(
        "{banner}\n\n{}{}{}",
        preamble(mode),
        started(header),
        results(doc, workload_text, percentile)
    )
}
