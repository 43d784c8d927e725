//! sysbench Lua scripts on virtperf's runtime: our own script exercising
//! the API (tests/lua/api.lua), sysbench's own OLTP scripts as Debian
//! installs them (/usr/share/sysbench) giving the same queries per
//! transaction as the built-in tests on SQLite, and bad scripts: syntax
//! and runtime errors named with file and line, exit 1, nothing left
//! behind; an event that never returns stopped after --time; prepared
//! statements' values and errors through the FFI path (tests/lua/prepared.lua).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

mod common;
use common::{json_of, skip, virtperf};

fn api_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lua/api.lua")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    virtperf().current_dir(dir).args(args).output().unwrap()
}

/// virtperf under the name `sysbench`, in `dir`.
fn persona(dir: &Path) -> PathBuf {
    let link = dir.join("sysbench");
    if !link.exists() {
        std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("virtperf"), &link).unwrap();
    }
    link
}

#[test]
fn our_script_exercises_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let script = api_script();
    let script = script.to_str().unwrap();
    let dirflag = format!("--oltp-dir={d}");

    // help lists the script's options as sysbench does.
    let out = run_in(dir.path(), &[script, "help"]);
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert!(stdout.contains("api.lua options:\n"), "{stdout}");
    assert!(
        stdout.contains("  --parts=[LIST,...] a list [x,y]\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  --loud[=on|off]    a flag [off]\n"),
        "{stdout}"
    );
    // Issue 52, item 11: and the database options every script takes.
    assert!(stdout.contains("--db-driver"), "{stdout}");

    // prepare (a global function), a custom command, a parallel one.
    let out = run_in(dir.path(), &[script, &dirflag, "--rows=30", "prepare"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("prepared 30\n"), "{stdout}");
    let out = run_in(dir.path(), &[script, &dirflag, "--threads=3", "wave"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    for tid in 0..3 {
        assert!(
            stdout.contains(&format!("wave from thread {tid}\n")),
            "{stdout}"
        );
    }

    // run: two threads, 60 events, the script's options from the command
    // line in either spelling, its own cumulative report.
    let out = run_in(
        dir.path(),
        &[
            script,
            &dirflag,
            "--rows=30",
            "--label=hello",
            "--loud",
            "--parts=a,b,c",
            "--count=7",
            "--threads=2",
            "--events=60",
            "--rand_type=uniform",
            "run",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("opt rows=30 label=hello loud=true parts=a+b+c count=7\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("command run argv0 virtperf script "),
        "{stdout}"
    );
    assert!(stdout.contains("rand ok "), "{stdout}");
    assert!(stdout.contains("version 1.0.20\n"), "{stdout}");
    let done: u64 = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("thread_done "))
        .map(|l| l.split(' ').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(done, 60, "{stdout}");
    assert!(stdout.contains("\ndone\n"), "{stdout}");
    // Per event: 4 reads, 1 write, and the 'other' of sb_counter_inc.
    assert!(
        stdout.contains("cumulative events=60 reads=240 writes=60 other=60\n"),
        "{stdout}"
    );
    // report_csv then report_default, from the hook.
    assert!(
        stdout.lines().any(|l| l.split(',').count() == 10),
        "{stdout}"
    );
    // The cumulative report counts no thread running, as sysbench's does.
    assert!(stdout.contains(" thds: 0 tps: "), "{stdout}");
    // The script reports itself: no General statistics.
    assert!(!stdout.contains("General statistics"), "{stdout}");

    // --json: the run's document with the SQL figures.
    let out = run_in(
        dir.path(),
        &[
            script,
            &dirflag,
            "--rows=30",
            "--events=20",
            "--json",
            "run",
        ],
    );
    let doc = json_of(&out, "api.lua --json");
    assert_eq!(doc["schema"], "virtperf.result/1");
    assert_eq!(doc["workload"], "api.lua");
    assert_eq!(doc["events"], 20);
    assert_eq!(doc["details"]["queries_per_transaction"], 6.0);
    assert!(common::metric(&doc, "tps") > 0.0);

    let out = run_in(dir.path(), &[script, &dirflag, "cleanup"]);
    assert!(out.status.success());
    assert!(text(&out).0.contains("cleaned\n"));
    // The database file went with its last table.
    assert_eq!(common::entries(dir.path()), Vec::<String>::new());
}

#[test]
fn the_same_seed_draws_the_same_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("draw.lua");
    std::fs::write(
        &script,
        "function event()\n  print(sysbench.rand.default(1, 1000000), sysbench.rand.zipfian(1, 100), sysbench.rand.string('@@@@@@'))\nend\n",
    )
    .unwrap();
    let s = script.to_str().unwrap();
    let draw = |seed: &str| {
        let out = run_in(dir.path(), &[s, seed, "--events=5", "--verbosity=0", "run"]);
        assert!(out.status.success(), "{:?}", text(&out));
        text(&out).0
    };
    let a = draw("--rand-seed=42");
    assert_eq!(a.lines().count(), 5, "{a}");
    assert_eq!(a, draw("--rand-seed=42"));
    assert_ne!(a, draw("--rand-seed=43"));
}

/// The OLTP tests' names, as sysbench's scripts and virtperf's workloads.
const OLTP: &[&str] = &[
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_delete",
    "oltp_insert",
];

fn queries_per_transaction(out: &Output, what: &str) -> f64 {
    let doc = json_of(out, what);
    doc["details"]["queries_per_transaction"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: {doc}"))
}

#[test]
fn sysbench_oltp_scripts_match_the_built_in_tests_on_sqlite() {
    let scripts = Path::new("/usr/share/sysbench");
    if !scripts.join("oltp_common.lua").exists() {
        skip("sysbench's Lua scripts are not installed (apt-get install sysbench)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = format!("--oltp-dir={}", dir.path().display());
    let common_args = ["--db-driver=sqlite", &d, "--tables=2", "--table-size=500"];
    for test in OLTP {
        let script = scripts.join(format!("{test}.lua"));
        let script = script.to_str().unwrap();
        let with = |extra: &[&str]| -> Vec<String> {
            common_args
                .iter()
                .chain(extra)
                .map(|s| s.to_string())
                .collect()
        };
        let prepare = virtperf()
            .current_dir(dir.path())
            .arg(script)
            .args(with(&["prepare"]))
            .output()
            .unwrap();
        assert!(
            prepare.status.success(),
            "{test} prepare: {:?}",
            text(&prepare)
        );
        let ours = virtperf()
            .current_dir(dir.path())
            .arg(script)
            .args(with(&["--events=150", "--json", "run"]))
            .output()
            .unwrap();
        let script_qpt = queries_per_transaction(&ours, &format!("{test}.lua"));
        // The built-in test on the tables the script made.
        let builtin = virtperf()
            .current_dir(dir.path())
            .arg(test)
            .args(with(&["--events=150", "--json", "run"]))
            .output()
            .unwrap();
        let builtin_qpt = queries_per_transaction(&builtin, test);
        assert_eq!(script_qpt, builtin_qpt, "{test}: script vs built-in");
        let cleanup = virtperf()
            .current_dir(dir.path())
            .arg(script)
            .args(with(&["cleanup"]))
            .output()
            .unwrap();
        assert!(
            cleanup.status.success(),
            "{test} cleanup: {:?}",
            text(&cleanup)
        );
        assert_eq!(common::entries(dir.path()), Vec::<String>::new(), "{test}");
    }
}

#[test]
fn bad_scripts_name_file_line_and_message_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sb = persona(dir.path());
    let cases: &[(&str, &str, &str)] = &[
        (
            "syntax.lua",
            "function event()\n  local x = = 1\nend\n",
            "syntax.lua:2: unexpected symbol near '='",
        ),
        (
            "runtime.lua",
            "function thread_init()\n  con = sysbench.sql.driver():connect()\nend\nfunction event()\n  con:query('SELECT 1')\n  error('boom')\nend\n",
            "`thread_run' function failed: ./runtime.lua:6: boom",
        ),
        (
            "unknown.lua",
            "function event()\n  sysbench.nosuch(1)\nend\n",
            "./unknown.lua:2: sysbench.nosuch is not part of the sysbench API",
        ),
        (
            "noevent.lua",
            "function thread_init() end\n",
            "cannot find the event() function in ./noevent.lua",
        ),
    ];
    for (name, body, message) in cases {
        let db = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), body).unwrap();
        let script = format!("./{name}");
        let dbflag = format!("--oltp-dir={}", db.path().display());
        for program in [sb.clone(), assert_cmd::cargo::cargo_bin("virtperf")] {
            let out = std::process::Command::new(&program)
                .current_dir(dir.path())
                // The persona's default driver is sysbench's, mysql.
                .args([
                    script.as_str(),
                    "--db-driver=sqlite",
                    &dbflag,
                    "--events=3",
                    "run",
                ])
                .output()
                .unwrap();
            // sysbench prints its FATAL lines on standard output, and so
            // does the persona; virtperf on standard error.
            let (stdout, stderr) = text(&out);
            let said = if program == sb { stdout } else { stderr };
            assert_eq!(out.status.code(), Some(1), "{name}: {said}");
            assert!(said.contains(message), "{name}: {said}");
            assert!(!said.contains("stack traceback"), "{name}: {said}");
            // The connection's SQLite file went with the failed run.
            assert_eq!(common::entries(db.path()), Vec::<String>::new(), "{name}");
        }
    }
    // Refused command lines, in sysbench's words as the persona. (A script
    // that declares no options of its own is given unknown ones without a
    // word, as in sysbench.)
    std::fs::write(
        dir.path().join("ok.lua"),
        "sysbench.cmdline.options = { x = {'an option', 1} }\nfunction event() end\n",
    )
    .unwrap();
    let refused: &[(&[&str], &str)] = &[
        (
            &["./ok.lua", "--bogus=1", "run"],
            "invalid option: --bogus=1\n",
        ),
        (
            &["./ok.lua", "prepare"],
            "'ok.lua' test does not implement the 'prepare' command.\n",
        ),
        (&["./ok.lua", "frobnicate"], "Unknown command: frobnicate\n"),
    ];
    for (args, message) in refused {
        let out = std::process::Command::new(&sb)
            .current_dir(dir.path())
            .args(*args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&out).1, *message, "{args:?}");
    }
    let out = run_in(dir.path(), &["./ok.lua", "--bogus=1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("--bogus"), "{:?}", text(&out));
}

#[test]
fn an_event_that_never_returns_is_stopped_after_time() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spin.lua"),
        "function event()\n  while true do end\nend\n",
    )
    .unwrap();
    let started = Instant::now();
    let out = run_in(dir.path(), &["./spin.lua", "--time=1", "run"]);
    let took = started.elapsed();
    assert!(!out.status.success());
    assert!(
        text(&out).1.contains("The --max-time limit has expired"),
        "{:?}",
        text(&out)
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn prepared_statements_take_every_value_and_error_through_the_ffi_path() {
    // tests/lua/prepared.lua runs each value through the FFI path and
    // through the connection's execute method, asserting they agree; here
    // the values are checked against what execute always gave (SQLite's
    // typeof, byte length and hex of each), and the FFI path must have
    // taken every one of them ("fell back 0").
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lua/prepared.lua");
    let dirflag = format!("--oltp-dir={}", dir.path().display());
    let out = run_in(
        dir.path(),
        &[script.to_str().unwrap(), &dirflag, "--events=1", "run"],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let want = [
        // 42, -7, 2^53, 1e16, -0: integers.
        "value 1 integer 2 3432\n",
        "value 2 integer 2 2d37\n",
        "value 3 integer 16 393030373139393235343734\n",
        "value 4 integer 17 313030303030303030303030\n",
        "value 5 integer 1 30\n",
        // 0.5, 1e-7, 2^63, 1e300, inf, -inf, nan: text, as Rust prints them.
        "value 6 text 3 302e35\n",
        "value 7 text 9 302e30303030303031\n",
        "value 8 text 19 393232333337323033363835\n",
        "value 9 text 301 313030303030303030303030\n",
        "value 10 text 3 696e66\n",
        "value 11 text 4 2d696e66\n",
        "value 12 text 3 4e614e\n",
        // true, false: 1 and 0.
        "value 13 integer 1 31\n",
        "value 14 integer 1 30\n",
        // "", "a\0b", UTF-8, 1200 bytes: whole.
        "value 15 text 0 \n",
        "value 16 text 3 610062\n",
        "value 17 text 10 68c3a96c6c6f20e29c93\n",
        "value 18 text 1200 787978797879787978797879\n",
        "ffi executes fell back 0\n",
        // sysbench 0.5's: 2.9 bound as 2, -3.5 as -3, a nil as NULL.
        "legacy 2 integer two text\n",
        "legacy -3 integer nil null\n",
        "fatal SQL error, errno = 1555, state = '': UNIQUE constraint failed: unique_v.id\n",
        "ignorable errno 1555 last_error 2\n",
        // Not UTF-8, a table, and two on the closed connection.
        "fell back 4\n",
        "again 42\n",
    ];
    for line in want {
        assert!(stdout.contains(line), "{line:?} in {stdout}");
    }
}

fn shipped_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lua/shipped.lua")
}

/// The containers a virtperf process named after its pid `pid`
/// (`virtperf-PID-...`) that are still there.
fn containers_of(pid: u32) -> Vec<String> {
    let out = std::process::Command::new("docker")
        .args(["ps", "-aq", "--filter"])
        .arg(format!("name=^virtperf-{pid}-"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Runs virtperf with `args` in `dir` to its end; its output, and whether
/// it left a container of its own behind.
fn run_leaving(dir: &Path, args: &[&std::ffi::OsStr]) -> (Output, Vec<String>) {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
        .current_dir(dir)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    (out, containers_of(pid))
}

#[test]
fn a_script_runs_in_a_container_and_comes_back_as_a_result() {
    if !common::engine_ok("docker") {
        return;
    }
    let script = shipped_script();
    let args: Vec<&std::ffi::OsStr> = [script.as_os_str()]
        .into_iter()
        .chain(
            [
                "--loops=500",
                "--events=200",
                "--env",
                "docker",
                "--json",
                "run",
            ]
            .map(std::ffi::OsStr::new),
        )
        .collect();
    let (out, left) = run_leaving(Path::new(env!("CARGO_MANIFEST_DIR")), &args);
    assert!(left.is_empty(), "containers left behind: {left:?}");
    let doc = json_of(&out, "shipped.lua --env docker");
    assert_eq!(doc["schema"], "virtperf.result/1");
    assert_eq!(doc["workload"], "shipped.lua");
    assert_eq!(doc["env"]["kind"], "docker");
    assert_eq!(doc["events"], 200);
    assert_eq!(doc["params"]["loops"], 500.0, "{doc}");
    assert!(common::metric(&doc, "events_per_sec") > 0.0);
    assert!(common::metric(&doc, "latency_avg_ms") >= 0.0);

    // The modules it requires go with it, theirs too (a dotted name from
    // a directory); a name computed at run time cannot be, and the error
    // says so.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(
        dir.path().join("sub/inner.lua"),
        "return { two = function() return 2 end }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("helper.lua"),
        "local inner = require \"sub.inner\"\nreturn { n = function() return inner.two() - 1 end }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("needs.lua"),
        "sysbench.cmdline.options = { computed = {'require a computed name', false} }\n\
         local helper = require('helper')\n\
         function thread_init()\n\
           if sysbench.opt.computed then local m = 'hel' .. 'per2'; require(m) end\n\
         end\n\
         function event() assert(helper.n() == 1) end\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("helper2.lua"), "return {}\n").unwrap();
    let (there, left) = run_leaving(
        dir.path(),
        &[
            "./needs.lua",
            "--events=3",
            "--env",
            "docker",
            "--json",
            "run",
        ]
        .map(std::ffi::OsStr::new),
    );
    assert!(left.is_empty(), "containers left behind: {left:?}");
    let doc = json_of(&there, "needs.lua --env docker");
    assert_eq!(doc["events"], 3, "{doc}");
    let (there, left) = run_leaving(
        dir.path(),
        &[
            "./needs.lua",
            "--computed=on",
            "--events=3",
            "--env",
            "docker",
            "run",
        ]
        .map(std::ffi::OsStr::new),
    );
    assert!(left.is_empty(), "containers left behind: {left:?}");
    let (_, stderr) = text(&there);
    assert_eq!(there.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("module 'helper2' not found") && stderr.contains("by a literal name"),
        "{stderr}"
    );

    // sysbench's own OLTP scripts require oltp_common, from
    // /usr/share/sysbench: they run in a container on SQLite.
    let point_select = Path::new("/usr/share/sysbench/oltp_point_select.lua");
    if !point_select.exists() {
        skip("sysbench's scripts are not installed (Debian package sysbench)");
        return;
    }
    let (out, left) = run_leaving(
        dir.path(),
        &[
            point_select.as_os_str(),
            std::ffi::OsStr::new("--db-driver=sqlite"),
            std::ffi::OsStr::new("--tables=1"),
            std::ffi::OsStr::new("--table-size=100"),
            std::ffi::OsStr::new("--events=50"),
            std::ffi::OsStr::new("--env"),
            std::ffi::OsStr::new("docker"),
            std::ffi::OsStr::new("--json"),
            std::ffi::OsStr::new("run"),
        ],
    );
    assert!(left.is_empty(), "containers left behind: {left:?}");
    let doc = json_of(&out, "oltp_point_select.lua --env docker");
    assert_eq!(doc["workload"], "oltp_point_select.lua");
    assert_eq!(doc["events"], 50, "{doc}");
    assert_eq!(doc["details"]["queries_per_transaction"], 1.0, "{doc}");
}

#[test]
fn compare_takes_a_script_for_host_and_docker() {
    if !common::engine_ok("docker") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = shipped_script();
    let out_dir = dir.path().join("out");
    let mut args: Vec<&std::ffi::OsStr> = [
        "compare", "--repeat", "2", "--env", "host", "--env", "docker", "--format", "json", "--out",
    ]
    .map(std::ffi::OsStr::new)
    .to_vec();
    args.extend([out_dir.as_os_str(), script.as_os_str()]);
    args.extend(["--loops=500", "--time=0.3"].map(std::ffi::OsStr::new));
    let (out, left) = run_leaving(dir.path(), &args);
    assert!(left.is_empty(), "containers left behind: {left:?}");
    assert!(out.status.success(), "{:?}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries = report["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{report}");
    let text = entries[0].to_string();
    assert!(text.contains("shipped.lua"), "{text}");
    let metric = entries[0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "events_per_sec")
        .unwrap_or_else(|| panic!("no events_per_sec: {text}"));
    for env in ["host", "docker"] {
        let per_env = metric["per_env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["env"] == env)
            .unwrap_or_else(|| panic!("{env} has no events_per_sec: {metric}"));
        let samples = per_env["samples"].as_array().unwrap();
        assert_eq!(samples.len(), 2, "{env}: {per_env}");
        assert!(
            samples.iter().all(|v| v.as_f64().unwrap() > 0.0),
            "{per_env}"
        );
    }
}

#[test]
fn a_script_too_big_to_ship_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::from("function event() end\n");
    while body.len() <= 1 << 20 {
        body.push_str("-- padding padding padding padding padding padding padding\n");
    }
    std::fs::write(dir.path().join("big.lua"), &body).unwrap();
    for args in [
        &["./big.lua", "--env", "docker", "run"][..],
        &["compare", "--env", "host", "./big.lua"][..],
    ] {
        let out = run_in(dir.path(), args);
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.contains("big.lua") && stderr.contains("at most 1048576 bytes"),
            "{stderr}"
        );
    }
    // On the host it is no job's cargo: it runs.
    let out = run_in(dir.path(), &["./big.lua", "--events=1", "--json", "run"]);
    json_of(&out, "big.lua on the host");
    // A script's other commands are not an environment's.
    std::fs::write(dir.path().join("ok.lua"), "function event() end\n").unwrap();
    let out = run_in(dir.path(), &["./ok.lua", "--env", "host", "prepare"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("give run"), "{:?}", text(&out));
}

#[test]
fn hooks_report_intermediate_figures_and_see_restarted_events() {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lua/hooks.lua");
    let script = script.to_str().unwrap();
    let d = format!("--oltp-dir={}", dir.path().display());
    let restarts_and_calls = |text: &str| -> (u64, u64) {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("restarts "))
            .unwrap_or_else(|| panic!("no restarts line: {text}"));
        let words: Vec<&str> = line.split(' ').collect();
        (words[0].parse().unwrap(), words[2].parse().unwrap())
    };

    // Every restarted event went through before_restart_event: two
    // restarts per event, one of them an ignored SQL error.
    let out = run_in(
        dir.path(),
        &[
            script,
            &d,
            "--own-report=off",
            "--events=5",
            "--json",
            "run",
        ],
    );
    let doc = json_of(&out, "hooks.lua --json");
    assert_eq!(doc["events"], 5);
    assert_eq!(doc["details"]["ignored_errors"], 5, "{doc}");
    assert_eq!(restarts_and_calls(&text(&out).1), (10, 15));

    // The script's own interim reports, every second.
    let out = run_in(
        dir.path(),
        &[script, &d, "--time=2.5", "--report-interval=1", "run"],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let interims: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("interim "))
        .collect();
    assert_eq!(interims.len(), 2, "{stdout}");
    assert!(interims[0].starts_with("interim t=1 events="), "{stdout}");
    assert!(interims[1].starts_with("interim t=2 events="), "{stdout}");
    // sysbench.report_default from inside the hook, in its words.
    assert!(
        stdout.contains("[ 1s ] thds: 1 tps: ") && stdout.contains(" err/s "),
        "{stdout}"
    );
    let (restarts, calls) = restarts_and_calls(&stdout);
    assert!(
        calls > 0 && calls % 3 == 0 && restarts == calls / 3 * 2,
        "{stdout}"
    );

    // Without the hook: sysbench's default line, with the SQL figures.
    let out = run_in(
        dir.path(),
        &[
            script,
            &d,
            "--own-report=off",
            "--time=1.5",
            "--report-interval=1",
            "run",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("[ 1s ] "))
        .unwrap_or_else(|| panic!("no interim line: {stdout}"));
    assert!(
        line.starts_with("[ 1s ] thds: 1 tps: ")
            && line.contains(" qps: ")
            && line.contains(" (r/w/o: ")
            && line.contains(" lat (ms,95%): ")
            && line.contains(" err/s: ")
            && line.ends_with(" reconn/s: 0.00"),
        "{line}"
    );
    assert!(!stdout.contains("interim "), "{stdout}");

    // A script without a database: the engine's line.
    std::fs::write(
        dir.path().join("nap.lua"),
        "function event() ffi.C.usleep(10000) end\n",
    )
    .unwrap();
    let out = run_in(
        dir.path(),
        &["./nap.lua", "--time=1.5", "--report-interval=1", "run"],
    );
    let (stdout, _) = text(&out);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("[ 1s ] thds: 1 eps: ")),
        "{stdout}"
    );
    // The hook's failure names it and fails the run.
    std::fs::write(
        dir.path().join("badhook.lua"),
        "function event() ffi.C.usleep(10000) end\nsysbench.hooks.report_intermediate = function() error('no report') end\n",
    )
    .unwrap();
    let out = run_in(
        dir.path(),
        &["./badhook.lua", "--time=1.5", "--report-interval=1", "run"],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out).1;
    assert!(
        stderr.contains("`report_intermediate' function failed") && stderr.contains("no report"),
        "{stderr}"
    );
    assert_eq!(
        common::entries(dir.path()).len(),
        2,
        "only the scripts stay"
    );
}

/// A script's own secret options (issue 53, item 4) reach neither the
/// result's `params` nor anything `--json` prints: the one secret test
/// applies to options no list names.
#[test]
fn a_scripts_own_secrets_stay_out_of_its_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("secret.lua"),
        "sysbench.cmdline.options = {\n\
         \x20  api_password = {\"a password\", \"\"},\n\
         \x20  token_secret = {\"a token\", \"\"},\n\
         \x20  api_user = {\"a user\", \"\"},\n\
         }\n\
         function event() end\n",
    )
    .unwrap();
    let out = run_in(
        dir.path(),
        &[
            "./secret.lua",
            "--api-password=hunter2",
            "--token-secret=s3cr3t",
            "--api-user=alice",
            "--events=5",
            "--json",
            "run",
        ],
    );
    let doc = json_of(&out, "secret.lua --json");
    let (stdout, stderr) = text(&out);
    for secret in ["hunter2", "s3cr3t"] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stdout}{stderr}"
        );
    }
    let params = doc["params"].as_object().unwrap();
    assert!(!params.contains_key("api_password") && !params.contains_key("token_secret"));
    assert_eq!(params["api_user"], "alice", "{params:?}");
}
