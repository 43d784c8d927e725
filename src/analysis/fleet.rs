//! The fleet view: the same comparison run on several machines (one results
//! store each), seen across them. Per entry, headline metric and kind of
//! environment, each host's effect against its own baseline (overhead % for
//! rates, "times slower" for times), and across hosts their median, range,
//! quartiles and the hosts that stand out (`stats::spread::outliers`: further
//! from the median than max(3 × 1.4826 × MAD, the equivalence margin)).
//!
//! Stores from different suites or plans are refused, never mixed.

use serde::Serialize;

use super::Analysis;
use crate::stats::{self, spread, VerdictSettings};

/// One host's comparison, as read from its store.
#[derive(Debug, Clone, Serialize)]
pub struct HostAnalysis {
    /// How the user named the store (its directory).
    pub host: String,
    pub analysis: Analysis,
}

/// What a fleet value measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// (1 − env/base) × 100, for higher-is-better metrics.
    OverheadPct,
    /// env/base, for lower-is-better metrics.
    TimesSlower,
}

impl Measure {
    /// A value as reports print it: "12.3%", "1.52×".
    pub fn show(self, x: f64) -> String {
        if !x.is_finite() {
            return "–".into();
        }
        match self {
            Measure::OverheadPct => format!("{x:.1}%"),
            Measure::TimesSlower => format!("{x:.2}×"),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Measure::OverheadPct => "overhead %",
            Measure::TimesSlower => "times slower",
        }
    }
}

/// One host's figure in a fleet row.
#[derive(Debug, Clone, Serialize)]
pub struct FleetPoint {
    pub host: String,
    /// The environment's label in that host's comparison.
    pub env: String,
    pub value: f64,
    pub outlier: bool,
}

/// One entry × headline metric × environment kind across the hosts.
#[derive(Debug, Clone, Serialize)]
pub struct FleetRow {
    pub label: String,
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// The environment kind (`env.kind` of the fingerprint: host, docker,
    /// qemu, ssh, group).
    pub kind: String,
    pub measure: Measure,
    pub points: Vec<FleetPoint>,
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub q1: f64,
    pub q3: f64,
    /// Hosts whose value stands out (see the module doc).
    pub outliers: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Fleet {
    pub suite: String,
    pub baseline: String,
    pub settings: VerdictSettings,
    pub hosts: Vec<HostAnalysis>,
    pub rows: Vec<FleetRow>,
}

/// The outlier rule in words, for every format.
pub fn outlier_rule(settings: &VerdictSettings) -> String {
    let points = format!("{:.2}", settings.margin * 100.0);
    let points = points.trim_end_matches('0').trim_end_matches('.');
    format!(
        "Per host: each environment against that host's own baseline (overhead % for rates, times slower for times). \
         Across hosts: the median, the range and the quartiles; an outlier is a host further from the median than \
         max(3 × 1.4826 × MAD, the margin: {points} points of overhead, {}× for times slower), looked for with {} hosts or more.",
        settings.margin,
        spread::OUTLIER_MIN_N
    )
}

impl Fleet {
    /// The fleet view over `hosts`, or why they cannot be seen together:
    /// different suites, plans or baselines.
    pub fn build(hosts: Vec<HostAnalysis>) -> Result<Fleet, String> {
        let first = hosts.first().ok_or("no results store given")?;
        // What a store says is untrusted text: one line, escaped.
        let t = |s: &str| crate::core::text::one_line(s, 200);
        for h in &hosts[1..] {
            let (a, b) = (&first.analysis, &h.analysis);
            if a.suite != b.suite {
                return Err(format!(
                    "{} holds suite '{}' but {} holds suite '{}': a fleet view only compares one suite run everywhere; report them one at a time (virtperf report {})",
                    t(&first.host),
                    t(&a.suite),
                    t(&h.host),
                    t(&b.suite),
                    t(&h.host)
                ));
            }
            // The same suite name over other entries (two one-off
            // command lines, an edited suite file): entry N must be the
            // same run everywhere. A host may lack entries (it failed or
            // was interrupted); that is not a different suite.
            for x in &a.entries {
                if let Some(y) = b.entries.iter().find(|y| y.index == x.index) {
                    if x.label != y.label {
                        return Err(format!(
                            "{} and {} both ran suite '{}' but with different entries (entry {} is '{}' on one and '{}' on the other): a fleet view only compares the same runs; report them one at a time",
                            t(&first.host),
                            t(&h.host),
                            t(&a.suite),
                            x.index + 1,
                            t(&x.label),
                            t(&y.label)
                        ));
                    }
                }
            }
            if a.baseline != b.baseline {
                return Err(format!(
                    "{} compares against baseline '{}' but {} against '{}': a fleet view needs one baseline; report them one at a time",
                    t(&first.host),
                    t(&a.baseline),
                    t(&h.host),
                    t(&b.baseline)
                ));
            }
        }
        let settings = first.analysis.settings;
        let rows = rows(&hosts, &settings);
        Ok(Fleet {
            suite: first.analysis.suite.clone(),
            baseline: first.analysis.baseline.clone(),
            settings,
            hosts,
            rows,
        })
    }
}

/// (label, workload, metric, unit, higher is better, kind) → points.
type Key = (String, String, String, String, bool, String);

fn rows(hosts: &[HostAnalysis], settings: &VerdictSettings) -> Vec<FleetRow> {
    // First-seen order: entries, metrics and kinds as the hosts list them.
    let mut keys: Vec<Key> = Vec::new();
    let mut points: Vec<Vec<FleetPoint>> = Vec::new();
    for h in hosts {
        let a = &h.analysis;
        for r in a.headline_rows() {
            let Some(x) = &r.stat.vs_baseline else {
                continue;
            };
            let Some(value) = x.overhead_pct.or(x.times_slower) else {
                continue;
            };
            let kind = a
                .fingerprints
                .get(&r.stat.env)
                .map(|f| f.kind.clone())
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| r.stat.env.clone());
            let key = (
                r.entry.label.clone(),
                r.entry.workload.clone(),
                r.metric.name.clone(),
                r.metric.unit.clone(),
                r.metric.higher_is_better,
                kind,
            );
            let i = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    keys.push(key);
                    points.push(Vec::new());
                    keys.len() - 1
                }
            };
            points[i].push(FleetPoint {
                host: h.host.clone(),
                env: r.stat.env.clone(),
                value,
                outlier: false,
            });
        }
    }
    keys.into_iter()
        .zip(points)
        .map(|((label, workload, metric, unit, hib, kind), mut points)| {
            let measure = if hib {
                Measure::OverheadPct
            } else {
                Measure::TimesSlower
            };
            let floor = match measure {
                Measure::OverheadPct => settings.margin * 100.0,
                Measure::TimesSlower => settings.margin,
            };
            let xs: Vec<f64> = points.iter().map(|p| p.value).collect();
            let out = spread::outliers(&xs, floor);
            for &i in &out {
                points[i].outlier = true;
            }
            let mut outliers: Vec<String> = out.iter().map(|&i| points[i].host.clone()).collect();
            outliers.dedup();
            FleetRow {
                label,
                workload,
                metric,
                unit,
                higher_is_better: hib,
                kind,
                measure,
                n: xs.len(),
                median: stats::median(&xs),
                min: spread::quantile(&xs, 0.0),
                max: spread::quantile(&xs, 1.0),
                q1: spread::quantile(&xs, 0.25),
                q3: spread::quantile(&xs, 0.75),
                outliers,
                points,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::result::{EnvInfo, Metric, ResultDoc};
    use crate::store::{ComparisonRow, RunRow};

    /// A host's comparison: `host` at 100 events/s and 10 ms, `docker` at
    /// `speed` of that (and `1/speed` the time), five rounds with a little
    /// jitter.
    fn host(name: &str, suite: &str, label: &str, speed: f64) -> HostAnalysis {
        let mut runs = Vec::new();
        for (round, j) in [1.0, 1.01, 0.99, 1.005, 0.995].iter().enumerate() {
            for (env, kind, s) in [("host", "host", 1.0), ("docker", "docker", speed)] {
                runs.push(RunRow {
                    env: env.into(),
                    entry: 0,
                    label: label.into(),
                    round,
                    doc: Some(ResultDoc {
                        env: EnvInfo {
                            name: env.into(),
                            kind: kind.into(),
                            ..EnvInfo::default()
                        },
                        ..ResultDoc::new(
                            "unknown-to-this-build",
                            env,
                            vec![
                                Metric::new("rate", 100.0 * s * j, "events/s", true),
                                Metric::new("time", 10.0 / s * j, "ms", false),
                            ],
                        )
                    }),
                    error: None,
                });
            }
        }
        let cmp = ComparisonRow {
            id: 1,
            started_at: "2026-11-23T00:00:00Z".into(),
            suite: suite.into(),
            baseline: "host".into(),
            envs: vec!["host".into(), "docker".into()],
            args: vec![],
            finished: true,
            adaptive: false,
            baseline_from: None,
        };
        HostAnalysis {
            host: name.into(),
            analysis: super::super::analyze(&cmp, &runs, &VerdictSettings::default()),
        }
    }

    #[test]
    fn the_median_spread_and_outlier_across_hosts() {
        let f = Fleet::build(vec![
            host("h1", "s", "cpu", 0.97),
            host("h2", "s", "cpu", 0.96),
            host("h3", "s", "cpu", 0.70),
        ])
        .unwrap();
        assert_eq!(f.rows.len(), 2, "{:?}", f.rows);
        let rate = f.rows.iter().find(|r| r.metric == "rate").unwrap();
        assert_eq!(rate.kind, "docker");
        assert_eq!(rate.measure, Measure::OverheadPct);
        assert_eq!(rate.n, 3);
        // Overheads of about 3%, 4% and 30%: the median is h2's.
        let h2 = rate.points.iter().find(|p| p.host == "h2").unwrap().value;
        assert_eq!(rate.median, h2);
        assert!((rate.median - 4.0).abs() < 0.2, "{}", rate.median);
        assert!((rate.max - 30.0).abs() < 0.3 && (rate.min - 3.0).abs() < 0.2);
        assert!(rate.q1 <= rate.median && rate.median <= rate.q3);
        assert_eq!(rate.outliers, vec!["h3".to_string()]);
        assert!(rate.points.iter().any(|p| p.host == "h3" && p.outlier));
        // Times: in "times slower", the same host stands out.
        let time = f.rows.iter().find(|r| r.metric == "time").unwrap();
        assert_eq!(time.measure, Measure::TimesSlower);
        assert!((time.median - 1.0 / 0.96).abs() < 0.01, "{}", time.median);
        assert_eq!(time.outliers, vec!["h3".to_string()]);
        // Hosts that agree: no outlier.
        let calm = Fleet::build(vec![
            host("a", "s", "cpu", 0.97),
            host("b", "s", "cpu", 0.96),
            host("c", "s", "cpu", 0.95),
        ])
        .unwrap();
        assert!(calm.rows.iter().all(|r| r.outliers.is_empty()));
    }

    #[test]
    fn stores_of_different_suites_are_refused_not_mixed() {
        let err = Fleet::build(vec![
            host("h1", "quick", "cpu", 0.9),
            host("h2", "standard", "cpu", 0.9),
        ])
        .unwrap_err();
        assert!(
            err.contains("h1 holds suite 'quick' but h2 holds suite 'standard'"),
            "{err}"
        );
        assert!(err.contains("one at a time"), "{err}");
        // Issue 24, item 12: a crafted store's suite name reached the
        // terminal with its control characters.
        let err = Fleet::build(vec![
            host("h1", "quick", "cpu", 0.9),
            host("h2", "evil\u{1b}[2J\u{1b}]0;owned\u{7}\r", "cpu", 0.9),
        ])
        .unwrap_err();
        assert!(!err.chars().any(|c| c.is_control()), "{err:?}");
        assert!(err.contains("\\u{1b}[2J"), "{err}");
        let err = Fleet::build(vec![
            host("h1", "command-line", "cpu --time=1", 0.9),
            host("h2", "command-line", "threads --time=1", 0.9),
        ])
        .unwrap_err();
        assert!(err.contains("different entries"), "{err}");
        let mut other = host("h2", "s", "cpu", 0.9);
        other.analysis.baseline = "docker".into();
        let err = Fleet::build(vec![host("h1", "s", "cpu", 0.9), other]).unwrap_err();
        assert!(err.contains("baseline"), "{err}");
    }
}
