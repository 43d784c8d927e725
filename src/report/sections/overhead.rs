//! "Where the overhead goes", right after the overview: per entry, each
//! environment's host CPU per unit of work by where it went beside the
//! baseline's (a stacked bar chart in HTML and `--figures`, a table under
//! `--detail`), then per environment one short paragraph per entry that
//! states the causes the accounting measured for its slower or faster
//! verdicts once (`analysis::explain`), each figure shown with the rule it
//! rests on, with the rows it covers and their factors; the verdicts no
//! measured cause explains are said so together, once per environment.

use crate::analysis::account::PLACES;
use crate::analysis::explain::{Breakdown, Explanation};
use crate::analysis::Analysis;
use crate::report::model::{
    Block, Column, Figure, FigureKind, Row, Section, StackedBar, Table, View,
};
use crate::report::text::{finding_clause, num, ratio_num, slug};

/// The section, when some run was accounted for.
pub(super) fn build(a: &Analysis, view: View) -> Vec<Section> {
    if a.breakdowns.is_empty() && a.explanations.is_empty() {
        return Vec::new();
    }
    let mut blocks = vec![Block::Note(
        "Host CPU per unit of work (µs per event) by where it went, the baseline's beside each environment's; then, per environment and entry, the measured causes of its slower or faster verdicts that exceed the noise (every run beyond every baseline run, by more than the margin), stated once for the rows they cover, the rule each rests on in brackets.".into(),
    )];
    if !a.breakdowns.is_empty() {
        blocks.push(Block::Figures(figures(a)));
    }
    blocks.extend(paragraphs(a));
    if !a.breakdowns.is_empty() {
        blocks.push(Block::Folded {
            summary: "Host CPU per event by where it went, per entry (µs)".into(),
            open: view.detail,
            blocks: vec![Block::Table(table(a))],
        });
        if !view.detail {
            blocks.push(Block::TextHint(
                "The host CPU per event of each entry by where it went: --detail.".into(),
            ));
        }
    }
    vec![Section::new("overhead", "Where the overhead goes", blocks)]
}

/// A run of verdicts one statement covers: one environment's rows of one
/// entry with the same outcome.
struct Group<'a> {
    env: &'a str,
    label: &'a str,
    outcome: &'static str,
    rows: Vec<&'a Explanation>,
}

/// The explanations grouped by environment (in the comparison's order),
/// entry (in the analysis' order) and outcome.
fn groups(a: &Analysis) -> Vec<Group<'_>> {
    let env_at = |e: &str| a.envs.iter().position(|x| x == e).unwrap_or(usize::MAX);
    let entry_at = |l: &str| {
        a.entries
            .iter()
            .position(|x| x.label == l)
            .unwrap_or(usize::MAX)
    };
    let mut out: Vec<Group> = Vec::new();
    for e in &a.explanations {
        match out
            .iter_mut()
            .find(|g| g.env == e.env && g.label == e.label && g.outcome == e.outcome)
        {
            Some(g) => g.rows.push(e),
            None => out.push(Group {
                env: &e.env,
                label: &e.label,
                outcome: e.outcome,
                rows: vec![e],
            }),
        }
    }
    out.sort_by_key(|g| (env_at(g.env), entry_at(g.label), g.outcome != "slower"));
    out
}

/// "getpid_ns 25.3×": a row's metric and factor.
fn factor(e: &Explanation) -> String {
    format!("{} {}×", e.metric, ratio_num(e.slowdown))
}

/// Per environment, a lead line and its list: one item per entry and
/// outcome whose verdicts a measured cause explains, and one for the
/// verdicts none does.
fn paragraphs(a: &Analysis) -> Vec<Block> {
    let groups = groups(a);
    let mut out = Vec::new();
    let mut envs: Vec<&str> = groups.iter().map(|g| g.env).collect();
    envs.dedup();
    for env in envs {
        let mine: Vec<&Group> = groups.iter().filter(|g| g.env == env).collect();
        let rows: usize = mine.iter().map(|g| g.rows.len()).sum();
        let mut items: Vec<String> = mine.iter().filter_map(|g| explained(g)).collect();
        let unexplained: Vec<String> = mine
            .iter()
            .flat_map(|g| g.rows.iter())
            .filter(|e| e.findings.is_empty())
            .map(|e| format!("{} {} ({})", e.label, factor(e), e.outcome))
            .collect();
        if !unexplained.is_empty() {
            items.push(format!(
                "Not explained by what was measured ({} row{}): {}.",
                unexplained.len(),
                if unexplained.len() == 1 { "" } else { "s" },
                unexplained.join("; ")
            ));
        }
        out.push(Block::Para(format!(
            "{env}: {rows} headline verdict{} slower or faster than {}.",
            if rows == 1 { "" } else { "s" },
            a.baseline
        )));
        out.push(Block::List(items));
    }
    out
}

/// One entry's verdicts of one outcome, their common causes stated once:
/// "microops (8 rows, 12.1×–25.3× slower): the environment's own CPU
/// used ... [own_cpu]. Rows: getpid_ns 25.3×, ..."; a cause only some rows
/// have goes beside those rows. None when no row has a cause.
fn explained(g: &Group) -> Option<String> {
    let clauses: Vec<Vec<String>> = g
        .rows
        .iter()
        .map(|e| e.findings.iter().map(finding_clause).collect())
        .collect();
    if clauses.iter().all(Vec::is_empty) {
        return None;
    }
    let with: Vec<usize> = (0..g.rows.len())
        .filter(|i| !clauses[*i].is_empty())
        .collect();
    let common: Vec<&String> = clauses[with[0]]
        .iter()
        .filter(|c| with.iter().all(|i| clauses[*i].contains(c)))
        .collect();
    let factors: Vec<f64> = with.iter().map(|i| g.rows[*i].slowdown).collect();
    let lo = factors.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = factors.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let same = ratio_num(lo) == ratio_num(hi);
    let head = if with.len() == 1 {
        let e = g.rows[with[0]];
        format!("{} {} ({})", g.label, factor(e), g.outcome)
    } else if same {
        format!(
            "{} ({} rows, {}× {})",
            g.label,
            with.len(),
            ratio_num(lo),
            g.outcome
        )
    } else {
        format!(
            "{} ({} rows, {}×–{}× {})",
            g.label,
            with.len(),
            ratio_num(lo),
            ratio_num(hi),
            g.outcome
        )
    };
    let mut text = if common.is_empty() {
        head
    } else {
        let joined: Vec<&str> = common.iter().map(|c| c.as_str()).collect();
        format!("{head}: {}", joined.join("; "))
    };
    if with.len() > 1 {
        let per_row: Vec<String> = with
            .iter()
            .map(|i| {
                let own: Vec<&str> = clauses[*i]
                    .iter()
                    .filter(|c| !common.contains(c))
                    .map(String::as_str)
                    .collect();
                // The factor is in the head when all rows share it.
                let e = g.rows[*i];
                let row = if same { e.metric.clone() } else { factor(e) };
                if own.is_empty() {
                    row
                } else {
                    format!("{row} ({})", own.join("; "))
                }
            })
            .collect();
        text.push_str(&format!(". Rows: {}", per_row.join(", ")));
    }
    text.push('.');
    Some(text)
}

/// The places any breakdown has, in `PLACES` order.
fn places_in(a: &Analysis) -> Vec<&'static str> {
    PLACES
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| {
            a.breakdowns
                .iter()
                .any(|b| b.places.iter().chain(&b.baseline).any(|(x, _)| x == p))
        })
        .collect()
}

fn value(parts: &[(String, f64)], place: &str) -> Option<f64> {
    parts.iter().find(|(p, _)| p == place).map(|(_, v)| *v)
}

fn table(a: &Analysis) -> Table {
    let places = places_in(a);
    let mut columns = vec![Column::text("environment", 24), Column::num("total")];
    columns.extend(places.iter().map(|p| Column::num(p)));
    let mut rows = Vec::new();
    let mut last = String::new();
    for b in &a.breakdowns {
        // The baseline once per entry, then each environment.
        if b.label != last {
            rows.push(row(b, &a.baseline, &b.baseline, &places));
            last = b.label.clone();
        }
        rows.push(row(b, &b.env, &b.places, &places));
    }
    Table {
        group: Some("entry"),
        columns,
        rows,
    }
}

fn row(b: &Breakdown, who: &str, parts: &[(String, f64)], places: &[&str]) -> Row {
    let total: f64 = parts.iter().map(|(_, v)| v).sum();
    let mut cells = vec![who.into(), num(total).into()];
    cells.extend(
        places
            .iter()
            .map(|p| value(parts, p).map_or_else(|| "–".to_string(), num).into()),
    );
    Row {
        group: b.label.clone(),
        cells,
        flagged: false,
    }
}

/// One stacked chart per entry: the baseline, then each environment.
fn figures(a: &Analysis) -> Vec<Figure> {
    let places = places_in(a);
    let env_index = |e: &str| a.envs.iter().position(|x| x == e).unwrap_or(0);
    let mut out: Vec<Figure> = Vec::new();
    for b in &a.breakdowns {
        let bar = |who: &str, parts: &[(String, f64)]| StackedBar {
            label: who.to_string(),
            env: env_index(who),
            segments: places
                .iter()
                .map(|p| value(parts, p).unwrap_or(0.0))
                .collect(),
        };
        let id = format!("overhead-{}", slug(&b.label));
        match out.iter_mut().find(|f| f.id == id) {
            Some(Figure {
                kind: FigureKind::Stacked { bars, .. },
                ..
            }) => bars.push(bar(&b.env, &b.places)),
            _ => out.push(Figure {
                id,
                title: format!("{}: host CPU per event by where it went", b.label),
                kind: FigureKind::Stacked {
                    unit: "µs".into(),
                    parts: places.iter().map(|p| p.to_string()).collect(),
                    bars: vec![bar(&a.baseline, &b.baseline), bar(&b.env, &b.places)],
                },
            }),
        }
    }
    out
}
