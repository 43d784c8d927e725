//! Declarative option tables and the one parser that reads them: every option
//! a workload or command accepts is a row (name, kind, default, help), so help
//! text, validation and the result's `params` all come from the same place.

use std::collections::BTreeMap;

use crate::core::text;
use crate::core::units::Bytes;

/// Options that shape a run's output, not its measurement: kept out of a
/// result's `params`, as every secret and secret file is
/// ([`text::is_secret_or_its_file`], applied by `to_params` itself).
pub const NOT_PARAMS: &[&str] = &["report-interval", "debug", "forced-shutdown"];

/// What values an option accepts.
#[derive(Debug, Clone, Copy)]
pub enum OptKind {
    /// A whole number in `min..=max`.
    Int { min: u64, max: u64 },
    /// A decimal number in `min..=max`.
    Float { min: f64, max: f64 },
    /// A byte size with an optional K/M/G/T suffix, at least `min`.
    Size { min: u64 },
    /// on/off (also true/false, yes/no, 1/0); `--flag` alone means on.
    Bool,
    /// One word from a fixed list.
    Choice(&'static [&'static str]),
    /// Free text (a path, a spec).
    Text,
}

/// One row of an option table.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    pub name: &'static str,
    pub kind: OptKind,
    /// The default as it would be typed; "" means unset.
    pub default: &'static str,
    pub help: &'static str,
    /// Repeatable options collect every occurrence (e.g. `--env`).
    pub repeatable: bool,
}

impl OptionSpec {
    pub const fn new(
        name: &'static str,
        kind: OptKind,
        default: &'static str,
        help: &'static str,
    ) -> OptionSpec {
        OptionSpec {
            name,
            kind,
            default,
            help,
            repeatable: false,
        }
    }

    pub const fn repeatable(mut self) -> OptionSpec {
        self.repeatable = true;
        self
    }

    /// What the option accepts, for help and error messages.
    pub fn allowed(&self) -> String {
        match self.kind {
            OptKind::Int { min, max } if max == u64::MAX => format!("a whole number ≥ {min}"),
            OptKind::Int { min, max } => format!("a whole number from {min} to {max}"),
            OptKind::Float { min, max } if max == f64::MAX => format!("a number ≥ {min}"),
            OptKind::Float { min, max } => format!("a number from {min} to {max}"),
            OptKind::Size { min } => format!(
                "a size such as 4K, 16M or 2G (K/M/G/T are powers of 1024), at least {}",
                Bytes(min)
            ),
            OptKind::Bool => "on or off".to_string(),
            OptKind::Choice(words) => format!("one of {}", words.join(", ")),
            OptKind::Text => "text".to_string(),
        }
    }
}

/// A parsed, validated option value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
    Size(u64),
    Bool(bool),
    Word(String),
    Text(String),
    List(Vec<String>),
}

impl Value {
    fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Int(n) | Value::Size(n) => serde_json::json!(n),
            Value::Float(x) => serde_json::json!(x),
            Value::Bool(b) => serde_json::json!(b),
            Value::Word(s) | Value::Text(s) => serde_json::json!(s),
            Value::List(items) => serde_json::json!(items),
        }
    }
}

/// Bad command-line input: each message names the option and what is allowed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CliError {
    #[error("unknown option '--{name}'{hint}; run 'virtperf {context} help' to list the options")]
    UnknownOption {
        name: String,
        context: String,
        hint: String,
    },
    #[error("invalid value '{value}' for --{name}: expected {allowed}")]
    InvalidValue {
        name: String,
        value: String,
        allowed: String,
    },
    #[error("option --{name} needs a value, e.g. --{name}=VALUE")]
    MissingValue { name: String },
    #[error("option --{name} was given twice ('{first}' and '{second}'); give it once")]
    Repeated {
        name: String,
        first: String,
        second: String,
    },
    #[error("{0}")]
    Usage(String),
}

/// The validated options of one invocation, by name.
#[derive(Debug, Clone, Default)]
pub struct Values {
    values: BTreeMap<&'static str, Value>,
    /// Names the user set explicitly (the rest are defaults).
    given: Vec<&'static str>,
    /// The text each explicitly set, non-repeatable option was given as.
    raw: BTreeMap<&'static str, String>,
}

impl Values {
    fn get(&self, name: &str) -> &Value {
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("option --{name} is not in this invocation's tables"))
    }

    pub fn has(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    pub fn was_given(&self, name: &str) -> bool {
        self.given.contains(&name)
    }

    pub fn int(&self, name: &str) -> u64 {
        match self.get(name) {
            Value::Int(n) | Value::Size(n) => *n,
            other => panic!("--{name} is not a number: {other:?}"),
        }
    }

    pub fn float(&self, name: &str) -> f64 {
        match self.get(name) {
            Value::Float(x) => *x,
            Value::Int(n) => *n as f64,
            other => panic!("--{name} is not a number: {other:?}"),
        }
    }

    pub fn size(&self, name: &str) -> Bytes {
        Bytes(self.int(name))
    }

    pub fn flag(&self, name: &str) -> bool {
        match self.get(name) {
            Value::Bool(b) => *b,
            other => panic!("--{name} is not a flag: {other:?}"),
        }
    }

    /// A choice or text value; "" when unset.
    pub fn text(&self, name: &str) -> &str {
        match self.get(name) {
            Value::Word(s) | Value::Text(s) => s,
            other => panic!("--{name} is not text: {other:?}"),
        }
    }

    /// A text value, or None when unset (empty).
    pub fn text_opt(&self, name: &str) -> Option<&str> {
        Some(self.text(name)).filter(|t| !t.is_empty())
    }

    pub fn list(&self, name: &str) -> &[String] {
        match self.get(name) {
            Value::List(items) => items,
            other => panic!("--{name} is not repeatable: {other:?}"),
        }
    }

    /// Sets a value programmatically (suites, agents), validated like typed input.
    pub fn set(&mut self, spec: &OptionSpec, raw: &str) -> Result<(), CliError> {
        let value = parse_value(spec, raw)?;
        self.values.insert(spec.name, value);
        self.raw.insert(spec.name, raw.to_string());
        if !self.given.contains(&spec.name) {
            self.given.push(spec.name);
        }
        Ok(())
    }

    /// The explicitly set options as (name, text given), in name order:
    /// enough to rebuild these values against the same tables.
    pub fn given_texts(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.raw.iter().map(|(k, v)| (*k, v.as_str()))
    }

    /// Only the options `keep` accepts, defaults and given ones alike.
    pub fn subset(&self, keep: impl Fn(&str) -> bool) -> Values {
        Values {
            values: self
                .values
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, v)| (*k, v.clone()))
                .collect(),
            given: self.given.iter().copied().filter(|k| keep(k)).collect(),
            raw: self
                .raw
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, v)| (*k, v.clone()))
                .collect(),
        }
    }

    /// The values as the result document's `params`: snake_case names.
    /// `skip` names options that describe the invocation rather than the
    /// measurement (`json`, `env`); a secret, or the file it is read from,
    /// is never a parameter, whoever declared the option.
    pub fn to_params(&self, skip: &[&str]) -> serde_json::Map<String, serde_json::Value> {
        self.values
            .iter()
            .filter(|(name, _)| !skip.contains(name) && !text::is_secret_or_its_file(name))
            .map(|(name, value)| (name.replace('-', "_"), value.to_json()))
            .collect()
    }
}

fn parse_value(spec: &OptionSpec, raw: &str) -> Result<Value, CliError> {
    let invalid = || CliError::InvalidValue {
        name: spec.name.to_string(),
        value: raw.to_string(),
        allowed: spec.allowed(),
    };
    Ok(match spec.kind {
        OptKind::Int { min, max } => {
            let n: u64 = raw.trim().parse().map_err(|_| invalid())?;
            if n < min || n > max {
                return Err(invalid());
            }
            Value::Int(n)
        }
        OptKind::Float { min, max } => {
            let x: f64 = raw.trim().parse().map_err(|_| invalid())?;
            if !x.is_finite() || x < min || x > max {
                return Err(invalid());
            }
            Value::Float(x)
        }
        OptKind::Size { min } => {
            let b = Bytes::parse(raw).map_err(|_| invalid())?;
            if b.0 < min {
                return Err(invalid());
            }
            Value::Size(b.0)
        }
        OptKind::Bool => match raw.to_ascii_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => Value::Bool(true),
            "off" | "false" | "no" | "0" => Value::Bool(false),
            _ => return Err(invalid()),
        },
        OptKind::Choice(words) => {
            if !words.contains(&raw) {
                return Err(invalid());
            }
            Value::Word(raw.to_string())
        }
        OptKind::Text => Value::Text(raw.to_string()),
    })
}

/// The defaults of every option in `tables`.
pub fn defaults(tables: &[&[OptionSpec]]) -> Values {
    let mut values = Values::default();
    for spec in tables.iter().flat_map(|t| t.iter()) {
        let value = if spec.repeatable {
            Value::List(Vec::new())
        } else if spec.default.is_empty() {
            match spec.kind {
                OptKind::Bool => Value::Bool(false),
                OptKind::Text | OptKind::Choice(_) => Value::Text(String::new()),
                _ => Value::Int(0),
            }
        } else {
            parse_value(spec, spec.default).unwrap_or_else(|e| {
                panic!("default of --{} does not parse: {e}", spec.name);
            })
        };
        values.values.insert(spec.name, value);
    }
    values
}

/// Parses `args` against the option tables. Options are `--name=value`,
/// `--name value`, or `--flag` for on/off options; anything else is returned
/// as a positional word, in order. `context` names the command in messages.
pub fn parse(
    tables: &[&[OptionSpec]],
    args: &[String],
    context: &str,
) -> Result<(Values, Vec<String>), CliError> {
    let mut values = defaults(tables);
    let mut positionals = Vec::new();
    let mut seen: BTreeMap<&'static str, String> = BTreeMap::new();
    let find = |name: &str| {
        tables
            .iter()
            .flat_map(|t| t.iter())
            .find(|spec| spec.name == name)
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(body) = arg.strip_prefix("--") else {
            positionals.push(arg.clone());
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let spec = find(name).ok_or_else(|| CliError::UnknownOption {
            name: name.to_string(),
            context: context.to_string(),
            hint: suggestion(name, tables),
        })?;
        let raw = match (inline, spec.kind) {
            (Some(v), _) => v,
            (None, OptKind::Bool) => "on".to_string(),
            (None, _) => match args.get(i) {
                Some(next) if !next.starts_with("--") => {
                    i += 1;
                    next.clone()
                }
                _ => {
                    return Err(CliError::MissingValue {
                        name: name.to_string(),
                    })
                }
            },
        };
        if spec.repeatable {
            if let Value::List(items) = values.values.get_mut(spec.name).expect("defaulted") {
                items.push(parse_value(spec, &raw).map(|_| raw.clone())?);
            }
        } else {
            if let Some(first) = seen.get(spec.name) {
                if *first != raw {
                    return Err(CliError::Repeated {
                        name: name.to_string(),
                        first: first.clone(),
                        second: raw,
                    });
                }
            }
            values.set(spec, &raw)?;
            seen.insert(spec.name, raw);
        }
        if !values.given.contains(&spec.name) {
            values.given.push(spec.name);
        }
    }
    Ok((values, positionals))
}

/// " (did you mean '--x'?)" for a near miss, else "".
fn suggestion(name: &str, tables: &[&[OptionSpec]]) -> String {
    nearest(name, tables.iter().flat_map(|t| t.iter()).map(|s| s.name))
        .map(|n| format!(" (did you mean '--{n}'?)"))
        .unwrap_or_default()
}

/// The candidate a mistyped word most likely meant (a few edits away), for
/// "did you mean" in every refusal of a name: options, commands,
/// workloads, environments.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= 2.max(word.len() / 4))
        .min()
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Help text for a table: one line per option with its default.
pub fn render_help(title: &str, table: &[OptionSpec]) -> String {
    let mut out = format!("{title}:\n");
    for spec in table {
        let lhs = match spec.kind {
            OptKind::Bool => format!("  --{}[=on|off]", spec.name),
            OptKind::Int { .. } | OptKind::Float { .. } => format!("  --{}=N", spec.name),
            OptKind::Size { .. } => format!("  --{}=SIZE", spec.name),
            OptKind::Choice(_) => format!("  --{}=WORD", spec.name),
            OptKind::Text => format!("  --{}=TEXT", spec.name),
        };
        let default = if spec.default.is_empty() {
            String::new()
        } else {
            format!(" [{}]", spec.default)
        };
        let allowed = match spec.kind {
            OptKind::Choice(words) => format!(" ({})", words.join("|")),
            _ => String::new(),
        };
        out.push_str(&format!("{lhs:<34} {}{allowed}{default}\n", spec.help));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[OptionSpec] = &[
        OptionSpec::new(
            "threads",
            OptKind::Int { min: 1, max: 1000 },
            "1",
            "threads",
        ),
        OptionSpec::new(
            "time",
            OptKind::Float {
                min: 0.0,
                max: f64::MAX,
            },
            "10",
            "seconds",
        ),
        OptionSpec::new("block-size", OptKind::Size { min: 8 }, "1K", "block"),
        OptionSpec::new("mode", OptKind::Choice(&["seq", "rnd"]), "seq", "mode"),
        OptionSpec::new("json", OptKind::Bool, "off", "json"),
        OptionSpec::new("env", OptKind::Text, "", "env").repeatable(),
    ];

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_apply_and_values_parse() {
        let (v, pos) = parse(
            &[TABLE],
            &args(&["--threads=4", "--block-size", "4K", "--json", "run"]),
            "x",
        )
        .unwrap();
        assert_eq!(v.int("threads"), 4);
        assert_eq!(v.float("time"), 10.0);
        assert_eq!(v.size("block-size"), Bytes(4096));
        assert!(v.flag("json"));
        assert_eq!(v.text("mode"), "seq");
        assert_eq!(pos, vec!["run"]);
        assert!(v.was_given("threads") && !v.was_given("time"));
    }

    #[test]
    fn every_bad_input_names_the_option() {
        for (bad, option) in [
            ("--threads=0", "--threads"),
            ("--time=-1", "--time"),
            ("--time=abc", "--time"),
            ("--block-size=12Q", "--block-size"),
            ("--mode=zig", "--mode"),
            ("--json=maybe", "--json"),
        ] {
            let err = parse(&[TABLE], &args(&[bad]), "x").unwrap_err();
            assert!(err.to_string().contains(option), "{bad}: {err}");
        }
    }

    #[test]
    fn unknown_options_get_a_suggestion() {
        let err = parse(&[TABLE], &args(&["--thread=2"]), "cpu").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("'--thread'"), "{text}");
        assert!(text.contains("did you mean '--threads'"), "{text}");
        assert!(text.contains("virtperf cpu help"), "{text}");
    }

    #[test]
    fn repeatable_options_collect_and_others_refuse_conflicts() {
        let (v, _) = parse(&[TABLE], &args(&["--env=host", "--env", "docker"]), "x").unwrap();
        assert_eq!(v.list("env"), ["host", "docker"]);
        let err = parse(&[TABLE], &args(&["--threads=1", "--threads=2"]), "x").unwrap_err();
        assert!(matches!(err, CliError::Repeated { .. }));
    }

    #[test]
    fn params_are_snake_case_without_skipped_options() {
        let (v, _) = parse(&[TABLE], &args(&["--block-size=2K"]), "x").unwrap();
        let params = v.to_params(&["json", "env"]);
        assert_eq!(params["block_size"], serde_json::json!(2048));
        assert!(!params.contains_key("json"));
    }

    #[test]
    fn secrets_and_their_files_are_never_params_whoever_declares_them() {
        // Options as a Lua script declares its own (issue 53, item 4): no
        // list names them, the one secret test does.
        const SCRIPT: &[OptionSpec] = &[
            OptionSpec::new("api-password", OptKind::Text, "", "a password"),
            OptionSpec::new("token-secret", OptKind::Text, "", "a token"),
            OptionSpec::new("token-secret-file", OptKind::Text, "", "its file"),
            OptionSpec::new("api-user", OptKind::Text, "", "not one"),
        ];
        let given = args(&[
            "--api-password=hunter2",
            "--token-secret=s3cr3t",
            "--token-secret-file=/run/t",
            "--api-user=x",
        ]);
        let (v, _) = parse(&[SCRIPT], &given, "x").unwrap();
        let params = v.to_params(&[]);
        let shown = serde_json::to_string(&params).unwrap();
        for hidden in [
            "hunter2",
            "s3cr3t",
            "/run/t",
            "api_password",
            "token_secret",
        ] {
            assert!(!shown.contains(hidden), "{hidden} in {shown}");
        }
        assert_eq!(params["api_user"], "x");
    }
}
