//! The paired log differences of one metric and what the confidence
//! sequence says of them: intervals, exclusions, the p-value, the call and
//! the pairs a decision is projected to need.

use super::evidence::{log_bf_t, log_mean_exp, look_t_sided, one_side_evidence, whole_evidence};
use super::sweep::{capped, exclude_at_look, p_at_look, Look, Sweep};
use super::{
    last_look, look_index, Bound, Call, Interval, LAMBDAS, MAX_PROJECTED, MIN_PAIRS, SPEND,
};

/// The paired log differences of one metric, in pair order, with what the
/// e-processes need precomputed.
#[derive(Debug, Clone)]
pub struct Pairs {
    pub(super) d: Vec<f64>,
    pub(super) mean: f64,
    pub(super) sd: f64,
    /// s_{i−1} for each i (None before two earlier pairs).
    pub(super) scales: Vec<Option<f64>>,
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
        let (mean, sd) = crate::stats::mean_sd(d);
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
        (self.mean, self.sd) = crate::stats::mean_sd(&self.d);
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

    pub(super) fn t2(&self, theta: f64) -> f64 {
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
    pub(super) fn log_evidence(&self, theta: f64, side: f64) -> f64 {
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
        let (mean, sd) = crate::stats::mean_sd(d);
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
        let b = margin.ln_1p();
        self.pairs_to(alpha, |centre| (centre.abs(), b - centre.abs()))
    }

    /// [`Pairs::pairs_to_decide`] for a difference from 0 on one side alone
    /// (`above`: the centre above 0): for a metric whose looks have
    /// excluded 0 on that side, which can no longer be called equivalent
    /// (the exclusion is kept) nor different on the other side (that would
    /// contradict it), and whose call waits for a smaller p-value (the
    /// summary's false-discovery step held it back). None while the centre
    /// sits on the other side.
    pub fn pairs_to_differ(&self, alpha: f64, above: bool) -> Option<usize> {
        self.pairs_to(alpha, |centre| {
            // The gap from 0 on the other side is not sought.
            let gap = if (centre > 0.0) == above {
                centre.abs()
            } else {
                0.0
            };
            (gap, 0.0)
        })
    }

    /// The projection from both centres; `gaps(centre)` is what is sought
    /// there: (the gap from 0 for a difference, the gap from the margin's
    /// near end for an equivalence), a gap ≤ 0 not sought.
    fn pairs_to(&self, alpha: f64, gaps: impl Fn(f64) -> (f64, f64)) -> Option<usize> {
        let robust = {
            let mut v = self.d.clone();
            (median_of(&mut v), mad_scale(&self.d))
        };
        let project = |centre, sd| Self::project(self.d.len(), gaps(centre), sd, alpha);
        match (project(self.mean, self.sd), project(robust.0, robust.1)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn project(have: usize, (m, near_end): (f64, f64), sd: f64, alpha: f64) -> Option<usize> {
        if m.max(near_end) <= 0.0 {
            return None;
        }
        let sd = sd.max(1e-9);
        let bar = (2.0 / (alpha * (1.0 - SPEND))).ln();
        // A difference of m from 0 at the two-sided level, or of near_end
        // from the margin's near end at the one-sided one.
        let decides = |n: usize| {
            [(m, false), (near_end, true)]
                .iter()
                .any(|&(gap, one_sided)| {
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
