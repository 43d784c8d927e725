//! Anytime-valid verdicts for the adaptive design: a confidence sequence for
//! the centre of the paired log differences d = ln(env) − ln(baseline) of
//! one metric, one pair per round.
//!
//! Why a confidence sequence and not a group-sequential design: the
//! scheduler decides after every pair which pair of environments runs next
//! and stops each as soon as it is decided, so the number and timing of the
//! looks is not known in advance, which an alpha-spending function needs.
//! A confidence sequence (Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform,
//! nonparametric, nonasymptotic confidence sequences", Ann. Statist. 2021)
//! covers the true value at every n at once with probability ≥ 1 − α, so the
//! verdicts read off it may be looked at after every pair, for ever.
//!
//! The sequence is the intersection of two, each at its share of α (a
//! union bound: both cover at every n at once with probability ≥ 1 − α):
//!
//! **Look-wise t-intervals, α spent over the looks** ([`SPEND`] of α). The
//! t-part looks at every n from [`MIN_PAIRS`] to 6 and then at n about a
//! quarter past its last look (8, 10, 13, 17, 22, 28, 35, 44, …; see
//! [`look_index`]); at its k-th look it is the one-sample t-interval at
//! level α · SPEND · w_k, with w_k = 2 / ((k + 1)(k + 2)) (1/3, 1/6, 1/10,
//! …, summing to 1). Between its looks only the e-process below reads the
//! pairs, and what the t-part last said stands (the reported interval is the
//! running intersection). Looking at every n instead, as this did before,
//! gave the 20th pair the share 1/190 where the schedule gives its 10th
//! look 1/66: at 13-64 pairs the critical |t| was 9-22% higher (for families of 1 to
//! 14 metrics), which costs 18-48% more pairs for the same decision, and the pairs an entry gets in a
//! comparison of minutes are mostly in that range. The price is a decision
//! waiting up to a quarter of its pairs for the next look, where the
//! e-process has not made it first. This is a group-sequential design with a
//! Bonferroni spending function (Lan & DeMets, "Discrete sequential
//! boundaries for clinical trials", Biometrika 1983, with the union bound in
//! place of the recursive integration, which the t-statistics at 2–5
//! degrees of freedom would make inexact): the probability that any look's
//! interval misses θ is at most Σ α · SPEND · w_n, whenever the looks are
//! taken and whatever stops them, since every n has its own share fixed in
//! advance. Its strength is the first looks: at n = 3, 4, 5 it decides at
//! |t| ≥ 10.5, 7.8, 6.6 where the mixture below needs 34, 14 and 10 — and
//! the first looks are where a comparison of minutes decides.
//!
//! **An e-process** (the rest of α), the mean of two e-processes for "the
//! centre is θ", each valid under "d is symmetric about θ" (Ville's
//! inequality then gives the coverage at every n; Howard, Ramdas, McAuliffe
//! & Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence
//! sequences", Ann. Statist. 2021):
//! - ½ · the Bayes factor of the one-sample t-test with a normal prior
//!   N(0, g) on the standardised effect, averaged over g ∈ [`GRID`] (Rouder,
//!   Speckman, Sun, Morey & Iverson 2009). With the right-Haar prior on σ it
//!   is a test martingale for the scale-invariant filtration (Pérez-Ortiz,
//!   Lardy, de Heide & Grünwald, "E-statistics, group invariance and anytime
//!   valid testing", 2024), i.e. anytime-valid for a normal centre θ. At
//!   many pairs it is narrower than the spent t-intervals, whose shares
//!   shrink as 1/n².
//! - ½ · a betting e-process on the clipped, standardised differences
//!   x_i = clip((d_i − θ) / s_{i−1}, −1, 1), with s_{i−1} = 1.4826 · MAD of
//!   the pairs before i (predictable, so the bets are fair), averaged over
//!   the bets λ ∈ ±[`LAMBDAS`] (Waudby-Smith & Ramdas, "Estimating means of
//!   bounded random variables by betting", JRSS B 2024). For any distribution
//!   symmetric about θ, E[x_i | past] = 0 whatever its tails, so it keeps its
//!   level with outliers and multimodal runs where the t-tests might not, and
//!   keeps deciding when one outlier has inflated the standard deviation.
//!
//! Both parts of the e-process are monotone on each side of the sample mean
//! (the t-part in |t|, each bet in θ), so the interval [L, U] with L from
//! the lower-side bets and U from the upper-side ones contains every θ that
//! E has not rejected, found by bisection.
//!
//! Verdicts, per metric, at level α (each claim, slower, faster or
//! equivalent, is wrong with probability ≤ α however often it is read; the
//! caller, `analysis::sequential`, holds the slower and faster claims of a
//! whole summary to a false-discovery rate of α on top): slower or faster
//! when [L, U] excludes 0, equivalent when the one-sided bounds lie inside
//! ±ln(1 + margin), and nothing before [`MIN_PAIRS`] pairs.
//!
//! **Equivalence by two one-sided bounds** (TOST, Schuirmann, "A comparison
//! of the two one-sided tests procedure…", J. Pharmacokinet. Biopharm.
//! 1987; the fixed design's `stats::verdict` uses the same). A wrong claim
//! about a centre θ is always a miss on one side of it: with θ ≥ b, calling
//! it equivalent or faster needs an upper bound below θ; with θ = 0,
//! slower needs a lower bound above it and faster an upper one below. So
//! "equivalent" is read off bounds that each miss with probability ≤ α on
//! their own side — the t-part's k-th look at the one-sided level
//! α · SPEND · w_k (where the two-sided interval splits it between the
//! sides), the e-process as it is, whose Ville bound already holds for
//! either side alone — while slower and faster keep the two-sided interval.
//! The one-sided upper bound is below the two-sided one, so with θ ≥ b both
//! wrong claims lie in the event that the one-sided upper bound misses,
//! ≤ α · SPEND + α · (1 − SPEND) = α; with θ = 0 equivalence is right and
//! slower or faster needs the two-sided interval to miss, ≤ α; between them
//! only one side can be wrong. At the t-part's later looks the one-sided
//! critical |t| is 5–8% lower, 10–15% fewer pairs for the same decision.
//! [`Pairs::p_value`] is the matching anytime-valid p-value for "no
//! difference", for the error control over the whole summary.

mod evidence;
mod pairs;
mod sweep;
mod track;

pub use pairs::Pairs;
pub use track::Track;

/// Prior variances of the standardised effect in the t-part: from small
/// effects to QEMU-under-TCG's twentyfold slowdowns.
pub const GRID: [f64; 4] = [0.5, 4.0, 50.0, 1000.0];
/// The bets of the robust part, on each side.
pub const LAMBDAS: [f64; 3] = [0.2, 0.5, 0.8];
/// No verdict before this many pairs (the "3 runs per side").
pub const MIN_PAIRS: usize = 3;
/// The share of α spent on the look-wise t-intervals; the rest is the
/// e-process's.
pub const SPEND: f64 = 0.8;

/// The looks the t-part takes, as its index k = 1, 2, … in the schedule
/// (None where n is not one): every n from [`MIN_PAIRS`] to 6, then each
/// about a quarter past the one before — 8, 10, 13, 17, 22, 28, 35, 44,
/// 55, 69, 87, … — so that n = 20 is the 10th look, not the 18th.
pub fn look_index(n: usize) -> Option<usize> {
    let (mut at, mut k) = (MIN_PAIRS, 1);
    while at < n {
        at = next_look(at);
        k += 1;
    }
    (at == n).then_some(k)
}

fn next_look(n: usize) -> usize {
    if n < 6 {
        n + 1
    } else {
        (n * 5).div_ceil(4)
    }
}

/// The last look of the schedule at or before n (None before [`MIN_PAIRS`]).
pub fn last_look(n: usize) -> Option<usize> {
    if n < MIN_PAIRS {
        return None;
    }
    let mut at = MIN_PAIRS;
    while next_look(at) <= n {
        at = next_look(at);
    }
    Some(at)
}

/// The share of the t-intervals' α spent at n: 2 / ((k + 1)(k + 2)) at the
/// schedule's k-th look (1/3, 1/6, 1/10, … at n = 3, 4, 5, …), which sums
/// to 1; nothing between looks.
pub fn look_share(n: usize) -> f64 {
    match look_index(n) {
        Some(k) => 2.0 / ((k + 1) as f64 * (k + 2) as f64),
        None => 0.0,
    }
}
/// Projections of the pairs needed stop here.
pub const MAX_PROJECTED: usize = crate::stats::MAX_RUNS_PER_SIDE;

/// A confidence-sequence interval for the centre of the log differences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
}

impl Interval {
    pub fn unbounded() -> Interval {
        Interval {
            lower: f64::NEG_INFINITY,
            upper: f64::INFINITY,
        }
    }
}

/// What the sequence says about one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// The centre is above 0 (the environment's values are larger).
    Above,
    /// Below 0.
    Below,
    /// Inside ±ln(1 + margin).
    Within,
    Open,
}

/// A centre to be excluded: the difference from 0 on either side, at the
/// two-sided level, or an end of the equivalence margin at the one-sided
/// level (what each claim needs; the module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub theta: f64,
    pub one_sided: bool,
}

impl Bound {
    pub fn two_sided(theta: f64) -> Bound {
        Bound {
            theta,
            one_sided: false,
        }
    }

    pub fn one_sided(theta: f64) -> Bound {
        Bound {
            theta,
            one_sided: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::evidence::{log_bf_t, look_t};
    use super::*;
    use crate::stats::tdist::student_t_upper_tail;
    use crate::stats::SplitMix64;

    /// The two-sided p-value of one look's t-test of "the centre is θ"
    /// (what [`Pairs::p_value`] computes in its sweep, checked against it).
    fn t_p(p: &Pairs, theta: f64) -> f64 {
        let n = p.len();
        let t2 = p.t2(theta);
        if t2 == 0.0 {
            return 1.0;
        }
        (2.0 * student_t_upper_tail(t2.sqrt(), (n - 1) as f64)).min(1.0)
    }

    fn normal(rng: &mut SplitMix64) -> f64 {
        // Box–Muller over a SplitMix64 stream: enough for these tests.
        let (a, b) = (rng.unit().max(1e-300), rng.unit());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }

    #[test]
    fn the_looks_are_every_n_to_six_then_a_quarter_apart_and_their_shares_sum_to_one() {
        let looks: Vec<usize> = (0..100).filter(|n| look_index(*n).is_some()).collect();
        assert_eq!(
            looks,
            [3, 4, 5, 6, 8, 10, 13, 17, 22, 28, 35, 44, 55, 69, 87]
        );
        for (k, n) in looks.iter().enumerate() {
            assert_eq!(look_index(*n), Some(k + 1));
        }
        assert_eq!((look_share(3), look_share(4)), (1.0 / 3.0, 1.0 / 6.0));
        assert_eq!((look_share(7), look_share(2)), (0.0, 0.0));
        // The first K shares telescope to 1 − 2 / (K + 2): never above 1.
        let total: f64 = (0..100).map(look_share).sum();
        assert!((total - (1.0 - 2.0 / 17.0)).abs() < 1e-12, "{total}");
        assert_eq!(
            (last_look(2), last_look(3), last_look(7)),
            (None, Some(3), Some(6))
        );
        assert_eq!(
            (last_look(21), last_look(22), last_look(99)),
            (Some(17), Some(22), Some(87))
        );
        // Between looks the t-part says nothing, and its interval then is
        // the e-process's alone.
        assert!(look_t(7, 0.05).is_infinite() && look_t(8, 0.05) < look_t(6, 0.05));
    }

    #[test]
    fn the_t_part_is_one_at_no_evidence_and_grows_with_t() {
        assert!(log_bf_t(5, 0.0) < 0.0);
        assert!(log_bf_t(5, 4.0) < log_bf_t(5, 16.0));
        assert!(log_bf_t(5, 16.0) < log_bf_t(5, f64::INFINITY));
        // Three clean pairs can reach 1/α = 20 for a large effect.
        assert!(log_bf_t(3, f64::INFINITY) > 20f64.ln());
        // Two cannot reach 1/0.05 · 14 (a 14-metric family).
        assert!(log_bf_t(2, f64::INFINITY) < 280f64.ln());
    }

    #[test]
    fn a_large_clean_effect_is_called_after_three_pairs_and_not_before() {
        let d = [0.69, 0.71, 0.70];
        assert_eq!(Pairs::new(&d[..2]).call(0.05, 0.05).0, Call::Open);
        let (call, iv) = Pairs::new(&d).call(0.05, 0.05);
        assert_eq!(call, Call::Above);
        assert!(
            iv.lower > 0.0 && iv.lower < 0.69 && iv.upper > 0.71,
            "{iv:?}"
        );
        let neg: Vec<f64> = d.iter().map(|x| -x).collect();
        assert_eq!(Pairs::new(&neg).call(0.05, 0.05).0, Call::Below);
    }

    #[test]
    fn tight_values_around_zero_are_equivalent_and_wide_ones_are_not() {
        let mut rng = SplitMix64(7);
        let tight: Vec<f64> = (0..12).map(|_| 0.005 * normal(&mut rng)).collect();
        assert_eq!(Pairs::new(&tight).call(0.05, 0.05).0, Call::Within);
        let wide: Vec<f64> = (0..12).map(|_| 0.2 * normal(&mut rng)).collect();
        assert_eq!(Pairs::new(&wide).call(0.05, 0.05).0, Call::Open);
    }

    #[test]
    fn an_interval_covers_the_bulk_of_the_values_not_one_outlier() {
        let mut d = vec![0.10, 0.11, 0.09, 0.10, 0.12, 0.10, 0.11, 0.09, 0.10];
        d.extend([0.11, 0.10, 0.09, 0.12, 0.10]);
        d.push(2.8); // one run 16× off
        let iv = Pairs::new(&d).interval(0.05);
        // The t-part alone is thrown by the outlier (its sd is 0.7); the
        // bets, on clipped values, still exclude 0.
        assert!(Pairs::new(&d).sd() > 0.5);
        assert!(iv.lower > 0.0, "{iv:?}");
        assert!(iv.lower < 0.1 && iv.upper > 0.1, "{iv:?}");
    }

    #[test]
    fn coverage_holds_at_every_look_not_just_the_last() {
        // Under "no effect" with normal noise: the share of sequences whose
        // interval ever excludes 0 within 40 looks stays below α.
        let mut rng = SplitMix64(11);
        let trials = 1000;
        let mut missed = 0;
        for _ in 0..trials {
            let mut d = Vec::new();
            for _ in 0..40 {
                d.push(0.05 * normal(&mut rng));
                if d.len() >= MIN_PAIRS {
                    let iv = Pairs::new(&d).interval(0.05);
                    if iv.lower > 0.0 || iv.upper < 0.0 {
                        missed += 1;
                        break;
                    }
                }
            }
        }
        assert!(missed <= trials * 5 / 100, "{missed} of {trials}");
        // And it is not trivially conservative: some sequences come close.
        assert!(missed > 0 || trials < 100);
    }

    #[test]
    fn excludes_agrees_with_the_interval() {
        let mut rng = SplitMix64(5);
        for k in 0..200 {
            let n = 3 + k % 10;
            let d: Vec<f64> = (0..n).map(|_| 0.03 + 0.05 * normal(&mut rng)).collect();
            let p = Pairs::new(&d);
            let iv = p.interval(0.05);
            for theta in [-0.05, 0.0, 0.0488, 0.1] {
                let inside = iv.lower < theta && theta < iv.upper;
                // Up to the bisection's tolerance.
                let near = (theta - iv.lower).abs() < 1e-6 || (theta - iv.upper).abs() < 1e-6;
                assert!(
                    near || p.excludes(Bound::two_sided(theta), 0.05) != inside,
                    "{d:?} {theta} {iv:?}"
                );
            }
            assert_eq!(p.prefix(n).interval(0.05), iv);
        }
    }

    #[test]
    fn one_sided_bounds_lie_inside_the_interval_and_agree_with_excludes() {
        let mut rng = SplitMix64(31);
        for k in 0..200 {
            let n = 3 + k % 30;
            let d: Vec<f64> = (0..n).map(|_| 0.01 + 0.04 * normal(&mut rng)).collect();
            let p = Pairs::new(&d);
            let (two, one) = (p.interval(0.05), p.interval_at(0.05, true));
            assert!(
                two.lower <= one.lower && one.upper <= two.upper,
                "{d:?}: {two:?} {one:?}"
            );
            for theta in [-0.0488, 0.0488] {
                let inside = one.lower < theta && theta < one.upper;
                let near = (theta - one.lower).abs() < 1e-6 || (theta - one.upper).abs() < 1e-6;
                assert!(
                    near || p.excludes(Bound::one_sided(theta), 0.05) != inside,
                    "{d:?} {theta} {one:?}"
                );
            }
        }
    }

    #[test]
    fn equivalence_reads_the_one_sided_bounds_and_a_difference_the_two_sided_ones() {
        // 10 pairs of sd 2.5% around 1.5%: the two-sided interval reaches
        // past +4.88% (ln 1.05), the one-sided bounds do not.
        let d = [
            0.03872, -0.00872, 0.03872, -0.00872, 0.03872, -0.00872, 0.03872, -0.00872, 0.03872,
            -0.00872,
        ];
        let p = Pairs::new(&d);
        let b = 0.05f64.ln_1p();
        let (two, one) = (p.interval(0.05), p.interval_at(0.05, true));
        assert!(two.upper > b, "{two:?}");
        assert!(one.upper < b && one.lower > -b, "{one:?}");
        assert_eq!(p.call(0.05, 0.05).0, Call::Within);
        // A difference is not claimed on one-sided bounds: a mean as far
        // from 0 as the one-sided bound but not the two-sided one stays open.
        let shifted: Vec<f64> = d.iter().map(|x| x - one.lower + 1e-4).collect();
        let q = Pairs::new(&shifted);
        assert!(q.interval_at(0.05, true).lower > 0.0);
        assert!(q.interval(0.05).lower < 0.0);
        assert_ne!(q.call(0.05, 0.05).0, Call::Above);
    }

    #[test]
    fn the_whole_e_process_is_at_least_either_sides_evidence() {
        let d = [0.2, 0.25, 0.18, 0.22, 0.3];
        let p = Pairs::new(&d);
        assert!(p.log_e(0.0) >= p.log_evidence(0.0, -1.0) - 1e-12);
        assert!(p.log_e(0.5) >= p.log_evidence(0.5, 1.0) - 1e-12);
        assert!(p.log_e(0.0) > 20f64.ln());
        assert!(p.log_e(p.mean()) < 0.0);
    }

    #[test]
    fn projections_shrink_with_a_larger_effect_and_grow_with_noise() {
        let mut rng = SplitMix64(3);
        let small: Vec<f64> = (0..5).map(|_| 0.1 + 0.05 * normal(&mut rng)).collect();
        let large: Vec<f64> = small.iter().map(|x| x * 4.0).collect();
        let (a, b) = (
            Pairs::new(&small).pairs_to_decide(0.05, 0.05),
            Pairs::new(&large).pairs_to_decide(0.05, 0.05),
        );
        assert!(b.unwrap() <= a.unwrap(), "{a:?} {b:?}");
        // At the margin's edge nothing decides it.
        let edge: Vec<f64> = (0..5).map(|_| 0.0244 + 0.3 * normal(&mut rng)).collect();
        let p = Pairs::new(&edge).pairs_to_decide(0.05, 0.05);
        assert!(p.is_none() || p.unwrap() > 20, "{p:?}");
    }

    #[test]
    fn the_one_pass_sweep_agrees_with_every_prefix() {
        let mut rng = SplitMix64(17);
        for k in 0..300 {
            let n = 3 + k % 25;
            let shift = [0.0, 0.02, 0.1, -0.3][k % 4];
            let mut d: Vec<f64> = (0..n).map(|_| shift + 0.05 * normal(&mut rng)).collect();
            if k % 7 == 0 {
                d[n / 2] += 1.1; // an outlier
            }
            let p = Pairs::new(&d);
            let bounds = [
                Bound::two_sided(0.0),
                Bound::one_sided(-0.0488),
                Bound::one_sided(0.0488),
            ];
            let fast = p.exclusions(&bounds, 0.05 / 3.0);
            for (j, bound) in bounds.iter().enumerate() {
                let theta = bound.theta;
                let (mut from_above, mut from_below) = (false, false);
                for m in MIN_PAIRS..=n {
                    let q = p.prefix(m);
                    let ex = q.excludes(*bound, 0.05 / 3.0);
                    from_above |= ex && q.mean() > theta;
                    from_below |= ex && q.mean() < theta;
                }
                assert_eq!(fast[j], (from_above, from_below), "{d:?} θ = {theta}");
            }
            // The p-value: each look's t-test and e-process, by prefix.
            let mut slow: f64 = 1.0;
            for m in MIN_PAIRS..=n {
                let q = p.prefix(m);
                if look_share(m) > 0.0 {
                    slow = slow.min(t_p(&q, 0.0) / (SPEND * look_share(m)));
                }
                slow = slow.min((-q.log_e(0.0)).exp() / (1.0 - SPEND));
            }
            let fast = p.p_value(0.05);
            if slow <= 0.05 {
                assert!(
                    (fast - slow).abs() <= 1e-9 * slow,
                    "{d:?}: {fast} vs {slow}"
                );
            } else {
                assert_eq!(fast, 1.0, "{d:?}: {slow}");
            }
        }
    }

    #[test]
    fn a_track_fed_pair_by_pair_equals_the_pairs_read_afresh_to_the_bit() {
        let mut rng = SplitMix64(23);
        for k in 0..400 {
            let n = 1 + k % 60;
            let shift = [0.0, 0.02, 0.1, -0.3, 1.5][k % 5];
            let sd = [0.05, 0.01, 0.2, 0.0][k % 4];
            let mut d: Vec<f64> = (0..n).map(|_| shift + sd * normal(&mut rng)).collect();
            if k % 7 == 0 {
                d[n / 2] += 1.1; // an outlier
            }
            if k % 11 == 0 && n > 4 {
                d[n - 3] = d[n - 4]; // ties
            }
            let alpha = [0.05, 0.05 / 3.0, 0.01][k % 3];
            let thetas = [
                Bound::two_sided(0.0),
                Bound::one_sided(-0.0488),
                Bound::one_sided(0.0488),
            ];
            let mut track = Track::new(&thetas, alpha, 0.05);
            for m in 1..=n {
                track.push(d[m - 1]);
                let afresh = Pairs::new(&d[..m]);
                let t = track.pairs();
                assert_eq!(t.d, afresh.d);
                assert_eq!(t.scales, afresh.scales, "{d:?} at {m}");
                assert_eq!(t.mean.to_bits(), afresh.mean.to_bits(), "{d:?} at {m}");
                assert_eq!(t.sd.to_bits(), afresh.sd.to_bits(), "{d:?} at {m}");
                assert_eq!(
                    track.exclusions(),
                    &afresh.exclusions(&thetas, alpha)[..],
                    "{d:?} at {m}"
                );
                assert_eq!(
                    track.p_value().to_bits(),
                    afresh.p_value(0.05).to_bits(),
                    "{d:?} at {m}"
                );
            }
        }
    }
}
