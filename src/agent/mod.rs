//! The agent: what runs inside an environment. It greets the host with its
//! protocol version and binary checksum, reads a plan (workload invocations)
//! as one JSON line, optionally waits for "go" so several instances start
//! together, runs each invocation and streams one result per line.

use std::io::{BufRead, Write};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cli::{self, Request};
use crate::core::result::ResultDoc;

/// Bumped whenever the plan or message format changes.
pub const PROTOCOL: u32 = 1;

/// What the host asks an agent to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub protocol: u32,
    pub env_name: String,
    pub env_kind: String,
    /// Where file workloads put their files (unless an invocation says).
    pub workdir: String,
    /// Report "ready" and wait for a "go" line before the first run.
    pub wait_for_go: bool,
    /// Each is the argument list after `virtperf` (workload first).
    pub invocations: Vec<Vec<String>>,
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

/// Adds the work directory to file workloads that were not given one.
pub fn with_workdir(args: &[String], workdir: &str) -> Vec<String> {
    let mut args = args.to_vec();
    let option = match args.first().map(String::as_str) {
        Some("fileio") => "--file-dir",
        Some("disk") => "--disk-dir",
        Some(w) if w.starts_with("oltp_") => "--oltp-dir",
        _ => return args,
    };
    // `--disk-direct` starts with `--disk-dir`: match the option, not a prefix.
    let given = args
        .iter()
        .any(|a| a == option || a.strip_prefix(option).is_some_and(|v| v.starts_with('=')));
    if !workdir.is_empty() && !given {
        args.push(format!("{option}={workdir}"));
    }
    args
}

/// Runs one invocation: prepare, run and cleanup for file workloads.
fn run_one(plan: &Plan, args: &[String]) -> Result<ResultDoc> {
    let args = with_workdir(args, &plan.workdir);
    let Request::Workload(mut inv) = cli::parse_request(&args)? else {
        bail!("'{}' is not a workload invocation", args.join(" "));
    };
    let needs_files = inv.kind.needs().disk;
    if needs_files {
        inv.command = crate::workload::Command::Prepare;
        cli::execute(&inv, &plan.env_name, &plan.env_kind)?;
    }
    inv.command = crate::workload::Command::Run;
    let result = cli::execute(&inv, &plan.env_name, &plan.env_kind);
    if needs_files {
        inv.command = crate::workload::Command::Cleanup;
        let _ = cli::execute(&inv, &plan.env_name, &plan.env_kind);
    }
    result?
        .map(|e| e.doc)
        .ok_or_else(|| anyhow!("the run produced no result"))
}

/// The agent loop over any pair of streams (stdin/stdout, a serial port).
pub fn serve(input: &mut impl BufRead, out: &mut impl Write) -> Result<()> {
    // The host shows its own progress; prepare/cleanup lines would break it.
    crate::workload::set_quiet(true);
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
    for (index, args) in plan.invocations.iter().enumerate() {
        if crate::core::signals::interrupted() {
            return Err(crate::core::signals::Interrupted.into());
        }
        let msg = match run_one(&plan, args) {
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

/// `virtperf agent` on stdin and stdout.
pub fn main() -> Result<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout().lock();
    serve(&mut input, &mut out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(invocations: Vec<Vec<&str>>, wait: bool) -> String {
        serde_json::to_string(&Plan {
            protocol: PROTOCOL,
            env_name: "test".into(),
            env_kind: "host".into(),
            workdir: String::new(),
            wait_for_go: wait,
            invocations: invocations
                .into_iter()
                .map(|v| v.into_iter().map(String::from).collect())
                .collect(),
        })
        .unwrap()
    }

    fn messages(out: &[u8]) -> Vec<Message> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn runs_a_plan_and_reports_errors_per_invocation() {
        let input = format!(
            "{}\ngo\n",
            plan(
                vec![
                    vec!["cpu", "--events=5", "--cpu-max-prime=100"],
                    vec!["cpu", "--bogus"]
                ],
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
        let input = plan(vec![], false).replace("\"protocol\":1", "\"protocol\":99");
        let err = serve(&mut input.as_bytes(), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("protocol 99"), "{err}");
    }

    #[test]
    fn file_workloads_get_the_workdir() {
        let args = vec!["fileio".to_string(), "--file-test-mode=rndrw".to_string()];
        assert!(with_workdir(&args, "/scratch").contains(&"--file-dir=/scratch".to_string()));
        let given = vec!["disk".to_string(), "--disk-dir=/x".to_string()];
        assert_eq!(with_workdir(&given, "/scratch"), given);
        let direct = vec!["disk".to_string(), "--disk-direct=on".to_string()];
        assert!(with_workdir(&direct, "/scratch").contains(&"--disk-dir=/scratch".to_string()));
        let cpu = vec!["cpu".to_string()];
        assert_eq!(with_workdir(&cpu, "/scratch"), cpu);
    }
}
