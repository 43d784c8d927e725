//! `sysbench --help` as sysbench 1.0.20 prints it: the general options, the
//! random generator's, the log's, the database's and each driver's, then
//! the compiled-in tests. The rows are sysbench's, laid out as its option
//! printer lays them out. virtperf's embedded SQLite driver is taken
//! (`--db-driver=sqlite`) but not listed: the persona's help is sysbench's,
//! and its default driver is sysbench's, mysql.

use crate::workload;

/// An option row: name, sysbench's type suffix, help, default (None: no
/// brackets).
type Row = (
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
);

const GENERAL: &[Row] = &[
    ("threads", "=N", "number of threads to use", Some("1")),
    ("events", "=N", "limit for total number of events", Some("0")),
    ("time", "=N", "limit for total execution time in seconds", Some("10")),
    ("forced-shutdown", "=STRING", "number of seconds to wait after the --time limit before forcing shutdown, or 'off' to disable", Some("off")),
    ("thread-stack-size", "=SIZE", "size of stack per thread", Some("64K")),
    ("rate", "=N", "average transactions rate. 0 for unlimited rate", Some("0")),
    ("report-interval", "=N", "periodically report intermediate statistics with a specified interval in seconds. 0 disables intermediate reports", Some("0")),
    ("report-checkpoints", "=[LIST,...]", "dump full statistics and reset all counters at specified points in time. The argument is a list of comma-separated values representing the amount of time in seconds elapsed from start of test when report checkpoint(s) must be performed. Report checkpoints are off by default.", Some("")),
    ("debug", "[=on|off]", "print more debugging info", Some("off")),
    ("validate", "[=on|off]", "perform validation checks where possible", Some("off")),
    ("help", "[=on|off]", "print help and exit", Some("off")),
    ("version", "[=on|off]", "print version and exit", Some("off")),
    ("config-file", "=FILENAME", "File containing command line options", None),
    ("tx-rate", "=N", "deprecated alias for --rate", Some("0")),
    ("max-requests", "=N", "deprecated alias for --events", Some("0")),
    ("max-time", "=N", "deprecated alias for --time", Some("0")),
    ("num-threads", "=N", "deprecated alias for --threads", Some("1")),
];

const RAND: &[Row] = &[
    (
        "rand-type",
        "=STRING",
        "random numbers distribution {uniform,gaussian,special,pareto}",
        Some("special"),
    ),
    (
        "rand-spec-iter",
        "=N",
        "number of iterations used for numbers generation",
        Some("12"),
    ),
    (
        "rand-spec-pct",
        "=N",
        "percentage of values to be treated as 'special' (for special distribution)",
        Some("1"),
    ),
    (
        "rand-spec-res",
        "=N",
        "percentage of 'special' values to use (for special distribution)",
        Some("75"),
    ),
    (
        "rand-seed",
        "=N",
        "seed for random number generator. When 0, the current time is used as a RNG seed.",
        Some("0"),
    ),
    (
        "rand-pareto-h",
        "=N",
        "parameter h for pareto distribution",
        Some("0.2"),
    ),
];

const LOG: &[Row] = &[(
    "verbosity",
    "=N",
    "verbosity level {5 - debug, 0 - only critical messages}",
    Some("3"),
)];

const REPORT: &[Row] = &[
    ("percentile", "=N", "percentile to calculate in latency statistics (1-100). Use the special value of 0 to disable percentile calculations", Some("95")),
    ("histogram", "[=on|off]", "print latency histogram in report", Some("off")),
];

/// The persona's default driver is sysbench's, mysql (virtperf's own
/// default is its embedded SQLite).
const DATABASE: &[Row] = &[
    (
        "db-driver",
        "=STRING",
        "specifies database driver to use ('help' to get list of available drivers)",
        Some(DEFAULT_DRIVER),
    ),
    (
        "db-ps-mode",
        "=STRING",
        "prepared statements usage mode {auto, disable}",
        Some("auto"),
    ),
    (
        "db-debug",
        "[=on|off]",
        "print database-specific debug information",
        Some("off"),
    ),
];

const MYSQL: &[Row] = &[
    (
        "mysql-host",
        "=[LIST,...]",
        "MySQL server host",
        Some("localhost"),
    ),
    (
        "mysql-port",
        "=[LIST,...]",
        "MySQL server port",
        Some("3306"),
    ),
    ("mysql-socket", "=[LIST,...]", "MySQL socket", None),
    ("mysql-user", "=STRING", "MySQL user", Some("sbtest")),
    ("mysql-password", "=STRING", "MySQL password", Some("")),
    ("mysql-db", "=STRING", "MySQL database name", Some("sbtest")),
    (
        "mysql-ssl",
        "[=on|off]",
        "use SSL connections, if available in the client library",
        Some("off"),
    ),
    (
        "mysql-ssl-cipher",
        "=STRING",
        "use specific cipher for SSL connections",
        Some(""),
    ),
    (
        "mysql-compression",
        "[=on|off]",
        "use compression, if available in the client library",
        Some("off"),
    ),
    (
        "mysql-debug",
        "[=on|off]",
        "trace all client library calls",
        Some("off"),
    ),
    (
        "mysql-ignore-errors",
        "=[LIST,...]",
        "list of errors to ignore, or \"all\"",
        Some("1213,1020,1205"),
    ),
    (
        "mysql-dry-run",
        "[=on|off]",
        "Dry run, pretend that all MySQL client API calls are successful without executing them",
        Some("off"),
    ),
];

const PGSQL: &[Row] = &[
    (
        "pgsql-host",
        "=STRING",
        "PostgreSQL server host",
        Some("localhost"),
    ),
    ("pgsql-port", "=N", "PostgreSQL server port", Some("5432")),
    ("pgsql-user", "=STRING", "PostgreSQL user", Some("sbtest")),
    ("pgsql-password", "=STRING", "PostgreSQL password", Some("")),
    (
        "pgsql-db",
        "=STRING",
        "PostgreSQL database name",
        Some("sbtest"),
    ),
];

/// `--db-driver` when the persona's command line names none.
pub const DEFAULT_DRIVER: &str = "mysql";

/// The option tables sysbench registers before it parses a command line
/// (general, random, log, database, drivers): what it takes for any test,
/// and what its `--config-file` sets.
pub const GENERAL_TABLES: &[&[Row]] = &[GENERAL, RAND, LOG, REPORT, DATABASE, MYSQL, PGSQL];

/// Whether `name` is one of sysbench's general options, and its type
/// suffix (`=N`, `[=on|off]`, `=[LIST,...]`...).
pub fn general_kind(name: &str) -> Option<&'static str> {
    GENERAL_TABLES
        .iter()
        .flat_map(|t| t.iter())
        .find(|r| r.0 == name)
        .map(|r| r.1)
}

/// Rows as sysbench's sb_print_options prints them: names padded to the
/// longest name with its type, then a blank line.
fn rows(table: &[Row]) -> String {
    let width = table
        .iter()
        .map(|r| r.0.len() + r.1.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (name, kind, help, default) in table {
        let pad = width - name.len() + 1;
        out.push_str(&format!("  --{name}{kind:<pad$}{help}"));
        if let Some(d) = default {
            out.push_str(&format!(" [{d}]"));
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// The whole of `sysbench --help`.
pub fn general_help() -> String {
    let mut out = String::from(
        "Usage:\n  sysbench [options]... [testname] [command]\n\n\
         Commands implemented by most tests: prepare run cleanup help\n\n\
         General options:\n",
    );
    out.push_str(&rows(GENERAL));
    out.push_str("Pseudo-Random Numbers Generator options:\n");
    out.push_str(&rows(RAND));
    out.push_str("Log options:\n");
    out.push_str(&rows(LOG));
    out.push_str(&rows(REPORT));
    out.push_str("General database options:\n\n");
    out.push_str(&rows(DATABASE));
    out.push_str(
        "\nCompiled-in database drivers:\n  mysql - MySQL driver\n  pgsql - PostgreSQL driver\n\n",
    );
    out.push_str("mysql options:\n");
    out.push_str(&rows(MYSQL));
    out.push_str("pgsql options:\n");
    out.push_str(&rows(PGSQL));
    out.push_str("Compiled-in tests:\n");
    // In sysbench's order.
    for name in ["fileio", "cpu", "memory", "threads", "mutex"] {
        if let Some(s) = workload::find(name).and_then(|d| d.sysbench) {
            out.push_str(&format!("  {name} - {}\n", s.summary));
        }
    }
    out.push_str("\nSee 'sysbench <testname> help' for a list of options for each test.\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_padded_as_sysbench_pads_them() {
        let text = rows(LOG);
        assert_eq!(
            text,
            "  --verbosity=N verbosity level {5 - debug, 0 - only critical messages} [3]\n\n"
        );
        let general = rows(GENERAL);
        assert!(general.contains("  --report-checkpoints=[LIST,...] dump full statistics"));
        assert!(general
            .contains("  --config-file=FILENAME          File containing command line options\n"));
    }

    #[test]
    fn general_options_are_known_by_kind() {
        assert_eq!(general_kind("debug"), Some("[=on|off]"));
        assert_eq!(general_kind("mysql-host"), Some("=[LIST,...]"));
        assert_eq!(general_kind("cpu-max-prime"), None);
    }
}
