//! examples/lua/tpcc.lua, a TPC-C written in sysbench 1.0 Lua, on a private
//! MariaDB and PostgreSQL (tests/common/dbservers.rs): prepare in two
//! threads, a short run in two threads, the consistency check and cleanup,
//! each through virtperf and through Debian's /usr/bin/sysbench with the very
//! same file and options, which is what shows the script is unmodified
//! sysbench Lua. Checked: exit codes, the tables' row counts after the
//! parallel load, the reported transactions and the script's own count of
//! them by type (the TPC-C mix), the check passing after each run and failing
//! once a warehouse's W_YTD is made wrong, no table left after cleanup, a
//! run before prepare naming the missing tables and a second prepare refused.
//! On MariaDB a session holds a district's row during the run: lock wait
//! timeouts restart transactions, are counted, and leave the data
//! consistent (under sysbench only the script's hook rolls them back).

mod common;

use std::time::{Duration, Instant};

use common::dbservers::{Mariadb, Postgres};
use common::skip;

const SYSBENCH: &str = "/usr/bin/sysbench";

/// A small data set: two warehouses, so that each of the two threads of
/// prepare loads one and payments and order lines can be remote.
const SIZE: &[&str] = &["--scale=2", "--items=1000", "--customers-per-district=200"];

fn script() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/examples/lua/tpcc.lua").to_string()
}

/// Runs `program` on the script with `db` and `args`; returns (exit code,
/// stdout, stderr).
fn tpcc(program: &str, db: &[String], args: &[&str]) -> (i32, String, String) {
    let out = assert_cmd::Command::new(program)
        .arg(script())
        .args(db)
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`tpcc`] that must succeed without a FATAL line (sysbench exits 0 when a
/// thread of a parallel command fails); returns stdout.
#[track_caller]
fn tpcc_ok(program: &str, db: &[String], args: &[&str], what: &str) -> String {
    let (code, out, err) = tpcc(program, db, args);
    assert!(
        code == 0 && !out.contains("FATAL") && !err.contains("FATAL"),
        "{what} through {program} (exit {code}):\n{out}\n{err}"
    );
    out
}

/// The number after `key` in a report line such as
/// `transactions:  812 (162.21 per sec.)`: (count, per second).
fn count_and_rate(text: &str, key: &str) -> (u64, f64) {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("no '{key}' line in:\n{text}"));
    let rest = line.trim_start()[key.len()..].trim();
    let (count, rate) = rest
        .split_once('(')
        .unwrap_or_else(|| panic!("unparsable: {line}"));
    let rate = rate.trim_end_matches(" per sec.)");
    (
        count.trim().parse().unwrap_or_else(|_| panic!("{line}")),
        rate.parse().unwrap_or_else(|_| panic!("{line}")),
    )
}

/// The script's `tpcc mix, thread N: new_order a payment b ...` lines summed
/// over the threads, in the order new_order, payment, order_status,
/// delivery, stock_level, rolled_back.
fn mix(text: &str) -> [u64; 6] {
    const NAMES: [&str; 6] = [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
        "rolled_back",
    ];
    let mut sum = [0u64; 6];
    let mut threads = 0;
    // Split on the prefix, not on lines: Lua's print writes a line and its
    // newline in two writes, so two threads' lines can run together
    // ("... rolled_back 6tpcc mix, thread 1: ...", seen under sysbench).
    for chunk in text.split("tpcc mix, thread ").skip(1) {
        threads += 1;
        let line = chunk.lines().next().unwrap_or_default();
        let words: Vec<&str> = line
            .split_once(": ")
            .unwrap_or_else(|| panic!("unparsable mix line: {line}"))
            .1
            .split_whitespace()
            .collect();
        for pair in words.chunks(2) {
            let i = NAMES.iter().position(|n| *n == pair[0]).unwrap();
            sum[i] += pair[1].parse::<u64>().unwrap();
        }
    }
    assert_eq!(threads, 2, "one mix line per thread expected in:\n{text}");
    sum
}

/// A server as the cycle needs it.
struct Server<'a> {
    name: &'a str,
    db: Vec<String>,
    /// Runs SQL in database sbtest as the administrator; its rows, one a
    /// line.
    sql: &'a dyn Fn(&str) -> String,
    /// Started as a run starts: a session that holds a lock a run's
    /// transactions wait for until they time out (ignorable errors that
    /// restart the transaction); the run must count them and keep the
    /// data consistent.
    contend: Option<&'a dyn Fn() -> std::process::Child>,
}

const TABLES: &[&str] = &[
    "warehouse",
    "district",
    "customer",
    "history",
    "new_order",
    "orders",
    "order_line",
    "item",
    "stock",
];

/// The TPC-C tables in database sbtest.
fn tables_left(s: &Server) -> Vec<String> {
    let list = TABLES
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(",");
    let schema = if s.name == "mariadb" {
        "'sbtest'"
    } else {
        "'public'"
    };
    (s.sql)(&format!(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = {schema} \
         AND table_name IN ({list}) ORDER BY table_name"
    ))
    .lines()
    .map(str::to_string)
    .collect()
}

/// prepare, run, check and cleanup through `program`.
fn cycle(s: &Server, program: &str) {
    let db = &s.db;
    let with = |extra: &[&'static str]| -> Vec<&str> {
        let mut v = SIZE.to_vec();
        v.extend_from_slice(extra);
        v
    };
    let started = Instant::now();
    tpcc_ok(program, db, &with(&["--threads=2", "prepare"]), "prepare");
    let prepared = started.elapsed();
    for (table, rows) in [
        ("warehouse", 2),
        ("district", 20),
        ("customer", 4000),
        ("history", 4000),
        ("orders", 4000),
        // The last 30% of each district's 200 orders.
        ("new_order", 2 * 10 * 60),
        ("item", 1000),
        ("stock", 2000),
    ] {
        let n = (s.sql)(&format!("SELECT COUNT(*) FROM {table}"));
        assert_eq!(n.trim(), rows.to_string(), "{table} after prepare");
    }

    let locker = s.contend.map(|start| start());
    let out = tpcc_ok(
        program,
        db,
        &with(&["--threads=2", "--time=4", "run"]),
        "run",
    );
    if let Some(mut locker) = locker {
        let held = locker.wait().unwrap();
        assert!(held.success(), "the session holding a lock failed");
        let (ignored, _) = count_and_rate(&out, "ignored errors:");
        assert!(ignored > 0, "no lock wait timed out:\n{out}");
    }
    let (trx, tps) = count_and_rate(&out, "transactions:");
    let (queries, _) = count_and_rate(&out, "queries:");
    let (ignored, _) = count_and_rate(&out, "ignored errors:");
    assert!(trx > 0 && tps > 0.0, "no transactions:\n{out}");
    assert!(
        queries > 5 * trx,
        "at least 5 statements a transaction:\n{out}"
    );
    let m = mix(&out);
    let total: u64 = m[..5].iter().sum::<u64>() + m[5];
    assert!(
        total.abs_diff(trx) <= 2,
        "the script counted {total} transactions, the report {trx}:\n{out}"
    );
    let new_orders = m[0] + m[5];
    let small = m[2] + m[3] + m[4];
    assert!(m[0] > 0 && m[1] > 0 && small > 0, "mix {m:?}");
    // Each type's share within 4.5 standard deviations of the mix's
    // (a false alarm about once in 150000 runs).
    for (count, p, what) in [
        (new_orders, 0.45, "new_order"),
        (m[1], 0.43, "payment"),
        (m[2], 0.04, "order_status"),
        (m[3], 0.04, "delivery"),
        (m[4], 0.04, "stock_level"),
    ] {
        let share = count as f64 / total as f64;
        let sd = (p * (1.0 - p) / total as f64).sqrt();
        assert!(
            (share - p).abs() <= 4.5 * sd,
            "{what} is {:.1}% of the mix {m:?}, not about {}%",
            share * 100.0,
            p * 100.0
        );
    }
    assert!(m[5] * 10 <= new_orders.max(10), "too many rollbacks: {m:?}");

    let checked = tpcc_ok(program, db, &with(&["check"]), "check after the run");
    assert!(
        checked.contains("check 4: sum(O_OL_CNT) = order_line rows in 20 district(s)")
            && checked.contains("conditions 1-4 hold"),
        "{checked}"
    );
    tpcc_ok(program, db, &with(&["cleanup"]), "cleanup");
    assert_eq!(tables_left(s), Vec::<String>::new(), "tables after cleanup");
    eprintln!(
        "tpcc.lua on {} through {program}: prepare {:.1} s, {trx} transactions, \
         {tps:.1} TPS, ignored errors {ignored}, mix {m:?} \
         (new_order payment order_status delivery stock_level rolled_back), check passed",
        s.name,
        prepared.as_secs_f64()
    );
}

/// run before prepare.
fn bad_input(s: &Server, program: &str) {
    let (code, out, err) = tpcc(program, &s.db, &["--time=2", "run"]);
    assert_ne!(code, 0, "run before prepare succeeded:\n{out}\n{err}");
    let said = format!("{out}{err}");
    assert!(
        said.contains("warehouse") && said.contains("missing: run prepare first"),
        "run before prepare through {program}:\n{said}"
    );
}

/// A second prepare onto loaded tables fails, and so does the check once a
/// warehouse's W_YTD is made wrong. Through virtperf only: sysbench exits 0
/// when a thread of a parallel command fails.
fn prepare_twice_and_a_wrong_ytd_fail(s: &Server, program: &str) {
    let mut args = SIZE.to_vec();
    args.extend(["--threads=2", "prepare"]);
    tpcc_ok(program, &s.db, &args, "prepare");
    let (code, out, err) = tpcc(program, &s.db, &args);
    assert!(
        code != 0 && err.contains("exist already") && err.contains("run cleanup first"),
        "a second prepare (exit {code}):\n{out}\n{err}"
    );
    (s.sql)("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 2");
    let (code, out, err) = tpcc(program, &s.db, &["check"]);
    assert_ne!(code, 0, "the check passed a wrong W_YTD:\n{out}\n{err}");
    assert!(
        out.contains("FAILED: condition 1, warehouse 2: W_YTD 300001.00")
            && format!("{out}{err}").contains("1 consistency condition(s) failed"),
        "{out}\n{err}"
    );
    tpcc_ok(program, &s.db, &["cleanup"], "cleanup");
}

/// The whole exercise on one server, under virtperf and under sysbench.
fn exercise(s: &Server) {
    let virtperf = env!("CARGO_BIN_EXE_virtperf");
    let mut programs = vec![virtperf];
    if std::path::Path::new(SYSBENCH).exists() {
        programs.push(SYSBENCH);
    } else {
        skip("no /usr/bin/sysbench (Debian's sysbench package): tpcc.lua runs under virtperf only");
    }
    for program in &programs {
        bad_input(s, program);
    }
    for program in &programs {
        cycle(s, program);
    }
    prepare_twice_and_a_wrong_ytd_fail(s, virtperf);
}

#[test]
fn tpcc_on_mariadb_through_virtperf_and_sysbench() {
    let Some(m) = Mariadb::start() else {
        skip("MariaDB is not installed (mariadb-server)");
        return;
    };
    let sql = |q: &str| m.sql(&format!("USE sbtest; {q}"));
    // A payment whose district update times out after its warehouse update
    // must not commit half (MySQL rolls back only the statement): the
    // script's before_restart_event hook ends the transaction.
    m.sql("SET GLOBAL innodb_lock_wait_timeout = 1");
    let hold_a_district = || {
        m.client()
            .args([
                "sbtest",
                "-e",
                "DO SLEEP(1); BEGIN; \
                 SELECT d_id FROM district WHERE d_w_id = 1 AND d_id = 1 FOR UPDATE; \
                 DO SLEEP(2.5); ROLLBACK",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    exercise(&Server {
        name: "mariadb",
        db: m.args(),
        sql: &sql,
        contend: Some(&hold_a_district),
    });
}

#[test]
fn tpcc_on_postgresql_through_virtperf_and_sysbench() {
    let Some(pg) = Postgres::start() else {
        skip("PostgreSQL is not installed (postgresql)");
        return;
    };
    let sql = |q: &str| pg.psql("sbtest", q);
    exercise(&Server {
        name: "postgresql",
        db: pg.args(),
        sql: &sql,
        // Its lock_timeout error (55P03) is not one sysbench restarts on.
        contend: None,
    });
}
