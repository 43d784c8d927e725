//! The types of the document every layout format lays out: titled
//! sections of paragraphs, tables and figures. `report::document` builds
//! one from an `Analysis` (or a `Fleet`), each section by its own builder
//! in `sections/`; the layouts decide nothing about content: the terminal
//! prints the text and tables, markdown the same as pipe tables, HTML
//! everything with the figures as inline SVG (and `--figures` each one as
//! a file).

use crate::stats::Outcome;

// (Builders not yet moved into sections/.)
use super::sections::slowdown;
use super::text::{
    effect, flag_summary, fleet_spread, fsync_warning, num, pval, ratio_text, slug, storages,
    verdict_cell,
};
use crate::analysis::fleet::Fleet;
use crate::analysis::{Analysis, EntryAnalysis};
use crate::stats::Assessment;

/// What a report shows besides the headline summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct View {
    /// Every metric of every entry (`--detail`); formats that always carry
    /// everything (CSV, JSON) ignore it.
    pub detail: bool,
}

pub struct Document {
    pub title: String,
    /// Paragraphs under the title: what was compared, and how.
    pub intro: Vec<String>,
    pub sections: Vec<Section>,
}

pub struct Section {
    /// A stable name: the HTML anchor and the prefix of its figures' files.
    pub id: String,
    pub title: String,
    /// 2 for a report's sections; 3 inside a fleet report's host.
    pub level: u8,
    /// False for tables too wide for a terminal (the fingerprints).
    pub terminal: bool,
    pub blocks: Vec<Block>,
}

impl Section {
    /// A report's section (level 2), shown in the terminal too.
    pub fn new(id: &str, title: &str, blocks: Vec<Block>) -> Section {
        Section {
            id: id.into(),
            title: title.into(),
            level: 2,
            terminal: true,
            blocks,
        }
    }
}

pub enum Block {
    Para(String),
    /// A remark in a lesser voice (how to read a chart, a hint).
    Note(String),
    Warning(String),
    List(Vec<String>),
    Table(Table),
    /// Figures side by side; the text formats leave them out.
    Figures(Vec<Figure>),
    /// Folded away in HTML unless `open`; the text formats show it only
    /// when open (`--detail`).
    Folded {
        summary: String,
        open: bool,
        blocks: Vec<Block>,
    },
    /// Where the text formats find what HTML shows folded (`--detail`).
    TextHint(String),
}

/// A table whose rows may be grouped under a heading (an entry's label):
/// the terminal prints the heading on a line of its own, markdown and HTML
/// as the first column, named `group`.
pub struct Table {
    pub group: Option<&'static str>,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

pub struct Column {
    pub name: String,
    /// Right-aligned in the terminal.
    pub numeric: bool,
    /// The terminal truncates longer cells to this many characters
    /// (0: never).
    pub max: usize,
}

impl Column {
    /// A column of text, its cells cut to `max` characters in the terminal
    /// (0: never).
    pub fn text(name: &str, max: usize) -> Column {
        Column {
            name: name.into(),
            numeric: false,
            max,
        }
    }

    /// A column of figures, right-aligned.
    pub fn num(name: &str) -> Column {
        Column {
            name: name.into(),
            numeric: true,
            max: 0,
        }
    }
}

pub struct Row {
    pub group: String,
    pub cells: Vec<Cell>,
    /// Highlighted: a flagged run or a file system that ignores fsync.
    pub flagged: bool,
}

#[derive(Clone, Default)]
pub struct Cell {
    pub text: String,
    pub tone: Tone,
    /// More than fits: HTML shows it on hover.
    pub hover: Option<String>,
}

impl Row {
    /// A row of no group, not highlighted.
    pub fn plain(cells: Vec<Cell>) -> Row {
        Row {
            group: String::new(),
            cells,
            flagged: false,
        }
    }
}

impl Cell {
    pub fn toned(text: String, tone: Tone) -> Cell {
        Cell {
            text,
            tone,
            hover: None,
        }
    }
}

impl<T: Into<String>> From<T> for Cell {
    fn from(t: T) -> Cell {
        Cell {
            text: t.into(),
            ..Cell::default()
        }
    }
}

/// How a cell is coloured: by its verdict, or muted.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum Tone {
    #[default]
    Plain,
    Slower,
    Faster,
    Equivalent,
    Muted,
}

impl Tone {
    pub fn of(o: Option<Outcome>) -> Tone {
        match o {
            Some(Outcome::Slower) => Tone::Slower,
            Some(Outcome::Faster) => Tone::Faster,
            Some(Outcome::Equivalent) => Tone::Equivalent,
            _ => Tone::Muted,
        }
    }

    pub fn outcome(self) -> Option<Outcome> {
        match self {
            Tone::Slower => Some(Outcome::Slower),
            Tone::Faster => Some(Outcome::Faster),
            Tone::Equivalent => Some(Outcome::Equivalent),
            _ => None,
        }
    }
}

pub struct Figure {
    /// The file name of its standalone SVG, without `.svg`.
    pub id: String,
    pub title: String,
    pub kind: FigureKind,
}

pub enum FigureKind {
    /// Slowdown factors on a log axis centred at 1× (right is slower).
    Slowdown { rows: Vec<SlowdownRow>, margin: f64 },
    /// Each environment's mean with its interval and runs.
    Bars { unit: String, bars: Vec<BarData> },
    /// A parameter sweep: a line per environment against the value.
    Lines {
        xlabel: String,
        unit: String,
        series: Vec<Series>,
    },
    /// A two-way sweep: slowdown against the baseline per cell.
    Heat {
        xlabel: String,
        ylabel: String,
        xs: Vec<String>,
        ys: Vec<String>,
        cells: Vec<(usize, usize, f64, String)>,
    },
}

/// One line of a sweep: the environment, and per value of the swept
/// parameter (x, mean, 95% interval's lower and upper end).
pub type Series = (String, Vec<(f64, f64, f64, f64)>);

pub struct SlowdownRow {
    pub label: String,
    pub point: f64,
    pub lower: f64,
    pub upper: f64,
    /// Each run against the baseline's geometric mean, as a slowdown.
    pub runs: Vec<f64>,
    pub verdict: Option<Outcome>,
    /// The environment's index: its colour.
    pub env: usize,
}

pub struct BarData {
    pub label: String,
    pub value: f64,
    pub lower: f64,
    pub upper: f64,
    pub runs: Vec<f64>,
    pub env: usize,
}

impl Block {
    /// Whether a format without figures has something to show here
    /// beyond notes about what is not there.
    pub fn has_text(&self) -> bool {
        match self {
            Block::Para(t) | Block::Warning(t) => !t.is_empty(),
            Block::List(items) => !items.is_empty(),
            Block::Table(_) => true,
            Block::Folded { open, blocks, .. } => *open && blocks.iter().any(Block::has_text),
            Block::Note(_) | Block::Figures(_) | Block::TextHint(_) => false,
        }
    }
}

/// The blocks a format without figures shows, in order: folded ones
/// opened in (when open), figures and closed folds left out.
pub fn text_blocks(bs: &[Block]) -> Vec<&Block> {
    let mut out = Vec::new();
    for b in bs {
        match b {
            Block::Folded {
                open: true, blocks, ..
            } => out.extend(text_blocks(blocks)),
            Block::Folded { .. } | Block::Figures(_) => {}
            b => out.push(b),
        }
    }
    out
}

impl Document {
    /// Every figure, in the order of the document.
    pub fn figures(&self) -> Vec<&Figure> {
        fn walk<'a>(blocks: &'a [Block], out: &mut Vec<&'a Figure>) {
            for b in blocks {
                match b {
                    Block::Figures(f) => out.extend(f),
                    Block::Folded { blocks, .. } => walk(blocks, out),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        for s in &self.sections {
            walk(&s.blocks, &mut out);
        }
        out
    }
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
pub fn short_labels(a: &Analysis) -> Vec<String> {
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

pub(crate) fn against_baseline(a: &Analysis, _view: View) -> Vec<Section> {
    vec![against_baseline_section(a)]
}

fn against_baseline_section(a: &Analysis) -> Section {
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

/// Parameter sweeps: entries of one workload that differ in exactly one
/// numeric parameter form a series, drawn as a line per environment; a
/// full grid over two such parameters is drawn as a heat map per
/// environment (slowdown against the baseline).
pub(crate) fn sweeps(a: &Analysis, _view: View) -> Vec<Section> {
    sweeps_section(a).into_iter().collect()
}

fn sweeps_section(a: &Analysis) -> Option<Section> {
    let mut figs = Vec::new();
    for (workload, key, group) in super::sweeps::one_way(a) {
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
    for g in super::sweeps::two_way(a) {
        let Some(first) = g.entries.first().map(|(_, _, e)| *e) else {
            continue;
        };
        for m in first.metrics.iter().filter(|m| m.headline) {
            for (ei, env) in a.envs.iter().enumerate() {
                if *env == a.baseline {
                    continue;
                }
                let cells: Vec<(usize, usize, f64, String)> = g
                    .entries
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
                    .collect();
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
    (!figs.is_empty()).then(|| {
        Section::new(
            "sweeps",
            "Parameter sweeps",
            vec![
                Block::Note("Entries that differ in one value (threads, a block size) as a line per environment with its 95% interval; a grid over two values as a heat map of each environment's slowdown against the baseline.".into()),
                Block::Figures(figs),
            ],
        )
    })
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

pub(crate) fn categories(a: &Analysis, _view: View) -> Vec<Section> {
    categories_section(a).into_iter().collect()
}

fn categories_section(a: &Analysis) -> Option<Section> {
    if a.rankings.is_empty() {
        return None;
    }
    let empty = |r: &crate::stats::Ranking| r.categories.iter().all(|c| c.value.is_none());
    let title = "Overhead categories (seed 001's method)";
    if a.rankings.iter().all(|(_, r)| empty(r)) {
        return Some(Section::new("categories", title, vec![Block::Para(
            "None of this suite's workloads belong to seed 001's categories (disk, micro-operations, LINPACK, network).".into(),
        )]));
    }
    let names: Vec<(&str, &str, &str)> = a.rankings[0]
        .1
        .categories
        .iter()
        .map(|c| (c.name, c.unit, c.short))
        .collect();
    let mut columns = vec![Column::text("category", 0), Column::text("unit", 0)];
    columns.extend(a.rankings.iter().map(|(env, _)| Column::num(env)));
    // What each column is: its kind and how many instances ran at once.
    let mut instances = vec![Cell::from("instances at once"), Cell::from("")];
    instances.extend(a.rankings.iter().map(|(env, _)| {
        let f = a.fingerprints.get(env);
        let n = f.and_then(|f| f.instances).unwrap_or(1);
        let kind = f.map_or("", |f| f.kind.as_str());
        Cell::from(format!("{kind} ×{n}"))
    }));
    let mut rows = vec![Row {
        group: String::new(),
        cells: instances,
        flagged: false,
    }];
    rows.extend(names.iter().enumerate().map(|(i, (name, unit, _))| {
        let mut cells = vec![Cell::from(*name), Cell::from(*unit)];
        cells.extend(a.rankings.iter().map(|(_, r)| {
            let c = &r.categories[i];
            category_cell(c.value, c.interval, format!("from {}", c.from.join(", ")))
        }));
        Row {
            group: String::new(),
            cells,
            flagged: false,
        }
    }));
    let mut score = vec![Cell::from("ranking score"), Cell::from("lower is better")];
    score.extend(a.rankings.iter().map(|(_, r)| {
        category_cell(
            r.score,
            r.score_interval,
            "(Σ overhead %) × (Σ times slower)".into(),
        )
    }));
    rows.push(Row {
        group: String::new(),
        cells: score,
        flagged: false,
    });
    let mut blocks = vec![
        Block::Note("Seed 001's arithmetic: computing power, disk I/O and network I/O as the mean overhead % of their metrics ((1 − ratio) × 100, the ratio environment / baseline of a throughput), disk read latency and micro-operations as the mean times slower (environment / baseline of a time); the score multiplies the sum of the first by the sum of the second, lower is better. In brackets, each figure's interval: a category's ends are the means of its metrics' 95% interval ends (it covers the category whenever each metric's interval covers its own), the score's the products of the sums' ends. Environments with count=N sum their instances' throughputs and average their times, as the seed summed its VMs.".into()),
        Block::Table(Table {
            group: None,
            columns,
            rows,
        }),
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
    let several = a.solutions.iter().any(|s| {
        a.rankings
            .iter()
            .filter(|(env, _)| a.fingerprints.get(env).is_some_and(|f| f.kind == s.kind))
            .count()
            > 1
    });
    let mut ranked: Vec<&crate::stats::Solution> =
        a.solutions.iter().filter(|s| s.rank.is_some()).collect();
    ranked.sort_by_key(|s| s.rank);
    if several {
        if let Some(table) = solutions_table(a, &names) {
            blocks.push(Block::Note("The ranking, as seed 001 made it: per kind of environment and category, the best of its configurations (for seed 001, 1, 2 or 4 VMs at once; named where a kind has several), the score of those figures, and the kinds ranked by score, best first.".into()));
            blocks.push(table);
        }
    } else if !ranked.is_empty() {
        let list: Vec<String> = ranked
            .iter()
            .map(|s| format!("{}. {}", s.rank.unwrap_or(0), s.kind))
            .collect();
        blocks.push(Block::Para(format!(
            "The kinds ranked by score, best first (one configuration each): {}.",
            list.join(", ")
        )));
    }
    Some(Section::new("categories", title, blocks))
}

/// Seed 001's ranking of the kinds of environment, best first, a column
/// each; none when no kind has a score.
fn solutions_table(a: &Analysis, names: &[(&str, &str, &str)]) -> Option<Block> {
    if a.solutions.iter().all(|s| s.score.is_none()) {
        return None;
    }
    let mut order: Vec<&crate::stats::Solution> = a.solutions.iter().collect();
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
        .map(|(ci, (name, unit, _))| {
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
            Row {
                group: String::new(),
                cells,
                flagged: false,
            }
        })
        .collect();
    let mut score = vec![Cell::from("ranking score"), Cell::from("lower is better")];
    score.extend(order.iter().map(|s| {
        category_cell(
            s.score,
            s.score_interval,
            "(Σ overhead %) × (Σ times slower)".into(),
        )
    }));
    rows.push(Row {
        group: String::new(),
        cells: score,
        flagged: false,
    });
    Some(Block::Table(Table {
        group: None,
        columns,
        rows,
    }))
}

pub(crate) fn net_paths(a: &Analysis, _view: View) -> Vec<Section> {
    net_paths_section(a).into_iter().collect()
}

fn net_paths_section(a: &Analysis) -> Option<Section> {
    let rows: Vec<Row> = a
        .envs
        .iter()
        .filter_map(|e| {
            let p = a.fingerprints.get(e)?.net_path.as_deref()?;
            Some(Row {
                group: String::new(),
                cells: vec![e.clone().into(), p.into()],
                flagged: false,
            })
        })
        .collect();
    (!rows.is_empty()).then(|| {
        Section::new(
            "network-paths",
            "Network paths",
            vec![Block::Table(Table {
                group: None,
                columns: vec![Column::text("environment", 0), Column::text("path", 0)],
                rows,
            })],
        )
    })
}

pub(crate) fn storage(a: &Analysis, _view: View) -> Vec<Section> {
    storage_section(a).into_iter().collect()
}

fn storage_section(a: &Analysis) -> Option<Section> {
    let list = storages(a);
    if list.is_empty() {
        return None;
    }
    let mut blocks = vec![
        Block::Note(
            "Where the file, disk and OLTP tests wrote, as seen inside each environment.".into(),
        ),
        Block::Table(Table {
            group: None,
            columns: vec![
                Column::text("environment", 0),
                Column::text("file system", 0),
            ],
            rows: list
                .iter()
                .map(|(env, _, s)| Row {
                    group: String::new(),
                    cells: vec![(*env).into(), s.describe().into()],
                    flagged: s.fsync_ignored.is_some(),
                })
                .collect(),
        }),
    ];
    for (env, kind, s) in list.iter().filter(|(_, _, s)| s.fsync_ignored.is_some()) {
        blocks.push(Block::Warning(fsync_warning(env, kind, s)));
    }
    Some(Section::new("storage", "Storage", blocks))
}

/// One entry: its headline metrics as bar charts, and every metric's
/// table (folded unless `--detail`).
pub(crate) fn entries(a: &Analysis, view: View) -> Vec<Section> {
    a.entries
        .iter()
        .enumerate()
        .map(|(i, e)| entry(a, i, e, view))
        .collect()
}

fn entry(a: &Analysis, i: usize, e: &EntryAnalysis, view: View) -> Section {
    let figs: Vec<Figure> = e
        .metrics
        .iter()
        .filter(|m| m.headline)
        .map(|m| Figure {
            id: format!("entry-{}-{}", i + 1, slug(&m.name)),
            title: m.name.clone(),
            kind: FigureKind::Bars {
                unit: m.unit.clone(),
                bars: m
                    .per_env
                    .iter()
                    .enumerate()
                    .filter_map(|(ei, s)| {
                        let sum = s.summary.as_ref()?;
                        Some(BarData {
                            label: s.env.clone(),
                            value: sum.mean,
                            lower: sum.ci.lower,
                            upper: sum.ci.upper,
                            runs: s.samples.clone(),
                            env: ei,
                        })
                    })
                    .collect(),
            },
        })
        .collect();
    let mut columns = vec![Column::text("metric", 34), Column::text("environment", 18)];
    for c in [
        "n",
        "mean",
        "95% CI",
        "CV",
        "ratio [95% CI]",
        "effect",
        "p Welch",
        "p Welch (Holm)",
        "p rank (Holm)",
    ] {
        columns.push(Column::num(c));
    }
    columns.push(Column::text("verdict", 0));
    let mut rows = Vec::new();
    for m in &e.metrics {
        for s in &m.per_env {
            let Some(sum) = &s.summary else { continue };
            let x = s.vs_baseline.as_ref();
            let p = |f: fn(&Assessment) -> f64| x.map(|x| pval(f(x))).unwrap_or_default();
            let flagged = a.noisy(&s.env, &e.label);
            let mut verdict = verdict_cell(s, m.headline, s.env == a.baseline);
            if x.is_some_and(|x| x.tests_disagree) {
                verdict.push_str(" †");
            }
            if let Some(why) = &s.not_comparable {
                verdict = format!("{verdict}: {why}");
            }
            rows.push(Row {
                group: String::new(),
                cells: vec![
                    format!(
                        "{}{} ({})",
                        if m.headline { "" } else { "  " },
                        m.name,
                        m.unit
                    )
                    .into(),
                    format!("{}{}", s.env, if flagged { " ⚑" } else { "" }).into(),
                    sum.n.to_string().into(),
                    num(sum.mean).into(),
                    format!("[{}, {}]", num(sum.ci.lower), num(sum.ci.upper)).into(),
                    format!("{:.1}%", sum.cv * 100.0).into(),
                    x.map(ratio_text).unwrap_or_default().into(),
                    x.map(effect).unwrap_or_default().into(),
                    p(|x| x.p_welch).into(),
                    p(|x| x.p_welch_adjusted).into(),
                    p(|x| x.p_rank_adjusted).into(),
                    Cell::toned(
                        verdict,
                        if m.headline {
                            Tone::of(x.map(|x| x.outcome))
                        } else {
                            Tone::Muted
                        },
                    ),
                ],
                flagged,
            });
        }
    }
    Section {
        id: format!("entry-{}", i + 1),
        title: e.label.clone(),
        level: 2,
        terminal: true,
        blocks: vec![
            Block::Figures(figs),
            Block::Folded {
                summary: format!("Every metric of {}", e.label),
                open: view.detail,
                blocks: vec![
                    Block::Note("A verdict in [brackets] belongs to a detail metric: its own Holm family, descriptive only. †: Welch's and the rank test disagree.".into()),
                    Block::Table(Table {
                        group: None,
                        columns,
                        rows,
                    }),
                ],
            },
        ],
    }
}

fn run_line(env: &str, label: &str, round: usize, why: &str) -> String {
    format!("{env} / {label} / round {}: {why}", round + 1)
}

pub(crate) fn flags(a: &Analysis, view: View) -> Vec<Section> {
    flags_section(a, view).into_iter().collect()
}

fn flags_section(a: &Analysis, view: View) -> Option<Section> {
    if a.flags.is_empty() {
        return None;
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
    Some(Section::new("flags", "Flagged runs", blocks))
}

pub(crate) fn failures(a: &Analysis, _view: View) -> Vec<Section> {
    failures_section(a).into_iter().collect()
}

fn failures_section(a: &Analysis) -> Option<Section> {
    (!a.failures.is_empty()).then(|| {
        Section::new(
            "failures",
            "Failed runs",
            vec![Block::List(
                a.failures
                    .iter()
                    .map(|f| run_line(&f.env, &f.label, f.round, &f.error))
                    .collect(),
            )],
        )
    })
}

pub(crate) fn fleet_view(f: &Fleet) -> Section {
    if f.rows.is_empty() {
        return Section::new(
            "fleet",
            "Fleet view",
            vec![Block::Para(
                "No environment besides the baseline has results on any host.".into(),
            )],
        );
    }
    let rows = f
        .rows
        .iter()
        .map(|r| {
            let (range, iqr) = fleet_spread(r);
            let per_host: Vec<String> = r
                .points
                .iter()
                .map(|p| {
                    format!(
                        "{} {}{}",
                        p.host,
                        r.measure.show(p.value),
                        if p.outlier { "*" } else { "" }
                    )
                })
                .collect();
            Row {
                group: r.label.clone(),
                cells: vec![
                    r.kind.clone().into(),
                    r.metric.clone().into(),
                    r.measure.label().into(),
                    r.n.to_string().into(),
                    r.measure.show(r.median).into(),
                    range.into(),
                    iqr.into(),
                    if r.outliers.is_empty() {
                        "none".to_string()
                    } else {
                        r.outliers.join(", ")
                    }
                    .into(),
                    per_host.join(", ").into(),
                ],
                flagged: !r.outliers.is_empty(),
            }
        })
        .collect();
    Section::new(
        "fleet",
        "Fleet view (per entry, headline metric and environment kind)",
        vec![
            Block::Note("*: an outlier host.".into()),
            Block::Table(Table {
                group: Some("entry"),
                columns: vec![
                    Column::text("kind", 10),
                    Column::text("metric", 24),
                    Column::text("measure", 0),
                    Column::num("hosts"),
                    Column::num("median"),
                    Column::num("min … max"),
                    Column::num("IQR"),
                    Column::text("outliers", 0),
                    Column::text("per host", 0),
                ],
                rows,
            }),
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
