//! The MySQL/MariaDB driver (`--db-driver=mysql`): the pure-Rust `mysql`
//! client (no TLS, rust flate2 backend), server-side prepared statements
//! (each prepared once per connection and kept here, BEGIN and COMMIT
//! included, as sysbench's libmysqlclient driver does), or text queries with
//! `--db-ps-mode=disable`.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Result;
use mysql::prelude::Queryable;
use mysql::{OptsBuilder, Params, Statement, Value};

use super::driver::{inline, Conn, DbError, ErrorClass, Param};
use crate::core::options::CliError;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a statement may go without an answer: above InnoDB's default
/// lock wait (50 s), so a legitimate wait ends first; a server that stalls
/// ends the connection.
const STATEMENT_LIMIT: Duration = Duration::from_secs(60);
/// Deadlock, lock wait timeout, "record changed since last read": the
/// errors sysbench's `--mysql-ignore-errors` ignores by default.
const RETRY_CODES: [u16; 3] = [1213, 1205, 1020];
/// The server ended the session: the connection was killed (MariaDB's
/// ER_CONNECTION_KILLED), the server is shutting down, or the session was
/// idle too long (MySQL 8's ER_CLIENT_INTERACTION_TIMEOUT). Reconnect.
const LOST_CODES: [u16; 3] = [1927, 1053, 4031];

pub struct My {
    conn: mysql::Conn,
    prepared: bool,
    /// Prepared statements by their text: looked up by the caller's string,
    /// not re-parsed for named parameters on every execute as the crate's
    /// own cache does (that cache is off, so nothing here is ever closed
    /// behind our back).
    statements: HashMap<String, Statement>,
}

impl My {
    pub fn connect(
        host: &str,
        port: u16,
        socket: &str,
        user: &str,
        password: &str,
        db: &str,
        prepared: bool,
    ) -> Result<My> {
        let mut opts = OptsBuilder::new()
            .ip_or_hostname(Some(host))
            .tcp_port(port)
            .user(Some(user))
            .pass(Some(password))
            .db_name(Some(db))
            .tcp_connect_timeout(Some(CONNECT_TIMEOUT))
            .read_timeout(Some(STATEMENT_LIMIT))
            .write_timeout(Some(STATEMENT_LIMIT))
            .stmt_cache_size(Some(0))
            // As libmysqlclient with an explicit host: stay on TCP.
            .prefer_socket(false);
        if !socket.is_empty() {
            opts = opts.socket(Some(socket)).prefer_socket(true);
        }
        let place = if socket.is_empty() {
            format!("{host}:{port} (--mysql-host={host} --mysql-port={port})")
        } else {
            format!("socket {socket} (--mysql-socket={socket})")
        };
        // The handshake runs on a thread of its own so that a server that
        // accepts and says nothing is given up on within CONNECT_TIMEOUT,
        // and Ctrl-C within a tenth of a second (the abandoned thread ends
        // at its read timeout).
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("mysql-connect".into())
            .spawn(move || {
                let _ = tx.send(mysql::Conn::new(opts));
            })?;
        let until = std::time::Instant::now() + CONNECT_TIMEOUT;
        let connected = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(r) => break r,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    crate::core::signals::check()?;
                    if std::time::Instant::now() >= until {
                        return Err(CliError::Usage(format!(
                            "cannot connect to MySQL at {place}: the server accepted the connection but did not complete the handshake within {} s; check that a MySQL or MariaDB server listens there",
                            CONNECT_TIMEOUT.as_secs()
                        ))
                        .into());
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    anyhow::bail!("cannot connect to MySQL at {place}: the connecting thread ended")
                }
            }
        };
        let conn = connected.map_err(|e| {
            let why = match &e {
                mysql::Error::MySqlError(m) => format!(
                    "the server refused user '{user}' on database '{db}': {} (error {}); check --mysql-user, --mysql-password and --mysql-db",
                    m.message, m.code
                ),
                other => format!(
                    "{other}; start the server or point --mysql-host and --mysql-port (or --mysql-socket) at it"
                ),
            };
            CliError::Usage(format!("cannot connect to MySQL at {place}: {why}"))
        })?;
        Ok(My {
            conn,
            prepared,
            statements: HashMap::new(),
        })
    }

    /// The prepared statement for `sql`, prepared on first use.
    fn statement(&mut self, sql: &str) -> Result<Statement, DbError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.conn.prep(sql).map_err(classify)?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Executes a statement without parameters: prepared (BEGIN and COMMIT,
    /// as sysbench sends them) or as text.
    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        if self.prepared {
            let stmt = self.statement(sql)?;
            self.conn.exec_drop(&stmt, ()).map_err(classify)
        } else {
            self.batch(sql)
        }
    }
}

fn classify(e: mysql::Error) -> DbError {
    match e {
        mysql::Error::MySqlError(m) => DbError {
            class: if RETRY_CODES.contains(&m.code) {
                ErrorClass::Retry
            } else if LOST_CODES.contains(&m.code) {
                ErrorClass::Lost
            } else {
                ErrorClass::Fatal
            },
            code: m.code.to_string(),
            message: m.message,
        },
        mysql::Error::IoError(io) => DbError {
            class: ErrorClass::Lost,
            code: "io".into(),
            message: io.to_string(),
        },
        mysql::Error::DriverError(d) => DbError {
            class: ErrorClass::Lost,
            code: "driver".into(),
            message: d.to_string(),
        },
        other => DbError {
            class: ErrorClass::Fatal,
            code: "client".into(),
            message: other.to_string(),
        },
    }
}

fn value(p: &Param) -> Value {
    match p {
        Param::Int(n) => Value::Int(*n),
        Param::Text(s) => Value::Bytes(s.as_bytes().to_vec()),
    }
}

/// Reads every row of every result set; returns rows read, or rows
/// affected when there were none.
fn drain<P: mysql::prelude::Protocol>(
    mut result: mysql::QueryResult<'_, '_, '_, P>,
) -> mysql::Result<u64> {
    let mut rows = 0;
    let mut affected = 0;
    while let Some(set) = result.iter() {
        affected += set.affected_rows();
        for row in set {
            std::hint::black_box(row?);
            rows += 1;
        }
    }
    Ok(if rows > 0 { rows } else { affected })
}

impl Conn for My {
    fn exec(&mut self, sql: &str, params: &[Param]) -> Result<u64, DbError> {
        if self.prepared {
            let params = if params.is_empty() {
                Params::Empty
            } else {
                Params::Positional(params.iter().map(value).collect())
            };
            let stmt = self.statement(sql)?;
            let result = self.conn.exec_iter(&stmt, params).map_err(classify)?;
            drain(result).map_err(classify)
        } else {
            let result = self
                .conn
                .query_iter(inline(sql, params))
                .map_err(classify)?;
            drain(result).map_err(classify)
        }
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.query_drop(sql).map_err(classify)
    }

    fn begin(&mut self, _write: bool) -> Result<(), DbError> {
        self.simple("BEGIN")
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.simple("COMMIT")
    }

    fn table_exists(&mut self, name: &str) -> Result<bool, DbError> {
        let stmt = self.statement(
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_name = ?",
        )?;
        let n: Option<i64> = self.conn.exec_first(&stmt, (name,)).map_err(classify)?;
        Ok(n.unwrap_or(0) > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(code: u16) -> ErrorClass {
        classify(mysql::Error::MySqlError(mysql::MySqlError {
            state: "HY000".into(),
            message: "m".into(),
            code,
        }))
        .class
    }

    #[test]
    fn server_errors_are_classed_as_sysbench_treats_them() {
        // sysbench's default --mysql-ignore-errors: restart the transaction.
        for code in RETRY_CODES {
            assert_eq!(class(code), ErrorClass::Retry, "{code}");
        }
        // The server ended the session: reconnect.
        for code in LOST_CODES {
            assert_eq!(class(code), ErrorClass::Lost, "{code}");
        }
        // Unknown column, syntax error: the run stops.
        assert_eq!(class(1054), ErrorClass::Fatal);
        assert_eq!(class(1064), ErrorClass::Fatal);
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert_eq!(classify(mysql::Error::IoError(io)).class, ErrorClass::Lost);
    }
}
