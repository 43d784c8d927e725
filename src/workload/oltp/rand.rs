//! sysbench's random choices for the OLTP tests: the id distributions of
//! `--rand-type` (special, uniform, gaussian, pareto), the `###########-...`
//! digit strings of the `c` and `pad` columns, and `sysbench.rand.unique`.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::engine::FastRng;

/// 10 groups of 11 digits separated by dashes: 119 characters.
pub const C_TEMPLATE: &str = "###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
/// 5 groups: 59 characters.
pub const PAD_TEMPLATE: &str = "###########-###########-###########-###########-###########";

/// The distribution of `sysbench.rand.default`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    Uniform,
    /// Mean of `iter` uniform draws (sysbench's `--rand-gaussian` is a
    /// central-limit approximation, not a Box-Muller normal).
    Gaussian,
    /// 1.0.20's default: `res` percent of the draws fall on `pct` percent
    /// of the values, a narrow band in the middle of the range; the rest
    /// are the gaussian approximation, also centred. With 1% and 75% over
    /// 1..=10000, three quarters of the ids are in 4974..=5051 (sysbench
    /// places the hot values with the same uniform number that chose the
    /// branch, so only the upper three quarters of its 1% band are hit) and
    /// none below about 1800.
    Special {
        pct: f64,
        res: f64,
    },
    Pareto {
        h: f64,
    },
}

/// Iterations of the gaussian approximation, sysbench's default.
const GAUSS_ITER: u32 = 12;

impl Dist {
    /// A value in `a..=b` (a <= b).
    pub fn draw(self, rng: &mut FastRng, a: u64, b: u64) -> u64 {
        let span = b - a + 1;
        match self {
            Dist::Uniform => a + rng.below(span),
            Dist::Gaussian => {
                let sum: f64 = (0..GAUSS_ITER).map(|_| rng.unit()).sum();
                a + (sum * span as f64 / GAUSS_ITER as f64) as u64
            }
            Dist::Special { pct, res } => {
                let t = (b - a) as f64;
                // One uniform number picks the branch (the first
                // (100 - res)% of an interval stretched to t * 100/(100 - res)
                // is gaussian) and, in the hot branch, the value too.
                let u = rng.unit();
                if u * t * (100.0 / (100.0 - res)) < t {
                    let sum: f64 = (0..GAUSS_ITER).map(|_| rng.unit()).sum();
                    return a + (sum * t / GAUSS_ITER as f64) as u64;
                }
                let band = t * pct / 100.0;
                let x = u * (band + 1.0) + t / 2.0 - t * pct / 200.0;
                a + (x as u64).min(b - a)
            }
            Dist::Pareto { h } => {
                let power = h.ln() / (1.0 - h).ln();
                let x = (span as f64 * rng.unit().powf(power)) as u64;
                a + x.min(span - 1)
            }
        }
    }
}

/// Fills `template`'s `#` with random digits.
pub fn digits(rng: &mut FastRng, template: &str) -> String {
    template
        .bytes()
        .map(|b| {
            if b == b'#' {
                char::from(b'0' + rng.below(10) as u8)
            } else {
                char::from(b)
            }
        })
        .collect()
}

/// `sysbench.rand.unique`: distinct 32-bit values across all threads, in a
/// scattered order (an odd multiplier is a bijection modulo 2^32).
pub struct Unique {
    next: AtomicU32,
}

impl Unique {
    pub fn new(seed: u32) -> Unique {
        Unique {
            next: AtomicU32::new(seed),
        }
    }

    pub fn next(&self) -> u32 {
        self.next
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_have_sysbench_lengths() {
        let mut rng = FastRng::new(1);
        let c = digits(&mut rng, C_TEMPLATE);
        assert_eq!(c.len(), 119);
        assert_eq!(digits(&mut rng, PAD_TEMPLATE).len(), 59);
        assert!(c
            .split('-')
            .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
    }

    #[test]
    fn every_distribution_stays_in_range() {
        let mut rng = FastRng::new(2);
        for d in [
            Dist::Uniform,
            Dist::Gaussian,
            Dist::Special {
                pct: 1.0,
                res: 75.0,
            },
            Dist::Pareto { h: 0.2 },
        ] {
            for _ in 0..10_000 {
                let x = d.draw(&mut rng, 1, 1000);
                assert!((1..=1000).contains(&x), "{d:?} gave {x}");
            }
            assert_eq!(d.draw(&mut rng, 7, 7), 7);
        }
    }

    /// The shape Debian's sysbench 1.0.20 gives `sysbench.rand.default(1,
    /// 10000)` on its defaults (200000 draws printed by a Lua script): 76.1%
    /// in 4974..=5051, 0.3% in 4950..=4973, the rest centred at 5002 with a
    /// standard deviation of 853, the smallest 1781 and the largest 8157.
    #[test]
    fn special_has_sysbench_1_0_20s_shape() {
        let mut rng = FastRng::new(3);
        let d = Dist::Special {
            pct: 1.0,
            res: 75.0,
        };
        let v: Vec<u64> = (0..200_000).map(|_| d.draw(&mut rng, 1, 10_000)).collect();
        let share = |lo: u64, hi: u64| {
            v.iter().filter(|&&x| (lo..=hi).contains(&x)).count() as f64 / v.len() as f64
        };
        let hot = share(4974, 5051);
        assert!((0.75..0.77).contains(&hot), "hot band {hot}");
        assert!(share(4950, 4973) < 0.006, "{}", share(4950, 4973));
        assert!(share(1, 1500) == 0.0 && share(8500, 10_000) == 0.0);
        let rest: Vec<f64> = v
            .iter()
            .filter(|&&x| !(4974..=5051).contains(&x))
            .map(|&x| x as f64)
            .collect();
        let mean = rest.iter().sum::<f64>() / rest.len() as f64;
        let sd = (rest.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / rest.len() as f64).sqrt();
        assert!((4950.0..5050.0).contains(&mean), "mean {mean}");
        assert!((800.0..900.0).contains(&sd), "sd {sd}");
    }

    #[test]
    fn special_with_every_draw_hot_stays_in_its_band() {
        let mut rng = FastRng::new(4);
        let d = Dist::Special {
            pct: 10.0,
            res: 100.0,
        };
        for _ in 0..10_000 {
            let x = d.draw(&mut rng, 1, 1000);
            assert!((450..=551).contains(&x), "{x}");
        }
    }

    #[test]
    fn unique_values_do_not_repeat() {
        let u = Unique::new(12345);
        let mut seen: Vec<u32> = (0..10_000).map(|_| u.next()).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 10_000);
    }
}
