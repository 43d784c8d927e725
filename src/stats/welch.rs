//! Welch's t-test on log values: the ratio of geometric means of two samples
//! of positive measurements (environment over baseline) with its confidence
//! interval, and the p-values of a difference test and of an equivalence test
//! (two one-sided tests) on that ratio.
//!
//! Why logs: overheads multiply (a 2× slowdown and a 0.5× speed-up are the
//! same size), run-to-run noise of timings is close to lognormal, and on the
//! log scale the interval of env/base is the exact reciprocal of that of
//! base/env, so the verdict does not depend on which side is the baseline nor
//! on whether the metric is a time or a rate.
//!
//! Why Welch: the two environments need not be equally noisy (a VM usually
//! is noisier than the host); the Welch–Satterthwaite degrees of freedom
//! account for that, and with equal variances cost almost nothing.
//!
//! Input contract: every value finite and > 0 (a log of zero or of a
//! negative number has no meaning here), at least 2 values per side (one
//! value has no variance). Anything else is refused with a [`SampleError`]
//! saying which side and why, never silently dropped: the caller shows the
//! metric as "not comparable" with that reason.

use serde::Serialize;

use super::tdist::{student_t_quantile, student_t_upper_tail};
use super::Estimate;

/// Which of the two samples an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Baseline,
    Environment,
}

impl Side {
    pub fn label(self) -> &'static str {
        match self {
            Side::Baseline => "baseline",
            Side::Environment => "environment",
        }
    }
}

/// Why two samples cannot be compared on the log scale.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SampleError {
    #[error(
        "the {} has {n} value(s) of this metric; a ratio with an interval needs at least 2 \
         repetitions per side (run more rounds)",
        side.label()
    )]
    TooFew { side: Side, n: usize },
    #[error(
        "the {} has the value {value}; ratios of geometric means need values > 0 \
         (compare this metric by its difference instead)",
        side.label()
    )]
    NotPositive { side: Side, value: f64 },
}

/// Welch's t-test of ln(env) against ln(base).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogRatio {
    /// Geometric mean of env over geometric mean of base, with its 95%
    /// interval.
    pub ratio: Estimate,
    /// mean(ln env) − mean(ln base) = ln(ratio.point).
    pub log_diff: f64,
    /// Standard error of `log_diff`.
    pub se: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value for "the ratio is 1".
    pub p: f64,
    pub n_base: usize,
    pub n_env: usize,
    /// Sample variances of the logs (≈ CV² for small CVs).
    pub var_base: f64,
    pub var_env: f64,
}

fn logs(xs: &[f64], side: Side) -> Result<Vec<f64>, SampleError> {
    if xs.len() < 2 {
        return Err(SampleError::TooFew { side, n: xs.len() });
    }
    xs.iter()
        .map(|&x| {
            if x > 0.0 && x.is_finite() {
                Ok(x.ln())
            } else {
                Err(SampleError::NotPositive { side, value: x })
            }
        })
        .collect()
}

fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, v)
}

/// Welch's t-test on the logs of `base` and `env`.
pub fn welch_log_ratio(base: &[f64], env: &[f64]) -> Result<LogRatio, SampleError> {
    let lb = logs(base, Side::Baseline)?;
    let le = logs(env, Side::Environment)?;
    let (nb, ne) = (lb.len() as f64, le.len() as f64);
    let (mb, vb) = mean_var(&lb);
    let (me, ve) = mean_var(&le);
    let (sb, se_) = (vb / nb, ve / ne);
    let se = (sb + se_).sqrt();
    // With both variances zero the formula is 0/0; the df then never
    // matters (se = 0), the pooled df is the natural value to show.
    let df = if se > 0.0 {
        (sb + se_).powi(2) / (sb * sb / (nb - 1.0) + se_ * se_ / (ne - 1.0))
    } else {
        nb + ne - 2.0
    };
    let log_diff = me - mb;
    let mut out = LogRatio {
        ratio: Estimate {
            point: log_diff.exp(),
            lower: f64::NAN,
            upper: f64::NAN,
        },
        log_diff,
        se,
        df,
        p: two_sided_p(log_diff, se, df),
        n_base: lb.len(),
        n_env: le.len(),
        var_base: vb,
        var_env: ve,
    };
    out.ratio = out.interval(0.95);
    Ok(out)
}

/// Two-sided p of a t statistic d / se; se = 0 means no noise at all: any
/// difference is certain, none is no evidence of one.
fn two_sided_p(d: f64, se: f64, df: f64) -> f64 {
    if se > 0.0 {
        (2.0 * student_t_upper_tail((d / se).abs(), df)).min(1.0)
    } else if d == 0.0 {
        1.0
    } else {
        0.0
    }
}

/// P(T > d / se) with the same se = 0 convention.
fn upper_p(d: f64, se: f64, df: f64) -> f64 {
    if se > 0.0 {
        student_t_upper_tail(d / se, df)
    } else if d > 0.0 {
        0.0
    } else {
        1.0
    }
}

impl LogRatio {
    /// The ratio's two-sided confidence interval at `level` (e.g. 0.90).
    pub fn interval(&self, level: f64) -> Estimate {
        let half = if self.se > 0.0 {
            student_t_quantile(0.5 + level / 2.0, self.df) * self.se
        } else {
            0.0
        };
        Estimate {
            point: self.log_diff.exp(),
            lower: (self.log_diff - half).exp(),
            upper: (self.log_diff + half).exp(),
        }
    }

    /// The p-value of the two one-sided tests (TOST) for equivalence within
    /// ratio bounds [1/(1+margin), 1+margin]: the larger of the two
    /// one-sided p-values. It is below α exactly when the (1 − 2α)
    /// interval lies inside the bounds.
    pub fn p_equivalent(&self, margin: f64) -> f64 {
        let bound = margin.ln_1p();
        // H0: ln ratio ≤ −bound, rejected by large (d + bound) / se; H0:
        // ln ratio ≥ bound, rejected by small (d − bound) / se.
        let above_lower = upper_p(self.log_diff + bound, self.se, self.df);
        let below_upper = upper_p(bound - self.log_diff, self.se, self.df);
        above_lower.max(below_upper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (±{tol})");
    }

    /// Logs of 100·e^k for the offsets k, so the log-scale arithmetic below
    /// can be followed by hand.
    fn from_offsets(ks: &[f64]) -> Vec<f64> {
        ks.iter().map(|k| 100.0 * k.exp()).collect()
    }

    #[test]
    fn worked_example() {
        // ln base − ln 100 = {−0.1, 0, 0.1}: mean 0, variance 0.02/2 = 0.01.
        // ln env − ln 100 = {0.1, 0.2, 0.3, 0.4}: mean 0.25, variance
        // 0.05/3.
        // se² = 0.01/3 + (0.05/3)/4 = 0.0075, se = 0.0866025, t = 2.886751.
        // df = 0.0075² / ((0.01/3)²/2 + (0.05/12)²/3) = 4.959184.
        let base = from_offsets(&[-0.1, 0.0, 0.1]);
        let env = from_offsets(&[0.1, 0.2, 0.3, 0.4]);
        let w = welch_log_ratio(&base, &env).unwrap();
        close(w.log_diff, 0.25, 1e-12);
        close(w.se, 0.0075f64.sqrt(), 1e-12);
        close(w.df, 4.959_183_673, 1e-8);
        close(w.ratio.point, 0.25f64.exp(), 1e-12);
        // t(0.975, 4.959184) = 2.576958, half-width 0.223175 on the log
        // scale: e^0.026825 = 1.027192, e^0.473175 = 1.605076. p = 2 P(T >
        // 2.886751). Cross-checked with scipy.stats.ttest_ind(equal_var =
        // False) on the logs and scipy.stats.t.ppf.
        close(w.p, 0.034_647_553, 1e-8);
        close(w.ratio.lower, 1.027_191_986, 1e-8);
        close(w.ratio.upper, 1.605_076_065, 1e-8);
        assert_eq!((w.n_base, w.n_env), (3, 4));
    }

    #[test]
    fn the_interval_is_symmetric_under_swapping_sides() {
        let a = [10.0, 11.0, 12.5, 9.5, 10.2];
        let b = [13.0, 12.1, 14.0, 12.7];
        let ab = welch_log_ratio(&a, &b).unwrap();
        let ba = welch_log_ratio(&b, &a).unwrap();
        close(ab.ratio.point * ba.ratio.point, 1.0, 1e-12);
        close(ab.ratio.lower * ba.ratio.upper, 1.0, 1e-12);
        close(ab.p, ba.p, 1e-15);
        close(ab.p_equivalent(0.05), ba.p_equivalent(0.05), 1e-15);
    }

    #[test]
    fn tost_matches_the_90_percent_interval() {
        // Equivalent at α = 0.05 exactly when the 90% interval is inside
        // [1/1.05, 1.05].
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        for shift in [1.0, 1.02, 1.03, 1.035, 1.04, 1.06] {
            let env: Vec<f64> = base.iter().map(|x| x * shift * 1.001).collect();
            let w = welch_log_ratio(&base, &env).unwrap();
            let ci = w.interval(0.90);
            let inside = ci.lower > 1.0 / 1.05 && ci.upper < 1.05;
            assert_eq!(w.p_equivalent(0.05) < 0.05, inside, "shift {shift}: {ci:?}");
        }
    }

    #[test]
    fn zero_variance_on_both_sides() {
        let same = welch_log_ratio(&[5.0, 5.0, 5.0], &[5.0, 5.0]).unwrap();
        assert_eq!(same.p, 1.0);
        assert_eq!(same.ratio.lower, 1.0);
        assert_eq!(same.ratio.upper, 1.0);
        assert_eq!(same.p_equivalent(0.05), 0.0);
        let apart = welch_log_ratio(&[5.0, 5.0, 5.0], &[10.0, 10.0]).unwrap();
        assert_eq!(apart.p, 0.0);
        close(apart.ratio.point, 2.0, 1e-12);
        assert_eq!(apart.p_equivalent(0.05), 1.0);
        assert!(apart.df.is_finite());
    }

    #[test]
    fn zero_variance_on_one_side_uses_the_other() {
        // df falls back to n − 1 of the noisy side.
        let w = welch_log_ratio(&[5.0, 5.0, 5.0], &[9.0, 10.0, 11.0, 10.0]).unwrap();
        close(w.df, 3.0, 1e-12);
        assert!(w.p < 0.001, "{}", w.p);
    }

    #[test]
    fn refuses_what_has_no_log_ratio() {
        assert_eq!(
            welch_log_ratio(&[1.0], &[1.0, 2.0]),
            Err(SampleError::TooFew {
                side: Side::Baseline,
                n: 1
            })
        );
        assert_eq!(
            welch_log_ratio(&[1.0, 2.0], &[1.0, 0.0]),
            Err(SampleError::NotPositive {
                side: Side::Environment,
                value: 0.0
            })
        );
        let nan = welch_log_ratio(&[f64::NAN, 2.0], &[1.0, 2.0]).unwrap_err();
        assert!(matches!(
            nan,
            SampleError::NotPositive {
                side: Side::Baseline,
                ..
            }
        ));
        let msg = welch_log_ratio(&[-3.0, 2.0], &[1.0, 2.0])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("baseline") && msg.contains("-3") && msg.contains("> 0"),
            "{msg}"
        );
    }
}
