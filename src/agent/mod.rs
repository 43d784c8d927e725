//! The agent: what runs inside an environment. It greets the host with its
//! protocol version and binary checksum, reads a plan (typed jobs, as
//! versioned JSON) as one line, optionally waits for "go" so several
//! instances start together, runs each job and streams one result per line.

use std::io::{BufRead, Read, Write};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::core::observer::Silent;
use crate::core::result::ResultDoc;
use crate::workload::{self, Command, Job, JobWire};

/// Bumped whenever the plan or message format changes (3: `Serving` and
/// the host's `Served` answer, so an agent and a host from either side of
/// that change refuse each other by version instead of misreading a line).
pub const PROTOCOL: u32 = 3;

/// What the host asks an agent to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub protocol: u32,
    pub env_name: String,
    pub env_kind: String,
    /// Where workloads that write put their files (unless a job says).
    pub workdir: String,
    /// Report "ready" and wait for a "go" line before the first run.
    pub wait_for_go: bool,
    pub jobs: Vec<JobWire>,
}

/// One line from the agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    Hello {
        protocol: u32,
        version: String,
        sha256: String,
    },
    Ready,
    Result {
        index: usize,
        doc: Box<ResultDoc>,
    },
    Error {
        index: usize,
        message: String,
    },
    /// A job's network peer (a server) listens inside on this port; the host
    /// runs the job's client against it and answers with a `Served` line.
    Serving {
        index: usize,
        port: u16,
    },
    Done,
}

/// The host's answer to `Serving`: the client's result, which the agent
/// returns as the job's with its own fingerprint, or why the client failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Served {
    Served { doc: Box<ResultDoc> },
    Failed { message: String },
}

fn send(out: &mut impl Write, msg: &Message) -> Result<()> {
    let line = serde_json::to_string(msg)?;
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

pub fn hello() -> Message {
    Message::Hello {
        protocol: PROTOCOL,
        version: env!("CARGO_PKG_VERSION").to_string(),
        sha256: crate::sys::fingerprint::binary_sha256().unwrap_or_default(),
    }
}

/// Runs one job's prepare (for workloads that have one) and its run, in
/// the plan's work directory unless the job names one; the job to clean up
/// afterwards, when its prepare ran.
fn run_one(plan: &Plan, wire: &JobWire) -> (Result<ResultDoc>, Option<Job>) {
    let job = match Job::from_wire(wire).and_then(|j| j.with_workdir(&plan.workdir)) {
        Ok(job) => job,
        Err(e) => return (Err(e.into()), None),
    };
    // A job that writes files starts on settled file systems (sys::settle),
    // after the previous run's writeback and after its own prepare's.
    let writes = job.def.needs.workdir.is_some();
    if writes {
        crate::sys::settle::settle();
    }
    if job.def.needs.prepare {
        if let Err(e) = execute_here(plan, &job, Command::Prepare) {
            return (Err(e), None);
        }
        if writes {
            crate::sys::settle::settle();
        }
    }
    let result = execute_here(plan, &job, Command::Run).and_then(|done| {
        done.map(|e| e.doc)
            .ok_or_else(|| anyhow!("the run produced no result"))
    });
    let prepared = job.def.needs.prepare.then_some(job);
    (result, prepared)
}

/// One command of a job, quietly: the host shows its own progress
/// (prepare and cleanup chatter would break its line), and stdout carries
/// the protocol.
fn execute_here(plan: &Plan, job: &Job, command: Command) -> Result<Option<workload::Executed>> {
    workload::execute(
        &job.with_command(command),
        &plan.env_name,
        &plan.env_kind,
        Arc::new(Silent),
    )
}

/// Serves a job's network peer here: starts its server on the address the
/// host put in the job, says where it listens, waits for the host's client
/// to finish and returns the client's result fingerprinted as this
/// environment, with this environment's CPU figures.
fn serve_peer(
    plan: &Plan,
    index: usize,
    job: &Job,
    host: &mut dyn HostLines,
    out: &mut impl Write,
) -> Result<ResultDoc> {
    let peer = job.def.needs.network.expect("a network job");
    let text = job.values.text(peer.address_option);
    let bind: std::net::SocketAddr = text.parse().with_context(|| {
        format!(
            "--{}={text}: the host gives the address to serve on as IP:PORT",
            peer.address_option
        )
    })?;
    let server = (peer.serve)(bind, job.values.text(peer.secret_option))?;
    let sampler = crate::sys::monitor::Sampler::start();
    send(
        out,
        &Message::Serving {
            index,
            port: server.addr().port(),
        },
    )?;
    let Some(line) = host.next_line()? else {
        bail!("the host went away while this environment served its client");
    };
    drop(server);
    let monitor = sampler.finish();
    match serde_json::from_str::<Served>(line.trim())
        .with_context(|| format!("the host's answer to serving is not valid: {}", line.trim()))?
    {
        Served::Served { doc } => {
            let mut doc = *doc;
            let path = doc.env.net_path.take();
            doc.env = crate::sys::fingerprint::take(&plan.env_name, &plan.env_kind);
            doc.env.net_path = path;
            doc.monitor = monitor;
            Ok(doc)
        }
        Served::Failed { message } => Err(anyhow!("{message}")),
    }
}

/// The agent loop over any pair of streams (stdin/stdout, a serial port).
pub fn serve(input: &mut impl BufRead, out: &mut impl Write) -> Result<()> {
    let plan = receive_plan(input, out)?;
    run_plan(&plan, &mut FromReader(input), out)
}

/// The longest line the agent reads from the host after the plan (a
/// network client's result).
const HOST_LINE_LIMIT: u64 = 4 << 20;

/// Where the agent reads the host's lines once the plan is in (the answer
/// to a served network test).
trait HostLines {
    /// The next line without its end, or None when the host has gone.
    fn next_line(&mut self) -> Result<Option<String>>;
}

struct FromReader<'a, R>(&'a mut R);

impl<R: BufRead> HostLines for FromReader<'_, R> {
    fn next_line(&mut self) -> Result<Option<String>> {
        let mut line = String::new();
        let n = (&mut *self.0).take(HOST_LINE_LIMIT).read_line(&mut line)?;
        if n == 0 {
            return Ok(None);
        }
        Ok(Some(line.trim_end().to_string()))
    }
}

/// Lines forwarded by the thread that watches the host's stream.
struct FromChannel(std::sync::mpsc::Receiver<String>);

impl HostLines for FromChannel {
    fn next_line(&mut self) -> Result<Option<String>> {
        Ok(self.0.recv().ok())
    }
}

/// Greets the host and reads its plan (and its "go", when asked to wait).
fn receive_plan(input: &mut impl BufRead, out: &mut impl Write) -> Result<Plan> {
    send(out, &hello())?;
    let mut line = String::new();
    input.read_line(&mut line).context("reading the plan")?;
    let plan: Plan = serde_json::from_str(line.trim()).with_context(|| {
        format!(
            "the plan is not valid JSON for protocol {PROTOCOL}: {}",
            line.trim()
        )
    })?;
    if plan.protocol != PROTOCOL {
        bail!(
            "the host speaks protocol {} but this agent (virtperf {}) speaks {PROTOCOL}: run the same virtperf build on both sides",
            plan.protocol,
            env!("CARGO_PKG_VERSION")
        );
    }
    if plan.wait_for_go {
        send(out, &Message::Ready)?;
        loop {
            line.clear();
            if input.read_line(&mut line)? == 0 {
                bail!("the host went away before 'go'");
            }
            if line.trim() == "go" {
                break;
            }
        }
    }
    Ok(plan)
}

/// Runs every job of the plan, one message each, then says done.
fn run_plan(plan: &Plan, host: &mut dyn HostLines, out: &mut impl Write) -> Result<()> {
    for (index, job) in plan.jobs.iter().enumerate() {
        crate::core::signals::check()?;
        let served = Job::from_wire(job).ok().filter(|j| {
            j.def
                .needs
                .network
                .is_some_and(|peer| peer.server_inside(&j.values))
        });
        let (outcome, prepared) = match served {
            Some(j) => (serve_peer(plan, index, &j, host, out), None),
            None => run_one(plan, job),
        };
        // The cleanup runs after the result is sent: a stop while it
        // deletes test files loses no finished measurement. It runs after a
        // stop too.
        let cleanup = || {
            if let Some(job) = &prepared {
                let _ = execute_here(plan, job, Command::Cleanup);
            }
        };
        // A job cut short by a stop is no result.
        if crate::core::signals::interrupted() {
            cleanup();
            return Err(crate::core::signals::Interrupted.into());
        }
        let msg = match outcome {
            Ok(doc) => Message::Result {
                index,
                doc: Box::new(doc),
            },
            Err(e) => Message::Error {
                index,
                message: format!("{e:#}"),
            },
        };
        let sent = send(out, &msg);
        cleanup();
        sent?;
    }
    send(out, &Message::Done)
}

/// `virtperf agent` on stdin and stdout. Once the plan is in, the host
/// sends nothing until it has read "done": the end of stdin before that
/// means the host is gone (killed, its connection dropped), and the agent
/// stops its work, cleans up and exits rather than run on for nobody (in a
/// container started with `--rm`, that removes the container).
pub fn main() -> Result<()> {
    let mut input = std::io::BufReader::new(std::io::stdin());
    let mut out = std::io::stdout().lock();
    let plan = receive_plan(&mut input, &mut out)?;
    let (lines, from_host) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("host-watch".into())
        .spawn(move || {
            // Lines go to the job that waits for one (a served network
            // test's answer); the end of the stream stops the agent.
            let mut reader = FromReader(&mut input);
            while let Ok(Some(line)) = reader.next_line() {
                let _ = lines.send(line);
            }
            crate::core::signals::stop();
        })
        .context("starting the thread that watches the host")?;
    run_plan(&plan, &mut FromChannel(from_host), &mut out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(jobs: Vec<JobWire>, wait: bool) -> String {
        serde_json::to_string(&Plan {
            protocol: PROTOCOL,
            env_name: "test".into(),
            env_kind: "host".into(),
            workdir: String::new(),
            wait_for_go: wait,
            jobs,
        })
        .unwrap()
    }

    fn job(args: &[&str]) -> JobWire {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Job::from_args(&args).unwrap().to_wire()
    }

    fn messages(out: &[u8]) -> Vec<Message> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn runs_a_plan_and_reports_errors_per_job() {
        let mut bogus = job(&["cpu"]);
        bogus.options.insert("bogus".into(), "1".into());
        let input = format!(
            "{}\ngo\n",
            plan(
                vec![job(&["cpu", "--events=5", "--cpu-max-prime=100"]), bogus],
                true
            )
        );
        let mut out = Vec::new();
        serve(&mut input.as_bytes(), &mut out).unwrap();
        let msgs = messages(&out);
        assert!(matches!(
            msgs[0],
            Message::Hello {
                protocol: PROTOCOL,
                ..
            }
        ));
        assert!(matches!(msgs[1], Message::Ready));
        match &msgs[2] {
            Message::Result { index: 0, doc } => {
                assert_eq!(doc.events, 5);
                assert_eq!(doc.env.name, "test");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&msgs[3], Message::Error { index: 1, message } if message.contains("--bogus"))
        );
        assert!(matches!(msgs[4], Message::Done));
    }

    #[test]
    fn a_server_inside_serves_until_the_host_answers() {
        let wire = job(&[
            "net",
            "--net-server=env",
            "--net-host=127.0.0.1:0",
            "--net-test=tcp_rr",
        ]);
        // The host's client result, as it would send it back.
        let mut client_doc = ResultDoc {
            schema: crate::core::result::SCHEMA.into(),
            workload: "net".into(),
            params: Default::default(),
            env: crate::sys::fingerprint::take("the host", "host"),
            started_at: String::new(),
            duration_s: 1.0,
            events: 7,
            metrics: vec![],
            latency_ms: None,
            fairness: None,
            monitor: Default::default(),
            details: serde_json::Value::Null,
        };
        client_doc.env.net_path = Some("some path".into());
        let served = serde_json::to_string(&Served::Served {
            doc: Box::new(client_doc),
        })
        .unwrap();
        let input = format!("{}\n{served}\n", plan(vec![wire.clone()], false));
        let mut out = Vec::new();
        serve(&mut input.as_bytes(), &mut out).unwrap();
        let msgs = messages(&out);
        let Message::Serving { index: 0, port } = msgs[1] else {
            panic!("{:?}", msgs[1]);
        };
        assert_ne!(port, 0);
        match &msgs[2] {
            Message::Result { index: 0, doc } => {
                assert_eq!(doc.events, 7);
                // Fingerprinted here, the path kept.
                assert_eq!(doc.env.name, "test");
                assert_eq!(doc.env.net_path.as_deref(), Some("some path"));
            }
            other => panic!("{other:?}"),
        }
        // The host's client failed: the job's error says why.
        let failed = serde_json::to_string(&Served::Failed {
            message: "the client on the host: refused".into(),
        })
        .unwrap();
        let input = format!("{}\n{failed}\n", plan(vec![wire], false));
        let mut out = Vec::new();
        serve(&mut input.as_bytes(), &mut out).unwrap();
        let msgs = messages(&out);
        assert!(
            matches!(&msgs[2], Message::Error { index: 0, message } if message.contains("refused")),
            "{msgs:?}"
        );
    }

    #[test]
    fn refuses_another_protocol() {
        let input =
            plan(vec![], false).replace(&format!("\"protocol\":{PROTOCOL}"), "\"protocol\":99");
        let err = serve(&mut input.as_bytes(), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("protocol 99"), "{err}");
    }
}
