//! One self-contained HTML file with inline SVG charts (no script, no
//! network): overhead bars per environment, a bar chart with 95% whiskers per
//! headline metric, line charts for parameter sweeps, and the full tables.
//! Every string that came from an environment is escaped.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{comparison_cells, num, Analysis, Cells, Exporter};
use crate::analysis::{is_headline, EntryAnalysis};
use crate::stats::Verdict;

pub struct HtmlExporter;

const PALETTE: [&str; 8] = [
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

fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

struct Bar {
    label: String,
    value: f64,
    lower: f64,
    upper: f64,
    color: String,
}

/// Vertical bars with 95% whiskers, starting at zero.
fn bar_chart(title: &str, unit: &str, bars: &[Bar]) -> String {
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
fn overhead_chart(title: &str, rows: &[(String, f64, f64, f64, Verdict)]) -> String {
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
type Series = (String, Vec<(f64, f64, f64, f64)>);

/// Lines over a swept parameter, one per environment, with 95% whiskers.
fn line_chart(title: &str, xlabel: &str, unit: &str, series: &[Series]) -> String {
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

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// Parameter sweeps: entries of one workload that differ in exactly one
/// numeric parameter form a series.
fn sweeps(a: &Analysis) -> Vec<(String, String, Vec<&EntryAnalysis>)> {
    let mut out = Vec::new();
    let mut by_workload: BTreeMap<&str, Vec<&EntryAnalysis>> = BTreeMap::new();
    for e in &a.entries {
        by_workload.entry(&e.workload).or_default().push(e);
    }
    for (workload, entries) in by_workload {
        if entries.len() < 2 {
            continue;
        }
        let keys: Vec<&String> = entries[0].params.keys().collect();
        for key in keys {
            let mut groups: BTreeMap<String, Vec<&EntryAnalysis>> = BTreeMap::new();
            for e in &entries {
                if !e.params.get(key).is_some_and(|v| v.is_number()) {
                    continue;
                }
                let mut rest = e.params.clone();
                rest.remove(key);
                groups
                    .entry(serde_json::Value::Object(rest).to_string())
                    .or_default()
                    .push(e);
            }
            for (_, mut g) in groups {
                let mut values: Vec<f64> =
                    g.iter().filter_map(|e| e.params[key].as_f64()).collect();
                values.sort_by(f64::total_cmp);
                values.dedup();
                if values.len() >= 2 && values.len() == g.len() {
                    g.sort_by(|x, y| {
                        x.params[key]
                            .as_f64()
                            .unwrap_or(0.0)
                            .total_cmp(&y.params[key].as_f64().unwrap_or(0.0))
                    });
                    out.push((workload.to_string(), key.clone(), g));
                }
            }
        }
    }
    out
}

impl Exporter for HtmlExporter {
    fn name(&self) -> &'static str {
        "html"
    }

    fn extension(&self) -> &'static str {
        "html"
    }

    fn render(&self, a: &Analysis) -> String {
        let mut h = String::from(
            r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>virtperf comparison</title><style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;color:#222;padding:0 16px}
h1{font-size:24px}h2{font-size:19px;margin-top:34px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:12.5px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}th{background:#f4f4f4}td:first-child,td:nth-child(2),th{text-align:left}
.slower{color:#c0392b;font-weight:600}.faster{color:#2e7d32;font-weight:600}.ns{color:#777}.flag{background:#fff3cd}
svg{margin:6px 12px 6px 0;background:#fff;border:1px solid #eee}svg .t{font-size:13px;font-weight:600}svg .a{font-size:11px;fill:#444}svg .v{font-size:10.5px;fill:#222}
.charts{display:flex;flex-wrap:wrap}.note{color:#555}
</style></head><body>"#,
        );
        let _ = write!(
            h,
            "<h1>virtperf comparison #{}</h1><p class=\"note\">Suite <b>{}</b>, baseline <b>{}</b>, started {}. Bars are means with 95% confidence intervals; overheads are 1 − environment/baseline for higher-is-better metrics and environment/baseline − 1 (slower) for lower-is-better ones, with bootstrap 95% intervals; verdicts use the two-sided Mann–Whitney U test, Holm-corrected across each entry's metrics (α = 0.05).</p>",
            a.id,
            esc(&a.suite),
            esc(&a.baseline),
            esc(&a.started_at)
        );
        h.push_str("<h2>Environments</h2><table><tr><th>environment</th><th>kind</th><th>hypervisor</th><th>CPUs</th><th>memory</th><th>CPU quota</th><th>kernel</th><th>ready after</th></tr>");
        for env in &a.envs {
            let f = a.fingerprints.get(env);
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(env),
                esc(f.map(|f| f.kind.as_str()).unwrap_or("")),
                esc(f.map(|f| f.hypervisor.as_str()).unwrap_or("")),
                f.map(|f| f.cpus.to_string()).unwrap_or_default(),
                f.map(|f| format!("{:.1} GiB", f.memory_bytes as f64 / (1u64 << 30) as f64)).unwrap_or_default(),
                f.and_then(|f| f.cgroup.cpu_quota).map(|q| format!("{q}")).unwrap_or_else(|| "–".into()),
                esc(f.map(|f| f.kernel.as_str()).unwrap_or("")),
                f.and_then(|f| f.ready_s).map(|s| format!("{s:.2} s")).unwrap_or_default()
            );
        }
        h.push_str("</table>");

        // Overhead per environment, headline metrics.
        h.push_str("<h2>Overhead against the baseline</h2><div class=\"charts\">");
        for (ei, env) in a.envs.iter().enumerate() {
            if *env == a.baseline {
                continue;
            }
            let rows: Vec<(String, f64, f64, f64, Verdict)> = a
                .entries
                .iter()
                .flat_map(|e| {
                    e.metrics
                        .iter()
                        .filter(|m| is_headline(&e.workload, &m.name))
                        .filter_map(move |m| {
                            let c = m.per_env.get(ei)?.vs_baseline.as_ref()?;
                            let to_pct = |r: f64| {
                                if m.higher_is_better {
                                    (1.0 - r) * 100.0
                                } else {
                                    (r - 1.0) * 100.0
                                }
                            };
                            Some((
                                format!("{} · {}", e.label, m.name),
                                to_pct(c.ratio.point),
                                to_pct(c.ratio.lower),
                                to_pct(c.ratio.upper),
                                c.verdict,
                            ))
                        })
                })
                .collect();
            if !rows.is_empty() {
                h.push_str(&overhead_chart(
                    &format!("{env}: overhead in % (right = slower)"),
                    &rows,
                ));
            }
        }
        h.push_str("</div>");

        // Sweeps.
        let sw = sweeps(a);
        if !sw.is_empty() {
            h.push_str("<h2>Parameter sweeps</h2><div class=\"charts\">");
            for (workload, key, group) in &sw {
                let Some(first) = group.first() else { continue };
                for m in first
                    .metrics
                    .iter()
                    .filter(|m| is_headline(workload, &m.name))
                {
                    let series: Vec<Series> = a
                        .envs
                        .iter()
                        .enumerate()
                        .map(|(ei, env)| {
                            let pts = group
                                .iter()
                                .filter_map(|e| {
                                    let x = e.params.get(key)?.as_f64()?;
                                    let mm = e.metrics.iter().find(|q| q.name == m.name)?;
                                    let s = mm.per_env.get(ei)?.summary.as_ref()?;
                                    Some((x, s.mean, s.ci.lower, s.ci.upper))
                                })
                                .collect();
                            (env.clone(), pts)
                        })
                        .filter(|(_, p): &(String, Vec<_>)| !p.is_empty())
                        .collect();
                    h.push_str(&line_chart(
                        &format!("{workload}: {} by {key}", m.name),
                        key,
                        &m.unit,
                        &series,
                    ));
                }
            }
            h.push_str("</div>");
        }

        // Per entry: charts of headline metrics and the full table.
        for e in &a.entries {
            let _ = write!(h, "<h2>{}</h2><div class=\"charts\">", esc(&e.label));
            for m in e
                .metrics
                .iter()
                .filter(|m| is_headline(&e.workload, &m.name))
                .take(8)
            {
                let bars: Vec<Bar> = m
                    .per_env
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| {
                        let sum = s.summary.as_ref()?;
                        Some(Bar {
                            label: s.env.clone(),
                            value: sum.mean,
                            lower: sum.ci.lower,
                            upper: sum.ci.upper,
                            color: color(i).to_string(),
                        })
                    })
                    .collect();
                h.push_str(&bar_chart(&m.name, &m.unit, &bars));
            }
            h.push_str("</div><table><tr><th>metric</th><th>environment</th><th>n</th><th>mean</th><th>95% CI</th><th>CV</th><th>ratio [95% CI]</th><th>effect</th><th>p (Holm)</th><th>verdict</th></tr>");
            for m in &e.metrics {
                for s in &m.per_env {
                    let Some(sum) = &s.summary else { continue };
                    let flagged = a.flags.iter().any(|f| f.env == s.env && f.label == e.label);
                    let Cells {
                        ratio,
                        effect: eff,
                        p,
                        verdict: v,
                    } = comparison_cells(s.vs_baseline.as_ref());
                    let class = s.vs_baseline.as_ref().map_or("", |c| match c.verdict {
                        Verdict::Slower => "slower",
                        Verdict::Faster => "faster",
                        Verdict::NoSignificantDifference => "ns",
                    });
                    let _ = write!(
                        h,
                        "<tr{}><td>{} ({})</td><td>{}{}</td><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{:.1}%</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td></tr>",
                        if flagged { " class=\"flag\"" } else { "" },
                        esc(&m.name),
                        esc(&m.unit),
                        esc(&s.env),
                        if flagged { " ⚑" } else { "" },
                        sum.n,
                        num(sum.mean),
                        num(sum.ci.lower),
                        num(sum.ci.upper),
                        sum.cv * 100.0,
                        ratio,
                        esc(&eff),
                        p,
                        v
                    );
                }
            }
            h.push_str("</table>");
        }

        for (env, r) in &a.rankings {
            let _ = write!(h, "<h2>Overhead categories: {}</h2><table><tr><th>category</th><th>value</th><th>unit</th><th>from</th></tr>", esc(env));
            for c in &r.categories {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(c.name),
                    c.value
                        .map(|v| format!("{v:.2}"))
                        .unwrap_or_else(|| "missing".into()),
                    esc(c.unit),
                    esc(&c.from.join(", "))
                );
            }
            h.push_str("</table>");
            match r.score {
                Some(s) => {
                    let _ = write!(
                        h,
                        "<p>Ranking score (seed 001): <b>{s:.2}</b>, lower is better.</p>"
                    );
                }
                None => {
                    let _ = write!(
                        h,
                        "<p class=\"note\">No ranking score: missing {}.</p>",
                        esc(&r.missing.join(", "))
                    );
                }
            }
        }
        for note in a.underpowered_notes() {
            let _ = write!(h, "<p class=\"note\">Note: {}</p>", esc(&note));
        }
        if !a.flags.is_empty() {
            h.push_str("<h2>Flagged runs</h2><ul>");
            for f in &a.flags {
                let _ = write!(
                    h,
                    "<li>⚑ {} / {} / round {}: {}</li>",
                    esc(&f.env),
                    esc(&f.label),
                    f.round + 1,
                    esc(&f.reason)
                );
            }
            h.push_str("</ul>");
        }
        if !a.failures.is_empty() {
            h.push_str("<h2>Failed runs</h2><ul>");
            for f in &a.failures {
                let _ = write!(
                    h,
                    "<li>{} / {} / round {}: {}</li>",
                    esc(&f.env),
                    esc(&f.label),
                    f.round + 1,
                    esc(&f.error)
                );
            }
            h.push_str("</ul>");
        }
        h.push_str("</body></html>\n");
        h
    }
}
