//! The command-line surface: argv into typed requests — the sysbench-style
//! single-workload form (`virtperf <workload> [prepare|run|cleanup] --opt=v`)
//! and the other commands — with help generated from the registries.
//! Imported by nothing but `main.rs`.

pub mod commands;
mod refusal;
pub mod report;
pub mod script;
pub mod serve;
pub mod single;
pub mod summary;
pub mod sysbench;

use crate::compare::{CompareArgs, ReportArgs};
use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::engine;
use crate::env::Spec;
use crate::workload::net::server::ServeArgs;
use crate::workload::{self, Command, Job, WorkloadDef};

/// Options of the command line itself, beside a workload's: how to show
/// the result and where to run.
pub const OUTPUT: &[OptionSpec] = &[
    OptionSpec::new(
        "histogram",
        OptKind::Bool,
        "off",
        "print the latency histogram in the text summary",
    ),
    OptionSpec::new(
        "json",
        OptKind::Bool,
        "off",
        "print one virtperf.result/1 JSON document instead of the text summary",
    ),
    OptionSpec::new(
        "env",
        OptKind::Text,
        "",
        "run in this environment instead of in-process (repeatable; see 'virtperf envs --help')",
    )
    .repeatable(),
    crate::core::start_at::OPTION,
    OptionSpec::new(
        "verbosity",
        OptKind::Int { min: 0, max: 5 },
        "3",
        "as sysbench's: below 3 the text summary and the prepare and cleanup lines are not printed, only warnings and errors",
    ),
];

/// sysbench's notice level: the run's text is printed from it up.
const NOTICE: u64 = 3;

/// A parsed single-workload invocation.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub job: Job,
    pub json: bool,
    pub histogram: bool,
    /// `--verbosity`, sysbench's levels (3, notices, by default).
    pub verbosity: u64,
    /// Where to run it; empty: in this process.
    pub envs: Vec<Spec>,
    /// `--start-at`, seconds since the epoch.
    pub start_at: Option<f64>,
    /// sysbench's general `--rand-seed` and `--validate`, given to a test
    /// that has no use for them (the persona takes them out and says so
    /// before the run, as sysbench).
    pub rand_seed: u64,
    pub validate: bool,
}

impl Invocation {
    /// Whether its text begins with the banner line (a run, and the
    /// prepare and cleanup of a workload that has them), as sysbench's does.
    pub fn prints_banner(&self) -> bool {
        self.prints_text() && (self.job.command == Command::Run || self.job.def.needs.prepare)
    }

    /// Whether the text summary and the prepare and cleanup lines are
    /// printed (no JSON asked for, and `--verbosity` at notices or more).
    pub fn prints_text(&self) -> bool {
        !self.json && self.verbosity >= NOTICE
    }

    /// The percentile the text summary shows.
    pub fn percentile(&self) -> f64 {
        let v = &self.job.values;
        if v.has("percentile") {
            v.float("percentile")
        } else {
            95.0
        }
    }
}

/// What the user asked for.
pub enum Request {
    Help(String),
    Version,
    Workload(Invocation),
    /// A sysbench Lua script: `virtperf ./my.lua [options] [command]`.
    Script(script::ScriptInvocation),
    /// `virtperf agent`: serve a plan on stdin/stdout.
    Agent,
    /// `virtperf envs [--env SPEC]...`
    Envs(Vec<Spec>),
    /// `virtperf compare ...`
    Compare(Box<CompareArgs>),
    /// `virtperf report ...`
    Report(ReportArgs),
    /// `virtperf history ...`
    History(crate::compare::HistoryArgs),
    /// `virtperf serve ...`
    Serve(ServeArgs),
    /// `virtperf import ...`
    Import(crate::import::ImportArgs),
}

/// The general help: the single-workload and script forms, the command
/// table's commands, the workloads and the options every workload takes.
pub fn usage() -> String {
    let mut out = format!(
        "virtperf {} — measures what virtualization costs\n\n\
         Usage:\n  virtperf <workload> [prepare|run|cleanup|help] [--option=value ...] [--json] [--env SPEC]...\n  \
         virtperf SCRIPT.lua [--option=value ...] [run|prepare|cleanup|help|COMMAND] [--json] [--env SPEC]...\n",
        env!("CARGO_PKG_VERSION")
    );
    out.push_str(&commands::command_lines("  "));
    out.push_str(
        "  virtperf --help | --version\n\n\
         `virtperf help COMMAND` (or `virtperf COMMAND --help`) shows a command's options.\n\n\
         Workloads (`virtperf help WORKLOAD` lists a workload's options):\n",
    );
    for def in workload::WORKLOADS {
        out.push_str(&format!("  {:<10} {}\n", def.name, def.summary));
    }
    out.push_str(
        "\nLua scripts: a sysbench 1.0 script (a path, or a name ending in .lua) runs on\n\
         virtperf's engine with sysbench's Lua API: its own options and commands, the\n\
         engine options, --rand-* and the OLTP tests' --db-driver options\n\
         (`virtperf ./my.lua help` lists a script's options). With --env, and in\n\
         `virtperf compare`, the script's text and the modules it requires by a\n\
         literal name (at most 1 MiB in all; not one required by a computed name)\n\
         travel into each environment and run there.\n",
    );
    out.push('\n');
    out.push_str(&options::render_help(
        "Engine options (event-driven workloads)",
        engine::OPTIONS,
    ));
    out.push_str(&options::render_help("Output options", OUTPUT));
    out.push_str(
        "\nExamples:\n  virtperf cpu --cpu-max-prime=20000 --threads=2 --time=30 run\n  \
         virtperf memory --memory-block-size=1K --memory-oper=read --json\n  \
         virtperf memory --memory-mode=stream --threads=2\n\n\
         Exit codes: 0 success, 1 the run failed, 2 bad input, 3 a --fail-on gate tripped\n\
         (compare, report, history), 130 interrupted.\n",
    );
    out
}

fn workload_help(def: &WorkloadDef) -> String {
    let (engine, own) = def.option_tables();
    let mut out = format!(
        "{}\n\nUsage: virtperf {} [{}] [--option=value ...]\n\n{}",
        def.summary,
        def.name,
        if def.needs.prepare {
            "prepare|run|cleanup"
        } else {
            "run"
        },
        options::render_help(&format!("{} options", def.name), own)
    );
    if engine.is_empty() {
        out.push_str(
            "\n(Not driven by the engine: --threads, --time, --events and --rate do not apply.)\n",
        );
    } else {
        out.push('\n');
        out.push_str(&options::render_help("Engine options", &engine));
    }
    out.push('\n');
    out.push_str(&options::render_help("Output options", OUTPUT));
    out
}

/// The sysbench release whose text and behaviour the single-workload form
/// follows.
pub const SYSBENCH_VERSION: &str = "1.0.20";

/// Whether this binary was started under the name `sysbench` (a link or a
/// copy, as a drop-in): it then names itself as sysbench does, and answers
/// bad input as sysbench does ([`sysbench::front`]).
pub fn as_sysbench() -> bool {
    std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n == "sysbench"))
        .unwrap_or(false)
}

/// The first line of a run's text.
pub fn banner() -> String {
    let ours = env!("CARGO_PKG_VERSION");
    if as_sysbench() {
        format!("sysbench {SYSBENCH_VERSION} (virtperf {ours})")
    } else {
        format!("virtperf {ours} (sysbench {SYSBENCH_VERSION} compatible)")
    }
}

/// Resolves raw arguments (without the program name) into a request: a
/// command of the [`commands::COMMANDS`] table, a Lua script, or a
/// workload.
pub fn parse_request(args: &[String]) -> Result<Request, CliError> {
    let mut args: Vec<String> = args.iter().map(|a| rename_old_option(a)).collect();
    // sysbench 0.4 spelled the workload as --test=NAME; old scripts do too.
    if let Some(pos) = args.iter().position(|a| a.starts_with("--test=")) {
        let name = args.remove(pos)["--test=".len()..].to_string();
        args.insert(0, name);
    }
    let Some(first_pos) = args.iter().position(|a| !a.starts_with('-')) else {
        if args.iter().any(|a| a == "--version" || a == "-V") {
            return Ok(Request::Version);
        }
        if args.iter().any(|a| a == "--help" || a == "-h") {
            return Ok(Request::Help(usage()));
        }
        return Err(CliError::Usage(format!(
            "no workload given: name one of {}, or a command ({}). Run 'virtperf --help' for usage",
            workload::names(),
            commands::command_names()
        )));
    };
    let word = args.remove(first_pos);
    let asks_help = |words: &[&str]| args.iter().any(|a| words.contains(&a.as_str()));
    if let Some(command) = commands::find(&word) {
        if command.name != "help" && asks_help(&["--help", "-h", "help"]) {
            return Ok(Request::Help(command.help()));
        }
        return (command.parse)(&args);
    }
    if workload::lua::is_script(&word) {
        return script::parse(&word, &args, false);
    }
    let def = workload::find(&word).ok_or_else(|| {
        CliError::Usage(format!(
            "unknown workload '{word}'{}: choose one of {}, or a command ({}). Run 'virtperf --help' for usage",
            commands::did_you_mean(&word),
            workload::names(),
            commands::command_names()
        ))
    })?;
    if asks_help(&["--help", "-h", "help"]) {
        return Ok(Request::Help(workload_help(def)));
    }
    single(def, &args)
}

/// A single-workload run: its job and the output options beside it.
fn single(def: &'static WorkloadDef, args: &[String]) -> Result<Request, CliError> {
    let (job, all) = Job::parse(def, args, &[OUTPUT])?;
    let envs = all
        .list("env")
        .iter()
        .map(|s| Spec::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    if !envs.is_empty() && job.command != Command::Run {
        return Err(CliError::Usage(
            "--env runs prepare, run and cleanup in the environment itself: use it with run".into(),
        ));
    }
    Ok(Request::Workload(Invocation {
        job,
        json: all.flag("json"),
        histogram: all.flag("histogram"),
        verbosity: all.int("verbosity"),
        envs,
        start_at: match all.text("start-at") {
            "" => None,
            t => Some(crate::core::start_at::check(t)?),
        },
        rand_seed: 0,
        validate: false,
    }))
}

/// Runs a request: the one dispatch from what was asked to the module
/// that does it.
pub fn run(request: Request) -> anyhow::Result<()> {
    match request {
        Request::Help(text) => print!("{text}"),
        Request::Version => println!("virtperf {}", env!("CARGO_PKG_VERSION")),
        Request::Agent => crate::agent::main()?,
        Request::Compare(args) => crate::compare::main(*args)?,
        Request::Report(args) => crate::compare::report_main(&args)?,
        Request::History(args) => crate::compare::history_main(&args)?,
        Request::Serve(args) => crate::workload::net::server::main(&args)?,
        Request::Import(args) => crate::import::main(&args)?,
        Request::Envs(specs) => print!("{}", crate::env::probe::report(&specs)),
        Request::Workload(inv) => single::main(&inv)?,
        Request::Script(inv) => script::main(&inv)?,
    }
    Ok(())
}

/// sysbench 0.4's names for the common options, still in many scripts
/// (`--max-time=60 --max-requests=0 --num-threads=4`).
const OLD_NAMES: &[(&str, &str)] = &[
    ("--max-time", "--time"),
    ("--max-requests", "--events"),
    ("--num-threads", "--threads"),
];

fn rename_old_option(arg: &str) -> String {
    for (old, new) in OLD_NAMES {
        if let Some(rest) = arg.strip_prefix(old) {
            if rest.is_empty() || rest.starts_with('=') {
                return format!("{new}{rest}");
            }
        }
    }
    arg.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(args: &[&str]) -> Result<Request, CliError> {
        parse_request(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn sysbench_command_lines_parse() {
        let Ok(Request::Workload(inv)) = req(&[
            "cpu",
            "--cpu-max-prime=20000",
            "--threads=2",
            "--time=30",
            "run",
        ]) else {
            panic!("cpu run did not parse");
        };
        assert_eq!(inv.job.def.name, "cpu");
        assert_eq!(inv.job.command, Command::Run);
        assert_eq!(inv.job.values.int("cpu-max-prime"), 20000);
        let Ok(Request::Workload(old)) = req(&["--test=cpu", "--cpu-max-prime=4000", "run"]) else {
            panic!("--test= form did not parse");
        };
        assert_eq!(old.job.def.name, "cpu");
        let Ok(Request::Workload(v04)) = req(&[
            "--test=cpu",
            "--max-time=60",
            "--max-requests=0",
            "--num-threads=4",
        ]) else {
            panic!("sysbench 0.4 names did not parse");
        };
        assert_eq!(v04.job.values.float("time"), 60.0);
        assert_eq!(v04.job.values.int("threads"), 4);
    }

    #[test]
    fn output_options_stay_out_of_the_job() {
        let Ok(Request::Workload(inv)) = req(&["cpu", "--json", "--env=host", "--time=1"]) else {
            panic!("did not parse");
        };
        assert!(inv.json);
        assert_eq!(inv.envs.len(), 1);
        assert!(!inv.job.values.has("json") && !inv.job.values.has("env"));
        let params = inv.job.values.to_params(&[]);
        assert!(!params.contains_key("json") && params.contains_key("time"));
    }
}
