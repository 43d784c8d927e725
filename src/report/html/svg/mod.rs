//! The SVG charts of the HTML report, one file per kind: bars with 95%
//! whiskers and each run (`bars`), slowdown factors on a log axis
//! (`ratio`), lines over a swept parameter (`lines`) and a heat map of
//! slowdowns over two parameters (`heat`), drawn with `draw`'s text and
//! canvas primitives on `axis`' scales.
//!
//! Every chart scales down with its box (a viewBox, `max-width:100%`) and
//! draws everything inside it: a value beyond the axis is an arrow at the
//! edge with its figure, a label too long for its column is wrapped or cut
//! with "…" and keeps its full text in a `<title>`. A browser test relies on
//! two conventions: every data mark has the class `mark` and a `<title>`
//! with its figure, every text the class `label`.

mod axis;
mod bars;
mod draw;
mod heat;
mod lines;
mod ratio;

pub(crate) use bars::bar_chart;
pub use draw::esc;
pub(crate) use heat::heat_map;
pub(crate) use lines::line_chart;
pub(crate) use ratio::ratio_chart;

#[cfg(test)]
mod tests;
