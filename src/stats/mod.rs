//! Pure statistics: summaries with confidence intervals, Holm's correction,
//! the Mann–Whitney U test, and in `verdict` the verdict itself
//! (`assess_family`: Welch's t on logs with the rank test beside it, four
//! verdicts with an equivalence margin, repetitions needed for the
//! inconclusive ones). Imports nothing else of the crate.

pub mod changepoint;
mod mannwhitney;
pub mod ranking;
pub mod sequential;
#[cfg(test)]
pub(crate) mod simulated;
pub mod splitmix;
pub mod spread;
mod tdist;
mod verdict;
mod welch;

pub use mannwhitney::mann_whitney_p;
pub use ranking::{ranking, solutions, Category, CategoryValue, Ranking, RatioEstimate, Solution};
pub use splitmix::SplitMix64;
pub use tdist::{
    regularized_incomplete_beta, student_t_cdf, student_t_quantile, student_t_upper_tail,
};
pub use verdict::within_margin;
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
    sorted_median(&s)
}

/// The Hodges–Lehmann estimate of the centre of a symmetric distribution:
/// the median of the n(n+1)/2 Walsh averages (x_i + x_j)/2, i ≤ j
/// (Hodges & Lehmann, "Estimates of location based on rank tests", Ann.
/// Math. Statist. 1963). It is the point estimate that goes with a
/// signed-rank or betting interval for the centre: at normal data it is as
/// efficient as the mean (95%), and a few outliers move it no further than
/// the median. NaN when empty.
pub fn hodges_lehmann(xs: &[f64]) -> f64 {
    let mut w: Vec<f64> = Vec::with_capacity(xs.len() * (xs.len() + 1) / 2);
    for (i, a) in xs.iter().enumerate() {
        w.extend(xs[i..].iter().map(|b| (a + b) / 2.0));
    }
    let n = w.len();
    if n == 0 {
        return f64::NAN;
    }
    let (_, &mut hi, _) = w.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        return hi;
    }
    // The largest of the lower half.
    let lo = w[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo + hi) / 2.0
}

/// The median of `s`, already sorted (NaN when empty).
pub fn sorted_median(s: &[f64]) -> f64 {
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

/// The mean and the sample standard deviation (0 with fewer than two
/// values), in two passes.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    let m = mean(xs);
    let sd = if n > 1 {
        (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    (m, sd)
}

pub fn summarize(xs: &[f64]) -> Summary {
    let n = xs.len();
    let (m, sd) = mean_sd(xs);
    let half = if n > 1 {
        tdist::student_t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt()
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

/// Benjamini–Yekutieli adjusted p-values (false-discovery rate under any
/// dependence), in the input order.
pub fn benjamini_yekutieli(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let c: f64 = (1..=m).map(|k| 1.0 / k as f64).sum();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 1.0;
    for (rank, &i) in idx.iter().enumerate().rev() {
        let v = (m as f64 * c / (rank + 1) as f64 * p[i]).min(1.0);
        running = running.min(v);
        adjusted[i] = running;
    }
    adjusted
}

/// Benjamini–Hochberg at level α: reject the k smallest p-values, k the
/// largest with p_(k) ≤ α k / R.
pub fn bh(p: &[f64], alpha: f64) -> Vec<bool> {
    let r = p.len() as f64;
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let k = (1..=p.len())
        .filter(|&k| p[order[k - 1]] <= alpha * k as f64 / r)
        .max()
        .unwrap_or(0);
    let mut keep = vec![false; p.len()];
    for &i in &order[..k] {
        keep[i] = true;
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hodges_lehmann_is_the_median_of_the_walsh_averages() {
        // Walsh averages of [0, 1, 5]: 0, 0.5, 2.5, 1, 3, 5 → median 1.75.
        assert_eq!(hodges_lehmann(&[0.0, 1.0, 5.0]), 1.75);
        assert_eq!(hodges_lehmann(&[2.0]), 2.0);
        assert!(hodges_lehmann(&[]).is_nan());
        // Symmetric data: the centre; one wild value barely moves it,
        // where it drags the mean.
        let d = [0.09, 0.10, 0.11, 0.10, 0.12, 0.08, 0.10];
        assert!((hodges_lehmann(&d) - 0.10).abs() < 1e-12);
        let mut wild = d.to_vec();
        wild.push(2.8);
        assert!(
            (hodges_lehmann(&wild) - 0.10).abs() < 0.011,
            "{}",
            hodges_lehmann(&wild)
        );
        assert!(mean(&wild) > 0.4);
        // Against a brute-force sort of every Walsh average.
        let mut rng = SplitMix64(5);
        for n in 1..40 {
            let x: Vec<f64> = (0..n).map(|_| rng.unit() - 0.3).collect();
            let mut w = Vec::new();
            for i in 0..n {
                for j in i..n {
                    w.push((x[i] + x[j]) / 2.0);
                }
            }
            w.sort_by(f64::total_cmp);
            assert_eq!(hodges_lehmann(&x), sorted_median(&w), "{x:?}");
        }
    }

    #[test]
    fn bh_rejects_the_smallest_while_they_clear_their_bar() {
        // R = 4, α = 0.05: bars 0.0125, 0.025, 0.0375, 0.05 for k = 1..4.
        assert_eq!(
            bh(&[0.01, 0.024, 0.5, 0.9], 0.05),
            [true, true, false, false]
        );
        // A later p under its bar takes the earlier ones with it.
        assert_eq!(
            bh(&[0.03, 0.03, 0.03, 0.9], 0.05),
            [true, true, true, false]
        );
        assert_eq!(bh(&[0.013, 1.0, 1.0, 1.0], 0.05), [false; 4]);
        assert_eq!(bh(&[], 0.05), Vec::<bool>::new());
    }

    #[test]
    fn benjamini_yekutieli_steps_up_with_its_harmonic_factor() {
        // m = 3, c = 11/6: p × 3c / rank, then the running minimum from the top.
        let q = benjamini_yekutieli(&[0.01, 0.04, 0.03]);
        let c = 11.0 / 6.0;
        assert!((q[0] - 0.03 * c).abs() < 1e-12, "{q:?}");
        assert!((q[2] - 0.04 * c).abs() < 1e-12, "{q:?}");
        assert!((q[1] - 0.04 * c).abs() < 1e-12, "{q:?}");
        assert_eq!(benjamini_yekutieli(&[]), Vec::<f64>::new());
    }

    #[test]
    fn summary_of_a_known_sample() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(s.mean, 3.0);
        assert_eq!(s.median, 3.0);
        assert!((s.stddev - 2.5f64.sqrt()).abs() < 1e-12);
        // t(0.975, 4) = 2.776445 (tables give 2.776).
        let half = 2.776_445 * 2.5f64.sqrt() / 5f64.sqrt();
        assert!((s.ci.upper - 3.0 - half).abs() < 1e-5);
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

    proptest! {
        #[test]
        fn ci_contains_the_mean(xs in prop::collection::vec(1.0f64..1e6, 2..40)) {
            let s = summarize(&xs);
            prop_assert!(s.ci.lower <= s.mean + 1e-9 && s.mean <= s.ci.upper + 1e-9);
            prop_assert!(s.min <= s.median && s.median <= s.max);
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
