//! What a seeded simulation measured, with the simulation's own error: a
//! rate of k hits in n trials and its exact (Clopper–Pearson) one-sided 95%
//! bounds, so that a test's claim such as "wrong in at most 5%" is proved by
//! the bound at the trials it ran, not read off the point estimate. A test
//! then runs the trials its margin needs: a rate far from its limit is
//! proved by few, one near it needs many. A mean of per-trial shares (a
//! false-discovery proportion, the share of effects found) gets the
//! empirical Bernstein bound instead ([`Mean`]).

use std::fmt;

use super::regularized_incomplete_beta;

/// The one-sided level of each bound: the true rate lies below
/// [`Rate::upper`] (and above [`Rate::lower`]) with 95% confidence.
const LEVEL: f64 = 0.05;

/// `hits` of `trials`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub hits: usize,
    pub trials: usize,
}

impl Rate {
    pub fn new(hits: usize, trials: usize) -> Rate {
        assert!(hits <= trials && trials > 0, "{hits} of {trials}");
        Rate { hits, trials }
    }

    pub fn share(&self) -> f64 {
        self.hits as f64 / self.trials as f64
    }

    /// The rate p at which k or fewer hits in n trials has probability
    /// 5%: P(X ≤ k | p) = I_{1−p}(n − k, k + 1), falling in p.
    pub fn upper(&self) -> f64 {
        let (k, n) = (self.hits as f64, self.trials as f64);
        if self.hits == self.trials {
            return 1.0;
        }
        bisect(|p| regularized_incomplete_beta(n - k, k + 1.0, 1.0 - p) > LEVEL)
    }

    /// The rate p at which k or more hits has probability 5%:
    /// P(X ≥ k | p) = I_p(k, n − k + 1), rising in p.
    pub fn lower(&self) -> f64 {
        let (k, n) = (self.hits as f64, self.trials as f64);
        if self.hits == 0 {
            return 0.0;
        }
        bisect(|p| regularized_incomplete_beta(k, n - k + 1.0, p) < LEVEL)
    }

    /// Panics unless the upper bound proves the rate is at most `limit`.
    pub fn assert_at_most(&self, limit: f64, what: &str) {
        assert!(self.upper() <= limit, "{what}: {self}, not ≤ {limit}");
    }

    /// Panics unless the lower bound proves the rate is at least `limit`.
    pub fn assert_at_least(&self, limit: f64, what: &str) {
        assert!(self.lower() >= limit, "{what}: {self}, not ≥ {limit}");
    }
}

/// The p in [0, 1] where `below` turns from true to false.
fn bisect(below: impl Fn(f64) -> bool) -> f64 {
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if below(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The mean of per-trial values in [0, 1] (a false-discovery proportion,
/// a share of effects found), with one-sided 95% bounds on the true mean
/// by the empirical Bernstein inequality (Maurer & Pontil, "Empirical
/// Bernstein bounds and sample variance penalization", COLT 2009, Thm 4):
/// mean ± (√(2·V·ln(2/δ)/n) + 7·ln(2/δ)/(3(n − 1))), V the sample variance,
/// δ = 0.05 for each side. Valid for any distribution on [0, 1]; tight when
/// the values vary little, as a rare false claim's proportion does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mean {
    pub mean: f64,
    pub trials: usize,
    margin: f64,
}

impl Mean {
    pub fn new(values: &[f64]) -> Mean {
        let n = values.len();
        assert!(n >= 2 && values.iter().all(|v| (0.0..=1.0).contains(v)));
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let log = (2.0 / LEVEL).ln();
        let margin = (2.0 * var * log / n as f64).sqrt() + 7.0 * log / (3.0 * (n - 1) as f64);
        Mean {
            mean,
            trials: n,
            margin,
        }
    }

    pub fn upper(&self) -> f64 {
        (self.mean + self.margin).min(1.0)
    }

    pub fn lower(&self) -> f64 {
        (self.mean - self.margin).max(0.0)
    }

    /// Panics unless the upper bound proves the mean is at most `limit`.
    pub fn assert_at_most(&self, limit: f64, what: &str) {
        assert!(self.upper() <= limit, "{what}: {self}, not ≤ {limit}");
    }

    /// Panics unless the lower bound proves the mean is at least `limit`.
    pub fn assert_at_least(&self, limit: f64, what: &str) {
        assert!(self.lower() >= limit, "{what}: {self}, not ≥ {limit}");
    }
}

impl fmt::Display for Mean {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.2}% over {} trials (95% bounds {:.2}%..{:.2}%)",
            100.0 * self.mean,
            self.trials,
            100.0 * self.lower(),
            100.0 * self.upper()
        )
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} ({:.2}%; 95% bounds {:.2}%..{:.2}%)",
            self.hits,
            self.trials,
            100.0 * self.share(),
            100.0 * self.lower(),
            100.0 * self.upper()
        )
    }
}

#[test]
fn the_bounds_are_clopper_pearsons() {
    // 0 of n: the upper bound is 1 − 0.05^(1/n) (the "rule of three").
    let r = Rate::new(0, 300);
    assert!((r.upper() - (1.0 - 0.05f64.powf(1.0 / 300.0))).abs() < 1e-9);
    assert_eq!(r.lower(), 0.0);
    // n of n: the lower bound is 0.05^(1/n).
    let r = Rate::new(50, 50);
    assert!((r.lower() - 0.05f64.powf(1.0 / 50.0)).abs() < 1e-9);
    // 10 of 100: 0.1637 above and 0.0553 below (bisection on the exact
    // binomial sums).
    let r = Rate::new(10, 100);
    assert!((r.upper() - 0.1637).abs() < 5e-4, "{r}");
    assert!((r.lower() - 0.0553).abs() < 5e-4, "{r}");
    // 100 of 2000 does not prove ≤ 5%; 60 of 2000 does.
    assert!(Rate::new(100, 2000).upper() > 0.05);
    assert!(Rate::new(60, 2000).upper() <= 0.05);
}

#[test]
fn the_mean_bounds_are_empirical_bernsteins() {
    // Constant values: no variance, only the 7·ln(40)/(3(n − 1)) term.
    let m = Mean::new(&[0.5; 101]);
    let term = 7.0 * 40f64.ln() / 300.0;
    assert!((m.upper() - (0.5 + term)).abs() < 1e-12);
    assert!((m.lower() - (0.5 - term)).abs() < 1e-12);
    // Half 0, half 1: V = n/(4(n − 1)).
    let xs: Vec<f64> = (0..1000).map(|i| (i % 2) as f64).collect();
    let m = Mean::new(&xs);
    let v = 1000.0 / (4.0 * 999.0);
    let want = (2.0 * v * 40f64.ln() / 1000.0).sqrt() + 7.0 * 40f64.ln() / (3.0 * 999.0);
    assert!((m.upper() - 0.5 - want).abs() < 1e-12, "{m}");
    // The bounds stay in [0, 1].
    assert_eq!(Mean::new(&[0.0; 10]).lower(), 0.0);
    assert_eq!(Mean::new(&[1.0; 10]).upper(), 1.0);
}
