//! The ratio chart: an environment's headline metrics (or the overview's
//! areas) as slowdown factors on a log axis centred at 1×, each run a
//! point, the geometric mean a diamond in its verdict's colour with its
//! 95% interval, and what lies beyond the axis an arrow at its edge.

use std::fmt::Write as _;

use super::axis::{factor, factor_text, LogAxis};
use super::draw::{
    color, esc, open, text_width, title_width, verdict_color, wrap, Text, AXIS, VALUE,
};
use crate::report::model::SlowdownRow;
use crate::report::text::percent;

/// The widest a row label of a ratio chart may be.
pub(super) const LABEL_COLUMN: f64 = 260.0;
/// The plot's width.
const PLOT: f64 = 520.0;

/// Slowdown factors on a log axis chosen from the data (within 0.001× …
/// 1000×, always with 1×; left faster, right slower): the equivalence band
/// shaded, each run a point of its environment's colour, the geometric mean
/// a diamond in its verdict's colour with its 95% interval, its figure at
/// the row's end. What lies beyond the axis is an arrow at its edge with
/// the figure beside it. Labels take at most two lines of 260 px.
/// `rows`: headline metrics of one environment, each as a factor where above
/// 1 is slower (a throughput's ratio inverted), coloured by environment.
pub(crate) fn ratio_chart(title: &str, rows: &[SlowdownRow], margin: f64) -> String {
    let labels: Vec<Vec<String>> = rows
        .iter()
        .map(|r| wrap(&r.label, LABEL_COLUMN, AXIS, 2))
        .collect();
    let two = labels.iter().any(|l| l.len() > 1);
    let row_h = if two { 36.0 } else { 26.0 };
    let label_w = labels
        .iter()
        .flatten()
        .map(|l| text_width(l, AXIS))
        .fold(60.0, f64::max);
    let left = 10.0 + label_w + 12.0;
    let values: Vec<String> = rows.iter().map(|r| factor_text(r.point)).collect();
    let value_w = values
        .iter()
        .map(|v| text_width(v, VALUE))
        .fold(40.0, f64::max);
    let top = 40.0;
    let w = (left + PLOT + 12.0 + value_w + 10.0).max(title_width(title));
    let h = top + rows.len() as f64 * row_h + 44.0;
    let axis = LogAxis::new(
        rows.iter().flat_map(|r| {
            [r.point, r.lower, r.upper]
                .into_iter()
                .chain(r.runs.iter().copied())
        }),
        margin,
        left,
        PLOT,
    );
    let mut s = open(w, h, "ratio", title);
    backdrop(&mut s, &axis, margin, top, h);
    for (i, (r, label)) in rows.iter().zip(&labels).enumerate() {
        let yy = top + i as f64 * row_h + row_h / 2.0;
        let first = if label.len() > 1 { yy - 3.0 } else { yy + 4.0 };
        Text {
            x: left - 12.0,
            y: first,
            class: "a",
            anchor: "end",
        }
        .write(&mut s, label, &r.label, "");
        row(&mut s, &axis, r, yy);
        Text {
            x: left + PLOT + 12.0,
            y: yy + 4.0,
            class: "v",
            anchor: "start",
        }
        .line(&mut s, &values[i], f64::INFINITY);
    }
    s.push_str("</svg>");
    s
}

/// Behind the rows, from `top` to the chart's height `h`: the equivalence
/// band, the ticks with their gridlines, and which way is faster.
fn backdrop(s: &mut String, axis: &LogAxis, margin: f64, top: f64, h: f64) {
    let x = |v: f64| axis.x(v);
    let bottom = h - 38.0;
    let (b0, b1) = (x(1.0 / (1.0 + margin)), x(1.0 + margin));
    let _ = write!(
        s,
        r##"<rect x="{b0:.1}" y="{top}" width="{:.1}" height="{:.1}" fill="#e8f0fa"><title>equivalence margin ±{}%</title></rect>"##,
        (b1 - b0).max(1.0),
        bottom - top,
        percent(margin)
    );
    for t in axis.ticks() {
        let xx = x(t);
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top}" y2="{bottom:.1}" stroke="{}"/>"##,
            if t == 1.0 { "#666" } else { "#e4e4e4" },
        );
        Text {
            x: xx,
            y: h - 24.0,
            class: "a",
            anchor: "middle",
        }
        .line(s, &factor(t), f64::INFINITY);
    }
    Text {
        x: axis.x0,
        y: h - 8.0,
        class: "a",
        anchor: "start",
    }
    .line(s, "← faster", f64::INFINITY);
    Text {
        x: axis.x0 + axis.width,
        y: h - 8.0,
        class: "a",
        anchor: "end",
    }
    .line(s, "slower →", f64::INFINITY);
}

/// What of one row lies beyond either end of the axis (0 left, 1 right),
/// for its arrows: each figure named, and the furthest.
#[derive(Default)]
struct Beyond {
    named: [Vec<String>; 2],
    furthest: [Option<f64>; 2],
}

impl Beyond {
    /// Notes `v` (`what` it is) if it lies beyond the axis.
    fn note(&mut self, axis: &LogAxis, v: f64, what: &str) {
        let side = axis.side(v);
        if side == 0 {
            return;
        }
        let k = usize::from(side > 0);
        self.named[k].push(format!("{what} {}", factor_text(v)));
        let further = match self.furthest[k] {
            None => true,
            Some(f) if side > 0 => v > f,
            Some(f) => v < f,
        };
        if further {
            self.furthest[k] = Some(v);
        }
    }
}

/// One row's marks at height `yy`: its runs, its interval, its mean, and
/// an arrow at each edge beyond which some of them lie.
fn row(s: &mut String, axis: &LogAxis, r: &SlowdownRow, yy: f64) {
    let vc = verdict_color(r.verdict);
    let mut beyond = Beyond::default();
    // Runs a little above the line, so they sit beside the mean.
    for (k, v) in r.runs.iter().enumerate() {
        if !(v.is_finite() && *v > 0.0) {
            continue;
        }
        if axis.side(*v) != 0 {
            beyond.note(axis, *v, &format!("run {}", k + 1));
            continue;
        }
        let _ = write!(
            s,
            r##"<circle cx="{:.1}" cy="{:.1}" r="3.2" fill="{}" stroke="#fff" stroke-width="0.6" class="mark run"><title>run {}: {}</title></circle>"##,
            axis.x(*v),
            yy - 7.0 + (k % 3) as f64 * 1.5,
            color(r.env),
            k + 1,
            factor_text(*v)
        );
    }
    if r.lower.is_finite() && r.upper.is_finite() {
        interval(s, axis, r, yy, vc);
        beyond.note(axis, r.lower, "interval from");
        beyond.note(axis, r.upper, "interval to");
    }
    let what = r.verdict.map(|v| v.label()).unwrap_or("not comparable");
    if r.point.is_finite() && axis.side(r.point) == 0 {
        let px = axis.x(r.point);
        let _ = write!(
            s,
            r##"<path d="M{:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z" fill="{vc}" class="mark mean"><title>{}: {} [{}, {}] ({what})</title></path>"##,
            px,
            yy - 1.0,
            px + 5.0,
            yy + 4.0,
            px,
            yy + 9.0,
            px - 5.0,
            yy + 4.0,
            esc(&r.label),
            factor_text(r.point),
            factor_text(r.lower),
            factor_text(r.upper),
        );
    } else if r.point.is_finite() {
        beyond.note(axis, r.point, "mean");
    }
    arrows(s, axis, r, yy, vc, &beyond);
}

/// A row's 95% interval as a line in its verdict's colour `vc`, capped at
/// each end that lies on the axis (beyond, the line runs off).
fn interval(s: &mut String, axis: &LogAxis, r: &SlowdownRow, yy: f64, vc: &str) {
    let (a, b) = (axis.x(r.lower), axis.x(r.upper));
    let cap = |v: f64, xx: f64| {
        if axis.side(v) == 0 {
            format!("M{xx:.1} {:.1}V{:.1}", yy, yy + 8.0)
        } else {
            String::new()
        }
    };
    let _ = write!(
        s,
        r##"<path d="M{a:.1} {y:.1}H{b:.1}{}{}" stroke="{vc}" stroke-width="1.6" fill="none" class="mark ci"><title>{}: 95% interval [{}, {}]</title></path>"##,
        cap(r.lower, a),
        cap(r.upper, b),
        esc(&r.label),
        factor_text(r.lower),
        factor_text(r.upper),
        y = yy + 4.0
    );
}

/// An arrow at each edge of the axis beyond which some of the row lies,
/// naming all of it, with the figure of the mean (when it is beyond) or
/// else of the furthest.
fn arrows(s: &mut String, axis: &LogAxis, r: &SlowdownRow, yy: f64, vc: &str, beyond: &Beyond) {
    for (k, sign) in [(0, -1.0), (1, 1.0)] {
        let Some(furthest) = beyond.furthest[k] else {
            continue;
        };
        let mean_beyond = axis.side(r.point) == sign as i8;
        let fill = if mean_beyond { vc } else { color(r.env) };
        let edge = if sign > 0.0 {
            axis.x0 + axis.width
        } else {
            axis.x0
        };
        let base = edge - sign * 10.0;
        let _ = write!(
            s,
            r##"<path d="M{edge:.1} {:.1}L{base:.1} {:.1}L{base:.1} {:.1}Z" fill="{fill}" class="mark offscale"><title>{}: off the scale: {}</title></path>"##,
            yy + 4.0,
            yy - 2.0,
            yy + 10.0,
            esc(&r.label),
            beyond.named[k].join(", ")
        );
        let shown = if mean_beyond { r.point } else { furthest };
        Text {
            x: edge - sign * 13.0,
            y: yy + 8.0,
            class: "v offscale",
            anchor: if sign > 0.0 { "end" } else { "start" },
        }
        .write(
            s,
            &[factor(shown)],
            &factor(shown),
            r##" stroke="#fff" stroke-width="3" paint-order="stroke""##,
        );
    }
}
