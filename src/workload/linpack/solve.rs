//! The numerics of one LINPACK trial: a seeded random system, LU with
//! partial pivoting and the solve (faer), and HPL's scaled residual computed
//! against the system regenerated from its seed, column by column.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::lu::partial_pivoting::{factor, solve};
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{MatMut, MatRef, Par};

use super::lu;
use crate::stats::SplitMix64;

/// HPL's machine epsilon: LAPACK's dlamch('E'), the unit roundoff 2⁻⁵³.
pub const EPS: f64 = f64::EPSILON / 2.0;

/// HPL's pass mark for the scaled residual.
pub const THRESHOLD: f64 = 16.0;

/// Fills column `j` of A (`j < n`) or b (`j == n`), uniform in [−0.5, 0.5),
/// from a SplitMix64 stream of its own, so a column can be regenerated on
/// its own for the residual without keeping a copy of A.
pub fn generate_column(seed: u64, j: usize, out: &mut [f64]) {
    // Decorrelates neighbouring (seed, column) pairs before the first draw.
    let mut s = SplitMix64(seed ^ (j as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
    s.next_u64();
    for v in out {
        *v = s.unit() - 0.5;
    }
}

/// A column-major N×N matrix with leading dimension LDA, its first element
/// aligned to `align` bytes, allocated before any timing.
pub struct Matrix {
    buf: Vec<f64>,
    offset: usize,
    pub n: usize,
    pub lda: usize,
}

impl Matrix {
    /// The elements A needs: LDA·(N−1) + N, plus room to align the start.
    pub fn elements(n: usize, lda: usize, align: usize) -> usize {
        lda * n.saturating_sub(1) + n + align / 8
    }

    pub fn new(n: usize, lda: usize, align: usize) -> Result<Matrix> {
        let len = Matrix::elements(n, lda, align);
        let mut buf: Vec<f64> = Vec::new();
        if buf.try_reserve_exact(len).is_err() {
            bail!(
                "cannot allocate {} MiB for the {n}×{n} matrix",
                (len * 8) >> 20
            );
        }
        buf.resize(len, 0.0);
        let offset = if align > 8 {
            buf.as_ptr().align_offset(align)
        } else {
            0
        };
        Ok(Matrix {
            buf,
            offset,
            n,
            lda,
        })
    }

    fn data(&mut self) -> &mut [f64] {
        let end = self.offset + self.lda * self.n.saturating_sub(1) + self.n;
        &mut self.buf[self.offset..end]
    }

    pub fn as_mut(&mut self) -> MatMut<'_, f64> {
        let (n, lda) = (self.n, self.lda);
        MatMut::from_column_major_slice_with_stride_mut(self.data(), n, n, lda)
    }

    /// Fills A from the seed.
    pub fn generate(&mut self, seed: u64) {
        let (n, lda) = (self.n, self.lda);
        let data = self.data();
        for j in 0..n {
            generate_column(seed, j, &mut data[j * lda..j * lda + n]);
        }
    }
}

/// LU with partial pivoting of `a` in place, then `x` ← A⁻¹x: the timed
/// part of a trial. Scratch space is allocated before the clock starts.
/// One thread runs faer's recursive LU; more run the look-ahead LU of
/// `lu` on the current rayon pool's threads.
pub fn factor_and_solve(a: MatMut<'_, f64>, x: &mut [f64], par: Par) -> Duration {
    match par {
        Par::Seq => factor_and_solve_recursive(a, x),
        Par::Rayon(_) => {
            let mut a = a;
            let mut w = lu::Workspace::new(a.nrows());
            let started = Instant::now();
            lu::factor(a.rb_mut(), &mut w);
            lu::solve(a.rb(), &w, x, par);
            started.elapsed()
        }
    }
}

fn factor_and_solve_recursive(a: MatMut<'_, f64>, x: &mut [f64]) -> Duration {
    let par = Par::Seq;
    let n = a.nrows();
    let params = Default::default();
    let req = StackReq::any_of(&[
        factor::lu_in_place_scratch::<usize, f64>(n, n, par, params),
        solve::solve_in_place_scratch::<usize, f64>(n, 1, par),
    ]);
    let mut mem = MemBuffer::new(req);
    let (mut perm, mut perm_inv) = (vec![0usize; n], vec![0usize; n]);
    let mut a = a;
    let started = Instant::now();
    let (_, p) = factor::lu_in_place(
        a.rb_mut(),
        &mut perm,
        &mut perm_inv,
        par,
        MemStack::new(&mut mem),
        params,
    );
    let lu: MatRef<'_, f64> = a.rb();
    // L (unit lower) and U share the factored matrix; each triangular solve
    // reads only its own triangle.
    solve::solve_in_place(
        lu,
        lu,
        p,
        MatMut::from_column_major_slice_mut(x, n, 1),
        par,
        MemStack::new(&mut mem),
    );
    started.elapsed()
}

/// HPL's residual check of a solution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Residual {
    /// ‖Ax − b‖∞ (Intel's "Residual").
    pub norm: f64,
    /// ‖Ax − b‖∞ / (ε (‖A‖∞‖x‖∞ + ‖b‖∞) N) (Intel's "Residual(norm)").
    pub scaled: f64,
}

impl Residual {
    pub fn passed(&self) -> bool {
        self.scaled.is_finite() && self.scaled < THRESHOLD
    }
}

/// The residual of `x` against A and b regenerated from `seed`, one column
/// at a time (the matrix itself holds the factors by now).
pub fn residual(seed: u64, n: usize, x: &[f64]) -> Residual {
    let mut col = vec![0.0; n];
    let mut r = vec![0.0; n];
    let mut row_sums = vec![0.0; n];
    for (j, &xj) in x.iter().enumerate() {
        generate_column(seed, j, &mut col);
        for ((ri, si), &a) in r.iter_mut().zip(row_sums.iter_mut()).zip(&col) {
            *ri += a * xj;
            *si += a.abs();
        }
    }
    generate_column(seed, n, &mut col);
    let b_norm = inf_norm(col.iter().copied());
    let norm = inf_norm(r.iter().zip(&col).map(|(ri, bi)| ri - bi));
    let a_norm = inf_norm(row_sums.iter().copied());
    let x_norm = inf_norm(x.iter().copied());
    Residual {
        norm,
        scaled: norm / (EPS * (a_norm * x_norm + b_norm) * n as f64),
    }
}

/// max |v|, NaN if any v is (`f64::max` would drop it, and a NaN in x
/// must fail the check).
fn inf_norm(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, |m, v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v.abs())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solve_seeded(n: usize, lda: usize, seed: u64, par: Par) -> Vec<f64> {
        let mut a = Matrix::new(n, lda, 4096).unwrap();
        a.generate(seed);
        let mut x = vec![0.0; n];
        generate_column(seed, n, &mut x);
        factor_and_solve(a.as_mut(), &mut x, par);
        x
    }

    #[test]
    fn a_known_small_system_solves_exactly() {
        // [[2 1 1] [4 -6 0] [-2 7 2]] x = [5 -2 9] has x = [1 1 2], and
        // pivoting (4 is the first pivot) keeps every step exact in binary.
        let mut a = Matrix::new(3, 5, 64).unwrap();
        let cols = [[2.0, 4.0, -2.0], [1.0, -6.0, 7.0], [1.0, 0.0, 2.0]];
        {
            let mut m = a.as_mut();
            for (j, col) in cols.iter().enumerate() {
                for (i, v) in col.iter().enumerate() {
                    m[(i, j)] = *v;
                }
            }
        }
        let mut x = vec![5.0, -2.0, 9.0];
        factor_and_solve(a.as_mut(), &mut x, Par::Seq);
        assert_eq!(x, [1.0, 1.0, 2.0]);
    }

    #[test]
    fn a_random_system_passes_and_a_perturbed_solution_fails() {
        let (n, seed) = (300, 7);
        let x = solve_seeded(n, n + 8, seed, Par::Seq);
        let r = residual(seed, n, &x);
        assert!(r.passed(), "{r:?}");
        assert!(r.scaled > 0.0, "{r:?}");
        // A change of one part in 10⁹ of ‖x‖∞ is far above roundoff.
        let x_norm = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let mut bad = x.clone();
        bad[17] += 1e-9 * x_norm;
        let r = residual(seed, n, &bad);
        assert!(!r.passed(), "a perturbed x must fail: {r:?}");
        let mut nan = x;
        nan[0] = f64::NAN;
        assert!(!residual(seed, n, &nan).passed());
    }

    #[test]
    fn threads_and_leading_dimension_do_not_change_the_system() {
        let (n, seed) = (257, 3);
        let one = solve_seeded(n, n, seed, Par::Seq);
        let two = solve_seeded(n, n + 13, seed, Par::rayon(2));
        let diff = one
            .iter()
            .zip(&two)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        let scale = one.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(diff <= 1e-9 * scale, "{diff} vs {scale}");
        assert!(residual(seed, n, &two).passed());
    }

    #[test]
    fn the_look_ahead_lu_agrees_with_the_recursive_one_on_any_thread_count() {
        // 389 = 3 panels of 128 and one of 5: every step has a look-ahead
        // panel, chunks, and a short last panel.
        let (n, seed) = (389, 11);
        let one = solve_seeded(n, n, seed, Par::Seq);
        let scale = one.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for threads in [2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let x = pool.install(|| solve_seeded(n, n + 3, seed, Par::rayon(threads)));
            let r = residual(seed, n, &x);
            assert!(r.passed() && r.scaled < 1.0, "{threads} threads: {r:?}");
            let diff = one
                .iter()
                .zip(&x)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(diff <= 1e-9 * scale, "{threads} threads: {diff} vs {scale}");
        }
    }

    #[test]
    fn entries_are_uniform_in_half_open_unit_interval_around_zero() {
        let mut col = vec![0.0; 100_000];
        generate_column(1, 0, &mut col);
        assert!(col.iter().all(|v| (-0.5..0.5).contains(v)));
        let mean = col.iter().sum::<f64>() / col.len() as f64;
        assert!(mean.abs() < 0.01, "{mean}");
        let mut other = vec![0.0; 100_000];
        generate_column(1, 1, &mut other);
        assert_ne!(col, other);
        generate_column(1, 0, &mut other);
        assert_eq!(col, other, "a column regenerates identically");
    }

    #[test]
    fn alignment_is_honoured() {
        for align in [8, 64, 4096, 16384] {
            let mut m = Matrix::new(10, 12, align).unwrap();
            let p = m.data().as_ptr() as usize;
            assert_eq!(p % align, 0, "{align}");
        }
    }
}
