//! The MySQL/MariaDB driver (`--db-driver=mysql`): the pure-Rust `mysql`
//! client (no TLS, rust flate2 backend) logs in and prepares statements on
//! the server (each prepared once per connection and kept here, BEGIN and
//! COMMIT included, as sysbench's libmysqlclient driver does); every
//! statement then runs through `mysql_wire` on the same socket, prepared or
//! as text with `--db-ps-mode=disable`. How the password may go is
//! `mysql_auth`'s. The crate's blocking reads have no hook: every
//! operation (login, prepare, statement) is armed with a deadline that no
//! byte renews, and `cut` shuts the socket down when it passes or at the
//! stop (a connection opened after the stop, the cleanup's, only at a
//! second one, its operations then bounded by `AFTER_STOP_LIMIT`).

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::Result;
use mysql::prelude::Queryable;
use mysql::{OptsBuilder, Statement};

use super::cut;
use super::driver::{inline, Conn, DbError, Dialect, ErrorClass, Param, Rows, TextMap};
use super::mysql_auth::{self, ServerKey};
use super::mysql_wire::{Col, Failure, Tally, Wire};
use crate::core::options::CliError;
use crate::core::signals;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a statement (or a prepare) may take, from its request to
/// its answer's last byte: above InnoDB's default lock wait (50 s), so a
/// legitimate wait ends first; a server that stalls or trickles ends the
/// connection.
const STATEMENT_LIMIT: Duration = Duration::from_secs(60);
/// After a stop, what a connection opened then (the cleanup's DROPs) may
/// take for its handshake and for each operation: a working server drops a
/// table well within it, and one that stalls holds the client no longer.
const AFTER_STOP_LIMIT: Duration = Duration::from_secs(1);
/// The largest packet the crate takes while it logs in and prepares (the
/// statements' answers are `mysql_wire`'s, bounded there): MariaDB's
/// default max_allowed_packet. Given, so the crate does not ask the server.
const MAX_PACKET: usize = 16 << 20;
/// Deadlock, lock wait timeout, "record changed since last read": the
/// errors sysbench's `--mysql-ignore-errors` ignores by default.
const RETRY_CODES: [u16; 3] = [1213, 1205, 1020];
/// The server ended the session: the connection was killed (MariaDB's
/// ER_CONNECTION_KILLED), the server is shutting down, or the session was
/// idle too long (MySQL 8's ER_CLIENT_INTERACTION_TIMEOUT). Reconnect.
const LOST_CODES: [u16; 3] = [1927, 1053, 4031];

/// Where and as whom to connect.
#[derive(Debug, Clone, Copy)]
pub struct Login<'a> {
    pub host: &'a str,
    pub port: u16,
    pub socket: &'a str,
    pub user: &'a str,
    pub password: &'a str,
    pub db: &'a str,
    pub key: &'a ServerKey,
}

/// How long the handshake and each operation may take.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub handshake: Duration,
    pub statement: Duration,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        handshake: CONNECT_TIMEOUT,
        statement: STATEMENT_LIMIT,
    };
}

pub struct My {
    link: Link,
    conn: mysql::Conn,
    prepared: bool,
    /// Prepared statements by their text: looked up by the caller's string,
    /// not re-parsed for named parameters on every execute as the crate's
    /// own cache does (that cache is off, so nothing here is ever closed
    /// behind our back).
    statements: TextMap<Statement>,
    /// The same statements' ids and result columns, that `wire` executes
    /// them with.
    wired: TextMap<(u32, Vec<Col>)>,
    wire: Wire,
    /// An answer handed back (`recycle`), whose buffers the next one fills.
    spare: Rows,
}

/// The connection's deadline and cut, and what its errors mean beyond the
/// server's words.
struct Link {
    /// The socket's registration to be cut at the stop or a deadline.
    cut: Option<cut::Guard>,
    /// How long an operation may take.
    limit: Duration,
}

impl Link {
    /// Runs one operation under the deadline.
    fn bounded<T>(&self, op: impl FnOnce() -> T) -> T {
        if let Some(c) = &self.cut {
            c.arm(self.limit);
        }
        let r = op();
        if let Some(c) = &self.cut {
            c.disarm();
        }
        r
    }

    fn error(&self, e: mysql::Error) -> DbError {
        match self.cut.as_ref().and_then(cut::Guard::was_cut) {
            Some(cut::Cut::Stopped) => {
                return DbError {
                    class: ErrorClass::Lost,
                    code: "stopped".into(),
                    message: "stopped by a signal".into(),
                }
            }
            Some(cut::Cut::Expired) => return self.timeout(),
            None => {}
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
            return self.timeout();
        }
        classify(e)
    }

    /// A server that stalls or trickles is not reconnected to (as
    /// PostgreSQL's client): the run stops, naming the statement.
    fn timeout(&self) -> DbError {
        DbError {
            class: ErrorClass::Fatal,
            code: "timeout".into(),
            message: format!(
                "the server did not finish answering within {} s",
                self.limit.as_secs_f64()
            ),
        }
    }

    fn failure(&self, f: Failure) -> DbError {
        match f {
            Failure::Server(e) => classify(mysql::Error::MySqlError(e)),
            Failure::Io(e) => self.error(mysql::Error::IoError(e)),
            Failure::TooBig(e) => e.error(),
        }
    }
}

impl Drop for My {
    fn drop(&mut self) {
        // Unregistered before the socket closes with `conn`.
        self.link.cut = None;
    }
}

impl My {
    pub fn connect(login: &Login, prepared: bool) -> Result<My> {
        My::connect_within(login, prepared, Limits::DEFAULT)
    }

    /// [`My::connect`] with the handshake and each operation bounded by
    /// `limits`.
    pub fn connect_within(login: &Login, prepared: bool, limits: Limits) -> Result<My> {
        // Opened after the stop, for the cleanup: short waits, cut only at
        // a second signal.
        let after_stop = signals::interrupted();
        let (handshake_limit, limit) = if after_stop {
            (AFTER_STOP_LIMIT, AFTER_STOP_LIMIT)
        } else {
            (limits.handshake, limits.statement)
        };
        let Login {
            host,
            port,
            socket,
            user,
            db,
            ..
        } = *login;
        let place = if socket.is_empty() {
            format!("{host}:{port} (--mysql-host={host} --mysql-port={port})")
        } else {
            format!("socket {socket} (--mysql-socket={socket})")
        };
        if let ServerKey::Pinned(path) = login.key {
            mysql_auth::check_pinned(path, login.password.len()).map_err(CliError::Usage)?;
        }
        let conn = handshake(opts(login, limit), handshake_limit, after_stop)
            .map_err(|e| CliError::Usage(format!("cannot connect to MySQL at {place}: {e}")))?
            .map_err(|e| {
                let why = refused(&e, user, db);
                CliError::Usage(format!("cannot connect to MySQL at {place}: {why}"))
            })?;
        let cut = Some(cut::watch(conn.as_raw_fd(), !after_stop));
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
        let conn = &mut self.conn;
        let s = self
            .link
            .bounded(|| conn.prep(sql))
            .map_err(|e| self.link.error(e))?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Runs `sql` with `params` through the wire: the prepared statement
    /// (prepared on first use) or, with `text`, a text query with the
    /// values inlined; keeps its rows in `out` if given.
    fn run(
        &mut self,
        sql: &str,
        params: &[Param],
        text: bool,
        out: Option<&mut Rows>,
    ) -> Result<Tally, DbError> {
        let fd = self.conn.as_raw_fd();
        let done = if text {
            let inlined;
            let sql = if params.is_empty() {
                sql
            } else {
                inlined = inline(sql, params);
                &inlined
            };
            let wire = &mut self.wire;
            self.link.bounded(|| wire.query(fd, sql, out))
        } else {
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
            let wire = &mut self.wire;
            self.link
                .bounded(|| wire.execute(fd, *id, columns, params, out))
        };
        done.map_err(|f| self.link.failure(f))
    }

    /// Executes a statement without parameters: prepared (BEGIN and COMMIT,
    /// as sysbench sends them) or as text.
    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        self.run(sql, &[], !self.prepared, None).map(|_| ())
    }
}

/// The crate's options: no statement cache, no TLS, the socket's own
/// timeouts at the operation's limit (the cut comes first), and where the
/// RSA key for a full authentication comes from.
fn opts(login: &Login, limit: Duration) -> OptsBuilder {
    let opts = OptsBuilder::new()
        .ip_or_hostname(Some(login.host))
        .tcp_port(login.port)
        .user(Some(login.user))
        .pass(Some(login.password))
        .db_name(Some(login.db))
        .tcp_connect_timeout(Some(CONNECT_TIMEOUT))
        .read_timeout(Some(limit))
        .write_timeout(Some(limit))
        .stmt_cache_size(Some(0))
        .max_allowed_packet(Some(MAX_PACKET))
        .server_key_path(login.key.crate_path())
        // As libmysqlclient with an explicit host: stay on TCP.
        .prefer_socket(false);
    if login.socket.is_empty() {
        opts
    } else {
        opts.socket(Some(login.socket)).prefer_socket(true)
    }
}

/// What went wrong while logging in, in words that say what to do.
fn refused(e: &mysql::Error, user: &str, db: &str) -> String {
    use mysql::DriverError::{
        CleartextPluginDisabled, OldMysqlPasswordDisabled, UnknownAuthPlugin,
    };
    if mysql_auth::is_refusal(e) {
        return mysql_auth::refusal_message();
    }
    const NOTHING: &str = "nothing of the password was sent; give the user caching_sha2_password or mysql_native_password";
    let clear = || {
        format!("the server asked for the password in clear (mysql_clear_password), which virtperf never sends without TLS; {NOTHING}")
    };
    match e {
        mysql::Error::MySqlError(m) => format!(
            "the server refused user '{user}' on database '{db}': {} (error {}); check --mysql-user, --mysql-password and --mysql-db",
            m.message, m.code
        ),
        mysql::Error::DriverError(CleartextPluginDisabled) => clear(),
        mysql::Error::DriverError(UnknownAuthPlugin(name)) if name == "mysql_clear_password" => {
            clear()
        }
        mysql::Error::DriverError(OldMysqlPasswordDisabled) => format!(
            "the server asked for the password by mysql_old_password, which is broken; {NOTHING}"
        ),
        mysql::Error::DriverError(UnknownAuthPlugin(name)) => format!(
            "the server asked for the password by {name}, which virtperf does not speak; {NOTHING}"
        ),
        other => format!(
            "{other}; start the server or point --mysql-host and --mysql-port (or --mysql-socket) at it"
        ),
    }
}

/// The crate's handshake, on a thread of its own so that a server that
/// accepts and says nothing (or trickles) is given up on within `limit`,
/// and Ctrl-C within a tenth of a second (the abandoned thread ends at its
/// socket's timeout). After the stop only a second signal cuts it short.
/// The outer error: no connection within the limit; the inner: the crate's.
fn handshake(
    opts: OptsBuilder,
    limit: Duration,
    after_stop: bool,
) -> Result<Result<mysql::Conn, mysql::Error>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("mysql-connect".into())
        .spawn(move || {
            // The crate indexes packets a server may send short: its panic
            // is this connection's error, not the process's.
            let r = std::panic::catch_unwind(|| mysql::Conn::new(opts)).unwrap_or_else(|_| {
                Err(mysql::Error::DriverError(
                    mysql::DriverError::UnexpectedPacket,
                ))
            });
            let _ = tx.send(r);
        })?;
    let until = Instant::now() + limit;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(r) => return Ok(r),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if !after_stop || signals::hurried() {
                    signals::check()?;
                }
                if Instant::now() >= until {
                    anyhow::bail!(
                        "the server accepted the connection but did not complete the handshake within {} s; check that a MySQL or MariaDB server listens there",
                        limit.as_secs_f64()
                    );
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                anyhow::bail!("the connecting thread ended")
            }
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

    /// A plain query goes as text, as mysql_real_query sends sysbench's
    /// con:query; a prepared statement's, prepared once.
    fn query(&mut self, sql: &str, params: Option<&[Param]>) -> Result<Rows, DbError> {
        let text = params.is_none() || !self.prepared;
        let mut rows = Rows::reuse(&mut self.spare);
        self.run(sql, params.unwrap_or(&[]), text, Some(&mut rows))?;
        Ok(rows)
    }

    fn recycle(&mut self, rows: Rows) {
        self.spare = rows;
    }

    /// The rows read, or the rows changed when there were none.
    fn exec(&mut self, sql: &str, params: &[Param]) -> Result<u64, DbError> {
        let t = self.run(sql, params, !self.prepared, None)?;
        Ok(if t.rows > 0 { t.rows } else { t.affected })
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.run(sql, &[], true, None).map(|_| ())
    }

    fn begin(&mut self, _write: bool) -> Result<(), DbError> {
        self.simple("BEGIN")
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.simple("COMMIT")
    }

    fn table_exists(&mut self, name: &str) -> Result<bool, DbError> {
        let mut rows = Rows::default();
        self.run(
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_name = ?",
            &[Param::Text(name.to_string())],
            false,
            Some(&mut rows),
        )?;
        let count = rows
            .row(0)
            .and_then(|mut r| r.next().flatten())
            .and_then(|v| std::str::from_utf8(v).ok()?.parse::<i64>().ok());
        Ok(count.unwrap_or(0) > 0)
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

    /// A MySQL server that takes any login (mysql_native_password) and
    /// then answers every command a byte every 100 ms, never done, until
    /// the client goes or 10 s pass.
    fn trickling_server() -> u16 {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let until = Instant::now() + Duration::from_secs(10);
            let send = |s: &mut std::net::TcpStream, seq: u8, p: &[u8]| {
                let mut out = (p.len() as u32).to_le_bytes()[..3].to_vec();
                out.push(seq);
                out.extend_from_slice(p);
                s.write_all(&out)
            };
            // Protocol 10, a 20-byte scramble, 4.1 protocol, secure
            // connection, plugin auth.
            let caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0000_0008;
            let c = caps.to_le_bytes();
            let mut greeting = vec![10];
            greeting.extend_from_slice(b"5.7.44-trickle\0\x07\0\0\0abcdefgh\0");
            greeting.extend_from_slice(&[c[0], c[1], 45, 2, 0, c[2], c[3], 21]);
            greeting.extend_from_slice(&[0; 10]);
            greeting.extend_from_slice(b"ijklmnopqrst\0mysql_native_password\0");
            send(&mut s, 0, &greeting).unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            send(&mut s, 2, &[0, 0, 0, 2, 0, 0, 0]).unwrap();
            let _ = s.read(&mut buf);
            // A column count packet that promises a long payload.
            let mut answer = [0xFF, 0xFF, 0x0F, 1].iter().chain(std::iter::repeat(&1u8));
            while Instant::now() < until {
                let b = *answer.next().unwrap();
                if s.write_all(&[b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        port
    }

    #[test]
    fn a_trickled_answer_is_cut_at_the_operations_deadline() {
        // Issue 53, item 15: a reply trickled a byte every 5 s kept prepare
        // past its 60 s limit (the read timeout restarted with each byte).
        // Here: a byte every 100 ms against a 700 ms limit, for a statement
        // (the wire's read) and a prepare (the crate's).
        let key = ServerKey::Refuse;
        let limits = Limits {
            handshake: Duration::from_secs(3),
            statement: Duration::from_millis(700),
        };
        for prepared in [false, true] {
            let port = trickling_server();
            let login = Login {
                host: "127.0.0.1",
                port,
                socket: "",
                user: "u",
                password: "p",
                db: "d",
                key: &key,
            };
            let mut my = My::connect_within(&login, prepared, limits).unwrap();
            let start = Instant::now();
            let err = if prepared {
                my.prepare("SELECT 1").unwrap_err()
            } else {
                my.batch("DO 1").unwrap_err().message
            };
            let took = start.elapsed();
            assert!(took < Duration::from_millis(1300), "{prepared}: {took:?}");
            assert!(err.contains("within 0.7 s"), "{prepared}: {err}");
        }
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
        assert_eq!(e.message, "the server did not finish answering within 1 s");
    }
}
