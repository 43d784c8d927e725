//! Category averages and the overhead ranking score of "Performance Overhead
//! and Comparative Performance of 4 Virtualization Solutions" (seed 001):
//! computing power, disk I/O and network I/O as mean overhead percentages;
//! disk read latency and micro-operations as "times slower"; score =
//! (sum of the overhead percentages) × (sum of the times-slower figures).
//! Lower is better. Computed from whatever metrics are present.
//!
//! Each figure also carries an interval: a category's ends are the averages
//! of its metrics' interval ends (so it covers the category's value
//! whenever every metric's interval covers its own, and it is no narrower
//! than the average metric's, however they correlate), and the score's
//! ends are the products of the sums' ends. Seed 001 ran 1, 2 and 4 VMs at
//! once and took, per figure, the best of those configurations:
//! [`solutions`] does that per kind of environment and ranks the kinds.

use serde::Serialize;

/// The categories of seed 001's ranking. Workloads say which of their
/// metrics feed which; this module only does the arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Category {
    /// "Computing power": LINPACK.
    Computing,
    /// "Disk I/O": bonnie++'s block write, rewrite and read.
    DiskIo,
    /// "Network I/O": netperf's five tests.
    NetworkIo,
    /// "Disk read latency", in times slower.
    DiskLatency,
    /// "Micro-operations", in times slower.
    MicroOps,
}

impl Category {
    pub const ALL: &'static [Category] = &[
        Category::Computing,
        Category::DiskIo,
        Category::NetworkIo,
        Category::DiskLatency,
        Category::MicroOps,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::Computing => "computing power (LINPACK)",
            Category::DiskIo => "disk I/O",
            Category::NetworkIo => "network I/O",
            Category::DiskLatency => "disk read latency",
            Category::MicroOps => "micro-operations",
        }
    }

    /// The name in a table's heading, with its unit.
    pub fn short(self) -> &'static str {
        match self {
            Category::Computing => "LINPACK %",
            Category::DiskIo => "disk I/O %",
            Category::NetworkIo => "network I/O %",
            Category::DiskLatency => "disk latency ×",
            Category::MicroOps => "micro-ops ×",
        }
    }

    /// Overhead in percent (throughputs), else times slower (latencies).
    pub fn is_overhead(self) -> bool {
        matches!(
            self,
            Category::Computing | Category::DiskIo | Category::NetworkIo
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryValue {
    pub name: &'static str,
    /// The name in a table's heading, with its unit.
    pub short: &'static str,
    /// Overhead in percent, or times slower.
    pub value: Option<f64>,
    /// Its interval, in the same unit.
    pub interval: Option<(f64, f64)>,
    pub unit: &'static str,
    /// The metrics it was computed from.
    pub from: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranking {
    pub categories: Vec<CategoryValue>,
    pub score: Option<f64>,
    pub score_interval: Option<(f64, f64)>,
    /// Categories with no metric in this comparison.
    pub missing: Vec<&'static str>,
}

/// One metric's ratio env / baseline with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioEstimate {
    pub point: f64,
    pub lower: f64,
    pub upper: f64,
}

/// `ratios`: (category, metric name, mean(env) / mean(base) with its
/// interval) for every metric of one environment that feeds a category.
pub fn ranking(ratios: &[(Category, String, RatioEstimate)]) -> Ranking {
    let mut categories = Vec::new();
    let mut missing = Vec::new();
    for &category in Category::ALL {
        let is_overhead = category.is_overhead();
        let found: Vec<(&str, RatioEstimate)> = ratios
            .iter()
            .filter(|(c, _, r)| *c == category && r.point.is_finite())
            .map(|(_, m, r)| (m.as_str(), *r))
            .collect();
        let mean = |f: fn(&RatioEstimate) -> f64| {
            found.iter().map(|(_, r)| f(r)).sum::<f64>() / found.len() as f64
        };
        let (value, interval) = if found.is_empty() {
            missing.push(category.name());
            (None, None)
        } else {
            let (point, lower, upper) = (mean(|r| r.point), mean(|r| r.lower), mean(|r| r.upper));
            let finite = lower.is_finite() && upper.is_finite();
            if is_overhead {
                let pct = |r: f64| (1.0 - r) * 100.0;
                (Some(pct(point)), finite.then(|| (pct(upper), pct(lower))))
            } else {
                (Some(point), finite.then_some((lower, upper)))
            }
        };
        let mut from: Vec<String> = found.into_iter().map(|(m, _)| m.to_string()).collect();
        from.dedup();
        categories.push(CategoryValue {
            name: category.name(),
            short: category.short(),
            value,
            interval,
            unit: if is_overhead {
                "% overhead"
            } else {
                "times slower"
            },
            from,
        });
    }
    let (score, score_interval) = score(&categories);
    Ranking {
        categories,
        score,
        score_interval,
        missing,
    }
}

/// (Σ overhead %) × (Σ times slower), and its interval from the sums'
/// ends; none unless both kinds of category are present.
fn score(categories: &[CategoryValue]) -> (Option<f64>, Option<(f64, f64)>) {
    let sum = |overhead: bool| {
        let of: Vec<&CategoryValue> = categories
            .iter()
            .filter(|c| c.value.is_some() && (c.unit == "% overhead") == overhead)
            .collect();
        if of.is_empty() {
            return None;
        }
        let point: f64 = of.iter().filter_map(|c| c.value).sum();
        let ends = of
            .iter()
            .map(|c| c.interval)
            .collect::<Option<Vec<_>>>()
            .map(|v| v.iter().fold((0.0, 0.0), |(l, u), (a, b)| (l + a, u + b)));
        Some((point, ends))
    };
    let (Some((o, o_ends)), Some((t, t_ends))) = (sum(true), sum(false)) else {
        return (None, None);
    };
    let interval = o_ends.zip(t_ends).map(|((ol, ou), (tl, tu))| {
        let products = [ol * tl, ol * tu, ou * tl, ou * tu];
        (
            products.iter().copied().fold(f64::INFINITY, f64::min),
            products.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    });
    (Some(o * t), interval)
}

/// One kind of environment (a virtualization solution) in seed 001's
/// ranking: per category the best of its configurations (1, 2, 4
/// instances...), and the score of those.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Solution {
    pub kind: String,
    /// Per category (in [`Category::ALL`]'s order): the environment whose
    /// figure was best, and the figure.
    pub best: Vec<Option<(String, CategoryValue)>>,
    pub score: Option<f64>,
    pub score_interval: Option<(f64, f64)>,
    /// 1 for the lowest score; none without a score.
    pub rank: Option<usize>,
}

/// Seed 001's ranking of solutions: `envs` are (kind, environment label,
/// its ranking); per kind and category the lowest figure of its
/// environments (the seed's "higher score measured inside virtual
/// machines"), the score of those, ranks by score (lower is better).
pub fn solutions(envs: &[(String, String, Ranking)]) -> Vec<Solution> {
    let mut kinds: Vec<&str> = Vec::new();
    for (k, _, _) in envs {
        if !kinds.contains(&k.as_str()) {
            kinds.push(k);
        }
    }
    let mut out: Vec<Solution> = kinds
        .into_iter()
        .map(|kind| {
            let best: Vec<Option<(String, CategoryValue)>> = (0..Category::ALL.len())
                .map(|ci| {
                    envs.iter()
                        .filter(|(k, _, _)| k == kind)
                        .filter_map(|(_, env, r)| {
                            let c = r.categories.get(ci)?;
                            c.value.map(|v| (v, env.clone(), c.clone()))
                        })
                        .min_by(|a, b| a.0.total_cmp(&b.0))
                        .map(|(_, env, c)| (env, c))
                })
                .collect();
            let cats: Vec<CategoryValue> = best.iter().flatten().map(|(_, c)| c.clone()).collect();
            let (score, score_interval) = score(&cats);
            Solution {
                kind: kind.to_string(),
                best,
                score,
                score_interval,
                rank: None,
            }
        })
        .collect();
    let mut scored: Vec<(usize, f64)> = out
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.score.map(|v| (i, v)))
        .collect();
    scored.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (rank, (i, _)) in scored.into_iter().enumerate() {
        out[i].rank = Some(rank + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(point: f64, lower: f64, upper: f64) -> RatioEstimate {
        RatioEstimate {
            point,
            lower,
            upper,
        }
    }

    #[test]
    fn seed_001_arithmetic() {
        use Category::*;
        let ranked = ranking(&[
            (DiskIo, "put_block_kib_per_sec".into(), r(0.8, 0.7, 0.9)),
            (DiskIo, "rewrite_kib_per_sec".into(), r(0.9, 0.8, 1.0)),
            (DiskIo, "get_block_kib_per_sec".into(), r(1.0, 0.9, 1.1)),
            (
                DiskLatency,
                "get_block_latency_max_ms".into(),
                r(2.0, 1.5, 2.5),
            ),
            (MicroOps, "getpid_ns".into(), r(6.0, 5.0, 7.0)),
            (MicroOps, "simplemath_ns".into(), r(1.0, 0.9, 1.1)),
        ]);
        let disk = &ranked.categories[1];
        assert!((disk.value.unwrap() - 10.0).abs() < 1e-9);
        // Overhead from the average ratio's ends: 1 − 1.0 and 1 − 0.8.
        let (lo, hi) = disk.interval.unwrap();
        assert!(
            (lo - 0.0).abs() < 1e-9 && (hi - 20.0).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(ranked.categories[3].value, Some(2.0));
        assert_eq!(ranked.categories[4].value, Some(3.5));
        assert_eq!(ranked.categories[4].interval, Some((2.95, 4.05)));
        assert!((ranked.score.unwrap() - 10.0 * 5.5).abs() < 1e-9);
        let (slo, shi) = ranked.score_interval.unwrap();
        assert!(slo.abs() < 1e-9 && (shi - 20.0 * (2.5 + 4.05)).abs() < 1e-9);
        assert_eq!(
            ranked.missing,
            vec!["computing power (LINPACK)", "network I/O"]
        );
    }

    #[test]
    fn no_score_without_both_kinds() {
        let ranked = ranking(&[(
            Category::DiskIo,
            "put_block_kib_per_sec".into(),
            r(0.5, 0.4, 0.6),
        )]);
        assert_eq!(ranked.score, None);
        assert!(ranked.missing.contains(&"micro-operations"));
    }

    #[test]
    fn solutions_take_each_categorys_best_configuration_and_rank_by_score() {
        use Category::*;
        let env = |disk: f64, micro: f64| {
            ranking(&[
                (DiskIo, "put_block_kib_per_sec".into(), r(disk, disk, disk)),
                (MicroOps, "getpid_ns".into(), r(micro, micro, micro)),
            ])
        };
        let envs = vec![
            ("qemu".to_string(), "qemu-x1".to_string(), env(0.5, 3.0)),
            ("qemu".to_string(), "qemu-x2".to_string(), env(0.8, 4.0)),
            ("docker".to_string(), "docker-x1".to_string(), env(0.9, 1.5)),
        ];
        let s = solutions(&envs);
        assert_eq!(s.len(), 2);
        let qemu = &s[0];
        // Disk: x2's 20% beats x1's 50%; micro-ops: x1's 3.0 beats 4.0.
        let disk = qemu.best[1].as_ref().unwrap();
        assert_eq!(disk.0, "qemu-x2");
        assert_eq!(qemu.best[4].as_ref().unwrap().0, "qemu-x1");
        assert!((qemu.score.unwrap() - 20.0 * 3.0).abs() < 1e-6);
        assert!((s[1].score.unwrap() - 10.0 * 1.5).abs() < 1e-6);
        assert_eq!((s[0].rank, s[1].rank), (Some(2), Some(1)));
    }
}
