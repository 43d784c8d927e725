//! A history: every comparison of one or more stores in time order, as
//! series per (environment label, entry, headline metric) of the slowdown
//! against the baseline (times slower, with its 95% interval and the raw
//! means), the fingerprint facts and settings that changed between
//! comparisons beside each series, and change points found by E-divisive
//! means (`stats::changepoint`) on the log slowdowns. A change point among
//! a series' newest comparisons is what `history --fail-on=changed` gates.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Analysis;
use crate::core::result::EnvInfo;
use crate::stats::changepoint::{self, Noise, Settings};
use crate::stats::student_t_quantile;

/// One stored comparison, analysed, as the history command read it.
pub struct Stored {
    /// Its name in the history: "#7", or "STORE#7" when several stores.
    pub name: String,
    pub analysis: Analysis,
    /// Each environment label's `--env` spec, as the comparison's stored
    /// request gave it (the setting behind the label).
    pub specs: BTreeMap<String, String>,
}

/// A comparison of the history.
#[derive(Debug, Clone, Serialize)]
pub struct ComparisonRef {
    pub name: String,
    pub started_at: String,
    pub suite: String,
    pub baseline: String,
}

/// One comparison's figure in a series.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Index into [`History::comparisons`].
    pub comparison: usize,
    /// Times slower than the baseline (ratio for a lower-is-better
    /// metric, its inverse for a higher-is-better one), and its 95%
    /// interval.
    pub slowdown: f64,
    pub lower: f64,
    pub upper: f64,
    pub verdict: String,
    /// The standard error of the log slowdown, from the comparison's own
    /// runs (its Welch interval): the noise the drift test takes as known.
    pub log_se: Option<f64>,
    /// Its degrees of freedom (Welch–Satterthwaite).
    pub log_se_df: Option<f64>,
    /// The raw means, baseline and environment, in the metric's unit.
    pub base_mean: Option<f64>,
    pub env_mean: Option<f64>,
    /// Where it ran: the environment's and the baseline's spec and
    /// fingerprint, fact by fact.
    pub facts: BTreeMap<String, String>,
}

/// A change point of a series.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The first point of the new level (index into the series' points).
    pub at: usize,
    /// The geometric mean slowdown of the segment before and after.
    pub before: f64,
    pub after: f64,
    pub p: f64,
    pub permutations: usize,
    /// Facts that changed between the point before and this one:
    /// "docker kernel: 6.1 → 6.5".
    pub changed: Vec<String>,
    /// Those of them that are a kernel's or an engine's (runtime's,
    /// hypervisor's, virtperf's) version: named first beside the change.
    pub versions: Vec<String>,
}

/// A stretch of a series that moved gradually: significant, but a line
/// fits it as well as a step.
#[derive(Debug, Clone, Serialize)]
pub struct Drift {
    pub from: usize,
    pub to: usize,
    pub p: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub env: String,
    pub entry: String,
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
    pub drifts: Vec<Drift>,
    /// Between consecutive points (index of the later one), the facts
    /// that changed, change point or not.
    pub fact_changes: Vec<(usize, Vec<String>)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub schema: &'static str,
    /// The method, named, with its settings.
    pub method: String,
    pub comparisons: Vec<ComparisonRef>,
    pub series: Vec<Series>,
    #[serde(skip)]
    pub settings: Settings,
}

/// The method's one-line description for reports.
pub fn method(s: &Settings) -> String {
    format!(
        "E-divisive means (Matteson & James 2014) on log slowdowns, permutation test at α = {} ({} permutations at most, seed {:#x}), at least {} comparisons a side; a step only where two levels fit better than a straight line (a drift) at p < {} ({} parametric bootstrap draws of the line with the comparisons' own noise)",
        s.alpha, s.permutations, s.seed, s.min_size, s.drift_alpha, s.drift_draws
    )
}

impl History {
    /// The history of `stored` (any order: sorted by start time here).
    pub fn build(mut stored: Vec<Stored>, settings: Settings) -> History {
        stored.sort_by(|a, b| a.analysis.started_at.cmp(&b.analysis.started_at));
        let comparisons = stored
            .iter()
            .map(|s| ComparisonRef {
                name: s.name.clone(),
                started_at: s.analysis.started_at.clone(),
                suite: s.analysis.suite.clone(),
                baseline: s.analysis.baseline.clone(),
            })
            .collect();
        let mut by_key: BTreeMap<(String, String, String), Series> = BTreeMap::new();
        let mut order = Vec::new();
        for (ci, s) in stored.iter().enumerate() {
            for (key, series, point) in points_of(ci, s) {
                if !by_key.contains_key(&key) {
                    order.push(key.clone());
                }
                by_key.entry(key).or_insert(series).points.push(point);
            }
        }
        let series = order
            .into_iter()
            .filter_map(|k| by_key.remove(&k))
            .map(|s| with_changes(s, &settings))
            .collect();
        History {
            schema: "virtperf.history/1",
            method: method(&settings),
            comparisons,
            series,
            settings,
        }
    }

    /// The series whose newest change point falls among its newest
    /// comparisons (within `min_size` of its end, the soonest a change
    /// can be seen) while its newest point is the history's newest
    /// comparison: what `--fail-on=changed` gates.
    pub fn newest_changes(&self) -> Vec<(&Series, &Change)> {
        let newest = self.comparisons.len().saturating_sub(1);
        self.series
            .iter()
            .filter(|s| s.points.last().is_some_and(|p| p.comparison == newest))
            .filter_map(|s| {
                let c = s.changes.last()?;
                (c.at + self.settings.min_size >= s.points.len()).then_some((s, c))
            })
            .collect()
    }

    /// "docker cpu events_per_sec: 1.00× → 1.14× slower from comparison
    /// #7 (2026-12-03), p = 0.005 (docker spec: … → …)".
    pub fn sentence(&self, s: &Series, c: &Change) -> String {
        let cmp = &self.comparisons[s.points[c.at].comparison];
        let mut out = format!(
            "{} {} {}: {:.2}× → {:.2}× {} from comparison {} ({}), p = {:.3}",
            s.env,
            s.entry,
            s.metric,
            c.before,
            c.after,
            if c.after >= c.before {
                "slower"
            } else {
                "faster"
            },
            cmp.name,
            cmp.started_at.get(..10).unwrap_or(&cmp.started_at),
            c.p
        );
        let others: Vec<&String> = c
            .changed
            .iter()
            .filter(|f| !c.versions.contains(f))
            .collect();
        if !c.versions.is_empty() {
            out.push_str(&format!(
                "; versions changed there: {}",
                c.versions.join(", ")
            ));
        }
        if !others.is_empty() {
            let others: Vec<&str> = others.into_iter().map(String::as_str).collect();
            let word = if c.versions.is_empty() {
                "changed"
            } else {
                "also changed"
            };
            out.push_str(&format!("; {word} there: {}", others.join(", ")));
        }
        out
    }
}

/// Every headline row of one comparison as (key, an empty series for it,
/// its point).
fn points_of(ci: usize, s: &Stored) -> Vec<((String, String, String), Series, Point)> {
    let a = &s.analysis;
    let base_index = a.envs.iter().position(|e| *e == a.baseline);
    a.headline_rows()
        .into_iter()
        .filter_map(|r| {
            let v = r.stat.vs_baseline.as_ref()?;
            let env = r.stat.env.clone();
            let hib = r.metric.higher_is_better;
            let flip = |x: f64| if hib { 1.0 / x } else { x };
            let (lo, hi) = (flip(v.ratio.lower), flip(v.ratio.upper));
            let base_mean = base_index
                .and_then(|bi| r.metric.per_env.get(bi))
                .and_then(|b| b.summary.as_ref())
                .map(|x| x.mean);
            let point = Point {
                comparison: ci,
                slowdown: flip(v.ratio.point),
                lower: lo.min(hi),
                upper: lo.max(hi),
                verdict: v.outcome.label().into(),
                log_se: log_se(v.ratio.lower, v.ratio.upper, v.df),
                log_se_df: Some(v.df).filter(|d| d.is_finite() && *d > 0.0),
                base_mean,
                env_mean: r.stat.summary.as_ref().map(|x| x.mean),
                facts: facts(s, &env),
            };
            let series = Series {
                env: env.clone(),
                entry: r.entry.label.clone(),
                metric: r.metric.name.clone(),
                unit: r.metric.unit.clone(),
                higher_is_better: hib,
                points: Vec::new(),
                changes: Vec::new(),
                drifts: Vec::new(),
                fact_changes: Vec::new(),
            };
            Some((
                (env, r.entry.label.clone(), r.metric.name.clone()),
                series,
                point,
            ))
        })
        .collect()
}

/// The environment's and the baseline's spec and fingerprint facts.
fn facts(s: &Stored, env: &str) -> BTreeMap<String, String> {
    let a = &s.analysis;
    let mut out = BTreeMap::new();
    for (who, label) in [
        (env.to_string(), env),
        ("baseline".to_string(), a.baseline.as_str()),
    ] {
        if let Some(spec) = s.specs.get(label) {
            out.insert(format!("{who} spec"), spec.clone());
        }
        if let Some(info) = a.fingerprints.get(label) {
            for (k, v) in info_facts(info) {
                out.insert(format!("{who} {k}"), v);
            }
        }
    }
    out
}

/// The facts of a fingerprint that tell one setup from another.
fn info_facts(i: &EnvInfo) -> Vec<(String, String)> {
    let mut out = vec![
        ("kernel".to_string(), i.kernel.clone()),
        ("hypervisor".into(), i.hypervisor.clone()),
        ("cpu".into(), i.cpu_model.clone()),
        ("cpus".into(), i.cpus.to_string()),
        ("virtperf".into(), i.virtperf_version.clone()),
        ("clocksource".into(), i.clocksource.clone()),
    ];
    if let Some(q) = i.cgroup.cpu_quota {
        out.push(("cpu quota".into(), format!("{q}")));
    }
    if let Some(m) = i.cgroup.memory_limit {
        out.push(("memory limit".into(), m.to_string()));
    }
    for (k, v) in &i.settings {
        out.push((k.clone(), v.clone()));
    }
    out.retain(|(_, v)| !v.is_empty());
    out
}

/// Whether a changed fact ("d kernel: … → …") is a kernel's or a
/// version: the kernel, virtperf's version, and every fingerprint setting
/// named `*_version` (docker_version, podman_version, runsc_version,
/// runtime_version, qemu_version, ...).
fn is_version(fact: &str) -> bool {
    let key = fact.split(": ").next().unwrap_or_default();
    let name = key.split_once(' ').map_or(key, |(_, n)| n);
    matches!(name, "kernel" | "virtperf" | "hypervisor") || name.ends_with("_version")
}

/// "docker kernel: 6.1 → 6.5" for each fact that differs.
fn diff(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let none = String::from("(none)");
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let (b, a) = (
                before.get(k).unwrap_or(&none),
                after.get(k).unwrap_or(&none),
            );
            (b != a).then(|| format!("{k}: {b} → {a}"))
        })
        .collect()
}

/// The standard error of a log ratio from its 95% Welch interval and
/// degrees of freedom; None without a usable interval.
pub fn log_se(lower: f64, upper: f64, df: f64) -> Option<f64> {
    let width = (upper / lower).ln();
    let t = student_t_quantile(0.975, df);
    (width.is_finite() && width > 0.0 && t.is_finite() && t > 0.0).then(|| width / (2.0 * t))
}

/// The noise of a series' log slowdowns: the root mean square of its
/// points' standard errors (each with its degrees of freedom), with the
/// sum of their degrees of freedom; when every point has one.
pub fn pooled_noise(ses: &[Option<(f64, f64)>]) -> Option<Noise> {
    let known: Option<Vec<(f64, f64)>> = ses.iter().copied().collect();
    let known = known.filter(|k| !k.is_empty())?;
    let var = known.iter().map(|(s, _)| s * s).sum::<f64>() / known.len() as f64;
    Some(Noise {
        sd: var.sqrt(),
        df: known.iter().map(|(_, df)| df).sum(),
    })
}

/// The change points and drifts of a series of slowdowns whose logs have
/// the standard deviation `noise` (when known): E-divisive means on their
/// logs (a doubling and a halving are the same distance).
pub fn find(slowdowns: &[f64], noise: Option<Noise>, settings: &Settings) -> changepoint::Found {
    let logs: Vec<f64> = slowdowns.iter().map(|x| x.ln()).collect();
    changepoint::e_divisive_noise(&logs, noise, settings)
}

/// The series with its change points, drifts and fact changes.
fn with_changes(mut s: Series, settings: &Settings) -> Series {
    let slowdowns: Vec<f64> = s.points.iter().map(|p| p.slowdown).collect();
    let logs: Vec<f64> = slowdowns.iter().map(|x| x.ln()).collect();
    let ses: Vec<Option<(f64, f64)>> = s.points.iter().map(|p| p.log_se.zip(p.log_se_df)).collect();
    let found = find(&slowdowns, pooled_noise(&ses), settings);
    let mut bounds: Vec<usize> = found.changes.iter().map(|c| c.index).collect();
    bounds.insert(0, 0);
    bounds.push(logs.len());
    let geomean = |a: usize, b: usize| (logs[a..b].iter().sum::<f64>() / (b - a) as f64).exp();
    s.changes = found
        .changes
        .iter()
        .enumerate()
        .map(|(k, c)| Change {
            at: c.index,
            before: geomean(bounds[k], bounds[k + 1]),
            after: geomean(bounds[k + 1], bounds[k + 2]),
            p: c.p,
            permutations: c.permutations,
            changed: diff(&s.points[c.index - 1].facts, &s.points[c.index].facts),
            versions: Vec::new(),
        })
        .map(|mut c| {
            c.versions = c
                .changed
                .iter()
                .filter(|f| is_version(f))
                .cloned()
                .collect();
            c
        })
        .collect();
    s.drifts = found
        .drifts
        .iter()
        .map(|d| Drift {
            from: d.start,
            to: d.end - 1,
            p: d.p,
        })
        .collect();
    s.fact_changes = (1..s.points.len())
        .map(|i| (i, diff(&s.points[i - 1].facts, &s.points[i].facts)))
        .filter(|(_, d)| !d.is_empty())
        .collect();
    s
}
