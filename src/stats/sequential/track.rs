//! One metric's sequence followed pair by pair, as the scheduler reads it.

use super::pairs::Pairs;
use super::sweep::{capped, exclude_at_look, p_at_look, Sweep};
use super::Bound;

/// One metric's sequence followed look by look, as the scheduler reads it
/// after every round: each new pair is folded into the running statistics
/// once, so a look costs O(n) (the new pair's scale, the mean and spread)
/// where [`Pairs::new`] with [`Pairs::exclusions`] and [`Pairs::p_value`]
/// redo every earlier look. The same arithmetic in the same order, so the
/// same answers to the bit (a test holds the two together).
#[derive(Debug, Clone)]
pub struct Track {
    pairs: Pairs,
    bounds: Vec<Bound>,
    thetas: Vec<f64>,
    alpha: f64,
    cap: f64,
    /// The statistics at `thetas`, for the exclusions, and at 0, for the
    /// p-value.
    sweep: Sweep,
    zero: Sweep,
    excluded: Vec<(bool, bool)>,
    /// The smallest level any look excluded 0 at so far (1: none).
    p: f64,
}

impl Track {
    /// No pairs yet; [`Track::exclusions`] will be [`Pairs::exclusions`]
    /// at `bounds` and level `alpha`, [`Track::p_value`] [`Pairs::p_value`]
    /// with `cap`.
    pub fn new(bounds: &[Bound], alpha: f64, cap: f64) -> Track {
        let thetas: Vec<f64> = bounds.iter().map(|b| b.theta).collect();
        Track {
            pairs: Pairs::new(&[]),
            bounds: bounds.to_vec(),
            alpha,
            cap,
            sweep: Sweep::new(thetas.len()),
            zero: Sweep::new(1),
            excluded: vec![(false, false); thetas.len()],
            thetas,
            p: 1.0,
        }
    }

    /// Adds the next pair and takes its look.
    pub fn push(&mut self, x: f64) {
        self.pairs.push(x);
        let n = self.pairs.len();
        let (d, scale) = (&self.pairs.d[..], self.pairs.scales[n - 1]);
        if self.sweep.step(&self.thetas, d, scale) {
            exclude_at_look(
                n,
                &self.sweep.looks,
                &self.bounds,
                self.alpha,
                &mut self.excluded,
            );
        }
        if self.zero.step(&[0.0], d, scale) {
            p_at_look(n, &self.zero.looks[0], self.cap, &mut self.p);
        }
    }

    /// The pairs so far.
    pub fn pairs(&self) -> &Pairs {
        &self.pairs
    }

    /// [`Pairs::exclusions`] of the pairs so far.
    pub fn exclusions(&self) -> &[(bool, bool)] {
        &self.excluded
    }

    /// [`Pairs::p_value`] of the pairs so far.
    pub fn p_value(&self) -> f64 {
        capped(self.p, self.cap)
    }
}
