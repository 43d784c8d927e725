//! The agent: what runs inside an environment. It greets the host with its
//! protocol version and binary checksum, then reads plans (typed jobs, as
//! versioned JSON), one line each, until the host says "bye": for each it
//! optionally waits for "go" so several instances start together, runs each
//! job and streams one result per line, then says "done". The environment
//! is started once and kept for all of a comparison's turns in it.
//!
//! A job whose network server runs on the host asks for it when the job
//! starts (`NeedServer`), and the host answers with where it listens and the
//! secret it requires (`ServerAnswer`); the host stops that server when the
//! job's result arrives, so nothing of ours listens outside a network job.
//! The lines themselves are defined once, for both ends, in `protocol`.

pub mod protocol;

use std::io::{BufRead, Read, Write};

use anyhow::{anyhow, bail, Context, Result};

use std::sync::Arc;

use crate::core::observer::Silent;
use crate::core::result::ResultDoc;
use crate::workload::{self, Command, Job, JobWire};
pub use protocol::{Message, Plan, Served, ServerAnswer, BYE, GO, PROTOCOL};

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
fn run_one(
    plan: &Plan,
    wire: &JobWire,
    running: &mut dyn FnMut(),
) -> (Result<ResultDoc>, Option<Job>) {
    let job = match Job::from_wire(wire).and_then(|j| j.with_workdir(&plan.workdir)) {
        Ok(job) => job,
        Err(e) => return (Err(e.into()), None),
    };
    // A script runs its own prepare and cleanup around its run.
    if let Some(script) = &job.script {
        let doc = script.execute(&job.values, &plan.workdir, &plan.env_name, &plan.env_kind);
        return (doc, None);
    }
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
    running();
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
    // Accounting starts first, so the server's threads are counted.
    let accounting = crate::sys::account::inside::Sampler::start();
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
    let inside = accounting.map(crate::sys::account::inside::Sampler::finish);
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
            // The client's own accounting is the host's run; this
            // environment's is its server's.
            doc.accounting = inside.map(|inside| crate::core::accounting::Accounting {
                version: crate::core::accounting::VERSION,
                inside: Some(inside),
                ..Default::default()
            });
            Ok(doc)
        }
        Served::Failed { message } => Err(anyhow!("{message}")),
    }
}

/// The agent's side of a session over any pair of streams (stdin/stdout,
/// a serial port).
pub fn serve(input: &mut impl BufRead, out: &mut impl Write) -> Result<()> {
    converse(&mut FromReader(input), out)
}

/// The longest line the agent reads from the host (a plan, a network
/// client's result).
const HOST_LINE_LIMIT: u64 = 4 << 20;

/// Where the agent reads the host's lines: plans, "go", the answers to
/// `Serving` and `NeedServer`, "bye".
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

/// The whole conversation: hello, then plans (each with its "go", when
/// asked to wait) until "bye" or the end of the host's stream.
fn converse(host: &mut dyn HostLines, out: &mut impl Write) -> Result<()> {
    send(out, &hello())?;
    while let Some(line) = host.next_line()? {
        if line.trim() == BYE {
            break;
        }
        let plan = parse_plan(&line)?;
        if plan.wait_for_go {
            send(out, &Message::Ready)?;
            loop {
                match host.next_line()? {
                    None => bail!("the host went away before 'go'"),
                    Some(l) if l.trim() == GO => break,
                    Some(_) => {}
                }
            }
        }
        run_plan(&plan, host, out)?;
    }
    Ok(())
}

fn parse_plan(line: &str) -> Result<Plan> {
    let plan: Plan = serde_json::from_str(line.trim()).with_context(|| {
        format!(
            "the plan is not valid JSON for protocol {PROTOCOL}: {}",
            crate::core::text::one_line(line.trim(), 200)
        )
    })?;
    if plan.protocol != PROTOCOL {
        bail!(
            "the host speaks protocol {} but this agent (virtperf {}) speaks {PROTOCOL}: run the same virtperf build on both sides",
            plan.protocol,
            env!("CARGO_PKG_VERSION")
        );
    }
    Ok(plan)
}

/// Asks the host for job `index`'s server (started now, for this job only)
/// and points the job's client at it.
fn host_server(
    index: usize,
    wire: &JobWire,
    host: &mut dyn HostLines,
    out: &mut impl Write,
) -> Result<JobWire> {
    let job = Job::from_wire(wire)?;
    let peer = job
        .def
        .needs
        .network
        .ok_or_else(|| anyhow!("the host serves job {index}, which has no network peer"))?;
    send(out, &Message::NeedServer { index })?;
    let Some(line) = host.next_line()? else {
        bail!("the host went away before starting the job's server");
    };
    let answer: ServerAnswer = serde_json::from_str(line.trim()).with_context(|| {
        format!(
            "the host's answer to a server request is not valid: {}",
            crate::core::text::one_line(line.trim(), 200)
        )
    })?;
    match answer {
        ServerAnswer::Listening { address, secret } => Ok(job
            .with_option(peer.address_option, &address)?
            .with_option(peer.secret_option, &secret)?
            .to_wire()),
        ServerAnswer::Failed { message } => Err(anyhow!("{message}")),
    }
}

/// Runs every job of the plan, one message each, then says done.
fn run_plan(plan: &Plan, host: &mut dyn HostLines, out: &mut impl Write) -> Result<()> {
    for (index, job) in plan.jobs.iter().enumerate() {
        crate::core::signals::check()?;
        let parsed = Job::from_wire(job).ok();
        let writes = parsed
            .as_ref()
            .is_some_and(|j| j.def.needs.workdir.is_some());
        let served = parsed.filter(|j| {
            j.def
                .needs
                .network
                .is_some_and(|peer| peer.server_inside(&j.values))
        });
        let (outcome, prepared) = match served {
            Some(j) => (serve_peer(plan, index, &j, host, out), None),
            None => {
                let job = match plan.host_servers.contains(&index) {
                    true => host_server(index, job, host, out),
                    false => Ok(job.clone()),
                };
                match job {
                    Ok(job) => {
                        // A lost line ends the session at the result's send.
                        let mut running = || {
                            let _ = send(out, &Message::Running { index });
                        };
                        run_one(plan, &job, &mut running)
                    }
                    Err(e) => (Err(e), None),
                }
            }
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
        // What the job and its cleanup left dirty is written back before
        // this plan is done: the next run, in this environment or (rounds
        // run an entry in every environment back to back) another one,
        // starts without its writeback.
        if writes {
            crate::sys::settle::settle();
        }
        sent?;
    }
    send(out, &Message::Done)
}

/// `virtperf agent` on stdin and stdout. The host sends a line only when
/// the agent waits for one (a plan, "go", an answer), so the end of stdin
/// while a plan runs means the host is gone (killed, its connection
/// dropped): the agent stops its work, cleans up and exits rather than run
/// on for nobody (in a container started with `--rm`, that removes the
/// container). Between plans it simply ends the session.
pub fn main() -> Result<()> {
    let mut input = std::io::BufReader::new(std::io::stdin());
    let mut out = std::io::stdout().lock();
    let (lines, from_host) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("host-watch".into())
        .spawn(move || {
            let mut reader = FromReader(&mut input);
            while let Ok(Some(line)) = reader.next_line() {
                if lines.send(line).is_err() {
                    return;
                }
            }
            crate::core::signals::stop();
        })
        .context("starting the thread that watches the host")?;
    converse(&mut FromChannel(from_host), &mut out)
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
            host_servers: vec![],
        })
        .unwrap()
    }

    fn job(args: &[&str]) -> JobWire {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Job::from_args(&args).unwrap().to_wire()
    }

    /// Every message but `running` (see `says_running_as_the_measured_run_starts`).
    fn messages(out: &[u8]) -> Vec<Message> {
        all_messages(out)
            .into_iter()
            .filter(|m| !matches!(m, Message::Running { .. }))
            .collect()
    }

    fn all_messages(out: &[u8]) -> Vec<Message> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn says_running_as_the_measured_run_starts_and_accounts_for_it() {
        let fileio = job(&[
            "fileio",
            "--file-total-size=2M",
            "--file-num=2",
            "--file-test-mode=seqwr",
            "--events=20",
        ]);
        let work = tempfile::tempdir().unwrap();
        let mut p = serde_json::from_str::<Plan>(&plan(vec![fileio], false)).unwrap();
        p.workdir = work.path().display().to_string();
        let input = serde_json::to_string(&p).unwrap();
        let mut out = Vec::new();
        serve(&mut input.as_bytes(), &mut out).unwrap();
        let msgs = all_messages(&out);
        assert!(matches!(msgs[1], Message::Running { index: 0 }), "{msgs:?}");
        let Message::Result { doc, .. } = &msgs[2] else {
            panic!("{msgs:?}");
        };
        let inside = doc.accounting.as_ref().and_then(|a| a.inside.as_ref());
        let inside = inside.expect("the run's inside accounting");
        // The run wrote through system calls; its prepare's 2 MiB, before
        // `running`, are not in them.
        let written = inside.syscall_write_bytes.unwrap();
        assert!(written > 0 && written < 2 << 20, "{inside:?}");
        assert!(inside.cpu_user_s.is_some() && inside.ctx_voluntary.is_some());
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
            env: crate::sys::fingerprint::take("the host", "host"),
            events: 7,
            ..ResultDoc::new("net", "the host", vec![])
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
    fn one_session_runs_plan_after_plan_until_bye() {
        let cpu = job(&["cpu", "--events=3", "--cpu-max-prime=100"]);
        let input = format!(
            "{}\n{}\n{BYE}\n{}\n",
            plan(vec![cpu.clone()], false),
            plan(vec![cpu.clone(), cpu.clone()], false),
            // After "bye" nothing more is read.
            plan(vec![cpu], false)
        );
        let mut out = Vec::new();
        serve(&mut input.as_bytes(), &mut out).unwrap();
        let kinds: Vec<String> = messages(&out)
            .iter()
            .map(|m| match m {
                Message::Hello { .. } => "hello".into(),
                Message::Result { index, .. } => format!("result {index}"),
                Message::Done => "done".into(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            ["hello", "result 0", "done", "result 0", "result 1", "done"]
        );
    }

    #[test]
    fn a_job_served_by_the_host_asks_for_its_server_when_it_starts() {
        use std::net::TcpListener;
        // A host server that never answers: the client must have dialled
        // the address the host gave, with the secret it gave, or fail.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        drop(listener);
        let net = job(&["net", "--net-test=tcp_rr", "--time=1"]);
        let cpu = job(&["cpu", "--events=3", "--cpu-max-prime=100"]);
        let mut with_host = serde_json::from_str::<Plan>(&plan(vec![cpu, net], false)).unwrap();
        with_host.host_servers = vec![1];
        let answer = serde_json::to_string(&ServerAnswer::Listening {
            address: address.clone(),
            secret: "00".repeat(32),
        })
        .unwrap();
        let input = format!("{}\n{answer}\n", serde_json::to_string(&with_host).unwrap());
        let mut out = Vec::new();
        serve(&mut input.as_bytes(), &mut out).unwrap();
        let msgs = messages(&out);
        // The cpu job ran before the server was asked for.
        assert!(
            matches!(msgs[1], Message::Result { index: 0, .. }),
            "{msgs:?}"
        );
        assert!(
            matches!(msgs[2], Message::NeedServer { index: 1 }),
            "{msgs:?}"
        );
        // Nothing listens there: the client's error names the address it
        // was given (it did not start a server of its own).
        match &msgs[3] {
            Message::Error { index: 1, message } => {
                assert!(message.contains(&address), "{message}")
            }
            other => panic!("{other:?}"),
        }
        // The host could not start one: the job fails with its reason.
        let failed = serde_json::to_string(&ServerAnswer::Failed {
            message: "no free port on the bridge".into(),
        })
        .unwrap();
        let input = format!("{}\n{failed}\n", serde_json::to_string(&with_host).unwrap());
        let mut out = Vec::new();
        serve(&mut input.as_bytes(), &mut out).unwrap();
        assert!(
            matches!(&messages(&out)[3], Message::Error { index: 1, message } if message.contains("no free port")),
            "{:?}",
            messages(&out)
        );
    }

    #[test]
    fn a_script_runs_from_its_text_with_its_prepare_and_cleanup_around() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tiny.lua");
        std::fs::write(
            &path,
            "function prepare()\n  local c = sysbench.sql.driver():connect()\n  c:query('CREATE TABLE t (id INTEGER)')\n  c:query('INSERT INTO t VALUES (7)')\nend\n\
             function cleanup()\n  sysbench.sql.driver():connect():query('DROP TABLE t')\nend\n\
             function thread_init() con = sysbench.sql.driver():connect() end\n\
             function event() assert(tonumber(con:query_row('SELECT id FROM t')) == 7) end\n",
        )
        .unwrap();
        let args = vec![path.display().to_string(), "--events=4".to_string()];
        let wire = Job::from_args(&args).unwrap().to_wire();
        // Only the text goes: the file is gone.
        drop(dir);
        let work = tempfile::tempdir().unwrap();
        let mut with_dir = serde_json::from_str::<Plan>(&plan(vec![wire], false)).unwrap();
        with_dir.workdir = work.path().display().to_string();
        let input = serde_json::to_string(&with_dir).unwrap();
        let mut out = Vec::new();
        serve(&mut input.as_bytes(), &mut out).unwrap();
        let msgs = messages(&out);
        match &msgs[1] {
            Message::Result { index: 0, doc } => {
                assert_eq!(doc.workload, "tiny.lua");
                assert_eq!(doc.events, 4);
                assert_eq!(doc.env.name, "test");
                assert!(doc.metrics.iter().any(|m| m.name == "tps"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(msgs[2], Message::Done));
        // The database went with the cleanup's last table.
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
    }

    #[test]
    fn refuses_another_protocol() {
        let input =
            plan(vec![], false).replace(&format!("\"protocol\":{PROTOCOL}"), "\"protocol\":99");
        let err = serve(&mut input.as_bytes(), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("protocol 99"), "{err}");
    }
}
