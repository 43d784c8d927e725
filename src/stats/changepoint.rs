//! Change points in a series by E-divisive means (Matteson & James, "A
//! nonparametric approach for multiple change point analysis of
//! multivariate data", JASA 2014), the method Hunter/Apache Otava and
//! MongoDB's performance CI use (Daly et al., ICPE 2020), with its
//! permutation test of significance, seeded and bounded.
//!
//! Divisive: in each segment of the series (at first the whole), the split
//! τ maximising the scaled energy distance between the points before and
//! after it, Q(τ) = mn/(m+n) · (2/(mn) Σ|xᵢ−yⱼ| − Σ|xᵢ−xₖ|/C(m,2) −
//! Σ|yⱼ−yₖ|/C(n,2)) (α = 1), with at least [`Settings::min_size`] points
//! on each side. The segment whose best split is largest is tested: its
//! points are permuted [`Settings::permutations`] times (stopping early
//! once the p-value cannot fall below the level) and p = (1 + #{Q* ≥ Q}) /
//! (1 + R). Below [`Settings::alpha`] the split is a change point and both
//! halves are searched again; otherwise the search ends. Each segment's
//! Q(τ) for every τ comes from running sums, O(L²) a segment.
//!
//! One addition of ours: a gradual drift also has a best split, so a
//! significant split is a *step* only when two levels fit its segment
//! better than a straight line does, by more than a line's own noise
//! would: D = RSS(line) − RSS(two levels at the best split) is tested
//! against its distribution under the line (a parametric bootstrap: the
//! fitted line plus normal noise of the series' standard deviation σ̂,
//! [`Settings::drift_draws`] draws, the best split searched again in
//! each), and the split is a step when p < [`Settings::drift_alpha`]. σ̂
//! is an estimate with ν degrees of freedom, so the statistic is D/σ̂²
//! and each draw divides by a σ̂² of its own, σ̂²·χ²_ν/ν (as a t test's
//! statistic divides by its own standard error).
//! The noise comes from outside the series (each comparison's own runs):
//! estimated from the series itself it leaves the test too weak to tell a
//! step from a drift at 20 comparisons. Without it, the residuals of the
//! line are permuted instead and the scale-free RSS(two levels)/RSS(line)
//! is the statistic. Otherwise the segment is reported as a [`Drift`] and
//! not split.

use super::splitmix::SplitMix64;

/// How the search runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The permutation test's level.
    pub alpha: f64,
    /// Permutations per test, at most.
    pub permutations: usize,
    /// The fewest points on either side of a change point.
    pub min_size: usize,
    pub seed: u64,
    /// The level of the test of a significant split's two levels against
    /// a straight line (a drift): below it, a step. A drift is called a
    /// step in about this share of the series where its split is
    /// significant (0.04: 5% would leave the simulation's bound no margin).
    pub drift_alpha: f64,
    /// The draws of that test, at most.
    pub drift_draws: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            alpha: 0.02,
            permutations: 499,
            min_size: 3,
            seed: 0x5EED,
            drift_alpha: 0.04,
            drift_draws: 199,
        }
    }
}

/// A change point: the series' level changes from `index` on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    pub index: usize,
    /// The permutation test's p-value.
    pub p: f64,
    /// The permutations it took.
    pub permutations: usize,
}

/// A segment `[start, end)` whose significant split fitted a straight
/// line as well as two levels: a drift, not a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    pub start: usize,
    pub end: usize,
    pub p: f64,
}

/// What the search found: change points by index, and drifts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    pub changes: Vec<ChangePoint>,
    pub drifts: Vec<Drift>,
}

/// E-divisive means over `xs` (see the module doc), the noise unknown.
pub fn e_divisive(xs: &[f64], s: &Settings) -> Found {
    e_divisive_noise(xs, None, s)
}

/// The standard deviation of a series' points about their level, from
/// outside the series, and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    pub sd: f64,
    pub df: f64,
}

/// E-divisive means over `xs` whose points have the standard deviation
/// `noise` (when known) about their level.
pub fn e_divisive_noise(xs: &[f64], noise: Option<Noise>, s: &Settings) -> Found {
    let mut rng = SplitMix64(s.seed);
    let mut found = Found::default();
    // Segments still to search, as [start, end).
    let mut open = vec![(0, xs.len())];
    loop {
        let best = open
            .iter()
            .enumerate()
            .filter_map(|(k, &(a, b))| best_split(&xs[a..b], s.min_size).map(|(t, q)| (k, t, q)))
            .max_by(|x, y| x.2.total_cmp(&y.2));
        let Some((k, t, q)) = best else { break };
        let (a, b) = open[k];
        let (p, used) = permutation_p(&xs[a..b], q, s, &mut rng);
        if p >= s.alpha {
            break;
        }
        open.remove(k);
        if is_step(&xs[a..b], noise, s, &mut rng) {
            found.changes.push(ChangePoint {
                index: a + t,
                p,
                permutations: used,
            });
            open.push((a, a + t));
            open.push((a + t, b));
        } else {
            found.drifts.push(Drift {
                start: a,
                end: b,
                p,
            });
        }
    }
    found.changes.sort_by_key(|c| c.index);
    found.drifts.sort_by_key(|d| d.start);
    found
}

/// The split τ (points `[0, τ)` against `[τ, L)`) maximising Q, and Q;
/// None when the segment is too short for two sides of `min_size`.
pub fn best_split(xs: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let l = xs.len();
    let min = min_size.max(2);
    if l < 2 * min {
        return None;
    }
    // Sum of all pairwise distances, and the running sums as τ moves.
    let d = |i: usize, j: usize| (xs[i] - xs[j]).abs();
    let total: f64 = (0..l)
        .flat_map(|i| (i + 1..l).map(move |j| (i, j)))
        .map(|(i, j)| d(i, j))
        .sum();
    let (mut within_left, mut between) = (0.0, 0.0);
    // between at τ = 0 is 0; moving point τ from right to left adds its
    // distances to the right and removes those to the left.
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..l - 1 {
        let p = tau - 1;
        let to_left: f64 = (0..p).map(|i| d(i, p)).sum();
        let to_right: f64 = (p + 1..l).map(|j| d(p, j)).sum();
        within_left += to_left;
        between += to_right - to_left;
        let (m, n) = (tau as f64, (l - tau) as f64);
        if tau < min || l - tau < min {
            continue;
        }
        let within_right = total - within_left - between;
        let e = 2.0 * between / (m * n)
            - within_left / (m * (m - 1.0) / 2.0)
            - within_right / (n * (n - 1.0) / 2.0);
        let q = m * n / (m + n) * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// The permutation p-value of a best split `q` of `xs`, and the
/// permutations it took: it stops once p cannot fall below α.
fn permutation_p(xs: &[f64], q: f64, s: &Settings, rng: &mut SplitMix64) -> (f64, usize) {
    let r = s.permutations.max(1);
    let p_of = |k: usize| (1 + k) as f64 / (1 + r) as f64;
    let mut ys = xs.to_vec();
    let mut at_least = 0;
    for done in 1..=r {
        shuffle(&mut ys, rng);
        let qp = best_split(&ys, s.min_size).map_or(f64::NEG_INFINITY, |(_, q)| q);
        if qp >= q {
            at_least += 1;
            // Not significant whatever the rest would show.
            if p_of(at_least) >= s.alpha {
                return (p_of(at_least), done);
            }
        }
    }
    (p_of(at_least), r)
}

/// Fisher–Yates.
fn shuffle(xs: &mut [f64], rng: &mut SplitMix64) {
    for i in (1..xs.len()).rev() {
        let j = (rng.unit() * (i + 1) as f64) as usize;
        xs.swap(i, j.min(i));
    }
}

/// Whether the best split of `xs` is a step, not a drift: the test of
/// two levels against a straight line of the module doc.
fn is_step(xs: &[f64], noise: Option<Noise>, s: &Settings, rng: &mut SplitMix64) -> bool {
    let fit = line_fit(xs);
    let mut residuals: Vec<f64> = xs.iter().zip(&fit).map(|(y, f)| y - f).collect();
    let split = |ys: &[f64]| best_split(ys, s.min_size).map_or(ys.len() / 2, |(t, _)| t);
    // Larger for a step: D/σ̂² with the noise known, −RSS share without.
    let statistic = |ys: &[f64], var: f64| {
        let line = rss_line(ys);
        let share = rss_share(ys, split(ys));
        match noise {
            Some(_) if share.is_finite() => line * (1.0 - share) / var,
            Some(_) => 0.0,
            None => -share,
        }
    };
    let var = noise.map_or(1.0, |n| n.sd * n.sd);
    let observed = statistic(xs, var);
    let r = s.drift_draws.max(1);
    let p_of = |k: usize| (1 + k) as f64 / (1 + r) as f64;
    let mut ys = vec![0.0; xs.len()];
    let mut at_least = 0;
    for _ in 0..r {
        let mut var_drawn = var;
        match noise {
            Some(n) => {
                for (y, f) in ys.iter_mut().zip(&fit) {
                    *y = f + n.sd * normal(rng);
                }
                var_drawn = var * chi_square(n.df, rng) / n.df.round().max(1.0);
            }
            None => {
                shuffle(&mut residuals, rng);
                for (i, y) in ys.iter_mut().enumerate() {
                    *y = fit[i] + residuals[i];
                }
            }
        }
        if statistic(&ys, var_drawn) >= observed {
            at_least += 1;
            if p_of(at_least) >= s.drift_alpha {
                return false;
            }
        }
    }
    p_of(at_least) < s.drift_alpha
}

/// A χ² draw of `df` (rounded) degrees of freedom, by its definition.
fn chi_square(df: f64, rng: &mut SplitMix64) -> f64 {
    let k = df.round().max(1.0) as usize;
    (0..k).map(|_| normal(rng).powi(2)).sum()
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut SplitMix64) -> f64 {
    let (u, v) = (rng.unit().max(1e-300), rng.unit());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// The least-squares straight line through `xs`, point by point.
fn line_fit(xs: &[f64]) -> Vec<f64> {
    let n = xs.len() as f64;
    let mx = (n - 1.0) / 2.0;
    let my = xs.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in xs.iter().enumerate() {
        sxy += (i as f64 - mx) * (y - my);
        sxx += (i as f64 - mx).powi(2);
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (0..xs.len())
        .map(|i| my + slope * (i as f64 - mx))
        .collect()
}

/// The residual sum of squares about the straight line.
fn rss_line(xs: &[f64]) -> f64 {
    xs.iter()
        .zip(line_fit(xs))
        .map(|(y, f)| (y - f).powi(2))
        .sum()
}

/// Two levels' residual sum of squares over a straight line's.
pub fn rss_share(xs: &[f64], t: usize) -> f64 {
    let rss_mean = |ys: &[f64]| {
        let m = ys.iter().sum::<f64>() / ys.len() as f64;
        ys.iter().map(|y| (y - m).powi(2)).sum::<f64>()
    };
    let step = rss_mean(&xs[..t]) + rss_mean(&xs[t..]);
    let line = rss_line(xs);
    if line > 0.0 {
        step / line
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q by its definition, for checking the running sums.
    fn q_direct(xs: &[f64], t: usize) -> f64 {
        let (x, y) = xs.split_at(t);
        let (m, n) = (x.len() as f64, y.len() as f64);
        let between: f64 = x
            .iter()
            .flat_map(|a| y.iter().map(move |b| (a - b).abs()))
            .sum();
        let within = |z: &[f64]| {
            let mut s = 0.0;
            for i in 0..z.len() {
                for k in i + 1..z.len() {
                    s += (z[i] - z[k]).abs();
                }
            }
            s / (z.len() as f64 * (z.len() as f64 - 1.0) / 2.0)
        };
        m * n / (m + n) * (2.0 * between / (m * n) - within(x) - within(y))
    }

    #[test]
    fn the_running_sums_give_the_statistic_of_its_definition() {
        let xs = [1.0, 3.0, 2.0, 7.0, 8.0, 6.5, 9.0, 2.5, 4.0];
        let (t, q) = best_split(&xs, 2).unwrap();
        let direct: Vec<f64> = (2..=xs.len() - 2).map(|t| q_direct(&xs, t)).collect();
        let max = direct.iter().cloned().fold(f64::MIN, f64::max);
        assert!((q - max).abs() < 1e-9, "{q} {max}");
        assert!((q_direct(&xs, t) - q).abs() < 1e-9);
        assert!(best_split(&xs[..3], 2).is_none());
    }

    #[test]
    fn a_clear_step_is_found_where_it_is_and_a_flat_series_has_none() {
        let mut xs: Vec<f64> = (0..20)
            .map(|i| [0.01, -0.02, 0.0, 0.015, -0.01][i % 5])
            .collect();
        let flat = e_divisive(&xs, &Settings::default());
        assert!(
            flat.changes.is_empty() && flat.drifts.is_empty(),
            "{flat:?}"
        );
        for x in &mut xs[12..] {
            *x += 0.13;
        }
        let found = e_divisive(&xs, &Settings::default());
        assert_eq!(found.changes.len(), 1, "{found:?}");
        assert_eq!(found.changes[0].index, 12);
        assert!(found.changes[0].p < 0.01);
        // Seeded: the same answer every time.
        assert_eq!(found, e_divisive(&xs, &Settings::default()));
    }

    #[test]
    fn a_straight_drift_is_a_drift_not_a_step() {
        let noise = [0.004, -0.006, 0.002, 0.0, -0.003, 0.005, -0.001];
        let xs: Vec<f64> = (0..20).map(|i| i as f64 * 0.01 + noise[i % 7]).collect();
        let found = e_divisive(&xs, &Settings::default());
        assert!(found.changes.is_empty(), "{found:?}");
        assert_eq!(found.drifts.len(), 1, "{found:?}");
        let step = [0.0, 0.1, -0.1, 0.05, 1.0, 1.1, 0.9, 1.05];
        assert!(rss_share(&step, 4) < 0.1, "{}", rss_share(&step, 4));
        let line = [0.0, 1.05, 1.95, 3.0, 4.05, 4.95, 6.0, 7.0];
        assert!(rss_share(&line, 4) > 1.0, "{}", rss_share(&line, 4));
        // With the noise known, the same drift is still a drift, and a
        // step of the same size is a step.
        let known = e_divisive_noise(
            &xs,
            Some(Noise {
                sd: 0.004,
                df: 80.0,
            }),
            &Settings::default(),
        );
        assert!(
            known.changes.is_empty() && known.drifts.len() == 1,
            "{known:?}"
        );
        let stepped: Vec<f64> = (0..20)
            .map(|i| if i < 10 { 0.0 } else { 0.19 } + noise[i % 7])
            .collect();
        let known = e_divisive_noise(
            &stepped,
            Some(Noise {
                sd: 0.004,
                df: 80.0,
            }),
            &Settings::default(),
        );
        assert_eq!(known.changes.len(), 1, "{known:?}");
        assert_eq!(known.changes[0].index, 10);
    }
}
