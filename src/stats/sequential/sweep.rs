//! One pass over the pairs, look by look: the running statistics at each θ
//! ([`Sweep`]), and what a look says about the bounds to exclude and the
//! p-value, shared by [`super::Pairs`]' whole-history reads and
//! [`super::Track`]'s pair-by-pair ones.

use super::evidence::{log_mean_exp, look_t, look_t_sided, one_side_evidence, whole_evidence};
use super::{look_index, look_share, Bound, LAMBDAS, MIN_PAIRS, SPEND};
use crate::stats::tdist::student_t_upper_tail;

/// One look's statistics for one θ, as [`super::Pairs::sweep`] hands them on.
#[derive(Debug, Clone)]
pub(super) struct Look {
    pub(super) mean: f64,
    pub(super) t2: f64,
    /// ln of the wealth of each bet that the centre is above θ, and below.
    pub(super) up: [f64; LAMBDAS.len()],
    pub(super) down: [f64; LAMBDAS.len()],
}

/// The running statistics of one pass over the pairs at each θ: what
/// [`super::Pairs::sweep`] carries from pair to pair, and [`super::Track`] from look to
/// look.
#[derive(Debug, Clone)]
pub(super) struct Sweep {
    pub(super) looks: Vec<Look>,
    sum: f64,
    sum_sq: f64,
}

impl Sweep {
    pub(super) fn new(thetas: usize) -> Sweep {
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
    pub(super) fn step(&mut self, thetas: &[f64], d: &[f64], scale: Option<f64>) -> bool {
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
        // The same spread as [`super::Pairs::new`]'s, up to rounding (the
        // two-pass sum decides when all values are equal).
        let sd = if var > 1e-24 * (1.0 + mean * mean) {
            var.sqrt()
        } else {
            crate::stats::mean_sd(d).1
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

/// Look n of [`super::Pairs::exclusions`]: marks each θ its interval at level α
/// excludes, on the side its mean is.
pub(super) fn exclude_at_look(
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

/// Look n of [`super::Pairs::p_value`] (its statistics at θ = 0): lowers `p` to
/// the level at which this look's t-test or the e-process excludes 0, where
/// that is below `cap`.
pub(super) fn p_at_look(n: usize, l: &Look, cap: f64, p: &mut f64) {
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

/// [`super::Pairs::p_value`]'s answer from the smallest level found: 1 above `cap`.
pub(super) fn capped(p: f64, cap: f64) -> f64 {
    if p <= cap {
        p
    } else {
        1.0
    }
}
