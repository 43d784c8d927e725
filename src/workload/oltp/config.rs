//! The validated configuration of one OLTP test, resolved once from its
//! options: where the tables live (`Target`), the table layout, the
//! transaction mix and the id distribution.

use std::path::PathBuf;

use anyhow::Result;

use crate::core::options::{CliError, Values};

use super::connect::Target;
use super::driver::Dialect;
use super::mysql_auth::{self, ServerKey};
use super::rand::Dist;
use super::{pgsql, Test, SQLITE_FILE};

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
        if let Some(name) = Target::unknown_driver(v) {
            return Err(crate::core::options::CliError::InvalidValue {
                name: "db-driver".into(),
                value: name.into(),
                allowed: format!("one of {}", Target::DRIVERS.join(", ")),
            }
            .into());
        }
        let target = Target::from_values(v);
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
            threads: crate::engine::threads(v) as u64,
        };
        if test == Test::PointSelect {
            // oltp_point_select.lua: one query per event, whatever the option says.
            c.point_selects = 1;
        }
        Ok(c)
    }

    pub(super) fn dialect(&self) -> &'static dyn Dialect {
        self.target.dialect()
    }

    /// The rows `prepare` loads: oltp_insert with client-generated ids
    /// starts from empty tables so that its unique ids cannot collide.
    pub(super) fn rows_to_load(&self) -> u64 {
        if self.test == Test::Insert && !self.auto_inc {
            0
        } else {
            self.table_size
        }
    }
}

impl Target {
    /// The `--db-driver` names there are drivers for.
    pub const DRIVERS: &'static [&'static str] = &["sqlite", "pgsql", "mysql"];

    /// A `--db-driver` there is no driver for (sysbench refuses it only
    /// when a script asks for the driver).
    pub fn unknown_driver(v: &Values) -> Option<&str> {
        let name = v.text("db-driver");
        (!Self::DRIVERS.contains(&name)).then_some(name)
    }

    /// Where `--db-driver` and its connection options (and `--oltp-dir`
    /// for SQLite) put the tables.
    pub fn from_values(v: &Values) -> Target {
        let port = |name: &str| v.int(name) as u16;
        match v.text("db-driver") {
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
                key: ServerKey::from_options(
                    v.text(mysql_auth::KEY_PATH_OPTION),
                    v.flag(mysql_auth::FETCH_OPTION),
                ),
                dry_run: v.has("mysql-dry-run") && v.flag("mysql-dry-run"),
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
        }
    }
}
