//! Markdown, for an issue or a wiki: the headline summary and the tally of
//! verdicts, with `--detail` one pipe table per entry, then the categories,
//! flags and failures.

use std::fmt::Write as _;

use super::{
    effect, flag_summary, fleet_hosts, fleet_spread, fsync_warning, marks, method, num, ratio_text,
    run_lines, storages, tally, verdict_cell, Analysis, Exporter, Fleet, View,
};

pub struct MarkdownExporter;

/// Escapes text for a Markdown table cell: no table breaks, no HTML, no
/// code spans, links or images, and no control characters.
fn cell(s: &str) -> String {
    let s = s
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "\\`")
        .replace('[', "\\[")
        .replace(']', "\\]")
        .replace('!', "\\!")
        .replace(['\n', '\r'], " ");
    crate::core::text::one_line(&s, usize::MAX)
}

impl Exporter for MarkdownExporter {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn extension(&self) -> &'static str {
        "md"
    }

    fn render(&self, a: &Analysis, view: View) -> String {
        let mut out = format!(
            "# virtperf comparison #{}\n\nSuite `{}`, baseline **{}**, started {}. {}\n",
            a.id,
            cell(&a.suite),
            cell(&a.baseline),
            cell(&a.started_at),
            cell(&method(a))
        );
        out.push_str("\n## Headline summary\n\n");
        let rows = a.headline_rows();
        if rows.is_empty() {
            out.push_str("No environment besides the baseline has results.\n");
        } else {
            out.push_str("| entry | environment | metric | ratio [95% CI] | effect | verdict |\n");
            out.push_str("|---|---|---|---|---|---|\n");
            for r in &rows {
                let x = r.stat.vs_baseline.as_ref();
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {}{} |",
                    cell(&r.entry.label),
                    cell(&r.stat.env),
                    cell(&r.metric.name),
                    x.map(ratio_text).unwrap_or_default(),
                    x.map(effect).unwrap_or_default(),
                    cell(&verdict_cell(r.stat, true, false)),
                    marks(r)
                );
            }
        }
        let _ = writeln!(out, "\n{}", cell(&tally(a)));
        if view.detail {
            out.push_str("\n## Every metric\n\nA verdict in [brackets] belongs to a detail metric: its own Holm family, descriptive only.\n");
            for e in &a.entries {
                let _ = writeln!(out, "\n### {}\n", cell(&e.label));
                out.push_str("| metric | environment | n | mean | 95% CI | CV | ratio [95% CI] | effect | p Welch | p Welch (Holm) | p rank (Holm) | verdict |\n");
                out.push_str("|---|---|---:|---:|---|---:|---|---|---:|---:|---:|---|\n");
                for m in &e.metrics {
                    for s in &m.per_env {
                        let Some(sum) = &s.summary else { continue };
                        let x = s.vs_baseline.as_ref();
                        let p = |f: fn(&crate::stats::Assessment) -> f64| {
                            x.map(|x| super::pval(f(x))).unwrap_or_default()
                        };
                        let _ = writeln!(
                            out,
                            "| {} ({}) | {} | {} | {} | [{}, {}] | {:.1}% | {} | {} | {} | {} | {} | {}{} |",
                            cell(&m.name),
                            cell(&m.unit),
                            cell(&s.env),
                            sum.n,
                            num(sum.mean),
                            num(sum.ci.lower),
                            num(sum.ci.upper),
                            sum.cv * 100.0,
                            x.map(ratio_text).unwrap_or_default(),
                            x.map(effect).unwrap_or_default(),
                            p(|x| x.p_welch),
                            p(|x| x.p_welch_adjusted),
                            p(|x| x.p_rank_adjusted),
                            cell(&verdict_cell(s, m.headline, s.env == a.baseline)),
                            if x.is_some_and(|x| x.tests_disagree) { " †" } else { "" }
                        );
                    }
                }
            }
        }
        for (env, r) in &a.rankings {
            let _ = writeln!(out, "\n## Overhead categories: {}\n", cell(env));
            out.push_str("| category | value | unit |\n|---|---:|---|\n");
            for c in &r.categories {
                let v = c
                    .value
                    .map(|v| format!("{v:.2}"))
                    .unwrap_or_else(|| "missing".into());
                let _ = writeln!(out, "| {} | {} | {} |", c.name, v, c.unit);
            }
            match r.score {
                Some(s) => {
                    let _ = writeln!(out, "\nRanking score: **{s:.2}** (lower is better).");
                }
                None => {
                    let _ = writeln!(out, "\nNo ranking score: missing {}.", r.missing.join(", "));
                }
            }
        }
        let storage = storages(a);
        if !storage.is_empty() {
            out.push_str("\n## Storage\n\nWhere the file, disk and OLTP tests wrote, as seen inside each environment.\n\n| environment | file system |\n|---|---|\n");
            for (env, _, s) in &storage {
                let _ = writeln!(out, "| {} | {} |", cell(env), cell(&s.describe()));
            }
            for (env, kind, s) in storage.iter().filter(|(_, _, s)| s.fsync_ignored.is_some()) {
                let _ = writeln!(out, "\n{}", cell(&fsync_warning(env, kind, s)));
            }
        }
        if !a.flags.is_empty() {
            out.push_str("\n## Flagged runs\n\n");
            if view.detail {
                let flags = a
                    .flags
                    .iter()
                    .map(|f| (&*f.env, &*f.label, f.round, &*f.reason));
                out.push_str(&run_lines(flags, cell, "- "));
            } else {
                for (i, line) in flag_summary(a).iter().enumerate() {
                    let bullet = if i == 0 { "" } else { "- " };
                    let gap = if i == 0 { "\n" } else { "" };
                    let _ = writeln!(out, "{bullet}{}{gap}", cell(line));
                }
                out.push_str("\nEach flagged run and why: `--detail`.\n");
            }
        }
        if !a.failures.is_empty() {
            out.push_str("\n## Failed runs\n\n");
            let failures = a
                .failures
                .iter()
                .map(|f| (&*f.env, &*f.label, f.round, &*f.error));
            out.push_str(&run_lines(failures, cell, "- "));
        }
        out
    }

    fn render_fleet(&self, f: &Fleet, view: View) -> String {
        let mut out = format!(
            "# virtperf fleet report\n\nSuite `{}`, baseline **{}**, {}. {}\n\n## Fleet view\n\n",
            cell(&f.suite),
            cell(&f.baseline),
            cell(&fleet_hosts(f)),
            cell(&crate::analysis::fleet::outlier_rule(&f.settings))
        );
        if f.rows.is_empty() {
            out.push_str("No environment besides the baseline has results on any host.\n");
        } else {
            out.push_str("| entry | kind | metric | measure | hosts | median | min … max | IQR | outliers | per host |\n");
            out.push_str("|---|---|---|---|---:|---:|---|---|---|---|\n");
            for r in &f.rows {
                let (range, iqr) = fleet_spread(r);
                let per_host: Vec<String> = r
                    .points
                    .iter()
                    .map(|p| {
                        let v = format!("{} {}", cell(&p.host), r.measure.show(p.value));
                        if p.outlier {
                            format!("**{v}**")
                        } else {
                            v
                        }
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    cell(&r.label),
                    cell(&r.kind),
                    cell(&r.metric),
                    r.measure.label(),
                    r.n,
                    r.measure.show(r.median),
                    range,
                    iqr,
                    if r.outliers.is_empty() {
                        "none".to_string()
                    } else {
                        cell(&r.outliers.join(", "))
                    },
                    per_host.join(", ")
                );
            }
        }
        for h in &f.hosts {
            let _ = writeln!(out, "\n## Host {}\n", cell(&h.host));
            // The host's own report, one heading level down.
            for line in self.render(&h.analysis, view).lines() {
                if line.starts_with('#') {
                    let _ = writeln!(out, "##{line}");
                } else {
                    let _ = writeln!(out, "{line}");
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn cells_carry_no_markup_or_control_characters() {
        // Issue 14, item 12.
        let c = cell("a\rb`code`![img](http://x/t.png)[l](u)\x1b[31m|");
        assert!(!c.contains(['\r', '\n', '\u{1b}']), "{c:?}");
        assert!(
            !c.contains("![") && c.contains("\\](") && !c.contains(" `"),
            "{c}"
        );
        assert!(c.contains("\\`code\\`") && c.ends_with("\\|"), "{c}");
    }
}
