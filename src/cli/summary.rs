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

/// sysbench's lines after the banner, before the workload's own header
/// (`validate`: the run checks what it reads, `--validate`).
pub fn preamble(threads: u64, validate: bool) -> String {
    let checks = if validate {
        "Validation checks: on.\n\n"
    } else {
        ""
    };
    format!(
        "Running the test with following options:\nNumber of threads: {threads}\n{checks}Initializing random number generator from current time\n\n\n"
    )
}

/// The workload's header, then sysbench's lines as the workers start.
pub fn started(header: &str) -> String {
    format!("{header}Initializing worker threads...\n\nThreads started!\n\n")
}

/// Everything after the run: the workload's section, the general
/// statistics, latency and fairness, as sysbench 1.0 prints them.
pub fn results(doc: &ResultDoc, workload_text: &str, percentile: f64) -> String {
    let mut out = String::from(workload_text);
    out.push_str(&format!(
        "\nGeneral statistics:\n    total time:                          {:.4}s\n    total number of events:              {}\n",
        doc.duration_s, doc.events
    ));
    if let Some(l) = &doc.latency_ms {
        let (p, pv) = l.selected.unwrap_or((percentile, l.p95));
        out.push_str(&format!(
            "\nLatency (ms):\n         min: {:>39.2}\n         avg: {:>39.2}\n         max: {:>39.2}\n         {}th percentile: {:>27.2}\n         sum: {:>39.2}\n",
            l.min, l.avg, l.max, trim_float(p), pv, l.sum
        ));
    }
    if let Some(f) = &doc.fairness {
        out.push_str(&format!(
            "\nThreads fairness:\n    events (avg/stddev):           {:.4}/{:.2}\n    execution time (avg/stddev):   {:.4}/{:.2}\n",
            f.events_avg, f.events_stddev, f.exec_time_avg, f.exec_time_stddev
        ));
    }
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
/// environment): the banner line, the preamble, and the results.
pub fn render(doc: &ResultDoc, banner: &str, workload_text: &str, percentile: f64) -> String {
    let threads = doc
        .params
        .get("threads")
        .and_then(|v| v.as_u64())
        .unwrap_or(1);
    format!(
        "{banner}\n\n{}{}{}",
        preamble(threads, false),
        started(""),
        results(doc, workload_text, percentile)
    )
}

fn trim_float(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}
