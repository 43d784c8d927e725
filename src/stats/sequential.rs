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
//! Verdicts, per metric, at level α/m for a family of m headline metrics
//! (Bonferroni: the intervals cover all m at once, so the family-wise rate
//! of any wrong claim, slower, faster or equivalent, is ≤ α however often
//! they are read): slower or faster when [L, U] excludes 0, equivalent when
//! the one-sided bounds lie inside ±ln(1 + margin), and nothing before
//! [`MIN_PAIRS`] pairs.
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

use super::tdist::{student_t_quantile, student_t_upper_tail};

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

/// One look's statistics for one θ, as [`Pairs::sweep`] hands them on.
#[derive(Debug, Clone)]
struct Look {
    mean: f64,
    t2: f64,
    /// ln of the wealth of each bet that the centre is above θ, and below.
    up: [f64; LAMBDAS.len()],
    down: [f64; LAMBDAS.len()],
}

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

/// The critical |t| of look n at level α, split between the sides or all
/// on one side.
fn look_t_sided(n: usize, alpha: f64, one_sided: bool) -> f64 {
    // look_t splits α · SPEND · w_n between the two sides: twice the level
    // puts α · SPEND · w_n on one side.
    look_t(n, if one_sided { 2.0 * alpha } else { alpha })
}

fn log_mean_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + (xs.iter().map(|x| (x - m).exp()).sum::<f64>() / xs.len() as f64).ln()
}

/// The critical |t| of look n's two-sided t-test at α · SPEND · w_n,
/// remembered per (n, α): the scheduler asks for the same few many times.
fn look_t(n: usize, alpha: f64) -> f64 {
    use std::cell::RefCell;
    thread_local! {
        // (α's bits, the critical values by n) for the few α in use.
        static CRIT: RefCell<Vec<(u64, Vec<f64>)>> = const { RefCell::new(Vec::new()) };
    }
    let compute = |n: usize| {
        let level = alpha * SPEND * look_share(n);
        if level > 0.0 {
            student_t_quantile(1.0 - level / 2.0, (n - 1) as f64)
        } else {
            // Not a look: the t-part claims nothing here.
            f64::INFINITY
        }
    };
    if n > 4096 {
        return compute(n);
    }
    CRIT.with(|c| {
        let mut c = c.borrow_mut();
        let bits = alpha.to_bits();
        let at = match c.iter().position(|(b, _)| *b == bits) {
            Some(at) => at,
            None => {
                c.push((bits, Vec::new()));
                c.len() - 1
            }
        };
        let table = &mut c[at].1;
        while table.len() <= n {
            let next = table.len();
            table.push(if next < MIN_PAIRS {
                f64::INFINITY
            } else {
                compute(next)
            });
        }
        table[n]
    })
}

/// ln of the evidence against θ on one side: the t-part (weight ½) and
/// the mean of the bets that the centre is on the other side (weight ½ · ½),
/// as a share of the whole e-process.
fn one_side_evidence(n: usize, t2: f64, log_bets: f64) -> f64 {
    log_mean_exp(&[log_bf_t(n, t2) + 0.5f64.ln(), log_bets + 0.25f64.ln()]) + 2f64.ln()
}

/// ln E(θ): the t-part and the mean of both sides' bets, weighted equally.
fn whole_evidence(n: usize, t2: f64, log_up: f64, log_down: f64) -> f64 {
    log_mean_exp(&[log_bf_t(n, t2), log_mean_exp(&[log_up, log_down])])
}

/// ln of the t-mixture Bayes factor for n values with statistic t².
fn log_bf_t(n: usize, t2: f64) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let nu = (n - 1) as f64;
    let terms: Vec<f64> = GRID
        .iter()
        .map(|g| {
            let a = 1.0 + n as f64 * g;
            if t2.is_infinite() {
                return 0.5 * nu * a.ln();
            }
            -0.5 * a.ln() + 0.5 * (nu + 1.0) * ((t2 / nu).ln_1p() - (t2 / (nu * a)).ln_1p())
        })
        .collect();
    log_mean_exp(&terms)
}

/// The paired log differences of one metric, in pair order, with what the
/// e-processes need precomputed.
#[derive(Debug, Clone)]
pub struct Pairs {
    d: Vec<f64>,
    mean: f64,
    sd: f64,
    /// s_{i−1} for each i (None before two earlier pairs).
    scales: Vec<Option<f64>>,
}

fn median_of(xs: &mut [f64]) -> f64 {
    let n = xs.len();
    let (below, mid, _) = xs.select_nth_unstable_by(n / 2, f64::total_cmp);
    let mid = *mid;
    if n % 2 == 1 {
        mid
    } else {
        // The largest of the lower half, beside the middle.
        let lower = below.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        (lower + mid) / 2.0
    }
}

fn mad_scale(xs: &[f64]) -> f64 {
    mad_scale_in(xs, &mut Vec::with_capacity(xs.len()))
}

/// 1.4826 · MAD of `xs`, in `buf` (reused across calls).
fn mad_scale_in(xs: &[f64], buf: &mut Vec<f64>) -> f64 {
    buf.clear();
    buf.extend_from_slice(xs);
    let m = median_of(buf);
    for (b, x) in buf.iter_mut().zip(xs) {
        *b = (x - m).abs();
    }
    1.4826 * median_of(buf)
}

/// s_{i−1}, the scale pair i's bets are made on: 1.4826 · MAD of the pairs
/// before it (None before two), in `buf`.
fn scale_before(d: &[f64], i: usize, buf: &mut Vec<f64>) -> Option<f64> {
    (i >= 2).then(|| {
        // A floor keeps identical values from betting on a zero-width
        // scale.
        mad_scale_in(&d[..i], buf).max(1e-6 * (1.0 + d[i - 1].abs()))
    })
}

impl Pairs {
    pub fn new(d: &[f64]) -> Pairs {
        let n = d.len();
        let (mean, sd) = super::mean_sd(d);
        let mut buf = Vec::with_capacity(n);
        let scales = (0..n).map(|i| scale_before(d, i, &mut buf)).collect();
        Pairs {
            d: d.to_vec(),
            mean,
            sd,
            scales,
        }
    }

    /// Appends one pair: the same as [`Pairs::new`] over all of them (the
    /// scales are predictable, so the earlier ones stay as they are).
    pub fn push(&mut self, x: f64) {
        let i = self.d.len();
        self.d.push(x);
        let scale = scale_before(&self.d, i, &mut Vec::with_capacity(i));
        self.scales.push(scale);
        (self.mean, self.sd) = super::mean_sd(&self.d);
    }

    pub fn len(&self) -> usize {
        self.d.len()
    }

    pub fn is_empty(&self) -> bool {
        self.d.is_empty()
    }

    /// The sample mean of the differences.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    pub fn sd(&self) -> f64 {
        self.sd
    }

    fn t2(&self, theta: f64) -> f64 {
        let n = self.d.len() as f64;
        let diff = self.mean - theta;
        if self.sd > 0.0 {
            n * diff * diff / (self.sd * self.sd)
        } else if diff == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    }

    /// ln of the mean over the bets of one side (+1: betting the centre
    /// is above θ, −1: below).
    fn log_bets(&self, theta: f64, side: f64) -> f64 {
        let mut logs = [0.0f64; LAMBDAS.len()];
        for (x, s) in self.d.iter().zip(&self.scales) {
            let Some(s) = s else { continue };
            let z = ((x - theta) / s).clamp(-1.0, 1.0) * side;
            for (l, lam) in logs.iter_mut().zip(LAMBDAS) {
                *l += (lam * z).ln_1p();
            }
        }
        log_mean_exp(&logs)
    }

    /// ln of the part of E(θ) that grows as θ moves away from the data on
    /// `side` (−1: θ below the data, +1: above): the t-part (its weight ½)
    /// and the bets that the centre is on the other side (weight ½ · ½).
    fn log_evidence(&self, theta: f64, side: f64) -> f64 {
        one_side_evidence(self.d.len(), self.t2(theta), self.log_bets(theta, -side))
    }

    /// ln E(θ): the whole e-process for "the centre is θ" (t-part and all
    /// six bets), an e-value at any stopping time.
    pub fn log_e(&self, theta: f64) -> f64 {
        let (up, down) = (self.log_bets(theta, 1.0), self.log_bets(theta, -1.0));
        whole_evidence(self.d.len(), self.t2(theta), up, down)
    }

    /// The 1 − α confidence-sequence interval for the centre at this n:
    /// the look's t-interval (at α · SPEND · w_n) intersected with the
    /// e-process's (at α · (1 − SPEND)). Should the two not meet (each
    /// covers with high probability, so rarely), their hull: no claim the
    /// data contradict.
    pub fn interval(&self, alpha: f64) -> Interval {
        self.interval_at(alpha, false)
    }

    /// [`Pairs::interval`] with each end a one-sided bound at level α
    /// (`one_sided`): the interval equivalence is read from, 1 − 2α for the
    /// t-part's look.
    pub fn interval_at(&self, alpha: f64, one_sided: bool) -> Interval {
        let e = self.e_interval(alpha * (1.0 - SPEND));
        let Some(half) = self.t_half_width(alpha, one_sided) else {
            return e;
        };
        let t = Interval {
            lower: self.mean - half,
            upper: self.mean + half,
        };
        let (lower, upper) = (t.lower.max(e.lower), t.upper.min(e.upper));
        if lower <= upper {
            Interval { lower, upper }
        } else {
            Interval {
                lower: t.lower.min(e.lower),
                upper: t.upper.max(e.upper),
            }
        }
    }

    /// Half the width of this look's t-interval at α · SPEND · w_n, split
    /// between the sides or on each side alone (None before
    /// [`MIN_PAIRS`]).
    fn t_half_width(&self, alpha: f64, one_sided: bool) -> Option<f64> {
        let n = self.d.len();
        look_index(n)?;
        Some(look_t_sided(n, alpha, one_sided) * self.sd / (n as f64).sqrt())
    }

    /// The two-sided p-value of this look's t-test of "the centre is θ"
    /// (what [`Pairs::p_value`] computes in its sweep, checked against it).
    #[cfg(test)]
    fn t_p(&self, theta: f64) -> f64 {
        let n = self.d.len();
        let t2 = self.t2(theta);
        if t2 == 0.0 {
            return 1.0;
        }
        (2.0 * student_t_upper_tail(t2.sqrt(), (n - 1) as f64)).min(1.0)
    }

    /// An anytime-valid p-value for "the centre is 0" over every look
    /// these pairs have had: the smallest level at which some look's
    /// t-interval or the e-process excluded 0. By the union bound over the
    /// looks and Ville's inequality, P(p ≤ x) ≤ x under the null whenever
    /// the pairs stopped. Values above `cap` are given as 1 (not computed):
    /// Benjamini–Hochberg at level `cap` neither rejects nor counts them.
    pub fn p_value(&self, cap: f64) -> f64 {
        let mut p: f64 = 1.0;
        self.sweep(&[0.0], |n, look| {
            let [l] = look else { return };
            p_at_look(n, l, cap, &mut p);
        });
        capped(p, cap)
    }

    /// For each bound: whether a look n ≥ [`MIN_PAIRS`] of these pairs
    /// excluded its θ at level α while its mean was above θ, and while it
    /// was below — [`Pairs::excludes`] at every prefix, in one pass.
    pub fn exclusions(&self, bounds: &[Bound], alpha: f64) -> Vec<(bool, bool)> {
        let thetas: Vec<f64> = bounds.iter().map(|b| b.theta).collect();
        let mut out = vec![(false, false); bounds.len()];
        self.sweep(&thetas, |n, looks| {
            exclude_at_look(n, looks, bounds, alpha, &mut out)
        });
        out
    }

    /// Walks the looks n = MIN_PAIRS..=len once, handing `visit` each
    /// θ's statistics at that look: running sums, so a row's whole history
    /// costs O(n), not O(n²).
    fn sweep(&self, thetas: &[f64], mut visit: impl FnMut(usize, &[Look])) {
        let mut sweep = Sweep::new(thetas.len());
        for (i, scale) in self.scales.iter().enumerate() {
            if sweep.step(thetas, &self.d[..=i], *scale) {
                visit(i + 1, &sweep.looks);
            }
        }
    }

    /// The e-process's 1 − α confidence-sequence interval for the centre.
    fn e_interval(&self, alpha: f64) -> Interval {
        if self.d.len() < 2 {
            return Interval::unbounded();
        }
        let bar = (1.0 / alpha).ln();
        let reach = 25.0 + self.d.iter().map(|x| x.abs()).fold(0.0, f64::max);
        let lower = self.edge(bar, -1.0, reach);
        let upper = self.edge(bar, 1.0, reach);
        Interval { lower, upper }
    }

    /// The last θ on `side` of the mean that E has not rejected.
    fn edge(&self, bar: f64, side: f64, reach: f64) -> f64 {
        let far = self.mean + side * reach;
        if self.log_evidence(far, side) < bar {
            return side * f64::INFINITY;
        }
        let (mut inside, mut outside) = (self.mean, far);
        if self.log_evidence(inside, side) >= bar {
            // Even the mean is rejected (a bet far from the t-part's centre):
            // the edge is where evidence on this side starts, approached from
            // the other side's direction; keep the interval non-empty.
            return self.mean;
        }
        for _ in 0..60 {
            let mid = 0.5 * (inside + outside);
            if self.log_evidence(mid, side) >= bar {
                outside = mid;
            } else {
                inside = mid;
            }
            if (outside - inside).abs() < 1e-9 * (1.0 + inside.abs()) {
                break;
            }
        }
        outside
    }

    /// The first `n` pairs (the scales are predictable, so they are the
    /// same as when these were all there was).
    pub fn prefix(&self, n: usize) -> Pairs {
        let d = &self.d[..n];
        let (mean, sd) = super::mean_sd(d);
        Pairs {
            d: d.to_vec(),
            mean,
            sd,
            scales: self.scales[..n].to_vec(),
        }
    }

    /// Whether the interval at level α excludes θ: the same as comparing θ
    /// with [`Pairs::interval`]'s edge on θ's side, without the bisection.
    pub fn excludes(&self, bound: Bound, alpha: f64) -> bool {
        let theta = bound.theta;
        if self.d.len() < 2 || theta == self.mean {
            return false;
        }
        let n = self.d.len();
        if look_index(n).is_some()
            && self.t2(theta) >= look_t_sided(n, alpha, bound.one_sided).powi(2)
        {
            return true;
        }
        let side = if theta < self.mean { -1.0 } else { 1.0 };
        self.log_evidence(theta, side) >= (1.0 / (alpha * (1.0 - SPEND))).ln()
    }

    /// The call at level α with equivalence margin ln(1 + margin).
    pub fn call(&self, alpha: f64, margin: f64) -> (Call, Interval) {
        if self.d.len() < MIN_PAIRS {
            return (Call::Open, self.interval(alpha));
        }
        let iv = self.interval(alpha);
        let b = margin.ln_1p();
        let one = self.interval_at(alpha, true);
        let call = if iv.lower > 0.0 {
            Call::Above
        } else if iv.upper < 0.0 {
            Call::Below
        } else if one.lower > -b && one.upper < b {
            Call::Within
        } else {
            Call::Open
        };
        (call, iv)
    }

    /// Pairs in all that would decide this metric if the next ones looked
    /// like these (same mean and spread): the first n at which the look's
    /// t-interval or the e-process's t-part would exclude 0 or fit in the
    /// margin. None beyond
    /// [`MAX_PROJECTED`].
    /// The projection is made twice, from the mean and standard deviation
    /// and from the median and MAD (what the bets see when a run is an
    /// outlier), and the smaller kept.
    pub fn pairs_to_decide(&self, alpha: f64, margin: f64) -> Option<usize> {
        let robust = {
            let mut v = self.d.clone();
            (median_of(&mut v), mad_scale(&self.d))
        };
        let plain = Self::project(self.d.len(), self.mean, self.sd, alpha, margin);
        let robust = Self::project(self.d.len(), robust.0, robust.1, alpha, margin);
        match (plain, robust) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn project(have: usize, centre: f64, sd: f64, alpha: f64, margin: f64) -> Option<usize> {
        let b = margin.ln_1p();
        let m = centre.abs();
        if m.max(b - m) <= 0.0 {
            return None;
        }
        let sd = sd.max(1e-9);
        let bar = (2.0 / (alpha * (1.0 - SPEND))).ln();
        // A difference of m from 0 at the two-sided level, or of b − m from
        // the margin's near end at the one-sided one.
        let decides = |n: usize| {
            [(m, false), (b - m, true)].iter().any(|&(gap, one_sided)| {
                if gap <= 0.0 {
                    return false;
                }
                // t² of a difference of `gap` at n pairs of this spread.
                let t2 = |n: usize| n as f64 * gap * gap / (sd * sd);
                // The t-part decides at its last look by n (so this stays
                // monotone in n); beyond a few hundred pairs the e-process
                // decides first.
                let at = last_look(n).unwrap_or(n);
                (at <= 200 && t2(at) >= look_t_sided(at, alpha, one_sided).powi(2))
                    || log_bf_t(n, t2(n)) >= bar
            })
        };
        // Both tests only get closer as n grows at a fixed mean and spread:
        // double, then halve.
        let mut lo = have.max(MIN_PAIRS);
        if decides(lo) {
            return Some(lo);
        }
        let mut hi = lo;
        loop {
            hi = (hi * 2).min(MAX_PROJECTED);
            if decides(hi) {
                break;
            }
            if hi == MAX_PROJECTED {
                return None;
            }
            lo = hi;
        }
        // decides(lo) is false, decides(hi) true.
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if decides(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }
}

/// The running statistics of one pass over the pairs at each θ: what
/// [`Pairs::sweep`] carries from pair to pair, and [`Track`] from look to
/// look.
#[derive(Debug, Clone)]
struct Sweep {
    looks: Vec<Look>,
    sum: f64,
    sum_sq: f64,
}

impl Sweep {
    fn new(thetas: usize) -> Sweep {
        Sweep {
            looks: (0..thetas)
                .map(|_| Look {
                    mean: 0.0,
                    t2: 0.0,
                    up: [0.0; LAMBDAS.len()],
                    down: [0.0; LAMBDAS.len()],
                })
                .collect(),
            sum: 0.0,
            sum_sq: 0.0,
        }
    }

    /// Folds in the newest pair of `d` (the pairs so far), bet on at
    /// `scale`; whether that makes a look (n ≥ [`MIN_PAIRS`]), whose
    /// statistics are then in `self.looks`.
    fn step(&mut self, thetas: &[f64], d: &[f64], scale: Option<f64>) -> bool {
        let n = d.len();
        let x = d[n - 1];
        self.sum += x;
        self.sum_sq += x * x;
        for (l, theta) in self.looks.iter_mut().zip(thetas) {
            if let Some(s) = scale {
                let z = ((x - theta) / s).clamp(-1.0, 1.0);
                for (k, lam) in LAMBDAS.iter().enumerate() {
                    l.up[k] += (lam * z).ln_1p();
                    l.down[k] += (-lam * z).ln_1p();
                }
            }
        }
        if n < MIN_PAIRS {
            return false;
        }
        let mean = self.sum / n as f64;
        let var = ((self.sum_sq - n as f64 * mean * mean) / (n - 1) as f64).max(0.0);
        // The same spread as [`Pairs::new`]'s, up to rounding (the
        // two-pass sum decides when all values are equal).
        let sd = if var > 1e-24 * (1.0 + mean * mean) {
            var.sqrt()
        } else {
            super::mean_sd(d).1
        };
        for (l, theta) in self.looks.iter_mut().zip(thetas) {
            let diff = mean - theta;
            l.mean = mean;
            l.t2 = if sd > 0.0 {
                n as f64 * diff * diff / (sd * sd)
            } else if diff == 0.0 {
                0.0
            } else {
                f64::INFINITY
            };
        }
        true
    }
}

/// Look n of [`Pairs::exclusions`]: marks each θ its interval at level α
/// excludes, on the side its mean is.
fn exclude_at_look(
    n: usize,
    looks: &[Look],
    bounds: &[Bound],
    alpha: f64,
    out: &mut [(bool, bool)],
) {
    let bar = (1.0 / (alpha * (1.0 - SPEND))).ln();
    for ((l, bound), o) in looks.iter().zip(bounds).zip(out.iter_mut()) {
        let theta = bound.theta;
        if l.mean == theta {
            continue;
        }
        // The bets that the centre is on the mean's side of θ.
        let above = theta < l.mean;
        let bets = log_mean_exp(if above { &l.up } else { &l.down });
        let t_part =
            look_index(n).is_some() && l.t2 >= look_t_sided(n, alpha, bound.one_sided).powi(2);
        if t_part || one_side_evidence(n, l.t2, bets) >= bar {
            if above {
                o.0 = true;
            } else {
                o.1 = true;
            }
        }
    }
}

/// Look n of [`Pairs::p_value`] (its statistics at θ = 0): lowers `p` to
/// the level at which this look's t-test or the e-process excludes 0, where
/// that is below `cap`.
fn p_at_look(n: usize, l: &Look, cap: f64, p: &mut f64) {
    let e_bar = (1.0 / (cap * (1.0 - SPEND))).ln();
    if look_index(n).is_some() && l.t2 >= look_t(n, cap).powi(2) {
        let tail = 2.0 * student_t_upper_tail(l.t2.sqrt(), (n - 1) as f64);
        *p = p.min(tail / (SPEND * look_share(n)));
    }
    let log_e = whole_evidence(n, l.t2, log_mean_exp(&l.up), log_mean_exp(&l.down));
    if log_e >= e_bar {
        *p = p.min((-log_e).exp() / (1.0 - SPEND));
    }
}

/// [`Pairs::p_value`]'s answer from the smallest level found: 1 above `cap`.
fn capped(p: f64, cap: f64) -> f64 {
    if p <= cap {
        p
    } else {
        1.0
    }
}

/// One metric's sequence followed look by look, as the scheduler reads it
/// after every round: each new pair is folded into the running statistics
/// once, so a look costs O(n) (the new pair's scale, the mean and spread)
/// where [`Pairs::new`] with [`Pairs::exclusions`] and [`Pairs::p_value`]
/// redo every earlier look. The same arithmetic in the same order, so the
/// same answers to the bit (a test holds the two together).
#[derive(Debug, Clone)]
pub struct Track {
    pairs: Pairs,
    bounds: Vec<Bound>,
    thetas: Vec<f64>,
    alpha: f64,
    cap: f64,
    /// The statistics at `thetas`, for the exclusions, and at 0, for the
    /// p-value.
    sweep: Sweep,
    zero: Sweep,
    excluded: Vec<(bool, bool)>,
    /// The smallest level any look excluded 0 at so far (1: none).
    p: f64,
}

impl Track {
    /// No pairs yet; [`Track::exclusions`] will be [`Pairs::exclusions`]
    /// at `bounds` and level `alpha`, [`Track::p_value`] [`Pairs::p_value`]
    /// with `cap`.
    pub fn new(bounds: &[Bound], alpha: f64, cap: f64) -> Track {
        let thetas: Vec<f64> = bounds.iter().map(|b| b.theta).collect();
        Track {
            pairs: Pairs::new(&[]),
            bounds: bounds.to_vec(),
            alpha,
            cap,
            sweep: Sweep::new(thetas.len()),
            zero: Sweep::new(1),
            excluded: vec![(false, false); thetas.len()],
            thetas,
            p: 1.0,
        }
    }

    /// Adds the next pair and takes its look.
    pub fn push(&mut self, x: f64) {
        self.pairs.push(x);
        let n = self.pairs.len();
        let (d, scale) = (&self.pairs.d[..], self.pairs.scales[n - 1]);
        if self.sweep.step(&self.thetas, d, scale) {
            exclude_at_look(
                n,
                &self.sweep.looks,
                &self.bounds,
                self.alpha,
                &mut self.excluded,
            );
        }
        if self.zero.step(&[0.0], d, scale) {
            p_at_look(n, &self.zero.looks[0], self.cap, &mut self.p);
        }
    }

    /// The pairs so far.
    pub fn pairs(&self) -> &Pairs {
        &self.pairs
    }

    /// [`Pairs::exclusions`] of the pairs so far.
    pub fn exclusions(&self) -> &[(bool, bool)] {
        &self.excluded
    }

    /// [`Pairs::p_value`] of the pairs so far.
    pub fn p_value(&self) -> f64 {
        capped(self.p, self.cap)
    }
}

#[cfg(test)]
mod tests {
    use super::super::SplitMix64;
    use super::*;

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
                    slow = slow.min(q.t_p(0.0) / (SPEND * look_share(m)));
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
