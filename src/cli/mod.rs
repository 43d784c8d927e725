//! The command-line surface: the common option table, the sysbench-style
//! single-workload form (`virtperf <workload> [prepare|run|cleanup] --opt=v`),
//! and help generated from the option tables.

pub mod summary;

use anyhow::Result;

use crate::core::options::{self, CliError, OptKind, OptionSpec, Values};
use crate::core::result::{ResultDoc, SCHEMA};
use crate::core::time::now_rfc3339;
use crate::engine::EngineOptions;
use crate::env::Spec;
use crate::sys::fingerprint;
use crate::sys::monitor;
use crate::workload::{Command, Kind};

/// Options every workload accepts, with sysbench's names and defaults.
pub const COMMON: &[OptionSpec] = &[
    OptionSpec::new(
        "threads",
        OptKind::Int {
            min: 1,
            max: 100_000,
        },
        "1",
        "number of threads to use",
    ),
    OptionSpec::new(
        "time",
        OptKind::Float { min: 0.0, max: 1e9 },
        "10",
        "limit for total execution time in seconds (0 = no limit)",
    ),
    OptionSpec::new(
        "events",
        OptKind::Int {
            min: 0,
            max: u64::MAX,
        },
        "0",
        "limit for total number of events (0 = no limit)",
    ),
    OptionSpec::new(
        "warmup-time",
        OptKind::Float { min: 0.0, max: 1e9 },
        "0",
        "run events this many seconds with statistics disabled before measuring",
    ),
    OptionSpec::new(
        "rate",
        OptKind::Float {
            min: 0.0,
            max: 1e12,
        },
        "0",
        "average events per second, open loop with Poisson arrivals (0 = unlimited)",
    ),
    OptionSpec::new(
        "report-interval",
        OptKind::Float { min: 0.0, max: 1e9 },
        "0",
        "print interim statistics every N seconds (0 = off)",
    ),
    OptionSpec::new(
        "percentile",
        OptKind::Float {
            min: 1.0,
            max: 100.0,
        },
        "95",
        "latency percentile shown in the summary (all of p50..p99.9 are in --json)",
    ),
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
        "run in this environment instead of in-process (repeatable): host, docker[:cpus=2,memory=2g,image=IMG,storage=overlay|volume|tmpfs,network=bridge|host], podman[:...], qemu[:smp=2,memory=2g,accel=auto|kvm|tcg,cpu=,kernel=,modules=,cache=none|writeback,disk=8g], ssh:USER@HOST[:PORT][,identity=,known-hosts=,host-key-check=off]; each may add count=N and name=LABEL",
    )
    .repeatable(),
];

/// Options that shape the invocation, not the measurement: left out of `params`.
pub const NOT_PARAMS: &[&str] = &["json", "histogram", "report-interval", "env"];

/// A parsed single-workload invocation.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub kind: Kind,
    pub command: Command,
    pub values: Values,
    /// Where to run it; empty: in this process.
    pub envs: Vec<Spec>,
    /// The arguments as an agent should receive them (no `--env`).
    pub agent_args: Vec<String>,
}

/// What the user asked for.
pub enum Request {
    Help(String),
    Version,
    Workload(Invocation),
    /// `virtperf agent`: serve a plan on stdin/stdout.
    Agent,
    /// `virtperf envs [--env SPEC]...`
    Envs(Vec<Spec>),
    /// `virtperf compare ...` (its own arguments)
    Compare(Vec<String>),
    /// `virtperf report ...`
    Report(Vec<String>),
    /// `virtperf serve ...` (its own arguments)
    Serve(Vec<String>),
}

pub fn usage() -> String {
    let mut out = format!(
        "virtperf {} — measures what virtualization costs\n\n\
         Usage:\n  virtperf <workload> [prepare|run|cleanup|help] [--option=value ...] [--json] [--env SPEC]...\n  \
         virtperf compare [--suite quick|standard|FILE] [--baseline SPEC] [--env SPEC]... [--repeat N|auto] [--out DIR] [WORKLOAD ...]\n  \
         virtperf report [RUN|DIR] [--format table|markdown|csv|json|html] [--out FILE]\n  \
         virtperf envs [--env SPEC]...      which environments this machine can run, and why not\n  \
         virtperf serve [--bind ADDR] [--port N]   the server for `virtperf net`\n  \
         virtperf help | --help | --version\n\n\
         Workloads (`virtperf <workload> help` lists a workload's options):\n",
        env!("CARGO_PKG_VERSION")
    );
    for kind in Kind::ALL {
        out.push_str(&format!("  {:<10} {}\n", kind.name(), kind.summary()));
    }
    out.push('\n');
    out.push_str(&options::render_help("Common options", COMMON));
    out.push_str(
        "\nExamples:\n  virtperf cpu --cpu-max-prime=20000 --threads=2 --time=30 run\n  \
         virtperf memory --memory-block-size=1K --memory-oper=read --json\n  \
         virtperf memory --memory-mode=stream --threads=2\n\n\
         Exit codes: 0 success, 1 the run failed, 2 bad input, 130 interrupted.\n",
    );
    out
}

fn workload_help(kind: Kind) -> String {
    format!(
        "{}\n\nUsage: virtperf {} [prepare|run|cleanup] [--option=value ...]\n\n{}\n{}",
        kind.summary(),
        kind.name(),
        options::render_help(&format!("{} options", kind.name()), kind.options()),
        options::render_help("Common options", COMMON)
    )
}

/// Resolves raw arguments (without the program name) into a request.
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
            "no workload given: name one of {}. Run 'virtperf --help' for usage",
            workload_names()
        )));
    };
    let word = args.remove(first_pos);
    match word.as_str() {
        "help" => return Ok(Request::Help(usage())),
        "version" => return Ok(Request::Version),
        "agent" => return Ok(Request::Agent),
        "serve" => return Ok(Request::Serve(args)),
        "compare" | "report" => {
            if args
                .iter()
                .any(|a| a == "--help" || a == "-h" || a == "help")
            {
                return Ok(Request::Help(if word == "compare" {
                    crate::compare::help()
                } else {
                    crate::compare::report_help()
                }));
            }
            return Ok(if word == "compare" {
                Request::Compare(args)
            } else {
                Request::Report(args)
            });
        }
        "envs" => {
            const ENVS: &[OptionSpec] = &[OptionSpec::new(
                "env",
                OptKind::Text,
                "",
                "also check this environment (e.g. an ssh target)",
            )
            .repeatable()];
            if args.iter().any(|a| a == "--help" || a == "-h") {
                return Ok(Request::Help(format!(
                    "virtperf envs [--env SPEC]...\n\nLists the environments this machine can run (host, docker, podman, qemu) and, where it cannot, why.\n\n{}",
                    options::render_help("Options", ENVS)
                )));
            }
            let (values, rest) = options::parse(&[ENVS], &args, "envs")?;
            if let Some(extra) = rest.first() {
                return Err(CliError::Usage(format!(
                    "envs takes no argument '{extra}'; use --env SPEC"
                )));
            }
            let specs = values
                .list("env")
                .iter()
                .map(|s| Spec::parse(s))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Request::Envs(specs));
        }
        _ => {}
    }
    let kind = Kind::from_name(&word).ok_or_else(|| {
        CliError::Usage(format!(
            "unknown workload '{word}': choose one of {}. Run 'virtperf --help' for usage",
            workload_names()
        ))
    })?;
    if args
        .iter()
        .any(|a| a == "--help" || a == "-h" || a == "help")
    {
        return Ok(Request::Help(workload_help(kind)));
    }
    let (values, positionals) = options::parse(&[COMMON, kind.options()], &args, kind.name())?;
    let command = match positionals.as_slice() {
        [] => Command::Run,
        [one] => Command::parse(one).ok_or_else(|| {
            CliError::Usage(format!(
                "unknown command '{one}' for workload '{}': use prepare, run or cleanup",
                kind.name()
            ))
        })?,
        more => {
            return Err(CliError::Usage(format!(
                "too many commands ({}): give one of prepare, run or cleanup",
                more.join(" ")
            )))
        }
    };
    if values.float("time") == 0.0 && values.int("events") == 0 {
        return Err(CliError::Usage(
            "--time=0 and --events=0 together would run forever: set --time=SECONDS or --events=N"
                .into(),
        ));
    }
    let envs = values
        .list("env")
        .iter()
        .map(|s| Spec::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    if !envs.is_empty() && command != Command::Run {
        return Err(CliError::Usage(
            "--env runs prepare, run and cleanup in the environment itself: use it with run".into(),
        ));
    }
    let mut agent_args = vec![kind.name().to_string()];
    let mut skip_next = false;
    for a in &args {
        if skip_next {
            skip_next = false;
            continue;
        }
        if a == "--env" {
            skip_next = true;
            continue;
        }
        if a.starts_with("--env=") || Command::parse(a).is_some() {
            continue;
        }
        agent_args.push(a.clone());
    }
    Ok(Request::Workload(Invocation {
        kind,
        command,
        values,
        envs,
        agent_args,
    }))
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

fn workload_names() -> String {
    Kind::ALL
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A finished run: its document and the workload's own text section.
pub struct Executed {
    pub doc: ResultDoc,
    pub text: String,
    /// Event latencies (ns), for `--histogram`.
    pub histogram: Option<crate::engine::Histogram>,
}

/// Executes one invocation in this process. `run` yields a result document
/// (fingerprinted as environment `env_name` of `env_kind`); `prepare` and
/// `cleanup` yield none.
pub fn execute(inv: &Invocation, env_name: &str, env_kind: &str) -> Result<Option<Executed>> {
    let mut workload = inv.kind.build(&inv.values)?;
    match inv.command {
        Command::Prepare => {
            if inv.kind.needs().disk {
                workload.prepare()?;
            } else {
                eprintln!("virtperf: {} has nothing to prepare", inv.kind.name());
            }
            Ok(None)
        }
        Command::Cleanup => {
            if inv.kind.needs().disk {
                workload.cleanup()?;
            } else {
                eprintln!("virtperf: {} has nothing to clean up", inv.kind.name());
            }
            Ok(None)
        }
        Command::Run => {
            let engine = EngineOptions::from_values(&inv.values);
            let started_at = now_rfc3339();
            let sampler = monitor::Sampler::start();
            let m = workload.run(&engine)?;
            let monitor = sampler.finish();
            let doc = ResultDoc {
                schema: SCHEMA.to_string(),
                workload: inv.kind.name().to_string(),
                params: inv.values.to_params(NOT_PARAMS),
                env: fingerprint::take(env_name, env_kind),
                started_at,
                duration_s: m.duration.as_secs_f64(),
                events: m.events,
                metrics: m.metrics,
                latency_ms: m.latency,
                fairness: m.fairness,
                monitor,
                details: m.details,
            };
            Ok(Some(Executed {
                doc,
                text: m.text,
                histogram: m.histogram,
            }))
        }
    }
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
        assert_eq!(inv.kind, Kind::Cpu);
        assert_eq!(inv.command, Command::Run);
        assert_eq!(inv.values.int("cpu-max-prime"), 20000);
        let Ok(Request::Workload(old)) = req(&["--test=cpu", "--cpu-max-prime=4000", "run"]) else {
            panic!("--test= form did not parse");
        };
        assert_eq!(old.kind, Kind::Cpu);
        let Ok(Request::Workload(v04)) = req(&[
            "--test=cpu",
            "--max-time=60",
            "--max-requests=0",
            "--num-threads=4",
        ]) else {
            panic!("sysbench 0.4 names did not parse");
        };
        assert_eq!(v04.values.float("time"), 60.0);
        assert_eq!(v04.values.int("threads"), 4);
    }

    #[test]
    fn every_option_table_is_consistent() {
        // Defaults parse, names are kebab-case and unique per workload.
        for kind in Kind::ALL {
            let tables = [COMMON, kind.options()];
            let _ = options::defaults(&tables);
            let mut names: Vec<&str> = tables
                .iter()
                .flat_map(|t| t.iter())
                .map(|s| s.name)
                .collect();
            for n in &names {
                assert!(
                    n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                    "{n}"
                );
            }
            let before = names.len();
            names.sort();
            names.dedup();
            assert_eq!(before, names.len(), "duplicate option in {}", kind.name());
        }
    }
}
