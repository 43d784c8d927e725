//! Category averages and the overhead ranking score of "Performance Overhead
//! and Comparative Performance of 4 Virtualization Solutions" (seed 001):
//! computing power, disk I/O and network I/O as mean overhead percentages;
//! disk read latency and micro-operations as "times slower"; score =
//! (sum of the overhead percentages) × (sum of the times-slower figures).
//! Lower is better. Computed from whatever metrics are present.

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
    /// Overhead in percent, or times slower.
    pub value: Option<f64>,
    pub unit: &'static str,
    /// The metrics it was computed from.
    pub from: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranking {
    pub categories: Vec<CategoryValue>,
    pub score: Option<f64>,
    /// Categories with no metric in this comparison.
    pub missing: Vec<&'static str>,
}

/// `ratios`: (category, metric name, mean(env) / mean(base)) for every
/// metric of one environment that feeds a category.
pub fn ranking(ratios: &[(Category, String, f64)]) -> Ranking {
    let mut categories = Vec::new();
    let mut missing = Vec::new();
    let (mut overhead_sum, mut times_sum) = (0.0, 0.0);
    let (mut any_overhead, mut any_times) = (false, false);
    for &category in Category::ALL {
        let (name, is_overhead) = (category.name(), &category.is_overhead());
        let found: Vec<(String, f64)> = ratios
            .iter()
            .filter(|(c, _, r)| *c == category && r.is_finite())
            .map(|(_, m, r)| (m.clone(), *r))
            .collect();
        let value = (!found.is_empty()).then(|| {
            let mean_ratio = found.iter().map(|(_, r)| r).sum::<f64>() / found.len() as f64;
            if *is_overhead {
                (1.0 - mean_ratio) * 100.0
            } else {
                mean_ratio
            }
        });
        match value {
            Some(v) if *is_overhead => {
                overhead_sum += v;
                any_overhead = true;
            }
            Some(v) => {
                times_sum += v;
                any_times = true;
            }
            None => missing.push(name),
        }
        let mut from: Vec<String> = found.into_iter().map(|(m, _)| m).collect();
        from.dedup();
        categories.push(CategoryValue {
            name,
            value,
            unit: if *is_overhead {
                "% overhead"
            } else {
                "times slower"
            },
            from,
        });
    }
    Ranking {
        categories,
        score: (any_overhead && any_times).then_some(overhead_sum * times_sum),
        missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_001_arithmetic() {
        use Category::*;
        let r = ranking(&[
            (DiskIo, "put_block_kib_per_sec".into(), 0.8),
            (DiskIo, "rewrite_kib_per_sec".into(), 0.9),
            (DiskIo, "get_block_kib_per_sec".into(), 1.0),
            (DiskLatency, "get_block_latency_max_ms".into(), 2.0),
            (MicroOps, "getpid_ns".into(), 6.0),
            (MicroOps, "simplemath_ns".into(), 1.0),
        ]);
        let disk = &r.categories[1];
        assert!((disk.value.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(r.categories[3].value, Some(2.0));
        assert_eq!(r.categories[4].value, Some(3.5));
        assert!((r.score.unwrap() - 10.0 * 5.5).abs() < 1e-9);
        assert_eq!(r.missing, vec!["computing power (LINPACK)", "network I/O"]);
    }

    #[test]
    fn no_score_without_both_kinds() {
        let r = ranking(&[(Category::DiskIo, "put_block_kib_per_sec".into(), 0.5)]);
        assert_eq!(r.score, None);
        assert!(r.missing.contains(&"micro-operations"));
    }
}
