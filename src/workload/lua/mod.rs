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
//! (`sysbench.rand`), `sql` (`sysbench.sql` over the OLTP drivers).

mod histogram;
mod options;
mod output;
mod rand;
mod shipped;
mod sql;
mod state;

pub use output::Output;
pub use shipped::{ScriptJob, ScriptWire, DEF, MAX_SCRIPT_BYTES};

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use mlua::{Function, Lua, Table, Value as LuaValue};

use crate::core::fatal::SysbenchFatal;
use crate::core::observer::Observer;
use crate::core::options::{CliError, Values};
use crate::core::result::{Metric, ResultDoc, SCHEMA};
use crate::core::signals;
use crate::core::time::now_rfc3339_ms;
use crate::engine::{self, EngineOptions, Worker};
use crate::sys::{fingerprint, monitor};
use crate::workload::oltp;
use crate::workload::oltp::rand::{Dist, Unique};
use crate::workload::{metric_from, Executed, Measurement, MetricDef};

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

use crate::core::options::NOT_PARAMS;

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

    /// Runs the benchmark: `init()`, a state per thread with
    /// `thread_init(tid)`, events in the engine, `thread_done(tid)`, `done()`.
    /// Returns the measurement and whether the script reports itself
    /// (`sysbench.hooks.report_cumulative`, which is then called).
    /// `announce(false)` comes before the threads' states are made,
    /// `announce(true)` once they are, as the events start.
    pub fn run(
        &self,
        engine: &EngineOptions,
        announce: &mut dyn FnMut(bool),
    ) -> Result<(Measurement, bool)> {
        let result = self.run_inner(engine, announce);
        self.tidy();
        result
    }

    fn run_inner(
        &self,
        engine: &EngineOptions,
        announce: &mut dyn FnMut(bool),
    ) -> Result<(Measurement, bool)> {
        let globals = self.main.globals();
        if let LuaValue::Function(init) = globals.get::<LuaValue>("init")? {
            call::<()>(&init, (), "init")?;
        }
        if !matches!(globals.get::<LuaValue>("event")?, LuaValue::Function(_)) {
            bail!("cannot find the event() function in {}", self.shared.script);
        }
        announce(false);
        let mut workers = Vec::with_capacity(engine.threads);
        for tid in 0..engine.threads {
            let counters = Arc::new(Counters::default());
            let lua = state::new_state(&self.shared, Some(tid), Arc::clone(&counters))?;
            if let LuaValue::Function(f) = lua.globals().get::<LuaValue>("thread_init")? {
                call::<()>(&f, tid, "thread_init").map_err(|e| SysbenchFatal {
                    ours: e.to_string(),
                    fatal: format!("{e}\nFATAL: Thread initialization failed!"),
                    hint: None,
                })?;
            }
            let event = state::event_function(&lua)?;
            // sysbench 0.5's hook: a script's own thread_run replaces the
            // thread's event loop and is called once.
            let thread_run = match lua.globals().get::<LuaValue>("thread_run")? {
                LuaValue::Function(f) => Some(f),
                _ => None,
            };
            workers.push(LuaWorker {
                lua,
                event,
                thread_run,
                tid,
                counters,
            });
        }
        announce(true);
        let counters: Vec<Arc<Counters>> =
            workers.iter().map(|w| Arc::clone(&w.counters)).collect();
        let mut interim = Interim {
            hook: self.hook("report_intermediate")?,
            counters,
            last: [0; 5],
            failed: None,
            observer: Arc::clone(&engine.observer),
        };
        // What a checkpoint report has counted so far: the next counts
        // afresh from there, and so does the final report.
        let counted = Arc::new(std::sync::Mutex::new([0u64; 5]));
        let mut engine = engine.clone();
        {
            let (counters, counted) = (interim.counters.clone(), Arc::clone(&counted));
            let shared = Arc::clone(&self.shared);
            engine.section = Some(Arc::new(move |part: &engine::Outcome| {
                let now = sum_counters(&counters);
                let mut counted = counted.lock().unwrap_or_else(|p| p.into_inner());
                let delta = minus(now, *counted);
                *counted = now;
                if shared.db_used.load(Ordering::Relaxed) {
                    sql_statistics(part, delta)
                } else {
                    String::new()
                }
            }));
        }
        let engine = &engine;
        let watchdog = Watchdog::start(engine);
        let outcome = engine::run_reporting(engine, workers, &mut |i| interim.report(self, i));
        drop(watchdog);
        if let Some(e) = interim.failed.take() {
            return Err(e);
        }
        let (outcome, workers) = outcome?;
        self.close_json()?;
        let mut totals = [0u64; 5];
        for w in &workers {
            if let LuaValue::Function(f) = w.lua.globals().get::<LuaValue>("thread_done")? {
                call::<()>(&f, w.tid, "thread_done")?;
            }
            for (t, c) in totals.iter_mut().zip(w.counters.get()) {
                *t += c;
            }
        }
        drop(workers);
        let totals = minus(totals, *counted.lock().unwrap_or_else(|p| p.into_inner()));
        if !self.done_deferred.get() {
            self.done()?;
        }
        let m = self.measurement(&outcome, engine, totals);
        let own_report = self.report_cumulative(&outcome, &m, totals)?;
        self.close_json()?;
        Ok((m, own_report))
    }

    fn measurement(
        &self,
        outcome: &engine::Outcome,
        engine: &EngineOptions,
        [reads, writes, other, errors, reconnects]: [u64; 5],
    ) -> Measurement {
        let mut m = Measurement::from_outcome(outcome, engine.percentile);
        let secs = outcome.interval.as_secs_f64().max(1e-9);
        let per_sec = |x: u64| x as f64 / secs;
        let metric = |name: &str, v: f64| -> Metric { metric_from(METRICS, name, v) };
        m.metrics = vec![metric("events_per_sec", outcome.events_per_sec())];
        let lat = m.latency.clone().unwrap_or_default();
        let queries = reads + writes + other;
        if self.shared.db_used.load(Ordering::Relaxed) {
            m.metrics.extend([
                metric("tps", per_sec(outcome.events)),
                metric("qps", per_sec(queries)),
                metric("reads_per_sec", per_sec(reads)),
                metric("writes_per_sec", per_sec(writes)),
                metric("other_per_sec", per_sec(other)),
                metric("ignored_errors_per_sec", per_sec(errors)),
                metric("reconnects_per_sec", per_sec(reconnects)),
            ]);
            m.text = sql_statistics(outcome, [reads, writes, other, errors, reconnects]);
        }
        m.metrics.push(metric("latency_avg_ms", lat.avg));
        // No percentile of no event.
        m.metrics
            .extend(lat.p95.map(|v| metric("latency_p95_ms", v)));
        m.metrics
            .extend(lat.p99.map(|v| metric("latency_p99_ms", v)));
        let per_trx = if outcome.events > 0 {
            queries as f64 / outcome.events as f64
        } else {
            0.0
        };
        m.details = serde_json::json!({
            "script": self.shared.script,
            "reads": reads,
            "writes": writes,
            "other": other,
            "queries": queries,
            "queries_per_transaction": per_trx,
            "ignored_errors": errors,
            "reconnects": reconnects,
        });
        m
    }

    /// The script's `sysbench.hooks.NAME`, if it set one (in its main
    /// state, as sysbench reads it).
    fn hook(&self, name: &str) -> Result<Option<Function>> {
        let sysbench: Table = self.main.globals().get("sysbench")?;
        let hooks: Table = sysbench.raw_get("hooks")?;
        Ok(match hooks.raw_get::<LuaValue>(name)? {
            LuaValue::Function(f) => Some(f),
            _ => None,
        })
    }

    /// sysbench's `sb_stat_t` as a Lua table: the counts over
    /// `time_interval` seconds, latencies in seconds.
    fn stat_table(
        &self,
        threads: usize,
        time_interval: f64,
        time_total: f64,
        latency_pct_s: f64,
        events: u64,
        [reads, writes, other, errors, reconnects]: [u64; 5],
    ) -> Result<Table> {
        let stat = self.main.create_table()?;
        stat.set("threads_running", threads)?;
        stat.set("time_interval", time_interval)?;
        stat.set("time_total", time_total)?;
        stat.set("latency_pct", latency_pct_s)?;
        stat.set("events", events)?;
        stat.set("reads", reads)?;
        stat.set("writes", writes)?;
        stat.set("other", other)?;
        stat.set("errors", errors)?;
        stat.set("reconnects", reconnects)?;
        Ok(stat)
    }

    /// Calls `sysbench.hooks.report_cumulative(stat)` if the script set it.
    fn report_cumulative(
        &self,
        outcome: &engine::Outcome,
        m: &Measurement,
        counts: [u64; 5],
    ) -> Result<bool> {
        let Some(hook) = self.hook("report_cumulative")? else {
            return Ok(false);
        };
        let lat = m.latency.clone().unwrap_or_default();
        let secs = outcome.duration.as_secs_f64();
        // Every thread has finished: sysbench reports none running.
        let stat = self.stat_table(
            0,
            secs,
            secs,
            lat.selected.map(|s| s.1).or(lat.p95).unwrap_or_default() / 1e3,
            outcome.events,
            counts,
        )?;
        stat.set("latency_min", lat.min / 1e3)?;
        stat.set("latency_max", lat.max / 1e3)?;
        stat.set("latency_avg", lat.avg / 1e3)?;
        // A measured run always has its sum (0 for no event).
        stat.set("latency_sum", lat.sum.unwrap_or_default() / 1e3)?;
        call::<()>(&hook, stat, "report_cumulative")?;
        Ok(true)
    }

    /// Runs the script and wraps the measurement in a result document, as
    /// a workload's run is (`announce` as for [`Script::run`]). The second
    /// value: the script printed its own report.
    pub fn execute(
        &self,
        observer: Arc<dyn Observer>,
        announce: &mut dyn FnMut(bool),
    ) -> Result<(Executed, bool)> {
        self.execute_in("host", "host", observer, announce)
    }

    /// [`Script::execute`], fingerprinted as environment `env_name` of
    /// `env_kind`.
    pub fn execute_in(
        &self,
        env_name: &str,
        env_kind: &str,
        observer: Arc<dyn Observer>,
        announce: &mut dyn FnMut(bool),
    ) -> Result<(Executed, bool)> {
        let engine = EngineOptions::from_values(&self.values, observer);
        let started_at = now_rfc3339_ms();
        let sampler = monitor::Sampler::start();
        let accounting = crate::sys::account::inside::Sampler::start();
        let (m, own_report) = self.run(&engine, announce)?;
        let inside = accounting.map(crate::sys::account::inside::Sampler::finish);
        let monitor = sampler.finish();
        let mut params = self.values.to_params(NOT_PARAMS);
        options::numbers_in_params(&self.own, &self.values, &mut params);
        params.insert("script".into(), serde_json::json!(self.shared.script));
        let name = self.file_name();
        let doc = ResultDoc {
            schema: SCHEMA.to_string(),
            workload: name,
            params,
            env: fingerprint::take(env_name, env_kind),
            started_at,
            duration_s: m.duration.as_secs_f64(),
            events: m.events,
            metrics: m.metrics,
            latency_ms: m.latency,
            fairness: m.fairness,
            monitor,
            details: m.details,
            accounting: inside.map(|inside| crate::core::accounting::Accounting {
                version: crate::core::accounting::VERSION,
                inside: Some(inside),
                ..Default::default()
            }),
        };
        Ok((
            Executed {
                doc,
                text: m.text,
                histogram: m.histogram,
                threads: m.threads,
            },
            own_report,
        ))
    }
}

/// Every worker's SQL counters summed: reads, writes, other, errors,
/// reconnects.
fn sum_counters(counters: &[Arc<Counters>]) -> [u64; 5] {
    let mut now = [0u64; 5];
    for c in counters {
        for (n, x) in now.iter_mut().zip(c.get()) {
            *n += x;
        }
    }
    now
}

fn minus(a: [u64; 5], b: [u64; 5]) -> [u64; 5] {
    let mut out = [0u64; 5];
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = x.saturating_sub(y);
    }
    out
}

/// sysbench's "SQL statistics" section over what `outcome` covers.
fn sql_statistics(
    outcome: &engine::Outcome,
    [reads, writes, other, errors, reconnects]: [u64; 5],
) -> String {
    let secs = outcome.interval.as_secs_f64().max(1e-9);
    let per_sec = |x: u64| x as f64 / secs;
    let queries = reads + writes + other;
    format!(
        "SQL statistics:\n    queries performed:\n        read:                            {reads}\n        write:                           {writes}\n        other:                           {other}\n        total:                           {queries}\n    transactions:                        {:<6} ({:.2} per sec.)\n    queries:                             {queries:<6} ({:.2} per sec.)\n    ignored errors:                      {errors:<6} ({:.2} per sec.)\n    reconnects:                          {reconnects:<6} ({:.2} per sec.)\n",
        outcome.events,
        per_sec(outcome.events),
        per_sec(queries),
        per_sec(errors),
        per_sec(reconnects),
    )
}

/// The interim reports of a script's run (`--report-interval`): its
/// `sysbench.hooks.report_intermediate(stat)` when it set one, else
/// sysbench's default line (with the SQL figures once it connected).
struct Interim {
    hook: Option<Function>,
    /// Every worker's SQL counters.
    counters: Vec<Arc<Counters>>,
    /// Their sums at the last report.
    last: [u64; 5],
    /// The hook's first failure, which ends the run.
    failed: Option<anyhow::Error>,
    observer: Arc<dyn Observer>,
}

impl Interim {
    fn report(&mut self, script: &Script, i: &engine::Interim) {
        let mut now = [0u64; 5];
        for c in &self.counters {
            for (n, x) in now.iter_mut().zip(c.get()) {
                *n += x;
            }
        }
        let mut delta = [0u64; 5];
        for ((d, n), l) in delta.iter_mut().zip(now).zip(self.last) {
            *d = n.saturating_sub(l);
        }
        self.last = now;
        match &self.hook {
            Some(_) if self.failed.is_some() => {}
            Some(hook) => {
                let called = script
                    .stat_table(
                        i.threads,
                        i.time_interval,
                        i.time_total,
                        i.latency_pct_ms / 1e3,
                        i.events,
                        delta,
                    )
                    .and_then(|stat| {
                        // Only with --rate in sysbench; none queue here.
                        stat.set("queue_length", 0)?;
                        stat.set("concurrency", 0)?;
                        call::<()>(hook, stat, "report_intermediate")
                    });
                self.failed = called.err();
            }
            None if script.shared.db_used.load(Ordering::Relaxed) => {
                self.observer.interim(&sql_interim_line(i, delta))
            }
            None => self.observer.interim(&i.line()),
        }
    }
}

/// sysbench's interim line for a script that uses a database.
fn sql_interim_line(
    i: &engine::Interim,
    [reads, writes, other, errors, reconnects]: [u64; 5],
) -> String {
    let per_sec = |x: u64| x as f64 / i.time_interval;
    format!(
        "[ {}s ] thds: {} tps: {:4.2} qps: {:4.2} (r/w/o: {:4.2}/{:4.2}/{:4.2}) lat (ms,{}%): {:4.2} err/s: {:4.2} reconn/s: {:4.2}",
        i.time_total,
        i.threads,
        per_sec(i.events),
        per_sec(reads + writes + other),
        per_sec(reads),
        per_sec(writes),
        per_sec(other),
        i.percentile,
        i.latency_pct_ms,
        per_sec(errors),
        per_sec(reconnects)
    )
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
/// variables, as for the OLTP tests.
/// The database the common options in `args` name, the others left aside
/// (the script's own are not known before it is loaded); None where they
/// do not parse.
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

/// One thread's Lua state as the engine's worker.
struct LuaWorker {
    lua: Lua,
    event: Function,
    thread_run: Option<Function>,
    tid: usize,
    counters: Arc<Counters>,
}

impl Worker for LuaWorker {
    fn event(&mut self) -> Result<bool> {
        if let Some(f) = &self.thread_run {
            f.call::<()>(self.tid)
                .map_err(|e| anyhow!("`thread_run' function failed: {}", state::message(&e)))?;
            return Ok(false);
        }
        let stop: bool = self
            .event
            .call(self.tid)
            .map_err(|e| anyhow!("`thread_run' function failed: {}", state::message(&e)))?;
        Ok(!stop)
    }
}

/// Stops the process when an event outlives --time by more than a grace
/// period (a script's event that never returns cannot be interrupted from
/// outside its thread), or keeps running a second after Ctrl-C: sysbench's
/// forced shutdown. Dropped, it stands down.
struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
}

impl Watchdog {
    fn start(engine: &EngineOptions) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        // With --forced-shutdown the engine stops the run with sysbench's
        // report first; this is the backstop.
        let limit = engine.time.map(|t| {
            let grace = (t / 20).max(Duration::from_secs(2));
            let forced = engine
                .forced_shutdown
                .map_or(Duration::ZERO, |g| g + Duration::from_secs(1));
            t + engine.warmup + grace.max(forced)
        });
        let started = Instant::now();
        std::thread::spawn(move || {
            let mut interrupted_at: Option<Instant> = None;
            loop {
                match rx.recv_timeout(Duration::from_millis(50)) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                if limit.is_some_and(|l| started.elapsed() > l) {
                    eprintln!("FATAL: The --max-time limit has expired, forcing shutdown...");
                    std::process::exit(2);
                }
                if signals::interrupted() {
                    let at = *interrupted_at.get_or_insert_with(Instant::now);
                    if at.elapsed() > Duration::from_secs(1) {
                        eprintln!("virtperf: interrupted while a script's event was running");
                        std::process::exit(130);
                    }
                }
            }
        });
        Watchdog { stop: Some(tx) }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}
