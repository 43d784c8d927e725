//! Analyses made up for the report's unit tests.

use crate::analysis::{analyze, Analysis};
use crate::core::result::{Metric, ResultDoc};
use crate::stats::VerdictSettings;
use crate::store::{ComparisonRow, RunRow};

/// An analysis of host and vm over entries of these (workload,
/// label), one run each.
pub fn analysis_of(entries: &[(&str, &str)]) -> Analysis {
    let mut runs = Vec::new();
    for (i, (workload, label)) in entries.iter().enumerate() {
        for env in ["host", "vm"] {
            runs.push(RunRow {
                env: env.into(),
                entry: i,
                label: label.to_string(),
                round: 0,
                doc: Some(ResultDoc::new(
                    workload,
                    env,
                    vec![Metric::new("x", 1.0, "ops/s", true)],
                )),
                error: None,
            });
        }
    }
    analyze(&comparison_row(), &runs, &VerdictSettings::default())
}

/// Comparison #7 of host and vm, finished, fixed design.
pub fn comparison_row() -> ComparisonRow {
    ComparisonRow {
        id: 7,
        started_at: "2026-11-22T00:00:00Z".into(),
        suite: "t".into(),
        baseline: "host".into(),
        envs: vec!["host".into(), "vm".into()],
        args: vec![],
        finished: true,
        adaptive: false,
    }
}

/// An analysis of these environments (the first is the baseline) over one
/// cpu entry, three rounds each, every environment slower than the one
/// before it.
pub fn analysis_of_envs(envs: &[&str]) -> Analysis {
    let mut runs = Vec::new();
    for round in 0..3 {
        for (k, env) in envs.iter().enumerate() {
            let v = 100.0 / (1.0 + k as f64) + round as f64;
            runs.push(RunRow {
                env: env.to_string(),
                entry: 0,
                label: "cpu".into(),
                round,
                doc: Some(ResultDoc::new(
                    "cpu",
                    env,
                    vec![Metric::new("events_per_sec", v, "events/s", true)],
                )),
                error: None,
            });
        }
    }
    let cmp = ComparisonRow {
        baseline: envs[0].into(),
        envs: envs.iter().map(|e| e.to_string()).collect(),
        ..comparison_row()
    };
    analyze(&cmp, &runs, &VerdictSettings::default())
}
