//! The order environments take their turns in. A round runs each entry in
//! every environment back to back, so the two runs of a pair (an
//! environment's and the baseline's) are seconds apart and the machine's
//! slow drift (a neighbour's load, writeback, a thermal state) falls on both
//! alike and cancels in their ratio. Measured on a shared 2-vCPU VM, host
//! only: the paired log difference of two 1 s cpu runs had sd 1.10% back to
//! back and 1.65% twenty seconds apart; STREAM 5.0% and 6.3%.
//!
//! Which environment goes first alternates: the order is rotated by every
//! second step and reversed on the steps between, a step being the round
//! plus the entry's index. Any two environments then take each place of a
//! pair once in every two steps (rounds 0 and 1 of an entry, 2 and 3, ...;
//! entries 0 and 1 of a round, ...), so neither warm-up nor a falling trend
//! lands on one side.

/// The environments (indices into `envs`) in the order they run entry
/// `entry` in round `round`.
pub fn order(envs: usize, round: usize, entry: usize) -> Vec<usize> {
    let n = envs.max(1);
    let step = round + entry;
    let mut o: Vec<usize> = (0..envs).map(|i| (i + step / 2) % n).collect();
    if step % 2 == 1 {
        o.reverse();
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_environment_runs_once_and_the_start_moves() {
        assert_eq!(order(3, 0, 0), vec![0, 1, 2]);
        assert_eq!(order(3, 1, 0), vec![2, 1, 0]);
        assert_eq!(order(3, 2, 0), vec![1, 2, 0]);
        assert_eq!(order(3, 0, 1), vec![2, 1, 0]);
        for round in 0..7 {
            for entry in 0..5 {
                let mut sorted = order(4, round, entry);
                sorted.sort();
                assert_eq!(sorted, vec![0, 1, 2, 3]);
            }
        }
        let firsts: std::collections::BTreeSet<usize> = (0..8).map(|r| order(4, r, 0)[0]).collect();
        assert_eq!(firsts.len(), 4, "every environment starts some round");
    }

    /// Whether `a` runs before `b`.
    fn before(o: &[usize], a: usize, b: usize) -> bool {
        o.iter().position(|&e| e == a) < o.iter().position(|&e| e == b)
    }

    #[test]
    fn each_pair_takes_each_side_once_in_every_two_steps() {
        for envs in 2..6 {
            for a in 0..envs {
                for b in (0..envs).filter(|&b| b != a) {
                    for step in (0..12).step_by(2) {
                        // Two rounds of one entry, and two entries of
                        // one round.
                        let rounds = [order(envs, step, 4), order(envs, step + 1, 4)];
                        let entries = [order(envs, 2, step), order(envs, 2, step + 1)];
                        for two in [rounds, entries] {
                            let n = two.iter().filter(|o| before(o, a, b)).count();
                            assert_eq!(n, 1, "{envs} envs, {a} before {b}: {two:?}");
                        }
                    }
                }
            }
        }
    }
}
