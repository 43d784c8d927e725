//! Sandboxes with the real thing: gVisor's runsc over a bundle virtperf
//! makes. Each test runs one short workload, checks that the result's
//! fingerprint names the layer, its platform and version, and that nothing
//! is left behind (directories, sandboxes, network namespaces) after
//! success, after a refusal, after Ctrl-C and after a killed run. Where
//! the layer is missing the test says why it skips; under CI=true a skip
//! is a failure.

use std::path::Path;
use std::process::{Command as Std, Stdio};
use std::time::Duration;

use serde_json::Value;

mod common;
use common::{is_root, json_of, skip, virtperf, wait_until};

/// The tests start sandboxes and count what is left, so they run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// runsc's version, when runsc is installed and the tests run as root;
/// otherwise says why the test skips.
fn runsc_version() -> Option<String> {
    if !is_root() {
        skip("runsc needs root to make its sandbox");
        return None;
    }
    let out = Std::new("runsc").arg("--version").output();
    let version = out.ok().and_then(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("runsc version "))
            .map(|v| v.trim().to_string())
    });
    if version.is_none() {
        skip("runsc is not installed (apt-get install runsc)");
    }
    version
}

/// The network namespaces of gVisor sandboxes on this machine.
fn gvisor_namespaces() -> Vec<String> {
    common_entries("/run/netns", "virtperf-gvisor-")
}

fn common_entries(dir: &str, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether any namespace named after virtperf process `pid` is left.
fn namespaces_of(pid: u32) -> Vec<String> {
    let mark = format!(".{pid}.");
    gvisor_namespaces()
        .into_iter()
        .filter(|n| n.contains(&mark))
        .collect()
}

/// Runs virtperf with a private TMPDIR and --json; the one result document.
fn run_json(tmp: &Path, args: &[&str]) -> Value {
    let out = virtperf()
        .env("TMPDIR", tmp)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    json_of(&out, &args.join(" "))
}

fn assert_nothing_left(tmp: &Path, before: &[String], what: &str) {
    let files = common::entries(tmp);
    assert!(files.is_empty(), "{what}: left in TMPDIR: {files:?}");
    let left: Vec<String> = gvisor_namespaces()
        .into_iter()
        .filter(|n| !before.contains(n))
        .collect();
    assert!(left.is_empty(), "{what}: network namespaces left: {left:?}");
}

#[test]
fn gvisor_runs_microops_and_names_runsc_its_platform_and_version() {
    let _serial = serial();
    let Some(version) = runsc_version() else {
        return;
    };
    let before = gvisor_namespaces();
    let tmp = tempfile::tempdir().unwrap();
    let doc = run_json(
        tmp.path(),
        // pipe_echo forks a child that must see its pipe's end of file:
        // runsc has no close_range, and every microops run hung on it
        // (the default comparison's gVisor micro-ops area was "–").
        &[
            "microops",
            "--ops=getpid,pipe_echo",
            "--time=1",
            "--env",
            "gvisor",
        ],
    );
    assert!(common::metric(&doc, "pipe_echo_ns") > 0.0, "{doc}");
    let settings = &doc["env"]["settings"];
    assert_eq!(doc["env"]["kind"], "gvisor");
    assert_eq!(settings["runtime"], "runsc", "{settings}");
    assert_eq!(settings["runsc_version"], version.as_str(), "{settings}");
    let platform = settings["platform"].as_str().unwrap();
    assert!(
        ["ptrace", "systrap", "kvm"].contains(&platform),
        "{settings}"
    );
    assert!(
        ["sandbox", "host"].contains(&settings["network"].as_str().unwrap()),
        "{settings}"
    );
    // A system call crosses gVisor's kernel: far dearer than on the host
    // (about 100x with ptrace), and at least a few times on any platform.
    let host = run_json(tmp.path(), &["microops", "--ops=getpid", "--time=1"]);
    let inside = common::metric(&doc, "getpid_cycles");
    let outside = common::metric(&host, "getpid_cycles");
    assert!(
        inside > 3.0 * outside,
        "getpid: {inside} cycles in gVisor, {outside} on the host"
    );
    assert_nothing_left(tmp.path(), &before, "after a run");
}

#[test]
fn gvisor_network_tests_reach_the_hosts_server_over_a_veth() {
    let _serial = serial();
    if runsc_version().is_none() {
        return;
    }
    let before = gvisor_namespaces();
    let tmp = tempfile::tempdir().unwrap();
    let doc = run_json(
        tmp.path(),
        &["net", "--net-test=tcp_rr", "--time=1", "--env", "gvisor"],
    );
    assert!(common::metric(&doc, "tcp_rr_trans_per_sec") > 0.0);
    let text = doc.to_string();
    assert!(text.contains("veth (sandbox to host)"), "{text}");
    // The sandbox's own end of the pair, in its own namespace.
    assert!(text.contains("10.213."), "{text}");
    assert_nothing_left(tmp.path(), &before, "after a network run");
}

#[test]
fn gvisor_refuses_what_cannot_start_before_anything_starts() {
    let _serial = serial();
    if runsc_version().is_none() {
        return;
    }
    let before = gvisor_namespaces();
    let tmp = tempfile::tempdir().unwrap();
    let platforms = Std::new("runsc")
        .args(["help", "platforms"])
        .output()
        .unwrap();
    let platforms = String::from_utf8_lossy(&platforms.stdout).into_owned();
    // A platform this runsc was not built with names those it has.
    let missing = ["systrap", "kvm", "ptrace"]
        .into_iter()
        .find(|p| !platforms.split_whitespace().any(|w| w == *p));
    if let Some(p) = missing {
        let out = virtperf()
            .env("TMPDIR", tmp.path())
            .args(["cpu", "--time=1", "--env", &format!("gvisor:platform={p}")])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "platform={p} ran");
        assert!(err.contains("offers only"), "{err}");
        assert!(err.contains("use platform="), "{err}");
    }
    // network=none with a network test: refused, naming the fix.
    let out = virtperf()
        .env("TMPDIR", tmp.path())
        .args([
            "net",
            "--net-test=tcp_rr",
            "--time=1",
            "--env",
            "gvisor:network=none,platform=ptrace",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("network=host"), "{err}");
    // kvm: where it starts a sandbox it is used and named; where it does
    // not (no /dev/kvm, nested KVM hangs), refused with the reason.
    let out = virtperf()
        .env("TMPDIR", tmp.path())
        .args(["cpu", "--time=1", "--json", "--env", "gvisor:platform=kvm"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["env"]["settings"]["platform"], "kvm");
    } else {
        assert!(err.contains("platform=kvm"), "{err}");
        assert!(err.contains("use platform=ptrace"), "{err}");
    }
    assert_nothing_left(tmp.path(), &before, "after refusals");
}

#[test]
fn gvisor_leaves_nothing_after_ctrl_c_and_sweeps_a_killed_run() {
    let _serial = serial();
    if runsc_version().is_none() {
        return;
    }
    let before = gvisor_namespaces();
    let tmp = tempfile::tempdir().unwrap();
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let mut child = Std::new(env!("CARGO_BIN_EXE_virtperf"))
            .env("TMPDIR", tmp.path())
            .args(["cpu", "--time=30", "--env", "gvisor"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(
            wait_until(Duration::from_secs(60), || !namespaces_of(pid).is_empty()),
            "no sandbox started"
        );
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, signal) };
        let ended = wait_until(Duration::from_secs(30), || {
            child.try_wait().unwrap().is_some()
        });
        assert!(ended, "virtperf did not end on signal {signal}");
        if signal == libc::SIGINT {
            assert_nothing_left(tmp.path(), &before, "after Ctrl-C");
        } else {
            // A killed run could clean nothing; its agent saw its input
            // end and stopped. The next run sweeps what it left.
            assert!(
                wait_until(Duration::from_secs(20), || {
                    !Std::new("pgrep")
                        .args(["-f", &format!("virtperf-{pid}-")])
                        .status()
                        .unwrap()
                        .success()
                }),
                "the killed run's sandbox is still running"
            );
            run_json(tmp.path(), &["cpu", "--time=1", "--env", "gvisor"]);
            assert!(namespaces_of(pid).is_empty(), "not swept");
            assert_nothing_left(tmp.path(), &before, "after a killed run and the next");
        }
    }
}

/// Whether `cli`'s engine answers; otherwise says why the test skips.
fn engine_ok(cli: &str) -> bool {
    common::engine_ok(cli)
}

/// Podman's default OCI runtime, as `podman info` names it.
fn podman_default_runtime() -> String {
    let out = Std::new("podman")
        .args(["info", "--format", "{{.Host.OCIRuntime.Name}}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The virtperf containers of `cli` (running or not).
fn containers(cli: &str) -> Vec<String> {
    let out = Std::new(cli)
        .args(["ps", "-aq", "--filter", "label=virtperf=1"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn podman_and_docker_name_the_runtime_they_ran_with() {
    let _serial = serial();
    for cli in ["podman", "docker"] {
        if !engine_ok(cli) {
            continue;
        }
        let before = containers(cli);
        let tmp = tempfile::tempdir().unwrap();
        let env = format!("{cli}:runtime=runc");
        let doc = run_json(
            tmp.path(),
            &["microops", "--ops=getpid", "--time=1", "--env", &env],
        );
        let settings = &doc["env"]["settings"];
        assert_eq!(settings["runtime"], "runc", "{cli}: {settings}");
        assert!(
            settings["runtime_version"]
                .as_str()
                .is_some_and(|v| v.contains("runc version")),
            "{cli}: {settings}"
        );
        // The engine's own version, for the history to name (issue 54).
        let server = Std::new(cli)
            .args(["version", "--format", "{{.Server.Version}}"])
            .output()
            .unwrap();
        let server = String::from_utf8_lossy(&server.stdout).trim().to_string();
        assert!(!server.is_empty(), "{cli} version");
        assert_eq!(
            settings[&format!("{cli}_version")],
            server.as_str(),
            "{cli}: {settings}"
        );
        assert_eq!(containers(cli), before, "{cli}: containers left");
    }
}

#[test]
fn a_runtime_the_engine_does_not_know_or_that_cannot_start_is_refused_before_any_run() {
    let _serial = serial();
    if engine_ok("docker") {
        let out = virtperf()
            .args(["cpu", "--time=1", "--env", "docker:runtime=no-such-runtime"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains("daemon.json"), "{err}");
    }
    if !engine_ok("podman") {
        return;
    }
    let default = podman_default_runtime();
    // crun from Debian's package, unpacked into the test's own directory
    // (installing it would make it Podman's default runtime).
    let dir = tempfile::tempdir().unwrap();
    let fetched = Std::new("apt-get")
        .args(["download", "crun"])
        .current_dir(dir.path())
        .output()
        .is_ok_and(|o| o.status.success());
    let deb = common::entries(dir.path())
        .into_iter()
        .find(|n| n.ends_with(".deb"));
    let (true, Some(deb)) = (fetched, deb) else {
        skip("apt-get download crun failed (no Debian mirror reachable)");
        return;
    };
    let root = dir.path().join("root");
    assert!(common::succeeds(&[
        "dpkg",
        "-x",
        dir.path().join(deb).to_str().unwrap(),
        root.to_str().unwrap()
    ]));
    let crun = root.join("usr/bin/crun");
    let before = containers("podman");
    let env = format!("podman:runtime={}", crun.display());
    let out = virtperf()
        .args([
            "microops",
            "--ops=getpid",
            "--time=1",
            "--json",
            "--env",
            &env,
        ])
        .output()
        .unwrap();
    if out.status.success() {
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let settings = &doc["env"]["settings"];
        assert_eq!(settings["runtime"], crun.to_str().unwrap(), "{settings}");
        assert!(
            settings["runtime_version"]
                .as_str()
                .is_some_and(|v| v.contains("crun")),
            "{settings}"
        );
    } else {
        // On a cgroup v1 or hybrid host crun 1.8 refuses to start any
        // container: said before anything runs.
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("does not start with runtime"), "{err}");
        assert!(!err.contains("agent"), "a run was tried: {err}");
    }
    assert_eq!(containers("podman"), before, "containers left");
    assert_eq!(
        podman_default_runtime(),
        default,
        "Podman's default changed"
    );
}

#[test]
fn gvisor_refuses_a_server_inside_before_the_run() {
    let _serial = serial();
    if runsc_version().is_none() {
        return;
    }
    let before = gvisor_namespaces();
    let tmp = tempfile::tempdir().unwrap();
    let out = virtperf()
        .env("TMPDIR", tmp.path())
        .args([
            "net",
            "--net-test=tcp_rr",
            "--net-server=env",
            "--time=1",
            "--env",
            "gvisor:platform=ptrace",
        ])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("leave --net-server out"), "{err}");
    assert_nothing_left(tmp.path(), &before, "after the refusal");
}
