//! The option table every OLTP test shares: sysbench 1.0.20's names and
//! defaults for the table layout, the transaction mix and the random ids,
//! then `--db-driver` and each driver's connection options; and where a
//! password comes from when its option is not given.

use crate::core::options::{OptKind, OptionSpec};

use super::pgsql;

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
    // Text, not a choice: as in sysbench, a script that never asks for the
    // driver runs with any name; asking for an unknown one fails then.
    text(
        "db-driver",
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
        "mysql-server-public-key-path",
        "",
        "a file holding the MySQL server's RSA public key (PEM, the server's public_key.pem), for a password asked in full over TCP without TLS (caching_sha2_password)",
    ),
    flag(
        "mysql-get-server-public-key-insecure",
        "off",
        "for a password asked in full over TCP without TLS, take the RSA key the server sends: anyone answering on that address can then read the password; only for a server and a network you trust",
    ),
    text(
        "mysql-storage-engine",
        "innodb",
        "Storage engine, if MySQL is used",
    ),
    flag(
        "mysql-dry-run",
        "off",
        "Dry run, pretend that all MySQL client API calls are successful without executing them",
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
