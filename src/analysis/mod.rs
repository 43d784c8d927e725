//! Turns a comparison's stored runs into what reports show: per entry,
//! metric and environment a summary, and against the baseline a ratio with
//! its interval, the test and a verdict (Holm over each entry's metrics);
//! seed 001's categories and score per environment; flagged runs.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::core::result::ResultDoc;
use crate::stats::{self, Comparison, Ranking, Summary};
use crate::store::{ComparisonRow, RunRow};
use crate::workload::MetricDef;

/// Steal above this share of CPU time flags a run.
pub const STEAL_LIMIT_PCT: f64 = 5.0;
/// Busy CPU not explained by virtperf above this share flags a run.
pub const FOREIGN_LIMIT_PCT: f64 = 10.0;
pub const ALPHA: f64 = 0.05;

#[derive(Debug, Clone, Serialize)]
pub struct EnvStat {
    pub env: String,
    pub samples: Vec<f64>,
    pub summary: Option<Summary>,
    pub vs_baseline: Option<Comparison>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricAnalysis {
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
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
    pub reason: String,
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
    /// Where each environment ran (from the first result's fingerprint).
    pub fingerprints: BTreeMap<String, crate::core::result::EnvInfo>,
    pub entries: Vec<EntryAnalysis>,
    pub rankings: Vec<(String, Ranking)>,
    pub flags: Vec<Flag>,
    pub failures: Vec<Failure>,
}

fn flag_reasons(doc: &ResultDoc) -> Vec<String> {
    let m = &doc.monitor;
    let mut out = Vec::new();
    if m.cpu_steal_pct > STEAL_LIMIT_PCT {
        out.push(format!("steal {:.1}%", m.cpu_steal_pct));
    }
    if m.foreign_busy_pct > FOREIGN_LIMIT_PCT {
        out.push(format!("foreign load {:.1}%", m.foreign_busy_pct));
    }
    out
}

/// metric name -> environment -> samples
type Samples = BTreeMap<String, BTreeMap<String, Vec<f64>>>;
/// An entry's label, workload, params, metric (name, unit, higher is
/// better) in first-seen order, and samples.
type EntryRuns = (
    String,
    String,
    serde_json::Map<String, serde_json::Value>,
    Vec<(String, String, bool)>,
    Samples,
);

pub fn analyze(cmp: &ComparisonRow, runs: &[RunRow]) -> Analysis {
    let mut envs = cmp.envs.clone();
    for r in runs {
        if !envs.contains(&r.env) {
            envs.push(r.env.clone());
        }
    }
    let baseline = cmp.baseline.clone();
    let mut flags = Vec::new();
    let mut failures = Vec::new();
    let mut fingerprints = BTreeMap::new();
    let mut by_entry: BTreeMap<usize, EntryRuns> = BTreeMap::new();
    for r in runs {
        match (&r.doc, &r.error) {
            (Some(doc), _) => {
                fingerprints
                    .entry(r.env.clone())
                    .or_insert_with(|| doc.env.clone());
                for reason in flag_reasons(doc) {
                    flags.push(Flag {
                        env: r.env.clone(),
                        label: r.label.clone(),
                        round: r.round,
                        reason,
                    });
                }
                let e = by_entry.entry(r.entry).or_insert_with(|| {
                    (
                        r.label.clone(),
                        doc.workload.clone(),
                        doc.params.clone(),
                        Vec::new(),
                        BTreeMap::new(),
                    )
                });
                for m in &doc.metrics {
                    if !m.value.is_finite() {
                        continue;
                    }
                    if !e.3.iter().any(|(n, _, _)| n == &m.name) {
                        e.3.push((m.name.clone(), m.unit.clone(), m.higher_is_better));
                    }
                    e.4.entry(m.name.clone())
                        .or_default()
                        .entry(r.env.clone())
                        .or_default()
                        .push(m.value);
                }
            }
            (None, err) => failures.push(Failure {
                env: r.env.clone(),
                label: r.label.clone(),
                round: r.round,
                error: err.clone().unwrap_or_default(),
            }),
        }
    }
    let mut entries = Vec::new();
    for (index, (label, workload, params, names, samples)) in by_entry {
        let mut metrics: Vec<MetricAnalysis> = names
            .iter()
            .map(|(name, unit, hib)| {
                let per = samples.get(name);
                let base = per
                    .and_then(|p| p.get(&baseline))
                    .cloned()
                    .unwrap_or_default();
                MetricAnalysis {
                    name: name.clone(),
                    unit: unit.clone(),
                    higher_is_better: *hib,
                    per_env: envs
                        .iter()
                        .map(|env| {
                            let xs = per.and_then(|p| p.get(env)).cloned().unwrap_or_default();
                            let vs = (env != &baseline && !xs.is_empty() && !base.is_empty())
                                .then(|| stats::compare(&base, &xs, *hib));
                            EnvStat {
                                env: env.clone(),
                                summary: (!xs.is_empty()).then(|| stats::summarize(&xs)),
                                samples: xs,
                                vs_baseline: vs,
                            }
                        })
                        .collect(),
                }
            })
            .collect();
        // Holm across this entry's metrics, per environment.
        for (ei, env) in envs.iter().enumerate() {
            if env == &baseline {
                continue;
            }
            let mut family: Vec<(&mut Comparison, bool)> = metrics
                .iter_mut()
                .filter_map(|m| {
                    let hib = m.higher_is_better;
                    m.per_env[ei].vs_baseline.as_mut().map(|c| (c, hib))
                })
                .collect();
            stats::decide(&mut family, ALPHA);
        }
        entries.push(EntryAnalysis {
            index,
            label,
            workload,
            params,
            metrics,
        });
    }
    let rankings = envs
        .iter()
        .enumerate()
        .filter(|(_, e)| **e != baseline)
        .map(|(ei, env)| {
            let ratios: Vec<(stats::Category, String, f64)> = entries
                .iter()
                .flat_map(|e| e.metrics.iter().map(move |m| (e, m)))
                .filter_map(|(e, m)| {
                    let category = metric_def(&e.workload, &m.name)?.category?;
                    m.per_env[ei]
                        .vs_baseline
                        .as_ref()
                        .map(|c| (category, m.name.clone(), c.ratio.point))
                })
                .collect();
            (env.clone(), stats::ranking(&ratios))
        })
        .collect();
    Analysis {
        id: cmp.id,
        started_at: cmp.started_at.clone(),
        suite: cmp.suite.clone(),
        baseline,
        envs,
        fingerprints,
        entries,
        rankings,
        flags,
        failures,
    }
}

/// An entry with more metrics than its runs can carry through Holm's
/// correction: even environments that never overlap come out "n.s.".
#[derive(Debug, Clone, PartialEq)]
pub struct Underpowered {
    pub label: String,
    pub metrics: usize,
    pub n: usize,
    /// The smallest adjusted p-value these runs could possibly give.
    pub best_p: f64,
    /// Runs per environment that would make a verdict possible.
    pub needed: usize,
}

/// The smallest two-sided p-value the rank test gives for samples of these
/// sizes: complete separation.
fn best_rank_p(n1: usize, n2: usize) -> f64 {
    let a: Vec<f64> = (0..n1).map(|i| i as f64).collect();
    let b: Vec<f64> = (0..n2).map(|i| (n1 + i) as f64).collect();
    stats::mann_whitney_p(&a, &b)
}

impl Analysis {
    /// Entries where Holm's correction over `metrics` tests leaves no room
    /// for significance with the runs made, and how many runs would.
    pub fn underpowered(&self) -> Vec<Underpowered> {
        let mut out = Vec::new();
        for e in &self.entries {
            let Some(base) = self.envs.iter().position(|x| x == &self.baseline) else {
                continue;
            };
            for (ei, _) in self.envs.iter().enumerate().filter(|(i, _)| *i != base) {
                let compared: Vec<&MetricAnalysis> = e
                    .metrics
                    .iter()
                    .filter(|m| m.per_env[ei].vs_baseline.is_some())
                    .collect();
                let Some(first) = compared.first() else {
                    continue;
                };
                let n1 = first.per_env[base].samples.len();
                let n2 = first.per_env[ei].samples.len();
                let m = compared.len();
                let best_p = (best_rank_p(n1, n2) * m as f64).min(1.0);
                if best_p < ALPHA || n1.min(n2) < 4 {
                    // Fine, or already covered by the few-runs note.
                    continue;
                }
                let needed = (n1.min(n2)..=100)
                    .find(|&k| best_rank_p(k, k) * (m as f64) < ALPHA)
                    .unwrap_or(100);
                if !out.iter().any(|u: &Underpowered| u.label == e.label) {
                    out.push(Underpowered {
                        label: e.label.clone(),
                        metrics: m,
                        n: n1.min(n2),
                        best_p,
                        needed,
                    });
                }
            }
        }
        out
    }

    /// One line per underpowered entry, for every report format.
    pub fn underpowered_notes(&self) -> Vec<String> {
        self.underpowered()
            .iter()
            .map(|u| {
                format!(
                    "{}: {} metrics tested with {} runs each, so even a complete separation gives a Holm-adjusted p of {:.3} and every verdict there is n.s.; --repeat {} or more makes a verdict possible (the ratios and intervals stand).",
                    u.label, u.metrics, u.n, u.best_p, u.needed
                )
            })
            .collect()
    }

    /// The smallest number of runs behind any environment's figure.
    pub fn min_n(&self) -> Option<usize> {
        self.entries
            .iter()
            .flat_map(|e| e.metrics.iter())
            .flat_map(|m| m.per_env.iter())
            .filter_map(|s| s.summary.as_ref().map(|x| x.n))
            .min()
    }

    /// Whether every headline metric of every environment is precise to
    /// ±`rel` (the `--repeat auto` stopping rule).
    pub fn precise_enough(&self, rel: f64) -> bool {
        self.entries.iter().all(|e| {
            e.metrics
                .iter()
                .filter(|m| is_headline(&e.workload, &m.name))
                .all(|m| {
                    m.per_env
                        .iter()
                        .all(|s| stats::precise_enough(&s.samples, rel))
                })
        })
    }

    /// (A/A use) the share of comparisons with no significant difference.
    pub fn share_not_different(&self) -> f64 {
        let verdicts: Vec<_> = self
            .entries
            .iter()
            .flat_map(|e| e.metrics.iter())
            .flat_map(|m| m.per_env.iter())
            .filter_map(|s| s.vs_baseline.as_ref().map(|c| c.verdict))
            .collect();
        if verdicts.is_empty() {
            return 1.0;
        }
        verdicts
            .iter()
            .filter(|v| **v == stats::Verdict::NoSignificantDifference)
            .count() as f64
            / verdicts.len() as f64
    }
}

/// What the workload declares about a metric it produced.
fn metric_def(workload: &str, metric: &str) -> Option<&'static MetricDef> {
    crate::workload::find(workload)?.metric(metric)
}

/// Whether a metric is one of its workload's headline figures: what
/// `--repeat auto` waits for. A workload this build does not know (an old
/// store) has every metric counted.
pub fn is_headline(workload: &str, metric: &str) -> bool {
    match crate::workload::find(workload) {
        Some(def) => def.metric(metric).is_some_and(|m| m.headline),
        None => true,
    }
}
