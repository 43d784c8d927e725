//! The PostgreSQL results store (`--out postgresql://USER@HOST/DB`), against
//! a real server each test starts on loopback (tests/common/dbservers.rs):
//! several writers at once lose and duplicate nothing, a writer killed
//! mid-comparison loses only the run it was in, a store made by SQLite and
//! one made by PostgreSQL give the same report, the password never reaches
//! argv, a message or the store, and a bad URL or an absent server is
//! refused naming the option, leaving nothing behind.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command as Std, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::dbservers::{free_port, Postgres};
use common::report_fixture;
use common::{output_ok, skip, virtperf};
use virtperf::core::result::{Metric, ResultDoc};
use virtperf::store::{Location, PgUrl, Store};

/// The password the tests' user gets: distinctive, so a leak is found.
const SECRET: &str = "Zq7-store-secret";

/// A server with a fresh database `db` owned by `sbtest`, whose password
/// is [`SECRET`]; None (after saying why) without PostgreSQL.
fn server(db: &str) -> Option<Postgres> {
    let Some(pg) = Postgres::start() else {
        skip("PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb)");
        return None;
    };
    pg.psql(
        "postgres",
        &format!("ALTER USER sbtest PASSWORD '{SECRET}'"),
    );
    pg.psql("postgres", &format!("CREATE DATABASE {db} OWNER sbtest"));
    Some(pg)
}

fn url_text(pg: &Postgres, db: &str) -> String {
    format!("postgresql://sbtest@127.0.0.1:{}/{db}", pg.port())
}

fn location(pg: &Postgres, db: &str) -> Location {
    Location::Pg(PgUrl {
        host: "127.0.0.1".into(),
        port: pg.port(),
        user: "sbtest".into(),
        db: db.into(),
        password: SECRET.into(),
        option: "--out",
    })
}

fn doc(v: f64) -> ResultDoc {
    ResultDoc::new(
        "cpu",
        "",
        vec![Metric::new("events_per_sec", v, "events/s", true)],
    )
}

#[test]
fn four_writers_at_once_lose_nothing_and_duplicate_nothing() {
    let Some(pg) = server("fleet") else { return };
    let at = location(&pg, "fleet");
    const WRITERS: usize = 4;
    const RUNS: usize = 200;
    let started = Instant::now();
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let at = &at;
            s.spawn(move || {
                // Each writer a host of its own: its own connection, schema
                // made (or found) at the same moment as the others'.
                let store = Store::create(at).unwrap();
                let envs = vec!["host".to_string(), "d".to_string()];
                let id = store
                    .begin("t", &format!("writer-{w}"), "host", &envs, &[])
                    .unwrap();
                // Run k is (env k % 2, entry k / 2 % 5, round k / 10).
                for k in 0..RUNS {
                    let env = ["host", "d"][k % 2];
                    store
                        .record(id, env, k / 2 % 5, "cpu", k / 10, Ok(&doc(k as f64)))
                        .unwrap();
                }
                store.finish(id).unwrap();
            });
        }
    });
    let store = Store::read(&at).unwrap();
    let cmps = store.comparisons().unwrap();
    assert_eq!(cmps.len(), WRITERS, "{cmps:?}");
    let suites: BTreeSet<_> = cmps.iter().map(|c| c.suite.clone()).collect();
    assert_eq!(suites.len(), WRITERS);
    for c in &cmps {
        assert!(c.finished, "{c:?}");
        let runs = store.runs(c.id).unwrap();
        assert_eq!(runs.len(), RUNS, "comparison {} ({})", c.id, c.suite);
        let keys: BTreeSet<_> = runs
            .iter()
            .map(|r| (r.env.clone(), r.entry, r.round))
            .collect();
        assert_eq!(keys.len(), RUNS, "a run stored twice in {}", c.suite);
        let values: BTreeSet<u64> = runs
            .iter()
            .map(|r| r.doc.as_ref().unwrap().metric("events_per_sec").unwrap() as u64)
            .collect();
        assert_eq!(values, (0..RUNS as u64).collect());
        assert!(store.done(c.id, "d", 1, 0).unwrap());
    }
    // Nothing more in the database than the writers wrote.
    assert_eq!(
        pg.psql("fleet", "SELECT count(*) FROM runs").trim(),
        (WRITERS * RUNS).to_string()
    );
    eprintln!(
        "{WRITERS} writers x {RUNS} runs in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_writer_killed_mid_comparison_loses_only_the_run_it_was_in() {
    let Some(pg) = server("killed") else { return };
    let url = url_text(&pg, "killed");
    let bin = assert_cmd::cargo::cargo_bin("virtperf");
    let mut child = Std::new(&bin)
        .env("PGPASSWORD", SECRET)
        .args(["compare", "--env", "host:name=b", "--repeat", "30", "--out"])
        .arg(&url)
        .args(["cpu", "--time=0.1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once a few runs are stored, in the middle of the next.
    let at = location(&pg, "killed");
    // Nothing until the comparison made the store.
    let count = || -> usize {
        Store::read(&at)
            .ok()
            .and_then(|s| Some(s.runs(s.latest().ok()??.id).ok()?.len()))
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while count() < 4 {
        assert!(Instant::now() < deadline, "no runs stored within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let store = Store::read(&at).unwrap();
    let cmp = store.latest().unwrap().unwrap();
    assert!(!cmp.finished);
    let runs = store.runs(cmp.id).unwrap();
    let stored = runs.len();
    assert!((4..60).contains(&stored), "{stored} runs of 60");
    // Every stored run whole and readable, none twice: each (env, round)
    // of the rounds begun is there but for the one cut short.
    assert!(runs.iter().all(|r| r.doc.is_some() && r.error.is_none()));
    let keys: BTreeSet<_> = runs.iter().map(|r| (r.env.clone(), r.round)).collect();
    assert_eq!(keys.len(), stored);
    let rounds = runs.iter().map(|r| r.round).max().unwrap() + 1;
    assert!(
        stored + 1 >= 2 * rounds,
        "{stored} runs in {rounds} rounds: more than the one in flight lost"
    );
    // The store takes the next comparison as if nothing happened.
    let out = output_ok(
        virtperf()
            .env("PGPASSWORD", SECRET)
            .args(["compare", "--env", "host:name=b", "--repeat", "1", "--out"])
            .arg(&url)
            .args(["cpu", "--time=0.05"]),
    );
    assert_eq!(store.runs(cmp.id).unwrap().len(), stored);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{url}#")), "{stderr}");
    assert!(!stderr.contains(SECRET));
}

/// `virtperf report TARGET --format F`'s output.
fn report(target: &str, format: &str, password_file: &Path) -> String {
    let out = output_ok(
        virtperf()
            .env_remove("PGPASSWORD")
            .args([
                "report",
                target,
                "--format",
                format,
                "--store-password-file",
            ])
            .arg(password_file),
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_store_made_by_sqlite_and_one_by_postgresql_give_the_same_report() {
    let Some(pg) = server("same") else { return };
    let dir = tempfile::tempdir().unwrap();
    let sqlite_dir = dir.path().join("results");
    let cmp = report_fixture::comparison();
    let runs = report_fixture::runs();
    for at in [Location::Dir(sqlite_dir.clone()), location(&pg, "same")] {
        let store = Store::create(&at).unwrap();
        let id = store
            .begin(
                &cmp.started_at,
                &cmp.suite,
                &cmp.baseline,
                &cmp.envs,
                &cmp.args,
            )
            .unwrap();
        for r in &runs {
            let outcome = match (&r.doc, &r.error) {
                (Some(d), _) => Ok(d),
                (None, e) => Err(e.as_deref().unwrap_or("failed")),
            };
            store
                .record(id, &r.env, r.entry, &r.label, r.round, outcome)
                .unwrap();
        }
        store.finish(id).unwrap();
    }
    let pw = dir.path().join("pw");
    std::fs::write(&pw, format!("{SECRET}\n")).unwrap();
    let url = url_text(&pg, "same");
    for format in ["json", "markdown", "csv"] {
        let from_sqlite = report(sqlite_dir.to_str().unwrap(), format, &pw);
        let from_pg = report(&url, format, &pw);
        assert!(from_sqlite.len() > 500, "{format}: {from_sqlite}");
        assert_eq!(from_sqlite, from_pg, "{format}");
        assert!(!from_pg.contains(SECRET));
    }
    assert_eq!(
        report(&format!("{url}#1"), "json", &pw),
        report(&url, "json", &pw)
    );
    // history reads it too, as it reads the directory.
    let history = |target: &str| {
        output_ok(
            virtperf()
                .args([
                    "history",
                    target,
                    "--format",
                    "json",
                    "--store-password-file",
                ])
                .arg(&pw),
        )
        .stdout
    };
    assert_eq!(history(sqlite_dir.to_str().unwrap()), history(&url));
}

/// A log `virtperf import` reads.
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/import/sysbench-0.4-cpu.txt"
);

/// Runs virtperf in an empty directory: its exit code, its stderr, how
/// long it took, and what it left in the directory.
fn refused(args: &[&str], password: Option<&str>) -> (i32, String, Duration, Vec<String>) {
    let cwd = tempfile::tempdir().unwrap();
    let mut cmd = virtperf();
    cmd.current_dir(cwd.path()).env_remove("PGPASSWORD");
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    let started = Instant::now();
    let out = cmd.args(args).output().unwrap();
    let took = started.elapsed();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        took,
        common::entries(cwd.path()),
    )
}

#[test]
fn bad_urls_absent_servers_and_wrong_passwords_are_refused_naming_the_option() {
    let absent = format!("postgresql://sbtest@127.0.0.1:{}/sbtest", free_port());
    for args in [
        vec!["compare", "--out", &absent, "cpu", "--time=0.05"],
        vec!["import", "--out", &absent, "--env", "x", FIXTURE],
    ] {
        let (code, err, took, left) = refused(&args, None);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("--out") && err.contains("cannot connect"),
            "{err}"
        );
        assert!(took < Duration::from_secs(20), "{took:?}");
        assert!(left.is_empty(), "{left:?}");
    }
    let (code, err, _, _) = refused(&["report", &absent], None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    // A password in the URL: refused before anything, and not repeated.
    let (code, err, _, left) = refused(
        &[
            "compare",
            "--out",
            "postgresql://u:hunter2@127.0.0.1/d",
            "cpu",
        ],
        None,
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--out") && err.contains("PGPASSWORD"), "{err}");
    assert!(
        !err.contains("hunter2") && left.is_empty(),
        "{err} {left:?}"
    );
    let (code, err, _, _) = refused(
        &["compare", "--out", "postgresql://127.0.0.1/d", "cpu"],
        None,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--out") && err.contains("name the user"),
        "{err}"
    );
    let (code, err, _, _) = refused(
        &["compare", "--resume", "--out", "postgresql://u@h/d", "cpu"],
        None,
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--resume"), "{err}");
    // A real server, the wrong password: the refusal says so, without it.
    let Some(pg) = server("wrong") else { return };
    let url = url_text(&pg, "wrong");
    let (code, err, _, left) = refused(
        &["compare", "--out", &url, "cpu", "--time=0.05"],
        Some("not-the-password"),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--out") && err.contains("refused user 'sbtest'"),
        "{err}"
    );
    assert!(!err.contains("not-the-password") && left.is_empty());
    // Nothing was made in the database either.
    assert_eq!(
        pg.psql(
            "wrong",
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs'"
        )
        .trim(),
        "0"
    );
    // A database without a store is not one, for report.
    let (code, err, _, _) = refused(&["report", &url], Some(SECRET));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no virtperf results store"), "{err}");
    // Imported with the password from a file, then read back.
    let pw = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(pw.path(), SECRET).unwrap();
    let out = virtperf()
        .env_remove("PGPASSWORD")
        .args([
            "import",
            "--env",
            "x",
            "--out",
            &url,
            "--store-password-file",
        ])
        .arg(pw.path())
        .arg(FIXTURE)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&url) && !said.contains(SECRET), "{said}");
    let csv = report(&url, "csv", pw.path());
    assert!(csv.contains("events_per_sec"), "{csv}");
    let dump = pg.psql("wrong", "SELECT c.args || c.envs || coalesce(r.doc, '') FROM comparisons c JOIN runs r ON r.comparison = c.id");
    assert!(!dump.is_empty() && !dump.contains(SECRET));
}

#[test]
fn an_import_into_a_shared_store_makes_a_comparison_of_its_own() {
    // A fleet's store: its newest comparison is another host's, still
    // running. An import once joined it; now it makes its own, and joins
    // one only when --comparison names it.
    let Some(pg) = server("shared") else { return };
    let url = url_text(&pg, "shared");
    let other = Store::create(&location(&pg, "shared")).unwrap();
    let envs = vec!["host".to_string(), "d".to_string()];
    let theirs = other
        .begin("t", "another-host", "host", &envs, &[])
        .unwrap();
    other
        .record(theirs, "host", 0, "cpu", 0, Ok(&doc(1.0)))
        .unwrap();
    let import = |extra: &[&str]| {
        virtperf()
            .env("PGPASSWORD", SECRET)
            .args(["import", "--env", "x", "--out", &url])
            .args(extra)
            .arg(FIXTURE)
            .output()
            .unwrap()
    };
    let out = import(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::read(&location(&pg, "shared")).unwrap();
    let cmps = store.comparisons().unwrap();
    assert_eq!(cmps.len(), 2, "{cmps:?}");
    assert_eq!(
        store.runs(theirs).unwrap().len(),
        1,
        "the other host's is untouched"
    );
    let own = &cmps[1];
    assert_eq!(
        (own.suite.as_str(), own.envs.clone()),
        ("import", vec!["x".to_string()])
    );
    assert_eq!(store.runs(own.id).unwrap().len(), 1);
    // Named, it joins that one; a number the store lacks is refused.
    let out = import(&["--comparison", &theirs.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let envs: Vec<String> = store
        .runs(theirs)
        .unwrap()
        .iter()
        .map(|r| r.env.clone())
        .collect();
    assert_eq!(envs, ["host", "x"]);
    let out = import(&["--comparison", "99"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--comparison 99") && err.contains("no comparison #99"),
        "{err}"
    );
    assert_eq!(store.comparisons().unwrap().len(), 2);
    // compare --baseline-from reads such a store too (password from the
    // environment): its one cpu run states no parameters, so nothing of
    // this run's is in common, which is refused before anything is made.
    let cwd = tempfile::tempdir().unwrap();
    let out = virtperf()
        .current_dir(cwd.path())
        .env("PGPASSWORD", SECRET)
        .args(["compare", "--baseline-from", &format!("{url}#{theirs}")])
        .args(["--env", "host", "--repeat", "2", "cpu", "--time=0.1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "--baseline-from {url}#{theirs}: comparison #{theirs}"
        )) && err.contains("has no entry in common")
            && !err.contains(SECRET),
        "{err}"
    );
    assert!(common::entries(cwd.path()).is_empty());
}
