//! Spread of a handful of values (one per host of a fleet): quartiles by
//! linear interpolation, the median absolute deviation, and the outliers a
//! robust rule finds among them.

/// The `p` quantile (0..=1) by linear interpolation between order
/// statistics (Hyndman–Fan type 7, R's and NumPy's default); NaN when
/// empty.
pub fn quantile(xs: &[f64], p: f64) -> f64 {
    let mut s: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    let h = (s.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    s[lo] + (s[hi] - s[lo]) * (h - lo as f64)
}

/// The median absolute deviation from the median (unscaled).
pub fn mad(xs: &[f64]) -> f64 {
    let m = super::median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    super::median(&dev)
}

/// The fewest values among which outliers are looked for: with two, neither
/// is more typical than the other.
pub const OUTLIER_MIN_N: usize = 3;

/// Indices of the values further from the median than
/// `max(3 × 1.4826 × MAD, floor)`: three robust standard deviations (the
/// MAD scaled to a normal's σ), but never closer than `floor`, so hosts
/// that agree almost exactly do not make a small difference an outlier.
pub fn outliers(xs: &[f64], floor: f64) -> Vec<usize> {
    if xs.len() < OUTLIER_MIN_N {
        return Vec::new();
    }
    let m = super::median(xs);
    let limit = (3.0 * 1.4826 * mad(xs)).max(floor);
    xs.iter()
        .enumerate()
        .filter(|(_, x)| (*x - m).abs() > limit)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_interpolate() {
        let xs = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&xs, 0.0), 1.0);
        assert_eq!(quantile(&xs, 1.0), 4.0);
        assert_eq!(quantile(&xs, 0.5), 2.5);
        assert!((quantile(&xs, 0.25) - 1.75).abs() < 1e-12);
        assert!((quantile(&xs, 0.75) - 3.25).abs() < 1e-12);
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(quantile(&[7.0], 0.25), 7.0);
    }

    #[test]
    fn the_outlier_rule_is_robust_and_has_a_floor() {
        // One host far from two that agree.
        assert_eq!(outliers(&[10.0, 11.0, 30.0], 5.0), vec![2]);
        // Spread evenly: nobody stands out.
        assert!(outliers(&[10.0, 20.0, 30.0, 40.0], 5.0).is_empty());
        // Near-identical hosts: the floor keeps a 1-point gap ordinary.
        assert!(outliers(&[10.0, 10.0, 11.0], 5.0).is_empty());
        assert_eq!(outliers(&[10.0, 10.0, 16.0], 5.0), vec![2]);
        // Too few hosts to call anyone an outlier.
        assert!(outliers(&[1.0, 100.0], 5.0).is_empty());
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), 1.0);
    }
}
