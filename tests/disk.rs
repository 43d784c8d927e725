//! The bonnie++-style disk workload on real files: every test reports a rate
//! and latencies, and nothing is left behind, also after Ctrl-C.

use std::path::Path;
use std::process::{Command as Std, Stdio};
use std::time::{Duration, Instant};

use predicates::prelude::*;

mod common;
use common::{json_of, virtperf};

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("virtperf-disk"))
        .collect()
}

#[test]
fn every_test_reports_a_rate_and_latencies() {
    let dir = tempfile::tempdir().unwrap();
    for direct in ["--disk-direct=off", "--disk-direct=on"] {
        let out = virtperf()
            .arg("disk")
            .arg(format!("--disk-dir={}", dir.path().display()))
            .args([
                "--disk-file-size=8M",
                "--disk-files=1",
                "--disk-seeks=300",
                direct,
                "--json",
            ])
            .output()
            .unwrap();
        let doc = json_of(&out, "the run");
        let names: Vec<&str> = doc["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        for want in [
            "put_block_kib_per_sec",
            "rewrite_kib_per_sec",
            "get_block_kib_per_sec",
            "seeks_per_sec",
            "seq_create_per_sec",
            "rnd_delete_per_sec",
            "put_block_latency_max_ms",
            "get_block_latency_p99_ms",
        ] {
            assert!(names.contains(&want), "{want} missing in {names:?}");
        }
        for m in doc["metrics"].as_array().unwrap() {
            if m["name"].as_str().unwrap().ends_with("_per_sec") {
                assert!(m["value"].as_f64().unwrap() > 0.0, "{m}");
            }
        }
        assert_eq!(doc["details"]["seeks"]["ops"], 300);
        assert_eq!(doc["details"]["seq_create"]["ops"], 1024);
        assert!(leftovers(dir.path()).is_empty());
    }
}

#[test]
fn disk_time_repeats_whole_passes_until_it_has_passed() {
    // --disk-time: each block test and the seek test go on, in whole
    // passes over the file, until the time has passed; the rate is over
    // all of them. One pass of 1 MiB is 128 chunks of 8K plus the fsync.
    let dir = tempfile::tempdir().unwrap();
    let run = |time: &str| {
        let out = virtperf()
            .arg("disk")
            .arg(format!("--disk-dir={}", dir.path().display()))
            .args([
                "--disk-file-size=1M",
                "--disk-files=0",
                "--disk-seeks=30",
                time,
                "--json",
            ])
            .output()
            .unwrap();
        json_of(&out, "the run")
    };
    let one = run("--disk-time=0");
    assert_eq!(one["details"]["put_block"]["ops"], 129);
    assert_eq!(one["details"]["get_block"]["ops"], 128);
    assert_eq!(one["details"]["seeks"]["ops"], 30);
    let started = Instant::now();
    let timed = run("--disk-time=0.3");
    assert!(started.elapsed() >= Duration::from_millis(4 * 300));
    for (test, pass) in [("put_block", 129), ("rewrite", 129), ("get_block", 128)] {
        assert_eq!(one["details"][test]["passes"], 1, "{test}");
        let ops = timed["details"][test]["ops"].as_u64().unwrap();
        let passes = timed["details"][test]["passes"].as_u64().unwrap();
        assert!(passes > 1, "{test}: one pass in 0.3 s");
        assert_eq!(ops, passes * pass, "{test}: not whole passes of {pass}");
    }
    assert!(timed["details"]["seeks"]["ops"].as_u64().unwrap() > 30);
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn ctrl_c_leaves_nothing_and_cleanup_removes_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("virtperf");
    let child = Std::new(bin)
        .arg("disk")
        .arg(format!("--disk-dir={}", dir.path().display()))
        .args([
            "--disk-file-size=20G",
            "--disk-chunk-size=4K",
            "--disk-sync",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while leftovers(dir.path()).is_empty() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Either it started writing and was interrupted, or it refused for space.
    assert!(
        out.status.code() == Some(130) || err.contains("MiB is free"),
        "{err}"
    );
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );

    // Leftovers of a killed run are what `cleanup` is for.
    std::fs::write(dir.path().join("virtperf-disk.12345"), b"x").unwrap();
    std::fs::create_dir(dir.path().join("virtperf-disk-files.12345.seq")).unwrap();
    std::fs::write(
        dir.path()
            .join("virtperf-disk-files.12345.seq")
            .join("0000000001"),
        b"",
    )
    .unwrap();
    std::fs::write(dir.path().join("keep-me"), b"x").unwrap();
    virtperf()
        .arg("disk")
        .arg(format!("--disk-dir={}", dir.path().display()))
        .args(["--disk-file-size=8M", "cleanup"])
        .assert()
        .success();
    assert!(leftovers(dir.path()).is_empty());
    assert!(dir.path().join("keep-me").exists());

    // Issue 14, item 8: only names it makes, of processes that are gone;
    // a user's look-alikes stay, and so do their contents.
    let backup = dir.path().join("virtperf-disk-files.backup");
    std::fs::create_dir(&backup).unwrap();
    std::fs::write(backup.join("thesis.tex"), b"x").unwrap();
    std::fs::write(dir.path().join("virtperf-disk.notes"), b"x").unwrap();
    let mixed = dir.path().join("virtperf-disk-files.12345.rnd");
    std::fs::create_dir(&mixed).unwrap();
    std::fs::write(mixed.join("mine.txt"), b"x").unwrap();
    let live = format!("virtperf-disk.{}", std::process::id());
    std::fs::write(dir.path().join(&live), b"x").unwrap();
    virtperf()
        .arg("disk")
        .arg(format!("--disk-dir={}", dir.path().display()))
        .args(["--disk-file-size=8M", "cleanup"])
        .assert()
        .success();
    assert!(backup.join("thesis.tex").exists());
    assert!(dir.path().join("virtperf-disk.notes").exists());
    assert!(mixed.join("mine.txt").exists());
    assert!(dir.path().join(&live).exists(), "a live run's file");
}

#[test]
fn direct_io_needs_whole_pages() {
    virtperf()
        .args(["disk", "--disk-direct", "--disk-chunk-size=1000"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--disk-chunk-size"));
}
