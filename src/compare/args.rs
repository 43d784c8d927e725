//! `virtperf compare`'s arguments into a typed `CompareArgs`: its options,
//! a one-off workload given after them, and what `--resume` would not use.
//! `cli` parses a command line with it, and a resume the arguments a store
//! from before typed requests kept.

use std::path::Path;
use std::time::Duration;

use super::plan::{CompareArgs, PlanArgs, Resume, SuiteSource, OPTIONS};
use super::schedule::Repeat;
use crate::analysis::gate::Gate;
use crate::core::options::{self, CliError, OptKind};
use crate::env::Spec;
use crate::report::{self, View};
use crate::store::Location;
use crate::workload;

/// Parses compare's arguments (without the word `compare`); also the
/// arguments a store from before typed requests kept, for a resume.
pub fn parse(args: &[String]) -> Result<CompareArgs, CliError> {
    let (own, invocation) = split_args(args);
    misplaced(&own, &invocation)?;
    let (v, rest) = options::parse(&[OPTIONS], &own, "compare")?;
    if let Some(extra) = rest.first() {
        return Err(CliError::Usage(format!(
            "compare: '{extra}' is neither an option nor a workload; workloads are {}",
            workload::names()
        )));
    }
    let suite = if invocation.is_empty() {
        SuiteSource::Suite(v.text("suite").to_string())
    } else {
        SuiteSource::Invocation(invocation)
    };
    let repeat = match v.text("repeat") {
        // The suite's own `repeat`, unless the command line says.
        _ if !v.was_given("repeat") => None,
        "auto" => Some(Repeat::Auto),
        n => match n.parse::<usize>() {
            Ok(k) if (1..=1000).contains(&k) => Some(Repeat::Fixed(k)),
            _ => {
                return Err(CliError::InvalidValue {
                    name: "repeat".into(),
                    value: n.into(),
                    allowed: "a whole number from 1 to 1000, or auto".into(),
                })
            }
        },
    };
    let baseline = Spec::parse(v.text("baseline"))?;
    let baseline_from = v
        .text_opt("baseline-from")
        .map(|t| super::baseline_from::parse(t, v.text_opt("store-password-file").map(Path::new)))
        .transpose()?;
    if let Some(from) = &baseline_from {
        borrowing(&v, from)?;
    }
    let envs = v
        .list("env")
        .iter()
        .map(|s| Spec::parse(s))
        .collect::<Result<_, _>>()?;
    Ok(CompareArgs {
        plan: PlanArgs {
            suite,
            baseline,
            envs,
            repeat,
            budget: Duration::from_secs_f64(v.float("budget")),
            margin_pct: v.float("margin"),
            baseline_from: baseline_from.as_ref().map(|f| f.text.clone()),
        },
        out: out(&v)?,
        format: report::exporter(v.text("format"))?,
        view: View {
            detail: v.flag("detail"),
        },
        figures: report::figures_dir(v.text_opt("figures"))?,
        start_at: v.text_opt("start-at").map(str::to_string),
        resume: v.flag("resume").then(|| Resume {
            ignored: beyond_resume(args),
        }),
        fail_on: Gate::parse_all(v.list("fail-on"))?,
        baseline_from,
    })
}

/// What `--baseline-from` cannot go with: `--baseline` (the earlier
/// comparison's is the baseline) and `--repeat auto` (its design pairs
/// each run with the baseline's of the same round, which runs from
/// another day do not have).
fn borrowing(v: &options::Values, from: &super::baseline_from::Source) -> Result<(), CliError> {
    if v.was_given("baseline") {
        return Err(CliError::Usage(format!(
            "--baseline-from {} and --baseline: the earlier comparison's baseline is this one's; leave out --baseline (name this run's environments with --env)",
            from.text
        )));
    }
    if v.was_given("repeat") && v.text("repeat") == "auto" {
        return Err(CliError::Usage(format!(
            "--baseline-from {} and --repeat auto: the adaptive design pairs every run with the baseline's of its round, and an earlier comparison's runs have no partner here; give --repeat N (by default, as many rounds as the earlier baseline has runs, 3 to 30)",
            from.text
        )));
    }
    Ok(())
}

/// `--out`: a results directory, or a PostgreSQL store (not with
/// `--resume`: a store many hosts write to has no one newest comparison
/// that is this host's).
fn out(v: &options::Values) -> Result<Location, CliError> {
    let at = Location::parse(
        v.text("out"),
        "--out",
        v.text_opt("store-password-file").map(Path::new),
    )?;
    if v.flag("resume") && at.dir().is_none() {
        return Err(CliError::Usage(format!(
            "--resume --out {at}: resuming works on a results directory; a PostgreSQL store is shared by a fleet, whose newest unfinished comparison may be another host's. Start a new comparison (without --resume)"
        )));
    }
    Ok(at)
}

/// Splits compare's own options from a trailing workload invocation (a
/// workload's name or a Lua script's path first).
fn split_args(args: &[String]) -> (Vec<String>, Vec<String>) {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if workload::find(a).is_some() || workload::lua::is_script(a) {
            return (args[..i].to_vec(), args[i..].to_vec());
        }
        // An option taking the next word as its value.
        if a.starts_with("--") && !a.contains('=') && !matches!(a.as_str(), "--resume" | "--detail")
        {
            i += 1;
        }
        i += 1;
    }
    (args.to_vec(), Vec::new())
}

/// Refuses compare's own options given after the workload (`compare cpu
/// --repeat 3`), which the workload would call unknown, saying what they
/// are and the order that works.
fn misplaced(own: &[String], invocation: &[String]) -> Result<(), CliError> {
    let Some(def) = invocation.first().and_then(|w| workload::find(w)) else {
        return Ok(());
    };
    let (mut moved, mut kept) = (Vec::new(), vec![invocation[0].clone()]);
    let mut it = invocation[1..].iter();
    while let Some(a) = it.next() {
        let name = a
            .strip_prefix("--")
            .map(|b| b.split_once('=').map_or(b, |(n, _)| n));
        match name.and_then(|n| OPTIONS.iter().find(|o| o.name == n)) {
            Some(o) if !def.accepts(o.name) => {
                moved.push(a.clone());
                if !a.contains('=') && !matches!(o.kind, OptKind::Bool) {
                    moved.extend(it.next().cloned());
                }
            }
            _ => kept.push(a.clone()),
        }
    }
    if moved.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = moved
        .iter()
        .filter_map(|a| a.strip_prefix("--"))
        .map(|b| b.split_once('=').map_or(b, |(n, _)| n))
        .collect();
    let fixed: Vec<String> = [own, &moved, &kept].concat();
    Err(CliError::Usage(format!(
        "compare: --{} {} compare's, not {}'s: compare's options go before the workload, as in 'virtperf compare {}'",
        names.join(", --"),
        if names.len() == 1 { "is" } else { "are" },
        def.name,
        crate::core::text::redact_args(&fixed).join(" ")
    )))
}

/// The arguments that `--resume` would not use: everything but `--resume`,
/// `--out DIR` and `--start-at TIME`.
fn beyond_resume(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--resume" | "--resume=on" => {}
            "--out" => {
                it.next();
            }
            a if a.starts_with("--out=") => {}
            // A resumed comparison may wait for a common start again.
            "--start-at" => {
                it.next();
            }
            a if a.starts_with("--start-at=") => {}
            // A gate is this invocation's, as is its exit code.
            "--fail-on" => {
                it.next();
            }
            a if a.starts_with("--fail-on=") => {}
            other => out.push(other.to_string()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::plan::{digest, resolve, Plan};
    use crate::core::text::owned as s;

    /// The plan an argument list resolves to, and whether it resumes.
    fn plan_quiet(args: &[String]) -> anyhow::Result<(Plan, bool)> {
        let parsed = parse(args)?;
        let (plan, _) = resolve(&parsed.plan, &crate::core::observer::Silent)?;
        Ok((plan, parsed.resume.is_some()))
    }

    #[test]
    fn a_suites_repeat_is_used_unless_the_command_line_says() {
        // Issue 14, item 16: `repeat` was parsed and never used.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.toml");
        std::fs::write(&path, "repeat = 2\n[[run]]\nworkload = \"cpu\"\n").unwrap();
        let p = path.display().to_string();
        let (plan, _) = plan_quiet(&s(&["--env", "host", "--suite", &p])).unwrap();
        assert_eq!(plan.repeat, Repeat::Fixed(2));
        let (plan, _) = plan_quiet(&s(&["--env", "host", "--suite", &p, "--repeat", "3"])).unwrap();
        assert_eq!(plan.repeat, Repeat::Fixed(3));
    }

    #[test]
    fn resume_takes_no_other_settings_and_notices_a_changed_suite() {
        // Issue 14, item 17.
        assert!(beyond_resume(&s(&["--resume", "--out", "d"])).is_empty());
        assert!(beyond_resume(&s(&["--out=d", "--resume"])).is_empty());
        assert_eq!(
            beyond_resume(&s(&["--resume", "--repeat", "9", "cpu"])),
            s(&["--repeat", "9", "cpu"])
        );
        let parsed = parse(&s(&["--resume", "--repeat", "9", "cpu"])).unwrap();
        assert_eq!(parsed.resume.unwrap().ignored, s(&["--repeat", "9", "cpu"]));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        let p = path.display().to_string();
        std::fs::write(&path, "[[run]]\nworkload = \"cpu\"\ntime = 1\n").unwrap();
        let (a, _) = plan_quiet(&s(&["--env", "host", "--suite", &p])).unwrap();
        let (same, _) = plan_quiet(&s(&["--env", "host", "--suite", &p])).unwrap();
        assert_eq!(digest(&a), digest(&same));
        std::fs::write(&path, "[[run]]\nworkload = \"cpu\"\ntime = 2\n").unwrap();
        let (b, _) = plan_quiet(&s(&["--env", "host", "--suite", &p])).unwrap();
        assert_ne!(digest(&a), digest(&b));
    }

    #[test]
    fn compares_options_after_the_workload_are_said_to_go_before_it() {
        // Issue 52, item 6: "unknown option '--repeat'; run 'virtperf cpu help'".
        let err = parse(&s(&[
            "--env", "docker", "cpu", "--time=1", "--repeat", "3", "--detail",
        ]))
        .err()
        .unwrap();
        assert!(matches!(err, CliError::Usage(_)));
        let text = err.to_string();
        assert!(
            text.contains("--repeat, --detail are compare's, not cpu's")
                && text.contains("compare's options go before the workload")
                && text
                    .contains("'virtperf compare --env docker --repeat 3 --detail cpu --time=1'"),
            "{text}"
        );
        // The workload's own options, and options given in order, pass.
        assert!(parse(&s(&["--repeat", "3", "cpu", "--time=1"])).is_ok());
        let err = parse(&s(&["cpu", "--out=x", "--mysql-password=pw"]))
            .err()
            .unwrap();
        assert!(!err.to_string().contains("pw"), "{err}");
    }

    #[test]
    fn a_trailing_workload_is_split_off() {
        let (own, wl) = split_args(&s(&["--env", "host", "--repeat", "3", "cpu", "--time=2"]));
        assert_eq!(own, s(&["--env", "host", "--repeat", "3"]));
        assert_eq!(wl, s(&["cpu", "--time=2"]));
        let (own, wl) = split_args(&s(&["--resume", "--out=x"]));
        assert_eq!(own.len(), 2);
        assert!(wl.is_empty());
    }

    #[test]
    fn same_kind_twice_gets_distinct_labels() {
        let (p, _) = plan_quiet(&s(&[
            "--env",
            "host",
            "--env",
            "host:name=host-b",
            "cpu",
            "--time=1",
        ]))
        .unwrap();
        let labels: Vec<_> = p.specs.iter().map(|s| s.label.clone()).collect();
        assert_eq!(labels, vec!["host", "host-b"]);
        let (p, _) = plan_quiet(&s(&["--env", "docker", "--env", "docker", "cpu"])).unwrap();
        let labels: Vec<_> = p.specs.iter().map(|s| s.label.clone()).collect();
        assert_eq!(labels, vec!["host", "docker", "docker (2)"]);
        assert!(plan_quiet(&s(&["--repeat", "zero", "--env", "host", "cpu"])).is_err());
    }

    #[test]
    fn the_stored_arguments_read_back_as_the_stored_request() {
        // A store keeps the request as JSON and, for builds from before,
        // as arguments: both must say the same.
        for args in [
            s(&[
                "--env", "docker", "--env", "docker", "--repeat", "3", "cpu", "--time=1",
            ]),
            s(&[
                "--env",
                "host:name=b",
                "--budget=90.5",
                "--margin",
                "2",
                "--suite",
                "standard",
            ]),
            s(&[
                "--env",
                "host:name=b",
                "--out",
                "x",
                "oltp_read_write",
                "--mysql-password=pw",
            ]),
        ] {
            let parsed = parse(&args).unwrap();
            let (_, stored) = resolve(&parsed.plan, &crate::core::observer::Silent).unwrap();
            let again = parse(&stored.to_args()).unwrap();
            assert_eq!(again.plan, stored, "{args:?}");
            let json = serde_json::to_string(&stored).unwrap();
            assert!(!json.contains("pw\""), "{json}");
            assert_eq!(serde_json::from_str::<PlanArgs>(&json).unwrap(), stored);
        }
    }
}
