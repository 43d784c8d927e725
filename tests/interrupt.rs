//! Interrupts, as a user sends them: SIGINT once and twice, SIGTERM and
//! SIGHUP while an environment runs a job, for the host and Docker. The run
//! ends promptly with exit code 130 and leaves no agent, container, volume or
//! temporary directory behind. (Docker needs a reachable engine; under
//! CI=true its absence fails.)

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::skip;

/// Docker tests share one engine and count its containers.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Processes whose command line mentions `marker` (our private TMPDIR).
fn processes_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(env) = std::fs::read(e.path().join("environ")) {
            if String::from_utf8_lossy(&env).contains(marker) {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                if !stat
                    .rsplit_once(") ")
                    .is_some_and(|(_, r)| r.starts_with('Z'))
                {
                    out.push(stat);
                }
            }
        }
    }
    out
}

/// Starts `virtperf ARGS` with a private TMPDIR, waits for `started` (given
/// the directory and the pid), sends `signals` 200 ms apart, and checks the
/// ending; returns the pid.
fn interrupt(args: &[&str], signals: &[i32], started: impl Fn(&Path, u32) -> bool) -> u32 {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
        .args(args)
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Its own process group: only the signals below reach it, as from
        // `kill`, not a terminal's Ctrl-C to the whole group.
        .process_group(0)
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(90), || started(tmp.path(), child.id())),
        "{args:?} never got going"
    );
    let pid = child.id();
    let sent = Instant::now();
    for &sig in signals {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        std::thread::sleep(Duration::from_millis(200));
    }
    let ended = wait_until(Duration::from_secs(30), || {
        child.try_wait().unwrap().is_some()
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        ended,
        "{args:?} {signals:?}: still running 30 s after: {stderr}"
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{args:?} {signals:?}: {stderr}"
    );
    assert!(sent.elapsed() < Duration::from_secs(30));
    // Nothing left: the agent's work directory, the agent itself.
    let marker = tmp.path().display().to_string();
    assert!(
        wait_until(Duration::from_secs(5), || entries(tmp.path()).is_empty()
            && processes_with(&marker).is_empty()),
        "{args:?} {signals:?} left {:?} and processes {:?}",
        entries(tmp.path()),
        processes_with(&marker)
    );
    pid
}

fn host_agent_started(tmp: &Path, _pid: u32) -> bool {
    entries(tmp)
        .iter()
        .any(|n| n.starts_with("virtperf-host-0-"))
}

#[test]
fn host_runs_end_cleanly_on_every_signal() {
    let cases: &[(&str, &[i32])] = &[
        ("SIGINT", &[libc::SIGINT]),
        ("SIGINT twice", &[libc::SIGINT, libc::SIGINT]),
        ("SIGTERM", &[libc::SIGTERM]),
        ("SIGHUP", &[libc::SIGHUP]),
    ];
    for (what, signals) in cases {
        eprintln!("host, {what}");
        interrupt(
            &["cpu", "--time=60", "--env", "host"],
            signals,
            host_agent_started,
        );
    }
}

#[test]
fn host_file_tests_leave_no_files_on_a_double_interrupt() {
    interrupt(
        &[
            "fileio",
            "--file-num=2",
            "--file-total-size=8M",
            "--file-test-mode=rndrw",
            "--time=60",
            "--env",
            "host",
        ],
        &[libc::SIGINT, libc::SIGINT],
        |tmp, _| {
            entries(tmp).iter().any(|n| {
                n.starts_with("virtperf-host-0-") && tmp.join(n).join("test_file.1").exists()
            })
        },
    );
}

#[test]
fn a_host_agent_that_cannot_start_leaves_no_directory() {
    // Issue 14, item 9: spawning fails (no file descriptors left for its
    // pipes) after the work directory was made.
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("virtperf"));
    cmd.args(["cpu", "--events=10", "--env", "host"])
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 6,
                rlim_max: 6,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("starting the agent"), "{err}");
    assert!(entries(tmp.path()).is_empty(), "{:?}", entries(tmp.path()));
}

fn docker_ok() -> bool {
    let ok = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok || !skip("no reachable docker engine")
}

/// Names of containers or volumes of the virtperf process `pid` (other
/// virtperf runs may share the engine).
fn of_run(what: &[&str], pid: u32) -> Vec<String> {
    let out = Command::new("docker")
        .args(what)
        .args(["--filter", "label=virtperf=1", "--format"])
        .arg(if what[0] == "ps" {
            "{{.Names}}"
        } else {
            "{{.Name}}"
        })
        .output()
        .unwrap();
    let prefix = format!("virtperf-{pid}-");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

#[test]
fn docker_runs_end_cleanly_on_every_signal() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !docker_ok() {
        return;
    }
    let cases: &[(&str, &[i32])] = &[
        ("SIGINT", &[libc::SIGINT]),
        ("SIGINT twice", &[libc::SIGINT, libc::SIGINT]),
        ("SIGTERM", &[libc::SIGTERM]),
        ("SIGHUP", &[libc::SIGHUP]),
    ];
    for (what, signals) in cases {
        eprintln!("docker, {what}");
        let pid = interrupt(
            &["cpu", "--time=60", "--env", "docker:storage=volume"],
            signals,
            |_, pid| !of_run(&["ps"], pid).is_empty(),
        );
        let left = of_run(&["ps", "-a"], pid);
        assert!(left.is_empty(), "docker, {what}: containers left: {left:?}");
        let left = of_run(&["volume", "ls"], pid);
        assert!(left.is_empty(), "docker, {what}: volumes left: {left:?}");
    }
}
