//! A script's `run`: `init()`, a Lua state per thread with
//! `thread_init(tid)`, its events as the engine's workers, `thread_done`,
//! `done()`; the interim and cumulative reports through the script's hooks or
//! in sysbench's words, and the result document of the run.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use mlua::{Function, Lua, Table, Value as LuaValue};

use crate::core::fatal::SysbenchFatal;
use crate::core::observer::Observer;
use crate::core::options::NOT_PARAMS;
use crate::core::result::{Metric, ResultDoc, SCHEMA};
use crate::core::signals;
use crate::core::time::now_rfc3339_ms;
use crate::engine::{self, EngineOptions, Worker};
use crate::sys::{fingerprint, monitor};
use crate::workload::{metric_from, Executed, Measurement};

use super::sql::Counters;
use super::{call, options, state, Script, METRICS};

impl Script {
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
            accounting: inside.map(crate::core::accounting::Accounting::of_inside),
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
