//! The methods of a script's connection (`sysbench.sql`'s connection
//! object as the prelude wraps it): running statements, reading their
//! results and errors, and the connection's own life (transactions, the
//! bulk load, closing and reconnecting).

use std::ffi::c_void;
use std::sync::Arc;

use mlua::{LightUserData, UserData, UserDataMethods, Value as LuaValue};

use super::{answer, error_values, execute, param_of, run, LuaConn};
use crate::workload::oltp::driver::{DbError, ErrorClass};

impl UserData for LuaConn {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        statements(methods);
        results(methods);
        connection(methods);
    }
}

/// query, prepare and execute.
fn statements<M: UserDataMethods<LuaConn>>(methods: &mut M) {
    // statement n (from prepare(sql)) with its values. Both answer
    //   true, nfields, nrows, the result's number (for row)
    // | false, class, errno, state, message
    // (execute_ffi is the usual way to execute; this one takes what it
    // leaves: values it does not take, and the errors before a
    // statement runs, with their messages.)
    methods.add_method("query", |lua, this, sql: mlua::LuaString| {
        let outcome = this.with(|s| run(s, &sql.to_str()?, None))?;
        answer(lua, outcome)
    });
    // The statement's number, or nothing and the driver's words for
    // why it could not be prepared.
    methods.add_method("prepare", |_, this, sql: mlua::LuaString| {
        this.with(|s| {
            let sql = sql.to_str()?.to_string();
            if let Some(conn) = s.conn.as_mut() {
                if let Err(why) = conn.prepare(&sql) {
                    return Ok((None, Some(why)));
                }
            }
            s.statements.push(sql);
            Ok((Some(s.statements.len()), None))
        })
    });
    methods.add_method(
        "execute",
        |lua, this, (n, values): (usize, mlua::Variadic<LuaValue>)| {
            let outcome = this.with(|s| {
                s.params.clear();
                for v in values {
                    s.params.push(param_of(v)?);
                }
                let i = n
                    .checked_sub(1)
                    .filter(|&i| i < s.statements.len())
                    .ok_or_else(|| mlua::Error::runtime("no such prepared statement"))?;
                execute(s, i)
            })?;
            answer(lua, outcome)
        },
    );
}

/// The FFI path's handle, the last error, a result's rows.
fn results<M: UserDataMethods<LuaConn>>(methods: &mut M) {
    // The FFI path's handle on this connection: the slot's address (as
    // light userdata) and the connection's id.
    methods.add_method("ffi_handle", |_, this, ()| {
        let slot = Arc::as_ptr(&this.slot).cast_mut().cast::<c_void>();
        Ok((LightUserData(slot), this.id))
    });
    // The error of the statement execute_ffi failed: class, errno,
    // state, message.
    methods.add_method("last_error", |lua, this, ()| {
        let e = this
            .with(|s| Ok(s.error.take()))?
            .unwrap_or_else(|| DbError {
                class: ErrorClass::Fatal,
                code: String::new(),
                message: "the statement's error was lost (see standard error)".into(),
            });
        error_values(lua, &e)
    });
    // row(result, i) -> row i (from 1) of the result numbered `result`
    // as a table, NULLs as nil; nil past the last row or when a later
    // query has replaced that result.
    methods.add_method("row", |lua, this, (generation, i): (i64, usize)| {
        this.with(|s| {
            let row = match i.checked_sub(1) {
                Some(i) if generation == s.generation => s.last.row(i),
                _ => None,
            };
            let Some(row) = row else {
                return Ok(LuaValue::Nil);
            };
            let r = lua.create_table_with_capacity(s.last.fields, 0)?;
            for (j, v) in row.enumerate() {
                if let Some(v) = v {
                    r.raw_set(j + 1, lua.create_string(v)?)?;
                }
            }
            Ok(LuaValue::Table(r))
        })
    });
}

/// Rolling back, the bulk load's transaction, closing and reconnecting.
fn connection<M: UserDataMethods<LuaConn>>(methods: &mut M) {
    methods.add_method("rollback", |_, this, ()| {
        this.with(|s| {
            let conn = s.conn()?;
            if conn.in_transaction() {
                conn.rollback();
            }
            Ok(())
        })
    });
    methods.add_method("bulk_begin", |_, this, ()| {
        this.with(|s| {
            let one = s.db.target.dialect().load_in_one_transaction();
            let conn = s.conn()?;
            if one && !conn.in_transaction() {
                conn.begin(true).map_err(|e| {
                    mlua::Error::runtime(format!("db_bulk_insert_init() failed: {e}"))
                })?;
                s.bulk_transaction = true;
            }
            Ok(())
        })
    });
    methods.add_method("bulk_end", |_, this, ()| {
        this.with(|s| {
            if std::mem::take(&mut s.bulk_transaction) {
                s.conn()?.commit().map_err(|e| {
                    mlua::Error::runtime(format!("db_bulk_insert_done() failed: {e}"))
                })?;
            }
            Ok(())
        })
    });
    methods.add_method("close", |_, this, ()| {
        this.with(|s| {
            s.conn = None;
            Ok(())
        })
    });
    methods.add_method("reconnect", |_, this, ()| {
        this.with(|s| {
            s.conn = None;
            let conn =
                s.db.target
                    .connect(s.db.prepared, true)
                    .map_err(|e| mlua::Error::runtime(format!("reconnect failed: {e:#}")))?;
            s.conn = Some(conn);
            Ok(())
        })
    });
}
