//! virtperf started as `sysbench` against Debian's sysbench 1.0.20, side by
//! side on the same command lines: the same exit code, and the same
//! standard output and standard error line for line once figures are
//! masked (`tests/common/sysbench.rs` says how).

use std::path::Path;

mod common;
use common::skip;
use common::sysbench::{masked, step, Seen};

fn run(program: &Path, args: &[&str], dir: &Path) -> Seen {
    common::sysbench::run(program, &step(args), dir)
}

/// Lines of sysbench's output that virtperf leaves out on purpose, per
/// command line: an option virtperf does not take is not offered.
const LEFT_OUT: &[(&str, &str, &str)] = &[(
    "memory help",
    "--memory-hugetlb",
    "virtperf has no HugeTLB allocation",
)];

#[test]
fn started_as_sysbench_it_answers_as_sysbench_does() {
    let real = Path::new("/usr/bin/sysbench");
    if !real.exists() {
        skip("Debian's sysbench is not installed (apt-get install sysbench)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("sysbench");
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("virtperf"), &ours).unwrap();
    // Each side runs in its own directory (fileio's files: a prepare
    // reuses files already there), sysbench's run first, then ours.
    let (theirs_dir, ours_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cases: &[&[&str]] = &[
        &[
            "cpu",
            "--cpu-max-prime=1000",
            "--events=100",
            "--threads=2",
            "run",
        ],
        &["memory", "--memory-total-size=64M", "run"],
        &[
            "memory",
            "--memory-block-size=4K",
            "--memory-oper=read",
            "--memory-total-size=32M",
            "run",
        ],
        &["threads", "--events=200", "run"],
        &["mutex", "--mutex-locks=2000", "--mutex-loops=100", "run"],
        &["--test=cpu", "--max-requests=50", "--num-threads=2", "run"],
        &["cpu"],
        &["cpu", "prepare"],
        &["cpu", "cleanup"],
        &["cpu", "foo"],
        &["cpu", "run", "extra"],
        &["cpu", "--bogus", "run"],
        &["cpu", "--cpu-max-prime=abc", "run"],
        &["nosuch", "run"],
        &["help"],
        &["--version"],
        &["cpu", "help"],
        &["memory", "help"],
        &["threads", "help"],
        &["mutex", "help"],
        &["fileio", "help"],
        &[
            "cpu",
            "--cpu-max-prime=500",
            "--events=20",
            "--cpu-max-prime=900",
            "run",
        ],
        &["memory", "--memory-total-size=8M", "--events=1", "run"],
        &["fileio", "--file-num=4", "--file-total-size=4M", "prepare"],
        &[
            "fileio",
            "--file-num=4",
            "--file-total-size=4M",
            "--file-test-mode=rndrw",
            "--events=300",
            "run",
        ],
        &[
            "fileio",
            "--file-num=4",
            "--file-total-size=4M",
            "--file-test-mode=seqrd",
            "--file-extra-flags=direct",
            "--events=100",
            "run",
        ],
        &[
            "fileio",
            "--file-num=4",
            "--file-total-size=4M",
            "--file-test-mode=seqwr",
            "--file-fsync-freq=0",
            "--events=100",
            "run",
        ],
        &["fileio", "--file-num=4", "--file-total-size=4M", "cleanup"],
        &["--verbosity=0", "cpu", "--events=10", "run"],
        &["--verbosity=2", "--max-time=1", "cpu", "--events=10", "run"],
        &[
            "--verbosity=1",
            "fileio",
            "--file-num=2",
            "--file-total-size=1M",
            "prepare",
        ],
        &[
            "--verbosity=1",
            "fileio",
            "--file-num=2",
            "--file-total-size=1M",
            "cleanup",
        ],
    ];
    let mut differ = Vec::new();
    for args in cases {
        let mut theirs = run(real, args, theirs_dir.path());
        let mine = run(&ours, args, ours_dir.path());
        let line = args.join(" ");
        for (case, text, why) in LEFT_OUT.iter().filter(|l| l.0 == line) {
            let kept: Vec<&str> = theirs
                .stdout
                .lines()
                .filter(|l| !l.contains(text))
                .collect();
            assert!(
                kept.len() < theirs.stdout.lines().count(),
                "sysbench {case} no longer prints {text}: drop it from LEFT_OUT"
            );
            eprintln!("sysbench {case}: leaving out {text} ({why})");
            theirs.stdout = kept.join("\n") + "\n";
        }
        if theirs.code != mine.code {
            differ.push(format!(
                "sysbench {line}: exit {:?}, ours {:?}",
                theirs.code, mine.code
            ));
        }
        for (stream, a, b) in [
            ("stdout", &theirs.stdout, &mine.stdout),
            ("stderr", &theirs.stderr, &mine.stderr),
        ] {
            if a != b {
                differ.push(format!(
                    "sysbench {line}: {stream} differs\n--- sysbench\n{a}--- ours\n{b}"
                ));
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn fileio_counts_requests_as_events_not_the_closing_fsyncs() {
    // sysbench: --events=150 of random writes is 150 events, whatever
    // fsyncs --file-fsync-end makes after them.
    let dir = tempfile::tempdir().unwrap();
    let fileio = |cmd: &[&str]| {
        common::output_ok(
            common::virtperf()
                .current_dir(dir.path())
                .args(["fileio", "--file-num=4", "--file-total-size=4M"])
                .args(cmd),
        )
    };
    fileio(&["prepare"]);
    let out = fileio(&["--file-test-mode=rndwr", "--events=150", "run"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("    total number of events:              150\n"),
        "{text}"
    );
    assert!(text.contains("Calling fsync() at the end of test, Enabled.\n"));
    fileio(&["cleanup"]);
}

#[test]
fn the_mask_keeps_words_and_layout() {
    // The comparison above can fail: a word, a line or a blank line apart
    // is a difference.
    assert_eq!(
        masked("sysbench 1.0.20 (x)\n\n    events per second:  5177.97\n"),
        "sysbench N ()\n\n events per second: N\n"
    );
    assert_ne!(masked("CPU speed:\n"), masked("CPU speed:\n\n"));
    assert_ne!(masked("Threads started!\n"), masked("Threads started\n"));
}
