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
    /// `pct` percent of the values (the lowest ids) get `res` percent of
    /// the draws; 1.0.20's default with 1% and 75%.
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
                let sum: u64 = (0..GAUSS_ITER).map(|_| rng.below(span)).sum();
                a + sum / GAUSS_ITER as u64
            }
            Dist::Special { pct, res } => {
                let hot = ((span as f64 * pct / 100.0) as u64).clamp(1, span);
                if rng.unit() * 100.0 < res || hot == span {
                    a + rng.below(hot)
                } else {
                    a + hot + rng.below(span - hot)
                }
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

    #[test]
    fn special_sends_three_quarters_to_one_percent() {
        let mut rng = FastRng::new(3);
        let n = 100_000;
        let hot = (0..n)
            .filter(|_| {
                Dist::Special {
                    pct: 1.0,
                    res: 75.0,
                }
                .draw(&mut rng, 1, 10_000)
                    <= 100
            })
            .count();
        let share = hot as f64 / n as f64;
        assert!((share - 0.75).abs() < 0.01, "{share}");
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
