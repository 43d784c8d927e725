//! Every report format, one line each, as an `Exporter` of its kind (a
//! layout of the document or data, as `format` says), and how `--format`
//! finds one.

use crate::analysis::fleet::Fleet;
use crate::analysis::gate::Gate;
use crate::analysis::Analysis;
use crate::core::options::CliError;
use crate::report::csv::CsvExporter;
use crate::report::document::{document, fleet_document};
use crate::report::format::{Data, Layout};
use crate::report::html::HtmlExporter;
use crate::report::json::JsonExporter;
use crate::report::junit::JunitExporter;
use crate::report::markdown::MarkdownExporter;
use crate::report::model::View;
use crate::report::table::TableExporter;

/// A registered format: a layout or data.
#[derive(Clone, Copy)]
pub enum Exporter {
    Layout(&'static dyn Layout),
    Data(&'static dyn Data),
}

impl Exporter {
    /// The `--format` word.
    pub fn name(&self) -> &'static str {
        match self {
            Exporter::Layout(l) => l.name(),
            Exporter::Data(d) => d.name(),
        }
    }

    /// A comparison's report in this format: a layout of its document as
    /// `view` shapes it, or its analysis.
    pub fn render(&self, a: &Analysis, view: View) -> String {
        match self {
            Exporter::Layout(l) => l.render(&document(a, view)),
            Exporter::Data(d) => d.render(a),
        }
    }

    /// A comparison's report with `--fail-on`'s gates: a layout as
    /// `render` gives it; a data format may mark the gated rows (JUnit's
    /// failures).
    pub fn render_gated(&self, a: &Analysis, view: View, gates: &[Gate]) -> String {
        match self {
            Exporter::Layout(l) => l.render(&document(a, view)),
            Exporter::Data(d) => d.render_gated(a, gates),
        }
    }

    /// A fleet report in this format: a layout of the fleet's document, or
    /// the fleet's figures with each host's analysis.
    pub fn render_fleet(&self, f: &Fleet, view: View) -> String {
        match self {
            Exporter::Layout(l) => l.render(&fleet_document(f, view)),
            Exporter::Data(d) => d.render_fleet(f),
        }
    }
}

/// Every format, one line each.
pub static EXPORTERS: &[Exporter] = &[
    Exporter::Layout(&TableExporter),
    Exporter::Layout(&MarkdownExporter),
    Exporter::Data(&CsvExporter),
    Exporter::Data(&JsonExporter),
    HTML,
    Exporter::Data(&JunitExporter),
];

/// The self-contained HTML page, which `compare` always writes.
const HTML: Exporter = Exporter::Layout(&HtmlExporter);

/// "table, markdown, ...", for help and messages.
pub fn format_names() -> String {
    EXPORTERS
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The exporter for `--format NAME` (`md` is markdown too).
pub fn exporter(name: &str) -> Result<&'static Exporter, CliError> {
    let name = if name == "md" { "markdown" } else { name };
    EXPORTERS
        .iter()
        .find(|e| e.name() == name)
        .ok_or_else(|| CliError::InvalidValue {
            name: "format".into(),
            value: name.into(),
            allowed: format!("one of {}", format_names()),
        })
}

/// The self-contained HTML page `compare` always writes.
pub fn html() -> &'static Exporter {
    &HTML
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyze;
    use crate::core::result::Metric;
    use crate::report::tests_support::{comparison_row, fixture, fixture_runs, run};
    use crate::stats::{Outcome, VerdictSettings};
    use crate::store::{ComparisonRow, RunRow};

    fn microops_runs(ops_cycles: usize, rounds: usize) -> Vec<RunRow> {
        let mut runs = Vec::new();
        for r in 0..rounds {
            for (env, v) in [("host", 100.0 + r as f64), ("vm", 50.0 + r as f64)] {
                let mut row = run(env, r, v, 0.0);
                let doc = row.doc.as_mut().unwrap();
                doc.workload = "microops".into();
                doc.metrics = vec![Metric::new("getpid_ns", v, "ns", false)];
                doc.metrics.extend(
                    (0..ops_cycles)
                        .map(|i| Metric::new(&format!("op{i}_cycles"), v * 3.0, "cycles", false)),
                );
                runs.push(row);
            }
        }
        runs
    }

    #[test]
    fn detail_metrics_do_not_dilute_the_headline_verdict() {
        // getpid_ns is the headline; 24 more figures in cycles are detail.
        // With 3 runs a side the headline is decided (a 2× difference),
        // whatever the number of detail metrics.
        let a = analyze(
            &comparison_row(),
            &microops_runs(24, 3),
            &VerdictSettings::default(),
        );
        let m = &a.entries[0].metrics;
        assert!(m[0].headline && m[1..].iter().all(|m| !m.headline));
        let head = m[0].per_env[1].vs_baseline.as_ref().unwrap();
        assert_eq!(head.outcome, Outcome::Faster, "{head:?}");
        // A family of one: Holm changes nothing.
        assert_eq!(head.p_welch, head.p_welch_adjusted);
        // The detail family is corrected on its own, over 24.
        let detail = m[1].per_env[1].vs_baseline.as_ref().unwrap();
        assert!(
            detail.p_welch_adjusted >= detail.p_welch * 2.0,
            "{detail:?}"
        );
        assert!(a.headline_decided());
        // The summary has the one headline row; --detail shows the rest,
        // their verdicts in brackets.
        let t = exporter("table").unwrap();
        let short = t.render(&a, View::default());
        assert!(
            short.contains("getpid_ns") && !short.contains("op3_cycles"),
            "{short}"
        );
        let long = t.render(&a, View { detail: true });
        assert!(
            long.contains("op3_cycles") && long.contains("[faster]"),
            "{long}"
        );
    }

    /// A 3% difference under 3% noise with 3 runs a side: inconclusive.
    fn three_percent_under_three_percent_noise() -> Vec<RunRow> {
        let mut runs = Vec::new();
        for (r, j) in [1.0, 1.03, 0.97].iter().enumerate() {
            runs.push(run("host", r, 100.0 * j, 0.0));
            runs.push(run("vm", r, 97.0 * [1.02, 0.97, 1.01][r], 0.0));
        }
        runs
    }

    #[test]
    fn an_inconclusive_verdict_says_how_many_runs_would_decide_it() {
        let runs = three_percent_under_three_percent_noise();
        let a = analyze(&comparison_row(), &runs, &VerdictSettings::default());
        let v = a.entries[0].metrics[0].per_env[1]
            .vs_baseline
            .as_ref()
            .unwrap();
        assert_eq!(v.outcome, Outcome::Inconclusive);
        let n = v.runs_needed.unwrap().per_side.unwrap();
        assert!(n > 3, "{n}");
        let text = exporter("table").unwrap().render(&a, View::default());
        assert!(text.contains(&format!("inconclusive (~{n} runs")), "{text}");
        assert!(text.contains(&format!("--repeat {n}")), "{text}");
        assert!(!a.headline_decided());
    }

    #[test]
    fn against_an_earlier_baseline_no_runs_per_side_are_promised() {
        // The same rows as above, their baseline borrowed from an earlier
        // comparison (--baseline-from): its runs are fixed, so no "~N runs
        // per side" and no --repeat N; the tally says what decides it.
        let runs = three_percent_under_three_percent_noise();
        let mut cmp = comparison_row();
        cmp.baseline_from = Some(crate::store::BaselineFrom {
            store: "/earlier/results.db".into(),
            comparison: 3,
            started_at: "2026-11-20T00:00:00Z".into(),
            env: "host".into(),
            fingerprint: "cpu x".into(),
            not_comparable: Vec::new(),
        });
        let a = analyze(&cmp, &runs, &VerdictSettings::default());
        let v = a.entries[0].metrics[0].per_env[1]
            .vs_baseline
            .as_ref()
            .unwrap();
        assert_eq!(v.outcome, Outcome::Inconclusive);
        assert!(v.runs_needed.is_none(), "{v:?}");
        let text = exporter("table").unwrap().render(&a, View::default());
        assert!(!text.contains("runs per side would decide"), "{text}");
        assert!(!text.contains("--repeat"), "{text}");
        assert!(
            text.contains("The earlier baseline's runs are fixed"),
            "{text}"
        );
    }

    #[test]
    fn a_wider_margin_turns_a_small_difference_equivalent() {
        let mut runs = Vec::new();
        for r in 0..5 {
            let j = [1.0, 1.005, 0.995, 1.002, 0.998][r];
            runs.push(run("host", r, 100.0 * j, 0.0));
            runs.push(run("vm", r, 96.0 * j, 0.0));
        }
        let outcome = |margin: f64| {
            let s = VerdictSettings {
                margin,
                ..VerdictSettings::default()
            };
            let a = analyze(&comparison_row(), &runs, &s);
            a.entries[0].metrics[0].per_env[1]
                .vs_baseline
                .as_ref()
                .unwrap()
                .outcome
        };
        assert_eq!(outcome(0.02), Outcome::Slower);
        assert_eq!(outcome(0.10), Outcome::Equivalent);
    }

    #[test]
    fn a_tight_difference_inside_the_margin_says_so_in_every_format() {
        // The adaptive design, 12 rounds: vm 2% slower at 0.3% noise. The
        // interval excludes 1 and lies inside ±5%: "slower, within ±5%",
        // counted apart; at 1% margin the same data are plainly slower.
        let mut runs = Vec::new();
        for r in 0..12 {
            let j = [1.0, 1.003, 0.997, 1.002, 0.998, 1.001][r % 6];
            let k = [0.998, 1.002, 1.0, 0.997, 1.003, 1.001][r % 6];
            runs.push(run("host", r, 100.0 * j, 0.0));
            runs.push(run("vm", r, 98.0 * j * k, 0.0));
        }
        let cmp = ComparisonRow {
            adaptive: true,
            ..comparison_row()
        };
        let judged = |margin: f64| {
            let s = VerdictSettings {
                margin,
                ..VerdictSettings::default()
            };
            analyze(&cmp, &runs, &s)
        };
        let a = judged(0.05);
        let v = a.entries[0].metrics[0].per_env[1]
            .vs_baseline
            .as_ref()
            .unwrap();
        assert_eq!(v.outcome, Outcome::Slower, "{v:?}");
        assert!(v.within_margin, "{v:?}");
        assert!(v.ratio.lower > 1.0 / 1.05 && v.ratio.upper < 1.0, "{v:?}");
        let table = exporter("table").unwrap().render(&a, View::default());
        assert!(table.contains("slower, within ±5%"), "{table}");
        assert!(
            table.contains("Headline verdicts: 1 slower within ±5%."),
            "{table}"
        );
        assert!(table.contains("1△"), "{table}");
        let md = exporter("markdown").unwrap().render(&a, View::default());
        assert!(md.contains("slower, within ±5%"), "{md}");
        let html = exporter("html").unwrap().render(&a, View::default());
        assert!(html.contains("slower, within ±5%"), "{html}");
        let json: serde_json::Value =
            serde_json::from_str(&exporter("json").unwrap().render(&a, View::default())).unwrap();
        let cell = &json["entries"][0]["metrics"][0]["per_env"][1]["vs_baseline"];
        assert_eq!(cell["outcome"], "slower", "{cell}");
        assert_eq!(cell["within_margin"], true, "{cell}");
        let counts = &json["overview"][0]["verdicts"];
        assert_eq!(counts["slower"], 0, "{counts}");
        assert_eq!(counts["slower_within_margin"], 1, "{counts}");
        // A 1% margin: the interval reaches past it, plain slower.
        let a = judged(0.01);
        let v = a.entries[0].metrics[0].per_env[1]
            .vs_baseline
            .as_ref()
            .unwrap();
        assert_eq!((v.outcome, v.within_margin), (Outcome::Slower, false));
        let table = exporter("table").unwrap().render(&a, View::default());
        assert!(table.contains("Headline verdicts: 1 slower."), "{table}");
    }

    #[test]
    fn a_guests_error_never_reaches_the_terminal_raw() {
        // Issue 14, item 11: a failed run's error text comes from a guest.
        let mut runs = fixture_runs();
        runs[3].doc = None;
        runs[3].error = Some("boom\x1b]0;owned\x07\x1b[2J\r\u{202e}".into());
        let a = analyze(&comparison_row(), &runs, &VerdictSettings::default());
        for format in ["table", "markdown"] {
            let out = exporter(format).unwrap().render(&a, View::default());
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
        let v = View::default();
        assert!(exporter("table")
            .unwrap()
            .render(&a, v)
            .contains("steal: 1 run (vm 1), median 9.0%, up to 9.0% of the CPUs"));
        assert!(exporter("table")
            .unwrap()
            .render(&a, View { detail: true })
            .contains("vm / cpu / round 3: steal 9.0%"));
        assert!(exporter("table")
            .unwrap()
            .render(&a, v)
            .contains("slower ⚑"));
        assert!(exporter("html")
            .unwrap()
            .render(&a, v)
            .contains("steal 9.0%"));
        assert!(exporter("json")
            .unwrap()
            .render(&a, v)
            .contains("steal 9.0%"));
        assert!(exporter("csv").unwrap().render(&a, v).contains(",true"));
    }
}
