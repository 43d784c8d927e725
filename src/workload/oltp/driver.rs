//! What the OLTP tests need from a database driver: a connection (`Conn`)
//! and the few ways its SQL and loading differ (`Dialect`), the error
//! classes that decide what a failed statement does to the run, and the
//! statement text helpers the drivers share. It names no concrete driver:
//! they import it, and `connect` picks one.

use std::fmt;

use anyhow::Result;

/// A map keyed by statement text, which a driver looks up on every
/// execute: hashed a word at a time with one multiply each (the FxHash
/// scheme) instead of std's SipHash, which showed in the profile of Lua
/// point selects. The keys are the benchmark's own statements, not a
/// stranger's input, so SipHash's resistance to chosen collisions buys
/// nothing here.
pub type TextMap<V> =
    std::collections::HashMap<String, V, std::hash::BuildHasherDefault<TextHasher>>;

/// The hasher of [`TextMap`].
#[derive(Default)]
pub struct TextHasher(u64);

impl std::hash::Hasher for TextHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut add = |word: u64| self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let mut tail = [0u8; 8];
        tail[..words.remainder().len()].copy_from_slice(words.remainder());
        add(u64::from_le_bytes(tail));
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A statement parameter: the OLTP tests bind only integers and strings.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Int(i64),
    Text(String),
    /// SQL NULL (sysbench 0.5's prepared statements bind a nil as one).
    Null,
}

/// What a failed statement means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Deadlock, lock wait timeout, serialization failure, busy: roll back
    /// and restart the transaction, counting an ignored error.
    Retry,
    /// The connection is gone: reconnect and restart, counting a reconnect.
    Lost,
    /// Anything else stops the run.
    Fatal,
}

#[derive(Debug, Clone)]
pub struct DbError {
    pub class: ErrorClass,
    /// The server's code (MySQL errno, PostgreSQL SQLSTATE, SQLite code).
    pub code: String,
    pub message: String,
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for DbError {}

/// The most memory one answer kept for a script may hold: its values'
/// bytes, 4 bytes a value and 4 a row. A server is untrusted, and the wire
/// is no bound on memory (a NULL costs one bit in MySQL's binary rows):
/// past this the answer is refused ([`TooBig`]) instead of growing. sysbench's
/// scripts keep kilobytes (a range select: 100 rows); this is a whole
/// 1,000,000-row sbtest table and more.
pub const MAX_KEPT: usize = 256 << 20;

/// The most bytes one answer may take on the wire, whether it is kept or
/// only counted: an answer that never ends is an error, not an endless read.
pub const MAX_ANSWER: usize = 256 << 20;

/// What a statement returned to a script (`sysbench.sql`): its rows with
/// every value as text (`None` for NULL) when it has result columns, else
/// the rows it changed. The values sit in one buffer (a script mostly
/// ignores them: three allocations a result rather than one a value), and
/// the whole is bounded by [`MAX_KEPT`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rows {
    pub fields: usize,
    pub affected: u64,
    /// Every value's bytes, one after another.
    data: Vec<u8>,
    /// Each value's end in `data` (it starts where the one before ends),
    /// with [`NULL`] set for a NULL.
    ends: Vec<u32>,
    /// Where each row's values start in `ends`.
    starts: Vec<u32>,
}

/// The bit of an entry of `Rows::ends` that marks a NULL (`MAX_KEPT` is
/// below it, so no end reaches it).
const NULL: u32 = 1 << 31;

/// An answer that would hold more than [`MAX_KEPT`]: refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooBig;

impl TooBig {
    /// As the run reports it: the statement fails and the run stops.
    pub fn error(self) -> DbError {
        DbError {
            class: ErrorClass::Fatal,
            code: "too_big".into(),
            message: format!(
                "the answer holds more than {} MiB (its values and 4 bytes each, 4 a row); a script's query must ask for fewer rows or columns (LIMIT)",
                MAX_KEPT >> 20
            ),
        }
    }
}

impl fmt::Display for TooBig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.error().message)
    }
}

impl std::error::Error for TooBig {}

impl Rows {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The memory the answer holds, as [`MAX_KEPT`] counts it.
    pub fn held(&self) -> usize {
        self.data.len() + 4 * (self.ends.len() + self.starts.len())
    }

    /// Appends a value to a row begun with `begin_row`; refused when the
    /// answer would hold more than [`MAX_KEPT`].
    #[inline]
    pub fn push_value(&mut self, v: Option<&[u8]>) -> Result<(), TooBig> {
        let len = v.map_or(0, <[u8]>::len);
        if self.held() + len + 4 > MAX_KEPT {
            return Err(TooBig);
        }
        // Below MAX_KEPT, so below NULL: the casts keep every bit.
        self.ends.push(match v {
            Some(v) => {
                self.data.extend_from_slice(v);
                self.data.len() as u32
            }
            None => self.data.len() as u32 | NULL,
        });
        Ok(())
    }

    /// The answer handed back in `spare` (see `Conn::recycle`), emptied,
    /// its buffers kept for the next answer.
    pub fn reuse(spare: &mut Rows) -> Rows {
        let mut rows = std::mem::take(spare);
        rows.clear();
        rows
    }

    /// Empties it, keeping its buffers for the next answer.
    fn clear(&mut self) {
        self.fields = 0;
        self.affected = 0;
        self.data.clear();
        self.ends.clear();
        self.starts.clear();
    }

    /// Begins a row whose values follow with `push_value`, then `end_row`;
    /// refused when the answer would hold more than [`MAX_KEPT`].
    #[inline]
    pub fn begin_row(&mut self) -> Result<(), TooBig> {
        if self.held() + 4 > MAX_KEPT {
            return Err(TooBig);
        }
        self.starts.push(self.ends.len() as u32);
        Ok(())
    }

    pub fn end_row(&mut self) {
        if let Some(&start) = self.starts.last() {
            self.fields = self.fields.max(self.ends.len() - start as usize);
        }
    }

    /// Row `i` (from 0): its values, `None` for NULL.
    pub fn row(&self, i: usize) -> Option<impl Iterator<Item = Option<&[u8]>>> {
        let start = *self.starts.get(i)? as usize;
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.ends.len(), |&e| e as usize);
        let mut from = match start {
            0 => 0,
            s => (self.ends[s - 1] & !NULL) as usize,
        };
        Some(self.ends[start..end].iter().map(move |&e| {
            let to = (e & !NULL) as usize;
            let value = (e & NULL == 0).then(|| &self.data[from..to]);
            from = to;
            value
        }))
    }
}

/// One connection, used by one thread.
pub trait Conn: Send {
    /// Runs `sql` (with `?` placeholders) and reads every row it returns.
    /// Returns the rows read, or for writes the rows affected.
    fn exec(&mut self, sql: &str, params: &[Param]) -> Result<u64, DbError>;
    /// Runs one statement without parameters or statement caching (DDL,
    /// bulk inserts, BEGIN/COMMIT).
    fn batch(&mut self, sql: &str) -> Result<(), DbError>;
    /// Starts a transaction; `write`: it will write (SQLite then takes the
    /// write lock up front, so that it never has to upgrade and deadlock).
    fn begin(&mut self, _write: bool) -> Result<(), DbError> {
        self.batch("BEGIN")
    }
    fn commit(&mut self) -> Result<(), DbError> {
        self.batch("COMMIT")
    }
    fn rollback(&mut self) {
        let _ = self.batch("ROLLBACK");
    }
    fn table_exists(&mut self, name: &str) -> Result<bool, DbError>;
    /// Runs `sql` and returns what it gave, for scripts: with `params`, a
    /// prepared statement (`?` placeholders; server-side where
    /// `--db-ps-mode=auto`), without, a plain query. Drivers that cannot
    /// yet say so refuse.
    fn query(&mut self, _sql: &str, _params: Option<&[Param]>) -> Result<Rows, DbError> {
        Err(DbError {
            class: ErrorClass::Fatal,
            code: "unsupported".into(),
            message:
                "this database driver does not run Lua scripts' queries yet; use --db-driver=sqlite"
                    .into(),
        })
    }
    /// Prepares `sql` for a script's `con:prepare` where the driver does
    /// so at once (otherwise at first use); the error as sysbench's driver
    /// logs it (a FATAL line's text).
    fn prepare(&mut self, _sql: &str) -> Result<(), String> {
        Ok(())
    }
    /// Hands back an answer `query` gave, done with: a driver may keep its
    /// buffers for the next one instead of growing new ones every query.
    fn recycle(&mut self, _rows: Rows) {}
    /// Whether a transaction is open (after a failed statement a script's
    /// restart needs it rolled back).
    fn in_transaction(&mut self) -> bool {
        true
    }
    /// Lock waits since the last call (SQLite's busy handler), read on the
    /// connection's own thread.
    fn take_busy_waits(&mut self) -> u64 {
        0
    }
}

/// What differs between the databases for the OLTP tests: a few words of
/// CREATE TABLE and of oltp_insert's INSERT, and how the load and the
/// report treat a database that takes one writer at a time. Each driver
/// implements it; `Target::dialect` gives the one in use. The defaults are
/// standard SQL on a server that takes many writers.
pub trait Dialect: Sync {
    /// The `--db-driver` name, as the result's details give it.
    fn name(&self) -> &'static str;

    /// The type of the `id` column: with `auto_inc` (`--auto-inc`) the
    /// database's own id generator where it has one; `secondary`
    /// (`--secondary`): id is not the primary key.
    fn id_column(&self, auto_inc: bool, secondary: bool) -> &'static str;

    /// `--secondary`'s plain key on id as CREATE TABLE declares it; None:
    /// it is an index built after the load.
    fn secondary_key(&self) -> Option<&'static str> {
        None
    }

    /// What follows CREATE TABLE's column list.
    fn table_options(&self, _storage_engine: &str) -> String {
        String::new()
    }

    /// oltp_insert's INSERT into `sbtest{table}` with the id left to the
    /// table's generator.
    fn insert_generated_id(&self, table: usize, k: i64, c: &str, pad: &str) -> String {
        format!("INSERT INTO sbtest{table} (k, c, pad) VALUES ({k}, '{c}', '{pad}')")
    }

    /// Whether the bulk load sends the ids 1..n itself even where the table
    /// would generate them.
    fn load_sends_ids(&self) -> bool {
        false
    }

    /// Whether a table's bulk load goes in one transaction rather than a
    /// commit per statement.
    fn load_in_one_transaction(&self) -> bool {
        false
    }

    /// One writer at a time on the whole database: tables load in turn,
    /// not one per thread, and the run reports the waits for the lock.
    fn one_writer(&self) -> bool {
        false
    }
}

/// `sql` with its `?` placeholders replaced by literals, for
/// `--db-ps-mode=disable` (the OLTP strings are digits and dashes; quotes
/// are doubled all the same).
pub fn inline(sql: &str, params: &[Param]) -> String {
    let mut out = String::with_capacity(sql.len() + 64 * params.len());
    let mut next = params.iter();
    for ch in sql.chars() {
        if ch == '?' {
            match next.next() {
                Some(Param::Int(n)) => out.push_str(&n.to_string()),
                Some(Param::Text(s)) => {
                    out.push('\'');
                    out.push_str(&s.replace('\'', "''"));
                    out.push('\'');
                }
                Some(Param::Null) => out.push_str("NULL"),
                None => out.push('?'),
            }
        } else {
            out.push(ch);
        }
    }
    out
}

/// `sql` with `?` placeholders numbered `$1, $2, ...` for PostgreSQL.
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_texts_hash_apart_and_are_found() {
        use std::hash::BuildHasher;
        // sysbench's statements differ only in a table number or a word;
        // lengths 0 to 24 cover the tail of every word size.
        let mut texts: Vec<String> = (1..=64)
            .flat_map(|t| {
                [
                    format!("SELECT c FROM sbtest{t} WHERE id=?"),
                    format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
                    format!("UPDATE sbtest{t} SET k=k+1 WHERE id=?"),
                    format!("DELETE FROM sbtest{t} WHERE id=?"),
                ]
            })
            .collect();
        texts.extend((0..=24).map(|n| "x".repeat(n)));
        let build = std::hash::BuildHasherDefault::<TextHasher>::default();
        let mut hashes: Vec<u64> = texts.iter().map(|t| build.hash_one(t)).collect();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), texts.len(), "two texts hashed alike");
        let map: TextMap<usize> = texts.iter().cloned().zip(0..).collect();
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(map[t.as_str()], i);
        }
    }

    #[test]
    fn rows_keep_values_nulls_and_ragged_widths() {
        let mut rows = Rows::default();
        assert!(rows.is_empty() && rows.row(0).is_none());
        rows.begin_row().unwrap();
        rows.push_value(Some(b"12")).unwrap();
        rows.push_value(None).unwrap();
        rows.push_value(Some(b"")).unwrap();
        rows.end_row();
        rows.begin_row().unwrap();
        rows.push_value(Some(b"x")).unwrap();
        rows.end_row();
        rows.begin_row().unwrap();
        rows.end_row();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows.fields, 3);
        let first: Vec<_> = rows.row(0).unwrap().collect();
        assert_eq!(first, [Some(&b"12"[..]), None, Some(&b""[..])]);
        assert_eq!(rows.row(1).unwrap().collect::<Vec<_>>(), [Some(&b"x"[..])]);
        assert_eq!(rows.row(2).unwrap().count(), 0);
        assert!(rows.row(3).is_none());
    }

    #[test]
    fn an_answer_is_refused_at_its_bound_in_values_and_rows() {
        // Issue 53, item 3: 24 bytes a NULL cell, no bound on their number.
        // NULLs cost 4 bytes each now, and the answer stops at MAX_KEPT.
        let mut rows = Rows::default();
        rows.begin_row().unwrap();
        let mut cells = 0usize;
        while rows.push_value(None).is_ok() {
            cells += 1;
        }
        assert_eq!(cells, (MAX_KEPT - 4) / 4, "NULLs held before the refusal");
        assert!(rows.held() <= MAX_KEPT);
        assert_eq!(rows.begin_row(), Err(TooBig));
        // Values' bytes count too: a 1 MiB value fits, 256 of them do not.
        let mut rows = Rows::default();
        let value = vec![b'x'; 1 << 20];
        let mut taken = 0;
        while rows.begin_row().is_ok() && rows.push_value(Some(&value)).is_ok() {
            rows.end_row();
            taken += 1;
        }
        assert_eq!(taken, (MAX_KEPT >> 20) - 1);
        assert!(rows.held() <= MAX_KEPT);
        // Emptied for reuse, it takes values again, and reads them back.
        let mut spare = rows;
        let mut rows = Rows::reuse(&mut spare);
        rows.begin_row().unwrap();
        rows.push_value(None).unwrap();
        rows.push_value(Some(b"ab")).unwrap();
        rows.end_row();
        let row: Vec<_> = rows.row(0).unwrap().collect();
        assert_eq!(row, [None, Some(&b"ab"[..])]);
        assert!(TooBig.error().message.contains("256 MiB"));
    }

    #[test]
    fn placeholders_become_literals_or_numbers() {
        let sql = "UPDATE t SET c=? WHERE id=?";
        assert_eq!(
            inline(sql, &[Param::Text("a'b".into()), Param::Int(-7)]),
            "UPDATE t SET c='a''b' WHERE id=-7"
        );
        assert_eq!(numbered(sql), "UPDATE t SET c=$1 WHERE id=$2");
    }
}
