//! A script's command line: the options it declares in
//! `sysbench.cmdline.options` (`name = {description, default, type}`),
//! beside the engine's, the random generator's and the SQL drivers', parsed
//! by the one option parser, exported to Lua as `sysbench.opt`, and listed
//! by `help` as sysbench lays them out.

use anyhow::{bail, Result};
use mlua::{Lua, Table, Value as LuaValue};

use crate::core::fatal::SysbenchFatal;
use crate::core::options::{self, CliError, OptKind, OptionSpec, Values};
use crate::engine;
use crate::workload::oltp;

/// sysbench's argument types (`sysbench.cmdline.ARG_*`).
const ARG_BOOL: i64 = 1;
const ARG_INT: i64 = 2;
const ARG_SIZE: i64 = 3;
const ARG_DOUBLE: i64 = 4;
const ARG_STRING: i64 = 5;
const ARG_LIST: i64 = 6;

/// One option a script declares.
#[derive(Debug, Clone)]
pub struct ScriptOption {
    /// As the script names it (`table_size`): the key in `sysbench.opt`.
    pub name: String,
    pub spec: OptionSpec,
    /// A list option (`{"a", "b"}` default or ARG_LIST): a table in Lua.
    pub list: bool,
}

/// The random generator's options beside OLTP's (`--rand-type` and its
/// shapes): the seed and the Zipfian exponent.
pub const RAND: &[OptionSpec] = &[
    OptionSpec::new(
        "rand-seed",
        OptKind::Int {
            min: 0,
            max: u64::MAX,
        },
        "0",
        "seed for the random number generators (0: from the current time)",
    ),
    OptionSpec::new(
        "rand-zipfian-exp",
        OptKind::Float { min: 0.0, max: 1e6 },
        "0.8",
        "shape parameter (exponent) of sysbench.rand.zipfian",
    ),
];

/// Whether an OLTP option is one a script gets (the database connection
/// and the random distribution), not the built-in tests' table layout.
fn shared_with_oltp(name: &str) -> bool {
    name.starts_with("db-")
        || name.starts_with("mysql-")
        || name.starts_with("pgsql-")
        || name.starts_with("rand-")
        || name == "oltp-dir"
}

/// The options every script takes besides its own.
pub fn common() -> Vec<OptionSpec> {
    engine::OPTIONS
        .iter()
        .chain(oltp::OPTIONS.iter().filter(|o| shared_with_oltp(o.name)))
        .chain(RAND)
        .copied()
        .collect()
}

/// `table_size` → `table-size`: sysbench takes either spelling.
pub fn kebab(name: &str) -> String {
    name.replace('_', "-")
}

/// A script's option names, defaults and descriptions, kept for the
/// process (option tables hold `&'static str`), each text once: an agent
/// loads the same script for every run.
fn leak(s: String) -> &'static str {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static KEPT: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&k) = kept.get(s.as_str()) {
        return k;
    }
    let k: &'static str = Box::leak(s.into_boxed_str());
    kept.insert(k);
    k
}

/// Reads `sysbench.cmdline.options` from the script's main state.
pub fn declared(lua: &Lua, script: &str) -> Result<Vec<ScriptOption>> {
    let sysbench: Table = lua.globals().get("sysbench")?;
    let cmdline: Table = sysbench.get("cmdline")?;
    let table = match cmdline.get::<LuaValue>("options")? {
        LuaValue::Nil => return Ok(Vec::new()),
        LuaValue::Table(t) => t,
        other => bail!(
            "{script}: sysbench.cmdline.options must be a table, not a {}",
            other.type_name()
        ),
    };
    let mut out = Vec::new();
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (key, def) = pair?;
        let (LuaValue::String(name), LuaValue::Table(def)) = (&key, &def) else {
            return Err(SysbenchFatal {
                ours: format!("{script}: wrong table structure in sysbench.cmdline.options (each entry is name = {{description, default}})"),
                // sysbench's words name the line of its own Lua that checks.
                fatal: "`sysbench.cmdline.read_cmdline_options' function failed: [string \"sysbench.cmdline.lua\"]:132: wrong table structure in sysbench.cmdline.options".into(),
                hint: None,
            }
            .into());
        };
        let name = name.to_str()?.to_string();
        let desc: String = match def.get::<LuaValue>(1)? {
            LuaValue::String(s) => s.to_str()?.to_string(),
            LuaValue::Nil => bail!("{script}: nil description for option {name}"),
            other => other.to_string()?,
        };
        let declared_type: Option<i64> = def.get(3)?;
        let (default, natural) = match def.get::<LuaValue>(2)? {
            LuaValue::Nil => (String::new(), ARG_STRING),
            LuaValue::Boolean(b) => ((if b { "on" } else { "off" }).to_string(), ARG_BOOL),
            LuaValue::Integer(n) => (n.to_string(), ARG_DOUBLE),
            LuaValue::Number(x) => (trim(x), ARG_DOUBLE),
            LuaValue::String(s) => (s.to_str()?.to_string(), ARG_STRING),
            LuaValue::Table(t) => {
                let items: Vec<String> = t
                    .sequence_values::<LuaValue>()
                    .map(|v| v.and_then(|v| v.to_string()))
                    .collect::<mlua::Result<_>>()?;
                (items.join(","), ARG_LIST)
            }
            other => bail!(
                "{script}: cannot determine type for option {name} (default is a {})",
                other.type_name()
            ),
        };
        let kind = match declared_type.unwrap_or(natural) {
            ARG_BOOL => OptKind::Bool,
            ARG_INT => OptKind::Int {
                min: 0,
                max: u64::MAX,
            },
            ARG_SIZE => OptKind::Size { min: 0 },
            ARG_DOUBLE => OptKind::Float {
                min: -f64::MAX,
                max: f64::MAX,
            },
            _ => OptKind::Text,
        };
        let flag = kebab(&name);
        out.push(ScriptOption {
            list: declared_type.unwrap_or(natural) == ARG_LIST,
            spec: OptionSpec::new(leak(flag), kind, leak(default), leak(desc)),
            name,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn trim(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// Parses `args` (options with either spelling, and the command words)
/// against the script's options and the common ones.
pub fn parse(
    own: &[ScriptOption],
    args: &[String],
    context: &str,
) -> Result<(Values, Vec<String>), CliError> {
    let common = common();
    // sysbench lets a script redeclare a general option (its help lists
    // it); the general one is what is parsed.
    let own_specs: Vec<OptionSpec> = own
        .iter()
        .map(|o| o.spec)
        .filter(|o| !common.iter().any(|c| c.name == o.name))
        .collect();
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix("--") {
            Some(body) => match body.split_once('=') {
                Some((n, v)) => format!("--{}={v}", kebab(n)),
                None => format!("--{}", kebab(body)),
            },
            None => a.clone(),
        })
        .collect();
    options::parse(&[&common, &own_specs], &args, context)
}

/// `sysbench.opt`: every option under its script name (and the common ones
/// under both spellings, `rand_type` and `rand-type`).
pub fn export(lua: &Lua, own: &[ScriptOption], values: &Values) -> mlua::Result<Table> {
    let opt = lua.create_table()?;
    let put = |key: &str, spec: &OptionSpec, list: bool| -> mlua::Result<()> {
        let v = value_of(lua, spec, values, list)?;
        opt.raw_set(key, v)
    };
    for spec in common() {
        put(spec.name, &spec, false)?;
        put(&spec.name.replace('-', "_"), &spec, false)?;
    }
    let common = common();
    for o in own
        .iter()
        .filter(|o| !common.iter().any(|c| c.name == o.spec.name))
    {
        put(&o.name, &o.spec, o.list)?;
        // sysbench.opt.dash_opt for a declared "dash-opt", as sysbench.
        if o.name.contains('-') {
            put(&o.name.replace('-', "_"), &o.spec, o.list)?;
        }
    }
    Ok(opt)
}

fn value_of(lua: &Lua, spec: &OptionSpec, values: &Values, list: bool) -> mlua::Result<LuaValue> {
    let name = spec.name;
    Ok(match spec.kind {
        // sysbench reads a flag declared without a default as on.
        OptKind::Bool if spec.default.is_empty() && !values.was_given(name) => {
            LuaValue::Boolean(true)
        }
        OptKind::Bool => LuaValue::Boolean(values.flag(name)),
        OptKind::Int { .. } | OptKind::Size { .. } => LuaValue::Number(values.int(name) as f64),
        OptKind::Float { .. } => LuaValue::Number(values.float(name)),
        OptKind::Text | OptKind::Choice(_) if list => {
            let t = lua.create_table()?;
            for (i, item) in values
                .text(name)
                .split(',')
                .filter(|s| !s.is_empty())
                .enumerate()
            {
                t.raw_set(i + 1, item)?;
            }
            LuaValue::Table(t)
        }
        OptKind::Text | OptKind::Choice(_) => {
            LuaValue::String(lua.create_string(values.text(name))?)
        }
    })
}

/// `help`: the script's options as sysbench lists them.
pub fn help(script: &str, own: &[ScriptOption]) -> String {
    if own.is_empty() {
        return String::new();
    }
    let rows: Vec<(String, String)> = own
        .iter()
        .map(|o| {
            let lhs = match o.spec.kind {
                OptKind::Bool => format!("--{}[=on|off]", o.name),
                _ if o.list => format!("--{}=[LIST,...]", o.name),
                OptKind::Int { .. } | OptKind::Float { .. } => format!("--{}=N", o.name),
                OptKind::Size { .. } => format!("--{}=SIZE", o.name),
                _ => format!("--{}=STRING", o.name),
            };
            let default = if o.spec.default.is_empty() {
                String::new()
            } else {
                format!(" [{}]", o.spec.default)
            };
            (lhs, format!("{}{default}", o.spec.help))
        })
        .collect();
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut out = format!("{script} options:\n");
    for (lhs, rhs) in rows {
        out.push_str(&format!("  {lhs:<width$} {rhs}\n"));
    }
    out.push('\n');
    out
}
