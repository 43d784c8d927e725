//! A script as a job that runs in an environment (`virtperf ./my.lua run
//! --env docker`, `virtperf compare --env docker ./my.lua`): its text,
//! bounded by `MAX_SCRIPT_BYTES`, travels with the job over the agent
//! protocol; the agent loads it from memory with the same runtime (no file
//! is written), runs its `prepare` when it has one, its `run`, and its
//! `cleanup`, and returns the run's result document, named after the
//! script's file. The modules it requires by a literal name
//! (`require("oltp_common")`), found where `require` looks on the host, go
//! with it, and theirs in turn; the agent serves them from
//! `package.preload`. A module required by a computed name is not found
//! there, and the error says so.

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use super::{Module, Output, Refusal, Script, Source};
use crate::core::observer::Silent;
use crate::core::options::{CliError, Values};
use crate::core::result::ResultDoc;
use crate::workload::def::{Area, Needs, WorkloadDef};

/// The largest script a job carries into an environment, its modules
/// included.
pub const MAX_SCRIPT_BYTES: usize = 1 << 20;

/// The most modules a script takes with it.
pub const MAX_MODULES: usize = 64;

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
    /// The modules it requires, by the names it requires them by.
    #[serde(default)]
    pub modules: Vec<ModuleWire>,
}

/// A module as it crosses the agent protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleWire {
    pub name: String,
    pub text: String,
}

/// The names `text` requires literally: `require("a.b")`, `require 'x'`,
/// `require [[y]]` is not one (nor a computed name).
pub fn required_names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("require") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "require".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':') {
            continue;
        }
        let mut t = rest.trim_start();
        if let Some(inner) = t.strip_prefix('(') {
            t = inner.trim_start();
        }
        let Some(quote) = t.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let body = &t[1..];
        let Some(end) = body.find(quote) else {
            continue;
        };
        let name = &body[..end];
        if module_name_ok(name) && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// A name a shipped module may have: a Lua module path, never a file path.
fn module_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
        && !name.starts_with('.')
        && !name.contains("..")
}

/// The file `require(name)` loads on this machine, by `path` (templates
/// with `?`, separated by `;`), as Lua's searcher finds it.
fn find_module(path: &str, name: &str) -> Option<std::path::PathBuf> {
    let file = name.replace('.', "/");
    path.split(';')
        .filter(|t| !t.is_empty())
        .map(|t| std::path::PathBuf::from(t.replace('?', &file)))
        .find(|p| p.is_file())
}

/// The modules `text` (the script at `path`) requires, and theirs, that
/// are found where `require` looks; `budget` bytes at most in all.
fn modules_of(path: &str, text: &str, mut budget: usize) -> Result<Vec<Module>, CliError> {
    let search = super::state::search_path(path);
    let mut found: Vec<Module> = Vec::new();
    let mut queue = required_names(text);
    let mut seen: Vec<String> = queue.clone();
    while let Some(name) = queue.pop() {
        let Some(file) = find_module(&search, &name) else {
            // Built in (ffi, string...) or not on this machine: the
            // environment's require says so when it is needed.
            continue;
        };
        if found.len() == MAX_MODULES {
            return Err(CliError::Usage(format!(
                "{path}: the script requires more than {MAX_MODULES} modules, too many to ship into an environment: run it on the host"
            )));
        }
        let shown = file.display().to_string();
        let body = std::fs::read(&file).map_err(|e| {
            CliError::Usage(format!(
                "{path}: cannot read module '{name}' ({shown}): {e}"
            ))
        })?;
        if body.len() > budget {
            return Err(too_big(
                &format!("{path} with module '{name}' ({shown})"),
                MAX_SCRIPT_BYTES - budget + body.len(),
            ));
        }
        budget -= body.len();
        let body = String::from_utf8(body).map_err(|_| {
            CliError::Usage(format!(
                "{path}: module '{name}' ({shown}) is not UTF-8 text, which is how it travels with the script into an environment"
            ))
        })?;
        for next in required_names(&body) {
            if !seen.contains(&next) {
                seen.push(next.clone());
                queue.push(next);
            }
        }
        found.push(Module {
            name,
            text: body.into_bytes().into(),
        });
    }
    Ok(found)
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
        let Ok(utf8) = std::str::from_utf8(&text) else {
            return Err(CliError::Usage(format!(
                "{path}: the script is not UTF-8 text, which is how it travels with its job into an environment: save it as UTF-8"
            )));
        };
        let modules = modules_of(path, utf8, MAX_SCRIPT_BYTES - text.len())?;
        Ok(ScriptJob {
            name: file_name(path),
            source: Source {
                path: path.to_string(),
                text: text.into(),
                shipped: false,
                modules: modules.into(),
            },
        })
    }

    /// The script a job brought over the wire, as the agent runs it.
    pub fn from_wire(wire: &ScriptWire) -> Result<ScriptJob, CliError> {
        let total = wire.text.len() + wire.modules.iter().map(|m| m.text.len()).sum::<usize>();
        if total > MAX_SCRIPT_BYTES {
            return Err(too_big(&wire.name, total));
        }
        if wire.modules.len() > MAX_MODULES {
            return Err(CliError::Usage(format!(
                "{}: more than {MAX_MODULES} modules came with the script",
                wire.name
            )));
        }
        let mut modules = Vec::with_capacity(wire.modules.len());
        for m in &wire.modules {
            if !module_name_ok(&m.name) || modules.iter().any(|k: &Module| k.name == m.name) {
                return Err(CliError::Usage(format!(
                    "{}: a module came with the script under a name that is not a module's (or twice): {}",
                    wire.name,
                    crate::core::text::one_line(&m.name, 100)
                )));
            }
            modules.push(Module {
                name: m.name.clone(),
                text: m.text.as_bytes().into(),
            });
        }
        // Only a name, never a path in the environment.
        let name = file_name(&wire.name);
        Ok(ScriptJob {
            name: name.clone(),
            source: Source {
                path: name,
                text: wire.text.as_bytes().into(),
                shipped: true,
                modules: modules.into(),
            },
        })
    }

    pub fn to_wire(&self) -> ScriptWire {
        ScriptWire {
            name: self.name.clone(),
            text: String::from_utf8_lossy(&self.source.text).into_owned(),
            modules: self
                .source
                .modules
                .iter()
                .map(|m| ModuleWire {
                    name: m.name.clone(),
                    text: String::from_utf8_lossy(&m.text).into_owned(),
                })
                .collect(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_requires_are_found_and_others_are_not() {
        let text = r#"
local a = require("oltp_common")
local b = require 'sub.mod'
local c = require"x_y"
require ( "oltp_common" )   -- once
local d = require(name)     -- computed
local e = my.require("no")  -- a method of something else
local f = require("../etc/passwd")
local g = prerequire("no")
"#;
        assert_eq!(required_names(text), ["oltp_common", "sub.mod", "x_y"]);
    }

    #[test]
    fn a_module_is_found_along_the_search_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/mod.lua"), "return 1").unwrap();
        let path = format!("/nonexistent/?.lua;{}/?.lua", dir.path().display());
        assert_eq!(
            find_module(&path, "sub.mod"),
            Some(dir.path().join("sub/mod.lua"))
        );
        assert_eq!(find_module(&path, "other"), None);
    }

    #[test]
    fn modules_travel_and_bad_names_from_the_wire_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m1.lua"), "return require('m2')").unwrap();
        std::fs::write(dir.path().join("m2.lua"), "return 2").unwrap();
        let script = dir.path().join("s.lua");
        std::fs::write(&script, "local m = require('m1')\nfunction event() end\n").unwrap();
        let job = ScriptJob::read(script.to_str().unwrap()).unwrap();
        let mut names: Vec<&str> = job.source.modules.iter().map(|m| m.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["m1", "m2"]);
        let wire = job.to_wire();
        let back = ScriptJob::from_wire(&wire).unwrap();
        assert_eq!(back.source.modules.len(), 2);

        let mut bad = wire.clone();
        bad.modules[0].name = "../x".into();
        assert!(ScriptJob::from_wire(&bad).is_err());
        let mut twice = wire.clone();
        twice.modules[1].name = twice.modules[0].name.clone();
        assert!(ScriptJob::from_wire(&twice).is_err());
        let mut big = wire;
        big.modules[0].text = "x".repeat(MAX_SCRIPT_BYTES);
        assert!(ScriptJob::from_wire(&big).is_err());
    }
}
