//! Seed 001's overhead categories and ranking score per environment, each
//! figure with its interval; where a kind of environment ran in several
//! configurations, seed 001's ranking of the kinds from their best ones.

use crate::analysis::Analysis;
use crate::report::model::{Block, Cell, Column, Row, Section, Table, Tone, View};
use crate::stats::{Ranking, Solution};

/// The built-in suite of seed 001's study (suites/seed001-tschudin.toml),
/// whose report the categories are.
const SEED001_SUITE: &str = "seed001";

/// The categories' section: with seed 001's suite, which asks for them,
/// and under `--detail` where any workload belongs to a category; a reader
/// who never heard of seed 001 does not meet them otherwise.
pub(super) fn build(a: &Analysis, view: View) -> Vec<Section> {
    let empty = |r: &Ranking| r.categories.iter().all(|c| c.value.is_none());
    let asked = a.suite.starts_with(SEED001_SUITE) || view.detail;
    if !asked || a.rankings.iter().all(|(_, r)| empty(r)) {
        return Vec::new();
    }
    let title = "Overhead categories (seed 001's method)";
    let names: Vec<(&str, &str)> = a.rankings[0]
        .1
        .categories
        .iter()
        .map(|c| (c.name, c.unit))
        .collect();
    let mut blocks = vec![
        Block::Note("Seed 001's arithmetic: computing power, disk I/O and network I/O as the mean overhead % of their metrics ((1 − ratio) × 100, the ratio environment / baseline of a throughput), disk read latency and micro-operations as the mean times slower (environment / baseline of a time); the score multiplies the sum of the first by the sum of the second, lower is better. In brackets, each figure's interval: a category's ends are the means of its metrics' 95% interval ends (it covers the category whenever each metric's interval covers its own), the score's the products of the sums' ends. Environments with count=N sum their instances' throughputs and average their times, as the seed summed its VMs.".into()),
        Block::Table(category_table(a, &names)),
    ];
    let missing: Vec<&str> = a
        .rankings
        .iter()
        .find(|(_, r)| r.score.is_none())
        .map(|(_, r)| r.missing.clone())
        .unwrap_or_default();
    if !missing.is_empty() {
        blocks.push(Block::Note(format!(
            "No score where an overhead and a times-slower category are not both present; this suite has no {}.",
            missing.join(", ")
        )));
    }
    blocks.extend(ranking(a, &names));
    vec![Section::new("categories", title, blocks)]
}

/// A category per row, an environment per column: what each column is
/// (its kind and how many instances ran at once), each category's figure
/// and the ranking score.
fn category_table(a: &Analysis, names: &[(&str, &str)]) -> Table {
    let mut columns = vec![Column::text("category", 0), Column::text("unit", 0)];
    columns.extend(a.rankings.iter().map(|(env, _)| Column::num(env)));
    let mut instances = vec![Cell::from("instances at once"), Cell::from("")];
    instances.extend(a.rankings.iter().map(|(env, _)| {
        let f = a.fingerprints.get(env);
        let n = f.and_then(|f| f.instances).unwrap_or(1);
        let kind = f.map_or("", |f| f.kind.as_str());
        Cell::from(format!("{kind} ×{n}"))
    }));
    let mut rows = vec![Row::plain(instances)];
    rows.extend(names.iter().enumerate().map(|(i, (name, unit))| {
        let mut cells = vec![Cell::from(*name), Cell::from(*unit)];
        cells.extend(a.rankings.iter().map(|(_, r)| {
            let c = &r.categories[i];
            category_cell(c.value, c.interval, format!("from {}", c.from.join(", ")))
        }));
        Row::plain(cells)
    }));
    rows.push(score_row(
        a.rankings.iter().map(|(_, r)| (r.score, r.score_interval)),
    ));
    Table {
        group: None,
        columns,
        rows,
    }
}

/// The kinds of environment ranked: seed 001's table where a kind ran in
/// several configurations, else one line.
fn ranking(a: &Analysis, names: &[(&str, &str)]) -> Vec<Block> {
    let several = a.solutions.iter().any(|s| {
        a.rankings
            .iter()
            .filter(|(env, _)| a.fingerprints.get(env).is_some_and(|f| f.kind == s.kind))
            .count()
            > 1
    });
    let mut ranked: Vec<&Solution> = a.solutions.iter().filter(|s| s.rank.is_some()).collect();
    ranked.sort_by_key(|s| s.rank);
    if several {
        return match solutions_table(a, names) {
            Some(table) => vec![
                Block::Note("The ranking, as seed 001 made it: per kind of environment and category, the best of its configurations (for seed 001, 1, 2 or 4 VMs at once; named where a kind has several), the score of those figures, and the kinds ranked by score, best first.".into()),
                table,
            ],
            None => Vec::new(),
        };
    }
    if ranked.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = ranked
        .iter()
        .map(|s| format!("{}. {}", s.rank.unwrap_or(0), s.kind))
        .collect();
    vec![Block::Para(format!(
        "The kinds ranked by score, best first (one configuration each): {}.",
        list.join(", ")
    ))]
}

/// Seed 001's ranking of the kinds of environment, best first, a column
/// each; none when no kind has a score.
fn solutions_table(a: &Analysis, names: &[(&str, &str)]) -> Option<Block> {
    if a.solutions.iter().all(|s| s.score.is_none()) {
        return None;
    }
    let mut order: Vec<&Solution> = a.solutions.iter().collect();
    order.sort_by_key(|s| s.rank.unwrap_or(usize::MAX));
    // Which configuration a figure came from, where a kind has several.
    let configurations = |kind: &str| {
        a.rankings
            .iter()
            .filter(|(env, _)| a.fingerprints.get(env).is_some_and(|f| f.kind == kind))
            .count()
    };
    let mut columns = vec![Column::text("category", 0), Column::text("unit", 0)];
    columns.extend(order.iter().map(|s| match s.rank {
        Some(r) => Column::num(&format!("{r}. {}", s.kind)),
        None => Column::num(&s.kind),
    }));
    let mut rows: Vec<Row> = names
        .iter()
        .enumerate()
        .map(|(ci, (name, unit))| {
            let mut cells = vec![Cell::from(*name), Cell::from(*unit)];
            cells.extend(order.iter().map(|s| match &s.best[ci] {
                Some((env, c)) => {
                    let mut cell =
                        category_cell(c.value, c.interval, format!("from {}", c.from.join(", ")));
                    if configurations(&s.kind) > 1 {
                        cell.text = format!("{} {env}", cell.text);
                    }
                    cell
                }
                None => Cell::toned("–".into(), Tone::Muted),
            }));
            Row::plain(cells)
        })
        .collect();
    rows.push(score_row(order.iter().map(|s| (s.score, s.score_interval))));
    Some(Block::Table(Table {
        group: None,
        columns,
        rows,
    }))
}

/// The last row of either table: each column's ranking score.
fn score_row(scores: impl Iterator<Item = (Option<f64>, Option<(f64, f64)>)>) -> Row {
    let mut cells = vec![Cell::from("ranking score"), Cell::from("lower is better")];
    cells.extend(scores.map(|(score, interval)| {
        category_cell(score, interval, "(Σ overhead %) × (Σ times slower)".into())
    }));
    Row::plain(cells)
}

/// A category's figure with its interval, as seed 001 writes it (two
/// decimals).
fn category_cell(value: Option<f64>, interval: Option<(f64, f64)>, hover: String) -> Cell {
    // Two decimals as the seed, none where that would only add digits.
    let f = |x: f64| match x.abs() < 1000.0 {
        true => format!("{x:.2}"),
        false => format!("{x:.0}"),
    };
    match (value, interval) {
        (Some(v), Some((lo, hi))) => Cell {
            text: format!("{} [{}, {}]", f(v), f(lo), f(hi)),
            tone: Tone::Plain,
            hover: Some(hover),
        },
        (Some(v), None) => Cell {
            text: f(v),
            tone: Tone::Plain,
            hover: Some(hover),
        },
        _ => Cell::toned("–".into(), Tone::Muted),
    }
}
