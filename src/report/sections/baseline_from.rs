//! A comparison made by `compare --baseline-from`: said first, since every
//! verdict after it is unpaired: against which earlier comparison, from
//! when and on what machine, why its intervals are wider, and the entries
//! that could not be compared.

use crate::analysis::Analysis;
use crate::report::model::{Block, Section, View};
use crate::report::text;

/// The section, for such a comparison only.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    let Some(f) = &a.baseline_from else {
        return Vec::new();
    };
    let mut blocks = vec![
        Block::Warning(text::baseline_from_said(a, f)),
        Block::Para(text::BASELINE_FROM_WIDER.into()),
    ];
    if !f.not_comparable.is_empty() {
        blocks.push(Block::Para(
            "Not comparable (run here, no baseline runs to set beside them):".into(),
        ));
        blocks.push(Block::List(
            f.not_comparable
                .iter()
                .map(|(label, why)| format!("{label}: {why}"))
                .collect(),
        ));
    }
    vec![Section::new(
        "baseline-from",
        &format!(
            "Unpaired: against comparison #{} from {}",
            f.comparison, f.started_at
        ),
        blocks,
    )]
}
