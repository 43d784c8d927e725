//! The life of an OLTP test, as the runner drives it: `prepare` checks
//! that no table is in the way and bulk-loads them (dropping what it made
//! if it stops), `run` opens a connection per thread and turns their counts
//! into sysbench's rates and summary, and `cleanup` drops the tables (and
//! SQLite's file when nothing else is in it).

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};

use crate::core::observer::Observer;
use crate::core::options::{CliError, Values};
use crate::core::result::Metric;
use crate::core::signals;
use crate::engine::{self, EngineOptions, FastRng};
use crate::workload::{Measurement, Workload};

use super::config::Config;
use super::driver::Conn;
use super::rand::Unique;
use super::transaction::{Counts, OltpWorker, Statements};
use super::{load, Test, METRICS};

fn metric(name: &str, value: f64) -> Metric {
    crate::workload::metric_from(METRICS, name, value)
}

/// The lines of the run's text that are virtperf's additions to sysbench's
/// (the database, SQLite's busy waits): the `sysbench` persona leaves them
/// out ([`sysbench_text`]).
const DATABASE_LINE: &str = "Database: ";
const BUSY_LINE: &str = "    busy waits (SQLite write lock):";

/// A run's text as sysbench prints it: without virtperf's additions.
pub fn sysbench_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.starts_with(DATABASE_LINE) {
            // And the blank line after it.
            lines.next_if(|l| l.trim().is_empty());
            continue;
        }
        if line.starts_with(BUSY_LINE) {
            continue;
        }
        out.push_str(line);
    }
    out
}

pub struct OltpWorkload {
    cfg: Arc<Config>,
    /// The connection `ready` checked the tables on: the run's first, so a
    /// run checks them once (the statements it prepares are counted).
    checked: Option<Box<dyn Conn>>,
}

impl OltpWorkload {
    pub fn new(test: Test, values: &Values) -> Result<OltpWorkload> {
        Ok(OltpWorkload {
            cfg: Arc::new(Config::from_values(test, values)?),
            checked: None,
        })
    }

    fn sqlite_path(&self) -> Option<&Path> {
        self.cfg.target.sqlite_path()
    }

    /// The first of sysbench's tables that exists (or, `missing`, does not).
    fn find_table(&self, conn: &mut dyn Conn, missing: bool) -> Result<Option<u64>> {
        for n in 1..=self.cfg.tables {
            let exists = match conn.table_exists(&format!("sbtest{n}")) {
                Ok(exists) => exists,
                Err(e) => {
                    // Cut short by Ctrl-C: the run was interrupted.
                    signals::check()?;
                    bail!("{}: {e}", self.cfg.target.describe())
                }
            };
            if exists != missing {
                return Ok(Some(n));
            }
        }
        Ok(None)
    }

    /// "the SQLite database ./x.sqlite does not exist: run ... prepare".
    fn not_prepared(&self, what: &str) -> anyhow::Error {
        CliError::Usage(format!(
            "the {} {what}: run 'virtperf {} prepare' with the same --db-driver, --tables and connection options first",
            self.cfg.target.describe(),
            self.cfg.test.name()
        ))
        .into()
    }
}

/// `sbtest{from}` to `sbtest{to}`, for messages: each name when there are
/// a few.
fn table_names(from: u64, to: u64) -> String {
    if to - from < 3 {
        (from..=to)
            .map(|n| format!("sbtest{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        format!("sbtest{from} to sbtest{to}")
    }
}

impl Workload for OltpWorkload {
    /// SQLite's directory; a server's files are the server's business.
    fn files_dir(&self) -> Option<&Path> {
        self.sqlite_path().and_then(Path::parent)
    }

    fn prepare(&mut self, obs: &dyn Observer) -> Result<()> {
        if let Some(path) = self.sqlite_path() {
            load::check_free_space(&self.cfg, path)?;
        }
        let mut conn = self.cfg.target.connect(self.cfg.prepared, true)?;
        if let Some(n) = self.find_table(conn.as_mut(), false)? {
            return Err(CliError::Usage(format!(
                "table 'sbtest{n}' already exists in the {}: run 'virtperf {} cleanup' with the same options first, or pick another database",
                self.cfg.target.describe(),
                self.cfg.test.name()
            ))
            .into());
        }
        let result = load::load_tables(&self.cfg, conn.as_mut(), obs);
        if result.is_err() {
            // Nothing half-loaded is left behind. The loading connection
            // goes first: on SQLite its open transaction holds the write
            // lock the DROPs need.
            drop(conn);
            obs.chatter("Prepare stopped: dropping the tables it created...");
            if let Err(e) = self.cleanup(&crate::core::observer::Silent) {
                obs.note(&format!("{e:#}"));
            }
        }
        result
    }

    /// The database exists and holds every table, before anything is
    /// announced.
    fn ready(&mut self) -> Result<()> {
        if let Some(path) = self.sqlite_path() {
            if !path.exists() {
                return Err(self.not_prepared("does not exist"));
            }
        }
        let mut conn = self.cfg.target.connect(self.cfg.prepared, false)?;
        if let Some(n) = self.find_table(conn.as_mut(), true)? {
            return Err(self.not_prepared(&format!("has no table 'sbtest{n}'")));
        }
        self.checked = Some(conn);
        Ok(())
    }

    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        if self.checked.is_none() {
            self.ready()?;
        }
        let first = self.checked.take().expect("ready keeps its connection");
        let statements = Arc::new((1..=self.cfg.tables).map(Statements::new).collect());
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        let unique = Arc::new(Unique::new(seed as u32));
        let mut conns = vec![first];
        for _ in 1..engine.threads {
            conns.push(self.cfg.target.connect(self.cfg.prepared, false)?);
        }
        let workers: Vec<OltpWorker> = conns
            .into_iter()
            .enumerate()
            .map(|(i, conn)| {
                OltpWorker::new(
                    Arc::clone(&self.cfg),
                    Arc::clone(&statements),
                    Arc::clone(&unique),
                    conn,
                    FastRng::new(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                )
            })
            .collect();
        let (outcome, workers) = engine::run(engine, workers)?;
        let total = measured_counts(&workers, &outcome);
        let secs = outcome.duration.as_secs_f64().max(1e-9);
        let per_sec = |x: u64| x as f64 / secs;
        let mut m = Measurement::from_outcome(&outcome, engine.percentile);
        let lat = m.latency.clone().unwrap_or_default();
        m.metrics = vec![
            metric("tps", per_sec(total.events)),
            metric("qps", per_sec(total.queries())),
            metric("reads_per_sec", per_sec(total.reads)),
            metric("writes_per_sec", per_sec(total.writes)),
            metric("other_per_sec", per_sec(total.other)),
            metric("latency_avg_ms", lat.avg),
        ];
        // No percentile of no event.
        for (name, v) in [
            ("latency_p50_ms", lat.p50),
            ("latency_p95_ms", lat.p95),
            ("latency_p99_ms", lat.p99),
            ("latency_p999_ms", lat.p999),
        ] {
            m.metrics.extend(v.map(|v| metric(name, v)));
        }
        m.metrics.extend([
            metric("latency_max_ms", lat.max),
            metric("ignored_errors_per_sec", per_sec(total.ignored_errors)),
            metric("reconnects_per_sec", per_sec(total.reconnects)),
        ]);
        let per_trx = if total.events > 0 {
            total.queries() as f64 / total.events as f64
        } else {
            0.0
        };
        m.details = serde_json::json!({
            "test": self.cfg.test.name(),
            "db_driver": self.cfg.dialect().name(),
            "database": self.cfg.target.describe(),
            "reads": total.reads,
            "writes": total.writes,
            "other": total.other,
            "queries": total.queries(),
            "transactions": total.events,
            "queries_per_transaction": per_trx,
            "ignored_errors": total.ignored_errors,
            "reconnects": total.reconnects,
            "busy_waits": total.busy_waits,
        });
        m.text = sql_statistics(&self.cfg.target.describe(), &total, secs);
        if self.cfg.dialect().one_writer() {
            m.text
                .push_str(&format!("{BUSY_LINE}      {}\n", total.busy_waits));
        }
        Ok(m)
    }

    fn cleanup(&mut self, obs: &dyn Observer) -> Result<()> {
        if let Some(path) = self.sqlite_path() {
            if !path.exists() {
                return Ok(());
            }
        }
        let mut conn = self.cfg.target.connect(self.cfg.prepared, false)?;
        for n in 1..=self.cfg.tables {
            obs.chatter(&format!("Dropping table 'sbtest{n}'..."));
            let sql = format!("DROP TABLE IF EXISTS sbtest{n}");
            if let Err(e) = conn.batch(&sql) {
                let e = anyhow!(
                    "{}: {e}; statement: {sql}; {} may remain: run 'virtperf {} cleanup' with the same options to drop them",
                    self.cfg.target.describe(),
                    table_names(n, self.cfg.tables),
                    self.cfg.test.name()
                );
                // A cleanup cut short by Ctrl-C (or left by the server after
                // it) ends as interrupted, still saying what is left.
                return Err(if signals::interrupted() {
                    e.context(signals::Interrupted)
                } else {
                    e
                });
            }
        }
        drop(conn);
        self.cfg.target.remove_if_empty()
    }
}

/// The SQL counts of the measured phase: each thread's counters include
/// any warm-up, so each is scaled to its measured share of transactions.
fn measured_counts(workers: &[OltpWorker], outcome: &engine::Outcome) -> Counts {
    let mut total = Counts::default();
    for (w, t) in workers.iter().zip(&outcome.threads) {
        let share = if w.counts.events == 0 {
            1.0
        } else {
            t.events as f64 / w.counts.events as f64
        };
        let scale = |x: u64| (x as f64 * share).round() as u64;
        total.add(&Counts {
            reads: scale(w.counts.reads),
            writes: scale(w.counts.writes),
            other: scale(w.counts.other),
            ignored_errors: scale(w.counts.ignored_errors),
            reconnects: scale(w.counts.reconnects),
            busy_waits: scale(w.counts.busy_waits),
            events: t.events,
        });
    }
    total
}

/// sysbench's "SQL statistics" section of `total` over `secs` seconds.
fn sql_statistics(database: &str, total: &Counts, secs: f64) -> String {
    let per_sec = |x: u64| x as f64 / secs;
    format!(
        "{DATABASE_LINE}{}\n\nSQL statistics:\n    queries performed:\n        read:                            {}\n        write:                           {}\n        other:                           {}\n        total:                           {}\n    transactions:                        {:<7}({:.2} per sec.)\n    queries:                             {:<7}({:.2} per sec.)\n    ignored errors:                      {:<7}({:.2} per sec.)\n    reconnects:                          {:<7}({:.2} per sec.)\n",
        database,
        total.reads,
        total.writes,
        total.other,
        total.queries(),
        total.events,
        per_sec(total.events),
        total.queries(),
        per_sec(total.queries()),
        total.ignored_errors,
        per_sec(total.ignored_errors),
        total.reconnects,
        per_sec(total.reconnects),
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::values;
    use super::super::SQLITE_FILE;
    use super::*;

    #[test]
    fn the_persona_text_leaves_out_virtperfs_lines() {
        let ours = "Database: SQLite database ./x.sqlite\n\nSQL statistics:\n    reconnects:   0\n    busy waits (SQLite write lock):      3\n";
        assert_eq!(
            sysbench_text(ours),
            "SQL statistics:\n    reconnects:   0\n"
        );
        assert_eq!(sysbench_text("CPU speed:\n"), "CPU speed:\n");
    }

    fn engine(events: u64, threads: usize) -> EngineOptions {
        EngineOptions {
            events: Some(events),
            ..EngineOptions::silent(threads)
        }
    }

    fn detail(m: &Measurement, key: &str) -> u64 {
        m.details[key].as_u64().unwrap()
    }

    #[test]
    fn read_write_runs_twenty_queries_per_transaction_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("--oltp-dir={}", dir.path().display());
        let v = values(&[&d, "--table-size=200", "--tables=2"]);
        let mut w = OltpWorkload::new(Test::ReadWrite, &v).unwrap();
        w.prepare(&crate::core::observer::Silent).unwrap();
        let m = w.run(&engine(50, 2)).unwrap();
        assert_eq!(detail(&m, "transactions"), 50);
        assert_eq!(detail(&m, "reads"), 50 * 14);
        assert_eq!(detail(&m, "writes"), 50 * 4);
        assert_eq!(detail(&m, "other"), 50 * 2);
        // Delete and insert of the same id keep the row count.
        let conn = rusqlite::Connection::open(dir.path().join(SQLITE_FILE)).unwrap();
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM sbtest1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 200);
        drop(conn);
        w.cleanup(&crate::core::observer::Silent).unwrap();
        assert!(!dir.path().join(SQLITE_FILE).exists());
    }

    #[test]
    fn every_test_runs_on_sqlite_with_its_query_mix() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("--oltp-dir={}", dir.path().display());
        let per_trx = [
            (Test::ReadOnly, 16),
            (Test::WriteOnly, 6),
            (Test::PointSelect, 1),
            (Test::UpdateIndex, 1),
            (Test::UpdateNonIndex, 1),
            (Test::Insert, 1),
            (Test::Delete, 1),
        ];
        for (test, queries) in per_trx {
            let v = values(&[&d, "--table-size=100"]);
            let mut w = OltpWorkload::new(test, &v).unwrap();
            w.prepare(&crate::core::observer::Silent).unwrap();
            let m = w.run(&engine(20, 1)).unwrap();
            assert_eq!(detail(&m, "queries"), 20 * queries, "{}", test.name());
            w.cleanup(&crate::core::observer::Silent).unwrap();
        }
    }

    #[test]
    fn prepare_refuses_existing_tables_and_run_needs_prepare() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("--oltp-dir={}", dir.path().display());
        let v = values(&[&d, "--table-size=10"]);
        let mut w = OltpWorkload::new(Test::ReadWrite, &v).unwrap();
        let e = w.run(&engine(1, 1)).err().unwrap().to_string();
        assert!(e.contains("prepare"), "{e}");
        w.prepare(&crate::core::observer::Silent).unwrap();
        let e = w
            .prepare(&crate::core::observer::Silent)
            .unwrap_err()
            .to_string();
        assert!(e.contains("already exists") && e.contains("cleanup"), "{e}");
        w.cleanup(&crate::core::observer::Silent).unwrap();
    }
}
