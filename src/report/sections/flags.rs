//! Flagged runs: a run that something else competed with for the CPUs
//! (steal, other processes' load) or that measured two faces of the
//! machine, summarised by kind; each one and why with `--detail`.

use crate::analysis::Analysis;
use crate::report::model::{Block, Section, View};
use crate::report::text::{flag_summary, run_line};

/// The flagged runs, where there are any.
pub(super) fn build(a: &Analysis, view: View) -> Vec<Section> {
    if a.flags.is_empty() {
        return Vec::new();
    }
    let mut lines = flag_summary(a);
    let lead = if lines.is_empty() {
        String::new()
    } else {
        lines.remove(0)
    };
    let each: Vec<String> = a
        .flags
        .iter()
        .map(|f| format!("⚑ {}", run_line(&f.env, &f.label, f.round, &f.reason)))
        .collect();
    let mut blocks = vec![
        Block::Note("⚑: something else competed for the CPUs; results may be off.".into()),
        Block::Para(lead),
        Block::List(lines),
        Block::Folded {
            summary: "Each flagged run".into(),
            open: view.detail,
            blocks: vec![Block::List(each)],
        },
    ];
    if !view.detail {
        blocks.push(Block::TextHint(
            "Each flagged run and why: --detail.".into(),
        ));
    }
    vec![Section::new("flags", "Flagged runs", blocks)]
}
