//! The OLTP tests against real servers: PostgreSQL and MariaDB from
//! Debian's packages, each started on a temporary data directory and a free
//! loopback port and removed by a guard (tests/common/dbservers.rs), and
//! SQLite through the binary, also inside Docker, Podman (count=2, summed)
//! and a QEMU guest. Bad input: absent servers, wrong passwords,
//! prepare onto existing tables, run before prepare, a table too big. Runs
//! that go wrong: conflicts restarted and counted, sessions the server ends
//! reopened and counted, any other error stopping the run with its
//! statement, and a signal during prepare leaving no table behind within
//! 2 s. A fake MySQL server (tests/fake_mysql) that never answers a chosen
//! statement: Ctrl-C ends the client within 2 s, also when the cleanup's
//! DROP after it stalls too.

mod common;
mod fake_mysql;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::dbservers::{free_port, run, Mariadb, Postgres};
use common::{engine_ok, metric, output_ok, qemu_ok, signal_and_wait, skip, virtperf, wait_until};
use serde_json::Value;

/// Runs virtperf with `args`; returns (exit code, stdout, stderr).
fn vp(args: &[String]) -> (i32, String, String) {
    let out = virtperf()
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("run virtperf");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Starts virtperf with `args` in a process group of its own (only the
/// signals sent here reach it) with its stdout and stderr in one file
/// (prepare's lines are on stdout, as sysbench prints them; notes on
/// stderr), waits until the file shows `mark` (at most 60 s), sends
/// `signals` 200 ms apart and returns the exit code, the output once it
/// ends (at most 60 s more) and how long it took to end after the first
/// signal.
fn interrupted(args: &[String], mark: &str, signals: &[i32]) -> (Option<i32>, String, Duration) {
    use std::os::unix::process::CommandExt;
    let stderr = tempfile::NamedTempFile::new().unwrap();
    // Both streams appended to one file: neither overwrites the other.
    let append = || {
        std::fs::OpenOptions::new()
            .append(true)
            .open(stderr.path())
            .unwrap()
    };
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(append())
        .stderr(append())
        .process_group(0)
        .spawn()
        .unwrap();
    let so_far = || std::fs::read_to_string(stderr.path()).unwrap_or_default();
    let seen = wait_until(Duration::from_secs(60), || so_far().contains(mark));
    let sent = if seen { signals } else { &[] };
    let signalled = Instant::now();
    let ended = signal_and_wait(&mut child, sent, Duration::from_secs(60));
    let took = signalled.elapsed();
    let status = child.wait().unwrap();
    assert!(seen, "{args:?}: never printed {mark:?}: {}", so_far());
    assert!(
        ended,
        "{args:?}: still running 60 s after {signals:?}: {}",
        so_far()
    );
    (status.code(), so_far(), took)
}

/// Runs virtperf, asserting it succeeds (`what` and its stderr otherwise);
/// returns its stdout.
fn vp_ok(args: &[String], what: &str) -> String {
    let (code, out, err) = vp(args);
    assert_eq!(code, 0, "{what}: {err}");
    out
}

/// `test`, then `base`, then `extra`.
fn oltp(test: &str, base: &[String], extra: &[&str]) -> Vec<String> {
    let mut v = vec![test.to_string()];
    v.extend(with(base, extra));
    v
}

fn with(base: &[String], extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = base.to_vec();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// Runs `test` for a fixed number of transactions and returns the document.
fn run_json(test: &str, base: &[String], events: u64, threads: u32) -> Value {
    let mut args = vec![test.to_string()];
    args.extend(base.iter().cloned());
    args.extend([
        "--tables=2".to_string(),
        "--table-size=500".into(),
        format!("--events={events}"),
        "--time=0".into(),
        format!("--threads={threads}"),
        "--json".into(),
        "run".into(),
    ]);
    let (code, out, err) = vp(&args);
    assert_eq!(code, 0, "{test} run failed: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// What a test needs of one server besides virtperf: its sbtest tables
/// counted, SQL run as its superuser in the sbtest database, a table of the
/// user's made, sysbench's sessions ended from the server's side.
struct Server<'a> {
    driver: &'a str,
    count: &'a dyn Fn() -> usize,
    admin: &'a dyn Fn(&str) -> String,
    user_table: &'a dyn Fn(),
    /// Ends every session of the sbtest user; returns how many.
    kill_sessions: &'a dyn Fn() -> usize,
    /// The server's words for a column `c` that is not there.
    no_column_c: &'a str,
}

/// The full cycle and the bad cases against one server.
fn exercise(server: &Server, base: &[String]) {
    let Server {
        driver,
        count,
        admin,
        user_table: extra,
        ..
    } = *server;

    // A signal while tables load: exit 130 and nothing of the load left.
    let big = oltp(
        "oltp_read_write",
        base,
        &[
            "--tables=8",
            "--table-size=100000",
            "--threads=2",
            "prepare",
        ],
    );
    let (code, err, took) = interrupted(&big, "records into 'sbtest3'", &[libc::SIGINT]);
    eprintln!("{driver}: an interrupted prepare ended {took:?} after the signal");
    assert_eq!(code, Some(130), "{driver}: interrupted prepare: {err}");
    assert!(
        took < Duration::from_secs(2),
        "{driver}: an interrupted prepare took {took:?} to end: {err}"
    );
    assert_eq!(
        count(),
        0,
        "{driver}: tables left by an interrupted prepare"
    );

    let prepare = with(
        base,
        &["--tables=2", "--table-size=500", "--threads=2", "prepare"],
    );
    let cleanup = with(base, &["--tables=2", "cleanup"]);

    // Run before prepare says so, before announcing a run (issue 52,
    // item 13), and names the database once.
    let (code, out, err) = vp(&oltp("oltp_read_write", base, &["--tables=2", "run"]));
    assert_eq!(code, 2, "{driver}: run before prepare: {err}");
    assert!(
        (err.contains("does not exist") || err.contains("has no table 'sbtest1'"))
            && err.contains("prepare"),
        "{err}"
    );
    assert!(!out.contains("Threads started!"), "{out}");
    assert!(!err.contains("there is no"), "{err}");

    let mut args = vec!["oltp_read_write".to_string()];
    args.extend(prepare.iter().cloned());
    let (code, _, err) = vp(&args);
    assert_eq!(code, 0, "{driver} prepare: {err}");
    assert_eq!(count(), 2, "{driver}: two tables after prepare");

    // Prepare onto existing tables is refused and changes nothing.
    let (code, _, err) = vp(&args);
    assert_eq!(code, 2, "{driver}: second prepare: {err}");
    assert!(
        err.contains("already exists") && err.contains("cleanup"),
        "{err}"
    );

    // sysbench's counting: 14 reads, 4 writes, 2 other per transaction
    // (one thread: with two, a deadlock's restart adds queries).
    let doc = run_json("oltp_read_write", base, 40, 1);
    let d = &doc["details"];
    assert_eq!(d["transactions"], 40, "{d}");
    assert_eq!(d["reads"], 40 * 14, "{d}");
    assert_eq!(d["writes"], 40 * 4, "{d}");
    assert_eq!(d["other"], 40 * 2, "{d}");
    assert_eq!(d["queries_per_transaction"], 20.0, "{d}");
    assert!(metric(&doc, "tps") > 0.0);
    assert!(metric(&doc, "latency_p95_ms") > 0.0);
    let doc = run_json("oltp_read_write", base, 40, 2);
    assert_eq!(doc["details"]["transactions"], 40);
    assert!(metric(&doc, "qps") >= 20.0 * metric(&doc, "tps") * 0.999);

    let doc = run_json("oltp_point_select", base, 100, 1);
    assert_eq!(doc["details"]["queries"], 100, "{}", doc["details"]);
    // A server's files are the server's: no storage of ours to name.
    assert!(doc["env"].get("storage").is_none(), "{}", doc["env"]);
    let doc = run_json("oltp_read_only", base, 10, 1);
    assert_eq!(doc["details"]["queries"], 160, "{}", doc["details"]);
    let mut ps_off = base.to_vec();
    ps_off.push("--db-ps-mode=disable".into());
    let doc = run_json("oltp_write_only", &ps_off, 10, 1);
    assert_eq!(doc["details"]["queries"], 60, "{}", doc["details"]);
    let doc = run_json("oltp_insert", base, 20, 2);
    assert_eq!(doc["details"]["writes"], 20, "{}", doc["details"]);

    reconnects_are_counted(server, base);

    // Any other error stops the run, naming the statement and what the
    // server said.
    admin("ALTER TABLE sbtest2 DROP COLUMN c");
    let (code, _, err) = vp(&oltp(
        "oltp_point_select",
        base,
        &[
            "--tables=2",
            "--table-size=500",
            "--events=500",
            "--time=0",
            "run",
        ],
    ));
    assert_eq!(code, 1, "{driver}: a missing column: {err}");
    assert!(
        err.contains("SELECT c FROM sbtest2 WHERE id=") && err.contains(server.no_column_c),
        "{driver}: {err}"
    );

    // Cleanup drops sysbench's tables and nothing else.
    extra();
    let mut args = vec!["oltp_read_write".to_string()];
    args.extend(cleanup.iter().cloned());
    let (code, _, err) = vp(&args);
    assert_eq!(code, 0, "{driver} cleanup: {err}");
    assert_eq!(count(), 0, "{driver}: sbtest tables after cleanup");

    conflicts_restart_and_are_counted(server, base);
}

/// Sessions ended by the server in the middle of a run are opened again and
/// counted, and the run goes on.
fn reconnects_are_counted(server: &Server, base: &[String]) {
    let args = oltp(
        "oltp_read_write",
        base,
        &[
            "--tables=2",
            "--table-size=500",
            "--time=4",
            "--threads=2",
            "--json",
            "run",
        ],
    );
    let ((code, out, err), killed) = std::thread::scope(|s| {
        let run = s.spawn(|| vp(&args));
        std::thread::sleep(Duration::from_millis(1500));
        let killed = (server.kill_sessions)();
        (run.join().unwrap(), killed)
    });
    let driver = server.driver;
    assert!(killed >= 2, "{driver}: ended {killed} sessions: {err}");
    assert_eq!(code, 0, "{driver}: a run whose sessions were ended: {err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let d = &doc["details"];
    assert!(
        d["reconnects"].as_u64().unwrap() >= 2,
        "{driver}: both threads reconnect: {d}"
    );
    assert!(metric(&doc, "reconnects_per_sec") > 0.0);
    assert!(d["transactions"].as_u64().unwrap() > 0, "{d}");
}

/// On a table of 5 rows two writers drawing ids uniformly collide
/// (deadlocks, duplicate keys after a concurrent delete/insert): each
/// collision rolls back, restarts the transaction and is counted as an
/// ignored error, as sysbench counts them.
fn conflicts_restart_and_are_counted(server: &Server, base: &[String]) {
    let driver = server.driver;
    let small = ["--tables=1", "--table-size=5"];
    vp_ok(
        &oltp(
            "oltp_read_write",
            base,
            &[&small[..], &["prepare"]].concat(),
        ),
        &format!("{driver}: prepare of 5 rows"),
    );
    let out = vp_ok(
        &oltp(
            "oltp_write_only",
            base,
            &[
                &small[..],
                &[
                    "--rand-type=uniform",
                    "--threads=2",
                    "--time=3",
                    "--json",
                    "run",
                ],
            ]
            .concat(),
        ),
        &format!("{driver}: 2 threads on 5 rows"),
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    let d = &doc["details"];
    eprintln!(
        "{driver}: 2 threads on 5 rows for 3 s: {} transactions, {} ignored errors",
        d["transactions"], d["ignored_errors"]
    );
    assert!(d["ignored_errors"].as_u64().unwrap() > 0, "{driver}: {d}");
    assert!(metric(&doc, "ignored_errors_per_sec") > 0.0);
    assert!(d["transactions"].as_u64().unwrap() > 0, "{d}");
    vp_ok(
        &oltp(
            "oltp_read_write",
            base,
            &[&small[..1], &["cleanup"]].concat(),
        ),
        &format!("{driver}: cleanup"),
    );
    assert_eq!((server.count)(), 0);
}

#[test]
fn postgresql_prepare_run_cleanup_and_bad_input() {
    let Some(pg) = Postgres::start() else {
        skip("PostgreSQL is not installed (Debian package postgresql)");
        return;
    };
    let base = pg.args();
    let count = || {
        pg.psql(
            "sbtest",
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'sbtest%'",
        )
        .trim()
        .parse::<usize>()
        .unwrap()
    };
    let extra = || {
        pg.psql(
            "sbtest",
            "CREATE TABLE keepme(x int); ALTER TABLE keepme OWNER TO sbtest",
        );
    };
    let admin = |sql: &str| pg.psql("sbtest", sql);
    let kill_sessions = || {
        pg.psql(
            "sbtest",
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'sbtest'",
        )
        .lines()
        .filter(|l| l.trim() == "t")
        .count()
    };
    let server = Server {
        driver: "pgsql",
        count: &count,
        admin: &admin,
        user_table: &extra,
        kill_sessions: &kill_sessions,
        no_column_c: "column \"c\" does not exist",
    };
    exercise(&server, &base);
    let kept = pg.psql(
        "sbtest",
        "SELECT count(*) FROM pg_tables WHERE tablename = 'keepme'",
    );
    assert_eq!(
        kept.trim(),
        "1",
        "cleanup dropped a table that is not sysbench's"
    );

    // Wrong credentials name the options to fix.
    let mut wrong = base[..3].to_vec();
    wrong.push("--pgsql-password=wrong".into());
    let args = oltp("oltp_read_write", &wrong, &["run"]);
    let (code, _, err) = vp(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--pgsql-password") && err.contains("sbtest"),
        "{err}"
    );
}

#[test]
fn mariadb_prepare_run_cleanup_and_bad_input() {
    let Some(m) = Mariadb::start() else {
        skip("MariaDB is not installed (Debian package mariadb-server)");
        return;
    };
    let base = m.args();
    let count = || {
        m.sql(
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema='sbtest' AND table_name LIKE 'sbtest%'",
        )
        .trim()
        .parse::<usize>()
        .unwrap()
    };
    let extra = || {
        m.sql("CREATE TABLE sbtest.keepme(x int)");
    };
    let admin = |sql: &str| m.sql(&format!("USE sbtest; {sql}"));
    let kill_sessions = || {
        let ids = m.sql("SELECT id FROM information_schema.processlist WHERE user = 'sbtest'");
        let ids: Vec<&str> = ids.split_whitespace().collect();
        for id in &ids {
            // A session that ended by itself meanwhile is not an error.
            let _ = m
                .client()
                .args(["-e", &format!("KILL CONNECTION {id}")])
                .output();
        }
        ids.len()
    };
    let server = Server {
        driver: "mysql",
        count: &count,
        admin: &admin,
        user_table: &extra,
        kill_sessions: &kill_sessions,
        no_column_c: "Unknown column 'c'",
    };
    exercise(&server, &base);
    let kept = m.sql("SELECT COUNT(*) FROM information_schema.tables WHERE table_name='keepme'");
    assert_eq!(
        kept.trim(),
        "1",
        "cleanup dropped a table that is not sysbench's"
    );
    statements_are_prepared_once_as_sysbench_does(&m, &base);

    let mut wrong = base[..3].to_vec();
    wrong.push("--mysql-password=wrong".into());
    let args = oltp("oltp_read_write", &wrong, &["run"]);
    let (code, _, err) = vp(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--mysql-password") && err.contains("sbtest"),
        "{err}"
    );
}

/// The server's own counters over one run: each statement is prepared once
/// per connection and executed from then on, BEGIN and COMMIT included (as
/// sysbench's libmysqlclient driver sends them); `--db-ps-mode=disable`
/// sends text queries.
fn statements_are_prepared_once_as_sysbench_does(m: &Mariadb, base: &[String]) {
    let status = || -> std::collections::HashMap<String, u64> {
        m.sql(
            "SHOW GLOBAL STATUS WHERE Variable_name IN \
             ('Com_stmt_prepare', 'Com_stmt_execute', 'Com_begin', 'Com_commit', 'Questions')",
        )
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('\t')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
    };
    let tables = ["--tables=2", "--table-size=500"];
    let mut args = oltp("oltp_read_write", base, &tables);
    args.push("prepare".into());
    let (code, _, err) = vp(&args);
    assert_eq!(code, 0, "prepare: {err}");
    for ps in ["auto", "disable"] {
        let mut b = base.to_vec();
        b.push(format!("--db-ps-mode={ps}"));
        let before = status();
        let doc = run_json("oltp_read_write", &b, 50, 1);
        let after = status();
        // The password is not a parameter of the work: not in the results.
        assert!(
            doc["params"].get("mysql_password").is_none(),
            "{}",
            doc["params"]
        );
        assert_eq!(doc["params"]["mysql_user"], "sbtest");
        let d = |k: &str| after[k] - before[k];
        assert_eq!(d("Com_begin"), 50, "{ps}");
        assert_eq!(d("Com_commit"), 50, "{ps}");
        if ps == "auto" {
            // 9 statements on each of 2 tables, BEGIN, COMMIT and the
            // table check: prepared once, not once per execute.
            assert!(d("Com_stmt_prepare") <= 21, "{ps}: {after:?} {before:?}");
            assert!(d("Com_stmt_execute") >= 50 * 20, "{ps}: {after:?}");
        } else {
            assert!(d("Com_stmt_execute") <= 2, "{ps}: {after:?} {before:?}");
            assert!(d("Questions") >= 50 * 20, "{ps}: {after:?}");
        }
    }
    let mut args = oltp("oltp_read_write", base, &["--tables=2"]);
    args.push("cleanup".into());
    let (code, _, err) = vp(&args);
    assert_eq!(code, 0, "cleanup: {err}");
}

#[test]
fn an_absent_server_is_named_with_its_options_quickly() {
    let port = free_port();
    for (driver, opt) in [("pgsql", "pgsql"), ("mysql", "mysql")] {
        let started = Instant::now();
        let (code, _, err) = vp(&[
            "oltp_read_write".into(),
            format!("--db-driver={driver}"),
            format!("--{opt}-host=127.0.0.1"),
            format!("--{opt}-port={port}"),
            "run".into(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("127.0.0.1:{port}")) && err.contains(&format!("--{opt}-port")),
            "{err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{driver} took too long"
        );
    }
}

#[test]
fn sqlite_cycle_and_a_table_too_big_for_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let base = vec![format!("--oltp-dir={}", dir.path().display())];
    let file = dir.path().join("virtperf-oltp.sqlite");

    // Far more than any test machine's disk: refused before anything is written.
    let (code, _, err) = vp(&oltp(
        "oltp_read_write",
        &base,
        &["--tables=1000", "--table-size=2000000000", "prepare"],
    ));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--table-size") && err.contains("free"),
        "{err}"
    );
    assert!(!file.exists(), "a refused prepare left a database behind");

    let (code, _, err) = vp(&oltp(
        "oltp_read_write",
        &base,
        &["--tables=2", "--table-size=500", "prepare"],
    ));
    assert_eq!(code, 0, "{err}");
    let doc = run_json("oltp_read_write", &base, 30, 2);
    assert_eq!(doc["details"]["queries_per_transaction"], 20.0);
    assert_eq!(doc["details"]["db_driver"], "sqlite");
    // Two writers share SQLite's one write lock: one waits for the other,
    // and the waits are counted.
    let out = vp_ok(
        &oltp(
            "oltp_write_only",
            &base,
            &["--tables=2", "--time=1", "--threads=2", "--json", "run"],
        ),
        "write_only at 2 threads",
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert!(
        doc["details"]["busy_waits"].as_u64().unwrap() > 0,
        "{}",
        doc["details"]
    );
    assert_eq!(doc["details"]["queries_per_transaction"], 6.0);
    let (code, _, err) = vp(&oltp("oltp_read_write", &base, &["--tables=2", "cleanup"]));
    assert_eq!(code, 0, "{err}");
    assert!(!file.exists(), "cleanup left the database file");
}

/// Ctrl-C, SIGTERM or a double Ctrl-C while SQLite tables load: exit 130,
/// the load stops at once, and the database file it made is gone.
#[test]
fn an_interrupted_sqlite_prepare_leaves_no_database() {
    let cases: [(&str, &[i32]); 3] = [
        ("SIGINT", &[libc::SIGINT]),
        ("SIGTERM", &[libc::SIGTERM]),
        ("SIGINT twice", &[libc::SIGINT, libc::SIGINT]),
    ];
    for (what, signals) in cases {
        let dir = tempfile::tempdir().unwrap();
        let args = oltp(
            "oltp_read_write",
            &[format!("--oltp-dir={}", dir.path().display())],
            &["--tables=40", "--table-size=300000", "prepare"],
        );
        let started = Instant::now();
        let (code, err, took) = interrupted(&args, "records into 'sbtest2'", signals);
        assert_eq!(code, Some(130), "{what}: {err}");
        assert!(
            took < Duration::from_secs(2),
            "{what}: ended {took:?} after the signal: {err}"
        );
        assert!(err.contains("interrupted"), "{what}: {err}");
        assert!(
            !err.contains("records into 'sbtest40'"),
            "{what}: the load went on to the last table: {err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: took {:?}",
            started.elapsed()
        );
        let left = common::entries(dir.path());
        assert!(left.is_empty(), "{what}: left {left:?}");
    }
}

/// The result names the file system under the SQLite file, and says when
/// an fsync there reaches no disk (a tmpfs: durable commits are free).
#[test]
fn the_result_names_the_file_system_under_the_database() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        skip("no /dev/shm");
        return;
    }
    let on_disk = tempfile::tempdir().unwrap();
    let in_memory = tempfile::tempdir_in(shm).unwrap();
    for (dir, memory) in [(on_disk.path(), false), (in_memory.path(), true)] {
        let base = vec![format!("--oltp-dir={}", dir.display())];
        let tables = ["--tables=2", "--table-size=100"];
        vp_ok(
            &oltp(
                "oltp_read_write",
                &base,
                &[&tables[..], &["prepare"]].concat(),
            ),
            "prepare",
        );
        let doc = run_json("oltp_point_select", &base, 10, 1);
        let storage = &doc["env"]["storage"];
        assert!(!storage["fs"].as_str().unwrap().is_empty(), "{storage}");
        if memory {
            assert_eq!(storage["fs"], "tmpfs", "{storage}");
            assert_eq!(storage["fsync_ignored"], "in memory", "{storage}");
        }
        vp_ok(
            &oltp("oltp_read_write", &base, &[tables[0], "cleanup"]),
            "cleanup",
        );
    }
}

/// One `virtperf.result/1` document per stdout line.
fn docs(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A SQLite run inside an environment: the embedded driver, its database in
/// the environment's own work directory, sysbench's 20 queries.
fn check_sqlite_inside(doc: &Value, env: &str) {
    let d = &doc["details"];
    assert_eq!(d["db_driver"], "sqlite", "{env}: {d}");
    assert_eq!(d["queries_per_transaction"], 20.0, "{env}: {d}");
    assert!(d["transactions"].as_u64().unwrap() > 0, "{env}: {d}");
    assert!(metric(doc, "tps") > 0.0, "{env}");
    let db = d["database"].as_str().unwrap();
    assert!(db.ends_with("/virtperf-oltp.sqlite"), "{env}: {db}");
    // The file system under it, as seen inside, came back with the result.
    let storage = &doc["env"]["storage"];
    assert!(
        !storage["fs"].as_str().unwrap_or("").is_empty(),
        "{env}: {storage}"
    );
}

/// Seed 003 sums TPS over VMs running at once: `count=2` starts two
/// containers, each prepares, runs and cleans up its own SQLite tables, and
/// the third document is the sum of their TPS.
fn sqlite_count_two_sums_tps(cli: &str) {
    if !engine_ok(cli) {
        return;
    }
    let env = format!("{cli}:count=2,name=oltp-pair");
    let (code, out, err) = vp(&[
        "oltp_read_write".into(),
        "--tables=1".into(),
        "--table-size=300".into(),
        "--time=1".into(),
        "--env".into(),
        env.clone(),
        "--json".into(),
    ]);
    assert_eq!(code, 0, "{env}: {err}");
    let d = docs(&out);
    assert_eq!(d.len(), 3, "two instances and their sum: {out}");
    for (i, doc) in d[..2].iter().enumerate() {
        assert_eq!(doc["env"]["name"], format!("oltp-pair#{}", i + 1));
        assert_eq!(doc["env"]["kind"], cli);
        check_sqlite_inside(doc, &env);
    }
    let sum = metric(&d[0], "tps") + metric(&d[1], "tps");
    assert!((metric(&d[2], "tps") - sum).abs() < 1e-6, "{}", d[2]);
    assert_eq!(d[2]["details"]["instances"], 2);
    // Latencies are averaged, not summed.
    let p95 = (metric(&d[0], "latency_p95_ms") + metric(&d[1], "latency_p95_ms")) / 2.0;
    assert!((metric(&d[2], "latency_p95_ms") - p95).abs() < 1e-9);
}

#[test]
fn sqlite_in_docker_count_two_sums_tps() {
    sqlite_count_two_sums_tps("docker");
}

#[test]
fn sqlite_in_podman_count_two_sums_tps() {
    sqlite_count_two_sums_tps("podman");
}

#[test]
fn sqlite_in_a_qemu_guest() {
    if !qemu_ok() {
        return;
    }
    // A TMPDIR of the test's own: a VM directory left there is this test's.
    let tmp = tempfile::tempdir().unwrap();
    let env = "qemu:accel=tcg,memory=512m,smp=1,disk=256m,net=none";
    let out = output_ok(
        virtperf()
            .env("TMPDIR", tmp.path())
            .args([
                "oltp_read_write",
                "--tables=1",
                "--table-size=300",
                "--time=1",
                "--env",
                env,
                "--json",
            ])
            .timeout(Duration::from_secs(300)),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let d = docs(&stdout);
    assert_eq!(d.len(), 1, "{stdout}");
    assert_eq!(d[0]["env"]["hypervisor"], "TCGTCGTCGTCG");
    check_sqlite_inside(&d[0], env);
    // The guest's work directory is its ext4 scratch disk: fsync reaches it.
    let storage = &d[0]["env"]["storage"];
    assert_eq!(storage["fs"], "ext4", "{storage}");
    assert!(storage.get("fsync_ignored").is_none(), "{storage}");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("virtperf-qemu-"))
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// A PostgreSQL server that logs anyone in and then never answers: what it
/// has been sent, so far, is kept from growing without bound.
fn stalling_pgsql_server() -> u16 {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        // A few connections at most (the client may reconnect).
        for _ in 0..8 {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                // AuthenticationOk, ReadyForQuery(idle).
                let _ = s.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 0, b'Z', 0, 0, 0, 5, b'I']);
                let deadline = Instant::now() + Duration::from_secs(60);
                s.set_read_timeout(Some(Duration::from_millis(500)))
                    .unwrap();
                while Instant::now() < deadline {
                    match s.read(&mut buf) {
                        Ok(0) => return,
                        _ => continue,
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_postgresql_server_that_stalls_after_login_is_left_on_ctrl_c_within_2_s() {
    // Issue 24, item 10: `--time=1` against a server that logs in and
    // stalls never ended, and two SIGINTs were ignored.
    let port = stalling_pgsql_server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_virtperf"))
        .args([
            "oltp_read_write",
            "--db-driver=pgsql",
            "--pgsql-host=127.0.0.1",
            &format!("--pgsql-port={port}"),
            "--time=1",
            "run",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        child.try_wait().unwrap().is_none(),
        "it waits on the stalled server"
    );
    let t = Instant::now();
    let ended = signal_and_wait(&mut child, &[libc::SIGINT], Duration::from_secs(2));
    assert!(ended, "still running {:?} after Ctrl-C", t.elapsed());
    assert!(!child.wait().unwrap().success());
}

#[test]
fn a_mysql_server_that_accepts_and_says_nothing_is_given_up_within_5_s() {
    // Issue 24, item 10: MySQL against a silent server took 59 s and
    // ignored SIGTERM (no bound on the handshake).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(4).collect();
        std::thread::sleep(Duration::from_secs(30));
        drop(held);
    });
    let args = [
        "oltp_read_write".to_string(),
        "--db-driver=mysql".into(),
        "--mysql-host=127.0.0.1".into(),
        format!("--mysql-port={port}"),
        "--time=1".into(),
        "run".into(),
    ];
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_virtperf"))
        .args(&args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(t.elapsed() < Duration::from_secs(9), "{:?}", t.elapsed());
    assert!(
        err.contains("did not complete the handshake") && err.contains("--mysql-port"),
        "{err}"
    );
    // And Ctrl-C while it waits ends it at once.
    let mut child = Command::new(env!("CARGO_BIN_EXE_virtperf"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    assert!(signal_and_wait(
        &mut child,
        &[libc::SIGINT],
        Duration::from_secs(2)
    ));
}

#[test]
fn a_database_server_that_answers_garbage_is_refused_within_5_s_naming_it() {
    use std::io::Write;
    // Issue 24: fake servers, garbage case. Each connection gets bytes that
    // are no protocol's (a length prefix promising 16 MiB, then noise) and
    // is held open.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut s in listener.incoming().take(8).flatten() {
            let _ = s.write_all(b"\xff\xff\xff\x00garbage\x1b[2J\x00\x01");
            held.push(s);
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    for driver in ["mysql", "pgsql"] {
        let t = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_virtperf"))
            .args([
                "oltp_read_only".to_string(),
                format!("--db-driver={driver}"),
                format!("--{driver}-host=127.0.0.1"),
                format!("--{driver}-port={port}"),
                "--time=1".into(),
                "run".into(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{driver}: {err}");
        assert!(
            t.elapsed() < Duration::from_secs(9),
            "{driver}: {:?}",
            t.elapsed()
        );
        assert!(err.contains(&port.to_string()), "{driver}: {err}");
        // The server's bytes never reach the terminal raw.
        assert!(!err.contains('\x1b'), "{driver}: {err}");
    }
}

/// `virtperf test` against the fake MySQL server at `port` with `args`,
/// its stderr in a file and in a process group of its own.
fn against_fake_mysql(port: u16, test: &str, args: &[&str]) -> (Child, tempfile::NamedTempFile) {
    use std::os::unix::process::CommandExt;
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_virtperf"))
        .args([
            test.to_string(),
            "--db-driver=mysql".into(),
            "--mysql-host=127.0.0.1".into(),
            format!("--mysql-port={port}"),
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr.reopen().unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    (child, stderr)
}

/// Sends SIGINT to `child` and returns how long it took to end (at most
/// `limit` after the signal; one still running then is killed and fails
/// the test), its exit code and its stderr.
/// The statement the fake server stalls first, within 20 s; none, and the
/// client is killed (so a failed assertion leaves nothing running).
fn first_stall(fake: &fake_mysql::FakeMysql, child: &mut Child) -> Option<String> {
    let sql = fake.wait_stall(Duration::from_secs(20));
    if sql.is_none() {
        let _ = child.kill();
    }
    sql
}

fn sigint_and_time(
    mut child: Child,
    stderr: &tempfile::NamedTempFile,
    limit: Duration,
    what: &str,
) -> (Duration, Option<i32>, String) {
    let t = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let ended = wait_until(limit, || child.try_wait().unwrap().is_some());
    let took = t.elapsed();
    if !ended {
        let _ = child.kill();
    }
    let code = child.wait().unwrap().code();
    let err = std::fs::read_to_string(stderr.path()).unwrap_or_default();
    assert!(ended, "{what}: still running {took:?} after Ctrl-C: {err}");
    (took, code, err)
}

#[test]
fn ctrl_c_during_a_stalled_mysql_statement_ends_the_client_within_2_s() {
    // Issue 24: a statement the server never answered held the client
    // until the 60 s read timeout, Ctrl-C or not (the crate's blocking read
    // has no hook). Two places a statement can stall: the run's worker
    // thread (the first point select), and the main thread's check that the
    // tables exist, before the run.
    let cases: [(&str, fake_mysql::Stall); 2] = [
        ("a worker's statement", |sql| {
            sql.starts_with("SELECT c FROM")
        }),
        ("the table check", |sql| sql.contains("information_schema")),
    ];
    for (what, stall) in cases {
        let fake = fake_mysql::FakeMysql::start(stall, true);
        let (mut child, stderr) = against_fake_mysql(
            fake.port,
            "oltp_point_select",
            &["--tables=1", "--time=30", "run"],
        );
        let sql = first_stall(&fake, &mut child);
        assert!(
            sql.is_some(),
            "{what}: the client never reached the statement: {}",
            std::fs::read_to_string(stderr.path()).unwrap_or_default()
        );
        let (took, code, err) = sigint_and_time(child, &stderr, Duration::from_secs(10), what);
        eprintln!("{what}: ended {took:?} after Ctrl-C, exit {code:?}: {err}");
        assert!(
            took < Duration::from_secs(2),
            "{what}: ended {took:?} after Ctrl-C: {err}"
        );
        assert_eq!(code, Some(130), "{what}: {err}");
        assert!(err.contains("interrupted"), "{what}: {err}");
    }
}

#[test]
fn a_server_stalling_the_cleanups_drop_after_ctrl_c_is_left_within_2_s_naming_the_tables() {
    // Ctrl-C while prepare waits on an INSERT; prepare's cleanup then sends
    // DROP TABLE, which the server never answers either. The client gives
    // the cleanup a bounded wait, says which tables may remain and how to
    // remove them, and exits 130.
    let fake = fake_mysql::FakeMysql::start(
        |sql| sql.starts_with("INSERT") || sql.starts_with("DROP"),
        false,
    );
    let (mut child, stderr) = against_fake_mysql(
        fake.port,
        "oltp_read_write",
        &["--tables=3", "--table-size=100", "prepare"],
    );
    let insert = first_stall(&fake, &mut child);
    assert!(
        insert
            .as_deref()
            .is_some_and(|s| s.starts_with("INSERT INTO sbtest1")),
        "the load never stalled: {insert:?}: {}",
        std::fs::read_to_string(stderr.path()).unwrap_or_default()
    );
    let (took, code, err) = sigint_and_time(child, &stderr, Duration::from_secs(10), "prepare");
    eprintln!("prepare: ended {took:?} after Ctrl-C, exit {code:?}: {err}");
    let drop = fake.wait_stall(Duration::from_millis(100));
    assert_eq!(
        drop.as_deref(),
        Some("DROP TABLE IF EXISTS sbtest1"),
        "the cleanup never reached the DROP: {err}"
    );
    assert!(
        took < Duration::from_secs(2),
        "ended {took:?} after Ctrl-C: {err}"
    );
    assert_eq!(code, Some(130), "{err}");
    assert!(
        err.contains("sbtest1, sbtest2, sbtest3 may remain") && err.contains("cleanup"),
        "{err}"
    );
}

/// sysbench's own OLTP scripts (/usr/share/sysbench, as Debian installs
/// them) through virtperf's Lua runtime against a server (`args` reach
/// it): each gives the queries per transaction of the built-in test of its
/// name, on the tables the script prepared, and its cleanup leaves no
/// table (`tables` counts the sbtest database's).
fn lua_scripts_match_the_built_in_tests(args: &[String], tables: &dyn Fn() -> String) {
    let scripts = Path::new("/usr/share/sysbench");
    // run_json's layout: two tables of 500 rows.
    let base = with(args, &["--tables=2", "--table-size=500"]);
    let per_trx = |doc: &Value| doc["details"]["queries_per_transaction"].as_f64().unwrap();
    for test in [
        "oltp_read_write",
        "oltp_read_only",
        "oltp_point_select",
        "oltp_write_only",
        "oltp_delete",
        "oltp_insert",
    ] {
        let script = scripts.join(format!("{test}.lua")).display().to_string();
        vp_ok(&oltp(&script, &base, &["prepare"]), "script prepare");
        let out = vp_ok(
            &oltp(&script, &base, &["--events=100", "--json", "run"]),
            "script run",
        );
        let ours: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        let builtin = run_json(test, args, 100, 1);
        assert_eq!(per_trx(&ours), per_trx(&builtin), "{test}: {ours}");
        vp_ok(&oltp(&script, &base, &["cleanup"]), "script cleanup");
        assert_eq!(tables().trim(), "0", "{test}");
    }
}

fn sysbench_scripts_installed() -> bool {
    if Path::new("/usr/share/sysbench/oltp_common.lua").exists() {
        return true;
    }
    skip("sysbench's Lua scripts are not installed (Debian package sysbench)");
    false
}

#[test]
fn sysbench_lua_scripts_on_mariadb_match_the_built_in_tests() {
    if !sysbench_scripts_installed() {
        return;
    }
    let Some(m) = Mariadb::start() else {
        skip("MariaDB is not installed (Debian package mariadb-server)");
        return;
    };
    lua_scripts_match_the_built_in_tests(&m.args(), &|| {
        m.sql("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='sbtest'")
    });
}

#[test]
fn sysbench_lua_scripts_on_postgresql_match_the_built_in_tests() {
    if !sysbench_scripts_installed() {
        return;
    }
    let Some(pg) = Postgres::start() else {
        skip("PostgreSQL is not installed (Debian package postgresql)");
        return;
    };
    lua_scripts_match_the_built_in_tests(&pg.args(), &|| {
        pg.psql(
            "sbtest",
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'sbtest%'",
        )
    });
}

/// The number inside "(X per sec.)" on the first line of `text` holding `key`.
fn per_sec_after(text: &str, key: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.contains(key))
        .unwrap_or_else(|| panic!("'{key}' not in sysbench's output:\n{text}"));
    let inner = line.split_once('(').unwrap().1;
    inner.split_whitespace().next().unwrap().parse().unwrap()
}

/// The number after `key` on the first line holding it.
fn number_after(text: &str, key: &str) -> f64 {
    let line = text.lines().find(|l| l.contains(key)).unwrap();
    line.split_once(key).unwrap().1.trim().parse().unwrap()
}

/// Issue 26: real sysbench 1.0 OLTP logs, written here against MariaDB and
/// PostgreSQL, imported by `virtperf import`; each run is told its test
/// from its queries and carries the figures sysbench printed.
#[test]
fn sysbench_oltp_logs_from_both_servers_are_imported_as_printed() {
    if !sysbench_scripts_installed() {
        return;
    }
    let (Some(m), Some(pg)) = (Mariadb::start(), Postgres::start()) else {
        skip("MariaDB or PostgreSQL is not installed (Debian packages mariadb-server, postgresql)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (server, args) in [("mariadb", m.args()), ("postgresql", pg.args())] {
        let sb = |test: &str, extra: &[&str]| {
            let mut c = Command::new("sysbench");
            c.arg(test)
                .args(&args)
                .args(["--tables=1", "--table-size=200"])
                .args(extra);
            run(&mut c)
        };
        sb("oltp_read_write", &["prepare"]);
        let tests = [
            "oltp_read_write",
            "oltp_read_only",
            "oltp_point_select",
            "oltp_write_only",
        ];
        let mut files = Vec::new();
        let mut printed = Vec::new();
        for test in tests {
            let text = sb(test, &["--time=0", "--events=200", "--threads=2", "run"]);
            let file = dir.path().join(format!("{server}-{test}.log"));
            std::fs::write(&file, &text).unwrap();
            files.push(file);
            printed.push(text);
        }
        sb("oltp_read_write", &["cleanup"]);
        let store = dir.path().join(format!("store-{server}"));
        output_ok(
            virtperf()
                .args(["import", "--env", &format!("sysbench-{server}"), "--out"])
                .arg(&store)
                .args(&files),
        );
        let db = virtperf::store::Store::open_read_only(&store).unwrap();
        let cmp = db.latest().unwrap().unwrap();
        let runs = db.runs(cmp.id).unwrap();
        assert_eq!(runs.len(), tests.len(), "{server}");
        for ((test, text), file) in tests.iter().zip(&printed).zip(&files) {
            let name = file.file_name().unwrap().to_str().unwrap();
            let doc = runs
                .iter()
                .filter_map(|r| r.doc.as_ref())
                .find(|d| d.env.imported.as_ref().is_some_and(|i| i.file == name))
                .unwrap_or_else(|| panic!("no run from {name}"));
            assert_eq!(
                &doc.workload, test,
                "{name}: the test told from its queries"
            );
            let m = |n: &str| doc.metric(n).unwrap_or_else(|| panic!("{name}: {n}"));
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
            assert!(
                close(m("tps"), per_sec_after(text, "transactions:")),
                "{name}"
            );
            assert!(close(m("qps"), per_sec_after(text, "queries:")), "{name}");
            assert!(
                close(m("latency_p95_ms"), number_after(text, "95th percentile:")),
                "{name}"
            );
            assert!(
                close(m("latency_avg_ms"), number_after(text, "avg:")),
                "{name}"
            );
            let imported = doc.env.imported.as_ref().unwrap();
            assert_eq!(imported.tool, "sysbench", "{name}");
            let banner = text.lines().next().unwrap();
            assert_eq!(
                Some(imported.version.as_str()),
                banner.split_whitespace().nth(1),
                "{name}"
            );
        }
    }
}
