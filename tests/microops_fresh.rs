//! microops measures each run in a fresh process of the binary
//! (`workload::microops::fresh`): the result is the child's, and a stop
//! reaches the child, which removes its scratch files before it ends.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{entries, json_of, metric, signal_and_wait, virtperf, wait_until};

/// The pids of processes running this binary with `arg` in their command line.
fn running_with(arg: &str) -> Vec<u32> {
    entries(std::path::Path::new("/proc"))
        .iter()
        .filter_map(|p| p.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(arg))
        })
        .collect()
}

#[test]
fn a_run_is_measured_in_a_child_and_a_stop_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    // A result: the child's figures, its summary shown by the parent, no
    // trace of how they travelled.
    let out = virtperf()
        .args([
            "microops",
            "--ops=getpid,mmap_munmap",
            "--time=0.3",
            "--json",
            "run",
        ])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let doc = json_of(&out, "microops --json");
    assert!(doc["details"]["child_text"].is_null(), "{}", doc["details"]);
    let getpid = metric(&doc, "getpid_ns");
    assert!(getpid > 0.0 && getpid < 100_000.0, "{getpid}");
    let text = virtperf()
        .args(["microops", "--ops=getpid", "--time=0.2", "run"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("getpid") && text.contains("modes of the pass results"),
        "{text}"
    );

    // Ctrl-C to the parent alone (not its process group): the child is
    // asked to stop, removes its files, and both are gone.
    let mut parent = std::process::Command::new(env!("CARGO_BIN_EXE_virtperf"))
        .args(["microops", "--ops=open_close,pipe_echo", "--time=30", "run"])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let marker = "--ops=open_close,pipe_echo";
    // The child is running once a process other than the parent has the
    // operations on its command line.
    let child_up = wait_until(Duration::from_secs(10), || {
        running_with(marker).iter().any(|&p| p != parent.id())
    });
    assert!(child_up, "no measuring child appeared");
    std::thread::sleep(Duration::from_millis(300));
    let ended = signal_and_wait(&mut parent, &[libc::SIGINT], Duration::from_secs(10));
    assert!(ended, "still running");
    assert_eq!(parent.wait().unwrap().code(), Some(130));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(running_with(marker), Vec::<u32>::new(), "a process is left");
    assert_eq!(entries(tmp.path()), Vec::<String>::new(), "files are left");
}
