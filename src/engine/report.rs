//! sysbench's cumulative report in words: the general statistics, latency
//! and fairness blocks that end a run's text, and that `--report-checkpoints`
//! and `--forced-shutdown` print part-way through.

use crate::core::result::{Fairness, Latency};

/// "General statistics", "Latency (ms)" and "Threads fairness" as sysbench
/// 1.0.20 prints them, each after a blank line; `percentile` 0 is
/// sysbench's "percentile stats: disabled".
pub fn general(
    duration_s: f64,
    events: u64,
    latency: Option<&Latency>,
    fairness: Option<&Fairness>,
    percentile: f64,
) -> String {
    let mut out = format!(
        "\nGeneral statistics:\n    total time:                          {duration_s:.4}s\n    total number of events:              {events}\n"
    );
    if let Some(l) = latency {
        let (p, pv) = match l.selected {
            Some((p, v)) => (p, Some(v)),
            None => (percentile, l.p95),
        };
        // A run with no event has no percentile (null in its document);
        // sysbench's text says 0.00 for it, and so does this one.
        let pv = pv.or((events == 0).then_some(0.0));
        let pct = if p == 0.0 {
            "         percentile stats:               disabled\n".to_string()
        } else {
            format!(
                "         {}th percentile: {:>27}\n",
                trim_float(p),
                figure(pv)
            )
        };
        out.push_str(&format!(
            "\nLatency (ms):\n         min: {:>39.2}\n         avg: {:>39.2}\n         max: {:>39.2}\n{pct}         sum: {:>39}\n",
            l.min,
            l.avg,
            l.max,
            figure(l.sum)
        ));
    }
    if let Some(f) = fairness {
        out.push_str(&format!(
            "\nThreads fairness:\n    events (avg/stddev):           {:.4}/{:.2}\n    execution time (avg/stddev):   {:.4}/{:.2}\n",
            f.events_avg, f.events_stddev, f.exec_time_avg, f.exec_time_stddev
        ));
    }
    out
}

/// sysbench's `--debug` lines after the report: each thread's shortest,
/// mean and longest event and its events, then its busy time.
pub fn per_thread(threads: &[super::ThreadStats]) -> String {
    let mut out = String::from("DEBUG: Verbose per-thread statistics:\n\n");
    for (i, t) in threads.iter().enumerate() {
        let avg = if t.events > 0 {
            t.busy.as_secs_f64() / t.events as f64
        } else {
            0.0
        };
        out.push_str(&format!(
            "DEBUG:     thread #{i:>3}: min: {:.4}s  avg: {avg:.4}s  max: {:.4}s  events: {}\n\
             DEBUG:                  total time taken by event execution: {:.4}s\n",
            t.min.as_secs_f64(),
            t.max.as_secs_f64(),
            t.events,
            t.busy.as_secs_f64()
        ));
    }
    out.push('\n');
    out
}

/// A figure to two decimals, or "unknown" where the source gave none (an
/// imported log's missing percentile), never 0.
fn figure(x: Option<f64>) -> String {
    x.map_or_else(|| "unknown".into(), |x| format!("{x:.2}"))
}

fn trim_float(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_zero_reads_disabled() {
        let l = Latency {
            selected: Some((0.0, 0.1)),
            ..Latency::default()
        };
        let text = general(1.0, 3, Some(&l), None, 0.0);
        assert!(text.contains("         percentile stats:               disabled\n"));
        assert!(!text.contains("th percentile"));
        let l = Latency {
            selected: Some((99.0, 0.1)),
            ..Latency::default()
        };
        assert!(general(1.0, 3, Some(&l), None, 99.0).contains("         99th percentile: "));
    }

    #[test]
    fn a_run_with_no_event_says_zero_as_sysbench_does() {
        // The histogram of a run with no event gives no percentile (null in
        // its document); sysbench's text prints 0.00 for it.
        let l =
            crate::engine::histogram::summarize(&crate::engine::histogram::new_histogram(), 95.0);
        assert_eq!(l.p95, None);
        let text = general(1.0, 0, Some(&l), None, 95.0);
        assert!(
            text.contains("95th percentile:                        0.00\n"),
            "{text}"
        );
        assert!(!text.contains("unknown"), "{text}");
    }

    #[test]
    fn a_figure_not_given_reads_unknown_not_zero() {
        let l = Latency {
            min: 1.0,
            avg: 2.0,
            max: 3.0,
            ..Latency::default()
        };
        let text = general(1.0, 3, Some(&l), None, 95.0);
        assert!(
            text.contains("95th percentile:                     unknown\n"),
            "{text}"
        );
        assert!(
            text.contains("sum:                                 unknown\n"),
            "{text}"
        );
        assert!(!text.contains("0.00"), "{text}");
        let l = Latency {
            p95: Some(2.5),
            sum: Some(6.0),
            ..l
        };
        let text = general(1.0, 3, Some(&l), None, 95.0);
        assert!(
            text.contains("95th percentile:                        2.50\n"),
            "{text}"
        );
        assert!(
            text.contains("sum:                                    6.00\n"),
            "{text}"
        );
    }
}
