//! The headline summary: one row per entry, headline metric and
//! environment, its slowdown against the baseline with its interval (as
//! the overview states it) and the verdict with its marks.

use crate::analysis::{Analysis, EnvStat, MetricAnalysis};
use crate::report::model::{Block, Cell, Column, Row, Section, Table, Tone, View};
use crate::report::text::{marks, num, slowdown_text, verdict_cell};

/// The headline summary.
pub(super) fn build(a: &Analysis, view: View) -> Vec<Section> {
    vec![headline(a, view)]
}

fn headline(a: &Analysis, view: View) -> Section {
    let rows = a.headline_rows();
    let title = format!("Headline summary (environment against {})", a.baseline);
    if rows.is_empty() {
        return baseline_only(a, &title);
    }
    let table = Table {
        group: Some("entry"),
        columns: vec![
            Column::text("environment", 16),
            Column::text("metric", 28),
            Column::num("slowdown [95% CI]"),
            Column::text("verdict", 0),
        ],
        rows: rows
            .iter()
            .map(|r| {
                let x = r.stat.vs_baseline.as_ref();
                let mut verdict = format!(
                    "{}{}",
                    verdict_cell(r.stat, true, false, a.settings.margin),
                    marks(r)
                );
                let figure = match x {
                    // An imported figure names its source even with a ratio.
                    Some(x) => match source_of(a, &r.stat.env) {
                        Some(f) => format!("{} ({f})", slowdown_text(r.metric.higher_is_better, x)),
                        None => slowdown_text(r.metric.higher_is_better, x),
                    },
                    // Nothing to divide: the two sides' own figures, and why.
                    None => {
                        if let Some(why) = &r.stat.not_comparable {
                            verdict = format!("{verdict}: {why}");
                        }
                        side_by_side(a, r.metric, r.stat)
                    }
                };
                Row {
                    group: r.entry.label.clone(),
                    cells: vec![
                        r.stat.env.clone().into(),
                        r.metric.name.clone().into(),
                        figure.into(),
                        Cell::toned(verdict, Tone::of(x.map(|x| x.outcome))),
                    ],
                    flagged: r.noisy || r.fsync_ignored,
                }
            })
            .collect(),
    };
    let mut blocks = vec![Block::Table(table)];
    if !view.detail {
        blocks.push(Block::TextHint(
            "Every metric with both tests' p-values: --detail (or --format json / csv).".into(),
        ));
    }
    Section::new("headline", &title, blocks)
}

/// "812 vs 1,610 events/s": an environment's mean beside the baseline's,
/// for a row with no ratio.
fn side_by_side(a: &Analysis, m: &MetricAnalysis, s: &EnvStat) -> String {
    let mean = |s: &EnvStat| s.summary.as_ref().map(|x| num(x.mean));
    let base = a
        .envs
        .iter()
        .position(|env| *env == a.baseline)
        .and_then(|bi| m.per_env.get(bi))
        .and_then(mean);
    match (mean(s), base, source_of(a, &s.env)) {
        (Some(v), Some(b), None) => format!("{v} vs {b} {}", m.unit),
        (Some(v), Some(b), Some(f)) => format!("{v} vs {b} {} ({f})", m.unit),
        (Some(v), None, None) => format!("{v} {} (baseline: no runs)", m.unit),
        (Some(v), None, Some(f)) => format!("{v} {} ({f}; baseline: no runs)", m.unit),
        _ => String::new(),
    }
}

/// "sysbench 1.0.20, file of 2019-03-02" for an imported environment's
/// figures: another tool, another day.
fn source_of(a: &Analysis, env: &str) -> Option<String> {
    a.imported.get(env).map(|sources| {
        let list: Vec<String> = sources.iter().map(|x| x.source()).collect();
        list.join("; ")
    })
}

/// Only the baseline has results: what it measured, each headline metric's
/// mean with its interval, and how to compare it with something.
fn baseline_only(a: &Analysis, title: &str) -> Section {
    let Some(bi) = a.envs.iter().position(|env| *env == a.baseline) else {
        return Section::new(
            "headline",
            title,
            vec![Block::Para("Nothing was measured.".into())],
        );
    };
    let rows: Vec<Row> = a
        .entries
        .iter()
        .flat_map(|e| {
            e.metrics
                .iter()
                .filter(|m| m.headline)
                .filter_map(move |m| Some((e, m, m.per_env.get(bi)?.summary.as_ref()?)))
        })
        .map(|(e, m, sum)| Row {
            group: e.label.clone(),
            cells: vec![
                m.name.clone().into(),
                format!("{} {}", num(sum.mean), m.unit).into(),
                if sum.n >= 2 {
                    format!("[{}, {}]", num(sum.ci.lower), num(sum.ci.upper))
                } else {
                    "(one run)".into()
                }
                .into(),
                sum.n.to_string().into(),
            ],
            flagged: a.noisy(&a.baseline, &e.label),
        })
        .collect();
    let what = format!(
        "No environment besides the baseline has results, so nothing is compared; what {} measured:",
        a.baseline
    );
    if rows.is_empty() {
        return Section::new(
            "headline",
            title,
            vec![Block::Para(format!("{what} nothing."))],
        );
    }
    let table = Table {
        group: Some("entry"),
        columns: vec![
            Column::text("metric", 28),
            Column::num("mean"),
            Column::num("95% CI"),
            Column::num("runs"),
        ],
        rows,
    };
    Section::new(
        "headline",
        title,
        vec![
            Block::Para(what),
            Block::Table(table),
            Block::TextHint(
                "Add an environment to compare with: --env docker, --env qemu, ... ('virtperf envs' lists them).".into(),
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyze;
    use crate::report::tests_support::{comparison_row, fixture, fixture_runs, run};
    use crate::report::{exporter, View};
    use crate::stats::VerdictSettings;

    fn table(a: &Analysis) -> String {
        exporter("table").unwrap().render(a, View::default())
    }

    /// Issue 52, item 7: one way of stating a ratio, the overview's
    /// slowdown factor, and the method after the answer.
    #[test]
    fn rows_state_the_overviews_slowdown_and_the_method_comes_after_the_answer() {
        let text = table(&fixture());
        // The vm is half as fast: 2× slower, as the overview says, not 0.5×
        // beside "50.0% overhead".
        assert!(text.contains("2.000× [1.966, 2.035]"), "{text}");
        assert!(
            !text.contains("0.500×") && !text.contains("% overhead"),
            "{text}"
        );
        let (overview, headline) = (
            text.find("Overview").unwrap(),
            text.find("Headline summary").unwrap(),
        );
        let method = text.find("How the verdicts were reached").unwrap();
        assert!(overview < headline && headline < method, "{text}");
        // Seed 001's categories only where its suite asks for them.
        assert!(!text.contains("seed 001"), "{text}");
    }

    /// Issue 52, item 2: a comparison of the baseline alone shows what it
    /// measured.
    #[test]
    fn a_baseline_alone_shows_its_figures() {
        let runs: Vec<_> = fixture_runs()
            .into_iter()
            .filter(|r| r.env == "host")
            .collect();
        let cmp = crate::store::ComparisonRow {
            envs: vec!["host".into()],
            ..comparison_row()
        };
        let text = table(&analyze(&cmp, &runs, &VerdictSettings::default()));
        assert!(text.contains("what host measured"), "{text}");
        assert!(text.contains("100.0 events/s"), "{text}");
        assert!(text.contains("--env docker"), "{text}");
    }

    /// Issue 52, item 2: one run a side gives no ratio, but the row shows
    /// both figures and the option that would give one.
    #[test]
    fn a_row_with_no_ratio_shows_both_sides_and_the_fix() {
        let runs = vec![run("host", 0, 100.0, 0.0), run("vm", 0, 50.0, 0.0)];
        let text = table(&analyze(
            &comparison_row(),
            &runs,
            &VerdictSettings::default(),
        ));
        assert!(text.contains("50.0 vs 100.0 events/s"), "{text}");
        assert!(text.contains("--repeat 2 or more"), "{text}");
    }
}
