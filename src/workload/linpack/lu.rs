//! The multi-threaded LU: right-looking, blocked, with a one-step look-ahead,
//! over faer's kernels (its LU on each panel, triangular solve, product), as
//! OpenBLAS's getrf and HPL organise it. In each step one thread updates the
//! next panel's columns and factors that panel while the others update the
//! rest of the trailing matrix, column chunk by column chunk (row swaps,
//! triangular solve and product fused per chunk), taking chunks as they
//! finish so a thread the machine delays does not hold the step. faer's own
//! recursive LU forks and joins at every level of its recursion (and its
//! product sets up its thread team on every call); on two threads this one
//! ran 1.2–1.6× faster than it at N = 2000–8000 on the shared 2-CPU machine,
//! on one thread no faster, so one thread keeps it.
//!
//! Row swaps are never applied to the columns of L left of a panel (the
//! scheme of LINPACK's dgefa/dgesl): each panel's L stays in the row order
//! that panel saw, and the solve applies the swaps to b panel by panel.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::factor::{lu_in_place, lu_in_place_scratch};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve as tri;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut, MatRef, Par};

/// Panel width: wide enough that the trailing product runs at the kernel's
/// speed, narrow enough that the panel stays a small share of the work.
pub fn block_size(n: usize) -> usize {
    if n >= 4000 {
        256
    } else {
        128
    }
}

/// Scratch the factorization allocates, sized before the clock starts.
pub struct Workspace {
    ipiv: Vec<usize>,
    perm: Vec<usize>,
    perm_inv: Vec<usize>,
    at: Vec<usize>,
    pos: Vec<usize>,
    mem: MemBuffer,
    nb: usize,
}

impl Workspace {
    pub fn new(n: usize) -> Workspace {
        let nb = block_size(n).min(n.max(1));
        Workspace {
            ipiv: vec![0; n],
            perm: vec![0; n],
            perm_inv: vec![0; n],
            at: vec![0; n],
            pos: vec![0; n],
            mem: MemBuffer::new(lu_in_place_scratch::<usize, f64>(
                n,
                nb,
                Par::Seq,
                Default::default(),
            )),
            nb,
        }
    }
}

/// The per-panel scratch, borrowed by whichever thread factors the panel.
struct PanelScratch<'a> {
    perm: &'a mut [usize],
    perm_inv: &'a mut [usize],
    at: &'a mut [usize],
    pos: &'a mut [usize],
    mem: &'a mut MemBuffer,
}

/// Factors the m×jb panel `p` in place on this thread and writes LAPACK-style
/// pivots (absolute rows, `offset` + the row within the panel) to `ipiv`.
fn factor_panel(p: MatMut<'_, f64>, ipiv: &mut [usize], offset: usize, s: &mut PanelScratch<'_>) {
    let (m, jb) = (p.nrows(), p.ncols());
    let (perm, perm_inv) = (&mut s.perm[..m], &mut s.perm_inv[..m]);
    lu_in_place(
        p,
        perm,
        perm_inv,
        Par::Seq,
        MemStack::new(s.mem),
        Default::default(),
    );
    // faer returns the row permutation; partial pivoting built it from jb
    // transpositions, recovered here in order (uniquely: step i brings the
    // row that ends at position i from wherever it is then).
    let (at, pos) = (&mut s.at[..m], &mut s.pos[..m]);
    for i in 0..m {
        at[i] = i;
        pos[i] = i;
    }
    for i in 0..jb {
        let q = pos[perm[i]];
        ipiv[i] = offset + q;
        let (ri, rq) = (at[i], at[q]);
        at.swap(i, q);
        pos[ri] = q;
        pos[rq] = i;
    }
}

/// One column chunk (rows j..n) of the trailing matrix: the step's row swaps,
/// U12 = L11⁻¹ A12, then A22 −= L21 U12.
fn update(
    mut c: MatMut<'_, f64>,
    piv: &[usize],
    j: usize,
    l11: MatRef<'_, f64>,
    l21: MatRef<'_, f64>,
) {
    for k in 0..c.ncols() {
        let col = c.rb_mut().col_mut(k);
        let col = col
            .try_as_col_major_mut()
            .expect("column-major")
            .as_slice_mut();
        for (i, &p) in piv.iter().enumerate() {
            col.swap(i, p - j);
        }
    }
    let (mut u12, a22) = c.split_at_row_mut(l11.nrows());
    tri::solve_unit_lower_triangular_in_place(l11, u12.rb_mut(), Par::Seq);
    matmul(a22, Accum::Add, l21, u12.rb(), -1.0, Par::Seq);
}

/// LU with partial pivoting of the square `a` in place, on the threads of
/// the current rayon pool.
pub fn factor(a: MatMut<'_, f64>, w: &mut Workspace) {
    let n = a.nrows();
    if n == 0 {
        return;
    }
    let threads = rayon::current_num_threads().max(1);
    let nb = w.nb;
    let chunk = 2 * nb;
    let mut a = a;
    let Workspace {
        ipiv,
        perm,
        perm_inv,
        at,
        pos,
        mem,
        ..
    } = w;
    let mut scratch = PanelScratch {
        perm,
        perm_inv,
        at,
        pos,
        mem,
    };
    let first = nb.min(n);
    factor_panel(
        a.rb_mut().subcols_mut(0, first),
        &mut ipiv[..first],
        0,
        &mut scratch,
    );
    let mut j = 0;
    while j + nb < n {
        let next = j + nb;
        let jb2 = nb.min(n - next);
        let (done, rest) = ipiv.split_at_mut(next);
        let piv = &done[j..next];
        let rows = a.rb_mut().subrows_mut(j, n - j);
        let (left, trailing) = rows.split_at_col_mut(next);
        let panel = left.rb().subcols(j, nb);
        let (l11, l21) = (panel.subrows(0, nb), panel.subrows(nb, n - next));
        let (p, mut others) = trailing.split_at_col_mut(jb2);
        let mut chunks = Vec::new();
        while others.ncols() > 0 {
            let width = chunk.min(others.ncols());
            let (c, r) = others.split_at_col_mut(width);
            chunks.push(Mutex::new(Some(c)));
            others = r;
        }
        // Task 0, the look-ahead, is taken first; the rest go to whichever
        // thread is free.
        let ahead = Mutex::new(Some((p, &mut rest[..jb2], &mut scratch)));
        let taken = AtomicUsize::new(0);
        let work = || loop {
            let i = taken.fetch_add(1, Ordering::Relaxed);
            if i == 0 {
                let (mut p, pp, s) = ahead.lock().unwrap().take().unwrap();
                update(p.rb_mut(), piv, j, l11, l21);
                factor_panel(p.subrows_mut(nb, n - next), pp, next, s);
            } else if let Some(c) = chunks.get(i - 1) {
                let c = c.lock().unwrap().take().unwrap();
                update(c, piv, j, l11, l21);
            } else {
                break;
            }
        };
        if threads > 1 {
            rayon::broadcast(|_| work());
        } else {
            work();
        }
        j = next;
    }
}

/// x ← A⁻¹x from `factor`'s result: per panel its swaps and L (in the row
/// order that panel saw), then U.
pub fn solve(a: MatRef<'_, f64>, w: &Workspace, x: &mut [f64], par: Par) {
    let n = a.nrows();
    let nb = w.nb;
    let mut j = 0;
    while j < n {
        let jb = nb.min(n - j);
        for i in j..j + jb {
            x.swap(i, w.ipiv[i]);
        }
        let (head, tail) = x[j..].split_at_mut(jb);
        let mut head = MatMut::from_column_major_slice_mut(head, jb, 1);
        tri::solve_unit_lower_triangular_in_place(
            a.submatrix(j, j, jb, jb),
            head.rb_mut(),
            Par::Seq,
        );
        let m = tail.len();
        if m > 0 {
            matmul(
                MatMut::from_column_major_slice_mut(tail, m, 1),
                Accum::Add,
                a.submatrix(j + jb, j, m, jb),
                head.rb(),
                -1.0,
                par,
            );
        }
        j += jb;
    }
    tri::solve_upper_triangular_in_place(a, MatMut::from_column_major_slice_mut(x, n, 1), par);
}
