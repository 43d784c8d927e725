//! One plan's exchange with an environment's instances, message by
//! message: the plan sent to each (its network peers placed by `peer`),
//! "ready" and "go" for simultaneous instances, then for each job the
//! agent's request for its peer (answered by `peer`) and its result or
//! error, checked against the job, and "done". Every message the agent
//! sends is untrusted: one it did not owe at that point, or a result that
//! cannot be the job's, is a protocol error. Also the agent's first
//! message, its hello.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::load::{account_watch, put_load, ForeignLoad};
use super::peer::Peers;
use super::session::Session;
use super::{Environment, NetNeed};
use crate::agent::protocol::{Message, Plan, GO, PROTOCOL};
use crate::core::accounting::Accounting;
use crate::core::observer::Observer;
use crate::core::result::ResultDoc;
use crate::core::text;
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

/// Called with (instance, invocation index, outcome) as each result arrives.
pub type OnResult<'a> = dyn FnMut(usize, usize, &std::result::Result<ResultDoc, String>) + 'a;

/// Sends `jobs` as one plan to every instance of `env` (its `sessions`,
/// ready after `ready_after` each) and reads the results, handing each to
/// `on_result` as it arrives.
pub(super) fn run_plan(
    sessions: &mut [Session],
    ready_after: &[Duration],
    env: &dyn Environment,
    jobs: &[Job],
    on_result: &mut OnResult,
) -> Result<Vec<InstanceOutcome>> {
    let need = NetNeed::of(jobs);
    let together = sessions.len() > 1;
    let mut peers = send_plans(sessions, env, jobs, together)?;
    if together {
        release_together(sessions)?;
    }
    let mut results: Vec<Vec<std::result::Result<ResultDoc, String>>> =
        vec![Vec::new(); sessions.len()];
    let mut load = ForeignLoad::start(sessions, need);
    // Instances run concurrently; read each one's stream in turn, every
    // message is buffered by its reader thread meanwhile.
    for (i, s) in sessions.iter_mut().enumerate() {
        let peers = &mut peers[i];
        for (want, job) in jobs.iter().enumerate() {
            let watch = account_watch(s, job, together);
            let mut mark = None;
            let mut started = || mark = watch.as_ref().and_then(|w| w.mark());
            let msg = answer_until_result(env, i, s, peers, want, job, &mut started)?;
            let mut outcome = outcome_of(msg, want, job, &s.label)?;
            // The job is over: its host server, if any, stops now; its
            // result records the network path.
            peers.job_over(want, job, &mut outcome);
            // What only the host knows: how long the instance took to
            // be ready, other processes' load.
            if let Ok(doc) = &mut outcome {
                // One walk of /proc serves the accounting and the
                // foreign-load check.
                let stamp = load.as_mut().filter(|_| !together);
                let now = (watch.is_some() || stamp.is_some())
                    .then(crate::sys::account::outside::table)
                    .flatten();
                if let Some(load) = stamp {
                    load.stamp(doc, now.as_ref());
                }
                let outside = match (watch, mark, now) {
                    (Some(w), Some(m), Some(now)) => Some(w.since(m, now)),
                    _ => None,
                };
                doc.accounting = Accounting::received(doc.accounting.take(), outside);
                doc.env.ready_s = Some(ready_after[i].as_secs_f64());
                doc.env.reboot = env.spec().reboot.name().map(str::to_string);
                // The guest's text: one bounded line.
                doc.env.boot = doc.env.boot.as_deref().map(|b| text::one_line(b, 120));
                let settings = env.settings(i);
                if !settings.is_empty() {
                    doc.env.settings = settings;
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
        .zip(ready_after.iter().copied())
        .zip(sessions.iter())
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
    sessions: &mut [Session],
    env: &dyn Environment,
    jobs: &[Job],
    together: bool,
) -> Result<Vec<Peers>> {
    let mut all = Vec::with_capacity(sessions.len());
    for (i, s) in sessions.iter_mut().enumerate() {
        let forwarded = s.forwarded;
        // One instance's server starts when its job asks; simultaneous
        // instances are read one after the other, so theirs start with
        // the plan, for its length.
        let (own_jobs, peers) = Peers::place(
            jobs,
            !together,
            (&s.label, env.spec().driver.name),
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
            host_servers: peers.on_demand(),
        };
        s.send_line(&serde_json::to_string(&plan)?)?;
        all.push(peers);
    }
    Ok(all)
}

/// Waits until every instance has said it is ready, then releases them
/// all at once.
fn release_together(sessions: &mut [Session]) -> Result<()> {
    for s in sessions.iter_mut() {
        match s.next(Duration::from_secs(60))? {
            Message::Ready => {}
            other => bail!("{}: expected ready, got {}", s.label, shown(&other)),
        }
    }
    // All instances are waiting: release them at once.
    for s in sessions.iter_mut() {
        s.send_line(GO)?;
    }
    Ok(())
}

/// An agent's first message must be a hello in this protocol; a build
/// other than this one (by checksum) is worth a note, not a refusal.
pub(super) fn check_hello(label: &str, first: Message, obs: &dyn Observer) -> Result<()> {
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

/// Reads instance `i`'s messages until job `want`'s result or error, and
/// returns that. On the way `peers` answers the job's one request for its
/// network peer.
fn answer_until_result(
    env: &dyn Environment,
    i: usize,
    s: &mut Session,
    peers: &mut Peers,
    want: usize,
    job: &Job,
    started: &mut dyn FnMut(),
) -> Result<Message> {
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
        // The measured run starts (or, for a server inside, the host's
        // client is about to): the host's accounting starts here.
        match msg {
            Message::Running { index } if index == want => {
                started();
                continue;
            }
            Message::Serving { index, .. } if index == want => started(),
            _ => {}
        }
        match peers.answer(&msg, want, job)? {
            Some(reply) => s.send_line(&reply)?,
            None => return Ok(msg),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::{Served, ServerAnswer};
    use crate::core::observer::{Event, Recording};
    use crate::core::result::Metric;
    use crate::env::session::scripted::{self, Agent};
    use crate::env::{Launched, Spec};

    /// An environment whose instances are scripted sessions made by the
    /// test: it is never asked to launch one.
    struct Scripted(Spec);

    impl Environment for Scripted {
        fn spec(&self) -> &Spec {
            &self.0
        }

        fn launch(&self, _index: usize) -> Result<Launched> {
            bail!("a scripted environment launches nothing")
        }

        fn job_deadline(&self, _job: &Job) -> Duration {
            Duration::from_secs(20)
        }
    }

    fn env() -> Scripted {
        Scripted(Spec::parse("host").unwrap())
    }

    fn job(args: &[&str]) -> Job {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Job::from_args(&args).unwrap()
    }

    fn line(msg: &Message) -> String {
        serde_json::to_string(msg).unwrap()
    }

    /// Job `index`'s result, from workload `workload` in environment `env`.
    fn result(index: usize, workload: &str, env: &str, value: f64) -> String {
        let metric = Metric::new("events_per_s", value, "1/s", true);
        let doc = ResultDoc::new(workload, env, vec![metric]);
        line(&Message::Result {
            index,
            doc: Box::new(doc),
        })
    }

    /// The plan the agent hears first.
    fn plan(agent: &mut Agent) -> Plan {
        serde_json::from_str(&agent.hear()).expect("a plan")
    }

    /// Runs `jobs` as one plan in one instance, "vm", whose agent runs
    /// `script`: the outcome, and the (instance, job) of each result as it
    /// arrived.
    fn run_one(
        jobs: &[Job],
        script: impl FnOnce(Agent) + Send + 'static,
    ) -> (Result<Vec<InstanceOutcome>>, Vec<(usize, usize)>) {
        let mut sessions = vec![scripted::session("vm", script)];
        let mut seen = Vec::new();
        let outcome = run_plan(
            &mut sessions,
            &[Duration::from_millis(1500)],
            &env(),
            jobs,
            &mut |i, k, _| seen.push((i, k)),
        );
        (outcome, seen)
    }

    #[test]
    fn results_and_errors_are_read_job_by_job_and_stamped_with_what_the_host_knows() {
        let jobs = [job(&["cpu"]), job(&["cpu"])];
        let (outcome, seen) = run_one(&jobs, |mut agent| {
            let plan = plan(&mut agent);
            assert_eq!((plan.env_name.as_str(), plan.jobs.len()), ("vm", 2));
            assert!(!plan.wait_for_go && plan.host_servers.is_empty());
            agent.say("a line of other text is skipped");
            agent.say(&result(0, "cpu", "vm", 100.0));
            agent.say(&line(&Message::Error {
                index: 1,
                message: "boom\u{1b}[2J".into(),
            }));
            agent.say(&line(&Message::Done));
        });
        let outcome = outcome.unwrap();
        assert_eq!(seen, [(0, 0), (0, 1)]);
        let [first, second] = &outcome[0].results[..] else {
            panic!("{outcome:?}")
        };
        let doc = first.as_ref().unwrap();
        assert_eq!(doc.metrics[0].value, 100.0);
        assert_eq!(doc.env.ready_s, Some(1.5));
        // The agent's error, made safe for a terminal.
        let message = second.as_ref().unwrap_err();
        assert!(message.starts_with("boom") && !message.contains('\u{1b}'));
    }

    #[test]
    fn a_job_s_server_on_the_host_is_started_when_the_agent_asks_and_stopped_with_its_result() {
        let (tx, rx) = std::sync::mpsc::channel();
        let jobs = [job(&["net", "--net-test=tcp_rr"])];
        let (outcome, _) = run_one(&jobs, move |mut agent| {
            assert_eq!(plan(&mut agent).host_servers, [0]);
            agent.say(&line(&Message::NeedServer { index: 0 }));
            let answer: ServerAnswer = serde_json::from_str(&agent.hear()).unwrap();
            let ServerAnswer::Listening { address, .. } = answer else {
                panic!("no server: {answer:?}")
            };
            let addr: std::net::SocketAddr = address.parse().unwrap();
            let listening = std::net::TcpStream::connect(addr).is_ok();
            tx.send((addr, listening)).unwrap();
            agent.say(&result(0, "net", "vm", 5.0));
            agent.say(&line(&Message::Done));
        });
        let doc = outcome.unwrap().remove(0).results.remove(0).unwrap();
        let (addr, listening) = rx.recv().unwrap();
        assert!(listening, "the server listens while its job runs");
        assert!(std::net::TcpStream::connect(addr).is_err());
        assert_eq!(doc.env.net_path.as_deref(), Some("loopback"));
    }

    #[test]
    fn a_job_s_server_inside_is_answered_with_the_host_client_s_result() {
        let jobs = [job(&[
            "net",
            "--net-server=env",
            "--net-test=tcp_rr",
            "--time=1",
        ])];
        let peer = jobs[0].def.needs.network.unwrap();
        let (outcome, _) = run_one(&jobs, move |mut agent| {
            // The agent's server, where and with the secret the plan says.
            let options = &plan(&mut agent).jobs[0].options;
            let bind = options["net-host"].parse().unwrap();
            let server = (peer.serve)(bind, &options["net-secret"]).unwrap();
            agent.say(&line(&Message::Serving {
                index: 0,
                port: server.addr().port(),
            }));
            let served: Served = serde_json::from_str(&agent.hear()).unwrap();
            let Served::Served { doc } = served else {
                panic!("the host's client failed: {served:?}")
            };
            agent.say(&line(&Message::Result { index: 0, doc }));
            agent.say(&line(&Message::Done));
        });
        let doc = outcome.unwrap().remove(0).results.remove(0).unwrap();
        assert_eq!(doc.workload, "net");
        assert!(doc.metrics.iter().all(|m| m.value.is_finite()));
        assert_eq!(doc.env.net_path.as_deref(), Some("loopback"));
    }

    #[test]
    fn a_message_the_agent_does_not_owe_is_a_protocol_error() {
        let cases: [(&[&str], &str); 8] = [
            (
                &[r#"{"type":"done"}"#],
                "expected the result of job 0, got Done",
            ),
            (
                &[r#"{"type":"ready"}"#],
                "expected the result of job 0, got Ready",
            ),
            (
                &[r#"{"type":"error","index":3,"message":"x"}"#],
                "expected the result of job 0",
            ),
            // A second request for the job's peer (the first was answered).
            (
                &[
                    r#"{"type":"need_server","index":0}"#,
                    r#"{"type":"need_server","index":0}"#,
                ],
                "expected the result of job 0, got NeedServer",
            ),
            (&[r#"{"type":"result","index":0}"#], "does not parse"),
            (
                &[
                    r#"{"type":"error","index":0,"message":"x"}"#,
                    r#"{"type":"ready"}"#,
                ],
                "expected done, got Ready",
            ),
            (&[], "the agent ended unexpectedly"),
            (
                &[r#"{"type":"hello","protocol":4,"version":"x","sha256":""}"#],
                "got Hello",
            ),
        ];
        for (lines, expected) in cases {
            let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let (outcome, _) = run_one(&[job(&["cpu"])], move |mut agent| {
                plan(&mut agent);
                let quiet = lines.is_empty();
                for l in lines {
                    agent.say(&l);
                }
                // Until the host hangs up (an agent that says nothing
                // ends at once).
                if !quiet {
                    agent.hear();
                }
            });
            let err = format!("{:#}", outcome.unwrap_err());
            assert!(err.starts_with("vm: "), "{err}");
            assert!(err.contains(expected), "{expected}: {err}");
        }
    }

    #[test]
    fn a_result_that_cannot_be_the_job_s_is_refused() {
        let cases = [
            (
                result(1, "cpu", "vm", 1.0),
                "a result for job 1 where job 0 was due",
            ),
            (
                result(0, "memory", "vm", 1.0),
                "a result of workload 'memory' for a cpu job",
            ),
            (
                result(0, "cpu", "other", 1.0),
                "from environment 'other', not 'vm'",
            ),
            (
                result(0, "cpu", "vm", -1.0),
                "events_per_s = -1: not a finite, non-negative number",
            ),
        ];
        for (said, expected) in cases {
            let (outcome, seen) = run_one(&[job(&["cpu"])], move |mut agent| {
                plan(&mut agent);
                agent.say(&said);
                agent.say(&line(&Message::Done));
            });
            let err = format!("{:#}", outcome.unwrap_err());
            assert!(
                err.contains("protocol error") && err.contains(expected),
                "{err}"
            );
            assert!(seen.is_empty(), "nothing refused is handed on");
        }
    }

    #[test]
    fn simultaneous_instances_are_released_together_once_all_are_ready() {
        let ready = |mut agent: Agent| {
            agent.say(&line(&Message::Ready));
            assert_eq!(agent.hear(), GO);
        };
        let mut sessions = vec![scripted::session("a", ready), scripted::session("b", ready)];
        release_together(&mut sessions).unwrap();
        // One that says anything else stops the start.
        let mut sessions = vec![
            scripted::session("a", ready),
            scripted::session("b", |mut agent| agent.say(&line(&Message::Done))),
        ];
        let err = format!("{:#}", release_together(&mut sessions).unwrap_err());
        assert!(err.contains("b: expected ready, got Done"), "{err}");
    }

    #[test]
    fn the_first_message_is_a_hello_in_this_protocol() {
        let hello = |protocol, sha256: &str| Message::Hello {
            protocol,
            version: "0.0.0".into(),
            sha256: sha256.into(),
        };
        let obs = Recording::default();
        check_hello("vm", hello(PROTOCOL, ""), &obs).unwrap();
        assert!(obs.events().is_empty());
        let err = check_hello("vm", hello(PROTOCOL + 1, ""), &obs).unwrap_err();
        assert!(
            format!("{err}").contains("use the same build on both sides"),
            "{err}"
        );
        let err = check_hello("vm", Message::Ready, &obs).unwrap_err();
        assert!(format!("{err}").contains("vm: expected a hello from the agent, got Ready"));
        // Another build is a note, cut short, not a refusal.
        if crate::sys::fingerprint::binary_sha256().is_some() {
            check_hello("vm", hello(PROTOCOL, &"ab".repeat(40)), &obs).unwrap();
            let notes = obs.events();
            let [Event::Note(note)] = &notes[..] else {
                panic!("{notes:?}")
            };
            assert!(
                note.contains("different virtperf build (sha256 abababababab…)"),
                "{note}"
            );
        }
    }
}
