//! Gates for a CI pipeline: `--fail-on=slower|faster|changed|inconclusive`
//! (repeatable) names the headline verdicts that fail it. [`trips`] lists
//! the headline rows whose verdict a gate names; the command writes every
//! result and report first, then ends with [`Tripped`], which `main` turns
//! into [`EXIT_CODE`] (neither 1, a failed run, nor 2, bad input).
//!
//! `changed` is slower or faster. A headline row with no verdict at all
//! (too few runs for a ratio) counts as inconclusive: it decided nothing.

use std::fmt;

use serde::Serialize;

use super::{Analysis, HeadlineRow};
use crate::core::options::CliError;
use crate::stats::Outcome;

/// The exit code of a command whose gate tripped.
pub const EXIT_CODE: u8 = 3;

/// The words `--fail-on` takes.
pub const WORDS: &[&str] = &["slower", "faster", "changed", "inconclusive"];

/// One `--fail-on` word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    Slower,
    Faster,
    /// Slower or faster (on `history`: a change point at the newest
    /// comparison).
    Changed,
    Inconclusive,
}

impl Gate {
    pub fn word(self) -> &'static str {
        match self {
            Gate::Slower => "slower",
            Gate::Faster => "faster",
            Gate::Changed => "changed",
            Gate::Inconclusive => "inconclusive",
        }
    }

    /// The gates of `--fail-on` words, each once, in order.
    pub fn parse_all(words: &[String]) -> Result<Vec<Gate>, CliError> {
        let mut gates = Vec::new();
        for w in words {
            let g = match w.as_str() {
                "slower" => Gate::Slower,
                "faster" => Gate::Faster,
                "changed" => Gate::Changed,
                "inconclusive" => Gate::Inconclusive,
                other => {
                    return Err(CliError::InvalidValue {
                        name: "fail-on".into(),
                        value: other.into(),
                        allowed: format!("one of {}", WORDS.join(", ")),
                    })
                }
            };
            if !gates.contains(&g) {
                gates.push(g);
            }
        }
        Ok(gates)
    }

    /// Whether this gate fails a headline verdict (None: no verdict).
    pub fn fails(self, outcome: Option<Outcome>) -> bool {
        matches!(
            (self, outcome),
            (Gate::Slower, Some(Outcome::Slower))
                | (Gate::Faster, Some(Outcome::Faster))
                | (Gate::Changed, Some(Outcome::Slower | Outcome::Faster))
                | (Gate::Inconclusive, Some(Outcome::Inconclusive) | None)
        )
    }
}

/// The first of `gates` that fails this headline row, if any.
pub fn gate_of(row: &HeadlineRow<'_>, gates: &[Gate]) -> Option<Gate> {
    let outcome = row.stat.vs_baseline.as_ref().map(|a| a.outcome);
    gates.iter().copied().find(|g| g.fails(outcome))
}

/// One headline row a gate failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrippedRow {
    pub env: String,
    pub entry: String,
    pub metric: String,
    pub gate: Gate,
    /// "slower", ..., or "no verdict".
    pub verdict: String,
    /// The ratio against the baseline, when there is one.
    pub ratio: Option<f64>,
}

impl fmt::Display for TrippedRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} / {} / {}: {}",
            self.env, self.entry, self.metric, self.verdict
        )?;
        if let Some(r) = self.ratio {
            write!(f, " (ratio {r:.3})")?;
        }
        write!(f, " [--fail-on={}]", self.gate.word())
    }
}

/// The headline rows of `a` that `gates` fail, in the summary's order.
pub fn trips(a: &Analysis, gates: &[Gate]) -> Vec<TrippedRow> {
    a.headline_rows()
        .iter()
        .filter_map(|r| {
            let gate = gate_of(r, gates)?;
            let v = r.stat.vs_baseline.as_ref();
            Some(TrippedRow {
                env: r.stat.env.clone(),
                entry: r.entry.label.clone(),
                metric: r.metric.name.clone(),
                gate,
                verdict: v.map_or("no verdict".into(), |a| a.outcome.label().into()),
                ratio: v.map(|a| a.ratio.point),
            })
        })
        .collect()
}

/// The error a command ends with when a gate tripped: every row that
/// tripped it, one a line (after everything was written).
#[derive(Debug, Clone)]
pub struct Tripped {
    /// What was gated: "comparison #7", "history of 3 stores".
    pub what: String,
    pub rows: Vec<String>,
}

impl fmt::Display for Tripped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--fail-on: {} of {} tripped the gate (exit code {EXIT_CODE}):",
            self.rows.len(),
            self.what
        )?;
        for r in &self.rows {
            write!(f, "\n  {r}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Tripped {}

/// Ok when nothing tripped; else the [`Tripped`] error naming each row.
pub fn verdict(what: String, rows: Vec<String>) -> Result<(), Tripped> {
    if rows.is_empty() {
        Ok(())
    } else {
        Err(Tripped { what, rows })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::result::{Metric, ResultDoc};
    use crate::stats::VerdictSettings;
    use crate::store::{ComparisonRow, RunRow};

    /// Host, a vm half as fast and a vm as fast, five rounds of cpu.
    fn analysis() -> Analysis {
        let mut runs = Vec::new();
        for r in 0..5 {
            let j = [1.0, 1.01, 0.99, 1.005, 0.995][r];
            for (env, v) in [("host", 100.0), ("slow", 50.0), ("same", 100.0)] {
                runs.push(RunRow {
                    env: env.into(),
                    entry: 0,
                    label: "cpu".into(),
                    round: r,
                    doc: Some(ResultDoc::new(
                        "cpu",
                        env,
                        vec![Metric::new("events_per_sec", v * j, "events/s", true)],
                    )),
                    error: None,
                });
            }
        }
        let cmp = ComparisonRow {
            id: 1,
            started_at: String::new(),
            suite: "t".into(),
            baseline: "host".into(),
            envs: vec!["host".into(), "slow".into(), "same".into()],
            args: Vec::new(),
            finished: true,
            adaptive: false,
            baseline_from: None,
        };
        crate::analysis::analyze(&cmp, &runs, &VerdictSettings::default())
    }

    #[test]
    fn each_gate_fails_the_verdicts_it_names() {
        use Outcome::*;
        let all = [
            Some(Slower),
            Some(Faster),
            Some(Equivalent),
            Some(Inconclusive),
            None,
        ];
        let failed = |g: Gate| all.iter().filter(|o| g.fails(**o)).count();
        assert_eq!(failed(Gate::Slower), 1);
        assert_eq!(failed(Gate::Faster), 1);
        assert_eq!(failed(Gate::Changed), 2);
        assert_eq!(failed(Gate::Inconclusive), 2);
        let every = [
            Gate::Slower,
            Gate::Faster,
            Gate::Changed,
            Gate::Inconclusive,
        ];
        assert!(every.iter().all(|g| !g.fails(Some(Equivalent))));
    }

    #[test]
    fn the_rows_that_trip_are_named_and_the_others_not() {
        let a = analysis();
        let rows = trips(&a, &[Gate::Slower]);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!((rows[0].env.as_str(), rows[0].gate), ("slow", Gate::Slower));
        assert!((rows[0].ratio.unwrap() - 0.5).abs() < 1e-9);
        assert!(trips(&a, &[Gate::Faster, Gate::Inconclusive]).is_empty());
        assert_eq!(trips(&a, &[Gate::Changed]).len(), 1);
        let err = verdict(
            "comparison #1".into(),
            rows.iter().map(|r| r.to_string()).collect(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("slow / cpu / events_per_sec: slower"), "{err}");
        assert!(
            err.contains("exit code 3") && err.contains("--fail-on=slower"),
            "{err}"
        );
        assert!(verdict("x".into(), Vec::new()).is_ok());
    }

    #[test]
    fn fail_on_words_parse_once_each_and_a_wrong_one_is_named() {
        let words: Vec<String> = ["slower", "changed", "slower"].map(String::from).to_vec();
        assert_eq!(
            Gate::parse_all(&words).unwrap(),
            vec![Gate::Slower, Gate::Changed]
        );
        let err = Gate::parse_all(&["worse".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fail-on") && err.contains("inconclusive"),
            "{err}"
        );
    }
}
