//! Helpers shared by the integration tests (each test file is its own crate
//! and uses only some of them).
#![allow(dead_code)]

pub mod dbservers;
pub mod report_fixture;
pub mod sshhost;
pub mod sysbench;

use assert_cmd::Command;
use serde_json::Value;

/// The names in a directory.
pub fn entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The JSON document a successful command printed; a failure shows `what`
/// and the command's stderr.
pub fn json_of(out: &std::process::Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs a command quietly; whether it succeeded (set-up steps such as
/// `ip netns add`).
pub fn succeeds(args: &[&str]) -> bool {
    std::process::Command::new(args[0])
        .args(&args[1..])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The virtperf binary under test.
pub fn virtperf() -> Command {
    Command::cargo_bin("virtperf").expect("binary built")
}

/// Prints why a test skips and returns true; under CI=true a skip fails.
pub fn skip(why: &str) -> bool {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("cannot skip under CI=true: {why}");
    }
    eprintln!("skipping: {why}");
    true
}

/// Prints why a test cannot run because the running kernel lacks a feature
/// (no package can add it) and returns true, also under CI=true: the test
/// stays written and runs wherever the kernel has it.
pub fn kernel_lacks(why: &str) -> bool {
    eprintln!("skipping, the running kernel lacks it (no package installs it): {why}");
    true
}

/// The value of metric `name` in a `virtperf.result/1` document.
pub fn metric(doc: &Value, name: &str) -> f64 {
    doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("metric {name} missing in {doc}"))["value"]
        .as_f64()
        .unwrap()
}

/// Polls `ready` every 50 ms for at most `limit`.
pub fn wait_until(limit: std::time::Duration, mut ready: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if ready() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

/// Sends `signals` to `child` 200 ms apart, as a user pressing Ctrl-C
/// again would, then waits at most `limit` for it to end; one still running
/// then is killed. Returns whether it ended by itself.
pub fn signal_and_wait(
    child: &mut std::process::Child,
    signals: &[i32],
    limit: std::time::Duration,
) -> bool {
    for &sig in signals {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let ended = wait_until(limit, || child.try_wait().unwrap().is_some());
    if !ended {
        let _ = child.kill();
    }
    ended
}

/// Whether the `docker` or `podman` engine answers; otherwise prints why the
/// test skips (see `skip`) and returns false.
pub fn engine_ok(cli: &str) -> bool {
    let ok = std::process::Command::new(cli)
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok || !skip(&format!("no reachable {cli} engine"))
}

/// Whether `qemu-system-x86_64` runs and /boot has a guest kernel;
/// otherwise prints why the test skips (see `skip`) and returns false.
pub fn qemu_ok() -> bool {
    let has_qemu = std::process::Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let has_kernel = std::fs::read_dir("/boot").is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("vmlinuz-"))
    });
    (has_qemu && has_kernel)
        || !skip("qemu-system-x86_64 or a guest kernel (linux-image-cloud-amd64) is missing")
}

/// Whether the tests run as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A command `output_ok` runs: std's, or assert_cmd's (which keeps its
/// stdin and timeout).
pub trait Runnable {
    /// Runs it to the end, collecting its output.
    fn run_output(&mut self) -> std::io::Result<std::process::Output>;
    /// Its program and arguments.
    fn shown(&self) -> String;
}

impl Runnable for std::process::Command {
    fn run_output(&mut self) -> std::io::Result<std::process::Output> {
        self.output()
    }
    fn shown(&self) -> String {
        shown(self.get_program(), self.get_args())
    }
}

impl Runnable for Command {
    fn run_output(&mut self) -> std::io::Result<std::process::Output> {
        self.output()
    }
    fn shown(&self) -> String {
        shown(self.get_program(), self.get_args())
    }
}

/// `"program" "arg" ...`, as `Debug` quotes each.
fn shown(program: &std::ffi::OsStr, args: std::process::CommandArgs<'_>) -> String {
    let mut line = format!("{program:?}");
    for arg in args {
        line.push_str(&format!(" {arg:?}"));
    }
    line
}

/// Runs `cmd` and returns its output; panics with the command, its exit
/// status and its stderr when it could not start or did not succeed.
#[track_caller]
pub fn output_ok(cmd: &mut impl Runnable) -> std::process::Output {
    let out = match cmd.run_output() {
        Ok(out) => out,
        Err(e) => panic!("{}: {e}", cmd.shown()),
    };
    assert!(
        out.status.success(),
        "{} failed ({}): {}",
        cmd.shown(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
