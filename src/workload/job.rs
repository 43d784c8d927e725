//! The typed job: which workload, which command, and its validated option
//! values. Built from argv (the command line, a suite entry) or from the
//! wire (an agent's plan), always validated against the workload's own
//! option tables; the host reads deadlines from its typed values.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::def::WorkloadDef;
use super::lua::{self, ScriptJob, ScriptWire};
use super::{registry, Command};
use crate::core::options::{self, CliError, OptKind, OptionSpec, Values};

/// One workload invocation, validated.
#[derive(Debug, Clone)]
pub struct Job {
    pub def: &'static WorkloadDef,
    pub command: Command,
    /// The workload's options and the engine options it accepts (a
    /// script's: the options it declares and the common ones).
    pub values: Values,
    /// A sysbench Lua script the job runs (`def` is then [`lua::DEF`]),
    /// its text carried along.
    pub script: Option<Arc<ScriptJob>>,
}

/// A job as it crosses the agent protocol: the options given explicitly, as
/// text, to be validated again on the other side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobWire {
    pub workload: String,
    pub command: String,
    pub options: BTreeMap<String, String>,
    /// A script job's script, its text included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<ScriptWire>,
}

impl Job {
    /// Parses `args` (options and at most one command word) for `def`.
    /// `extra` are tables of options that are not the job's (the command
    /// line's `--json`); their values come back beside the job.
    pub fn parse(
        def: &'static WorkloadDef,
        args: &[String],
        extra: &[&[OptionSpec]],
    ) -> Result<(Job, Values), CliError> {
        let (engine, own) = def.option_tables();
        let mut tables: Vec<&[OptionSpec]> = vec![&engine, own];
        tables.extend_from_slice(extra);
        let (all, positionals) =
            options::parse(&tables, args, def.name).map_err(|e| refused_engine_option(def, e))?;
        let command = match positionals.as_slice() {
            [] => Command::Run,
            [one] => Command::parse(one).ok_or_else(|| {
                CliError::Usage(format!(
                    "unknown command '{one}' for workload '{}': use prepare, run or cleanup",
                    def.name
                ))
            })?,
            more => {
                return Err(CliError::Usage(format!(
                    "too many commands ({}): give one of prepare, run or cleanup",
                    more.join(" ")
                )))
            }
        };
        let mut job = Job {
            def,
            command,
            values: all.subset(|name| def.accepts(name)),
            script: None,
        };
        job.resolve_passwords()?;
        job.check()?;
        Ok((job, all))
    }

    /// A job from argv with the workload's name first (`cpu --time=2`), as
    /// suites write them.
    pub fn from_args(args: &[String]) -> Result<Job, CliError> {
        let (name, rest) = args
            .split_first()
            .ok_or_else(|| CliError::Usage("an empty invocation: name a workload".into()))?;
        if lua::is_script(name) {
            return Job::from_script(name, rest);
        }
        let def = lookup(name)?;
        Ok(Job::parse(def, rest, &[])?.0)
    }

    /// A job running the sysbench Lua script at `path` with `args` (its
    /// options; `run` or no command), to ship into an environment.
    pub fn from_script(path: &str, args: &[String]) -> Result<Job, CliError> {
        Job::scripted(ScriptJob::read(path)?, args)
    }

    fn scripted(script: ScriptJob, args: &[String]) -> Result<Job, CliError> {
        let job = Job {
            def: &lua::DEF,
            command: Command::Run,
            values: script.values(args)?,
            script: Some(Arc::new(script)),
        };
        job.check()?;
        Ok(job)
    }

    /// What the job runs: its workload's name, or its script's file name
    /// (a result's `workload`).
    pub fn name(&self) -> &str {
        match &self.script {
            Some(s) => &s.name,
            None => self.def.name,
        }
    }

    /// A password option not given takes its value from its `...-file`
    /// option, else from its environment variable (PGPASSWORD, MYSQL_PWD).
    fn resolve_passwords(&mut self) -> Result<(), CliError> {
        for (name, var) in crate::workload::oltp::PASSWORD_SOURCES
            .iter()
            .chain(crate::workload::net::SECRET_SOURCES)
        {
            let Some(spec) = self.def.options.iter().find(|o| o.name == *name) else {
                continue;
            };
            if self.values.was_given(name) {
                continue;
            }
            let file = format!("{name}-file");
            let what = if name.contains("secret") {
                "secret"
            } else {
                "password"
            };
            let value = if self.values.was_given(&file) {
                let path = self.values.text(&file).to_string();
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    CliError::Usage(format!(
                        "--{file}={path}: cannot read it ({e}); give a readable file whose first line is the {what}, or set {var}"
                    ))
                })?;
                Some(text.lines().next().unwrap_or("").to_string())
            } else {
                std::env::var(var).ok().filter(|v| !v.is_empty())
            };
            if let Some(v) = value {
                self.values.set(spec, &v)?;
            }
        }
        Ok(())
    }

    /// Cross-option checks every job passes, wherever it was built.
    fn check(&self) -> Result<(), CliError> {
        let v = &self.values;
        let invalid = |name: &str, allowed: &str| CliError::InvalidValue {
            name: name.into(),
            value: v.text(name).into(),
            allowed: allowed.into(),
        };
        if v.has("forced-shutdown") {
            let time = if v.has("time") {
                v.float("time") as u64
            } else {
                10
            };
            crate::engine::forced_shutdown(v.text("forced-shutdown"), time).map_err(|_| {
                invalid(
                    "forced-shutdown",
                    "off, a number of seconds, or N% of --time",
                )
            })?;
        }
        if v.has("report-checkpoints") {
            crate::engine::checkpoints(v.text("report-checkpoints")).map_err(|_| {
                invalid(
                    "report-checkpoints",
                    "whole seconds from the start, comma-separated (at most 256)",
                )
            })?;
        }
        if v.has("thread-stack-size")
            && v.was_given("thread-stack-size")
            && crate::engine::sysbench_size(v.text("thread-stack-size")) == 0
        {
            return Err(invalid("thread-stack-size", "a size such as 64K or 1M"));
        }
        if let Some(missing) = self.missing_for_run() {
            return Err(missing);
        }
        if v.has("time") && v.has("events") && v.float("time") == 0.0 && v.int("events") == 0 {
            return Err(CliError::Usage(
                "--time=0 and --events=0 together would run forever: set --time=SECONDS or --events=N"
                    .into(),
            ));
        }
        Ok(())
    }

    /// An option the workload cannot run without (fileio's
    /// `--file-test-mode`, as in sysbench), not given to a `run`: refused
    /// with its choices as the job is built, so no environment starts for
    /// a run that would only fail inside it.
    fn missing_for_run(&self) -> Option<CliError> {
        if self.command != Command::Run {
            return None;
        }
        let required = self.def.sysbench.map_or(&[][..], |s| s.required_for_run);
        let name = required
            .iter()
            .find(|n| self.values.has(n) && self.values.text(n).is_empty())?;
        let fix = match self.def.options.iter().find(|o| o.name == *name) {
            Some(OptionSpec {
                kind: OptKind::Choice(words),
                ..
            }) => match words.split_last() {
                Some((last, [])) => format!("give --{name}={last}"),
                Some((last, rest)) => format!("choose {} or {last}", rest.join(", ")),
                None => format!("give --{name}"),
            },
            _ => format!("give --{name}"),
        };
        Some(CliError::Usage(format!(
            "--{name} is required for run: {fix}"
        )))
    }

    pub fn to_wire(&self) -> JobWire {
        JobWire {
            workload: self.name().to_string(),
            command: self.command.name().to_string(),
            options: self
                .values
                .given_texts()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            script: self.script.as_ref().map(|s| s.to_wire()),
        }
    }

    /// Validates a job that came over the wire exactly as a typed one (a
    /// script's options against what the script declares).
    pub fn from_wire(wire: &JobWire) -> Result<Job, CliError> {
        let command = Command::parse(&wire.command).ok_or_else(|| {
            CliError::Usage(format!(
                "unknown command '{}': use prepare, run or cleanup",
                wire.command
            ))
        })?;
        let mut args: Vec<String> = wire
            .options
            .iter()
            .map(|(k, v)| format!("--{k}={v}"))
            .collect();
        args.push(command.name().to_string());
        if let Some(script) = &wire.script {
            return Job::scripted(ScriptJob::from_wire(script)?, &args);
        }
        let def = lookup(&wire.workload)?;
        Ok(Job::parse(def, &args, &[])?.0)
    }

    /// The same job with another command.
    pub fn with_command(&self, command: Command) -> Job {
        Job {
            command,
            ..self.clone()
        }
    }

    /// Points the workload's work directory at `dir` unless the user named one.
    pub fn with_workdir(&self, dir: &str) -> Result<Job, CliError> {
        let mut job = self.clone();
        if let Some(option) = self.def.needs.workdir {
            if !dir.is_empty() && !job.values.was_given(option) {
                let spec = self
                    .def
                    .options
                    .iter()
                    .find(|o| o.name == option)
                    .expect("the registry test checks the workdir option exists");
                job.values.set(spec, dir)?;
            }
        }
        Ok(job)
    }

    /// The same job with one of its workload's own options set to `raw`
    /// (validated like typed input).
    pub fn with_option(&self, name: &str, raw: &str) -> Result<Job, CliError> {
        let spec = self
            .def
            .options
            .iter()
            .find(|o| o.name == name)
            .ok_or_else(|| CliError::Usage(format!("{} has no option --{name}", self.def.name)))?;
        let mut job = self.clone();
        job.values.set(spec, raw)?;
        Ok(job)
    }

    /// How long the job may take in an environment before it is declared
    /// hung: generous, since emulated guests run many times slower than the
    /// host and file workloads prepare their files first.
    pub fn deadline(&self) -> Duration {
        let v = &self.values;
        let secs = |name: &str| if v.has(name) { v.float(name) } else { 0.0 };
        let base = 10.0 + secs("time") + secs("warmup-time");
        Duration::from_secs_f64(base * 10.0 + 300.0)
    }

    /// The job as a command line, for labels and messages.
    /// Secret options (passwords) read `***`.
    pub fn args(&self) -> Vec<String> {
        let mut out = vec![match &self.script {
            Some(s) => s.source.path.clone(),
            None => self.def.name.to_string(),
        }];
        out.extend(self.values.given_texts().map(|(k, v)| format!("--{k}={v}")));
        crate::core::text::redact_args(&out)
    }
}

fn lookup(name: &str) -> Result<&'static WorkloadDef, CliError> {
    registry::find(name).ok_or_else(|| {
        CliError::Usage(format!(
            "unknown workload '{name}': choose one of {}. Run 'virtperf --help' for usage",
            registry::names()
        ))
    })
}

/// An engine option given to a workload the engine does not drive gets a
/// message saying so, rather than "unknown option".
fn refused_engine_option(def: &WorkloadDef, err: CliError) -> CliError {
    match &err {
        CliError::UnknownOption { name, .. } if crate::engine::ALL.contains(&name.as_str()) => {
            CliError::Usage(format!(
                "--{name} does not apply to {}: it runs a fixed amount of work, not under the engine's limits; leave --{name} out (run 'virtperf {} help' for its options)",
                def.name, def.name
            ))
        }
        _ => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::text::owned as s;

    #[test]
    fn a_run_without_an_option_it_requires_is_refused_as_the_job_is_built() {
        // Built, so refused before any environment starts for it.
        let err = Job::from_args(&s(&["fileio", "--file-num=2"])).unwrap_err();
        assert!(matches!(err, CliError::Usage(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "--file-test-mode is required for run: choose seqwr, seqrewr, seqrd, rndrd, rndwr or rndrw"
        );
        let run = Job::from_args(&s(&["fileio", "run"])).unwrap_err();
        assert_eq!(run.to_string(), err.to_string());
        // So is one that comes over the wire.
        let mut wire = Job::from_args(&s(&["fileio", "--file-test-mode=seqrd"]))
            .unwrap()
            .to_wire();
        wire.options.remove("file-test-mode");
        assert!(Job::from_wire(&wire).is_err());
        // Preparing and cleaning up need no mode; a run with one is whole.
        for ok in [
            &["fileio", "prepare"][..],
            &["fileio", "cleanup"],
            &["fileio", "--file-test-mode=rndrw"],
        ] {
            assert!(Job::from_args(&s(ok)).is_ok(), "{ok:?}");
        }
        // A workload that requires nothing.
        assert!(Job::from_args(&s(&["cpu"])).is_ok());
    }

    #[test]
    fn a_job_survives_the_wire() {
        let job = Job::from_args(&s(&[
            "fileio",
            "--file-dir",
            "run",
            "--time",
            "600",
            "--file-test-mode=seqwr",
        ]))
        .unwrap();
        // Two-word options keep their values, even one equal to a command.
        assert_eq!(job.values.text("file-dir"), "run");
        assert_eq!(job.values.float("time"), 600.0);
        let wire = job.to_wire();
        let json = serde_json::to_string(&wire).unwrap();
        let back = Job::from_wire(&serde_json::from_str(&json).unwrap()).unwrap();
        assert_eq!(back.values.text("file-dir"), "run");
        assert_eq!(back.command, Command::Run);
        assert_eq!(back.def.name, "fileio");
        // The deadline comes from the typed value, however it was written.
        assert!(back.deadline() > Duration::from_secs(6000));
    }

    #[test]
    fn a_script_job_carries_its_text_and_is_checked_against_its_options() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.lua");
        std::fs::write(
            &path,
            "sysbench.cmdline.options = { loops = {'work', 10} }\nfunction event() end\n",
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let job = Job::from_args(&s(&[p, "--loops=20", "--time=3"])).unwrap();
        assert_eq!(job.name(), "mine.lua");
        assert_eq!(job.args()[0], p);
        let wire = job.to_wire();
        assert_eq!(wire.workload, "mine.lua");
        let json = serde_json::to_string(&wire).unwrap();
        // Gone from the disk, the script still runs from the wire.
        drop(dir);
        let back = Job::from_wire(&serde_json::from_str(&json).unwrap()).unwrap();
        assert_eq!(back.name(), "mine.lua");
        // A script's number option travels as its text (the script reads
        // it as strtod does, as sysbench's do).
        assert_eq!(back.values.text("loops"), "20");
        assert_eq!(back.values.float("time"), 3.0);
        let script = back.script.as_ref().unwrap();
        assert!(script.source.shipped);
        // Its options are checked there as here.
        let mut bad = wire.clone();
        bad.options.insert("nosuch".into(), "1".into());
        assert!(Job::from_wire(&bad)
            .unwrap_err()
            .to_string()
            .contains("--nosuch"));
        // A job's path inside the environment is only a name.
        let mut sneaky = wire;
        sneaky.script.as_mut().unwrap().name = "../../etc/x.lua".into();
        assert_eq!(Job::from_wire(&sneaky).unwrap().name(), "x.lua");
        // Only run: an environment runs prepare and cleanup around it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.lua");
        std::fs::write(&path, "function event() end\nfunction prepare() end\n").unwrap();
        let err = Job::from_args(&s(&[path.to_str().unwrap(), "prepare"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("give run"), "{err}");
    }

    #[test]
    fn the_wire_is_validated_like_the_command_line() {
        let mut wire = Job::from_args(&s(&["cpu"])).unwrap().to_wire();
        wire.options.insert("threads".into(), "-1".into());
        assert!(Job::from_wire(&wire)
            .unwrap_err()
            .to_string()
            .contains("--threads"));
        wire.options.clear();
        wire.workload = "gpu".into();
        assert!(Job::from_wire(&wire)
            .unwrap_err()
            .to_string()
            .contains("unknown workload"));
    }

    #[test]
    fn engine_options_are_refused_where_the_engine_does_not_drive() {
        let err = Job::from_args(&s(&["disk", "--time=5"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--time does not apply to disk"), "{err}");
        let err = Job::from_args(&s(&["microops", "--rate=10"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--rate does not apply to microops"), "{err}");
        assert!(Job::from_args(&s(&["cpu", "--time=5"])).is_ok());
    }

    #[test]
    fn the_workdir_is_added_only_where_needed_and_not_given() {
        let job = Job::from_args(&s(&["disk", "--disk-direct=on"])).unwrap();
        let moved = job.with_workdir("/scratch").unwrap();
        assert_eq!(moved.values.text("disk-dir"), "/scratch");
        let given = Job::from_args(&s(&["fileio", "--file-dir=/x", "prepare"])).unwrap();
        assert_eq!(
            given
                .with_workdir("/scratch")
                .unwrap()
                .values
                .text("file-dir"),
            "/x"
        );
        let cpu = Job::from_args(&s(&["cpu"])).unwrap();
        assert_eq!(
            cpu.with_workdir("/scratch").unwrap().to_wire(),
            cpu.to_wire()
        );
    }
}

#[cfg(test)]
mod password_tests {
    use super::*;
    use crate::core::text::owned as s;

    #[test]
    fn a_password_comes_from_its_file_and_never_shows_in_the_jobs_args() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "from-the-file\nsecond line ignored\n").unwrap();
        let job = Job::from_args(&s(&[
            "oltp_read_write",
            &format!("--mysql-password-file={}", file.display()),
        ]))
        .unwrap();
        assert_eq!(job.values.text("mysql-password"), "from-the-file");
        // The agent gets it over stdin (the wire); labels never.
        assert!(job
            .to_wire()
            .options
            .iter()
            .any(|(k, v)| k == "mysql-password" && v == "from-the-file"));
        let args = job.args().join(" ");
        assert!(
            !args.contains("from-the-file") && args.contains("--mysql-password=***"),
            "{args}"
        );
        // A given option wins over the file.
        let job = Job::from_args(&s(&[
            "oltp_read_write",
            "--mysql-password=typed",
            &format!("--mysql-password-file={}", file.display()),
        ]))
        .unwrap();
        assert_eq!(job.values.text("mysql-password"), "typed");
        // An unreadable file is named, with the way out.
        let err = Job::from_args(&s(&[
            "oltp_read_write",
            "--pgsql-password-file=/nonexistent/pw",
        ]))
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("--pgsql-password-file=/nonexistent/pw") && err.contains("PGPASSWORD"),
            "{err}"
        );
    }
}
