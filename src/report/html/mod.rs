//! One self-contained HTML file with inline SVG charts (no script, no
//! network): the headline summary first, the environments' fingerprints,
//! per environment the headline slowdowns on a log axis centred at 1× with
//! every run drawn, line charts for parameter sweeps, per entry bar charts
//! of the headline metrics with each run, and every metric's table (folded
//! unless `--detail`).
//! Every string that came from an environment is escaped.

mod svg;
mod sweeps;

use std::fmt::Write as _;

use super::{
    effect, fleet_hosts, fleet_spread, fsync_warning, marks, method, num, pval, ratio_text,
    storages, tally, verdict_cell, Analysis, Exporter, Fleet, View,
};
use crate::stats::Outcome;
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

    fn render(&self, a: &Analysis, view: View) -> String {
        let mut h = String::from(
            r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>virtperf comparison</title><style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;color:#222;padding:0 16px}
h1{font-size:24px}h2{font-size:19px;margin-top:34px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:12.5px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}th{background:#f4f4f4}td:first-child,td:nth-child(2),th{text-align:left}
.slower{color:#c0392b;font-weight:600}.faster{color:#2e7d32;font-weight:600}.equivalent{color:#1f5fa8;font-weight:600}.ns{color:#777}.flag{background:#fff3cd}
svg{margin:6px 12px 6px 0;background:#fff;border:1px solid #eee}svg .t{font-size:13px;font-weight:600}svg .a{font-size:11px;fill:#444}svg .v{font-size:10.5px;fill:#222}
.charts{display:flex;flex-wrap:wrap}.note{color:#555}
</style></head><body>"#,
        );
        let _ = write!(
            h,
            "<h1>virtperf comparison #{}</h1><p class=\"note\">Suite <b>{}</b>, baseline <b>{}</b>, started {}. {}</p>",
            a.id,
            esc(&a.suite),
            esc(&a.baseline),
            esc(&a.started_at),
            esc(&method(a))
        );
        h.push_str("<h2>Headline summary</h2>");
        let rows = a.headline_rows();
        if rows.is_empty() {
            h.push_str("<p>No environment besides the baseline has results.</p>");
        } else {
            h.push_str("<table><tr><th>entry</th><th>environment</th><th>metric</th><th>ratio [95% CI]</th><th>effect</th><th>verdict</th></tr>");
            for r in &rows {
                let x = r.stat.vs_baseline.as_ref();
                let _ = write!(
                    h,
                    "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}{}</td></tr>",
                    if r.noisy || r.fsync_ignored { " class=\"flag\"" } else { "" },
                    esc(&r.entry.label),
                    esc(&r.stat.env),
                    esc(&r.metric.name),
                    x.map(ratio_text).unwrap_or_default(),
                    esc(&x.map(effect).unwrap_or_default()),
                    class(x.map(|x| x.outcome)),
                    esc(&verdict_cell(r.stat, true, false)),
                    esc(&marks(r))
                );
            }
            h.push_str("</table>");
        }
        let _ = write!(h, "<p>{}</p>", esc(&tally(a)));

        h.push_str("<h2>Environments</h2><table><tr><th>environment</th><th>kind</th><th>hypervisor</th><th>CPU</th><th>CPUs</th><th>memory</th><th>CPU quota</th><th>kernel</th><th>ready after</th><th>network path</th><th>storage</th></tr>");
        for env in &a.envs {
            let f = a.fingerprints.get(env);
            let storage = f.and_then(|f| f.storage.as_ref());
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td title=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td></tr>",
                esc(env),
                esc(f.map(|f| f.kind.as_str()).unwrap_or("")),
                esc(f.map(|f| f.hypervisor.as_str()).unwrap_or("")),
                esc(f.map(|f| crate::sys::fingerprint::hypervisor_name(&f.hypervisor)).unwrap_or("")),
                esc(f.map(|f| f.cpu_model.as_str()).unwrap_or("")),
                f.map(|f| f.cpus.to_string()).unwrap_or_default(),
                f.map(|f| format!("{:.1} GiB", f.memory_bytes as f64 / (1u64 << 30) as f64)).unwrap_or_default(),
                f.and_then(|f| f.cgroup.cpu_quota).map(|q| format!("{q}")).unwrap_or_else(|| "–".into()),
                esc(f.map(|f| f.kernel.as_str()).unwrap_or("")),
                f.and_then(|f| f.ready_s).map(|s| format!("{s:.2} s")).unwrap_or_default(),
                esc(f.and_then(|f| f.net_path.as_deref()).unwrap_or("–")),
                if storage.is_some_and(|s| s.fsync_ignored.is_some()) { " class=\"flag\"" } else { "" },
                esc(&storage.map(|s| s.describe()).unwrap_or_else(|| "–".into()))
            );
        }
        h.push_str("</table>");
        for (env, kind, s) in storages(a) {
            if s.fsync_ignored.is_some() {
                let _ = write!(
                    h,
                    "<p class=\"note\">{}</p>",
                    esc(&fsync_warning(env, kind, s))
                );
            }
        }

        // Slowdown per environment, headline metrics, on a log axis.
        h.push_str("<h2>Against the baseline</h2><p class=\"note\">Each headline metric as a slowdown factor (a throughput's ratio inverted, so right is always slower) on a log axis centred at 1×. Points: each run against the baseline's geometric mean; diamond and bar: the geometric mean with its 95% interval, coloured by verdict (red slower, green faster, blue equivalent, grey inconclusive); shaded: the equivalence margin.</p><div class=\"charts\">");
        let base_i = a.envs.iter().position(|e| *e == a.baseline);
        for (ei, env) in a.envs.iter().enumerate() {
            if *env == a.baseline {
                continue;
            }
            let rows: Vec<RatioRow> = a
                .entries
                .iter()
                .flat_map(|e| {
                    e.metrics
                        .iter()
                        .filter(|m| m.headline)
                        .filter_map(move |m| {
                            let s = m.per_env.get(ei)?;
                            if s.samples.is_empty() {
                                return None;
                            }
                            let base = &m.per_env.get(base_i?)?.samples;
                            let gm = geometric_mean(base);
                            let slow = |r: f64| if m.higher_is_better { 1.0 / r } else { r };
                            let x = s.vs_baseline.as_ref();
                            Some(RatioRow {
                                label: format!("{} · {}", e.label, m.name),
                                point: x.map_or(f64::NAN, |x| slow(x.ratio.point)),
                                lower: x.map_or(f64::NAN, |x| {
                                    slow(x.ratio.lower).min(slow(x.ratio.upper))
                                }),
                                upper: x.map_or(f64::NAN, |x| {
                                    slow(x.ratio.lower).max(slow(x.ratio.upper))
                                }),
                                runs: s.samples.iter().map(|v| slow(v / gm)).collect(),
                                verdict: x.map(|x| x.outcome),
                                color: color(ei),
                            })
                        })
                })
                .collect();
            if !rows.is_empty() {
                h.push_str(&ratio_chart(
                    &format!("{env} against {}: slowdown (log scale)", a.baseline),
                    &rows,
                    a.settings.margin,
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
                for m in first.metrics.iter().filter(|m| m.headline) {
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
            for m in e.metrics.iter().filter(|m| m.headline) {
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
                            runs: s.samples.clone(),
                        })
                    })
                    .collect();
                h.push_str(&bar_chart(&m.name, &m.unit, &bars));
            }
            let _ = write!(
                h,
                "</div><details{}><summary>Every metric of {}</summary><table><tr><th>metric</th><th>environment</th><th>n</th><th>mean</th><th>95% CI</th><th>CV</th><th>ratio [95% CI]</th><th>effect</th><th>p Welch</th><th>p Welch (Holm)</th><th>p rank (Holm)</th><th>verdict</th></tr>",
                if view.detail { " open" } else { "" },
                esc(&e.label)
            );
            for m in &e.metrics {
                for s in &m.per_env {
                    let Some(sum) = &s.summary else { continue };
                    let flagged = a.noisy(&s.env, &e.label);
                    let x = s.vs_baseline.as_ref();
                    let p = |f: fn(&crate::stats::Assessment) -> f64| {
                        x.map(|x| pval(f(x))).unwrap_or_default()
                    };
                    let _ = write!(
                        h,
                        "<tr{}><td>{} ({})</td><td>{}{}</td><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{:.1}%</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}{}</td></tr>",
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
                        x.map(ratio_text).unwrap_or_default(),
                        esc(&x.map(effect).unwrap_or_default()),
                        p(|x| x.p_welch),
                        p(|x| x.p_welch_adjusted),
                        p(|x| x.p_rank_adjusted),
                        if m.headline { class(x.map(|x| x.outcome)) } else { "ns" },
                        esc(&verdict_cell(s, m.headline, s.env == a.baseline)),
                        if x.is_some_and(|x| x.tests_disagree) { " †" } else { "" }
                    );
                }
            }
            h.push_str("</table></details>");
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
        if !a.flags.is_empty() {
            h.push_str("<h2>Flagged runs</h2><ul>");
            for line in super::flag_summary(a) {
                let _ = write!(h, "<li>{}</li>", esc(&line));
            }
            h.push_str("</ul><details><summary>Each flagged run</summary><ul>");
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
            h.push_str("</ul></details>");
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

    /// One page: the fleet view, then each host's report (its own page's
    /// body, headings one level down).
    fn render_fleet(&self, f: &Fleet, view: View) -> String {
        let pages: Vec<String> = f
            .hosts
            .iter()
            .map(|x| self.render(&x.analysis, view))
            .collect();
        let first = pages.first().map(String::as_str).unwrap_or("<body>");
        let head_end = first
            .find("<body>")
            .map(|i| i + "<body>".len())
            .unwrap_or(0);
        let mut h = first[..head_end].replace(
            "<title>virtperf comparison</title>",
            "<title>virtperf fleet report</title>",
        );
        let _ = write!(
            h,
            "<h1>virtperf fleet report</h1><p class=\"note\">Suite <b>{}</b>, baseline <b>{}</b>, {}. {}</p><h2>Fleet view</h2>",
            esc(&f.suite),
            esc(&f.baseline),
            esc(&fleet_hosts(f)),
            esc(&crate::analysis::fleet::outlier_rule(&f.settings))
        );
        if f.rows.is_empty() {
            h.push_str("<p>No environment besides the baseline has results on any host.</p>");
        } else {
            h.push_str("<table><tr><th>entry</th><th>kind</th><th>metric</th><th>measure</th><th>hosts</th><th>median</th><th>min … max</th><th>IQR</th><th>outliers</th><th>per host</th></tr>");
            for r in &f.rows {
                let (range, iqr) = fleet_spread(r);
                let per_host: Vec<String> = r
                    .points
                    .iter()
                    .map(|p| {
                        format!(
                            "<span{}>{} {}</span>",
                            if p.outlier { " class=\"flag\"" } else { "" },
                            esc(&p.host),
                            esc(&r.measure.show(p.value))
                        )
                    })
                    .collect();
                let _ = write!(
                    h,
                    "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    if r.outliers.is_empty() { "" } else { " class=\"flag\"" },
                    esc(&r.label),
                    esc(&r.kind),
                    esc(&r.metric),
                    r.measure.label(),
                    r.n,
                    esc(&r.measure.show(r.median)),
                    esc(&range),
                    esc(&iqr),
                    if r.outliers.is_empty() {
                        "none".to_string()
                    } else {
                        esc(&r.outliers.join(", "))
                    },
                    per_host.join(", ")
                );
            }
            h.push_str("</table>");
        }
        for (x, page) in f.hosts.iter().zip(&pages) {
            let body = page
                .find("<body>")
                .and_then(|i| Some(&page[i + "<body>".len()..page.rfind("</body>")?]))
                .unwrap_or("");
            let _ = write!(
                h,
                "<section><h1>Host {}</h1>{}</section>",
                esc(&x.host),
                body.replace("<h1>", "<h2>").replace("</h1>", "</h2>")
            );
        }
        h.push_str("</body></html>\n");
        h
    }
}

/// The CSS class of a verdict cell.
fn class(o: Option<Outcome>) -> &'static str {
    match o {
        Some(Outcome::Slower) => "slower",
        Some(Outcome::Faster) => "faster",
        Some(Outcome::Equivalent) => "equivalent",
        _ => "ns",
    }
}

fn geometric_mean(xs: &[f64]) -> f64 {
    let logs: Vec<f64> = xs.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect();
    if logs.is_empty() {
        return f64::NAN;
    }
    (logs.iter().sum::<f64>() / logs.len() as f64).exp()
}
