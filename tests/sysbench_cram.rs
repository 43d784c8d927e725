//! sysbench 1.0.20's regression suite (its cram files, `tests/t/*.t` in
//! its source) retold: one test per .t file, named after it, running the
//! same kind of command lines through Debian's sysbench and through
//! virtperf started as `sysbench`, compared on exit code and both streams
//! with figures masked (`tests/common/sysbench.rs`). Where a .t file feeds
//! an inline Lua script, the script here is this project's own, exercising
//! the same API. The .t files needing a MySQL or PostgreSQL server run
//! against private servers, each side in a database of its own; a .t file
//! not retold would be listed in `NOT_HERE` with the reason. Differences
//! are stated where they occur (`differs`), each failing once it is gone.

mod common;
use common::sysbench::{grep, step, Pair, Step};

/// The files of sysbench 1.0.20's suite (`tests/t/`), by name.
const SUITE: &[&str] = &[
    "1st",
    "api_basic",
    "api_histogram",
    "api_legacy_basic",
    "api_legacy_rand",
    "api_legacy_sql",
    "api_rand",
    "api_reports",
    "api_sql_mysql",
    "api_sql_pgsql",
    "cmd_cleanup",
    "cmd_help",
    "cmd_prepare",
    "cmd_run",
    "cmdline",
    "commands",
    "drivers",
    "drv_mysql",
    "drv_pgsql",
    "help_drv_mysql",
    "help_drv_pgsql",
    "opt_help",
    "opt_histogram",
    "opt_rate",
    "opt_report_checkpoints",
    "opt_report_interval",
    "opt_version",
    "script_bulk_insert_mysql",
    "script_bulk_insert_pgsql",
    "script_oltp_delete_mysql",
    "script_oltp_delete_pgsql",
    "script_oltp_help",
    "script_oltp_insert_mysql",
    "script_oltp_insert_pgsql",
    "script_oltp_point_select_mysql",
    "script_oltp_point_select_pgsql",
    "script_oltp_read_write_mysql",
    "script_oltp_read_write_pgsql",
    "script_select_random_mysql",
    "script_select_random_pgsql",
    "test_cpu",
    "test_fileio",
    "test_memory",
    "test_mutex",
    "test_threads",
    "tests",
];

/// What of sysbench's suite this file does not retell, and why: a prefix
/// of .t names, or a part of one.
const NOT_HERE: &[(&str, &str)] = &[];

/// Text between the line starting with `from` and the next empty line
/// (sed -n '/from/,/^$/p').
fn section(text: &str, from: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        inside |= line.starts_with(from);
        if inside {
            out.push_str(line);
            out.push('\n');
            if line.is_empty() {
                break;
            }
        }
    }
    out
}

#[test]
fn first() {
    // 1st.t: `sysbench --help` succeeds (its text is opt_help's).
    let Some(mut p) = Pair::new() else { return };
    p.check(step(&["--help"]).filter(|_| String::new()));
    p.finish();
}

#[test]
fn commands() {
    let Some(mut p) = Pair::new() else { return };
    p.check(step(&["--help"]).filter(|t| grep(t, "Commands")));
    p.finish();
}

#[test]
fn tests() {
    let Some(mut p) = Pair::new() else { return };
    p.check(step(&["--help"]).filter(|t| section(t, "Compiled-in tests:")));
    p.finish();
}

#[test]
fn drivers() {
    let Some(mut p) = Pair::new() else { return };
    // sysbench's drivers, each with a drv_*.t of its own; virtperf takes
    // --db-driver=sqlite too, and does not list it here.
    let (_, ours) =
        p.check(step(&["--help"]).filter(|t| section(t, "Compiled-in database drivers:")));
    // (Seen as masked: runs of spaces are one.)
    assert_eq!(
        ours.stdout,
        "Compiled-in database drivers:\n mysql - MySQL driver\n pgsql - PostgreSQL driver\n\n"
    );
    p.check(
        step(&[
            "--db-driver=nonexisting",
            "/usr/share/sysbench/oltp_read_write.lua",
            "cleanup",
        ])
        .code(1),
    );
    p.check(
        step(&[
            "--db-driver=nonexisting",
            "/usr/share/sysbench/oltp_read_write.lua",
            "run",
        ])
        .code(1),
    );
    p.write("q.lua", "function event()\n  db_query(\"SELECT 1\")\nend\n");
    p.check(step(&["--db-driver=nonexisting", "q.lua", "--events=1", "run"]).code(1));
    // A test that never asks for the driver runs.
    p.check(step(&[
        "--db-driver=nonexisting",
        "cpu",
        "--events=1",
        "run",
    ]));
    p.finish();
}

#[test]
fn opt_help() {
    let Some(mut p) = Pair::new() else { return };
    // The part between the drivers and the tests depends on the build;
    // help_drv_* look at it. Here, the whole text too.
    p.check(step(&["--help"]).filter(|t| {
        let mut out = String::new();
        let mut skipping = false;
        for line in t.lines() {
            skipping |= line.starts_with("Compiled-in database drivers:");
            if !skipping {
                out.push_str(line);
                out.push('\n');
            }
            skipping &= !line.starts_with("Compiled-in tests:");
        }
        out
    }));
    p.check(step(&["--help"]));
    p.finish();
}

#[test]
fn help_drv_mysql() {
    let Some(mut p) = Pair::new() else { return };
    let (_, ours) = p.check(step(&["--help"]).filter(|t| grep(t, "--db-driver")));
    assert!(ours.stdout.ends_with(" [mysql]\n"), "{}", ours.stdout);
    p.check(step(&["--help"]).filter(|t| section(t, "mysql options:")));
    p.finish();
}

#[test]
fn help_drv_pgsql() {
    let Some(mut p) = Pair::new() else { return };
    p.check(step(&["--help"]).filter(|t| section(t, "pgsql options:")));
    p.finish();
}

#[test]
fn opt_version() {
    let Some(mut p) = Pair::new() else { return };
    let (theirs, _) = p.check(step(&["--version"]));
    assert_eq!(theirs.stdout, "sysbench N\n");
    p.finish();
}

#[test]
fn opt_rate() {
    // A rate no worker can serve fills the event queue: sysbench gives up.
    let Some(mut p) = Pair::new() else { return };
    p.check(step(&["--rate=2000000000", "cpu", "run", "--verbosity=1"]).code(1));
    p.finish();
}

/// sysbench's oltp_read_write.lua on MySQL's dry run (no server: every
/// call succeeds unrun) for 3 seconds, with `extra`.
fn dry_run(extra: &[&str]) -> Step {
    let mut args = vec![
        "/usr/share/sysbench/oltp_read_write.lua",
        "--db-driver=mysql",
        "--mysql-dry-run",
        "--time=3",
        "--events=0",
    ];
    args.extend_from_slice(extra);
    args.push("run");
    step(&args)
}

#[test]
fn opt_report_interval() {
    let Some(mut p) = Pair::new() else { return };
    p.check(dry_run(&["--report-interval=1"]).filter(|t| grep(t, "[ 2s ]")));
    p.check(step(&["cpu", "--report-interval=1", "--time=2", "run"]).filter(|t| grep(t, "[ 1s ]")));
    p.finish();
}

#[test]
fn opt_report_checkpoints() {
    let Some(mut p) = Pair::new() else { return };
    let (theirs, _) = p.check(dry_run(&["--report-checkpoints=1,2"]).filter(|t| {
        t.lines()
            .filter(|l| l.contains("Checkpoint report") || l.contains("SQL statistics"))
            .map(|l| format!("{l}\n"))
            .collect()
    }));
    assert_eq!(
        theirs.stdout,
        "[ Ns ] Checkpoint report:\nSQL statistics:\n[ Ns ] Checkpoint report:\nSQL statistics:\nSQL statistics:\n"
    );
    let (theirs, _) = p.check(
        step(&["cpu", "--report-checkpoints=1", "--time=2", "run"])
            .filter(|t| grep(t, "Checkpoint report")),
    );
    assert_eq!(theirs.stdout, "[ Ns ] Checkpoint report:\n");
    // The whole text: each checkpoint's full report, then the last part's.
    p.check(step(&["cpu", "--report-checkpoints=1", "--time=2", "run"]));
    p.finish();
}

#[test]
fn opt_histogram() {
    let Some(mut p) = Pair::new() else { return };
    // Thread 1 sleeps twice as long as thread 0: two rows of one event.
    p.write(
        "two_naps.lua",
        "local ffi = require('ffi')\n\
         ffi.cdef('int usleep(unsigned int);')\n\
         function event()\n  ffi.C.usleep(100000 * (sysbench.tid + 1))\nend\n",
    );
    p.check(step(&[
        "--histogram",
        "two_naps.lua",
        "--events=2",
        "--threads=2",
        "run",
    ]));
    p.finish();
}

#[test]
fn api_histogram() {
    let Some(mut p) = Pair::new() else { return };
    let script = "local h = sysbench.histogram.new(400, 2, 50)\n\
                  for _, v in ipairs({3, 3, 3, 7.5, 20, 1, 80, 49.9}) do h:update(v) end\n\
                  h:print()\n";
    p.check(step(&[]).stdin(script));
    p.write("hist.lua", script);
    p.check(step(&["--verbosity=0", "hist.lua"]));
    p.finish();
}

/// A script printing which hook runs, with the thread id it gets.
const HOOKS: &str = "\
local function say(what, id) print(what .. ' ' .. tostring(id)) end
function init(id) say('init', id) end
function prepare(id) say('prepare', id) end
function cleanup(id) say('cleanup', id) end
function help(id) say('help', id) end
function thread_init(id) say('thread_init', id) end
function event(id) say('event', id) end
function thread_done(id) say('thread_done', id) end
function done(id) say('done', id) end
";

#[test]
fn api_basic() {
    let Some(mut p) = Pair::new() else { return };
    let base = [
        "--verbosity=0",
        "--events=2",
        "--db-driver=mysql",
        "api.lua",
    ];
    let with = |more: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(more);
        step(&args)
    };
    p.write("api.lua", HOOKS);
    for command in ["prepare", "run", "cleanup", "help"] {
        p.check(with(&[command]));
    }
    p.write(
        "api.lua",
        "function event()\n  print(sysbench.version, sysbench.version_string)\n\
         print(sysbench.cmdline.script_path)\nend\n",
    );
    p.check(with(&["--events=1", "run"]));
    // A syntax error, then a script without event().
    p.write("api.lua", "local x = \n");
    p.check(with(&["run"]).code(1));
    p.write("api.lua", "function not_an_event() end\n");
    p.check(with(&["run"]).code(1));
    // What event() returns: false and nil go on (to --events), anything
    // else ends the thread after that event.
    p.write(
        "api.lua",
        "sysbench.cmdline.options = { ret = {'what event() returns', 'nil'} }\n\
         local n = 0\n\
         local values = { zero = 0, one = 1, yes = true, tbl = {}, no = false }\n\
         function event()\n  n = n + 1\n  print('event ' .. n)\n\
         if n == 3 then error('three events') end\n\
         return values[sysbench.opt.ret]\nend\n",
    );
    for ret in ["zero", "one", "yes", "tbl", "no", "nil"] {
        p.check(with(&["run", &format!("--ret={ret}")]));
    }
    p.finish();
}

#[test]
fn api_legacy_basic() {
    let Some(mut p) = Pair::new() else { return };
    p.write("legacy.lua", HOOKS);
    let base = [
        "--verbosity=0",
        "--max-requests=2",
        "--db-driver=mysql",
        "--test=legacy.lua",
    ];
    for command in ["prepare", "run", "cleanup", "help"] {
        let mut args = base.to_vec();
        args.push(command);
        p.check(step(&args));
    }
    // The global `test` names the script.
    p.write("legacy.lua", "function prepare() print(test) end\n");
    let mut args = base.to_vec();
    args.push("prepare");
    p.check(step(&args));
    p.finish();
}

/// The legacy sb_rand_* functions, checked for range and shape.
const RAND: &str = "\
function event()
  local function within(v, lo, hi) return v >= lo and v <= hi and v == math.floor(v) end
  print('sb_rand', within(sb_rand(5, 7), 5, 7))
  print('sb_rand_uniq', within(sb_rand_uniq(0, 4294967295), 0, 4294967295))
  print('sb_rnd', within(sb_rnd(), 0, math.huge))
  print('sb_rand_str', string.match(sb_rand_str('q#@-##'), '^q%d%l%-%d%d$') ~= nil)
  print('sb_rand_uniform', within(sb_rand_uniform(10, 12), 10, 12))
  print('sb_rand_gaussian', within(sb_rand_gaussian(10, 12), 10, 12))
  print('sb_rand_special', within(sb_rand_special(10, 12), 10, 12))
end
";

/// sb_rand_uniq over a wide range: one number an event.
const UNIQ: &str = "function event()\n\
  local v = sb_rand_uniq(10, 1500000000)\n\
  assert(v >= 10 and v <= 1500000000, 'out of range')\n\
  print(v)\nend\n";

/// How many distinct lines (sort | uniq | wc -l).
fn distinct(text: &str) -> String {
    let lines: std::collections::BTreeSet<&str> = text.lines().collect();
    format!("{}\n", lines.len())
}

#[test]
fn api_rand() {
    let Some(mut p) = Pair::new() else { return };
    p.write("rand.lua", RAND);
    p.write("uniq.lua", UNIQ);
    let (theirs, _) = p.check(step(&["--verbosity=0", "--events=1", "rand.lua", "run"]));
    assert!(!theirs.stdout.contains("false"), "{}", theirs.stdout);
    let (theirs, _) = p.check(
        step(&["--verbosity=0", "--events=20000", "uniq.lua", "run"]).filter(|t| {
            assert_eq!(distinct(t), "20000\n", "sb_rand_uniq repeated a value");
            distinct(t)
        }),
    );
    assert_eq!(theirs.stdout, "N\n");
    p.finish();
}

#[test]
fn api_legacy_rand() {
    let Some(mut p) = Pair::new() else { return };
    p.write("rand.lua", RAND);
    p.write("uniq.lua", UNIQ);
    p.check(step(&[
        "--verbosity=0",
        "--max-requests=1",
        "--test=rand.lua",
        "run",
    ]));
    p.check(
        step(&[
            "--verbosity=0",
            "--max-requests=20000",
            "--test=uniq.lua",
            "run",
        ])
        .filter(|t| distinct(&t.replace("WARNING", "\nWARNING"))),
    );
    p.finish();
}

#[test]
fn api_reports() {
    let Some(mut p) = Pair::new() else { return };
    for report in ["report_default", "report_csv", "report_json"] {
        p.write(
            "reports.lua",
            &format!(
                "ffi.cdef('int usleep(unsigned int);')\n\
                 function event() ffi.C.usleep(2000) end\n\
                 sysbench.hooks.report_intermediate = sysbench.{report}\n\
                 sysbench.hooks.report_cumulative = sysbench.{report}\n"
            ),
        );
        p.check(
            step(&[
                "reports.lua",
                "--time=3",
                "--report-interval=2",
                "--verbosity=1",
                "run",
            ])
            .filter(threads_named),
        );
    }
    p.finish();
}

/// The reports with a count of running threads of 0 spelt out, so the
/// mask of figures keeps it: the cumulative report has none running.
fn threads_named(text: &str) -> String {
    text.lines()
        .map(|l| {
            let l = l
                .replace("thds: 0 ", "thds: none ")
                .replace(r#""threads": 0,"#, r#""threads": none,"#);
            match l.split_once(',') {
                Some((time, rest)) if rest.starts_with("0,") => {
                    format!("{time},none,{}\n", &rest[2..])
                }
                _ => format!("{l}\n"),
            }
        })
        .collect()
}

/// cmd_<command>.t: the command alone is no test; a script defining the
/// function gets it called.
fn command_alone_and_in_a_script(command: &str, script: &str) {
    let Some(mut p) = Pair::new() else { return };
    p.check(step(&[command]).code(1));
    p.write("cmd.lua", script);
    if command == "run" {
        p.check(step(&["--verbosity=0", "cmd.lua", command]));
    } else {
        p.check(step(&["cmd.lua", command]));
    }
    p.finish();
}

#[test]
fn cmd_cleanup() {
    command_alone_and_in_a_script("cleanup", "function cleanup() print('cleaning') end\n");
}

#[test]
fn cmd_help() {
    command_alone_and_in_a_script("help", "function help() print('helping') end\n");
}

#[test]
fn cmd_prepare() {
    command_alone_and_in_a_script("prepare", "function prepare() print('preparing') end\n");
}

#[test]
fn cmd_run() {
    command_alone_and_in_a_script(
        "run",
        "function thread_run() print('thread_run instead of events') end\n\
         function event() end\nprint('loaded')\n",
    );
}

#[test]
fn cmdline() {
    let Some(mut p) = Pair::new() else { return };
    // Syntax: an unknown test, a stray argument, an option alone (the
    // script then comes from standard input), a test without command.
    p.check(step(&["nosuch", "run"]).code(1));
    p.check(step(&["nosuch", "run", "extra"]).code(1));
    p.check(step(&["--unknown"]).stdin(""));
    p.check(step(&["fileio"]).code(1));
    p.check(step(&["--help", "nosuch"]).filter(|t| grep(t, "Usage:")));
    p.check(step(&[]).stdin("print('from stdin')\n"));
    p.check(
        step(&["run"])
            .stdin("print('body')\nfunction event() end\n")
            .code(1),
    );
    p.write(
        "body.lua",
        "#!/usr/bin/env sysbench\nprint('body')\nfunction event() print('an event') end\n",
    );
    p.check(step(&["--events=1", "body.lua"]));
    p.check(step(&["--events=1", "body.lua", "run"]));

    // Options a script declares: each type, defaults, help and values.
    p.write(
        "opts.lua",
        r#"sysbench.cmdline.options = {
  s_plain = {"a string"},
  s_default = {"a string with a default", "dflt"},
  s_typed = {"a typed string", "typed", sysbench.cmdline.ARG_STRING},
  b_off = {"a flag, off", false},
  b_on = {"a flag, on", true},
  b_typed = {"a typed flag", nil, sysbench.cmdline.ARG_BOOL},
  i_plain = {"a number", 42},
  i_typed = {"a typed number", nil, sysbench.cmdline.ARG_INT},
  d_typed = {"a double", 2.5, sysbench.cmdline.ARG_DOUBLE},
  d_plain = {"a fraction", 0.75},
  l_plain = {"a list", {"x", "y", "z"}},
  l_typed = {"a typed list", nil, sysbench.cmdline.ARG_LIST},
  ["with-dash"] = {"a dashed name", "dashed"}
}
local function show(where)
  print(where)
  local o = sysbench.opt
  for _, k in ipairs({"s_plain", "s_default", "s_typed", "b_off", "b_on", "b_typed",
      "i_plain", "i_typed", "d_typed", "d_plain", "with_dash"}) do
    print(k, o[k])
  end
  print(type(o.l_plain), type(o.l_typed))
end
function help() show("help") sysbench.cmdline.print_test_options() end
function init() show("init") end
function thread_init() show("thread_init") end
function event() show("event") end
function thread_done() show("thread_done") end
function done() show("done") end
"#,
    );
    p.check(step(&["opts.lua"]));
    p.check(step(&["opts.lua", "help"]));
    p.check(step(&["opts.lua", "prepare"]).code(1));
    p.check(step(&["--no-such-option=1", "opts.lua", "prepare"]).code(1));
    p.check(step(&["opts.lua", "--events=1", "run"]));
    p.check(step(&[
        "opts.lua",
        "--i-typed=7",
        "--s-plain=given",
        "--events=1",
        "run",
    ]));
    p.check(step(&["opts.lua", "cleanup"]).code(1));
    p.write("empty.lua", "\n");
    p.check(step(&["empty.lua", "help"]).code(1));
    p.write(
        "badopts.lua",
        "sysbench.cmdline.options = { {} }\nfunction help() end\n",
    );
    p.check(step(&["badopts.lua", "help"]).code(1));
    p.check(step(&["fileio", "--no-such-option", "prepare"]).code(1));

    // Custom commands.
    p.check(step(&[]).stdin("sysbench.cmdline.commands = { c = 'not a table' }\n"));
    p.check(step(&[]).stdin("sysbench.cmdline.commands = { c = { undefined_fn } }\n"));
    p.write(
        "cmds.lua",
        "ffi.cdef('unsigned int sleep(unsigned int);')\n\
         function one() print('one on thread ' .. sysbench.tid) end\n\
         function each() ffi.C.sleep(0) print('each on a thread') end\n\
         function prep() print('prep on a thread') end\n\
         sysbench.cmdline.commands = {\n\
           one = { one },\n\
           each = { each, sysbench.cmdline.PARALLEL_COMMAND },\n\
           prepare = { prep, sysbench.cmdline.PARALLEL_COMMAND }\n\
         }\n",
    );
    p.check(step(&["--threads=2", "cmds.lua", "one"]));
    // Two threads print at once: sysbench's print writes each string and
    // its newline apart, so the newlines of the two lines may come out
    // together ("prep on a threadprep on a thread\n\n", seen in CI). The
    // text is compared without them.
    let joined = |t: &str| t.replace('\n', "");
    p.check(step(&["--threads=2", "cmds.lua", "each"]).filter(joined));
    p.check(step(&["--threads=2", "cmds.lua", "prepare"]).filter(joined));
    p.check(step(&["--threads=2", "cmds.lua", "nosuch"]).code(1));

    // argv and command.
    p.write(
        "argv.lua",
        "local function show()\n\
           local a = sysbench.cmdline.argv\n\
           print(a[0], table.concat(a, ' '), sysbench.cmdline.command)\n\
         end\n\
         function prepare() show() end\nshow()\n",
    );
    p.check(step(&["--first", "--second=2", "argv.lua"]));
    p.check(step(&["--first", "--second=2", "argv.lua", "prepare"]));
    p.check(step(&["-"]).stdin("print('dash')\n"));
    p.check(
        step(&["-", "prepare"]).stdin("function prepare() print('not called') end\nprint('top')\n"),
    );

    // A test named as a module on LUA_PATH, and its errors.
    p.write(
        "as_module.lua",
        "print('module body')\nfunction event() print('module event') end\n",
    );
    let module = |more: &[&str]| {
        let mut args = vec!["as_module", "--verbosity=0"];
        args.extend_from_slice(more);
        step(&args).env("LUA_PATH", "$DIR/?.lua;;")
    };
    p.check(module(&[]));
    p.check(module(&["--events=1", "run"]));
    p.write(
        "as_module.lua",
        "print('module body')\nfunction event() end\nerror('raised on purpose')\n",
    );
    p.check(module(&[]).code(1));
    p.check(module(&["--events=1", "run"]).code(1));

    // Flag values.
    p.write(
        "flag.lua",
        "sysbench.cmdline.options = { the_flag = {'a flag', false} }\n\
         function prepare() print(sysbench.opt.the_flag) end\n",
    );
    for value in ["on", "off", "true", "false", "1", "0"] {
        let arg = format!("--the-flag={value}");
        p.check(step(&["--verbosity=0", "flag.lua", &arg, "prepare"]));
    }
    for value in ["2", "maybe"] {
        let arg = format!("--the-flag={value}");
        p.check(step(&["--verbosity=0", "flag.lua", &arg, "prepare"]).code(1));
    }
    p.finish();
}

/// test_<name>.t for cpu, mutex and threads: help, prepare and cleanup
/// refused, a run.
fn builtin(args: &[&str]) {
    let Some(mut p) = Pair::new() else { return };
    for (command, code) in [("help", 0), ("prepare", 1), ("run", 0), ("cleanup", 1)] {
        let mut line = args.to_vec();
        line.push(command);
        p.check(step(&line).code(code));
    }
    p.finish();
}

#[test]
fn test_cpu() {
    builtin(&["cpu", "--cpu-max-prime=1000", "--events=100", "--threads=2"]);
}

#[test]
fn test_mutex() {
    builtin(&["mutex", "--events=10", "--threads=2"]);
}

#[test]
fn test_threads() {
    builtin(&["threads", "--events=100", "--threads=2"]);
}

#[test]
fn test_memory() {
    let Some(mut p) = Pair::new() else { return };
    let args = [
        "memory",
        "--memory-block-size=4K",
        "--memory-total-size=256M",
        "--events=1",
        "--time=0",
        "--threads=2",
    ];
    let with = |more: &[&str]| {
        let mut line = args.to_vec();
        line.extend_from_slice(more);
        step(&line)
    };
    p.check(with(&["help"]));
    p.check(with(&["prepare"]).code(1));
    for size in ["-1", "0", "3", "9"] {
        let arg = format!("--memory-block-size={size}");
        p.check(with(&[&arg, "run"]).code(1));
    }
    for scope in ["global", "local"] {
        for oper in ["read", "write"] {
            let (s, o) = (
                format!("--memory-scope={scope}"),
                format!("--memory-oper={oper}"),
            );
            p.check(with(&[&s, &o, "run"]));
        }
    }
    p.check(with(&["cleanup"]).code(1));
    p.finish();
}

#[test]
fn test_fileio() {
    let Some(mut p) = Pair::new() else { return };
    let base = ["fileio", "--file-num=4", "--file-total-size=32M"];
    let with = |more: &[&str]| {
        let mut line = base.to_vec();
        line.extend_from_slice(more);
        step(&line)
    };
    p.check(with(&["prepare"]));
    let (theirs, ours) = p.listings();
    assert_eq!(theirs, ours);
    p.check(with(&["run"]).code(1));
    for mode in ["rndrw", "rndrd", "seqrd", "rndwr"] {
        let arg = format!("--file-test-mode={mode}");
        p.check(with(&["--events=150", &arg, "run"]));
    }
    p.check(
        with(&[
            "--events=150",
            "--file-test-mode=rndwr",
            "--validate",
            "run",
        ])
        .filter(|t| grep(t, "Validation")),
    );
    p.check(with(&["--events=150", "--file-test-mode=foo", "run"]).code(1));
    p.check(with(&["cleanup"]));
    let (theirs, ours) = p.listings();
    assert_eq!((theirs.len(), ours.len()), (0, 0));
    // Files missing, then too short for the sizes given.
    p.check(with(&["--file-test-mode=rndrw", "--verbosity=2", "run"]).code(1));
    p.check(with(&["--verbosity=2", "--file-total-size=1M", "prepare"]));
    p.check(
        with(&[
            "--verbosity=2",
            "--file-test-mode=rndwr",
            "--events=1",
            "run",
        ])
        .code(1),
    );
    p.check(with(&["--verbosity=2", "cleanup"]));
    p.check(with(&["--verbosity=2", "--file-num=8", "prepare"]));
    p.check(
        with(&[
            "--verbosity=2",
            "--file-test-mode=rndwr",
            "--events=1",
            "run",
        ])
        .code(1),
    );
    p.check(with(&["--verbosity=2", "--file-num=8", "cleanup"]));
    // Sequential writes recreate short files.
    p.check(with(&["--verbosity=2", "--file-total-size=1M", "prepare"]));
    p.check(with(&[
        "--verbosity=2",
        "--file-test-mode=seqwr",
        "--events=1",
        "run",
    ]));
    p.check(with(&["--verbosity=2", "cleanup"]));
    // Blocks that do not divide the files.
    let odd = [
        "--verbosity=2",
        "--file-total-size=1M",
        "--file-num=128",
        "--file-block-size=4097",
        "--events=2",
    ];
    for command in [
        &["prepare"][..],
        &["--file-test-mode=seqrd", "run"],
        &["--file-test-mode=rndrd", "run"],
        &["cleanup"],
    ] {
        let mut more = odd.to_vec();
        more.extend_from_slice(command);
        p.check(with(&more));
    }
    // Extra open flags, files reused.
    for flags in ["", "sync", "dsync", "dsync,sync"] {
        let arg = format!("--file-extra-flags={flags}");
        p.check(with(&[
            "--file-total-size=16K",
            "--file-num=1",
            &arg,
            "prepare",
        ]));
    }
    p.check(with(&["--file-total-size=16K", "--file-num=1", "cleanup"]));
    // --file-fsync-freq=0 still syncs at the end unless told not to.
    let timed = [
        "fileio",
        "--file-total-size=160K",
        "--file-num=10",
        "--file-test-mode=seqwr",
        "--file-fsync-freq=0",
        "--file-fsync-end=1",
        "--events=0",
        "--time=1",
    ];
    p.check(step(&[&timed[..], &["prepare"]].concat()));
    p.check(step(&[&timed[..], &["run"]].concat()));
    p.check(step(
        &[&timed[..], &["--file-fsync-end=off", "run"]].concat(),
    ));
    p.check(step(&[&timed[..], &["cleanup"]].concat()));
    p.finish();
}

#[test]
fn script_oltp_help() {
    let Some(mut p) = Pair::new() else { return };
    p.check(step(&["/usr/share/sysbench/oltp_read_write.lua", "help"]));
    p.finish();
}

/// sysbench runs an OLTP test from its Lua script in /usr/share/sysbench;
/// virtperf as sysbench runs its built-in test of that name: the same text
/// from prepare, run and cleanup on PostgreSQL (each side in a database
/// of its own on one private server).
#[test]
fn the_built_in_oltp_tests_print_sysbench_text() {
    let Some(mut p) = Pair::new() else { return };
    let Some(pg) = common::dbservers::Postgres::start() else {
        common::skip("PostgreSQL is not installed (Debian package postgresql)");
        return;
    };
    for side in ["theirs", "ours"] {
        pg.psql(
            "postgres",
            &format!("CREATE DATABASE sb_{side} OWNER sbtest"),
        );
    }
    let mut db = pg.args();
    db.push("--pgsql-user=sbtest".into());
    db.push("--pgsql-db=sb_$SIDE".into());
    for test in ["oltp_point_select", "oltp_read_write", "oltp_insert"] {
        let with =
            |extra: &[&str]| on_server(test, &db, &[&["--tables=2", "--table-size=200"], extra]);
        p.check(with(&["prepare"]));
        let (_, ours) = p.check(with(&["--events=40", "run"]));
        assert!(
            ours.stdout.contains("SQL statistics:") && ours.stdout.contains("transactions:"),
            "{}",
            ours.stdout
        );
        p.check(with(&["--threads=2", "--events=40", "run"]));
        p.check(with(&["cleanup"]));
    }
    p.finish();
}

/// A step running `head` (a test or a script) with a server's driver
/// options `db`, then each part of `rest` in turn.
fn on_server(head: &str, db: &[String], rest: &[&[&str]]) -> Step {
    let mut args: Vec<&str> = vec![head];
    args.extend(db.iter().map(String::as_str));
    for part in rest {
        args.extend_from_slice(part);
    }
    step(&args)
}

/// A private server for the script_* files, with a database for each side
/// (`--<driver>-db=sb_$SIDE`), and what each side left in its database.
enum Server {
    Pg(common::dbservers::Postgres),
    My(common::dbservers::Mariadb),
}

impl Server {
    /// Started, or None having said why the test skips.
    fn start(driver: &str) -> Option<Server> {
        let server = if driver == "pgsql" {
            common::dbservers::Postgres::start().map(Server::Pg)
        } else {
            common::dbservers::Mariadb::start().map(Server::My)
        };
        let Some(server) = server else {
            common::skip(&format!(
                "no {driver} server is installed (Debian packages postgresql, mariadb-server)"
            ));
            return None;
        };
        for side in ["theirs", "ours"] {
            match &server {
                Server::Pg(pg) => {
                    pg.psql(
                        "postgres",
                        &format!("CREATE DATABASE sb_{side} OWNER sbtest"),
                    );
                }
                Server::My(my) => {
                    my.sql(&format!("CREATE DATABASE sb_{side}"));
                    my.sql(&format!("GRANT ALL ON sb_{side}.* TO sbtest@'%'"));
                }
            }
        }
        Some(server)
    }

    /// The driver's options for `sysbench`, each side to its database.
    fn args(&self) -> Vec<String> {
        let (mut args, db) = match self {
            Server::Pg(pg) => (pg.args(), "--pgsql-db=sb_$SIDE"),
            Server::My(my) => (my.args(), "--mysql-db=sb_$SIDE"),
        };
        args.push(db.into());
        args
    }

    /// The tables in `side`'s database with their columns and indexes, as
    /// the server describes them (db_show_table's part of the .t files).
    fn schema(&self, side: &str) -> String {
        match self {
            Server::Pg(pg) => pg.psql(
                &format!("sb_{side}"),
                "SELECT table_name, column_name, data_type, character_maximum_length, \
                 is_nullable, column_default FROM information_schema.columns \
                 WHERE table_schema = 'public' ORDER BY table_name, ordinal_position; \
                 SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = 'public' \
                 ORDER BY tablename, indexname",
            ),
            Server::My(my) => my.sql(&format!(
                "SELECT table_name, column_name, column_type, is_nullable, column_default, \
                 extra, column_key FROM information_schema.columns \
                 WHERE table_schema = 'sb_{side}' ORDER BY table_name, ordinal_position; \
                 SELECT table_name, index_name, column_name, non_unique \
                 FROM information_schema.statistics WHERE table_schema = 'sb_{side}' \
                 ORDER BY table_name, index_name, seq_in_index; \
                 SELECT table_name, engine FROM information_schema.tables \
                 WHERE table_schema = 'sb_{side}' ORDER BY table_name"
            )),
        }
    }

    /// Both sides' databases hold the same tables, columns and indexes;
    /// `tables` of them (sbtestN), or none.
    #[track_caller]
    fn same_schema(&self, tables: usize) {
        let (theirs, ours) = (self.schema("theirs"), self.schema("ours"));
        assert_eq!(
            theirs.replace("sb_theirs", "sb_X"),
            ours.replace("sb_ours", "sb_X")
        );
        for n in 1..=8 {
            let there =
                ours.contains(&format!("sbtest{n}|")) || ours.contains(&format!("sbtest{n}\t"));
            assert_eq!(there, n <= tables, "sbtest{n} in:\n{ours}");
        }
    }
}

/// Standard output not compared (a parallel command's lines come in any
/// order, as the .t files send them to /dev/null).
fn nothing(_: &str) -> String {
    String::new()
}

/// One of sysbench's OLTP scripts as script_oltp_common.sh runs it:
/// prepare, prewarm and cleanup of 8 tables on one thread, then in
/// parallel, a run of 100 events, and prepare/cleanup with
/// --create-secondary=off and --auto-inc=off; the tables each side made
/// compared after each prepare.
fn oltp_script(driver: &str, script: &str, extra: &[&str]) {
    let Some(mut p) = Pair::new() else { return };
    let Some(server) = Server::start(driver) else {
        return;
    };
    let db = server.args();
    let path = format!("/usr/share/sysbench/{script}.lua");
    let with = |opts: &[&str], command: &str| on_server(&path, &db, &[opts, extra, &[command]]);
    p.check(with(&["--tables=8", "--threads=1"], "prepare"));
    server.same_schema(8);
    let prewarm = with(&["--tables=8", "--threads=1"], "prewarm");
    p.check(if driver == "pgsql" {
        prewarm.code(1)
    } else {
        prewarm
    });
    p.check(with(&["--tables=8", "--threads=1"], "cleanup"));
    server.same_schema(0);
    p.check(with(&["--tables=8", "--threads=2"], "prepare").filter(nothing));
    server.same_schema(8);
    let (_, ours) = p.check(with(&["--tables=8", "--threads=2", "--events=100"], "run"));
    assert!(ours.stdout.contains("SQL statistics:"), "{}", ours.stdout);
    p.check(with(&["--tables=8", "--threads=2"], "cleanup").filter(nothing));
    server.same_schema(0);
    p.check(with(&["--tables=1", "--create-secondary=off"], "prepare"));
    server.same_schema(1);
    p.check(with(&["--tables=1"], "cleanup"));
    p.check(with(&["--tables=1", "--auto-inc=off"], "prepare"));
    server.same_schema(1);
    p.check(with(
        &["--tables=1", "--auto-inc=off", "--events=20"],
        "run",
    ));
    p.check(with(&["--tables=1"], "cleanup"));
    server.same_schema(0);
    p.finish();
}

#[test]
fn script_oltp_delete_mysql() {
    oltp_script("mysql", "oltp_delete", &[]);
}

#[test]
fn script_oltp_delete_pgsql() {
    oltp_script("pgsql", "oltp_delete", &[]);
}

#[test]
fn script_oltp_insert_mysql() {
    oltp_script("mysql", "oltp_insert", &[]);
}

#[test]
fn script_oltp_insert_pgsql() {
    oltp_script("pgsql", "oltp_insert", &[]);
}

#[test]
fn script_oltp_point_select_mysql() {
    oltp_script("mysql", "oltp_point_select", &[]);
}

#[test]
fn script_oltp_point_select_pgsql() {
    oltp_script("pgsql", "oltp_point_select", &[]);
}

#[test]
fn script_oltp_read_write_mysql() {
    // As the .t file: MyISAM, and one thread for a deterministic run.
    oltp_script(
        "mysql",
        "oltp_read_write",
        &["--mysql-storage-engine=myisam", "--threads=1"],
    );
}

#[test]
fn script_oltp_read_write_pgsql() {
    oltp_script("pgsql", "oltp_read_write", &[]);
}

/// select_random_points and select_random_ranges as
/// script_select_random_common.sh runs them: prepare one table, a run of
/// 100 events, cleanup.
fn select_random(driver: &str) {
    let Some(mut p) = Pair::new() else { return };
    let Some(server) = Server::start(driver) else {
        return;
    };
    let db = server.args();
    for script in ["select_random_points", "select_random_ranges"] {
        let path = format!("/usr/share/sysbench/{script}.lua");
        let with = |opts: &[&str], command: &str| {
            on_server(&path, &db, &[&["--tables=1"], opts, &[command]])
        };
        p.check(with(&[], "prepare"));
        server.same_schema(1);
        let (_, ours) = p.check(with(&["--events=100"], "run"));
        assert!(ours.stdout.contains("SQL statistics:"), "{}", ours.stdout);
        p.check(with(&[], "cleanup"));
        server.same_schema(0);
    }
    p.finish();
}

#[test]
fn script_select_random_mysql() {
    select_random("mysql");
}

#[test]
fn script_select_random_pgsql() {
    select_random("pgsql");
}

/// bulk_insert.lua as script_bulk_insert_common.sh runs it: two threads,
/// prepare (its tables), a run of 100 events, cleanup, then again with
/// --auto-inc=off.
fn bulk_insert(driver: &str) {
    let Some(mut p) = Pair::new() else { return };
    let Some(server) = Server::start(driver) else {
        return;
    };
    let db = server.args();
    let with = |opts: &[&str], command: &str| {
        on_server(
            "/usr/share/sysbench/bulk_insert.lua",
            &db,
            &[&["--threads=2", "--verbosity=1"], opts, &[command]],
        )
    };
    p.check(with(&[], "prepare"));
    server.same_schema(2);
    let (_, ours) = p.check(with(&["--events=100", "--verbosity=3"], "run"));
    assert!(ours.stdout.contains("SQL statistics:"), "{}", ours.stdout);
    p.check(with(&[], "cleanup"));
    server.same_schema(0);
    p.check(with(&["--auto-inc=off"], "prepare"));
    p.check(with(&["--auto-inc=off", "--time=1"], "run"));
    p.check(with(&["--auto-inc=off"], "cleanup"));
    server.same_schema(0);
    p.finish();
}

#[test]
fn script_bulk_insert_mysql() {
    bulk_insert("mysql");
}

#[test]
fn script_bulk_insert_pgsql() {
    bulk_insert("pgsql");
}

/// drv_common.sh: sysbench 0.5's db_query on the thread's own connection,
/// 10 events on 2 threads; and the rest of that API (db_connect,
/// db_bulk_insert_*, db_disconnect).
fn driver(driver: &str) {
    let Some(mut p) = Pair::new() else { return };
    let Some(server) = Server::start(driver) else {
        return;
    };
    let db = server.args();
    p.write(
        "test.lua",
        "function event()\n  db_query(\"SELECT 1\")\nend\n",
    );
    // Figures are masked in the comparison: the scripts check their own.
    p.write(
        "count.lua",
        "function event()\n  db_query(\"SELECT 1\")\nend\n\
         sysbench.hooks.report_cumulative = function(stat)\n\
         \x20 print(stat.reads == 10 and \"ten reads\" or (\"reads \" .. stat.reads))\n\
         end\n",
    );
    p.write(
        "bulk.lua",
        "function event()\n\
         \x20 db_connect()\n\
         \x20 db_query(\"DROP TABLE IF EXISTS t\")\n\
         \x20 db_query(\"CREATE TABLE t(a INT)\")\n\
         \x20 db_bulk_insert_init(\"INSERT INTO t VALUES\")\n\
         \x20 for i = 1, 50 do db_bulk_insert_next(\"(\" .. i .. \")\") end\n\
         \x20 db_bulk_insert_done()\n\
         \x20 assert(db_query(\"SELECT 1\") == nil, \"db_query returns nothing\")\n\
         \x20 local con = sysbench.sql.driver():connect()\n\
         \x20 local n, sum = con:query_row(\"SELECT COUNT(*), SUM(a) FROM t\")\n\
         \x20 assert(tonumber(n) == 50 and tonumber(sum) == 1275)\n\
         \x20 con:disconnect()\n\
         \x20 db_query(\"DROP TABLE t\")\n\
         \x20 db_disconnect()\n\
         \x20 assert(DB_ERROR_NONE == 0 and DB_ERROR_RESTART_TRANSACTION == 1)\n\
         \x20 assert(DB_ERROR_FAILED == 2)\n\
         \x20 print(\"bulk ok\")\n\
         end\n",
    );
    let with = |script: &str, opts: &[&str]| on_server(script, &db, &[opts, &["run"]]);
    p.check(with("test.lua", &["--events=10", "--threads=2"]));
    let (_, ours) = p.check(with("count.lua", &["--events=10", "--threads=2"]));
    assert!(ours.stdout.contains("ten reads\n"), "{}", ours.stdout);
    let (_, ours) = p.check(with("bulk.lua", &["--events=1", "--verbosity=1"]));
    assert!(ours.stdout.contains("bulk ok\n"), "{}", ours.stdout);
    p.finish();
}

/// api_legacy_sql.t: sysbench 0.5's prepared statements (db_prepare,
/// db_bind_param with a table the script changes between executions, a
/// string and a missing value, db_bind_result, db_execute,
/// db_store_results, db_free_results, db_close) beside db_query and the
/// bulk insert, on MySQL; the rows each side made are compared, and the
/// API's refusals are sysbench's words.
#[test]
fn api_legacy_sql() {
    let Some(mut p) = Pair::new() else { return };
    let Some(server) = Server::start("mysql") else {
        return;
    };
    let Server::My(my) = &server else {
        unreachable!("a MySQL server")
    };
    let db = server.args();
    p.write(
        "legacy.lua",
        "function event()\n\
         \x20 db_query(\"CREATE TABLE legacy(id INT, name VARCHAR(20), n INT)\")\n\
         \x20 local ins = db_prepare(\"INSERT INTO legacy VALUES (?, ?, ?)\")\n\
         \x20 local row = {0, \"none\", 0}\n\
         \x20 db_bind_param(ins, row)\n\
         \x20 db_bind_result(ins, {0, \"\"})\n\
         \x20 for i = 1, 5 do\n\
         \x20   row[1], row[2], row[3] = i, \"row \" .. i, i * 10\n\
         \x20   if i == 5 then row[3] = nil end\n\
         \x20   db_store_results(db_execute(ins))\n\
         \x20 end\n\
         \x20 db_close(ins)\n\
         \x20 db_disconnect()\n\
         \x20 db_bulk_insert_init(\"INSERT INTO legacy(id) VALUES\")\n\
         \x20 for i = 6, 9 do db_bulk_insert_next(\"(\" .. i .. \")\") end\n\
         \x20 db_bulk_insert_done()\n\
         \x20 local upd = db_prepare(\"UPDATE legacy SET n = n + ? WHERE id <= ?\")\n\
         \x20 db_bind_param(upd, {2.9, 3})\n\
         \x20 local rs = db_execute(upd)\n\
         \x20 db_free_results(rs)\n\
         \x20 db_close(upd)\n\
         \x20 print(\"DB_ERROR_NONE = \" .. DB_ERROR_NONE)\n\
         end\n",
    );
    let with = |script: &str| on_server(script, &db, &[&["--events=1", "--verbosity=1", "run"]]);
    p.check(with("legacy.lua"));
    let rows = |side: &str| {
        my.sql(&format!(
            "SELECT id, name, n FROM sb_{side}.legacy ORDER BY id"
        ))
    };
    let theirs = rows("theirs");
    assert_eq!(theirs, rows("ours"));
    // 2.9 is bound as the C int 2; row 5's n was nil: NULL.
    assert!(theirs.contains("1\trow 1\t12\n"), "{theirs}");
    assert!(theirs.contains("5\trow 5\tNULL\n"), "{theirs}");
    assert!(theirs.contains("9\tNULL\tNULL\n"), "{theirs}");
    // What the API refuses, each in a script of its own.
    for (name, body) in [
        (
            "not_a_table",
            "db_bind_param(db_prepare(\"SELECT 1\"), \"x\")",
        ),
        ("empty", "db_bind_param(db_prepare(\"SELECT 1\"), {})"),
        (
            "a_boolean",
            "db_bind_result(db_prepare(\"SELECT 1\"), {true})",
        ),
        ("unconnected", "db_store_results(nil)"),
    ] {
        let file = format!("{name}.lua");
        p.write(&file, &format!("function event()\n  {body}\nend\n"));
        p.check(with(&file).code(1));
    }
    // sysbench 0.5's OLTP scripts (oltp_legacy/*.lua in the suite) read
    // their options as globals: every option, the common ones typed, the
    // others as given, a name the script gives a function left alone, and
    // what sysbench's compatibility layer sets (the table engine).
    p.write(
        "globals.lua",
        "function help() end\n\
         function prepare()\n\
         \x20 print(db_driver, oltp_tables_count, type(oltp_tables_count))\n\
         \x20 print(type(threads), threads, type(mysql_host), mysql_host[1])\n\
         \x20 print(mysql_table_engine, myisam_max_rows, '[' .. flag_only .. ']')\n\
         \x20 print(type(help), type(oltp_range_size))\n\
         end\n",
    );
    // (Seen as masked: figures are N.)
    let (_, ours) = p.check(on_server(
        "globals.lua",
        &db,
        &[&[
            "--verbosity=1",
            "--threads=3",
            "--oltp-tables-count=8",
            "--mysql-table-engine=myisam",
            "--flag-only",
            "prepare",
        ]],
    ));
    assert!(
        ours.stdout
            .starts_with("mysql\tN\tstring\nnumber\tN\ttable\tN\nmyisam\tN\t[]\nfunction\tnil\n"),
        "{}",
        ours.stdout
    );
    p.finish();
}

/// api_sql_common.sh's scripts, in this project's words: sysbench.sql on
/// a private server: the driver and its errors, bulk inserts, results and
/// their rows, prepared statements (a table that does not exist, the
/// kinds of parameters, unset and NULL values, results freed twice), a
/// closed connection, reconnect, the error hook and the descriptor it
/// gets, ten connections of one thread, the bulk API misused, and
/// query_row on no rows. Tables are printed by the script (the suite uses
/// its own inspect.lua, which Debian does not install).
const API_SQL: &str = r#"
local function dump(t)
   local keys = {}
   for k in pairs(t) do keys[#keys + 1] = k end
   table.sort(keys)
   for _, k in ipairs(keys) do print("  " .. k .. " = " .. tostring(t[k])) end
end

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function event()
   local e, m
   print("drv:name() = " .. drv:name())
   dump(sysbench.sql.type)
   dump(sysbench.sql.error)
   e, m = pcall(sysbench.sql.driver, "non-existing")
   print(m)
   con:query("DROP TABLE IF EXISTS t")
   con:query("CREATE TABLE t(a INT)")
   con:bulk_insert_init("INSERT INTO t VALUES")
   for i = 1, 100 do con:bulk_insert_next(string.format("(%d)", i)) end
   con:bulk_insert_done()
   print(con:query_row("SELECT COUNT(DISTINCT a) FROM t"))
   con:query("DROP TABLE IF EXISTS t2")
   con:query("CREATE TABLE t2(a INT, b VARCHAR(120), c FLOAT)")
   con:query("INSERT INTO t2 VALUES (1, 'foo', 0.4)")
   con:query("INSERT INTO t2 VALUES (NULL, 'bar', 0.2)")
   con:query("INSERT INTO t2 VALUES (2, NULL, 0.3)")
   local rs = con:query("SELECT a, b FROM t2 ORDER BY c")
   for i = 1, rs.nrows do
      print(string.format("%s %s", unpack(rs:fetch_row(), 1, rs.nfields)))
   end
   print(string.format("%s %s", con:query_row("SELECT b, a FROM t2 ORDER BY b")))
   con:query("DROP TABLE t2")
   con:query("ALTER TABLE t ADD COLUMN b CHAR(10)")

   e, m = pcall(con.prepare, con, "SELECT * FROM nonexisting")
   print(m)
   local stmt = con:prepare("UPDATE t SET a = a + ?, b = ?")
   local a = stmt:bind_create(sysbench.sql.type.INT)
   local b = stmt:bind_create(sysbench.sql.type.CHAR, 10)
   print(a, b)
   e, m = pcall(stmt.bind_create, stmt, sysbench.sql.type.DATE)
   print(m)
   print(stmt:bind_param())
   stmt:bind_param(a, b)
   a:set(100)
   local rs1 = stmt:execute()
   a:set(200)
   b:set("01234567890")
   local rs2 = stmt:execute()
   print(rs1, rs2)
   e, m = pcall(rs2.free, rs)
   print(m)
   e, m = pcall(rs1.free, rs)
   print(m)
   stmt:close()
   con:disconnect()
   e, m = pcall(con.query, con, "SELECT 1")
   print(m)
   con:disconnect()
   con = drv:connect()
   rs = con:query("SELECT MIN(a), MAX(a), MIN(b), MAX(b) FROM t")
   print(rs.nfields)
   local r = rs:fetch_row()
   print(string.format("%s %s %s %s", unpack(r, 1, rs.nfields)))
   -- (Figures are masked in the comparison.)
   print(tostring(r[1]) .. tostring(r[2]) == "301400" and r[3] == "0123456789"
         and r[4] == "0123456789" and "the updates are right" or "wrong updates")
   con:query("DROP TABLE t")
end
"#;

/// The error hook's part: each failing query's descriptor, then the error.
const API_SQL_HOOK: &str = r#"
function sysbench.hooks.sql_error_ignorable(e)
   print(tostring(e.connection), e.query, e.sql_errno, e.sql_state, e.sql_errmsg)
end

function event()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   con:query("DROP TABLE IF EXISTS t")
   if drv:name() == "mysql" then con:query("SET sql_mode='STRICT_TRANS_TABLES'") end
   for _, q in ipairs({ "CREATE TABLE t(a CHAR(1) NOT NULL)", "INSERT INTO t VALUES (1)",
                        "INSERT INTO t VALUES (NULL)", "INSERT INTO t VALUES ('test')",
                        "DROP TABLE t", "DROP TABLE t" }) do
      local ok, m = pcall(function () con:query(q) end)
      if not ok then print(m) end
   end
end
"#;

/// Ten connections of one thread, the bulk API misused, query_row on no
/// rows and fetch_row to the end, run at the script's top level.
const API_SQL_MORE: &str = r#"
local drv = sysbench.sql.driver()
local cons = {}
for i = 1, 10 do cons[i] = drv:connect() end
cons[1]:query("DROP TABLE IF EXISTS t")
cons[2]:query("CREATE TABLE t(a INT)")
for i = 1, 10 do cons[i]:query("INSERT INTO t VALUES (" .. i .. ")") end
local rs = cons[1]:query("SELECT * FROM t ORDER BY a")
for i = 1, rs.nrows do print(unpack(rs:fetch_row(), 1, rs.nfields)) end
cons[1]:query("DROP TABLE t")
local c = cons[3]
c:query("CREATE TABLE t1(a INT)")
c:bulk_insert_init("INSERT INTO t1 VALUES")
c:bulk_insert_next("(1)")
c:bulk_insert_done()
local e, m = pcall(function () c:bulk_insert_next("(2)") end)
print(m)
c:bulk_insert_done()
print(c:query_row("SELECT * FROM t1 WHERE a > 5"))
rs = c:query("SELECT 1 UNION SELECT 2")
local r = rs:fetch_row()
while r do print(r[1]) r = rs:fetch_row() end
c:query("DROP TABLE t1")
"#;

fn api_sql(driver: &str) {
    let Some(mut p) = Pair::new() else { return };
    let Some(server) = Server::start(driver) else {
        return;
    };
    let db = server.args();
    // MySQL's messages name the side's database.
    let run = |script: &str, command: &[&str]| {
        on_server(script, &db, &[&["--verbosity=1", "--events=1"], command]).filter(|t| {
            t.replace("sb_theirs", "sb_SIDE")
                .replace("sb_ours", "sb_SIDE")
        })
    };
    p.write("api_sql.lua", API_SQL);
    let (_, ours) = p.check(run("api_sql.lua", &["run"]));
    for seen in [
        "drv:name() = ",
        // (Seen as masked: figures are N, runs of spaces one.)
        "FATAL: invalid database driver name: 'non-existing'\nfailed to initialize the DB driver\nN\n",
        "\nSQL API error\n",
        "<sql_param>\t<sql_param>\nUnsupported argument type: N\nnil\n",
        "ALERT: attempt to free an invalid result set\ndb_free_results() failed\ndb_free_results() failed\n\
         (last message repeated N times)\nALERT: attempt to use an already closed connection\n\
         api_sql.lua:N: SQL API error\n",
        "ALERT: attempt to close an already closed connection\nN\nN N N N\nthe updates are right\n",
    ] {
        assert!(ours.stdout.contains(seen), "{seen:?} not in:\n{}", ours.stdout);
    }
    p.write("hook.lua", API_SQL_HOOK);
    let (_, ours) = p.check(run("hook.lua", &["run"]));
    assert!(
        ours.stdout
            .contains("<sql_connection>\tINSERT INTO t VALUES (NULL)\t"),
        "{}",
        ours.stdout
    );
    p.write("more.lua", API_SQL_MORE);
    let (_, ours) = p.check(run("more.lua", &[]));
    assert!(
        ours.stdout
            .contains("N\nALERT: attempt to call bulk_insert_next() before bulk_insert_init()\n"),
        "{}",
        ours.stdout
    );
    p.finish();
}

#[test]
fn api_sql_pgsql() {
    api_sql("pgsql");
    // sysbench's PostgreSQL driver cannot reconnect; it says so and goes on.
    let Some(mut p) = Pair::new() else { return };
    let Some(server) = Server::start("pgsql") else {
        return;
    };
    p.write(
        "reconnect.lua",
        "function sysbench.hooks.report_cumulative(stat)\n\
         \x20 print('reconnects = ' .. stat.reconnects)\nend\n\
         function thread_init() con = sysbench.sql.driver():connect() end\n\
         function event()\n  print(con:query_row('SELECT 1'))\n  con:reconnect()\n\
         \x20 print(con:query_row('SELECT 2'))\nend\n",
    );
    let (_, ours) = p.check(on_server(
        "reconnect.lua",
        &server.args(),
        &[&["--verbosity=1", "--events=1", "run"]],
    ));
    assert!(
        ours.stdout.contains(
            "N\nALERT: reconnect is not supported by the current driver\nN\nreconnects = N\n"
        ),
        "{}",
        ours.stdout
    );
    p.finish();
}

/// Debian's sysbench 1.0.20 dies of a segmentation fault in MySQL's
/// `con:reconnect()` (so does its own api_sql_mysql.t here), so that part
/// is tests/lua.rs's against virtperf alone.
#[test]
fn api_sql_mysql() {
    api_sql("mysql");
}

#[test]
fn drv_mysql() {
    driver("mysql");
}

#[test]
fn drv_pgsql() {
    driver("pgsql");
}

#[test]
fn every_file_of_the_suite_is_retold_or_said_why_not() {
    // tests/oltp.rs and tests/lua.rs run virtperf's drivers against
    // private servers; here each .t file is a test of its name.
    let this = include_str!("sysbench_cram.rs");
    let mut missing = Vec::new();
    for name in SUITE {
        let test = if *name == "1st" { "first" } else { name };
        let retold = this.contains(&format!("fn {test}() {{"));
        let left = NOT_HERE.iter().any(|(prefix, _)| name.starts_with(prefix));
        if retold == left {
            missing.push(*name);
        }
    }
    assert!(
        missing.is_empty(),
        "neither retold nor left out, or both: {missing:?}"
    );
    assert!(NOT_HERE.iter().all(|(_, why)| why.len() > 20));
}
