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
    /// How `sysbench.opt` reads its value.
    pub read: Read,
}

/// How `sysbench.opt` reads a script option's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Read {
    /// A number option (a number default or ARG_DOUBLE): parsed as text
    /// and read as C's `strtod` reads it, as sysbench does (`--n=x` is 0,
    /// `--n=5abc` is 5, `--n=0x10` is 16), never refused.
    Number,
    /// A size option (ARG_SIZE): parsed as text and read as sysbench reads
    /// a size ([`sb_size`]: `--s=1.5M` is 0, `--s=5KB` is 5120), never
    /// refused.
    Size,
    /// A list option (`{"a", "b"}` default or ARG_LIST): a table in Lua.
    List,
    /// As its kind says (a flag, text).
    Typed,
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

/// The database options every script takes (`--db-driver` and each
/// driver's connection options), for a script's `help`.
pub fn database() -> Vec<OptionSpec> {
    oltp::OPTIONS
        .iter()
        .filter(|o| shared_with_oltp(o.name))
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
            _ => OptKind::Text,
        };
        let flag = kebab(&name);
        out.push(ScriptOption {
            read: match declared_type.unwrap_or(natural) {
                ARG_DOUBLE => Read::Number,
                ARG_SIZE => Read::Size,
                ARG_LIST => Read::List,
                _ => Read::Typed,
            },
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
    let put = |key: &str, spec: &OptionSpec, read: Read| -> mlua::Result<()> {
        let v = match read {
            Read::Number => LuaValue::Number(strtod(values.text(spec.name))),
            Read::Size => LuaValue::Number(sb_size(values.text(spec.name)) as f64),
            Read::List => value_of(lua, spec, values, true)?,
            Read::Typed => value_of(lua, spec, values, false)?,
        };
        opt.raw_set(key, v)
    };
    for spec in common() {
        put(spec.name, &spec, Read::Typed)?;
        put(&spec.name.replace('-', "_"), &spec, Read::Typed)?;
    }
    let common = common();
    for o in own
        .iter()
        .filter(|o| !common.iter().any(|c| c.name == o.spec.name))
    {
        put(&o.name, &o.spec, o.read)?;
        // sysbench.opt.dash_opt for a declared "dash-opt", as sysbench.
        if o.name.contains('-') {
            put(&o.name.replace('-', "_"), &o.spec, o.read)?;
        }
    }
    Ok(opt)
}

/// The common options sysbench types as lists (a table in Lua).
const LISTS: &[&str] = &[
    "mysql-host",
    "mysql-port",
    "mysql-socket",
    "mysql-ignore-errors",
    "report-checkpoints",
];

/// sysbench 0.5's option globals: for a script that declares no options,
/// sysbench 1.0 sets every option as a global too, named with `_` for `-`
/// (`db_driver`, `oltp_tables_count`), the common ones as typed and the
/// others as the text given; a name the script uses for a function is left
/// alone, and so, unlike sysbench, is a table (`--debug` would otherwise
/// replace Lua's `debug` library). sysbench does this once the script is
/// loaded, before each command and each thread's `thread_init`; so does
/// this, where a state has loaded the script and the options are parsed.
pub fn export_globals(
    lua: &Lua,
    own: &[ScriptOption],
    values: &Values,
    extra: &[(String, String)],
) -> mlua::Result<()> {
    if !own.is_empty() {
        return Ok(());
    }
    let globals = lua.globals();
    let set = |name: &str, value: LuaValue| -> mlua::Result<()> {
        if matches!(
            globals.raw_get::<LuaValue>(name)?,
            LuaValue::Function(_) | LuaValue::Table(_)
        ) {
            return Ok(());
        }
        globals.raw_set(name, value)
    };
    for spec in common() {
        let value = value_of(lua, &spec, values, LISTS.contains(&spec.name))?;
        set(&spec.name.replace('-', "_"), value)?;
    }
    for (name, text) in extra {
        set(name, LuaValue::String(lua.create_string(text)?))?;
    }
    Ok(())
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

/// A result's `params` give a script's number and size options as the
/// numbers the script saw (they are parsed as text), or as given where that
/// is not a finite number JSON can hold.
pub fn numbers_in_params(
    own: &[ScriptOption],
    values: &Values,
    params: &mut serde_json::Map<String, serde_json::Value>,
) {
    for o in own {
        let key = o.spec.name.replace('-', "_");
        match o.read {
            Read::Number => {
                let x = strtod(values.text(o.spec.name));
                if x.is_finite() {
                    params.insert(key, serde_json::json!(x));
                }
            }
            Read::Size => {
                params.insert(key, serde_json::json!(sb_size(values.text(o.spec.name))));
            }
            Read::List | Read::Typed => {}
        }
    }
}

/// The size sysbench 1.0.20 reads from a SIZE option's text: the leading
/// decimal digits (wrapping past 2^64, as its unsigned arithmetic does),
/// times 1024, 1024², 1024³ or 1024⁴ for a K, M, G or T (either case) right
/// after them, whatever follows ignored (`5KB` is 5120); 0 when the digits
/// are followed by anything else (`1.5M`, `1b`, `4 M`) or there are none
/// (` 5K`, `-1`, `x`).
pub fn sb_size(s: &str) -> u64 {
    let b = s.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let n = b[..digits].iter().fold(0u64, |n, d| {
        n.wrapping_mul(10).wrapping_add(u64::from(d - b'0'))
    });
    let shift = match b.get(digits).map(u8::to_ascii_lowercase) {
        None => 0,
        Some(b'k') => 10,
        Some(b'm') => 20,
        Some(b'g') => 30,
        Some(b't') => 40,
        Some(_) => return 0,
    };
    n.wrapping_mul(1 << shift)
}

/// The number C's `strtod` reads at the start of `s`, 0 where none is:
/// leading white space, a sign, then the longest decimal (`1.5e3`) or
/// hexadecimal (`0x1p4`) number, `inf`/`infinity` or `nan`; what follows
/// is ignored. sysbench reads a script's number options so.
pub fn strtod(s: &str) -> f64 {
    let b = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (sign, body) = match b.as_bytes().first() {
        Some(b'-') => (-1.0, &b[1..]),
        Some(b'+') => (1.0, &b[1..]),
        _ => (1.0, b),
    };
    let lower = body.to_ascii_lowercase();
    if lower.starts_with("inf") {
        return sign * f64::INFINITY;
    }
    if lower.starts_with("nan") {
        return f64::NAN;
    }
    let bytes = lower.as_bytes();
    let digits = |from: usize, hex: bool| {
        bytes[from..]
            .iter()
            .take_while(|c| {
                if hex {
                    c.is_ascii_hexdigit()
                } else {
                    c.is_ascii_digit()
                }
            })
            .count()
    };
    // The mantissa: digits, a point, digits (at least one digit in all).
    let hex = lower.starts_with("0x") && {
        let int = digits(2, true);
        int > 0 || (bytes.get(2 + int) == Some(&b'.') && digits(3 + int, true) > 0)
    };
    let start = if hex { 2 } else { 0 };
    let int = digits(start, hex);
    let mut end = start + int;
    let mut frac = 0;
    if bytes.get(end) == Some(&b'.') {
        frac = digits(end + 1, hex);
        if int + frac > 0 {
            end += 1 + frac;
        }
    }
    if int + frac == 0 {
        return 0.0;
    }
    // An exponent counts only with its digits: "1.5e" reads 1.5.
    let mut exp: i32 = 0;
    if bytes.get(end) == Some(if hex { &b'p' } else { &b'e' }) {
        let mut at = end + 1;
        let neg = match bytes.get(at) {
            Some(b'-') => {
                at += 1;
                true
            }
            Some(b'+') => {
                at += 1;
                false
            }
            _ => false,
        };
        let n = digits(at, false);
        if n > 0 {
            let e: i32 = lower[at..at + n].parse().unwrap_or(i32::MAX);
            exp = if neg { -e } else { e };
            end = at + n;
        }
    }
    let value = if hex {
        let mantissa = lower[start..end].split(['p']).next().unwrap_or("");
        let (i, f) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut v = 0.0;
        for c in i.chars().chain(f.chars()) {
            v = v * 16.0 + c.to_digit(16).unwrap_or(0) as f64;
        }
        v * 2f64.powi(exp) / 16f64.powi(f.len() as i32)
    } else {
        lower[..end].parse().unwrap_or(0.0)
    };
    sign * value
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
                _ if o.read == Read::List => format!("--{}=[LIST,...]", o.name),
                _ if o.read == Read::Number => format!("--{}=N", o.name),
                _ if o.read == Read::Size => format!("--{}=SIZE", o.name),
                OptKind::Int { .. } | OptKind::Float { .. } => format!("--{}=N", o.name),
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

#[cfg(test)]
mod tests {
    use super::{sb_size, strtod};

    #[test]
    fn numbers_are_read_as_strtod_reads_them() {
        // What sysbench 1.0.20 made of `--my_count=V` for a script option
        // with a number default, side by side.
        for (v, want) in [
            ("7", 7.0),
            ("x", 0.0),
            ("", 0.0),
            ("5abc", 5.0),
            ("0x10", 16.0),
            ("-3", -3.0),
            (" 4", 4.0),
            ("+2", 2.0),
            ("3.5", 3.5),
            ("1e3", 1000.0),
            ("1.5e", 1.5),
            ("1.5e+x", 1.5),
            (".5", 0.5),
            ("5.", 5.0),
            (".", 0.0),
            ("-", 0.0),
            ("0x", 0.0),
            ("0x1.8", 1.5),
            ("0x1p4", 16.0),
            ("2E-1", 0.2),
        ] {
            assert_eq!(strtod(v), want, "{v:?}");
        }
        assert_eq!(strtod("inf"), f64::INFINITY);
        assert_eq!(strtod("-Infinity"), f64::NEG_INFINITY);
        assert!(strtod("nan").is_nan());
        assert_eq!(strtod("1e999"), f64::INFINITY);
    }

    #[test]
    fn sizes_are_read_as_sysbench_reads_them() {
        // What sysbench 1.0.20 printed for `--sz=V`, a script option
        // declared ARG_SIZE, side by side (numbers as Lua's %.14g shows).
        for (v, want) in [
            ("7", 7),
            ("007", 7),
            ("2k", 2048),
            ("1m", 1 << 20),
            ("1g", 1 << 30),
            ("1t", 1 << 40),
            ("3G", 3 << 30),
            ("5KB", 5120),
            ("5K ", 5120),
            ("5k5k", 5120),
            ("1M2", 1 << 20),
            ("1.5M", 0),
            (" 5K", 0),
            ("x", 0),
            ("", 0),
            ("-1", 0),
            ("+5", 0),
            ("1b", 0),
            ("10Q", 0),
            ("0x10", 0),
            ("4 M", 0),
            ("5\n", 0),
            ("K", 0),
            ("99999999999999999999", 7766279631452241919),
            ("18446744073709551615", u64::MAX),
            ("20000000000T", 1713619658214473728),
            ("123456789012345678901k", 4214811510417970176),
        ] {
            assert_eq!(sb_size(v), want, "{v:?}");
        }
    }
}
