//! Why, not only how much: for each entry and environment, where its host
//! CPU per unit of work went beside the baseline's (a [`Breakdown`]), and
//! for each headline verdict slower or faster than the margin, the
//! measured causes that explain it ([`Explanation`]), each from a named
//! rule that states the figure it rests on.
//!
//! A cause counts only when it exceeds the noise: every run of the
//! environment lies beyond every run of the baseline on that figure (with
//! at least two runs a side), and the difference of medians is more than
//! the margin (of the baseline's whole host CPU per event, for a place of
//! CPU; of the baseline's figure, for the others). Where none does, the
//! verdict is "not explained by what was measured".

use serde::Serialize;

use super::account::{self, PLACES};
use super::{Analysis, EntryAnalysis, MetricAnalysis};
use crate::stats::Outcome;

/// An entry's host CPU per event by place, in one environment and in the
/// baseline (medians of the runs, µs per event).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Breakdown {
    pub label: String,
    pub env: String,
    pub places: Vec<(String, f64)>,
    pub baseline: Vec<(String, f64)>,
}

/// A headline verdict and the causes found for it; none found is "not
/// explained by what was measured".
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Explanation {
    pub label: String,
    pub env: String,
    pub metric: String,
    /// Environment / baseline of the geometric means.
    pub ratio: f64,
    /// The same as a slowdown factor (a rate's inverted): above 1 slower.
    pub slowdown: f64,
    pub outcome: &'static str,
    pub findings: Vec<Finding>,
}

/// One cause: the rule that found it and the figures it rests on (the
/// environment's median, the baseline's; None where the baseline has no
/// such place, which is no CPU there).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    pub rule: &'static str,
    /// The derived figure's name (`analysis::account`).
    pub figure: String,
    pub unit: String,
    pub env: f64,
    pub baseline: Option<f64>,
    /// The share of the environment's extra host CPU per event this place
    /// took, for a place of CPU.
    pub share_of_extra: Option<f64>,
}

/// The rules, by name, in the order they are tried: (rule, figure, is a
/// place of host CPU). A place of CPU, or throttling, that the baseline
/// does not have is none there.
fn rules() -> Vec<(&'static str, String, bool)> {
    let mut out = vec![("throttled", account::THROTTLED.to_string(), false)];
    for (place, _) in PLACES {
        let rule = match *place {
            "work" => "own_cpu",
            "emulation" => "emulation_threads",
            "launcher" => "launcher",
            "helpers" => "runtime_helpers",
            "kernel" => "kernel_threads",
            "softirq" => "host_softirq",
            _ => "network_peer",
        };
        out.push((rule, account::place_metric(place), true));
    }
    out.push(("device_bytes", account::DEVICE_WRITTEN.to_string(), false));
    out.push((
        "io_amplification",
        account::AMPLIFICATION.to_string(),
        false,
    ));
    for (rule, name) in account::PRESSURE {
        out.push((rule, name.to_string(), false));
    }
    out.push(("steal", account::STEAL.to_string(), false));
    out
}

/// At most this many causes are given per verdict: the largest. Three: a
/// container's bridge network costs the host softirq per request beside
/// its own CPU and the peer's (tcp_rr on a 2-vCPU VM: peer +17, own +15,
/// softirq +5 µs per request), and two cut the cause the network adds.
const MOST_FINDINGS: usize = 3;

fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn samples<'a>(m: &'a MetricAnalysis, env: &str) -> &'a [f64] {
    m.per_env
        .iter()
        .find(|s| s.env == env)
        .map_or(&[], |s| s.samples.as_slice())
}

/// Every breakdown and every explanation of an analysis.
pub fn explain(a: &Analysis) -> (Vec<Breakdown>, Vec<Explanation>) {
    let mut breakdowns = Vec::new();
    for e in &a.entries {
        for env in a.envs.iter().filter(|e| **e != a.baseline) {
            if let Some(b) = breakdown(e, env, &a.baseline) {
                breakdowns.push(b);
            }
        }
    }
    let mut explanations = Vec::new();
    for row in a.headline_rows() {
        let Some(v) = &row.stat.vs_baseline else {
            continue;
        };
        if !matches!(v.outcome, Outcome::Slower | Outcome::Faster) {
            continue;
        }
        // Only what was accounted for is explained (or said not to be).
        let accounted = row
            .entry
            .metrics
            .iter()
            .any(|m| account::is_derived(&m.name) && !samples(m, &row.stat.env).is_empty());
        if !accounted {
            continue;
        }
        let slower = v.outcome == Outcome::Slower;
        let p = v.ratio.point;
        explanations.push(Explanation {
            label: row.entry.label.clone(),
            env: row.stat.env.clone(),
            metric: row.metric.name.clone(),
            ratio: p,
            slowdown: if row.metric.higher_is_better {
                1.0 / p
            } else {
                p
            },
            outcome: v.outcome.label(),
            findings: findings(
                row.entry,
                &row.stat.env,
                &a.baseline,
                slower,
                a.settings.margin,
            ),
        });
    }
    (breakdowns, explanations)
}

fn breakdown(e: &EntryAnalysis, env: &str, baseline: &str) -> Option<Breakdown> {
    let by = |who: &str| -> Vec<(String, f64)> {
        PLACES
            .iter()
            .filter_map(|(place, _)| {
                let name = account::place_metric(place);
                let m = e.metrics.iter().find(|m| m.name == name)?;
                Some((place.to_string(), median(samples(m, who))?))
            })
            .collect()
    };
    let places = by(env);
    (!places.is_empty()).then(|| Breakdown {
        label: e.label.clone(),
        env: env.to_string(),
        places,
        baseline: by(baseline),
    })
}

/// The causes of a slower (or faster) verdict of `env` in entry `e`.
fn findings(
    e: &EntryAnalysis,
    env: &str,
    baseline: &str,
    slower: bool,
    margin: f64,
) -> Vec<Finding> {
    let find = |name: &str| e.metrics.iter().find(|m| m.name == name);
    let base_total = find(account::HOST_CPU).and_then(|m| median(samples(m, baseline)));
    let env_total = find(account::HOST_CPU).and_then(|m| median(samples(m, env)));
    let extra = env_total.zip(base_total).map(|(x, b)| x - b);
    let mut out: Vec<(f64, Finding)> = Vec::new();
    for (rule, figure, is_place) in rules() {
        let Some(m) = find(&figure) else { continue };
        let (xs, bs) = (samples(m, env), samples(m, baseline));
        // A place the baseline does not have is no CPU there.
        let none = [0.0];
        let absent_is_none = is_place || rule == "throttled";
        let bs_or_none = if bs.is_empty() && absent_is_none {
            &none[..]
        } else {
            bs
        };
        if xs.len() < 2 || bs_or_none.is_empty() || (!bs.is_empty() && bs.len() < 2) {
            continue;
        }
        let (x, b) = (median(xs).unwrap_or(0.0), median(bs_or_none).unwrap_or(0.0));
        let fold = |f: fn(f64, f64) -> f64, v: &[f64], init: f64| v.iter().copied().fold(init, f);
        let separated = if slower {
            fold(f64::min, xs, f64::INFINITY) > fold(f64::max, bs_or_none, f64::NEG_INFINITY)
        } else {
            fold(f64::max, xs, f64::NEG_INFINITY) < fold(f64::min, bs_or_none, f64::INFINITY)
        };
        let scale = if is_place { base_total.unwrap_or(b) } else { b };
        let beyond = (x - b).abs() > margin * scale.abs() && (x - b).abs() > 0.0;
        // Pressure, throttling and steal are shares of the run: a few
        // points of it are not a cause.
        let share_figure = m.unit == "%";
        let enough = !share_figure || (x - b).abs() >= 100.0 * margin;
        if !(separated && beyond && enough) {
            continue;
        }
        let share_of_extra = match (is_place, extra) {
            (true, Some(extra)) if extra.abs() > 0.0 => Some((x - b) / extra),
            _ => None,
        };
        let weight = if is_place {
            (x - b).abs() / scale.abs().max(1e-12)
        } else {
            ((x - b) / b.abs().max(1e-12)).abs()
        };
        out.push((
            weight,
            Finding {
                rule,
                figure,
                unit: m.unit.clone(),
                env: x,
                baseline: (!bs.is_empty()).then_some(b),
                share_of_extra,
            },
        ));
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.into_iter()
        .take(MOST_FINDINGS)
        .map(|(_, f)| f)
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::analysis::{account, analyze};
    use crate::core::accounting::{Accounting, CgroupFigures, Helper, Outside};
    use crate::core::result::{Metric, ResultDoc};
    use crate::stats::VerdictSettings;
    use crate::store::{ComparisonRow, RunRow};

    /// A cpu run of `eps` events/s over one second whose host CPU went to
    /// `work` seconds of its own, `helpers` in a helper and a cgroup
    /// throttled for `throttled` seconds.
    fn run(env: &str, round: usize, eps: f64, work: f64, helpers: f64, throttled: f64) -> RunRow {
        let mut doc = ResultDoc::new(
            "cpu",
            env,
            vec![Metric::new("events_per_sec", eps, "events/s", true)],
        );
        doc.events = eps as u64;
        let container = env != "host";
        doc.accounting = Some(Accounting {
            version: 1,
            outside: Some(Outside {
                wall_s: 1.0,
                tree_s: Some(if container { 0.01 } else { work }),
                cgroup: container.then(|| CgroupFigures {
                    cpu_s: Some(work),
                    throttled_s: Some(throttled),
                    ..CgroupFigures::default()
                }),
                helpers: Some(if container {
                    vec![Helper {
                        name: "fuse-overlayfs".into(),
                        cpu_s: helpers,
                    }]
                } else {
                    vec![]
                }),
                kernel_threads_s: Some(0.01),
                ..Outside::default()
            }),
            ..Accounting::default()
        });
        RunRow {
            env: env.into(),
            entry: 0,
            label: "cpu".into(),
            round,
            doc: Some(doc),
            error: None,
        }
    }

    fn analysis(runs: &[RunRow], env: &str) -> crate::analysis::Analysis {
        let cmp = ComparisonRow {
            id: 1,
            started_at: String::new(),
            suite: "t".into(),
            baseline: "host".into(),
            envs: vec!["host".into(), env.into()],
            args: Vec::new(),
            finished: true,
            adaptive: false,
            baseline_from: None,
        };
        analyze(&cmp, runs, &VerdictSettings::default())
    }

    #[test]
    fn a_throttled_container_is_explained_by_its_throttling() {
        let mut runs = Vec::new();
        for r in 0..5 {
            let n = r as f64;
            runs.push(run("host", r, 1000.0 + n, 1.0, 0.0, 0.0));
            runs.push(run("slow", r, 500.0 + n, 0.5, 0.0, 0.5 - n / 100.0));
        }
        let a = analysis(&runs, "slow");
        let e = &a.explanations[0];
        assert_eq!((e.outcome, e.env.as_str()), ("slower", "slow"));
        assert_eq!(e.findings[0].rule, "throttled");
        assert!(e.findings[0].env > 40.0 && e.findings[0].baseline.is_none());
        // The derived figures are compared, outside the headline.
        let m = a.entries[0]
            .metrics
            .iter()
            .find(|m| m.name == account::HOST_CPU)
            .unwrap();
        assert!(!m.headline && m.per_env[1].vs_baseline.is_some());
        let b = &a.breakdowns[0];
        assert_eq!(b.env, "slow");
        assert!(b.places.iter().any(|(p, _)| p == "helpers"));
        assert!(b.baseline.iter().any(|(p, v)| p == "work" && *v > 900.0));
    }

    #[test]
    fn a_helper_that_costs_names_itself_and_the_same_cost_names_nothing() {
        let mut runs = Vec::new();
        for r in 0..5 {
            let n = r as f64;
            runs.push(run("host", r, 1000.0 + n, 1.0, 0.0, 0.0));
            runs.push(run("fuse", r, 700.0 + n, 1.0, 0.6 + n / 100.0, 0.0));
        }
        let a = analysis(&runs, "fuse");
        let rules: Vec<&str> = a.explanations[0].findings.iter().map(|f| f.rule).collect();
        assert!(rules.contains(&"runtime_helpers"), "{rules:?}");
        assert!(!rules.contains(&"throttled"), "{rules:?}");
        // The negative control: host against host, equally costly, is no
        // verdict to explain, and a slower row with no accounted cause
        // says none.
        let mut runs = Vec::new();
        for r in 0..5 {
            let n = r as f64;
            runs.push(run("host", r, 1000.0 + n, 1.0, 0.0, 0.0));
            let mut twin = run("host", r, 600.0 + n, 0.6 + n / 1000.0, 0.0, 0.0);
            twin.env = "twin".into();
            runs.push(twin);
        }
        let a = analysis(&runs, "twin");
        assert_eq!(a.explanations[0].outcome, "slower");
        assert!(
            a.explanations[0].findings.is_empty(),
            "{:?}",
            a.explanations
        );
    }
}
