//! Reports of a comparison, in every format. `document` builds the
//! report's content once, section by section (`sections/`), as a
//! `model::Document`; the layout formats (terminal table, markdown, HTML)
//! lay it out and the data formats (CSV, JSON) carry the `Analysis`
//! itself (`format`, `registry`). This file only lists the parts.

mod csv;
mod document;
mod figures;
mod format;
mod history;
mod history_html;
mod html;
mod json;
mod junit;
mod markdown;
pub mod model;
mod registry;
mod sections;
mod sweeps;
mod table;
mod text;

pub use crate::analysis::fleet::{Fleet, FleetRow, HostAnalysis, Measure};
pub use crate::analysis::{analyze, Analysis};
pub use document::{document, fleet_document};
pub use figures::{figures_dir, write_figures};
pub use format::{Data, Layout};
pub use history::{render_history, HISTORY_FORMATS};
pub use model::View;
pub use registry::{exporter, format_names, html, Exporter, EXPORTERS};

#[cfg(test)]
pub(crate) mod tests_support {
    //! Analyses made up for the report's unit tests.

    use crate::analysis::{analyze, Analysis};
    use crate::core::result::{Metric, Monitor, ResultDoc};
    use crate::stats::VerdictSettings;
    use crate::store::{ComparisonRow, RunRow};

    /// One cpu run of `env` in `round`: `v` events per second, `steal`%
    /// steal.
    pub fn run(env: &str, round: usize, v: f64, steal: f64) -> RunRow {
        RunRow {
            env: env.into(),
            entry: 0,
            label: "cpu".into(),
            round,
            doc: Some(ResultDoc {
                params: serde_json::json!({"threads": 1})
                    .as_object()
                    .unwrap()
                    .clone(),
                monitor: Monitor {
                    cpu_steal_pct: steal,
                    ..Monitor::default()
                },
                ..ResultDoc::new(
                    "cpu",
                    env,
                    vec![Metric::new("events_per_sec", v, "events/s", true)],
                )
            }),
            error: None,
        }
    }

    /// Host and vm, five rounds, the vm half as fast, its third run with 9%
    /// steal.
    pub fn fixture() -> Analysis {
        analyze(
            &comparison_row(),
            &fixture_runs(),
            &VerdictSettings::default(),
        )
    }

    pub fn fixture_runs() -> Vec<RunRow> {
        let mut runs = Vec::new();
        for (r, (h, v)) in [
            (100.0, 50.0),
            (101.0, 51.0),
            (99.0, 49.0),
            (100.0, 50.0),
            (100.0, 50.0),
        ]
        .iter()
        .enumerate()
        {
            runs.push(run("host", r, *h, 0.0));
            runs.push(run("vm", r, *v, if r == 2 { 9.0 } else { 0.0 }));
        }
        runs
    }

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
            baseline_from: None,
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
}
