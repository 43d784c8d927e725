//! Stacked horizontal bars: a quantity split into parts per bar (an
//! environment's host CPU per unit of work by where it went, the
//! baseline's beside it), a legend of the parts above, each bar's total at
//! its end. Each part is a `mark` with its figure in a `<title>`.

use std::fmt::Write as _;

use super::draw::{color, esc, open, text_width, title_width, Text, AXIS};
use crate::report::model::StackedBar;
use crate::report::text::num;

/// A bar's height and the gap below it.
const ROW: f64 = 22.0;
const BAR_H: f64 = 16.0;
/// The plot's width.
const PLOT: f64 = 360.0;

/// The chart; parts are coloured in the order `parts` names them.
pub(crate) fn stacked_chart(
    title: &str,
    unit: &str,
    parts: &[String],
    bars: &[StackedBar],
) -> String {
    let label_w = bars
        .iter()
        .map(|b| text_width(&b.label, AXIS) + 12.0)
        .fold(60.0, f64::max)
        .min(200.0);
    let total = |b: &StackedBar| b.segments.iter().filter(|v| v.is_finite()).sum::<f64>();
    let max = bars.iter().map(total).fold(0.0, f64::max);
    let scale = if max > 0.0 { PLOT / max } else { 0.0 };
    let legend_w: f64 = parts.iter().map(|p| text_width(p, AXIS) + 26.0).sum();
    let w = (label_w + PLOT + 90.0)
        .max(title_width(title))
        .max(legend_w + 20.0);
    let top = 52.0;
    let h = top + ROW * bars.len() as f64 + 26.0;
    let mut s = open(w, h, "stacked", title);
    // The legend: a swatch and the part's name each.
    let mut x = 10.0;
    for (i, p) in parts.iter().enumerate() {
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="30" width="10" height="10" fill="{}"/>"#,
            color(i)
        );
        Text {
            x: x + 14.0,
            y: 39.0,
            class: "a",
            anchor: "start",
        }
        .line(&mut s, p, 200.0);
        x += text_width(p, AXIS) + 26.0;
    }
    for (row, b) in bars.iter().enumerate() {
        let y = top + row as f64 * ROW;
        Text {
            x: label_w - 6.0,
            y: y + BAR_H - 4.0,
            class: "a",
            anchor: "end",
        }
        .line(&mut s, &b.label, label_w - 10.0);
        let mut at = label_w;
        for (i, v) in b.segments.iter().enumerate() {
            if !(v.is_finite() && *v > 0.0) {
                continue;
            }
            let width = v * scale;
            let part = parts.get(i).map_or("", String::as_str);
            let _ = write!(
                s,
                r#"<rect class="mark" x="{at:.1}" y="{y:.1}" width="{width:.1}" height="{BAR_H}" fill="{}"><title>{}: {} {}</title></rect>"#,
                color(i),
                esc(&format!("{} {part}", b.label)),
                num(*v),
                esc(unit)
            );
            at += width;
        }
        Text {
            x: at + 4.0,
            y: y + BAR_H - 4.0,
            class: "v",
            anchor: "start",
        }
        .line(&mut s, &format!("{} {unit}", num(total(b))), 90.0);
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_part_is_a_mark_within_the_chart_and_the_longest_bar_fills_the_plot() {
        let bars = vec![
            StackedBar {
                label: "host".into(),
                env: 0,
                segments: vec![10.0, 0.0, 1.0],
            },
            StackedBar {
                label: "docker".into(),
                env: 1,
                segments: vec![10.0, 8.0, 2.0],
            },
        ];
        let parts = vec!["own".to_string(), "helpers".into(), "softirq".into()];
        let svg = stacked_chart("cpu: host CPU per event", "µs", &parts, &bars);
        // A zero part draws nothing: 2 + 3 marks.
        assert_eq!(svg.matches(r#"class="mark""#).count(), 5, "{svg}");
        assert!(
            svg.contains("docker helpers: 8 µs") || svg.contains("docker helpers: 8.00 µs"),
            "{svg}"
        );
        let widths: Vec<f64> = svg
            .split(r#"class="mark""#)
            .skip(1)
            .filter_map(|p| {
                let at = p.find("width=\"")? + 7;
                p[at..at + p[at..].find('"')?].parse().ok()
            })
            .collect();
        let docker: f64 = widths[2..].iter().sum();
        assert!((docker - PLOT).abs() < 0.5, "{widths:?}");
    }
}
