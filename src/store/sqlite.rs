//! The SQLite store: `results.db` in a results directory, the embedded
//! default.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::{Backend, Keyed, RawComparison, RawRun, Which};

pub(super) struct Sqlite {
    conn: Connection,
    /// A private copy a read-only open reads from (dropped after `conn`).
    _copy: Option<tempfile::TempDir>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    suite TEXT NOT NULL,
    baseline TEXT NOT NULL,
    envs TEXT NOT NULL,
    args TEXT NOT NULL,
    finished INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    comparison INTEGER NOT NULL REFERENCES comparisons(id),
    env TEXT NOT NULL,
    entry INTEGER NOT NULL,
    label TEXT NOT NULL,
    round INTEGER NOT NULL,
    doc TEXT,
    error TEXT,
    finished_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_comparison ON runs(comparison, env, entry, round);
CREATE TABLE IF NOT EXISTS designs (
    comparison INTEGER PRIMARY KEY REFERENCES comparisons(id),
    adaptive INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS plans (
    comparison INTEGER PRIMARY KEY REFERENCES comparisons(id),
    digest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    comparison INTEGER PRIMARY KEY REFERENCES comparisons(id),
    request TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS baselines_from (
    comparison INTEGER PRIMARY KEY REFERENCES comparisons(id),
    source TEXT NOT NULL
);
";

impl Sqlite {
    /// Opens (creating) `dir/results.db`.
    pub(super) fn open(dir: &Path) -> Result<Sqlite> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
        let path = dir.join("results.db");
        // A path, never a URI: a directory named `file:x` is that directory.
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_CREATE
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&path, flags)
            .with_context(|| format!("opening the results store {}", path.display()))?;
        conn.execute_batch(SCHEMA)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(Sqlite { conn, _copy: None })
    }

    /// Opens `dir/results.db` for reading only (`report`): nothing in `dir`
    /// is created or changed, so it works in a read-only directory and on a
    /// copied store, and a file that is not a results store is refused
    /// rather than filled with tables. SQLite would make `-shm` and `-wal`
    /// files beside a WAL database even to read it; so a store with no
    /// pending WAL is read as immutable, and one with a WAL (a comparison
    /// still running, or a store copied with it) from a private copy of both
    /// files, so what is only in the WAL is read too.
    pub(super) fn open_read_only(dir: &Path) -> Result<Sqlite> {
        use rusqlite::OpenFlags;
        let path = dir.join("results.db");
        if !path.is_file() {
            anyhow::bail!(
                "{} does not exist: give the directory 'virtperf compare --out' wrote",
                path.display()
            );
        }
        let wal = dir.join("results.db-wal");
        let pending = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
        let (conn, copy) = if pending {
            let copy = tempfile::tempdir().context("making a private copy of the store")?;
            for (from, name) in [(&path, "results.db"), (&wal, "results.db-wal")] {
                std::fs::copy(from, copy.path().join(name))
                    .with_context(|| format!("copying {}", from.display()))?;
            }
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let conn = Connection::open_with_flags(copy.path().join("results.db"), flags)
                .with_context(|| format!("opening the results store {}", path.display()))?;
            (conn, Some(copy))
        } else {
            // `immutable` is said only in a URI: the path goes in escaped.
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
            let uri = format!("{}?immutable=1", file_uri(&path)?);
            let conn = Connection::open_with_flags(uri, flags)
                .with_context(|| format!("opening the results store {}", path.display()))?;
            (conn, None)
        };
        let tables = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('comparisons', 'runs')",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap_or(0);
        if tables != 2 {
            anyhow::bail!(
                "{} is not a virtperf results store (no comparisons in it): give the directory 'virtperf compare --out' wrote",
                path.display()
            );
        }
        // Read-only from here on, the private copy included.
        conn.pragma_update(None, "query_only", true)?;
        Ok(Sqlite { conn, _copy: copy })
    }

    fn row(r: &rusqlite::Row) -> rusqlite::Result<RawComparison> {
        Ok(RawComparison {
            id: r.get(0)?,
            started_at: r.get(1)?,
            suite: r.get(2)?,
            baseline: r.get(3)?,
            envs: r.get(4)?,
            args: r.get(5)?,
            finished: r.get::<_, i64>(6)? != 0,
        })
    }
}

fn keyed(k: Keyed) -> (&'static str, &'static str) {
    match k {
        Keyed::Plan => ("plans", "digest"),
        Keyed::Request => ("requests", "request"),
        Keyed::BaselineFrom => ("baselines_from", "source"),
    }
}

impl Backend for Sqlite {
    fn batch(&self, sql: &str) -> Result<()> {
        Ok(self.conn.execute_batch(sql)?)
    }

    fn begin_transaction(&self) -> Result<()> {
        self.batch("BEGIN IMMEDIATE")
    }

    fn begin(&self, c: &RawComparison) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO comparisons (started_at, suite, baseline, envs, args) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![c.started_at, c.suite, c.baseline, c.envs, c.args],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    fn record(&self, comparison: i64, run: &RawRun, at: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO runs (comparison, env, entry, label, round, doc, error, finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![comparison, run.env, run.entry, run.label, run.round, run.doc, run.error, at],
        )?;
        Ok(())
    }

    fn finish(&self, comparison: i64) -> Result<()> {
        self.conn.execute(
            "UPDATE comparisons SET finished = 1 WHERE id = ?1",
            params![comparison],
        )?;
        Ok(())
    }

    fn comparisons(&self, which: Which) -> Result<Vec<RawComparison>> {
        const COLUMNS: &str =
            "SELECT id, started_at, suite, baseline, envs, args, finished FROM comparisons";
        let (sql, id) = match which {
            Which::All => (format!("{COLUMNS} WHERE ?1 = ?1 ORDER BY id"), 0),
            Which::One(id) => (format!("{COLUMNS} WHERE id = ?1"), id),
            Which::Latest => (
                format!("{COLUMNS} WHERE ?1 = ?1 ORDER BY id DESC LIMIT 1"),
                0,
            ),
        };
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt
            .query_map(params![id], Self::row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    fn adaptive(&self, comparison: i64) -> bool {
        // A store from before the adaptive design has no `designs` table.
        self.conn
            .query_row(
                "SELECT adaptive FROM designs WHERE comparison = ?1",
                params![comparison],
                |r| r.get::<_, i64>(0),
            )
            .is_ok_and(|a| a != 0)
    }

    fn set_adaptive(&self, comparison: i64) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO designs (comparison, adaptive) VALUES (?1, 1)",
            params![comparison],
        )?;
        Ok(())
    }

    fn runs(&self, comparison: i64, only: Option<(&str, i64, i64)>) -> Result<Vec<RawRun>> {
        let map = |r: &rusqlite::Row| {
            Ok(RawRun {
                env: r.get(0)?,
                entry: r.get(1)?,
                label: r.get(2)?,
                round: r.get(3)?,
                doc: r.get(4)?,
                error: r.get(5)?,
            })
        };
        const COLUMNS: &str = "SELECT env, entry, label, round, doc, error FROM runs";
        let rows = match only {
            None => self
                .conn
                .prepare(&format!("{COLUMNS} WHERE comparison = ?1 ORDER BY id"))?
                .query_map(params![comparison], map)?
                .collect::<rusqlite::Result<Vec<_>>>()?,
            Some((env, entry, round)) => self
                .conn
                .prepare(&format!(
                    "{COLUMNS} WHERE comparison = ?1 AND env = ?2 AND entry = ?3 AND round = ?4 AND doc IS NOT NULL ORDER BY id"
                ))?
                .query_map(params![comparison, env, entry, round], map)?
                .collect::<rusqlite::Result<Vec<_>>>()?,
        };
        Ok(rows)
    }

    fn set_text(&self, k: Keyed, comparison: i64, value: &str) -> Result<()> {
        let (table, column) = keyed(k);
        self.conn.execute(
            &format!("INSERT OR REPLACE INTO {table} (comparison, {column}) VALUES (?1, ?2)"),
            params![comparison, value],
        )?;
        Ok(())
    }

    fn text(&self, k: Keyed, comparison: i64) -> Result<Option<String>> {
        let (table, column) = keyed(k);
        Ok(self
            .conn
            .query_row(
                &format!("SELECT {column} FROM {table} WHERE comparison = ?1"),
                params![comparison],
                |r| r.get(0),
            )
            .optional()?)
    }
}

/// `path` as an SQLite URI (`file:///abs/path`, RFC 3986 and SQLite's
/// "URI filenames"): made absolute, and every byte but the unreserved ones
/// and `/` percent-encoded, so a directory named `st%41`, `st?x` or `st#y`
/// is that directory and not another, a query or a fragment.
pub(super) fn file_uri(path: &Path) -> Result<String> {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(path)
        .with_context(|| format!("finding where {} is", path.display()))?;
    let mut uri = String::from("file://");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(uri)
}
