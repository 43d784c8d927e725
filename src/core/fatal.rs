//! An error sysbench reports in its own words: virtperf shows its own
//! message, which says how to fix the problem, and the `sysbench` persona
//! prints sysbench's FATAL line and its hint on standard output, as
//! sysbench does.

/// The two wordings of one failure.
#[derive(Debug, thiserror::Error)]
#[error("{ours}")]
pub struct SysbenchFatal {
    /// virtperf's message.
    pub ours: String,
    /// sysbench's, after its "FATAL: ".
    pub fatal: String,
    /// sysbench's following warning, after its "WARNING: ".
    pub hint: Option<String>,
}

impl SysbenchFatal {
    /// What sysbench prints, one line each, a warning only at verbosity 2
    /// and more (sysbench's level for warnings).
    pub fn text(&self, verbosity: u64) -> String {
        let mut out = format!("FATAL: {}\n", self.fatal);
        if let Some(hint) = self.hint.as_ref().filter(|_| verbosity >= 2) {
            out.push_str(&format!("WARNING: {hint}\n"));
        }
        out
    }
}

/// A failure sysbench reports after its banner, before it says anything
/// of the run: a test's initialisation failing (`--memory-hugetlb` without
/// huge pages).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InitFatal(pub SysbenchFatal);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_is_a_warning_and_quiet_runs_leave_it_out() {
        let e = SysbenchFatal {
            ours: "mine".into(),
            fatal: "theirs".into(),
            hint: Some("try again".into()),
        };
        assert_eq!(e.to_string(), "mine");
        assert_eq!(e.text(2), "FATAL: theirs\nWARNING: try again\n");
        assert_eq!(e.text(1), "FATAL: theirs\n");
    }
}
