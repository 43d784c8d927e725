//! The PostgreSQL store: the SQLite store's schema in one database that
//! every host of a fleet writes to as it measures. Ids are sequences, so
//! writers never collide; each run is one INSERT (committed alone, or with
//! the rest of an import in one transaction), so a writer killed mid-run
//! loses only that run. The client is the OLTP workload's
//! (`workload::oltp::pgsql`, a layer below this one), with statements
//! prepared once per connection.

use std::cell::RefCell;

use anyhow::{anyhow, Result};

use super::{Backend, Keyed, PgUrl, RawComparison, RawRun, Which};
use crate::core::options::CliError;
use crate::workload::oltp::driver::{Conn, DbError, Param, Rows};
use crate::workload::oltp::pgsql::{Auth, Limits, Logon, Pg, Refusal};

/// The schema, made once under an advisory lock: two hosts making it at
/// the same moment would otherwise race in the catalog.
const SCHEMA: &str = "
BEGIN;
SELECT pg_advisory_xact_lock(5613724);
CREATE TABLE IF NOT EXISTS comparisons (
    id BIGSERIAL PRIMARY KEY,
    started_at TEXT NOT NULL,
    suite TEXT NOT NULL,
    baseline TEXT NOT NULL,
    envs TEXT NOT NULL,
    args TEXT NOT NULL,
    finished INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS runs (
    id BIGSERIAL PRIMARY KEY,
    comparison BIGINT NOT NULL REFERENCES comparisons(id),
    env TEXT NOT NULL,
    entry BIGINT NOT NULL,
    label TEXT NOT NULL,
    round BIGINT NOT NULL,
    doc TEXT,
    error TEXT,
    finished_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_comparison ON runs(comparison, env, entry, round);
CREATE TABLE IF NOT EXISTS designs (
    comparison BIGINT PRIMARY KEY REFERENCES comparisons(id),
    adaptive INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS plans (
    comparison BIGINT PRIMARY KEY REFERENCES comparisons(id),
    digest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    comparison BIGINT PRIMARY KEY REFERENCES comparisons(id),
    request TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS baselines_from (
    comparison BIGINT PRIMARY KEY REFERENCES comparisons(id),
    source TEXT NOT NULL
);
COMMIT;
";

pub(super) struct PgStore {
    conn: RefCell<Pg>,
    place: String,
}

/// A connection to `url`'s database, its failures worded with the option
/// that named it. Only SCRAM-SHA-256 carries the password (or none, where
/// the server trusts the host).
fn connect(url: &PgUrl) -> Result<Pg> {
    let login = Logon {
        host: &url.host,
        port: url.port,
        user: &url.user,
        password: &url.password,
        db: &url.db,
    };
    let o = url.option;
    Pg::logon(&login, true, Auth::Scram, Limits::DEFAULT).map_err(|r| {
        let why = match r {
            Refusal::Unreachable(why) => format!(
                "cannot connect to PostgreSQL at {}:{}: {why}; start the server, or correct the URL ({})",
                url.host, url.port, "postgresql://USER@HOST[:PORT]/DATABASE"
            ),
            Refusal::Weaker(asked) => format!(
                "the server asked for the password {asked}; a results store's password goes only by SCRAM-SHA-256 and nothing was sent: set the server's pg_hba.conf to scram-sha-256"
            ),
            Refusal::Refused(e) => format!(
                "the server refused user '{}' on database '{}': {} (SQLSTATE {}); check the URL and the password ($PGPASSWORD or --store-password-file)",
                url.user, url.db, e.message, e.code
            ),
        };
        CliError::Usage(format!("{o} {url}: {why}")).into()
    })
}

impl PgStore {
    /// Connects and makes the schema where it is missing.
    pub(super) fn open(url: &PgUrl) -> Result<PgStore> {
        let store = PgStore {
            conn: RefCell::new(connect(url)?),
            place: url.to_string(),
        };
        store
            .conn
            .borrow_mut()
            .batch(SCHEMA)
            .map_err(|e| store.failed(e))?;
        Ok(store)
    }

    /// Connects to read: the database must hold a results store, and the
    /// session is read-only, so nothing is made or changed.
    pub(super) fn open_read_only(url: &PgUrl) -> Result<PgStore> {
        let store = PgStore {
            conn: RefCell::new(connect(url)?),
            place: url.to_string(),
        };
        let tables = store.rows(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN (?, ?)",
            &[Param::Text("comparisons".into()), Param::Text("runs".into())],
        )?;
        if first_int(&tables)? != 2 {
            return Err(CliError::Usage(format!(
                "{} {url}: the database holds no virtperf results store (no comparisons in it): give the URL 'virtperf compare --out' wrote to",
                url.option
            ))
            .into());
        }
        store.batch("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")?;
        Ok(store)
    }

    fn failed(&self, e: DbError) -> anyhow::Error {
        anyhow!("the results store {}: {}", self.place, e)
    }

    fn rows(&self, sql: &str, params: &[Param]) -> Result<Rows> {
        self.conn
            .borrow_mut()
            .query(sql, Some(params))
            .map_err(|e| self.failed(e))
    }

    fn exec(&self, sql: &str, params: &[Param]) -> Result<u64> {
        self.conn
            .borrow_mut()
            .exec(sql, params)
            .map_err(|e| self.failed(e))
    }
}

/// Row `i`'s values as text (NULL as None).
fn values(rows: &Rows, i: usize) -> Vec<Option<String>> {
    rows.row(i)
        .map(|r| {
            r.map(|v| v.map(|b| String::from_utf8_lossy(b).into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

fn int(v: &Option<String>) -> Result<i64> {
    v.as_deref()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("the results store gave {v:?} where a number belongs"))
}

fn text(v: &Option<String>) -> Result<String> {
    v.clone()
        .ok_or_else(|| anyhow!("the results store gave NULL where text belongs"))
}

fn first_int(rows: &Rows) -> Result<i64> {
    int(values(rows, 0).first().unwrap_or(&None))
}

fn opt(s: &Option<String>) -> Param {
    match s {
        Some(s) => Param::Text(s.clone()),
        None => Param::Null,
    }
}

fn keyed(k: Keyed) -> (&'static str, &'static str) {
    match k {
        Keyed::Plan => ("plans", "digest"),
        Keyed::Request => ("requests", "request"),
        Keyed::BaselineFrom => ("baselines_from", "source"),
    }
}

impl Backend for PgStore {
    fn batch(&self, sql: &str) -> Result<()> {
        self.conn
            .borrow_mut()
            .batch(sql)
            .map_err(|e| self.failed(e))
    }

    /// Writing transactions (an import's) take turns: each reads what
    /// is stored before it adds to it, as SQLite's BEGIN IMMEDIATE has them.
    fn begin_transaction(&self) -> Result<()> {
        self.batch("BEGIN; SELECT pg_advisory_xact_lock(5613725)")
    }

    fn begin(&self, c: &RawComparison) -> Result<i64> {
        let rows = self.rows(
            "INSERT INTO comparisons (started_at, suite, baseline, envs, args) VALUES (?, ?, ?, ?, ?) RETURNING id",
            &[
                Param::Text(c.started_at.clone()),
                Param::Text(c.suite.clone()),
                Param::Text(c.baseline.clone()),
                Param::Text(c.envs.clone()),
                Param::Text(c.args.clone()),
            ],
        )?;
        first_int(&rows)
    }

    fn record(&self, comparison: i64, run: &RawRun, at: &str) -> Result<()> {
        self.exec(
            "INSERT INTO runs (comparison, env, entry, label, round, doc, error, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            &[
                Param::Int(comparison),
                Param::Text(run.env.clone()),
                Param::Int(run.entry),
                Param::Text(run.label.clone()),
                Param::Int(run.round),
                opt(&run.doc),
                opt(&run.error),
                Param::Text(at.to_string()),
            ],
        )?;
        Ok(())
    }

    fn finish(&self, comparison: i64) -> Result<()> {
        self.exec(
            "UPDATE comparisons SET finished = 1 WHERE id = ?",
            &[Param::Int(comparison)],
        )?;
        Ok(())
    }

    fn comparisons(&self, which: Which) -> Result<Vec<RawComparison>> {
        const COLUMNS: &str =
            "SELECT id, started_at, suite, baseline, envs, args, finished FROM comparisons";
        let (sql, id) = match which {
            Which::All => (format!("{COLUMNS} WHERE ? = 0 ORDER BY id"), 0),
            Which::One(id) => (format!("{COLUMNS} WHERE id = ?"), id),
            Which::Latest => (format!("{COLUMNS} WHERE ? = 0 ORDER BY id DESC LIMIT 1"), 0),
        };
        let rows = self.rows(&sql, &[Param::Int(id)])?;
        (0..rows.len())
            .map(|i| {
                let v = values(&rows, i);
                Ok(RawComparison {
                    id: int(&v[0])?,
                    started_at: text(&v[1])?,
                    suite: text(&v[2])?,
                    baseline: text(&v[3])?,
                    envs: text(&v[4])?,
                    args: text(&v[5])?,
                    finished: int(&v[6])? != 0,
                })
            })
            .collect()
    }

    fn adaptive(&self, comparison: i64) -> bool {
        self.rows(
            "SELECT adaptive FROM designs WHERE comparison = ?",
            &[Param::Int(comparison)],
        )
        .is_ok_and(|r| first_int(&r).is_ok_and(|a| a != 0))
    }

    fn set_adaptive(&self, comparison: i64) -> Result<()> {
        self.exec(
            "INSERT INTO designs (comparison, adaptive) VALUES (?, 1) ON CONFLICT (comparison) DO UPDATE SET adaptive = 1",
            &[Param::Int(comparison)],
        )?;
        Ok(())
    }

    fn runs(&self, comparison: i64, only: Option<(&str, i64, i64)>) -> Result<Vec<RawRun>> {
        const COLUMNS: &str = "SELECT env, entry, label, round, doc, error FROM runs";
        let rows = match only {
            None => self.rows(
                &format!("{COLUMNS} WHERE comparison = ? ORDER BY id"),
                &[Param::Int(comparison)],
            )?,
            Some((env, entry, round)) => self.rows(
                &format!("{COLUMNS} WHERE comparison = ? AND env = ? AND entry = ? AND round = ? AND doc IS NOT NULL ORDER BY id"),
                &[
                    Param::Int(comparison),
                    Param::Text(env.to_string()),
                    Param::Int(entry),
                    Param::Int(round),
                ],
            )?,
        };
        (0..rows.len())
            .map(|i| {
                let v = values(&rows, i);
                Ok(RawRun {
                    env: text(&v[0])?,
                    entry: int(&v[1])?,
                    label: text(&v[2])?,
                    round: int(&v[3])?,
                    doc: v[4].clone(),
                    error: v[5].clone(),
                })
            })
            .collect()
    }

    fn set_text(&self, k: Keyed, comparison: i64, value: &str) -> Result<()> {
        let (table, column) = keyed(k);
        self.exec(
            &format!("INSERT INTO {table} (comparison, {column}) VALUES (?, ?) ON CONFLICT (comparison) DO UPDATE SET {column} = EXCLUDED.{column}"),
            &[Param::Int(comparison), Param::Text(value.to_string())],
        )?;
        Ok(())
    }

    fn text(&self, k: Keyed, comparison: i64) -> Result<Option<String>> {
        let (table, column) = keyed(k);
        let rows = self.rows(
            &format!("SELECT {column} FROM {table} WHERE comparison = ?"),
            &[Param::Int(comparison)],
        )?;
        Ok(values(&rows, 0).into_iter().next().flatten())
    }
}
