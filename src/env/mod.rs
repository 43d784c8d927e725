//! Environments: where a plan of workloads runs. Every driver starts a
//! process whose stdin and stdout reach a virtperf agent (a local child, a
//! container, a VM's serial port, an SSH session); this module speaks the
//! agent protocol over it, starts `count=N` instances together, enforces
//! deadlines, and always cleans up.

mod bounded;
pub mod def;
pub mod docker;
pub mod group;
pub mod host;
pub mod net;
pub mod probe;
pub mod qemu;
pub mod spec;
pub mod ssh;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::agent::protocol::{Message, Plan, Served, ServerAnswer, BYE, GO, PROTOCOL};
use crate::core::observer::Observer;
use crate::core::result::{Metric, ResultDoc};
use crate::core::signals;
use crate::core::text;
use crate::sys::monitor;
use crate::workload::Job;
pub use def::DriverDef;
pub use net::{NetNeed, Route};
pub use spec::Spec;

/// Every environment driver, one line each.
pub static DRIVERS: &[&DriverDef] = &[
    &host::DEF,
    &docker::DOCKER,
    &docker::PODMAN,
    &qemu::DEF,
    &ssh::DEF,
    &group::DEF,
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

    /// How long a job may take here before the agent is declared hung.
    fn job_deadline(&self, job: &Job) -> Duration {
        job.deadline()
    }

    /// Why a failure happened, when the driver knows (an OOM kill).
    fn explain_exit(&self, _index: usize) -> Option<String> {
        None
    }

    /// The name instance `index` reports under: the spec's label, numbered
    /// when there are several copies (a group's members have their own).
    fn instance_label(&self, index: usize) -> String {
        let s = self.spec();
        if s.count > 1 {
            format!("{}#{}", s.label, index + 1)
        } else {
            s.label.clone()
        }
    }

    /// The kind instance `index` reports (its driver's name).
    fn instance_kind(&self, _index: usize) -> String {
        self.spec().driver.name.to_string()
    }

    /// What the plan's network jobs need, told before `prepare` and any
    /// launch, so the driver can open exactly that (QEMU's user network to
    /// the host, a forwarded port).
    fn use_network(&mut self, _need: NetNeed) {}

    /// How a client in instance `index` (which has said hello) reaches a
    /// server on the host: where the host server binds (only where the
    /// instance reaches it) and what the client dials.
    fn route_to_host(&self, _index: usize) -> Result<Route> {
        Ok(Route::loopback("loopback"))
    }

    /// How the host reaches a server inside instance `index`: where it
    /// binds inside and what the host dials (`forwarded` is the instance's
    /// forwarded port, if any).
    fn route_to_env(&self, _index: usize, _forwarded: Option<(u16, u16)>) -> Result<Route> {
        Ok(Route::loopback("loopback"))
    }

    /// As `explain_exit`, also given how the launched process ended, if it
    /// has (a container engine's client exits with the container's code).
    fn explain_exit_status(&self, index: usize, _status: Option<ExitStatus>) -> Option<String> {
        self.explain_exit(index)
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

/// The longest line the host accepts from an agent: a result document is a
/// few KiB; anything near this is a broken or hostile agent.
pub const MAX_LINE: usize = 4 << 20;
/// Lines an agent may have waiting for the host (instances are read in
/// turn); beyond that its writes block. Memory per instance stays below
/// `MAX_LINE * (QUEUED_LINES + 2)`.
const QUEUED_LINES: usize = 8;
/// How much of a piped stderr (QEMU's) is kept for error messages.
const STDERR_TAIL: usize = 4096;
/// How much of a console log is read for an error message.
const CONSOLE_TAIL: u64 = 64 << 10;

#[derive(Debug)]
enum Line {
    Text(String),
    /// The stream broke the protocol (not UTF-8, a line too long) or could
    /// not be read; nothing more is read from it.
    Broken(String),
    Eof,
}

/// The protocol message on one line of an agent's output: none on a line of
/// other text (a shell's banner), or why a line that claims to be one is not.
/// Public for the fuzz targets.
pub fn message_in(line: &str) -> std::result::Result<Option<Message>, String> {
    let t = line.trim().trim_start_matches('\u{0}');
    // A message may follow noise on its line (a serial port's); a line that
    // is all JSON is a message whatever its key order.
    let Some(start) = t.find("{\"type\"").or(t.starts_with('{').then_some(0)) else {
        return Ok(None);
    };
    serde_json::from_str::<Message>(&t[start..])
        .map(Some)
        .map_err(|e| {
            format!(
                "the agent sent a message that does not parse ({e}): {}",
                text::one_line(&t[start..], 200)
            )
        })
}

/// Reads `input` line by line into `tx`, bounded in line length and (with a
/// bounded channel) in what waits for the host.
fn read_lines(input: impl std::io::Read, tx: SyncSender<Line>) {
    let mut reader = BufReader::with_capacity(64 << 10, input);
    let mut line = Vec::new();
    loop {
        let (complete, used) = match reader.fill_buf() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Line::Broken(format!("reading the agent's output: {e}")));
                return;
            }
            Ok([]) => {
                let _ = tx.send(Line::Eof);
                return;
            }
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    line.extend_from_slice(&buf[..i]);
                    (true, i + 1)
                }
                None => {
                    line.extend_from_slice(buf);
                    (false, buf.len())
                }
            },
        };
        reader.consume(used);
        if line.len() > MAX_LINE {
            let _ = tx.send(Line::Broken(format!(
                "the agent sent a line longer than {} MiB: a broken or hostile agent",
                MAX_LINE >> 20
            )));
            return;
        }
        if complete {
            match String::from_utf8(std::mem::take(&mut line)) {
                Ok(text) => {
                    if tx.send(Line::Text(text)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let at = e.utf8_error().valid_up_to();
                    let _ = tx.send(Line::Broken(format!(
                        "the agent sent a line that is not UTF-8 (byte {at}: {:#04x}): a broken or hostile agent",
                        e.as_bytes()[at]
                    )));
                    return;
                }
            }
        }
    }
}

/// Keeps the last `STDERR_TAIL` bytes of `input`, read until it ends, so a
/// chatty process never blocks on a full pipe and its last words are kept.
fn keep_tail(mut input: impl std::io::Read, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 8192];
    loop {
        match input.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                t.extend_from_slice(&buf[..n]);
                if t.len() > STDERR_TAIL {
                    let cut = t.len() - STDERR_TAIL;
                    t.drain(..cut);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Waits up to `limit` for `child` to end; its status, or `None` if it is
/// still running.
fn wait_for(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let until = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            _ => return None,
        }
    }
}

/// Kills `child` and, when it leads its own process group, everything it
/// started; then reaps it and waits (at most 2 s) until nothing of the
/// group is left: SIGKILL is not instant, and a grandchild that init
/// inherits could otherwise outlive the run for a moment.
fn kill(child: &mut Child) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: getpgid and kill take plain integers; the pid is our own
    // unreaped child, so it cannot have been recycled.
    let group = unsafe {
        let group = libc::getpgid(pid) == pid;
        if group {
            libc::kill(-pid, libc::SIGKILL);
        }
        group
    };
    let _ = child.kill();
    let _ = child.wait();
    let until = Instant::now() + Duration::from_secs(2);
    // SAFETY: signal 0 only asks whether any process of the group is left.
    while group && unsafe { libc::kill(-pid, 0) } == 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A live agent with its reader thread.
struct Session {
    label: String,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    stderr: Option<Arc<Mutex<Vec<u8>>>>,
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
        let stdout = launched.child.stdout.take();
        let stderr = launched.child.stderr.take();
        let stdin = launched.child.stdin.take();
        let (tx, rx) = mpsc::sync_channel(QUEUED_LINES);
        // From here on the session owns the process: dropping it (on any
        // error below) kills it and runs the cleanup.
        let mut session = Session {
            label,
            child: Some(launched.child),
            stdin,
            lines: rx,
            stderr: None,
            cleanup: launched.cleanup,
            console: launched.console,
            workdir: launched.workdir,
            forwarded: launched.forwarded,
            on_host: launched.on_host,
            launched_at: Instant::now(),
        };
        let stdout = stdout.ok_or_else(|| anyhow!("the agent's stdout is not piped"))?;
        std::thread::Builder::new()
            .name("agent-reader".into())
            .spawn(move || read_lines(stdout, tx))
            .context("starting a thread to read the agent")?;
        if let Some(stderr) = stderr {
            let tail = Arc::new(Mutex::new(Vec::new()));
            let t = tail.clone();
            std::thread::Builder::new()
                .name("agent-stderr".into())
                .spawn(move || keep_tail(stderr, t))
                .context("starting a thread to read the agent's stderr")?;
            session.stderr = Some(tail);
        }
        Ok(session)
    }

    /// The next protocol message, within `deadline`. Lines that are not
    /// JSON (a shell's banner, a kernel message) are skipped; a line that
    /// claims to be a message and is not one is a protocol error.
    fn next(&mut self, deadline: Duration) -> Result<Message> {
        let until = Instant::now() + deadline;
        loop {
            if signals::interrupted() {
                return self.received_before_the_stop();
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "{}: no answer from the agent within {:.0} s{}",
                    self.label,
                    deadline.as_secs_f64(),
                    self.last_words()
                );
            }
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(Line::Text(text)) => match message_in(&text) {
                    Ok(Some(msg)) => return Ok(msg),
                    Ok(None) => {}
                    Err(why) => bail!("{}: protocol error: {why}", self.label),
                },
                Ok(Line::Broken(why)) => {
                    bail!("{}: protocol error: {why}{}", self.label, self.last_words())
                }
                Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    let status = match self.child.as_mut() {
                        Some(c) => match wait_for(c, Duration::from_secs(5)) {
                            Some(s) => format!(" ({s})"),
                            None => " (its output closed, the process still runs)".into(),
                        },
                        None => String::new(),
                    };
                    bail!(
                        "{}: the agent ended unexpectedly{status}{}",
                        self.label,
                        self.last_words()
                    );
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// After a stop: a result or an error the agent had already sent (the
    /// reader holds it, the signal came first) is still taken, so no
    /// finished measurement is lost; then `Interrupted`. Only what has
    /// arrived is looked at, a bounded number of lines.
    fn received_before_the_stop(&mut self) -> Result<Message> {
        for _ in 0..=QUEUED_LINES {
            let Ok(Line::Text(text)) = self.lines.try_recv() else {
                break;
            };
            match message_in(&text) {
                Ok(Some(msg @ (Message::Result { .. } | Message::Error { .. }))) => return Ok(msg),
                Ok(None) => {}
                _ => break,
            }
        }
        Err(signals::Interrupted.into())
    }

    /// The end of the process's stderr and of its console log, if kept, for
    /// an error message; made safe for a terminal.
    fn last_words(&self) -> String {
        let mut out = String::new();
        if let Some(tail) = &self.stderr {
            // Give a process that just died a moment to have its last words read.
            std::thread::sleep(Duration::from_millis(50));
            let bytes = tail.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let text = String::from_utf8_lossy(&bytes);
            if !text.trim().is_empty() {
                out.push_str(&format!(
                    "; its stderr: {}",
                    text::terminal_safe(text.trim(), STDERR_TAIL)
                ));
            }
        }
        if let Some(path) = &self.console {
            let text = read_tail(path, CONSOLE_TAIL);
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n    ");
            out.push_str(&format!(
                "; last console lines:\n    {}",
                text::terminal_safe(&tail, CONSOLE_TAIL as usize)
            ));
        }
        out
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
        let grace = if signals::hurried() {
            Duration::ZERO
        } else {
            grace
        };
        if let Some(mut child) = self.child.take() {
            if wait_for(&mut child, grace).is_none() {
                kill(&mut child);
            }
        }
        if let Some(cleanup) = self.cleanup.take() {
            cleanup();
        }
    }
}

/// The last `max` bytes of a file, as text.
fn read_tail(path: &std::path::Path, max: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut bytes = Vec::new();
    let _ = f.take(max).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Why a result the agent sent cannot be this job's, if it cannot: another
/// job's index or workload, another environment, a figure that is not a
/// finite, non-negative number (every metric is a rate, a count or a time).
fn refuse_result(
    doc: &ResultDoc,
    index: usize,
    want: usize,
    job: &Job,
    env_name: &str,
) -> Option<String> {
    if index != want {
        return Some(format!("a result for job {index} where job {want} was due"));
    }
    if doc.workload != job.def.name {
        return Some(format!(
            "a result of workload '{}' for a {} job",
            text::one_line(&doc.workload, 40),
            job.def.name
        ));
    }
    if doc.env.name != env_name {
        return Some(format!(
            "a result from environment '{}', not '{env_name}'",
            text::one_line(&doc.env.name, 80)
        ));
    }
    let bad = |x: f64| !x.is_finite() || x < 0.0;
    if bad(doc.duration_s) {
        return Some(format!("a duration of {} s", doc.duration_s));
    }
    if let Some(m) = doc.metrics.iter().find(|m| bad(m.value)) {
        return Some(format!(
            "{} = {}: not a finite, non-negative number",
            text::one_line(&m.name, 60),
            m.value
        ));
    }
    if let Some(l) = &doc.latency_ms {
        if [l.min, l.avg, l.max, l.p50, l.p95, l.p99, l.p999, l.sum]
            .into_iter()
            .any(bad)
        {
            return Some("a latency that is not a finite, non-negative number".into());
        }
    }
    None
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

/// As `run`, handing every result to `on_result` the moment it arrives:
/// the instances are started for these jobs and ended after them.
pub fn run_with(
    env: &mut dyn Environment,
    jobs: &[Job],
    obs: &dyn Observer,
    on_result: &mut OnResult,
) -> Result<Vec<InstanceOutcome>> {
    check_jobs(jobs)?;
    let mut open = Opened::start(env, NetNeed::of(jobs), obs)?;
    let outcome = open.run(env, jobs, on_result)?;
    open.close();
    Ok(outcome)
}

/// Jobs that ask for two contradicting network peers are refused before
/// anything starts.
fn check_jobs(jobs: &[Job]) -> Result<()> {
    for job in jobs {
        if let Some(peer) = job.def.needs.network {
            if peer.address_given(&job.values) && peer.server_inside(&job.values) {
                bail!(
                    "{}: --{} names a server that already runs; --{}={} starts one inside the environment: give one of them",
                    job.def.name,
                    peer.address_option,
                    peer.placement_option,
                    peer.placement_env
                );
            }
        }
    }
    Ok(())
}

/// An environment's instances, started and greeted, kept for as many plans
/// as the caller has for them (a comparison's every turn there), so a VM
/// boots and a container starts once. Dropped, they are killed and cleaned
/// up; `close` ends them politely.
pub struct Opened {
    sessions: Vec<Session>,
    ready_after: Vec<Duration>,
    need: NetNeed,
}

impl Opened {
    /// Starts every instance of `env` and waits for each agent's hello.
    /// `need` is every network peer the plans to come will use.
    pub fn start(env: &mut dyn Environment, need: NetNeed, obs: &dyn Observer) -> Result<Opened> {
        env.use_network(need);
        env.prepare(obs)?;
        let spec = env.spec().clone();
        let mut sessions = Vec::with_capacity(spec.count);
        for i in 0..spec.count {
            let label = env.instance_label(i);
            let launched = env.launch(i).with_context(|| format!("starting {label}"))?;
            sessions.push(Session::start(launched, label)?);
        }
        let mut ready_after = Vec::new();
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
                    let own_sha = match sha256.is_empty() {
                        true => String::new(),
                        false => crate::sys::fingerprint::binary_sha256().unwrap_or_default(),
                    };
                    if !own_sha.is_empty() && sha256 != own_sha {
                        // The guest's text: cut by characters, never raw.
                        let short =
                            |s: &str| text::one_line(&s.chars().take(12).collect::<String>(), 12);
                        obs.note(&format!(
                            "note: {} runs a different virtperf build (sha256 {}…) than this one ({}…)",
                            s.label,
                            short(&sha256),
                            short(&own_sha)
                        ));
                    }
                    ready_after.push(s.launched_at.elapsed());
                }
                other => bail!(
                    "{}: expected a hello from the agent, got {}",
                    s.label,
                    text::one_line(&format!("{other:?}"), 200)
                ),
            }
        }
        Ok(Opened {
            sessions,
            ready_after,
            need,
        })
    }

    /// Whether plans needing `need` can run here (the network the
    /// instances were started with covers it).
    pub fn covers(&self, need: NetNeed) -> bool {
        (!need.to_host || self.need.to_host) && (!need.to_env || self.need.to_env)
    }

    /// Ends every instance: "bye", then a grace period for it to stop on
    /// its own, then a kill; the driver's cleanup either way.
    pub fn close(mut self) {
        for s in &mut self.sessions {
            let _ = s.send_line(BYE);
        }
        for s in &mut self.sessions {
            s.finish(Duration::from_secs(20));
        }
    }

    /// Runs `jobs` in every instance (started together when there are
    /// several), handing each result to `on_result` as it arrives.
    pub fn run(
        &mut self,
        env: &dyn Environment,
        jobs: &[Job],
        on_result: &mut OnResult,
    ) -> Result<Vec<InstanceOutcome>> {
        check_jobs(jobs)?;
        let need = NetNeed::of(jobs);
        if !self.covers(need) {
            bail!("internal: these jobs need a network the instances were not started with");
        }
        let spec = env.spec().clone();
        let sessions = &mut self.sessions;
        let ready_after = &self.ready_after;
        let together = sessions.len() > 1;
        // Network peers: servers on the host for clients inside, addresses to
        // serve on for servers inside; each instance's own.
        let mut nets = Vec::with_capacity(sessions.len());
        for (i, s) in sessions.iter_mut().enumerate() {
            let forwarded = s.forwarded;
            let env_ref: &dyn Environment = env;
            // One instance's server starts when its job asks; simultaneous
            // instances are read one after the other, so theirs start with
            // the plan, for its length.
            let (own_jobs, net) = net::InstanceNet::plan(
                jobs,
                !together,
                || env_ref.route_to_host(i),
                || env_ref.route_to_env(i, forwarded),
            )
            .with_context(|| format!("{}: setting up the network test's server", s.label))?;
            let plan = Plan {
                protocol: PROTOCOL,
                env_name: s.label.clone(),
                env_kind: env.instance_kind(i),
                workdir: s.workdir.clone(),
                wait_for_go: together,
                jobs: own_jobs.iter().map(Job::to_wire).collect(),
                host_servers: net.on_demand(),
            };
            s.send_line(&serde_json::to_string(&plan)?)?;
            nets.push(net);
        }
        if together {
            for s in sessions.iter_mut() {
                match s.next(Duration::from_secs(60))? {
                    Message::Ready => {}
                    other => bail!(
                        "{}: expected ready, got {}",
                        s.label,
                        text::one_line(&format!("{other:?}"), 200)
                    ),
                }
            }
            // All instances are waiting: release them at once.
            for s in sessions.iter_mut() {
                s.send_line(GO)?;
            }
        }
        let mut results: Vec<Vec<std::result::Result<ResultDoc, String>>> =
            vec![Vec::new(); sessions.len()];
        // The host's check of each run's foreign load: with one instance,
        // whose results arrive as its runs end; simultaneous instances' results
        // are read one instance after the other, so intervals would not match.
        // A host server or client runs in this process: its CPU is the run's
        // own work, not other processes' load.
        let roots = (sessions.len() == 1)
            .then(|| host_roots(&sessions[0]))
            .flatten()
            .map(|(mut pids, cgroups)| {
                if need.any() {
                    pids.push(std::process::id());
                }
                (pids, cgroups)
            });
        let mut mark = roots
            .as_ref()
            .and_then(|(_, cgroups)| monitor::HostSnapshot::take(cgroups));
        // Instances run concurrently; read each one's stream in turn, every
        // message is buffered by its reader thread meanwhile.
        for (i, s) in sessions.iter_mut().enumerate() {
            for (want, job) in jobs.iter().enumerate() {
                let mut served = false;
                let msg = loop {
                    let msg = match s.next(env.job_deadline(job)) {
                        Ok(msg) => msg,
                        Err(e) => {
                            let status = s.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
                            return Err(match env.explain_exit_status(i, status) {
                                Some(why) => anyhow!("{e:#}: {why}"),
                                None => e,
                            });
                        }
                    };
                    match msg {
                        Message::Serving { index, port } if index == want && !served => {
                            served = true;
                            let answer = serve_client(&nets[i], want, job, port, &s.label, &spec);
                            s.send_line(&serde_json::to_string(&answer)?)?;
                        }
                        Message::NeedServer { index } if index == want && !served => {
                            served = true;
                            let answer = match nets[i].start_for(want, job.def.name) {
                                Ok((address, secret)) => ServerAnswer::Listening {
                                    address: address.to_string(),
                                    secret,
                                },
                                Err(e) => ServerAnswer::Failed {
                                    message: format!("{e:#}"),
                                },
                            };
                            s.send_line(&serde_json::to_string(&answer)?)?;
                        }
                        other => break other,
                    }
                };
                // The job is over: its host server, if any, stops now.
                nets[i].stop_for(want);
                let outcome = match msg {
                    Message::Result { index, mut doc } => {
                        if let Some(why) = refuse_result(&doc, index, want, job, &s.label) {
                            bail!("{}: protocol error: the agent sent {why}", s.label);
                        }
                        doc.env.ready_s = Some(ready_after[i].as_secs_f64());
                        if let Some(path) = nets[i].path(want) {
                            doc.env.net_path = Some(path.to_string());
                        }
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
                    Message::Error { index, message } if index == want => {
                        Err(text::terminal_safe(&message, 4000))
                    }
                    other => bail!(
                        "{}: protocol error: expected the result of job {want}, got {}",
                        s.label,
                        text::one_line(&format!("{other:?}"), 200)
                    ),
                };
                on_result(i, results[i].len(), &outcome);
                results[i].push(outcome);
            }
            // The last job's cleanup comes before "done".
            let cleanup = jobs
                .last()
                .filter(|j| j.def.needs.prepare)
                .map_or(Duration::from_secs(30), |j| env.job_deadline(j));
            match s.next(cleanup)? {
                Message::Done => {}
                other => bail!(
                    "{}: expected done, got {}",
                    s.label,
                    text::one_line(&format!("{other:?}"), 200)
                ),
            }
        }
        Ok(results
            .into_iter()
            .zip(ready_after.iter().copied())
            .zip(sessions.iter())
            .map(|((results, ready_after), s)| InstanceOutcome {
                ready_after,
                results,
                forwarded: s.forwarded,
            })
            .collect())
    }
}

/// Runs the client of job `k` here against its server inside the instance
/// (listening on `port` there): the answer the agent waits for.
fn serve_client(
    net: &net::InstanceNet,
    k: usize,
    job: &Job,
    port: u16,
    label: &str,
    spec: &Spec,
) -> Served {
    let run = net.client_of(k, job, port).and_then(|client| {
        crate::workload::execute(
            &client,
            label,
            spec.driver.name,
            Arc::new(crate::core::observer::Silent),
        )
    });
    match run {
        Ok(Some(done)) => Served::Served {
            doc: Box::new(done.doc),
        },
        Ok(None) => Served::Failed {
            message: "the client produced no result".into(),
        },
        Err(e) => Served::Failed {
            message: format!("the client on the host: {e:#}"),
        },
    }
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
/// metrics add up, lower-is-better ones (latencies, times) are averaged, and
/// unitless ones (linpack's `residual` and `residual_passed`: checks, not
/// amounts) take the worst instance.
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
            let value = match (m.unit.is_empty(), m.higher_is_better) {
                (true, true) => values.iter().copied().fold(f64::INFINITY, f64::min),
                (true, false) => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                (false, true) => sum,
                (false, false) => sum / values.len().max(1) as f64,
            };
            Metric { value, ..m.clone() }
        })
        .collect();
    out.events = docs.iter().map(|d| d.events).sum();
    // Each instance's own start (milliseconds, by its own clock): a check
    // that they ran together.
    out.details = serde_json::json!({
        "instances": docs.len(),
        "per_instance": docs.iter().map(|d| {
            serde_json::json!({
                "env": d.env.name,
                "kind": d.env.kind,
                "started_at": d.started_at,
                "metrics": d.metrics,
            })
        }).collect::<Vec<_>>(),
    });
    Some(out)
}

/// As `combine`, for a group's members: the sum is of kind "group".
pub fn combine_group(label: &str, docs: &[ResultDoc]) -> Option<ResultDoc> {
    let mut out = combine(label, docs)?;
    out.env.kind = group::DEF.name.to_string();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_console_log_is_read_from_its_end_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        let mut text = "x".repeat(8 << 20);
        text.push_str("\nKernel panic - the last words\n");
        std::fs::write(&path, &text).unwrap();
        let tail = read_tail(&path, CONSOLE_TAIL);
        assert!(tail.len() as u64 <= CONSOLE_TAIL);
        assert!(tail.ends_with("the last words\n"));
    }

    #[test]
    fn the_reader_bounds_lines_and_refuses_bad_bytes() {
        let lines = |input: Vec<u8>| {
            let (tx, rx) = mpsc::sync_channel(4);
            std::thread::spawn(move || read_lines(&input[..], tx));
            rx.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>()
        };
        assert_eq!(lines(b"a\nb".to_vec()), ["Text(\"a\")", "Eof"]);
        let bad = lines(b"ok\n\xff\nnever\n".to_vec());
        assert!(bad[1].contains("not UTF-8"), "{bad:?}");
        assert_eq!(bad.len(), 2, "nothing is read after a protocol error");
        let long = lines(vec![b'a'; MAX_LINE + 10]);
        assert!(long[0].contains("longer than"), "{long:?}");
    }

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
        // A check is not an amount: two passed instances are "passed" (1),
        // not 2, and the residual is the worst one.
        let check = |passed: f64, residual: f64| {
            let mut d = doc(1.0, 1.0);
            d.metrics = vec![
                Metric::new("gflops", 10.0 * residual, "GFLOPS", true),
                Metric::new("residual", residual, "", false),
                Metric::new("residual_passed", passed, "", true),
            ];
            d
        };
        let c = combine("x", &[check(1.0, 0.5), check(1.0, 3.0), check(1.0, 2.0)]).unwrap();
        assert_eq!(c.metric("gflops"), Some(55.0));
        assert_eq!(c.metric("residual"), Some(3.0));
        assert_eq!(c.metric("residual_passed"), Some(1.0));
        let c = combine("x", &[check(1.0, 0.5), check(0.0, 40.0)]).unwrap();
        assert_eq!(c.metric("residual_passed"), Some(0.0));
        assert_eq!(c.metric("residual"), Some(40.0));
    }
}
