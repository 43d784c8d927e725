//! Each environment's network path (a bridge, the host's stack, a user-mode
//! network...), where its runs name one.

use crate::analysis::Analysis;
use crate::report::model::{Block, Column, Row, Section, Table, View};

/// The network paths, where any environment names one.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    let rows: Vec<Row> = a
        .envs
        .iter()
        .filter_map(|e| {
            let p = a.fingerprints.get(e)?.net_path.as_deref()?;
            Some(Row::plain(vec![e.clone().into(), p.into()]))
        })
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    vec![Section::new(
        "network-paths",
        "Network paths",
        vec![Block::Table(Table {
            group: None,
            columns: vec![Column::text("environment", 0), Column::text("path", 0)],
            rows,
        })],
    )]
}
