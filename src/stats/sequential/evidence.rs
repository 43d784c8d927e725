//! The evidence against a centre θ at one look: the critical |t| of the
//! look-wise t-intervals, and the e-process (the t-test's Bayes factor and
//! the bets) that [`super`]'s module doc describes.

use super::{look_share, GRID, MIN_PAIRS, SPEND};
use crate::stats::tdist::student_t_quantile;

/// The critical |t| of look n at level α, split between the sides or all
/// on one side.
pub(super) fn look_t_sided(n: usize, alpha: f64, one_sided: bool) -> f64 {
    // look_t splits α · SPEND · w_n between the two sides: twice the level
    // puts α · SPEND · w_n on one side.
    look_t(n, if one_sided { 2.0 * alpha } else { alpha })
}

pub(super) fn log_mean_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + (xs.iter().map(|x| (x - m).exp()).sum::<f64>() / xs.len() as f64).ln()
}

/// The critical |t| of look n's two-sided t-test at α · SPEND · w_n,
/// remembered per (n, α): the scheduler asks for the same few many times.
pub(super) fn look_t(n: usize, alpha: f64) -> f64 {
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
pub(super) fn one_side_evidence(n: usize, t2: f64, log_bets: f64) -> f64 {
    log_mean_exp(&[log_bf_t(n, t2) + 0.5f64.ln(), log_bets + 0.25f64.ln()]) + 2f64.ln()
}

/// ln E(θ): the t-part and the mean of both sides' bets, weighted equally.
pub(super) fn whole_evidence(n: usize, t2: f64, log_up: f64, log_down: f64) -> f64 {
    log_mean_exp(&[log_bf_t(n, t2), log_mean_exp(&[log_up, log_down])])
}

/// ln of the t-mixture Bayes factor for n values with statistic t².
pub(super) fn log_bf_t(n: usize, t2: f64) -> f64 {
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
