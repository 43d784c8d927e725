//! The PostgreSQL driver (`--db-driver=pgsql`): a small blocking client of
//! PostgreSQL's wire protocol (version 3) over one TCP connection, with the
//! message codecs and SCRAM of the `postgres-protocol` crate. No TLS, no
//! async runtime: one `send` and one `recv` per statement, as libpq does for
//! sysbench.
//!
//! Statements (BEGIN and COMMIT included) are prepared once per connection
//! (Parse, integers declared int8 and strings varchar) and run by name
//! (Bind, Describe, Execute, Sync) with their parameters as text and binary
//! results, the messages sysbench's `PQexecPrepared` sends; with
//! `--db-ps-mode=disable` they go as text queries with the values inlined.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::Result;
use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::{ErrorResponseBody, Message};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;

mod login;

pub use login::{Auth, Logon, Refusal};

use super::driver::{
    inline, numbered, Conn, DbError, Dialect, ErrorClass, Param, Rows, TextMap, TooBig, MAX_ANSWER,
};
use crate::core::options::CliError;
use crate::core::signals;

/// The longest a connection may take to open, and the whole login after it
/// (however the server spreads its bytes).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Reads and writes wake at least this often; the stop and the operation's
/// deadline are checked before every read and write, so neither a silent
/// server nor one that keeps sending holds the client past them.
const POLL: Duration = Duration::from_millis(200);
/// The longest one statement may take, from its request to its last
/// message (lock waits end with the server's deadlock_timeout or
/// lock_timeout long before): a server that stalls, trickles or streams
/// messages without end ends the run, without reconnects.
pub const STATEMENT_LIMIT: Duration = Duration::from_secs(30);
/// After the stop, what an operation begun then (the cleanup's login and
/// DROPs) may take: a working server answers well within it. A second
/// signal cuts even that short.
const AFTER_STOP_LIMIT: Duration = Duration::from_secs(1);
/// The longest message accepted from the server (the OLTP tests' largest
/// rows are a few hundred bytes): a length beyond it is a broken stream.
const MAX_MESSAGE: usize = 64 << 20;

/// SQLSTATEs after which sysbench's pgsql driver restarts the transaction:
/// deadlock, serialization failure, and a duplicate key (a concurrent
/// delete/insert of the same id).
const RETRY: [&str; 3] = ["40P01", "40001", "23505"];

/// The parameter types sysbench declares (pg_type OIDs) and the binary
/// format code it asks results in.
const INT8: u32 = 20;
const VARCHAR: u32 = 1043;
const BINARY: i16 = 1;
/// Result columns as text, for scripts.
const TEXT: i16 = 0;

pub struct Pg {
    stream: TcpStream,
    /// Bytes read and not yet parsed into messages.
    input: BytesMut,
    /// The next request, sent whole with one write.
    output: BytesMut,
    chunk: Box<[u8; 16384]>,
    prepared: bool,
    /// SQL text → the name of its prepared statement on this connection.
    statements: TextMap<String>,
    /// The operation under way (the login, a statement): its deadline,
    /// which no message renews.
    wait: Wait,
    /// The longest the login and a statement may take.
    limits: Limits,
    /// Bytes of the current answer read so far (bounded by MAX_ANSWER).
    answered: usize,
    /// An answer handed back (`recycle`), whose buffers the next kept one
    /// fills.
    spare: Rows,
    /// The character position (from 1) the server's last error pointed at
    /// in its statement, if it pointed.
    error_position: Option<usize>,
}

/// How long the login and each statement may take.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub login: Duration,
    pub statement: Duration,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        login: CONNECT_TIMEOUT,
        statement: STATEMENT_LIMIT,
    };
}

/// One operation's bound: a deadline set when it begins, and whether it
/// began after the stop (then only a second signal ends it early).
#[derive(Debug, Clone, Copy)]
struct Wait {
    until: Instant,
    limit: Duration,
    after_stop: bool,
}

impl Wait {
    fn start(limit: Duration) -> Wait {
        let after_stop = signals::interrupted();
        let limit = if after_stop {
            limit.min(AFTER_STOP_LIMIT)
        } else {
            limit
        };
        Wait {
            until: Instant::now() + limit,
            limit,
            after_stop,
        }
    }

    /// An error once the user stopped or the deadline passed: checked
    /// before every read and write.
    fn check(&self) -> io::Result<()> {
        let stopped = if self.after_stop {
            signals::hurried()
        } else {
            signals::interrupted()
        };
        if stopped {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "stopped by a signal",
            ));
        }
        if Instant::now() >= self.until {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the server did not finish answering within {} s",
                    self.limit.as_secs_f64()
                ),
            ));
        }
        Ok(())
    }
}

/// What the server said for one request, up to its ReadyForQuery.
#[derive(Default)]
struct Outcome {
    rows: u64,
    /// The rows' values as text, when kept (scripts).
    kept: Option<Rows>,
    /// The rows a write affected (the last number of CommandComplete's tag).
    affected: u64,
    error: Option<DbError>,
}

impl Outcome {
    fn result(self) -> Result<u64, DbError> {
        match self.error {
            Some(e) => Err(e),
            None if self.rows > 0 => Ok(self.rows),
            None => Ok(self.affected),
        }
    }
}

fn lost(e: io::Error) -> DbError {
    DbError {
        // A stalled server or the user's stop: reconnecting would not help.
        class: match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::Interrupted => ErrorClass::Fatal,
            _ => ErrorClass::Lost,
        },
        code: String::new(),
        message: format!("the connection to PostgreSQL failed: {e}"),
    }
}

fn server_error(body: &ErrorResponseBody) -> DbError {
    let (mut code, mut message, mut severity) = (String::new(), String::new(), String::new());
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            // 'V' is never translated; 'S' may be.
            b'V' => severity = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'S' if severity.is_empty() => {
                severity = String::from_utf8_lossy(f.value_bytes()).into_owned()
            }
            _ => {}
        }
    }
    let class = if RETRY.contains(&code.as_str()) {
        ErrorClass::Retry
    } else if severity == "FATAL" || severity == "PANIC" {
        // The server ends the session after these (a terminated backend,
        // a shutdown): reconnect.
        ErrorClass::Lost
    } else {
        ErrorClass::Fatal
    };
    DbError {
        class,
        code,
        message,
    }
}

/// The ErrorResponse's position field ('P'): a character count from 1.
fn error_position(body: &ErrorResponseBody) -> Option<usize> {
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        if f.type_() == b'P' {
            return std::str::from_utf8(f.value_bytes()).ok()?.parse().ok();
        }
    }
    None
}

/// An error as libpq's PQerrorMessage words it: the severity, two spaces,
/// the message, and where the server pointed, the statement's line with a
/// caret under the character (as libpq's reportErrorPosition, for a line
/// that fits; libpq trims longer ones around the caret).
pub fn libpq_message(message: &str, sql: &str, position: Option<usize>) -> String {
    let mut out = format!("ERROR:  {message}\n");
    let Some(pos) = position.filter(|&p| p >= 1) else {
        return out;
    };
    let mut seen = 0;
    for (n, line) in sql.split('\n').enumerate() {
        let chars = line.chars().count();
        if pos <= seen + chars + 1 {
            let prefix = format!("LINE {}: ", n + 1);
            let column = pos - seen - 1;
            out.push_str(&format!(
                "{prefix}{line}\n{}^\n",
                " ".repeat(prefix.len() + column)
            ));
            return out;
        }
        seen += chars + 1;
    }
    out
}

/// A DataRow's values appended to `kept`, within its bound.
fn keep_row(
    kept: &mut Rows,
    body: &postgres_protocol::message::backend::DataRowBody,
) -> Result<(), DbError> {
    let buf = body.buffer();
    kept.begin_row().map_err(TooBig::error)?;
    let mut ranges = body.ranges();
    while let Some(r) = ranges.next().map_err(lost)? {
        kept.push_value(r.map(|r| buf.get(r).unwrap_or_default()))
            .map_err(TooBig::error)?;
    }
    kept.end_row();
    Ok(())
}

/// A read or write that timed out (it wakes every POLL).
fn is_wait(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn broken(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

impl Pg {
    pub fn connect(
        host: &str,
        port: u16,
        user: &str,
        password: &str,
        db: &str,
        prepared: bool,
        auth: Auth,
    ) -> Result<Pg> {
        Pg::connect_within(
            host,
            port,
            user,
            password,
            db,
            prepared,
            auth,
            Limits::DEFAULT,
        )
    }

    /// [`Pg::connect`] with the login and statements bounded by `limits`.
    #[allow(clippy::too_many_arguments)]
    pub fn connect_within(
        host: &str,
        port: u16,
        user: &str,
        password: &str,
        db: &str,
        prepared: bool,
        auth: Auth,
        limits: Limits,
    ) -> Result<Pg> {
        let unreachable = |why: String| {
            CliError::Usage(format!(
                "cannot connect to PostgreSQL at {host}:{port} (--pgsql-host={host} --pgsql-port={port}): {why}; start the server or point --pgsql-host and --pgsql-port at it"
            ))
        };
        let login = Logon {
            host,
            port,
            user,
            password,
            db,
        };
        match Pg::logon(&login, prepared, auth, limits) {
            Ok(pg) => Ok(pg),
            Err(Refusal::Unreachable(why)) => Err(unreachable(why).into()),
            Err(Refusal::Weaker(asked)) => Err(CliError::Usage(format!(
                "cannot connect to PostgreSQL at {host}:{port}: the server asked for the password {asked}, which --pgsql-auth={} does not allow; nothing was sent. Set the server's pg_hba.conf to scram-sha-256, or give --pgsql-auth=password if this server is trusted",
                match auth {
                    Auth::Password => "password",
                    Auth::Md5 => "md5",
                    Auth::Scram => "scram-sha-256",
                }
            ))
            .into()),
            Err(Refusal::Refused(e)) => Err(CliError::Usage(format!(
                "cannot connect to PostgreSQL at {host}:{port} (--pgsql-host={host} --pgsql-port={port}): the server refused user '{user}' on database '{db}': {} (SQLSTATE {}); check --pgsql-user, --pgsql-password and --pgsql-db",
                e.message, e.code
            ))
            .into()),
        }
    }

    /// Sends `output` within the operation's deadline.
    fn flush(&mut self) -> io::Result<()> {
        let mut sent = 0;
        let r = loop {
            if sent == self.output.len() {
                break Ok(());
            }
            if let Err(e) = self.wait.check() {
                break Err(e);
            }
            match self.stream.write(&self.output[sent..]) {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => sent += n,
                Err(e) if is_wait(&e) || e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.output.clear();
        r
    }

    /// The next message from the server, reading as much as it needs: the
    /// stop, the operation's deadline and its bound in bytes are checked
    /// before every read.
    fn message(&mut self) -> io::Result<Message> {
        loop {
            if self.input.len() >= 5 {
                let len = u32::from_be_bytes([
                    self.input[1],
                    self.input[2],
                    self.input[3],
                    self.input[4],
                ]) as usize;
                if len > MAX_MESSAGE {
                    return Err(broken(&format!(
                        "the server sent a message of {len} bytes (more than {MAX_MESSAGE})"
                    )));
                }
            }
            if let Some(m) = Message::parse(&mut self.input)? {
                return Ok(m);
            }
            self.wait.check()?;
            let n = match self.stream.read(&mut self.chunk[..]) {
                Ok(n) => n,
                Err(e) if is_wait(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
            self.answered += n;
            if self.answered > MAX_ANSWER {
                return Err(broken(&format!(
                    "the server's answer goes on past {} MiB",
                    MAX_ANSWER >> 20
                )));
            }
            self.input.extend_from_slice(&self.chunk[..n]);
        }
    }

    /// Begins an operation bounded by `limit` (the deadline, and the answer
    /// counted from 0 bytes).
    fn begin_wait(&mut self, limit: Duration) {
        self.wait = Wait::start(limit);
        self.answered = 0;
    }

    /// Sends what is in `output` and reads the answer up to ReadyForQuery.
    fn round_trip(&mut self) -> Result<Outcome, DbError> {
        self.round_trip_keeping(false)
    }

    /// [`Pg::round_trip`], keeping the rows' values (`keep`) for a script.
    fn round_trip_keeping(&mut self, keep: bool) -> Result<Outcome, DbError> {
        self.begin_wait(self.limits.statement);
        self.flush().map_err(lost)?;
        let mut out = Outcome {
            kept: keep.then(|| Rows::reuse(&mut self.spare)),
            ..Outcome::default()
        };
        loop {
            match self.message().map_err(lost)? {
                Message::DataRow(body) => {
                    out.rows += 1;
                    if let Some(kept) = &mut out.kept {
                        keep_row(kept, &body)?;
                    }
                }
                Message::RowDescription(body) => {
                    if let Some(kept) = &mut out.kept {
                        kept.fields = body.fields().count().map_err(lost)?;
                    }
                }
                Message::CommandComplete(body) => {
                    let tag = body.tag().map_err(lost)?;
                    out.affected = tag
                        .rsplit(' ')
                        .next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                }
                // The first error is the one that counts; the server skips
                // the rest of the request up to Sync.
                Message::ErrorResponse(body) if out.error.is_none() => {
                    out.error = Some(server_error(&body));
                    self.error_position = error_position(&body);
                }
                Message::ReadyForQuery(_) => return Ok(out),
                _ => {}
            }
        }
    }

    /// The name of `sql`'s prepared statement, preparing it on first use
    /// with its parameters' types as sysbench declares them: integers as
    /// int8, strings as varchar.
    fn statement(&mut self, sql: &str, params: &[Param]) -> Result<String, DbError> {
        if let Some(name) = self.statements.get(sql) {
            return Ok(name.clone());
        }
        let name = format!("s{}", self.statements.len());
        let types = params.iter().map(|p| match p {
            Param::Int(_) => INT8,
            Param::Text(_) | Param::Null => VARCHAR,
        });
        frontend::parse(&name, &numbered(sql), types, &mut self.output).map_err(lost)?;
        frontend::sync(&mut self.output);
        self.round_trip()?.result()?;
        self.statements.insert(sql.to_string(), name.clone());
        Ok(name)
    }

    fn simple(&mut self, sql: &str) -> Result<u64, DbError> {
        frontend::query(sql, &mut self.output).map_err(lost)?;
        self.round_trip()?.result()
    }
}

/// A TCP connection to the first of `host`'s addresses that answers within
/// the connect timeout, with Nagle off (as libpq) and the login bounded.
fn open(host: &str, port: u16) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host name has no address");
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(s) => {
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(POLL))?;
                s.set_write_timeout(Some(POLL))?;
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

impl Pg {
    /// Binds `params` (as text) to statement `name` with result columns in
    /// `format`, then describes and executes it.
    fn bind_execute(&mut self, name: &str, params: &[Param], format: i16) -> Result<(), DbError> {
        let mut text = String::new();
        frontend::bind(
            "",
            name,
            std::iter::empty(),
            params,
            |p, buf| {
                match p {
                    Param::Int(n) => {
                        text.clear();
                        use std::fmt::Write as _;
                        let _ = write!(text, "{n}");
                        buf.extend_from_slice(text.as_bytes());
                    }
                    Param::Text(s) => buf.extend_from_slice(s.as_bytes()),
                    Param::Null => return Ok(IsNull::Yes),
                }
                Ok(IsNull::No)
            },
            [format],
            &mut self.output,
        )
        .map_err(|_| lost(broken("a parameter could not be encoded")))?;
        frontend::describe(b'P', "", &mut self.output).map_err(lost)?;
        frontend::execute("", 0, &mut self.output).map_err(lost)?;
        frontend::sync(&mut self.output);
        Ok(())
    }
}

impl Conn for Pg {
    /// sysbench's PostgreSQL driver prepares a statement without
    /// parameters at once (one with parameters waits for their types, at
    /// the first bind): its error then comes from `prepare`, worded as
    /// libpq's.
    fn prepare(&mut self, sql: &str) -> Result<(), String> {
        if !self.prepared || sql.contains('?') {
            return Ok(());
        }
        self.statement(sql, &[]).map(|_| ()).map_err(|e| {
            let why = libpq_message(&e.message, sql, self.error_position);
            format!("PQprepare() failed: {why}")
        })
    }

    fn recycle(&mut self, rows: Rows) {
        self.spare = rows;
    }

    fn query(&mut self, sql: &str, params: Option<&[Param]>) -> Result<Rows, DbError> {
        let out = match params {
            Some(params) if self.prepared => {
                let name = self.statement(sql, params)?;
                self.bind_execute(&name, params, TEXT)?;
                self.round_trip_keeping(true)?
            }
            _ => {
                frontend::query(&inline(sql, params.unwrap_or(&[])), &mut self.output)
                    .map_err(lost)?;
                self.round_trip_keeping(true)?
            }
        };
        if let Some(e) = out.error {
            return Err(e);
        }
        let mut rows = out.kept.unwrap_or_default();
        if rows.is_empty() {
            rows.affected = out.affected;
        }
        Ok(rows)
    }

    fn exec(&mut self, sql: &str, params: &[Param]) -> Result<u64, DbError> {
        if !self.prepared {
            return self.simple(&inline(sql, params));
        }
        let name = self.statement(sql, params)?;
        // Every parameter in text format and every result column in binary,
        // as sysbench's PQexecPrepared asks for them.
        let mut text = String::new();
        frontend::bind(
            "",
            &name,
            std::iter::empty(),
            params,
            |p, buf| {
                match p {
                    Param::Int(n) => {
                        text.clear();
                        use std::fmt::Write as _;
                        let _ = write!(text, "{n}");
                        buf.extend_from_slice(text.as_bytes());
                    }
                    Param::Text(s) => buf.extend_from_slice(s.as_bytes()),
                    Param::Null => return Ok(IsNull::Yes),
                }
                Ok(IsNull::No)
            },
            [BINARY],
            &mut self.output,
        )
        .map_err(|_| lost(broken("a parameter could not be encoded")))?;
        // Describe as libpq's PQexecPrepared sends it: the same messages
        // reach the server as from sysbench (the row description it answers
        // with is not needed here).
        frontend::describe(b'P', "", &mut self.output).map_err(lost)?;
        frontend::execute("", 0, &mut self.output).map_err(lost)?;
        frontend::sync(&mut self.output);
        self.round_trip()?.result()
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.simple(sql).map(|_| ())
    }

    /// BEGIN and COMMIT are prepared statements too, as sysbench's
    /// `con:prepare("BEGIN")`; ROLLBACK after an error goes as a query.
    fn begin(&mut self, _write: bool) -> Result<(), DbError> {
        self.exec("BEGIN", &[]).map(|_| ())
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.exec("COMMIT", &[]).map(|_| ())
    }

    fn table_exists(&mut self, name: &str) -> Result<bool, DbError> {
        let sql = inline(
            "SELECT 1 FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = ?",
            &[Param::Text(name.to_string())],
        );
        Ok(self.simple(&sql)? > 0)
    }
}

/// PostgreSQL's words: SERIAL for a generated primary key.
pub struct PgDialect;

impl Dialect for PgDialect {
    fn name(&self) -> &'static str {
        "pgsql"
    }

    fn id_column(&self, auto_inc: bool, secondary: bool) -> &'static str {
        if auto_inc && !secondary {
            "SERIAL"
        } else {
            "INTEGER NOT NULL"
        }
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        // One write at most (POLL): the server may have stopped reading.
        frontend::terminate(&mut self.output);
        let _ = self.stream.write(&self.output);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that answers the startup message with `reply` and then
    /// holds the connection.
    fn fake_server(reply: Vec<u8>) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(&reply);
            std::thread::sleep(Duration::from_secs(2));
        });
        port
    }

    #[test]
    fn a_message_longer_than_the_bound_is_refused_not_allocated() {
        // 'R' (authentication) claiming 1 GiB.
        let mut reply = vec![b'R'];
        reply.extend_from_slice(&(1u32 << 30).to_be_bytes());
        let port = fake_server(reply);
        let err = Pg::connect("127.0.0.1", port, "u", "p", "d", true, Auth::Md5)
            .err()
            .expect("a broken stream must not log in")
            .to_string();
        assert!(err.contains("1073741824 bytes"), "{err}");
        assert!(err.contains("--pgsql-port"), "{err}");
    }

    /// An ErrorResponse message with these fields, as the server sends it.
    fn error_response(fields: &[(u8, &str)]) -> Vec<u8> {
        let mut body = Vec::new();
        for (t, v) in fields {
            body.push(*t);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut reply = vec![b'E'];
        reply.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        reply.extend_from_slice(&body);
        reply
    }

    #[test]
    fn server_errors_are_classed_as_sysbench_treats_them() {
        let class = |severity: &str, code: &str| {
            let mut bytes = BytesMut::from(
                &error_response(&[
                    (b'S', severity),
                    (b'V', severity),
                    (b'C', code),
                    (b'M', "m"),
                ])[..],
            );
            match Message::parse(&mut bytes).unwrap() {
                Some(Message::ErrorResponse(body)) => server_error(&body).class,
                _ => panic!("not an ErrorResponse"),
            }
        };
        // Deadlock, serialization failure, a concurrent delete/insert.
        for code in ["40P01", "40001", "23505"] {
            assert_eq!(class("ERROR", code), ErrorClass::Retry, "{code}");
        }
        // pg_terminate_backend, a shutdown: the session is gone.
        assert_eq!(class("FATAL", "57P01"), ErrorClass::Lost);
        assert_eq!(class("PANIC", "XX000"), ErrorClass::Lost);
        // A missing column, a syntax error: the run stops.
        assert_eq!(class("ERROR", "42703"), ErrorClass::Fatal);
        assert_eq!(class("ERROR", "42601"), ErrorClass::Fatal);
    }

    /// A server that asks for the password in clear (or as MD5) and keeps
    /// whatever the client sends: what it got.
    fn phishing_server(code: u32) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let mut ask = vec![b'R'];
            let body: Vec<u8> = match code {
                5 => [5u32.to_be_bytes().to_vec(), b"salt".to_vec()].concat(),
                c => c.to_be_bytes().to_vec(),
            };
            ask.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
            ask.extend_from_slice(&body);
            let _ = s.write_all(&ask);
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got);
            got
        });
        (port, got)
    }

    #[test]
    fn a_server_asking_for_the_password_in_clear_gets_nothing_unless_allowed() {
        // Issue 24, item 14: the client sent a cleartext password to any
        // server that asked.
        for (code, auth, sent) in [
            (3, Auth::Md5, false),
            (3, Auth::Scram, false),
            (5, Auth::Scram, false),
            (3, Auth::Password, true),
        ] {
            let (port, got) = phishing_server(code);
            let err = Pg::connect("127.0.0.1", port, "u", "sekrit-pw", "d", true, auth)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            let got = got.join().unwrap();
            let leaked = got.windows(9).any(|w| w == b"sekrit-pw");
            assert_eq!(leaked, sent, "code {code}, {auth:?}: {err}");
            if !sent {
                assert!(err.contains("--pgsql-auth"), "{err}");
            }
        }
    }

    #[test]
    fn a_refused_login_names_the_user_and_the_options() {
        let reply = error_response(&[
            (b'S', "FATAL"),
            (b'C', "28P01"),
            (b'M', "password authentication failed"),
        ]);
        let port = fake_server(reply);
        let err = Pg::connect("127.0.0.1", port, "alice", "p", "d", true, Auth::Md5)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("'alice'") && err.contains("28P01"), "{err}");
        assert!(err.contains("--pgsql-password"), "{err}");
    }

    #[test]
    fn a_server_that_says_nothing_is_given_up_within_the_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hold = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            std::thread::sleep(CONNECT_TIMEOUT + Duration::from_secs(2));
            drop(s);
        });
        let start = std::time::Instant::now();
        let err = Pg::connect("127.0.0.1", port, "u", "p", "d", true, Auth::Md5).err();
        assert!(err.is_some());
        assert!(start.elapsed() < CONNECT_TIMEOUT + Duration::from_secs(1));
        hold.join().unwrap();
    }

    /// A server that takes any login (or, with `trickle_login`, sends an
    /// endless login a byte every 50 ms) and answers every request with a
    /// NoticeResponse every 50 ms, never done, until the client goes or
    /// 10 s pass.
    fn chatty_server(trickle_login: bool) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let until = std::time::Instant::now() + Duration::from_secs(10);
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let mut notice = vec![b'N', 0, 0, 0, 14];
            notice.extend_from_slice(b"Mchatter\0\0");
            if trickle_login {
                // ParameterStatus messages, one byte at a time.
                let status = b"S\0\0\0\x08a\0b\0";
                for b in status.iter().cycle() {
                    if std::time::Instant::now() > until || s.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            let _ = s.write_all(b"R\0\0\0\x08\0\0\0\0Z\0\0\0\x05I");
            let _ = s.read(&mut buf);
            while std::time::Instant::now() < until && s.write_all(&notice).is_ok() {
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        port
    }

    #[test]
    fn messages_that_keep_coming_renew_no_deadline() {
        // Issue 53, item 2: a NoticeResponse every 50 ms, or a login a byte
        // at a time, kept the client past its limits (the deadline
        // restarted with each message, and was checked only when a read
        // timed out).
        let limits = Limits {
            login: Duration::from_millis(700),
            statement: Duration::from_millis(700),
        };
        let connect =
            |port| Pg::connect_within("127.0.0.1", port, "u", "p", "d", true, Auth::Md5, limits);
        let start = std::time::Instant::now();
        let err = connect(chatty_server(true)).err().unwrap().to_string();
        let took = start.elapsed();
        assert!(
            took < Duration::from_millis(1200),
            "login ended after {took:?}"
        );
        assert!(err.contains("within 0.7 s"), "{err}");

        let mut pg = connect(chatty_server(false)).unwrap();
        let start = std::time::Instant::now();
        let err = pg.batch("SELECT 1").unwrap_err();
        let took = start.elapsed();
        assert!(
            took < Duration::from_millis(1200),
            "statement ended after {took:?}"
        );
        assert_eq!(err.class, ErrorClass::Fatal);
        assert!(err.message.contains("within 0.7 s"), "{}", err.message);
    }

    /// The messages a client sent: type byte and body.
    type Sent = Vec<(u8, Vec<u8>)>;

    /// A server that logs in anyone, answers every extended-protocol step
    /// and records what the client sent, up to its Terminate.
    fn recording_server() -> (u16, std::thread::JoinHandle<Sent>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut len = [0u8; 4];
            s.read_exact(&mut len).unwrap();
            let mut startup = vec![0u8; u32::from_be_bytes(len) as usize - 4];
            s.read_exact(&mut startup).unwrap();
            s.write_all(b"R\0\0\0\x08\0\0\0\0Z\0\0\0\x05I").unwrap();
            let mut seen = Vec::new();
            loop {
                let mut head = [0u8; 5];
                if s.read_exact(&mut head).is_err() {
                    return seen;
                }
                let n = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4;
                let mut body = vec![0u8; n];
                s.read_exact(&mut body).unwrap();
                let reply: &[u8] = match head[0] {
                    b'P' => b"1\0\0\0\x04",
                    b'B' => b"2\0\0\0\x04",
                    b'D' => b"n\0\0\0\x04",
                    b'E' => b"C\0\0\0\x0aBEGIN\0",
                    b'S' => b"Z\0\0\0\x05T",
                    b'X' => return seen,
                    _ => b"",
                };
                seen.push((head[0], body));
                s.write_all(reply).unwrap();
            }
        });
        (port, h)
    }

    fn be16(b: &[u8]) -> i16 {
        i16::from_be_bytes([b[0], b[1]])
    }

    /// Parse's parameter types, and Bind's statement name and result
    /// formats.
    fn parse_types(body: &[u8]) -> (String, Vec<u32>) {
        let mut parts = body.splitn(3, |&b| b == 0);
        parts.next();
        let sql = String::from_utf8(parts.next().unwrap().to_vec()).unwrap();
        let rest = parts.next().unwrap();
        let n = be16(rest) as usize;
        let types = (0..n)
            .map(|i| u32::from_be_bytes(rest[2 + 4 * i..6 + 4 * i].try_into().unwrap()))
            .collect();
        (sql, types)
    }

    fn bind_result_formats(body: &[u8]) -> Vec<i16> {
        let mut parts = body.splitn(3, |&b| b == 0);
        parts.next();
        parts.next();
        let mut r = parts.next().unwrap();
        let nfmt = be16(r) as usize;
        r = &r[2 + 2 * nfmt..];
        let nparams = be16(r) as usize;
        r = &r[2..];
        for _ in 0..nparams {
            let len = i32::from_be_bytes(r[..4].try_into().unwrap());
            r = &r[4 + len.max(0) as usize..];
        }
        let nres = be16(r) as usize;
        (0..nres).map(|i| be16(&r[2 + 2 * i..])).collect()
    }

    /// The messages sysbench 1.0.20's pgsql driver sends (seen with strace):
    /// BEGIN and COMMIT prepared and bound like any statement, parameters
    /// declared int8 and varchar, every result column asked for in binary.
    #[test]
    fn statements_go_as_sysbench_sends_them() {
        let (port, server) = recording_server();
        let mut pg = Pg::connect("127.0.0.1", port, "u", "p", "d", true, Auth::Md5).unwrap();
        pg.begin(false).unwrap();
        let sel = "SELECT c FROM sbtest1 WHERE id=?";
        pg.exec(sel, &[Param::Int(5)]).unwrap();
        pg.exec(sel, &[Param::Int(6)]).unwrap();
        pg.exec(
            "UPDATE sbtest1 SET c=? WHERE id=?",
            &[Param::Text("x".into()), Param::Int(5)],
        )
        .unwrap();
        pg.commit().unwrap();
        drop(pg);
        let seen = server.join().unwrap();
        let kinds: String = seen.iter().map(|(k, _)| *k as char).collect();
        // Each statement parsed once (P S), then B D E S per execution; no
        // simple queries.
        assert_eq!(kinds, "PSBDESPSBDESBDESPSBDESPSBDES", "{kinds}");
        let parses: Vec<_> = seen
            .iter()
            .filter(|(k, _)| *k == b'P')
            .map(|(_, b)| parse_types(b))
            .collect();
        assert_eq!(
            parses,
            vec![
                ("BEGIN".to_string(), vec![]),
                ("SELECT c FROM sbtest1 WHERE id=$1".to_string(), vec![INT8]),
                (
                    "UPDATE sbtest1 SET c=$1 WHERE id=$2".to_string(),
                    vec![VARCHAR, INT8]
                ),
                ("COMMIT".to_string(), vec![]),
            ]
        );
        for (_, b) in seen.iter().filter(|(k, _)| *k == b'B') {
            assert_eq!(bind_result_formats(b), vec![BINARY]);
        }
    }
}
