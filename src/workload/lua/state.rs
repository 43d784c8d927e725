//! One Lua state of a script: LuaJIT with its standard libraries and FFI,
//! the Rust functions of the API in a table handed to the prelude (which
//! builds `sysbench.*` from them), then the script itself. The main state
//! reads the script's options and runs its commands; each worker thread
//! has a state of its own, as in sysbench.

use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{anyhow, Result};
use mlua::{Function, Lua, Table, Value as LuaValue};

use super::options::ScriptOption;
use super::output::Output;
use super::rand::{self, RandConfig};
use super::sql::{self, ConnSlots, Counters, Database, LuaConn};
use crate::core::options::Values;
use crate::engine::FastRng;

const PRELUDE: &str = include_str!("prelude.lua");

/// The longest string `sysbench.rand.string`/`varstring` makes.
const MAX_RAND_STRING: usize = 16 << 20;

/// What every state of one script shares.
pub struct Shared {
    /// The script as given on the command line (messages, `script_path`).
    pub script: String,
    /// sysbench.cmdline.argv: the program name, then the arguments.
    pub argv: Vec<String>,
    /// The command, as guessed before the options are known.
    pub command: String,
    /// The generators' configuration before the options are parsed.
    pub before: RandConfig,
    /// Set once the main state's options are parsed.
    pub parsed: OnceLock<Parsed>,
    /// The script's text, read once; every state loads it from here.
    pub source: Arc<[u8]>,
    /// Shipped into an environment: its directory is not there, so a
    /// module of its own that it requires is there only when it was
    /// shipped with it (`modules`).
    pub shipped: bool,
    pub modules: Arc<[super::Module]>,
    /// A connection was opened: the run's text has SQL statistics.
    pub db_used: AtomicBool,
    /// Where the script's own output (`print`, `io.write`) goes.
    pub output: Output,
    /// The database as the common options given say, read before the
    /// script is loaded: its top level may connect, as in sysbench, whose
    /// driver options are parsed before it loads a script.
    pub early_db: Option<Arc<Database>>,
}

/// The parsed command line.
pub struct Parsed {
    pub own: Vec<ScriptOption>,
    pub values: Values,
    pub db: Arc<Database>,
    pub rand: RandConfig,
    /// Options a script that declares none was given beyond the common
    /// ones (`--oltp-tables-count=8`), by sysbench's name (`oltp_tables_count`)
    /// with their text: sysbench 0.5's scripts read them as globals.
    pub extra: Vec<(String, String)>,
}

impl Shared {
    /// The database the options say: as parsed, or as read before the
    /// script was loaded.
    fn database(&self) -> Option<&Arc<Database>> {
        self.parsed.get().map(|p| &p.db).or(self.early_db.as_ref())
    }

    fn rand(&self) -> &RandConfig {
        self.parsed.get().map_or(&self.before, |p| &p.rand)
    }
}

/// A state's own part, in its app data.
struct Local {
    rng: RefCell<FastRng>,
    counters: Arc<Counters>,
    /// Where its connections' states live (dropped after `lua_close`).
    conns: ConnSlots,
}

/// Which state: the main one (`None`) or worker `tid`'s.
pub fn new_state(shared: &Arc<Shared>, tid: Option<usize>, counters: Arc<Counters>) -> Result<Lua> {
    // SAFETY: the FFI library is what sysbench scripts are written
    // against; scripts are the user's own programs, trusted as a shell
    // script would be, and ffi.C is confined to the functions the prelude
    // provides (a static binary resolves no other symbol).
    let lua = unsafe { Lua::unsafe_new() };
    let rng_tid = tid.map_or(u64::MAX, |t| t as u64);
    lua.set_app_data(Local {
        rng: RefCell::new(shared.rand().generator(rng_tid)),
        counters,
        conns: ConnSlots::default(),
    });
    set_paths(&lua, &shared.script).map_err(|e| anyhow!("setting package.path: {e}"))?;
    let vp = api(&lua, shared, tid).map_err(|e| anyhow!("setting up the Lua API: {e}"))?;
    lua.load(PRELUDE)
        .set_name("=virtperf-prelude")
        .call::<()>(vp.clone())
        .map_err(|e| anyhow!("loading virtperf's Lua prelude: {}", message(&e)))?;
    super::histogram::install(&lua, shared.output)
        .map_err(|e| anyhow!("setting up sysbench.histogram: {e}"))?;
    let close_json: Function = vp.get("close_json")?;
    lua.set_named_registry_value("virtperf.close_json", close_json)?;
    let run_event: Function = vp.get("run_event")?;
    lua.set_named_registry_value("virtperf.run_event", run_event)?;
    if shared.shipped {
        preload(&lua, &shared.modules).map_err(|e| anyhow!("loading a shipped module: {e}"))?;
        explain_require(&lua).map_err(|e| anyhow!("setting up require: {e}"))?;
    }
    let chunk = strip_shebang(shared.source.to_vec());
    lua.load(chunk)
        .set_name(format!("@{}", shared.script))
        .exec()
        .map_err(|e| anyhow!("{}", message(&e)))?;
    if let Some(p) = shared.parsed.get() {
        super::options::export_globals(&lua, &p.own, &p.values, &p.extra)
            .map_err(|e| anyhow!("exporting the options as globals: {e}"))?;
    }
    Ok(lua)
}

/// Where `require` looks, as in sysbench: the script's own directory
/// first (sysbench's scripts share `oltp_common.lua`), the current one,
/// LuaRocks' and the system's Lua directories, and the directory Debian's
/// sysbench installs its scripts in; `LUA_PATH` with `;;` for these. No
/// C modules: the binary is static.
pub fn search_path(script: &str) -> String {
    let mut dirs: Vec<String> = Vec::new();
    if let Some(dir) = Path::new(script)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        dirs.push(format!("{}/?.lua", dir.display()));
    }
    dirs.extend(["./?.lua".to_string(), "./?/init.lua".to_string()]);
    if let Ok(home) = std::env::var("HOME") {
        for p in ["share/lua/5.1/?.lua", "share/lua/5.1/?/init.lua"] {
            dirs.push(format!("{home}/.luarocks/{p}"));
        }
    }
    dirs.extend(
        [
            "/usr/local/share/lua/5.1/?.lua",
            "/usr/share/lua/5.1/?.lua",
            "/usr/share/sysbench/?.lua",
        ]
        .map(String::from),
    );
    let ours = dirs.join(";");
    match std::env::var("LUA_PATH") {
        Ok(p) => p.replace(";;", &format!(";{ours};")),
        Err(_) => ours,
    }
}

fn set_paths(lua: &Lua, script: &str) -> mlua::Result<()> {
    let package: Table = lua.globals().get("package")?;
    package.set("path", search_path(script))?;
    package.set("cpath", "")?;
    Ok(())
}

/// The modules shipped with a script, in `package.preload`: `require`
/// finds them without a file.
fn preload(lua: &Lua, modules: &[super::Module]) -> mlua::Result<()> {
    let package: Table = lua.globals().get("package")?;
    let preload: Table = package.get("preload")?;
    for m in modules {
        let f = lua
            .load(strip_shebang(m.text.to_vec()))
            .set_name(format!("@{}.lua", m.name))
            .into_function()?;
        preload.set(m.name.as_str(), f)?;
    }
    Ok(())
}

/// In an environment a module that was not shipped with the script fails
/// with a message saying why.
fn explain_require(lua: &Lua) -> mlua::Result<()> {
    lua.load(
        r#"
local require = require
_G.require = function(name)
   local ok, mod = pcall(require, name)
   if ok then return mod end
   local msg = tostring(mod)
   if msg:find("^module '.-' not found") then
      msg = "module '" .. tostring(name) .. "' not found: it is not built in, " ..
            "and it was not found where require looks on the host when the " ..
            "script was shipped into this environment (virtperf ships the " ..
            "modules a script requires by a literal name, as require(\"name\"), " ..
            "from the script's directory, LUA_PATH and /usr/share/sysbench)"
   end
   error(msg, 2)
end
"#,
    )
    .set_name("=virtperf-require")
    .exec()
}

/// A `#!` first line is not Lua (LuaJIT's own loader skips it too).
fn strip_shebang(mut chunk: Vec<u8>) -> Vec<u8> {
    if chunk.starts_with(b"#") {
        let end = chunk
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(chunk.len());
        chunk.drain(..end);
    }
    chunk
}

/// A Lua error as sysbench prints it: the script's `file:line: message`,
/// without mlua's wrapping and tracebacks.
pub fn message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => message(cause),
        // mlua appends Lua's traceback; sysbench prints the message alone.
        mlua::Error::RuntimeError(m) => m
            .split("\nstack traceback:")
            .next()
            .unwrap_or(m)
            .to_string(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::MemoryError(m) => format!("out of memory: {m}"),
        mlua::Error::ExternalError(e) => e.to_string(),
        mlua::Error::WithContext { context, cause } => format!("{context}: {}", message(cause)),
        other => other.to_string(),
    }
}

fn with_rng<R>(lua: &Lua, f: impl FnOnce(&mut FastRng) -> R) -> R {
    let local = lua
        .app_data_ref::<Local>()
        .expect("state set up by new_state");
    let mut rng = local.rng.borrow_mut();
    f(&mut rng)
}

/// The table of Rust functions the prelude shapes into `sysbench.*`.
fn api(lua: &Lua, shared: &Arc<Shared>, tid: Option<usize>) -> mlua::Result<Table> {
    let vp = lua.create_table()?;
    vp.set("version", env!("CARGO_PKG_VERSION"))?;
    vp.set("tid", tid.unwrap_or(0))?;
    if !shared.command.is_empty() {
        vp.set("command", shared.command.as_str())?;
    }
    vp.set("script_path", shared.script.as_str())?;
    let argv = lua.create_table()?;
    for (i, a) in shared.argv.iter().enumerate() {
        argv.raw_set(i, a.as_str())?;
    }
    vp.set("argv", argv)?;
    if let Some(p) = shared.parsed.get() {
        vp.set("opt", super::options::export(lua, &p.own, &p.values)?)?;
    }
    sql_api(lua, &vp, shared)?;
    let s = Arc::clone(shared);
    vp.set(
        "write",
        lua.create_function(move |_, text: mlua::LuaString| {
            use std::io::Write;
            // Through Rust's stdout, so the script's lines and virtperf's
            // come out in the order they were written.
            match s.output {
                Output::Stdout => {
                    let _ = std::io::stdout().lock().write_all(&text.as_bytes());
                }
                Output::Stderr => {
                    let _ = std::io::stderr().lock().write_all(&text.as_bytes());
                }
                Output::Discard => {}
            }
            Ok(())
        })?,
    )?;
    vp.set(
        "counter_inc",
        lua.create_function(|lua, kind: u32| {
            lua.app_data_ref::<Local>()
                .expect("local")
                .counters
                .inc(kind);
            Ok(())
        })?,
    )?;
    vp.set(
        "usleep",
        lua.create_function(|_, us: f64| {
            // Bounded by --time's watchdog; a negative or NaN sleep is none.
            if us > 0.0 {
                std::thread::sleep(Duration::from_secs_f64((us / 1e6).min(3600.0)));
            }
            Ok(())
        })?,
    )?;
    let s = Arc::clone(shared);
    vp.set(
        "options_help",
        lua.create_function(move |_, ()| {
            let own = s.parsed.get().map(|p| p.own.as_slice()).unwrap_or(&[]);
            // The option rows, without help's "x.lua options:" line.
            let text = super::options::help(&s.script, own);
            Ok(text
                .split_once('\n')
                .map_or(String::new(), |(_, rows)| rows.to_string()))
        })?,
    )?;

    rand_api(lua, &vp, shared)?;
    Ok(vp)
}

/// `sysbench.sql`'s part of the API table: the driver's name, connecting
/// (counted in the state's counters), prepared statements through the FFI.
fn sql_api(lua: &Lua, vp: &Table, shared: &Arc<Shared>) -> mlua::Result<()> {
    let db_driver = shared
        .database()
        .map_or("sqlite", |db| db.target.dialect().name());
    vp.set("db_driver", db_driver)?;
    // Asked when a script asks for the driver: the main state is made
    // before the options are parsed.
    let s = Arc::clone(shared);
    vp.set(
        "bad_driver",
        lua.create_function(move |_, ()| {
            Ok(s.parsed
                .get()
                .and_then(|p| crate::workload::oltp::Target::unknown_driver(&p.values))
                .map(str::to_string))
        })?,
    )?;

    let s = Arc::clone(shared);
    vp.set(
        "driver_name",
        lua.create_function(move |_, ()| Ok(s.database().map_or("pgsql", |db| db.script_name())))?,
    )?;
    let s = Arc::clone(shared);
    vp.set(
        "connect",
        lua.create_function(move |lua, ()| {
            let db = s.database().map(Arc::clone).ok_or_else(|| {
                mlua::Error::runtime("connection creation failed: options not parsed yet")
            })?;
            s.db_used.store(true, Ordering::Relaxed);
            let local = lua.app_data_ref::<Local>().expect("local");
            let asked = Arc::clone(&db);
            // A connection, or nothing and the driver's FATAL lines.
            Ok(
                match LuaConn::open(db, Arc::clone(&local.counters), &local.conns) {
                    Ok(conn) => (Some(conn), None),
                    Err(e) => (None, Some(sql::connect_fatal(&asked.target, &e))),
                },
            )
        })?,
    )?;
    // Prepared statements' path through LuaJIT's FFI (the prelude's
    // execute_prepared).
    vp.set("execute_ffi", sql::execute_ffi_address())?;
    Ok(())
}

/// `sysbench.rand`'s part of the API table: draws from the state's own
/// generator, in the distributions the options choose.
fn rand_api(lua: &Lua, vp: &Table, shared: &Arc<Shared>) -> mlua::Result<()> {
    let s = Arc::clone(shared);
    vp.set(
        "rand_default",
        lua.create_function(move |lua, (a, b): (f64, f64)| {
            Ok(with_rng(lua, |r| rand::draw(s.rand().default, r, a, b)))
        })?,
    )?;
    vp.set(
        "rand_uniform",
        lua.create_function(|lua, (a, b): (f64, f64)| {
            Ok(with_rng(lua, |r| {
                rand::draw(crate::workload::oltp::rand::Dist::Uniform, r, a, b)
            }))
        })?,
    )?;
    vp.set(
        "rand_gaussian",
        lua.create_function(|lua, (a, b): (f64, f64)| {
            Ok(with_rng(lua, |r| {
                rand::draw(crate::workload::oltp::rand::Dist::Gaussian, r, a, b)
            }))
        })?,
    )?;
    let s = Arc::clone(shared);
    vp.set(
        "rand_special",
        lua.create_function(move |lua, (a, b): (f64, f64)| {
            Ok(with_rng(lua, |r| rand::draw(s.rand().special, r, a, b)))
        })?,
    )?;
    let s = Arc::clone(shared);
    vp.set(
        "rand_pareto",
        lua.create_function(move |lua, (a, b): (f64, f64)| {
            let d = crate::workload::oltp::rand::Dist::Pareto {
                h: s.rand().pareto_h,
            };
            Ok(with_rng(lua, |r| rand::draw(d, r, a, b)))
        })?,
    )?;
    let s = Arc::clone(shared);
    vp.set(
        "rand_zipfian",
        lua.create_function(move |lua, (a, b): (f64, f64)| {
            Ok(with_rng(lua, |r| rand::zipfian(r, s.rand().zipf_exp, a, b)))
        })?,
    )?;
    let s = Arc::clone(shared);
    vp.set(
        "rand_unique",
        lua.create_function(move |_, ()| Ok(s.rand().unique.next()))?,
    )?;
    vp.set(
        "rand_uint64",
        lua.create_function(|lua, ()| Ok(with_rng(lua, |r| r.next_u64()) as f64))?,
    )?;
    vp.set(
        "rand_double",
        lua.create_function(|lua, ()| Ok(with_rng(lua, |r| r.unit())))?,
    )?;
    vp.set(
        "rand_string",
        lua.create_function(|lua, fmt: mlua::LuaString| {
            let fmt = fmt.as_bytes();
            if fmt.len() > MAX_RAND_STRING {
                return Err(mlua::Error::runtime(
                    "sysbench.rand.string: template longer than 16 MiB",
                ));
            }
            let s = with_rng(lua, |r| rand::string(r, &fmt));
            lua.create_string(s)
        })?,
    )?;
    vp.set(
        "rand_varstring",
        lua.create_function(|lua, (min, max): (f64, f64)| {
            if max > MAX_RAND_STRING as f64 {
                return Err(mlua::Error::runtime(
                    "sysbench.rand.varstring: longer than 16 MiB",
                ));
            }
            let s = with_rng(lua, |r| rand::varstring(r, min, max));
            lua.create_string(s)
        })?,
    )?;
    Ok(())
}

/// The prelude's per-event function of a state.
pub fn event_function(lua: &Lua) -> Result<Function> {
    let event: LuaValue = lua.globals().get("event")?;
    if !matches!(event, LuaValue::Function(_)) {
        return Err(anyhow!("cannot find the event() function"));
    }
    let f: Function = lua
        .named_registry_value("virtperf.run_event")
        .map_err(|e| anyhow!("{e}"))?;
    Ok(f)
}
