//! virtperf started as `sysbench` against Debian's sysbench 1.0.20, side by
//! side on the same command lines: the same exit code, and the same
//! standard output and standard error line for line once figures are
//! masked (`tests/common/sysbench.rs` says how).

mod common;
use common::sysbench::{masked, step, Pair, Step};

/// Config files the cases below read (and scripts), written in both
/// sides' directories:
/// general options (a test's own one is passed over, as sysbench resets
/// it), a name with a blank before its `=` (not an option), a comment, a
/// list.
const FILES: &[(&str, &str)] = &[
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
        "sysbench.cmdline.options = {\n  my_flag = {\"a flag\", false},\n  my_count = {\"a count\", 5},\n\
         my_size = {\"a size\", \"2K\", sysbench.cmdline.ARG_SIZE},\n}\n\
         function event()\nend\n\
         -- The count and the size in KiB as rows of marks: figures are masked\n\
         -- in the comparison.\n\
         function prepare()\n  print(\"count \" .. string.rep(\"#\", sysbench.opt.my_count))\n\
         print(\"size \" .. string.rep(\"#\", sysbench.opt.my_size / 1024))\nend\n",
    ),
];

/// sysbench's line naming the call of its OLTP script that failed, and
/// why virtperf's built-in OLTP tests do not print it.
const SCRIPT_LINE: &str = "/oltp_common.lua:";
const NO_SCRIPT: &str = "virtperf runs its OLTP tests without sysbench's Lua scripts";

/// The command lines both sides run, in order (fileio's prepare before
/// its runs and its cleanup), each with sysbench's exit code.
fn cases() -> Vec<Step> {
    let ok = |args: &[&str]| step(args);
    let refused = |args: &[&str]| step(args).code(1);
    // sysbench fails where the machine reserved no huge pages.
    let on_this_machine = |args: &[&str]| step(args).code_of_the_machine();
    vec![
        // --percentile=0: "percentile stats: disabled"; out of range and
        // not a number refused before the banner, and with --histogram.
        ok(&["cpu", "--percentile=0", "--events=50", "run"]),
        ok(&["cpu", "--percentile=99", "--events=50", "run"]),
        refused(&["cpu", "--percentile=101", "run"]),
        refused(&["cpu", "--percentile=abc", "run"]),
        refused(&["cpu", "--percentile=0", "--histogram", "run"]),
        // In the reports as the run goes, and for a script.
        ok(&[
            "cpu",
            "--percentile=0",
            "--time=3",
            "--report-interval=2",
            "run",
        ]),
        ok(&["nothing.lua", "--percentile=0", "--events=3", "run"]),
        refused(&["cpu", "--time=1.5", "run"]),
        // The options said before the run.
        ok(&[
            "cpu",
            "--report-interval=5",
            "--rate=1000",
            "--events=20",
            "run",
        ]),
        ok(&["cpu", "--rand-seed=5", "--events=5", "run"]),
        ok(&["cpu", "--validate", "--events=5", "run"]),
        ok(&[
            "cpu",
            "--db-driver=nonexisting",
            "--rand-type=uniform",
            "--events=1",
            "run",
        ]),
        // --debug: what each test says it does, the threads' start and
        // stop, and per-thread statistics (one thread: their order is
        // the scheduler's).
        ok(&["cpu", "--events=10", "--debug", "run"]),
        ok(&["threads", "--events=10", "--debug", "run"]),
        ok(&[
            "mutex",
            "--mutex-num=10",
            "--mutex-locks=10",
            "--debug",
            "run",
        ]),
        ok(&["memory", "--memory-total-size=1M", "--debug", "run"]),
        ok(&["cpu", "--time=1", "--debug=on", "run"]),
        ok(&["nothing.lua", "--events=3", "--debug", "run"]),
        refused(&["cpu", "--debug=maybe", "run"]),
        // --forced-shutdown: its moment said before the run; refused values.
        ok(&[
            "cpu",
            "--time=2",
            "--forced-shutdown=1",
            "--events=10",
            "run",
        ]),
        ok(&[
            "cpu",
            "--time=20",
            "--forced-shutdown=50%",
            "--events=5",
            "run",
        ]),
        ok(&["cpu", "--time=20", "--forced-shutdown", "--events=5", "run"]),
        ok(&[
            "cpu",
            "--time=0",
            "--events=5",
            "--forced-shutdown=5",
            "run",
        ]),
        refused(&["cpu", "--forced-shutdown=abc", "run"]),
        refused(&["cpu", "--forced-shutdown=5x", "run"]),
        // --thread-stack-size: a size sysbench reads as 0 is refused.
        refused(&["cpu", "--thread-stack-size=0", "run"]),
        refused(&["cpu", "--thread-stack-size=abc", "run"]),
        ok(&["cpu", "--thread-stack-size=32K", "--events=5", "run"]),
        ok(&[
            "cpu",
            "--thread-stack-size=1M",
            "--threads=2",
            "--events=20",
            "run",
        ]),
        // --report-checkpoints: refused values (the reports are in
        // tests/sysbench_cram.rs).
        refused(&["cpu", "--report-checkpoints=x", "run"]),
        refused(&["cpu", "--report-checkpoints=1,-2", "run"]),
        ok(&["cpu", "--report-checkpoints=", "--events=5", "run"]),
        // --config-file: options from a file where it stands.
        ok(&["cpu", "--config-file=general.conf", "run"]),
        ok(&["cpu", "--events=3", "--config-file=spaced.conf", "run"]),
        ok(&["cpu", "--config-file=list.conf", "run"]),
        refused(&["cpu", "--events=3", "--config-file=bad.conf", "run"]),
        ok(&["cpu", "--events=5", "--config-file=list.conf", "run"]),
        ok(&["cpu", "--config-file=list.conf", "--events=5", "run"]),
        ok(&["cpu", "--config-file=nonexistent.conf", "--events=3", "run"]),
        // --memory-hugetlb: from the HugeTLB pool, or sysbench's failure
        // where the machine reserved no huge pages.
        on_this_machine(&[
            "memory",
            "--memory-hugetlb",
            "--memory-total-size=1M",
            "run",
        ]),
        on_this_machine(&[
            "memory",
            "--memory-hugetlb",
            "--memory-scope=local",
            "--threads=2",
            "--memory-total-size=1M",
            "run",
        ]),
        refused(&["memory", "--memory-hugetlb=maybe", "run"]),
        ok(&[
            "cpu",
            "--cpu-max-prime=1000",
            "--events=100",
            "--threads=2",
            "run",
        ]),
        ok(&["memory", "--memory-total-size=64M", "run"]),
        ok(&[
            "memory",
            "--memory-block-size=4K",
            "--memory-oper=read",
            "--memory-total-size=32M",
            "run",
        ]),
        ok(&["threads", "--events=200", "run"]),
        ok(&["mutex", "--mutex-locks=2000", "--mutex-loops=100", "run"]),
        ok(&["--test=cpu", "--max-requests=50", "--num-threads=2", "run"]),
        refused(&["cpu"]),
        refused(&["cpu", "prepare"]),
        refused(&["cpu", "cleanup"]),
        refused(&["cpu", "foo"]),
        refused(&["cpu", "run", "extra"]),
        refused(&["cpu", "--bogus", "run"]),
        refused(&["cpu", "--cpu-max-prime=abc", "run"]),
        // An option's name with underscores is the same option (the
        // last of both spellings wins); refused, it is quoted as typed.
        refused(&["cpu", "--foo_bar=1", "run"]),
        refused(&["cpu", "--cpu_max_prime=x", "run"]),
        refused(&["cpu", "--cpu-max-prime=x", "run"]),
        refused(&["cpu", "--validate_x=1", "run"]),
        refused(&["fileio", "--file_test_mode=foo", "run"]),
        ok(&[
            "cpu",
            "--cpu_max_prime=5",
            "--cpu-max-prime=7",
            "--max_requests=3",
            "run",
        ]),
        refused(&["opts.lua", "--foo_bar=1", "run"]),
        refused(&["opts.lua", "--my_flag=maybe", "run"]),
        refused(&["opts.lua", "--my-flag=maybe", "run"]),
        ok(&["opts.lua", "--my_flag", "--max_requests=3", "run"]),
        // A number option takes whatever C's strtod makes of it: x is 0,
        // 5abc is 5, 0x10 is 16.
        ok(&["opts.lua", "--my_count=x", "prepare"]),
        ok(&["opts.lua", "--my_count=5abc", "prepare"]),
        ok(&["opts.lua", "--my-count=0x10", "prepare"]),
        ok(&["opts.lua", "prepare"]),
        // A size option as sysbench reads a size: digits and a K/M/G/T
        // suffix, the rest ignored; 0 for anything else, never refused.
        ok(&["opts.lua", "--my_size=5KB", "prepare"]),
        ok(&["opts.lua", "--my_size=1.5M", "prepare"]),
        ok(&["opts.lua", "--my-size=x", "prepare"]),
        ok(&["opts.lua", "--my_size=3k2", "prepare"]),
        // A --db-driver sysbench has no driver for: its OLTP scripts fail
        // as the command starts (for a run, in each thread, once the
        // options are said; one thread here: how many print before sysbench
        // exits is a race); virtperf's built-in tests say the same but for
        // the line naming the script's call. Debian's script itself fails
        // alike on both sides.
        refused(&["oltp_read_write", "--db-driver=foo", "run"]).left_out(SCRIPT_LINE, NO_SCRIPT),
        refused(&[
            "oltp_point_select",
            "--db-driver=foo",
            "--rand-seed=3",
            "--report-interval=1",
            "run",
        ])
        .left_out(SCRIPT_LINE, NO_SCRIPT),
        refused(&["oltp_insert", "--db-driver=foo", "prepare"]).left_out(SCRIPT_LINE, NO_SCRIPT),
        refused(&["--test=oltp_delete", "--db-driver=foo", "cleanup"])
            .left_out(SCRIPT_LINE, NO_SCRIPT),
        refused(&["--verbosity=1", "oltp_read_write", "--db-driver=foo", "run"])
            .left_out(SCRIPT_LINE, NO_SCRIPT),
        refused(&[
            "/usr/share/sysbench/oltp_read_write.lua",
            "--db-driver=foo",
            "run",
        ]),
        refused(&[
            "/usr/share/sysbench/oltp_read_write.lua",
            "--db-driver=foo",
            "prepare",
        ]),
        refused(&["nosuch", "run"]),
        refused(&["help"]),
        ok(&["--version"]),
        ok(&["cpu", "help"]),
        ok(&["memory", "help"]),
        ok(&["threads", "help"]),
        ok(&["mutex", "help"]),
        ok(&["fileio", "help"]),
        ok(&[
            "cpu",
            "--cpu-max-prime=500",
            "--events=20",
            "--cpu-max-prime=900",
            "run",
        ]),
        ok(&["memory", "--memory-total-size=8M", "--events=1", "run"]),
        ok(&["fileio", "--file-num=4", "--file-total-size=4M", "prepare"]),
        // Before seqwr below, which leaves the files shorter.
        ok(&[
            "fileio",
            "--file-num=4",
            "--file-total-size=4M",
            "--file-test-mode=rndrw",
            "--time=2",
            "--report-checkpoints=1",
            "run",
        ]),
        ok(&[
            "fileio",
            "--file-num=4",
            "--file-total-size=4M",
            "--file-test-mode=rndrw",
            "--events=300",
            "run",
        ]),
        ok(&[
            "fileio",
            "--file-num=4",
            "--file-total-size=4M",
            "--file-test-mode=seqrd",
            "--file-extra-flags=direct",
            "--events=100",
            "run",
        ]),
        ok(&[
            "fileio",
            "--file-num=4",
            "--file-total-size=4M",
            "--file-test-mode=seqwr",
            "--file-fsync-freq=0",
            "--events=100",
            "run",
        ]),
        ok(&["fileio", "--file-num=4", "--file-total-size=4M", "cleanup"]),
        ok(&["--verbosity=0", "cpu", "--events=10", "run"]),
        ok(&["--verbosity=2", "--max-time=1", "cpu", "--events=10", "run"]),
        ok(&[
            "--verbosity=1",
            "fileio",
            "--file-num=2",
            "--file-total-size=1M",
            "prepare",
        ]),
        ok(&[
            "--verbosity=1",
            "fileio",
            "--file-num=2",
            "--file-total-size=1M",
            "cleanup",
        ]),
    ]
}

#[test]
fn started_as_sysbench_it_answers_as_sysbench_does() {
    let Some(mut p) = Pair::new() else {
        return;
    };
    for (name, text) in FILES {
        p.write(name, text);
    }
    for case in cases() {
        p.check(case);
    }
    p.finish();
}

#[test]
fn a_forced_shutdown_stops_an_event_that_outlives_the_time() {
    // An event of 4 s in a run of 1 s: at --time plus --forced-shutdown
    // both stop with the report so far, the running event counted as
    // unfinished, exit 2.
    let Some(mut p) = Pair::new() else {
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
