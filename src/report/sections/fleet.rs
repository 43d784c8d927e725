//! The fleet view: across several hosts' comparisons of one suite, per
//! entry, headline metric and kind of environment, the spread of the
//! hosts' overheads and the hosts that stand out. It opens a fleet
//! report; each host's own report follows it (`report::fleet_document`).

use crate::analysis::fleet::Fleet;
use crate::report::model::{Block, Column, Row, Section, Table};
use crate::report::text::fleet_spread;

/// The fleet view's section.
pub(crate) fn fleet_view(f: &Fleet) -> Section {
    if f.rows.is_empty() {
        return Section::new(
            "fleet",
            "Fleet view",
            vec![Block::Para(
                "No environment besides the baseline has results on any host.".into(),
            )],
        );
    }
    let rows = f
        .rows
        .iter()
        .map(|r| {
            let (range, iqr) = fleet_spread(r);
            let per_host: Vec<String> = r
                .points
                .iter()
                .map(|p| {
                    format!(
                        "{} {}{}",
                        p.host,
                        r.measure.show(p.value),
                        if p.outlier { "*" } else { "" }
                    )
                })
                .collect();
            Row {
                group: r.label.clone(),
                cells: vec![
                    r.kind.clone().into(),
                    r.metric.clone().into(),
                    r.measure.label().into(),
                    r.n.to_string().into(),
                    r.measure.show(r.median).into(),
                    range.into(),
                    iqr.into(),
                    if r.outliers.is_empty() {
                        "none".to_string()
                    } else {
                        r.outliers.join(", ")
                    }
                    .into(),
                    per_host.join(", ").into(),
                ],
                flagged: !r.outliers.is_empty(),
            }
        })
        .collect();
    Section::new(
        "fleet",
        "Fleet view (per entry, headline metric and environment kind)",
        vec![
            Block::Note("*: an outlier host.".into()),
            Block::Table(Table {
                group: Some("entry"),
                columns: vec![
                    Column::text("kind", 10),
                    Column::text("metric", 24),
                    Column::text("measure", 0),
                    Column::num("hosts"),
                    Column::num("median"),
                    Column::num("min … max"),
                    Column::num("IQR"),
                    Column::text("outliers", 0),
                    Column::text("per host", 0),
                ],
                rows,
            }),
        ],
    )
}
