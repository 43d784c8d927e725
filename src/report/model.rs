//! The types of the document every layout format lays out: titled
//! sections of paragraphs, tables and figures. `report::document` builds
//! one from an `Analysis` (or a `Fleet`), each section by its own builder
//! in `sections/`; the layouts decide nothing about content: the terminal
//! prints the text and tables, markdown the same as pipe tables, HTML
//! everything with the figures as inline SVG (and `--figures` each one as
//! a file).

use crate::stats::Outcome;

/// What a report shows besides the headline summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct View {
    /// Every metric of every entry (`--detail`); formats that always carry
    /// everything (CSV, JSON) ignore it.
    pub detail: bool,
}

pub struct Document {
    /// What it is, without its particulars: a browser tab's title.
    pub short_title: &'static str,
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
    /// Stacked horizontal bars: a quantity split into parts (`parts`
    /// names them, each bar's `segments` in that order).
    Stacked {
        unit: String,
        parts: Vec<String>,
        bars: Vec<StackedBar>,
    },
    /// A run second by second (seed 002's view): per view (inside the
    /// environment, the host), its CPU shares stacked and its disks'
    /// bytes a second, sparkline-sized.
    Timeline { views: Vec<TimelineView> },
    /// A two-way sweep: slowdown against the baseline per cell.
    Heat {
        xlabel: String,
        ylabel: String,
        xs: Vec<String>,
        ys: Vec<String>,
        cells: Vec<(usize, usize, f64, String)>,
    },
}

/// One view of a run's seconds: where they were sampled ("inside",
/// "host"), the samples, and whether sampling stopped at its cap.
pub struct TimelineView {
    pub name: String,
    pub samples: Vec<crate::core::series::Sample>,
    pub capped: bool,
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

/// One bar of a stacked chart: its label, its environment's index and its
/// parts' values.
pub struct StackedBar {
    pub label: String,
    pub env: usize,
    pub segments: Vec<f64>,
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
