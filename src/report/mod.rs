//! Reports of a comparison: one exporter per format behind one trait, all
//! rendering the same `Analysis`.

mod csv;
mod html;
mod json;
mod markdown;
mod table;

pub use crate::analysis::{analyze, Analysis};

use std::fmt::Write as _;

use crate::core::options::CliError;
use crate::stats::{Comparison, Verdict};

/// Renders an analysis in one format.
pub trait Exporter: Sync {
    /// The `--format` word.
    fn name(&self) -> &'static str;
    fn render(&self, a: &Analysis) -> String;
    /// File extension for `--out` defaults.
    fn extension(&self) -> &'static str;
}

/// Every format, one line each.
pub static EXPORTERS: &[&dyn Exporter] = &[
    &table::TableExporter,
    &markdown::MarkdownExporter,
    &csv::CsvExporter,
    &json::JsonExporter,
    &html::HtmlExporter,
];

/// "table, markdown, ...", for help and messages.
pub fn format_names() -> String {
    EXPORTERS
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The exporter for `--format NAME` (`md` is markdown too).
pub fn exporter(name: &str) -> Result<&'static dyn Exporter, CliError> {
    let name = if name == "md" { "markdown" } else { name };
    EXPORTERS
        .iter()
        .copied()
        .find(|e| e.name() == name)
        .ok_or_else(|| CliError::InvalidValue {
            name: "format".into(),
            value: name.into(),
            allowed: format!("one of {}", format_names()),
        })
}

/// The self-contained HTML page `compare` always writes.
pub fn html() -> &'static dyn Exporter {
    &html::HtmlExporter
}

/// A number with as many decimals as its size warrants.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// "−12.3% overhead" / "1.52× slower" / "baseline".
fn effect(c: &Comparison) -> String {
    match (c.overhead_pct, c.times_slower) {
        (Some(o), _) => format!("{o:+.1}% overhead"),
        (_, Some(t)) => format!("{t:.2}× slower"),
        _ => String::new(),
    }
}

/// The cells every report table shows against the baseline: the ratio with
/// its interval, the effect, Holm's p and the verdict. The baseline's own
/// row reads "baseline" with the rest empty.
pub struct Cells {
    pub ratio: String,
    pub effect: String,
    pub p: String,
    pub verdict: &'static str,
}

pub fn comparison_cells(c: Option<&Comparison>) -> Cells {
    match c {
        Some(c) => Cells {
            ratio: format!(
                "{:.3} [{:.3}, {:.3}]",
                c.ratio.point, c.ratio.lower, c.ratio.upper
            ),
            effect: effect(c),
            p: format!("{:.4}", c.p_adjusted),
            verdict: verdict_symbol(c.verdict),
        },
        None => Cells {
            ratio: "baseline".into(),
            effect: String::new(),
            p: String::new(),
            verdict: "",
        },
    }
}

/// A run named in a report's flagged or failed list, with the reason.
pub fn run_lines<'a>(
    runs: impl IntoIterator<Item = (&'a str, &'a str, usize, &'a str)>,
    escape: impl Fn(&str) -> String,
    prefix: &str,
) -> String {
    let mut out = String::new();
    for (env, label, round, why) in runs {
        let _ = writeln!(
            out,
            "{prefix}{} / {} / round {}: {}",
            escape(env),
            escape(label),
            round + 1,
            escape(why)
        );
    }
    out
}

fn verdict_symbol(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::NoSignificantDifference => "n.s.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::result::{EnvInfo, Metric, Monitor, ResultDoc, SCHEMA};
    use crate::store::{ComparisonRow, RunRow};

    fn run(env: &str, round: usize, v: f64, steal: f64) -> RunRow {
        RunRow {
            env: env.into(),
            entry: 0,
            label: "cpu".into(),
            round,
            doc: Some(ResultDoc {
                schema: SCHEMA.into(),
                workload: "cpu".into(),
                params: serde_json::json!({"threads": 1})
                    .as_object()
                    .unwrap()
                    .clone(),
                env: EnvInfo {
                    name: env.into(),
                    ..EnvInfo::default()
                },
                started_at: String::new(),
                duration_s: 1.0,
                events: 1,
                metrics: vec![Metric::new("events_per_sec", v, "events/s", true)],
                latency_ms: None,
                fairness: None,
                monitor: Monitor {
                    cpu_steal_pct: steal,
                    ..Monitor::default()
                },
                details: serde_json::Value::Null,
            }),
            error: None,
        }
    }

    fn fixture() -> Analysis {
        analyze(&comparison_row(), &fixture_runs())
    }

    fn comparison_row() -> ComparisonRow {
        ComparisonRow {
            id: 7,
            started_at: "2026-11-22T00:00:00Z".into(),
            suite: "t".into(),
            baseline: "host".into(),
            envs: vec!["host".into(), "vm".into()],
            args: vec![],
            finished: true,
        }
    }

    fn fixture_runs() -> Vec<RunRow> {
        let mut runs = Vec::new();
        for (r, (h, v)) in [
            (100.0, 50.0),
            (101.0, 51.0),
            (99.0, 49.0),
            (100.0, 50.0),
            (100.0, 50.0),
        ]
        .iter()
        .enumerate()
        {
            runs.push(run("host", r, *h, 0.0));
            runs.push(run("vm", r, *v, if r == 2 { 9.0 } else { 0.0 }));
        }
        runs
    }

    #[test]
    fn an_entry_with_too_many_metrics_for_its_runs_is_called_out() {
        assert!(fixture().underpowered().is_empty());
        // 24 metrics, 5 runs a side, the VM always slower: the best a rank
        // test can give is 2/252, and Holm multiplies it by 24.
        let mut runs = Vec::new();
        for r in 0..5 {
            for (env, v) in [("host", 100.0 + r as f64), ("vm", 50.0 + r as f64)] {
                let mut row = run(env, r, v, 0.0);
                row.doc.as_mut().unwrap().metrics = (0..24)
                    .map(|i| Metric::new(&format!("op{i}_ns"), v, "ns", false))
                    .collect();
                runs.push(row);
            }
        }
        let a = analyze(&comparison_row(), &runs);
        let u = a.underpowered();
        assert_eq!(u.len(), 1, "{u:?}");
        assert_eq!((u[0].metrics, u[0].n, u[0].needed), (24, 5, 7));
        assert!(
            (u[0].best_p - 24.0 * 2.0 / 252.0).abs() < 1e-9,
            "{}",
            u[0].best_p
        );
        for f in ["table", "markdown", "html", "json"].map(|n| exporter(n).unwrap()) {
            assert!(f.render(&a).contains("--repeat 7 or more"));
        }
        // With 7 runs a side the same separation is significant.
        let mut more = runs.clone();
        for r in 5..7 {
            for (env, v) in [("host", 100.0 + r as f64), ("vm", 50.0 + r as f64)] {
                let mut row = run(env, r, v, 0.0);
                row.doc.as_mut().unwrap().metrics = (0..24)
                    .map(|i| Metric::new(&format!("op{i}_ns"), v, "ns", false))
                    .collect();
                more.push(row);
            }
        }
        let a = analyze(&comparison_row(), &more);
        assert!(a.underpowered().is_empty());
        assert_eq!(
            a.entries[0].metrics[0].per_env[1]
                .vs_baseline
                .as_ref()
                .unwrap()
                .verdict,
            Verdict::Faster
        );
    }

    #[test]
    fn csv_is_pinned() {
        let csv = exporter("csv").unwrap().render(&fixture());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[1],
            "7,0,cpu,cpu,events_per_sec,events/s,true,host,5,100,100,0.7071067811865476,0.007071067811865475,99,101,99.12215172153726,100.87784827846274,,,,,,,,baseline,false"
        );
        assert!(lines[2].starts_with("7,0,cpu,cpu,events_per_sec,events/s,true,vm,5,50,50,"));
        assert!(lines[2].contains(",0.5,"), "{}", lines[2]);
        // Tied values: the normal approximation with tie correction.
        assert!(lines[2].ends_with(",slower,true"), "{}", lines[2]);
        let p: f64 = lines[2].split(',').nth(22).unwrap().parse().unwrap();
        assert!((p - 0.0102).abs() < 0.0005, "{p}");
    }

    #[test]
    fn markdown_is_pinned() {
        let md = exporter("markdown").unwrap().render(&fixture());
        assert!(md.starts_with("# virtperf comparison #7\n"));
        assert!(md.contains("| events_per_sec (events/s) | host | 5 | 100.0 | [99.1, 100.9] | 0.7% | baseline |  |  |  |"), "{md}");
        assert!(
            md.contains("| events_per_sec (events/s) | vm | 5 | 50.0 |"),
            "{md}"
        );
        assert!(
            md.contains("| 0.500 [0.494, 0.506] | +50.0% overhead | 0.0102 | slower |"),
            "{md}"
        );
        assert!(
            md.contains("## Flagged runs\n\n- vm / cpu / round 3: steal 9.0%"),
            "{md}"
        );
    }

    #[test]
    fn a_guests_error_never_reaches_the_terminal_raw() {
        // Issue 14, item 11: a failed run's error text comes from a guest.
        let mut runs = fixture_runs();
        runs[3].doc = None;
        runs[3].error = Some("boom\x1b]0;owned\x07\x1b[2J\r\u{202e}".into());
        let a = analyze(&comparison_row(), &runs);
        for format in ["table", "markdown"] {
            let out = exporter(format).unwrap().render(&a);
            assert!(out.contains("boom"), "{format}: {out}");
            assert!(
                !out.contains(['\x1b', '\x07', '\r', '\u{202e}']),
                "{format}: {out:?}"
            );
        }
    }

    #[test]
    fn every_format_flags_noisy_runs() {
        let a = fixture();
        assert!(exporter("table").unwrap().render(&a).contains("steal 9.0%"));
        assert!(exporter("html").unwrap().render(&a).contains("steal 9.0%"));
        assert!(exporter("json").unwrap().render(&a).contains("steal 9.0%"));
        assert!(exporter("csv").unwrap().render(&a).contains(",true"));
    }
}
