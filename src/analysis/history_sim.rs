//! Synthetic histories, one source for every test that needs one: the
//! comparisons of host and d that [`synthetic`] builds (what the history
//! reads of a real comparison: 3 runs a side, the adaptive design's least,
//! each with a CV of 3%, log-normal), and [`measured`], one comparison's
//! slowdown as the history reads it. Its tests build one history end to
//! end (analysis, series, change point, the fact that changed beside it,
//! the gate), and run seeded simulations of the statistics, 2,000 trials
//! each, asserted on Clopper–Pearson 95% bounds: a 10% step found at its
//! comparison (±1), a flat series without a false change, a slow drift not
//! called a step.

use std::collections::BTreeMap;

use super::history::log_se;
use crate::core::result::{EnvInfo, Metric, ResultDoc};
use crate::stats::splitmix::SplitMix64;
use crate::stats::welch_log_ratio;
use crate::store::{ComparisonRow, RunRow};

/// Runs a side (rounds) of each synthetic comparison.
pub const RUNS: usize = 3;
/// Each run's coefficient of variation.
pub const CV: f64 = 0.03;

fn normal(rng: &mut SplitMix64) -> f64 {
    let (u, v) = (rng.unit().max(1e-300), rng.unit());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// One run's value around `mean` at CV 3%.
pub fn value(rng: &mut SplitMix64, mean: f64) -> f64 {
    let sigma = (1.0 + CV * CV).ln().sqrt();
    mean * (sigma * normal(rng) - sigma * sigma / 2.0).exp()
}

/// A comparison's measured slowdown when the true one is `truth`: the
/// baseline's geometric mean over the environment's (a rate), and its log
/// standard error as the history reads it off the Welch interval, with its
/// degrees of freedom.
pub fn measured(rng: &mut SplitMix64, truth: f64) -> (f64, Option<(f64, f64)>) {
    let base: Vec<f64> = (0..RUNS).map(|_| value(rng, 1000.0)).collect();
    let env: Vec<f64> = (0..RUNS).map(|_| value(rng, 1000.0 / truth)).collect();
    let w = welch_log_ratio(&base, &env).expect("positive samples");
    (
        1.0 / w.ratio.point,
        log_se(w.ratio.lower, w.ratio.upper, w.df).map(|se| (se, w.df)),
    )
}

/// What sets one synthetic comparison apart: d's true slowdown against
/// the host, its CPU quota (`docker:cpus=QUOTA,name=d`), the kernel both
/// report and d's engine version (a fingerprint setting, when given).
#[derive(Debug, Clone)]
pub struct Setup {
    pub slowdown: f64,
    pub quota: f64,
    pub kernel: String,
    pub engine_version: Option<String>,
}

impl Setup {
    /// d at `quota` of a CPU, as slow as that makes a CPU-bound run.
    pub fn quota(quota: f64) -> Setup {
        Setup {
            slowdown: 1.0 / quota,
            quota,
            kernel: "6.1.0".into(),
            engine_version: None,
        }
    }
}

/// A synthetic comparison as a store holds it.
pub struct Synthetic {
    pub cmp: ComparisonRow,
    pub runs: Vec<RunRow>,
    pub specs: BTreeMap<String, String>,
}

/// Comparison `id` (started 2026-12-ID) of host and d: cpu's
/// events_per_sec, [`RUNS`] rounds, as `setup` says.
pub fn synthetic(id: i64, setup: &Setup, rng: &mut SplitMix64) -> Synthetic {
    let mut runs = Vec::new();
    for round in 0..RUNS {
        for (env, mean) in [("host", 1000.0), ("d", 1000.0 / setup.slowdown)] {
            let mut doc = ResultDoc::new(
                "cpu",
                env,
                vec![Metric::new(
                    crate::workload::cpu::EVENTS_PER_SEC,
                    value(rng, mean),
                    "events/s",
                    true,
                )],
            );
            doc.env = EnvInfo {
                name: env.into(),
                kernel: setup.kernel.clone(),
                ..EnvInfo::default()
            };
            if env == "d" {
                doc.env.cgroup.cpu_quota = Some(setup.quota);
                if let Some(v) = &setup.engine_version {
                    doc.env.settings.insert("docker_version".into(), v.clone());
                }
            }
            runs.push(RunRow {
                env: env.into(),
                entry: 0,
                label: "cpu".into(),
                round,
                doc: Some(doc),
                error: None,
            });
        }
    }
    let spec = format!("docker:cpus={},name=d", setup.quota);
    let args = ["--baseline", "host", "--env", &spec, "--repeat", "3", "cpu"];
    let cmp = ComparisonRow {
        id,
        started_at: format!("2026-12-{id:02}T10:00:00Z"),
        suite: "t".into(),
        baseline: "host".into(),
        envs: vec!["host".into(), "d".into()],
        args: args.map(String::from).to_vec(),
        finished: true,
        adaptive: false,
        baseline_from: None,
    };
    Synthetic {
        cmp,
        runs,
        specs: BTreeMap::from([("d".to_string(), spec), ("host".into(), "host".into())]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::history::{find, pooled_noise, History, Stored};
    use crate::stats::changepoint::{Found, Settings};
    use crate::stats::simulated::Rate;
    use crate::stats::VerdictSettings;

    const LENGTH: usize = 20;
    const TRIALS: usize = 2000;

    /// Comparison `id` analysed, as the history command reads it.
    fn comparison(id: i64, quota: f64, rng: &mut SplitMix64) -> Stored {
        let s = synthetic(id, &Setup::quota(quota), rng);
        Stored {
            name: format!("#{id}"),
            analysis: crate::analysis::analyze(&s.cmp, &s.runs, &VerdictSettings::default()),
            specs: s.specs,
        }
    }

    /// How often, in `TRIALS` seeded histories of true slowdowns `truth(trial
    /// rng)`, `hit` holds for what `find` reports.
    fn simulate(
        seed: u64,
        truth: impl Fn(&mut SplitMix64) -> (Vec<f64>, usize),
        hit: impl Fn(&Found, usize) -> bool,
    ) -> Rate {
        let mut rng = SplitMix64(seed);
        let mut hits = 0;
        for t in 0..TRIALS {
            let (series, at) = truth(&mut rng);
            let (observed, ses): (Vec<f64>, Vec<Option<(f64, f64)>>) =
                series.iter().map(|x| measured(&mut rng, *x)).unzip();
            let settings = Settings {
                seed: seed ^ t as u64,
                ..Settings::default()
            };
            if hit(&find(&observed, pooled_noise(&ses), &settings), at) {
                hits += 1;
            }
        }
        Rate::new(hits, TRIALS)
    }

    #[test]
    fn a_ten_percent_step_is_found_at_its_comparison() {
        // The step's first comparison drawn from #6 to #16 of 20.
        let found = simulate(
            1,
            |rng| {
                let at = 5 + (rng.unit() * 11.0) as usize;
                (
                    (0..LENGTH)
                        .map(|i| if i < at { 1.0 } else { 1.1 })
                        .collect(),
                    at,
                )
            },
            |f, at| f.changes.iter().any(|c| c.index.abs_diff(at) <= 1),
        );
        eprintln!("10% step at CV 3%, 20 comparisons: found at ±1 in {found}");
        found.assert_at_least(0.95, "a 10% step found at its comparison");
    }

    #[test]
    fn a_flat_series_has_no_false_change() {
        let false_alarm = simulate(
            2,
            |_| (vec![1.0; LENGTH], 0),
            |f, _| !f.changes.is_empty() || !f.drifts.is_empty(),
        );
        eprintln!("flat series of 20: a change or drift reported in {false_alarm}");
        false_alarm.assert_at_most(0.05, "a flat series called changed");
    }

    #[test]
    fn a_slow_drift_is_not_called_a_step() {
        // From 1.00× to 1.10× slower over the 20 comparisons, 0.5% a step.
        let stepped = simulate(
            3,
            |_| {
                let s = (0..LENGTH).map(|i| 1.0 + 0.1 * i as f64 / (LENGTH - 1) as f64);
                (s.collect(), 0)
            },
            |f, _| !f.changes.is_empty(),
        );
        eprintln!("slow drift 1.00× to 1.10× over 20: reported as a step in {stepped}");
        stepped.assert_at_most(0.05, "a slow drift called a step");
    }

    #[test]
    fn a_history_names_the_step_its_comparison_and_what_changed_there() {
        // Ten comparisons, d given 0.7 of a CPU instead of 1 from the sixth on.
        let mut rng = SplitMix64(9);
        let stored: Vec<Stored> = (1..=10)
            .rev()
            .map(|id| {
                let quota = if id >= 6 { 0.7 } else { 1.0 };
                comparison(id, quota, &mut rng)
            })
            .collect();
        let h = History::build(stored, Settings::default());
        assert_eq!(h.comparisons[0].name, "#1", "sorted by time");
        assert_eq!(h.series.len(), 1);
        let s = &h.series[0];
        assert_eq!((s.env.as_str(), s.points.len()), ("d", 10));
        assert_eq!(s.changes.len(), 1, "{:?}", s.changes);
        let c = &s.changes[0];
        assert_eq!(h.comparisons[s.points[c.at].comparison].name, "#6");
        let text = h.sentence(s, c);
        assert!(
            text.starts_with("d cpu events_per_sec: ") && text.contains("× → 1.4"),
            "{text}"
        );
        assert!(
            text.contains("slower from comparison #6 (2026-12-06), p = 0.0"),
            "{text}"
        );
        assert!(
            text.contains("d spec: docker:cpus=1,name=d → docker:cpus=0.7,name=d"),
            "{text}"
        );
        assert!(text.contains("d cpu quota: 1 → 0.7"), "{text}");
        // The change is not among the newest three: no gate.
        assert!(h.newest_changes().is_empty());
        // Cut at #8, it is: the gate trips.
        let recent: Vec<Stored> = (1..=8)
            .map(|id| {
                let quota = if id >= 6 { 0.7 } else { 1.0 };
                comparison(id, quota, &mut rng)
            })
            .collect();
        let h = History::build(recent, Settings::default());
        assert_eq!(h.newest_changes().len(), 1, "{:?}", h.series[0].changes);
    }
}
