//! The headline summary: one row per entry, headline metric and
//! environment, its ratio to the baseline with its interval, the effect and
//! the verdict with its marks.

use crate::analysis::Analysis;
use crate::report::model::{Block, Cell, Column, Row, Section, Table, Tone, View};
use crate::report::text::{effect, marks, ratio_text, verdict_cell};

/// The headline summary.
pub(super) fn build(a: &Analysis, view: View) -> Vec<Section> {
    vec![headline(a, view)]
}

fn headline(a: &Analysis, view: View) -> Section {
    let rows = a.headline_rows();
    let title = format!("Headline summary (environment against {})", a.baseline);
    if rows.is_empty() {
        return Section::new(
            "headline",
            &title,
            vec![Block::Para(
                "No environment besides the baseline has results.".into(),
            )],
        );
    }
    let table = Table {
        group: Some("entry"),
        columns: vec![
            Column::text("environment", 16),
            Column::text("metric", 28),
            Column::num("ratio [95% CI]"),
            Column::num("effect"),
            Column::text("verdict", 0),
        ],
        rows: rows
            .iter()
            .map(|r| {
                let x = r.stat.vs_baseline.as_ref();
                Row {
                    group: r.entry.label.clone(),
                    cells: vec![
                        r.stat.env.clone().into(),
                        r.metric.name.clone().into(),
                        x.map(ratio_text).unwrap_or_default().into(),
                        x.map(effect).unwrap_or_default().into(),
                        Cell::toned(
                            format!("{}{}", verdict_cell(r.stat, true, false), marks(r)),
                            Tone::of(x.map(|x| x.outcome)),
                        ),
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
