//! Pure statistics: summaries with confidence intervals, the ratio of two
//! samples with a bootstrap interval, the Mann–Whitney U test, Holm's
//! correction and the verdict. Imports nothing else of the crate.
//!
//! Two verdict APIs live here while the report moves over: the first
//! (`compare` + `decide`: bootstrap ratio of means, rank test, three
//! verdicts) and its successor in `verdict` (`assess_family`: Welch's t on
//! logs with the rank test beside it, four verdicts with an equivalence
//! margin, repetitions needed for the inconclusive ones).

mod mannwhitney;
pub mod ranking;
mod tdist;
mod verdict;
mod welch;

pub use mannwhitney::mann_whitney_p;
pub use ranking::{ranking, Category, CategoryValue, Ranking};
pub use tdist::{
    regularized_incomplete_beta, student_t_cdf, student_t_quantile, student_t_upper_tail,
};
pub use verdict::{
    assess, assess_family, runs_needed, Assessment, Goal, MetricSamples, Outcome, RankCheck,
    RunsNeeded, VerdictSettings, MAX_RUNS_PER_SIDE,
};
pub use welch::{welch_log_ratio, LogRatio, SampleError, Side};

use serde::Serialize;

/// A point estimate with a 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub point: f64,
    pub lower: f64,
    pub upper: f64,
}

/// One sample (the repetitions of one metric in one environment).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub stddev: f64,
    /// Coefficient of variation, stddev / mean.
    pub cv: f64,
    pub min: f64,
    pub max: f64,
    /// 95% confidence interval of the mean (Student t).
    pub ci: Estimate,
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

pub fn median(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom.
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        _ => {
            // Cornish–Fisher expansion around the normal quantile.
            let z: f64 = 1.959_964;
            let d = df as f64;
            z + (z.powi(3) + z) / (4.0 * d)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        }
    }
}

pub fn summarize(xs: &[f64]) -> Summary {
    let n = xs.len();
    let m = mean(xs);
    let var = if n > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    let sd = var.sqrt();
    let half = if n > 1 {
        t975(n - 1) * sd / (n as f64).sqrt()
    } else {
        f64::INFINITY
    };
    Summary {
        n,
        mean: m,
        median: median(xs),
        stddev: sd,
        cv: if m != 0.0 { sd / m.abs() } else { 0.0 },
        min: xs.iter().cloned().fold(f64::INFINITY, f64::min),
        max: xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        ci: Estimate {
            point: m,
            lower: m - half,
            upper: m + half,
        },
    }
}

/// Whether the 95% CI half-width is within `rel` of the mean (for
/// `--repeat auto`).
pub fn precise_enough(xs: &[f64], rel: f64) -> bool {
    let s = summarize(xs);
    s.n >= 3 && (s.stddev == 0.0 || (s.mean != 0.0 && (s.ci.upper - s.mean) <= rel * s.mean.abs()))
}

/// A small seeded generator so bootstrap results are reproducible.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        ((self.next() as u128 * n as u128) >> 64) as usize
    }
}

/// mean(env) / mean(base) with a 95% percentile bootstrap interval.
pub fn ratio_of_means(base: &[f64], env: &[f64], resamples: usize) -> Estimate {
    let point = mean(env) / mean(base);
    let mut rng = SplitMix(0x5eed);
    let mut ratios: Vec<f64> = (0..resamples)
        .map(|_| {
            let b: f64 = (0..base.len())
                .map(|_| base[rng.below(base.len())])
                .sum::<f64>()
                / base.len() as f64;
            let e: f64 = (0..env.len())
                .map(|_| env[rng.below(env.len())])
                .sum::<f64>()
                / env.len() as f64;
            e / b
        })
        .filter(|r| r.is_finite())
        .collect();
    ratios.sort_by(f64::total_cmp);
    if ratios.is_empty() {
        return Estimate {
            point,
            lower: f64::NAN,
            upper: f64::NAN,
        };
    }
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    Estimate {
        point,
        lower: at(0.025),
        upper: at(0.975),
    }
}

/// Holm–Bonferroni adjusted p-values, in the input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in idx.iter().enumerate() {
        let v = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(v);
        adjusted[i] = running;
    }
    adjusted
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    NoSignificantDifference,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no significant difference",
        }
    }
}

/// An environment's metric against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// env / base, with a bootstrap 95% interval.
    pub ratio: Estimate,
    /// 1 − env/base in percent, for higher-is-better metrics.
    pub overhead_pct: Option<f64>,
    /// env/base, for lower-is-better metrics ("times slower").
    pub times_slower: Option<f64>,
    pub p_value: f64,
    /// After Holm's correction across the family of metrics.
    pub p_adjusted: f64,
    pub verdict: Verdict,
}

/// Compares one metric; `p_adjusted` and `verdict` are final once `decide`
/// has seen the whole family.
pub fn compare(base: &[f64], env: &[f64], higher_is_better: bool) -> Comparison {
    let ratio = ratio_of_means(base, env, 2000);
    Comparison {
        ratio,
        overhead_pct: higher_is_better.then_some((1.0 - ratio.point) * 100.0),
        times_slower: (!higher_is_better).then_some(ratio.point),
        p_value: mann_whitney_p(base, env),
        p_adjusted: f64::NAN,
        verdict: Verdict::NoSignificantDifference,
    }
}

/// Applies Holm's correction over a family and sets each verdict at α.
pub fn decide(family: &mut [(&mut Comparison, bool)], alpha: f64) {
    let p: Vec<f64> = family.iter().map(|(c, _)| c.p_value).collect();
    let adjusted = holm(&p);
    for ((c, higher_is_better), padj) in family.iter_mut().zip(adjusted) {
        c.p_adjusted = padj;
        c.verdict = if padj < alpha {
            let better = if *higher_is_better {
                c.ratio.point > 1.0
            } else {
                c.ratio.point < 1.0
            };
            if better {
                Verdict::Faster
            } else {
                Verdict::Slower
            }
        } else {
            Verdict::NoSignificantDifference
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn summary_of_a_known_sample() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(s.mean, 3.0);
        assert_eq!(s.median, 3.0);
        assert!((s.stddev - 2.5f64.sqrt()).abs() < 1e-12);
        let half = 2.776 * 2.5f64.sqrt() / 5f64.sqrt();
        assert!((s.ci.upper - 3.0 - half).abs() < 1e-9);
        assert_eq!((s.min, s.max), (1.0, 5.0));
    }

    #[test]
    fn holm_matches_a_worked_example() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        // sorted: .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04->max(.06)
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
    }

    #[test]
    fn a_clear_slowdown_is_called_slower() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let env = [50.0, 51.0, 49.0, 50.5, 49.5];
        let mut c = compare(&base, &env, true);
        decide(&mut [(&mut c, true)], 0.05);
        assert_eq!(c.verdict, Verdict::Slower);
        assert!((c.overhead_pct.unwrap() - 50.0).abs() < 1e-9);
        assert!(c.ratio.lower <= 0.5 && c.ratio.upper >= 0.5);
        // Lower is better: a smaller time is faster.
        let mut t = compare(&base, &env, false);
        decide(&mut [(&mut t, false)], 0.05);
        assert_eq!(t.verdict, Verdict::Faster);
        assert_eq!(t.times_slower, Some(t.ratio.point));
    }

    #[test]
    fn aa_comparisons_rarely_find_a_difference() {
        // Same distribution on both sides: at α = 0.05 no more than about
        // 5% of comparisons may be called different.
        let mut rng = SplitMix(7);
        let mut noise = || (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let mut significant = 0;
        let trials = 400;
        for _ in 0..trials {
            let a: Vec<f64> = (0..5).map(|_| 100.0 + noise()).collect();
            let b: Vec<f64> = (0..5).map(|_| 100.0 + noise()).collect();
            let mut c = compare(&a, &b, true);
            decide(&mut [(&mut c, true)], 0.05);
            if c.verdict != Verdict::NoSignificantDifference {
                significant += 1;
            }
        }
        assert!(
            significant as f64 / trials as f64 <= 0.08,
            "{significant}/{trials}"
        );
    }

    #[test]
    fn precision_rule_for_auto_repeat() {
        assert!(precise_enough(&[100.0, 100.1, 99.9, 100.0], 0.02));
        assert!(!precise_enough(&[100.0, 130.0, 70.0], 0.02));
        assert!(!precise_enough(&[100.0, 100.0], 0.02));
    }

    proptest! {
        #[test]
        fn ci_contains_the_mean(xs in prop::collection::vec(1.0f64..1e6, 2..40)) {
            let s = summarize(&xs);
            prop_assert!(s.ci.lower <= s.mean + 1e-9 && s.mean <= s.ci.upper + 1e-9);
            prop_assert!(s.min <= s.median && s.median <= s.max);
        }

        #[test]
        fn ratio_interval_contains_the_point(
            a in prop::collection::vec(1.0f64..1e3, 3..12),
            b in prop::collection::vec(1.0f64..1e3, 3..12),
        ) {
            let r = ratio_of_means(&a, &b, 500);
            prop_assert!(r.lower <= r.point * (1.0 + 1e-9) && r.point <= r.upper * (1.0 + 1e-9));
        }

        #[test]
        fn holm_is_at_least_raw_and_monotone(p in prop::collection::vec(0.0f64..1.0, 1..20)) {
            let adj = holm(&p);
            for (raw, a) in p.iter().zip(&adj) {
                prop_assert!(a + 1e-12 >= *raw && *a <= 1.0);
            }
            let mut pairs: Vec<(f64, f64)> = p.iter().cloned().zip(adj.iter().cloned()).collect();
            pairs.sort_by(|x, y| x.0.total_cmp(&y.0));
            for w in pairs.windows(2) {
                prop_assert!(w[0].1 <= w[1].1 + 1e-12);
            }
        }

        #[test]
        fn identical_samples_are_not_different(xs in prop::collection::vec(1.0f64..1e3, 2..15)) {
            prop_assert!((mann_whitney_p(&xs, &xs) - 1.0).abs() < 1e-9);
        }
    }
}
