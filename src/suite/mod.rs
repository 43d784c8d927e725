//! Suites: named lists of workload invocations from TOML, with parameter
//! sweeps (a list value runs once per element, lists multiply), built-in
//! suites (`quick`, `standard`, and the seed studies' test matrices), and the
//! interleaved order in which environments take their turns.

mod order;

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};

use crate::workload::Job;
pub use order::order;

/// One job of a suite, with its label.
#[derive(Debug, Clone)]
pub struct Entry {
    pub label: String,
    pub job: Job,
}

impl Entry {
    pub fn workload(&self) -> &str {
        self.job.name()
    }
}

#[derive(Debug, Clone)]
pub struct Suite {
    pub name: String,
    pub description: String,
    /// Repetitions the suite asks for, unless `--repeat` overrides.
    pub repeat: Option<u32>,
    /// The environments the suite compares when no `--env` is given (its
    /// matrix, e.g. seed 001's 1, 2 and 4 simultaneous VMs), as `--env`
    /// texts; `compare` parses them and leaves out those this machine
    /// cannot run, saying so.
    pub envs: Vec<String>,
    pub entries: Vec<Entry>,
}

/// The most environments a suite may name.
pub const MAX_SUITE_ENVS: usize = 32;

/// The most runs one round of a suite may hold, sweeps expanded.
pub const MAX_ENTRIES: usize = 10_000;
/// The most repetitions a suite may ask for (as `--repeat`).
pub const MAX_REPEAT: i64 = 1000;

/// Built-in suites, by name, from the `suites/` folder of the source tree.
pub const BUILTIN: &[(&str, &str)] = &[
    ("quick", include_str!("../../suites/quick.toml")),
    ("standard", include_str!("../../suites/standard.toml")),
    (
        "seed000-esxi-hyperv",
        include_str!("../../suites/seed000-esxi-hyperv.toml"),
    ),
    (
        "seed001-tschudin",
        include_str!("../../suites/seed001-tschudin.toml"),
    ),
    (
        "seed002-qemu-docker",
        include_str!("../../suites/seed002-qemu-docker.toml"),
    ),
    (
        "seed003-oltp",
        include_str!("../../suites/seed003-oltp.toml"),
    ),
    (
        "seed004-kvm-sysbench",
        include_str!("../../suites/seed004-kvm-sysbench.toml"),
    ),
    ("sandboxes", include_str!("../../suites/sandboxes.toml")),
];

/// A built-in suite by name, or a TOML file by path.
pub fn load(name_or_path: &str) -> Result<Suite> {
    if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return parse(name, text).with_context(|| format!("built-in suite '{name}'"));
    }
    let path = Path::new(name_or_path);
    if !path.exists() {
        bail!(
            "--suite {name_or_path}: no such built-in suite or file; built-in suites are {}",
            BUILTIN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--suite: cannot read {}", path.display()))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name_or_path.to_string());
    parse(&stem, &text).with_context(|| format!("suite file {}", path.display()))
}

/// A suite made of one invocation given on the command line.
pub fn from_args(args: &[String]) -> Result<Suite> {
    let entry = Entry {
        label: crate::core::text::redact_args(args).join(" "),
        job: Job::from_args(args)?,
    };
    Ok(Suite {
        name: "command-line".into(),
        description: String::new(),
        repeat: None,
        envs: Vec::new(),
        entries: vec![entry],
    })
}

/// Parses suite TOML: top-level `description` and `repeat`, and `[[run]]`
/// tables with `workload` and options (snake_case or kebab-case); a list value
/// is a sweep.
pub fn parse(name: &str, text: &str) -> Result<Suite> {
    let doc: toml::Table = text.parse().map_err(|e| anyhow!("not valid TOML: {e}"))?;
    let description = doc
        .get("description")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let repeat = match doc.get("repeat") {
        None => None,
        Some(toml::Value::Integer(n)) if (1..=MAX_REPEAT).contains(n) => Some(*n as u32),
        Some(other) => bail!("repeat = {other}: must be a whole number from 1 to {MAX_REPEAT}"),
    };
    for key in doc.keys() {
        if !["description", "repeat", "envs", "run"].contains(&key.as_str()) {
            bail!(
                "unknown top-level key '{key}': use description, repeat, envs and [[run]] tables"
            );
        }
    }
    let envs = match doc.get("envs") {
        None => Vec::new(),
        Some(toml::Value::Array(list))
            if list.len() <= MAX_SUITE_ENVS
                && list
                    .iter()
                    .all(|v| v.as_str().is_some_and(|s| !s.is_empty() && s.len() <= 500)) =>
        {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        }
        Some(_) => bail!(
            "envs: must be a list of at most {MAX_SUITE_ENVS} --env specs as strings, e.g. envs = [\"docker\", \"qemu:smp=2\"]"
        ),
    };
    let runs = match doc.get("run") {
        Some(toml::Value::Array(runs)) => runs,
        _ => bail!("no [[run]] tables: a suite needs at least one"),
    };
    let mut entries = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let table = run
            .as_table()
            .ok_or_else(|| anyhow!("run #{}: must be a table", i + 1))?;
        let points = expand(table).with_context(|| format!("run #{}", i + 1))?;
        if entries.len() + points.len() > MAX_ENTRIES {
            bail!(
                "run #{}: the suite grows past {MAX_ENTRIES} runs per round: split it or sweep fewer values",
                i + 1
            );
        }
        for (label, args) in points {
            let job = Job::from_args(&args).with_context(|| format!("run #{} ({label})", i + 1))?;
            entries.push(Entry { label, job });
        }
    }
    Ok(Suite {
        name: name.to_string(),
        description,
        repeat,
        envs,
        entries,
    })
}

/// One `[[run]]` table into (label, argv) per point of its sweeps.
fn expand(table: &toml::Table) -> Result<Vec<(String, Vec<String>)>> {
    let workload = table
        .get("workload")
        .and_then(|v| v.as_str())
        .ok_or_else(|| anyhow!("missing workload = \"NAME\""))?;
    let label = table.get("label").and_then(|v| v.as_str());
    // Each option with its list of values (one value unless swept).
    let mut axes: Vec<(String, Vec<String>, bool)> = Vec::new();
    for (key, value) in table {
        if key == "workload" || key == "label" {
            continue;
        }
        let option = key.replace('_', "-");
        let (values, swept) = match value {
            toml::Value::Array(items) => (
                items
                    .iter()
                    .map(scalar)
                    .collect::<Result<Vec<_>>>()
                    .with_context(|| key.to_string())?,
                true,
            ),
            other => (vec![scalar(other).with_context(|| key.to_string())?], false),
        };
        if values.is_empty() {
            bail!("{key} = []: a sweep needs at least one value");
        }
        axes.push((option, values, swept));
    }
    // Counted before anything is built: a few bytes of TOML can ask for
    // billions of points.
    let count = axes
        .iter()
        .try_fold(1usize, |n, (_, values, _)| n.checked_mul(values.len()))
        .filter(|&n| n <= MAX_ENTRIES);
    if count.is_none() {
        bail!(
            "its sweeps make more than {MAX_ENTRIES} runs ({}): sweep fewer values",
            axes.iter()
                .map(|(o, v, _)| format!("{} {o}", v.len()))
                .collect::<Vec<_>>()
                .join(" × ")
        );
    }
    let mut points: Vec<Vec<(String, String, bool)>> = vec![Vec::new()];
    for (option, values, swept) in &axes {
        points = points
            .into_iter()
            .flat_map(|point| {
                values.iter().map(move |v| {
                    let mut p = point.clone();
                    p.push((option.clone(), v.clone(), *swept));
                    p
                })
            })
            .collect();
    }
    Ok(points
        .into_iter()
        .map(|point| {
            let mut args = vec![workload.to_string()];
            let mut text = label.unwrap_or(workload).to_string();
            for (option, value, swept) in &point {
                args.push(format!("--{option}={value}"));
                if *swept || label.is_none() {
                    let shown = match crate::core::text::is_secret(option) {
                        true => crate::core::text::REDACTED,
                        false => value.as_str(),
                    };
                    let _ = write!(text, " {option}={shown}");
                }
            }
            (text, args)
        })
        .collect())
}

fn scalar(value: &toml::Value) -> Result<String> {
    Ok(match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(x) => x.to_string(),
        toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
        other => bail!("{other} is not a number, word or on/off"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_multiply_and_label_their_points() {
        let suite = parse(
            "t",
            r#"
            description = "test"
            repeat = 3
            [[run]]
            workload = "cpu"
            time = 1
            cpu_max_prime = [4000, 16000]
            threads = [1, 2]
            "#,
        )
        .unwrap();
        assert_eq!(suite.repeat, Some(3));
        assert_eq!(suite.entries.len(), 4);
        assert!(suite.entries.iter().any(
            |e| e.job.values.int("cpu-max-prime") == 16000 && e.job.values.int("threads") == 2
        ));
        assert_eq!(suite.entries[0].workload(), "cpu");
        assert!(suite.entries[3].label.contains("cpu-max-prime=16000"));
    }

    #[test]
    fn typos_are_reported_with_the_run_number() {
        let err = parse("t", "[[run]]\nworkload = \"cpu\"\ncpu_max_primes = 5\n").unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("run #1"), "{text}");
        assert!(text.contains("--cpu-max-primes"), "{text}");
        let err = parse("t", "[[run]]\nworkload = \"gpu\"\n").unwrap_err();
        assert!(format!("{err:#}").contains("unknown workload 'gpu'"));
        assert!(parse("t", "repeat = 0\n[[run]]\nworkload=\"cpu\"").is_err());
        assert!(parse("t", "description = 'x'").is_err());
    }

    #[test]
    fn sweeps_and_repeat_are_bounded() {
        // Issue 14, item 16: 8 lists of 10 values asked for 10^8 runs.
        let mut text = String::from("[[run]]\nworkload = \"cpu\"\n");
        for key in [
            "threads",
            "time",
            "cpu-max-prime",
            "events",
            "rate",
            "warmup-time",
            "percentile",
            "report-interval",
        ] {
            text.push_str(&format!("\"{key}\" = [1,2,3,4,5,6,7,8,9,10]\n"));
        }
        let started = std::time::Instant::now();
        let err = format!("{:#}", parse("t", &text).unwrap_err());
        assert!(err.contains("more than 10000 runs"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // Many small tables add up too.
        let table = "[[run]]\nworkload = \"cpu\"\nthreads = [1,2,3,4,5,6,7,8,9,10]\n";
        let err = format!("{:#}", parse("t", &table.repeat(1001)).unwrap_err());
        assert!(err.contains("past 10000"), "{err}");
        for bad in ["repeat = 4294967297", "repeat = 1001", "repeat = -1"] {
            let err = format!("{:#}", parse("t", &format!("{bad}\n{table}")).unwrap_err());
            assert!(err.contains("1 to 1000"), "{bad}: {err}");
        }
    }

    #[test]
    fn every_builtin_suite_parses() {
        for (name, _) in BUILTIN {
            let suite = load(name).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert!(!suite.entries.is_empty(), "{name}");
        }
    }

    #[test]
    fn the_quick_and_standard_suites_run_oltp_on_the_embedded_sqlite() {
        for name in ["quick", "standard"] {
            let suite = load(name).unwrap();
            let oltp: Vec<_> = suite
                .entries
                .iter()
                .filter(|e| e.job.def.name.starts_with("oltp_"))
                .collect();
            assert!(!oltp.is_empty(), "{name} has no OLTP run");
            for e in oltp {
                assert_eq!(e.job.values.text("db-driver"), "sqlite", "{name}");
                assert!(e.job.def.needs.prepare, "{name}");
            }
        }
    }

    #[test]
    fn the_quick_suite_runs_every_network_test_briefly() {
        let suite = load("quick").unwrap();
        let net: Vec<_> = suite
            .entries
            .iter()
            .filter(|e| e.job.def.needs.network.is_some())
            .collect();
        assert_eq!(
            net.len(),
            6,
            "tcp_stream, tcp_maerts, tcp_rr, tcp_crr, udp_rr, udp_stream"
        );
        assert!(net.iter().all(|e| e.job.values.float("time") <= 2.0));
        // Seed 001's network category: each of its five tests is there.
        let feeding = net
            .iter()
            .filter(|e| {
                let test = e.job.values.text("net-test");
                e.job
                    .def
                    .metrics
                    .iter()
                    .any(|m| m.category.is_some() && m.name.starts_with(&format!("{test}_")))
            })
            .count();
        assert_eq!(feeding, 5);
    }

    #[test]
    fn unknown_suites_list_the_builtins() {
        let err = load("nope-not-a-suite").unwrap_err().to_string();
        assert!(err.contains("quick") && err.contains("standard"), "{err}");
    }
}
