//! The hostile-agent driver: the host's side of the agent protocol against
//! scripted fake agents over stdio (a shell in its own process group) that
//! send invalid UTF-8, a 100 MiB line, invalid JSON, results for the wrong
//! run, NaN and negative values, more metrics than a run may have, nothing
//! at all, or ignore SIGTERM. Every case ends with a clear error within its
//! deadline, the host's memory stays bounded, and no process of the fake
//! agent is left. A store of what such a guest could say (escape sequences
//! in every string) is reported in every format without one reaching the
//! terminal.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Result;
use virtperf::core::observer::Silent;
use virtperf::core::result::{Metric, ResultDoc};
use virtperf::env::{self, Environment, Launched, Spec};
use virtperf::workload::Job;

/// Cases run one at a time: each measures this process's peak memory.
static SERIAL: Mutex<()> = Mutex::new(());

const DEADLINE: Duration = Duration::from_secs(3);

/// A fake agent: `sh -c SCRIPT` with `$REPLY_FILE` holding prepared bytes.
struct Fake {
    spec: Spec,
    script: String,
    reply: tempfile::NamedTempFile,
    pgid: Mutex<Option<i32>>,
}

impl Fake {
    fn new(script: &str, reply: &[u8]) -> Fake {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, reply).unwrap();
        Fake {
            spec: Spec::parse("host:name=fake").unwrap(),
            script: script.into(),
            reply: f,
            pgid: Mutex::new(None),
        }
    }
}

impl Environment for Fake {
    fn spec(&self) -> &Spec {
        &self.spec
    }
    fn launch(&self, _index: usize) -> Result<Launched> {
        let child = Command::new("sh")
            .arg("-c")
            .arg(&self.script)
            .env("REPLY_FILE", self.reply.path())
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        *self.pgid.lock().unwrap() = Some(child.id() as i32);
        Ok(Launched {
            child,
            cleanup: None,
            console: None,
            workdir: String::new(),
            forwarded: None,
            on_host: virtperf::env::OnHost::Tree,
        })
    }
    fn boot_deadline(&self) -> Duration {
        DEADLINE
    }
    fn job_deadline(&self, _job: &Job) -> Duration {
        DEADLINE
    }
}

/// Processes of process group `pgid` that are still alive (not zombies).
fn alive_in_group(pgid: i32) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            out.push(stat);
        }
    }
    out
}

/// The peak resident memory of this process, in KiB, since the last reset.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

const HELLO: &str = r#"{"type":"hello","protocol":5,"version":"0","sha256":""}"#;

/// Runs one cpu job against the fake; returns the error text.
fn hostile(script: &str, reply: &[u8]) -> String {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut fake = Fake::new(script, reply);
    let job = Job::from_args(&["cpu".into(), "--events=1".into()]).unwrap();
    let can_measure = reset_peak();
    let before = peak_kib();
    let started = Instant::now();
    let result = env::run(&mut fake, &[job], &Silent);
    let took = started.elapsed();
    let grown = peak_kib().saturating_sub(before);
    let err = format!(
        "{:#}",
        result.expect_err("a hostile agent must fail the run")
    );
    eprintln!("took {took:?}, grew {grown} KiB: {err}");
    // Two deadlines (hello, job) at most, plus the grace before a kill.
    assert!(
        took < 2 * DEADLINE + Duration::from_secs(6),
        "took {took:?}: {err}"
    );
    if can_measure {
        assert!(grown < 48 << 10, "the host grew by {grown} KiB: {err}");
    }
    let pgid = fake.pgid.lock().unwrap().expect("launched");
    let left = alive_in_group(pgid);
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(
        err.starts_with("fake:"),
        "the error names the environment: {err}"
    );
    err
}

/// Says hello, reads the plan, then sends the reply file and waits.
const SCRIPTED: &str = r#"echo '{"type":"hello","protocol":5,"version":"0","sha256":""}'; read plan; cat "$REPLY_FILE"; exec sleep 60"#;

fn result_line(index: usize, edit: impl FnOnce(&mut ResultDoc)) -> Vec<u8> {
    let mut doc = ResultDoc::new(
        "cpu",
        "fake",
        vec![Metric::new("events_per_sec", 10.0, "events/s", true)],
    );
    edit(&mut doc);
    let line = serde_json::json!({"type": "result", "index": index, "doc": doc});
    format!("{line}\n").into_bytes()
}

#[test]
fn a_well_behaved_fake_passes_so_the_driver_tests_something() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut reply = result_line(0, |_| {});
    reply.extend_from_slice(b"{\"type\":\"done\"}\n");
    let mut fake = Fake::new(
        &SCRIPTED.replace("exec sleep 60", "exec cat >/dev/null"),
        &reply,
    );
    let job = Job::from_args(&["cpu".into(), "--events=1".into()]).unwrap();
    let out = env::run(&mut fake, &[job], &Silent).unwrap();
    assert_eq!(
        out[0].results[0].as_ref().unwrap().metric("events_per_sec"),
        Some(10.0)
    );
}

#[test]
fn invalid_utf8_is_a_protocol_error_not_a_hang() {
    let err = hostile(
        &format!("echo '{HELLO}'; read plan; printf 'abc\\377\\376\\n'; exec sleep 60"),
        b"",
    );
    assert!(err.contains("not UTF-8"), "{err}");
}

#[test]
fn invalid_utf8_before_the_hello_while_holding_stdin() {
    // The original hang: the host took the error for end of stream and
    // waited on a child that waits on the host.
    let err = hostile("printf '\\377\\n'; exec cat", b"");
    assert!(err.contains("not UTF-8"), "{err}");
}

#[test]
fn a_100_mib_line_is_refused_with_memory_bounded() {
    let err = hostile(
        &format!(
            "echo '{HELLO}'; read plan; head -c 104857600 /dev/zero | tr '\\0' a; exec sleep 60"
        ),
        b"",
    );
    assert!(err.contains("longer than"), "{err}");
}

#[test]
fn invalid_json_in_a_message_is_named() {
    let err = hostile(
        SCRIPTED,
        b"{\"type\":\"result\",\"index\":0,\"doc\":{oops\n",
    );
    assert!(err.contains("does not parse"), "{err}");
}

#[test]
fn results_for_the_wrong_run_are_refused() {
    let err = hostile(SCRIPTED, &result_line(3, |_| {}));
    assert!(err.contains("job 3 where job 0"), "{err}");
    let err = hostile(SCRIPTED, &result_line(0, |d| d.workload = "memory".into()));
    assert!(err.contains("workload 'memory'"), "{err}");
    let err = hostile(SCRIPTED, &result_line(0, |d| d.env.name = "other".into()));
    assert!(err.contains("environment 'other'"), "{err}");
    let err = hostile(
        SCRIPTED,
        b"{\"type\":\"error\",\"index\":7,\"message\":\"x\"}\n",
    );
    assert!(err.contains("expected the result of job 0"), "{err}");
}

#[test]
fn nan_and_negative_values_are_refused() {
    let err = hostile(SCRIPTED, &result_line(0, |d| d.metrics[0].value = -5.0));
    assert!(err.contains("events_per_sec = -5"), "{err}");
    // JSON has no NaN: an agent writing one sends a line that does not parse.
    let nan = String::from_utf8(result_line(0, |_| {}))
        .unwrap()
        .replace("10.0", "NaN");
    let err = hostile(SCRIPTED, nan.as_bytes());
    assert!(err.contains("does not parse"), "{err}");
    let huge = String::from_utf8(result_line(0, |_| {}))
        .unwrap()
        .replace("10.0", "1e999");
    let err = hostile(SCRIPTED, huge.as_bytes());
    assert!(
        err.contains("does not parse") || err.contains("finite"),
        "{err}"
    );
}

#[test]
fn a_result_with_more_metrics_than_a_run_may_have_is_refused() {
    // Issue 53, item 7: a guest's extra metric names made every report
    // slow (48k names, 27.8 s a round).
    let n = virtperf::core::result::MAX_METRICS + 1;
    let line = result_line(0, |d| {
        d.metrics = (0..n)
            .map(|i| Metric::new(&format!("m{i}"), 1.0, "x", true))
            .collect()
    });
    let err = hostile(SCRIPTED, &line);
    assert!(
        err.contains(&format!("a result of {n} metrics (at most")),
        "{err}"
    );
}

#[test]
fn a_stores_strings_reach_no_terminal_raw_in_any_format() {
    // Issue 53, item 6: a guest's metric names, units, version and
    // hypervisor reached the terminal raw in CSV (and, imported, in
    // import's lines).
    let evil = "\x1b]0;owned\x07\x1b[2J\r\u{9b}31m\u{85}\u{202e}";
    let dir = tempfile::tempdir().unwrap();
    let vm = format!("vm{evil}");
    {
        let store = virtperf::store::Store::open(dir.path()).unwrap();
        let envs = ["host".to_string(), vm.clone()];
        let id = store.begin("t", "quick", "host", &envs, &[]).unwrap();
        for round in 0..3 {
            for (env, v) in [("host", 100.0), (vm.as_str(), 60.0 + round as f64)] {
                let mut doc = ResultDoc::new(
                    "cpu",
                    env,
                    vec![
                        Metric::new("events_per_sec", v, &format!("events/s{evil}"), true),
                        Metric::new(&format!("own{evil}"), v, &format!("u{evil}"), true),
                    ],
                );
                doc.env.hypervisor = format!("KVM{evil}");
                doc.env.virtperf_version = format!("9{evil}");
                doc.env.kernel = format!("6.1{evil}");
                doc.env.cpu_model = format!("EPYC{evil}");
                let label = format!("cpu{evil}");
                store.record(id, env, 0, &label, round, Ok(&doc)).unwrap();
            }
        }
        store
            .record(id, &vm, 0, "cpu", 3, Err(&format!("boom{evil}")))
            .unwrap();
        store.finish(id).unwrap();
    }
    for format in ["table", "markdown", "csv", "json", "html"] {
        let out = Command::new(env!("CARGO_BIN_EXE_virtperf"))
            .arg("report")
            .arg(dir.path())
            .args(["--format", format, "--detail"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("KVM") || format != "json", "{format}");
        assert!(text.contains("own"), "{format}: {text}");
        let raw: Vec<char> = text
            .chars()
            .filter(|&c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{202e}')
            .collect();
        assert!(raw.is_empty(), "{format}: {raw:?} in {text}");
        if format == "json" {
            // Still JSON, saying what the store says.
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let names: Vec<&str> = v["entries"][0]["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|m| m["name"].as_str())
                .collect();
            assert!(names.contains(&format!("own{evil}").as_str()), "{names:?}");
        }
    }
}

#[test]
fn the_fakes_speak_the_current_protocol() {
    // Otherwise every case would end at the version check, testing nothing.
    let current = format!("\"protocol\":{}", virtperf::agent::PROTOCOL);
    assert!(HELLO.contains(&current), "{HELLO}");
    assert!(SCRIPTED.contains(&current), "{SCRIPTED}");
}

#[test]
fn an_agent_from_before_serving_is_refused_by_its_version() {
    // Protocol 2 had no `serving` message: such an agent would run a
    // served network job as a client, and a host of that age would choke
    // on `serving`; the version check stops both before any plan.
    let err = hostile(
        &SCRIPTED.replace("\"protocol\":5", "\"protocol\":2"),
        &result_line(0, |_| {}),
    );
    assert!(
        err.contains("speaking protocol 2") && err.contains("use the same build on both sides"),
        "{err}"
    );
}

#[test]
fn a_silent_agent_times_out() {
    let err = hostile("exec sleep 60", b"");
    assert!(err.contains("no answer from the agent within 3 s"), "{err}");
    let err = hostile(SCRIPTED, b"");
    assert!(err.contains("no answer from the agent within 3 s"), "{err}");
}

#[test]
fn an_agent_that_ignores_sigterm_and_closes_its_output_is_killed() {
    // The group leader and a child both ignore SIGTERM; the output closes
    // but the processes live on.
    let err = hostile(
        &format!(
            "trap '' TERM; echo '{HELLO}'; read plan; exec >/dev/null; sleep 60 & exec sleep 60"
        ),
        b"",
    );
    assert!(err.contains("ended unexpectedly"), "{err}");
}

#[test]
fn a_hello_with_a_non_ascii_checksum_does_not_crash_the_host() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let hello =
        r#"{"type":"hello","protocol":5,"version":"0","sha256":"ééééééééééééééé\u001b[2J"}"#;
    let notes = virtperf::core::observer::Recording::default();
    let mut fake = Fake::new(
        &format!("echo '{hello}'; read plan; echo '{{\"type\":\"done\"}}'; exec cat >/dev/null"),
        b"",
    );
    env::run(&mut fake, &[], &notes).unwrap();
    let said = format!("{:?}", notes.events());
    assert!(
        said.contains("different virtperf build (sha256 éééé"),
        "{said}"
    );
    assert!(!said.contains('\u{1b}'), "{said}");
}

#[test]
fn a_guests_stderr_is_read_and_shown_safely() {
    let err = hostile(
        "echo 'Invalid SMP CPUs 1.5' >&2; printf '\\033]0;owned\\007' >&2; exit 1",
        b"",
    );
    assert!(err.contains("Invalid SMP CPUs 1.5"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

#[test]
fn the_plan_carries_option_words_that_look_like_commands() {
    // Issue 14, item 6: the agent's argv dropped every word equal to run,
    // prepare or cleanup, and `--time 600` (two words) missed the deadline.
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("plan.json");
    let mut fake = Fake::new(
        &format!(
            "echo '{HELLO}'; read plan; printf '%s' \"$plan\" > '{}'; echo '{{\"type\":\"done\"}}'; exec cat >/dev/null",
            saved.display()
        ),
        b"",
    );
    let job = Job::from_args(&[
        "fileio".into(),
        "--file-dir".into(),
        "run".into(),
        "--time".into(),
        "600".into(),
        "--file-test-mode=seqwr".into(),
    ])
    .unwrap();
    assert!(job.deadline() > Duration::from_secs(6000));
    // The fake answers no job: the host ends on that, after the plan went out.
    let _ = env::run(&mut fake, &[job], &Silent);
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let wire: virtperf::workload::JobWire =
        serde_json::from_value(plan["jobs"][0].clone()).unwrap();
    assert_eq!(wire.options["file-dir"], "run");
    let back = Job::from_wire(&wire).unwrap();
    assert_eq!(back.values.text("file-dir"), "run");
    assert_eq!(back.values.float("time"), 600.0);
}

/// Property tests over arbitrary input, a quick companion to the fuzz
/// targets (`scripts/fuzz`) that runs with every `cargo test`: the parsers a
/// guest or a user feeds never panic and never accept what their checks
/// refuse.
mod arbitrary {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn any_agent_output_ends_the_run_without_a_panic(
            lines in proptest::collection::vec(
                prop_oneof![
                    proptest::collection::vec(any::<u8>(), 0..200),
                    Just(br#"{"type":"done"}"#.to_vec()),
                    Just(br#"{"type":"result","index":0}"#.to_vec()),
                    Just(br#"{"type":"error","index":0,"message":"\u001b[2J"}"#.to_vec()),
                ],
                0..6,
            )
        ) {
            let mut reply = Vec::new();
            for l in lines {
                reply.extend_from_slice(&l);
                reply.push(b'\n');
            }
            let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
            let mut fake = Fake::new(&format!("echo '{HELLO}'; read plan; cat \"$REPLY_FILE\""), &reply);
            let job = Job::from_args(&["cpu".into(), "--events=1".into()]).unwrap();
            let started = Instant::now();
            let out = env::run(&mut fake, &[job], &Silent);
            prop_assert!(started.elapsed() < 2 * DEADLINE + Duration::from_secs(6));
            if let Ok(o) = out {
                // Only an error line can pass; its text is made safe.
                let e = o[0].results[0].as_ref().unwrap_err();
                prop_assert!(!e.contains('\x1b'), "{:?}", e);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn env_specs_never_panic_and_keep_their_checks(
            text in "(host|docker|podman|qemu|ssh)(:[-a-z0-9=,.@:_ ]{0,40})?"
        ) {
            if let Ok(spec) = Spec::parse(&text) {
                for (k, v) in &spec.opts {
                    let option = spec.driver.option(k).unwrap();
                    prop_assert!(option.check.refuse(k, v).is_none());
                    prop_assert!(!v.starts_with('-'), "{text}");
                }
            }
        }

        #[test]
        fn option_checks_never_panic(key in "[a-z]{1,8}", value in "\\PC{0,24}") {
            use virtperf::env::def::Check;
            for check in [
                Check::Positive(1024.0),
                Check::Whole(1, 255),
                Check::Size(1 << 20),
                Check::Port,
                Check::CpuList,
                Check::Image,
                Check::Text,
            ] {
                let _ = check.refuse(&key, &value);
            }
        }

        #[test]
        fn suite_files_never_panic(text in "(repeat = -?[0-9]{1,12}\n)?(\\[\\[run\\]\\]\nworkload = \"(cpu|fileio|gpu)\"\n([a-z_]{1,10} = (\\[[0-9, ]{0,30}\\]|[0-9]{1,5}|\"[a-z]{0,5}\")\n){0,4}){0,3}") {
            let _ = virtperf::suite::parse("fuzz", &text);
        }
    }
}
