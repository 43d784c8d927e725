//! The command table: every subcommand declared once — its name, operands,
//! one-line summary, option table, help page and parser — as ripgrep
//! declares each flag once. The general usage, each command's `--help`
//! and `virtperf help COMMAND`, the dispatch of the first word and the
//! README's command list (checked by a test) all come from [`COMMANDS`].

use super::{report, serve, usage, workload_help, Request};
use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::env::Spec;
use crate::workload;

/// One subcommand of `virtperf`.
pub struct CommandDef {
    pub name: &'static str,
    /// What follows its options in the synopsis ("" for nothing).
    pub operands: &'static str,
    /// One line, for the general usage and the README.
    pub summary: &'static str,
    /// Its options: what it parses, and what its help lists.
    pub options: &'static [OptionSpec],
    /// Its help page, below the synopsis the table generates.
    pub about: fn() -> String,
    /// The arguments after its name into a request; `--help` never
    /// reaches it.
    pub parse: fn(&[String]) -> Result<Request, CliError>,
    /// Shown in the usage and the README (`agent` is the binary talking
    /// to itself).
    pub listed: bool,
}

/// `virtperf envs`'s options.
const ENVS_OPTIONS: &[OptionSpec] = &[OptionSpec::new(
    "env",
    OptKind::Text,
    "",
    "also check this environment (e.g. an ssh target)",
)
.repeatable()];

/// Every subcommand, in the order the usage lists them.
pub const COMMANDS: &[CommandDef] = &[
    CommandDef {
        name: "compare",
        operands: "[WORKLOAD|SCRIPT.lua ...]",
        summary: "a suite or one workload on the baseline and each environment, compared",
        options: crate::compare::plan::OPTIONS,
        about: crate::compare::help,
        parse: |args| {
            Ok(Request::Compare(Box::new(crate::compare::args::parse(
                args,
            )?)))
        },
        listed: true,
    },
    CommandDef {
        name: "report",
        operands: "[RUN|DIR|DIR/N ...]",
        summary: "stored comparisons in any format (several DIRs: a fleet)",
        options: crate::compare::REPORT_OPTIONS,
        about: crate::compare::report_help,
        parse: |args| Ok(Request::Report(report::parse(args)?)),
        listed: true,
    },
    CommandDef {
        name: "history",
        operands: "DIR...",
        summary: "every stored comparison over time: trends and change points",
        options: crate::compare::HISTORY_OPTIONS,
        about: crate::compare::history_help,
        parse: |args| Ok(Request::History(crate::compare::history_cmd_parse(args)?)),
        listed: true,
    },
    CommandDef {
        name: "import",
        operands: "FILE...",
        summary: "other tools' logs into a results store",
        options: crate::import::IMPORT_OPTIONS,
        about: crate::import::help,
        parse: |args| Ok(Request::Import(crate::import::parse(args)?)),
        listed: true,
    },
    CommandDef {
        name: "envs",
        operands: "",
        summary: "which environments this machine can run, and why not",
        options: ENVS_OPTIONS,
        about: || {
            format!(
                "Lists the environments this machine can run and, where it cannot, why.\n\n{}\n{}",
                options::render_help("Options", ENVS_OPTIONS),
                crate::env::help()
            )
        },
        parse: parse_envs,
        listed: true,
    },
    CommandDef {
        name: "serve",
        operands: "",
        summary: "the server for `virtperf net`",
        options: crate::workload::net::server::SERVE_OPTIONS,
        about: crate::workload::net::server::help,
        parse: |args| Ok(Request::Serve(serve::parse(args)?)),
        listed: true,
    },
    CommandDef {
        name: "help",
        operands: "[COMMAND|WORKLOAD|SCRIPT.lua]",
        summary: "this text, or a command's, a workload's or a script's",
        options: &[],
        about: || {
            "Prints the help of a command, a workload or a Lua script; alone, the general usage.\n"
                .into()
        },
        parse: parse_help,
        listed: true,
    },
    CommandDef {
        name: "version",
        operands: "",
        summary: "the version (also --version)",
        options: &[],
        about: || "Prints virtperf's version.\n".into(),
        parse: |args| no_operands("version", args).map(|()| Request::Version),
        listed: true,
    },
    CommandDef {
        name: "agent",
        operands: "",
        summary: "serve a plan on standard input and output (started by virtperf itself)",
        options: &[],
        about: || {
            "Started by virtperf in an environment: reads a plan on standard input and answers on standard output.\n".into()
        },
        parse: |_| Ok(Request::Agent),
        listed: false,
    },
];

/// The command of that name.
pub fn find(name: &str) -> Option<&'static CommandDef> {
    COMMANDS.iter().find(|c| c.name == name)
}

impl CommandDef {
    /// `virtperf NAME [--opt=X]... OPERANDS`, generated from its table,
    /// wrapped at 100 columns.
    pub fn synopsis(&self) -> String {
        let mut words = vec![format!("virtperf {}", self.name)];
        words.extend(self.options.iter().map(|o| {
            let value = match o.kind {
                OptKind::Bool => String::new(),
                OptKind::Int { .. } | OptKind::Float { .. } => "=N".into(),
                OptKind::Size { .. } => "=SIZE".into(),
                OptKind::Choice(words) => format!("={}", words.join("|")),
                OptKind::Text => format!("={}", o.name.to_ascii_uppercase()),
            };
            let more = if o.repeatable { "..." } else { "" };
            format!("[--{}{value}]{more}", o.name)
        }));
        if !self.operands.is_empty() {
            words.push(self.operands.to_string());
        }
        let mut out = String::new();
        let mut line = 0;
        for w in words {
            if line > 0 && line + 1 + w.len() > 100 {
                out.push_str("\n   ");
                line = 3;
            }
            if line > 0 {
                out.push(' ');
                line += 1;
            }
            out.push_str(&w);
            line += w.chars().count();
        }
        out
    }

    /// Its whole help page: the synopsis, then what `about` says (its
    /// options rendered from the same table among it).
    pub fn help(&self) -> String {
        format!("Usage: {}\n\n{}", self.synopsis(), (self.about)())
    }

    /// Its line in the general usage: `virtperf NAME [options] OPERANDS`.
    pub fn usage_line(&self) -> String {
        let mut line = format!("virtperf {}", self.name);
        if !self.options.is_empty() {
            line.push_str(" [options]");
        }
        if !self.operands.is_empty() {
            line.push(' ');
            line.push_str(self.operands);
        }
        line
    }
}

/// The README's list of commands, as `tests/cli.rs` expects it between
/// its markers: one line per listed command and its summary.
pub fn readme_list() -> String {
    format!("```text\n{}```\n", command_lines(""))
}

/// One line per listed command, its usage and summary in two columns.
pub fn command_lines(indent: &str) -> String {
    let listed = || COMMANDS.iter().filter(|c| c.listed);
    let width = listed().map(|c| c.usage_line().len()).max().unwrap_or(0);
    listed()
        .map(|c| format!("{indent}{:<width$}  {}\n", c.usage_line(), c.summary))
        .collect()
}

/// What `virtperf help TOPIC` prints: a command's, a workload's or a Lua
/// script's help; alone, the general usage.
fn parse_help(args: &[String]) -> Result<Request, CliError> {
    let Some(topic) = args.first() else {
        return Ok(Request::Help(usage()));
    };
    no_operands("help TOPIC", &args[1..])?;
    if let Some(c) = find(topic) {
        return Ok(Request::Help(c.help()));
    }
    if let Some(def) = workload::find(topic) {
        return Ok(Request::Help(workload_help(def)));
    }
    if workload::lua::is_script(topic) {
        return super::script::parse(topic, &["help".to_string()], false);
    }
    Err(CliError::Usage(format!(
        "help: no topic '{topic}'{}: name a command ({}) or a workload ({})",
        did_you_mean(topic),
        command_names(),
        workload::names()
    )))
}

/// `virtperf envs [--env SPEC]...`
fn parse_envs(args: &[String]) -> Result<Request, CliError> {
    let (values, rest) = options::parse(&[ENVS_OPTIONS], args, "envs")?;
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
    Ok(Request::Envs(specs))
}

fn no_operands(command: &str, args: &[String]) -> Result<(), CliError> {
    match args.first() {
        None => Ok(()),
        Some(extra) => Err(CliError::Usage(format!(
            "{command} takes no argument '{extra}'"
        ))),
    }
}

/// The listed commands' names, for refusals.
pub fn command_names() -> String {
    COMMANDS
        .iter()
        .filter(|c| c.listed)
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// " (did you mean 'x'?)" for a near miss of a command or workload.
pub fn did_you_mean(word: &str) -> String {
    let names = COMMANDS
        .iter()
        .filter(|c| c.listed)
        .map(|c| c.name)
        .chain(workload::WORKLOADS.iter().map(|d| d.name));
    options::nearest(word, names)
        .map(|n| format!(" (did you mean '{n}'?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::text::owned as s;

    #[test]
    fn every_command_is_declared_once_with_its_help_and_parser() {
        for (i, c) in COMMANDS.iter().enumerate() {
            assert!(
                COMMANDS[..i].iter().all(|d| d.name != c.name),
                "{} twice",
                c.name
            );
            assert!(
                workload::find(c.name).is_none(),
                "{} is also a workload",
                c.name
            );
            let page = c.help();
            // Every option the command parses is on its page.
            for o in c.options {
                assert!(
                    page.contains(&format!("--{}", o.name)),
                    "{}: --{}",
                    c.name,
                    o.name
                );
            }
            assert!(page.starts_with(&format!("Usage: virtperf {}", c.name)));
        }
        for c in COMMANDS.iter().filter(|c| c.listed) {
            assert!(
                usage().contains(&c.usage_line()),
                "{} not in the usage",
                c.name
            );
        }
    }

    /// Every option table the command line reads: the commands', the
    /// workloads' and the engine's, and the output options.
    fn every_table() -> Vec<&'static [OptionSpec]> {
        let mut tables: Vec<&'static [OptionSpec]> = COMMANDS.iter().map(|c| c.options).collect();
        tables.extend(workload::WORKLOADS.iter().map(|d| d.options));
        tables.extend([crate::engine::OPTIONS, super::super::OUTPUT]);
        tables
    }

    #[test]
    fn a_secret_is_declared_once_by_its_name_and_every_redaction_follows() {
        // The one declaration is the name (core::text::is_secret); what a
        // secret is read from when not typed, its file option and its
        // environment variable, is declared beside the option, and every
        // place that hides a value — params, labels, the stored arguments —
        // asks the same test.
        let sources: Vec<&str> = crate::workload::oltp::PASSWORD_SOURCES
            .iter()
            .chain(crate::workload::net::SECRET_SOURCES)
            .map(|(name, _)| *name)
            .collect();
        let mut secrets = 0;
        for table in every_table() {
            for o in table
                .iter()
                .filter(|o| crate::core::text::is_secret(o.name))
            {
                secrets += 1;
                let file = format!("{}-file", o.name);
                assert!(
                    table.iter().any(|t| t.name == file),
                    "--{} has no --{file}, the way to keep it out of ps",
                    o.name
                );
                assert!(
                    sources.contains(&o.name),
                    "--{}: no environment variable",
                    o.name
                );
                let typed = s(&[
                    &format!("--{}=hunter2", o.name),
                    &format!("--{}", o.name),
                    "hunter2",
                ]);
                let shown = crate::core::text::redact_args(&typed).join(" ");
                assert!(!shown.contains("hunter2"), "{shown}");
                assert!(crate::core::text::without_secrets(&typed).is_empty());
                let mut values = options::defaults(&[table]);
                values.set(o, "hunter2").unwrap();
                let params = serde_json::to_string(&values.to_params(&[])).unwrap();
                assert!(!params.contains("hunter2") && !params.contains(&file.replace('-', "_")));
            }
        }
        assert!(secrets >= 3, "{secrets}");
        for name in sources {
            assert!(
                crate::core::text::is_secret(name),
                "{name} is read as a secret but not named one"
            );
        }
    }

    #[test]
    fn the_synopsis_names_every_option() {
        // The usage written by hand lacked compare's --budget, --margin,
        // --format, --resume, --figures, --detail and --start-at.
        let compare = find("compare").unwrap().synopsis();
        for o in [
            "budget", "margin", "format", "resume", "figures", "detail", "start-at",
        ] {
            assert!(compare.contains(&format!("[--{o}")), "{o}: {compare}");
        }
        assert!(
            compare.lines().all(|l| l.chars().count() <= 100),
            "{compare}"
        );
        assert!(find("report")
            .unwrap()
            .synopsis()
            .contains("[RUN|DIR|DIR/N ...]"));
    }

    #[test]
    fn help_takes_a_topic() {
        // Issue 52, item 8: `help cpu`, `help compare` printed the general help.
        let page = |args: &[&str]| match super::super::parse_request(&s(args)) {
            Ok(Request::Help(text)) => text,
            _ => panic!("{args:?} is not help"),
        };
        assert!(page(&["help", "compare"]).contains("--budget"));
        assert!(page(&["help", "report"]).contains("Usage: virtperf report"));
        assert!(page(&["help", "cpu"]).contains("--cpu-max-prime"));
        assert!(page(&["help", "envs"]).contains("--env"));
        for w in workload::WORKLOADS {
            assert_eq!(
                page(&["help", w.name]),
                page(&[w.name, "help"]),
                "{}",
                w.name
            );
        }
        for c in COMMANDS {
            assert_eq!(page(&["help", c.name]), c.help());
        }
        let Err(err) = super::super::parse_request(&s(&["help", "compair"])) else {
            panic!("an unknown topic was taken");
        };
        let text = err.to_string();
        assert!(text.contains("did you mean 'compare'"), "{text}");
        assert!(text.contains("cpu") && text.contains("report"), "{text}");
    }
}
