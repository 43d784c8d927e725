//! `sysbench.sql` under a script: a connection (`LuaConn`, Lua userdata)
//! over the OLTP drivers' `Conn`, which runs a query or a prepared
//! statement's text with its values, counts it as sysbench does (a result
//! with columns is a read, a statement that changed rows a write, anything
//! else other), and hands back rows or the error's class, number, state and
//! message, from which the Lua side raises sysbench's errors. Prepared
//! statements, every OLTP script's hot path, are executed through LuaJIT's
//! FFI (`execute_ffi`, which compiled Lua calls like a C function), and
//! reach the connection's state through its slot, as the userdata's methods
//! do.

mod ffi;
mod methods;

pub use ffi::execute_ffi_address;

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use mlua::{Lua, Value as LuaValue};

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
    /// Where `--db-driver` and its options point, and `--db-ps-mode`.
    pub fn from_values(values: &crate::core::options::Values) -> Database {
        Database {
            target: Target::from_values(values),
            prepared: values.text("db-ps-mode") != "disable",
        }
    }

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

/// A connection's state, which two ways of calling it reach: mlua's
/// methods on [`LuaConn`] and [`execute_ffi`], the path of prepared
/// statements that LuaJIT's FFI calls from compiled code.
struct ConnState {
    /// Which `LuaConn` the slot holds this for (never reused in a state):
    /// a stale handle finds another id, or none, and is refused.
    id: u64,
    conn: Option<Box<dyn Conn>>,
    db: Arc<Database>,
    counters: Arc<Counters>,
    /// The database is SQLite (`SERIAL` is rewritten).
    sqlite: bool,
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
    /// The error of the statement `execute_ffi` failed, until the Lua side
    /// fetches it (`last_error`).
    error: Option<DbError>,
}

impl ConnState {
    fn conn(&mut self) -> mlua::Result<&mut Box<dyn Conn>> {
        self.conn
            .as_mut()
            .ok_or_else(|| mlua::Error::runtime("the connection was closed (disconnect)"))
    }
}

/// Where a connection's state lives, at one address for as long as its Lua
/// state: `execute_ffi` is handed that address. Taken with `try_lock`
/// only, never waited for: the one thread running the Lua state is the only
/// one that takes it, and it is busy only when a call on the connection
/// re-enters it (a Lua finalizer run by a collection inside the call),
/// which is refused instead of aliasing the state.
type Slot = Mutex<Option<ConnState>>;

/// The slot's state when no call on it is running, `None` when one is.
fn try_take(slot: &Slot) -> Option<MutexGuard<'_, Option<ConnState>>> {
    match slot.try_lock() {
        Ok(guard) => Some(guard),
        // A panic in an earlier call (caught, and said): the state is whole
        // enough to go on, as with any failed statement.
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// The connection slots of one Lua state, kept in its app data. mlua drops
/// app data after `lua_close` has run the state's last finalizers, so a
/// slot outlives every piece of Lua code that could hand its address to
/// `execute_ffi`. A slot no `LuaConn` holds any more is reused, with a new
/// id.
#[derive(Default)]
pub struct ConnSlots {
    slots: RefCell<Vec<Arc<Slot>>>,
    last_id: Cell<u64>,
}

impl ConnSlots {
    /// A free slot (none of the state's `LuaConn`s holds it), or a new one.
    fn free_slot(&self) -> Arc<Slot> {
        let mut slots = self.slots.borrow_mut();
        let free = slots
            .iter()
            .find(|s| Arc::strong_count(s) == 1 && s.try_lock().is_ok());
        if let Some(slot) = free {
            return Arc::clone(slot);
        }
        let slot = Arc::new(Mutex::new(None));
        slots.push(Arc::clone(&slot));
        slot
    }
}

/// One connection of a script, the Lua userdata: its state is in a slot of
/// the Lua state's `ConnSlots`, emptied (the connection closed) when the
/// userdata is collected.
pub struct LuaConn {
    slot: Arc<Slot>,
    id: u64,
}

impl LuaConn {
    pub fn open(
        db: Arc<Database>,
        counters: Arc<Counters>,
        slots: &ConnSlots,
    ) -> anyhow::Result<LuaConn> {
        let conn = db.target.connect(db.prepared, true)?;
        Ok(LuaConn::with_conn(conn, db, counters, slots))
    }

    fn with_conn(
        conn: Box<dyn Conn>,
        db: Arc<Database>,
        counters: Arc<Counters>,
        slots: &ConnSlots,
    ) -> LuaConn {
        let id = slots.last_id.get() + 1;
        slots.last_id.set(id);
        let slot = slots.free_slot();
        let state = ConnState {
            id,
            conn: Some(conn),
            sqlite: db.target.sqlite_path().is_some(),
            db,
            counters,
            bulk_transaction: false,
            last: Rows::default(),
            params: Vec::new(),
            generation: 0,
            statements: Vec::new(),
            error: None,
        };
        if let Some(mut guard) = try_take(&slot) {
            *guard = Some(state);
        }
        LuaConn { slot, id }
    }

    /// Runs `f` on the connection's state; an error when a call on it is
    /// still running (a finalizer re-entering it).
    fn with<R>(&self, f: impl FnOnce(&mut ConnState) -> mlua::Result<R>) -> mlua::Result<R> {
        let mut guard = try_take(&self.slot).ok_or_else(|| {
            mlua::Error::runtime("the connection is in use by a call that has not returned")
        })?;
        match guard.as_mut() {
            Some(state) if state.id == self.id => f(state),
            _ => Err(mlua::Error::runtime("the connection is gone")),
        }
    }
}

impl Drop for LuaConn {
    fn drop(&mut self) {
        if let Some(mut guard) = try_take(&self.slot) {
            if guard.as_ref().is_some_and(|s| s.id == self.id) {
                // Closes the connection now, not when the slot is reused.
                *guard = None;
            }
        }
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
        LuaValue::Number(x) => float_param(x),
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

/// A number mlua did not make an `Integer`: integral ones (-0) as integers,
/// others as their text.
fn float_param(x: f64) -> Param {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Param::Int(x as i64)
    } else {
        Param::Text(x.to_string())
    }
}

/// A Lua number as `param_of` takes it from mlua, which makes a LuaJIT
/// number an `Integer` when it is in i64's range and converts there and
/// back bit for bit (so not -0), and a `Number` otherwise.
fn number_param(x: f64) -> Param {
    // -2^63 and 2^63, exact as doubles; NaN is in no range.
    const MIN: f64 = i64::MIN as f64;
    if (MIN..-MIN).contains(&x) {
        let n = x as i64;
        if (n as f64).to_bits() == x.to_bits() {
            return Param::Int(n);
        }
    }
    float_param(x)
}

/// A query's answer, as a tuple so that it goes onto the Lua stack without
/// an allocation: true, nfields, nrows, the result's number, nil; or
/// false, class, errno, state, message.
type Answer = (LuaValue, LuaValue, LuaValue, LuaValue, LuaValue);

/// What a statement that ran gave: the answer's numbers.
struct Outcome {
    fields: i64,
    rows: i64,
    generation: i64,
}

/// What sysbench's driver logs when a connection cannot be made, each
/// line a FATAL: libpq's words for a host name with no address, MySQL's
/// client library's; otherwise the reason as virtperf gives it.
pub fn connect_fatal(target: &Target, e: &anyhow::Error) -> String {
    let why = format!("{e:#}");
    const LOOKUP: &str = "failed to lookup address information: ";
    let unknown_host = why.split_once(LOOKUP).map(|(_, rest)| {
        rest.split(';')
            .next()
            .unwrap_or(rest)
            .split(" (")
            .next()
            .unwrap_or(rest)
            .to_string()
    });
    match (target, unknown_host) {
        (Target::Pgsql { host, .. }, Some(reason)) => format!(
            "FATAL: Connection to database failed: could not translate host name \"{host}\" to address: {reason}\n\n"
        ),
        (Target::Pgsql { .. }, None) => format!("FATAL: Connection to database failed: {why}\n\n"),
        (Target::Mysql { host, port, .. }, Some(_)) => format!(
            "FATAL: unable to connect to MySQL server on host '{host}', port {port}, aborting...\n\
             FATAL: error 2005: Unknown MySQL server host '{host}' (0)\n"
        ),
        (Target::Mysql { host, port, .. }, None) => format!(
            "FATAL: unable to connect to MySQL server on host '{host}', port {port}, aborting...\n\
             FATAL: {why}\n"
        ),
        _ => format!("FATAL: {why}\n"),
    }
}

/// The error's parts as the Lua side raises them: class, errno, state,
/// message.
fn error_values(lua: &Lua, e: &DbError) -> mlua::Result<(LuaValue, LuaValue, LuaValue, LuaValue)> {
    let class = match e.class {
        ErrorClass::Retry => "ignorable",
        ErrorClass::Lost | ErrorClass::Fatal => "fatal",
    };
    // A SQLSTATE (PostgreSQL's code, five characters) is the state, and
    // the errno is 0, as sysbench's PostgreSQL driver says; a MySQL errno
    // (up to four digits for a client) is the errno.
    let sqlstate = e.code.len() == 5 && e.code.chars().all(|c| c.is_ascii_alphanumeric());
    let (errno, state) = if sqlstate {
        (0, e.code.clone())
    } else if let Some((errno, state)) = e.code.split_once(':') {
        // MySQL's errno and SQLSTATE.
        (errno.parse().unwrap_or(0), state.to_string())
    } else {
        let digits: String = e.code.chars().filter(|c| c.is_ascii_digit()).collect();
        (digits.parse().unwrap_or(0), String::new())
    };
    Ok((
        LuaValue::String(lua.create_string(class)?),
        LuaValue::Integer(errno),
        LuaValue::String(lua.create_string(&state)?),
        LuaValue::String(lua.create_string(&e.message)?),
    ))
}

/// The answer `query` and `execute` give.
fn answer(lua: &Lua, outcome: Result<Outcome, DbError>) -> mlua::Result<Answer> {
    match outcome {
        Ok(o) => Ok((
            LuaValue::Boolean(true),
            LuaValue::Integer(o.fields),
            LuaValue::Integer(o.rows),
            LuaValue::Integer(o.generation),
            LuaValue::Nil,
        )),
        Err(e) => {
            let (class, errno, state, message) = error_values(lua, &e)?;
            Ok((LuaValue::Boolean(false), class, errno, state, message))
        }
    }
}

/// Runs a query (params None) or a prepared statement and counts it as
/// sysbench does. The outer error: the connection was closed, and nothing
/// ran.
fn run(
    this: &mut ConnState,
    sql: &str,
    params: Option<&[Param]>,
) -> mlua::Result<Result<Outcome, DbError>> {
    let text = if this.sqlite {
        for_sqlite(sql)
    } else {
        std::borrow::Cow::Borrowed(sql)
    };
    let rows = match this.conn()?.query(&text, params) {
        Ok(rows) => rows,
        Err(e) => return Ok(Err(e)),
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
    Ok(Ok(Outcome {
        fields,
        rows: n as i64,
        generation: this.generation,
    }))
}

/// Runs prepared statement `index` (from 0) with the values in `params`.
fn execute(this: &mut ConnState, index: usize) -> mlua::Result<Result<Outcome, DbError>> {
    // Taken out for the call, which borrows the connection.
    let sql = std::mem::take(&mut this.statements[index]);
    let params = std::mem::take(&mut this.params);
    let out = run(this, &sql, Some(&params));
    this.statements[index] = sql;
    this.params = params;
    out
}

/// The index of prepared statement `n` (numbered from 1 by `prepare`).
fn statement_index(this: &ConnState, n: f64) -> Option<usize> {
    let len = this.statements.len();
    (n >= 1.0 && n <= len as f64 && n.fract() == 0.0).then(|| n as usize - 1)
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
    fn numbers_become_the_params_mlua_and_param_of_make() {
        // execute_ffi gets the double itself; execute got mlua's Value.
        let lua = Lua::new();
        let identity: mlua::Function = lua.load("return function(x) return x end").eval().unwrap();
        let p53 = 2f64.powi(53);
        let p63 = 2f64.powi(63);
        for x in [
            0.0,
            -0.0,
            7.0,
            -7.0,
            0.5,
            -2.5,
            1e-7,
            8.999_999_999_999_999e15,
            9.0e15,
            1e16,
            p53,
            p53 + 2.0,
            -p53,
            p63,
            -p63,
            p63 * 2.0,
            1e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ] {
            let v: LuaValue = identity.call(x).unwrap();
            assert_eq!(number_param(x), param_of(v).unwrap(), "{x:e}");
        }
        assert_eq!(number_param(-p63), Param::Int(i64::MIN));
        assert_eq!(number_param(0.5), Param::Text("0.5".into()));
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
