//! sysbench's OLTP events on one connection: the statements of each table,
//! the transaction mix of each test (point selects, ranges, index and
//! non-index updates, delete/insert pairs) with its read/write/other query
//! counting, and what a failed statement does: a deadlock or serialization
//! failure rolls back and restarts the transaction, a lost connection is
//! reconnected, anything else stops the run.

use std::sync::Arc;

use anyhow::{bail, Result};

use crate::core::signals;
use crate::engine::{FastRng, Worker};

use super::config::Config;
use super::driver::{self, Conn, ErrorClass, Param};
use super::rand::{digits, Unique, C_TEMPLATE, PAD_TEMPLATE};
use super::Test;

/// How many times in a row a transaction may be restarted before the run
/// is given up as stuck.
const MAX_RESTARTS: u32 = 10_000;
/// Reconnects in a row before a lost server stops the run.
const MAX_RECONNECTS: u32 = 3;

/// Statements of one table, `?` for parameters.
pub(super) struct Statements {
    point: String,
    simple: String,
    sum: String,
    order: String,
    distinct: String,
    index_update: String,
    non_index_update: String,
    delete: String,
    insert: String,
}

impl Statements {
    pub(super) fn new(n: u64) -> Statements {
        Statements {
            point: format!("SELECT c FROM sbtest{n} WHERE id=?"),
            simple: format!("SELECT c FROM sbtest{n} WHERE id BETWEEN ? AND ?"),
            sum: format!("SELECT SUM(k) FROM sbtest{n} WHERE id BETWEEN ? AND ?"),
            order: format!("SELECT c FROM sbtest{n} WHERE id BETWEEN ? AND ? ORDER BY c"),
            distinct: format!(
                "SELECT DISTINCT c FROM sbtest{n} WHERE id BETWEEN ? AND ? ORDER BY c"
            ),
            index_update: format!("UPDATE sbtest{n} SET k=k+1 WHERE id=?"),
            non_index_update: format!("UPDATE sbtest{n} SET c=? WHERE id=?"),
            delete: format!("DELETE FROM sbtest{n} WHERE id=?"),
            insert: format!("INSERT INTO sbtest{n} (id, k, c, pad) VALUES (?, ?, ?, ?)"),
        }
    }
}

/// Queries by sysbench's classes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub ignored_errors: u64,
    pub reconnects: u64,
    pub busy_waits: u64,
    /// Transactions completed, warm-up included.
    pub events: u64,
}

impl Counts {
    pub(super) fn add(&mut self, o: &Counts) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.other += o.other;
        self.ignored_errors += o.ignored_errors;
        self.reconnects += o.reconnects;
        self.busy_waits += o.busy_waits;
        self.events += o.events;
    }

    pub(super) fn queries(&self) -> u64 {
        self.reads + self.writes + self.other
    }
}

/// A failed statement inside a transaction, with what was sent.
struct Failed {
    class: ErrorClass,
    what: String,
}

/// One thread's connection and what it has done.
pub(super) struct OltpWorker {
    cfg: Arc<Config>,
    statements: Arc<Vec<Statements>>,
    unique: Arc<Unique>,
    conn: Box<dyn Conn>,
    rng: FastRng,
    /// Warm-up included.
    pub(super) counts: Counts,
}

impl OltpWorker {
    pub(super) fn new(
        cfg: Arc<Config>,
        statements: Arc<Vec<Statements>>,
        unique: Arc<Unique>,
        conn: Box<dyn Conn>,
        rng: FastRng,
    ) -> OltpWorker {
        OltpWorker {
            cfg,
            statements,
            unique,
            conn,
            rng,
            counts: Counts::default(),
        }
    }

    fn id(&mut self) -> i64 {
        self.cfg
            .dist
            .draw(&mut self.rng, 1, self.cfg.table_size.max(1)) as i64
    }

    fn table(&mut self) -> usize {
        self.rng.below(self.cfg.tables) as usize
    }

    fn query(&mut self, write: bool, sql: &str, params: &[Param]) -> Result<(), Failed> {
        match self.conn.exec(sql, params) {
            Ok(_) => {
                if write {
                    self.counts.writes += 1;
                } else {
                    self.counts.reads += 1;
                }
                Ok(())
            }
            Err(e) => Err(Failed {
                class: e.class,
                what: format!("{e}; statement: {}", driver::inline(sql, params)),
            }),
        }
    }

    fn other(&mut self, r: Result<(), driver::DbError>, sql: &str) -> Result<(), Failed> {
        match r {
            Ok(()) => {
                self.counts.other += 1;
                Ok(())
            }
            Err(e) => Err(Failed {
                class: e.class,
                what: format!("{e}; statement: {sql}"),
            }),
        }
    }

    fn ranges(&mut self, count: u64, pick: fn(&Statements) -> &String) -> Result<(), Failed> {
        let t = self.table();
        let stmts = Arc::clone(&self.statements);
        for _ in 0..count {
            let id = self.id();
            let end = id + self.cfg.range_size as i64 - 1;
            self.query(false, pick(&stmts[t]), &[Param::Int(id), Param::Int(end)])?;
        }
        Ok(())
    }

    /// `count` statements of one random id each (point selects, index
    /// updates), on one table.
    fn by_id(
        &mut self,
        count: u64,
        write: bool,
        pick: fn(&Statements) -> &String,
    ) -> Result<(), Failed> {
        let t = self.table();
        let stmts = Arc::clone(&self.statements);
        for _ in 0..count {
            let id = self.id();
            self.query(write, pick(&stmts[t]), &[Param::Int(id)])?;
        }
        Ok(())
    }

    fn non_index_updates(&mut self) -> Result<(), Failed> {
        let t = self.table();
        let stmts = Arc::clone(&self.statements);
        for _ in 0..self.cfg.non_index_updates {
            let c = digits(&mut self.rng, C_TEMPLATE);
            let id = self.id();
            self.query(
                true,
                &stmts[t].non_index_update,
                &[Param::Text(c), Param::Int(id)],
            )?;
        }
        Ok(())
    }

    fn delete_inserts(&mut self) -> Result<(), Failed> {
        let t = self.table();
        let stmts = Arc::clone(&self.statements);
        for _ in 0..self.cfg.delete_inserts {
            let id = self.id();
            let k = self.id();
            self.query(true, &stmts[t].delete, &[Param::Int(id)])?;
            let c = digits(&mut self.rng, C_TEMPLATE);
            let pad = digits(&mut self.rng, PAD_TEMPLATE);
            self.query(
                true,
                &stmts[t].insert,
                &[
                    Param::Int(id),
                    Param::Int(k),
                    Param::Text(c),
                    Param::Text(pad),
                ],
            )?;
        }
        Ok(())
    }

    /// oltp_insert.lua's event: a literal INSERT, auto-increment ids where
    /// the table has them.
    fn insert(&mut self) -> Result<(), Failed> {
        let t = self.table() + 1;
        let k = self.id();
        let c = digits(&mut self.rng, C_TEMPLATE);
        let pad = digits(&mut self.rng, PAD_TEMPLATE);
        let sql = if self.cfg.auto_inc {
            self.cfg.dialect().insert_generated_id(t, k, &c, &pad)
        } else {
            let id = self.unique.next() as i64 - 2_147_483_648;
            format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({id}, {k}, '{c}', '{pad}')")
        };
        let r = self.conn.batch(&sql);
        match r {
            Ok(()) => {
                self.counts.writes += 1;
                Ok(())
            }
            Err(e) => Err(Failed {
                class: e.class,
                what: format!("{e}; statement: {sql}"),
            }),
        }
    }

    fn delete(&mut self) -> Result<(), Failed> {
        let t = self.table();
        let id = self.id();
        let stmts = Arc::clone(&self.statements);
        self.query(true, &stmts[t].delete, &[Param::Int(id)])
    }

    /// One attempt at the test's event.
    fn attempt(&mut self) -> Result<(), Failed> {
        let test = self.cfg.test;
        let trx = !self.cfg.skip_trx
            && matches!(test, Test::ReadWrite | Test::ReadOnly | Test::WriteOnly);
        if trx {
            let r = self.conn.begin(test.writes());
            self.other(r, "BEGIN")?;
        }
        let ranges = self.cfg.range_selects;
        match test {
            Test::ReadWrite | Test::ReadOnly => {
                self.by_id(self.cfg.point_selects, false, |s| &s.point)?;
                if ranges {
                    self.ranges(self.cfg.simple_ranges, |s| &s.simple)?;
                    self.ranges(self.cfg.sum_ranges, |s| &s.sum)?;
                    self.ranges(self.cfg.order_ranges, |s| &s.order)?;
                    self.ranges(self.cfg.distinct_ranges, |s| &s.distinct)?;
                }
                if test == Test::ReadWrite {
                    self.by_id(self.cfg.index_updates, true, |s| &s.index_update)?;
                    self.non_index_updates()?;
                    self.delete_inserts()?;
                }
            }
            Test::WriteOnly => {
                self.by_id(self.cfg.index_updates, true, |s| &s.index_update)?;
                self.non_index_updates()?;
                self.delete_inserts()?;
            }
            Test::PointSelect => self.by_id(self.cfg.point_selects, false, |s| &s.point)?,
            Test::UpdateIndex => self.by_id(self.cfg.index_updates, true, |s| &s.index_update)?,
            Test::UpdateNonIndex => self.non_index_updates()?,
            Test::Insert => self.insert()?,
            Test::Delete => self.delete()?,
        }
        if trx {
            let r = self.conn.commit();
            self.other(r, "COMMIT")?;
        }
        Ok(())
    }
}

impl Worker for OltpWorker {
    fn event(&mut self) -> Result<bool> {
        let mut restarts = 0;
        let mut reconnects = 0;
        loop {
            let outcome = self.attempt();
            self.counts.busy_waits += self.conn.take_busy_waits();
            let failed = match outcome {
                Ok(()) => {
                    self.counts.events += 1;
                    return Ok(true);
                }
                Err(f) => f,
            };
            // A statement cut short by Ctrl-C ends the run, not a retry.
            signals::check()?;
            match failed.class {
                ErrorClass::Retry if restarts < MAX_RESTARTS => {
                    self.conn.rollback();
                    self.counts.ignored_errors += 1;
                    restarts += 1;
                }
                ErrorClass::Lost if reconnects < MAX_RECONNECTS => {
                    self.conn = self.cfg.target.connect(self.cfg.prepared, false)?;
                    self.counts.reconnects += 1;
                    reconnects += 1;
                }
                ErrorClass::Retry => {
                    bail!(
                        "{MAX_RESTARTS} restarts of one transaction in a row, the last: {}",
                        failed.what
                    )
                }
                _ => bail!("{}: {}", self.cfg.target.describe(), failed.what),
            }
        }
    }
}
