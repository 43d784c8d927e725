//! The statements on a MySQL or MariaDB connection once the `mysql` crate
//! has logged in: COM_STMT_EXECUTE for prepared statements and COM_QUERY
//! for text, the request written and the answer read straight on the
//! connection's socket, each row's values appended to one `Rows` as text
//! with no allocation per row or per value (the `mysql` crate builds a
//! `Row` of `Value`s, each string its own `Vec`, for every row: half of a
//! script's client CPU in `oltp_read_write.lua`, whose range selects return
//! 100 rows each), or only counted. Every answer is bounded here: in bytes
//! on the wire (`MAX_ANSWER`), in columns (`MAX_COLUMNS`, where the crate
//! reserves room for any count a server names) and, kept, in memory
//! (`Rows`' own bound). The crate still connects and prepares; this runs
//! between its commands, when its buffers are empty, and reads exactly one
//! answer, so the two never see each other's bytes.
//!
//! The connection is the crate's: without CLIENT_DEPRECATE_EOF (the crate
//! never asks for it), so column definitions and rows each end with an EOF
//! packet; with MariaDB's MARIADB_CLIENT_CACHE_METADATA when the server has
//! it, so an answer may leave out the column definitions (a flag byte after
//! the column count says so) and the prepare's columns are the ones used.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, RawFd};

use super::driver::{Param, Rows, TooBig, MAX_ANSWER};

const COM_QUERY: u8 = 0x03;
const COM_STMT_EXECUTE: u8 = 0x17;
/// A payload this long continues in the next packet.
const MAX_PAYLOAD: usize = 0xFF_FFFF;
/// The most columns an answer may have: MySQL's and MariaDB's own limit
/// for a table and a select list.
const MAX_COLUMNS: u64 = 4096;
const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
const UNSIGNED_FLAG: u16 = 0x20;

// The protocol's type codes this file reads or sends.
const TYPE_TINY: u8 = 1;
const TYPE_SHORT: u8 = 2;
const TYPE_LONG: u8 = 3;
const TYPE_FLOAT: u8 = 4;
const TYPE_DOUBLE: u8 = 5;
const TYPE_NULL: u8 = 6;
const TYPE_TIMESTAMP: u8 = 7;
const TYPE_LONGLONG: u8 = 8;
const TYPE_INT24: u8 = 9;
const TYPE_DATE: u8 = 10;
const TYPE_TIME: u8 = 11;
const TYPE_DATETIME: u8 = 12;
const TYPE_YEAR: u8 = 13;
const TYPE_VAR_STRING: u8 = 253;

/// A result column as the binary protocol encodes its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Col {
    kind: u8,
    unsigned: bool,
}

impl Col {
    pub fn of(c: &mysql::Column) -> Col {
        Col {
            kind: c.column_type() as u8,
            unsigned: c.flags().bits() & UNSIGNED_FLAG != 0,
        }
    }
}

/// Why an execution failed: the server's error (as the crate's, which
/// `mysql.rs` classes), the socket's, or an answer too big to keep.
pub enum Failure {
    Server(mysql::MySqlError),
    Io(io::Error),
    TooBig(TooBig),
}

impl From<TooBig> for Failure {
    fn from(e: TooBig) -> Failure {
        Failure::TooBig(e)
    }
}

/// What an answer held besides kept rows: the rows it returned and the
/// rows its writes changed, over all its results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub rows: u64,
    pub affected: u64,
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::Io(e)
    }
}

fn broken(what: &str) -> Failure {
    Failure::Io(io::Error::new(io::ErrorKind::InvalidData, what.to_string()))
}

/// One connection's buffers, kept from one execution to the next.
#[derive(Default)]
pub struct Wire {
    /// Bytes read from the socket: `input[pos..end]` is not yet taken as
    /// packets. The buffer keeps its length (zeroed once) from one read to
    /// the next.
    input: Vec<u8>,
    pos: usize,
    end: usize,
    /// The current packet's payload.
    packet: Vec<u8>,
    request: Vec<u8>,
    /// This answer's columns.
    columns: Vec<Col>,
    number: String,
    /// Bytes of this answer read so far (bounded by [`MAX_ANSWER`]).
    answered: usize,
    /// The answer's rows and changed rows so far.
    tally: Tally,
}

/// How a result's rows are encoded: COM_STMT_EXECUTE's binary rows, or
/// COM_QUERY's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Binary,
    Text,
}

impl Wire {
    /// Executes statement `id` (whose result columns the prepare gave as
    /// `prepared`) with `params`, and reads every row of every result as
    /// text into `out` (or only counts them), and the rows a write changed.
    pub fn execute(
        &mut self,
        fd: RawFd,
        id: u32,
        prepared: &[Col],
        params: &[Param],
        out: Option<&mut Rows>,
    ) -> Result<Tally, Failure> {
        self.request_execute(id, params);
        self.round_trip(fd, Protocol::Binary, prepared, out)
    }

    /// Runs `sql` as a text query (COM_QUERY, several statements allowed)
    /// and reads its answer as [`Wire::execute`] does.
    pub fn query(
        &mut self,
        fd: RawFd,
        sql: &str,
        out: Option<&mut Rows>,
    ) -> Result<Tally, Failure> {
        let r = &mut self.request;
        r.clear();
        r.extend_from_slice(&[0; 4]);
        r.push(COM_QUERY);
        r.extend_from_slice(sql.as_bytes());
        frame(r);
        self.round_trip(fd, Protocol::Text, &[], out)
    }

    /// Sends the request and reads its whole answer.
    fn round_trip(
        &mut self,
        fd: RawFd,
        protocol: Protocol,
        prepared: &[Col],
        mut out: Option<&mut Rows>,
    ) -> Result<Tally, Failure> {
        // SAFETY: `fd` is the crate's open socket, which outlives this call;
        // ManuallyDrop keeps it from being closed here, and the crate does
        // not use it while this runs (one thread, `&mut` connection).
        let mut socket = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        socket.write_all(&self.request)?;
        self.pos = 0;
        self.end = 0;
        self.answered = 0;
        self.tally = Tally::default();
        loop {
            let status = self.result_set(&mut *socket, protocol, prepared, out.as_deref_mut())?;
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                break;
            }
        }
        if self.pos != self.end {
            return Err(broken("the server sent more than one answer"));
        }
        Ok(self.tally)
    }

    /// The COM_STMT_EXECUTE packet(s): integers as LONGLONG, text as
    /// VAR_STRING, types sent with every execution.
    fn request_execute(&mut self, id: u32, params: &[Param]) {
        let r = &mut self.request;
        r.clear();
        r.extend_from_slice(&[0; 4]);
        r.push(COM_STMT_EXECUTE);
        r.extend_from_slice(&id.to_le_bytes());
        r.push(0); // no cursor
        r.extend_from_slice(&1u32.to_le_bytes()); // iteration count
        if !params.is_empty() {
            let nulls = r.len();
            r.resize(nulls + params.len().div_ceil(8), 0);
            for (i, p) in params.iter().enumerate() {
                if matches!(p, Param::Null) {
                    r[nulls + i / 8] |= 1 << (i % 8);
                }
            }
            r.push(1); // new parameter types follow
            for p in params {
                let kind = match p {
                    Param::Int(_) => TYPE_LONGLONG,
                    Param::Text(_) => TYPE_VAR_STRING,
                    Param::Null => TYPE_NULL,
                };
                r.extend_from_slice(&[kind, 0]);
            }
            for p in params {
                match p {
                    Param::Int(n) => r.extend_from_slice(&n.to_le_bytes()),
                    Param::Text(s) => {
                        put_lenenc(r, s.len() as u64);
                        r.extend_from_slice(s.as_bytes());
                    }
                    Param::Null => {}
                }
            }
        }
        frame(r);
    }

    /// Reads one result (an OK, an error, or columns and rows up to their
    /// EOF) into `out` and the tally; returns its status flags.
    fn result_set(
        &mut self,
        socket: &mut impl Read,
        protocol: Protocol,
        prepared: &[Col],
        mut out: Option<&mut Rows>,
    ) -> Result<u16, Failure> {
        self.read_packet(socket)?;
        match self.packet.first() {
            None => return Err(broken("an empty packet")),
            Some(0x00) => {
                let mut p = Parse(&self.packet[1..]);
                let affected = p.lenenc()?;
                p.lenenc()?; // last insert id
                self.tally.affected += affected;
                if let Some(out) = out {
                    out.affected += affected;
                }
                return p.u16();
            }
            Some(0xFF) => return Err(Failure::Server(server_error(&self.packet))),
            Some(0xFB) => return Err(broken(
                "the server asked for a local file (LOAD DATA LOCAL), which virtperf never sends",
            )),
            Some(_) => {}
        }
        let mut p = Parse(&self.packet);
        let count = p.lenenc()?;
        if count > MAX_COLUMNS {
            return Err(broken(&format!(
                "an answer of {count} columns (MySQL has at most {MAX_COLUMNS})"
            )));
        }
        let count = count as usize;
        // MariaDB's "metadata follows" byte, there only with its
        // metadata cache: 0 = the prepare's columns stand.
        let skipped = p.0.first() == Some(&0);
        self.columns.clear();
        if skipped {
            if prepared.len() != count {
                return Err(broken(
                    "the server left out columns the statement did not have",
                ));
            }
            self.columns.extend_from_slice(prepared);
        } else {
            for _ in 0..count {
                self.read_packet(socket)?;
                self.columns.push(column(&self.packet)?);
            }
        }
        self.read_packet(socket)?; // the EOF after the columns
        if let Some(out) = out.as_deref_mut() {
            out.fields = out.fields.max(count);
        }
        loop {
            self.read_packet(socket)?;
            match (self.packet.first(), protocol) {
                (Some(0xFE), _) if self.packet.len() < 9 => {
                    // EOF: 0xFE, warnings (2), status (2).
                    let mut p = Parse(&self.packet[1..]);
                    p.take(2)?;
                    return p.u16();
                }
                (Some(0xFF), _) => return Err(Failure::Server(server_error(&self.packet))),
                (Some(0x00), Protocol::Binary) => {
                    self.tally.rows += 1;
                    if let Some(out) = out.as_deref_mut() {
                        self.row(out)?;
                    }
                }
                (Some(_), Protocol::Text) => {
                    self.tally.rows += 1;
                    self.text_row(out.as_deref_mut())?;
                }
                _ => return Err(broken("a row without its header")),
            }
        }
    }

    /// A text row: each value length-encoded, 0xFB for NULL; checked whole
    /// even when not kept.
    fn text_row(&self, mut out: Option<&mut Rows>) -> Result<(), Failure> {
        let mut p = Parse(&self.packet);
        if let Some(out) = out.as_deref_mut() {
            out.begin_row()?;
        }
        for _ in 0..self.columns.len() {
            let value = if p.0.first() == Some(&0xFB) {
                p.take(1)?;
                None
            } else {
                let len = p.lenenc()? as usize;
                Some(p.take(len)?)
            };
            if let Some(out) = out.as_deref_mut() {
                out.push_value(value)?;
            }
        }
        if !p.0.is_empty() {
            return Err(broken("a row longer than its columns"));
        }
        if let Some(out) = out {
            out.end_row();
        }
        Ok(())
    }

    /// A binary row: a NULL bitmap (offset by 2 bits), then each non-NULL
    /// value as its column's type encodes it.
    fn row(&mut self, out: &mut Rows) -> Result<(), Failure> {
        let n = self.columns.len();
        let bitmap = (n + 7 + 2) / 8;
        let packet = &self.packet;
        let nulls = packet
            .get(1..1 + bitmap)
            .ok_or_else(|| broken("a row shorter than its NULL bitmap"))?;
        let mut p = Parse(&packet[1 + bitmap..]);
        out.begin_row()?;
        for (i, col) in self.columns.iter().enumerate() {
            let bit = i + 2;
            if nulls[bit / 8] & (1 << (bit % 8)) != 0 {
                out.push_value(None)?;
                continue;
            }
            let number = &mut self.number;
            number.clear();
            let _ = match (col.kind, col.unsigned) {
                (TYPE_TINY, false) => write!(number, "{}", p.take(1)?[0] as i8),
                (TYPE_TINY, true) => write!(number, "{}", p.take(1)?[0]),
                (TYPE_SHORT | TYPE_YEAR, false) => write!(number, "{}", p.u16()? as i16),
                (TYPE_SHORT | TYPE_YEAR, true) => write!(number, "{}", p.u16()?),
                (TYPE_LONG | TYPE_INT24, false) => write!(number, "{}", p.u32()? as i32),
                (TYPE_LONG | TYPE_INT24, true) => write!(number, "{}", p.u32()?),
                (TYPE_LONGLONG, false) => write!(number, "{}", p.u64()? as i64),
                (TYPE_LONGLONG, true) => write!(number, "{}", p.u64()?),
                (TYPE_FLOAT, _) => write!(number, "{}", f32::from_bits(p.u32()?)),
                (TYPE_DOUBLE, _) => write!(number, "{}", f64::from_bits(p.u64()?)),
                (TYPE_DATE | TYPE_DATETIME | TYPE_TIMESTAMP, _) => {
                    date(number, &mut p)?;
                    Ok(())
                }
                (TYPE_TIME, _) => {
                    time(number, &mut p)?;
                    Ok(())
                }
                (TYPE_NULL, _) => {
                    out.push_value(None)?;
                    continue;
                }
                _ => {
                    let len = p.lenenc()? as usize;
                    out.push_value(Some(p.take(len)?))?;
                    continue;
                }
            };
            out.push_value(Some(number.as_bytes()))?;
        }
        out.end_row();
        Ok(())
    }

    /// The next packet's payload into `packet`, joining a payload split
    /// over several packets.
    fn read_packet(&mut self, socket: &mut impl Read) -> Result<(), Failure> {
        self.packet.clear();
        loop {
            self.fill(socket, 4)?;
            let h = &self.input[self.pos..self.pos + 4];
            let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
            self.pos += 4;
            self.answered += 4 + len;
            if self.answered > MAX_ANSWER {
                return Err(broken("an answer larger than 256 MiB"));
            }
            self.fill(socket, len)?;
            self.packet
                .extend_from_slice(&self.input[self.pos..self.pos + len]);
            self.pos += len;
            if len < MAX_PAYLOAD {
                return Ok(());
            }
        }
    }

    /// Reads until `n` unread bytes are buffered.
    fn fill(&mut self, socket: &mut impl Read, n: usize) -> Result<(), Failure> {
        if self.end - self.pos >= n {
            return Ok(());
        }
        self.input.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        // Room for `n` and a read of 16 KiB at least, zeroed only when the
        // buffer grows.
        let room = n.max(16 << 10);
        if self.input.len() < room {
            self.input.resize(room, 0);
        }
        while self.end < n {
            let got = loop {
                match socket.read(&mut self.input[self.end..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            };
            match got? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    )
                    .into())
                }
                got => self.end += got,
            }
        }
        Ok(())
    }
}

/// Puts the 4-byte packet header(s) on a request built after 4 spare
/// bytes, splitting a payload of 16 MiB or more as the protocol wants.
fn frame(r: &mut Vec<u8>) {
    let payload = r.len() - 4;
    if payload < MAX_PAYLOAD {
        r[..3].copy_from_slice(&(payload as u32).to_le_bytes()[..3]);
        r[3] = 0;
        return;
    }
    let body = r.split_off(4);
    r.clear();
    // A payload that fills its last packet ends with an empty one.
    let mut seq = 0u8;
    for c in body.chunks(MAX_PAYLOAD) {
        r.extend_from_slice(&(c.len() as u32).to_le_bytes()[..3]);
        r.push(seq);
        r.extend_from_slice(c);
        seq = seq.wrapping_add(1);
    }
    if body.len().is_multiple_of(MAX_PAYLOAD) {
        r.extend_from_slice(&[0, 0, 0, seq]);
    }
}

fn put_lenenc(r: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => r.push(n as u8),
        251..=0xFFFF => {
            r.push(0xFC);
            r.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            r.push(0xFD);
            r.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            r.push(0xFE);
            r.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// A column definition's type and UNSIGNED flag: after six length-encoded
/// strings (catalog, schema, table, original table, name, original name),
/// the fixed fields' length, charset (2), length (4), type (1), flags (2).
fn column(packet: &[u8]) -> Result<Col, Failure> {
    let mut p = Parse(packet);
    for _ in 0..6 {
        let len = p.lenenc()? as usize;
        p.take(len)?;
    }
    p.lenenc()?;
    p.take(6)?;
    let kind = p.take(1)?[0];
    let flags = p.u16()?;
    Ok(Col {
        kind,
        unsigned: flags & UNSIGNED_FLAG != 0,
    })
}

/// An ERR packet: code, '#' and SQLSTATE, message, as the crate's error.
fn server_error(packet: &[u8]) -> mysql::MySqlError {
    let code = packet
        .get(1..3)
        .map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
    let rest = packet.get(3..).unwrap_or_default();
    let (state, message) = match rest.first() {
        Some(b'#') => (
            rest.get(1..6).unwrap_or_default(),
            rest.get(6..).unwrap_or_default(),
        ),
        _ => (&[][..], rest),
    };
    mysql::MySqlError {
        state: String::from_utf8_lossy(state).into_owned(),
        message: String::from_utf8_lossy(message).into_owned(),
        code,
    }
}

/// A binary DATE/DATETIME/TIMESTAMP as text, as `mysql::Value::as_sql`
/// writes it (without its quotes); a length the protocol does not have, or
/// a value cut short, is an error, never partial text.
fn date(out: &mut String, p: &mut Parse) -> Result<(), Failure> {
    let len = usize::from(p.take(1)?[0]);
    if ![0, 4, 7, 11].contains(&len) {
        return Err(broken("a date of a length the protocol does not have"));
    }
    let b = p.take(len)?;
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let year = u16::from_le_bytes([at(0), at(1)]);
    let (month, day, hour, minute, second) = (at(2), at(3), at(4), at(5), at(6));
    let micros = u32::from_le_bytes([at(7), at(8), at(9), at(10)]);
    // Writing to a String cannot fail.
    let _ = write!(out, "{year:04}-{month:02}-{day:02}");
    if (hour, minute, second, micros) != (0, 0, 0, 0) {
        let _ = write!(out, " {hour:02}:{minute:02}:{second:02}");
        if micros != 0 {
            let _ = write!(out, ".{micros:06}");
        }
    }
    Ok(())
}

/// A binary TIME as text, hours counting the days, as `as_sql` writes it;
/// an impossible length or a value cut short is an error.
fn time(out: &mut String, p: &mut Parse) -> Result<(), Failure> {
    let len = usize::from(p.take(1)?[0]);
    if ![0, 8, 12].contains(&len) {
        return Err(broken("a time of a length the protocol does not have"));
    }
    let b = p.take(len)?;
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let negative = at(0) == 1;
    let days = u32::from_le_bytes([at(1), at(2), at(3), at(4)]);
    let hours = u64::from(days) * 24 + u64::from(at(5));
    let micros = u32::from_le_bytes([at(8), at(9), at(10), at(11)]);
    let sign = if negative { "-" } else { "" };
    let _ = write!(out, "{sign}{hours:03}:{:02}:{:02}", at(6), at(7));
    if micros != 0 {
        let _ = write!(out, ".{micros:06}");
    }
    Ok(())
}

/// A cursor over a packet's bytes.
struct Parse<'a>(&'a [u8]);

impl<'a> Parse<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Failure> {
        if self.0.len() < n {
            return Err(broken("a packet shorter than its fields"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u16(&mut self) -> Result<u16, Failure> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, Failure> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, Failure> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    /// A length-encoded integer (0xFB, NULL in a text row, reads as 0).
    fn lenenc(&mut self) -> Result<u64, Failure> {
        let first = self.take(1)?[0];
        Ok(match first {
            0xFC => u64::from(self.u16()?),
            0xFD => {
                let b = self.take(3)?;
                u64::from(b[0]) | u64::from(b[1]) << 8 | u64::from(b[2]) << 16
            }
            0xFE => self.u64()?,
            0xFB => 0,
            n => u64::from(n),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `payloads` framed as the server sends them, sequence ids from 1.
    fn answer(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            out.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
            out.push(i as u8 + 1);
            out.extend_from_slice(p);
        }
        out
    }

    fn column_def(kind: u8, flags: u16) -> Vec<u8> {
        let mut c = Vec::new();
        for s in ["def", "sbtest", "sbtest1", "sbtest1", "c", "c"] {
            put_lenenc(&mut c, s.len() as u64);
            c.extend_from_slice(s.as_bytes());
        }
        c.push(0x0c);
        c.extend_from_slice(&[33, 0, 0, 1, 0, 0, kind]);
        c.extend_from_slice(&flags.to_le_bytes());
        c.extend_from_slice(&[0, 0, 0]);
        c
    }

    fn read(bytes: &[u8], prepared: &[Col]) -> Result<Rows, Failure> {
        let mut wire = Wire::default();
        let mut out = Rows::default();
        let mut socket = bytes;
        loop {
            let status =
                wire.result_set(&mut socket, Protocol::Binary, prepared, Some(&mut out))?;
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(out);
            }
        }
    }

    #[test]
    fn rows_of_every_type_become_text() {
        let eof: &[u8] = &[0xFE, 0, 0, 2, 0];
        let cols = [
            column_def(TYPE_LONG, 0),
            column_def(TYPE_LONGLONG, UNSIGNED_FLAG),
            column_def(254, 0),
            column_def(TYPE_DOUBLE, 0),
            column_def(TYPE_DATETIME, 0),
            column_def(TYPE_TIME, 0),
        ];
        let mut row = vec![0x00, 0b0000_0000];
        row.extend_from_slice(&(-5i32).to_le_bytes());
        row.extend_from_slice(&u64::MAX.to_le_bytes());
        row.extend_from_slice(b"\x0312-");
        row.extend_from_slice(&1.5f64.to_le_bytes());
        row.extend_from_slice(&[7, 0xE9, 0x07, 11, 27, 13, 5, 9]);
        row.extend_from_slice(&[8, 1, 1, 0, 0, 0, 2, 3, 4]);
        // The second row: column 3 (bit 5) NULL, the rest as before.
        let mut row2 = vec![0x00, 0b0010_0000];
        row2.extend_from_slice(&7i32.to_le_bytes());
        row2.extend_from_slice(&1u64.to_le_bytes());
        row2.extend_from_slice(b"\x00");
        row2.extend_from_slice(&[4, 0xE9, 0x07, 1, 2]);
        row2.extend_from_slice(&[0]);
        let mut payloads: Vec<&[u8]> = vec![&[6]];
        payloads.extend(cols.iter().map(Vec::as_slice));
        payloads.extend([eof, &row, &row2, eof]);
        let rows = read(&answer(&payloads), &[]).unwrap_or_else(|_| panic!("not read"));
        assert_eq!(rows.fields, 6);
        let text = |i| {
            rows.row(i)
                .unwrap()
                .map(|v| v.map(|b| String::from_utf8(b.to_vec()).unwrap()))
                .collect::<Vec<_>>()
        };
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            text(0),
            [
                s("-5"),
                s("18446744073709551615"),
                s("12-"),
                s("1.5"),
                s("2025-11-27 13:05:09"),
                s("-026:03:04"),
            ]
        );
        assert_eq!(
            text(1),
            [s("7"), s("1"), s(""), None, s("2025-01-02"), s("000:00:00")]
        );
    }

    #[test]
    fn oks_errors_skipped_metadata_and_more_results() {
        // An UPDATE's OK: 3 rows changed.
        let rows = read(&answer(&[&[0, 3, 0, 2, 0, 0, 0]]), &[]).ok().unwrap();
        assert_eq!((rows.affected, rows.len(), rows.fields), (3, 0, 0));
        // A deadlock: the server's code and message (mysql.rs classes it).
        let mut err = vec![0xFF];
        err.extend_from_slice(&1213u16.to_le_bytes());
        err.extend_from_slice(b"#40001Deadlock found");
        match read(&answer(&[&err]), &[]) {
            Err(Failure::Server(e)) => {
                assert_eq!((e.code, e.message.as_str()), (1213, "Deadlock found"));
            }
            _ => panic!("not a server error"),
        }
        // MariaDB's cached metadata: the prepare's column stands; then a
        // second result (more results flag) with an OK.
        let prepared = [Col {
            kind: TYPE_LONGLONG,
            unsigned: false,
        }];
        let mut row = vec![0, 0];
        row.extend_from_slice(&42i64.to_le_bytes());
        let more: &[u8] = &[0xFE, 0, 0, 0x0a, 0];
        let ok: &[u8] = &[0, 0, 0, 2, 0, 0, 0];
        let bytes = answer(&[&[1, 0], &[0xFE, 0, 0, 2, 0], &row, more, ok]);
        let rows = read(&bytes, &prepared).ok().unwrap();
        assert_eq!(rows.row(0).unwrap().collect::<Vec<_>>(), [Some(&b"42"[..])]);
    }

    #[test]
    fn a_hostile_answer_is_an_error_not_a_panic_or_a_heap() {
        let broken_data = |r: Result<Rows, Failure>| match r {
            Err(Failure::Io(e)) => e.kind() == io::ErrorKind::InvalidData,
            _ => false,
        };
        // A one-column answer whose "EOF" after the rows is one byte.
        let one = [Col {
            kind: TYPE_LONGLONG,
            unsigned: false,
        }];
        let short_eof = answer(&[&[1, 0], &[0xFE, 0, 0, 2, 0], &[0xFE]]);
        assert!(broken_data(read(&short_eof, &one)));
        // A TIME of u32::MAX days reads (hours beyond u32), no overflow.
        let mut row = vec![0x00, 0];
        row.extend_from_slice(&[8, 0, 0xFF, 0xFF, 0xFF, 0xFF, 23, 59, 59]);
        let eof: &[u8] = &[0xFE, 0, 0, 2, 0];
        let time = answer(&[&[1], &column_def(TYPE_TIME, 0), eof, &row, eof]);
        let rows = read(&time, &[]).ok().unwrap();
        assert_eq!(
            rows.row(0).unwrap().collect::<Vec<_>>(),
            [Some(&b"103079215103:59:59"[..])]
        );
        // A date whose length byte says 7 with 3 bytes left, a date of
        // length 5 and a time of length 9: errors, never partial text.
        for (kind, value) in [
            (TYPE_DATETIME, &[7u8, 0xE8, 0x07, 11][..]),
            (TYPE_DATETIME, &[5, 0xE8, 0x07, 11, 27, 1][..]),
            (TYPE_TIME, &[9, 0, 1, 0, 0, 0, 2, 3, 4, 5][..]),
        ] {
            let mut row = vec![0x00, 0];
            row.extend_from_slice(value);
            let cols = [Col {
                kind,
                unsigned: false,
            }];
            let bytes = answer(&[&[1, 0], eof, &row, eof]);
            assert!(broken_data(read(&bytes, &cols)), "{value:?}");
        }
        // Continued packets without end: refused at MAX_ANSWER, having
        // held no more than that.
        struct Endless(usize);
        impl Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                for b in buf.iter_mut() {
                    // Every packet 0xFFFFFF long, payload bytes 0xFF.
                    let at = self.0 % (4 + MAX_PAYLOAD);
                    *b = if at == 3 { 0 } else { 0xFF };
                    self.0 += 1;
                }
                Ok(buf.len())
            }
        }
        let mut wire = Wire::default();
        let mut source = Endless(0);
        let r = wire.result_set(&mut source, Protocol::Binary, &[], None);
        assert!(broken_data(r.map(|_| Rows::default())));
        assert!(source.0 <= MAX_ANSWER + (4 + MAX_PAYLOAD) + (16 << 10));
    }

    #[test]
    fn an_answer_in_small_pieces_reads_as_a_whole() {
        // The socket gives 3 bytes a read: packets and their headers are
        // joined across reads, and the bytes left over are kept in order.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(3).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let eof: &[u8] = &[0xFE, 0, 0, 2, 0];
        let one = [Col {
            kind: TYPE_LONGLONG,
            unsigned: false,
        }];
        let rows: Vec<Vec<u8>> = (0..50u64)
            .map(|i| {
                let mut r = vec![0x00, 0];
                r.extend_from_slice(&(i * 1_000_003).to_le_bytes());
                r
            })
            .collect();
        let mut payloads: Vec<&[u8]> = vec![&[1, 0], eof];
        payloads.extend(rows.iter().map(Vec::as_slice));
        payloads.push(eof);
        let bytes = answer(&payloads);
        let mut wire = Wire::default();
        let mut out = Rows::default();
        wire.result_set(&mut Trickle(&bytes), Protocol::Binary, &one, Some(&mut out))
            .ok()
            .unwrap();
        for i in 0..50u64 {
            let text = (i * 1_000_003).to_string();
            assert_eq!(
                out.row(i as usize).unwrap().collect::<Vec<_>>(),
                [Some(text.as_bytes())]
            );
        }
        assert!(out.row(50).is_none());
    }

    /// Reads `bytes` as a text query's answer, keeping its rows.
    fn read_text(bytes: &[u8]) -> (Result<Tally, Failure>, Rows) {
        let mut wire = Wire::default();
        let mut out = Rows::default();
        let mut socket = bytes;
        let r = loop {
            match wire.result_set(&mut socket, Protocol::Text, &[], Some(&mut out)) {
                Ok(status) if status & SERVER_MORE_RESULTS_EXISTS != 0 => {}
                Ok(_) => break Ok(wire.tally),
                Err(e) => break Err(e),
            }
        };
        (r, out)
    }

    #[test]
    fn text_rows_keep_values_and_nulls_and_are_counted() {
        let eof: &[u8] = &[0xFE, 0, 0, 2, 0];
        let c = column_def(253, 0);
        let payloads: Vec<&[u8]> = vec![&[2], &c, &c, eof, b"\x0212\xfb", b"\x00\x01x", eof];
        let (r, rows) = read_text(&answer(&payloads));
        assert_eq!(
            r.ok(),
            Some(Tally {
                rows: 2,
                affected: 0
            })
        );
        assert_eq!(rows.fields, 2);
        assert_eq!(
            rows.row(0).unwrap().collect::<Vec<_>>(),
            [Some(&b"12"[..]), None]
        );
        assert_eq!(
            rows.row(1).unwrap().collect::<Vec<_>>(),
            [Some(&b""[..]), Some(&b"x"[..])]
        );
        // A value running past its row, or a row with a value too many.
        for row in [&b"\x0512"[..], b"\x011\x012\x013"] {
            let (r, _) = read_text(&answer(&[&[2], &c, &c, eof, row, eof]));
            assert!(matches!(r, Err(Failure::Io(_))), "{row:?}");
        }
    }

    #[test]
    fn answers_are_bounded_in_columns_and_in_cells_kept() {
        // Issue 53, item 3: 1.9 MB of NULL columns on the wire became
        // 360 MB in memory. A row of 60,000 NULL columns is 7.5 kB of
        // binary row; 4,096 columns is where MySQL stops, and where this
        // does.
        let eof: &[u8] = &[0xFE, 0, 0, 2, 0];
        let mut header = Vec::new();
        put_lenenc(&mut header, 60_000);
        let (r, rows) = read_text(&answer(&[&header]));
        match r {
            Err(Failure::Io(e)) => assert!(e.to_string().contains("60000 columns"), "{e}"),
            _ => panic!("60,000 columns taken"),
        }
        assert!(rows.is_empty());
        // MariaDB's cached metadata names no column definitions: the
        // prepared statement's 4,096 NULL columns in binary rows of 513
        // bytes each. Kept rows stop at MAX_KEPT's cells, counted ones go
        // on and cost nothing.
        let cols = vec![
            Col {
                kind: TYPE_LONGLONG,
                unsigned: false
            };
            4096
        ];
        let mut row = vec![0x00];
        row.resize(1 + (4096 + 7 + 2) / 8, 0xFF);
        let rows_sent = 20_000;
        let mut payloads: Vec<&[u8]> = vec![&[0xFD, 0, 0x10, 0, 0], eof];
        payloads.extend(std::iter::repeat_n(&row[..], rows_sent));
        payloads.push(eof);
        let bytes = answer(&payloads);
        let mut wire = Wire::default();
        let mut out = Rows::default();
        let r = wire.result_set(&mut &bytes[..], Protocol::Binary, &cols, Some(&mut out));
        assert!(matches!(r, Err(Failure::TooBig(_))));
        let kept_cells = out.len() * 4096;
        assert!(
            out.held() <= crate::workload::oltp::driver::MAX_KEPT
                && kept_cells <= crate::workload::oltp::driver::MAX_KEPT / 4,
            "{kept_cells} cells kept"
        );
        let mut wire = Wire::default();
        let r = wire.result_set(&mut &bytes[..], Protocol::Binary, &cols, None);
        assert!(r.is_ok());
        assert_eq!(wire.tally.rows, rows_sent as u64);
    }

    #[test]
    fn mutated_answers_are_read_or_refused_never_a_panic() {
        // A valid binary and text answer, each byte changed, cut or
        // repeated by a seeded generator: every outcome is an answer or an
        // error, and what is kept stays within its bound.
        let eof: &[u8] = &[0xFE, 0, 0, 2, 0];
        let cols = [column_def(TYPE_LONGLONG, 0), column_def(TYPE_DATETIME, 0)];
        let mut row = vec![0x00, 0];
        row.extend_from_slice(&42i64.to_le_bytes());
        row.extend_from_slice(&[7, 0xE9, 0x07, 11, 27, 13, 5, 9]);
        let text_row: &[u8] = b"\x0242\xfb";
        let binary = answer(&[&[2], &cols[0], &cols[1], eof, &row, &row, eof]);
        let text = answer(&[&[2], &cols[0], &cols[1], eof, text_row, text_row, eof]);
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..4000 {
            let (base, protocol) = if round % 2 == 0 {
                (&binary, Protocol::Binary)
            } else {
                (&text, Protocol::Text)
            };
            let mut bytes = base.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % bytes.len();
                match next() % 3 {
                    0 => bytes[at] = next() as u8,
                    1 => bytes.truncate(at.max(1)),
                    _ => {
                        let piece = bytes[at..].to_vec();
                        bytes.extend_from_slice(&piece);
                    }
                }
            }
            let mut wire = Wire::default();
            let mut out = Rows::default();
            let _ = wire.result_set(&mut &bytes[..], protocol, &[], Some(&mut out));
            assert!(out.held() <= bytes.len() * 8 + 64, "round {round}");
        }
    }

    #[test]
    fn requests_carry_types_nulls_and_values() {
        let mut wire = Wire::default();
        wire.request_execute(7, &[Param::Int(-2), Param::Null, Param::Text("ab".into())]);
        let r = &wire.request;
        assert_eq!(usize::from(r[0]), r.len() - 4);
        assert_eq!(&r[4..14], &[0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0]);
        // NULL bitmap, new-types flag, three types.
        assert_eq!(&r[14..22], &[0b010, 1, 8, 0, 6, 0, 253, 0]);
        assert_eq!(&r[22..30], &(-2i64).to_le_bytes());
        assert_eq!(&r[30..], b"\x02ab");
        let mut big = vec![0u8; 4];
        big.resize(4 + MAX_PAYLOAD, 1);
        frame(&mut big);
        assert_eq!(big.len(), 4 + MAX_PAYLOAD + 4);
        assert_eq!(&big[..4], &[0xFF, 0xFF, 0xFF, 0]);
        assert_eq!(&big[big.len() - 4..], &[0, 0, 0, 1]);
    }
}
