//! Other tools' output read back as runs of virtperf's workloads (`virtperf
//! import`): the formats it reads, how each is recognised, and the
//! neutral [`Imported`] run a parser yields. Each tool's parser lives with
//! the workload whose metrics it produces (sysbench's cpu test in `cpu.rs`,
//! fio in `fileio/`, iperf3 and netperf in `net/`, bonnie++ in `disk/`);
//! this module holds what they share, and `registry.rs` lists them
//! (`IMPORT_FORMATS`). Files are
//! untrusted: a parser sees at most [`MAX_FILE_BYTES`], lines of at most
//! [`MAX_LINE`] characters, and refuses what it cannot read with the line
//! and what it expected ([`Refusal`]), never panicking.

pub mod sysbench;

use crate::core::result::{Fairness, Latency, Metric};
use crate::workload::WorkloadDef;

/// The largest file an import reads.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// The longest line a text format may have.
pub const MAX_LINE: usize = 64 * 1024;
/// The most runs one file may yield (fio's jobs).
pub const MAX_RUNS: usize = 256;

/// Why a file was not imported: where, what was expected there, and what
/// was found (cut short).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// 1-based; 0 when it is about the whole file.
    pub line: usize,
    pub expected: String,
    pub found: String,
}

impl Refusal {
    pub fn new(line: usize, expected: impl Into<String>, found: &str) -> Refusal {
        let found: String = found.trim().chars().take(80).collect();
        Refusal {
            line,
            expected: expected.into(),
            found,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        write!(f, "expected {}", self.expected)?;
        if self.found.is_empty() {
            write!(f, ", found nothing")
        } else {
            write!(f, ", found '{}'", self.found)
        }
    }
}

/// One run read from another tool's output, before it becomes a result
/// document: the workload it is a run of, the options that say which work
/// it did (they choose the entry it pairs with), and its figures in
/// virtperf's names where the meaning is the same, the tool's own names
/// for the rest.
#[derive(Debug, Clone)]
pub struct Imported {
    pub def: &'static WorkloadDef,
    /// Options of `def` (kebab-case name, value as text) the file states:
    /// validated against the workload's option table; an entry pairs with
    /// this run when its parameters agree on all of them.
    pub options: Vec<(String, String)>,
    /// Parameters that are no option of `def` (e.g. fio's `rw=rw`, which
    /// fileio has no mode for): they keep such a run on an entry of its own.
    pub params: Vec<(String, serde_json::Value)>,
    pub metrics: Vec<Metric>,
    pub latency: Option<Latency>,
    pub fairness: Option<Fairness>,
    pub duration_s: f64,
    pub events: u64,
    pub tool: &'static str,
    /// The tool's version as the file states it ("1.0.20", "fio-3.33").
    pub version: String,
    /// Where the run was measured, as far as the file says (a host name,
    /// a kernel line).
    pub host: String,
    /// What the file says beyond metrics (the tool's own parameters).
    pub details: serde_json::Value,
    /// The first figure the file gave that no run can have (negative, not
    /// finite), with its name: the run is refused ([`Imported::check`]).
    unfit: Option<(String, f64)>,
}

impl Imported {
    pub fn new(def: &'static WorkloadDef, tool: &'static str, version: &str) -> Imported {
        Imported {
            def,
            options: Vec::new(),
            params: Vec::new(),
            metrics: Vec::new(),
            latency: None,
            fairness: None,
            duration_s: 0.0,
            events: 0,
            tool,
            version: version.to_string(),
            host: String::new(),
            details: serde_json::Value::Null,
            unfit: None,
        }
    }

    pub fn option(&mut self, name: &str, value: impl ToString) -> &mut Imported {
        self.options.push((name.to_string(), value.to_string()));
        self
    }

    /// A metric the workload declares (its unit and direction from there).
    pub fn declared(&mut self, name: &str, value: f64) -> &mut Imported {
        if self.fit(name, value) {
            self.metrics
                .push(crate::workload::metric_from(self.def.metrics, name, value));
        }
        self
    }

    /// One of the tool's own figures, under its own name.
    pub fn own(&mut self, name: &str, value: f64, unit: &str, higher_is_better: bool) {
        if self.fit(name, value) && !self.metrics.iter().any(|m| m.name == name) {
            self.metrics
                .push(Metric::new(name, value, unit, higher_is_better));
        }
    }

    /// Whether `value` is a figure a run can have: every figure an import
    /// stores (rates, counts, sizes, times, shares) is finite and not
    /// negative, as a measured run's are. The first that is not is kept
    /// for [`Imported::check`].
    fn fit(&mut self, name: &str, value: f64) -> bool {
        let fit = value.is_finite() && value >= 0.0;
        if !fit && self.unfit.is_none() {
            self.unfit = Some((name.to_string(), value));
        }
        fit
    }

    /// Refuses a run with a figure its format cannot hold (a negative rate,
    /// NaN, infinity), naming it: stored, it would be reported with an
    /// interval of −inf..inf. Measured runs are held to the same.
    pub fn check(&self) -> Result<(), Refusal> {
        let unfit = |what: &str, x: f64| {
            Refusal::new(
                0,
                format!("a finite figure of at least 0 for {what} (no run has another)"),
                &x.to_string(),
            )
        };
        if let Some((name, x)) = &self.unfit {
            return Err(unfit(name, *x));
        }
        let bad = |x: f64| !x.is_finite() || x < 0.0;
        if bad(self.duration_s) {
            return Err(unfit("the run's duration", self.duration_s));
        }
        if let Some(x) = self
            .latency
            .iter()
            .flat_map(|l| l.figures())
            .find(|x| bad(*x))
        {
            return Err(unfit("the latency", x));
        }
        let fairness = self.fairness.iter().flat_map(|f| {
            [
                f.events_avg,
                f.events_stddev,
                f.exec_time_avg,
                f.exec_time_stddev,
            ]
        });
        if let Some(x) = fairness.into_iter().find(|x| bad(*x)) {
            return Err(unfit("the threads' fairness", x));
        }
        Ok(())
    }
}

/// One format `virtperf import` reads.
pub struct Format {
    /// What `--kind` names it by.
    pub kind: &'static str,
    pub tool: &'static str,
    /// For help: what it reads and how it is recognised.
    pub summary: &'static str,
    /// Whether a file's text is this format (checked in [`FORMATS`] order).
    pub detect: fn(&str) -> bool,
    /// Reads it; `sub` is the part of `--kind` after a ':' (`sysbench:mutex`).
    pub parse: fn(&str, Option<&str>) -> Result<Vec<Imported>, Refusal>,
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Format({})", self.kind)
    }
}

/// `text`'s lines, numbered from 1, each checked against [`MAX_LINE`].
pub fn lines(text: &str) -> Result<Vec<(usize, &str)>, Refusal> {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if l.len() > MAX_LINE {
                Err(Refusal::new(
                    i + 1,
                    format!("a line of at most {MAX_LINE} characters"),
                    l,
                ))
            } else {
                Ok((i + 1, l.trim_end_matches('\r')))
            }
        })
        .collect()
}

/// The first number in `text` ("4333.65 MiB/sec" gives 4333.65), with
/// what follows it.
pub fn leading_number(text: &str) -> Option<(f64, &str)> {
    let t = text.trim_start();
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == '-' || c == '+') && i == 0)
                || ((c == 'e' || c == 'E') && i > 0))
        })
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    let x: f64 = t[..end].parse().ok()?;
    x.is_finite().then_some((x, &t[end..]))
}

/// A JSON document's text, bounded in nesting depth by serde_json (128).
pub fn json(text: &str, what: &str) -> Result<serde_json::Value, Refusal> {
    let start = text.find('{').unwrap_or(0);
    serde_json::from_str(&text[start..]).map_err(|e| {
        // Lines before the document's own first line, which holds the '{'.
        let line = text[..start].matches('\n').count() + e.line();
        // At the end of the file serde counts the line after the last
        // newline: the refusal names the file's last line.
        let line = line.min(text.lines().count().max(1));
        let found = text[start..]
            .lines()
            .nth(e.line().saturating_sub(1))
            .unwrap_or("");
        Refusal::new(line, format!("{what} ({e})"), found)
    })
}

/// A number at `path` in a JSON value (`["end", "sum_sent", "bytes"]`).
pub fn json_number(v: &serde_json::Value, path: &[&str]) -> Option<f64> {
    let mut at = v;
    for key in path {
        at = at.get(key)?;
    }
    at.as_f64().filter(|x| x.is_finite())
}

/// A number at `path`, or a refusal saying it was expected.
pub fn json_required(v: &serde_json::Value, path: &[&str], what: &str) -> Result<f64, Refusal> {
    json_number(v, path)
        .ok_or_else(|| Refusal::new(0, format!("{what} (a number at {})", path.join(".")), ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_error_is_on_a_line_of_the_file() {
        // Found by the smoke fuzz: text before the '{' on the same line
        // counted as a line of its own.
        let err = json("noise {\"a\": oops}", "x").unwrap_err();
        assert_eq!(err.line, 1);
        let err = json("noise\n\n{\"a\":\n oops}", "x").unwrap_err();
        assert_eq!(err.line, 4);
        assert_eq!(err.found, "oops}");
        // Also found by it: a document cut short is refused at its last line.
        let err = json("{\n\"a\": [1,\n", "x").unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn a_figure_no_run_can_have_refuses_the_run_naming_it() {
        // Issue 53, item 10: negative figures were stored.
        let def = &crate::workload::cpu::DEF;
        let mut imp = Imported::new(def, "sysbench", "1.0.20");
        imp.duration_s = 1.0;
        imp.declared("events_per_sec", 10.0);
        assert_eq!(imp.check(), Ok(()));
        imp.declared("events_per_sec", -1234.56);
        imp.own("total_time_s", f64::NAN, "s", false);
        let err = imp.check().unwrap_err().to_string();
        assert!(
            err.contains("for events_per_sec") && err.contains("found '-1234.56'"),
            "{err}"
        );
        assert_eq!(imp.metrics.len(), 1, "the unfit figure is not kept");
        let mut imp = Imported::new(def, "sysbench", "1.0.20");
        imp.own("x", f64::INFINITY, "", true);
        assert!(imp.check().unwrap_err().to_string().contains("for x"));
        let mut imp = Imported::new(def, "sysbench", "1.0.20");
        imp.duration_s = 1.0;
        imp.latency = Some(Latency {
            max: -3.0,
            ..Latency::default()
        });
        assert!(imp.check().unwrap_err().to_string().contains("latency"));
    }

    #[test]
    fn numbers_lead_and_lines_are_bounded() {
        assert_eq!(
            leading_number(" 4333.65 MiB/sec"),
            Some((4333.65, " MiB/sec"))
        );
        assert_eq!(leading_number("1e3x"), Some((1000.0, "x")));
        assert_eq!(leading_number("abc"), None);
        let long = "x".repeat(MAX_LINE + 1);
        let err = lines(&format!("ok\n{long}\n")).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.to_string().starts_with("line 2: expected a line"));
    }
}
