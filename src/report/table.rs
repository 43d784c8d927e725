//! The terminal report: the headline summary first (one row per entry,
//! environment and headline metric), the tally of verdicts, seed 001's
//! categories and score, flagged and failed runs; with `--detail`, every
//! metric of every entry with both tests' p-values.

use std::fmt::Write as _;

use super::{
    effect, flag_summary, fleet_hosts, fleet_points, fleet_spread, fsync_warning, marks, method,
    num, ratio_text, run_lines, storages, tally, verdict_cell, Analysis, Exporter, Fleet, View,
};

pub struct TableExporter;

impl Exporter for TableExporter {
    fn name(&self) -> &'static str {
        "table"
    }

    fn extension(&self) -> &'static str {
        "txt"
    }

    fn render(&self, a: &Analysis, view: View) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Comparison #{} ({}), suite {}, baseline {}",
            a.id, a.started_at, a.suite, a.baseline
        );
        let _ = writeln!(out, "\n{}", wrap(&method(a), 100));
        summary(&mut out, a);
        let _ = writeln!(out, "\n{}", wrap(&tally(a), 100));
        if view.detail {
            detail(&mut out, a);
        }
        categories(&mut out, a);
        net_paths(&mut out, a);
        storage(&mut out, a);
        if !a.flags.is_empty() {
            let _ = writeln!(
                out,
                "\nFlagged runs (⚑: something else competed for the CPUs; results may be off):"
            );
            if view.detail {
                let flags = a
                    .flags
                    .iter()
                    .map(|f| (&*f.env, &*f.label, f.round, &*f.reason));
                out.push_str(&run_lines(flags, str::to_string, "  "));
            } else {
                for line in flag_summary(a) {
                    let _ = writeln!(out, "  {line}");
                }
                let _ = writeln!(out, "  Each flagged run and why: --detail.");
            }
        }
        if !a.failures.is_empty() {
            let _ = writeln!(out, "\nFailed runs:");
            let failures = a
                .failures
                .iter()
                .map(|f| (&*f.env, &*f.label, f.round, &*f.error));
            out.push_str(&run_lines(failures, str::to_string, "  "));
        }
        if !view.detail {
            let _ = writeln!(
                out,
                "\nEvery metric with both tests' p-values: --detail (or --format json / csv)."
            );
        }
        // Labels and errors come from users and guests: printed to a
        // terminal, they are never escape sequences.
        crate::core::text::terminal_safe(&out, usize::MAX)
    }

    fn render_fleet(&self, f: &Fleet, view: View) -> String {
        fleet(f, view)
    }
}

/// The fleet view as a terminal table, then each host's report.
fn fleet(f: &Fleet, view: View) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Fleet report, suite {}, baseline {} ({})",
        f.suite,
        f.baseline,
        fleet_hosts(f)
    );
    let _ = writeln!(
        out,
        "\n{}",
        wrap(&crate::analysis::fleet::outlier_rule(&f.settings), 100)
    );
    let _ = writeln!(
        out,
        "\nFleet view (per entry, headline metric and environment kind):"
    );
    if f.rows.is_empty() {
        let _ = writeln!(
            out,
            "  no environment besides the baseline has results on any host"
        );
    } else {
        let _ = writeln!(
            out,
            "  {:<10} {:<24} {:>5} {:>10} {:>20} {:>20}  outliers",
            "kind", "metric", "hosts", "median", "min … max", "IQR"
        );
        let mut last = "";
        for r in &f.rows {
            if r.label != last {
                let _ = writeln!(out, "{}", r.label);
                last = &r.label;
            }
            let (range, iqr) = fleet_spread(r);
            let _ = writeln!(
                out,
                "  {:<10} {:<24} {:>5} {:>10} {:>20} {:>20}  {}",
                truncate(&r.kind, 10),
                truncate(&r.metric, 24),
                r.n,
                r.measure.show(r.median),
                range,
                iqr,
                if r.outliers.is_empty() {
                    "none".to_string()
                } else {
                    r.outliers.join(", ")
                }
            );
            let _ = writeln!(out, "      {}: {}", r.measure.label(), fleet_points(r));
        }
    }
    for h in &f.hosts {
        let _ = writeln!(out, "\n=== Host {} ===", h.host);
        out.push_str(&TableExporter.render(&h.analysis, view));
    }
    crate::core::text::terminal_safe(&out, usize::MAX)
}

/// Each environment's network path, when network tests ran.
fn net_paths(out: &mut String, a: &Analysis) {
    let paths: Vec<(&String, &str)> = a
        .envs
        .iter()
        .filter_map(|e| Some((e, a.fingerprints.get(e)?.net_path.as_deref()?)))
        .collect();
    if paths.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nNetwork paths:");
    for (env, path) in paths {
        let _ = writeln!(out, "  {env:<20} {path}");
    }
}

/// Each environment's file system under the file, disk and OLTP tests,
/// and a warning where fsync reaches no disk.
fn storage(out: &mut String, a: &Analysis) {
    let rows = storages(a);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nStorage (where the file, disk and OLTP tests wrote, as seen inside):"
    );
    for (env, _, s) in &rows {
        let _ = writeln!(out, "  {env:<20} {}", s.describe());
    }
    for (env, kind, s) in rows
        .into_iter()
        .filter(|(_, _, s)| s.fsync_ignored.is_some())
    {
        for (i, line) in wrap(&fsync_warning(env, kind, s), 96).lines().enumerate() {
            let _ = writeln!(out, "{}{line}", if i == 0 { "  " } else { "    " });
        }
    }
}

fn summary(out: &mut String, a: &Analysis) {
    let rows = a.headline_rows();
    let _ = writeln!(
        out,
        "\nHeadline summary (environment against {}):",
        a.baseline
    );
    if rows.is_empty() {
        let _ = writeln!(out, "  no environment besides the baseline has results");
        return;
    }
    // Each entry's full label on a line of its own (two entries of one
    // workload differ only in their options), its rows indented below.
    let _ = writeln!(
        out,
        "  {:<16} {:<24} {:>26} {:>16}  verdict",
        "environment", "metric", "ratio [95% CI]", "effect"
    );
    let mut last = "";
    for r in &rows {
        if r.entry.label != last {
            let _ = writeln!(out, "{}", r.entry.label);
            last = &r.entry.label;
        }
        let (ratio, eff) = r
            .stat
            .vs_baseline
            .as_ref()
            .map(|x| (ratio_text(x), effect(x)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:<16} {:<24} {:>26} {:>16}  {}{}",
            truncate(&r.stat.env, 16),
            truncate(&r.metric.name, 24),
            ratio,
            eff,
            verdict_cell(r.stat, true, false),
            marks(r)
        );
    }
}

fn detail(out: &mut String, a: &Analysis) {
    let _ = writeln!(
        out,
        "\nEvery metric ([verdict]: a detail metric, its own Holm family; descriptive only):"
    );
    for e in &a.entries {
        let _ = writeln!(out, "\n== {} ==", e.label);
        let _ = writeln!(
            out,
            "{:<30} {:<18} {:>3} {:>12} {:>7} {:>6} {:>26} {:>16} {:>8} {:>8} {:>8}  verdict",
            "metric",
            "environment",
            "n",
            "mean",
            "±95%",
            "CV%",
            "ratio [95% CI]",
            "effect",
            "p Welch",
            "p(Holm)",
            "p rank"
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
                let c = s.vs_baseline.as_ref();
                let p = |f: fn(&crate::stats::Assessment) -> f64| {
                    c.map(|x| super::pval(f(x))).unwrap_or_default()
                };
                let _ = writeln!(
                    out,
                    "{:<30} {:<18} {:>3} {:>12} {:>6.1}% {:>6.1} {:>26} {:>16} {:>8} {:>8} {:>8}  {}{}",
                    truncate(
                        &format!("{}{} ({})", if m.headline { "" } else { "  " }, m.name, m.unit),
                        30
                    ),
                    truncate(&s.env, 18),
                    sum.n,
                    num(sum.mean),
                    half,
                    sum.cv * 100.0,
                    c.map(ratio_text).unwrap_or_default(),
                    c.map(effect).unwrap_or_default(),
                    p(|x| x.p_welch),
                    p(|x| x.p_welch_adjusted),
                    p(|x| x.p_rank_adjusted),
                    verdict_cell(s, m.headline, s.env == a.baseline),
                    if c.is_some_and(|x| x.tests_disagree) {
                        " †"
                    } else {
                        ""
                    }
                );
                if let Some(why) = &s.not_comparable {
                    let _ = writeln!(out, "    {}: {why}", s.env);
                }
            }
        }
    }
}

fn categories(out: &mut String, a: &Analysis) {
    let empty = |r: &crate::stats::Ranking| r.categories.iter().all(|c| c.value.is_none());
    if !a.rankings.is_empty() && a.rankings.iter().all(|(_, r)| empty(r)) {
        // Said once, not once per environment.
        let _ = writeln!(out, "\nOverhead categories: none of this suite's workloads belong to seed 001's categories (disk, micro-operations, LINPACK, network).");
        return;
    }
    for (env, r) in &a.rankings {
        if empty(r) {
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
}

/// Breaks a paragraph into lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
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
