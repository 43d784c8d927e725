//! fileio on real files: the sysbench cycle, every I/O mode, validation that
//! catches a flipped byte, and nothing left behind after Ctrl-C or a full disk.

use std::path::Path;
use std::process::{Command as Std, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{json_of, metric, skip, virtperf};

fn test_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("test_file."))
        .collect();
    names.sort();
    names
}

fn fileio(dir: &Path, extra: &[&str]) -> Command {
    let mut c = virtperf();
    c.arg("fileio")
        .arg(format!("--file-dir={}", dir.display()))
        .args(["--file-num=4", "--file-total-size=8M"])
        .args(extra);
    c
}

/// Skips (printing why) when not root; under CI=true that is a failure.
fn need_root(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root || !skip(&format!("{what}: needs root to mount a small tmpfs"))
}

#[test]
fn prepare_run_cleanup_like_sysbench() {
    let dir = tempfile::tempdir().unwrap();
    fileio(dir.path(), &["prepare"]).assert().success();
    assert_eq!(test_files(dir.path()).len(), 4);
    let meta = std::fs::metadata(dir.path().join("test_file.0")).unwrap();
    assert_eq!(meta.len(), 2 << 20);
    for mode in ["rndrw", "rndrd", "rndwr", "seqrd", "seqrewr"] {
        let out = fileio(
            dir.path(),
            &[
                &format!("--file-test-mode={mode}"),
                "--time=0.5",
                "--json",
                "run",
            ],
        )
        .output()
        .unwrap();
        let doc = json_of(&out, mode);
        let reads = metric(&doc, "reads_per_sec");
        let writes = metric(&doc, "writes_per_sec");
        match mode {
            "rndrd" | "seqrd" => assert!(reads > 0.0 && writes == 0.0, "{mode}"),
            "rndwr" | "seqrewr" => assert!(writes > 0.0 && reads == 0.0, "{mode}"),
            _ => {
                assert!(reads > 0.0 && writes > 0.0);
                let ratio = reads / writes;
                assert!((1.3..1.7).contains(&ratio), "rw ratio {ratio}");
                assert!(metric(&doc, "fsyncs_per_sec") > 0.0);
                let by_op = &doc["details"]["latency_ms_by_op"];
                for op in ["read", "write", "fsync"] {
                    assert!(by_op[op]["p99"].as_f64().unwrap() > 0.0, "{op}");
                }
            }
        }
    }
    fileio(dir.path(), &["cleanup"]).assert().success();
    assert!(test_files(dir.path()).is_empty());
}

#[test]
fn every_io_mode_and_direct_io_work() {
    let dir = tempfile::tempdir().unwrap();
    fileio(dir.path(), &["prepare"]).assert().success();
    for extra in [
        &["--file-io-mode=mmap"][..],
        &["--file-io-mode=async", "--file-async-backlog=8"][..],
        &["--file-extra-flags=direct", "--file-block-size=4K"][..],
        &[
            "--file-io-mode=async",
            "--file-extra-flags=direct",
            "--file-block-size=4K",
        ][..],
    ] {
        let mut args = vec!["--file-test-mode=rndrw", "--time=0.4", "--json", "run"];
        args.extend_from_slice(extra);
        let out = fileio(dir.path(), &args).output().unwrap();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            // tmpfs has no O_DIRECT; say so rather than fail.
            if err.contains("Invalid argument") && extra.contains(&"--file-extra-flags=direct") {
                eprintln!("O_DIRECT not supported in {}: {err}", dir.path().display());
                continue;
            }
            panic!("{extra:?}: {err}");
        }
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(metric(&doc, "reads_per_sec") > 0.0, "{extra:?}");
        assert!(
            doc["latency_ms"]["p99"].as_f64().unwrap() > 0.0,
            "{extra:?}"
        );
    }
}

#[test]
fn sequential_write_creates_its_files() {
    let dir = tempfile::tempdir().unwrap();
    fileio(
        dir.path(),
        &["--file-test-mode=seqwr", "--events=200", "--json"],
    )
    .assert()
    .success();
    assert_eq!(test_files(dir.path()).len(), 4);
}

#[test]
fn validation_names_the_corrupted_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--validate", "--file-block-size=4K"];
    let mut prep = args.to_vec();
    prep.push("prepare");
    fileio(dir.path(), &prep).assert().success();
    let mut run = args.to_vec();
    run.extend(["--file-test-mode=seqrd", "--events=2048", "run"]);
    fileio(dir.path(), &run).assert().success();
    // Flip one byte in the third block of test_file.1.
    let path = dir.path().join("test_file.1");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[2 * 4096 + 10] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    fileio(dir.path(), &run)
        .assert()
        .failure()
        .stderr(predicate::str::contains("test_file.1"))
        .stderr(predicate::str::contains("offset 8192"));
}

#[test]
fn run_without_prepare_or_mode_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    fileio(dir.path(), &["--file-test-mode=rndrd", "run"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("virtperf fileio prepare"));
    fileio(dir.path(), &["run"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--file-test-mode is required"));
    virtperf()
        .args(["fileio", "--file-dir=/no/such/dir", "prepare"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--file-dir=/no/such/dir"));
}

#[test]
fn refuses_when_the_files_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    virtperf()
        .arg("fileio")
        .arg(format!("--file-dir={}", dir.path().display()))
        .args(["--file-total-size=900T", "prepare"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("MiB is free"));
    assert!(test_files(dir.path()).is_empty());
}

#[test]
fn ctrl_c_during_prepare_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("virtperf");
    let mut child = Std::new(bin)
        .arg("fileio")
        .arg(format!("--file-dir={}", dir.path().display()))
        .args([
            "--file-num=64",
            "--file-total-size=8G",
            "--file-block-size=4K",
            "prepare",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while test_files(dir.path()).is_empty() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !test_files(dir.path()).is_empty(),
        "prepare never started writing"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        test_files(dir.path()).is_empty(),
        "{:?}",
        test_files(dir.path())
    );
}

#[test]
fn ctrl_c_during_run_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    fileio(dir.path(), &["prepare"]).assert().success();
    let bin = assert_cmd::cargo::cargo_bin("virtperf");
    let mut child = Std::new(bin)
        .arg("fileio")
        .arg(format!("--file-dir={}", dir.path().display()))
        .args([
            "--file-num=4",
            "--file-total-size=8M",
            "--file-test-mode=rndrw",
            "--time=30",
            "run",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(test_files(dir.path()).is_empty());
}

/// A tmpfs with room for only two inodes: the third file cannot be created,
/// a real ENOSPC midway through prepare.
#[test]
fn a_full_file_system_midway_is_a_clear_error_and_cleans_up() {
    if !need_root("the ENOSPC test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path();
    let ok = Std::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64M,nr_inodes=3", "virtperf-test"])
        .arg(mnt)
        .status()
        .unwrap();
    assert!(ok.success(), "mount tmpfs failed");
    let result = fileio(mnt, &["--file-num=4", "prepare"]).output().unwrap();
    let leftover = test_files(mnt);
    let _ = Std::new("umount").arg(mnt).status();
    assert!(!result.status.success());
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(err.contains("file system is full"), "{err}");
    assert!(leftover.is_empty(), "{leftover:?}");
}
