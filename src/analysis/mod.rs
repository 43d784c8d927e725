//! Turns a comparison's stored runs into what reports show: per entry,
//! metric and environment a summary, and against the baseline the verdict of
//! `stats::assess_family` (ratio of geometric means with its 95% interval,
//! Welch's p raw and Holm-adjusted, the Mann–Whitney p beside it, one of four
//! verdicts, and for an inconclusive one the repetitions that would decide
//! it); seed 001's categories and score per environment; flagged runs.
//!
//! Two families per entry and environment, each Holm-corrected on its own:
//! - the headline family: the metrics the workload declares headline
//!   (`MetricDef::headline`, each measurement once). These verdicts are the
//!   product: the summary shows them and `--repeat auto` waits for them.
//! - the detail family: every other metric (the same measurement in another
//!   unit, percentiles, rates derived from the headline). Their verdicts are
//!   descriptive (`EnvStat::headline` is false, reports show them only with
//!   `--detail` and mark them so): a second family keeps them from diluting
//!   the headline verdicts, and since it counts a measurement more than once
//!   its correction is conservative.
//!
//! A workload this build does not know (an old store) has every metric in
//! the headline family.
//!
//! Which way is better for a metric is its workload's definition's word,
//! never a document's; a metric no definition names takes the baseline's
//! runs' (`gather::direction`). A run's document counts only within
//! `MAX_METRICS` metrics (a larger one is reported as a failed run).

pub mod account;
pub mod explain;
pub mod fleet;
pub mod gate;
mod gather;
pub mod history;
pub mod history_sim;
pub mod sequential;
pub mod timeline;
pub mod unpaired;

use gather::Gathered;
pub use gather::{direction, unusable, Stated};

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

pub use crate::core::result::MAX_METRICS;
use crate::stats::{self, Assessment, MetricSamples, Outcome, Ranking, Summary, VerdictSettings};
use crate::store::{ComparisonRow, RunRow};
use crate::workload::MetricDef;

/// Steal above this share of CPU time flags a run.
pub const STEAL_LIMIT_PCT: f64 = 5.0;
/// CPU used by other processes (not the benchmark, not work done on the
/// environment's behalf) above this share flags a run.
pub const FOREIGN_LIMIT_PCT: f64 = 10.0;

#[derive(Debug, Clone, Serialize)]
pub struct EnvStat {
    pub env: String,
    pub samples: Vec<f64>,
    pub summary: Option<Summary>,
    /// Against the baseline; None for the baseline itself and for metrics
    /// that cannot be compared (see `not_comparable`).
    pub vs_baseline: Option<Assessment>,
    /// Why this environment's metric has no comparison, when it has runs.
    pub not_comparable: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricAnalysis {
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// In the headline family (see the module doc).
    pub headline: bool,
    pub per_env: Vec<EnvStat>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EntryAnalysis {
    pub index: usize,
    pub label: String,
    pub workload: String,
    pub params: serde_json::Map<String, serde_json::Value>,
    pub metrics: Vec<MetricAnalysis>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Flag {
    pub env: String,
    pub label: String,
    pub round: usize,
    pub kind: FlagKind,
    /// Steal or other processes' load in % of the CPUs; 0 for a
    /// multimodal part.
    pub pct: f64,
    pub reason: String,
}

/// Why a run was flagged: what a summary counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    Steal,
    Load,
    Multimodal,
}

#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub env: String,
    pub label: String,
    pub round: usize,
    pub error: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub id: i64,
    pub started_at: String,
    pub suite: String,
    pub baseline: String,
    /// Baseline first.
    pub envs: Vec<String>,
    /// α, the equivalence margin and the power the verdicts used.
    pub settings: VerdictSettings,
    /// The adaptive design: headline verdicts from `sequential` (its
    /// confidence sequences), not from Welch's test.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub adaptive: bool,
    /// Made by `compare --baseline-from`: the baseline's runs are an
    /// earlier comparison's, and every verdict is unpaired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_from: Option<crate::store::BaselineFrom>,
    /// Where each environment ran (from the first result's fingerprint).
    pub fingerprints: BTreeMap<String, crate::core::result::EnvInfo>,
    /// Environments of runs read by `virtperf import`: each tool and
    /// version they came from, with its number of runs and first file.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub imported: BTreeMap<String, Vec<ImportedSource>>,
    pub entries: Vec<EntryAnalysis>,
    pub rankings: Vec<(String, Ranking)>,
    /// Seed 001's ranking of the kinds of environment, each at its best
    /// configuration per category.
    pub solutions: Vec<stats::Solution>,
    pub flags: Vec<Flag>,
    pub failures: Vec<Failure>,
    /// (environment, entry label) pairs with a run whose files were on a
    /// file system that ignores fsync (`Storage::fsync_ignored`); the
    /// fingerprints carry the why.
    #[serde(skip)]
    pub fsync_ignored: BTreeSet<(String, String)>,
    /// Where each environment's host CPU per unit of work went, beside
    /// the baseline's (`explain`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub breakdowns: Vec<explain::Breakdown>,
    /// The measured causes of each slower or faster headline verdict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explanations: Vec<explain::Explanation>,
    /// Each run's per-second samples, for the entries' sections (the
    /// store holds them; the data formats do not repeat them).
    #[serde(skip)]
    pub timelines: Vec<timeline::Timeline>,
    /// Runs with samples not drawn, per (entry label, environment).
    #[serde(skip)]
    pub timelines_left_out: BTreeMap<(String, String), usize>,
}

/// Runs of one environment imported from one tool's output.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ImportedSource {
    /// "fio 3.33", "sysbench 1.0.20".
    pub tool: String,
    pub runs: usize,
    pub first_file: String,
    /// The day the first file was written (`ImportedFrom::file_date`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_date: Option<String>,
}

impl ImportedSource {
    /// "sysbench 1.0.20, file of 2019-03-02": a figure's source, as a
    /// report sets it beside the figure.
    pub fn source(&self) -> String {
        match &self.file_date {
            Some(d) => format!("{}, file of {d}", self.tool),
            None => self.tool.clone(),
        }
    }
}

/// One row of the headline summary: a headline metric of one entry in one
/// environment against the baseline.
#[derive(Debug, Clone)]
pub struct HeadlineRow<'a> {
    pub entry: &'a EntryAnalysis,
    pub metric: &'a MetricAnalysis,
    pub stat: &'a EnvStat,
    /// Some run of this entry in this environment was flagged noisy.
    pub noisy: bool,
    /// Some run of it wrote where fsync reaches no disk.
    pub fsync_ignored: bool,
}

/// The kinds of verdict counted apart, in the order a tally names them:
/// slower and faster within the margin are their own.
pub const VERDICT_KINDS: [&str; 6] = [
    "slower",
    "slower_within_margin",
    "faster",
    "faster_within_margin",
    "equivalent",
    "inconclusive",
];

/// A verdict's kind among [`VERDICT_KINDS`].
pub fn verdict_kind(a: &Assessment) -> &'static str {
    match (a.outcome, a.within_margin) {
        (Outcome::Slower, true) => "slower_within_margin",
        (Outcome::Faster, true) => "faster_within_margin",
        (o, _) => o.label(),
    }
}

pub fn analyze(cmp: &ComparisonRow, runs: &[RunRow], settings: &VerdictSettings) -> Analysis {
    let mut envs = cmp.envs.clone();
    for r in runs {
        if !envs.contains(&r.env) {
            envs.push(r.env.clone());
        }
    }
    let baseline = cmp.baseline.clone();
    let mut g = Gathered::default();
    for r in runs {
        g.take(r);
    }
    let mut entries: Vec<EntryAnalysis> = std::mem::take(&mut g.entries)
        .into_iter()
        .filter_map(|(index, e)| {
            let imported: Vec<bool> = envs.iter().map(|e| g.imported.contains_key(e)).collect();
            e.analyze(index, &envs, &imported, &baseline, settings)
        })
        .collect();
    // An imported entry the baseline did not run says why it has no ratio.
    unpaired::explain(&mut entries, &envs, &baseline, &g.imported);
    // So does an entry the earlier comparison of `--baseline-from` lacks.
    if let Some(from) = &cmp.baseline_from {
        unpaired::borrowed(&mut entries, &envs, &baseline, from);
    }
    let mut a = Analysis {
        id: cmp.id,
        started_at: cmp.started_at.clone(),
        suite: cmp.suite.clone(),
        baseline,
        envs,
        settings: *settings,
        adaptive: cmp.adaptive,
        baseline_from: cmp.baseline_from.clone(),
        fingerprints: g.fingerprints,
        imported: g.imported,
        entries,
        rankings: Vec::new(),
        solutions: Vec::new(),
        flags: g.flags,
        failures: g.failures,
        fsync_ignored: g.fsync_ignored,
        breakdowns: Vec::new(),
        explanations: Vec::new(),
        timelines: Vec::new(),
        timelines_left_out: BTreeMap::new(),
    };
    (a.timelines, a.timelines_left_out) = timeline::of_runs(runs);
    if a.adaptive {
        sequential::overlay(&mut a, runs, settings);
    } else {
        summary_control(&mut a, settings);
    }
    mark_within_margin(&mut a, settings.margin);
    if a.baseline_from.is_some() {
        drop_runs_needed(&mut a);
    }
    a.rankings = rankings(&a.envs, &a.baseline, &a.entries);
    a.solutions = solutions(&a);
    (a.breakdowns, a.explanations) = explain::explain(&a);
    a
}

/// The fixed design's control over the whole headline summary: Holm keeps
/// each entry's family, and a slower or faster row also needs its Welch p
/// to pass Benjamini–Yekutieli over every headline row (false-discovery
/// rate α under any dependence: an entry's metrics share runs, and every
/// environment shares the baseline's). Rows that fail it read inconclusive.
fn summary_control(a: &mut Analysis, settings: &VerdictSettings) {
    let mut rows: Vec<&mut Assessment> = a
        .entries
        .iter_mut()
        .flat_map(|e| e.metrics.iter_mut().filter(|m| m.headline))
        .flat_map(|m| m.per_env.iter_mut())
        .filter_map(|s| s.vs_baseline.as_mut())
        .collect();
    let p: Vec<f64> = rows.iter().map(|r| r.p_welch).collect();
    let q = stats::benjamini_yekutieli(&p);
    for (r, q) in rows.iter_mut().zip(q) {
        if matches!(r.outcome, Outcome::Slower | Outcome::Faster) && q >= settings.alpha {
            r.outcome = Outcome::Inconclusive;
        }
    }
}

/// Every verdict against the baseline, detail metrics included.
fn verdicts_mut(a: &mut Analysis) -> impl Iterator<Item = &mut Assessment> {
    a.entries
        .iter_mut()
        .flat_map(|e| e.metrics.iter_mut())
        .flat_map(|m| m.per_env.iter_mut())
        .filter_map(|s| s.vs_baseline.as_mut())
}

/// Marks every slower or faster verdict whose interval lies inside the
/// margin, once the design's verdicts and intervals are final (the adaptive
/// overlay replaces both; the summary's control can hold a verdict back).
fn mark_within_margin(a: &mut Analysis, margin: f64) {
    for x in verdicts_mut(a) {
        x.within_margin = stats::within_margin(x.outcome, &x.ratio, margin);
    }
}

/// Against an earlier comparison's baseline (`--baseline-from`) the runs
/// per side that would decide a row have no meaning: that side's runs are
/// fixed, so more runs of this side alone cannot reach the plan, which
/// assumes both sides grow. The tally says what to do instead.
fn drop_runs_needed(a: &mut Analysis) {
    for x in verdicts_mut(a) {
        x.runs_needed = None;
    }
}

/// Seed 001's category overheads and score, per environment.
fn rankings(envs: &[String], baseline: &str, entries: &[EntryAnalysis]) -> Vec<(String, Ranking)> {
    envs.iter()
        .enumerate()
        .filter(|(_, e)| **e != baseline)
        .map(|(ei, env)| {
            let ratios: Vec<(stats::Category, String, stats::RatioEstimate)> = entries
                .iter()
                .flat_map(|e| e.metrics.iter().map(move |m| (e, m)))
                .filter_map(|(e, m)| {
                    let category = metric_def(&e.workload, &m.name)?.category?;
                    m.per_env[ei].vs_baseline.as_ref().map(|c| {
                        let r = stats::RatioEstimate {
                            point: c.ratio.point,
                            lower: c.ratio.lower,
                            upper: c.ratio.upper,
                        };
                        (category, m.name.clone(), r)
                    })
                })
                .collect();
            (env.clone(), stats::ranking(&ratios))
        })
        .collect()
}

/// Seed 001's ranking of solutions: environments of one kind (driver)
/// are one solution's configurations (1, 2, 4 instances...).
fn solutions(a: &Analysis) -> Vec<stats::Solution> {
    let envs: Vec<(String, String, Ranking)> = a
        .rankings
        .iter()
        .map(|(env, r)| {
            let kind = a
                .fingerprints
                .get(env)
                .map_or_else(|| env.clone(), |f| f.kind.clone());
            (kind, env.clone(), r.clone())
        })
        .collect();
    stats::solutions(&envs)
}

/// The families of an entry's metrics, each corrected on its own: the
/// headline figures, the other figures of the run, and the figures derived
/// from its accounting (`account`), which explain and never dilute the
/// others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Headline,
    Detail,
    Accounting,
}

impl Family {
    fn of(m: &MetricAnalysis) -> Family {
        if m.headline {
            Family::Headline
        } else if account::is_derived(&m.name) {
            Family::Accounting
        } else {
            Family::Detail
        }
    }
}

/// One family of an entry in environment `ei` against the baseline `bi`:
/// one `assess_family` call, results written back.
fn assess(
    metrics: &mut [MetricAnalysis],
    sides: Sides,
    family: Family,
    settings: &VerdictSettings,
) {
    let (bi, ei) = (sides.base, sides.env);
    let members: Vec<usize> = (0..metrics.len())
        .filter(|&i| {
            let m = &metrics[i];
            Family::of(m) == family
                && !m.per_env[ei].samples.is_empty()
                && !m.per_env[bi].samples.is_empty()
                && m.per_env[ei].not_comparable.is_none()
        })
        .collect();
    let family: Vec<MetricSamples> = members
        .iter()
        .map(|&i| MetricSamples {
            base: &metrics[i].per_env[bi].samples,
            env: &metrics[i].per_env[ei].samples,
            higher_is_better: metrics[i].higher_is_better,
        })
        .collect();
    let results = stats::assess_family(&family, settings);
    for (&i, r) in members.iter().zip(results) {
        let s = &mut metrics[i].per_env[ei];
        match r {
            Ok(a) => s.vs_baseline = Some(a),
            Err(e) => s.not_comparable = Some(why_not_comparable(&e, sides.imported)),
        }
    }
}

/// The baseline's and an environment's indexes in an entry, and whether
/// each side's runs were imported (which changes what would make them
/// comparable).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sides {
    pub base: usize,
    pub env: usize,
    /// [baseline, environment]
    pub imported: [bool; 2],
}

/// Why a metric has no ratio, naming what would give it one: more
/// repetitions of a measured side, another log of an imported one.
fn why_not_comparable(e: &stats::SampleError, imported: [bool; 2]) -> String {
    match *e {
        stats::SampleError::TooFew { side, n } => {
            let imported = match side {
                stats::Side::Baseline => imported[0],
                stats::Side::Environment => imported[1],
            };
            let fix = if imported {
                "import another log of the same test into the same environment"
            } else {
                "compare with --repeat 2 or more"
            };
            format!(
                "the {} has {n} run{} of this metric; a ratio with an interval needs at least 2 per side: {fix}",
                side.label(),
                if n == 1 { "" } else { "s" }
            )
        }
        _ => e.to_string(),
    }
}

impl Analysis {
    /// Whether some run of `label` in `env` was flagged noisy.
    pub fn noisy(&self, env: &str, label: &str) -> bool {
        self.flags.iter().any(|f| f.env == env && f.label == label)
    }

    /// The headline summary: per entry and environment (baseline left out),
    /// each headline metric, in entry order.
    pub fn headline_rows(&self) -> Vec<HeadlineRow<'_>> {
        let mut out = Vec::new();
        for e in &self.entries {
            for (ei, env) in self.envs.iter().enumerate() {
                if *env == self.baseline {
                    continue;
                }
                for m in e.metrics.iter().filter(|m| m.headline) {
                    let Some(stat) = m.per_env.get(ei) else {
                        continue;
                    };
                    if stat.samples.is_empty() {
                        continue;
                    }
                    out.push(HeadlineRow {
                        entry: e,
                        metric: m,
                        stat,
                        noisy: self.noisy(env, &e.label),
                        fsync_ignored: self.fsync_ignored.contains(&(env.clone(), e.label.clone())),
                    });
                }
            }
        }
        out
    }

    /// How many headline verdicts there are of each kind ([`verdict_kind`]),
    /// and how many headline metrics could not be compared.
    pub fn headline_counts(&self) -> (BTreeMap<&'static str, usize>, usize) {
        let mut counts = BTreeMap::new();
        let mut not_comparable = 0;
        for r in self.headline_rows() {
            match &r.stat.vs_baseline {
                Some(a) => *counts.entry(verdict_kind(a)).or_default() += 1,
                None => not_comparable += 1,
            }
        }
        (counts, not_comparable)
    }

    /// Whether every headline metric of every environment has a decided
    /// verdict (not inconclusive, not lacking runs): the `--repeat auto`
    /// stopping rule.
    pub fn headline_decided(&self) -> bool {
        self.headline_rows().iter().all(|r| {
            r.stat
                .vs_baseline
                .as_ref()
                .is_some_and(|a| a.outcome != Outcome::Inconclusive)
        })
    }

    /// The most repetitions per side any inconclusive headline verdict asks
    /// for (None inside: more than the planner looks at).
    pub fn headline_runs_needed(&self) -> Option<Option<usize>> {
        self.headline_rows()
            .iter()
            .filter_map(|r| r.stat.vs_baseline.as_ref()?.runs_needed)
            .map(|n| n.per_side)
            .reduce(|a, b| match (a, b) {
                (Some(x), Some(y)) => Some(x.max(y)),
                _ => None,
            })
    }
}

/// What the workload declares about a metric it produced.
fn metric_def(workload: &str, metric: &str) -> Option<&'static MetricDef> {
    crate::workload::def_of_result(workload)?.metric(metric)
}

/// Whether a metric is one of its workload's headline figures. A workload
/// this build does not know (an old store) has every metric counted but
/// those derived from accounting.
pub fn is_headline(workload: &str, metric: &str) -> bool {
    if account::is_derived(metric) {
        return false;
    }
    match crate::workload::def_of_result(workload) {
        Some(def) => def.metric(metric).is_some_and(|m| m.headline),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::result::{Metric, ResultDoc};

    fn comparison(adaptive: bool) -> ComparisonRow {
        ComparisonRow {
            id: 1,
            started_at: String::new(),
            suite: "t".into(),
            baseline: "host".into(),
            envs: vec!["host".into(), "vm".into()],
            args: Vec::new(),
            finished: true,
            adaptive,
            baseline_from: None,
        }
    }

    fn run(env: &str, round: usize, metrics: Vec<Metric>) -> RunRow {
        RunRow {
            env: env.into(),
            entry: 0,
            label: "cpu".into(),
            round,
            doc: Some(ResultDoc::new("cpu", env, metrics)),
            error: None,
        }
    }

    /// Six rounds of cpu: the host at 100 ± 1 events/s, the vm at half
    /// that, both stating `(host, vm)` directions for events_per_sec and
    /// for a figure no workload defines; in `vm_first` order or not.
    fn halved(stated: (bool, bool), vm_first: bool) -> Vec<RunRow> {
        let mut runs = Vec::new();
        for round in 0..6 {
            let noise = [0.0, 1.0, -1.0, 0.5, -0.5, 0.2][round];
            let side = |env: &str, v: f64, hib: bool| {
                run(
                    env,
                    round,
                    vec![
                        Metric::new("events_per_sec", v, "events/s", hib),
                        Metric::new("own_figure", v, "x", hib),
                    ],
                )
            };
            let host = side("host", 100.0 + noise, stated.0);
            let vm = side("vm", 50.0 + noise / 2.0, stated.1);
            if vm_first {
                runs.extend([vm, host]);
            } else {
                runs.extend([host, vm]);
            }
        }
        runs
    }

    fn vm_stat<'a>(a: &'a Analysis, metric: &str) -> &'a EnvStat {
        let m = a.entries[0]
            .metrics
            .iter()
            .find(|m| m.name == metric)
            .unwrap();
        &m.per_env[1]
    }

    #[test]
    fn no_document_can_flip_a_metrics_direction() {
        // Issue 53, item 5: analyze took the direction from the first
        // document it saw and the adaptive rows from the last, so a vm
        // whose documents said lower_is_better turned 50% overhead into
        // "2.00x faster".
        let settings = VerdictSettings::default();
        for adaptive in [false, true] {
            for vm_first in [false, true] {
                let runs = halved((true, false), vm_first);
                let a = analyze(&comparison(adaptive), &runs, &settings);
                let at = format!("adaptive {adaptive}, vm first {vm_first}");
                // Defined by cpu's MetricDef: higher is better, whatever
                // the vm's documents say.
                let m = &a.entries[0].metrics[0];
                assert!(m.higher_is_better, "{at}");
                let v = vm_stat(&a, "events_per_sec").vs_baseline.as_ref().unwrap();
                assert_eq!(v.outcome, Outcome::Slower, "{at}");
                assert!((v.ratio.point - 0.5).abs() < 0.01, "{at}: {:?}", v.ratio);
                // A figure no workload defines: the baseline's runs say
                // higher, the vm's lower; the vm is not compared on it.
                let own = vm_stat(&a, "own_figure");
                assert!(own.vs_baseline.is_none(), "{at}");
                let why = own.not_comparable.as_deref().unwrap();
                assert!(why.contains("its runs say lower is better"), "{at}: {why}");
            }
        }
        // Where the vm agrees with the baseline, the baseline's direction
        // holds for the undefined figure, read either way round.
        for (stated, outcome) in [
            ((true, true), Outcome::Slower),
            ((false, false), Outcome::Faster),
        ] {
            let a = analyze(&comparison(false), &halved(stated, true), &settings);
            let own = vm_stat(&a, "own_figure").vs_baseline.as_ref().unwrap();
            assert_eq!(own.outcome, outcome, "{stated:?}");
        }
        // The baseline's own runs disagreeing: no comparison on it.
        let mut runs = halved((true, true), false);
        runs[0].doc.as_mut().unwrap().metrics[1].higher_is_better = false;
        let a = analyze(&comparison(false), &runs, &settings);
        let own = vm_stat(&a, "own_figure");
        assert!(own.vs_baseline.is_none());
        assert!(own
            .not_comparable
            .as_deref()
            .unwrap()
            .contains("baseline's runs disagree"));
    }

    #[test]
    fn a_document_with_too_many_metrics_is_a_failed_run() {
        // Issue 53, item 7: documents' extra names made analyze quadratic
        // (48k names, 27.8 s a round); one run's document is now bounded.
        let settings = VerdictSettings::default();
        let mut runs = halved((true, true), false);
        let many: Vec<Metric> = (0..=MAX_METRICS)
            .map(|i| Metric::new(&format!("extra_{i}"), 1.0, "x", true))
            .collect();
        runs[1].doc.as_mut().unwrap().metrics.extend(many);
        let a = analyze(&comparison(false), &runs, &settings);
        assert_eq!(a.failures.len(), 1);
        let f = &a.failures[0];
        assert_eq!((f.env.as_str(), f.round), ("vm", 0));
        assert!(
            f.error
                .contains(&format!("more than the {MAX_METRICS} one run may have")),
            "{}",
            f.error
        );
        assert!(a.entries[0]
            .metrics
            .iter()
            .all(|m| !m.name.starts_with("extra_")));
        assert_eq!(vm_stat(&a, "events_per_sec").samples.len(), 5);
        // At the bound, a document is whole.
        runs[1].doc.as_mut().unwrap().metrics.truncate(MAX_METRICS);
        let a = analyze(&comparison(false), &runs, &settings);
        assert!(a.failures.is_empty());
        assert_eq!(a.entries[0].metrics.len(), MAX_METRICS);
        // The adaptive rows leave such a run out too.
        let mut runs = halved((true, true), false);
        runs[1]
            .doc
            .as_mut()
            .unwrap()
            .metrics
            .extend((0..=MAX_METRICS).map(|i| Metric::new(&format!("x{i}"), 1.0, "x", true)));
        let rows = sequential::rows(&runs, "host");
        let eps = rows.iter().find(|r| r.metric == "events_per_sec").unwrap();
        assert_eq!(eps.diffs.len(), 5);
    }

    #[test]
    fn a_multimodal_part_of_a_run_is_flagged_with_its_modes() {
        use super::gather::multimodal;
        let details = serde_json::json!({
            "getpid": {"multimodal": true, "modes": [
                {"cycles": 415.0, "ns": 160.0, "share": 0.6},
                {"cycles": 600.0, "ns": 231.0, "share": 0.4}]},
            "cpuid": {"multimodal": false, "modes": [{"ns": 900.0, "share": 1.0}]},
            "timer": {"source": "tsc"}
        });
        assert_eq!(
            multimodal(&details),
            vec!["getpid multimodal (160 ns 60% / 231 ns 40%)".to_string()]
        );
        assert!(multimodal(&serde_json::Value::Null).is_empty());
    }
}
