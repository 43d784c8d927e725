//! "Where the overhead goes", right after the overview: per entry, each
//! environment's host CPU per unit of work by where it went beside the
//! baseline's (a table, and a stacked bar chart in HTML and `--figures`),
//! and for each headline verdict slower or faster than the margin the
//! causes the accounting measured (`analysis::explain`), each figure shown
//! with the rule it rests on, or "not explained by what was measured".

use crate::analysis::account::PLACES;
use crate::analysis::explain::Breakdown;
use crate::analysis::Analysis;
use crate::report::model::{
    Block, Column, Figure, FigureKind, Row, Section, StackedBar, Table, View,
};
use crate::report::text::{explanation_text, num, slug};

/// The section, when some run was accounted for.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    if a.breakdowns.is_empty() && a.explanations.is_empty() {
        return Vec::new();
    }
    let mut blocks = vec![Block::Note(
        "Host CPU per unit of work (µs per event) by where it went, beside the baseline's; each slower or faster verdict with the measured causes that exceed the noise (every run beyond every baseline run, by more than the margin), the rule each rests on in brackets.".into(),
    )];
    if !a.explanations.is_empty() {
        blocks.push(Block::List(
            a.explanations.iter().map(explanation_text).collect(),
        ));
    }
    if !a.breakdowns.is_empty() {
        blocks.push(Block::Table(table(a)));
        blocks.push(Block::Figures(figures(a)));
    }
    vec![Section::new("overhead", "Where the overhead goes", blocks)]
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
