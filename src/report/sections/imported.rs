//! Runs read from other tools' output (`virtperf import`): which tool,
//! how many runs, the first file, so nobody takes them for virtperf's own.

use crate::analysis::Analysis;
use crate::report::model::{Block, Cell, Column, Row, Section, Table, View};

/// The imported runs, where there are any.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    imported(a).into_iter().collect()
}

/// Environments whose runs were read from other tools' output (`virtperf
/// import`): each tool they came from, its runs and first file.
fn imported(a: &Analysis) -> Option<Section> {
    let rows: Vec<Row> = a
        .envs
        .iter()
        .filter_map(|e| Some((e, a.imported.get(e)?)))
        .flat_map(|(e, sources)| {
            sources.iter().map(move |s| Row {
                group: String::new(),
                cells: vec![
                    e.clone().into(),
                    format!("imported from {}", s.source()).into(),
                    Cell::from(s.runs.to_string()),
                    s.first_file.clone().into(),
                ],
                flagged: false,
            })
        })
        .collect();
    (!rows.is_empty()).then(|| {
        Section::new(
            "imported",
            "Imported runs",
            vec![
                Block::Note(
                    "Read from another tool's output with 'virtperf import', not measured by virtperf: that tool's work, timer and units, where and when it ran. Compare with care.".into(),
                ),
                Block::Table(Table {
                    group: None,
                    columns: vec![
                        Column::text("environment", 0),
                        Column::text("source", 0),
                        Column::num("runs"),
                        Column::text("first file", 0),
                    ],
                    rows,
                }),
            ],
        )
    })
}
