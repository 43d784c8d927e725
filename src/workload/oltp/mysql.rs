//! The MySQL/MariaDB driver (`--db-driver=mysql`): the pure-Rust `mysql`
//! client (no TLS, rust flate2 backend), server-side prepared statements
//! (each prepared once per connection and kept here, BEGIN and COMMIT
//! included, as sysbench's libmysqlclient driver does), or text queries with
//! `--db-ps-mode=disable`. The crate's blocking reads have no hook for
//! Ctrl-C: a connection open at the stop is cut (its socket shut down, see
//! `cut`), and one opened after it (the cleanup's) waits at most
//! `AFTER_STOP_LIMIT` for each answer.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::Result;
use mysql::prelude::Queryable;
use mysql::{OptsBuilder, Params, Statement, Value};

use super::cut;
use super::driver::{inline, Conn, DbError, Dialect, ErrorClass, Param, Rows, TextMap};
use super::mysql_wire::{Col, Failure, Wire};
use crate::core::options::CliError;
use crate::core::signals;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a statement may go without an answer: above InnoDB's default
/// lock wait (50 s), so a legitimate wait ends first; a server that stalls
/// ends the connection.
const STATEMENT_LIMIT: Duration = Duration::from_secs(60);
/// After a stop, what a connection opened then (the cleanup's DROPs) waits
/// for its handshake and for each answer: a working server drops a table
/// well within it, and one that stalls holds the client no longer.
const AFTER_STOP_LIMIT: Duration = Duration::from_secs(1);
/// Deadlock, lock wait timeout, "record changed since last read": the
/// errors sysbench's `--mysql-ignore-errors` ignores by default.
const RETRY_CODES: [u16; 3] = [1213, 1205, 1020];
/// The server ended the session: the connection was killed (MariaDB's
/// ER_CONNECTION_KILLED), the server is shutting down, or the session was
/// idle too long (MySQL 8's ER_CLIENT_INTERACTION_TIMEOUT). Reconnect.
const LOST_CODES: [u16; 3] = [1927, 1053, 4031];

pub struct My {
    link: Link,
    conn: mysql::Conn,
    prepared: bool,
    /// Prepared statements by their text: looked up by the caller's string,
    /// not re-parsed for named parameters on every execute as the crate's
    /// own cache does (that cache is off, so nothing here is ever closed
    /// behind our back).
    statements: TextMap<Statement>,
    /// Scripts' prepared statements by their text: the id and result
    /// columns that `wire` executes them with.
    wired: TextMap<(u32, Vec<Col>)>,
    wire: Wire,
    /// An answer handed back (`recycle`), whose buffers the next one fills.
    spare: Rows,
}

/// What the connection's errors mean beyond the server's words.
struct Link {
    /// Registered to be cut at the stop (a connection opened before it).
    cut: Option<cut::Guard>,
    /// How long a read waits for the server.
    limit: Duration,
}

impl Link {
    fn error(&self, e: mysql::Error) -> DbError {
        if self.cut.as_ref().is_some_and(cut::Guard::was_cut) {
            return DbError {
                class: ErrorClass::Lost,
                code: "stopped".into(),
                message: "stopped by a signal".into(),
            };
        }
        // The crate reports a read's timeout inside its codec's error.
        let io = match &e {
            mysql::Error::IoError(io) => Some(io),
            mysql::Error::CodecError(c) => {
                std::error::Error::source(c).and_then(|s| s.downcast_ref::<std::io::Error>())
            }
            _ => None,
        };
        if io.is_some_and(|io| {
            matches!(
                io.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            )
        }) {
            // A server that stalls is not reconnected to (as PostgreSQL's
            // client): the run stops, naming the statement.
            return DbError {
                class: ErrorClass::Fatal,
                code: "timeout".into(),
                message: format!(
                    "the server sent no answer within {} s",
                    self.limit.as_secs_f64()
                ),
            };
        }
        classify(e)
    }
}

impl Drop for My {
    fn drop(&mut self) {
        // Unregistered before the socket closes with `conn`.
        self.link.cut = None;
    }
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
        // Opened after the stop, for the cleanup: short waits instead of a cut.
        let after_stop = signals::interrupted();
        let (handshake_limit, limit) = if after_stop {
            (AFTER_STOP_LIMIT, AFTER_STOP_LIMIT)
        } else {
            (CONNECT_TIMEOUT, STATEMENT_LIMIT)
        };
        let mut opts = OptsBuilder::new()
            .ip_or_hostname(Some(host))
            .tcp_port(port)
            .user(Some(user))
            .pass(Some(password))
            .db_name(Some(db))
            .tcp_connect_timeout(Some(CONNECT_TIMEOUT))
            .read_timeout(Some(limit))
            .write_timeout(Some(limit))
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
        // at its read timeout). After the stop only a second signal cuts it
        // short.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("mysql-connect".into())
            .spawn(move || {
                let _ = tx.send(mysql::Conn::new(opts));
            })?;
        let until = Instant::now() + handshake_limit;
        let connected = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(r) => break r,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if !after_stop || signals::hurried() {
                        signals::check()?;
                    }
                    if Instant::now() >= until {
                        return Err(CliError::Usage(format!(
                            "cannot connect to MySQL at {place}: the server accepted the connection but did not complete the handshake within {} s; check that a MySQL or MariaDB server listens there",
                            handshake_limit.as_secs_f64()
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
        let cut = (!after_stop).then(|| cut::on_stop(conn.as_raw_fd()));
        Ok(My {
            link: Link { cut, limit },
            conn,
            prepared,
            statements: TextMap::default(),
            wired: TextMap::default(),
            wire: Wire::default(),
            spare: Rows::default(),
        })
    }

    /// The prepared statement for `sql`, prepared on first use.
    fn statement(&mut self, sql: &str) -> Result<Statement, DbError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.conn.prep(sql).map_err(|e| self.link.error(e))?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Executes a statement without parameters: prepared (BEGIN and COMMIT,
    /// as sysbench sends them) or as text.
    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        if self.prepared {
            let stmt = self.statement(sql)?;
            self.conn
                .exec_drop(&stmt, ())
                .map_err(|e| self.link.error(e))
        } else {
            self.batch(sql)
        }
    }
}

pub(super) fn classify(e: mysql::Error) -> DbError {
    match e {
        mysql::Error::MySqlError(m) => DbError {
            class: if RETRY_CODES.contains(&m.code) {
                ErrorClass::Retry
            } else if LOST_CODES.contains(&m.code) {
                ErrorClass::Lost
            } else {
                ErrorClass::Fatal
            },
            // The errno, and the SQLSTATE after a colon where the server
            // sent one (scripts' sql_errno and sql_state).
            code: if m.state.is_empty() {
                m.code.to_string()
            } else {
                format!("{}:{}", m.code, m.state)
            },
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
        Param::Null => Value::NULL,
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

/// Appends a value as text, as a script reads it (`None`: NULL).
fn push_text(out: &mut Rows, v: &Value, number: &mut String) {
    use std::fmt::Write as _;
    number.clear();
    match v {
        Value::NULL => return out.push_value(None),
        Value::Bytes(b) => return out.push_value(Some(b)),
        Value::Int(n) => write!(number, "{n}"),
        Value::UInt(n) => write!(number, "{n}"),
        Value::Float(x) => write!(number, "{x}"),
        Value::Double(x) => write!(number, "{x}"),
        other => write!(number, "{}", other.as_sql(true).trim_matches('\'')),
    }
    .unwrap_or(());
    out.push_value(Some(number.as_bytes()));
}

/// Every row of every result set as text, for scripts; or the rows a
/// write changed.
fn collect<P: mysql::prelude::Protocol>(
    mut result: mysql::QueryResult<'_, '_, '_, P>,
    mut out: Rows,
) -> mysql::Result<Rows> {
    let mut number = String::new();
    while let Some(set) = result.iter() {
        out.affected += set.affected_rows();
        out.fields = out.fields.max(set.columns().as_ref().len());
        for row in set {
            let row = row?;
            out.begin_row();
            for i in 0..row.len() {
                match row.as_ref(i) {
                    Some(v) => push_text(&mut out, v, &mut number),
                    None => out.push_value(None),
                }
            }
            out.end_row();
        }
    }
    Ok(out)
}

impl Conn for My {
    /// sysbench's MySQL driver prepares every statement on the server at
    /// once (with --db-ps-mode=auto); its error then comes from `prepare`,
    /// in its words.
    fn prepare(&mut self, sql: &str) -> Result<(), String> {
        if !self.prepared {
            return Ok(());
        }
        self.statement(sql).map(|_| ()).map_err(|e| {
            let (errno, _) = e.code.split_once(':').unwrap_or((&e.code, ""));
            format!(
                "mysql_stmt_prepare() failed\nFATAL: MySQL error: {errno} \"{}\"",
                e.message
            )
        })
    }

    fn query(&mut self, sql: &str, params: Option<&[Param]>) -> Result<Rows, DbError> {
        // A plain query goes as text, as mysql_real_query sends sysbench's
        // con:query; a prepared statement's, prepared once.
        let prepared = params.is_some() && self.prepared;
        let params = params.unwrap_or(&[]);
        if prepared {
            // Executed by `wire`, not the crate: see mysql_wire.rs.
            let (id, columns) = match self.wired.get(sql) {
                Some(known) => known,
                None => {
                    let stmt = self.statement(sql)?;
                    let columns = stmt.columns().iter().map(Col::of).collect();
                    self.wired
                        .entry(sql.to_string())
                        .or_insert((stmt.id(), columns))
                }
            };
            let mut rows = Rows::reuse(&mut self.spare);
            let fd = self.conn.as_raw_fd();
            match self.wire.execute(fd, *id, columns, params, &mut rows) {
                Ok(()) => Ok(rows),
                Err(Failure::Server(e)) => Err(classify(mysql::Error::MySqlError(e))),
                Err(Failure::Io(e)) => Err(self.link.error(mysql::Error::IoError(e))),
            }
        } else {
            let result = self
                .conn
                .query_iter(inline(sql, params))
                .map_err(|e| self.link.error(e))?;
            collect(result, Rows::reuse(&mut self.spare)).map_err(|e| self.link.error(e))
        }
    }

    fn recycle(&mut self, rows: Rows) {
        self.spare = rows;
    }

    fn exec(&mut self, sql: &str, params: &[Param]) -> Result<u64, DbError> {
        if self.prepared {
            let params = if params.is_empty() {
                Params::Empty
            } else {
                Params::Positional(params.iter().map(value).collect())
            };
            let stmt = self.statement(sql)?;
            let result = self
                .conn
                .exec_iter(&stmt, params)
                .map_err(|e| self.link.error(e))?;
            drain(result).map_err(|e| self.link.error(e))
        } else {
            let result = self
                .conn
                .query_iter(inline(sql, params))
                .map_err(|e| self.link.error(e))?;
            drain(result).map_err(|e| self.link.error(e))
        }
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.query_drop(sql).map_err(|e| self.link.error(e))
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
        let n: Option<i64> = self
            .conn
            .exec_first(&stmt, (name,))
            .map_err(|e| self.link.error(e))?;
        Ok(n.unwrap_or(0) > 0)
    }
}

/// MySQL's words: AUTO_INCREMENT, `KEY xid (id)` for `--secondary`, the
/// storage engine, and id 0 for "generate one".
pub struct MyDialect;

impl Dialect for MyDialect {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn id_column(&self, auto_inc: bool, _secondary: bool) -> &'static str {
        if auto_inc {
            "INTEGER NOT NULL AUTO_INCREMENT"
        } else {
            "INTEGER NOT NULL"
        }
    }

    fn secondary_key(&self) -> Option<&'static str> {
        Some("KEY xid (id)")
    }

    fn table_options(&self, storage_engine: &str) -> String {
        format!("/*! ENGINE = {storage_engine} */")
    }

    fn insert_generated_id(&self, table: usize, k: i64, c: &str, pad: &str) -> String {
        format!("INSERT INTO sbtest{table} (id, k, c, pad) VALUES (0, {k}, '{c}', '{pad}')")
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

    #[test]
    fn a_read_that_timed_out_stops_the_run_naming_the_wait() {
        // What the crate returns when the socket's read timeout passes.
        let timed_out =
            mysql::Error::CodecError(std::io::Error::from(std::io::ErrorKind::WouldBlock).into());
        let link = Link {
            cut: None,
            limit: AFTER_STOP_LIMIT,
        };
        let e = link.error(timed_out);
        assert_eq!(e.class, ErrorClass::Fatal);
        assert_eq!(e.message, "the server sent no answer within 1 s");
    }
}
