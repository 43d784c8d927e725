//! Parameter sweeps drawn: entries of one workload that differ in exactly
//! one numeric parameter form a series, drawn as a line per environment; a
//! full grid over two such parameters is drawn as a heat map per
//! environment (slowdown against the baseline). Which entries form a sweep
//! is `report::sweeps`' to find.

use super::areas::slowdown;
use crate::analysis::{Analysis, MetricAnalysis};
use crate::report::model::{Block, Figure, FigureKind, Section, Series, View};
use crate::report::sweeps::{one_way, two_way, Grid};
use crate::report::text::{ratio_text, slug};

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
                let cells = heat_cells(&g, m, ei);
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
/// slowdown, what a tooltip says).
fn heat_cells(g: &Grid, m: &MetricAnalysis, ei: usize) -> Vec<(usize, usize, f64, String)> {
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
                    ratio_text(x),
                    x.outcome.label()
                ),
            ))
        })
        .collect()
}
