//! One self-contained HTML file with inline SVG charts (no script, no
//! network): overhead bars per environment, a bar chart with 95% whiskers per
//! headline metric, line charts for parameter sweeps, and the full tables.
//! Every string that came from an environment is escaped.

mod svg;
mod sweeps;

use std::fmt::Write as _;

use super::{comparison_cells, num, Analysis, Cells, Exporter};
use crate::analysis::is_headline;
use crate::stats::Verdict;
pub use svg::esc;
use svg::*;
use sweeps::sweeps;

pub struct HtmlExporter;

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
