//! sysbench's text output, 1.0.x and 0.4.x, read into what every test
//! prints alike (version, threads, total time, events, latency, fairness);
//! each test's own lines are read by a hook in that workload's file
//! ([`SysbenchTestImport`]), which also says whether a log is its test's.
//!
//! 1.0's layout: a banner `sysbench 1.0.20 (using ...)`, `Number of
//! threads: N`, the test's header, its figures, then `General statistics:`
//! (`total time: 1.0001s`, `total number of events: N`), `Latency (ms):`
//! (`min:`, `avg:`, `max:`, `95th percentile:`, `sum:`) and `Threads
//! fairness:` (`events (avg/stddev): a/b`, `execution time (avg/stddev):
//! a/b`). 0.4's: a banner `sysbench 0.4.12:  multi-threaded system
//! evaluation benchmark`, `Number of threads: N`, `Doing ... test`, the
//! test's figures, then `Test execution summary:` (`total time: 35.4331s`,
//! `total number of events: N`, `total time taken by event execution:`,
//! `per-request statistics:` with `min: 3.41ms`, `avg:`, `max:`,
//! `approx.  95 percentile: 3.60ms`) and the same fairness lines.

use super::{leading_number, lines, Imported, Refusal};
use crate::core::result::{Fairness, Latency};
use crate::workload::WorkloadDef;

/// One sysbench test's reader, in its workload's file.
pub struct SysbenchTestImport {
    /// The workloads it can make runs of (the OLTP tests share one reader).
    pub defs: &'static [&'static WorkloadDef],
    /// Whether `log` is a run of this test (tried in the registry's order).
    pub claims: fn(&SysbenchLog) -> bool,
    /// Reads it; `forced` is the workload `--kind sysbench:NAME` named.
    pub read: fn(&SysbenchLog, Option<&'static WorkloadDef>) -> Result<Imported, Refusal>,
}

/// Whether `text` is sysbench 1.x's (its banner among the first lines).
pub fn detect_10(text: &str) -> bool {
    banner(text).is_some_and(|(_, v)| !v.starts_with("0."))
}

/// Whether `text` is sysbench 0.x's.
pub fn detect_04(text: &str) -> bool {
    banner(text).is_some_and(|(_, v)| v.starts_with("0."))
}

/// The banner's line number and version, if among the first lines.
fn banner(text: &str) -> Option<(usize, String)> {
    text.lines().take(20).enumerate().find_map(|(i, l)| {
        let rest = l.trim().strip_prefix("sysbench ")?;
        let v: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (v.contains('.') && v.len() <= 16).then(|| (i + 1, v.trim_end_matches('.').to_string()))
    })
}

/// What every sysbench test prints alike.
pub struct SysbenchLog<'a> {
    pub version: String,
    /// 0.4's layout.
    pub old: bool,
    pub lines: Vec<(usize, &'a str)>,
    pub threads: u64,
    pub total_time_s: f64,
    pub events: u64,
    pub latency: Option<Latency>,
    pub fairness: Option<Fairness>,
}

impl<'a> SysbenchLog<'a> {
    /// The rest of the first line that starts with `key` (leading blanks
    /// ignored), with its number.
    pub fn after(&self, key: &str) -> Option<(usize, &'a str)> {
        self.lines
            .iter()
            .find_map(|&(n, l)| l.trim_start().strip_prefix(key).map(|r| (n, r.trim())))
    }

    pub fn has(&self, key: &str) -> bool {
        self.after(key).is_some()
    }

    /// The number leading the rest of `key`'s line; None without such a
    /// line. Every figure sysbench prints is finite and at least 0: one
    /// that is not (`events per second: -1234.56`, `nan`) is refused with
    /// its line.
    pub fn number(&self, key: &str) -> Result<Option<f64>, Refusal> {
        self.after(key)
            .map(|(n, rest)| {
                leading_number(rest)
                    .map(|(x, _)| x)
                    .filter(|x| *x >= 0.0)
                    .ok_or_else(|| {
                        Refusal::new(n, format!("a number of at least 0 after '{key}'"), rest)
                    })
            })
            .transpose()
    }

    /// [`number`](Self::number), or a refusal naming the line it expected.
    pub fn required(&self, key: &str) -> Result<f64, Refusal> {
        self.number(key)?
            .ok_or_else(|| self.missing(&format!("a line '{key} ...'")))
    }

    /// A refusal for something that is not in the file at all.
    pub fn missing(&self, expected: &str) -> Refusal {
        let (n, last) = self.lines.last().copied().unwrap_or((0, ""));
        Refusal::new(n, format!("{expected} before the end of the file"), last)
    }

    /// A run of `def` with what every test prints: threads, time, events,
    /// latency and fairness.
    pub fn imported(&self, def: &'static WorkloadDef) -> Imported {
        let mut imp = Imported::new(def, "sysbench", &self.version);
        imp.option("threads", self.threads);
        imp.duration_s = self.total_time_s;
        imp.events = self.events;
        imp.latency = self.latency.clone();
        imp.fairness = self.fairness.clone();
        imp
    }

    /// Events per second of the whole run.
    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 / self.total_time_s.max(1e-9)
    }
}

/// A latency figure as 0.4 prints it ("3.41ms", "1.2s") in ms.
fn ms(text: &str) -> Option<f64> {
    let (x, unit) = leading_number(text)?;
    let scale = match unit.trim() {
        "" | "ms" => 1.0,
        "s" => 1000.0,
        "us" => 0.001,
        _ => return None,
    };
    Some(x * scale)
}

/// "a/b" into (a, b).
fn pair(text: &str) -> Option<(f64, f64)> {
    let (a, b) = text.split_once('/')?;
    Some((leading_number(a)?.0, leading_number(b)?.0))
}

/// Reads `text` (0.4's layout if `old`) as a run of the first of `tests`
/// that claims it, or of the test `sub` names (`--kind sysbench:NAME`).
pub fn parse(
    text: &str,
    sub: Option<&str>,
    old: bool,
    tests: &[&SysbenchTestImport],
) -> Result<Vec<Imported>, Refusal> {
    let all = lines(text)?;
    let version = match banner(text) {
        Some((_, v)) => v,
        None if sub.is_some() => "unknown".into(),
        None => {
            let (n, l) = all.first().copied().unwrap_or((0, ""));
            return Err(Refusal::new(
                n,
                "sysbench's banner ('sysbench 1.0.20 (using ...)' or 'sysbench 0.4.12: ...')",
                l,
            ));
        }
    };
    let mut log = SysbenchLog {
        version,
        old,
        lines: all,
        threads: 1,
        total_time_s: 0.0,
        events: 0,
        latency: None,
        fairness: None,
    };
    if let Some((n, rest)) = log.after("Number of threads:") {
        log.threads = leading_number(rest)
            .map(|(x, _)| x)
            .filter(|x| *x >= 1.0 && *x <= 1e6 && x.fract() == 0.0)
            .ok_or_else(|| Refusal::new(n, "a whole number of threads", rest))?
            as u64;
    }
    let summary = if old {
        "Test execution summary:"
    } else {
        "General statistics:"
    };
    if !log.has(summary) {
        return Err(log.missing(&format!(
            "sysbench's '{summary}' section (was the run cut short?)"
        )));
    }
    log.total_time_s = log.required("total time:")?;
    if log.total_time_s <= 0.0 {
        return Err(Refusal::new(
            log.after("total time:").map(|(n, _)| n).unwrap_or(0),
            "a total time above 0",
            "0",
        ));
    }
    let events = log.required("total number of events:")?;
    log.events = events.min(u64::MAX as f64) as u64;
    log.latency = latency(&log);
    log.fairness = fairness(&log);
    let forced = sub.map(|name| forced(tests, name)).transpose()?;
    let run = match forced {
        Some((test, def)) => (test.read)(&log, Some(def))?,
        None => {
            let test = tests
                .iter()
                .find(|t| (t.claims)(&log))
                .ok_or_else(|| log.missing("the lines of one of sysbench's tests"))?;
            (test.read)(&log, None)?
        }
    };
    Ok(vec![run])
}

/// The `Threads fairness:` lines, when both are there.
fn fairness(log: &SysbenchLog) -> Option<Fairness> {
    let (_, e) = log.after("events (avg/stddev):")?;
    let (_, t) = log.after("execution time (avg/stddev):")?;
    let (e, t) = (pair(e)?, pair(t)?);
    Some(Fairness {
        events_avg: e.0,
        events_stddev: e.1,
        exec_time_avg: t.0,
        exec_time_stddev: t.1,
    })
}

/// The test `--kind sysbench:NAME` names, with its reader.
fn forced<'t>(
    tests: &[&'t SysbenchTestImport],
    name: &str,
) -> Result<(&'t SysbenchTestImport, &'static WorkloadDef), Refusal> {
    tests
        .iter()
        .flat_map(|t| t.defs.iter().map(move |d| (*t, *d)))
        .find(|(_, d)| d.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = tests
                .iter()
                .flat_map(|t| t.defs.iter().map(|d| d.name))
                .collect();
            Refusal::new(
                0,
                format!("--kind sysbench:TEST with TEST one of {}", names.join(", ")),
                name,
            )
        })
}

/// 1.0's `Latency (ms):` block or 0.4's `per-request statistics:`.
fn latency(log: &SysbenchLog) -> Option<Latency> {
    let start = log.lines.iter().position(|(_, l)| {
        let t = l.trim();
        t == "Latency (ms):" || t == "per-request statistics:"
    })?;
    let block = &log.lines[start + 1..];
    let field = |key: &str| -> Option<f64> {
        block
            .iter()
            .take(8)
            .find_map(|(_, l)| l.trim().strip_prefix(key).and_then(|r| ms(r.trim())))
    };
    // Only what the log prints: one percentile, and a sum in 1.0 (0.4
    // prints none); the others are absent, never 0.
    let mut lat = Latency {
        min: field("min:")?,
        avg: field("avg:")?,
        max: field("max:")?,
        sum: field("sum:"),
        ..Latency::default()
    };
    // "95th percentile:" (1.0) or "approx.  95 percentile:" (0.4).
    let pct = block.iter().take(8).find_map(|(_, l)| {
        let t = l.trim();
        let (head, value) = t.split_once("percentile:")?;
        let p = leading_number(head.trim_start_matches("approx.").trim())?.0;
        Some((p, ms(value.trim())?))
    });
    if let Some((p, v)) = pct {
        lat.selected = Some((p, v));
        let slot = match p {
            50.0 => Some(&mut lat.p50),
            95.0 => Some(&mut lat.p95),
            99.0 => Some(&mut lat.p99),
            99.9 => Some(&mut lat.p999),
            _ => None,
        };
        if let Some(slot) = slot {
            *slot = Some(v);
        }
    }
    Some(lat)
}

#[cfg(test)]
mod tests {
    use crate::workload::registry::SYSBENCH;

    const CPU_10: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nRunning the test with following options:\nNumber of threads: 2\n\nPrime numbers limit: 20000\n\nThreads started!\n\nCPU speed:\n    events per second:   812.50\n\nGeneral statistics:\n    total time:                          10.0012s\n    total number of events:              8126\n\nLatency (ms):\n         min:                                    2.41\n         avg:                                    2.46\n         max:                                    9.18\n         95th percentile:                        2.52\n         sum:                                19990.12\n\nThreads fairness:\n    events (avg/stddev):           4063.0000/3.00\n    execution time (avg/stddev):   9.9951/0.00\n";

    #[test]
    fn the_common_part_is_read() {
        let runs = (SYSBENCH.parse)(CPU_10, None).unwrap();
        let r = &runs[0];
        assert_eq!(r.def.name, crate::workload::cpu::DEF.name);
        assert_eq!(r.version, "1.0.20");
        assert_eq!(r.events, 8126);
        assert_eq!(r.duration_s, 10.0012);
        let lat = r.latency.as_ref().unwrap();
        assert_eq!(
            (lat.min, lat.avg, lat.max, lat.p95, lat.sum),
            (2.41, 2.46, 9.18, Some(2.52), Some(19990.12))
        );
        assert_eq!(lat.selected, Some((95.0, 2.52)));
        // Issue 56: the percentiles the log does not print are absent, not 0.
        assert_eq!((lat.p50, lat.p99, lat.p999), (None, None, None));
        let json = serde_json::to_value(lat).unwrap();
        assert!(json["p50"].is_null() && json["p99"].is_null(), "{json}");
        assert_eq!(r.fairness.as_ref().unwrap().events_stddev, 3.0);
        assert!(r.options.contains(&("threads".into(), "2".into())));
        assert!(super::detect_10(CPU_10) && !super::detect_04(CPU_10));
    }

    #[test]
    fn a_negative_or_unreadable_figure_is_refused_with_its_line() {
        // Issue 53, item 10: 'events per second: -1234.56' was stored.
        for bad in ["-1234.56", "nan", "-inf"] {
            let log = CPU_10.replace("812.50", bad);
            let err = (SYSBENCH.parse)(&log, None).unwrap_err();
            assert_eq!(err.line, 11, "{bad}: {err}");
            assert!(
                err.expected
                    .contains("a number of at least 0 after 'events per second:'"),
                "{err}"
            );
        }
        let log = CPU_10.replace("2.41", "-2.41");
        let imp = &(SYSBENCH.parse)(&log, None).unwrap()[0];
        assert!(imp.check().unwrap_err().to_string().contains("latency"));
    }

    #[test]
    fn a_cut_log_is_refused_at_its_last_line() {
        let cut = &CPU_10[..CPU_10.find("General statistics").unwrap()];
        let err = (SYSBENCH.parse)(cut, None).unwrap_err();
        assert_eq!(err.line, cut.lines().count());
        assert!(err.expected.contains("General statistics"), "{err}");
        let err = (SYSBENCH.parse)(CPU_10, Some("gpu")).unwrap_err();
        assert!(err.expected.contains("sysbench:TEST"), "{err}");
    }
}
