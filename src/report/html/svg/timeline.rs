//! A run second by second, sparkline-sized: a strip per view (inside the
//! environment, the host) with its CPU shares stacked as areas on 0–100 %
//! and its disks' bytes a second as a line scaled to the strip's peak, a
//! shared time axis and a legend below. Every area and line is a `mark`
//! with its figure (the run's mean share, the peak rate) in a `<title>`.

use std::fmt::Write as _;

use super::draw::{esc, open, title_width, Text};
use crate::core::series::Sample;
use crate::report::model::TimelineView;
use crate::report::text::num;

/// The strip's plot size and the label column before it.
const PLOT_W: f64 = 300.0;
const STRIP_H: f64 = 40.0;
const GAP: f64 = 14.0;
const LABEL_W: f64 = 70.0;
const TOP: f64 = 32.0;

/// The CPU parts, bottom up: name, colour, share of a sample.
type Part = (&'static str, &'static str, fn(&Sample) -> f64);
const PARTS: [Part; 5] = [
    ("user", "#4e79a7", |s| s.user_pct),
    ("system", "#f28e2b", |s| s.system_pct),
    ("softirq", "#e15759", |s| s.softirq_pct),
    ("iowait", "#76b7b2", |s| s.iowait_pct),
    ("steal", "#b07aa1", |s| s.steal_pct),
];
const DISK: &str = "#222222";

/// The chart of one run's views.
pub(crate) fn timeline_chart(title: &str, views: &[TimelineView]) -> String {
    let w = (LABEL_W + PLOT_W + 20.0).max(title_width(title));
    let h = TOP + views.len() as f64 * (STRIP_H + GAP) + 34.0;
    let mut s = open(w, h, "timeline", title);
    let t_max = views
        .iter()
        .flat_map(|v| v.samples.iter().map(|x| x.t_s))
        .fold(0.0, f64::max)
        .max(1.0);
    for (row, v) in views.iter().enumerate() {
        let y0 = TOP + row as f64 * (STRIP_H + GAP);
        let label = if v.capped {
            format!("{} (capped)", v.name)
        } else {
            v.name.clone()
        };
        Text {
            x: LABEL_W - 6.0,
            y: y0 + STRIP_H / 2.0 + 4.0,
            class: "a",
            anchor: "end",
        }
        .line(&mut s, &label, LABEL_W - 8.0);
        let _ = write!(
            s,
            r##"<rect x="{LABEL_W}" y="{y0:.1}" width="{PLOT_W}" height="{STRIP_H}" fill="none" stroke="#bbbbbb" stroke-width="0.5"/>"##
        );
        strip(&mut s, v, y0, t_max);
    }
    let bottom = TOP + views.len() as f64 * (STRIP_H + GAP) - GAP + 12.0;
    for (x, anchor, text) in [
        (LABEL_W, "start", "0 s".to_string()),
        (LABEL_W + PLOT_W, "end", format!("{} s", num(t_max))),
    ] {
        Text {
            x,
            y: bottom,
            class: "a",
            anchor,
        }
        .line(&mut s, &text, 80.0);
    }
    legend(&mut s, bottom + 16.0);
    s.push_str("</svg>");
    s
}

/// One view's areas and disk line, in the strip whose top is `y0`.
fn strip(s: &mut String, v: &TimelineView, y0: f64, t_max: f64) {
    let x = |t: f64| LABEL_W + PLOT_W * (t / t_max).clamp(0.0, 1.0);
    let y = |pct: f64| y0 + STRIP_H * (1.0 - (pct / 100.0).clamp(0.0, 1.0));
    let n = v.samples.len().max(1) as f64;
    let mut below = vec![0.0; v.samples.len()];
    for (name, colour, share) in PARTS {
        let above: Vec<f64> = v
            .samples
            .iter()
            .zip(&below)
            .map(|(x, b)| b + share(x).max(0.0))
            .collect();
        let mean = v.samples.iter().map(share).sum::<f64>() / n;
        if mean > 0.0 {
            let mut pts: Vec<String> = v
                .samples
                .iter()
                .zip(&above)
                .map(|(p, a)| format!("{:.1},{:.1}", x(p.t_s), y(*a)))
                .collect();
            pts.extend(
                v.samples
                    .iter()
                    .zip(&below)
                    .rev()
                    .map(|(p, b)| format!("{:.1},{:.1}", x(p.t_s), y(*b))),
            );
            let _ = write!(
                s,
                r#"<polygon class="mark" points="{}" fill="{colour}" fill-opacity="0.85"><title>{} {name}: {} % of all CPUs on average</title></polygon>"#,
                pts.join(" "),
                esc(&v.name),
                num(mean)
            );
        }
        below = above;
    }
    disk_line(s, v, &x, y0);
}

/// The disks' bytes a second (read and written), scaled to the peak.
fn disk_line(s: &mut String, v: &TimelineView, x: &dyn Fn(f64) -> f64, y0: f64) {
    let rates: Vec<Option<f64>> = v
        .samples
        .iter()
        .map(|p| Some(p.read_bytes_per_s? + p.write_bytes_per_s?))
        .collect();
    let peak = rates.iter().flatten().fold(0.0, |a: f64, b| a.max(*b));
    if peak <= 0.0 {
        return;
    }
    let pts: Vec<String> = v
        .samples
        .iter()
        .zip(&rates)
        .filter_map(|(p, r)| {
            let y = y0 + STRIP_H * (1.0 - (*r)? / peak);
            Some(format!("{:.1},{y:.1}", x(p.t_s)))
        })
        .collect();
    let _ = write!(
        s,
        r#"<polyline class="mark" points="{}" fill="none" stroke="{DISK}" stroke-width="1.2"><title>{} disks: peak {} MB/s read and written</title></polyline>"#,
        pts.join(" "),
        esc(&v.name),
        num(peak / 1e6)
    );
    Text {
        x: LABEL_W + PLOT_W + 4.0,
        y: y0 + 9.0,
        class: "v",
        anchor: "start",
    }
    .line(s, &format!("{} MB/s", num(peak / 1e6)), 80.0);
}

/// The parts' swatches and the disk line's, in a row at `y`.
fn legend(s: &mut String, y: f64) {
    let mut x = LABEL_W;
    let items = PARTS.iter().map(|p| (p.0, p.1)).chain([("disk B/s", DISK)]);
    for (name, colour) in items {
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="8" height="8" fill="{colour}"/>"#,
            y - 8.0
        );
        Text {
            x: x + 11.0,
            y,
            class: "a",
            anchor: "start",
        }
        .line(s, name, 60.0);
        x += 13.0 + super::draw::text_width(name, super::draw::AXIS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(name: &str, n: usize, disk: bool) -> TimelineView {
        TimelineView {
            name: name.into(),
            samples: (0..n)
                .map(|i| Sample {
                    t_s: i as f64 + 1.0,
                    user_pct: 40.0,
                    system_pct: 10.0,
                    softirq_pct: 5.0,
                    read_bytes_per_s: disk.then_some(1e6),
                    write_bytes_per_s: disk.then_some(i as f64 * 1e6),
                    ..Sample::default()
                })
                .collect(),
            capped: false,
        }
    }

    /// Every number in every `points` attribute of the chart's marks.
    fn points(svg: &str) -> Vec<(f64, f64)> {
        svg.split(r#"points=""#)
            .skip(1)
            .flat_map(|p| p[..p.find('"').unwrap()].split(' ').map(str::to_string))
            .map(|xy| {
                let (x, y) = xy.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn each_view_draws_its_parts_and_disk_line_inside_the_chart() {
        let svg = timeline_chart(
            "docker, round 1",
            &[view("inside", 10, true), view("host", 10, false)],
        );
        // Three parts with a share in each view, one disk line.
        assert_eq!(svg.matches(r#"class="mark""#).count(), 7, "{svg}");
        assert!(svg.contains("inside user: 40.0 % of all CPUs"), "{svg}");
        assert!(svg.contains("inside disks: peak 10.0 MB/s"), "{svg}");
        let (w, h) = (LABEL_W + PLOT_W + 20.0, TOP + 2.0 * (STRIP_H + GAP) + 34.0);
        for (x, y) in points(&svg) {
            assert!((LABEL_W..=LABEL_W + PLOT_W).contains(&x), "{x}");
            assert!((0.0..=h).contains(&y) && x <= w, "{y}");
        }
        // The stack's top is the parts' sum: 55 % of the strip.
        let top = TOP + STRIP_H * (1.0 - 0.55);
        assert!(points(&svg).iter().any(|p| (p.1 - top).abs() < 0.06));
    }

    #[test]
    fn a_capped_view_says_so_and_an_empty_one_draws_no_mark() {
        let mut v = view("host", 3, false);
        v.capped = true;
        let svg = timeline_chart("t", &[v, view("inside", 0, false)]);
        assert!(svg.contains("host (capped)"), "{svg}");
        assert_eq!(svg.matches(r#"class="mark""#).count(), 3, "{svg}");
    }
}
