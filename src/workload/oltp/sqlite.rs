//! The embedded SQLite driver: one file in the work directory, WAL with
//! `synchronous=FULL` (a commit is on disk when it returns, as with InnoDB's
//! default), one connection per thread, and a busy handler that waits for
//! the write lock and counts every wait.

use std::cell::Cell;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags, ToSql};

use super::driver::{inline, Conn, DbError, Dialect, ErrorClass, Param, Rows, TooBig};

thread_local! {
    static BUSY_WAITS: Cell<u64> = const { Cell::new(0) };
}

/// Busy-handler calls before SQLite gives up with SQLITE_BUSY (about 10 s
/// of waiting); the transaction is then restarted and counted.
const BUSY_LIMIT: i32 = 10_000;

/// Waits a little longer on each call for the same lock, and counts it.
fn busy(calls: i32) -> bool {
    BUSY_WAITS.with(|w| w.set(w.get() + 1));
    let micros = (50 * (calls as u64 + 1)).min(1000);
    std::thread::sleep(Duration::from_micros(micros));
    calls < BUSY_LIMIT
}

pub struct Sqlite {
    conn: Connection,
    prepared: bool,
}

impl Sqlite {
    pub fn open(path: &Path, prepared: bool, create: bool) -> Result<Sqlite> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(path, flags)
            .with_context(|| format!("opening the SQLite database {}", path.display()))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .context("switching SQLite to WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_handler(Some(busy))?;
        conn.set_prepared_statement_cache_capacity(1024);
        Ok(Sqlite { conn, prepared })
    }
}

impl ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Int(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
            Param::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Param::Null => ToSqlOutput::Borrowed(ValueRef::Null),
        })
    }
}

fn classify(e: rusqlite::Error) -> DbError {
    match &e {
        rusqlite::Error::SqliteFailure(f, msg) => DbError {
            class: match f.code {
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => ErrorClass::Retry,
                _ => ErrorClass::Fatal,
            },
            code: format!("SQLITE {}", f.extended_code),
            message: msg.clone().unwrap_or_else(|| f.to_string()),
        },
        _ => DbError {
            class: ErrorClass::Fatal,
            code: "SQLITE".into(),
            message: e.to_string(),
        },
    }
}

fn run(stmt: &mut rusqlite::Statement<'_>, params: &[Param]) -> rusqlite::Result<u64> {
    if stmt.column_count() == 0 {
        return stmt
            .execute(rusqlite::params_from_iter(params))
            .map(|n| n as u64);
    }
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let mut n = 0;
    while let Some(row) = rows.next()? {
        // Touch the value, as a client reading its result would.
        std::hint::black_box(row.get_ref(0)?);
        n += 1;
    }
    Ok(n)
}

/// Every row, each value as text, or the rows a write changed.
fn fetch(
    conn: &Connection,
    stmt: &mut rusqlite::Statement<'_>,
    params: &[Param],
) -> Result<Rows, DbError> {
    let fields = stmt.column_count();
    if fields == 0 {
        // sqlite3_changes keeps the last DML's count across BEGIN, COMMIT
        // and DDL: the total's growth is this statement's own.
        let before = conn.total_changes();
        stmt.execute(rusqlite::params_from_iter(params))
            .map_err(classify)?;
        let mut out = Rows::default();
        out.affected = conn.total_changes() - before;
        return Ok(out);
    }
    let mut rows = stmt
        .query(rusqlite::params_from_iter(params))
        .map_err(classify)?;
    let mut out = Rows::default();
    out.fields = fields;
    let mut number = String::new();
    while let Some(row) = rows.next().map_err(classify)? {
        out.begin_row().map_err(TooBig::error)?;
        for i in 0..fields {
            use std::fmt::Write as _;
            number.clear();
            let value = match row.get_ref(i).map_err(classify)? {
                ValueRef::Null => None,
                ValueRef::Integer(n) => {
                    let _ = write!(number, "{n}");
                    Some(number.as_bytes())
                }
                ValueRef::Real(x) => {
                    let _ = write!(number, "{x}");
                    Some(number.as_bytes())
                }
                ValueRef::Text(t) | ValueRef::Blob(t) => Some(t),
            };
            out.push_value(value).map_err(TooBig::error)?;
        }
        out.end_row();
    }
    Ok(out)
}

impl Conn for Sqlite {
    fn query(&mut self, sql: &str, params: Option<&[Param]>) -> Result<Rows, DbError> {
        // Only a prepared statement's text is kept prepared: a script's
        // one-off queries (each bulk insert's) would crowd the cache.
        let prepared = params.is_some() && self.prepared;
        let params = params.unwrap_or(&[]);
        if prepared {
            let mut stmt = self.conn.prepare_cached(sql).map_err(classify)?;
            fetch(&self.conn, &mut stmt, params)
        } else {
            let mut stmt = self.conn.prepare(&inline(sql, params)).map_err(classify)?;
            fetch(&self.conn, &mut stmt, &[])
        }
    }

    fn in_transaction(&mut self) -> bool {
        !self.conn.is_autocommit()
    }

    fn exec(&mut self, sql: &str, params: &[Param]) -> Result<u64, DbError> {
        if self.prepared {
            let mut stmt = self.conn.prepare_cached(sql).map_err(classify)?;
            run(&mut stmt, params).map_err(classify)
        } else {
            let mut stmt = self.conn.prepare(&inline(sql, params)).map_err(classify)?;
            run(&mut stmt, &[]).map_err(classify)
        }
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.execute_batch(sql).map_err(classify)
    }

    fn begin(&mut self, write: bool) -> Result<(), DbError> {
        self.batch(if write { "BEGIN IMMEDIATE" } else { "BEGIN" })
    }

    fn table_exists(&mut self, name: &str) -> Result<bool, DbError> {
        self.conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [name],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(classify)
    }

    fn take_busy_waits(&mut self) -> u64 {
        BUSY_WAITS.with(|w| w.replace(0))
    }
}

/// SQLite's words: the rowid alias for id, and one writer at a time.
pub struct SqliteDialect;

impl Dialect for SqliteDialect {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn id_column(&self, _auto_inc: bool, secondary: bool) -> &'static str {
        if secondary {
            "INTEGER NOT NULL"
        } else {
            // The rowid alias: SQLite's AUTO_INCREMENT.
            "INTEGER"
        }
    }

    /// The rowid would give the same 1..n.
    fn load_sends_ids(&self) -> bool {
        true
    }

    /// A commit per statement would be an fsync per statement.
    fn load_in_one_transaction(&self) -> bool {
        true
    }

    fn one_writer(&self) -> bool {
        true
    }
}

/// Tables left in the database file (any, not only sysbench's).
pub fn table_count(path: &Path) -> Result<i64> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    Ok(conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
        [],
        |r| r.get(0),
    )?)
}
