//! Environments: where a plan of workloads runs. Every driver starts a
//! process whose stdin and stdout reach a virtperf agent (a local child, a
//! container, a VM's serial port, an SSH session); this module speaks the
//! agent protocol over it, starts `count=N` instances together, enforces
//! deadlines, and always cleans up.

pub mod def;
pub mod docker;
pub mod host;
pub mod probe;
pub mod qemu;
pub mod spec;
pub mod ssh;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::agent::{Message, Plan, PROTOCOL};
use crate::core::observer::Observer;
use crate::core::result::{Metric, ResultDoc};
use crate::core::signals;
use crate::sys::monitor;
use crate::workload::Job;
pub use def::DriverDef;
pub use spec::Spec;

/// Every environment driver, one line each.
pub static DRIVERS: &[&DriverDef] = &[
    &host::DEF,
    &docker::DOCKER,
    &docker::PODMAN,
    &qemu::DEF,
    &ssh::DEF,
];

/// The driver of that name.
pub fn find_driver(name: &str) -> Option<&'static DriverDef> {
    DRIVERS.iter().copied().find(|d| d.name == name)
}

/// `--env` help, generated from the drivers.
pub fn help() -> String {
    let mut out =
        String::from("Environments (--env SPEC; every spec also takes count=N and name=LABEL):\n");
    for d in DRIVERS {
        out.push_str(&format!("  {}\n      {}\n", d.usage(), d.summary));
        for o in d.options {
            out.push_str(&format!("      {:<16} {}\n", o.key, o.help));
        }
    }
    out
}

/// A started agent process, as a driver hands it over.
pub struct Launched {
    pub child: Child,
    /// Runs after the process has ended or was killed (remove a container,
    /// a temporary directory...).
    pub cleanup: Option<Box<dyn FnOnce() + Send>>,
    /// A log worth showing when the agent dies (a VM's console).
    pub console: Option<PathBuf>,
    /// Where file workloads should write, inside the environment.
    pub workdir: String,
    /// A TCP port forwarded from the host's loopback into the instance, as
    /// (host port, port inside): how a host-side client reaches a server
    /// there (QEMU's user-mode network).
    pub forwarded: Option<(u16, u16)>,
    /// Where the host sees the instance's CPU use.
    pub on_host: OnHost,
}

/// Where the host can see an instance's CPU use, so that the noise check
/// tells work done on its behalf from other processes' load (see
/// `sys::monitor`).
pub enum OnHost {
    /// It runs on another machine (SSH): the agent's figures stand.
    Elsewhere,
    /// The launched process tree is all of it (the host agent; QEMU with
    /// its vCPU threads).
    Tree,
    /// Also a container's processes, counted by its cgroup: this returns
    /// the pid of its init once it runs.
    Container(Box<dyn Fn() -> Option<u32> + Send>),
}

/// One way of running agents.
pub trait Environment {
    fn spec(&self) -> &Spec;

    /// One-time set-up shared by all instances (an image, an initramfs);
    /// what the user should know (a fallback taken) goes to `obs`.
    fn prepare(&mut self, _obs: &dyn Observer) -> Result<()> {
        Ok(())
    }

    /// Starts instance `index` (of `spec().count`).
    fn launch(&self, index: usize) -> Result<Launched>;

    /// How long the agent may take to say hello (a VM boots first).
    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(30)
    }

    /// Why a failure happened, when the driver knows (an OOM kill).
    fn explain_exit(&self, _index: usize) -> Option<String> {
        None
    }
}

/// Builds the driver for a spec.
pub fn driver(spec: &Spec) -> Result<Box<dyn Environment>> {
    (spec.driver.build)(spec)
}

/// What one instance produced.
#[derive(Debug)]
pub struct InstanceOutcome {
    /// Launch to agent hello.
    pub ready_after: Duration,
    /// One per job: the document, or why it failed.
    pub results: Vec<std::result::Result<ResultDoc, String>>,
    /// The instance's forwarded port, (host loopback port, port inside).
    pub forwarded: Option<(u16, u16)>,
}

enum Line {
    Text(String),
    Eof,
}

/// A live agent with its reader thread.
struct Session {
    label: String,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    cleanup: Option<Box<dyn FnOnce() + Send>>,
    console: Option<PathBuf>,
    workdir: String,
    forwarded: Option<(u16, u16)>,
    on_host: OnHost,
    launched_at: Instant,
}

impl Session {
    fn start(launched: Launched, label: String) -> Result<Session> {
        let mut launched = launched;
        let stdout = launched
            .child
            .stdout
            .take()
            .ok_or_else(|| anyhow!("the agent's stdout is not piped"))?;
        let stdin = launched.child.stdin.take();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Line::Eof);
                        return;
                    }
                    Ok(_) => {
                        if tx.send(Line::Text(line)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Ok(Session {
            label,
            child: Some(launched.child),
            stdin,
            lines: rx,
            cleanup: launched.cleanup,
            console: launched.console,
            workdir: launched.workdir,
            forwarded: launched.forwarded,
            on_host: launched.on_host,
            launched_at: Instant::now(),
        })
    }

    /// The next protocol message, within `deadline`. Lines that are not
    /// JSON (a shell's banner, a kernel message) are skipped.
    fn next(&mut self, deadline: Duration) -> Result<Message> {
        let until = Instant::now() + deadline;
        loop {
            if signals::interrupted() {
                return Err(signals::Interrupted.into());
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "{}: no answer from the agent within {:.0} s{}",
                    self.label,
                    deadline.as_secs_f64(),
                    self.console_tail()
                );
            }
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(Line::Text(text)) => {
                    let t = text.trim().trim_start_matches('\u{0}');
                    if let Some(start) = t.find("{\"type\"") {
                        if let Ok(msg) = serde_json::from_str::<Message>(&t[start..]) {
                            return Ok(msg);
                        }
                    }
                }
                Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    let status = self
                        .child
                        .as_mut()
                        .and_then(|c| c.wait().ok())
                        .map(|s| format!(" ({s})"))
                        .unwrap_or_default();
                    bail!(
                        "{}: the agent ended unexpectedly{status}{}",
                        self.label,
                        self.console_tail()
                    );
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    fn console_tail(&self) -> String {
        let Some(path) = &self.console else {
            return String::new();
        };
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n    ");
        format!("; last console lines:\n    {tail}")
    }

    fn send_line(&mut self, line: &str) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow!("{}: the agent's stdin is closed", self.label))?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .with_context(|| format!("{}: sending to the agent", self.label))
    }

    /// Waits for the process to end (it does after "done"), or kills it.
    fn finish(&mut self, grace: Duration) {
        self.stdin.take();
        if let Some(mut child) = self.child.take() {
            let until = Instant::now() + grace;
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
        if let Some(cleanup) = self.cleanup.take() {
            cleanup();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.finish(Duration::from_secs(2));
    }
}

/// Runs `jobs` in every instance of `env`, started together.
pub fn run(
    env: &mut dyn Environment,
    jobs: &[Job],
    obs: &dyn Observer,
) -> Result<Vec<InstanceOutcome>> {
    run_with(env, jobs, obs, &mut |_, _, _| {})
}

/// Called with (instance, invocation index, outcome) as each result arrives.
pub type OnResult<'a> = dyn FnMut(usize, usize, &std::result::Result<ResultDoc, String>) + 'a;

/// As `run`, handing every result to `on_result` the moment it arrives.
pub fn run_with(
    env: &mut dyn Environment,
    jobs: &[Job],
    obs: &dyn Observer,
    on_result: &mut OnResult,
) -> Result<Vec<InstanceOutcome>> {
    env.prepare(obs)?;
    let spec = env.spec().clone();
    let mut sessions = Vec::with_capacity(spec.count);
    for i in 0..spec.count {
        let label = if spec.count > 1 {
            format!("{}#{}", spec.label, i + 1)
        } else {
            spec.label.clone()
        };
        let launched = env.launch(i).with_context(|| format!("starting {label}"))?;
        sessions.push(Session::start(launched, label)?);
    }
    let mut ready_after = Vec::new();
    let own_sha = crate::sys::fingerprint::binary_sha256().unwrap_or_default();
    for s in &mut sessions {
        match s.next(env.boot_deadline())? {
            Message::Hello {
                protocol,
                version,
                sha256,
            } => {
                if protocol != PROTOCOL {
                    bail!(
                        "{}: the agent is virtperf {version} speaking protocol {protocol}, this is virtperf {} speaking {PROTOCOL}: use the same build on both sides",
                        s.label,
                        env!("CARGO_PKG_VERSION")
                    );
                }
                if !own_sha.is_empty() && !sha256.is_empty() && sha256 != own_sha {
                    obs.note(&format!(
                        "note: {} runs a different virtperf build (sha256 {}…) than this one ({}…)",
                        s.label,
                        &sha256[..12.min(sha256.len())],
                        &own_sha[..12.min(own_sha.len())]
                    ));
                }
                ready_after.push(s.launched_at.elapsed());
            }
            other => bail!(
                "{}: expected a hello from the agent, got {other:?}",
                s.label
            ),
        }
    }
    let together = sessions.len() > 1;
    for s in &mut sessions {
        let plan = Plan {
            protocol: PROTOCOL,
            env_name: s.label.clone(),
            env_kind: spec.driver.name.to_string(),
            workdir: s.workdir.clone(),
            wait_for_go: together,
            jobs: jobs.iter().map(Job::to_wire).collect(),
        };
        s.send_line(&serde_json::to_string(&plan)?)?;
    }
    if together {
        for s in &mut sessions {
            match s.next(Duration::from_secs(60))? {
                Message::Ready => {}
                other => bail!("{}: expected ready, got {other:?}", s.label),
            }
        }
        // All instances are waiting: release them at once.
        for s in &mut sessions {
            s.send_line("go")?;
        }
    }
    let mut results: Vec<Vec<std::result::Result<ResultDoc, String>>> =
        vec![Vec::new(); sessions.len()];
    // The host's check of each run's foreign load: with one instance,
    // whose results arrive as its runs end; simultaneous instances' results
    // are read one instance after the other, so intervals would not match.
    let roots = (sessions.len() == 1)
        .then(|| host_roots(&sessions[0]))
        .flatten();
    let mut mark = roots
        .as_ref()
        .and_then(|(_, cgroups)| monitor::HostSnapshot::take(cgroups));
    // Instances run concurrently; read each one's stream in turn, every
    // message is buffered by its reader thread meanwhile.
    for (i, s) in sessions.iter_mut().enumerate() {
        for job in jobs {
            let msg = s
                .next(job.deadline())
                .map_err(|e| match env.explain_exit(i) {
                    Some(why) => anyhow!("{e:#}: {why}"),
                    None => e,
                })?;
            let outcome = match msg {
                Message::Result { mut doc, .. } => {
                    doc.env.ready_s = Some(ready_after[i].as_secs_f64());
                    if let (Some((roots, cgroups)), Some(start)) = (&roots, &mark) {
                        if let Some(now) = monitor::HostSnapshot::take(cgroups) {
                            let load = monitor::host_load(start, &now, roots);
                            doc.monitor.foreign_busy_pct = load.foreign_pct;
                            doc.monitor.env_busy_pct = Some(load.env_pct);
                            mark = Some(now);
                        }
                    }
                    Ok(*doc)
                }
                Message::Error { message, .. } => Err(message),
                other => bail!("{}: unexpected message {other:?}", s.label),
            };
            on_result(i, results[i].len(), &outcome);
            results[i].push(outcome);
        }
        match s.next(Duration::from_secs(30))? {
            Message::Done => {}
            other => bail!("{}: expected done, got {other:?}", s.label),
        }
    }
    for s in &mut sessions {
        s.finish(Duration::from_secs(20));
    }
    Ok(results
        .into_iter()
        .zip(ready_after)
        .zip(&sessions)
        .map(|((results, ready_after), s)| InstanceOutcome {
            ready_after,
            results,
            forwarded: s.forwarded,
        })
        .collect())
}

/// What works for a session on this machine: the launched process's tree
/// and, for a container, its cgroup. None when it runs elsewhere.
fn host_roots(s: &Session) -> Option<(Vec<u32>, Vec<monitor::CgroupCpu>)> {
    let child = s.child.as_ref()?.id();
    match &s.on_host {
        OnHost::Elsewhere => None,
        OnHost::Tree => Some((vec![child], Vec::new())),
        OnHost::Container(init) => Some((
            vec![child],
            init()
                .and_then(monitor::CgroupCpu::of)
                .into_iter()
                .collect(),
        )),
    }
}

/// The summed throughput of instances that ran at once: higher-is-better
/// metrics add up, lower-is-better ones (latencies, times) are averaged.
pub fn combine(label: &str, docs: &[ResultDoc]) -> Option<ResultDoc> {
    let first = docs.first()?;
    let mut out = first.clone();
    out.env.name = label.to_string();
    out.metrics = first
        .metrics
        .iter()
        .map(|m| {
            let values: Vec<f64> = docs.iter().filter_map(|d| d.metric(&m.name)).collect();
            let sum: f64 = values.iter().sum();
            let value = if m.higher_is_better {
                sum
            } else {
                sum / values.len().max(1) as f64
            };
            Metric { value, ..m.clone() }
        })
        .collect();
    out.events = docs.iter().map(|d| d.events).sum();
    out.details = serde_json::json!({
        "instances": docs.len(),
        "per_instance": docs.iter().map(|d| {
            serde_json::json!({"env": d.env.name, "metrics": d.metrics})
        }).collect::<Vec<_>>(),
    });
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_instances_sum_throughput_and_average_latency() {
        let doc = |eps: f64, t: f64| ResultDoc {
            schema: crate::core::result::SCHEMA.into(),
            workload: "cpu".into(),
            params: Default::default(),
            env: Default::default(),
            started_at: String::new(),
            duration_s: 1.0,
            events: 10,
            metrics: vec![
                Metric::new("events_per_sec", eps, "events/s", true),
                Metric::new("total_time_s", t, "s", false),
            ],
            latency_ms: None,
            fairness: None,
            monitor: Default::default(),
            details: serde_json::Value::Null,
        };
        let c = combine("x", &[doc(100.0, 2.0), doc(50.0, 4.0)]).unwrap();
        assert_eq!(c.metric("events_per_sec"), Some(150.0));
        assert_eq!(c.metric("total_time_s"), Some(3.0));
        assert_eq!(c.events, 20);
        assert_eq!(c.env.name, "x");
    }
}
