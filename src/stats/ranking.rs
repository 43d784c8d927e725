//! Category averages and the overhead ranking score of "Performance Overhead
//! and Comparative Performance of 4 Virtualization Solutions" (seed 001):
//! computing power, disk I/O and network I/O as mean overhead percentages;
//! disk read latency and micro-operations as "times slower"; score =
//! (sum of the overhead percentages) × (sum of the times-slower figures).
//! Lower is better. Computed from whatever metrics are present.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Category {
    pub name: &'static str,
    /// Overhead in percent, or times slower.
    pub value: Option<f64>,
    pub unit: &'static str,
    /// The metrics it was computed from.
    pub from: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranking {
    pub categories: Vec<Category>,
    pub score: Option<f64>,
    /// Categories with no metric in this comparison.
    pub missing: Vec<&'static str>,
}

const CATEGORIES: &[(&str, bool, &[&str])] = &[
    ("computing power (LINPACK)", true, &["gflops"]),
    (
        "disk I/O",
        true,
        &[
            "put_block_kib_per_sec",
            "rewrite_kib_per_sec",
            "get_block_kib_per_sec",
        ],
    ),
    (
        "network I/O",
        true,
        &[
            "tcp_stream_mbit_per_sec",
            "tcp_rr_trans_per_sec",
            "tcp_crr_trans_per_sec",
            "udp_rr_trans_per_sec",
            "udp_stream_mbit_per_sec",
        ],
    ),
    ("disk read latency", false, &["get_block_latency_max_ms"]),
    (
        "micro-operations",
        false,
        &[
            "getpid_ns",
            "sysconf_ns",
            "gettimeofday_ns",
            "malloc_1m_ns",
            "malloc_1g_ns",
            "pipe_echo_ns",
            "simplemath_ns",
        ],
    ),
];

/// `ratios`: metric name → mean(env) / mean(base), over all of one
/// environment's metrics (repeated names are averaged).
pub fn ranking(ratios: &[(String, f64)]) -> Ranking {
    let mut categories = Vec::new();
    let mut missing = Vec::new();
    let (mut overhead_sum, mut times_sum) = (0.0, 0.0);
    let (mut any_overhead, mut any_times) = (false, false);
    for (name, is_overhead, metrics) in CATEGORIES {
        let found: Vec<(String, f64)> = ratios
            .iter()
            .filter(|(m, r)| metrics.contains(&m.as_str()) && r.is_finite())
            .cloned()
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
            None => missing.push(*name),
        }
        let mut from: Vec<String> = found.into_iter().map(|(m, _)| m).collect();
        from.dedup();
        categories.push(Category {
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
        let r = ranking(&[
            ("put_block_kib_per_sec".into(), 0.8),
            ("rewrite_kib_per_sec".into(), 0.9),
            ("get_block_kib_per_sec".into(), 1.0),
            ("get_block_latency_max_ms".into(), 2.0),
            ("getpid_ns".into(), 6.0),
            ("simplemath_ns".into(), 1.0),
            ("events_per_sec".into(), 0.5),
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
        let r = ranking(&[("put_block_kib_per_sec".into(), 0.5)]);
        assert_eq!(r.score, None);
        assert!(r.missing.contains(&"micro-operations"));
    }
}
