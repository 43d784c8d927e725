//! Part of each entry's section: its runs second by second (seed 002's
//! mpstat and iostat beside each test), one small chart per run with the
//! environment's own view and the host's, folded away unless `--detail`.
//! Only the HTML (and `--figures`) draws them; runs without samples (older
//! stores, imports, accounting off) add nothing.

use crate::analysis::{Analysis, EntryAnalysis};
use crate::report::model::{Block, Figure, FigureKind, TimelineView, View};
use crate::report::text::slug;

/// The entry's fold of per-run charts; none when no run has samples.
pub(super) fn block(a: &Analysis, i: usize, e: &EntryAnalysis, view: View) -> Option<Block> {
    let runs: Vec<_> = a.timelines.iter().filter(|t| t.label == e.label).collect();
    if runs.is_empty() {
        return None;
    }
    let figs: Vec<Figure> = runs
        .iter()
        .map(|t| Figure {
            id: format!("entry-{}-seconds-{}-{}", i + 1, slug(&t.env), t.round),
            title: format!("{}, round {}", t.env, t.round),
            kind: FigureKind::Timeline {
                views: t
                    .views
                    .iter()
                    .map(|v| TimelineView {
                        name: v.name.to_string(),
                        samples: v.samples.clone(),
                        capped: v.capped,
                    })
                    .collect(),
            },
        })
        .collect();
    let mut blocks = vec![Block::Note(
        "Each run second by second: CPU time of all CPUs by kind (user, system, softirq, iowait, steal; stacked, 0–100 %) and the whole disks' bytes a second (the line, scaled to its peak), inside the environment and on the host.".into(),
    )];
    if runs.iter().any(|t| t.views.iter().any(|v| v.capped)) {
        blocks.push(Block::Note(format!(
            "A run marked “capped” ran longer than {} samples: its later seconds were not sampled.",
            crate::core::series::MAX_SAMPLES
        )));
    }
    let left_out: Vec<String> = a
        .timelines_left_out
        .iter()
        .filter(|((label, _), _)| *label == e.label)
        .map(|((_, env), n)| format!("{n} of {env}'s"))
        .collect();
    if !left_out.is_empty() {
        blocks.push(Block::Note(format!(
            "The first {} runs of each environment are drawn; {} more runs are in the store.",
            crate::analysis::timeline::MAX_RUNS,
            left_out.join(", ")
        )));
    }
    blocks.push(Block::Figures(figs));
    Some(Block::Folded {
        summary: format!("Each run of {} second by second", e.label),
        open: view.detail,
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use crate::analysis::analyze;
    use crate::core::accounting::{Accounting, Inside};
    use crate::core::series::{Sample, Series};
    use crate::report::exporter;
    use crate::report::model::View;
    use crate::report::tests_support::{comparison_row, fixture_runs};
    use crate::stats::VerdictSettings;

    #[test]
    fn the_html_draws_each_run_with_samples_and_the_text_formats_do_not() {
        let mut runs = fixture_runs();
        let samples = Series {
            interval_s: 1.0,
            samples: (1..=3)
                .map(|t| Sample {
                    t_s: t as f64,
                    user_pct: 50.0,
                    ..Sample::default()
                })
                .collect(),
            capped: true,
            unreadable: None,
            sampler_cpu_s: None,
        };
        for r in runs.iter_mut().filter(|r| r.env == "vm").take(2) {
            r.doc.as_mut().unwrap().accounting = Some(Accounting::of_inside(Inside {
                wall_s: 3.0,
                samples: Some(samples.clone()),
                ..Inside::default()
            }));
        }
        let a = analyze(&comparison_row(), &runs, &VerdictSettings::default());
        assert_eq!(a.timelines.len(), 2);
        let html = exporter("html").unwrap().render(&a, View::default());
        assert_eq!(html.matches("chart timeline").count(), 2, "{html}");
        assert!(html.contains("Each run of cpu second by second"));
        assert!(html.contains("inside (capped)") && html.contains("3600 samples"));
        let text = exporter("table").unwrap().render(&a, View { detail: true });
        assert!(!text.contains("chart timeline"), "{text}");
        // Runs without samples (the host's here, every golden file's):
        // no fold at all.
        let plain = analyze(
            &comparison_row(),
            &fixture_runs(),
            &VerdictSettings::default(),
        );
        let html = exporter("html").unwrap().render(&plain, View::default());
        assert!(!html.contains("second by second"));
    }
}
