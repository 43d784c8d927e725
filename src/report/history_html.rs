//! `virtperf history --format html`: one self-contained page (no script,
//! no network) with one trend chart (inline SVG) per series: the slowdown
//! of each comparison with its 95% interval as a band, a dashed line at
//! each change point with its sentence, and on hover each point's
//! comparison, date, slowdown, verdict and the facts that changed there.
//! Every string from a store is escaped.

use std::fmt::Write as _;

use crate::analysis::history::{History, Series};
use crate::report::html::esc;

const W: f64 = 760.0;
const H: f64 = 260.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 44.0;

/// The whole page.
pub fn page(h: &History) -> String {
    let mut out = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>virtperf history</title><style>\
         body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}\
         svg{border:1px solid #eee;margin:6px 0;max-width:100%;height:auto}.t{font-size:13px;font-weight:600}\
         .a{font-size:11px;fill:#444}.chg{color:#c0392b}</style></head><body>",
    );
    let _ = write!(
        out,
        "<h1>History of {} comparisons</h1><p>Change points: {}.</p><ul>",
        h.comparisons.len(),
        esc(&h.method)
    );
    let mut any = false;
    for s in &h.series {
        for c in &s.changes {
            any = true;
            let _ = write!(out, "<li class=\"chg\">{}</li>", esc(&h.sentence(s, c)));
        }
    }
    if !any {
        out.push_str("<li>No change point in any series.</li>");
    }
    out.push_str("</ul>");
    for s in &h.series {
        let _ = write!(
            out,
            "<h2>{}</h2>{}",
            esc(&format!("{} / {} / {}", s.env, s.entry, s.metric)),
            chart(h, s)
        );
    }
    out.push_str("</body></html>\n");
    out
}

/// Five ticks of the slowdown axis and a dashed line at 1×.
fn axis(svg: &mut String, lo: f64, hi: f64, y: &dyn Fn(f64) -> f64) {
    for k in 0..=4 {
        let v = lo + (hi - lo) * k as f64 / 4.0;
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text class=\"a\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.2}×</text>",
            W - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0,
            y = y(v)
        );
    }
    if (lo..=hi).contains(&1.0) {
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#999\" stroke-dasharray=\"2 3\"/>",
            W - RIGHT,
            y = y(1.0)
        );
    }
}

/// One series' trend chart.
pub fn chart(h: &History, s: &Series) -> String {
    let n = s.points.len();
    let (lo, hi) = s.points.iter().fold((f64::MAX, f64::MIN), |(a, b), p| {
        (
            a.min(p.lower).min(p.slowdown),
            b.max(p.upper).max(p.slowdown),
        )
    });
    let (lo, hi) = if lo < hi {
        (lo, hi)
    } else {
        (lo - 0.05, hi + 0.05)
    };
    let pad = (hi - lo) * 0.08;
    let (lo, hi) = (lo - pad, hi + pad);
    let x = |i: usize| LEFT + (W - LEFT - RIGHT) * (i as f64 + 0.5) / n.max(1) as f64;
    let y = |v: f64| TOP + (H - TOP - BOTTOM) * (hi - v) / (hi - lo);
    let mut svg = format!(
        "<svg class=\"trend\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\">\
         <title>{}</title><text class=\"t\" x=\"{LEFT}\" y=\"18\">{} (× slower than {}; band: 95% interval)</text>",
        esc(&format!("{} {} {}", s.env, s.entry, s.metric)),
        // The heading above names the series whole; a long entry's name ran
        // past the chart's right edge here.
        esc(&s.metric),
        esc(h.comparisons.first().map_or("", |c| c.baseline.as_str()))
    );
    axis(&mut svg, lo, hi, &y);
    // The interval band, then the line and points.
    let upper: Vec<String> = (0..n)
        .map(|i| format!("{:.1},{:.1}", x(i), y(s.points[i].upper)))
        .collect();
    let lower: Vec<String> = (0..n)
        .rev()
        .map(|i| format!("{:.1},{:.1}", x(i), y(s.points[i].lower)))
        .collect();
    let _ = write!(
        svg,
        "<polygon class=\"band\" points=\"{} {}\" fill=\"#1f5fa8\" fill-opacity=\"0.15\"/>",
        upper.join(" "),
        lower.join(" ")
    );
    let line: Vec<String> = (0..n)
        .map(|i| format!("{:.1},{:.1}", x(i), y(s.points[i].slowdown)))
        .collect();
    let _ = write!(
        svg,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"1.5\"/>",
        line.join(" ")
    );
    for c in &s.changes {
        let cx = (x(c.at - 1) + x(c.at)) / 2.0;
        let _ = write!(
            svg,
            "<line class=\"change\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{TOP}\" y2=\"{}\" stroke=\"#c0392b\" stroke-dasharray=\"5 3\"><title>{}</title></line>",
            H - BOTTOM,
            esc(&h.sentence(s, c))
        );
    }
    for (i, p) in s.points.iter().enumerate() {
        let cmp = &h.comparisons[p.comparison];
        let changed = s
            .fact_changes
            .iter()
            .find(|(at, _)| *at == i)
            .map(|(_, d)| format!("\nchanged: {}", d.join("; ")))
            .unwrap_or_default();
        let facts: Vec<String> = p.facts.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let _ = write!(
            svg,
            "<circle class=\"mark\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"#1f5fa8\"><title>{}</title></circle>\
             <text class=\"a\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x(i),
            y(p.slowdown),
            esc(&format!(
                "comparison {} ({}): {:.3}× [{:.3}, {:.3}], {}{changed}\n{}",
                cmp.name, cmp.started_at, p.slowdown, p.lower, p.upper, p.verdict, facts.join("\n")
            )),
            x(i),
            H - BOTTOM + 16.0,
            esc(&cmp.name)
        );
    }
    svg.push_str("</svg>");
    svg
}
