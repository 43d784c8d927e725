//! A script as a job that runs in an environment (`virtperf ./my.lua run
//! --env docker`, `virtperf compare --env docker ./my.lua`): its text,
//! bounded by `MAX_SCRIPT_BYTES`, travels with the job over the agent
//! protocol; the agent loads it from memory with the same runtime (no file
//! is written), runs its `prepare` when it has one, its `run`, and its
//! `cleanup`, and returns the run's result document, named after the
//! script's file. Only the script's own file is shipped: a module of its
//! own that it requires is not there, and the error says so.

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use super::{Output, Refusal, Script, Source};
use crate::core::observer::Silent;
use crate::core::options::{CliError, Values};
use crate::core::result::ResultDoc;
use crate::workload::def::{Area, Needs, WorkloadDef};

/// The largest script a job carries into an environment.
pub const MAX_SCRIPT_BYTES: usize = 1 << 20;

/// What a script job has as its workload definition: the engine's options
/// (the script's own are its to declare), the metrics of a script's run.
/// Not in the registry: no workload is named after it; a job names its
/// script ([`crate::workload::Job::name`]).
pub static DEF: WorkloadDef = WorkloadDef {
    name: "lua",
    summary: "a sysbench Lua script",
    options: &[],
    engine: crate::engine::ALL,
    needs: Needs::NONE,
    metrics: super::METRICS,
    area: Area::Cpu,
    sysbench: None,
    build: |_| {
        bail!("internal: a Lua script's job runs through the Lua runtime, not as a workload")
    },
};

/// The script a job carries.
#[derive(Clone)]
pub struct ScriptJob {
    /// Its file name: the result's `workload`.
    pub name: String,
    pub source: Source,
}

impl std::fmt::Debug for ScriptJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ScriptJob({}, {} bytes)",
            self.source.path,
            self.source.text.len()
        )
    }
}

/// A script as it crosses the agent protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptWire {
    /// The script's file name.
    pub name: String,
    pub text: String,
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn too_big(what: &str, len: usize) -> CliError {
    CliError::Usage(format!(
        "{what}: the script is {len} bytes; a script run in an environment travels with its job, at most {MAX_SCRIPT_BYTES} bytes (1 MiB): make it smaller, or run it on the host"
    ))
}

impl ScriptJob {
    /// Reads the script at `path` to ship it: bounded, and UTF-8 (the job
    /// travels as JSON).
    pub fn read(path: &str) -> Result<ScriptJob, CliError> {
        let meta = std::fs::metadata(path).map_err(|e| {
            CliError::Usage(format!(
                "{path}: cannot read the script ({e}); give the path of a sysbench Lua script"
            ))
        })?;
        if meta.len() > MAX_SCRIPT_BYTES as u64 {
            return Err(too_big(path, meta.len() as usize));
        }
        let text = std::fs::read(path)
            .map_err(|e| CliError::Usage(format!("{path}: cannot read the script ({e})")))?;
        if text.len() > MAX_SCRIPT_BYTES {
            return Err(too_big(path, text.len()));
        }
        if std::str::from_utf8(&text).is_err() {
            return Err(CliError::Usage(format!(
                "{path}: the script is not UTF-8 text, which is how it travels with its job into an environment: save it as UTF-8"
            )));
        }
        Ok(ScriptJob {
            name: file_name(path),
            source: Source {
                path: path.to_string(),
                text: text.into(),
                shipped: false,
            },
        })
    }

    /// The script a job brought over the wire, as the agent runs it.
    pub fn from_wire(wire: &ScriptWire) -> Result<ScriptJob, CliError> {
        if wire.text.len() > MAX_SCRIPT_BYTES {
            return Err(too_big(&wire.name, wire.text.len()));
        }
        // Only a name, never a path in the environment.
        let name = file_name(&wire.name);
        Ok(ScriptJob {
            name: name.clone(),
            source: Source {
                path: name,
                text: wire.text.as_bytes().into(),
                shipped: true,
            },
        })
    }

    pub fn to_wire(&self) -> ScriptWire {
        ScriptWire {
            name: self.name.clone(),
            text: String::from_utf8_lossy(&self.source.text).into_owned(),
        }
    }

    /// Loads the script with `args` (its options, then the command word),
    /// its output going nowhere.
    fn load(&self, args: &[String]) -> Result<Script, CliError> {
        let loaded = Script::load(self.source.clone(), args, "virtperf", true, Output::Discard)
            .map_err(|e| CliError::Usage(format!("{}: {e:#}", self.source.path)))?;
        loaded.map_err(|refusal| match refusal {
            Refusal::Option(e, _) => e,
            Refusal::NoCommand => CliError::Usage("no command given".into()),
            Refusal::Extra(word) => CliError::Usage(format!(
                "{}: one command only; '{word}' is one too many",
                self.source.path
            )),
        })
    }

    /// Checks `args` against the options the script declares (its top
    /// level runs, as in sysbench) and returns their values. The command,
    /// when one is given, must be `run`: an environment runs the script's
    /// prepare and cleanup around it itself.
    pub fn values(&self, args: &[String]) -> Result<Values, CliError> {
        let script = self.load(args)?;
        if script.command() != "run" {
            return Err(CliError::Usage(format!(
                "{}: an environment runs a script's 'run' (with its prepare before and its cleanup after, when it has them), not '{}': give run, or run the script on the host",
                self.source.path,
                script.command()
            )));
        }
        Ok(script.values().clone())
    }

    /// Runs the script here as an environment's agent does: `prepare`
    /// when the script has one, `run`, and `cleanup` after a prepare (also
    /// after a failed run; its own failure is not the run's). `values` are the job's; a SQLite database goes
    /// in `workdir` unless the job names its directory.
    pub fn execute(
        &self,
        values: &Values,
        workdir: &str,
        env_name: &str,
        env_kind: &str,
    ) -> Result<ResultDoc> {
        let mut args: Vec<String> = values
            .given_texts()
            .map(|(k, v)| format!("--{k}={v}"))
            .collect();
        if !workdir.is_empty() && !values.was_given("oltp-dir") {
            args.push(format!("--oltp-dir={workdir}"));
        }
        let with = |command: &str| -> Vec<String> {
            let mut a = args.clone();
            a.push(command.to_string());
            a
        };
        let run = self.load(&with("run"))?;
        let prepares = run.implements("prepare")?;
        if prepares {
            self.load(&with("prepare"))?
                .run_command()
                .map_err(|e| anyhow!("{}: prepare: {e:#}", self.name))?;
        }
        let result = run.execute_in(env_name, env_kind, Arc::new(Silent), &mut |_| {});
        drop(run);
        if prepares {
            // As for the built-in workloads: a failed cleanup costs no
            // finished measurement.
            let _ = run_cleanup(self, &with("cleanup"));
        }
        Ok(result?.0.doc)
    }
}

fn run_cleanup(job: &ScriptJob, args: &[String]) -> Result<()> {
    let script = job.load(args)?;
    if script.implements("cleanup")? {
        script.run_command()?;
    }
    Ok(())
}
