//! sysbench's words for a command line its option parser refuses, one
//! place for the persona's built-in tests (`sysbench/`) and its scripts
//! (`script.rs`): "invalid option: ARG" with the argument as typed, or
//! "Invalid value for the 'NAME' option: 'VALUE'" with the name in
//! underscores. sysbench reads `_` and `-` in an option's name alike
//! (`--cpu_max_prime` is `--cpu-max-prime`), so an argument is found by
//! its name spelled with dashes.

use crate::core::options::CliError;

/// An option's name as sysbench reads it, with dashes: `cpu-max-prime`
/// for `--cpu_max_prime=5`; None for a word that is no option.
pub fn name_of(arg: &str) -> Option<String> {
    let body = arg.strip_prefix("--")?;
    Some(body.split('=').next().unwrap_or(body).replace('_', "-"))
}

/// `arg` with its option name spelled with dashes (the value as it is),
/// as virtperf's parser takes it; a word unchanged.
pub fn dashed(arg: &str) -> String {
    match (name_of(arg), arg.split_once('=')) {
        (Some(name), Some((_, value))) => format!("--{name}={value}"),
        (Some(name), None) => format!("--{name}"),
        (None, _) => arg.to_string(),
    }
}

/// The first of `args` naming the option `name`, as typed.
pub fn typed<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let name = name.replace('_', "-");
    args.iter()
        .find(|a| name_of(a).is_some_and(|n| n == name))
        .map(String::as_str)
}

/// sysbench's line for a value its parser cannot read as the option's type.
pub fn invalid_value(name: &str, value: &str) -> String {
    format!(
        "Invalid value for the '{}' option: '{value}'",
        name.replace('-', "_")
    )
}

/// sysbench's words (without the newline) for the parser's refusal `e`
/// of `args`, the command line as typed.
pub fn words(e: &CliError, args: &[String]) -> String {
    let invalid_option = |name: &str| {
        let typed = typed(args, name).map_or_else(|| format!("--{name}"), str::to_string);
        format!("invalid option: {typed}")
    };
    match e {
        CliError::UnknownOption { name, .. } => invalid_option(name),
        // A flag's value sysbench does not read as on or off: its option
        // parser does not take the argument.
        CliError::InvalidValue { name, allowed, .. } if allowed == "on or off" => {
            invalid_option(name)
        }
        CliError::InvalidValue { name, value, .. } => invalid_value(name, value),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::text::owned as s;

    fn unknown(name: &str) -> CliError {
        CliError::UnknownOption {
            name: name.into(),
            context: "cpu".into(),
            hint: String::new(),
        }
    }

    #[test]
    fn an_option_is_found_as_typed_whichever_its_spelling() {
        let args = s(&["cpu", "--foo_bar=1", "--foo-bar=2", "run"]);
        assert_eq!(
            words(&unknown("foo-bar"), &args),
            "invalid option: --foo_bar=1"
        );
        assert_eq!(
            words(&unknown("nothing-typed"), &args),
            "invalid option: --nothing-typed"
        );
        let flag = CliError::InvalidValue {
            name: "skip-trx".into(),
            value: "maybe".into(),
            allowed: "on or off".into(),
        };
        assert_eq!(
            words(&flag, &s(&["--skip_trx=maybe"])),
            "invalid option: --skip_trx=maybe"
        );
        let number = CliError::InvalidValue {
            name: "cpu-max-prime".into(),
            value: "x".into(),
            allowed: "an integer".into(),
        };
        assert_eq!(
            words(&number, &s(&["--cpu-max-prime=x"])),
            "Invalid value for the 'cpu_max_prime' option: 'x'"
        );
    }

    #[test]
    fn names_are_read_with_dashes_values_left_alone() {
        assert_eq!(dashed("--cpu_max_prime=a_b"), "--cpu-max-prime=a_b");
        assert_eq!(dashed("--skip_trx"), "--skip-trx");
        assert_eq!(dashed("run_it"), "run_it");
        assert_eq!(name_of("--max_time=1").as_deref(), Some("max-time"));
        assert_eq!(name_of("-"), None);
    }
}
