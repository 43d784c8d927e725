//! The results store: one SQLite database per results directory. Each
//! comparison is a row; each finished run is written the moment it arrives
//! (one transaction per result), so an interrupted comparison loses nothing
//! and `--resume` knows what is left.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::core::result::ResultDoc;

pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// A private copy a read-only open reads from (dropped after `conn`).
    _copy: Option<tempfile::TempDir>,
}

/// A comparison's set-up, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonRow {
    pub id: i64,
    pub started_at: String,
    pub suite: String,
    pub baseline: String,
    /// Environment labels, baseline first.
    pub envs: Vec<String>,
    /// compare's arguments it was started with (secret options left out);
    /// a store from before typed requests (`Store::request`) resumes from
    /// them.
    pub args: Vec<String>,
    pub finished: bool,
    /// Run in the adaptive design (`--repeat auto`): its headline verdicts
    /// come from `analysis::sequential`.
    pub adaptive: bool,
}

/// One stored run.
#[derive(Debug, Clone)]
pub struct RunRow {
    pub env: String,
    pub entry: usize,
    pub label: String,
    pub round: usize,
    pub doc: Option<ResultDoc>,
    pub error: Option<String>,
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
";

impl Store {
    /// Opens (creating) `dir/results.db`.
    pub fn open(dir: &Path) -> Result<Store> {
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
        Ok(Store {
            conn,
            path,
            _copy: None,
        })
    }

    /// Opens `dir/results.db` for reading only (`report`): nothing in `dir`
    /// is created or changed, so it works in a read-only directory and on a
    /// copied store, and a file that is not a results store is refused
    /// rather than filled with tables. SQLite would make `-shm` and `-wal`
    /// files beside a WAL database even to read it; so a store with no
    /// pending WAL is read as immutable, and one with a WAL (a comparison
    /// still running, or a store copied with it) from a private copy of both
    /// files, so what is only in the WAL is read too.
    pub fn open_read_only(dir: &Path) -> Result<Store> {
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
        Ok(Store {
            conn,
            path,
            _copy: copy,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn begin(
        &self,
        started_at: &str,
        suite: &str,
        baseline: &str,
        envs: &[String],
        args: &[String],
    ) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO comparisons (started_at, suite, baseline, envs, args) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                started_at,
                suite,
                baseline,
                serde_json::to_string(envs)?,
                serde_json::to_string(args)?
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Writes one finished run at once.
    pub fn record(
        &self,
        comparison: i64,
        env: &str,
        entry: usize,
        label: &str,
        round: usize,
        outcome: std::result::Result<&ResultDoc, &str>,
    ) -> Result<()> {
        let (doc, error) = match outcome {
            Ok(d) => (Some(serde_json::to_string(d)?), None),
            Err(e) => (None, Some(e.to_string())),
        };
        self.conn.execute(
            "INSERT INTO runs (comparison, env, entry, label, round, doc, error, finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![comparison, env, entry as i64, label, round as i64, doc, error, crate::core::time::now_rfc3339()],
        )?;
        Ok(())
    }

    /// Runs `f` in one transaction: what it writes is stored together, or,
    /// when it fails (or the process dies midway), none of it.
    pub fn in_transaction<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match f(self) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    pub fn finish(&self, comparison: i64) -> Result<()> {
        self.conn.execute(
            "UPDATE comparisons SET finished = 1 WHERE id = ?1",
            params![comparison],
        )?;
        Ok(())
    }

    fn row(r: &rusqlite::Row) -> rusqlite::Result<ComparisonRow> {
        let envs: String = r.get(4)?;
        let args: String = r.get(5)?;
        Ok(ComparisonRow {
            id: r.get(0)?,
            started_at: r.get(1)?,
            suite: r.get(2)?,
            baseline: r.get(3)?,
            envs: serde_json::from_str(&envs).unwrap_or_default(),
            args: serde_json::from_str(&args).unwrap_or_default(),
            finished: r.get::<_, i64>(6)? != 0,
            adaptive: false,
        })
    }

    pub fn comparison(&self, id: i64) -> Result<Option<ComparisonRow>> {
        let row = self
            .conn
            .query_row(
                "SELECT id, started_at, suite, baseline, envs, args, finished FROM comparisons WHERE id = ?1",
                params![id],
                Self::row,
            )
            .optional()?;
        Ok(row.map(|r| self.with_design(r)))
    }

    /// Records that a comparison runs in the adaptive design.
    pub fn set_adaptive(&self, comparison: i64) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO designs (comparison, adaptive) VALUES (?1, 1)",
            params![comparison],
        )?;
        Ok(())
    }

    /// A store from before the adaptive design has no `designs` table: its
    /// comparisons are fixed.
    fn with_design(&self, mut row: ComparisonRow) -> ComparisonRow {
        row.adaptive = self
            .conn
            .query_row(
                "SELECT adaptive FROM designs WHERE comparison = ?1",
                params![row.id],
                |r| r.get::<_, i64>(0),
            )
            .is_ok_and(|a| a != 0);
        row
    }

    /// Every comparison in the store, oldest first.
    pub fn comparisons(&self) -> Result<Vec<ComparisonRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, started_at, suite, baseline, envs, args, finished FROM comparisons ORDER BY id",
        )?;
        let rows = stmt
            .query_map([], Self::row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows.into_iter().map(|r| self.with_design(r)).collect())
    }

    /// The newest comparison, finished or not.
    pub fn latest(&self) -> Result<Option<ComparisonRow>> {
        let row = self
            .conn
            .query_row(
                "SELECT id, started_at, suite, baseline, envs, args, finished FROM comparisons ORDER BY id DESC LIMIT 1",
                [],
                Self::row,
            )
            .optional()?;
        Ok(row.map(|r| self.with_design(r)))
    }

    pub fn runs(&self, comparison: i64) -> Result<Vec<RunRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT env, entry, label, round, doc, error FROM runs WHERE comparison = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![comparison], |r| {
            let doc: Option<String> = r.get(4)?;
            Ok(RunRow {
                env: r.get(0)?,
                entry: r.get::<_, i64>(1)? as usize,
                label: r.get(2)?,
                round: r.get::<_, i64>(3)? as usize,
                doc: doc.as_deref().and_then(|d| serde_json::from_str(d).ok()),
                // A stored document that no longer reads is a failed run,
                // never a silent gap.
                error: match (r.get::<_, Option<String>>(5)?, &doc) {
                    (Some(e), _) => Some(e),
                    (None, Some(d)) if serde_json::from_str::<ResultDoc>(d).is_err() => {
                        Some("the stored result does not parse".into())
                    }
                    (None, _) => None,
                },
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Whether (env, entry, round) already has a successful result: one
    /// that is stored and still reads as a result document.
    pub fn done(&self, comparison: i64, env: &str, entry: usize, round: usize) -> Result<bool> {
        let mut stmt = self.conn.prepare(
            "SELECT doc FROM runs WHERE comparison = ?1 AND env = ?2 AND entry = ?3 AND round = ?4 AND doc IS NOT NULL",
        )?;
        let docs = stmt.query_map(params![comparison, env, entry as i64, round as i64], |r| {
            r.get::<_, String>(0)
        })?;
        for doc in docs {
            if serde_json::from_str::<ResultDoc>(&doc?).is_ok() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Records what a comparison's plan was (a digest of its jobs), so a
    /// resume can tell that the suite changed.
    pub fn set_plan_digest(&self, comparison: i64, digest: &str) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO plans (comparison, digest) VALUES (?1, ?2)",
            params![comparison, digest],
        )?;
        Ok(())
    }

    /// Records what a comparison was asked to run, as the JSON of the typed
    /// request (never a secret), for `--resume` to continue it from.
    pub fn set_request(&self, comparison: i64, request: &str) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO requests (comparison, request) VALUES (?1, ?2)",
            params![comparison, request],
        )?;
        Ok(())
    }

    /// The request recorded by `set_request`; `None` for a comparison from
    /// before requests were stored (its `args` are what it started with).
    pub fn request(&self, comparison: i64) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT request FROM requests WHERE comparison = ?1",
                params![comparison],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The digest recorded by `set_plan_digest`, if any.
    pub fn plan_digest(&self, comparison: i64) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT digest FROM plans WHERE comparison = ?1",
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
fn file_uri(path: &Path) -> Result<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_paths_are_paths_whatever_their_characters() {
        // Issue 53, item 12: the path went into a URI unescaped: 'st%41'
        // read stA/results.db, 'st?x' and 'st#y' did not open, and
        // 'file:z' was taken for a URI.
        let root = tempfile::tempdir().unwrap();
        let other = root.path().join("stA");
        Store::open(&other)
            .unwrap()
            .begin("t", "the-other-store", "host", &["host".into()], &[])
            .unwrap();
        for name in ["st%41", "st?x", "st#y", "file:z", "st%2Fy", "s t"] {
            let dir = root.path().join(name);
            {
                let s = Store::open(&dir).unwrap();
                s.begin("t", name, "host", &["host".into()], &[]).unwrap();
            }
            assert!(dir.join("results.db").is_file(), "{name}");
            // Checkpointed (no WAL): the immutable, URI-opened read.
            let r = Store::open_read_only(&dir).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(r.latest().unwrap().unwrap().suite, name);
        }
        // A relative path (report's usual form) is made absolute.
        let rel = file_uri(Path::new("st%41")).unwrap();
        assert!(
            rel.starts_with("file:///") && rel.ends_with("/st%2541"),
            "{rel}"
        );
        assert_eq!(
            file_uri(Path::new("/a b/%?#")).unwrap(),
            "file:///a%20b/%25%3F%23"
        );
    }

    #[test]
    fn a_stored_result_that_does_not_parse_is_not_done() {
        // Issue 14, item 17.
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        let id = s
            .begin("t", "suite", "host", &["host".into()], &[])
            .unwrap();
        s.conn
            .execute(
                "INSERT INTO runs (comparison, env, entry, label, round, doc, error, finished_at) VALUES (?1, 'host', 0, 'cpu', 0, '{\"not\": \"a result\"}', NULL, 'now')",
                params![id],
            )
            .unwrap();
        assert!(!s.done(id, "host", 0, 0).unwrap());
        let runs = s.runs(id).unwrap();
        assert!(runs[0].doc.is_none());
        assert!(runs[0].error.as_deref().unwrap().contains("does not parse"));
        assert_eq!(s.plan_digest(id).unwrap(), None);
        s.set_plan_digest(id, "abc").unwrap();
        assert_eq!(s.plan_digest(id).unwrap().as_deref(), Some("abc"));
        assert_eq!(s.request(id).unwrap(), None);
        s.set_request(id, "{}").unwrap();
        assert_eq!(s.request(id).unwrap().as_deref(), Some("{}"));
    }

    #[test]
    fn reading_never_writes() {
        // Issue 14, item 18: report opened the store read-write and wrote
        // tables into any file named results.db.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("results.db"), b"").unwrap();
        let err = Store::open_read_only(dir.path()).err().unwrap().to_string();
        assert!(err.contains("not a virtperf results store"), "{err}");
        assert_eq!(
            std::fs::metadata(dir.path().join("results.db"))
                .unwrap()
                .len(),
            0
        );
        std::fs::remove_file(dir.path().join("results.db")).unwrap();
        {
            let s = Store::open(dir.path()).unwrap();
            s.begin("t", "suite", "host", &["host".into()], &[])
                .unwrap();
        }
        let before = std::fs::read(dir.path().join("results.db")).unwrap();
        let r = Store::open_read_only(dir.path()).unwrap();
        assert_eq!(r.latest().unwrap().unwrap().suite, "suite");
        assert!(r.begin("t", "x", "host", &[], &[]).is_err(), "read-only");
        drop(r);
        assert_eq!(
            std::fs::read(dir.path().join("results.db")).unwrap(),
            before
        );
    }

    /// Every file in `dir` with its bytes.
    fn snapshot(dir: &Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), std::fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    }

    #[test]
    fn reading_a_copied_wal_store_changes_nothing_and_reads_the_wal() {
        // Issue 24, item 13: `report` on a copied WAL store created
        // results.db-shm and results.db-wal.
        let live = tempfile::tempdir().unwrap();
        let s = Store::open(live.path()).unwrap();
        s.begin("t", "only-in-the-wal", "host", &["host".into()], &[])
            .unwrap();
        // Copied while the writer is open: the comparison is in the WAL.
        let copy = tempfile::tempdir().unwrap();
        for name in ["results.db", "results.db-wal"] {
            std::fs::copy(live.path().join(name), copy.path().join(name)).unwrap();
        }
        assert!(
            std::fs::metadata(copy.path().join("results.db-wal"))
                .unwrap()
                .len()
                > 0
        );
        drop(s);
        let before = snapshot(copy.path());
        let r = Store::open_read_only(copy.path()).unwrap();
        assert_eq!(r.latest().unwrap().unwrap().suite, "only-in-the-wal");
        assert!(r.begin("t", "x", "host", &[], &[]).is_err(), "read-only");
        drop(r);
        assert_eq!(snapshot(copy.path()), before);
        // And a store without a WAL (checkpointed): nothing made beside it.
        let before = snapshot(live.path());
        let r = Store::open_read_only(live.path()).unwrap();
        assert!(r.latest().unwrap().is_some());
        drop(r);
        assert_eq!(snapshot(live.path()), before);
        assert!(!live.path().join("results.db-shm").exists());
    }
    use crate::core::result::Metric;

    fn doc(v: f64) -> ResultDoc {
        ResultDoc::new(
            "cpu",
            "",
            vec![Metric::new("events_per_sec", v, "events/s", true)],
        )
    }

    #[test]
    fn results_survive_reopening_and_resume_knows_what_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let id = {
            let s = Store::open(dir.path()).unwrap();
            let id = s
                .begin(
                    "t",
                    "quick",
                    "host",
                    &["host".into(), "docker".into()],
                    &["compare".into()],
                )
                .unwrap();
            s.record(id, "host", 0, "cpu", 0, Ok(&doc(10.0))).unwrap();
            s.record(id, "docker", 0, "cpu", 0, Err("boom")).unwrap();
            id
        };
        let s = Store::open(dir.path()).unwrap();
        let c = s.latest().unwrap().unwrap();
        assert_eq!(c.id, id);
        assert_eq!(c.envs, vec!["host", "docker"]);
        assert!(!c.finished);
        assert!(s.done(id, "host", 0, 0).unwrap());
        assert!(!s.done(id, "docker", 0, 0).unwrap());
        let runs = s.runs(id).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(
            runs[0].doc.as_ref().unwrap().metric("events_per_sec"),
            Some(10.0)
        );
        assert_eq!(runs[1].error.as_deref(), Some("boom"));
        s.finish(id).unwrap();
        assert!(s.comparison(id).unwrap().unwrap().finished);
    }
}
