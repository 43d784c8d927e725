//! The bar chart of an entry's headline metric: each environment's mean as
//! a bar with its 95% whiskers, starting at zero (or on a log axis where
//! the means lie far apart), each run a point beside its bar.

use std::fmt::Write as _;

use super::axis::ValueAxis;
use super::draw::{color, esc, line_pitch, open, text_width, title_width, wrap, Text, AXIS, VALUE};
use crate::report::model::BarData;
use crate::report::text::num;

/// A bar's width.
const BAR: f64 = 40.0;

/// Vertical bars with 95% whiskers, starting at zero, each run a point
/// beside its bar; labels wrapped onto two lines of at most 130 px.
pub(crate) fn bar_chart(title: &str, unit: &str, bars: &[BarData]) -> String {
    let labels: Vec<Vec<String>> = bars
        .iter()
        .map(|b| wrap(&b.label, 130.0, AXIS, 2))
        .collect();
    let col = labels
        .iter()
        .flatten()
        .map(|l| text_width(l, AXIS) + 12.0)
        .chain(bars.iter().map(|b| text_width(&num(b.value), VALUE) + 12.0))
        .fold(BAR + 40.0, f64::max);
    let finite = |v: f64| v.is_finite().then_some(v);
    let values = || {
        bars.iter().flat_map(|b| {
            [b.value, b.lower, b.upper]
                .into_iter()
                .chain(b.runs.iter().copied())
                .filter_map(finite)
        })
    };
    let (top, plot_h) = (44.0, 180.0);
    let axis = ValueAxis::for_values(
        values(),
        bars.iter().map(|b| b.value).filter_map(finite),
        top,
        plot_h,
    );
    let left = axis.left();
    let lines = labels.iter().map(Vec::len).max().unwrap_or(1) as f64;
    let w = (left + col * bars.len().max(1) as f64 + 10.0).max(title_width(title));
    let h = top + plot_h + 16.0 + lines * line_pitch(AXIS) + 4.0;
    let mut s = open(w, h, "bars", title);
    axis.write(&mut s, left, w - 10.0, unit);
    // Bars stand on zero, or on a log axis on its floor.
    let zero = axis.y(if axis.log { axis.lo() } else { 0.0 });
    for (i, (b, label)) in bars.iter().zip(&labels).enumerate() {
        let mid = left + (i as f64 + 0.5) * col;
        bar(&mut s, &axis, b, mid, zero, top);
        Text {
            x: mid,
            y: top + plot_h + 16.0,
            class: "a",
            anchor: "middle",
        }
        .write(&mut s, label, &b.label, "");
    }
    s.push_str("</svg>");
    s
}

/// One bar centred at `mid` standing on `zero`: its mean, its interval,
/// the mean's figure above them (below the plot's `top`) and each run
/// beside it.
fn bar(s: &mut String, axis: &ValueAxis, b: &BarData, mid: f64, zero: f64, top: f64) {
    let x = mid - (BAR + 22.0) / 2.0;
    let cx = x + BAR / 2.0;
    let mut above = zero;
    if b.value.is_finite() {
        let yv = axis.y(b.value);
        above = above.min(yv);
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{:.1}" width="{BAR}" height="{:.1}" fill="{}" class="mark bar"><title>{}: {}</title></rect>"##,
            yv.min(zero),
            (yv - zero).abs().max(0.5),
            color(b.env),
            esc(&b.label),
            num(b.value)
        );
    }
    if b.lower.is_finite() && b.upper.is_finite() {
        let (y0, y1) = (axis.y(b.lower), axis.y(b.upper));
        above = above.min(y1);
        let _ = write!(
            s,
            r##"<path d="M{cx:.1} {y0:.1}V{y1:.1}M{:.1} {y1:.1}H{:.1}M{:.1} {y0:.1}H{:.1}" stroke="#222" stroke-width="1.5" fill="none" class="mark ci"><title>{}: 95% interval [{}, {}]</title></path>"##,
            cx - 8.0,
            cx + 8.0,
            cx - 8.0,
            cx + 8.0,
            esc(&b.label),
            num(b.lower),
            num(b.upper)
        );
    }
    if b.value.is_finite() {
        Text {
            x: cx,
            y: (above - 5.0).max(top + 2.0),
            class: "v",
            anchor: "middle",
        }
        .line(s, &num(b.value), f64::INFINITY);
    }
    for (k, v) in b.runs.iter().enumerate() {
        if v.is_finite() {
            let _ = write!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}" stroke="#222" stroke-width="0.6" class="mark run"><title>run {}: {}</title></circle>"##,
                x + BAR + 6.0 + (k % 3) as f64 * 5.0,
                axis.y(*v),
                color(b.env),
                k + 1,
                num(*v)
            );
        }
    }
}
