//! Known causes, each with the real component, named by the accounting
//! (issue 56): a docker container limited to half a CPU is explained by
//! its throttled time; docker on fuse-overlayfs shows the fuse daemon's
//! CPU outside the container; QEMU under TCG spends the slowdown in its
//! vCPU threads; a `storage=tmpfs` container writes next to nothing to the
//! device; a container's bridge network costs the host softirq (named as
//! a cause of a stream's slowdown; per request above the host's own); and
//! host against host names no cause. Each skips with its reason where the
//! component is missing (a failure under CI=true).

mod common;

use common::{engine_ok, json_of, output_ok, qemu_ok, virtperf};
use serde_json::Value;

/// The tests measure: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs one workload with --json through environment `env` (`host` too
/// goes through its driver, so the host accounts for it): its document.
fn run(args: &[&str], env: &str) -> Value {
    let mut cmd = virtperf();
    cmd.args(args).args(["--json", "--env", env]);
    let out = output_ok(&mut cmd);
    let line = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .expect("a document")
        .to_string();
    serde_json::from_str(&line).unwrap()
}

fn outside(doc: &Value) -> &Value {
    &doc["accounting"]["outside"]
}

/// A comparison of `suite` (TOML text) with `env`, 3 rounds: its JSON
/// analysis.
fn compare(suite: &str, env: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let out_dir = dir.path().join("out");
    let mut cmd = virtperf();
    cmd.arg("compare")
        .arg("--suite")
        .arg(&file)
        .args(["--repeat", "3", "--out"])
        .arg(&out_dir);
    for e in env {
        cmd.args(["--env", e]);
    }
    output_ok(&mut cmd);
    let report = virtperf()
        .arg("report")
        .arg(&out_dir)
        .args(["--format", "json"])
        .output()
        .unwrap();
    json_of(&report, "the report")
}

/// The rules of the findings for `env`'s verdicts.
fn rules_for(a: &Value, env: &str) -> Vec<String> {
    a["explanations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["env"] == env)
        .flat_map(|e| e["findings"].as_array().cloned().unwrap_or_default())
        .map(|f| f["rule"].as_str().unwrap_or_default().to_string())
        .collect()
}

const CPU: &str =
    "description = \"cpu\"\n[[run]]\nworkload = \"cpu\"\ncpu_max_prime = 10000\ntime = 1\n";

/// The samples of metric `name` in environment `env` of the first entry.
fn samples(a: &Value, name: &str, env: &str) -> Vec<f64> {
    samples_in(&a["entries"][0], name, env)
}

/// The samples of metric `name` in environment `env` of `entry`.
fn samples_in(entry: &Value, name: &str, env: &str) -> Vec<f64> {
    let m = entry["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name}"));
    let s = m["per_env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["env"] == env)
        .unwrap();
    s["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .collect()
}

#[test]
fn half_a_cpu_is_explained_by_throttled_time() {
    let _serial = serial();
    if !engine_ok("docker") {
        return;
    }
    // Two threads against a quota of half a CPU: whenever the machine
    // gives the container its half, the quota binds.
    let suite = CPU.replace("time = 1", "time = 1\nthreads = 2");
    let a = compare(&suite, &["docker:cpus=0.5,name=explain-half"]);
    let throttled = samples(&a, "acct_throttled_pct", "explain-half");
    let rules = rules_for(&a, "explain-half");
    if throttled.iter().any(|t| *t < 20.0) {
        // A machine so loaded that the container never reached its quota
        // was not throttled: then throttling must not be named.
        eprintln!("the machine kept the container below its quota: throttled {throttled:?} %");
        assert!(!rules.contains(&"throttled".to_string()), "{rules:?}");
        return;
    }
    let e = a["explanations"]
        .as_array()
        .and_then(|x| x.iter().find(|e| e["env"] == "explain-half"))
        .unwrap_or_else(|| panic!("no explained verdict: {}", a["explanations"]));
    assert_eq!(e["outcome"], "slower", "{e}");
    let f = e["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "throttled")
        .unwrap_or_else(|| panic!("throttling not named: {e}"));
    assert!(f["env"].as_f64().unwrap() >= 20.0, "throttled share: {f}");
    eprintln!(
        "docker cpus=0.5: {}× slower; throttled {} % of the run (samples {throttled:?})",
        e["slowdown"], f["env"]
    );
}

#[test]
fn host_against_host_names_no_cause() {
    let _serial = serial();
    let a = compare(CPU, &["host:name=explain-twin"]);
    // A verdict host against host is noise; whatever it is, no accounted
    // cause may exceed the noise.
    assert!(
        rules_for(&a, "explain-twin").is_empty(),
        "{}",
        a["explanations"]
    );
    // The breakdown is there: the same places as the baseline.
    let b = &a["breakdowns"][0];
    assert_eq!(b["env"], "explain-twin", "{a}");
    assert!(b["places"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p[0] == "work"));
}

/// docker's storage driver, as `docker info` names it.
fn storage_driver() -> String {
    let out = std::process::Command::new("docker")
        .args(["info", "--format", "{{.Driver}}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

const FILEIO: &[&str] = &[
    "fileio",
    "--file-total-size=32M",
    "--file-num=4",
    "--file-test-mode=seqwr",
    "--file-fsync-freq=0",
    "--file-fsync-end=on",
    // One pass over the files (32 MiB in 16 KiB blocks), then the fsync.
    "--events=2048",
];

#[test]
fn fuse_overlayfs_shows_its_daemon_outside_the_container() {
    let _serial = serial();
    if !engine_ok("docker") {
        return;
    }
    if storage_driver() != "fuse-overlayfs" {
        common::skip("docker's storage driver is not fuse-overlayfs here");
        return;
    }
    let doc = run(FILEIO, "docker:name=explain-fuse");
    let helpers = outside(&doc)["helpers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let fuse = helpers
        .iter()
        .find(|h| h["name"] == "fuse-overlayfs")
        .unwrap_or_else(|| panic!("no fuse-overlayfs among {helpers:?}"));
    assert!(fuse["cpu_s"].as_f64().unwrap() > 0.0, "{fuse}");
    // What the container wrote reached the device, outside its cgroup's
    // own block I/O (the daemon wrote it).
    let written = outside(&doc)["device"]["write_bytes"].as_u64().unwrap();
    assert!(written > 0, "{}", outside(&doc));
    eprintln!(
        "fuse-overlayfs: {} CPU-s outside the container; the device wrote {written} bytes",
        fuse["cpu_s"]
    );
}

#[test]
fn a_tmpfs_container_writes_next_to_nothing_to_the_device() {
    let _serial = serial();
    if !engine_ok("docker") {
        return;
    }
    let dev = |d: &Value| outside(d)["device"]["write_bytes"].as_u64().unwrap();
    let moved = |d: &Value| {
        d["accounting"]["inside"]["syscall_write_bytes"]
            .as_u64()
            .unwrap()
    };
    // The host's files reach the disk (fsync at the end); the tmpfs's
    // never do. Other processes on a shared machine write too, so the
    // tmpfs run is held to a fraction of what its workload wrote, and a
    // neighbour's burst is given two more tries.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let host = run(FILEIO, "host");
        let tmpfs = run(FILEIO, "docker:storage=tmpfs,name=explain-tmpfs");
        assert!(moved(&tmpfs) >= 32 << 20, "{}", tmpfs["accounting"]);
        assert!(dev(&host) >= moved(&host) / 2, "host: {}", outside(&host));
        if dev(&tmpfs) < moved(&tmpfs) / 4 {
            eprintln!(
                "device bytes / workload bytes: host {} / {}, tmpfs container {} / {}",
                dev(&host),
                moved(&host),
                dev(&tmpfs),
                moved(&tmpfs)
            );
            return;
        }
        seen.push((dev(&tmpfs), moved(&tmpfs)));
    }
    panic!("the tmpfs container's device bytes against its workload's: {seen:?}");
}

#[test]
fn qemu_tcg_spends_the_slowdown_in_its_vcpu_threads() {
    let _serial = serial();
    if !qemu_ok() {
        return;
    }
    let args = ["cpu", "--cpu-max-prime=2000", "--time=3"];
    let vm = run(&args, "qemu:accel=tcg,smp=1,memory=512m,name=explain-tcg");
    let host = run(&args, "host");
    let eps = |d: &Value| common::metric(d, "events_per_sec");
    let slowdown = eps(&host) / eps(&vm);
    let per_event = |cpu: f64, d: &Value| cpu / d["events"].as_f64().unwrap();
    let vcpu = outside(&vm)["vcpu_s"]
        .as_f64()
        .expect("QEMU's vCPU threads");
    let own = host["accounting"]["inside"]["cpu_user_s"].as_f64().unwrap();
    let cost = per_event(vcpu, &vm) / per_event(own, &host);
    // The guest runs the same events; each costs its vCPU thread about as
    // much more host CPU as the run is slower.
    assert!(slowdown > 2.0, "TCG only {slowdown:.2}× slower");
    assert!(
        (0.5..=2.0).contains(&(cost / slowdown)),
        "vCPU CPU per event {cost:.2}× the host's, slowdown {slowdown:.2}×"
    );
    eprintln!("qemu/tcg: vCPU CPU per event {cost:.2}× the host's, slowdown {slowdown:.2}×");
}

/// Two entries: tcp_rr (a request each way per event) and tcp_stream (a
/// one-way stream), 1 s runs.
const BRIDGE_NET: &str = "description = \"net\"\n[[run]]\nworkload = \"net\"\n\
                          net_test = [\"tcp_rr\", \"tcp_stream\"]\ntime = 1\n";

/// The softirq finding of `env`'s verdicts in the entry whose label holds
/// `test`, if any.
fn softirq_finding(a: &Value, env: &str, test: &str) -> Option<Value> {
    a["explanations"]
        .as_array()?
        .iter()
        .filter(|e| e["env"] == env && e["label"].as_str().is_some_and(|l| l.contains(test)))
        .flat_map(|e| e["findings"].as_array().cloned().unwrap_or_default())
        .find(|f| f["rule"] == "host_softirq")
}

/// The samples of metric `name` in environment `env` of the entry whose
/// label holds `test`.
fn samples_of(a: &Value, test: &str, name: &str, env: &str) -> Vec<f64> {
    let entry = a["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["label"].as_str().is_some_and(|l| l.contains(test)))
        .unwrap_or_else(|| panic!("no entry of {test}"));
    samples_in(entry, name, env)
}

/// Whether every run of `env` lies above every run of `baseline`: the
/// noise test a cause must pass before the explanation names it.
fn every_run_above(env: &[f64], baseline: &[f64]) -> bool {
    env.iter().all(|v| baseline.iter().all(|b| v > b))
}

#[test]
fn a_bridge_network_costs_the_host_softirq() {
    let _serial = serial();
    if !engine_ok("docker") {
        return;
    }
    // Data crosses the bridge (veth, bridge, netfilter) in the host's
    // softirq; on the host it stays on loopback.
    let a = compare(BRIDGE_NET, &["docker:name=explain-bridge"]);
    // The negative control: host against host names no softirq.
    let twin = compare(BRIDGE_NET, &["host:name=explain-twin-net"]);
    for test in ["tcp_rr", "tcp_stream"] {
        assert!(
            softirq_finding(&twin, "explain-twin-net", test).is_none(),
            "{test}: {}",
            twin["explanations"]
        );
    }
    let per_event =
        |test: &str, env: &str| samples_of(&a, test, "acct_host_cpu_softirq_per_event", env);
    // A stream through the bridge is several times slower than over
    // loopback (6.0x in a default comparison on a 2-vCPU AMD EPYC VM), with
    // the host's softirq a large share of the extra (31% there): the rule
    // names it, every bridge run beyond every host run.
    let (bridge, host) = (
        per_event("tcp_stream", "explain-bridge"),
        per_event("tcp_stream", "host"),
    );
    let f = softirq_finding(&a, "explain-bridge", "tcp_stream").unwrap_or_else(|| {
        panic!(
            "tcp_stream: softirq not named: µs per event {bridge:?} against {host:?}; {}",
            a["explanations"]
        )
    });
    let (x, b) = (
        f["env"].as_f64().unwrap(),
        f["baseline"].as_f64().unwrap_or(0.0),
    );
    eprintln!("bridge tcp_stream: host softirq {x:.2} µs per event, the host's {b:.2}");
    assert!(x > b, "{f}");
    assert_eq!(f["figure"], "acct_host_cpu_softirq_per_event", "{f}");
    assert!(every_run_above(&bridge, &host), "{f}");
    // tcp_rr: measured per request in every run, on both sides (a
    // figure, not absent). Earlier machines showed the bridge's median
    // above the host's every time (6.9-13.4 µs against 5.8-6.6, ...); on
    // a 2-vCPU AMD EPYC VM on 2026-11-29 loopback's own softirq per request
    // was 18.5-25.4 µs and the bridge's 17.1-29.3, and the medians' order
    // flipped in 2 of 5 comparisons: the bridge adds a few µs per request,
    // inside the runs' noise. So the rule is held to its word instead: it
    // names the softirq for tcp_rr only where every bridge run exceeds
    // every host run.
    let (bridge, host) = (
        per_event("tcp_rr", "explain-bridge"),
        per_event("tcp_rr", "host"),
    );
    assert_eq!((bridge.len(), host.len()), (3, 3), "{bridge:?} {host:?}");
    assert!(
        bridge
            .iter()
            .chain(&host)
            .all(|x| x.is_finite() && *x > 0.0),
        "{bridge:?} {host:?}"
    );
    eprintln!("bridge tcp_rr: host softirq µs per request {bridge:?}, the host's {host:?}");
    if let Some(f) = softirq_finding(&a, "explain-bridge", "tcp_rr") {
        assert!(
            every_run_above(&bridge, &host),
            "tcp_rr softirq named, but not every bridge run {bridge:?} exceeds the host's {host:?}: {f}"
        );
    }
}

/// Whether the kernel lists a CPU PMU (`cpu` among the event sources):
/// these machines' VMs have none, only software events.
fn has_pmu() -> bool {
    std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
}

#[test]
fn a_cpu_run_counts_its_events_and_samples_each_second() {
    let _serial = serial();
    let doc = run(&["cpu", "--cpu-max-prime=5000", "--time=2"], "host");
    let acct = &doc["accounting"];
    assert_eq!(acct["version"], 2, "{acct}");
    let c = &acct["inside"]["counters"];
    if has_pmu() {
        assert!(c["cycles"].as_u64().unwrap() > 0, "{c}");
        assert!(c["instructions"].as_u64().unwrap() > 0, "{c}");
    } else {
        // No PMU: the figures are null with the reason, never 0.
        assert!(c["cycles"].is_null() && c["instructions"].is_null(), "{c}");
        let why = c["hardware_unavailable"].as_str().unwrap_or_default();
        assert!(why.starts_with("not available here: "), "{c}");
    }
    // The run's thread ended and was joined (a context switch of the
    // waiting thread at least), and its stack and buffers faulted in: the
    // rusage's figures. Migrations would need a perf counter on every
    // thread, which slows each context switch: null, with the reason.
    assert!(c["context_switches"].as_u64().unwrap() > 0, "{c}");
    assert!(c["page_faults"].as_u64().unwrap() > 0, "{c}");
    assert!(c["cpu_migrations"].is_null(), "{c}");
    let why = c["software_unavailable"].as_str().unwrap_or_default();
    assert!(why.starts_with("cpu_migrations not counted"), "{c}");
    // Two seconds: at least one sample each side, shares within 0..100 %.
    for side in ["inside", "outside"] {
        let s = acct[side]["samples"]["samples"]
            .as_array()
            .unwrap_or_else(|| panic!("no {side} samples: {acct}"));
        assert!(!s.is_empty() && s.len() <= 5, "{side}: {s:?}");
        for x in s {
            let busy = x["user_pct"].as_f64().unwrap() + x["system_pct"].as_f64().unwrap();
            assert!((0.0..=100.5).contains(&busy), "{x}");
        }
    }
}
