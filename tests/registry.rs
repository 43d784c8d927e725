//! Every workload in the registry builds: from its defaults, and once with
//! each value of each of its choice options. Nothing runs; a build that
//! panics (an option read by a name its tables lack, `v.int("typo")`) fails
//! here rather than in a user's run, and a refused combination must say why
//! as bad input.

use std::panic::{catch_unwind, AssertUnwindSafe};

use virtperf::core::options::{CliError, OptKind};
use virtperf::workload::{Job, WorkloadDef, WORKLOADS};

/// Builds `def` from `args`; `Err` says what went wrong and how.
fn build(def: &'static WorkloadDef, args: &[String]) -> Result<(), String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        let (job, _) = Job::parse(def, args, &[]).map_err(|e| format!("refused: {e}"))?;
        match (def.build)(&job.values) {
            Ok(_) => Ok(()),
            // A combination a workload cannot run is bad input, said so.
            Err(e) if e.downcast_ref::<CliError>().is_some() => Err(format!("refused: {e:#}")),
            Err(e) => Err(format!("failed, not as bad input: {e:#}")),
        }
    }));
    match outcome {
        Ok(result) => result,
        Err(panic) => Err(format!(
            "panicked: {}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)")
        )),
    }
}

#[test]
fn every_workload_builds_from_its_defaults_and_from_each_choice() {
    // Workloads with a work directory point it here; building creates
    // nothing, but a stray file would land in a temporary directory.
    let dir = tempfile::tempdir().unwrap();
    std::env::set_current_dir(dir.path()).unwrap();
    let mut built = 0;
    let mut refused = Vec::new();
    let mut broken = Vec::new();
    for def in WORKLOADS {
        let (engine, own) = def.option_tables();
        // An option a run requires (fileio's --file-test-mode) is given
        // its first choice; without it, the run is refused naming it.
        let required = def.sysbench.map_or(&[][..], |s| s.required_for_run);
        let given = |except: &str| -> Vec<String> {
            required
                .iter()
                .filter(|n| **n != except)
                .map(
                    |n| match own.iter().find(|o| o.name == *n).map(|o| o.kind) {
                        Some(OptKind::Choice(words)) => format!("--{n}={}", words[0]),
                        other => panic!("{}: required --{n} is {other:?}, not a choice", def.name),
                    },
                )
                .collect()
        };
        if let Some(name) = required.first() {
            let why = build(def, &[]).unwrap_err();
            assert!(
                why.starts_with("refused") && why.contains(&format!("--{name} is required")),
                "{}: {why}",
                def.name
            );
        }
        let mut cases: Vec<Vec<String>> = vec![given("")];
        for spec in engine.iter().chain(own) {
            if let OptKind::Choice(words) = spec.kind {
                cases.extend(words.iter().map(|w| {
                    let mut args = given(spec.name);
                    args.push(format!("--{}={w}", spec.name));
                    args
                }));
            }
        }
        for args in cases {
            let what = format!("{} {}", def.name, args.join(" "));
            match build(def, &args) {
                Ok(()) => built += 1,
                Err(why) if why.starts_with("refused") && args.len() > required.len() => {
                    refused.push(format!("{what}: {why}"))
                }
                Err(why) => broken.push(format!("{what}: {why}")),
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    assert!(built >= WORKLOADS.len(), "{built} built");
    // Refused combinations are documented ones; print them for the log.
    for r in &refused {
        eprintln!("{r}");
    }
}
