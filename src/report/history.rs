//! `virtperf history`'s output: the change points first, one sentence
//! each, then every series comparison by comparison (slowdown with its
//! interval, the raw means, the verdict, and the facts that changed beside
//! the comparison where they changed), in the terminal table, markdown,
//! JSON (`virtperf.history/1`) or an HTML page of trend charts
//! (`history_html`).

use std::fmt::Write as _;

use crate::analysis::history::{History, Series};

/// The formats `history --format` takes.
pub const HISTORY_FORMATS: &[&str] = &["table", "markdown", "json", "html"];

/// The history in `format` (one of [`HISTORY_FORMATS`]; `md` is markdown).
pub fn render_history(h: &History, format: &str) -> String {
    match format {
        "json" => serde_json::to_string_pretty(h).unwrap_or_default() + "\n",
        "html" => super::history_html::page(h),
        "markdown" | "md" => text(h, true),
        _ => text(h, false),
    }
}

/// The terminal table (`md`: markdown).
fn text(h: &History, md: bool) -> String {
    let mut out = String::new();
    let dates = match (h.comparisons.first(), h.comparisons.last()) {
        (Some(a), Some(b)) => format!(" ({} … {})", date(&a.started_at), date(&b.started_at)),
        _ => String::new(),
    };
    let title = format!(
        "History of {} comparison{}{dates}, {} series",
        h.comparisons.len(),
        if h.comparisons.len() == 1 { "" } else { "s" },
        h.series.len()
    );
    let _ = writeln!(out, "{}{title}\n", if md { "# " } else { "" });
    let _ = writeln!(out, "Change points: {}.\n", h.method);
    let changes: Vec<String> = h
        .series
        .iter()
        .flat_map(|s| s.changes.iter().map(move |c| h.sentence(s, c)))
        .collect();
    let drifts: Vec<String> = h
        .series
        .iter()
        .flat_map(|s| {
            s.drifts.iter().map(move |d| {
                format!(
                    "{} {} {}: a gradual drift from comparison {} to {} (p = {:.3}), not a step",
                    s.env,
                    s.entry,
                    s.metric,
                    h.comparisons[s.points[d.from].comparison].name,
                    h.comparisons[s.points[d.to].comparison].name,
                    d.p
                )
            })
        })
        .collect();
    if md {
        out.push_str("## Change points\n\n");
    }
    if changes.is_empty() && drifts.is_empty() {
        out.push_str("No change point in any series.\n");
    }
    for line in changes.iter().chain(&drifts) {
        let _ = writeln!(out, "{}{line}", if md { "- " } else { "  " });
    }
    for s in &h.series {
        out.push('\n');
        series(&mut out, h, s, md);
    }
    out
}

/// "2026-12-03" of an RFC 3339 time.
fn date(t: &str) -> &str {
    t.get(..10).unwrap_or(t)
}

/// One series: a row per comparison, the facts that changed beside the
/// comparison where they changed, a rule above each change point.
fn series(out: &mut String, h: &History, s: &Series, md: bool) {
    let way = if s.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    let head = format!("{} / {} / {} ({}, {way})", s.env, s.entry, s.metric, s.unit);
    let cols = [
        "comparison",
        "date",
        "slowdown",
        "95% interval",
        "baseline",
        "env",
        "verdict",
        "changed",
    ];
    let mut rows: Vec<[String; 8]> = Vec::new();
    for (i, p) in s.points.iter().enumerate() {
        let c = &h.comparisons[p.comparison];
        let mut name = c.name.clone();
        if s.changes.iter().any(|c| c.at == i) {
            name = format!("{name} ▲");
        }
        let changed = s
            .fact_changes
            .iter()
            .find(|(at, _)| *at == i)
            .map(|(_, d)| d.join("; "))
            .unwrap_or_default();
        rows.push([
            name,
            date(&c.started_at).to_string(),
            format!("{:.3}×", p.slowdown),
            format!("[{:.3}, {:.3}]", p.lower, p.upper),
            p.base_mean.map_or("–".into(), figure),
            p.env_mean.map_or("–".into(), figure),
            p.verdict.clone(),
            changed,
        ]);
    }
    if md {
        let _ = writeln!(out, "## {head}\n");
        let _ = writeln!(out, "| {} |", cols.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(cols.len()));
        for r in &rows {
            let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out.push_str("\n▲: a change point (the first comparison of a new level).\n");
        return;
    }
    let _ = writeln!(out, "{head}");
    let widths: Vec<usize> = (0..7)
        .map(|k| {
            rows.iter()
                .map(|r| r[k].chars().count())
                .chain([cols[k].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let mut l = String::from("  ");
        for (k, c) in cells.iter().enumerate() {
            if k < 7 {
                let pad = widths[k].saturating_sub(c.chars().count());
                l.push_str(c);
                l.push_str(&" ".repeat(pad + 2));
            } else {
                l.push_str(c);
            }
        }
        l.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&cols));
    for r in &rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&cells));
    }
}

/// A raw mean with four significant digits or so.
fn figure(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}
