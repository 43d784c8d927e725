//! Mode detection on one operation's pass results: are they one population,
//! or two or more separated ones (a host flipping between a fast and a slow
//! state), and if so where each sits and what share of the passes it holds.
//! Pure: numbers in, modes out.
//!
//! The method, on the logarithms of the values (so "apart" means a ratio):
//! the sorted values are cut where the two sides' summed squared deviations
//! are smallest (Otsu's split, exact in one dimension), and the cut is kept
//! only when all of these hold, then each side is examined the same way:
//! - each side holds at least [`MIN_SHARE`] of all values and at least
//!   [`MIN_POINTS`] of them, so a few slow passes stay in the p99, not a mode;
//! - the two sides' medians are at least [`MIN_RATIO`] apart, so two close
//!   states are never split (a difference of a few percent is not a face a
//!   reader needs to know about);
//! - Ashman's D, √2·|m₁−m₂| / √(s₁²+s₂²) with robust spreads (MAD), is at
//!   least [`MIN_ASHMAN_D`]: the sides are separated by more than their width,
//!   not one wide population cut in half.
//!
//! Fewer than [`MIN_VALUES`] values are not assessed: one mode is returned.

use crate::stats::sorted_median;

/// One mode: its median and the share of all values it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mode {
    pub value: f64,
    /// 0..=1; the shares of one call's modes sum to 1.
    pub share: f64,
}

pub const MIN_VALUES: usize = 20;
pub const MIN_SHARE: f64 = 0.10;
pub const MIN_POINTS: usize = 3;
pub const MIN_RATIO: f64 = 1.10;
pub const MIN_ASHMAN_D: f64 = 2.0;
/// The narrowest spread (in log units, ≈ 0.5%) a side is given, so that two
/// sides of nearly identical values do not get an infinite D.
const MIN_SPREAD: f64 = 0.005;
const MAX_MODES: usize = 3;

/// The modes of `values`, lowest first; one mode when not multimodal (or
/// when there are too few values to tell). Non-positive and non-finite
/// values are floored at the smallest positive one, as the log needs.
pub fn modes(values: &[f64]) -> Vec<Mode> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() {
        return Vec::new();
    }
    let floor = finite
        .iter()
        .copied()
        .filter(|&v| v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let floor = if floor.is_finite() { floor } else { 1.0 };
    let mut logs: Vec<f64> = finite.iter().map(|&v| v.max(floor).ln()).collect();
    logs.sort_by(f64::total_cmp);
    let n = logs.len();
    let mut groups = if n < MIN_VALUES {
        vec![&logs[..]]
    } else {
        split_all(&logs, n)
    };
    groups.sort_by(|a, b| sorted_median(a).total_cmp(&sorted_median(b)));
    groups
        .iter()
        .map(|g| Mode {
            value: sorted_median(g).exp(),
            share: g.len() as f64 / n as f64,
        })
        .collect()
}

/// Whether `modes` describes more than one population.
pub fn is_multimodal(modes: &[Mode]) -> bool {
    modes.len() > 1
}

/// Splits sorted `xs` recursively while a split passes every test.
fn split_all(xs: &[f64], total: usize) -> Vec<&[f64]> {
    let mut done = Vec::new();
    let mut todo = vec![xs];
    while let Some(g) = todo.pop() {
        match best_split(g, total) {
            Some(cut) if done.len() + todo.len() + 2 <= MAX_MODES => {
                todo.push(&g[..cut]);
                todo.push(&g[cut..]);
            }
            _ => done.push(g),
        }
    }
    done
}

/// The cut index of sorted `xs` minimising the within-sides sum of squares,
/// if that cut separates two modes by the tests above.
fn best_split(xs: &[f64], total: usize) -> Option<usize> {
    let min_side = MIN_POINTS.max((MIN_SHARE * total as f64).ceil() as usize);
    let n = xs.len();
    if n < 2 * min_side {
        return None;
    }
    // Prefix sums make each candidate cut O(1).
    let mut sum = vec![0.0; n + 1];
    let mut sq = vec![0.0; n + 1];
    for (i, &x) in xs.iter().enumerate() {
        sum[i + 1] = sum[i] + x;
        sq[i + 1] = sq[i] + x * x;
    }
    let sse = |a: usize, b: usize| {
        let k = (b - a) as f64;
        let s = sum[b] - sum[a];
        (sq[b] - sq[a]) - s * s / k
    };
    let cut = (min_side..=n - min_side)
        .min_by(|&i, &j| (sse(0, i) + sse(i, n)).total_cmp(&(sse(0, j) + sse(j, n))))?;
    let (lo, hi) = (&xs[..cut], &xs[cut..]);
    let (m1, m2) = (sorted_median(lo), sorted_median(hi));
    if m2 - m1 < MIN_RATIO.ln() {
        return None;
    }
    let (s1, s2) = (robust_spread(lo), robust_spread(hi));
    let d = std::f64::consts::SQRT_2 * (m2 - m1) / (s1 * s1 + s2 * s2).sqrt();
    (d >= MIN_ASHMAN_D).then_some(cut)
}

/// MAD scaled to a normal's standard deviation, floored at `MIN_SPREAD`.
fn robust_spread(sorted: &[f64]) -> f64 {
    let m = sorted_median(sorted);
    let mut dev: Vec<f64> = sorted.iter().map(|x| (x - m).abs()).collect();
    dev.sort_by(f64::total_cmp);
    (1.4826 * sorted_median(&dev)).max(MIN_SPREAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-normal noise (sum of uniforms from an LCG), so
    /// the tests need no random-number crate and never flake.
    struct Noise(u64);
    impl Noise {
        fn uniform(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
        /// Mean 0, standard deviation 1 (Irwin–Hall with 12 terms).
        fn normal(&mut self) -> f64 {
            (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
        }
    }

    fn population(noise: &mut Noise, centre: f64, rel_sd: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| centre * (1.0 + rel_sd * noise.normal()))
            .collect()
    }

    /// Interleaves so the input order says nothing about the modes.
    fn shuffle(noise: &mut Noise, mut v: Vec<f64>) -> Vec<f64> {
        for i in (1..v.len()).rev() {
            let j = (noise.uniform() * (i + 1) as f64) as usize;
            v.swap(i, j.min(i));
        }
        v
    }

    #[test]
    fn one_mode_is_one_mode() {
        let mut noise = Noise(1);
        for seed in 0..20 {
            noise.0 = seed;
            let v = population(&mut noise, 415.0, 0.03, 100);
            let m = modes(&v);
            assert_eq!(m.len(), 1, "seed {seed}: {m:?}");
            assert!(!is_multimodal(&m));
            assert_eq!(m[0].share, 1.0);
            assert!((m[0].value - 415.0).abs() < 10.0, "{m:?}");
        }
    }

    #[test]
    fn a_few_slow_outliers_are_not_a_mode() {
        let mut noise = Noise(7);
        let mut v = population(&mut noise, 415.0, 0.02, 95);
        v.extend([1200.0, 900.0, 2500.0, 700.0, 1500.0]);
        let m = modes(&v);
        assert_eq!(m.len(), 1, "{m:?}");
    }

    #[test]
    fn two_modes_sixty_forty() {
        let mut noise = Noise(3);
        for seed in 0..20 {
            noise.0 = seed;
            let mut v = population(&mut noise, 415.0, 0.03, 60);
            v.extend(population(&mut noise, 600.0, 0.03, 40));
            let v = shuffle(&mut noise, v);
            let m = modes(&v);
            assert_eq!(m.len(), 2, "seed {seed}: {m:?}");
            assert!(is_multimodal(&m));
            assert!((m[0].value - 415.0).abs() < 10.0, "{m:?}");
            assert!((m[1].value - 600.0).abs() < 15.0, "{m:?}");
            assert!((m[0].share - 0.6).abs() < 0.011, "{m:?}");
            assert!((m[1].share - 0.4).abs() < 0.011, "{m:?}");
            assert!((m.iter().map(|x| x.share).sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn two_close_modes_are_not_split() {
        // 415 and 440 (6% apart), each with 2% noise: one wide population
        // for any reader's purpose.
        let mut noise = Noise(5);
        for seed in 0..20 {
            noise.0 = seed;
            let mut v = population(&mut noise, 415.0, 0.02, 60);
            v.extend(population(&mut noise, 440.0, 0.02, 40));
            let m = modes(&shuffle(&mut noise, v));
            assert_eq!(m.len(), 1, "seed {seed}: {m:?}");
        }
        // Quiet but close: 415 and 435 with almost no noise still stay one.
        let mut v = vec![415.0; 60];
        v.extend(vec![435.0; 40]);
        assert_eq!(modes(&v).len(), 1);
    }

    #[test]
    fn three_modes_and_too_few_values() {
        let mut noise = Noise(11);
        let mut v = population(&mut noise, 400.0, 0.02, 40);
        v.extend(population(&mut noise, 600.0, 0.02, 30));
        v.extend(population(&mut noise, 1000.0, 0.02, 30));
        let m = modes(&shuffle(&mut noise, v));
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(m[0].value < m[1].value && m[1].value < m[2].value);
        // Ten values are not enough to claim two faces, however far apart.
        let mut few = vec![400.0; 6];
        few.extend(vec![800.0; 4]);
        assert_eq!(modes(&few).len(), 1);
        assert!(modes(&[]).is_empty());
        // Zeros (an op below the timer's resolution) do not break the log.
        assert_eq!(modes(&[0.0; 30]).len(), 1);
    }
}
