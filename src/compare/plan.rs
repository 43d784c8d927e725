//! What `virtperf compare` was asked to do: its options and help, the
//! suite (or a one-off workload given after the options), the environments
//! with the baseline first and distinct labels, and how many rounds.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::schedule::Repeat;
use crate::core::observer::Observer;
use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::env::{self, probe, Spec};
use crate::report::{self, Exporter, View};
use crate::stats::VerdictSettings;
use crate::suite::{self, Suite};
use crate::workload;

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "suite",
        OptKind::Text,
        "quick",
        "built-in suite (quick, standard, seed000-esxi-hyperv, seed002-qemu-docker, seed003-oltp, seed004-kvm-sysbench) or a TOML file",
    ),
    OptionSpec::new("baseline", OptKind::Text, "host", "the environment the others are compared with"),
    OptionSpec::new(
        "env",
        OptKind::Text,
        "",
        "an environment to compare (repeatable; default: every one `virtperf envs` finds available)",
    )
    .repeatable(),
    OptionSpec::new(
        "repeat",
        OptKind::Text,
        "auto",
        "auto: the adaptive design, each pair of entry and environment repeated until its headline verdicts are decided (at least 3 runs per side, within --budget; see 'Comparing' in the README); N: a fixed N rounds of everything",
    ),
    OptionSpec::new(
        "budget",
        OptKind::Float { min: 1.0, max: 1e7 },
        "600",
        "seconds --repeat auto may spend; undecided pairs then say why",
    ),
    MARGIN,
    DETAIL,
    OptionSpec::new("out", OptKind::Text, "virtperf-results", "results directory (SQLite store and reports)"),
    OptionSpec::new(
        "resume",
        OptKind::Bool,
        "off",
        "continue the newest unfinished comparison in --out, skipping what is done",
    ),
    OptionSpec::new(
        "format",
        OptKind::Text,
        "table",
        "what to print at the end: a format 'virtperf report --help' lists (an HTML report is always written to --out)",
    ),
    crate::core::start_at::OPTION,
];

/// `--margin`, shared with `virtperf report`.
pub const MARGIN: OptionSpec = OptionSpec::new(
    "margin",
    OptKind::Float { min: 0.1, max: 100.0 },
    "5",
    "equivalence margin in percent: ratios within [1/(1+m), 1+m] are called equivalent when the 95%-level tests show it",
);

/// `--detail`, shared with `virtperf report`.
pub const DETAIL: OptionSpec = OptionSpec::new(
    "detail",
    OptKind::Bool,
    "off",
    "show every metric of every entry, not only the headline summary (terminal and markdown)",
);

/// The verdict settings `--margin` asks for.
pub fn settings(margin_pct: f64) -> VerdictSettings {
    VerdictSettings {
        margin: margin_pct / 100.0,
        ..VerdictSettings::default()
    }
}

pub fn help() -> String {
    format!(
        "virtperf compare [options] [WORKLOAD [workload options]]\n\n\
         Runs a suite (or one workload given after the options) on the baseline and on every\n\
         environment with the order rotated, stores every result in --out/results.db as it\n\
         arrives, and reports each environment against the baseline: a headline summary with\n\
         the ratio, its 95% interval, overhead or times slower, and a verdict over each entry's\n\
         headline metrics: slower, faster, equivalent within --margin, or inconclusive with\n\
         the runs that would decide it. Every metric with --detail. Writes\n\
         --out/comparison-N.html.\n\n\
         By default (--repeat auto) the design is adaptive: every pair of entry and environment\n\
         runs 3 times, then only undecided pairs run again, cheapest progress first, until\n\
         each is decided or --budget is spent; its verdicts come from anytime-valid confidence\n\
         sequences on the runs paired by round, so looking after every round costs nothing.\n\
         --repeat N runs N fixed rounds, judged by Welch's t on logs, Holm-corrected.\n\n{}\n\
         Examples:\n  virtperf compare\n  virtperf compare --env host --env docker:cpus=0.5 --repeat 3 cpu --time=2\n  \
         virtperf compare --suite standard --env qemu:smp=2 --budget 7200\n",
        options::render_help("Options", OPTIONS)
    ) + &format!("\nFormats: {}\n\n{}", report::format_names(), env::help())
}

pub struct Plan {
    pub suite: Suite,
    pub specs: Vec<Spec>,
    pub repeat: Repeat,
    pub budget: Duration,
    pub out: PathBuf,
    pub format: &'static dyn Exporter,
    pub settings: VerdictSettings,
    pub view: View,
    /// `--start-at` as given (checked against the clock when the
    /// comparison starts, not when a resumed one is re-read).
    pub start_at: Option<String>,
}

/// Splits compare's own options from a trailing workload invocation.
pub fn split_args(args: &[String]) -> (Vec<String>, Vec<String>) {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if workload::find(a).is_some() {
            return (args[..i].to_vec(), args[i..].to_vec());
        }
        // An option taking the next word as its value.
        if a.starts_with("--") && !a.contains('=') && !matches!(a.as_str(), "--resume" | "--detail")
        {
            i += 1;
        }
        i += 1;
    }
    (args.to_vec(), Vec::new())
}

pub fn plan(args: &[String], observer: &dyn Observer) -> Result<(Plan, bool)> {
    let (own, workload) = split_args(args);
    let (v, rest) = options::parse(&[OPTIONS], &own, "compare")?;
    if let Some(extra) = rest.first() {
        return Err(CliError::Usage(format!(
            "compare: '{extra}' is neither an option nor a workload; workloads are {}",
            workload::names()
        ))
        .into());
    }
    let suite = if workload.is_empty() {
        suite::load(v.text("suite")).map_err(|e| CliError::Usage(format!("{e:#}")))?
    } else {
        suite::from_args(&workload).map_err(|e| CliError::Usage(format!("{e:#}")))?
    };
    let repeat = match v.text("repeat") {
        // The suite's own `repeat`, unless the command line says.
        _ if !v.was_given("repeat") && suite.repeat.is_some() => {
            Repeat::Fixed(suite.repeat.unwrap_or(1) as usize)
        }
        "auto" => Repeat::Auto,
        n => match n.parse::<usize>() {
            Ok(k) if (1..=1000).contains(&k) => Repeat::Fixed(k),
            _ => {
                return Err(CliError::InvalidValue {
                    name: "repeat".into(),
                    value: n.into(),
                    allowed: "a whole number from 1 to 1000, or auto".into(),
                }
                .into())
            }
        },
    };
    let baseline = Spec::parse(v.text("baseline"))?;
    let mut others: Vec<Spec> = v
        .list("env")
        .iter()
        .map(|s| Spec::parse(s))
        .collect::<Result<_, _>>()?;
    if v.list("env").is_empty() {
        observer.note("looking for available environments (virtperf envs)...");
        others = probe::available()
            .into_iter()
            .filter(|s| s.label != baseline.label)
            .collect();
    }
    // The baseline named again among --env is the baseline itself; an A/A
    // check names the second one (host:name=host-b).
    others.retain(|s| s.label != baseline.label);
    let mut specs = vec![baseline];
    for mut s in others {
        // Two environments may be the same kind (an A/A check): keep labels apart.
        let base = s.label.clone();
        let mut k = 2;
        while specs.iter().any(|x| x.label == s.label) {
            s.label = format!("{base} ({k})");
            k += 1;
        }
        specs.push(s);
    }
    Ok((
        Plan {
            suite,
            specs,
            repeat,
            budget: Duration::from_secs_f64(v.float("budget")),
            out: PathBuf::from(v.text("out")),
            format: report::exporter(v.text("format"))?,
            settings: settings(v.float("margin")),
            view: View {
                detail: v.flag("detail"),
            },
            start_at: Some(v.text("start-at").to_string()).filter(|t| !t.is_empty()),
        },
        v.flag("resume"),
    ))
}

/// The arguments that `--resume` would not use: everything but `--resume`,
/// `--out DIR` and `--start-at TIME`.
pub fn beyond_resume(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--resume" | "--resume=on" => {}
            "--out" => {
                it.next();
            }
            a if a.starts_with("--out=") => {}
            // A resumed comparison may wait for a common start again.
            "--start-at" => {
                it.next();
            }
            a if a.starts_with("--start-at=") => {}
            other => out.push(other.to_string()),
        }
    }
    out
}

/// A digest of what a plan runs (every job's arguments, in order, and the
/// environments), to notice a suite file that changed before a resume.
pub fn digest(plan: &Plan) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for e in &plan.suite.entries {
        h.update(e.label.as_bytes());
        h.update([0]);
        for a in e.job.args() {
            h.update(a.as_bytes());
            h.update([0]);
        }
        h.update([1]);
    }
    for s in &plan.specs {
        h.update(s.label.as_bytes());
        h.update([2]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_quiet(args: &[String]) -> Result<(Plan, bool)> {
        plan(args, &crate::core::observer::Silent)
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_suite_option_names_every_builtin_suite() {
        let help = OPTIONS.iter().find(|o| o.name == "suite").unwrap().help;
        for (name, _) in suite::BUILTIN {
            assert!(help.contains(name), "--suite's help lacks {name}: {help}");
        }
    }

    #[test]
    fn a_suites_repeat_is_used_unless_the_command_line_says() {
        // Issue 14, item 16: `repeat` was parsed and never used.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.toml");
        std::fs::write(&path, "repeat = 2\n[[run]]\nworkload = \"cpu\"\n").unwrap();
        let p = path.display().to_string();
        let (plan, _) = plan_quiet(&s(&["--env", "host", "--suite", &p])).unwrap();
        assert_eq!(plan.repeat, Repeat::Fixed(2));
        let (plan, _) = plan_quiet(&s(&["--env", "host", "--suite", &p, "--repeat", "3"])).unwrap();
        assert_eq!(plan.repeat, Repeat::Fixed(3));
    }

    #[test]
    fn resume_takes_no_other_settings_and_notices_a_changed_suite() {
        // Issue 14, item 17.
        assert!(beyond_resume(&s(&["--resume", "--out", "d"])).is_empty());
        assert!(beyond_resume(&s(&["--out=d", "--resume"])).is_empty());
        assert_eq!(
            beyond_resume(&s(&["--resume", "--repeat", "9", "cpu"])),
            s(&["--repeat", "9", "cpu"])
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        let p = path.display().to_string();
        std::fs::write(&path, "[[run]]\nworkload = \"cpu\"\ntime = 1\n").unwrap();
        let (a, _) = plan_quiet(&s(&["--env", "host", "--suite", &p])).unwrap();
        let (same, _) = plan_quiet(&s(&["--env", "host", "--suite", &p])).unwrap();
        assert_eq!(digest(&a), digest(&same));
        std::fs::write(&path, "[[run]]\nworkload = \"cpu\"\ntime = 2\n").unwrap();
        let (b, _) = plan_quiet(&s(&["--env", "host", "--suite", &p])).unwrap();
        assert_ne!(digest(&a), digest(&b));
    }

    #[test]
    fn a_trailing_workload_is_split_off() {
        let (own, wl) = split_args(&s(&["--env", "host", "--repeat", "3", "cpu", "--time=2"]));
        assert_eq!(own, s(&["--env", "host", "--repeat", "3"]));
        assert_eq!(wl, s(&["cpu", "--time=2"]));
        let (own, wl) = split_args(&s(&["--resume", "--out=x"]));
        assert_eq!(own.len(), 2);
        assert!(wl.is_empty());
    }

    #[test]
    fn same_kind_twice_gets_distinct_labels() {
        let (p, _) = plan_quiet(&s(&[
            "--env",
            "host",
            "--env",
            "host:name=host-b",
            "cpu",
            "--time=1",
        ]))
        .unwrap();
        let labels: Vec<_> = p.specs.iter().map(|s| s.label.clone()).collect();
        assert_eq!(labels, vec!["host", "host-b"]);
        let (p, _) = plan_quiet(&s(&["--env", "docker", "--env", "docker", "cpu"])).unwrap();
        let labels: Vec<_> = p.specs.iter().map(|s| s.label.clone()).collect();
        assert_eq!(labels, vec!["host", "docker", "docker (2)"]);
        assert!(plan_quiet(&s(&["--repeat", "zero", "--env", "host", "cpu"])).is_err());
    }
}
