//! sysbench's general options as its `init()` reads them, before the
//! banner: `--config-file` (options read from a file where it stands on
//! the command line), the values it refuses with a FATAL line
//! (`--forced-shutdown`, `--thread-stack-size`, `--report-checkpoints`,
//! `--percentile`), whole numbers it will not parse, and the general
//! options a built-in test takes only to pass by.

use super::help::general_kind;
use super::Answer;
use crate::cli::refusal;
use crate::engine;

/// The command line with each `--config-file=FILE` replaced by the
/// options FILE sets, as sysbench reads it: one `name=value` a line (the
/// name exactly as written, before the `=`), the value's words separated
/// by blanks or commas (a list option keeps them all, any other the
/// first; quotes keep a word whole), `#` starting a comment. Only the
/// general options count (sysbench sets a test's own options to their
/// defaults after reading the file), others are passed over, and a flag
/// named with any value is on. A file that cannot be read is said so on
/// standard error (`FILE: No such file or directory`) and passed over.
pub fn expand_config_files(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for a in args {
        let Some(path) = a.strip_prefix("--config-file=") else {
            if a != "--config-file" {
                out.push(a.clone());
            }
            continue;
        };
        match std::fs::read(path) {
            Ok(bytes) => out.extend(config_options(&String::from_utf8_lossy(&bytes))),
            Err(e) => {
                let why = std::io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EIO));
                // perror's words: strerror without Rust's "(os error N)".
                let text = why.to_string();
                let text = text.split(" (os error").next().unwrap_or(&text);
                eprintln!("{path}: {text}");
            }
        }
    }
    out
}

/// The options a config file's text sets, as command-line arguments.
fn config_options(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once('=') else {
            continue;
        };
        let name = name.replace('_', "-");
        let Some(kind) = general_kind(&name) else {
            continue;
        };
        if matches!(name.as_str(), "help" | "version" | "config-file") {
            continue;
        }
        let words = config_words(rest);
        if kind == "[=on|off]" {
            // sysbench keeps the words; a flag with any is on.
            if !words.is_empty() {
                out.push(format!("--{name}=on"));
            }
        } else if kind == "=[LIST,...]" {
            out.push(format!("--{name}={}", words.join(",")));
        } else if let Some(first) = words.first() {
            out.push(format!("--{name}={first}"));
        }
    }
    out
}

/// A config line's value as words: blanks and commas separate them, a
/// quote keeps one whole, `#` ends the line.
fn config_words(mut rest: &str) -> Vec<String> {
    let mut words = Vec::new();
    loop {
        rest = rest.trim_start();
        let Some(c) = rest.chars().next() else {
            break;
        };
        if c == '#' {
            break;
        }
        if c == '\'' || c == '"' {
            let Some(end) = rest[1..].find(c) else {
                break;
            };
            words.push(rest[1..1 + end].to_string());
            rest = &rest[1 + end + 1..];
            rest = rest.split_once(',').map_or("", |(_, r)| r);
            continue;
        }
        let end = rest
            .find(|ch: char| ch == ',' || ch.is_whitespace())
            .unwrap_or(rest.len());
        words.push(rest[..end].to_string());
        rest = &rest[(end + 1).min(rest.len())..];
    }
    words
}

/// The general options sysbench reads as whole numbers, in the order its
/// `init()` and `log_init()` read them.
const INTEGERS: &[&str] = &[
    "num-threads",
    "threads",
    "max-requests",
    "events",
    "max-time",
    "time",
    "tx-rate",
    "rate",
    "report-interval",
    "percentile",
];

/// What sysbench answers before its banner to a general option's value it
/// refuses: a whole number it cannot read (on standard error), or its own
/// FATAL line (on standard output); exit 1 either way.
pub fn refused(args: &[String], warnings: &str) -> Option<Answer> {
    let value = |name: &str| {
        args.iter().rev().find_map(|a| {
            let body = a.strip_prefix("--")?;
            let (n, v) = body.split_once('=').unwrap_or((body, ""));
            (n.replace('_', "-") == name).then(|| v.to_string())
        })
    };
    let fatal = |text: String| {
        Some(Answer {
            stdout: format!("{warnings}{text}"),
            code: 1,
            ..Answer::default()
        })
    };
    let int = |name: &str| -> Result<Option<i64>, Answer> {
        match value(name) {
            None => Ok(None),
            // Given without a value, an int option holds none: 0.
            Some(v) if v.is_empty() => Ok(Some(0)),
            // sysbench's strtol: the whole value, within an int.
            Some(v) => match v.parse::<i64>() {
                Ok(n) if i32::try_from(n).is_ok() => Ok(Some(n)),
                _ => Err(Answer {
                    stdout: warnings.to_string(),
                    stderr: format!("{}\n", refusal::invalid_value(name, &v)),
                    code: 1,
                }),
            },
        }
    };
    let mut ints = std::collections::BTreeMap::new();
    for name in INTEGERS {
        match int(name) {
            Ok(Some(n)) => {
                ints.insert(*name, n);
            }
            Ok(None) => {}
            Err(answer) => return Some(answer),
        }
    }
    let threads = ints
        .get("num-threads")
        .filter(|n| **n > 1)
        .or(ints.get("threads"))
        .copied()
        .unwrap_or(1);
    if threads <= 0 {
        return fatal(format!(
            "FATAL: Invalid value for --threads: {threads}.\n\n"
        ));
    }
    let time = ints
        .get("max-time")
        .filter(|n| **n > 0)
        .or(ints.get("time"))
        .copied()
        .unwrap_or(10);
    if time > 0 {
        if let Some(v) = value("forced-shutdown") {
            if engine::forced_shutdown(&v, time as u64).is_err() {
                return fatal(format!(
                    "FATAL: Invalid value for --forced-shutdown: '{v}'\n"
                ));
            }
        }
    }
    if let Some(v) = value("thread-stack-size") {
        let size = engine::sysbench_size(&v) as i32;
        if size <= 0 {
            return fatal(format!(
                "FATAL: Invalid value for thread-stack-size: {size}.\n\n"
            ));
        }
    }
    if let Some(v) = value("report-checkpoints") {
        if let Err(item) = engine::checkpoints(&v) {
            return fatal(if item.starts_with("more than") {
                format!(
                    "FATAL: Too many checkpoints in --report-checkpoints (up to {} can be defined)\n",
                    engine::MAX_CHECKPOINTS
                )
            } else {
                format!("FATAL: Invalid value for --report-checkpoints: '{item}'\n")
            });
        }
    }
    if let Some(p) = ints.get("percentile") {
        if !(0..=100).contains(p) {
            return fatal(format!("FATAL: Invalid value for --percentile: {p}\n"));
        }
        let histogram =
            value("histogram").is_some_and(|v| matches!(v.as_str(), "" | "on" | "true" | "1"));
        if *p == 0 && histogram {
            return fatal("FATAL: --histogram cannot be used with --percentile=0\n".into());
        }
    }
    None
}

/// A general option given bare that sysbench reads as set without a
/// value (`--forced-shutdown`: 5% of the time), spelled for virtperf's
/// parser with an empty value.
pub fn spell_bare(arg: &str) -> String {
    match arg {
        "--forced-shutdown" | "--report-checkpoints" | "--thread-stack-size" => format!("{arg}="),
        _ => arg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::text::owned as s;

    #[test]
    fn a_config_file_sets_general_options_as_sysbench_reads_it() {
        let text = "threads=2\nevents=7 # seven\n# a comment\ncpu-max-prime=500\n\
                    threads = 3\nmysql-host=a, b\nforced_shutdown='5%'\ndebug=off\nnothing\n";
        assert_eq!(
            config_options(text),
            s(&[
                "--threads=2",
                "--events=7",
                "--mysql-host=a,b",
                "--forced-shutdown=5%",
                "--debug=on"
            ])
        );
    }

    #[test]
    fn refusals_are_sysbench_words_before_the_banner() {
        let answer = |args: &[&str]| refused(&s(args), "").map(|a| (a.stdout, a.stderr));
        assert_eq!(
            answer(&["--forced-shutdown=abc"]),
            Some((
                "FATAL: Invalid value for --forced-shutdown: 'abc'\n".into(),
                String::new()
            ))
        );
        assert_eq!(answer(&["--forced-shutdown=abc", "--time=0"]), None);
        assert_eq!(
            answer(&["--thread-stack-size=abc"]),
            Some((
                "FATAL: Invalid value for thread-stack-size: 0.\n\n".into(),
                String::new()
            ))
        );
        assert_eq!(
            answer(&["--report-checkpoints=1,-2"]),
            Some((
                "FATAL: Invalid value for --report-checkpoints: '-2'\n".into(),
                String::new()
            ))
        );
        assert_eq!(
            answer(&["--time=1.5"]),
            Some((
                String::new(),
                "Invalid value for the 'time' option: '1.5'\n".into()
            ))
        );
        assert_eq!(
            answer(&["--percentile=101"]),
            Some((
                "FATAL: Invalid value for --percentile: 101\n".into(),
                String::new()
            ))
        );
        assert_eq!(answer(&["--percentile=0", "--forced-shutdown=5%"]), None);
        assert_eq!(
            answer(&["--threads"]),
            Some((
                "FATAL: Invalid value for --threads: 0.\n\n".into(),
                String::new()
            ))
        );
    }
}
