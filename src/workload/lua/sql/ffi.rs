//! Prepared statements' hot path: `execute_ffi`, which a script's compiled
//! Lua calls through LuaJIT's FFI like a C function, with the values in a C
//! array and the answer in a C struct, reaching the connection's state
//! through its slot.

use std::ffi::c_void;

use mlua::LightUserData;

use super::{execute, number_param, statement_index, try_take, Slot};
use crate::workload::oltp::driver::{DbError, ErrorClass, Param};
/// `execute_ffi`'s address, for the prelude to call it through LuaJIT's
/// FFI (the binary is static: `ffi.C` finds none of its symbols).
pub fn execute_ffi_address() -> LightUserData {
    LightUserData(execute_ffi as *const () as *mut c_void)
}

/// One value of `execute_ffi`'s arguments, as the prelude fills it.
#[repr(C)]
struct FfiArg {
    /// `ARG_NULL`, `ARG_NUMBER` (a boolean as 0 or 1) or `ARG_TEXT`.
    kind: i32,
    num: f64,
    /// A Lua string's bytes, alive during the call (the prelude holds the
    /// string).
    text: *const u8,
    len: usize,
}

const ARG_NULL: i32 = 0;
const ARG_NUMBER: i32 = 1;
const ARG_TEXT: i32 = 2;

/// `execute_ffi`'s answer when the statement ran: what `execute` answers
/// after its `true`, as doubles (Lua numbers, not boxed 64-bit cdata).
#[repr(C)]
struct FfiAnswer {
    nfields: f64,
    nrows: f64,
    generation: f64,
}

/// The statement ran; `FfiAnswer` says what it gave.
const FFI_DONE: i32 = 0;
/// The statement failed; `last_error` says why.
const FFI_FAILED: i32 = 1;
/// Nothing ran: the prelude calls `execute` instead, which runs it or says
/// why not in its own words (a closed connection, a string that is not
/// UTF-8, a stale handle, a call re-entering the connection).
const FFI_ASK_LUA: i32 = 2;

/// Executes prepared statement `stmt` of the connection in `slot` (with
/// `id`, from `ffi_handle`) with the `n` values at `args`, and answers
/// into `out`: prepared statements' hot path, which LuaJIT calls through a
/// function pointer from compiled code with no Lua values to convert
/// (mlua's method call showed in profiles: its argument and answer
/// conversions, and LuaJIT stitching traces around every C call). It never
/// calls into Lua, and never unwinds: a panic is an error answer.
extern "C" fn execute_ffi(
    slot: *const c_void,
    id: u64,
    stmt: f64,
    n: i32,
    args: *const FfiArg,
    out: *mut FfiAnswer,
) -> i32 {
    if slot.is_null() || out.is_null() || (args.is_null() && n != 0) {
        return FFI_ASK_LUA;
    }
    // SAFETY: `slot` is the address `ffi_handle` gave of an Arc'd `Slot`
    // that the Lua state's `ConnSlots` (its app data) keeps until after
    // `lua_close`, so it is alive whenever this state's Lua code runs; only
    // this state's prelude has it. Only a shared reference is made: the
    // state inside is reached through the mutex.
    let slot = unsafe { &*slot.cast::<Slot>() };
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the prelude passes `n` filled values of the array it
        // allocated for at least `n` (checked non-null above, `n` >= 0
        // below), and `out`, its answer struct; both are alive during the
        // call, and nothing else touches them until it returns (it runs no
        // Lua code).
        unsafe { execute_args(slot, id, stmt, n, args, &mut *out) }
    }));
    ran.unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        slot.clear_poison();
        if let Some(mut guard) = try_take(slot) {
            if let Some(state) = guard.as_mut().filter(|s| s.id == id) {
                state.error = Some(DbError {
                    class: ErrorClass::Fatal,
                    code: String::new(),
                    message: format!("internal error in virtperf (a bug): {why}"),
                });
            }
        }
        FFI_FAILED
    })
}

/// `execute_ffi`'s body.
///
/// # Safety
/// `args` points to `n` initialized `FfiArg`s (when `n` > 0), and each
/// `ARG_TEXT` one's `text` to `len` readable bytes, for the call.
unsafe fn execute_args(
    slot: &Slot,
    id: u64,
    stmt: f64,
    n: i32,
    args: *const FfiArg,
    out: &mut FfiAnswer,
) -> i32 {
    let Some(mut guard) = try_take(slot) else {
        return FFI_ASK_LUA;
    };
    let Some(this) = guard.as_mut().filter(|s| s.id == id) else {
        return FFI_ASK_LUA;
    };
    let Ok(n) = usize::try_from(n) else {
        return FFI_ASK_LUA;
    };
    let (Some(index), Some(_)) = (statement_index(this, stmt), this.conn.as_ref()) else {
        return FFI_ASK_LUA;
    };
    let args = if n == 0 {
        &[][..]
    } else {
        // SAFETY: the caller's contract: `n` initialized values at `args`.
        unsafe { std::slice::from_raw_parts(args, n) }
    };
    let params = &mut this.params;
    params.truncate(n);
    for (i, arg) in args.iter().enumerate() {
        let p = match arg.kind {
            ARG_NULL => Param::Null,
            ARG_NUMBER => number_param(arg.num),
            ARG_TEXT => {
                let bytes = if arg.len == 0 {
                    &[][..]
                } else if arg.text.is_null() {
                    return FFI_ASK_LUA;
                } else {
                    // SAFETY: the caller's contract: `len` bytes of a Lua
                    // string that the prelude holds during the call.
                    unsafe { std::slice::from_raw_parts(arg.text, arg.len) }
                };
                let Ok(text) = std::str::from_utf8(bytes) else {
                    return FFI_ASK_LUA;
                };
                // The previous execute's string, refilled.
                if let Some(Param::Text(s)) = params.get_mut(i) {
                    s.clear();
                    s.push_str(text);
                    continue;
                }
                Param::Text(text.to_string())
            }
            _ => return FFI_ASK_LUA,
        };
        match params.get_mut(i) {
            Some(slot) => *slot = p,
            None => params.push(p),
        }
    }
    match execute(this, index) {
        Ok(Ok(o)) => {
            *out = FfiAnswer {
                nfields: o.fields as f64,
                nrows: o.rows as f64,
                generation: o.generation as f64,
            };
            FFI_DONE
        }
        Ok(Err(e)) => {
            this.error = Some(e);
            FFI_FAILED
        }
        // Closed: checked above, so not reached; `execute` says it.
        Err(_) => FFI_ASK_LUA,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ConnSlots, Counters, Database, LuaConn};
    use super::*;
    use crate::workload::oltp::driver::{Conn, Rows};
    use crate::workload::oltp::Target;
    use std::cell::Cell;
    use std::sync::{Arc, Mutex};

    /// A driver that keeps what it was asked, fails "fail", panics on
    /// "panic", and answers anything else with one row of one value.
    struct Fake {
        seen: Seen,
    }

    /// Each statement the fake was asked with its values.
    type Seen = Arc<Mutex<Vec<(String, Vec<Param>)>>>;

    impl Conn for Fake {
        fn exec(&mut self, _: &str, _: &[Param]) -> Result<u64, DbError> {
            Ok(0)
        }
        fn batch(&mut self, _: &str) -> Result<(), DbError> {
            Ok(())
        }
        fn table_exists(&mut self, _: &str) -> Result<bool, DbError> {
            Ok(false)
        }
        fn query(&mut self, sql: &str, params: Option<&[Param]>) -> Result<Rows, DbError> {
            if sql == "panic" {
                panic!("the fake driver panics");
            }
            self.seen
                .lock()
                .unwrap()
                .push((sql.to_string(), params.unwrap_or(&[]).to_vec()));
            if sql == "fail" {
                return Err(DbError {
                    class: ErrorClass::Retry,
                    code: "1213".into(),
                    message: "Deadlock found".into(),
                });
            }
            let mut rows = Rows::default();
            rows.begin_row().unwrap();
            rows.push_value(Some(b"x")).unwrap();
            rows.end_row();
            Ok(rows)
        }
    }

    fn arg(kind: i32, num: f64, text: &[u8]) -> FfiArg {
        FfiArg {
            kind,
            num,
            text: text.as_ptr(),
            len: text.len(),
        }
    }

    #[test]
    fn the_ffi_path_runs_refuses_and_never_reaches_a_gone_connection() {
        let slots = ConnSlots::default();
        let db = Arc::new(Database {
            target: Target::Sqlite {
                path: "unused.db".into(),
            },
            prepared: true,
        });
        let counters = Arc::new(Counters::default());
        let seen: Seen = Arc::default();
        let fake = || -> Box<dyn Conn> {
            Box::new(Fake {
                seen: Arc::clone(&seen),
            })
        };
        let conn = LuaConn::with_conn(fake(), Arc::clone(&db), Arc::clone(&counters), &slots);
        conn.with(|s| {
            s.statements
                .extend(["SELECT ?, ?, ?, ?, ?", "fail", "panic"].map(String::from));
            Ok(())
        })
        .unwrap();
        let handle = Arc::as_ptr(&conn.slot).cast::<c_void>();
        let answered = Cell::new([0.0; 3]);
        let call = |id: u64, stmt: f64, args: &[FfiArg]| {
            let mut out = FfiAnswer {
                nfields: 0.0,
                nrows: 0.0,
                generation: 0.0,
            };
            let n = args.len() as i32;
            let status = execute_ffi(handle, id, stmt, n, args.as_ptr(), &mut out);
            answered.set([out.nfields, out.nrows, out.generation]);
            status
        };
        let text = "h\u{e9}llo\0\u{2713}";
        let values = [
            arg(ARG_NUMBER, 7.0, b""),
            arg(ARG_NUMBER, 0.5, b""),
            arg(ARG_TEXT, 0.0, text.as_bytes()),
            arg(ARG_NULL, 0.0, b""),
            arg(ARG_TEXT, 0.0, b""),
        ];
        let id = conn.id;
        assert_eq!(call(id, 1.0, &values), FFI_DONE);
        let last = || seen.lock().unwrap().last().cloned().unwrap();
        let want = vec![
            Param::Int(7),
            Param::Text("0.5".into()),
            Param::Text(text.into()),
            Param::Null,
            Param::Text(String::new()),
        ];
        assert_eq!(last(), ("SELECT ?, ?, ?, ?, ?".to_string(), want));
        assert_eq!(counters.get(), [1, 0, 0, 0, 0]);
        // Fewer values the next time: none of the last ones is left.
        assert_eq!(call(id, 1.0, &values[2..3]), FFI_DONE);
        assert_eq!(last().1, [Param::Text(text.into())]);
        assert_eq!(call(id, 1.0, &[]), FFI_DONE);
        assert!(last().1.is_empty());
        // The third result: one field, one row.
        assert_eq!(answered.get(), [1.0, 1.0, 3.0]);

        // A failure leaves its error for last_error; a panic is one too.
        assert_eq!(call(id, 2.0, &[]), FFI_FAILED);
        let error = conn.with(|s| Ok(s.error.take())).unwrap().unwrap();
        assert_eq!(
            (error.class, error.code.as_str()),
            (ErrorClass::Retry, "1213")
        );
        assert_eq!(call(id, 3.0, &[]), FFI_FAILED);
        let error = conn.with(|s| Ok(s.error.take())).unwrap().unwrap();
        assert!(
            error.message.contains("the fake driver panics"),
            "{}",
            error.message
        );
        assert_eq!(call(id, 1.0, &[]), FFI_DONE, "usable after the panic");

        // Refused with nothing run: the Lua side then calls execute.
        let ran = seen.lock().unwrap().len();
        for stmt in [0.0, 4.0, 1.5, -1.0, f64::NAN] {
            assert_eq!(call(id, stmt, &[]), FFI_ASK_LUA, "statement {stmt}");
        }
        assert_eq!(call(id, 1.0, &[arg(ARG_TEXT, 0.0, b"\xff")]), FFI_ASK_LUA);
        assert_eq!(call(id, 1.0, &[arg(7, 0.0, b"")]), FFI_ASK_LUA);
        assert_eq!(call(id + 1, 1.0, &[]), FFI_ASK_LUA, "another id");
        let busy = conn.slot.lock().unwrap();
        assert_eq!(call(id, 1.0, &[]), FFI_ASK_LUA, "in use");
        drop(busy);
        let mut out = FfiAnswer {
            nfields: 0.0,
            nrows: 0.0,
            generation: 0.0,
        };
        let negative = execute_ffi(handle, id, 1.0, -1, values.as_ptr(), &mut out);
        assert_eq!(negative, FFI_ASK_LUA);
        conn.with(|s| {
            s.conn = None;
            Ok(())
        })
        .unwrap();
        assert_eq!(call(id, 1.0, &[]), FFI_ASK_LUA, "closed");
        assert_eq!(seen.lock().unwrap().len(), ran);

        // Collected: the slot stays, empty, and its next connection has
        // another id, which the old handle does not match.
        drop(conn);
        assert_eq!(call(id, 1.0, &[]), FFI_ASK_LUA, "collected");
        let next = LuaConn::with_conn(fake(), db, counters, &slots);
        assert!(Arc::ptr_eq(&next.slot, &slots.slots.borrow()[0]));
        next.with(|s| {
            s.statements.push("SELECT 1".into());
            Ok(())
        })
        .unwrap();
        assert_eq!(call(id, 1.0, &[]), FFI_ASK_LUA, "the old id");
        assert_eq!(call(next.id, 1.0, &[]), FFI_DONE);
        assert_eq!(seen.lock().unwrap().len(), ran + 1);
    }
}
