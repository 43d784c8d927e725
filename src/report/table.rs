//! The terminal table: per entry and metric, each environment's mean with
//! its interval and, against the baseline, ratio, effect, p and verdict.

use std::fmt::Write as _;

use super::{comparison_cells, num, run_lines, Analysis, Cells, Exporter};

pub struct TableExporter;

impl Exporter for TableExporter {
    fn name(&self) -> &'static str {
        "table"
    }

    fn extension(&self) -> &'static str {
        "txt"
    }

    fn render(&self, a: &Analysis) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Comparison #{} ({}), suite {}, baseline {}",
            a.id, a.started_at, a.suite, a.baseline
        );
        for e in &a.entries {
            let _ = writeln!(out, "\n== {} ==", e.label);
            let _ = writeln!(
                out,
                "{:<28} {:<24} {:>3} {:>12} {:>8} {:>6}  {:>22} {:>20} {:>8}  verdict",
                "metric",
                "environment",
                "n",
                "mean",
                "±95%",
                "CV%",
                "ratio [95% CI]",
                "effect",
                "p(Holm)",
            );
            for m in &e.metrics {
                for s in &m.per_env {
                    let Some(sum) = &s.summary else {
                        continue;
                    };
                    let half = if sum.mean != 0.0 {
                        (sum.ci.upper - sum.mean) / sum.mean.abs() * 100.0
                    } else {
                        0.0
                    };
                    let Cells {
                        ratio,
                        effect: eff,
                        p,
                        verdict,
                    } = comparison_cells(s.vs_baseline.as_ref());
                    let _ = writeln!(
                        out,
                        "{:<28} {:<24} {:>3} {:>12} {:>7.1}% {:>6.1}  {:>22} {:>20} {:>8}  {}",
                        truncate(&format!("{} ({})", m.name, m.unit), 28),
                        truncate(&s.env, 24),
                        sum.n,
                        num(sum.mean),
                        half,
                        sum.cv * 100.0,
                        ratio,
                        eff,
                        p,
                        verdict
                    );
                }
            }
        }
        if let Some(n) = a.min_n().filter(|&n| n < 4) {
            let _ = writeln!(
                out,
                "\nNote: only {n} runs per environment; a rank test cannot reach p < 0.05 with fewer than 4 runs on each side. Use --repeat 5 or more for verdicts."
            );
        }
        for note in a.underpowered_notes() {
            let _ = writeln!(out, "\nNote: {note}");
        }
        for (env, r) in &a.rankings {
            if r.categories.iter().all(|c| c.value.is_none()) {
                let _ = writeln!(out, "\nOverhead categories for {env}: none of this suite's workloads belong to seed 001's categories (disk, micro-operations, LINPACK, network).");
                continue;
            }
            let _ = writeln!(out, "\nOverhead categories for {env} (seed 001's method):");
            for c in &r.categories {
                match c.value {
                    Some(v) => {
                        let _ = writeln!(out, "  {:<28} {:>10.2} {}", c.name, v, c.unit);
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "  {:<28} {:>10} (no such workload in this suite)",
                            c.name, "–"
                        );
                    }
                }
            }
            match r.score {
                Some(s) => {
                    let _ = writeln!(
                        out,
                        "  {:<28} {:>10.2} (lower is better)",
                        "ranking score", s
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "  ranking score: needs an overhead category and a times-slower category; missing: {}",
                        r.missing.join(", ")
                    );
                }
            }
        }
        if !a.flags.is_empty() {
            let _ = writeln!(out, "\nFlagged runs (noisy: results may be off):");
            let flags = a
                .flags
                .iter()
                .map(|f| (&*f.env, &*f.label, f.round, &*f.reason));
            out.push_str(&run_lines(flags, str::to_string, "  "));
        }
        if !a.failures.is_empty() {
            let _ = writeln!(out, "\nFailed runs:");
            let failures = a
                .failures
                .iter()
                .map(|f| (&*f.env, &*f.label, f.round, &*f.error));
            out.push_str(&run_lines(failures, str::to_string, "  "));
        }
        // Labels and errors come from users and guests: printed to a
        // terminal, they are never escape sequences.
        crate::core::text::terminal_safe(&out, usize::MAX)
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
