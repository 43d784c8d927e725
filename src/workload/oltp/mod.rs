//! The sysbench 1.0.20 OLTP tests (`oltp_read_write`, `oltp_point_select`,
//! ...) with their option names and defaults: the `sbtestN` schema loaded by
//! bulk inserts with the `k` index built after the load, sysbench's
//! transaction mix and its read/write/other query counting, on SQLite
//! (embedded), PostgreSQL or MySQL/MariaDB behind one small `Conn` trait.
//! One event is one transaction; deadlocks and serialization failures roll
//! back, are counted and restart it, as sysbench does.
//!
//! The parts: `options` (the option table) and `config` (the validated
//! `Config`), `schema` (the `sbtestN` tables), `load` (prepare's bulk load),
//! `transaction` (the event mix and its counting), `lifecycle` (prepare,
//! run, cleanup); `driver` holds the `Conn` and `Dialect` traits (and the
//! bounds of an answer) that `sqlite`, `pgsql` and `mysql` implement
//! (`mysql_wire`: its statements on the socket; `mysql_auth`: how its
//! password may go; `cut`: the watcher that cuts its socket at the stop or
//! an operation's deadline), and `connect` is the one place that picks a
//! driver.

mod config;
mod connect;
mod cut;
pub mod driver;
pub mod import;
mod lifecycle;
pub use lifecycle::sysbench_text;
mod load;
mod mysql;
mod mysql_auth;
mod mysql_wire;
mod options;
pub mod pgsql;
pub mod rand;
mod schema;
mod sqlite;
mod transaction;

use anyhow::Result;

use crate::core::options::Values;
use crate::engine;
use crate::workload::{MetricDef, Needs, Workload, WorkloadDef};

pub use config::Config;
pub use connect::Target;
pub use lifecycle::OltpWorkload;
pub use options::{OPTIONS, PASSWORD_SOURCES};
pub use transaction::Counts;

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
        area: crate::workload::Area::Oltp,
        sysbench: None,
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

/// The SQLite database file in `--oltp-dir`.
pub const SQLITE_FILE: &str = "virtperf-oltp.sqlite";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::options::{self, OptionSpec};

    /// oltp_read_write's options from `args`, for the tests of every part.
    pub(super) fn values(args: &[&str]) -> Values {
        let tables: &[&[OptionSpec]] = &[crate::engine::OPTIONS, OPTIONS];
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        options::parse(tables, &args, "oltp_read_write").unwrap().0
    }
}
