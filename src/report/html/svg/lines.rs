//! The line chart of a one-way sweep: a line per environment against the
//! swept value, with its 95% intervals as a shaded band, x on a log2 axis
//! over a wide sweep, and the legend below the plot.

use std::fmt::Write as _;

use super::axis::{tick_texts, ValueAxis};
use super::draw::{abbreviate, color, esc, open, text_width, title_width, Text, AXIS};
use crate::report::model::Series;
use crate::report::text::num;

/// The plot's width.
const PLOT: f64 = 440.0;

/// Lines over a swept parameter, one per environment, with their 95%
/// intervals as shaded bands; x on a log2 axis when the values are positive
/// and span a factor of 8 or more. The legend sits below the plot.
pub(crate) fn line_chart(title: &str, xlabel: &str, unit: &str, series: &[Series]) -> String {
    let (top, plot_h) = (44.0, 200.0);
    let points = || series.iter().flat_map(|s| s.1.iter());
    let finite = |v: f64| v.is_finite().then_some(v);
    let ys = || points().flat_map(|p| [p.1, p.2, p.3]).filter_map(finite);
    let axis = ValueAxis::for_values(ys(), points().map(|p| p.1).filter_map(finite), top, plot_h);
    let left = axis.left();
    let x = XScale::new(points().map(|p| p.0), left);
    let names: Vec<String> = series
        .iter()
        .map(|s| abbreviate(&s.0, 240.0, AXIS))
        .collect();
    let w = (left + PLOT + 10.0).max(title_width(title));
    let (legend, rows) = legend(&names, left, w);
    let legend_top = top + plot_h + 50.0;
    let h = legend_top + rows as f64 * 18.0 + 6.0;
    let mut s = open(w, h, "lines", title);
    axis.write(&mut s, left, left + PLOT, unit);
    x.write(&mut s, top + plot_h, xlabel);
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = color(i);
        let what = Labels { name, xlabel, unit };
        line(&mut s, &x, &axis, pts, c, &what);
        let (lx, row) = legend[i];
        let ly = legend_top + row as f64 * 18.0;
        let _ = write!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{c}" class="key"/>"#,
            ly - 10.0
        );
        Text {
            x: lx + 16.0,
            y: ly,
            class: "a",
            anchor: "start",
        }
        .write(&mut s, &[names[i].clone()], name, "");
    }
    s.push_str("</svg>");
    s
}

/// The swept values and where each sits across the plot that starts at
/// `left`: linear, or log2 when they are positive and span a factor of 8.
struct XScale {
    /// The distinct values, in order.
    values: Vec<f64>,
    min: f64,
    max: f64,
    log: bool,
    left: f64,
}

impl XScale {
    fn new(values: impl Iterator<Item = f64>, left: f64) -> XScale {
        let mut values: Vec<f64> = values.filter(|x| x.is_finite()).collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        let (min, max) = (
            values.first().copied().unwrap_or(0.0),
            values.last().copied().unwrap_or(1.0),
        );
        XScale {
            log: min > 0.0 && max / min >= 8.0,
            values,
            min,
            max,
            left,
        }
    }

    /// The x of value `v`, kept within the plot.
    fn x(&self, v: f64) -> f64 {
        let (min, max) = (self.min, self.max);
        let f = if max <= min {
            0.5
        } else if self.log {
            (v.ln() - min.ln()) / (max.ln() - min.ln())
        } else {
            (v - min) / (max - min)
        };
        self.left + 16.0 + (PLOT - 32.0) * f.clamp(0.0, 1.0)
    }

    /// Under the plot's `bottom`: each value's label where it does not
    /// touch the one before, and the axis's name.
    fn write(&self, s: &mut String, bottom: f64, xlabel: &str) {
        let mut right_edge = f64::MIN;
        for (t, label) in self.values.iter().zip(tick_texts(&self.values)) {
            let half = text_width(&label, AXIS) / 2.0;
            if self.x(*t) - half < right_edge + 6.0 {
                continue;
            }
            right_edge = self.x(*t) + half;
            Text {
                x: self.x(*t),
                y: bottom + 16.0,
                class: "a",
                anchor: "middle",
            }
            .line(s, &label, f64::INFINITY);
        }
        Text {
            x: self.left + PLOT / 2.0,
            y: bottom + 34.0,
            class: "a",
            anchor: "middle",
        }
        .line(
            s,
            &if self.log {
                format!("{xlabel} (log scale)")
            } else {
                xlabel.to_string()
            },
            PLOT,
        );
    }
}

/// The legend's items laid out in rows from `left` within a chart `w`
/// wide: each item's x and row, and how many rows.
fn legend(names: &[String], left: f64, w: f64) -> (Vec<(f64, usize)>, usize) {
    let mut items = Vec::new();
    let (mut lx, mut row) = (left, 0usize);
    for name in names {
        let item = 16.0 + text_width(name, AXIS) + 16.0;
        if lx + item > w - 10.0 && lx > left {
            lx = left;
            row += 1;
        }
        items.push((lx, row));
        lx += item;
    }
    (items, row + 1)
}

/// What a line's marks say in their titles.
struct Labels<'a> {
    /// The environment.
    name: &'a str,
    xlabel: &'a str,
    unit: &'a str,
}

/// One environment's line in colour `c`: its intervals as a band (or a
/// whisker each where fewer than two have one), the line through its
/// means, and each mean a point.
fn line(
    s: &mut String,
    x: &XScale,
    axis: &ValueAxis,
    pts: &[(f64, f64, f64, f64)],
    c: &str,
    what: &Labels,
) {
    let name = what.name;
    let banded: Vec<_> = pts
        .iter()
        .filter(|p| p.0.is_finite() && p.2.is_finite() && p.3.is_finite())
        .collect();
    if banded.len() >= 2 {
        let upper = banded.iter().map(|p| (x.x(p.0), axis.y(p.3)));
        let lower = banded.iter().rev().map(|p| (x.x(p.0), axis.y(p.2)));
        let d: Vec<String> = upper
            .chain(lower)
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            s,
            r#"<polygon points="{}" fill="{c}" fill-opacity="0.15" class="mark band"><title>{}: 95% intervals</title></polygon>"#,
            d.join(" "),
            esc(name)
        );
    } else {
        for p in banded {
            let _ = write!(
                s,
                r#"<path d="M{x:.1} {:.1}V{:.1}" stroke="{c}" stroke-width="1" class="mark ci"><title>{}: 95% interval [{}, {}]</title></path>"#,
                axis.y(p.2),
                axis.y(p.3),
                esc(name),
                num(p.2),
                num(p.3),
                x = x.x(p.0)
            );
        }
    }
    let drawn: Vec<_> = pts
        .iter()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect();
    if drawn.len() >= 2 {
        let path: Vec<String> = drawn
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let at = if k == 0 { "M" } else { "L" };
                format!("{at}{:.1} {:.1}", x.x(p.0), axis.y(p.1))
            })
            .collect();
        let _ = write!(
            s,
            r#"<path d="{}" fill="none" stroke="{c}" stroke-width="2" class="mark line"><title>{}</title></path>"#,
            path.join(""),
            esc(name)
        );
    }
    for p in drawn {
        let _ = write!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{c}" class="mark point"><title>{} at {}={}: {} {} [{}, {}]</title></circle>"#,
            x.x(p.0),
            axis.y(p.1),
            esc(name),
            esc(what.xlabel),
            num(p.0),
            num(p.1),
            esc(what.unit),
            num(p.2),
            num(p.3)
        );
    }
}
