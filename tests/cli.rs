//! The real binary, driven as a user would: results, limits and bad input.

use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{json_of, metric, virtperf};

fn run_json(args: &[&str]) -> Value {
    let out = virtperf().args(args).arg("--json").output().unwrap();
    json_of(&out, &format!("{args:?}"))
}

#[test]
fn cpu_result_document_has_the_schema_and_a_fingerprint() {
    let doc = run_json(&["cpu", "--time=0.5", "--cpu-max-prime=2000", "run"]);
    assert_eq!(doc["schema"], "virtperf.result/1");
    assert_eq!(doc["workload"], "cpu");
    assert_eq!(doc["params"]["cpu_max_prime"], 2000);
    assert_eq!(doc["params"]["threads"], 1);
    assert!(doc["params"].get("json").is_none());
    assert!(metric(&doc, "events_per_sec") > 10.0);
    let lat = &doc["latency_ms"];
    for key in ["min", "avg", "max", "p50", "p95", "p99", "p999"] {
        assert!(lat[key].as_f64().unwrap() > 0.0, "{key}");
    }
    assert!(lat["min"].as_f64() <= lat["p50"].as_f64());
    assert!(lat["p50"].as_f64() <= lat["max"].as_f64());
    let env = &doc["env"];
    assert_eq!(env["name"], "host");
    assert!(env["cpus"].as_u64().unwrap() >= 1);
    assert_eq!(env["binary_sha256"].as_str().unwrap().len(), 64);
    assert!(!env["kernel"].as_str().unwrap().is_empty());
    let d = doc["duration_s"].as_f64().unwrap();
    assert!((0.45..1.0).contains(&d), "{d}");
}

#[test]
fn event_limit_is_exact_and_comes_first() {
    let doc = run_json(&["cpu", "--events=37", "--threads=2", "--time=60"]);
    assert_eq!(doc["events"], 37);
    let f = &doc["fairness"];
    assert!((f["events_avg"].as_f64().unwrap() - 18.5).abs() < 1e-9);
}

#[test]
fn text_summary_reads_like_sysbench() {
    virtperf()
        .args(["cpu", "--time=0.3", "--percentile=99"])
        .assert()
        .success()
        .stdout(predicate::str::contains("events per second:"))
        .stdout(predicate::str::contains("99th percentile:"))
        .stdout(predicate::str::contains("Threads fairness:"));
}

#[test]
fn old_sysbench_spelling_works() {
    virtperf()
        .args(["--test=cpu", "--cpu-max-prime=500", "--time=0.2", "run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Prime numbers limit: 500"));
}

#[test]
fn memory_modes_report_bandwidth() {
    for oper in ["read", "write", "none"] {
        let doc = run_json(&["memory", "--time=0.3", &format!("--memory-oper={oper}")]);
        assert!(metric(&doc, "mib_per_sec") > 0.0, "{oper}");
        assert!(metric(&doc, "ops_per_sec") > 0.0, "{oper}");
    }
    let rnd = run_json(&[
        "memory",
        "--time=0.3",
        "--memory-access-mode=rnd",
        "--memory-oper=read",
        "--memory-block-size=4K",
        "--threads=2",
        "--memory-scope=global",
    ]);
    assert!(metric(&rnd, "mib_per_sec") > 0.0);
}

#[test]
fn memory_total_size_bounds_the_events() {
    let doc = run_json(&[
        "memory",
        "--memory-block-size=1K",
        "--memory-total-size=1M",
        "--time=30",
    ]);
    assert_eq!(doc["events"], 1024);
}

#[test]
fn stream_reports_every_kernel() {
    let doc = run_json(&[
        "memory",
        "--memory-mode=stream",
        "--stream-array-size=4M",
        "--time=0.5",
    ]);
    for k in ["copy", "scale", "add", "triad"] {
        assert!(
            metric(&doc, &format!("stream_{k}_mib_per_sec")) > 100.0,
            "{k}"
        );
    }
    // The headline is STREAM's best rate, never below the mean.
    assert_eq!(
        metric(&doc, "mib_per_sec"),
        metric(&doc, "stream_triad_best_mib_per_sec")
    );
    for k in ["copy", "scale", "add", "triad"] {
        assert!(
            metric(&doc, &format!("stream_{k}_best_mib_per_sec"))
                >= metric(&doc, &format!("stream_{k}_mib_per_sec")),
            "{k}"
        );
    }
}

#[test]
fn mutex_empty_loops_are_not_optimised_away() {
    // 20 locks x 5,000,000 empty loops = 1e8 iterations: at one per cycle
    // that is 10 ms even at 10 GHz. A deleted loop finishes in microseconds.
    let d = run_json(&[
        "mutex",
        "--threads=1",
        "--mutex-locks=20",
        "--mutex-loops=5000000",
    ]);
    let secs = metric(&d, "total_time_s");
    assert!(secs > 0.01, "1e8 empty loops took {secs} s");
}

#[test]
fn threads_and_mutex_run() {
    let t = run_json(&[
        "threads",
        "--time=0.3",
        "--threads=2",
        "--thread-yields=100",
    ]);
    assert!(metric(&t, "events_per_sec") > 0.0);
    let m = run_json(&[
        "mutex",
        "--threads=2",
        "--mutex-locks=2000",
        "--mutex-loops=100",
    ]);
    // One event per thread, every lock counted.
    assert_eq!(m["events"], 2);
    assert_eq!(m["details"]["lock_acquisitions"], 4000);
    assert!(metric(&m, "total_time_s") > 0.0);
}

#[test]
fn report_interval_prints_interim_lines() {
    let out = virtperf()
        .args(["cpu", "--time=1.1", "--report-interval=0.5", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<_> = err.lines().filter(|l| l.contains("eps:")).collect();
    assert_eq!(lines.len(), 2, "{err}");
    // stdout stays a single JSON document.
    serde_json::from_slice::<Value>(&out.stdout).unwrap();
}

#[test]
fn warmup_is_not_measured() {
    let doc = run_json(&["cpu", "--time=0.3", "--warmup-time=0.5"]);
    let d = doc["duration_s"].as_f64().unwrap();
    assert!(d < 0.5, "warm-up leaked into the measured time: {d}");
}

#[test]
fn rate_limits_throughput() {
    let doc = run_json(&["cpu", "--cpu-max-prime=1000", "--time=1", "--rate=100"]);
    let eps = metric(&doc, "events_per_sec");
    assert!((60.0..140.0).contains(&eps), "{eps}");
}

#[test]
fn bad_input_is_refused_with_the_option_named() {
    let cases: &[(&[&str], &str)] = &[
        (&["nosuch"], "unknown workload 'nosuch'"),
        (&["cpu", "--no-such-option=1"], "--no-such-option"),
        (&["cpu", "--threads=-1"], "--threads"),
        (&["cpu", "--time=-1"], "--time"),
        (&["cpu", "--time=abc"], "--time"),
        (
            &["memory", "--memory-block-size=12Q"],
            "--memory-block-size",
        ),
        (&["memory", "--memory-block-size=12"], "power of two"),
        (&["memory", "--memory-block-size=4"], "--memory-block-size"),
        (&["memory", "--memory-oper=copy"], "read, write, none"),
        (&["cpu", "--time=0", "--events=0"], "--events"),
        (&["cpu", "fly"], "unknown command 'fly'"),
        (&[], "no workload given"),
    ];
    for (args, needle) in cases {
        virtperf()
            .args(*args)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(*needle));
    }
}

#[test]
fn help_lists_workloads_and_options() {
    virtperf()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("cpu"))
        .stdout(predicate::str::contains("--threads"));
    virtperf()
        .args(["memory", "help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--memory-block-size"))
        .stdout(predicate::str::contains("[1K]"));
}

#[test]
fn sigint_stops_a_run_with_code_130() {
    let bin = assert_cmd::cargo::cargo_bin("virtperf");
    let mut child = std::process::Command::new(bin)
        .args(["cpu", "--time=30", "--threads=2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert!(started.elapsed().as_secs() < 5);
    assert_eq!(status.code(), Some(130));
}

#[test]
fn histogram_lists_every_event() {
    let out = virtperf()
        .args(["cpu", "--events=200", "--histogram", "--cpu-max-prime=500"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let counted: u64 = text
        .split("distribution")
        .nth(1)
        .expect("a histogram section")
        .lines()
        .filter(|l| l.contains('|'))
        .map(|l| l.split_whitespace().last().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(counted, 200, "{text}");
}

#[test]
fn prepare_of_a_workload_without_files_is_a_harmless_no_op() {
    virtperf()
        .args(["cpu", "prepare"])
        .assert()
        .success()
        .stderr(predicate::str::contains("nothing to prepare"));
}

#[test]
fn microops_reports_cycles_and_nanoseconds_per_operation() {
    // A TMPDIR of the test's own: what the run leaves there is its own, not
    // another test's that runs at the same time.
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "microops",
        "--ops=getpid,cpuid,simplemath,pipe_echo,open_close",
        "--repeats=20",
    ];
    let out = virtperf()
        .env("TMPDIR", tmp.path())
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let doc = json_of(&out, &format!("{args:?}"));
    for op in ["getpid", "cpuid", "simplemath", "pipe_echo"] {
        assert!(metric(&doc, &format!("{op}_cycles")) >= 0.0, "{op}");
        assert!(doc["details"][op]["count"].as_u64() == Some(20), "{op}");
    }
    let getpid_ns = metric(&doc, "getpid_ns");
    assert!(getpid_ns > 0.0 && getpid_ns < 100_000.0, "{getpid_ns}");
    // 100,000 dependent divisions cannot take less than 50 µs.
    assert!(metric(&doc, "simplemath_ns") > 50_000.0);
    let timer = &doc["details"]["timer"];
    assert!(timer["tsc_hz"].as_f64().unwrap() > 1e8);
    assert!(timer["accuracy_pct"].as_f64().unwrap() > 99.0);
    // No temp files left behind by open_close or anything else.
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn microops_refuses_unknown_operations() {
    virtperf()
        .args(["microops", "--ops=getpid,teleport"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--ops"))
        .stderr(predicate::str::contains("page_fault"));
}

#[test]
fn an_errors_control_characters_never_reach_the_terminal() {
    // Issue 24, item 12: text from outside (a server's refusal, a store's
    // suite name, a database's message) reached the terminal unescaped.
    // An unknown suite file name carries it here.
    let out = virtperf()
        .args([
            "compare",
            "--env",
            "host",
            "--suite",
            "no\u{1b}[2Jsuch\u{7}.toml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("\\u{1b}[2J"), "{err}");
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    // `virtperf cpu run | head -1`: the pipe closes before the summary.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
        .args(["cpu", "--time=0.5", "--cpu-max-prime=2000", "run"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// One error style (issue 52, item 9): `report` in a directory with no
/// results says so and how to make some; a comparison the store lacks is
/// bad input (exit 2), said once, with the ones it holds; `--out` makes
/// missing parents as compare's does.
#[test]
fn report_errors_say_what_is_there_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = virtperf()
        .current_dir(dir.path())
        .arg("report")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no results here") && err.contains("virtperf compare"),
        "{err}"
    );
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import/sysbench-0.4-cpu.txt");
    virtperf()
        .current_dir(dir.path())
        .args(["import", "--env", "cli-old", "--out", "store"])
        .arg(&log)
        .assert()
        .success();
    let out = virtperf()
        .current_dir(dir.path())
        .args(["report", "store/5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("report:").count(), 1, "{err}");
    assert!(
        err.contains("no comparison #5 in store") && err.contains("#1 ("),
        "{err}"
    );
    let html = dir.path().join("missing/dir/r.html");
    virtperf()
        .current_dir(dir.path())
        .args(["report", "store", "--format=html", "--out"])
        .arg(&html)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));
}

/// A mistyped name gets the name it was probably meant as (issue 52, item
/// 10, and the commands and workloads alike), exit 2.
#[test]
fn a_mistyped_name_gets_a_suggestion() {
    for (args, needle) in [
        (&["envs", "--env", "dokcer"][..], "did you mean 'docker'"),
        (&["cpu", "--env=dokcer"][..], "did you mean 'docker'"),
        (&["comprae"][..], "did you mean 'compare'"),
        (&["memroy"][..], "did you mean 'memory'"),
        (&["help", "reprot"][..], "did you mean 'report'"),
    ] {
        virtperf()
            .args(args)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(needle));
    }
}

/// `virtperf help TOPIC` prints the topic's help, as `virtperf TOPIC help`
/// does (issue 52, item 8).
#[test]
fn help_topic_prints_that_topics_help() {
    for topic in ["cpu", "compare", "report", "import", "envs", "serve"] {
        let by_help = virtperf().args(["help", topic]).output().unwrap();
        let by_topic = virtperf().args([topic, "--help"]).output().unwrap();
        assert!(by_help.status.success(), "{topic}");
        assert_eq!(by_help.stdout, by_topic.stdout, "{topic}");
        let general = virtperf().arg("--help").output().unwrap();
        assert_ne!(by_help.stdout, general.stdout, "{topic}");
    }
}

/// The README's list of commands is the command table's
/// (`cli::commands::readme_list`), and every option a README command line
/// gives a command is one of that command's options.
#[test]
fn the_readme_lists_the_command_tables_commands_and_options() {
    let readme = include_str!("../README.md");
    let begin = "<!-- commands: generated from src/cli/commands.rs; tests/cli.rs checks it -->\n";
    let end = "<!-- /commands -->";
    let start = readme
        .find(begin)
        .expect("the README's command list marker")
        + begin.len();
    let stop = start + readme[start..].find(end).expect("its end marker");
    assert_eq!(
        &readme[start..stop],
        virtperf::cli::commands::readme_list(),
        "update the README's command list from cli::commands::readme_list()"
    );
    let mut checked = 0;
    let outside = format!("{}{}", &readme[..start], &readme[stop..]);
    for line in outside.lines() {
        let Some(rest) = line.trim_start().strip_prefix("virtperf ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(command) = words.next().and_then(virtperf::cli::commands::find) else {
            continue;
        };
        // A one-off workload's options after compare's are the workload's.
        for word in
            words.take_while(|w| !w.starts_with('#') && virtperf::workload::find(w).is_none())
        {
            let Some(name) = word.strip_prefix("--") else {
                continue;
            };
            let name = name.split('=').next().unwrap();
            assert!(
                command.options.iter().any(|o| o.name == name) || name == "help",
                "README: '{line}': {} has no --{name}",
                command.name
            );
            checked += 1;
        }
    }
    assert!(checked > 10, "only {checked} options checked");
}

/// Issue 52, item 11: what the docs say of the options agrees with what the
/// binary takes, each read from the registry the help is generated from.
#[test]
fn the_docs_agree_with_the_help() {
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let readme = include_str!("../README.md");
    // Every suite compare --help offers is in the README.
    for (name, _) in virtperf::suite::BUILTIN {
        assert!(
            readme.contains(&format!("--suite {name}"))
                || readme.contains(&format!("{name} suite")),
            "the README never shows --suite {name}"
        );
    }
    // The workloads docs/sysbench.md says refuse --time are those that do.
    let sysbench = flat(include_str!("../docs/sysbench.md"));
    let said = sysbench
        .split_once("are not driven by the engine and refuse `--time`")
        .map(|(before, _)| before.rsplit_once('(').expect("a list in parentheses").1)
        .expect("docs/sysbench.md says which workloads refuse --time");
    let said: Vec<&str> = said
        .split('`')
        .filter(|w| virtperf::workload::find(w).is_some())
        .collect();
    let refusing: Vec<&str> = virtperf::workload::WORKLOADS
        .iter()
        .filter(|d| !d.accepts("time"))
        .map(|d| d.name)
        .collect();
    assert_eq!(said, refusing, "docs/sysbench.md on --time");
    for w in virtperf::workload::WORKLOADS {
        let help =
            String::from_utf8(virtperf().args([w.name, "help"]).output().unwrap().stdout).unwrap();
        assert_eq!(
            help.contains("  --time="),
            w.accepts("time"),
            "{} help",
            w.name
        );
    }
    // A Lua script's required modules travel: the general help and
    // docs/lua.md say the same.
    let help = flat(&String::from_utf8(virtperf().arg("--help").output().unwrap().stdout).unwrap());
    let lua = flat(include_str!("../docs/lua.md"));
    for text in [&help, &lua] {
        assert!(
            text.contains("the modules it requires by a literal name"),
            "{text}"
        );
    }
    // Environment help lists the values of every choice.
    let env_help = String::from_utf8(
        virtperf()
            .args(["compare", "--help"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for values in ["overlay|volume|tmpfs", "bridge|host", "none|writeback"] {
        assert!(env_help.contains(values), "{values} missing:\n{env_help}");
    }
}
