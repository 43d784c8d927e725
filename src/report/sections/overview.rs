//! The overview, to read in ten seconds: per area and environment, how
//! much slower than the baseline, as a factor with its interval and its
//! verdict's mark; the tally of headline verdicts; the same factors drawn.

use super::areas::{area_slowdowns, AreaSlowdown};
use crate::analysis::{Analysis, VERDICT_KINDS};
use crate::report::model::{
    Block, Cell, Column, Figure, FigureKind, Row, Section, SlowdownRow, Table, Tone, View,
};
use crate::report::text::{kind_label, percent, tally};
use crate::stats::Outcome;
use crate::workload::Area;

/// A factor to two decimals from 0.1 to 10, else three significant
/// figures: 0.0512, 0.97, 1.40, 20.0, 312. Shorter than
/// [`crate::report::text::ratio_num`] on purpose: the overview puts a
/// factor and its two ends in one cell per area and environment, where the
/// headline rows' third decimal would only widen the table.
fn sig3(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        "–".into()
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.1 {
        format!("{x:.2}")
    } else {
        let d = (-a.log10().floor()) as usize + 2;
        format!("{x:.d$}")
    }
}

/// "2.31× [2.10–2.54] ▲": a slowdown, its interval and its verdict's mark
/// (▲ slower, ▼ faster, = equivalent, ? inconclusive), so it reads
/// without colour too.
fn factor_cell(point: f64, lower: f64, upper: f64, o: Outcome) -> String {
    let mark = match o {
        Outcome::Slower => "▲",
        Outcome::Faster => "▼",
        Outcome::Equivalent => "=",
        Outcome::Inconclusive => "?",
    };
    format!("{}× [{}–{}] {mark}", sig3(point), sig3(lower), sig3(upper))
}

/// "12▲ 2△ 1▼ 5= 16?": verdict counts in the marks the overview uses (△ ▽
/// slower or faster within the margin).
fn verdict_marks(v: &[usize; 6]) -> String {
    let parts: Vec<String> = ["▲", "△", "▼", "▽", "=", "?"]
        .iter()
        .zip(v)
        .filter(|(_, n)| **n > 0)
        .map(|(m, n)| format!("{n}{m}"))
        .collect();
    parts.join(" ")
}

/// "5 slower, 1 slower within ±5%, 1 equivalent, 2 inconclusive"
fn verdict_counts(v: &[usize; 6], margin: f64) -> String {
    let parts: Vec<String> = VERDICT_KINDS
        .iter()
        .zip(v)
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{n} {}", kind_label(k, margin)))
        .collect();
    parts.join(", ")
}

/// The overview section.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    let cells = area_slowdowns(a);
    if cells.is_empty() {
        return vec![Section::new(
            "overview",
            "Overview",
            vec![Block::Para(if a.headline_rows().is_empty() {
                "No environment besides the baseline has headline results.".into()
            } else {
                // Rows with figures but no ratio (an import of another
                // test, a single run): the summary says why of each.
                "No environment has a slowdown against the baseline: the headline summary below gives each one's figures and why they are not compared.".into()
            })],
        )];
    }
    let areas: Vec<Area> = Area::ALL
        .into_iter()
        .filter(|ar| cells.iter().any(|c| c.area == *ar))
        .collect();
    // Environments as columns: a comparison has fewer of them than areas,
    // so the table stays narrow enough for a terminal.
    let envs: Vec<(usize, &String)> = a
        .envs
        .iter()
        .enumerate()
        .filter(|(_, e)| cells.iter().any(|c| c.env == **e))
        .collect();
    let blocks = vec![
        Block::Note(format!(
            "How much slower each environment is than {} per area, as a factor (above 1× slower, below faster): \
             the geometric mean over the area's headline metrics, with an interval that averages theirs on the log scale \
             (conservative, as the metrics share runs), marked as a verdict would be: = equivalent when it lies within ±{}%, \
             else ▲ slower or ▼ faster when it excludes 1×, ? otherwise. The last row counts the metrics' own verdicts (△ or ▽: slower or faster with the whole interval within ±{}%).",
            a.baseline,
            percent(a.settings.margin),
            percent(a.settings.margin)
        )),
        Block::Table(area_table(a, &cells, &areas, &envs)),
        Block::Para(tally(a)),
        Block::Figures(vec![area_figure(a, &cells, &areas, &envs)]),
    ];
    vec![Section::new("overview", "Overview", blocks)]
}

/// Areas as rows, environments as columns, and a last row counting each
/// environment's headline verdicts.
fn area_table(
    a: &Analysis,
    cells: &[AreaSlowdown],
    areas: &[Area],
    envs: &[(usize, &String)],
) -> Table {
    let mut columns = vec![Column::text("area", 0)];
    columns.extend(envs.iter().map(|(_, e)| Column::num(e)));
    let mut rows = Vec::new();
    let mut totals = vec![[0usize; 6]; envs.len()];
    for ar in areas {
        let mut row = vec![Cell::from(ar.name())];
        for (k, (_, env)) in envs.iter().enumerate() {
            match cells.iter().find(|c| c.area == *ar && c.env == **env) {
                Some(c) => {
                    for (t, v) in totals[k].iter_mut().zip(c.verdicts) {
                        *t += v;
                    }
                    let o = c.outcome(a.settings.margin);
                    row.push(Cell {
                        text: factor_cell(c.point, c.lower, c.upper, o),
                        tone: Tone::of(Some(o)),
                        hover: Some(format!(
                            "{} {}: {} headline metric{} ({})",
                            env,
                            ar.name(),
                            c.rows,
                            if c.rows == 1 { "" } else { "s" },
                            verdict_counts(&c.verdicts, a.settings.margin)
                        )),
                    });
                }
                None => row.push(Cell::toned("–".into(), Tone::Muted)),
            }
        }
        rows.push(Row::plain(row));
    }
    let mut last = vec![Cell::from("headline verdicts")];
    last.extend(totals.iter().map(|t| Cell {
        text: verdict_marks(t),
        tone: Tone::Plain,
        hover: Some(verdict_counts(t, a.settings.margin)),
    }));
    rows.push(Row::plain(last));
    Table {
        group: None,
        columns,
        rows,
    }
}

/// The overview's factors on a log axis, an environment's areas together.
fn area_figure(
    a: &Analysis,
    cells: &[AreaSlowdown],
    areas: &[Area],
    envs: &[(usize, &String)],
) -> Figure {
    let rows: Vec<SlowdownRow> = envs
        .iter()
        .flat_map(|(ei, env)| {
            areas.iter().filter_map(move |ar| {
                let c = cells.iter().find(|c| c.area == *ar && c.env == **env)?;
                Some(SlowdownRow {
                    label: format!("{env} · {}", ar.name()),
                    point: c.point,
                    lower: c.lower,
                    upper: c.upper,
                    runs: Vec::new(),
                    verdict: Some(c.outcome(a.settings.margin)),
                    env: *ei,
                })
            })
        })
        .collect();
    Figure {
        id: "overview".into(),
        title: format!("Slowdown against {} per area (log scale)", a.baseline),
        kind: FigureKind::Slowdown {
            rows,
            margin: a.settings.margin,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_read_to_three_figures_with_their_mark() {
        assert_eq!(
            factor_cell(1.4, 1.3834, 1.4162, Outcome::Slower),
            "1.40× [1.38–1.42] ▲"
        );
        assert_eq!(
            factor_cell(0.05, 0.04941, 0.0506, Outcome::Faster),
            "0.0500× [0.0494–0.0506] ▼"
        );
        assert_eq!(sig3(312.4), "312");
        assert_eq!(sig3(0.935), "0.94");
        assert_eq!(verdict_marks(&[12, 0, 1, 0, 0, 16]), "12▲ 1▼ 16?");
        assert_eq!(verdict_marks(&[3, 2, 0, 1, 5, 0]), "3▲ 2△ 1▽ 5=");
        assert_eq!(
            verdict_counts(&[3, 2, 0, 1, 5, 0], 0.05),
            "3 slower, 2 slower within ±5%, 1 faster within ±5%, 5 equivalent"
        );
    }
}
