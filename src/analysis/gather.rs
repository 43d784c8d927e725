//! One pass over a comparison's stored runs: failures, fingerprints,
//! imported sources and flagged runs, and per entry each metric's samples
//! per environment with the directions its documents stated; then, per
//! entry, the summaries and verdicts. A metric's direction comes from its
//! workload's definition, never from a document ([`direction`]); a run's
//! document counts only within [`MAX_METRICS`] ([`unusable`]); every
//! metric is found by name in one step, so thousands of names cost linear
//! time.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::{
    assess, is_headline, metric_def, EntryAnalysis, EnvStat, Failure, Family, Flag, FlagKind,
    ImportedSource, MetricAnalysis, Sides, FOREIGN_LIMIT_PCT, MAX_METRICS, STEAL_LIMIT_PCT,
};
use crate::core::result::ResultDoc;
use crate::stats::{self, VerdictSettings};
use crate::store::RunRow;

fn flag_reasons(doc: &ResultDoc) -> Vec<(FlagKind, f64, String)> {
    let m = &doc.monitor;
    let mut out = Vec::new();
    if m.cpu_steal_pct > STEAL_LIMIT_PCT {
        out.push((
            FlagKind::Steal,
            m.cpu_steal_pct,
            format!("steal {:.1}%", m.cpu_steal_pct),
        ));
    }
    if m.foreign_busy_pct > FOREIGN_LIMIT_PCT {
        out.push((
            FlagKind::Load,
            m.foreign_busy_pct,
            format!(
                "other processes used {:.1}% of the CPUs",
                m.foreign_busy_pct
            ),
        ));
    }
    out.extend(
        multimodal(&doc.details)
            .into_iter()
            .map(|r| (FlagKind::Multimodal, 0.0, r)),
    );
    out
}

/// Parts of a run that measured two faces of the machine: a workload marks
/// such a part in its details as `{"multimodal": true, "modes": [{"ns": x,
/// "share": s}, ...]}` (microops does, per operation), so a ratio between
/// environments is read with that in mind.
pub(super) fn multimodal(details: &serde_json::Value) -> Vec<String> {
    let Some(parts) = details.as_object() else {
        return Vec::new();
    };
    parts
        .iter()
        .filter(|(_, v)| v.get("multimodal").and_then(|m| m.as_bool()) == Some(true))
        .map(|(name, v)| {
            let modes: Vec<String> = v
                .get("modes")
                .and_then(|m| m.as_array())
                .map(|modes| {
                    modes
                        .iter()
                        .filter_map(|m| {
                            let at = m.get("ns").or_else(|| m.get("cycles"))?.as_f64()?;
                            let share = m.get("share")?.as_f64()?;
                            let unit = if m.get("ns").is_some() {
                                "ns"
                            } else {
                                "cycles"
                            };
                            Some(format!("{at:.0} {unit} {:.0}%", share * 100.0))
                        })
                        .collect()
                })
                .unwrap_or_default();
            format!("{name} multimodal ({})", modes.join(" / "))
        })
        .collect()
}

/// Everything one pass over the runs gathers.
#[derive(Default)]
pub(super) struct Gathered {
    pub flags: Vec<Flag>,
    pub failures: Vec<Failure>,
    pub fingerprints: BTreeMap<String, crate::core::result::EnvInfo>,
    pub imported: BTreeMap<String, Vec<ImportedSource>>,
    pub fsync_ignored: BTreeSet<(String, String)>,
    pub entries: BTreeMap<usize, EntryRuns>,
}

/// An entry's runs: its label, workload and parameters (from its first
/// run) and its metrics in first-seen order, each found by name in one
/// step (a document with thousands of names costs linear time, not
/// quadratic).
pub(super) struct EntryRuns {
    label: String,
    workload: String,
    params: serde_json::Map<String, serde_json::Value>,
    metrics: Vec<MetricRuns>,
    by_name: HashMap<String, usize>,
}

/// One metric of an entry: its unit (the first run's), its samples per
/// environment, and the directions each environment's documents stated.
struct MetricRuns {
    name: String,
    unit: String,
    samples: HashMap<String, Vec<f64>>,
    stated: HashMap<String, Stated>,
}

/// Directions documents stated for a metric: (higher is better, lower is
/// better) seen.
pub type Stated = (bool, bool);

/// Why a run's document is not used, if it is not: more metrics than
/// [`MAX_METRICS`] (the agent refuses such a result; a store written
/// otherwise may still hold one). It is reported as a failed run.
pub fn unusable(doc: &ResultDoc) -> Option<String> {
    (doc.metrics.len() > MAX_METRICS).then(|| {
        format!(
            "its result has {} metrics, more than the {MAX_METRICS} one run may have: none of its figures was used",
            doc.metrics.len()
        )
    })
}

impl Gathered {
    /// One stored run: a failure, or its fingerprint, flags and figures.
    pub fn take(&mut self, r: &RunRow) {
        let doc = match (&r.doc, &r.error) {
            (Some(doc), _) => match unusable(doc) {
                None => doc,
                Some(why) => return self.failed(r, why),
            },
            (None, err) => return self.failed(r, err.clone().unwrap_or_default()),
        };
        self.describe(&r.env, doc);
        if doc
            .env
            .storage
            .as_ref()
            .is_some_and(|s| s.fsync_ignored.is_some())
        {
            self.fsync_ignored.insert((r.env.clone(), r.label.clone()));
        }
        for (kind, pct, reason) in flag_reasons(doc) {
            self.flags.push(Flag {
                env: r.env.clone(),
                label: r.label.clone(),
                round: r.round,
                kind,
                pct,
                reason,
            });
        }
        let e = self.entries.entry(r.entry).or_insert_with(|| EntryRuns {
            label: r.label.clone(),
            workload: doc.workload.clone(),
            params: doc.params.clone(),
            metrics: Vec::new(),
            by_name: HashMap::new(),
        });
        e.take(&r.env, doc);
    }

    fn failed(&mut self, r: &RunRow, error: String) {
        self.failures.push(Failure {
            env: r.env.clone(),
            label: r.label.clone(),
            round: r.round,
            error,
        });
    }

    /// The environment's fingerprint and, for imported runs, their source.
    fn describe(&mut self, env: &str, doc: &ResultDoc) {
        let fp = self
            .fingerprints
            .entry(env.to_string())
            .or_insert_with(|| doc.env.clone());
        // The first result may be of a workload without a network peer:
        // the path comes from the first that has one.
        if fp.net_path.is_none() {
            fp.net_path.clone_from(&doc.env.net_path);
        }
        // Likewise the storage, from the first workload with files.
        if fp.storage.is_none() {
            fp.storage.clone_from(&doc.env.storage);
        }
        if let Some(from) = &doc.env.imported {
            let sources = self.imported.entry(env.to_string()).or_default();
            let tool = from.describe();
            match sources.iter_mut().find(|s| s.tool == tool) {
                Some(s) => s.runs += 1,
                None => sources.push(ImportedSource {
                    tool,
                    runs: 1,
                    first_file: from.file.clone(),
                    file_date: from.file_date.clone(),
                }),
            }
        }
    }
}

impl EntryRuns {
    /// A run's figures (each name once: a repeated one counts as its first).
    fn take(&mut self, env: &str, doc: &ResultDoc) {
        let mut seen = HashSet::with_capacity(doc.metrics.len());
        // A run's own figures may not pass for what its accounting derives.
        let own = doc
            .metrics
            .iter()
            .filter(|m| !super::account::is_derived(&m.name));
        let derived = super::account::derived(doc);
        for m in own.chain(&derived).filter(|m| m.value.is_finite()) {
            if !seen.insert(m.name.as_str()) {
                continue;
            }
            let i = match self.by_name.get(&m.name) {
                Some(&i) => i,
                None => {
                    self.by_name.insert(m.name.clone(), self.metrics.len());
                    self.metrics.push(MetricRuns {
                        name: m.name.clone(),
                        unit: m.unit.clone(),
                        samples: HashMap::new(),
                        stated: HashMap::new(),
                    });
                    self.metrics.len() - 1
                }
            };
            let metric = &mut self.metrics[i];
            metric
                .samples
                .entry(env.to_string())
                .or_default()
                .push(m.value);
            let s = metric.stated.entry(env.to_string()).or_default();
            if m.higher_is_better {
                s.0 = true;
            } else {
                s.1 = true;
            }
        }
    }

    /// The entry's summaries and each environment's verdicts against the
    /// baseline (`imported[i]`: environment `i`'s runs came from another
    /// tool's output); None when the baseline is not among `envs`.
    pub fn analyze(
        self,
        index: usize,
        envs: &[String],
        imported: &[bool],
        baseline: &str,
        settings: &VerdictSettings,
    ) -> Option<EntryAnalysis> {
        let bi = envs.iter().position(|e| e == baseline)?;
        let workload = self.workload;
        let mut metrics: Vec<MetricAnalysis> = self
            .metrics
            .into_iter()
            .map(|m| m.analysis(&workload, envs, baseline))
            .collect();
        for ei in (0..envs.len()).filter(|&i| i != bi) {
            for family in [Family::Headline, Family::Detail, Family::Accounting] {
                let sides = Sides {
                    base: bi,
                    env: ei,
                    imported: [imported[bi], imported[ei]],
                };
                assess(&mut metrics, sides, family, settings);
            }
        }
        Some(EntryAnalysis {
            index,
            label: self.label,
            workload,
            params: self.params,
            metrics,
        })
    }
}

impl MetricRuns {
    /// Its summaries per environment, its direction (see [`direction`])
    /// and, where an environment cannot be compared on it, why.
    fn analysis(mut self, workload: &str, envs: &[String], baseline: &str) -> MetricAnalysis {
        let none = (false, false);
        let base = self.stated.get(baseline).copied().unwrap_or(none);
        let per_env = envs
            .iter()
            .map(|env| {
                let xs = self.samples.remove(env).unwrap_or_default();
                let stated = self.stated.get(env).copied().unwrap_or(none);
                let not_comparable = match direction(workload, &self.name, base, stated) {
                    Err(why) if env != baseline && !xs.is_empty() => Some(why),
                    _ => None,
                };
                EnvStat {
                    env: env.clone(),
                    summary: (!xs.is_empty()).then(|| stats::summarize(&xs)),
                    samples: xs,
                    vs_baseline: None,
                    not_comparable,
                }
            })
            .collect();
        // Shown beside the figures: the direction that judges them, or,
        // where none does (no baseline run, or its runs disagree), what
        // the runs said.
        let all = self
            .stated
            .values()
            .fold(none, |a, s| (a.0 || s.0, a.1 || s.1));
        let shown = if base == none { all } else { base };
        let higher_is_better = direction(workload, &self.name, shown, shown).unwrap_or(all.0);
        MetricAnalysis {
            headline: is_headline(workload, &self.name),
            name: self.name,
            unit: self.unit,
            higher_is_better,
            per_env,
        }
    }
}

/// Which way is better for `metric` of `workload` when an environment's
/// documents stated `env` (higher, lower) and the baseline's `base`.
///
/// A metric the workload defines (`MetricDef`, the registry) has the
/// definition's direction, whatever any document says: a guest cannot turn
/// its overhead into a speed-up by calling lower better. A metric no
/// definition names (a Lua script's own, an import's tool figures, a
/// workload this build does not know) takes the direction the baseline's
/// runs state: the baseline is the reference every comparison is made
/// against, and no other environment's documents can change it. An
/// environment whose runs state the other direction is not compared on
/// that metric (it says why), nor is any when the baseline's own runs
/// disagree.
pub fn direction(workload: &str, metric: &str, base: Stated, env: Stated) -> Result<bool, String> {
    if let Some(def) = metric_def(workload, metric) {
        return Ok(def.higher_is_better);
    }
    let word = |higher: bool| if higher { "higher" } else { "lower" };
    let higher = match base {
        (true, false) => true,
        (false, true) => false,
        (true, true) => {
            return Err(
                "the baseline's runs disagree on whether higher or lower is better for it, and no workload defines it"
                    .into(),
            )
        }
        // No baseline run: nothing to compare against.
        (false, false) => return Ok(env != (false, true)),
    };
    if (higher && env.1) || (!higher && env.0) {
        return Err(format!(
            "its runs say {} is better, the baseline's {} (a metric no workload defines takes its direction from the baseline's runs)",
            word(!higher),
            word(higher)
        ));
    }
    Ok(higher)
}
