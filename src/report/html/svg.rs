//! SVG primitives for the HTML report: escaping, the palette, bar charts
//! with 95% whiskers, overhead bars and line charts.

use std::fmt::Write as _;

use super::super::num;
use crate::stats::Verdict;

pub(super) const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

/// Escapes text for HTML and SVG content and attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

pub(super) fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

pub(super) struct Bar {
    pub(super) label: String,
    pub(super) value: f64,
    pub(super) lower: f64,
    pub(super) upper: f64,
    pub(super) color: String,
}

/// Vertical bars with 95% whiskers, starting at zero.
pub(super) fn bar_chart(title: &str, unit: &str, bars: &[Bar]) -> String {
    let (w, h, left, bottom, top) = (
        120.0 * bars.len().max(2) as f64 + 80.0,
        260.0,
        70.0,
        60.0,
        30.0,
    );
    let max = bars
        .iter()
        .map(|b| b.upper.max(b.value))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-12)
        * 1.1;
    let y = |v: f64| top + (h - top - bottom) * (1.0 - v / max);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img"><title>{}</title><text x="{left}" y="18" class="t">{}</text>"#,
        esc(title),
        esc(title)
    );
    for k in 0..=4 {
        let v = max * k as f64 / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" class="a" text-anchor="end">{}</text>"##,
            w - 10.0,
            left - 6.0,
            y(v) + 4.0,
            num(v),
            y = y(v)
        );
    }
    let _ = write!(
        s,
        r#"<text x="14" y="{:.1}" class="a" transform="rotate(-90 14 {:.1})" text-anchor="middle">{}</text>"#,
        (h - bottom + top) / 2.0,
        (h - bottom + top) / 2.0,
        esc(unit)
    );
    for (i, b) in bars.iter().enumerate() {
        let x = left + 20.0 + i as f64 * 120.0;
        let (y0, y1) = (y(b.value.max(0.0)), y(0.0));
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{y0:.1}" width="70" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"##,
            (y1 - y0).max(0.0),
            b.color,
            esc(&b.label),
            num(b.value)
        );
        if b.lower.is_finite() && b.upper.is_finite() {
            let cx = x + 35.0;
            let _ = write!(
                s,
                r##"<path d="M{cx:.1} {:.1}V{:.1}M{:.1} {:.1}H{:.1}M{:.1} {:.1}H{:.1}" stroke="#222" stroke-width="1.5"/>"##,
                y(b.lower.max(0.0)),
                y(b.upper),
                cx - 8.0,
                y(b.upper),
                cx + 8.0,
                cx - 8.0,
                y(b.lower.max(0.0)),
                cx + 8.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="a" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" class="v" text-anchor="middle">{}</text>"#,
            x + 35.0,
            h - bottom + 16.0,
            esc(&short(&b.label, 18)),
            x + 35.0,
            y0 - 6.0,
            num(b.value)
        );
    }
    s.push_str("</svg>");
    s
}

/// Horizontal bars of overhead in percent (negative: faster), with whiskers.
pub(super) fn overhead_chart(title: &str, rows: &[(String, f64, f64, f64, Verdict)]) -> String {
    let row_h = 22.0;
    let (w, left, top) = (860.0, 300.0, 34.0);
    let h = top + rows.len() as f64 * row_h + 30.0;
    let span = rows
        .iter()
        .flat_map(|r| [r.1.abs(), r.2.abs(), r.3.abs()])
        .filter(|v| v.is_finite())
        .fold(5.0f64, f64::max)
        * 1.1;
    let x = |v: f64| left + (w - left - 20.0) * (v + span) / (2.0 * span);
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img"><title>{t}</title><text x="10" y="18" class="t">{t}</text><line x1="{z:.1}" x2="{z:.1}" y1="{top}" y2="{:.1}" stroke="#888"/>"##,
        h - 24.0,
        t = esc(title),
        z = x(0.0)
    );
    for (k, v) in [-span, -span / 2.0, 0.0, span / 2.0, span]
        .iter()
        .enumerate()
    {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="a" text-anchor="middle">{:+.0}%</text>"#,
            x(*v),
            h - 8.0,
            v
        );
        let _ = k;
    }
    for (i, (label, v, lo, hi, verdict)) in rows.iter().enumerate() {
        let yy = top + i as f64 * row_h;
        let fill = match verdict {
            Verdict::Slower => "#e15759",
            Verdict::Faster => "#59a14f",
            Verdict::NoSignificantDifference => "#b0b0b0",
        };
        let (a, b) = (x(0.0).min(x(*v)), x(0.0).max(x(*v)));
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" class="a" text-anchor="end">{}</text><rect x="{a:.1}" y="{:.1}" width="{:.1}" height="14" fill="{fill}"><title>{}: {:+.1}% ({})</title></rect>"##,
            left - 8.0,
            yy + 12.0,
            esc(&short(label, 44)),
            yy + 2.0,
            (b - a).max(1.0),
            esc(label),
            v,
            verdict.label()
        );
        if lo.is_finite() && hi.is_finite() {
            let _ = write!(
                s,
                r##"<path d="M{:.1} {:.1}H{:.1}" stroke="#222" stroke-width="1.5"/>"##,
                x(*lo),
                yy + 9.0,
                x(*hi)
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// (x, mean, lower, upper) points of one environment's line.
pub(super) type Series = (String, Vec<(f64, f64, f64, f64)>);

/// Lines over a swept parameter, one per environment, with 95% whiskers.
pub(super) fn line_chart(title: &str, xlabel: &str, unit: &str, series: &[Series]) -> String {
    let (w, h, left, bottom, top) = (620.0, 300.0, 70.0, 50.0, 30.0);
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .collect();
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.3.max(p.1)))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-12)
        * 1.1;
    let log = xmin > 0.0 && xmax / xmin >= 8.0;
    let tx = |x: f64| {
        let f = if log {
            (x.ln() - xmin.ln()) / (xmax.ln() - xmin.ln()).max(1e-12)
        } else {
            (x - xmin) / (xmax - xmin).max(1e-12)
        };
        left + 20.0 + (w - left - 140.0) * f
    };
    let ty = |y: f64| top + (h - top - bottom) * (1.0 - y / ymax);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img"><title>{t}</title><text x="{left}" y="18" class="t">{t}</text>"#,
        t = esc(title)
    );
    for k in 0..=4 {
        let v = ymax * k as f64 / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" class="a" text-anchor="end">{}</text>"##,
            w - 120.0,
            left - 6.0,
            ty(v) + 4.0,
            num(v),
            y = ty(v)
        );
    }
    let mut ticks: Vec<f64> = xs.clone();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    for t in &ticks {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="a" text-anchor="middle">{}</text>"#,
            tx(*t),
            h - bottom + 16.0,
            num(*t)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" class="a" text-anchor="middle">{}</text><text x="14" y="{:.1}" class="a" transform="rotate(-90 14 {:.1})" text-anchor="middle">{}</text>"#,
        (left + w - 120.0) / 2.0,
        h - 10.0,
        esc(xlabel),
        (h - bottom + top) / 2.0,
        (h - bottom + top) / 2.0,
        esc(unit)
    );
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = color(i);
        let path: Vec<String> = pts
            .iter()
            .enumerate()
            .map(|(k, p)| {
                format!(
                    "{}{:.1} {:.1}",
                    if k == 0 { "M" } else { "L" },
                    tx(p.0),
                    ty(p.1)
                )
            })
            .collect();
        let _ = write!(
            s,
            r#"<path d="{}" fill="none" stroke="{c}" stroke-width="2"/>"#,
            path.join("")
        );
        for p in pts {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{c}"/>"#,
                tx(p.0),
                ty(p.1)
            );
            if p.2.is_finite() && p.3.is_finite() {
                let _ = write!(
                    s,
                    r#"<path d="M{:.1} {:.1}V{:.1}" stroke="{c}" stroke-width="1"/>"#,
                    tx(p.0),
                    ty(p.2.max(0.0)),
                    ty(p.3)
                );
            }
        }
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="{c}"/><text x="{:.1}" y="{:.1}" class="a">{}</text>"#,
            w - 110.0,
            top + i as f64 * 18.0,
            w - 94.0,
            top + 10.0 + i as f64 * 18.0,
            esc(&short(name, 14))
        );
    }
    s.push_str("</svg>");
    s
}

pub(super) fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
