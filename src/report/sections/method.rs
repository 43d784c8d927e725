//! How the figures above were decided: the design, the intervals, the
//! verdicts' tests and corrections, and the marks. After the answer, for
//! the reader who wants to check it.

use crate::analysis::Analysis;
use crate::report::model::{Block, Section, View};
use crate::report::text::method;

/// The method section, last: the overview and the headline rows come
/// first.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    vec![Section::new(
        "method",
        "How the verdicts were reached",
        vec![Block::Para(method(a))],
    )]
}
