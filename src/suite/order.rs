//! The order environments take their turns in: every round runs each
//! environment once, and the starting environment rotates from round to
//! round, so drift and warm-up effects do not land on one environment.

/// `repeat` rounds over `envs` environments, each a list of environment
/// indices in the order they run.
pub fn rounds(envs: usize, repeat: usize) -> Vec<Vec<usize>> {
    (0..repeat)
        .map(|r| (0..envs).map(|i| (i + r) % envs.max(1)).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_has_every_environment_once_and_rotates() {
        let r = rounds(3, 4);
        assert_eq!(
            r,
            vec![vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1], vec![0, 1, 2]]
        );
        for round in &r {
            let mut sorted = round.clone();
            sorted.sort();
            assert_eq!(sorted, vec![0, 1, 2]);
        }
    }
}
