//! Against the baseline: per environment, each headline metric as a
//! slowdown factor on a log axis centred at 1×, every run drawn beside its
//! geometric mean and interval.

use crate::analysis::{Analysis, EntryAnalysis};
use crate::report::model::{Block, Figure, FigureKind, Section, SlowdownRow, View};
use crate::report::text::slowdown;
use crate::report::text::slug;

/// The charts against the baseline.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    vec![against_baseline(a)]
}

fn geometric_mean(xs: &[f64]) -> f64 {
    let logs: Vec<f64> = xs.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect();
    if logs.is_empty() {
        return f64::NAN;
    }
    (logs.iter().sum::<f64>() / logs.len() as f64).exp()
}

/// Each entry's label for a chart row: a label the suite gave as it is;
/// a generated one ("workload k=v ...") keeps only the options in which
/// it differs from the other entries of its workload, so rows of one
/// entry are told apart by their metric and the options they share do not
/// crowd out what matters ("disk", "cpu threads=2").
fn short_labels(a: &Analysis) -> Vec<String> {
    let tokens = |e: &EntryAnalysis| -> Option<Vec<String>> {
        let rest = e.label.strip_prefix(&e.workload)?;
        (rest.is_empty() || rest.starts_with(' '))
            .then(|| rest.split_whitespace().map(str::to_string).collect())
    };
    a.entries
        .iter()
        .map(|e| {
            let Some(mine) = tokens(e) else {
                return e.label.clone();
            };
            let others: Vec<Vec<String>> = a
                .entries
                .iter()
                .filter(|o| o.workload == e.workload)
                .filter_map(tokens)
                .collect();
            let differing: Vec<&str> = mine
                .iter()
                .filter(|t| !others.iter().all(|o| o.contains(t)))
                .map(String::as_str)
                .collect();
            std::iter::once(e.workload.as_str())
                .chain(differing)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn against_baseline(a: &Analysis) -> Section {
    let base_i = a.envs.iter().position(|e| *e == a.baseline);
    let short = short_labels(a);
    let mut figs = Vec::new();
    for (ei, env) in a.envs.iter().enumerate() {
        if *env == a.baseline {
            continue;
        }
        let rows: Vec<SlowdownRow> = a
            .entries
            .iter()
            .zip(&short)
            .flat_map(|(e, short)| {
                e.metrics
                    .iter()
                    .filter(|m| m.headline)
                    .filter_map(move |m| {
                        let s = m.per_env.get(ei)?;
                        if s.samples.is_empty() {
                            return None;
                        }
                        let gm = geometric_mean(&m.per_env.get(base_i?)?.samples);
                        // No baseline run (an import of another test): no
                        // point to draw; the summary says why.
                        if !gm.is_finite() {
                            return None;
                        }
                        let slow = |r: f64| if m.higher_is_better { 1.0 / r } else { r };
                        let x = s.vs_baseline.as_ref();
                        let (point, lower, upper) = x
                            .map(|x| slowdown(m.higher_is_better, x))
                            .unwrap_or((f64::NAN, f64::NAN, f64::NAN));
                        Some(SlowdownRow {
                            label: format!("{short} · {}", m.name),
                            point,
                            lower,
                            upper,
                            runs: s.samples.iter().map(|v| slow(v / gm)).collect(),
                            verdict: x.map(|x| x.outcome),
                            env: ei,
                        })
                    })
            })
            .collect();
        if !rows.is_empty() {
            figs.push(Figure {
                id: format!("slowdown-{}", slug(env)),
                title: format!("{env} against {}: slowdown (log scale)", a.baseline),
                kind: FigureKind::Slowdown {
                    rows,
                    margin: a.settings.margin,
                },
            });
        }
    }
    Section::new(
        "against-baseline",
        "Against the baseline",
        vec![
            Block::Note("Each headline metric as a slowdown factor (a throughput's ratio inverted, so right is always slower) on a log axis centred at 1×. Points: each run against the baseline's geometric mean; diamond and bar: the geometric mean with its 95% interval, coloured by verdict (red slower, green faster, blue equivalent, grey inconclusive); shaded: the equivalence margin; an arrow at the edge: beyond the axis, with its figure.".into()),
            Block::Figures(figs),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_labels_keep_what_tells_entries_apart() {
        let a = crate::report::tests_support::analysis_of(&[
            ("cpu", "cpu cpu-max-prime=20000 threads=1 time=1"),
            ("cpu", "cpu cpu-max-prime=20000 threads=2 time=1"),
            ("disk", "disk disk-direct=on disk-file-size=16M"),
            ("memory", "stream"),
            ("memory", "memory memory-block-size=1K time=0.5"),
        ]);
        assert_eq!(
            short_labels(&a),
            ["cpu threads=1", "cpu threads=2", "disk", "stream", "memory"]
        );
    }
}
