//! Each run's per-second samples (`core::series`, in the accounting
//! section), gathered for the entries' sections: per run, the
//! environment's own view (inside) and the host's, each thinned to at most
//! [`MAX_POINTS`] points (each the mean of the seconds it stands for), and
//! at most [`MAX_RUNS`] runs per entry and environment, so a report of
//! long runs stays small.

use std::collections::BTreeMap;

use crate::core::series::{Sample, Series};
use crate::store::RunRow;

/// At most this many points a view.
pub const MAX_POINTS: usize = 240;

/// At most this many runs of an entry and environment are drawn.
pub const MAX_RUNS: usize = 6;

/// One view of a run: where the samples were taken, and them.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// "inside" (the environment's own /proc) or "host".
    pub name: &'static str,
    pub samples: Vec<Sample>,
    /// Sampling stopped at the cap: the run's later seconds are missing.
    pub capped: bool,
}

/// A run's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The suite entry's index, as the store numbers it.
    pub entry: usize,
    pub label: String,
    pub env: String,
    pub round: usize,
    pub views: Vec<View>,
}

/// The runs' timelines in store order; runs without samples have none.
/// Also how many runs with samples were left out per (entry label,
/// environment), beyond [`MAX_RUNS`].
pub fn of_runs(runs: &[RunRow]) -> (Vec<Timeline>, BTreeMap<(String, String), usize>) {
    let mut out = Vec::new();
    let mut count: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut left_out = BTreeMap::new();
    for r in runs {
        let Some(acct) = r.doc.as_ref().and_then(|d| d.accounting.as_ref()) else {
            continue;
        };
        let inside = acct.inside.as_ref().and_then(|i| i.samples.as_ref());
        let host = acct.outside.as_ref().and_then(|o| o.samples.as_ref());
        let views: Vec<View> = [("inside", inside), ("host", host)]
            .into_iter()
            .filter_map(|(name, s)| view(name, s?))
            .collect();
        if views.is_empty() {
            continue;
        }
        let key = (r.label.clone(), r.env.clone());
        let n = count.entry(key.clone()).or_default();
        *n += 1;
        if *n > MAX_RUNS {
            *left_out.entry(key).or_default() += 1;
            continue;
        }
        out.push(Timeline {
            entry: r.entry,
            label: r.label.clone(),
            env: r.env.clone(),
            round: r.round,
            views,
        });
    }
    (out, left_out)
}

/// A series as drawn: valid samples only, thinned; None without any.
fn view(name: &'static str, s: &Series) -> Option<View> {
    let wall = s.samples.iter().map(|x| x.t_s).fold(0.0, f64::max);
    if s.samples.is_empty() || s.check(wall).is_err() {
        return None;
    }
    Some(View {
        name,
        samples: thin(&s.samples, MAX_POINTS),
        capped: s.capped,
    })
}

/// At most `max` points, each the mean of consecutive samples (the last
/// one's time): a long run's shape without its every second.
pub fn thin(samples: &[Sample], max: usize) -> Vec<Sample> {
    if samples.len() <= max || max == 0 {
        return samples.to_vec();
    }
    let per = samples.len().div_ceil(max);
    samples.chunks(per).map(mean).collect()
}

fn mean(chunk: &[Sample]) -> Sample {
    let n = chunk.len() as f64;
    let avg = |f: fn(&Sample) -> f64| chunk.iter().map(f).sum::<f64>() / n;
    let rate = |f: fn(&Sample) -> Option<f64>| {
        let v: Option<Vec<f64>> = chunk.iter().map(f).collect();
        v.map(|v| v.iter().sum::<f64>() / n)
    };
    Sample {
        t_s: chunk.last().map_or(0.0, |s| s.t_s),
        user_pct: avg(|s| s.user_pct),
        system_pct: avg(|s| s.system_pct),
        iowait_pct: avg(|s| s.iowait_pct),
        steal_pct: avg(|s| s.steal_pct),
        softirq_pct: avg(|s| s.softirq_pct),
        read_bytes_per_s: rate(|s| s.read_bytes_per_s),
        write_bytes_per_s: rate(|s| s.write_bytes_per_s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::accounting::{Accounting, Inside, Outside};
    use crate::core::result::ResultDoc;

    fn samples(n: usize) -> Vec<Sample> {
        (0..n)
            .map(|i| Sample {
                t_s: i as f64 + 1.0,
                // Means 50 over every 15 seconds (3600 thinned to 240).
                user_pct: if i % 15 < 5 { 100.0 } else { 25.0 },
                write_bytes_per_s: Some(1000.0),
                ..Sample::default()
            })
            .collect()
    }

    #[test]
    fn a_long_run_is_thinned_to_means_and_a_short_one_kept() {
        let t = thin(&samples(3600), MAX_POINTS);
        assert_eq!(t.len(), 240);
        assert!(t
            .iter()
            .all(|s| s.user_pct == 50.0 && s.write_bytes_per_s == Some(1000.0)));
        assert_eq!(t.last().unwrap().t_s, 3600.0);
        assert_eq!(thin(&samples(5), MAX_POINTS), samples(5));
    }

    fn run(round: usize, inside: Option<Series>, host: Option<Series>) -> RunRow {
        let mut doc = ResultDoc::new("cpu", "docker", Vec::new());
        doc.accounting = Some(Accounting {
            version: 2,
            inside: Some(Inside {
                wall_s: 10.0,
                samples: inside,
                ..Inside::default()
            }),
            outside: Some(Outside {
                samples: host,
                ..Outside::default()
            }),
            rejected: None,
        });
        RunRow {
            env: "docker".into(),
            entry: 0,
            label: "cpu".into(),
            round,
            doc: Some(doc),
            error: None,
        }
    }

    #[test]
    fn each_runs_views_with_the_runs_beyond_the_cap_counted() {
        let s = Series {
            interval_s: 1.0,
            samples: samples(3),
            ..Series::default()
        };
        let mut runs = vec![run(0, Some(s.clone()), Some(s.clone())), run(1, None, None)];
        let mut bad = s.clone();
        bad.samples[0].user_pct = 900.0;
        runs.push(run(2, Some(bad), None));
        for round in 3..3 + MAX_RUNS {
            runs.push(run(round, None, Some(s.clone())));
        }
        let (t, left_out) = of_runs(&runs);
        assert_eq!(t.len(), MAX_RUNS);
        let names: Vec<&str> = t[0].views.iter().map(|v| v.name).collect();
        assert_eq!(names, ["inside", "host"]);
        // No samples, or samples that cannot be a run's: nothing drawn.
        assert!(t.iter().all(|x| x.round != 1 && x.round != 2));
        assert_eq!(left_out[&("cpu".to_string(), "docker".to_string())], 1);
    }
}
