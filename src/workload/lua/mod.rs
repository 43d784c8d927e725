//! sysbench 1.0 Lua scripts on virtperf's own runtime: an embedded LuaJIT
//! (with its FFI) per thread, sysbench's Lua API over virtperf's engine,
//! random distributions and SQL drivers, and the script's commands —
//! `run` (thread_init, event, thread_done in the engine, under --time,
//! --events and --rate), `prepare`, `cleanup`, `help` and the script's own
//! (`sysbench.cmdline.commands`, parallel ones in --threads threads).
//!
//! The parts: `state` (one Lua state: the API table, the prelude, the
//! script), `prelude.lua` (sysbench's tables built from the API), `options`
//! (a script's declared options and `sysbench.opt`), `rand`
//! (`sysbench.rand`), `sql` (`sysbench.sql` over the OLTP drivers), `run`
//! (the `run` command in the engine, its reports and result document).
//! This file loads a script, parses its command line and runs its other
//! commands.

mod histogram;
mod options;
pub use options::database as database_options;
mod output;
mod rand;
mod run;
mod shipped;
mod sql;
mod state;

pub use output::Output;
pub use shipped::{ScriptJob, ScriptWire, DEF, MAX_SCRIPT_BYTES};

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::{anyhow, bail, Result};
use mlua::{Function, Lua, Table, Value as LuaValue};

use crate::core::options::{CliError, Values};
use crate::workload::oltp;
use crate::workload::oltp::rand::{Dist, Unique};
use crate::workload::MetricDef;

use sql::{Counters, Database};
use state::Shared;

/// What a script's run produces; the SQL figures only when it used a
/// database.
pub const METRICS: &[MetricDef] = &[
    MetricDef::new("events_per_sec", "events/s", true, true, None),
    MetricDef::new("tps", "transactions/s", true, false, None),
    MetricDef::new("qps", "queries/s", true, false, None),
    MetricDef::new("reads_per_sec", "queries/s", true, false, None),
    MetricDef::new("writes_per_sec", "queries/s", true, false, None),
    MetricDef::new("other_per_sec", "queries/s", true, false, None),
    MetricDef::new("ignored_errors_per_sec", "errors/s", false, false, None),
    MetricDef::new("reconnects_per_sec", "reconnects/s", false, false, None),
    MetricDef::new("latency_avg_ms", "ms", false, false, None),
    MetricDef::new("latency_p95_ms", "ms", false, false, None),
    MetricDef::new("latency_p99_ms", "ms", false, false, None),
];

/// Whether a command line's first word names a script rather than a
/// built-in workload: a `.lua` file name, or a path to a file.
pub fn is_script(word: &str) -> bool {
    word.ends_with(".lua") || (word.contains('/') && Path::new(word).is_file())
}

/// A script's text and the name it goes by.
#[derive(Debug, Clone)]
pub struct Source {
    /// As given on the command line (messages, the chunk's name,
    /// `sysbench.cmdline.script_path`); a shipped script's file name.
    pub path: String,
    pub text: Arc<[u8]>,
    /// Shipped into an environment, without the files beside it.
    pub shipped: bool,
    /// Shipped with it: the modules it requires that were found where
    /// `require` looks on the host (sysbench's `oltp_common` for its OLTP
    /// scripts), by the name it requires them by.
    pub modules: Arc<[Module]>,
}

/// A module's text, by the name `require` takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Module {
    pub name: String,
    pub text: Arc<[u8]>,
}

impl Source {
    /// Reads the script at `path` (as sysbench words a missing one).
    pub fn read(path: &str) -> Result<Source> {
        let text = std::fs::read(path).map_err(|e| {
            anyhow!("Cannot find benchmark '{path}': no such built-in test, file or module ({e})")
        })?;
        Ok(Source {
            path: path.to_string(),
            text: text.into(),
            shipped: false,
            modules: Arc::new([]),
        })
    }
}

/// A script loaded in its main state, its command line parsed.
pub struct Script {
    shared: Arc<Shared>,
    main: Lua,
    /// What the script declared, for `help`.
    own: Vec<options::ScriptOption>,
    values: Values,
    command: String,
    /// done() is called by the caller, after the report.
    done_deferred: std::cell::Cell<bool>,
}

/// Why a script's command line was refused, as each front end words it.
#[derive(Debug)]
pub enum Refusal {
    /// Bad options (sysbench: "invalid option: --x").
    Option(CliError, Vec<String>),
    /// No command word, where one is required.
    NoCommand,
    /// More than one command word.
    Extra(String),
}

impl Script {
    /// Loads `source` (its top level runs, as in sysbench) and parses
    /// `args`, its options and command word. `default_run`: no command
    /// word means `run` (virtperf's form; sysbench requires one).
    /// `output`: where what the script prints goes.
    pub fn load(
        source: Source,
        args: &[String],
        program: &str,
        default_run: bool,
        output: Output,
    ) -> Result<std::result::Result<Script, Refusal>> {
        let script = source.path.as_str();
        let persona = program == "sysbench";
        // sysbench: no command word, no command (nil in the script).
        let guess = args
            .iter()
            .find(|a| !a.starts_with('-'))
            .cloned()
            .unwrap_or_else(|| if persona { "" } else { "run" }.into());
        let argv = if persona {
            // sysbench's argv is the command line as typed.
            std::iter::once(program.to_string())
                .chain(std::env::args().skip(1))
                .collect()
        } else {
            let mut argv = vec![program.to_string(), script.to_string()];
            argv.extend(args.iter().cloned());
            argv
        };
        let shared = Arc::new(Shared {
            script: script.to_string(),
            argv,
            command: guess,
            before: rand_config(None),
            parsed: OnceLock::new(),
            source: Arc::clone(&source.text),
            shipped: source.shipped,
            modules: Arc::clone(&source.modules),
            db_used: AtomicBool::new(false),
            output,
            early_db: early_database(args),
        });
        let main = state::new_state(&shared, None, Arc::new(Counters::default()))?;
        let own = options::declared(&main, script)?;
        // sysbench checks options only against a script that declares
        // some; otherwise it leaves the unknown ones alone.
        let mut args = args.to_vec();
        let mut extra: Vec<(String, String)> = Vec::new();
        let (mut values, words) = loop {
            match options::parse(&own, &args, script) {
                Ok(v) => break v,
                Err(e) => {
                    let unknown = match &e {
                        CliError::UnknownOption { name, .. } if persona && own.is_empty() => {
                            Some(name.clone())
                        }
                        _ => None,
                    };
                    match unknown.and_then(|name| Some((take_option(&mut args, &name)?, name))) {
                        Some((value, name)) => extra.push((name.replace('-', "_"), value)),
                        None => return Ok(Err(Refusal::Option(e, args))),
                    }
                }
            }
        };
        let args = args.as_slice();
        if let Err(e) = resolve_passwords(&mut values) {
            return Ok(Err(Refusal::Option(e, args.to_vec())));
        }
        let command = match words.as_slice() {
            [] if default_run => "run".to_string(),
            [] => return Ok(Err(Refusal::NoCommand)),
            [one] => one.clone(),
            [_, extra, ..] => return Ok(Err(Refusal::Extra(extra.clone()))),
        };
        let db = Database::from_values(&values);
        let _ = shared.parsed.set(state::Parsed {
            own: own.clone(),
            values: values.clone(),
            db: Arc::new(db),
            rand: rand_config(Some(&values)),
            extra,
        });
        let sysbench: Table = main.globals().get("sysbench")?;
        sysbench.raw_set("opt", options::export(&main, &own, &values)?)?;
        if let Some(p) = shared.parsed.get() {
            options::export_globals(&main, &p.own, &p.values, &p.extra)?;
        }
        let cmdline: Table = sysbench.raw_get("cmdline")?;
        cmdline.raw_set("command", command.as_str())?;
        Ok(Ok(Script {
            shared,
            main,
            own,
            values,
            command,
            done_deferred: std::cell::Cell::new(false),
        }))
    }

    /// The script's file name, as sysbench names it in messages.
    pub fn file_name(&self) -> String {
        Path::new(&self.shared.script).file_name().map_or_else(
            || self.shared.script.clone(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    pub fn command(&self) -> &str {
        &self.command
    }

    pub fn values(&self) -> &Values {
        &self.values
    }

    /// The script's options as sysbench's `help` lists them.
    /// None: the script has neither a help() nor options to list.
    pub fn help(&self) -> Result<Option<String>> {
        if let LuaValue::Function(f) = self.main.globals().get::<LuaValue>("help")? {
            call::<()>(&f, (), "help")?;
            return Ok(Some(String::new()));
        }
        if self.own.is_empty() {
            return Ok(None);
        }
        Ok(Some(options::help(&self.file_name(), &self.own)))
    }

    /// Whether the script implements `command` (other than run and help).
    pub fn implements(&self, command: &str) -> Result<bool> {
        if self.custom_command(command)? {
            return Ok(true);
        }
        Ok(matches!(command, "prepare" | "cleanup")
            && matches!(
                self.main.globals().get::<LuaValue>(command)?,
                LuaValue::Function(_)
            ))
    }

    fn custom_command(&self, command: &str) -> Result<bool> {
        let f: Function = self.cmdline()?.get("command_defined")?;
        Ok(f.call::<bool>(command)?)
    }

    fn cmdline(&self) -> Result<Table> {
        let sysbench: Table = self.main.globals().get("sysbench")?;
        Ok(sysbench.raw_get("cmdline")?)
    }

    /// Runs a command other than `run` and `help`: the script's own (in
    /// --threads threads when it says it can run in parallel), or its
    /// global `prepare`/`cleanup` function. Afterwards, a SQLite file left
    /// without tables is removed.
    pub fn run_command(&self) -> Result<()> {
        let result = self.command_inner();
        self.tidy();
        result
    }

    /// Ends the array `sysbench.report_json` opened, if it did.
    fn close_json(&self) -> Result<()> {
        let close: Function = self.main.named_registry_value("virtperf.close_json")?;
        close.call::<()>(())?;
        Ok(())
    }

    /// Leaves the script's done() to [`Script::done`], for a caller that
    /// prints the run's report first (sysbench's order).
    pub fn defer_done(&self) {
        self.done_deferred.set(true);
    }

    /// Calls the script's done(), if it has one.
    pub fn done(&self) -> Result<()> {
        if let LuaValue::Function(done) = self.main.globals().get::<LuaValue>("done")? {
            call::<()>(&done, (), "done")?;
        }
        Ok(())
    }

    /// Whether the command runs in worker threads: the script's own,
    /// declared to run in every thread (`sysbench.cmdline.PARALLEL_COMMAND`),
    /// and more than one thread (sysbench runs it in its main thread
    /// otherwise).
    pub fn is_parallel(&self) -> Result<bool> {
        let name = self.command.as_str();
        if !self.custom_command(name)? {
            return Ok(false);
        }
        let parallel: Function = self.cmdline()?.get("command_parallel")?;
        Ok(parallel.call::<bool>(name)? && crate::engine::threads(&self.values) > 1)
    }

    fn command_inner(&self) -> Result<()> {
        let name = self.command.as_str();
        if self.custom_command(name)? {
            let parallel: Function = self.cmdline()?.get("command_parallel")?;
            let threads = crate::engine::threads(&self.values);
            if parallel.call::<bool>(name)? && threads > 1 {
                return self.parallel_command(threads);
            }
            let f: Function = self.cmdline()?.get("call_command")?;
            // As sysbench names it: the Lua function it calls.
            let ok: bool = call(&f, name, "sysbench.cmdline.call_command")?;
            if !ok {
                bail!("the '{name}' command of {} failed", self.shared.script);
            }
            return Ok(());
        }
        match self.main.globals().get::<LuaValue>(name)? {
            LuaValue::Function(f) if matches!(name, "prepare" | "cleanup") => {
                call::<()>(&f, (), name)
            }
            _ => bail!(
                "'{}' test does not implement the '{name}' command.",
                self.file_name()
            ),
        }
    }

    fn parallel_command(&self, threads: usize) -> Result<()> {
        let name = self.command.clone();
        let results: Vec<Result<()>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|tid| {
                    let shared = Arc::clone(&self.shared);
                    let name = name.clone();
                    scope.spawn(move || -> Result<()> {
                        let lua =
                            state::new_state(&shared, Some(tid), Arc::new(Counters::default()))?;
                        let sysbench: Table = lua.globals().get("sysbench")?;
                        let cmdline: Table = sysbench.raw_get("cmdline")?;
                        let f: Function = cmdline.get("call_command")?;
                        if !call::<bool>(&f, name.as_str(), "sysbench.cmdline.call_command")? {
                            bail!("the '{name}' command failed in thread {tid}");
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow!("a command thread panicked")))
                })
                .collect()
        });
        results.into_iter().collect()
    }

    /// A SQLite database the script left without tables is not kept
    /// (connecting created it).
    fn tidy(&self) {
        if let Some(p) = self.shared.parsed.get() {
            if self.shared.db_used.load(Ordering::Relaxed)
                && p.db.target.sqlite_path().is_some_and(|f| f.exists())
            {
                let _ = p.db.target.remove_if_empty();
            }
        }
    }
}

/// Calls a script function; an error names it and carries the script's
/// `file:line: message`, as sysbench's "`event' function failed: ...".
fn call<R: mlua::FromLuaMulti>(
    f: &Function,
    args: impl mlua::IntoLuaMulti,
    name: &str,
) -> Result<R> {
    f.call::<R>(args)
        .map_err(|e| anyhow!("`{name}' function failed: {}", state::message(&e)))
}

/// Passwords not given as options come from their files or environment
fn early_database(args: &[String]) -> Option<Arc<Database>> {
    let mut args = args.to_vec();
    let mut values = loop {
        match options::parse(&[], &args, "") {
            Ok((values, _)) => break values,
            Err(CliError::UnknownOption { name, .. }) => {
                take_option(&mut args, &name)?;
            }
            Err(_) => return None,
        }
    };
    resolve_passwords(&mut values).ok()?;
    Some(Arc::new(Database::from_values(&values)))
}

/// Takes every `--name[=value]` (either spelling) out of `args`: the last
/// one's value (empty without one; the last given wins, as in sysbench),
/// or None when `args` had none.
fn take_option(args: &mut Vec<String>, name: &str) -> Option<String> {
    let mut value = None;
    args.retain(|a| {
        let Some(body) = a.strip_prefix("--") else {
            return true;
        };
        let (n, v) = body.split_once('=').unwrap_or((body, ""));
        let named = options::kebab(n) == name;
        if named {
            value = Some(v.to_string());
        }
        !named
    });
    value
}

/// Passwords not given as options come from their files or environment
/// variables, as for the OLTP tests.
fn resolve_passwords(values: &mut Values) -> std::result::Result<(), CliError> {
    let common = options::common();
    for (name, var) in oltp::PASSWORD_SOURCES {
        let Some(spec) = common.iter().find(|o| o.name == *name) else {
            continue;
        };
        if values.was_given(name) {
            continue;
        }
        let file = format!("{name}-file");
        let value = if values.has(&file) && values.was_given(&file) {
            let path = values.text(&file).to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| {
                CliError::Usage(format!(
                    "--{file}={path}: cannot read it ({e}); give a readable file whose first line is the password, or set {var}"
                ))
            })?;
            Some(text.lines().next().unwrap_or("").to_string())
        } else {
            std::env::var(var).ok().filter(|v| !v.is_empty())
        };
        if let Some(v) = value {
            values.set(spec, &v)?;
        }
    }
    Ok(())
}

/// The random generators' configuration from the options (or, before they
/// are parsed, sysbench's defaults).
fn rand_config(values: Option<&Values>) -> rand::RandConfig {
    let float = |name: &str, default: f64| values.map_or(default, |v| v.float(name));
    let pct = float("rand-spec-pct", 1.0);
    let res = float("rand-spec-res", 75.0);
    let special = Dist::Special { pct, res };
    let pareto_h = float("rand-pareto-h", 0.2);
    let default = match values.map_or("special", |v| v.text("rand-type")) {
        "uniform" => Dist::Uniform,
        "gaussian" => Dist::Gaussian,
        "pareto" => Dist::Pareto { h: pareto_h },
        _ => special,
    };
    let given_seed = values.map_or(0, |v| v.int("rand-seed"));
    let seed = if given_seed != 0 {
        given_seed
    } else {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    };
    rand::RandConfig {
        default,
        special,
        pareto_h,
        zipf_exp: float("rand-zipfian-exp", 0.8),
        seed,
        unique: Unique::new((seed ^ (seed >> 32)) as u32),
    }
}
