//! Failed runs: which environment, entry and round, and the error it gave.

use crate::analysis::Analysis;
use crate::report::model::{Block, Section, View};
use crate::report::text::run_line;

/// The failed runs, where there are any.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    if a.failures.is_empty() {
        return Vec::new();
    }
    vec![Section::new(
        "failures",
        "Failed runs",
        vec![Block::List(
            a.failures
                .iter()
                .map(|f| run_line(&f.env, &f.label, f.round, &f.error))
                .collect(),
        )],
    )]
}
