//! `sysbench.sql` under a script: a connection (`LuaConn`, Lua userdata)
//! over the OLTP drivers' `Conn`, which runs a query or a prepared
//! statement's text with its values, counts it as sysbench does (a result
//! with columns is a read, a statement that changed rows a write, anything
//! else other), and hands back rows or the error's class, number, state and
//! message, from which the Lua side raises sysbench's errors.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mlua::{Lua, MultiValue, Table, UserData, UserDataMethods, Value as LuaValue};

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
}

impl LuaConn {
    pub fn open(db: Arc<Database>, counters: Arc<Counters>) -> anyhow::Result<LuaConn> {
        let conn = db.target.connect(db.prepared, true)?;
        Ok(LuaConn {
            conn: std::sync::Mutex::new(Some(conn)),
            db,
            counters,
            bulk_transaction: false,
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

fn params_of(t: Table) -> mlua::Result<Vec<Param>> {
    let mut out = Vec::with_capacity(t.raw_len());
    for v in t.sequence_values::<LuaValue>() {
        out.push(match v? {
            LuaValue::Integer(n) => Param::Int(n),
            LuaValue::Number(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Param::Int(x as i64),
            LuaValue::Number(x) => Param::Text(x.to_string()),
            LuaValue::Boolean(b) => Param::Int(i64::from(b)),
            LuaValue::String(s) => Param::Text(s.to_str()?.to_string()),
            other => {
                return Err(mlua::Error::runtime(format!(
                    "a statement parameter cannot be a {}",
                    other.type_name()
                )))
            }
        });
    }
    Ok(out)
}

fn rows_table(lua: &Lua, rows: Rows) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(rows.rows.len(), 0)?;
    for (i, row) in rows.rows.into_iter().enumerate() {
        let r = lua.create_table_with_capacity(row.len(), 0)?;
        for (j, v) in row.into_iter().enumerate() {
            if let Some(v) = v {
                r.raw_set(j + 1, v)?;
            }
        }
        t.raw_set(i + 1, r)?;
    }
    Ok(t)
}

/// The error's parts as the Lua side raises them: class, errno, state,
/// message.
fn error_values(lua: &Lua, e: DbError) -> mlua::Result<MultiValue> {
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
    let mut out = MultiValue::new();
    out.push_back(LuaValue::Boolean(false));
    out.push_back(LuaValue::String(lua.create_string(class)?));
    out.push_back(LuaValue::Integer(errno));
    out.push_back(LuaValue::String(lua.create_string(&state)?));
    out.push_back(LuaValue::String(lua.create_string(&e.message)?));
    Ok(out)
}

impl UserData for LuaConn {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // query(sql, values or nil) -> true, nfields, nrows, rows
        //                           | false, class, errno, state, message
        methods.add_method_mut(
            "query",
            |lua, this, (sql, values): (mlua::LuaString, Option<Table>)| {
                let params = values.map(params_of).transpose()?;
                let sql = sql.to_str()?;
                let sqlite = this.db.target.sqlite_path().is_some();
                let text = if sqlite {
                    for_sqlite(&sql)
                } else {
                    std::borrow::Cow::Borrowed(&*sql)
                };
                let counters = Arc::clone(&this.counters);
                match this.conn()?.query(&text, params.as_deref()) {
                    Ok(rows) => {
                        let kind = if rows.fields > 0 {
                            1
                        } else if rows.affected > 0 {
                            2
                        } else {
                            0
                        };
                        counters.inc(kind);
                        let mut out = MultiValue::new();
                        out.push_back(LuaValue::Boolean(true));
                        out.push_back(LuaValue::Integer(rows.fields as i64));
                        let n = if rows.fields > 0 {
                            rows.rows.len() as u64
                        } else {
                            rows.affected
                        };
                        out.push_back(LuaValue::Integer(n as i64));
                        out.push_back(LuaValue::Table(rows_table(lua, rows)?));
                        Ok(out)
                    }
                    Err(e) => error_values(lua, e),
                }
            },
        );
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
