//! `sysbench.sql` under a script: a connection (`LuaConn`, Lua userdata)
//! over the OLTP drivers' `Conn`, which runs a query or a prepared
//! statement's text with its values, counts it as sysbench does (a result
//! with columns is a read, a statement that changed rows a write, anything
//! else other), and hands back rows or the error's class, number, state and
//! message, from which the Lua side raises sysbench's errors.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mlua::{Lua, UserData, UserDataMethods, Value as LuaValue};

use crate::workload::oltp::driver::{Conn, DbError, ErrorClass, Param, Rows};
use crate::workload::oltp::Target;

/// sysbench's counters of one thread (`sb_counter_inc`'s kinds).
#[derive(Debug, Default)]
pub struct Counters {
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub other: AtomicU64,
    pub errors: AtomicU64,
    pub reconnects: AtomicU64,
}

impl Counters {
    /// `SB_CNT_OTHER, READ, WRITE, TRX, ERROR, RECONNECT` as numbered in
    /// sysbench's `sb_counter_type`; transactions are the engine's events.
    pub fn inc(&self, kind: u32) {
        let c = match kind {
            0 => &self.other,
            1 => &self.reads,
            2 => &self.writes,
            4 => &self.errors,
            5 => &self.reconnects,
            _ => return,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self) -> [u64; 5] {
        [
            self.reads.load(Ordering::Relaxed),
            self.writes.load(Ordering::Relaxed),
            self.other.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
            self.reconnects.load(Ordering::Relaxed),
        ]
    }
}

/// Where a script's connections go.
#[derive(Debug, Clone)]
pub struct Database {
    pub target: Target,
    /// `--db-ps-mode=auto`.
    pub prepared: bool,
}

impl Database {
    /// The name `drv:name()` gives. SQLite answers "pgsql": sysbench's
    /// oltp_common.lua knows only mysql and pgsql, and PostgreSQL's words
    /// are the ones SQLite takes (`SERIAL` becomes SQLite's rowid, below).
    pub fn script_name(&self) -> &'static str {
        match self.target.dialect().name() {
            "sqlite" => "pgsql",
            other => other,
        }
    }
}

/// One connection of a script.
pub struct LuaConn {
    /// In a mutex only so that the userdata is Sync, as mlua's `send`
    /// asks; one thread uses it (`get_mut`, no locking).
    conn: std::sync::Mutex<Option<Box<dyn Conn>>>,
    db: Arc<Database>,
    counters: Arc<Counters>,
    /// The bulk load opened a transaction of its own (SQLite: one commit
    /// per table rather than per statement).
    bulk_transaction: bool,
    /// The last result's rows. As in sysbench (`con->rs`), a connection has
    /// one result: the next query replaces it, and a row becomes a Lua table
    /// only when the script fetches it (sysbench's scripts mostly ignore
    /// what a SELECT returns; oltp_common's range selects return 100 rows).
    last: Rows,
    /// The values of the statement being executed, kept for the next one.
    params: Vec<Param>,
    /// Which result `last` is, so that a stale result fetches nothing.
    generation: i64,
    /// Prepared statements' text by the number `prepare` gave them.
    statements: Vec<String>,
}

impl LuaConn {
    pub fn open(db: Arc<Database>, counters: Arc<Counters>) -> anyhow::Result<LuaConn> {
        let conn = db.target.connect(db.prepared, true)?;
        Ok(LuaConn {
            conn: std::sync::Mutex::new(Some(conn)),
            db,
            counters,
            bulk_transaction: false,
            last: Rows::default(),
            generation: 0,
            statements: Vec::new(),
            params: Vec::new(),
        })
    }

    fn conn(&mut self) -> mlua::Result<&mut Box<dyn Conn>> {
        self.conn
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .ok_or_else(|| mlua::Error::runtime("the connection was closed (disconnect)"))
    }
}

/// SQLite takes PostgreSQL's CREATE TABLE but for `SERIAL`, which is its
/// `INTEGER` (the rowid, generated when not given).
fn for_sqlite(sql: &str) -> std::borrow::Cow<'_, str> {
    let head = sql.trim_start();
    if head.len() >= 12 && head[..12].eq_ignore_ascii_case("CREATE TABLE") && sql.contains("SERIAL")
    {
        std::borrow::Cow::Owned(sql.replace(" SERIAL", " INTEGER"))
    } else {
        std::borrow::Cow::Borrowed(sql)
    }
}

/// One value of a statement's parameters as the drivers take it.
fn param_of(v: LuaValue) -> mlua::Result<Param> {
    Ok(match v {
        LuaValue::Integer(n) => Param::Int(n),
        LuaValue::Number(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Param::Int(x as i64),
        LuaValue::Number(x) => Param::Text(x.to_string()),
        LuaValue::Boolean(b) => Param::Int(i64::from(b)),
        LuaValue::String(s) => Param::Text(s.to_str()?.to_string()),
        LuaValue::Nil => Param::Null,
        other => {
            return Err(mlua::Error::runtime(format!(
                "a statement parameter cannot be a {}",
                other.type_name()
            )))
        }
    })
}

/// A query's answer, as a tuple so that it goes onto the Lua stack without
/// an allocation: true, nfields, nrows, the result's number, nil; or
/// false, class, errno, state, message.
type Answer = (LuaValue, LuaValue, LuaValue, LuaValue, LuaValue);

/// The error's parts as the Lua side raises them: class, errno, state,
/// message.
fn error_values(lua: &Lua, e: DbError) -> mlua::Result<Answer> {
    let class = match e.class {
        ErrorClass::Retry => "ignorable",
        ErrorClass::Lost | ErrorClass::Fatal => "fatal",
    };
    let digits: String = e.code.chars().filter(|c| c.is_ascii_digit()).collect();
    let errno: i64 = digits.parse().unwrap_or(0);
    let state = if e.code.len() == 5 && e.code.chars().all(|c| c.is_ascii_alphanumeric()) {
        e.code.clone()
    } else {
        String::new()
    };
    Ok((
        LuaValue::Boolean(false),
        LuaValue::String(lua.create_string(class)?),
        LuaValue::Integer(errno),
        LuaValue::String(lua.create_string(&state)?),
        LuaValue::String(lua.create_string(&e.message)?),
    ))
}

/// Runs a query (params None) or a prepared statement and counts it as
/// sysbench does; the answer as `query` and `execute` describe it.
fn run(lua: &Lua, this: &mut LuaConn, sql: &str, params: Option<&[Param]>) -> mlua::Result<Answer> {
    let text = if this.db.target.sqlite_path().is_some() {
        for_sqlite(sql)
    } else {
        std::borrow::Cow::Borrowed(sql)
    };
    let rows = match this.conn()?.query(&text, params) {
        Ok(rows) => rows,
        Err(e) => return error_values(lua, e),
    };
    let (kind, n) = if rows.fields > 0 {
        (1, rows.len() as u64)
    } else if rows.affected > 0 {
        (2, rows.affected)
    } else {
        (0, 0)
    };
    this.counters.inc(kind);
    this.generation += 1;
    let fields = rows.fields as i64;
    let done = std::mem::replace(&mut this.last, rows);
    this.conn()?.recycle(done);
    Ok((
        LuaValue::Boolean(true),
        LuaValue::Integer(fields),
        LuaValue::Integer(n as i64),
        LuaValue::Integer(this.generation),
        LuaValue::Nil,
    ))
}

impl UserData for LuaConn {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // query(sql) runs a query's text; execute(n, v1, v2, ...) prepared
        // statement n (from prepare(sql)) with its values. Both answer
        //   true, nfields, nrows, the result's number (for row)
        // | false, class, errno, state, message
        methods.add_method_mut("query", |lua, this, sql: mlua::LuaString| {
            run(lua, this, &sql.to_str()?, None)
        });
        methods.add_method_mut("prepare", |_, this, sql: mlua::LuaString| {
            this.statements.push(sql.to_str()?.to_string());
            Ok(this.statements.len())
        });
        methods.add_method_mut(
            "execute",
            |lua, this, (n, values): (usize, mlua::Variadic<LuaValue>)| {
                let mut params = std::mem::take(&mut this.params);
                params.clear();
                for v in values {
                    params.push(param_of(v)?);
                }
                let i = n
                    .checked_sub(1)
                    .filter(|&i| i < this.statements.len())
                    .ok_or_else(|| mlua::Error::runtime("no such prepared statement"))?;
                // Taken out for the call, which borrows the connection.
                let sql = std::mem::take(&mut this.statements[i]);
                let out = run(lua, this, &sql, Some(&params));
                this.statements[i] = sql;
                this.params = params;
                out
            },
        );
        // row(result, i) -> row i (from 1) of the result numbered `result`
        // as a table, NULLs as nil; nil past the last row or when a later
        // query has replaced that result.
        methods.add_method("row", |lua, this, (generation, i): (i64, usize)| {
            let row = match i.checked_sub(1) {
                Some(i) if generation == this.generation => this.last.row(i),
                _ => None,
            };
            let Some(row) = row else {
                return Ok(LuaValue::Nil);
            };
            let r = lua.create_table_with_capacity(this.last.fields, 0)?;
            for (j, v) in row.enumerate() {
                if let Some(v) = v {
                    r.raw_set(j + 1, lua.create_string(v)?)?;
                }
            }
            Ok(LuaValue::Table(r))
        });
        methods.add_method_mut("rollback", |_, this, ()| {
            let conn = this.conn()?;
            if conn.in_transaction() {
                conn.rollback();
            }
            Ok(())
        });
        methods.add_method_mut("bulk_begin", |_, this, ()| {
            let one = this.db.target.dialect().load_in_one_transaction();
            let conn = this.conn()?;
            if one && !conn.in_transaction() {
                conn.begin(true).map_err(|e| {
                    mlua::Error::runtime(format!("db_bulk_insert_init() failed: {e}"))
                })?;
                this.bulk_transaction = true;
            }
            Ok(())
        });
        methods.add_method_mut("bulk_end", |_, this, ()| {
            if std::mem::take(&mut this.bulk_transaction) {
                this.conn()?.commit().map_err(|e| {
                    mlua::Error::runtime(format!("db_bulk_insert_done() failed: {e}"))
                })?;
            }
            Ok(())
        });
        methods.add_method_mut("close", |_, this, ()| {
            *this.conn.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
            Ok(())
        });
        methods.add_method_mut("reconnect", |_, this, ()| {
            *this.conn.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
            let conn = this
                .db
                .target
                .connect(this.db.prepared, true)
                .map_err(|e| mlua::Error::runtime(format!("reconnect failed: {e:#}")))?;
            *this.conn.get_mut().unwrap_or_else(|p| p.into_inner()) = Some(conn);
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_takes_serial_as_its_rowid() {
        assert_eq!(
            for_sqlite("CREATE TABLE sbtest1(\n  id SERIAL,\n  k INTEGER)"),
            "CREATE TABLE sbtest1(\n  id INTEGER,\n  k INTEGER)"
        );
        assert_eq!(for_sqlite("SELECT 'SERIAL'"), "SELECT 'SERIAL'");
    }

    #[test]
    fn counters_follow_sysbench_kinds() {
        let c = Counters::default();
        for k in [0, 1, 1, 2, 3, 4, 5, 9] {
            c.inc(k);
        }
        assert_eq!(c.get(), [2, 1, 1, 1, 1]);
    }
}
