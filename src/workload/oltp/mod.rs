//! The sysbench 1.0.20 OLTP tests (`oltp_read_write`, `oltp_point_select`,
//! ...) with their option names and defaults: the `sbtestN` schema loaded by
//! bulk inserts with the `k` index built after the load, sysbench's
//! transaction mix and its read/write/other query counting, on SQLite
//! (embedded), PostgreSQL or MySQL/MariaDB behind one small `Conn` trait.
//! One event is one transaction; deadlocks and serialization failures roll
//! back, are counted and restart it, as sysbench does.

mod cut;
pub mod driver;
mod mysql;
mod pgsql;
pub mod rand;
mod sqlite;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};

use crate::core::observer::Observer;
use crate::core::options::{CliError, OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::core::signals;
use crate::engine::{self, EngineOptions, FastRng, Worker};
use crate::workload::{Measurement, MetricDef, Needs, Workload, WorkloadDef};
use driver::{Conn, Dialect, ErrorClass, Param, Target};
use rand::{digits, Dist, Unique, C_TEMPLATE, PAD_TEMPLATE};

/// The eight tests, each a workload of its own name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    ReadWrite,
    ReadOnly,
    WriteOnly,
    PointSelect,
    UpdateIndex,
    UpdateNonIndex,
    Insert,
    Delete,
}

impl Test {
    pub const ALL: &'static [Test] = &[
        Test::ReadWrite,
        Test::ReadOnly,
        Test::WriteOnly,
        Test::PointSelect,
        Test::UpdateIndex,
        Test::UpdateNonIndex,
        Test::Insert,
        Test::Delete,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Test::ReadWrite => "oltp_read_write",
            Test::ReadOnly => "oltp_read_only",
            Test::WriteOnly => "oltp_write_only",
            Test::PointSelect => "oltp_point_select",
            Test::UpdateIndex => "oltp_update_index",
            Test::UpdateNonIndex => "oltp_update_non_index",
            Test::Insert => "oltp_insert",
            Test::Delete => "oltp_delete",
        }
    }

    pub const fn summary(self) -> &'static str {
        match self {
            Test::ReadWrite => {
                "OLTP: sysbench's read/write transaction (SQLite, PostgreSQL, MySQL)"
            }
            Test::ReadOnly => "OLTP: sysbench's read-only transaction",
            Test::WriteOnly => "OLTP: sysbench's write-only transaction",
            Test::PointSelect => "OLTP: one primary-key SELECT per event",
            Test::UpdateIndex => "OLTP: UPDATE of the indexed column k",
            Test::UpdateNonIndex => "OLTP: UPDATE of the non-indexed column c",
            Test::Insert => "OLTP: one INSERT per event",
            Test::Delete => "OLTP: one DELETE per event",
        }
    }

    fn writes(self) -> bool {
        !matches!(self, Test::ReadOnly | Test::PointSelect)
    }
}

/// The definition of one test: all eight share options, needs and metrics.
const fn def(test: Test, build: fn(&Values) -> Result<Box<dyn Workload>>) -> WorkloadDef {
    WorkloadDef {
        name: test.name(),
        summary: test.summary(),
        options: OPTIONS,
        engine: engine::ALL,
        needs: Needs {
            workdir: Some("oltp-dir"),
            prepare: true,
            network: None,
            root: false,
        },
        metrics: METRICS,
        build,
    }
}

pub const READ_WRITE: WorkloadDef = def(Test::ReadWrite, |v| {
    Ok(Box::new(OltpWorkload::new(Test::ReadWrite, v)?))
});
pub const READ_ONLY: WorkloadDef = def(Test::ReadOnly, |v| {
    Ok(Box::new(OltpWorkload::new(Test::ReadOnly, v)?))
});
pub const WRITE_ONLY: WorkloadDef = def(Test::WriteOnly, |v| {
    Ok(Box::new(OltpWorkload::new(Test::WriteOnly, v)?))
});
pub const POINT_SELECT: WorkloadDef = def(Test::PointSelect, |v| {
    Ok(Box::new(OltpWorkload::new(Test::PointSelect, v)?))
});
pub const UPDATE_INDEX: WorkloadDef = def(Test::UpdateIndex, |v| {
    Ok(Box::new(OltpWorkload::new(Test::UpdateIndex, v)?))
});
pub const UPDATE_NON_INDEX: WorkloadDef = def(Test::UpdateNonIndex, |v| {
    Ok(Box::new(OltpWorkload::new(Test::UpdateNonIndex, v)?))
});
pub const INSERT: WorkloadDef = def(Test::Insert, |v| {
    Ok(Box::new(OltpWorkload::new(Test::Insert, v)?))
});
pub const DELETE: WorkloadDef = def(Test::Delete, |v| {
    Ok(Box::new(OltpWorkload::new(Test::Delete, v)?))
});

const fn int(name: &'static str, default: &'static str, help: &'static str) -> OptionSpec {
    OptionSpec::new(
        name,
        OptKind::Int {
            min: 0,
            max: i32::MAX as u64,
        },
        default,
        help,
    )
}

const fn flag(name: &'static str, default: &'static str, help: &'static str) -> OptionSpec {
    OptionSpec::new(name, OptKind::Bool, default, help)
}

const fn text(name: &'static str, default: &'static str, help: &'static str) -> OptionSpec {
    OptionSpec::new(name, OptKind::Text, default, help)
}

const PORT: OptKind = OptKind::Int { min: 1, max: 65535 };

pub const OPTIONS: &[OptionSpec] = &[
    int("table-size", "10000", "Number of rows per table"),
    int("range-size", "100", "Range size for range SELECT queries"),
    OptionSpec::new(
        "tables",
        OptKind::Int {
            min: 1,
            max: 100_000,
        },
        "1",
        "Number of tables",
    ),
    int(
        "point-selects",
        "10",
        "Number of point SELECT queries per transaction",
    ),
    int(
        "simple-ranges",
        "1",
        "Number of simple range SELECT queries per transaction",
    ),
    int(
        "sum-ranges",
        "1",
        "Number of SELECT SUM() queries per transaction",
    ),
    int(
        "order-ranges",
        "1",
        "Number of SELECT ORDER BY queries per transaction",
    ),
    int(
        "distinct-ranges",
        "1",
        "Number of SELECT DISTINCT queries per transaction",
    ),
    int(
        "index-updates",
        "1",
        "Number of UPDATE index queries per transaction",
    ),
    int(
        "non-index-updates",
        "1",
        "Number of UPDATE non-index queries per transaction",
    ),
    int(
        "delete-inserts",
        "1",
        "Number of DELETE/INSERT combinations per transaction",
    ),
    flag("range-selects", "on", "Enable/disable all range SELECT queries"),
    flag(
        "auto-inc",
        "on",
        "Use AUTO_INCREMENT column as Primary Key (for MySQL), or its alternatives in other DBMS. When disabled, use client-generated IDs",
    ),
    flag(
        "skip-trx",
        "off",
        "Don't start explicit transactions and execute all queries in the AUTOCOMMIT mode",
    ),
    flag(
        "secondary",
        "off",
        "Use a secondary index in place of the PRIMARY KEY",
    ),
    flag(
        "create-secondary",
        "on",
        "Create a secondary index in addition to the PRIMARY KEY",
    ),
    OptionSpec::new(
        "rand-type",
        OptKind::Choice(&["special", "uniform", "gaussian", "pareto"]),
        "special",
        "random numbers distribution for ids",
    ),
    OptionSpec::new(
        "rand-spec-pct",
        OptKind::Float {
            min: 0.0,
            max: 100.0,
        },
        "1",
        "percentage of values to be treated as 'special' (for special distribution)",
    ),
    OptionSpec::new(
        "rand-spec-res",
        OptKind::Float {
            min: 0.0,
            max: 100.0,
        },
        "75",
        "percentage of 'special' values to use (for special distribution)",
    ),
    OptionSpec::new(
        "rand-pareto-h",
        OptKind::Float {
            min: 0.001,
            max: 0.999,
        },
        "0.2",
        "parameter h for pareto distribution",
    ),
    OptionSpec::new(
        "db-ps-mode",
        OptKind::Choice(&["auto", "disable"]),
        "auto",
        "prepared statements usage mode",
    ),
    OptionSpec::new(
        "db-driver",
        OptKind::Choice(&["sqlite", "pgsql", "mysql"]),
        "sqlite",
        "database driver: sqlite (embedded, a file in --oltp-dir), pgsql, mysql (also MariaDB)",
    ),
    text(
        "oltp-dir",
        "",
        "directory of the SQLite database file (default: the current directory)",
    ),
    text("pgsql-host", "localhost", "PostgreSQL server host"),
    OptionSpec::new("pgsql-port", PORT, "5432", "PostgreSQL server port"),
    text("pgsql-user", "sbtest", "PostgreSQL user"),
    text(
        "pgsql-password",
        "",
        "PostgreSQL password (shown and stored as ***; better: PGPASSWORD or --pgsql-password-file, which keep it out of ps)",
    ),
    text(
        "pgsql-password-file",
        "",
        "a file whose first line is the PostgreSQL password",
    ),
    text("pgsql-db", "sbtest", "PostgreSQL database name"),
    OptionSpec::new(
        "pgsql-auth",
        OptKind::Choice(pgsql::Auth::CHOICES),
        "md5",
        "the weakest way the password is sent: scram-sha-256; md5 (or SCRAM); password (also in clear, when the server asks; only for a server you trust)",
    ),
    text("mysql-host", "localhost", "MySQL server host"),
    OptionSpec::new("mysql-port", PORT, "3306", "MySQL server port"),
    text(
        "mysql-socket",
        "",
        "MySQL socket (instead of host and port)",
    ),
    text("mysql-user", "sbtest", "MySQL user"),
    text(
        "mysql-password",
        "",
        "MySQL password (shown and stored as ***; better: MYSQL_PWD or --mysql-password-file, which keep it out of ps)",
    ),
    text(
        "mysql-password-file",
        "",
        "a file whose first line is the MySQL password",
    ),
    text("mysql-db", "sbtest", "MySQL database name"),
    text(
        "mysql-storage-engine",
        "innodb",
        "Storage engine, if MySQL is used",
    ),
];

/// Where a password comes from when its option is not given, as the
/// clients people know take it: its `...-file` option, else this
/// environment variable (read on the host, where the command was typed; the
/// job carries the value to the environment over the agent's stdin, never
/// in an argv).
pub const PASSWORD_SOURCES: &[(&str, &str)] = &[
    ("pgsql-password", "PGPASSWORD"),
    ("mysql-password", "MYSQL_PWD"),
];

/// The metrics of every OLTP test.
pub const METRICS: &[MetricDef] = &[
    MetricDef::new("tps", "transactions/s", true, true, None),
    MetricDef::new("qps", "queries/s", true, false, None),
    MetricDef::new("reads_per_sec", "queries/s", true, false, None),
    MetricDef::new("writes_per_sec", "queries/s", true, false, None),
    MetricDef::new("other_per_sec", "queries/s", true, false, None),
    MetricDef::new("latency_avg_ms", "ms", false, false, None),
    MetricDef::new("latency_p50_ms", "ms", false, false, None),
    MetricDef::new("latency_p95_ms", "ms", false, false, None),
    MetricDef::new("latency_p99_ms", "ms", false, false, None),
    MetricDef::new("latency_p999_ms", "ms", false, false, None),
    MetricDef::new("latency_max_ms", "ms", false, false, None),
    MetricDef::new("ignored_errors_per_sec", "errors/s", false, false, None),
    MetricDef::new("reconnects_per_sec", "reconnects/s", false, false, None),
];

fn metric(name: &str, value: f64) -> Metric {
    crate::workload::metric_from(METRICS, name, value)
}

/// The SQLite database file in `--oltp-dir`.
pub const SQLITE_FILE: &str = "virtperf-oltp.sqlite";

/// Approximate bytes per row on disk in SQLite (id, k, 120 + 60 characters,
/// record header, b-tree overhead and the `k` index), for the free-space check.
const SQLITE_ROW_BYTES: u64 = 260;

/// How many times in a row a transaction may be restarted before the run
/// is given up as stuck.
const MAX_RESTARTS: u32 = 10_000;
/// Reconnects in a row before a lost server stops the run.
const MAX_RECONNECTS: u32 = 3;

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub test: Test,
    pub target: Target,
    pub tables: u64,
    pub table_size: u64,
    pub range_size: u64,
    pub point_selects: u64,
    pub simple_ranges: u64,
    pub sum_ranges: u64,
    pub order_ranges: u64,
    pub distinct_ranges: u64,
    pub index_updates: u64,
    pub non_index_updates: u64,
    pub delete_inserts: u64,
    pub range_selects: bool,
    pub auto_inc: bool,
    pub skip_trx: bool,
    pub secondary: bool,
    pub create_secondary: bool,
    pub dist: Dist,
    pub prepared: bool,
    pub storage_engine: String,
    /// Threads for a parallel prepare (one table per thread at a time).
    pub threads: u64,
}

impl Config {
    pub fn from_values(test: Test, v: &Values) -> Result<Config> {
        let port = |name: &str| v.int(name) as u16;
        let target = match v.text("db-driver") {
            "pgsql" => Target::Pgsql {
                host: v.text("pgsql-host").to_string(),
                port: port("pgsql-port"),
                user: v.text("pgsql-user").to_string(),
                password: v.text("pgsql-password").to_string(),
                db: v.text("pgsql-db").to_string(),
                auth: pgsql::Auth::parse(v.text("pgsql-auth")),
            },
            "mysql" => Target::Mysql {
                host: v.text("mysql-host").to_string(),
                port: port("mysql-port"),
                socket: v.text("mysql-socket").to_string(),
                user: v.text("mysql-user").to_string(),
                password: v.text("mysql-password").to_string(),
                db: v.text("mysql-db").to_string(),
            },
            _ => {
                let dir = match v.text("oltp-dir") {
                    "" => PathBuf::from("."),
                    d => PathBuf::from(d),
                };
                Target::Sqlite {
                    path: dir.join(SQLITE_FILE),
                }
            }
        };
        let engine = v.text("mysql-storage-engine");
        if engine.is_empty()
            || !engine
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(CliError::InvalidValue {
                name: "mysql-storage-engine".into(),
                value: engine.into(),
                allowed: "a storage engine name such as innodb or myisam".into(),
            }
            .into());
        }
        let dist = match v.text("rand-type") {
            "uniform" => Dist::Uniform,
            "gaussian" => Dist::Gaussian,
            "pareto" => Dist::Pareto {
                h: v.float("rand-pareto-h"),
            },
            _ => Dist::Special {
                pct: v.float("rand-spec-pct"),
                res: v.float("rand-spec-res"),
            },
        };
        let mut c = Config {
            test,
            target,
            tables: v.int("tables"),
            table_size: v.int("table-size"),
            range_size: v.int("range-size"),
            point_selects: v.int("point-selects"),
            simple_ranges: v.int("simple-ranges"),
            sum_ranges: v.int("sum-ranges"),
            order_ranges: v.int("order-ranges"),
            distinct_ranges: v.int("distinct-ranges"),
            index_updates: v.int("index-updates"),
            non_index_updates: v.int("non-index-updates"),
            delete_inserts: v.int("delete-inserts"),
            range_selects: v.flag("range-selects"),
            auto_inc: v.flag("auto-inc"),
            skip_trx: v.flag("skip-trx"),
            secondary: v.flag("secondary"),
            create_secondary: v.flag("create-secondary"),
            dist,
            prepared: v.text("db-ps-mode") != "disable",
            storage_engine: engine.to_string(),
            threads: v.int("threads"),
        };
        if test == Test::PointSelect {
            // oltp_point_select.lua: one query per event, whatever the option says.
            c.point_selects = 1;
        }
        Ok(c)
    }

    fn dialect(&self) -> Dialect {
        self.target.dialect()
    }

    /// The rows `prepare` loads: oltp_insert with client-generated ids
    /// starts from empty tables so that its unique ids cannot collide.
    fn rows_to_load(&self) -> u64 {
        if self.test == Test::Insert && !self.auto_inc {
            0
        } else {
            self.table_size
        }
    }

    fn create_table_sql(&self, n: u64) -> String {
        let key = if self.secondary {
            match self.dialect() {
                Dialect::Mysql => "KEY xid (id)".to_string(),
                // Elsewhere a plain index, created after the load.
                _ => String::new(),
            }
        } else {
            "PRIMARY KEY (id)".to_string()
        };
        let (id, suffix) = match self.dialect() {
            Dialect::Mysql => (
                if self.auto_inc {
                    "INTEGER NOT NULL AUTO_INCREMENT"
                } else {
                    "INTEGER NOT NULL"
                },
                format!("/*! ENGINE = {} */", self.storage_engine),
            ),
            Dialect::Pgsql => (
                if self.auto_inc && !self.secondary {
                    "SERIAL"
                } else {
                    "INTEGER NOT NULL"
                },
                String::new(),
            ),
            // The rowid alias: SQLite's AUTO_INCREMENT.
            Dialect::Sqlite if !self.secondary => ("INTEGER", String::new()),
            Dialect::Sqlite => ("INTEGER NOT NULL", String::new()),
        };
        let key = if key.is_empty() {
            String::new()
        } else {
            format!(",\n  {key}")
        };
        format!(
            "CREATE TABLE sbtest{n}(\n  id {id},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL{key}\n) {suffix}"
        )
    }
}

/// Statements of one table, `?` for parameters.
struct Statements {
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
    fn new(n: u64) -> Statements {
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
    fn add(&mut self, o: &Counts) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.other += o.other;
        self.ignored_errors += o.ignored_errors;
        self.reconnects += o.reconnects;
        self.busy_waits += o.busy_waits;
        self.events += o.events;
    }

    fn queries(&self) -> u64 {
        self.reads + self.writes + self.other
    }
}

/// A failed statement inside a transaction, with what was sent.
struct Failed {
    class: ErrorClass,
    what: String,
}

struct OltpWorker {
    cfg: Arc<Config>,
    statements: Arc<Vec<Statements>>,
    unique: Arc<Unique>,
    conn: Box<dyn Conn>,
    rng: FastRng,
    counts: Counts,
}

impl OltpWorker {
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

    fn point_selects(&mut self) -> Result<(), Failed> {
        let t = self.table();
        let stmts = Arc::clone(&self.statements);
        for _ in 0..self.cfg.point_selects {
            let id = self.id();
            self.query(false, &stmts[t].point, &[Param::Int(id)])?;
        }
        Ok(())
    }

    fn index_updates(&mut self) -> Result<(), Failed> {
        let t = self.table();
        let stmts = Arc::clone(&self.statements);
        for _ in 0..self.cfg.index_updates {
            let id = self.id();
            self.query(true, &stmts[t].index_update, &[Param::Int(id)])?;
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
        let sql = match (self.cfg.auto_inc, self.cfg.dialect()) {
            (true, Dialect::Mysql) => {
                format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES (0, {k}, '{c}', '{pad}')")
            }
            (true, _) => format!("INSERT INTO sbtest{t} (k, c, pad) VALUES ({k}, '{c}', '{pad}')"),
            (false, _) => {
                let id = self.unique.next() as i64 - 2_147_483_648;
                format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({id}, {k}, '{c}', '{pad}')")
            }
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
                self.point_selects()?;
                if ranges {
                    self.ranges(self.cfg.simple_ranges, |s| &s.simple)?;
                    self.ranges(self.cfg.sum_ranges, |s| &s.sum)?;
                    self.ranges(self.cfg.order_ranges, |s| &s.order)?;
                    self.ranges(self.cfg.distinct_ranges, |s| &s.distinct)?;
                }
                if test == Test::ReadWrite {
                    self.index_updates()?;
                    self.non_index_updates()?;
                    self.delete_inserts()?;
                }
            }
            Test::WriteOnly => {
                self.index_updates()?;
                self.non_index_updates()?;
                self.delete_inserts()?;
            }
            Test::PointSelect => self.point_selects()?,
            Test::UpdateIndex => self.index_updates()?,
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

pub struct OltpWorkload {
    cfg: Arc<Config>,
}

impl OltpWorkload {
    pub fn new(test: Test, values: &Values) -> Result<OltpWorkload> {
        Ok(OltpWorkload {
            cfg: Arc::new(Config::from_values(test, values)?),
        })
    }

    fn sqlite_path(&self) -> Option<&Path> {
        match &self.cfg.target {
            Target::Sqlite { path } => Some(path),
            _ => None,
        }
    }

    /// Refuses a load that would not fit in the file system of the SQLite file.
    fn check_free_space(&self, path: &Path) -> Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let free = free_bytes(dir)
            .map_err(|e| anyhow!("checking free space in {}: {e}", dir.display()))?;
        let need = self.cfg.tables * self.cfg.rows_to_load() * SQLITE_ROW_BYTES;
        if need > free {
            return Err(CliError::Usage(format!(
                "--tables={} --table-size={} needs about {} MiB in {} but only {} MiB are free: lower --table-size or --tables, or point --oltp-dir at a larger file system",
                self.cfg.tables,
                self.cfg.table_size,
                need >> 20,
                dir.display(),
                free >> 20
            ))
            .into());
        }
        Ok(())
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

    fn not_prepared(&self, what: &str) -> anyhow::Error {
        CliError::Usage(format!(
            "{what} in the {}: run 'virtperf {} prepare' with the same --db-driver, --tables and connection options first",
            self.cfg.target.describe(),
            self.cfg.test.name()
        ))
        .into()
    }

    fn load_table(&self, conn: &mut dyn Conn, n: u64, seed: u64, obs: &dyn Observer) -> Result<()> {
        let cfg = &self.cfg;
        let fail = |e: driver::DbError, sql: &str| {
            if signals::interrupted() {
                // The statement was cut short by Ctrl-C.
                return anyhow::Error::new(signals::Interrupted);
            }
            let head: String = sql.chars().take(200).collect();
            anyhow!("{}: {e}; statement: {head}", cfg.target.describe())
        };
        obs.chatter(&format!("Creating table 'sbtest{n}'..."));
        let create = cfg.create_table_sql(n);
        conn.batch(&create).map_err(|e| fail(e, &create))?;
        let rows = cfg.rows_to_load();
        if rows > 0 {
            obs.chatter(&format!("Inserting {rows} records into 'sbtest{n}'"));
        }
        let mut rng = FastRng::new(seed);
        // Client ids where the table has no generator: SQLite's rowid
        // would give the same 1..n.
        let with_id = !cfg.auto_inc || cfg.dialect() == Dialect::Sqlite || cfg.secondary;
        let head = if with_id {
            format!("INSERT INTO sbtest{n}(id, k, c, pad) VALUES")
        } else {
            format!("INSERT INTO sbtest{n}(k, c, pad) VALUES")
        };
        // As sysbench's bulk inserts: multi-row statements of about 512 KiB,
        // all in one transaction on SQLite (a commit per statement would be
        // an fsync per statement).
        let sqlite = cfg.dialect() == Dialect::Sqlite;
        if sqlite {
            conn.begin(true).map_err(|e| fail(e, "BEGIN"))?;
        }
        let mut sql = head.clone();
        let mut pending = 0;
        for i in 1..=rows {
            let k = 1 + rng.below(cfg.table_size.max(1));
            let c = digits(&mut rng, C_TEMPLATE);
            let pad = digits(&mut rng, PAD_TEMPLATE);
            if pending > 0 {
                sql.push(',');
            }
            if with_id {
                sql.push_str(&format!("({i}, {k}, '{c}', '{pad}')"));
            } else {
                sql.push_str(&format!("({k}, '{c}', '{pad}')"));
            }
            pending += 1;
            if sql.len() >= 512 * 1024 || i == rows {
                // A load of many large tables takes hours (seed 003: 100
                // of 10 million rows): a signal stops it between statements,
                // and prepare then drops what it created.
                signals::check()?;
                conn.batch(&sql).map_err(|e| fail(e, &sql))?;
                sql.clone_from(&head);
                pending = 0;
            }
        }
        if sqlite {
            conn.commit().map_err(|e| fail(e, "COMMIT"))?;
        }
        if cfg.secondary && cfg.dialect() != Dialect::Mysql {
            let sql = format!("CREATE INDEX xid_{n} ON sbtest{n}(id)");
            conn.batch(&sql).map_err(|e| fail(e, &sql))?;
        }
        if cfg.create_secondary {
            signals::check()?;
            obs.chatter(&format!("Creating a secondary index on 'sbtest{n}'..."));
            let sql = format!("CREATE INDEX k_{n} ON sbtest{n}(k)");
            conn.batch(&sql).map_err(|e| fail(e, &sql))?;
        }
        Ok(())
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

/// Bytes available to an unprivileged writer in the file system of `dir`.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: statvfs writes into the zeroed struct we own; the path is a
    // valid NUL-terminated string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is NUL-terminated; statvfs writes into the struct we pass.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

impl Workload for OltpWorkload {
    /// SQLite's directory; a server's files are the server's business.
    fn files_dir(&self) -> Option<&Path> {
        self.sqlite_path().and_then(Path::parent)
    }

    fn prepare(&mut self, obs: &dyn Observer) -> Result<()> {
        if let Some(path) = self.sqlite_path() {
            self.check_free_space(path)?;
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
        // sysbench loads tables in parallel, one per thread; SQLite has one
        // writer at a time, so it loads them in turn.
        let parallel = if self.cfg.dialect() == Dialect::Sqlite {
            1
        } else {
            self.cfg.threads.clamp(1, self.cfg.tables)
        };
        let result = if parallel == 1 {
            (1..=self.cfg.tables).try_for_each(|n| self.load_table(conn.as_mut(), n, n, obs))
        } else {
            let this = &*self;
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..parallel)
                    .map(|tid| {
                        s.spawn(move || -> Result<()> {
                            let mut conn = this.cfg.target.connect(this.cfg.prepared, false)?;
                            let mut n = tid + 1;
                            while n <= this.cfg.tables {
                                this.load_table(conn.as_mut(), n, n, obs)?;
                                n += parallel;
                            }
                            Ok(())
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().map_err(|_| anyhow!("a prepare thread panicked"))?)
                    .collect::<Result<Vec<()>>>()
                    .map(|_| ())
            })
        };
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

    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        if let Some(path) = self.sqlite_path() {
            if !path.exists() {
                return Err(self.not_prepared(&format!("there is no {}", path.display())));
            }
        }
        let mut first = self.cfg.target.connect(self.cfg.prepared, false)?;
        if let Some(n) = self.find_table(first.as_mut(), true)? {
            return Err(self.not_prepared(&format!("table 'sbtest{n}' does not exist")));
        }
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
            .map(|(i, conn)| OltpWorker {
                cfg: Arc::clone(&self.cfg),
                statements: Arc::clone(&statements),
                unique: Arc::clone(&unique),
                conn,
                rng: FastRng::new(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                counts: Counts::default(),
            })
            .collect();
        let (outcome, workers) = engine::run(engine, workers)?;
        // Counters include any warm-up; scale each thread's to its measured
        // share of transactions.
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
            metric("latency_p50_ms", lat.p50),
            metric("latency_p95_ms", lat.p95),
            metric("latency_p99_ms", lat.p99),
            metric("latency_p999_ms", lat.p999),
            metric("latency_max_ms", lat.max),
            metric("ignored_errors_per_sec", per_sec(total.ignored_errors)),
            metric("reconnects_per_sec", per_sec(total.reconnects)),
        ];
        let per_trx = if total.events > 0 {
            total.queries() as f64 / total.events as f64
        } else {
            0.0
        };
        m.details = serde_json::json!({
            "test": self.cfg.test.name(),
            "db_driver": match self.cfg.dialect() {
                Dialect::Sqlite => "sqlite",
                Dialect::Pgsql => "pgsql",
                Dialect::Mysql => "mysql",
            },
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
        m.text = format!(
            "Database: {}\n\nSQL statistics:\n    queries performed:\n        read:                            {}\n        write:                           {}\n        other:                           {}\n        total:                           {}\n    transactions:                        {:<7}({:.2} per sec.)\n    queries:                             {:<7}({:.2} per sec.)\n    ignored errors:                      {:<7}({:.2} per sec.)\n    reconnects:                          {:<7}({:.2} per sec.)\n",
            self.cfg.target.describe(),
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
        );
        if self.cfg.dialect() == Dialect::Sqlite {
            m.text.push_str(&format!(
                "    busy waits (SQLite write lock):      {}\n",
                total.busy_waits
            ));
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
        if let Some(path) = self.sqlite_path() {
            // The file goes when nothing but sysbench's tables was in it.
            if sqlite::table_count(path)? == 0 {
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.as_os_str().to_owned();
                    p.push(suffix);
                    let _ = std::fs::remove_file(PathBuf::from(p));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::options;

    fn values(args: &[&str]) -> Values {
        let tables: &[&[OptionSpec]] = &[crate::engine::OPTIONS, OPTIONS];
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        options::parse(tables, &args, "oltp_read_write").unwrap().0
    }

    fn engine(events: u64, threads: usize) -> EngineOptions {
        EngineOptions {
            threads,
            time: None,
            events: Some(events),
            warmup: std::time::Duration::ZERO,
            rate: 0.0,
            report_interval: None,
            percentile: 95.0,
            observer: std::sync::Arc::new(crate::core::observer::Silent),
        }
    }

    fn detail(m: &Measurement, key: &str) -> u64 {
        m.details[key].as_u64().unwrap()
    }

    #[test]
    fn the_schema_is_sysbench_s() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("--oltp-dir={}", dir.path().display());
        let cfg = Config::from_values(Test::ReadWrite, &values(&[&d])).unwrap();
        let sql = cfg.create_table_sql(3);
        assert!(sql.starts_with("CREATE TABLE sbtest3("), "{sql}");
        assert!(sql.contains("c CHAR(120) DEFAULT '' NOT NULL"), "{sql}");
        assert!(sql.contains("pad CHAR(60) DEFAULT '' NOT NULL"), "{sql}");
        let my = Config::from_values(Test::ReadWrite, &values(&["--db-driver=mysql"])).unwrap();
        let sql = my.create_table_sql(1);
        assert!(
            sql.contains("AUTO_INCREMENT") && sql.contains("ENGINE = innodb"),
            "{sql}"
        );
        let pg = Config::from_values(Test::ReadWrite, &values(&["--db-driver=pgsql"])).unwrap();
        assert!(pg.create_table_sql(1).contains("id SERIAL"));
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
