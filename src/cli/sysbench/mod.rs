//! The `sysbench` persona: started under that name (a link or a copy of
//! this binary), virtperf answers a command line as sysbench 1.0.20 does —
//! its banner, its messages on the stream it uses, its exit code 1 — and
//! runs what it accepts through the usual parser. Learned from running
//! Debian's sysbench side by side (`tests/sysbench_compat.rs` compares the
//! two on every case below). `general.rs` reads the general options as
//! sysbench's `init()` does; `help.rs` prints its `--help`.

mod general;
mod help;

use super::refusal::{self, name_of};
use super::{parse_request, summary, Request, SYSBENCH_VERSION};
use crate::core::options::CliError;
use crate::workload::{self, Command, WorkloadDef};

/// What the persona answers instead of running anything: the text for
/// each stream and the exit code.
#[derive(Debug, Default, PartialEq)]
pub struct Answer {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}

/// sysbench 0.4's option names, as 1.0 still takes them with a warning on
/// standard output before its banner (last given, first warned), and the
/// default above which the old option's value is taken over the new one's.
const DEPRECATED: &[(&str, &str, i64)] = &[
    ("--tx-rate", "--rate", 0),
    ("--max-requests", "--events", 0),
    ("--max-time", "--time", 0),
    ("--num-threads", "--threads", 1),
];

/// The deprecated options read as sysbench's `init()` reads them: an old
/// name's value becomes the new option's where it is above its default
/// (`--num-threads=2` beats `--threads=3`, `--max-requests=0` leaves
/// `--events` alone); otherwise the old option is passed by.
fn read_deprecated(args: &[String]) -> Vec<String> {
    let named = |a: &String, n: &str| name_of(a).is_some_and(|m| n.strip_prefix("--") == Some(&m));
    let mut out = args.to_vec();
    for (old, new, default) in DEPRECATED {
        let Some(i) = out.iter().position(|a| named(a, old)) else {
            continue;
        };
        let value = out
            .remove(i)
            .split_once('=')
            .map_or("", |(_, v)| v)
            .to_string();
        if value.parse::<i64>().is_ok_and(|v| v > *default) {
            out.retain(|a| !named(a, new));
            out.push(format!("{new}={value}"));
        }
    }
    out
}

/// `args` with sysbench's default `--db-driver` (mysql) where they name
/// none: virtperf's own default is its embedded SQLite.
fn with_default_driver(mut args: Vec<String>) -> Vec<String> {
    if !args
        .iter()
        .any(|a| name_of(a).as_deref() == Some("db-driver"))
    {
        args.push(format!("--db-driver={}", help::DEFAULT_DRIVER));
    }
    args
}

/// The request to run, with what sysbench prints before it (warnings, and
/// the banner where the request does not print its own: a run prints it
/// before its options), or the answer that ends the command.
pub fn front(args: &[String]) -> Result<(String, Request), Answer> {
    let args: Vec<String> = general::expand_config_files(args)
        .iter()
        .map(|a| general::spell_bare(a))
        .collect();
    let args = &last_of_each(&args);
    if args.iter().any(|a| a == "--help" || a == "--help=on") {
        return Err(Answer {
            stdout: help::general_help(),
            ..Answer::default()
        });
    }
    if args.iter().any(|a| a == "--version") {
        return Err(Answer {
            stdout: format!("sysbench {SYSBENCH_VERSION}\n"),
            ..Answer::default()
        });
    }
    let warnings = deprecation_warnings(args);
    // What sysbench's init() refuses, before its banner (virtperf reads
    // --threads=0 as one thread per CPU; sysbench refuses it).
    if let Some(answer) = general::refused(args, &warnings) {
        return Err(answer);
    }
    // sysbench's levels: the banner is a notice (3), a warning is 2.
    let banner = match verbosity(args) >= 3 {
        true => format!("{}\n\n", super::banner()),
        false => String::new(),
    };
    let mut front = Front {
        args,
        head: format!("{warnings}{banner}"),
        warnings,
        stderr: String::new(),
    };
    let mut words: Vec<&str> = Vec::new();
    for a in args {
        if let Some(test) = a.strip_prefix("--test=") {
            front.stderr.push_str("WARNING: the --test option is deprecated. You can pass a script name or path on the command line without any options.\n");
            words.insert(0, test);
        } else if !a.starts_with('-') || a == "-" {
            // `-`: the script on standard input.
            words.push(a);
        }
    }
    if let Some(extra) = words.get(2) {
        // Refused before the --test warning is said.
        return Err(Answer {
            stderr: format!("Unrecognized command line argument: {extra}\n"),
            code: 1,
            ..Answer::default()
        });
    }
    // No test named: sysbench reads a script from standard input.
    let test = words.first().copied().unwrap_or("-");
    // A test that is no built-in may be a module on LUA_PATH, as in sysbench.
    let module = (test != "-" && !workload::lua::is_script(test) && workload::find(test).is_none())
        .then(|| module_path(test))
        .flatten();
    if test == "-" || workload::lua::is_script(test) || module.is_some() {
        return front.script(test, module.as_deref());
    }
    let Some(def) = workload::find(test) else {
        let head = std::mem::take(&mut front.head);
        return Err(front.refuse(
            format!("{head}FATAL: Cannot find benchmark '{test}': no such built-in test, file or module\n"),
            String::new(),
        ));
    };
    front.built_in(def, words.get(1).copied())
}

/// sysbench's warnings for its 0.4 option names, before it reads
/// --verbosity: at any level (last given, first warned).
fn deprecation_warnings(args: &[String]) -> String {
    let mut warnings = String::new();
    for a in args.iter().rev() {
        let name = name_of(a).map(|n| format!("--{n}"));
        if let Some((old, new, _)) = DEPRECATED
            .iter()
            .find(|(old, _, _)| Some(*old) == name.as_deref())
        {
            warnings.push_str(&format!(
                "WARNING: {old} is deprecated, use {new} instead\n"
            ));
        }
    }
    warnings
}

/// A command line on its way through the persona: what is printed before
/// the request (warnings, then the banner) and on standard error.
struct Front<'a> {
    args: &'a [String],
    /// The warnings, then the banner at notice level.
    head: String,
    warnings: String,
    /// The --test warning, printed on standard error before anything runs.
    stderr: String,
}

impl Front<'_> {
    /// sysbench's refusal: exit 1, `stdout` then this front's warnings on
    /// standard error before `stderr`.
    fn refuse(&self, stdout: String, stderr: String) -> Answer {
        Answer {
            stdout,
            stderr: format!("{}{stderr}", self.stderr),
            code: 1,
        }
    }

    /// A Lua script (a path, a module on LUA_PATH, or `-`, standard input).
    fn script(self, test: &str, module: Option<&str>) -> Result<(String, Request), Answer> {
        let mut rest = self.args.to_vec();
        if let Some(i) = rest.iter().position(|a| a == test) {
            rest.remove(i);
        }
        // sysbench's general options virtperf's scripts take to pass by.
        rest.retain(|a| {
            !a.starts_with("--test=")
                && !name_of(a).is_some_and(|n| ["db-debug", "rand-spec-iter"].contains(&n.as_str()))
        });
        let rest = with_default_driver(read_deprecated(&rest));
        if !self.stderr.is_empty() {
            eprint!("{}", self.stderr);
        }
        match super::script::parse(module.unwrap_or(test), &rest, true) {
            Ok(request) => Ok((self.head, request)),
            Err(e) => Err(Answer {
                stdout: self.head,
                stderr: format!("{}\n", refusal::words(&e, self.args)),
                code: 1,
            }),
        }
    }

    /// A built-in test and its command word, checked as sysbench checks
    /// them before the usual parser reads the options.
    fn built_in(
        self,
        def: &'static WorkloadDef,
        word: Option<&str>,
    ) -> Result<(String, Request), Answer> {
        let (test, head) = (def.name, &self.head);
        let command = match word {
            None => {
                return Err(self.refuse(
                    head.clone(),
                    format!(
                    "The '{test}' test requires a command argument. See 'sysbench {test} help'\n"
                ),
                ))
            }
            Some("help") => {
                let text = match def.sysbench {
                    Some(s) => format!("{test} options:\n{}\n", s.options),
                    None => super::workload_help(def),
                };
                return Err(Answer {
                    stdout: format!("{head}{text}"),
                    stderr: self.stderr,
                    code: 0,
                });
            }
            Some(word) => Command::parse(word)
                .ok_or_else(|| self.refuse(head.clone(), format!("Unknown command: {word}\n")))?,
        };
        // sysbench checks a test's required options when it runs.
        if let (Command::Run, Some(s)) = (command, def.sysbench) {
            if let Some(name) = s.required_for_run.iter().find(|n| {
                !self
                    .args
                    .iter()
                    .any(|a| a.contains('=') && name_of(a).is_some_and(|m| m == **n))
            }) {
                return Err(self.refuse(
                    format!(
                        "{head}FATAL: Missing required argument: --{name}\n\n{test} options:\n{}\n",
                        s.options
                    ),
                    String::new(),
                ));
            }
        }
        if matches!(command, Command::Prepare | Command::Cleanup) && !def.needs.prepare {
            return Err(self.refuse(
                head.clone(),
                format!(
                    "'{test}' test does not implement the '{}' command.\n",
                    command.name()
                ),
            ));
        }
        self.parsed(def)
    }

    /// The built-in test's request from the usual parser, with sysbench's
    /// general options it has no use for taken out.
    fn parsed(self, def: &'static WorkloadDef) -> Result<(String, Request), Answer> {
        let (given, rand_seed, validate) = for_the_parser(def, self.args);
        let head = &self.head;
        match parse_request(&given) {
            Ok(mut request) => {
                if let Request::Workload(inv) = &mut request {
                    inv.rand_seed = rand_seed;
                    inv.validate = validate;
                }
                if let Some(fatal) = unknown_driver(&request) {
                    return Err(self.refuse(format!("{head}{fatal}"), String::new()));
                }
                if !self.stderr.is_empty() {
                    eprint!("{}", self.stderr);
                }
                let own = matches!(&request, Request::Workload(inv) if inv.prints_banner());
                Ok((if own { self.warnings } else { self.head }, request))
            }
            Err(e) => match own_check(&e, self.args) {
                Some(fatal) => Err(self.refuse(format!("{head}{fatal}"), String::new())),
                None => {
                    Err(self.refuse(head.clone(), format!("{}\n", refusal::words(&e, self.args))))
                }
            },
        }
    }
}

/// The arguments for virtperf's parser: spelled with dashes (sysbench
/// takes `_` alike; refusals quote them as typed), sysbench's default
/// driver where the test connects, and without the general options a
/// built-in test has no use for (the random generator's, the
/// database's) — of which a seed and --validate are still said before the
/// run, so they are returned beside.
fn for_the_parser(def: &WorkloadDef, args: &[String]) -> (Vec<String>, u64, bool) {
    let mut rand_seed = 0;
    let mut validate = false;
    let mut given = read_deprecated(args);
    if def.accepts("db-driver") {
        given = with_default_driver(given);
    }
    let parsed = given
        .iter()
        .map(|a| refusal::dashed(a))
        .filter(|a| {
            let Some(body) = a.strip_prefix("--") else {
                return true;
            };
            let (name, value) = body.split_once('=').unwrap_or((body, ""));
            if help::general_kind(name).is_none() || def.accepts(name) || OURS.contains(&name) {
                return true;
            }
            // A test that connects refuses the driver options it does not
            // implement rather than connect otherwise than asked.
            if def.accepts("db-driver") && UNIMPLEMENTED.contains(&name) {
                return true;
            }
            match name {
                "rand-seed" => rand_seed = value.parse().unwrap_or(0),
                "validate" => validate = matches!(value, "" | "on" | "true" | "1"),
                _ => {}
            }
            false
        })
        .collect();
    (parsed, rand_seed, validate)
}

/// What sysbench prints after its banner for a `--db-driver` it has no
/// driver for: its OLTP scripts ask for the driver as the command starts
/// (for a run, in each thread, once the options are said), and fail with a
/// FATAL line. virtperf runs these tests without the scripts, so it leaves
/// out the line naming the script's call that failed. Of a run's threads
/// it says the first's: sysbench exits once one has failed, and how many
/// others print theirs first is a race (with two, mostly one).
fn unknown_driver(request: &Request) -> Option<String> {
    let Request::Workload(inv) = request else {
        return None;
    };
    let values = &inv.job.values;
    if !values.has("db-driver") {
        return None;
    }
    let name = crate::workload::oltp::Target::unknown_driver(values)?;
    let fatal = format!("FATAL: invalid database driver name: '{name}'\n");
    if inv.job.command != Command::Run {
        return Some(fatal);
    }
    let mut mode = summary::RunMode::of(values);
    mode.rand_seed = mode.rand_seed.max(inv.rand_seed);
    mode.validate |= inv.validate;
    let options = if inv.prints_text() {
        format!(
            "{}Initializing worker threads...\n\n",
            summary::preamble(&mode)
        )
    } else {
        String::new()
    };
    Some(format!(
        "{options}{fatal}FATAL: Thread initialization failed!\n"
    ))
}

/// Values a sysbench test checks itself, with its own FATAL line on
/// standard output (`{}` is the value as typed), rather than its option
/// parser's message.
const OWN_CHECKS: &[(&str, &str)] = &[
    (
        "memory-block-size",
        "Invalid value for memory-block-size: {}",
    ),
    ("file-test-mode", "Invalid IO operations mode: {}."),
];

/// sysbench's FATAL line for a value one of its tests refuses itself.
pub fn own_check(e: &CliError, args: &[String]) -> Option<String> {
    let CliError::InvalidValue { name, .. } = e else {
        return None;
    };
    let (_, text) = OWN_CHECKS.iter().find(|(n, _)| n == name)?;
    let typed = args
        .iter()
        .rev()
        .find(|a| name_of(a).is_some_and(|n| n == *name))?
        .split_once('=')?
        .1;
    Some(format!("FATAL: {}\n", text.replace("{}", typed)))
}

/// The file `require(name)` would load from `LUA_PATH`'s templates.
fn module_path(name: &str) -> Option<String> {
    if name.starts_with('-') || name.contains('/') {
        return None;
    }
    let path = std::env::var("LUA_PATH").ok()?;
    path.split(';')
        .filter(|t| t.contains('?'))
        .map(|t| t.replace('?', &name.replace('.', "/")))
        .find(|p| std::path::Path::new(p).is_file())
}

/// `--verbosity` as given last, sysbench's 3 by default.
pub fn verbosity(args: &[String]) -> u64 {
    args.iter()
        .rev()
        .find_map(|a| a.strip_prefix("--verbosity=")?.parse::<u64>().ok())
        .unwrap_or(3)
}

/// The arguments with only the last of a repeated option: sysbench takes
/// the last, where virtperf refuses a repeat (`--cpu_max_prime` repeats
/// `--cpu-max-prime`: sysbench reads `_` as `-`).
fn last_of_each(args: &[String]) -> Vec<String> {
    args.iter()
        .enumerate()
        .filter(|(i, a)| {
            name_of(a).is_none() || !args[i + 1..].iter().any(|b| name_of(b) == name_of(a))
        })
        .map(|(_, a)| a.clone())
        .collect()
}

/// sysbench's MySQL options virtperf's driver does not implement: refused
/// where a connection is made, as for a script.
const UNIMPLEMENTED: &[&str] = &[
    "mysql-ssl",
    "mysql-ssl-cipher",
    "mysql-compression",
    "mysql-debug",
    "mysql-ignore-errors",
];

/// Options of virtperf's command line that sysbench also has (`help`,
/// `version`, `verbosity`, `histogram`): they stay for its parser.
const OURS: &[&str] = &["help", "version", "verbosity", "histogram"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::text::owned;

    fn answer(args: &[&str]) -> Answer {
        let args: Vec<String> = owned(args);
        match front(&args) {
            Err(a) => a,
            Ok(_) => panic!("{args:?} was accepted"),
        }
    }

    #[test]
    fn refusals_read_as_sysbench_writes_them() {
        let a = answer(&["cpu", "--threads=0", "run"]);
        assert_eq!(
            (a.code, a.stdout.as_str()),
            (1, "FATAL: Invalid value for --threads: 0.\n\n")
        );
        let a = answer(&["cpu"]);
        assert_eq!(a.code, 1);
        assert_eq!(
            a.stderr,
            "The 'cpu' test requires a command argument. See 'sysbench cpu help'\n"
        );
        assert!(a.stdout.ends_with(")\n\n"), "{a:?}");
        assert_eq!(
            answer(&["cpu", "prepare"]).stderr,
            "'cpu' test does not implement the 'prepare' command.\n"
        );
        assert_eq!(answer(&["cpu", "foo"]).stderr, "Unknown command: foo\n");
        let extra = answer(&["cpu", "run", "extra"]);
        assert_eq!(
            (extra.stdout.as_str(), extra.stderr.as_str()),
            ("", "Unrecognized command line argument: extra\n")
        );
        assert!(answer(&["nosuch", "run"]).stdout.ends_with(
            "FATAL: Cannot find benchmark 'nosuch': no such built-in test, file or module\n"
        ));
        assert_eq!(
            answer(&["cpu", "--bogus=3", "run"]).stderr,
            "invalid option: --bogus=3\n"
        );
        assert_eq!(
            answer(&["cpu", "--cpu-max-prime=abc", "run"]).stderr,
            "Invalid value for the 'cpu_max_prime' option: 'abc'\n"
        );
        assert_eq!(answer(&["--version"]).stdout, "sysbench 1.0.20\n");
        let help = answer(&["cpu", "help"]);
        assert_eq!(help.code, 0);
        assert!(help.stdout.ends_with(
            ")\n\ncpu options:\n  --cpu-max-prime=N upper limit for primes generator [10000]\n\n"
        ), "{help:?}");
        let general = answer(&["--help"]);
        assert!(general.stdout.starts_with("Usage:\n"), "{general:?}");
        assert!(general.stdout.contains("\nCompiled-in tests:\n  "));
        assert!(general
            .stdout
            .contains("Commands implemented by most tests: prepare run cleanup help\n"));
        assert_eq!(answer(&["--version"]).code, 0);
    }

    #[test]
    fn driver_options_virtperf_lacks_are_refused_where_a_test_connects() {
        assert_eq!(
            answer(&["oltp_read_write", "--mysql-ssl=on", "run"]).stderr,
            "invalid option: --mysql-ssl=on\n"
        );
        // A test that never connects passes them by, as sysbench's.
        let args: Vec<String> =
            owned(&["cpu", "--mysql-ssl=on", "--db-debug", "--events=1", "run"]);
        assert!(front(&args).is_ok());
    }

    #[test]
    fn the_last_of_a_repeated_option_wins() {
        let args: Vec<String> = owned(&[
            "cpu",
            "--cpu-max-prime=5",
            "--threads=2",
            "--cpu-max-prime=7",
            "run",
        ]);
        assert_eq!(
            last_of_each(&args),
            ["cpu", "--threads=2", "--cpu-max-prime=7", "run"]
        );
        let Ok((_, Request::Workload(inv))) = front(&args) else {
            panic!("refused");
        };
        assert_eq!(inv.job.values.int("cpu-max-prime"), 7);
    }

    #[test]
    fn a_deprecated_option_is_read_as_sysbench_reads_it() {
        let read = |args: &[&str]| {
            let args: Vec<String> = owned(args);
            read_deprecated(&args)
        };
        assert_eq!(
            read(&["cpu", "--num-threads=2", "run"]),
            ["cpu", "run", "--threads=2"]
        );
        assert_eq!(
            read(&[
                "--threads=3",
                "--num_threads=2",
                "--max-requests=0",
                "--events=5"
            ]),
            ["--events=5", "--threads=2"]
        );
        assert_eq!(read(&["--threads=3", "--num-threads=1"]), ["--threads=3"]);
        let args: Vec<String> = owned(&[
            "cpu",
            "--threads=3",
            "--num-threads=2",
            "--max-requests=4",
            "run",
        ]);
        let Ok((_, Request::Workload(inv))) = front(&args) else {
            panic!("refused");
        };
        assert_eq!(inv.job.values.int("threads"), 2);
        assert_eq!(inv.job.values.int("events"), 4);
    }

    #[test]
    fn a_database_driver_sysbench_has_not_fails_as_its_scripts_do() {
        let a = answer(&["oltp_read_write", "--db-driver=foo", "prepare"]);
        assert_eq!(a.code, 1);
        assert!(
            a.stdout
                .ends_with(")\n\nFATAL: invalid database driver name: 'foo'\n"),
            "{a:?}"
        );
        let a = answer(&["oltp_point_select", "--db-driver=foo", "--threads=2", "run"]);
        assert!(
            a.stdout.ends_with(
                "Number of threads: 2\nInitializing random number generator from current time\n\n\n\
                 Initializing worker threads...\n\n\
                 FATAL: invalid database driver name: 'foo'\n\
                 FATAL: Thread initialization failed!\n"
            ),
            "{a:?}"
        );
        let a = answer(&["--verbosity=1", "oltp_delete", "--db-driver=foo", "run"]);
        assert_eq!(
            a.stdout,
            "FATAL: invalid database driver name: 'foo'\nFATAL: Thread initialization failed!\n"
        );
        // A test that never connects passes it by.
        let args: Vec<String> = owned(&["cpu", "--db-driver=foo", "--events=1", "run"]);
        assert!(front(&args).is_ok());
    }

    #[test]
    fn an_option_named_with_underscores_is_the_same_option() {
        // sysbench reads `_` as `-`, and quotes a refused argument as typed.
        assert_eq!(
            answer(&["cpu", "--foo_bar=1", "run"]).stderr,
            "invalid option: --foo_bar=1\n"
        );
        assert_eq!(
            answer(&["cpu", "--cpu_max_prime=x", "run"]).stderr,
            "Invalid value for the 'cpu_max_prime' option: 'x'\n"
        );
        assert_eq!(
            answer(&["cpu", "--validate_x=1", "run"]).stderr,
            "invalid option: --validate_x=1\n"
        );
        assert!(answer(&["fileio", "--file_test_mode=foo", "run"])
            .stdout
            .ends_with("FATAL: Invalid IO operations mode: foo.\n"));
        let args: Vec<String> = owned(&["cpu", "--cpu_max_prime=5", "--cpu-max-prime=7", "run"]);
        assert_eq!(last_of_each(&args), ["cpu", "--cpu-max-prime=7", "run"]);
        let args: Vec<String> = owned(&["cpu", "--cpu_max_prime=5", "--num_threads=2", "run"]);
        let Ok((head, Request::Workload(inv))) = front(&args) else {
            panic!("refused");
        };
        assert_eq!(inv.job.values.int("cpu-max-prime"), 5);
        assert_eq!(inv.job.values.int("threads"), 2);
        assert!(head.starts_with("WARNING: --num-threads is deprecated, use --threads instead\n"));
    }

    #[test]
    fn old_spellings_warn_and_run() {
        let args: Vec<String> = owned(&["--test=cpu", "--max-time=1", "--num-threads=2", "run"]);
        let (head, request) = front(&args).expect("runs");
        // The run prints its banner itself, after the warnings.
        assert_eq!(
            head,
            "WARNING: --num-threads is deprecated, use --threads instead\nWARNING: --max-time is deprecated, use --time instead\n"
        );
        assert!(matches!(request, Request::Workload(_)));
    }
}
