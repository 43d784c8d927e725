//! Parameter sweeps drawn: entries of one workload that differ in exactly
//! one numeric parameter form a series, drawn as a line per environment; a
//! full grid over two such parameters is drawn as a heat map per
//! environment (slowdown against the baseline). Which entries form a sweep
//! is `report::sweeps`' to find.

use crate::analysis::{Analysis, MetricAnalysis};
use crate::report::model::{Block, Figure, FigureKind, Section, Series, View};
use crate::report::sweeps::{one_way, two_way, Grid};
use crate::report::text::{slowdown, slowdown_text, slug};

/// The sweeps' section, where the suite has any.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    let mut figs = line_figures(a);
    figs.extend(heat_figures(a));
    if figs.is_empty() {
        return Vec::new();
    }
    vec![Section::new(
        "sweeps",
        "Parameter sweeps",
        vec![
            Block::Note("Entries that differ in one value (threads, a block size) as a line per environment with its 95% interval; a grid over two values as a heat map of each environment's slowdown against the baseline.".into()),
            Block::Figures(figs),
        ],
    )]
}

/// Per one-way sweep and headline metric, a line per environment.
fn line_figures(a: &Analysis) -> Vec<Figure> {
    let mut figs = Vec::new();
    for (workload, key, group) in one_way(a) {
        let Some(first) = group.first() else { continue };
        for m in first.metrics.iter().filter(|m| m.headline) {
            let series: Vec<Series> = a
                .envs
                .iter()
                .enumerate()
                .map(|(ei, env)| {
                    let pts = group
                        .iter()
                        .filter_map(|e| {
                            let x = e.params.get(&key)?.as_f64()?;
                            let mm = e.metrics.iter().find(|q| q.name == m.name)?;
                            let s = mm.per_env.get(ei)?.summary.as_ref()?;
                            Some((x, s.mean, s.ci.lower, s.ci.upper))
                        })
                        .collect();
                    (env.clone(), pts)
                })
                .filter(|(_, p): &(String, Vec<_>)| !p.is_empty())
                .collect();
            figs.push(Figure {
                id: format!(
                    "sweep-{}-{}-by-{}",
                    slug(&workload),
                    slug(&m.name),
                    slug(&key)
                ),
                title: format!("{workload}: {} by {key}", m.name),
                kind: FigureKind::Lines {
                    xlabel: key.clone(),
                    unit: m.unit.clone(),
                    series,
                },
            });
        }
    }
    figs
}

/// Per two-way sweep, headline metric and environment but the baseline, a
/// heat map of its slowdowns.
fn heat_figures(a: &Analysis) -> Vec<Figure> {
    let mut figs = Vec::new();
    for g in two_way(a) {
        let Some(first) = g.entries.first().map(|(_, _, e)| *e) else {
            continue;
        };
        for m in first.metrics.iter().filter(|m| m.headline) {
            for (ei, env) in a.envs.iter().enumerate() {
                if *env == a.baseline {
                    continue;
                }
                let cells = heat_cells(&g, m, ei, a.settings.margin);
                if cells.is_empty() {
                    continue;
                }
                figs.push(Figure {
                    id: format!("heat-{}-{}-{}", slug(&g.workload), slug(&m.name), slug(env)),
                    title: format!(
                        "{}: {} slowdown of {env} by {} × {}",
                        g.workload, m.name, g.xkey, g.ykey
                    ),
                    kind: FigureKind::Heat {
                        xlabel: g.xkey.clone(),
                        ylabel: g.ykey.clone(),
                        xs: g.xs.clone(),
                        ys: g.ys.clone(),
                        cells,
                    },
                });
            }
        }
    }
    figs
}

/// The grid's cells of metric `m` for environment `ei`: (x index, y index,
/// slowdown, what a tooltip says); `margin` the verdicts'.
fn heat_cells(
    g: &Grid,
    m: &MetricAnalysis,
    ei: usize,
    margin: f64,
) -> Vec<(usize, usize, f64, String)> {
    g.entries
        .iter()
        .filter_map(|(xi, yi, e)| {
            let mm = e.metrics.iter().find(|q| q.name == m.name)?;
            let x = mm.per_env.get(ei)?.vs_baseline.as_ref()?;
            let (p, _, _) = slowdown(mm.higher_is_better, x);
            Some((
                *xi,
                *yi,
                p,
                format!(
                    "{} = {}, {} = {}: {} ({})",
                    g.xkey,
                    g.xs[*xi],
                    g.ykey,
                    g.ys[*yi],
                    slowdown_text(mm.higher_is_better, x),
                    crate::report::text::verdict_label(x, margin)
                ),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyze;
    use crate::core::result::Metric;
    use crate::report::document::document;
    use crate::report::sections::area_slowdowns;
    use crate::report::tests_support::{comparison_row, run};
    use crate::stats::VerdictSettings;
    use crate::store::RunRow;

    /// A memory sweep over block size × threads, the vm 2× slower at 2
    /// threads only.
    fn grid_runs() -> Vec<RunRow> {
        let mut runs = Vec::new();
        let mut entry = 0;
        for threads in [1, 2] {
            for block in ["1K", "4K"] {
                for r in 0..4 {
                    for (env, speed) in
                        [("host", 1.0), ("vm", if threads == 2 { 0.5 } else { 1.0 })]
                    {
                        let mut row = run(env, r, 100.0 * speed * (1.0 + 0.001 * r as f64), 0.0);
                        row.entry = entry;
                        row.label = format!("memory threads={threads} block={block}");
                        let doc = row.doc.as_mut().unwrap();
                        doc.workload = "memory".into();
                        doc.params = serde_json::json!({"threads": threads, "memory_block_size": block, "memory_oper": "write"})
                            .as_object()
                            .unwrap()
                            .clone();
                        doc.metrics = vec![Metric::new(
                            "mib_per_sec",
                            100.0 * speed * (1.0 + 0.001 * r as f64),
                            "MiB/s",
                            true,
                        )];
                        runs.push(row);
                    }
                }
                entry += 1;
            }
        }
        runs
    }

    #[test]
    fn sweeps_become_lines_and_a_grid_a_heat_map() {
        let a = analyze(&comparison_row(), &grid_runs(), &VerdictSettings::default());
        assert_eq!(a.entries.len(), 4);
        // threads is numeric: one line chart per block size.
        let lines = one_way(&a);
        assert_eq!(
            lines.len(),
            2,
            "{:?}",
            lines.iter().map(|l| &l.1).collect::<Vec<_>>()
        );
        assert!(lines
            .iter()
            .all(|(w, k, g)| w == "memory" && k == "threads" && g.len() == 2));
        // Block size × threads is a full 2 × 2 grid.
        let grids = two_way(&a);
        assert_eq!(grids.len(), 1);
        let g = &grids[0];
        assert_eq!((g.xs.len(), g.ys.len(), g.entries.len()), (2, 2, 4));
        let d = document(&a, View::default());
        let heat: Vec<&Figure> = d
            .figures()
            .into_iter()
            .filter(|f| matches!(f.kind, FigureKind::Heat { .. }))
            .collect();
        assert_eq!(heat.len(), 1, "one heat map, for the vm");
        let FigureKind::Heat { cells, xs, ys, .. } = &heat[0].kind else {
            unreachable!()
        };
        for (xi, yi, v, _) in cells {
            let threads = if g.xkey == "threads" {
                &xs[*xi]
            } else {
                &ys[*yi]
            };
            let want = if threads == "2" { 2.0 } else { 1.0 };
            assert!((v - want).abs() < 0.01, "threads {threads}: {v}");
        }
        // The overview: memory only, 2 of 4 metrics slower.
        let areas = area_slowdowns(&a);
        assert_eq!(areas.len(), 1);
        assert_eq!(areas[0].area, crate::workload::Area::Memory);
        assert_eq!(areas[0].verdicts[0], 2, "{:?}", areas[0]);
        assert!(
            (areas[0].point - 2f64.sqrt()).abs() < 0.01,
            "{:?}",
            areas[0]
        );
    }
}
