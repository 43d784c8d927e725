//! Where the file, disk and OLTP tests wrote, as seen inside each
//! environment, with a warning for each file system that ignores fsync.

use crate::analysis::Analysis;
use crate::report::model::{Block, Column, Row, Section, Table, View};
use crate::report::text::{fsync_warning, storages};

/// The storage section, where any environment's results name theirs.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    let list = storages(a);
    if list.is_empty() {
        return Vec::new();
    }
    let mut blocks = vec![
        Block::Note(
            "Where the file, disk and OLTP tests wrote, as seen inside each environment.".into(),
        ),
        Block::Table(Table {
            group: None,
            columns: vec![
                Column::text("environment", 0),
                Column::text("file system", 0),
            ],
            rows: list
                .iter()
                .map(|(env, _, s)| Row {
                    group: String::new(),
                    cells: vec![(*env).into(), s.describe().into()],
                    flagged: s.fsync_ignored.is_some(),
                })
                .collect(),
        }),
    ];
    for (env, kind, s) in list.iter().filter(|(_, _, s)| s.fsync_ignored.is_some()) {
        blocks.push(Block::Warning(fsync_warning(env, kind, s)));
    }
    vec![Section::new("storage", "Storage", blocks)]
}
