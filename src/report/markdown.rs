//! Markdown, for an issue or a wiki: one pipe table per entry, then the
//! categories, flags and failures.

use std::fmt::Write as _;

use super::{comparison_cells, num, run_lines, Analysis, Cells, Exporter};

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

    fn render(&self, a: &Analysis) -> String {
        let mut out = format!(
            "# virtperf comparison #{}\n\nSuite `{}`, baseline **{}**, started {}. Means of n runs with 95% confidence intervals; ratios are environment / baseline with bootstrap 95% intervals; p is the two-sided Mann–Whitney U test, Holm-corrected across each entry's metrics.\n",
            a.id,
            cell(&a.suite),
            cell(&a.baseline),
            cell(&a.started_at)
        );
        for e in &a.entries {
            let _ = writeln!(out, "\n## {}\n", cell(&e.label));
            out.push_str("| metric | environment | n | mean | 95% CI | CV | ratio [95% CI] | effect | p (Holm) | verdict |\n");
            out.push_str("|---|---|---:|---:|---|---:|---|---|---:|---|\n");
            for m in &e.metrics {
                for s in &m.per_env {
                    let Some(sum) = &s.summary else { continue };
                    let Cells {
                        ratio,
                        effect: eff,
                        p,
                        verdict: v,
                    } = comparison_cells(s.vs_baseline.as_ref());
                    let _ = writeln!(
                        out,
                        "| {} ({}) | {} | {} | {} | [{}, {}] | {:.1}% | {} | {} | {} | {} |",
                        cell(&m.name),
                        cell(&m.unit),
                        cell(&s.env),
                        sum.n,
                        num(sum.mean),
                        num(sum.ci.lower),
                        num(sum.ci.upper),
                        sum.cv * 100.0,
                        ratio,
                        eff,
                        p,
                        v
                    );
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
        for note in a.underpowered_notes() {
            let _ = writeln!(out, "\n> Note: {}", cell(&note));
        }
        if !a.flags.is_empty() {
            out.push_str("\n## Flagged runs\n\n");
            let flags = a
                .flags
                .iter()
                .map(|f| (&*f.env, &*f.label, f.round, &*f.reason));
            out.push_str(&run_lines(flags, cell, "- "));
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
