//! SVG primitives for the HTML report: escaping, the palette, bar charts
//! with 95% whiskers and each run's value, ratio charts on a log axis and
//! line charts.

use std::fmt::Write as _;

use super::super::num;
use crate::stats::Outcome;

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
    /// Each run's value, drawn as points beside the bar.
    pub(super) runs: Vec<f64>,
}

/// Vertical bars with 95% whiskers, starting at zero, each run a point
/// beside its bar; columns as wide as their labels.
pub(super) fn bar_chart(title: &str, unit: &str, bars: &[Bar]) -> String {
    let col = bars
        .iter()
        .map(|b| b.label.chars().count() as f64 * 6.6 + 16.0)
        .fold(120.0, f64::max);
    let (w, h, left, bottom, top) = (
        col * bars.len().max(2) as f64 + 80.0,
        260.0,
        70.0,
        60.0,
        30.0,
    );
    let max = bars
        .iter()
        .map(|b| b.runs.iter().copied().fold(b.upper.max(b.value), f64::max))
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
        let x = left + 20.0 + i as f64 * col;
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
            esc(&b.label),
            x + 35.0,
            y0 - 6.0,
            num(b.value)
        );
        for (k, v) in b.runs.iter().enumerate() {
            if v.is_finite() {
                let _ = write!(
                    s,
                    r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}" stroke="#222" stroke-width="0.6" class="run"><title>run {}: {}</title></circle>"##,
                    x + 80.0 + (k % 3) as f64 * 5.0,
                    y(v.max(0.0)),
                    b.color,
                    k + 1,
                    num(*v)
                );
            }
        }
    }
    s.push_str("</svg>");
    s
}

/// One row of a ratio chart: a headline metric of one entry, as a factor
/// where above 1 is slower (so a throughput's ratio is inverted).
pub(super) struct RatioRow {
    pub(super) label: String,
    /// Geometric-mean slowdown with its 95% interval.
    pub(super) point: f64,
    pub(super) lower: f64,
    pub(super) upper: f64,
    /// Each run's own slowdown against the baseline's geometric mean.
    pub(super) runs: Vec<f64>,
    pub(super) verdict: Option<Outcome>,
    pub(super) color: &'static str,
}

fn verdict_color(v: Option<Outcome>) -> &'static str {
    match v {
        Some(Outcome::Slower) => "#c0392b",
        Some(Outcome::Faster) => "#2e7d32",
        Some(Outcome::Equivalent) => "#1f5fa8",
        _ => "#555555",
    }
}

/// "0.5×", "2×", "1.25×"
fn factor(x: f64) -> String {
    if x >= 10.0 || (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}×")
    } else if x >= 1.0 {
        format!("{x:.2}×").replace(".00×", "×")
    } else {
        let s = format!("{x:.3}");
        format!("{}×", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// Slowdown factors on a log axis centred at 1× (left faster, right
/// slower), so 0.04× and 37× both read; the equivalence band shaded, each
/// run a point of its environment's colour, the geometric mean a diamond in
/// its verdict's colour with its 95% interval. The label column is as wide
/// as the longest label: nothing is cut.
pub(super) fn ratio_chart(title: &str, rows: &[RatioRow], margin: f64) -> String {
    let row_h = 26.0;
    let longest = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0) as f64;
    let (plot, top) = (640.0, 40.0);
    let left = (longest * 6.6 + 24.0).max(120.0);
    let w = left + plot + 110.0;
    let h = top + rows.len() as f64 * row_h + 40.0;
    let mut span = rows
        .iter()
        .flat_map(|r| {
            [r.point, r.lower, r.upper]
                .into_iter()
                .chain(r.runs.iter().copied())
        })
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v.ln().abs())
        .fold((1.0 + margin).ln() * 2.0, f64::max)
        .max(1.25f64.ln())
        * 1.08;
    if !span.is_finite() {
        span = 2f64.ln();
    }
    let x = |v: f64| {
        let l = if v > 0.0 { v.ln() } else { -span };
        left + plot * (l.clamp(-span, span) + span) / (2.0 * span)
    };
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" role="img" class="ratio"><title>{t}</title><text x="10" y="18" class="t">{t}</text>"##,
        t = esc(title),
    );
    // The equivalence band.
    let (b0, b1) = (x(1.0 / (1.0 + margin)), x(1.0 + margin));
    let _ = write!(
        s,
        r##"<rect x="{b0:.1}" y="{top}" width="{:.1}" height="{:.1}" fill="#e8f0fa"><title>equivalence margin ±{}%</title></rect>"##,
        (b1 - b0).max(1.0),
        h - top - 34.0,
        super::super::percent(margin)
    );
    let ticks = [
        0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.8, 1.0, 1.25, 2.0, 5.0, 10.0, 20.0,
        50.0, 100.0, 200.0, 500.0, 1000.0,
    ];
    let shown: Vec<f64> = ticks
        .iter()
        .copied()
        .filter(|t: &f64| t.ln().abs() <= span)
        .filter(|t| span < 3f64.ln() || (*t != 0.8 && *t != 1.25))
        .collect();
    for t in &shown {
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top}" y2="{:.1}" stroke="{}"/><text x="{xx:.1}" y="{:.1}" class="a" text-anchor="middle">{}</text>"##,
            h - 34.0,
            if *t == 1.0 { "#666" } else { "#e4e4e4" },
            h - 20.0,
            factor(*t),
            xx = x(*t)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" class="a">← faster</text><text x="{:.1}" y="{:.1}" class="a" text-anchor="end">slower →</text>"#,
        left,
        h - 6.0,
        left + plot,
        h - 6.0
    );
    for (i, r) in rows.iter().enumerate() {
        let yy = top + i as f64 * row_h + row_h / 2.0;
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="a" text-anchor="end">{}</text>"#,
            left - 8.0,
            yy + 4.0,
            esc(&r.label)
        );
        // Runs a little above the line, so they sit beside the mean.
        for (k, v) in r.runs.iter().enumerate() {
            if !(v.is_finite() && *v > 0.0) {
                continue;
            }
            let _ = write!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="3.2" fill="{}" stroke="#fff" stroke-width="0.6" class="run"><title>run {}: {}</title></circle>"##,
                x(*v),
                yy - 7.0 + (k % 3) as f64 * 1.5,
                r.color,
                k + 1,
                factor_text(*v)
            );
        }
        let vc = verdict_color(r.verdict);
        if r.lower.is_finite() && r.upper.is_finite() {
            let _ = write!(
                s,
                r##"<path d="M{a:.1} {y:.1}H{b:.1}M{a:.1} {:.1}V{:.1}M{b:.1} {:.1}V{:.1}" stroke="{vc}" stroke-width="1.6"/>"##,
                yy,
                yy + 8.0,
                yy,
                yy + 8.0,
                a = x(r.lower),
                b = x(r.upper),
                y = yy + 4.0
            );
        }
        if r.point.is_finite() {
            let px = x(r.point);
            let _ = write!(
                s,
                r##"<path d="M{:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z" fill="{vc}" class="mean"><title>{}: {} [{}, {}] ({})</title></path><text x="{:.1}" y="{:.1}" class="v">{}</text>"##,
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
                r.verdict.map(|v| v.label()).unwrap_or("not comparable"),
                left + plot + 8.0,
                yy + 4.0,
                factor_text(r.point)
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// A slowdown factor as a reader says it: "1.52× slower", "2.10× faster".
pub(super) fn factor_text(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        "–".into()
    } else if v >= 1.0 {
        format!("{}× slower", super::super::ratio_num(v))
    } else {
        format!("{}× faster", super::super::ratio_num(1.0 / v))
    }
}

/// (x, mean, lower, upper) points of one environment's line.
pub(super) type Series = (String, Vec<(f64, f64, f64, f64)>);

/// Lines over a swept parameter, one per environment, with 95% whiskers.
pub(super) fn line_chart(title: &str, xlabel: &str, unit: &str, series: &[Series]) -> String {
    // The legend is as wide as the longest name: nothing is cut.
    let legend = series
        .iter()
        .map(|s| s.0.chars().count() as f64 * 6.6 + 26.0)
        .fold(110.0, f64::max);
    let (w, h, left, bottom, top) = (510.0 + legend, 300.0, 70.0, 50.0, 30.0);
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
        left + 20.0 + (w - left - legend - 30.0) * f
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
            w - legend - 10.0,
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
        (left + w - legend - 10.0) / 2.0,
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
            w - legend,
            top + i as f64 * 18.0,
            w - legend + 16.0,
            top + 10.0 + i as f64 * 18.0,
            esc(name)
        );
    }
    s.push_str("</svg>");
    s
}
