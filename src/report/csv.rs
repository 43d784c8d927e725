//! CSV for spreadsheets: one row per entry, metric and environment, with
//! both tests' p-values and the verdict (the headline column says which
//! family it belongs to).

use std::fmt::Write as _;

use crate::analysis::fleet::{Fleet, Measure};
use crate::analysis::Analysis;
use crate::report::format::Data;

pub struct CsvExporter;

/// One text cell. Text a spreadsheet would run as a formula (starting with
/// `=`, `+`, `-`, `@`, a tab or a carriage return, and not a number) gets a
/// leading `'`, so it stays text.
fn field(s: &str) -> String {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']) && s.parse::<f64>().is_err();
    let s = if formula {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

impl Data for CsvExporter {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn render(&self, a: &Analysis) -> String {
        let mut out = format!("{HEADER}\n");
        for row in rows(a) {
            let _ = writeln!(out, "{}", row.line);
        }
        out
    }

    /// One table: every host's rows as `render` gives them, with the host
    /// first and, on headline rows, the fleet figures of their entry,
    /// metric and environment kind after.
    fn render_fleet(&self, f: &Fleet) -> String {
        let mut out = format!(
            "host,{HEADER},kind,fleet_measure,fleet_value,fleet_outlier,fleet_hosts,fleet_median,fleet_min,fleet_max,fleet_q1,fleet_q3\n"
        );
        for h in &f.hosts {
            let a = &h.analysis;
            for row in rows(a) {
                let kind = a
                    .fingerprints
                    .get(&row.env)
                    .map(|f| f.kind.clone())
                    .unwrap_or_default();
                let fleet = f
                    .rows
                    .iter()
                    .find(|r| r.label == row.label && r.metric == row.metric && r.kind == kind);
                let point = fleet.and_then(|r| {
                    r.points
                        .iter()
                        .find(|p| p.host == h.host && p.env == row.env)
                        .map(|p| (r, p))
                });
                let tail = match point {
                    Some((r, p)) => format!(
                        "{},{},{},{},{},{},{},{},{}",
                        match r.measure {
                            Measure::OverheadPct => "overhead_pct",
                            Measure::TimesSlower => "times_slower",
                        },
                        p.value,
                        p.outlier,
                        r.n,
                        r.median,
                        r.min,
                        r.max,
                        r.q1,
                        r.q3
                    ),
                    None => ",,,,,,,,".into(),
                };
                let _ = writeln!(
                    out,
                    "{},{},{},{tail}",
                    field(&h.host),
                    row.line,
                    field(&kind)
                );
            }
        }
        out
    }
}

const HEADER: &str = "comparison,entry,label,workload,metric,unit,higher_is_better,headline,environment,n,mean,median,stddev,cv,min,max,ci_lower,ci_upper,ratio,ratio_lower,ratio_upper,overhead_pct,times_slower,p_welch,p_welch_holm,p_rank,p_rank_holm,p_equivalence_holm,tests_disagree,verdict,runs_needed,flagged";

/// One CSV row with what it is about.
struct Row {
    label: String,
    metric: String,
    env: String,
    line: String,
}

/// One row per entry, metric and environment with runs.
fn rows(a: &Analysis) -> Vec<Row> {
    let mut out = Vec::new();
    for e in &a.entries {
        for m in &e.metrics {
            for s in &m.per_env {
                let Some(sum) = &s.summary else { continue };
                let c = s.vs_baseline.as_ref();
                let verdict = match (c, &s.not_comparable) {
                    (Some(c), _) => c.outcome.label(),
                    (None, Some(_)) => "not comparable",
                    (None, None) => "baseline",
                };
                let runs_needed = c
                    .and_then(|c| c.runs_needed)
                    .map(|n| match n.per_side {
                        Some(k) => k.to_string(),
                        None => format!(">{}", crate::stats::MAX_RUNS_PER_SIDE),
                    })
                    .unwrap_or_default();
                let line = format!(
                        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                        a.id,
                        e.index,
                        field(&e.label),
                        field(&e.workload),
                        field(&m.name),
                        field(&m.unit),
                        m.higher_is_better,
                        m.headline,
                        field(&s.env),
                        sum.n,
                        sum.mean,
                        sum.median,
                        sum.stddev,
                        sum.cv,
                        sum.min,
                        sum.max,
                        sum.ci.lower,
                        sum.ci.upper,
                        opt(c.map(|c| c.ratio.point)),
                        opt(c.map(|c| c.ratio.lower)),
                        opt(c.map(|c| c.ratio.upper)),
                        opt(c.and_then(|c| c.overhead_pct)),
                        opt(c.and_then(|c| c.times_slower)),
                        opt(c.map(|c| c.p_welch)),
                        opt(c.map(|c| c.p_welch_adjusted)),
                        opt(c.map(|c| c.p_rank)),
                        opt(c.map(|c| c.p_rank_adjusted)),
                        opt(c.map(|c| c.p_equivalence_adjusted)),
                        c.map(|c| c.tests_disagree.to_string()).unwrap_or_default(),
                        verdict,
                        runs_needed,
                        a.noisy(&s.env, &e.label)
                    );
                out.push(Row {
                    label: e.label.clone(),
                    metric: m.name.clone(),
                    env: s.env.clone(),
                    line,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::field;
    use crate::report::model::View;
    use crate::report::registry::exporter;
    use crate::report::tests_support::fixture;

    #[test]
    fn formulas_stay_text_and_numbers_stay_numbers() {
        // Issue 14, item 12.
        assert_eq!(
            field("=HYPERLINK(\"http://x\")"),
            "\"'=HYPERLINK(\"\"http://x\"\")\""
        );
        assert_eq!(field("+1+cmd|' /C calc'!A0"), "'+1+cmd|' /C calc'!A0");
        assert_eq!(field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(field("-2+3"), "'-2+3");
        assert_eq!(field("\t=1"), "'\t=1");
        assert_eq!(field("-1.5"), "-1.5");
        assert_eq!(field("docker:cpus=0.5"), "docker:cpus=0.5");
    }

    #[test]
    fn csv_is_pinned() {
        let csv = exporter("csv").unwrap().render(&fixture(), View::default());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].contains(",p_welch,p_welch_holm,p_rank,p_rank_holm,"));
        assert_eq!(
            lines[1],
            "7,0,cpu,cpu,events_per_sec,events/s,true,true,host,5,100,100,0.7071067811865476,0.007071067811865475,99,101,99.12201096691491,100.87798903308509,,,,,,,,,,,,baseline,,false"
        );
        assert!(lines[2].starts_with("7,0,cpu,cpu,events_per_sec,events/s,true,true,vm,5,50,50,"));
        assert!(lines[2].ends_with(",false,slower,,true"), "{}", lines[2]);
        let col = |i: usize| -> f64 { lines[2].split(',').nth(i).unwrap().parse().unwrap() };
        assert!((col(18) - 0.5).abs() < 0.001, "ratio {}", col(18));
        assert!((col(21) - 50.0).abs() < 0.1, "overhead {}", col(21));
        assert!(col(23) < 1e-6, "Welch p {}", col(23));
        // Tied values: the rank test's normal approximation.
        assert!((col(25) - 0.0102).abs() < 0.0005, "rank p {}", col(25));
    }
}
