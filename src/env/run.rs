//! Running plans in an environment's instances: start every instance and
//! check each agent's hello, send each its plan with its network peers
//! arranged, release simultaneous instances at once, read the results as
//! they arrive (answering the agent's requests for a network peer, refusing
//! a result that cannot be the job's, adding the host's view of the run's
//! load), and end the instances with "bye".

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::session::Session;
use super::{net, Environment, NetNeed, OnHost, Reboot, Spec};
use crate::agent::protocol::{Message, Plan, Served, ServerAnswer, BYE, GO, PROTOCOL};
use crate::core::accounting::Accounting;
use crate::core::observer::Observer;
use crate::core::result::ResultDoc;
use crate::core::text;
use crate::sys::{account, monitor};
use crate::workload::Job;

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
    let outcome = open.run(env, None, jobs, on_result, obs)?;
    open.close();
    Ok(outcome)
}

/// The cleanup a killed host agent could not finish, done by this process
/// on the same file system: for each job that prepares files in a
/// directory the user named (the agent's own work directory goes with the
/// driver's cleanup), what the agent runs after such a job. A job's cleanup
/// removes only what its prepare makes (fileio's `test_file.N`), so one
/// that had not begun or had already cleaned up loses nothing.
fn clean_up_here(jobs: &[Job], label: &str) {
    for job in jobs {
        let needs = &job.def.needs;
        let named = needs.workdir.is_some_and(|dir| job.values.was_given(dir));
        if needs.prepare && named && job.script.is_none() {
            let _ = crate::workload::execute(
                &job.with_command(crate::workload::Command::Cleanup),
                label,
                "host",
                Arc::new(crate::core::observer::Silent),
            );
        }
    }
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
    /// The instances have run nothing since a fresh boot (`reboot=`).
    fresh: bool,
    /// `reboot=each-round`: the round the instances were booted for.
    booted_for: Option<usize>,
}

/// Launches every instance of `env` and waits for each agent's hello:
/// the sessions and how long each took to be ready.
fn launch_all(env: &dyn Environment, obs: &dyn Observer) -> Result<(Vec<Session>, Vec<Duration>)> {
    let count = env.spec().count;
    let mut sessions = Vec::with_capacity(count);
    for i in 0..count {
        let label = env.instance_label(i);
        let launched = env.launch(i).with_context(|| format!("starting {label}"))?;
        sessions.push(Session::start(launched, label)?);
    }
    let mut ready_after = Vec::new();
    for s in &mut sessions {
        let first = s.next(env.boot_deadline())?;
        check_hello(&s.label, first, obs)?;
        ready_after.push(s.launched_at.elapsed());
    }
    Ok((sessions, ready_after))
}

impl Opened {
    /// Starts every instance of `env` and waits for each agent's hello.
    /// `need` is every network peer the plans to come will use.
    pub fn start(env: &mut dyn Environment, need: NetNeed, obs: &dyn Observer) -> Result<Opened> {
        env.use_network(need);
        env.prepare(obs)?;
        let (sessions, ready_after) = launch_all(env, obs)?;
        Ok(Opened {
            sessions,
            ready_after,
            need,
            fresh: env.launch_is_fresh(),
            booted_for: None,
        })
    }

    /// `reboot=`: ends every instance, has the driver reboot it
    /// ([`Environment::reboot`]) and starts it again, greeted as at the
    /// start.
    fn restart(&mut self, env: &dyn Environment, obs: &dyn Observer) -> Result<()> {
        for s in &mut self.sessions {
            let _ = s.send_line(BYE);
        }
        for s in self.sessions.drain(..) {
            let mut s = s;
            s.finish(Duration::from_secs(20));
        }
        for i in 0..env.spec().count {
            let label = env.instance_label(i);
            env.reboot(i).with_context(|| {
                format!(
                    "rebooting {label} before the next run (reboot={})",
                    env.spec().reboot.name().unwrap_or("no")
                )
            })?;
        }
        let (sessions, ready_after) = launch_all(env, obs)?;
        self.sessions = sessions;
        self.ready_after = ready_after;
        Ok(())
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
    /// several), handing each result to `on_result` as it arrives. With
    /// `reboot=each-run` every job runs in freshly booted instances; with
    /// `reboot=each-round` the instances are booted afresh when `round`
    /// (the comparison's round these jobs belong to) is a new one.
    ///
    /// On an error the instances are ended here. After a stop (Ctrl-C) the
    /// host's agent is given the time to clean up after itself, unless the
    /// user asked twice; when it had to be killed, its cleanup is done
    /// here.
    pub fn run(
        &mut self,
        env: &dyn Environment,
        round: Option<usize>,
        jobs: &[Job],
        on_result: &mut OnResult,
        obs: &dyn Observer,
    ) -> Result<Vec<InstanceOutcome>> {
        if jobs.iter().any(|j| j.def.needs.network.is_some()) {
            wait_for_conntrack_room(&env.spec().label, obs)?;
        }
        let outcome = self.run_jobs(env, round, jobs, on_result, obs);
        if let Err(e) = &outcome {
            let stopped = e
                .downcast_ref::<crate::core::signals::Interrupted>()
                .is_some();
            self.end_after_error(env, jobs, stopped, obs);
        }
        outcome
    }

    /// Ends every instance after a failed or stopped plan of `jobs`.
    fn end_after_error(
        &mut self,
        env: &dyn Environment,
        jobs: &[Job],
        stopped: bool,
        obs: &dyn Observer,
    ) {
        // The host agent's files are the user's (a directory they named):
        // it may take its time. Elsewhere they go with the instance.
        let patient = stopped && env.shares_files();
        let grace = if patient {
            Duration::from_secs(20)
        } else {
            Duration::from_secs(2)
        };
        for s in &mut self.sessions {
            s.hang_up();
        }
        if patient {
            let first = Duration::from_secs(1);
            let slow = !self.sessions.iter_mut().all(|s| s.ended_within(first));
            if slow && !crate::core::signals::hurried() {
                obs.note(&format!(
                    "{}: waiting up to {} s for the agent to stop and clean up; Ctrl-C again stops it at once (what it leaves is removed from here)",
                    env.spec().label,
                    grace.as_secs()
                ));
            }
        }
        let mut killed = false;
        for s in &mut self.sessions {
            killed |= s.finish(grace);
        }
        if killed && env.shares_files() {
            clean_up_here(jobs, &env.spec().label);
        }
    }

    fn run_jobs(
        &mut self,
        env: &dyn Environment,
        round: Option<usize>,
        jobs: &[Job],
        on_result: &mut OnResult,
        obs: &dyn Observer,
    ) -> Result<Vec<InstanceOutcome>> {
        match env.spec().reboot {
            Reboot::No => return self.run_plan(env, jobs, on_result),
            Reboot::EachRound => {
                if !self.fresh && self.booted_for != round {
                    self.restart(env, obs)?;
                }
                self.fresh = false;
                self.booted_for = round;
                return self.run_plan(env, jobs, on_result);
            }
            Reboot::EachRun => {}
        }
        let mut outcomes: Vec<InstanceOutcome> = Vec::new();
        for (k, job) in jobs.iter().enumerate() {
            if !self.fresh {
                self.restart(env, obs)?;
            }
            self.fresh = false;
            let mut shifted =
                |i: usize, _: usize, r: &std::result::Result<ResultDoc, String>| on_result(i, k, r);
            let one = self.run_plan(env, std::slice::from_ref(job), &mut shifted)?;
            if outcomes.is_empty() {
                outcomes = one;
            } else {
                for (all, one) in outcomes.iter_mut().zip(one) {
                    all.results.extend(one.results);
                    all.ready_after = one.ready_after;
                    all.forwarded = one.forwarded;
                }
            }
        }
        Ok(outcomes)
    }

    /// Sends `jobs` as one plan to every instance and reads the results.
    fn run_plan(
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
        let together = self.sessions.len() > 1;
        let mut nets = self.send_plans(env, jobs, together)?;
        if together {
            self.release_together()?;
        }
        let mut results: Vec<Vec<std::result::Result<ResultDoc, String>>> =
            vec![Vec::new(); self.sessions.len()];
        let mut load = ForeignLoad::start(&self.sessions, need);
        // Instances run concurrently; read each one's stream in turn, every
        // message is buffered by its reader thread meanwhile.
        for (i, s) in self.sessions.iter_mut().enumerate() {
            let net = &mut nets[i];
            for (want, job) in jobs.iter().enumerate() {
                let watch = account_watch(s, job, together);
                let mut mark = None;
                let mut started = || mark = watch.as_ref().and_then(|w| w.mark());
                let msg = answer_until_result(env, i, s, net, want, job, &mut started)?;
                // The job is over: its host server, if any, stops now.
                net.stop_for(want);
                let mut outcome = outcome_of(msg, want, job, &s.label)?;
                // A network run that failed while the kernel dropped new
                // connections says so.
                if let (Err(message), true) = (&mut outcome, job.def.needs.network.is_some()) {
                    if let Some(why) = crate::sys::conntrack::full_now() {
                        message.push_str(&format!(" ({why})"));
                    }
                }
                // What only the host knows: how long the instance took to
                // be ready, the network path, other processes' load.
                if let Ok(doc) = &mut outcome {
                    let outside = watch.zip(mark).and_then(|(w, m)| w.since(&m));
                    doc.accounting = Accounting::received(doc.accounting.take(), outside);
                    doc.env.ready_s = Some(self.ready_after[i].as_secs_f64());
                    doc.env.reboot = env.spec().reboot.name().map(str::to_string);
                    // The guest's text: one bounded line.
                    doc.env.boot = doc.env.boot.as_deref().map(|b| text::one_line(b, 120));
                    let settings = env.settings(i);
                    if !settings.is_empty() {
                        doc.env.settings = settings;
                    }
                    if let Some(path) = net.path(want) {
                        doc.env.net_path = Some(path.to_string());
                    }
                    if let (Some(load), false) = (&mut load, together) {
                        load.stamp(doc);
                    }
                }
                on_result(i, results[i].len(), &outcome);
                results[i].push(outcome);
            }
            await_done(env, s, jobs)?;
        }
        // Instances that ran at once share one interval, the whole plan's:
        // each one's own view counts its siblings as other processes.
        if together {
            if let Some(plan_load) = load.as_mut().and_then(ForeignLoad::take) {
                for doc in results.iter_mut().flatten().flatten() {
                    put_load(doc, &plan_load);
                }
            }
        }
        Ok(results
            .into_iter()
            .zip(self.ready_after.iter().copied())
            .zip(self.sessions.iter())
            .map(|((results, ready_after), s)| InstanceOutcome {
                ready_after,
                results,
                forwarded: s.forwarded,
            })
            .collect())
    }

    /// Sends every instance its plan, with its own network peers: servers
    /// on the host for clients inside, addresses to serve on for servers
    /// inside. The peers are returned, one per instance.
    fn send_plans(
        &mut self,
        env: &dyn Environment,
        jobs: &[Job],
        together: bool,
    ) -> Result<Vec<net::InstanceNet>> {
        let mut nets = Vec::with_capacity(self.sessions.len());
        for (i, s) in self.sessions.iter_mut().enumerate() {
            let forwarded = s.forwarded;
            // One instance's server starts when its job asks; simultaneous
            // instances are read one after the other, so theirs start with
            // the plan, for its length.
            let (own_jobs, net) = net::InstanceNet::plan(
                jobs,
                !together,
                || env.route_to_host(i),
                || env.route_to_env(i, forwarded),
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
        Ok(nets)
    }

    /// Waits until every instance has said it is ready, then releases them
    /// all at once.
    fn release_together(&mut self) -> Result<()> {
        for s in self.sessions.iter_mut() {
            match s.next(Duration::from_secs(60))? {
                Message::Ready => {}
                other => bail!("{}: expected ready, got {}", s.label, shown(&other)),
            }
        }
        // All instances are waiting: release them at once.
        for s in self.sessions.iter_mut() {
            s.send_line(GO)?;
        }
        Ok(())
    }
}

/// An agent's first message must be a hello in this protocol; a build
/// other than this one (by checksum) is worth a note, not a refusal.
fn check_hello(label: &str, first: Message, obs: &dyn Observer) -> Result<()> {
    let (protocol, version, sha256) = match first {
        Message::Hello {
            protocol,
            version,
            sha256,
        } => (protocol, version, sha256),
        other => bail!(
            "{label}: expected a hello from the agent, got {}",
            shown(&other)
        ),
    };
    if protocol != PROTOCOL {
        bail!(
            "{label}: the agent is virtperf {version} speaking protocol {protocol}, this is virtperf {} speaking {PROTOCOL}: use the same build on both sides",
            env!("CARGO_PKG_VERSION")
        );
    }
    let own_sha = match sha256.is_empty() {
        true => String::new(),
        false => crate::sys::fingerprint::binary_sha256().unwrap_or_default(),
    };
    if !own_sha.is_empty() && sha256 != own_sha {
        // The guest's text: cut by characters, never raw.
        let short = |s: &str| text::one_line(&s.chars().take(12).collect::<String>(), 12);
        obs.note(&format!(
            "note: {label} runs a different virtperf build (sha256 {}…) than this one ({}…)",
            short(&sha256),
            short(&own_sha)
        ));
    }
    Ok(())
}

/// Before a network run: waits until the kernel's connection-tracking
/// table has room (sys::conntrack), telling the user why the wait.
fn wait_for_conntrack_room(label: &str, obs: &dyn Observer) -> Result<()> {
    use crate::sys::conntrack;
    let time_wait = conntrack::time_wait();
    let limit = time_wait + Duration::from_secs(10);
    let waited = conntrack::wait_for_room(
        conntrack::usage,
        limit,
        Duration::from_millis(500),
        |count, max| {
            obs.note(&format!(
                "{label}: waiting for room in the kernel's connection-tracking table before a \
                 network run ({count} of {max} entries in use; closed connections leave it \
                 after {} s, at most {} s)",
                time_wait.as_secs(),
                limit.as_secs()
            ))
        },
        crate::core::signals::check,
    )?;
    if let conntrack::Waited::GaveUp(count, max) = waited {
        obs.note(&format!(
            "{label}: the connection-tracking table is still {count} of {max} entries after {} s; \
             running anyway (new connections may be dropped)",
            limit.as_secs()
        ));
    }
    Ok(())
}

/// Reads instance `i`'s messages until job `want`'s result or error, and
/// returns that. On the way it answers the job's one request for its
/// network peer: a client run here against a server inside (`Serving`), or
/// a server started here (`NeedServer`).
fn answer_until_result(
    env: &dyn Environment,
    i: usize,
    s: &mut Session,
    net: &mut net::InstanceNet,
    want: usize,
    job: &Job,
    started: &mut dyn FnMut(),
) -> Result<Message> {
    let mut served = false;
    loop {
        let msg = match s.next(env.job_deadline(job)) {
            Ok(msg) => msg,
            Err(e) => {
                let status = s.exit_status();
                return Err(match env.explain_exit_status(i, status) {
                    Some(why) => anyhow!("{e:#}: {why}"),
                    None => e,
                });
            }
        };
        match msg {
            Message::Running { index } if index == want => started(),
            Message::Serving { index, port } if index == want && !served => {
                served = true;
                started();
                let answer = serve_client(net, want, job, port, &s.label, env.spec());
                s.send_line(&serde_json::to_string(&answer)?)?;
            }
            Message::NeedServer { index } if index == want && !served => {
                served = true;
                let answer = start_server(net, want, job);
                s.send_line(&serde_json::to_string(&answer)?)?;
            }
            other => return Ok(other),
        }
    }
}

/// Job `want`'s outcome from the message that ends it: its document, or
/// the agent's error made safe to show. Anything else, and a document
/// that cannot be this job's, is a protocol error.
fn outcome_of(
    msg: Message,
    want: usize,
    job: &Job,
    label: &str,
) -> Result<std::result::Result<ResultDoc, String>> {
    match msg {
        Message::Result { index, doc } => {
            if let Some(why) = refuse_result(&doc, index, want, job, label) {
                bail!("{label}: protocol error: the agent sent {why}");
            }
            Ok(Ok(*doc))
        }
        Message::Error { index, message } if index == want => {
            Ok(Err(text::terminal_safe(&message, 4000)))
        }
        other => bail!(
            "{label}: protocol error: expected the result of job {want}, got {}",
            shown(&other)
        ),
    }
}

/// Waits for the agent's "done" after the plan's last result; the last
/// job's cleanup comes before it.
fn await_done(env: &dyn Environment, s: &mut Session, jobs: &[Job]) -> Result<()> {
    let cleanup = jobs
        .last()
        .filter(|j| j.def.needs.prepare)
        .map_or(Duration::from_secs(30), |j| env.job_deadline(j));
    match s.next(cleanup)? {
        Message::Done => Ok(()),
        other => bail!("{}: expected done, got {}", s.label, shown(&other)),
    }
}

/// A message the host did not expect, for an error: one line, bounded.
fn shown(msg: &Message) -> String {
    text::one_line(&format!("{msg:?}"), 200)
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

/// Starts job `k`'s server here, as the agent asked: where its client
/// dials and the secret, or why there is no server.
fn start_server(net: &mut net::InstanceNet, k: usize, job: &Job) -> ServerAnswer {
    match net.start_for(k, job.def.name) {
        Ok((address, secret)) => ServerAnswer::Listening {
            address: address.to_string(),
            secret,
        },
        Err(e) => ServerAnswer::Failed {
            message: format!("{e:#}"),
        },
    }
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
    if doc.workload != job.name() {
        return Some(format!(
            "a result of workload '{}' for a {} job",
            text::one_line(&doc.workload, 40),
            job.name()
        ));
    }
    if doc.env.name != env_name {
        return Some(format!(
            "a result from environment '{}', not '{env_name}'",
            text::one_line(&doc.env.name, 80)
        ));
    }
    if doc.metrics.len() > crate::core::result::MAX_METRICS {
        return Some(format!(
            "a result of {} metrics (at most {} are taken)",
            doc.metrics.len(),
            crate::core::result::MAX_METRICS
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
        if l.figures().into_iter().any(bad) {
            return Some("a latency that is not a finite, non-negative number".into());
        }
    }
    None
}

/// The host's check of each run's foreign load (`sys::monitor`): the
/// processes and cgroups that do the instance's work, and the snapshot the
/// next run's interval starts from.
struct ForeignLoad {
    roots: Vec<u32>,
    cgroups: Vec<monitor::CgroupCpu>,
    mark: monitor::HostSnapshot,
}

impl ForeignLoad {
    /// None when an instance runs elsewhere or the host cannot be read.
    /// One instance's results arrive as its runs end, so each run gets its
    /// own interval; simultaneous instances' results are read one instance
    /// after the other, so theirs get the plan's (every instance's work,
    /// siblings included, is the run's own).
    fn start(sessions: &[Session], need: NetNeed) -> Option<ForeignLoad> {
        let mut roots = Vec::new();
        let mut cgroups = Vec::new();
        for s in sessions {
            let (r, c) = host_roots(s)?;
            roots.extend(r);
            cgroups.extend(c);
        }
        // A host server or client runs in this process: its CPU is the
        // run's own work, not other processes' load.
        if need.any() {
            roots.push(std::process::id());
        }
        let mark = monitor::HostSnapshot::take(&cgroups)?;
        Some(ForeignLoad {
            roots,
            cgroups,
            mark,
        })
    }

    /// The load since the mark, which moves to now (None when the host
    /// cannot be read now: the mark is kept).
    fn take(&mut self) -> Option<monitor::HostLoad> {
        let now = monitor::HostSnapshot::take(&self.cgroups)?;
        let load = monitor::host_load(&self.mark, &now, &self.roots);
        self.mark = now;
        Some(load)
    }

    /// Puts the load since the last run's end on `doc`, the run just ended.
    fn stamp(&mut self, doc: &mut ResultDoc) {
        if let Some(load) = self.take() {
            put_load(doc, &load);
        }
    }
}

fn put_load(doc: &mut ResultDoc, load: &monitor::HostLoad) {
    doc.monitor.foreign_busy_pct = load.foreign_pct;
    doc.monitor.env_busy_pct = Some(load.env_pct);
}

/// The host's accounting of `job` in a session on this machine
/// (`sys::account::outside`); None elsewhere, for simultaneous instances
/// (their runs share the host) and with accounting off.
fn account_watch(s: &Session, job: &Job, together: bool) -> Option<account::outside::Watch> {
    let init = match &s.on_host {
        OnHost::Elsewhere => return None,
        _ if together => return None,
        OnHost::Tree => None,
        OnHost::Container(init) => init(),
    };
    let peer = job.def.needs.network.is_some();
    account::outside::Watch::new(vec![s.pid()?], init, peer)
}

/// What works for a session on this machine: the launched process's tree
/// and, for a container, its cgroup. None when it runs elsewhere.
fn host_roots(s: &Session) -> Option<(Vec<u32>, Vec<monitor::CgroupCpu>)> {
    let child = s.pid()?;
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
