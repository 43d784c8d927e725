//! A fake MySQL server for the OLTP tests: just enough of the wire protocol
//! (protocol 10 greeting, mysql_native_password, any login accepted, text
//! queries and prepared statements answered with OK or a one-row result) to
//! take `virtperf`'s MySQL client past its handshake, and then never answer
//! the statements a test picks. It tells the test when a statement stalls,
//! so the test signals the client exactly then. Every connection and the
//! server itself end when the test drops it, or after 60 s.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How long any part of the fake lives at most.
const LIFETIME: Duration = Duration::from_secs(60);
/// The most connections it takes (the client may reconnect).
const MAX_CONNECTIONS: usize = 16;

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;

const TYPE_LONGLONG: u8 = 0x08;
const TYPE_VAR_STRING: u8 = 0xfd;

/// SERVER_STATUS_AUTOCOMMIT.
const STATUS: u16 = 0x0002;

/// Which statements (by their SQL text) the fake never answers.
pub type Stall = fn(&str) -> bool;

/// A running fake; stops its threads when dropped.
pub struct FakeMysql {
    pub port: u16,
    stop: Arc<AtomicBool>,
    stalled: mpsc::Receiver<String>,
}

impl FakeMysql {
    /// Listens on a free loopback port. Statements for which `stall` is
    /// true are never answered; the query asking whether a table exists
    /// says yes when `tables_exist`.
    pub fn start(stall: Stall, tables_exist: bool) -> FakeMysql {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, stalled) = mpsc::channel();
        let stop2 = stop.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut taken = 0;
            while taken < MAX_CONNECTIONS
                && !stop2.load(Ordering::Relaxed)
                && started.elapsed() < LIFETIME
            {
                let Ok((s, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                taken += 1;
                let (stop, tx) = (stop2.clone(), tx.clone());
                std::thread::spawn(move || {
                    let mut c = Connection {
                        s,
                        stop,
                        until: started + LIFETIME,
                        statements: HashMap::new(),
                    };
                    let _ = c.serve(stall, tables_exist, &tx);
                });
            }
        });
        FakeMysql {
            port,
            stop,
            stalled,
        }
    }

    /// The text of the first statement left unanswered within `limit`.
    pub fn wait_stall(&self, limit: Duration) -> Option<String> {
        self.stalled.recv_timeout(limit).ok()
    }
}

impl Drop for FakeMysql {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

struct Connection {
    s: TcpStream,
    stop: Arc<AtomicBool>,
    until: Instant,
    /// Prepared statements by id.
    statements: HashMap<u32, String>,
}

impl Connection {
    fn alive(&self) -> bool {
        !self.stop.load(Ordering::Relaxed) && Instant::now() < self.until
    }

    fn serve(
        &mut self,
        stall: Stall,
        tables_exist: bool,
        stalled: &mpsc::Sender<String>,
    ) -> io::Result<()> {
        self.s.set_nonblocking(false)?;
        self.s.set_read_timeout(Some(Duration::from_millis(200)))?;
        self.send(0, &greeting())?;
        let (seq, _auth) = self.packet()?;
        self.send(seq + 1, &ok())?;
        loop {
            let (_, cmd) = self.packet()?;
            let Some((&kind, body)) = cmd.split_first() else {
                continue;
            };
            match kind {
                COM_QUERY => {
                    let sql = String::from_utf8_lossy(body).into_owned();
                    if stall(&sql) {
                        return self.hold(sql, stalled);
                    }
                    if sql.starts_with("SELECT @@") {
                        // The crate asks for max_allowed_packet at login.
                        self.text_row(&sql[7..], "16777216")?;
                    } else {
                        self.send(1, &ok())?;
                    }
                }
                COM_STMT_PREPARE => {
                    let sql = String::from_utf8_lossy(body).into_owned();
                    let id = self.statements.len() as u32 + 1;
                    let columns = u16::from(sql.starts_with("SELECT"));
                    let params = sql.matches('?').count() as u16;
                    self.statements.insert(id, sql);
                    self.prepared(id, columns, params)?;
                }
                COM_STMT_EXECUTE => {
                    let id = u32::from_le_bytes(body[..4].try_into().unwrap());
                    let sql = self.statements.get(&id).cloned().unwrap_or_default();
                    if stall(&sql) {
                        return self.hold(sql, stalled);
                    }
                    if sql.contains("information_schema.tables") {
                        self.binary_count(i64::from(tables_exist))?;
                    } else {
                        self.send(1, &ok())?;
                    }
                }
                COM_STMT_CLOSE => {}
                COM_QUIT => return Ok(()),
                _ => self.send(1, &ok())?,
            }
        }
    }

    /// Says nothing more, reading (and dropping) whatever comes, until the
    /// client goes, the test ends or the lifetime is over.
    fn hold(&mut self, sql: String, stalled: &mpsc::Sender<String>) -> io::Result<()> {
        let _ = stalled.send(sql);
        let mut buf = [0u8; 4096];
        while self.alive() {
            match self.s.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One packet: its sequence number and payload.
    fn packet(&mut self) -> io::Result<(u8, Vec<u8>)> {
        let mut head = [0u8; 4];
        self.read_exact(&mut head)?;
        let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
        let mut body = vec![0u8; len];
        self.read_exact(&mut body)?;
        Ok((head[3], body))
    }

    /// `read_exact` that gives up when the fake stops or its lifetime ends.
    fn read_exact(&mut self, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            if !self.alive() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            match self.s.read(buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => buf = &mut buf[n..],
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn send(&mut self, seq: u8, payload: &[u8]) -> io::Result<()> {
        let len = (payload.len() as u32).to_le_bytes();
        let mut p = vec![len[0], len[1], len[2], seq];
        p.extend_from_slice(payload);
        self.s.write_all(&p)
    }

    /// A text result set of one column and one row.
    fn text_row(&mut self, name: &str, value: &str) -> io::Result<()> {
        self.send(1, &[1])?;
        self.send(2, &column(name, TYPE_VAR_STRING))?;
        self.send(3, &eof())?;
        let mut row = Vec::new();
        lenenc_str(&mut row, value);
        self.send(4, &row)?;
        self.send(5, &eof())
    }

    /// COM_STMT_PREPARE_OK with its parameter and column definitions.
    fn prepared(&mut self, id: u32, columns: u16, params: u16) -> io::Result<()> {
        let mut p = vec![0];
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&columns.to_le_bytes());
        p.extend_from_slice(&params.to_le_bytes());
        p.extend_from_slice(&[0, 0, 0]);
        let mut seq = 1;
        self.send(seq, &p)?;
        for (n, name, kind) in [
            (params, "?", TYPE_VAR_STRING),
            (columns, "c", TYPE_LONGLONG),
        ] {
            if n > 0 {
                for _ in 0..n {
                    seq += 1;
                    self.send(seq, &column(name, kind))?;
                }
                seq += 1;
                self.send(seq, &eof())?;
            }
        }
        Ok(())
    }

    /// A binary result set of one BIGINT row.
    fn binary_count(&mut self, n: i64) -> io::Result<()> {
        self.send(1, &[1])?;
        self.send(2, &column("COUNT(*)", TYPE_LONGLONG))?;
        self.send(3, &eof())?;
        // Header, a one-byte NULL bitmap (1 column + 2 reserved bits), value.
        let mut row = vec![0, 0];
        row.extend_from_slice(&n.to_le_bytes());
        self.send(4, &row)?;
        self.send(5, &eof())
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Protocol 10: version, connection id, a 20-byte scramble, capabilities
/// (4.1 protocol, secure connection, plugin auth, transactions, multiple
/// results), utf8mb4, autocommit, mysql_native_password.
fn greeting() -> Vec<u8> {
    const CAPS: u32 = 0x0000_0001 // LONG_PASSWORD
        | 0x0000_0004 // LONG_FLAG
        | 0x0000_0008 // CONNECT_WITH_DB
        | 0x0000_0200 // PROTOCOL_41
        | 0x0000_2000 // TRANSACTIONS
        | 0x0000_8000 // SECURE_CONNECTION
        | 0x0001_0000 // MULTI_STATEMENTS
        | 0x0002_0000 // MULTI_RESULTS
        | 0x0004_0000 // PS_MULTI_RESULTS
        | 0x0008_0000; // PLUGIN_AUTH
    let caps = CAPS.to_le_bytes();
    let mut p = vec![10];
    p.extend_from_slice(b"5.7.44-virtperf-fake\0");
    p.extend_from_slice(&7u32.to_le_bytes());
    p.extend_from_slice(b"abcdefgh");
    p.push(0);
    p.extend_from_slice(&caps[..2]);
    p.push(45);
    p.extend_from_slice(&STATUS.to_le_bytes());
    p.extend_from_slice(&caps[2..]);
    p.push(21);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(b"ijklmnopqrst\0");
    p.extend_from_slice(b"mysql_native_password\0");
    p
}

fn ok() -> Vec<u8> {
    let mut p = vec![0, 0, 0];
    p.extend_from_slice(&STATUS.to_le_bytes());
    p.extend_from_slice(&[0, 0]);
    p
}

fn eof() -> Vec<u8> {
    let mut p = vec![0xfe, 0, 0];
    p.extend_from_slice(&STATUS.to_le_bytes());
    p
}

fn lenenc_str(out: &mut Vec<u8>, s: &str) {
    assert!(s.len() < 251, "a short string");
    out.push(s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}

/// A ColumnDefinition41 packet.
fn column(name: &str, kind: u8) -> Vec<u8> {
    let mut p = Vec::new();
    for part in ["def", "sbtest", "t", "t", name, name] {
        lenenc_str(&mut p, part);
    }
    p.push(0x0c);
    p.extend_from_slice(&63u16.to_le_bytes());
    p.extend_from_slice(&20u32.to_le_bytes());
    p.push(kind);
    p.extend_from_slice(&[0, 0, 0, 0, 0]);
    p
}
