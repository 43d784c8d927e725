//! A section per entry of the suite: its headline metrics as bar charts
//! (each environment's mean with its interval and runs), every metric's
//! table with both tests' p-values (folded unless `--detail`), and each
//! run second by second where its samples were kept (`timeline`).

use crate::analysis::{Analysis, EntryAnalysis, EnvStat, MetricAnalysis};
use crate::report::model::{
    BarData, Block, Cell, Column, Figure, FigureKind, Row, Section, Table, Tone, View,
};
use crate::report::text::{num, pval, slowdown_text, slug, verdict_cell};
use crate::stats::Assessment;

/// One section per entry, in the suite's order.
pub(super) fn build(a: &Analysis, view: View) -> Vec<Section> {
    a.entries
        .iter()
        .enumerate()
        .map(|(i, e)| entry(a, i, e, view))
        .collect()
}

fn entry(a: &Analysis, i: usize, e: &EntryAnalysis, view: View) -> Section {
    let figs: Vec<Figure> = e
        .metrics
        .iter()
        .filter(|m| m.headline)
        .map(|m| bars(i, m))
        .collect();
    let mut blocks = vec![
        Block::Figures(figs),
        Block::Folded {
            summary: format!("Every metric of {}", e.label),
            open: view.detail,
            blocks: vec![
                Block::Note("A verdict in [brackets] belongs to a detail metric: its own Holm family, descriptive only. †: Welch's and the rank test disagree.".into()),
                Block::Table(every_metric(a, e)),
            ],
        },
    ];
    blocks.extend(super::timeline::block(a, i, e, view));
    Section::new(&format!("entry-{}", i + 1), &e.label, blocks)
}

/// A headline metric of entry `i` as bars: each environment's mean with
/// its interval and runs.
fn bars(i: usize, m: &MetricAnalysis) -> Figure {
    Figure {
        id: format!("entry-{}-{}", i + 1, slug(&m.name)),
        title: m.name.clone(),
        kind: FigureKind::Bars {
            unit: m.unit.clone(),
            bars: m
                .per_env
                .iter()
                .enumerate()
                .filter_map(|(ei, s)| {
                    let sum = s.summary.as_ref()?;
                    Some(BarData {
                        label: s.env.clone(),
                        value: sum.mean,
                        lower: sum.ci.lower,
                        upper: sum.ci.upper,
                        runs: s.samples.clone(),
                        env: ei,
                    })
                })
                .collect(),
        },
    }
}

/// Every metric of the entry and every environment with runs: its summary,
/// its slowdown against the baseline and both tests' p-values.
fn every_metric(a: &Analysis, e: &EntryAnalysis) -> Table {
    let mut columns = vec![Column::text("metric", 34), Column::text("environment", 18)];
    for c in [
        "n",
        "mean",
        "95% CI",
        "CV",
        "slowdown [95% CI]",
        "p Welch",
        "p Welch (Holm)",
        "p rank (Holm)",
    ] {
        columns.push(Column::num(c));
    }
    columns.push(Column::text("verdict", 0));
    let rows = e
        .metrics
        .iter()
        .flat_map(|m| m.per_env.iter().filter_map(move |s| metric_row(a, e, m, s)))
        .collect();
    Table {
        group: None,
        columns,
        rows,
    }
}

/// One metric of one environment, none without runs.
fn metric_row(a: &Analysis, e: &EntryAnalysis, m: &MetricAnalysis, s: &EnvStat) -> Option<Row> {
    let sum = s.summary.as_ref()?;
    let x = s.vs_baseline.as_ref();
    let p = |f: fn(&Assessment) -> f64| x.map(|x| pval(f(x))).unwrap_or_default();
    let flagged = a.noisy(&s.env, &e.label);
    let mut verdict = verdict_cell(s, m.headline, s.env == a.baseline, a.settings.margin);
    if x.is_some_and(|x| x.tests_disagree) {
        verdict.push_str(" †");
    }
    if let Some(why) = &s.not_comparable {
        verdict = format!("{verdict}: {why}");
    }
    Some(Row {
        group: String::new(),
        cells: vec![
            format!(
                "{}{} ({})",
                if m.headline { "" } else { "  " },
                m.name,
                m.unit
            )
            .into(),
            format!("{}{}", s.env, if flagged { " ⚑" } else { "" }).into(),
            sum.n.to_string().into(),
            num(sum.mean).into(),
            format!("[{}, {}]", num(sum.ci.lower), num(sum.ci.upper)).into(),
            format!("{:.1}%", sum.cv * 100.0).into(),
            x.map(|x| slowdown_text(m.higher_is_better, x))
                .unwrap_or_default()
                .into(),
            p(|x| x.p_welch).into(),
            p(|x| x.p_welch_adjusted).into(),
            p(|x| x.p_rank_adjusted).into(),
            Cell::toned(
                verdict,
                if m.headline {
                    Tone::of(x.map(|x| x.outcome))
                } else {
                    Tone::Muted
                },
            ),
        ],
        flagged,
    })
}
