//! `sysbench.rand` for scripts: each Lua state's own generator and the
//! distributions of sysbench 1.0.20 (`uniform`, `gaussian`, `special`,
//! `pareto`, and `default` by `--rand-type`), plus `zipfian` and
//! `varstring` as later sysbench releases define them, the `#`/`@`
//! templates of `rand.string`, and `unique` values shared by every thread.

use crate::engine::FastRng;
use crate::workload::oltp::rand::{Dist, Unique};

/// What every state's generator shares: the options and the unique sequence.
pub struct RandConfig {
    /// `--rand-type`'s distribution, for `sysbench.rand.default`.
    pub default: Dist,
    /// `--rand-spec-pct`, `--rand-spec-res`: `sysbench.rand.special`'s shape.
    pub special: Dist,
    /// `--rand-pareto-h`.
    pub pareto_h: f64,
    /// `--rand-zipfian-exp`.
    pub zipf_exp: f64,
    /// `--rand-seed`, 0: from the clock.
    pub seed: u64,
    pub unique: Unique,
}

impl RandConfig {
    /// A generator for the state of thread `tid` (the main state is
    /// `u64::MAX`): seeded from `--rand-seed` when given, so two runs with
    /// the same seed draw the same values.
    pub fn generator(&self, tid: u64) -> FastRng {
        FastRng::new(self.seed ^ (tid.wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
}

/// `a..=b` as sysbench takes it: numbers converted to unsigned 32-bit, and
/// a reversed range read as the single value `a` (sysbench's arithmetic
/// would wrap; a script that does this has a bug either way).
fn range(a: f64, b: f64) -> (u64, u64) {
    let a = a.max(0.0).min(u32::MAX as f64) as u64;
    let b = b.max(0.0).min(u32::MAX as f64) as u64;
    (a, b.max(a))
}

pub fn draw(dist: Dist, rng: &mut FastRng, a: f64, b: f64) -> u64 {
    let (a, b) = range(a, b);
    dist.draw(rng, a, b)
}

/// A Zipfian value in `a..=b` with exponent `e`, by rejection-inversion
/// (Hörmann and Derflinger, 1996), the method sysbench 1.1 uses.
pub fn zipfian(rng: &mut FastRng, e: f64, a: f64, b: f64) -> u64 {
    let (a, b) = range(a, b);
    let n = (b - a + 1) as f64;
    let h_integral = |x: f64| {
        let log_x = x.ln();
        helper2((1.0 - e) * log_x) * log_x
    };
    let h = |x: f64| (-e * x.ln()).exp();
    let h_integral_inverse = |x: f64| {
        let mut t = x * (1.0 - e);
        if t < -1.0 {
            t = -1.0;
        }
        (helper1(t) * x).exp()
    };
    let h_x1 = h_integral(1.5) - 1.0;
    let h_n = h_integral(n + 0.5);
    let s = 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0));
    // Bounded: the acceptance rate is high for every exponent; a pathological
    // one falls back to a uniform draw rather than loop.
    for _ in 0..1000 {
        let u = h_n + rng.unit() * (h_x1 - h_n);
        let x = h_integral_inverse(u);
        let k = ((x + 0.5) as u64).clamp(1, n as u64);
        let kf = k as f64;
        if kf - x <= s || u >= h_integral(kf + 0.5) - h(kf) {
            return a + k - 1;
        }
    }
    a + rng.below(n as u64)
}

/// log(1 + x) / x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (exp(x) - 1) / x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

/// `sysbench.rand.string`: `#` becomes a digit, `@` a lower-case letter.
pub fn string(rng: &mut FastRng, template: &[u8]) -> Vec<u8> {
    template
        .iter()
        .map(|&c| match c {
            b'#' => b'0' + rng.below(10) as u8,
            b'@' => b'a' + rng.below(26) as u8,
            other => other,
        })
        .collect()
}

/// `sysbench.rand.varstring`: `min..=max` characters between '0' and 'z'.
pub fn varstring(rng: &mut FastRng, min: f64, max: f64) -> Vec<u8> {
    let (min, max) = range(min, max);
    // Bounded: a script asking for gigabytes gets an error from the caller.
    let len = min + rng.below(max - min + 1);
    (0..len)
        .map(|_| b'0' + rng.below(u64::from(b'z' - b'0') + 1) as u8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipfian_stays_in_range_and_favours_the_low_end() {
        let mut rng = FastRng::new(7);
        let mut ones = 0;
        for _ in 0..20_000 {
            let x = zipfian(&mut rng, 0.8, 1.0, 1000.0);
            assert!((1..=1000).contains(&x), "{x}");
            ones += u32::from(x == 1);
        }
        // P(1) for s = 0.8 over 1000 values is about 1/H(1000, 0.8) = 0.055.
        assert!((800..1400).contains(&ones), "{ones}");
        assert_eq!(zipfian(&mut rng, 0.8, 5.0, 5.0), 5);
    }

    #[test]
    fn templates_and_varstrings() {
        let mut rng = FastRng::new(8);
        let s = string(&mut rng, b"##-@@x");
        assert_eq!(s.len(), 6);
        assert!(s[0].is_ascii_digit() && s[1].is_ascii_digit() && s[2] == b'-');
        assert!(s[3].is_ascii_lowercase() && s[5] == b'x');
        for _ in 0..1000 {
            let v = varstring(&mut rng, 3.0, 7.0);
            assert!((3..=7).contains(&v.len()));
            assert!(v.iter().all(|&c| (b'0'..=b'z').contains(&c)));
        }
    }
}
