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

/// Bumped whenever the plan or message format changes.
pub const PROTOCOL: u32 = 2;

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
    Done,
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

/// Runs one job: with prepare and cleanup around it for workloads that have
/// them, in the plan's work directory unless the job names one.
fn run_one(plan: &Plan, wire: &JobWire) -> Result<ResultDoc> {
    let job = Job::from_wire(wire)?.with_workdir(&plan.workdir)?;
    // The host shows its own progress: prepare and cleanup chatter would
    // break its line, and stdout carries the protocol.
    let quiet = Arc::new(Silent);
    let execute = |command| {
        workload::execute(
            &job.with_command(command),
            &plan.env_name,
            &plan.env_kind,
            quiet.clone(),
        )
    };
    let prepared = job.def.needs.prepare;
    if prepared {
        execute(Command::Prepare)?;
    }
    let result = execute(Command::Run);
    if prepared {
        let _ = execute(Command::Cleanup);
    }
    result?
        .map(|e| e.doc)
        .ok_or_else(|| anyhow!("the run produced no result"))
}

/// The agent loop over any pair of streams (stdin/stdout, a serial port).
pub fn serve(input: &mut impl BufRead, out: &mut impl Write) -> Result<()> {
    let plan = receive_plan(input, out)?;
    run_plan(&plan, out)
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
fn run_plan(plan: &Plan, out: &mut impl Write) -> Result<()> {
    for (index, job) in plan.jobs.iter().enumerate() {
        if crate::core::signals::interrupted() {
            return Err(crate::core::signals::Interrupted.into());
        }
        let outcome = run_one(plan, job);
        // A job cut short by a stop is no result.
        if crate::core::signals::interrupted() {
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
        send(out, &msg)?;
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
    std::thread::Builder::new()
        .name("host-watch".into())
        .spawn(move || {
            let mut sink = [0u8; 512];
            loop {
                match input.read(&mut sink) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            crate::core::signals::stop();
        })
        .context("starting the thread that watches the host")?;
    run_plan(&plan, &mut out)
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
    fn refuses_another_protocol() {
        let input =
            plan(vec![], false).replace(&format!("\"protocol\":{PROTOCOL}"), "\"protocol\":99");
        let err = serve(&mut input.as_bytes(), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("protocol 99"), "{err}");
    }
}
