//! The results store: one SQLite database per results directory (the
//! embedded default), or one PostgreSQL database a fleet shares
//! (`--out postgresql://USER@HOST/DB`), with the same schema. Each
//! comparison is a row; each finished run is written the moment it arrives
//! (one statement per result), so an interrupted comparison loses nothing
//! and `--resume` knows what is left. [`Store::create`] and [`Store::read`]
//! are the one way every command opens a store.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::core::result::ResultDoc;

mod location;
mod pg;
mod sqlite;

pub use location::{is_url, Location, PgUrl, PASSWORD_FILE};

pub struct Store {
    backend: Box<dyn Backend>,
    /// Where it is, for messages (a URL never with its password).
    place: String,
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
    /// Made by `compare --baseline-from`: its baseline's runs are an
    /// earlier comparison's, unpaired with this one's.
    pub baseline_from: Option<BaselineFrom>,
}

/// Where a comparison made by `compare --baseline-from` took its baseline's
/// runs: an earlier comparison's baseline (another day, maybe another host),
/// copied into this one under a label of their own. No run of it has a
/// partner of its round, so its verdicts are unpaired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineFrom {
    /// The store they came from (a URL never with its password).
    pub store: String,
    /// The comparison there, and when it started.
    pub comparison: i64,
    pub started_at: String,
    /// Its baseline's label there.
    pub env: String,
    /// The machine its baseline ran on, in a line (CPU, kernel, ...).
    pub fingerprint: String,
    /// Entries of this comparison it has no runs for, each with why
    /// (label, reason): reported as not comparable.
    #[serde(default)]
    pub not_comparable: Vec<(String, String)>,
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

/// A comparisons row as both backends store it (lists as JSON text).
struct RawComparison {
    id: i64,
    started_at: String,
    suite: String,
    baseline: String,
    envs: String,
    args: String,
    finished: bool,
}

/// A runs row as both backends store it (the document as JSON text).
struct RawRun {
    env: String,
    entry: i64,
    label: String,
    round: i64,
    doc: Option<String>,
    error: Option<String>,
}

/// Which comparisons to read.
#[derive(Clone, Copy)]
enum Which {
    All,
    One(i64),
    Latest,
}

/// The tables holding one text per comparison.
#[derive(Clone, Copy)]
enum Keyed {
    Plan,
    Request,
    BaselineFrom,
}

/// What a store's database does; SQL aside, the backends are alike.
trait Backend: Send {
    /// Statements without parameters (transaction control).
    fn batch(&self, sql: &str) -> Result<()>;
    /// A transaction that will write.
    fn begin_transaction(&self) -> Result<()>;
    fn begin(&self, c: &RawComparison) -> Result<i64>;
    fn record(&self, comparison: i64, run: &RawRun, at: &str) -> Result<()>;
    fn finish(&self, comparison: i64) -> Result<()>;
    fn comparisons(&self, which: Which) -> Result<Vec<RawComparison>>;
    /// False where the store has no design recorded (or no table for it).
    fn adaptive(&self, comparison: i64) -> bool;
    fn set_adaptive(&self, comparison: i64) -> Result<()>;
    /// A comparison's runs in the order they were stored; with `only`
    /// (env, entry, round), that one's runs that hold a document.
    fn runs(&self, comparison: i64, only: Option<(&str, i64, i64)>) -> Result<Vec<RawRun>>;
    fn set_text(&self, k: Keyed, comparison: i64, value: &str) -> Result<()>;
    fn text(&self, k: Keyed, comparison: i64) -> Result<Option<String>>;
}

impl Store {
    /// Opens (creating) the store at `at`, to write: a results directory's
    /// `results.db`, or a PostgreSQL database's tables.
    pub fn create(at: &Location) -> Result<Store> {
        Ok(match at {
            Location::Dir(d) => Store::open(d)?,
            Location::Pg(u) => Store {
                backend: Box::new(pg::PgStore::open(u)?),
                place: u.to_string(),
            },
        })
    }

    /// Opens the store at `at` to read only (`report`, `history`): nothing
    /// is created or changed, and a place holding no store is refused.
    pub fn read(at: &Location) -> Result<Store> {
        Ok(match at {
            Location::Dir(d) => Store::open_read_only(d)?,
            Location::Pg(u) => Store {
                backend: Box::new(pg::PgStore::open_read_only(u)?),
                place: u.to_string(),
            },
        })
    }

    /// Opens (creating) `dir/results.db`.
    pub fn open(dir: &Path) -> Result<Store> {
        Ok(Store {
            backend: Box::new(sqlite::Sqlite::open(dir)?),
            place: dir.join("results.db").display().to_string(),
        })
    }

    /// Opens `dir/results.db` for reading only (see `Store::read`).
    pub fn open_read_only(dir: &Path) -> Result<Store> {
        Ok(Store {
            backend: Box::new(sqlite::Sqlite::open_read_only(dir)?),
            place: dir.join("results.db").display().to_string(),
        })
    }

    /// Where the store is: its file, or its URL (without a password).
    pub fn place(&self) -> &str {
        &self.place
    }

    pub fn begin(
        &self,
        started_at: &str,
        suite: &str,
        baseline: &str,
        envs: &[String],
        args: &[String],
    ) -> Result<i64> {
        self.backend.begin(&RawComparison {
            id: 0,
            started_at: started_at.into(),
            suite: suite.into(),
            baseline: baseline.into(),
            envs: serde_json::to_string(envs)?,
            args: serde_json::to_string(args)?,
            finished: false,
        })
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
        let run = RawRun {
            env: env.into(),
            entry: entry as i64,
            label: label.into(),
            round: round as i64,
            doc,
            error,
        };
        self.backend
            .record(comparison, &run, &crate::core::time::now_rfc3339())
    }

    /// Runs `f` in one transaction: what it writes is stored together, or,
    /// when it fails (or the process dies midway), none of it.
    pub fn in_transaction<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        self.backend.begin_transaction()?;
        match f(self) {
            Ok(v) => {
                self.backend.batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.backend.batch("ROLLBACK");
                Err(e)
            }
        }
    }

    pub fn finish(&self, comparison: i64) -> Result<()> {
        self.backend.finish(comparison)
    }

    fn rows(&self, which: Which) -> Result<Vec<ComparisonRow>> {
        Ok(self
            .backend
            .comparisons(which)?
            .into_iter()
            .map(|r| ComparisonRow {
                adaptive: self.backend.adaptive(r.id),
                baseline_from: self.baseline_from(r.id),
                id: r.id,
                started_at: r.started_at,
                suite: r.suite,
                baseline: r.baseline,
                envs: serde_json::from_str(&r.envs).unwrap_or_default(),
                args: serde_json::from_str(&r.args).unwrap_or_default(),
                finished: r.finished,
            })
            .collect())
    }

    pub fn comparison(&self, id: i64) -> Result<Option<ComparisonRow>> {
        Ok(self.rows(Which::One(id))?.pop())
    }

    /// Records that a comparison runs in the adaptive design.
    pub fn set_adaptive(&self, comparison: i64) -> Result<()> {
        self.backend.set_adaptive(comparison)
    }

    /// Every comparison in the store, oldest first.
    pub fn comparisons(&self) -> Result<Vec<ComparisonRow>> {
        self.rows(Which::All)
    }

    /// The newest comparison, finished or not.
    pub fn latest(&self) -> Result<Option<ComparisonRow>> {
        Ok(self.rows(Which::Latest)?.pop())
    }

    pub fn runs(&self, comparison: i64) -> Result<Vec<RunRow>> {
        Ok(self
            .backend
            .runs(comparison, None)?
            .into_iter()
            .map(|r| {
                let doc = r.doc.as_deref().and_then(|d| serde_json::from_str(d).ok());
                // A stored document that no longer reads is a failed run,
                // never a silent gap.
                let error = match (r.error, &r.doc) {
                    (Some(e), _) => Some(e),
                    (None, Some(_)) if doc.is_none() => {
                        Some("the stored result does not parse".into())
                    }
                    (None, _) => None,
                };
                RunRow {
                    env: r.env,
                    entry: r.entry as usize,
                    label: r.label,
                    round: r.round as usize,
                    doc,
                    error,
                }
            })
            .collect())
    }

    /// Whether (env, entry, round) already has a successful result: one
    /// that is stored and still reads as a result document.
    pub fn done(&self, comparison: i64, env: &str, entry: usize, round: usize) -> Result<bool> {
        let runs = self
            .backend
            .runs(comparison, Some((env, entry as i64, round as i64)))?;
        Ok(runs.iter().any(|r| {
            r.doc
                .as_deref()
                .is_some_and(|d| serde_json::from_str::<ResultDoc>(d).is_ok())
        }))
    }

    /// Records what a comparison's plan was (a digest of its jobs), so a
    /// resume can tell that the suite changed.
    pub fn set_plan_digest(&self, comparison: i64, digest: &str) -> Result<()> {
        self.backend.set_text(Keyed::Plan, comparison, digest)
    }

    /// Records what a comparison was asked to run, as the JSON of the typed
    /// request (never a secret), for `--resume` to continue it from.
    pub fn set_request(&self, comparison: i64, request: &str) -> Result<()> {
        self.backend.set_text(Keyed::Request, comparison, request)
    }

    /// The request recorded by `set_request`; `None` for a comparison from
    /// before requests were stored (its `args` are what it started with).
    pub fn request(&self, comparison: i64) -> Result<Option<String>> {
        self.backend.text(Keyed::Request, comparison)
    }

    /// Records where a comparison's baseline runs came from
    /// (`compare --baseline-from`).
    pub fn set_baseline_from(&self, comparison: i64, from: &BaselineFrom) -> Result<()> {
        let text = serde_json::to_string(from)?;
        self.backend
            .set_text(Keyed::BaselineFrom, comparison, &text)
    }

    /// What `set_baseline_from` recorded. None for any other comparison,
    /// and in a store from before `--baseline-from`, which has no table
    /// for it (as `adaptive` reads a store without `designs`).
    fn baseline_from(&self, comparison: i64) -> Option<BaselineFrom> {
        let text = self
            .backend
            .text(Keyed::BaselineFrom, comparison)
            .ok()
            .flatten()?;
        serde_json::from_str(&text).ok()
    }

    /// The digest recorded by `set_plan_digest`, if any.
    pub fn plan_digest(&self, comparison: i64) -> Result<Option<String>> {
        self.backend.text(Keyed::Plan, comparison)
    }
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
        let rel = sqlite::file_uri(Path::new("st%41")).unwrap();
        assert!(
            rel.starts_with("file:///") && rel.ends_with("/st%2541"),
            "{rel}"
        );
        assert_eq!(
            sqlite::file_uri(Path::new("/a b/%?#")).unwrap(),
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
        rusqlite::Connection::open(dir.path().join("results.db"))
            .unwrap()
            .execute(
                "INSERT INTO runs (comparison, env, entry, label, round, doc, error, finished_at) VALUES (?1, 'host', 0, 'cpu', 0, '{\"not\": \"a result\"}', NULL, 'now')",
                [id],
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
