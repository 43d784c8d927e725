//! The two-sided Mann–Whitney U test: exact for small samples without ties
//! (n = 5 against 5 is the common case here, and the normal approximation
//! is poor there), normal approximation with tie and continuity correction
//! otherwise.

use super::tdist::normal_upper_tail;

/// Ranks with ties averaged; also returns Σ(t³ − t) over tie groups.
fn ranks(all: &[(f64, usize)]) -> (Vec<f64>, f64) {
    let mut idx: Vec<usize> = (0..all.len()).collect();
    idx.sort_by(|&a, &b| all[a].0.total_cmp(&all[b].0));
    let mut r = vec![0.0; all.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && all[idx[j + 1]].0 == all[idx[i]].0 {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            r[idx[k]] = avg;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    (r, ties)
}

/// Number of ways to get each U for sample sizes n1, n2 (no ties).
fn exact_counts(n1: usize, n2: usize) -> Vec<f64> {
    // f[i][j][u]: arrangements of i from sample 1 and j from sample 2 with
    // statistic u, by the standard recurrence f[i][j][u] = f[i−1][j][u−j] +
    // f[i][j−1][u]. One flat row over j is kept and updated in place for
    // each i (u descending, so f[i−1][j][u−j] is still unchanged when read):
    // this runs for every comparison, so no nested vectors.
    let width = n1 * n2 + 1;
    let mut row = vec![0.0; (n2 + 1) * width];
    for j in 0..=n2 {
        row[j * width] = 1.0;
    }
    for _ in 1..=n1 {
        for j in 1..=n2 {
            let (before, here) = row.split_at_mut(j * width);
            let left = &before[(j - 1) * width..];
            for u in (0..width).rev() {
                let carried = if u >= j { here[u - j] } else { 0.0 };
                here[u] = carried + left[u];
            }
        }
    }
    row.split_off(n2 * width)
}

/// Two-sided p-value of the Mann–Whitney U test for `a` against `b`.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let all: Vec<(f64, usize)> = a
        .iter()
        .map(|&x| (x, 0))
        .chain(b.iter().map(|&x| (x, 1)))
        .collect();
    let (r, ties) = ranks(&all);
    let r1: f64 = r
        .iter()
        .zip(&all)
        .filter(|(_, x)| x.1 == 0)
        .map(|(r, _)| r)
        .sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let nn = (n1 * n2) as f64;
    let u = u1.min(nn - u1);
    if ties == 0.0 && n1 + n2 <= 40 {
        let counts = exact_counts(n1, n2);
        let total: f64 = counts.iter().sum();
        let tail: f64 = counts
            .iter()
            .enumerate()
            .filter(|(k, _)| (*k as f64) <= u + 1e-9)
            .map(|(_, c)| c)
            .sum();
        return (2.0 * tail / total).min(1.0);
    }
    let n = (n1 + n2) as f64;
    let sigma2 = nn / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if sigma2 <= 0.0 {
        return 1.0;
    }
    let z = ((u - nn / 2.0).abs() - 0.5).max(0.0) / sigma2.sqrt();
    (2.0 * normal_upper_tail(z)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_separation_of_five_and_five_is_2_in_252() {
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
    }

    #[test]
    fn exact_counts_sum_to_the_binomial() {
        let c = exact_counts(5, 5);
        assert_eq!(c.iter().sum::<f64>(), 252.0);
        assert_eq!(c[0], 1.0);
        // U for 3 against 3: partitions in a 3 × 3 box.
        assert_eq!(exact_counts(3, 3), [1., 1., 2., 3., 3., 3., 3., 2., 1., 1.]);
        for (n1, n2, total) in [(2, 7, 36.0), (7, 2, 36.0), (4, 6, 210.0), (1, 1, 2.0)] {
            let c = exact_counts(n1, n2);
            assert_eq!(c.len(), n1 * n2 + 1);
            assert_eq!(c.iter().sum::<f64>(), total);
            let mut mirrored = c.clone();
            mirrored.reverse();
            assert_eq!(c, mirrored, "U is symmetric about n1 n2 / 2");
        }
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        let a: Vec<f64> = (0..50).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..50).map(|i| i as f64 + 0.5).collect();
        let p = mann_whitney_p(&a, &b);
        assert!(p > 0.5, "{p}");
        let c: Vec<f64> = (0..50).map(|i| i as f64 + 100.0).collect();
        assert!(mann_whitney_p(&a, &c) < 1e-10);
        assert!((normal_upper_tail(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_upper_tail(1.959_964) - 0.025).abs() < 1e-5);
    }
}
