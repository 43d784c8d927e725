//! `virtperf ./my.lua [options] [command]` and, as the `sysbench` persona,
//! `sysbench ./my.lua [options] command`: loads a sysbench Lua script,
//! runs its command, and prints what sysbench prints (or, with `--json`,
//! the run's `virtperf.result/1` document).

use std::sync::Arc;

use anyhow::Result;

use super::{refusal, summary, Invocation, Request, OUTPUT};
use crate::core::observer::{Observer, Terminal};
use crate::core::options::{self, CliError, OptKind};
use crate::env::Spec;
use crate::workload::lua::{Output, Refusal, Script, Source};
use crate::workload::Job;

/// A script's command line, its output options taken out.
#[derive(Debug, Clone)]
pub struct ScriptInvocation {
    pub script: String,
    /// The script's options and command word.
    pub args: Vec<String>,
    pub json: bool,
    pub histogram: bool,
    pub verbosity: u64,
    /// Started as `sysbench`: its words for refusals, a command required,
    /// the banner printed before (by the persona's front).
    pub persona: bool,
}

/// Ends the process with this code, its message already printed.
#[derive(Debug)]
pub struct Exit(pub u8);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}", self.0)
    }
}

impl std::error::Error for Exit {}

/// Separates virtperf's output options (`--json`, `--histogram`,
/// `--verbosity`, `--env`, `--start-at`) from the script's arguments. With
/// `--env`, the script becomes a job that travels into each environment,
/// run there as a workload's job is.
pub fn parse(script: &str, args: &[String], persona: bool) -> Result<Request, CliError> {
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let name = a
            .strip_prefix("--")
            .map(|b| b.split('=').next().unwrap_or(b));
        match name.and_then(|n| OUTPUT.iter().find(|o| o.name == n)) {
            Some(o) if matches!(o.kind, OptKind::Bool) => mine.push(a.clone()),
            Some(_) => {
                mine.push(a.clone());
                // `--env docker`: the value is the next word.
                if !a.contains('=') {
                    mine.extend(it.next().cloned());
                }
            }
            None => theirs.push(a.clone()),
        }
    }
    let (values, _) = options::parse(&[OUTPUT], &mine, script)?;
    let envs = values
        .list("env")
        .iter()
        .map(|s| Spec::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    if !envs.is_empty() {
        return Ok(Request::Workload(Invocation {
            job: Job::from_script(script, &theirs)?,
            json: values.flag("json"),
            histogram: values.flag("histogram"),
            verbosity: values.int("verbosity"),
            envs,
            start_at: match values.text("start-at") {
                "" => None,
                t => Some(crate::core::start_at::check(t)?),
            },
            rand_seed: 0,
            validate: false,
        }));
    }
    if values.was_given("start-at") {
        return Err(CliError::Usage(
            "--start-at takes a Lua script only with --env (its runs in environments start together): add --env SPEC, or leave --start-at out"
                .into(),
        ));
    }
    Ok(Request::Script(ScriptInvocation {
        script: script.to_string(),
        args: theirs,
        json: values.flag("json"),
        histogram: values.flag("histogram"),
        verbosity: values.int("verbosity"),
        persona,
    }))
}

fn show(s: &str) {
    use std::io::Write;
    print!("{s}");
    let _ = std::io::stdout().flush();
}

/// Loads the script and runs its command.
pub fn main(inv: &ScriptInvocation) -> Result<()> {
    let program = if inv.persona { "sysbench" } else { "virtperf" };
    let text = !inv.json && inv.verbosity >= 3;
    if text && !inv.persona {
        show(&format!("{}\n\n", super::banner()));
    }
    let output = if inv.json {
        Output::Stderr
    } else {
        Output::Stdout
    };
    if inv.script == "-" {
        return from_stdin(program, output);
    }
    let source = Source::read(&inv.script)?;
    let script = match Script::load(source, &inv.args, program, !inv.persona, output)? {
        Ok(s) => s,
        Err(refusal) => return refuse(inv, refusal),
    };
    match script.command() {
        "run" => run(inv, &script, text),
        // virtperf's help adds the database options every script takes
        // (the sysbench persona prints sysbench's text only).
        "help" if !inv.persona => {
            let own = script.help()?.unwrap_or_default();
            let db = crate::workload::lua::database_options();
            show(&format!(
                "{own}{}",
                options::render_help("Database options (every script takes them)", &db)
            ));
            Ok(())
        }
        "help" => match script.help()? {
            Some(text) => {
                show(&text);
                Ok(())
            }
            None if inv.persona => fail(
                inv,
                &format!(
                    "'{}' test does not implement the 'help' command.",
                    script.file_name()
                ),
                2,
            ),
            None => Ok(()),
        },
        other => {
            if !script.implements(other)? && !matches!(other, "prepare" | "cleanup") {
                return fail(inv, &format!("Unknown command: {other}"), 2);
            }
            if !script.implements(other)? {
                return fail(
                    inv,
                    &format!(
                        "'{}' test does not implement the '{other}' command.",
                        script.file_name()
                    ),
                    2,
                );
            }
            if text && inv.persona && script.is_parallel()? {
                show("Initializing worker threads...\n\n");
            }
            script.run_command()
        }
    }
}

/// sysbench's script from standard input (no test named, or `-`): its
/// body runs once, with the API but no command and no options of its own.
fn from_stdin(program: &str, output: Output) -> Result<()> {
    use std::io::Read;
    let mut text = Vec::new();
    std::io::stdin().read_to_end(&mut text)?;
    let source = Source {
        path: "stdin".into(),
        text: text.into(),
        shipped: false,
        modules: std::sync::Arc::new([]),
    };
    let _ = Script::load(source, &[], program, true, output)?;
    Ok(())
}

/// A refused command line: sysbench's words and exit code 1 as the
/// persona, virtperf's (exit 2) otherwise.
fn fail(inv: &ScriptInvocation, msg: &str, code: u8) -> Result<()> {
    if inv.persona {
        eprintln!("{msg}");
        Err(Exit(1).into())
    } else {
        eprintln!("virtperf: error: {msg}");
        Err(Exit(code).into())
    }
}

fn refuse(inv: &ScriptInvocation, refusal: Refusal) -> Result<()> {
    match refusal {
        Refusal::Option(e, args) if inv.persona => fail(inv, &refusal::words(&e, &args), 2),
        Refusal::Option(e, _) => Err(e.into()),
        // sysbench 1.0.20 runs nothing and exits 0 for a script without a command.
        Refusal::NoCommand => Ok(()),
        Refusal::Extra(word) => fail(
            inv,
            &format!("Unrecognized command line argument: {word}"),
            2,
        ),
    }
}

fn run(inv: &ScriptInvocation, script: &Script, text: bool) -> Result<()> {
    let observer: Arc<dyn Observer> = Arc::new(Terminal::new(inv.json).quiet(!inv.json && !text));
    let mode = summary::RunMode::of(script.values());
    let mut announce = |started: bool| {
        if !text {
            return;
        }
        if started {
            if mode.debug {
                show(&summary::workers_started(mode.threads));
            }
            show("Threads started!\n\n");
        } else {
            show(&format!(
                "{}Initializing worker threads...\n\n",
                summary::preamble(&mode)
            ));
        }
    };
    script.defer_done();
    let (done, own_report) = script.execute(observer, &mut announce)?;
    let percentile = script.values().float("percentile");
    if inv.json {
        println!("{}", serde_json::to_string(&done.doc)?);
    } else if text && !own_report {
        if mode.debug {
            show(&summary::workers_done(&done.threads));
        }
        if let (true, Some(h)) = (inv.histogram, &done.histogram) {
            show(&summary::render_histogram(h));
        }
        show(&summary::results(&done.doc, &done.text, percentile));
        if mode.debug {
            show(&crate::engine::report::per_thread(&done.threads));
        }
    }
    script.done()
}
