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
/// command line (none at present).
const LEFT_OUT: &[(&str, &str, &str)] = &[];

/// Config files the cases below read (and scripts), written in both
/// sides' directories:
/// general options (a test's own one is passed over, as sysbench resets
/// it), a name with a blank before its `=` (not an option), a comment, a
/// list.
const CONFIG_FILES: &[(&str, &str)] = &[
    (
        "general.conf",
        "threads=2\nevents=7 # seven\n# a comment\ncpu-max-prime=500\nverbosity=3\n",
    ),
    ("spaced.conf", "threads = 2\n"),
    ("list.conf", "threads=2 # two\nevents=3,4\nbogus=1\n"),
    ("bad.conf", "threads=abc\n"),
    // Not a config file: a script whose events do nothing.
    ("nothing.lua", "function event()\nend\n"),
    // A script with options of its own, named with underscores.
    (
        "opts.lua",
        "sysbench.cmdline.options = {\n  my_flag = {\"a flag\", false},\n}\n\
         function event()\nend\n",
    ),
];

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
    for (name, text) in CONFIG_FILES {
        for dir in [theirs_dir.path(), ours_dir.path()] {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    let cases: &[&[&str]] = &[
        // --percentile=0: "percentile stats: disabled"; out of range and
        // not a number refused before the banner, and with --histogram.
        &["cpu", "--percentile=0", "--events=50", "run"],
        &["cpu", "--percentile=99", "--events=50", "run"],
        &["cpu", "--percentile=101", "run"],
        &["cpu", "--percentile=abc", "run"],
        &["cpu", "--percentile=0", "--histogram", "run"],
        &["cpu", "--time=1.5", "run"],
        // The options said before the run.
        &[
            "cpu",
            "--report-interval=5",
            "--rate=1000",
            "--events=20",
            "run",
        ],
        &["cpu", "--rand-seed=5", "--events=5", "run"],
        &["cpu", "--validate", "--events=5", "run"],
        &[
            "cpu",
            "--db-driver=nonexisting",
            "--rand-type=uniform",
            "--events=1",
            "run",
        ],
        // --debug: what each test says it does, the threads' start and
        // stop, and per-thread statistics (one thread: their order is
        // the scheduler's).
        &["cpu", "--events=10", "--debug", "run"],
        &["threads", "--events=10", "--debug", "run"],
        &[
            "mutex",
            "--mutex-num=10",
            "--mutex-locks=10",
            "--debug",
            "run",
        ],
        &["memory", "--memory-total-size=1M", "--debug", "run"],
        &["cpu", "--time=1", "--debug=on", "run"],
        &["nothing.lua", "--events=3", "--debug", "run"],
        &["cpu", "--debug=maybe", "run"],
        // --forced-shutdown: its moment said before the run; refused values.
        &[
            "cpu",
            "--time=2",
            "--forced-shutdown=1",
            "--events=10",
            "run",
        ],
        &[
            "cpu",
            "--time=20",
            "--forced-shutdown=50%",
            "--events=5",
            "run",
        ],
        &["cpu", "--time=20", "--forced-shutdown", "--events=5", "run"],
        &[
            "cpu",
            "--time=0",
            "--events=5",
            "--forced-shutdown=5",
            "run",
        ],
        &["cpu", "--forced-shutdown=abc", "run"],
        &["cpu", "--forced-shutdown=5x", "run"],
        // --thread-stack-size: a size sysbench reads as 0 is refused.
        &["cpu", "--thread-stack-size=0", "run"],
        &["cpu", "--thread-stack-size=abc", "run"],
        &["cpu", "--thread-stack-size=32K", "--events=5", "run"],
        &[
            "cpu",
            "--thread-stack-size=1M",
            "--threads=2",
            "--events=20",
            "run",
        ],
        // --report-checkpoints: refused values (the reports are in
        // tests/sysbench_cram.rs).
        &["cpu", "--report-checkpoints=x", "run"],
        &["cpu", "--report-checkpoints=1,-2", "run"],
        &["cpu", "--report-checkpoints=", "--events=5", "run"],
        // --config-file: options from a file where it stands.
        &["cpu", "--config-file=general.conf", "run"],
        &["cpu", "--events=3", "--config-file=spaced.conf", "run"],
        &["cpu", "--config-file=list.conf", "run"],
        &["cpu", "--events=3", "--config-file=bad.conf", "run"],
        &["cpu", "--events=5", "--config-file=list.conf", "run"],
        &["cpu", "--config-file=list.conf", "--events=5", "run"],
        &["cpu", "--config-file=nonexistent.conf", "--events=3", "run"],
        // --memory-hugetlb: from the HugeTLB pool, or sysbench's failure
        // where the machine reserved no huge pages.
        &[
            "memory",
            "--memory-hugetlb",
            "--memory-total-size=1M",
            "run",
        ],
        &[
            "memory",
            "--memory-hugetlb",
            "--memory-scope=local",
            "--threads=2",
            "--memory-total-size=1M",
            "run",
        ],
        &["memory", "--memory-hugetlb=maybe", "run"],
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
        // An option's name with underscores is the same option (the
        // last of both spellings wins); refused, it is quoted as typed.
        &["cpu", "--foo_bar=1", "run"],
        &["cpu", "--cpu_max_prime=x", "run"],
        &["cpu", "--cpu-max-prime=x", "run"],
        &["cpu", "--validate_x=1", "run"],
        &["fileio", "--file_test_mode=foo", "run"],
        &[
            "cpu",
            "--cpu_max_prime=5",
            "--cpu-max-prime=7",
            "--max_requests=3",
            "run",
        ],
        &["opts.lua", "--foo_bar=1", "run"],
        &["opts.lua", "--my_flag=maybe", "run"],
        &["opts.lua", "--my-flag=maybe", "run"],
        &["opts.lua", "--my_flag", "--max_requests=3", "run"],
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
        // Before seqwr below, which leaves the files shorter.
        &[
            "fileio",
            "--file-num=4",
            "--file-total-size=4M",
            "--file-test-mode=rndrw",
            "--time=2",
            "--report-checkpoints=1",
            "run",
        ],
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
fn a_forced_shutdown_stops_an_event_that_outlives_the_time() {
    // An event of 4 s in a run of 1 s: at --time plus --forced-shutdown
    // both stop with the report so far, the running event counted as
    // unfinished, exit 2.
    let Some(mut p) = common::sysbench::Pair::new() else {
        return;
    };
    p.write(
        "hang.lua",
        "ffi.cdef(\"unsigned int sleep(unsigned int seconds);\")\n\
         function event()\n  ffi.C.sleep(4)\nend\n",
    );
    let (_, ours) = p.check(step(&["hang.lua", "--time=1", "--forced-shutdown=1", "run"]).code(2));
    assert!(
        ours.stdout
            .contains("FATAL: The --max-time limit has expired, forcing shutdown...\n"),
        "{}",
        ours.stdout
    );
    p.finish();
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
