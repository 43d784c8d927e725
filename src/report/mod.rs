//! Reports of a comparison: one exporter per format behind one trait, all
//! rendering the same `Analysis`.

mod csv;
mod html;
mod json;
mod markdown;
pub mod model;
mod sweeps;
mod table;

pub use crate::analysis::fleet::{Fleet, FleetRow, HostAnalysis, Measure};
pub use crate::analysis::{analyze, Analysis};

use std::fmt::Write as _;

use crate::analysis::{EnvStat, HeadlineRow};
use crate::core::options::CliError;
use crate::core::result::Storage;
use crate::env::def::Check;
use crate::stats::{Assessment, Goal, Outcome};

/// Each environment whose results name their storage, in the report's
/// order: (environment, its kind, the file system).
pub fn storages(a: &Analysis) -> Vec<(&str, &str, &Storage)> {
    a.envs
        .iter()
        .filter_map(|e| {
            let f = a.fingerprints.get(e)?;
            Some((e.as_str(), f.kind.as_str(), f.storage.as_ref()?))
        })
        .collect()
}

/// The warning for an environment whose file system ignores fsync: its
/// durable commits and fsyncs cost nothing, which is not a disk's speed.
pub fn fsync_warning(env: &str, kind: &str, s: &Storage) -> String {
    let why = s.fsync_ignored.as_deref().unwrap_or("");
    let fix = if has_storage_volume(kind) {
        format!("{kind}:storage=volume puts them on a disk")
    } else {
        "--file-dir, --disk-dir or --oltp-dir on a disk's file system measure one".into()
    };
    format!(
        "⚠ {env}: fsync reaches no disk there ({} {why}), so fsyncs and durable commits cost nothing: figures that include them (fileio's fsyncs, OLTP's commits) are not a disk's; {fix}.",
        s.fs
    )
}

/// Whether the driver of that kind takes `storage=volume` (files on a disk
/// the engine manages), as its own option table says.
fn has_storage_volume(kind: &str) -> bool {
    crate::env::find_driver(kind)
        .and_then(|d| d.option("storage"))
        .is_some_and(|o| matches!(o.check, Check::Choice(words) if words.contains(&"volume")))
}

/// What a report shows besides the headline summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct View {
    /// Every metric of every entry (`--detail`); formats that always carry
    /// everything (CSV, JSON) ignore it.
    pub detail: bool,
}

/// Renders an analysis in one format.
pub trait Exporter: Sync {
    /// The `--format` word.
    fn name(&self) -> &'static str;
    fn render(&self, a: &Analysis, view: View) -> String;
    /// Several hosts' stores at once: the fleet view across them, then
    /// each host's report as `render` gives it.
    fn render_fleet(&self, f: &Fleet, view: View) -> String;
    /// File extension for `--out` defaults.
    fn extension(&self) -> &'static str;
}

/// Every format, one line each.
pub static EXPORTERS: &[&dyn Exporter] = &[
    &table::TableExporter,
    &markdown::MarkdownExporter,
    &csv::CsvExporter,
    &json::JsonExporter,
    &html::HtmlExporter,
];

/// "table, markdown, ...", for help and messages.
pub fn format_names() -> String {
    EXPORTERS
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The exporter for `--format NAME` (`md` is markdown too).
pub fn exporter(name: &str) -> Result<&'static dyn Exporter, CliError> {
    let name = if name == "md" { "markdown" } else { name };
    EXPORTERS
        .iter()
        .copied()
        .find(|e| e.name() == name)
        .ok_or_else(|| CliError::InvalidValue {
            name: "format".into(),
            value: name.into(),
            allowed: format!("one of {}", format_names()),
        })
}

/// The self-contained HTML page `compare` always writes.
pub fn html() -> &'static dyn Exporter {
    &html::HtmlExporter
}

/// `--figures DIR`, checked before anything runs: a directory, or a path
/// whose nearest existing ancestor is one (it is created when written).
pub fn figures_dir(value: Option<&str>) -> Result<Option<std::path::PathBuf>, CliError> {
    let Some(v) = value else { return Ok(None) };
    let path = std::path::PathBuf::from(v);
    let bad = |why: &str| CliError::InvalidValue {
        name: "figures".into(),
        value: v.into(),
        allowed: format!("a directory to write SVG files into ({why})"),
    };
    let mut p = path.as_path();
    loop {
        if p.as_os_str().is_empty() || p.is_dir() {
            return Ok(Some(path.clone()));
        }
        if p.exists() {
            return Err(bad(&format!("{} is a file", p.display())));
        }
        match p.parent() {
            Some(parent) => p = parent,
            None => return Err(bad("no such place")),
        }
    }
}

/// Writes each figure of a report into `dir` as a standalone SVG file
/// (creating the directory); returns how many.
pub fn write_figures(d: &model::Document, dir: &std::path::Path) -> anyhow::Result<usize> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "--figures {}: cannot create that directory; give one you can write to",
            dir.display()
        )
    })?;
    let files = html::figure_files(d);
    for (name, svg) in &files {
        let path = dir.join(name);
        std::fs::write(&path, svg)
            .with_context(|| format!("--figures: writing {}", path.display()))?;
    }
    Ok(files.len())
}

/// A number with as many decimals as its size warrants.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// A p-value to four decimals, "<0.0001" below that.
pub fn pval(p: f64) -> String {
    if p.is_nan() {
        "–".into()
    } else if p < 1e-4 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

/// A fraction as a percentage without needless decimals: 0.05 is "5".
pub fn percent(x: f64) -> String {
    let s = format!("{:.2}", x * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A ratio with three significant figures or so: 0.0412, 0.970, 36.9. The
/// headline rows' ratios and intervals; the overview's cells use the
/// shorter `model::sig3`.
pub fn ratio_num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.1 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// "0.970× [0.951, 0.990]"
pub fn ratio_text(a: &Assessment) -> String {
    format!(
        "{}× [{}, {}]",
        ratio_num(a.ratio.point),
        ratio_num(a.ratio.lower),
        ratio_num(a.ratio.upper)
    )
}

/// "12.3% overhead" / "4.0% faster" for rates, "1.52× slower" / "1.10×
/// faster" for times.
pub fn effect(a: &Assessment) -> String {
    match (a.overhead_pct, a.times_slower) {
        (Some(o), _) if o >= 0.0 => format!("{o:.1}% overhead"),
        (Some(o), _) => format!("{:.1}% faster", -o),
        (_, Some(t)) if t >= 1.0 => format!("{t:.2}× slower"),
        (_, Some(t)) => format!("{:.2}× faster", 1.0 / t),
        _ => String::new(),
    }
}

/// The verdict word, and for an inconclusive one the repetitions per side
/// that would decide it at the observed variance.
pub fn verdict_text(a: &Assessment) -> String {
    match (a.outcome, a.runs_needed) {
        (Outcome::Inconclusive, Some(n)) => {
            let goal = match n.to_show {
                Goal::Difference => "a difference",
                Goal::Equivalence => "equivalence",
            };
            match n.per_side {
                Some(k) => format!("inconclusive (~{k} runs to show {goal})"),
                None => format!(
                    "inconclusive (over {} runs to show {goal})",
                    crate::stats::MAX_RUNS_PER_SIDE
                ),
            }
        }
        (o, _) => o.label().to_string(),
    }
}

/// The verdict cell of any table: the verdict, in brackets when it is a
/// descriptive one of the detail family, "baseline", or why there is none.
pub fn verdict_cell(s: &EnvStat, headline: bool, baseline: bool) -> String {
    match (&s.vs_baseline, &s.not_comparable) {
        (Some(a), _) if headline => verdict_text(a),
        (Some(a), _) => format!("[{}]", a.outcome.label()),
        (None, Some(_)) => "not comparable".into(),
        (None, None) if baseline => "baseline".into(),
        (None, None) => String::new(),
    }
}

/// Marks after a headline row's verdict: ⚑ a noisy run, † the tests
/// disagree.
pub fn marks(r: &HeadlineRow) -> String {
    let mut m = String::new();
    if r.noisy {
        m.push_str(" ⚑");
    }
    if r.fsync_ignored {
        m.push_str(" ⚠");
    }
    if r.stat
        .vs_baseline
        .as_ref()
        .is_some_and(|a| a.tests_disagree)
    {
        m.push_str(" †");
    }
    m
}

/// The method, in one paragraph every format prints.
pub fn method(a: &Analysis) -> String {
    if a.adaptive {
        return format!(
            "Adaptive design: each environment's runs are paired with the baseline's of the same round; ratios are the geometric mean of the paired ratios, \
             with anytime-valid 95% confidence-sequence intervals (t-intervals with α spent over a schedule of looks, intersected with a t-mixture and robust betting e-process), so the verdicts could be read after every round. \
             Verdicts at α = {} over each entry's headline metrics (Bonferroni, family-wise): slower or faster when the interval excludes 1, \
             equivalent when its two one-sided bounds lie within ±{}% (the interval shown for such a row has each end at α on its own side), otherwise inconclusive with the pairs that would decide it; \
             across the whole summary, slower and faster are also held to a false-discovery rate of {} (Benjamini–Hochberg over the rows' anytime-valid p-values). \
             Welch's and the Mann–Whitney p (--detail) are descriptive here. ⚑: a run was noisy (steal, or other processes' load).{}",
            a.settings.alpha,
            percent(a.settings.margin),
            a.settings.alpha,
            if a.fsync_ignored.is_empty() {
                ""
            } else {
                " ⚠: its files were where fsync reaches no disk (see Storage)."
            }
        );
    }
    format!(
        "Ratios are environment / baseline of geometric means, with 95% intervals (Welch's t on log values). \
         Verdicts over each entry's headline metrics, Holm-corrected, at α = {}: slower or faster when the difference is significant \
         (and, across the whole summary, within a false-discovery rate of α by Benjamini–Yekutieli), \
         equivalent when the ratio lies within ±{}% (two one-sided tests), otherwise inconclusive with the runs per side that would decide it. \
         The exact Mann–Whitney p is shown beside Welch's as a robustness check (†: they disagree). ⚑: a run was noisy (steal, or other processes' load).{}",
        a.settings.alpha,
        percent(a.settings.margin),
        if a.fsync_ignored.is_empty() {
            ""
        } else {
            " ⚠: its files were where fsync reaches no disk (see Storage)."
        }
    )
}

/// "3 slower, 2 equivalent, 1 inconclusive" over the headline verdicts,
/// and the repetitions that would decide the inconclusive ones.
pub fn tally(a: &Analysis) -> String {
    let (counts, not_comparable) = a.headline_counts();
    let mut parts: Vec<String> = ["slower", "faster", "equivalent", "inconclusive"]
        .iter()
        .filter_map(|k| counts.get(k).map(|n| format!("{n} {k}")))
        .collect();
    if not_comparable > 0 {
        parts.push(format!("{not_comparable} not comparable"));
    }
    if parts.is_empty() {
        return "No headline verdicts.".into();
    }
    let mut out = format!("Headline verdicts: {}.", parts.join(", "));
    match a.headline_runs_needed() {
        Some(Some(n)) => {
            // The fixed design is told its --repeat; the adaptive one
            // already repeats as needed, and was stopped by its budget.
            let how = if a.adaptive {
                "with a larger --budget".to_string()
            } else {
                format!("--repeat {n}, or the adaptive default")
            };
            let _ = write!(
                out,
                " About {n} runs per side would decide every inconclusive one at the observed noise ({how})."
            );
        }
        Some(None) => {
            let _ = write!(
                out,
                " Some inconclusive ones would need more than {} runs per side: the difference is too close to the ±{}% margin to tell at this noise.",
                crate::stats::MAX_RUNS_PER_SIDE,
                percent(a.settings.margin)
            );
        }
        None => {}
    }
    out
}

/// The flagged runs in a few lines, one per kind of flag (the full list
/// is for `--detail`): how many runs, in which environments, how strong.
pub fn flag_summary(a: &Analysis) -> Vec<String> {
    use crate::analysis::FlagKind;
    use std::collections::{BTreeMap, BTreeSet};
    // The distinct runs among some flags.
    let runs_of = |flags: &[&crate::analysis::Flag]| -> BTreeSet<(String, String, usize)> {
        flags
            .iter()
            .map(|f| (f.env.clone(), f.label.clone(), f.round))
            .collect()
    };
    let all: Vec<_> = a.flags.iter().collect();
    let runs = runs_of(&all);
    if runs.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!("{} flagged:", counted(runs.len(), "run"))];
    for (kind, what) in [
        (FlagKind::Load, "other processes' load"),
        (FlagKind::Steal, "steal"),
        (FlagKind::Multimodal, "multimodal timings"),
    ] {
        let of_kind: Vec<_> = a.flags.iter().filter(|f| f.kind == kind).collect();
        if of_kind.is_empty() {
            continue;
        }
        let kind_runs = runs_of(&of_kind);
        let mut per_env: BTreeMap<&str, usize> = BTreeMap::new();
        for (env, _, _) in &kind_runs {
            *per_env.entry(env).or_default() += 1;
        }
        let envs = a
            .envs
            .iter()
            .filter_map(|e| per_env.get(e.as_str()).map(|n| format!("{e} {n}")))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(if kind == FlagKind::Multimodal {
            format!(
                "{what}: {} in {} ({envs}); a part measured two faces of the machine",
                counted(of_kind.len(), "part"),
                counted(kind_runs.len(), "run"),
            )
        } else {
            let pct: Vec<f64> = of_kind.iter().map(|f| f.pct).collect();
            format!(
                "{what}: {} ({envs}), median {:.1}%, up to {:.1}% of the CPUs",
                counted(kind_runs.len(), "run"),
                crate::stats::median(&pct),
                pct.iter().copied().fold(f64::MIN, f64::max),
            )
        });
    }
    out
}

/// "1 run", "3 runs".
fn counted(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// "h1, h2 (3 hosts)": the hosts of a fleet report, for its heading.
pub fn fleet_hosts(f: &Fleet) -> String {
    let names: Vec<&str> = f.hosts.iter().map(|h| h.host.as_str()).collect();
    format!("{}: {}", counted(names.len(), "host"), names.join(", "))
}

/// A fleet row's spread as text: "min … max, IQR q1 … q3".
pub fn fleet_spread(r: &FleetRow) -> (String, String) {
    (
        format!("{} … {}", r.measure.show(r.min), r.measure.show(r.max)),
        format!("{} … {}", r.measure.show(r.q1), r.measure.show(r.q3)),
    )
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::core::result::{Metric, ResultDoc};
    use crate::stats::VerdictSettings;
    use crate::store::{ComparisonRow, RunRow};

    /// An analysis of host and vm over entries of these (workload,
    /// label), one run each.
    pub fn analysis_of(entries: &[(&str, &str)]) -> Analysis {
        let mut runs = Vec::new();
        for (i, (workload, label)) in entries.iter().enumerate() {
            for env in ["host", "vm"] {
                runs.push(RunRow {
                    env: env.into(),
                    entry: i,
                    label: label.to_string(),
                    round: 0,
                    doc: Some(ResultDoc::new(
                        workload,
                        env,
                        vec![Metric::new("x", 1.0, "ops/s", true)],
                    )),
                    error: None,
                });
            }
        }
        analyze(&comparison_row(), &runs, &VerdictSettings::default())
    }

    /// Comparison #7 of host and vm, finished, fixed design.
    pub fn comparison_row() -> ComparisonRow {
        ComparisonRow {
            id: 7,
            started_at: "2026-11-22T00:00:00Z".into(),
            suite: "t".into(),
            baseline: "host".into(),
            envs: vec!["host".into(), "vm".into()],
            args: vec![],
            finished: true,
            adaptive: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::result::{Metric, Monitor, ResultDoc};
    use crate::stats::VerdictSettings;
    use crate::store::RunRow;
    use tests_support::comparison_row;

    fn run(env: &str, round: usize, v: f64, steal: f64) -> RunRow {
        RunRow {
            env: env.into(),
            entry: 0,
            label: "cpu".into(),
            round,
            doc: Some(ResultDoc {
                params: serde_json::json!({"threads": 1})
                    .as_object()
                    .unwrap()
                    .clone(),
                monitor: Monitor {
                    cpu_steal_pct: steal,
                    ..Monitor::default()
                },
                ..ResultDoc::new(
                    "cpu",
                    env,
                    vec![Metric::new("events_per_sec", v, "events/s", true)],
                )
            }),
            error: None,
        }
    }

    fn fixture() -> Analysis {
        analyze(
            &comparison_row(),
            &fixture_runs(),
            &VerdictSettings::default(),
        )
    }

    fn fixture_runs() -> Vec<RunRow> {
        let mut runs = Vec::new();
        for (r, (h, v)) in [
            (100.0, 50.0),
            (101.0, 51.0),
            (99.0, 49.0),
            (100.0, 50.0),
            (100.0, 50.0),
        ]
        .iter()
        .enumerate()
        {
            runs.push(run("host", r, *h, 0.0));
            runs.push(run("vm", r, *v, if r == 2 { 9.0 } else { 0.0 }));
        }
        runs
    }

    fn microops_runs(ops_cycles: usize, rounds: usize) -> Vec<RunRow> {
        let mut runs = Vec::new();
        for r in 0..rounds {
            for (env, v) in [("host", 100.0 + r as f64), ("vm", 50.0 + r as f64)] {
                let mut row = run(env, r, v, 0.0);
                let doc = row.doc.as_mut().unwrap();
                doc.workload = "microops".into();
                doc.metrics = vec![Metric::new("getpid_ns", v, "ns", false)];
                doc.metrics.extend(
                    (0..ops_cycles)
                        .map(|i| Metric::new(&format!("op{i}_cycles"), v * 3.0, "cycles", false)),
                );
                runs.push(row);
            }
        }
        runs
    }

    #[test]
    fn detail_metrics_do_not_dilute_the_headline_verdict() {
        // getpid_ns is the headline; 24 more figures in cycles are detail.
        // With 3 runs a side the headline is decided (a 2× difference),
        // whatever the number of detail metrics.
        let a = analyze(
            &comparison_row(),
            &microops_runs(24, 3),
            &VerdictSettings::default(),
        );
        let m = &a.entries[0].metrics;
        assert!(m[0].headline && m[1..].iter().all(|m| !m.headline));
        let head = m[0].per_env[1].vs_baseline.as_ref().unwrap();
        assert_eq!(head.outcome, Outcome::Faster, "{head:?}");
        // A family of one: Holm changes nothing.
        assert_eq!(head.p_welch, head.p_welch_adjusted);
        // The detail family is corrected on its own, over 24.
        let detail = m[1].per_env[1].vs_baseline.as_ref().unwrap();
        assert!(
            detail.p_welch_adjusted >= detail.p_welch * 2.0,
            "{detail:?}"
        );
        assert!(a.headline_decided());
        // The summary has the one headline row; --detail shows the rest,
        // their verdicts in brackets.
        let t = exporter("table").unwrap();
        let short = t.render(&a, View::default());
        assert!(
            short.contains("getpid_ns") && !short.contains("op3_cycles"),
            "{short}"
        );
        let long = t.render(&a, View { detail: true });
        assert!(
            long.contains("op3_cycles") && long.contains("[faster]"),
            "{long}"
        );
    }

    #[test]
    fn an_inconclusive_verdict_says_how_many_runs_would_decide_it() {
        // A 3% difference under 3% noise with 3 runs a side.
        let mut runs = Vec::new();
        for (r, j) in [1.0, 1.03, 0.97].iter().enumerate() {
            runs.push(run("host", r, 100.0 * j, 0.0));
            runs.push(run("vm", r, 97.0 * [1.02, 0.97, 1.01][r], 0.0));
        }
        let a = analyze(&comparison_row(), &runs, &VerdictSettings::default());
        let v = a.entries[0].metrics[0].per_env[1]
            .vs_baseline
            .as_ref()
            .unwrap();
        assert_eq!(v.outcome, Outcome::Inconclusive);
        let n = v.runs_needed.unwrap().per_side.unwrap();
        assert!(n > 3, "{n}");
        let text = exporter("table").unwrap().render(&a, View::default());
        assert!(text.contains(&format!("inconclusive (~{n} runs")), "{text}");
        assert!(text.contains(&format!("--repeat {n}")), "{text}");
        assert!(!a.headline_decided());
    }

    #[test]
    fn a_wider_margin_turns_a_small_difference_equivalent() {
        let mut runs = Vec::new();
        for r in 0..5 {
            let j = [1.0, 1.005, 0.995, 1.002, 0.998][r];
            runs.push(run("host", r, 100.0 * j, 0.0));
            runs.push(run("vm", r, 96.0 * j, 0.0));
        }
        let outcome = |margin: f64| {
            let s = VerdictSettings {
                margin,
                ..VerdictSettings::default()
            };
            let a = analyze(&comparison_row(), &runs, &s);
            a.entries[0].metrics[0].per_env[1]
                .vs_baseline
                .as_ref()
                .unwrap()
                .outcome
        };
        assert_eq!(outcome(0.02), Outcome::Slower);
        assert_eq!(outcome(0.10), Outcome::Equivalent);
    }

    /// A memory sweep over block size × threads, the vm 2× slower at 2
    /// threads only.
    fn grid_runs() -> Vec<RunRow> {
        let mut runs = Vec::new();
        let mut entry = 0;
        for threads in [1, 2] {
            for block in ["1K", "4K"] {
                for r in 0..4 {
                    for (env, speed) in
                        [("host", 1.0), ("vm", if threads == 2 { 0.5 } else { 1.0 })]
                    {
                        let mut row = run(env, r, 100.0 * speed * (1.0 + 0.001 * r as f64), 0.0);
                        row.entry = entry;
                        row.label = format!("memory threads={threads} block={block}");
                        let doc = row.doc.as_mut().unwrap();
                        doc.workload = "memory".into();
                        doc.params = serde_json::json!({"threads": threads, "memory_block_size": block, "memory_oper": "write"})
                            .as_object()
                            .unwrap()
                            .clone();
                        doc.metrics = vec![Metric::new(
                            "mib_per_sec",
                            100.0 * speed * (1.0 + 0.001 * r as f64),
                            "MiB/s",
                            true,
                        )];
                        runs.push(row);
                    }
                }
                entry += 1;
            }
        }
        runs
    }

    #[test]
    fn sweeps_become_lines_and_a_grid_a_heat_map() {
        let a = analyze(&comparison_row(), &grid_runs(), &VerdictSettings::default());
        assert_eq!(a.entries.len(), 4);
        // threads is numeric: one line chart per block size.
        let lines = sweeps::one_way(&a);
        assert_eq!(
            lines.len(),
            2,
            "{:?}",
            lines.iter().map(|l| &l.1).collect::<Vec<_>>()
        );
        assert!(lines
            .iter()
            .all(|(w, k, g)| w == "memory" && k == "threads" && g.len() == 2));
        // Block size × threads is a full 2 × 2 grid.
        let grids = sweeps::two_way(&a);
        assert_eq!(grids.len(), 1);
        let g = &grids[0];
        assert_eq!((g.xs.len(), g.ys.len(), g.entries.len()), (2, 2, 4));
        let d = model::document(&a, View::default());
        let heat: Vec<&model::Figure> = d
            .figures()
            .into_iter()
            .filter(|f| matches!(f.kind, model::FigureKind::Heat { .. }))
            .collect();
        assert_eq!(heat.len(), 1, "one heat map, for the vm");
        let model::FigureKind::Heat { cells, xs, ys, .. } = &heat[0].kind else {
            unreachable!()
        };
        for (xi, yi, v, _) in cells {
            let threads = if g.xkey == "threads" {
                &xs[*xi]
            } else {
                &ys[*yi]
            };
            let want = if threads == "2" { 2.0 } else { 1.0 };
            assert!((v - want).abs() < 0.01, "threads {threads}: {v}");
        }
        // The overview: memory only, 2 of 4 metrics slower.
        let areas = model::area_slowdowns(&a);
        assert_eq!(areas.len(), 1);
        assert_eq!(areas[0].area, crate::workload::Area::Memory);
        assert_eq!(areas[0].verdicts[0], 2, "{:?}", areas[0]);
        assert!(
            (areas[0].point - 2f64.sqrt()).abs() < 0.01,
            "{:?}",
            areas[0]
        );
    }

    #[test]
    fn csv_is_pinned() {
        let csv = exporter("csv").unwrap().render(&fixture(), View::default());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].contains(",p_welch,p_welch_holm,p_rank,p_rank_holm,"));
        assert_eq!(
            lines[1],
            "7,0,cpu,cpu,events_per_sec,events/s,true,true,host,5,100,100,0.7071067811865476,0.007071067811865475,99,101,99.12201096691491,100.87798903308509,,,,,,,,,,,,baseline,,false"
        );
        assert!(lines[2].starts_with("7,0,cpu,cpu,events_per_sec,events/s,true,true,vm,5,50,50,"));
        assert!(lines[2].ends_with(",false,slower,,true"), "{}", lines[2]);
        let col = |i: usize| -> f64 { lines[2].split(',').nth(i).unwrap().parse().unwrap() };
        assert!((col(18) - 0.5).abs() < 0.001, "ratio {}", col(18));
        assert!((col(21) - 50.0).abs() < 0.1, "overhead {}", col(21));
        assert!(col(23) < 1e-6, "Welch p {}", col(23));
        // Tied values: the rank test's normal approximation.
        assert!((col(25) - 0.0102).abs() < 0.0005, "rank p {}", col(25));
    }

    #[test]
    fn markdown_puts_the_headline_summary_first() {
        let md = exporter("markdown")
            .unwrap()
            .render(&fixture(), View::default());
        assert!(md.starts_with("# virtperf comparison #7\n"));
        let summary = md.find("## Headline summary").unwrap();
        assert!(
            md.contains(
                "| cpu | vm | events_per_sec | 0.500× \\[0.491, 0.509\\] | 50.0% overhead | slower ⚑ |"
            ),
            "{md}"
        );
        assert!(md.contains("Headline verdicts: 1 slower."), "{md}");
        assert!(!md.contains("## Every metric"));
        assert!(md.find("## Flagged runs").unwrap() > summary);
        assert!(
            md.contains("1 run flagged:\n\n- steal: 1 run (vm 1), median 9.0%"),
            "{md}"
        );
        let long = exporter("markdown")
            .unwrap()
            .render(&fixture(), View { detail: true });
        assert!(
            long.contains("- ⚑ vm / cpu / round 3: steal 9.0%"),
            "{long}"
        );
        assert!(
            long.contains(
                "| events_per_sec (events/s) | host | 5 | 100.0 | \\[99.1, 100.9\\] | 0.7% |"
            ),
            "{long}"
        );
    }

    #[test]
    fn a_guests_error_never_reaches_the_terminal_raw() {
        // Issue 14, item 11: a failed run's error text comes from a guest.
        let mut runs = fixture_runs();
        runs[3].doc = None;
        runs[3].error = Some("boom\x1b]0;owned\x07\x1b[2J\r\u{202e}".into());
        let a = analyze(&comparison_row(), &runs, &VerdictSettings::default());
        for format in ["table", "markdown"] {
            let out = exporter(format).unwrap().render(&a, View::default());
            assert!(out.contains("boom"), "{format}: {out}");
            assert!(
                !out.contains(['\x1b', '\x07', '\r', '\u{202e}']),
                "{format}: {out:?}"
            );
        }
    }

    #[test]
    fn flags_are_summarised_by_kind_with_counts_per_environment() {
        use crate::analysis::{Flag, FlagKind};
        let mut a = fixture();
        a.flags.clear();
        let flag = |env: &str, round, kind, pct, reason: &str| Flag {
            env: env.into(),
            label: "cpu".into(),
            round,
            kind,
            pct,
            reason: reason.into(),
        };
        a.flags.push(flag("host", 0, FlagKind::Load, 20.0, "load"));
        a.flags.push(flag("vm", 0, FlagKind::Load, 40.0, "load"));
        a.flags.push(flag("vm", 1, FlagKind::Load, 90.0, "load"));
        a.flags.push(flag("vm", 1, FlagKind::Multimodal, 0.0, "a"));
        a.flags.push(flag("vm", 1, FlagKind::Multimodal, 0.0, "b"));
        let lines = flag_summary(&a);
        assert_eq!(
            lines,
            [
                "3 runs flagged:",
                "other processes' load: 3 runs (host 1, vm 2), median 40.0%, up to 90.0% of the CPUs",
                "multimodal timings: 2 parts in 1 run (vm 1); a part measured two faces of the machine",
            ],
        );
        a.flags.truncate(2);
        assert!(
            flag_summary(&a)[1].contains("median 30.0%"),
            "{:?}",
            flag_summary(&a)
        );
    }

    #[test]
    fn every_format_flags_noisy_runs() {
        let a = fixture();
        let v = View::default();
        assert!(exporter("table")
            .unwrap()
            .render(&a, v)
            .contains("steal: 1 run (vm 1), median 9.0%, up to 9.0% of the CPUs"));
        assert!(exporter("table")
            .unwrap()
            .render(&a, View { detail: true })
            .contains("vm / cpu / round 3: steal 9.0%"));
        assert!(exporter("table")
            .unwrap()
            .render(&a, v)
            .contains("slower ⚑"));
        assert!(exporter("html")
            .unwrap()
            .render(&a, v)
            .contains("steal 9.0%"));
        assert!(exporter("json")
            .unwrap()
            .render(&a, v)
            .contains("steal 9.0%"));
        assert!(exporter("csv").unwrap().render(&a, v).contains(",true"));
    }
}
