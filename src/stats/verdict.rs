//! Four verdicts on an environment's metrics against the baseline — slower,
//! faster, equivalent, inconclusive — over a family of metrics the caller
//! chooses (an entry's headline metrics, each measurement once), with the
//! rank test beside Welch's as a robustness check and, for an inconclusive
//! verdict, how many repetitions per side would decide it.
//!
//! The rules, at level α (default 0.05) and margin m (default 5%):
//! - Difference: Welch's t-test on log values ([`welch_log_ratio`]), its
//!   p-values Holm-corrected over the family. Adjusted p < α is slower or
//!   faster, the direction read from the ratio and `higher_is_better`. This
//!   keeps the family-wise rate of a wrong slower/faster verdict at α.
//! - Equivalence: two one-sided tests (TOST) against ratio bounds
//!   [1/(1+m), 1+m], i.e. ±ln(1+m) on the log scale. Bounds symmetric in
//!   log rather than [1−m, 1+m] because then env/base and base/env, and a
//!   time and its rate, get the same verdict: 1/(1+m) is exactly the
//!   reciprocal of 1+m, while 1−m is not. The TOST p-values are
//!   Holm-corrected over the same family, so "equivalent" claims also keep a
//!   family-wise error of α; with a family of one this is the textbook rule
//!   "the 90% interval lies inside the bounds".
//! - Equivalence wins over difference: a difference shown to be smaller than
//!   the margin the user called negligible (possible with many runs or
//!   little noise) reads "equivalent", and the ratio printed beside it still
//!   shows the small shift.
//! - Otherwise inconclusive, with [`RunsNeeded`].
//! - A slower or faster verdict whose whole interval lies inside the
//!   equivalence bounds is marked [`Assessment::within_margin`] and read
//!   "slower, within ±5%": the difference is real and shown to be smaller
//!   than the margin (the interval shown is narrower than a TOST at the
//!   family's level would need, so such a row need not be equivalent).
//! - The exact Mann–Whitney p (Holm-corrected over the same family) is shown
//!   beside Welch's. When one is significant and the other is not, or both
//!   are in opposite directions, the tests disagree and the report should
//!   say so (outliers or a skewed distribution). When the rank test could
//!   not reach α at these sample sizes and this family size whatever the
//!   data (5 against 5 cannot go below p = 0.0079), its silence is not
//!   disagreement: [`RankCheck::RankCannotDecide`].
//!
//! Repetitions needed (for inconclusive): the smallest n per side, equal on
//! both sides, at which a test at Bonferroni level α/k (k = family size, the
//! strictest step of Holm's procedure) would reach the target power
//! (default 80%) if the true log ratio and the log-scale standard deviation
//! were the observed ones (pooled over both sides), for either goal:
//! showing a difference (two-sided) or equivalence (both one-sided tests).
//! Power uses the usual shifted central-t approximation of the noncentral t
//! with df = 2n − 2: difference P(T > t(1−a/2) − |d|/se), equivalence
//! P(T > t(1−a) − (M−|d|)/se) + P(T > t(1−a) − (M+|d|)/se) − 1, se = s·√(2/n).
//! The smaller n of the two goals is reported, at least one more than the
//! runs already made, or "more than [`MAX_RUNS_PER_SIDE`]". It is a plan at
//! the observed effect and noise, not a promise: the observed effect is
//! itself uncertain.
//!
//! Use: per entry and environment, one [`assess_family`] call over the
//! entry's headline metrics (each measurement once: not both `x_ns` and
//! `x_cycles`, or the family grows and every verdict weakens). Metrics shown
//! only with `--detail` are a second family of their own, so they do not
//! dilute the headline ones. `--repeat auto` can stop once no headline
//! metric is [`Outcome::Inconclusive`], and aim at the largest
//! [`RunsNeeded::per_side`] it can afford.

use serde::Serialize;

use super::tdist::{normal_quantile_guess, student_t_cdf, student_t_quantile};
use super::welch::{welch_log_ratio, LogRatio, SampleError};
use super::{holm, mann_whitney_p, Estimate};

/// Runs per side beyond which [`RunsNeeded`] says "more than this".
pub const MAX_RUNS_PER_SIDE: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Slower,
    Faster,
    Equivalent,
    Inconclusive,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Slower => "slower",
            Outcome::Faster => "faster",
            Outcome::Equivalent => "equivalent",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// How the Mann–Whitney test compares with Welch's, both after Holm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RankCheck {
    /// Both significant in the same direction, or neither significant.
    Agrees,
    /// Welch significant, the rank test not, though it could have been.
    WelchOnly,
    /// The rank test significant, Welch not.
    RankOnly,
    /// Both significant, in opposite directions.
    Opposite,
    /// Welch significant; the rank test could not reach α at these sample
    /// and family sizes whatever the data. Not a disagreement.
    RankCannotDecide,
}

impl RankCheck {
    pub fn disagrees(self) -> bool {
        matches!(
            self,
            RankCheck::WelchOnly | RankCheck::RankOnly | RankCheck::Opposite
        )
    }
}

/// Which verdict more repetitions would most cheaply reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    Difference,
    Equivalence,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RunsNeeded {
    /// Repetitions per side; None: more than [`MAX_RUNS_PER_SIDE`].
    pub per_side: Option<usize>,
    pub to_show: Goal,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VerdictSettings {
    /// Family-wise error rate for each kind of claim.
    pub alpha: f64,
    /// Equivalence margin: ratios within [1/(1+margin), 1+margin] are
    /// negligible.
    pub margin: f64,
    /// Target power for [`RunsNeeded`].
    pub power: f64,
}

impl Default for VerdictSettings {
    fn default() -> Self {
        VerdictSettings {
            alpha: 0.05,
            margin: 0.05,
            power: 0.80,
        }
    }
}

/// One metric of the family: its repetitions on each side.
#[derive(Debug, Clone, Copy)]
pub struct MetricSamples<'a> {
    pub base: &'a [f64],
    pub env: &'a [f64],
    pub higher_is_better: bool,
}

/// Everything the report needs about one metric of one environment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assessment {
    /// Geometric mean env / base with its 95% Welch interval (not widened
    /// for multiplicity; the verdict is).
    pub ratio: Estimate,
    /// (1 − ratio) × 100, for higher-is-better metrics.
    pub overhead_pct: Option<f64>,
    /// The ratio, for lower-is-better metrics ("times slower").
    pub times_slower: Option<f64>,
    pub n_base: usize,
    pub n_env: usize,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Welch's two-sided p for "ratio = 1", raw and Holm-adjusted.
    pub p_welch: f64,
    pub p_welch_adjusted: f64,
    /// TOST p for "ratio within the margin", raw and Holm-adjusted.
    pub p_equivalence: f64,
    pub p_equivalence_adjusted: f64,
    /// Mann–Whitney two-sided p (exact for small samples without ties),
    /// raw and Holm-adjusted.
    pub p_rank: f64,
    pub p_rank_adjusted: f64,
    pub rank_check: RankCheck,
    /// One test significant and the other not (when it could have been),
    /// or opposite directions: `rank_check.disagrees()`.
    pub tests_disagree: bool,
    pub outcome: Outcome,
    /// Slower or faster with the whole ratio interval inside
    /// [1/(1+margin), 1+margin]: a real difference shown to be smaller than
    /// the margin ([`within_margin`]).
    pub within_margin: bool,
    /// Only for [`Outcome::Inconclusive`].
    pub runs_needed: Option<RunsNeeded>,
}

/// Whether a verdict is slower or faster with its whole interval inside the
/// equivalence bounds [1/(1+margin), 1+margin] (ratios, either direction).
pub fn within_margin(outcome: Outcome, ratio: &Estimate, margin: f64) -> bool {
    matches!(outcome, Outcome::Slower | Outcome::Faster)
        && ratio.lower >= 1.0 / (1.0 + margin)
        && ratio.upper <= 1.0 + margin
}

/// Judges a family of metrics of one environment against the baseline;
/// one result per metric, in order. Metrics that cannot be compared (see
/// [`SampleError`]) are left out of the family for Holm's correction.
pub fn assess_family(
    family: &[MetricSamples<'_>],
    settings: &VerdictSettings,
) -> Vec<Result<Assessment, SampleError>> {
    let tests: Vec<Result<LogRatio, SampleError>> = family
        .iter()
        .map(|m| welch_log_ratio(m.base, m.env))
        .collect();
    let ok: Vec<(&MetricSamples, &LogRatio)> = family
        .iter()
        .zip(&tests)
        .filter_map(|(m, t)| t.as_ref().ok().map(|t| (m, t)))
        .collect();
    let k = ok.len();
    let p_welch: Vec<f64> = ok.iter().map(|(_, t)| t.p).collect();
    let p_equiv: Vec<f64> = ok
        .iter()
        .map(|(_, t)| t.p_equivalent(settings.margin))
        .collect();
    let p_rank: Vec<f64> = ok
        .iter()
        .map(|(m, _)| mann_whitney_p(m.base, m.env))
        .collect();
    let (adj_welch, adj_equiv, adj_rank) = (holm(&p_welch), holm(&p_equiv), holm(&p_rank));
    let judged: Vec<Assessment> = ok
        .iter()
        .enumerate()
        .map(|(i, (m, t))| {
            let alpha = settings.alpha;
            let welch_significant = adj_welch[i] < alpha;
            let worse = if m.higher_is_better {
                t.log_diff < 0.0
            } else {
                t.log_diff > 0.0
            };
            let outcome = if adj_equiv[i] < alpha {
                Outcome::Equivalent
            } else if welch_significant && worse {
                Outcome::Slower
            } else if welch_significant {
                Outcome::Faster
            } else {
                Outcome::Inconclusive
            };
            let rank_check = rank_check(m, t, welch_significant, adj_rank[i] < alpha, k, alpha);
            let runs_needed = (outcome == Outcome::Inconclusive).then(|| {
                let pooled = ((t.n_base - 1) as f64 * t.var_base
                    + (t.n_env - 1) as f64 * t.var_env)
                    / (t.n_base + t.n_env - 2) as f64;
                let mut plan = runs_needed(t.log_diff, pooled.sqrt(), k, settings);
                let made = t.n_base.max(t.n_env);
                plan.per_side = plan.per_side.map(|n| n.max(made + 1));
                plan
            });
            Assessment {
                ratio: t.ratio,
                overhead_pct: m.higher_is_better.then_some((1.0 - t.ratio.point) * 100.0),
                times_slower: (!m.higher_is_better).then_some(t.ratio.point),
                n_base: t.n_base,
                n_env: t.n_env,
                df: t.df,
                p_welch: p_welch[i],
                p_welch_adjusted: adj_welch[i],
                p_equivalence: p_equiv[i],
                p_equivalence_adjusted: adj_equiv[i],
                p_rank: p_rank[i],
                p_rank_adjusted: adj_rank[i],
                rank_check,
                tests_disagree: rank_check.disagrees(),
                within_margin: within_margin(outcome, &t.ratio, settings.margin),
                outcome,
                runs_needed,
            }
        })
        .collect();
    let mut judged = judged.into_iter();
    tests
        .into_iter()
        .map(|t| t.map(|_| judged.next().expect("one judgement per comparable metric")))
        .collect()
}

/// [`assess_family`] for a family of one metric.
pub fn assess(
    base: &[f64],
    env: &[f64],
    higher_is_better: bool,
    settings: &VerdictSettings,
) -> Result<Assessment, SampleError> {
    let one = MetricSamples {
        base,
        env,
        higher_is_better,
    };
    assess_family(&[one], settings)
        .pop()
        .expect("one result for one metric")
}

fn rank_check(
    m: &MetricSamples,
    t: &LogRatio,
    welch_significant: bool,
    rank_significant: bool,
    family: usize,
    alpha: f64,
) -> RankCheck {
    match (welch_significant, rank_significant) {
        (false, false) => RankCheck::Agrees,
        (false, true) => RankCheck::RankOnly,
        (true, true) => {
            // U's side: are env values mostly above base values?
            let above: f64 = m
                .env
                .iter()
                .flat_map(|e| {
                    m.base.iter().map(move |b| {
                        if e > b {
                            1.0
                        } else if e < b {
                            -1.0
                        } else {
                            0.0
                        }
                    })
                })
                .sum();
            if (above > 0.0) == (t.log_diff > 0.0) {
                RankCheck::Agrees
            } else {
                RankCheck::Opposite
            }
        }
        (true, false) => {
            // Holm multiplies the smallest p by the family size, and no
            // adjusted p is below that product: complete separation is the
            // best the rank test can do.
            let (n1, n2) = (m.base.len(), m.env.len());
            let a: Vec<f64> = (0..n1).map(|i| i as f64).collect();
            let b: Vec<f64> = (n1..n1 + n2).map(|i| i as f64).collect();
            if family as f64 * mann_whitney_p(&a, &b) >= alpha {
                RankCheck::RankCannotDecide
            } else {
                RankCheck::WelchOnly
            }
        }
    }
}

/// Repetitions per side that would decide a metric with true log ratio
/// `log_diff` and log-scale standard deviation `log_sd` (≈ CV), in a family
/// of `family` metrics; the method is in the module doc. Not clamped to the
/// runs already made.
pub fn runs_needed(
    log_diff: f64,
    log_sd: f64,
    family: usize,
    settings: &VerdictSettings,
) -> RunsNeeded {
    let d = log_diff.abs();
    let bound = settings.margin.ln_1p();
    let nearer = if d > bound / 2.0 {
        Goal::Difference
    } else {
        Goal::Equivalence
    };
    if log_sd <= 0.0 || !log_sd.is_finite() {
        // No noise: two runs decide (and the verdict is never inconclusive).
        return RunsNeeded {
            per_side: Some(2),
            to_show: if d < bound {
                Goal::Equivalence
            } else {
                Goal::Difference
            },
        };
    }
    let a = settings.alpha / family.max(1) as f64;
    let se = |n: usize| log_sd * (2.0 / n as f64).sqrt();
    let df = |n: usize| 2.0 * n as f64 - 2.0;
    let difference = |n: usize| {
        let tc = student_t_quantile(1.0 - a / 2.0, df(n));
        student_t_cdf(d / se(n) - tc, df(n))
    };
    let equivalence = |n: usize| {
        if d >= bound {
            return 0.0;
        }
        let tc = student_t_quantile(1.0 - a, df(n));
        let lo = student_t_cdf((bound - d) / se(n) - tc, df(n));
        let hi = student_t_cdf((bound + d) / se(n) - tc, df(n));
        (lo + hi - 1.0).max(0.0)
    };
    let target = settings.power;
    // Normal-theory guesses, n = 2 s² (z_a + z_b)² / effect², put the
    // search next to its answer; the t-based power then fixes it exactly.
    // For a target power of at least 1/2 they are lower bounds (the normal
    // has lighter tails than t, and the equivalence guess drops a negative
    // term), so a guess beyond the cap settles "more than the cap" at once.
    let z = |p: f64| normal_quantile_guess(p);
    let search = |power: &dyn Fn(usize) -> f64, z_sum: f64, effect: f64| {
        let guess = 2.0 * log_sd * log_sd * z_sum * z_sum / (effect * effect);
        if target >= 0.5 && (guess.is_nan() || guess > MAX_RUNS_PER_SIDE as f64) {
            return None;
        }
        let guess = guess.ceil().min(MAX_RUNS_PER_SIDE as f64) as usize;
        smallest_n(power, guess, target)
    };
    let by_difference = (d > 0.0)
        .then(|| search(&difference, z(1.0 - a / 2.0) + z(target), d))
        .flatten();
    let equivalence_z = if d == 0.0 {
        z(1.0 - a) + z((1.0 + target) / 2.0)
    } else {
        z(1.0 - a) + z(target)
    };
    let by_equivalence = (d < bound)
        .then(|| search(&equivalence, equivalence_z, bound - d))
        .flatten();
    match (by_difference, by_equivalence) {
        (Some(x), Some(y)) if y < x => RunsNeeded {
            per_side: Some(y),
            to_show: Goal::Equivalence,
        },
        (Some(x), _) => RunsNeeded {
            per_side: Some(x),
            to_show: Goal::Difference,
        },
        (None, Some(y)) => RunsNeeded {
            per_side: Some(y),
            to_show: Goal::Equivalence,
        },
        (None, None) => RunsNeeded {
            per_side: None,
            to_show: nearer,
        },
    }
}

/// The smallest n in 2..=MAX_RUNS_PER_SIDE with power(n) ≥ target, power
/// growing with n; searched by galloping out from `guess`, then bisecting.
fn smallest_n(power: &dyn Fn(usize) -> f64, guess: usize, target: f64) -> Option<usize> {
    let enough = |n: usize| power(n) >= target;
    let start = guess.clamp(2, MAX_RUNS_PER_SIDE);
    let (mut lo, mut hi);
    if enough(start) {
        hi = start;
        lo = 2;
        let mut step = 1;
        while hi > 2 {
            let below = hi.saturating_sub(step).max(2);
            if enough(below) {
                hi = below;
                step *= 2;
            } else {
                lo = below + 1;
                break;
            }
        }
    } else {
        lo = start + 1;
        let mut step = 1;
        loop {
            if lo > MAX_RUNS_PER_SIDE {
                return None;
            }
            let above = (start + step).min(MAX_RUNS_PER_SIDE);
            if enough(above) {
                hi = above;
                break;
            }
            lo = above + 1;
            step *= 2;
        }
    }
    while lo < hi {
        let mid = (lo + hi) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::super::SplitMix64;
    use super::*;

    /// Lognormal samples from a seeded generator (Box–Muller on SplitMix64).
    struct Lognormal {
        rng: SplitMix64,
        spare: Option<f64>,
    }

    impl Lognormal {
        fn new(seed: u64) -> Self {
            Lognormal {
                rng: SplitMix64(seed),
                spare: None,
            }
        }

        /// Uniform on (0, 1), never 0 so its log is finite.
        fn uniform(&mut self) -> f64 {
            ((self.rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            if let Some(z) = self.spare.take() {
                return z;
            }
            let r = (-2.0 * self.uniform().ln()).sqrt();
            let theta = 2.0 * std::f64::consts::PI * self.uniform();
            self.spare = Some(r * theta.sin());
            r * theta.cos()
        }

        /// n values with the given median (= geometric mean) and CV.
        fn sample(&mut self, n: usize, median: f64, cv: f64) -> Vec<f64> {
            let sigma = cv.mul_add(cv, 1.0).ln().sqrt();
            (0..n)
                .map(|_| median * (sigma * self.normal()).exp())
                .collect()
        }
    }

    #[derive(Debug, Default)]
    struct Tally {
        trials: usize,
        /// Trials where any metric of the family got each outcome.
        slower: usize,
        faster: usize,
        equivalent: usize,
        inconclusive: usize,
        disagree: usize,
    }

    impl Tally {
        fn rate(&self, count: usize) -> f64 {
            count as f64 / self.trials as f64
        }
    }

    /// `trials` families of `family` metrics, `n` runs per side, where the
    /// environment's median is `effect` times the baseline's.
    #[allow(clippy::too_many_arguments)]
    fn simulate(
        seed: u64,
        trials: usize,
        family: usize,
        n: usize,
        cv: f64,
        effect: f64,
        higher_is_better: bool,
        settings: &VerdictSettings,
    ) -> Tally {
        let mut g = Lognormal::new(seed);
        let mut tally = Tally {
            trials,
            ..Tally::default()
        };
        for _ in 0..trials {
            let samples: Vec<(Vec<f64>, Vec<f64>)> = (0..family)
                .map(|_| (g.sample(n, 100.0, cv), g.sample(n, 100.0 * effect, cv)))
                .collect();
            let metrics: Vec<MetricSamples> = samples
                .iter()
                .map(|(b, e)| MetricSamples {
                    base: b,
                    env: e,
                    higher_is_better,
                })
                .collect();
            let results: Vec<Assessment> = assess_family(&metrics, settings)
                .into_iter()
                .map(|r| r.unwrap())
                .collect();
            let any = |o: Outcome| results.iter().any(|a| a.outcome == o);
            tally.slower += any(Outcome::Slower) as usize;
            tally.faster += any(Outcome::Faster) as usize;
            tally.equivalent += any(Outcome::Equivalent) as usize;
            tally.inconclusive += any(Outcome::Inconclusive) as usize;
            tally.disagree += results.iter().any(|a| a.tests_disagree) as usize;
        }
        tally
    }

    #[test]
    fn a_20_percent_effect_is_called_at_n5_cv5() {
        let s = VerdictSettings::default();
        // 20% less throughput, 20% more throughput, 20% more time.
        for (seed, effect, hib, want) in [
            (1, 0.8, true, Outcome::Slower),
            (2, 1.2, true, Outcome::Faster),
            (3, 1.2, false, Outcome::Slower),
        ] {
            let t = simulate(seed, 2000, 1, 5, 0.05, effect, hib, &s);
            let (right, wrong) = match want {
                Outcome::Slower => (t.slower, t.faster),
                _ => (t.faster, t.slower),
            };
            println!(
                "effect {effect} hib {hib}: {want:?} {:.4}, opposite {wrong}, rank disagrees {:.4}",
                t.rate(right),
                t.rate(t.disagree)
            );
            assert!(t.rate(right) >= 0.95, "{effect} {hib}: {t:?}");
            assert_eq!(wrong, 0, "{t:?}");
        }
    }

    #[test]
    fn power_from_three_runs() {
        // The issue asks for power at n = 3…10; with the rank test alone
        // 3 against 3 could never be significant (best p = 0.1).
        let s = VerdictSettings::default();
        let t = simulate(4, 1000, 1, 3, 0.05, 0.8, true, &s);
        println!("n 3, CV 5%, effect 0.8: slower {:.4}", t.rate(t.slower));
        assert!(t.rate(t.slower) >= 0.90, "{t:?}");
        assert_eq!(t.faster, 0);
    }

    #[test]
    fn a_20_percent_effect_is_called_in_a_family_of_five() {
        // All five metrics carry the effect; the rate is per metric.
        let s = VerdictSettings::default();
        let mut g = Lognormal::new(11);
        let (mut called, mut total) = (0, 0);
        for _ in 0..400 {
            let samples: Vec<(Vec<f64>, Vec<f64>)> = (0..5)
                .map(|_| (g.sample(5, 100.0, 0.05), g.sample(5, 80.0, 0.05)))
                .collect();
            let metrics: Vec<MetricSamples> = samples
                .iter()
                .map(|(b, e)| MetricSamples {
                    base: b,
                    env: e,
                    higher_is_better: true,
                })
                .collect();
            for a in assess_family(&metrics, &s) {
                total += 1;
                called += (a.unwrap().outcome == Outcome::Slower) as usize;
            }
        }
        let rate = called as f64 / total as f64;
        println!("family of 5, effect 0.8: slower {rate:.4}");
        assert!(rate >= 0.90, "{called}/{total}");
    }

    #[test]
    fn no_effect_rarely_gives_slower_or_faster() {
        let s = VerdictSettings::default();
        for (seed, family, trials) in [(21, 1, 2000), (22, 5, 1000), (23, 10, 400)] {
            let t = simulate(seed, trials, family, 5, 0.05, 1.0, true, &s);
            let fwer = t.rate(t.slower + t.faster);
            println!(
                "no effect, family {family}: family-wise slower/faster {fwer:.4} over {trials}"
            );
            assert!(fwer <= 0.05, "family {family}: {t:?}");
        }
    }

    #[test]
    fn no_effect_at_cv2_is_called_equivalent() {
        let s = VerdictSettings::default();
        let t = simulate(31, 2000, 1, 5, 0.02, 1.0, true, &s);
        println!(
            "no effect, CV 2%, n 5: equivalent {:.4}",
            t.rate(t.equivalent)
        );
        assert!(t.rate(t.equivalent) >= 0.80, "{t:?}");
        // Equivalence absorbs most of the 5% false differences, not all.
        assert!(t.rate(t.slower + t.faster) <= 0.05, "{t:?}");
    }

    #[test]
    fn runs_needed_delivers_its_power() {
        // Plan at the true effect and noise, then simulate at that n: the
        // verdict should be reached about as often as the target power.
        let s = VerdictSettings::default();
        for (seed, effect, cv, goal) in [
            (41, 1.10, 0.06, Goal::Difference),
            (42, 1.0, 0.035, Goal::Equivalence),
            (43, 1.01, 0.025, Goal::Equivalence),
        ] {
            let sigma = (1.0f64 + cv * cv).ln().sqrt();
            let plan = runs_needed(f64::ln(effect), sigma, 1, &s);
            assert_eq!(plan.to_show, goal, "{plan:?}");
            let n = plan.per_side.unwrap();
            let t = simulate(seed, 600, 1, n, cv, effect, false, &s);
            let reached = match goal {
                Goal::Difference => t.rate(t.slower),
                Goal::Equivalence => t.rate(t.equivalent),
            };
            println!("effect {effect} cv {cv}: {n} runs per side reach {goal:?} in {reached:.3}");
            assert!((0.72..=0.92).contains(&reached), "{n}: {t:?}");
            // One run fewer should fall short of that.
            let fewer = simulate(seed, 600, 1, n - 1, cv, effect, false, &s);
            let fewer_reached = match goal {
                Goal::Difference => fewer.rate(fewer.slower),
                Goal::Equivalence => fewer.rate(fewer.equivalent),
            };
            assert!(fewer_reached < reached + 0.02, "{fewer:?}");
        }
    }

    #[test]
    fn the_search_finds_the_first_sufficient_n() {
        let power = |n: usize| 1.0 - 10.0 / n as f64;
        for target in [0.0, 0.5, 0.8, 0.9, 0.95, 0.99, 0.995] {
            let want = (2..=MAX_RUNS_PER_SIDE).find(|&n| power(n) >= target);
            for guess in [0, 2, 3, 10, 50, 199, 200, 201, 999, 5000] {
                assert_eq!(smallest_n(&power, guess, target), want, "{target} {guess}");
            }
        }
    }

    #[test]
    fn runs_needed_edges() {
        let s = VerdictSettings::default();
        // No effect: only equivalence can be shown.
        let zero = runs_needed(0.0, 0.05, 1, &s);
        assert_eq!(zero.to_show, Goal::Equivalence);
        // An effect right at the margin: only a difference.
        let edge = runs_needed(1.05f64.ln(), 0.05, 1, &s);
        assert_eq!(edge.to_show, Goal::Difference);
        // A bigger family needs more runs.
        let one = runs_needed(0.1, 0.1, 1, &s).per_side.unwrap();
        let ten = runs_needed(0.1, 0.1, 10, &s).per_side.unwrap();
        assert!(ten > one, "{one} {ten}");
        // Tiny effect, huge noise: beyond the cap.
        assert_eq!(runs_needed(0.001, 1.0, 1, &s).per_side, None);
        assert_eq!(runs_needed(0.3, 0.0, 1, &s).per_side, Some(2));
    }

    #[test]
    fn inconclusive_says_how_many_runs() {
        let s = VerdictSettings::default();
        let base = [100.0, 104.0, 97.0];
        let env = [103.0, 99.0, 108.0];
        let a = assess(&base, &env, true, &s).unwrap();
        assert_eq!(a.outcome, Outcome::Inconclusive, "{a:?}");
        let need = a.runs_needed.unwrap();
        assert!(need.per_side.unwrap() > 3, "{need:?}");
        // Decided verdicts carry no plan.
        let clear = assess(&base, &[50.0, 51.0, 49.0], true, &s).unwrap();
        assert_eq!(clear.outcome, Outcome::Slower);
        assert_eq!(clear.runs_needed, None);
        assert!((clear.overhead_pct.unwrap() - 50.0).abs() < 2.0);
        assert_eq!(clear.times_slower, None);
    }

    #[test]
    fn direction_follows_higher_is_better() {
        let s = VerdictSettings::default();
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let half = [50.0, 50.5, 49.5, 50.2, 49.8];
        assert_eq!(
            assess(&base, &half, true, &s).unwrap().outcome,
            Outcome::Slower
        );
        let t = assess(&base, &half, false, &s).unwrap();
        assert_eq!(t.outcome, Outcome::Faster);
        assert_eq!(t.times_slower, Some(t.ratio.point));
        assert_eq!(t.overhead_pct, None);
    }

    #[test]
    fn equivalence_wins_over_a_negligible_difference() {
        // 2% apart with almost no noise: significant, and inside ±5%.
        let s = VerdictSettings::default();
        let base = [100.0, 100.01, 99.99, 100.0];
        let env = [102.0, 102.01, 101.99, 102.0];
        let a = assess(&base, &env, true, &s).unwrap();
        assert!(a.p_welch < 1e-6);
        assert_eq!(a.outcome, Outcome::Equivalent);
        // A 10% margin-breaking shift is not.
        let far: Vec<f64> = base.iter().map(|x| x * 1.1).collect();
        assert_eq!(
            assess(&base, &far, false, &s).unwrap().outcome,
            Outcome::Slower
        );
    }

    #[test]
    fn constant_samples() {
        let s = VerdictSettings::default();
        let same = assess(&[7.0, 7.0, 7.0], &[7.0, 7.0, 7.0], true, &s).unwrap();
        assert_eq!(same.outcome, Outcome::Equivalent);
        let apart = assess(&[7.0, 7.0, 7.0], &[14.0, 14.0, 14.0], false, &s).unwrap();
        assert_eq!(apart.outcome, Outcome::Slower);
        assert!((apart.ratio.lower - 2.0).abs() < 1e-12);
    }

    #[test]
    fn holm_runs_over_the_comparable_members_only() {
        let s = VerdictSettings::default();
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let env = [90.0, 91.0, 89.5, 90.5, 92.0];
        let metrics = [
            MetricSamples {
                base: &base,
                env: &env,
                higher_is_better: true,
            },
            MetricSamples {
                base: &[0.0, 1.0],
                env: &[1.0, 2.0],
                higher_is_better: true,
            },
            MetricSamples {
                base: &base,
                env: &base,
                higher_is_better: true,
            },
        ];
        let r = assess_family(&metrics, &s);
        assert!(matches!(r[1], Err(SampleError::NotPositive { .. })));
        let first = r[0].as_ref().unwrap();
        // Two comparable members: the smaller p is doubled.
        assert!((first.p_welch_adjusted - (2.0 * first.p_welch).min(1.0)).abs() < 1e-15);
        assert_eq!(first.outcome, Outcome::Slower);
        assert_eq!(r[2].as_ref().unwrap().outcome, Outcome::Equivalent);
    }

    #[test]
    fn the_rank_test_as_a_robustness_check() {
        let s = VerdictSettings::default();
        // Complete separation but one wild outlier: ranks see it, Welch on
        // logs is swamped by the outlier's variance.
        let base = [100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0];
        let outlier = [108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 1e5];
        let a = assess(&base, &outlier, false, &s).unwrap();
        assert_eq!(a.rank_check, RankCheck::RankOnly, "{a:?}");
        assert!(a.tests_disagree);
        // Half the environment's runs just below the baseline, half far
        // above: the geometric mean moves, the ranks balance out.
        let base = [99.5, 99.7, 99.9, 100.1, 100.3, 100.5, 100.7, 100.9];
        let split = [99.0, 99.1, 99.2, 99.3, 150.0, 160.0, 170.0, 180.0];
        let b = assess(&base, &split, false, &s).unwrap();
        assert!(b.p_welch < 0.05 && b.p_rank > 0.5, "{b:?}");
        assert_eq!(b.rank_check, RankCheck::WelchOnly);
        assert!(b.tests_disagree);
        // 3 against 3 cannot reach p < 0.05 by ranks (best 0.1): a clear
        // Welch verdict is not a disagreement.
        let c = assess(&[100.0, 101.0, 99.0], &[80.0, 81.0, 79.0], true, &s).unwrap();
        assert_eq!(c.outcome, Outcome::Slower);
        assert_eq!(c.rank_check, RankCheck::RankCannotDecide);
        assert!(!c.tests_disagree);
        // A clear difference at 8 against 8: both agree.
        let d = assess(&base, &outlier[..7].repeat(2)[..8], false, &s).unwrap();
        assert_eq!(d.rank_check, RankCheck::Agrees, "{d:?}");
        assert!(!d.tests_disagree);
    }

    #[test]
    fn refusals_pass_through() {
        let s = VerdictSettings::default();
        assert!(matches!(
            assess(&[1.0], &[1.0, 2.0], true, &s),
            Err(SampleError::TooFew { n: 1, .. })
        ));
        assert!(matches!(
            assess(&[1.0, 2.0], &[-1.0, 2.0], true, &s),
            Err(SampleError::NotPositive { .. })
        ));
    }

    #[test]
    fn two_runs_per_side_and_many() {
        let s = VerdictSettings::default();
        let two = assess(&[100.0, 103.0], &[104.0, 108.0], true, &s).unwrap();
        assert_eq!(two.outcome, Outcome::Inconclusive, "{two:?}");
        assert!(two.df >= 1.0 && two.ratio.lower < two.ratio.point);
        assert!(two.runs_needed.unwrap().per_side.unwrap() >= 3);
        // 200 a side: the rank test's normal approximation, a small shift
        // inside the margin shown equivalent.
        let mut g = Lognormal::new(5);
        let base = g.sample(200, 100.0, 0.05);
        let env = g.sample(200, 101.0, 0.05);
        let many = assess(&base, &env, true, &s).unwrap();
        assert_eq!(many.outcome, Outcome::Equivalent, "{many:?}");
        assert!(many.p_rank > 0.0 && many.p_rank <= 1.0);
    }

    proptest::proptest! {
        #[test]
        fn invariants(
            a in proptest::collection::vec(1.0f64..1e4, 2..9),
            b in proptest::collection::vec(1.0f64..1e4, 2..9),
            hib: bool,
            scale in 0.001f64..1000.0,
        ) {
            let s = VerdictSettings::default();
            let ab = assess(&a, &b, hib, &s).unwrap();
            // The interval holds the point; Holm never lowers a p.
            proptest::prop_assert!(ab.ratio.lower <= ab.ratio.point * (1.0 + 1e-12));
            proptest::prop_assert!(ab.ratio.point <= ab.ratio.upper * (1.0 + 1e-12));
            proptest::prop_assert!(ab.p_welch_adjusted >= ab.p_welch);
            proptest::prop_assert_eq!(
                ab.runs_needed.is_some(),
                ab.outcome == Outcome::Inconclusive
            );
            // Swapping the sides swaps slower and faster, nothing else.
            let ba = assess(&b, &a, hib, &s).unwrap();
            let swapped = match ab.outcome {
                Outcome::Slower => Outcome::Faster,
                Outcome::Faster => Outcome::Slower,
                o => o,
            };
            proptest::prop_assert_eq!(ba.outcome, swapped);
            proptest::prop_assert!((ab.p_welch - ba.p_welch).abs() < 1e-12);
            // A time is the reciprocal of a rate: same verdict.
            let inv = |xs: &[f64]| xs.iter().map(|x| 1.0 / x).collect::<Vec<f64>>();
            let rate = assess(&inv(&a), &inv(&b), !hib, &s).unwrap();
            proptest::prop_assert_eq!(rate.outcome, ab.outcome);
            // Units do not matter.
            let scaled = |xs: &[f64]| xs.iter().map(|x| x * scale).collect::<Vec<f64>>();
            let sc = assess(&scaled(&a), &scaled(&b), hib, &s).unwrap();
            proptest::prop_assert_eq!(sc.outcome, ab.outcome);
            proptest::prop_assert!((sc.ratio.point / ab.ratio.point - 1.0).abs() < 1e-9);
        }
    }
}
