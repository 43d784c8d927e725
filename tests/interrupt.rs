//! Interrupts, as a user sends them: SIGINT once and twice (the second
//! lands in the cleanup the first started), SIGTERM and SIGHUP while an
//! environment runs a job, for the host, Docker, Podman and QEMU, and while
//! a VM boots; in a comparison, every result finished before the signal is
//! kept in the store. The run ends promptly with exit code 130 and leaves no
//! agent, container, volume, VM, temporary directory or test file behind.
//! SIGKILL leaves no chance to clean up: the agent stops when its input
//! ends, a container goes with `--rm`, a VM with its parent, and what still
//! remains is swept by the next run. (Docker, Podman and QEMU are the real
//! ones; under CI=true their absence fails.) Every check counts only what
//! this test's own virtperf process made: other runs share the machine.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{engine_ok, entries, output_ok, qemu_ok, signal_and_wait, wait_until};

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
    let ended = signal_and_wait(&mut child, signals, Duration::from_secs(30));
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

/// The host agent's work directory: `virtperf-host-OWNER-0-XXXXXX`.
fn is_host_workdir(name: &str) -> bool {
    name.starts_with("virtperf-host-") && name.contains("-0-")
}

fn host_agent_started(tmp: &Path, _pid: u32) -> bool {
    entries(tmp).iter().any(|n| is_host_workdir(n))
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
            entries(tmp)
                .iter()
                .any(|n| is_host_workdir(n) && tmp.join(n).join("test_file.1").exists())
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

/// A virtperf run of the test's own: a private TMPDIR (so whatever is left
/// there is this run's), its own process group (only the signals the test
/// sends reach it, as from `kill`, not a terminal's Ctrl-C to the group).
struct Run {
    tmp: tempfile::TempDir,
    child: std::process::Child,
    /// Its stderr, in a file: a pipe would stay open as long as any child
    /// it left (an engine's client attached to a stuck container).
    stderr: tempfile::NamedTempFile,
}

impl Run {
    fn start(args: &[&str]) -> Run {
        let tmp = tempfile::tempdir().unwrap();
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
            .args(args)
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr.reopen().unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        Run { tmp, child, stderr }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stderr_so_far(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }

    fn signal(&self, sig: i32) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.pid() as i32, sig) };
    }

    /// Waits for the end (at most `limit`); the exit code and stderr.
    fn end(mut self, limit: Duration) -> (Option<i32>, String, tempfile::TempDir) {
        let ended = wait_until(limit, || self.child.try_wait().unwrap().is_some());
        if !ended {
            let _ = self.child.kill();
        }
        let status = self.child.wait().unwrap();
        let err = std::fs::read_to_string(self.stderr.path()).unwrap_or_default();
        assert!(ended, "still running {limit:?} after: {err}");
        (status.code(), err, self.tmp)
    }

    /// What is left of it: files in its TMPDIR, its processes (by TMPDIR).
    fn leftovers(tmp: &Path) -> (Vec<String>, Vec<String>) {
        let marker = tmp.display().to_string();
        (entries(tmp), processes_with(&marker))
    }
}

fn assert_nothing_left(tmp: &Path, what: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || {
            let (files, procs) = Run::leftovers(tmp);
            files.is_empty() && procs.is_empty()
        }),
        "{what}: left {:?}",
        Run::leftovers(tmp)
    );
}

fn engine(cli: &str, args: &[&str]) -> String {
    let out = Command::new(cli)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Containers of the virtperf process `pid` (`running` only, or all).
fn containers_of(cli: &str, pid: u32, running: bool) -> Vec<String> {
    let mut args = vec![
        "ps",
        "--filter",
        "label=virtperf=1",
        "--format",
        "{{.Names}}",
    ];
    if !running {
        args.push("-a");
    }
    let prefix = format!("virtperf-{pid}-");
    engine(cli, &args)
        .split_whitespace()
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

/// The volumes mounted in a container.
fn volumes_of(cli: &str, container: &str) -> Vec<String> {
    engine(
        cli,
        &[
            "inspect",
            "--format",
            "{{range .Mounts}}{{if eq .Type \"volume\"}}{{.Name}} {{end}}{{end}}",
            container,
        ],
    )
    .split_whitespace()
    .map(str::to_string)
    .collect()
}

fn volume_exists(cli: &str, name: &str) -> bool {
    Command::new(cli)
        .args(["volume", "inspect", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Waits until run `pid` has a running container with a volume; returns the
/// container and its volumes.
fn running_container(cli: &str, pid: u32) -> Option<(String, Vec<String>)> {
    let mut found = None;
    wait_until(Duration::from_secs(120), || {
        if let Some(c) = containers_of(cli, pid, true).pop() {
            let vols = volumes_of(cli, &c);
            if !vols.is_empty() {
                found = Some((c, vols));
            }
        }
        found.is_some()
    });
    found
}

fn assert_container_gone(
    cli: &str,
    what: &str,
    container: &str,
    volumes: &[String],
    limit: Duration,
) {
    let gone = || {
        !engine(cli, &["ps", "-a", "--format", "{{.Names}}"])
            .split_whitespace()
            .any(|n| n == container)
            && !volumes.iter().any(|v| volume_exists(cli, v))
    };
    assert!(
        wait_until(limit, gone),
        "{what}: {cli} container {container} or its volumes {volumes:?} left"
    );
}

/// Engine tests one at a time: each waits for containers to appear, and the
/// machine is small.
static ENGINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn engine_runs_end_cleanly_on_every_signal(cli: &str) {
    let _serial = ENGINE.lock().unwrap_or_else(|p| p.into_inner());
    if !engine_ok(cli) {
        return;
    }
    let spec = format!("{cli}:storage=volume");
    let cases: &[(&str, &[i32])] = &[
        ("SIGINT", &[libc::SIGINT]),
        ("SIGINT twice", &[libc::SIGINT, libc::SIGINT]),
        ("SIGTERM", &[libc::SIGTERM]),
        ("SIGHUP", &[libc::SIGHUP]),
    ];
    for (what, signals) in cases {
        eprintln!("{cli}, {what}");
        let seen = std::sync::Mutex::new(None);
        let pid = interrupt(&["cpu", "--time=60", "--env", &spec], signals, |_, pid| {
            let found = running_container(cli, pid);
            let ok = found.is_some();
            *seen.lock().unwrap() = found;
            ok
        });
        let (container, volumes) = seen.into_inner().unwrap().unwrap();
        assert_container_gone(
            cli,
            &format!("{cli}, {what}"),
            &container,
            &volumes,
            Duration::from_secs(15),
        );
        assert!(containers_of(cli, pid, false).is_empty());
    }
}

#[test]
fn docker_runs_end_cleanly_on_every_signal() {
    engine_runs_end_cleanly_on_every_signal("docker");
}

#[test]
fn podman_runs_end_cleanly_on_every_signal() {
    engine_runs_end_cleanly_on_every_signal("podman");
}

/// Issue 14, item 9: containers were not started with `--rm`, and a run
/// killed outright (SIGKILL: no handler, no cleanup) left its container and
/// volume running on for nobody. Now the agent sees its input end and
/// exits, and `--rm` removes the container with its volume.
fn sigkill_leaves_no_container(cli: &str) {
    let _serial = ENGINE.lock().unwrap_or_else(|p| p.into_inner());
    if !engine_ok(cli) {
        return;
    }
    let run = Run::start(&[
        "cpu",
        "--time=60",
        "--env",
        &format!("{cli}:storage=volume"),
    ]);
    let (container, volumes) = running_container(cli, run.pid()).expect("a container started");
    run.signal(libc::SIGKILL);
    let (code, _, tmp) = run.end(Duration::from_secs(10));
    assert_eq!(code, None, "killed");
    assert_container_gone(
        cli,
        "SIGKILL",
        &container,
        &volumes,
        Duration::from_secs(30),
    );
    // The engine's client it started ended too; Podman's conmon directory
    // stays for the next run, which removes it.
    let marker = tmp.path().display().to_string();
    assert!(
        wait_until(Duration::from_secs(10), || processes_with(&marker)
            .is_empty()),
        "{:?}",
        processes_with(&marker)
    );
    output_ok(
        Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
            .args(["cpu", "--events=1", "--env", cli])
            .env("TMPDIR", tmp.path()),
    );
    assert_nothing_left(tmp.path(), &format!("{cli}, SIGKILL, then a run"));
}

#[test]
fn docker_sigkill_leaves_no_container() {
    sigkill_leaves_no_container("docker");
}

#[test]
fn podman_sigkill_leaves_no_container() {
    sigkill_leaves_no_container("podman");
}

/// When the agent of a killed run cannot end by itself (here: stopped with
/// SIGSTOP), its container stays; the next run finds the owner dead and
/// removes it with its volume.
fn a_killed_runs_stuck_container_is_swept_by_the_next_run(cli: &str) {
    let _serial = ENGINE.lock().unwrap_or_else(|p| p.into_inner());
    if !engine_ok(cli) {
        return;
    }
    let run = Run::start(&[
        "cpu",
        "--time=60",
        "--env",
        &format!("{cli}:storage=volume"),
    ]);
    let pid = run.pid();
    let (container, volumes) = running_container(cli, pid).expect("a container started");
    let init: i32 = engine(cli, &["inspect", "--format", "{{.State.Pid}}", &container])
        .trim()
        .parse()
        .unwrap();
    // SAFETY: stopping the container's agent, a process this test started.
    unsafe { libc::kill(init, libc::SIGSTOP) };
    run.signal(libc::SIGKILL);
    let (_, _, _tmp) = run.end(Duration::from_secs(10));
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !containers_of(cli, pid, false).is_empty(),
        "the stuck container is there until a sweep"
    );
    let next = output_ok(
        Command::new(assert_cmd::cargo::cargo_bin("virtperf")).args([
            "cpu",
            "--events=1",
            "--env",
            cli,
        ]),
    );
    let err = String::from_utf8_lossy(&next.stderr);
    assert!(
        err.contains("left by virtperf runs that were killed"),
        "{err}"
    );
    assert_container_gone(
        cli,
        "the sweep",
        &container,
        &volumes,
        Duration::from_secs(30),
    );
}

#[test]
fn docker_a_killed_runs_stuck_container_is_swept_by_the_next_run() {
    a_killed_runs_stuck_container_is_swept_by_the_next_run("docker");
}

#[test]
fn podman_a_killed_runs_stuck_container_is_swept_by_the_next_run() {
    a_killed_runs_stuck_container_is_swept_by_the_next_run("podman");
}

/// A small TCG guest: one vCPU, a small disk, no NIC (boots in seconds).
const QEMU: &str = "qemu:accel=tcg,smp=1,memory=256m,disk=64m,net=none";

/// The pid of the VM of the run whose TMPDIR is `tmp`.
fn vm_of(tmp: &Path) -> Option<i32> {
    processes_with(&tmp.display().to_string())
        .iter()
        .find(|stat| stat.contains("(qemu-system-x86"))
        .and_then(|stat| stat.split_whitespace().next()?.parse().ok())
}

fn qemu_running(tmp: &Path) -> bool {
    vm_of(tmp).is_some()
}

/// A comparison on `baseline` (and `--env host`, which never starts: the
/// signals come first) of `suite`, one round, in a TMPDIR of its own.
struct Comparison {
    run: Run,
    store_dir: std::path::PathBuf,
    _out: tempfile::TempDir,
}

impl Comparison {
    fn start(baseline: &str, suite: &str) -> Comparison {
        let out = tempfile::tempdir().unwrap();
        let suite_file = out.path().join("suite.toml");
        std::fs::write(&suite_file, suite).unwrap();
        let store_dir = out.path().join("results");
        let run = Run::start(&[
            "compare",
            "--suite",
            suite_file.to_str().unwrap(),
            // The host is the baseline: a round runs each entry in every
            // environment back to back, the order reversed from the first
            // entry to the second, so `env` runs the second entry right
            // after its first, before the host does.
            "--baseline",
            "host",
            "--env",
            baseline,
            "--repeat",
            "1",
            "--out",
            store_dir.to_str().unwrap(),
        ]);
        Comparison {
            run,
            store_dir,
            _out: out,
        }
    }

    /// (entry, finished) of every run in the store.
    fn stored(&self) -> Vec<(usize, bool)> {
        stored_in(&self.store_dir)
    }

    /// Sends `signals` 200 ms apart, calling `between` after the first (a
    /// frozen agent goes on there); then checks the ending: exit 130, the
    /// hint to resume, `kept` in the store, nothing left. Returns the
    /// run's TMPDIR.
    fn interrupt(
        self,
        what: &str,
        signals: &[i32],
        between: impl FnOnce(),
        kept: &[(usize, bool)],
    ) -> tempfile::TempDir {
        let mut between = Some(between);
        for &sig in signals {
            self.run.signal(sig);
            std::thread::sleep(Duration::from_millis(200));
            if let Some(f) = between.take() {
                f();
            }
        }
        let store_dir = self.store_dir.clone();
        let (code, err, tmp) = self.run.end(Duration::from_secs(30));
        assert_eq!(code, Some(130), "{what}: {err}");
        assert!(err.contains("--resume"), "{what}: {err}");
        // Said once, by the comparison: the host agent, whose stderr is the
        // terminal's, ends quietly.
        assert_eq!(
            err.matches("error: interrupted").count(),
            1,
            "{what}: {err}"
        );
        assert_eq!(
            stored_in(&store_dir),
            kept,
            "{what}: every finished result is kept, nothing else: {err}"
        );
        assert_nothing_left(tmp.path(), what);
        tmp
    }
}

fn stored_in(store_dir: &Path) -> Vec<(usize, bool)> {
    virtperf::store::Store::open_read_only(store_dir)
        .ok()
        .and_then(|s| {
            let id = s.latest().ok()??.id;
            s.runs(id).ok()
        })
        .map(|runs| runs.iter().map(|r| (r.entry, r.doc.is_some())).collect())
        .unwrap_or_default()
}

/// A comparison of two entries, a short one and a long one, on `baseline`.
/// Waits for the first result in the store, sends `signals`, and checks the
/// ending: exit 130, the first result still in the store, nothing left.
fn compare_interrupted(baseline: &str, signals: &[i32]) {
    let cmp = Comparison::start(
        baseline,
        "[[run]]\nworkload = \"cpu\"\ncpu_max_prime = 2000\nevents = 20\n\n\
         [[run]]\nworkload = \"cpu\"\ncpu_max_prime = 2000\ntime = 60\n",
    );
    let firsts = first_results(baseline);
    assert!(
        wait_until(Duration::from_secs(180), || cmp.stored().len()
            >= firsts.len()),
        "{baseline}: no result stored"
    );
    // The second entry is running now, in `baseline`.
    std::thread::sleep(Duration::from_millis(500));
    cmp.interrupt(&format!("{baseline} {signals:?}"), signals, || {}, &firsts);
}

/// The first entry's results: the host's, and the environment's when it is
/// not the host too.
fn first_results(env: &str) -> Vec<(usize, bool)> {
    match env {
        "host" => vec![(0, true)],
        _ => vec![(0, true), (0, true)],
    }
}

#[test]
fn host_comparison_keeps_finished_results_on_sigterm() {
    compare_interrupted("host", &[libc::SIGTERM]);
}

#[test]
fn docker_comparison_keeps_finished_results_on_a_double_sigint() {
    let _serial = ENGINE.lock().unwrap_or_else(|p| p.into_inner());
    if engine_ok("docker") {
        compare_interrupted("docker:storage=volume", &[libc::SIGINT, libc::SIGINT]);
    }
}

#[test]
fn podman_comparison_keeps_finished_results_on_sighup() {
    let _serial = ENGINE.lock().unwrap_or_else(|p| p.into_inner());
    if engine_ok("podman") {
        compare_interrupted("podman:storage=volume", &[libc::SIGHUP]);
    }
}

/// QEMU: every signal while the guest runs a job (in a comparison, whose
/// finished result stays), and SIGINT while it boots.
#[test]
fn qemu_runs_end_cleanly_on_every_signal() {
    if !qemu_ok() {
        return;
    }
    let cases: &[(&str, &[i32])] = &[
        ("SIGINT", &[libc::SIGINT]),
        ("SIGINT twice", &[libc::SIGINT, libc::SIGINT]),
        ("SIGTERM", &[libc::SIGTERM]),
        ("SIGHUP", &[libc::SIGHUP]),
    ];
    for (what, signals) in cases {
        eprintln!("qemu, {what}");
        compare_interrupted(QEMU, signals);
    }
    eprintln!("qemu, SIGINT while booting");
    interrupt(
        &["cpu", "--time=60", "--env", QEMU],
        &[libc::SIGINT],
        |tmp, _| qemu_running(tmp),
    );
}

/// Issue 14, item 9 (the class): a VM outlived a killed run; QEMU now gets
/// SIGKILL with its parent, and the next run sweeps the VM's directory.
#[test]
fn qemu_sigkill_leaves_no_vm_and_the_next_run_sweeps_its_files() {
    if !qemu_ok() {
        return;
    }
    let run = Run::start(&["cpu", "--time=60", "--env", QEMU]);
    let tmp_path = run.tmp.path().to_path_buf();
    assert!(wait_until(Duration::from_secs(60), || qemu_running(
        &tmp_path
    )));
    run.signal(libc::SIGKILL);
    let (code, _, tmp) = run.end(Duration::from_secs(10));
    assert_eq!(code, None);
    assert!(
        wait_until(Duration::from_secs(10), || !qemu_running(tmp.path())),
        "QEMU outlived its parent"
    );
    let left = entries(tmp.path());
    assert!(
        left.iter().all(|n| n.starts_with("virtperf-qemu-")),
        "{left:?}"
    );
    // The next run (its prepare) finds the owner dead and removes it.
    output_ok(
        Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
            .args(["cpu", "--events=1", "--cpu-max-prime=100", "--env", QEMU])
            .env("TMPDIR", tmp.path()),
    );
    assert_nothing_left(tmp.path(), "qemu after the sweep");
}

/// The host's own agent on SIGKILL of its host: it sees its input end and
/// stops (no agent runs on); the next run removes its work directory.
#[test]
fn host_sigkill_stops_the_agent_and_the_next_run_sweeps_its_directory() {
    let run = Run::start(&["cpu", "--time=60", "--env", "host"]);
    let tmp_path = run.tmp.path().to_path_buf();
    assert!(wait_until(Duration::from_secs(30), || host_agent_started(
        &tmp_path, 0
    )));
    std::thread::sleep(Duration::from_millis(300));
    run.signal(libc::SIGKILL);
    let (code, _, tmp) = run.end(Duration::from_secs(10));
    assert_eq!(code, None);
    let marker = tmp.path().display().to_string();
    assert!(
        wait_until(Duration::from_secs(10), || processes_with(&marker)
            .is_empty()),
        "the agent ran on: {:?}",
        processes_with(&marker)
    );
    let next = Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
        .args(["cpu", "--events=1", "--env", "host"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(next.status.success());
    assert_nothing_left(tmp.path(), "host after the sweep");
}

#[test]
fn an_agent_whose_host_is_gone_stops() {
    // The agent alone: its plan is a minute of work, then its input ends.
    let mut agent = Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
        .arg("agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let job = virtperf::workload::Job::from_args(&["cpu".into(), "--time=60".into()]).unwrap();
    let plan = virtperf::agent::Plan {
        protocol: virtperf::agent::PROTOCOL,
        env_name: "alone".into(),
        env_kind: "host".into(),
        workdir: String::new(),
        wait_for_go: false,
        jobs: vec![job.to_wire()],
        host_servers: vec![],
    };
    let mut stdin = agent.stdin.take().unwrap();
    use std::io::Write;
    writeln!(stdin, "{}", serde_json::to_string(&plan).unwrap()).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    drop(stdin);
    assert!(
        wait_until(Duration::from_secs(10), || agent
            .try_wait()
            .unwrap()
            .is_some()),
        "the agent ran on after its input ended"
    );
    assert!(sent.elapsed() < Duration::from_secs(10));
    assert_eq!(agent.wait().unwrap().code(), Some(130));
}

// Inside a workload's own prepare and cleanup: the fileio entry of a
// comparison creates many small test files (each created and fsynced, so
// its prepare lasts a while) and its cleanup removes them one by one. The
// agent is frozen (SIGSTOP) the moment the phase is seen under way (its
// first file, its first deletion through inotify), shown to be unfinished
// there, the signals are sent, and it goes on (SIGCONT) after the first:
// the signal lands inside the phase every time, not by luck of timing.

/// Test files of the fileio entry.
const PHASE_FILES: usize = 2000;

/// A short cpu entry (its result must stay), then fileio over `files`
/// files (in `file_dir`, when given).
fn phase_suite(file_dir: Option<&Path>, files: usize) -> String {
    let dir = file_dir
        .map(|d| format!("file_dir = \"{}\"\n", d.display()))
        .unwrap_or_default();
    format!(
        "[[run]]\nworkload = \"cpu\"\ncpu_max_prime = 2000\nevents = 20\n\n\
         [[run]]\nworkload = \"fileio\"\nfile_num = {files}\nfile_total_size = \"8M\"\n\
         file_block_size = \"4K\"\nfile_test_mode = \"rndrd\"\ntime = 1\n{dir}"
    )
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Prepare,
    Cleanup,
}

fn test_files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("test_file."))
                .count()
        })
        .unwrap_or(0)
}

/// Processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, r)| r.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            if let Ok(child) = e.file_name().to_string_lossy().parse() {
                out.push(child);
            }
        }
    }
    out
}

/// A process stopped with SIGSTOP until dropped.
struct Frozen(i32);

impl Frozen {
    fn new(pid: i32) -> Frozen {
        // SAFETY: signalling a process of this test's run.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        // Stopped once its state says so.
        let state = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.starts_with('T')))
                .unwrap_or(true)
        };
        assert!(
            wait_until(Duration::from_secs(5), state),
            "{pid} did not stop"
        );
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

/// Deletions of test files in a directory, seen through inotify: at once,
/// where polling would miss a cleanup that removes thousands of files in
/// milliseconds.
struct Deletions(std::os::fd::OwnedFd);

impl Deletions {
    fn watch(dir: &Path) -> Deletions {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: a plain syscall with no pointers.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
        assert!(fd >= 0, "{}", std::io::Error::last_os_error());
        // SAFETY: fd is a fresh descriptor nothing else owns.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), libc::IN_DELETE) };
        assert!(
            wd >= 0,
            "watching {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        );
        Deletions(fd)
    }

    /// Waits (at most `limit`) until a test file is deleted.
    fn first(&self, limit: Duration) -> bool {
        use std::os::fd::AsRawFd;
        let until = Instant::now() + limit;
        let mut buf = [0u8; 8192];
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            let mut poll = libc::pollfd {
                fd: self.0.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, and a count of 1.
            let ready = unsafe { libc::poll(&mut poll, 1, left.as_millis().max(1) as i32) };
            if ready <= 0 {
                continue;
            }
            // SAFETY: a buffer of its own length.
            let n = unsafe { libc::read(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            let mut at = 0;
            // struct inotify_event: wd, mask, cookie, len, then the name.
            while n > 0 && at + 16 <= n as usize {
                let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap()) as usize;
                let name = &buf[at + 16..(at + 16 + len).min(n as usize)];
                if name.starts_with(b"test_file.") {
                    return true;
                }
                at += 16 + len;
            }
        }
        false
    }
}

/// Where the agent of a comparison works, seen from this machine: its pid
/// and the directory of its test files.
type Locate<'a> = &'a dyn Fn(&Comparison) -> Option<(i32, std::path::PathBuf)>;

/// Starts the phase suite on `baseline`, lands `signals` inside the fileio
/// entry's `phase` and checks the ending (exit 130, every finished result
/// kept, nothing left in TMPDIR). Returns the comparison's pid.
fn signal_in_phase(
    baseline: &str,
    file_dir: Option<&Path>,
    phase: Phase,
    signals: &[i32],
    locate: Locate,
) -> u32 {
    let what = format!("{baseline}, {signals:?} in {phase:?}");
    eprintln!("{what}");
    let cmp = Comparison::start(baseline, &phase_suite(file_dir, PHASE_FILES));
    let pid = cmp.run.pid();
    let mut found = None;
    assert!(
        wait_until(Duration::from_secs(180), || {
            found = locate(&cmp).filter(|(_, dir)| dir.join("test_file.0").exists());
            found.is_some()
        }),
        "{what}: the fileio prepare never began: {}",
        cmp.run.stderr_so_far()
    );
    let (agent, dir) = found.unwrap();
    let frozen = match phase {
        Phase::Prepare => {
            let frozen = Frozen::new(agent);
            let last = dir.join(format!("test_file.{}", PHASE_FILES - 1));
            assert!(
                !last.exists(),
                "{what}: the prepare ended before the agent was stopped"
            );
            frozen
        }
        Phase::Cleanup => {
            let deletions = Deletions::watch(&dir);
            assert!(
                deletions.first(Duration::from_secs(120)),
                "{what}: the cleanup never began: {}",
                cmp.run.stderr_so_far()
            );
            let frozen = Frozen::new(agent);
            let left = test_files_in(&dir);
            assert!(
                left > 0,
                "{what}: the cleanup ended before the agent was stopped"
            );
            frozen
        }
    };
    let mut kept = first_results(baseline);
    if matches!(phase, Phase::Cleanup) {
        // The fileio measurement had finished.
        kept.push((1, true));
    }
    cmp.interrupt(&what, signals, move || drop(frozen), &kept);
    if let Some(d) = file_dir {
        assert_eq!(test_files_in(d), 0, "{what}: test files left in --file-dir");
    }
    pid
}

const EVERY_SIGNAL: &[(&str, &[i32])] = &[
    ("SIGINT", &[libc::SIGINT]),
    ("SIGINT twice", &[libc::SIGINT, libc::SIGINT]),
    ("SIGTERM", &[libc::SIGTERM]),
    ("SIGHUP", &[libc::SIGHUP]),
];

/// The environments whose phases are interrupted, in the order of
/// [`phase_signals`]'s square.
#[derive(Clone, Copy)]
enum PhaseEnv {
    Host = 0,
    Docker = 1,
    Podman = 2,
    Qemu = 3,
}

/// The signals that land inside `phase` of `env`'s workload: a Latin
/// square over the four environments, so every signal (one, two SIGINTs,
/// SIGTERM, SIGHUP) lands inside every phase once, and every environment
/// gets two different signals, one per phase. Every signal in every phase
/// of every environment took 32 runs (eight QEMU boots per phase) for
/// paths that differ by environment (where the agent runs, what its
/// ending removes), not by signal: all signals set the same flag, and
/// `*_runs_end_cleanly_on_every_signal` still sends each signal to each
/// environment.
fn phase_signals(env: PhaseEnv, phase: Phase) -> &'static [i32] {
    let k = env as usize;
    let at = match phase {
        Phase::Prepare => k,
        Phase::Cleanup => (k + 2) % EVERY_SIGNAL.len(),
    };
    EVERY_SIGNAL[at].1
}

/// The host's agent and the directory it was given: a user's directory
/// (`--file-dir`), which no environment's cleanup removes, so what is left
/// there is the workload's own doing. A file of the user's there stays.
fn host_phase(phase: Phase) {
    let signals = phase_signals(PhaseEnv::Host, phase);
    let user = tempfile::tempdir().unwrap();
    std::fs::write(user.path().join("notes.txt"), "mine").unwrap();
    let dir = user.path().to_path_buf();
    let locate = |cmp: &Comparison| {
        let agent = *children_of(cmp.run.pid()).first()?;
        Some((agent, dir.clone()))
    };
    signal_in_phase("host", Some(user.path()), phase, signals, &locate);
    assert_eq!(entries(user.path()), ["notes.txt"]);
}

#[test]
fn host_signals_inside_a_workloads_prepare_leave_nothing() {
    host_phase(Phase::Prepare);
}

#[test]
fn host_signals_inside_a_workloads_cleanup_keep_its_result_and_leave_nothing() {
    host_phase(Phase::Cleanup);
}

/// A container's agent (its init) and its volume, through /proc.
fn engine_phase(cli: &str, phase: Phase) {
    let _serial = ENGINE.lock().unwrap_or_else(|p| p.into_inner());
    if !engine_ok(cli) {
        return;
    }
    let spec = format!("{cli}:storage=volume");
    let env = if cli == "podman" {
        PhaseEnv::Podman
    } else {
        PhaseEnv::Docker
    };
    let signals = phase_signals(env, phase);
    let seen = std::sync::Mutex::new(None);
    let locate = |cmp: &Comparison| {
        let mut seen = seen.lock().unwrap();
        if seen.is_none() {
            let (container, volumes) = running_container(cli, cmp.run.pid())?;
            let init: i32 = engine(cli, &["inspect", "--format", "{{.State.Pid}}", &container])
                .trim()
                .parse()
                .ok()
                .filter(|&p| p > 0)?;
            *seen = Some((container, volumes, init));
        }
        let init = seen.as_ref()?.2;
        Some((init, format!("/proc/{init}/root/work").into()))
    };
    let pid = signal_in_phase(&spec, None, phase, signals, &locate);
    let (container, volumes, _) = seen.into_inner().unwrap().unwrap();
    assert_container_gone(
        cli,
        &format!("{cli}, {signals:?} in {phase:?}"),
        &container,
        &volumes,
        Duration::from_secs(15),
    );
    assert!(containers_of(cli, pid, false).is_empty());
}

#[test]
fn docker_signals_inside_a_workloads_prepare_leave_nothing() {
    engine_phase("docker", Phase::Prepare);
}

#[test]
fn docker_signals_inside_a_workloads_cleanup_keep_its_result_and_leave_nothing() {
    engine_phase("docker", Phase::Cleanup);
}

#[test]
fn podman_signals_inside_a_workloads_prepare_leave_nothing() {
    engine_phase("podman", Phase::Prepare);
}

#[test]
fn podman_signals_inside_a_workloads_cleanup_keep_its_result_and_leave_nothing() {
    engine_phase("podman", Phase::Cleanup);
}

/// Bytes allocated to a file (a sparse disk image grows as a guest writes).
fn allocated(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .map(|m| m.blocks() * 512)
        .unwrap_or(0)
}

/// QEMU: the guest's fileio prepare writes its files to the VM's scratch
/// disk, a sparse image on this machine, which grows as the files reach it
/// (each is fsynced). The VM is frozen once a quarter of the data is there
/// and shown to be short of all of it, so the signal lands inside the
/// prepare. One boot, with its signals from the square (`phase_signals`).
#[test]
fn qemu_signals_inside_a_workloads_prepare_leave_nothing() {
    if !qemu_ok() {
        return;
    }
    const MIB: u64 = 1 << 20;
    let data = 192 * MIB;
    let suite = format!(
        "[[run]]\nworkload = \"cpu\"\ncpu_max_prime = 2000\nevents = 20\n\n\
         [[run]]\nworkload = \"fileio\"\nfile_num = 48\nfile_total_size = \"{}M\"\n\
         file_test_mode = \"rndrd\"\ntime = 1\n",
        data / MIB
    );
    let spec = "qemu:accel=tcg,smp=1,memory=256m,disk=320m,net=none";
    let signals = phase_signals(PhaseEnv::Qemu, Phase::Prepare);
    let what = format!("qemu, {signals:?} in the prepare");
    eprintln!("{what}");
    let cmp = Comparison::start(spec, &suite);
    let tmp = cmp.run.tmp.path().to_path_buf();
    let image = || {
        entries(&tmp)
            .into_iter()
            .find(|n| n.starts_with("virtperf-qemu-"))
            .map(|d| tmp.join(d).join("scratch-0.img"))
    };
    // The image as made (mkfs writes little), before the guest writes.
    assert!(
        wait_until(Duration::from_secs(60), || image()
            .is_some_and(|i| i.exists())),
        "{what}: no scratch disk"
    );
    let disk = image().unwrap();
    // The journal and the inode tables a guest fills lazily stay far
    // below a quarter of the data.
    let start = allocated(&disk);
    assert!(
        wait_until(Duration::from_secs(180), || {
            allocated(&disk) >= start + data / 4
        }),
        "{what}: the prepare never wrote its files"
    );
    let vm = vm_of(&tmp).expect("the VM runs");
    let frozen = Frozen::new(vm);
    let now = allocated(&disk);
    assert!(
        now < start + data,
        "{what}: the prepare ended before the VM was stopped ({now} bytes on the disk)"
    );
    let firsts = first_results(spec);
    assert_eq!(cmp.stored(), firsts, "{what}");
    cmp.interrupt(&what, signals, move || drop(frozen), &firsts);
}

/// Test files in a guest: its agent may open 1024 files, and the fileio
/// run opens them all.
const GUEST_FILES: usize = 1000;

/// Whether `holder` still holds the other end of the pipe on `pid`'s stdin.
fn holds_stdin_of(holder: u32, pid: i32) -> bool {
    let Ok(pipe) = std::fs::read_link(format!("/proc/{pid}/fd/0")) else {
        return false;
    };
    std::fs::read_dir(format!("/proc/{holder}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == pipe))
}

/// QEMU: the guest's agent sends the fileio result before that job's
/// cleanup and "done" after it, so from the moment the result is in the
/// store until "done" the guest deletes its `PHASE_FILES` test files. The
/// VM is frozen as soon as the result is seen (the VM's pid found
/// beforehand, the store polled every 5 ms) and shown to be short of
/// "done": half a second later virtperf still holds the VM's stdin, which
/// it closes the moment "done" arrives. The signals land inside the
/// guest's cleanup; the fileio result stays. One boot, with its signals
/// from the square (`phase_signals`).
#[test]
fn qemu_signals_inside_a_workloads_cleanup_keep_its_result_and_leave_nothing() {
    if !qemu_ok() {
        return;
    }
    // Larger files make a longer cleanup: from the result's arrival to
    // "done", about 0.3 s under TCG, against 0.2 s for 8 KiB files.
    let spec = "qemu:accel=tcg,smp=1,memory=256m,disk=320m,net=none";
    let suite = phase_suite(None, GUEST_FILES).replace("\"8M\"", "\"160M\"");
    let both = [(0, true), (0, true), (1, true)];
    let signals = phase_signals(PhaseEnv::Qemu, Phase::Cleanup);
    let what = format!("qemu, {signals:?} in the cleanup");
    eprintln!("{what}");
    let started = Instant::now();
    let cmp = Comparison::start(spec, &suite);
    let tmp = cmp.run.tmp.path().to_path_buf();
    let mut vm = None;
    assert!(
        wait_until(Duration::from_secs(60), || {
            vm = vm_of(&tmp);
            vm.is_some()
        }),
        "{what}: no VM: {}",
        cmp.run.stderr_so_far()
    );
    let vm = vm.unwrap();
    let until = Instant::now() + Duration::from_secs(300);
    while cmp.stored().len() < both.len() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    let frozen = Frozen::new(vm);
    let seen = started.elapsed();
    assert_eq!(
        cmp.stored(),
        both,
        "{what}: the fileio result never arrived: {}",
        cmp.run.stderr_so_far()
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        holds_stdin_of(cmp.run.pid(), vm),
        "{what}: the cleanup ended (virtperf had 'done') before the VM was stopped: {}",
        cmp.run.stderr_so_far()
    );
    eprintln!("{what}: frozen in the cleanup {seen:?} after the start");
    cmp.interrupt(&what, signals, move || drop(frozen), &both);
}
