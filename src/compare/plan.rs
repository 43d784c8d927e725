//! What `virtperf compare` was asked to do: its options and help, the
//! suite (or a one-off workload given after the options), the environments
//! with the baseline first and distinct labels, and how many rounds.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::schedule::Repeat;
use crate::analysis::gate::{self, Gate};
use crate::core::observer::Observer;
use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::env::{self, probe, Spec};
use crate::report::{self, Exporter, View};
use crate::stats::VerdictSettings;
use crate::suite::{self, Suite};

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "suite",
        OptKind::Text,
        "quick",
        "built-in suite (quick, standard, seed000-esxi-hyperv, seed001-tschudin, seed002-qemu-docker, seed003-oltp, seed004-kvm-sysbench, sandboxes) or a TOML file",
    ),
    OptionSpec::new("baseline", OptKind::Text, "host", "the environment the others are compared with"),
    super::baseline_from::OPTION,
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
    FIGURES,
    OptionSpec::new("out", OptKind::Text, "virtperf-results", "results directory (SQLite store and reports), or postgresql://USER@HOST[:PORT]/DB: one store a fleet shares"),
    crate::store::PASSWORD_FILE,
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
    FAIL_ON,
];

/// `--fail-on`, shared with `virtperf report`.
pub const FAIL_ON: OptionSpec = OptionSpec::new(
    "fail-on",
    OptKind::Choice(gate::WORDS),
    "",
    "exit with code 3 (after writing every result and report) when a headline verdict is this (repeatable; changed: slower or faster; inconclusive: also no verdict), naming the rows that tripped it",
)
.repeatable();

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

/// `--figures`, shared with `virtperf report`.
pub const FIGURES: OptionSpec = OptionSpec::new(
    "figures",
    OptKind::Text,
    "",
    "also write each chart of the report as a standalone SVG file into this directory (for papers and slides)",
);

/// The verdict settings `--margin` asks for.
pub fn settings(margin_pct: f64) -> VerdictSettings {
    VerdictSettings {
        margin: margin_pct / 100.0,
        ..VerdictSettings::default()
    }
}

/// `virtperf compare --help` below its synopsis (the command table's).
pub fn help() -> String {
    format!(
        "Runs a suite (or one workload or sysbench Lua script given after the options; a\n\
         script's text, at most 1 MiB, travels into each environment) on the baseline and on every\n\
         environment, each entry in every environment back to back with the order rotated,\n\
         stores every result in --out/results.db as it arrives, and reports each environment\n\
         against the baseline: a headline summary with the ratio, its 95% interval, overhead\n\
         or times slower, and a verdict over each entry's headline metrics: slower, faster,\n\
         equivalent within --margin, or inconclusive with the runs that would decide it.\n\
         Every metric with --detail. Writes --out/comparison-N.html.\n\n\
         By default (--repeat auto) the design is adaptive: every pair of entry and environment\n\
         runs 3 times, then only undecided pairs run again, cheapest progress first, until\n\
         each is decided or --budget is spent; its verdicts come from anytime-valid confidence\n\
         sequences on the runs paired by round, so looking after every round costs nothing.\n\
         --repeat N runs N fixed rounds, judged by Welch's t on logs, Holm-corrected.\n\n\
         --baseline-from STORE[#N] compares with an earlier comparison instead (another day,\n\
         another host): its baseline's runs of the entries this one runs with the same\n\
         parameters become this comparison's baseline, and only the --env environments run\n\
         (--repeat N, by default as many rounds as it has runs, 3 to 30). No run has a partner\n\
         of its round, so the verdicts are unpaired (Welch's t, Mann-Whitney beside it) and\n\
         their intervals wider: the drift between the two days stays in the noise, and a change\n\
         of the machine since is part of the ratio. An entry it did not run, or ran with other\n\
         parameters, is reported as not comparable, with why.\n\n{}\n\
         Examples:\n  virtperf compare\n  virtperf compare --env host --env docker:cpus=0.5 --repeat 3 cpu --time=2\n  \
         virtperf compare --baseline-from virtperf-results#3 --env host --env docker cpu --time=2\n  \
         virtperf compare --env host --env docker --repeat 3 ./my.lua --time=2\n  \
         virtperf compare --suite standard --env qemu:smp=2 --budget 7200\n",
        options::render_help("Options", OPTIONS)
    ) + &format!("\nFormats: {}\n\n{}", report::format_names(), env::help())
}

/// Where a comparison's jobs come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SuiteSource {
    /// `--suite`: a built-in suite's name or a TOML file's path.
    Suite(String),
    /// One workload invocation given after compare's options
    /// (`cpu --time=2`), its name first.
    Invocation(Vec<String>),
}

impl SuiteSource {
    /// Reads the suite; a suite that does not load is bad input.
    pub fn load(&self) -> Result<Suite, CliError> {
        match self {
            SuiteSource::Suite(name) => suite::load(name),
            SuiteSource::Invocation(args) => suite::from_args(args),
        }
        .map_err(|e| CliError::Usage(format!("{e:#}")))
    }

    /// The same source without secret options, as it may be stored.
    fn without_secrets(&self) -> SuiteSource {
        match self {
            SuiteSource::Suite(name) => SuiteSource::Suite(name.clone()),
            SuiteSource::Invocation(args) => {
                SuiteSource::Invocation(crate::core::text::without_secrets(args))
            }
        }
    }
}

/// What a comparison runs, as asked: the part of `virtperf compare`'s
/// request that a `--resume` takes from the store (as JSON) rather than
/// from its own command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanArgs {
    pub suite: SuiteSource,
    /// `--baseline`.
    #[serde(with = "spec_text")]
    pub baseline: Spec,
    /// `--env`, in order; empty: every environment the probes find
    /// available (a stored plan names the ones found).
    #[serde(with = "spec_texts")]
    pub envs: Vec<Spec>,
    /// `--repeat`; `None`: the suite's own, else auto.
    #[serde(with = "repeat_text")]
    pub repeat: Option<Repeat>,
    /// `--budget`.
    #[serde(with = "seconds")]
    pub budget: Duration,
    /// `--margin`, in percent.
    pub margin_pct: f64,
    /// `--baseline-from STORE[#N]` as given: the baseline's runs are an
    /// earlier comparison's (copied in when the comparison began), and
    /// `envs` are all this comparison runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_from: Option<String>,
}

impl PlanArgs {
    /// The same request as compare's options, for the store's `args`
    /// column (which builds before typed requests resumed from) and for
    /// people reading the store. Secret options of an invocation are left
    /// out: a resume takes them again from PGPASSWORD, MYSQL_PWD or a file
    /// option.
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut opt = |name: &str, value: String| {
            out.push(format!("--{name}"));
            out.push(value);
        };
        if let SuiteSource::Suite(name) = &self.suite {
            opt("suite", name.clone());
        }
        match &self.baseline_from {
            Some(from) => opt("baseline-from", from.clone()),
            None => opt("baseline", self.baseline.text.clone()),
        }
        for e in &self.envs {
            opt("env", e.text.clone());
        }
        if let Some(r) = self.repeat {
            opt("repeat", repeat_text::word(r));
        }
        opt("budget", self.budget.as_secs_f64().to_string());
        opt("margin", self.margin_pct.to_string());
        if let SuiteSource::Invocation(args) = &self.suite {
            out.extend(args.iter().cloned());
        }
        crate::core::text::without_secrets(&out)
    }
}

/// `virtperf compare`, parsed ([`super::args::parse`]).
#[derive(Clone)]
pub struct CompareArgs {
    /// What to run; with `resume`, what the command line said is unused.
    pub plan: PlanArgs,
    /// `--out`: the results directory, or a PostgreSQL store.
    pub out: crate::store::Location,
    /// `--format`: what to print at the end.
    pub format: &'static Exporter,
    pub view: View,
    /// `--figures`: where each chart goes as an SVG file.
    pub figures: Option<PathBuf>,
    /// `--start-at`, as given (checked against the clock when the
    /// comparison starts).
    pub start_at: Option<String>,
    /// `--resume`: continue the newest unfinished comparison in `out`.
    pub resume: Option<Resume>,
    /// `--fail-on`: the headline verdicts that end the command with
    /// `gate::EXIT_CODE`, after every result and report is written.
    pub fail_on: Vec<Gate>,
    /// `--baseline-from`, read: where the baseline's runs come from (the
    /// text is `plan.baseline_from`).
    pub baseline_from: Option<super::baseline_from::Source>,
}

/// What `--resume` was given beside it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resume {
    /// The arguments a resume would not use (everything but `--resume`,
    /// `--out` and `--start-at`), as typed: refused, never silently
    /// dropped.
    pub ignored: Vec<String>,
}

/// A comparison's plan, resolved: the suite read, the environments found.
pub struct Plan {
    pub suite: Suite,
    /// The baseline first; labels distinct. With `--baseline-from`, only
    /// the environments this comparison runs (its baseline's runs are an
    /// earlier comparison's).
    pub specs: Vec<Spec>,
    /// `--baseline-from` was given: `specs` holds no baseline.
    pub borrowed_baseline: bool,
    pub repeat: Repeat,
    pub budget: Duration,
    pub settings: VerdictSettings,
}

/// Reads the suite and finds the environments `args` ask for; also the
/// request to store: the environments found named, secret options left
/// out.
pub fn resolve(args: &PlanArgs, observer: &dyn Observer) -> Result<(Plan, PlanArgs), CliError> {
    let suite = args.suite.load()?;
    let repeat = match args.repeat {
        Some(r) => r,
        // The suite's own `repeat`, unless the command line says.
        None => match suite.repeat {
            Some(n) => Repeat::Fixed(n as usize),
            None => Repeat::Auto,
        },
    };
    let baseline = args.baseline.clone();
    let borrowed = args.baseline_from.is_some();
    let mut others = args.envs.clone();
    if others.is_empty() && !suite.envs.is_empty() {
        others = suite_envs(&suite, observer)?;
    }
    if others.is_empty() {
        observer.note("looking for available environments (virtperf envs)...");
        others = probe::available()
            .into_iter()
            .filter(|s| borrowed || s.label != baseline.label)
            .collect();
    }
    // The baseline named again among --env is the baseline itself; an A/A
    // check names the second one (host:name=host-b). Against an earlier
    // baseline, today's host is an environment like any other.
    if !borrowed {
        others.retain(|s| s.label != baseline.label);
    }
    if others.is_empty() && borrowed {
        return Err(CliError::Usage(
            "--baseline-from: no environment to measure against the earlier baseline: give one with --env (e.g. --env host)".into(),
        ));
    }
    // Passwords never reach the store: a resume takes them again from
    // PGPASSWORD, MYSQL_PWD or a file option.
    let stored = PlanArgs {
        suite: args.suite.without_secrets(),
        envs: others.clone(),
        ..args.clone()
    };
    let mut specs = if borrowed { Vec::new() } else { vec![baseline] };
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
    let plan = Plan {
        suite,
        specs,
        borrowed_baseline: borrowed,
        repeat,
        budget: args.budget,
        settings: settings(args.margin_pct),
    };
    Ok((plan, stored))
}

/// The longest reason shown for leaving a suite's environment out: whole
/// (a probe's reason ends with its fix, after the tool's own words), yet
/// bounded, since those words are the tool's.
const REASON_MAX: usize = 1000;

/// The environments a suite names (its matrix), parsed as `--env` values;
/// those this machine cannot run are left out with a note.
fn suite_envs(suite: &crate::suite::Suite, observer: &dyn Observer) -> Result<Vec<Spec>, CliError> {
    let mut out = Vec::new();
    for text in &suite.envs {
        let spec = Spec::parse(text)
            .map_err(|e| CliError::Usage(format!("suite {}: envs: {e}", suite.name)))?;
        let (ok, why) = (spec.driver.probe)(&spec);
        if ok {
            out.push(spec);
        } else {
            observer.note(&format!(
                "suite {}: leaving out {text}: {}",
                suite.name,
                crate::core::text::one_line(&why, REASON_MAX)
            ));
        }
    }
    observer.note(&format!(
        "suite {}: comparing {} of its {} environments (give --env to choose others)",
        suite.name,
        out.len(),
        suite.envs.len()
    ));
    Ok(out)
}

/// An environment spec stored as the text it was given as, parsed again
/// when read.
mod spec_text {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use crate::env::Spec;

    pub fn serialize<S: Serializer>(spec: &Spec, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&spec.text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Spec, D::Error> {
        Spec::parse(&String::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// A list of environment specs, each as its text.
mod spec_texts {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use crate::env::Spec;

    pub fn serialize<S: Serializer>(specs: &[Spec], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(specs.iter().map(|spec| spec.text.as_str()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Spec>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|t| Spec::parse(t).map_err(D::Error::custom))
            .collect()
    }
}

/// `--repeat` as its word (`auto`, `3`), or null when not given.
mod repeat_text {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use super::Repeat;

    /// The word `--repeat` takes for `r`.
    pub fn word(r: Repeat) -> String {
        match r {
            Repeat::Fixed(n) => n.to_string(),
            Repeat::Auto => "auto".into(),
        }
    }

    pub fn serialize<S: Serializer>(r: &Option<Repeat>, s: S) -> Result<S::Ok, S::Error> {
        match r {
            Some(r) => s.serialize_some(&word(*r)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Repeat>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|w| match w.as_str() {
                "auto" => Ok(Repeat::Auto),
                n => n
                    .parse()
                    .map(Repeat::Fixed)
                    .map_err(|_| D::Error::custom(format!("repeat '{n}'"))),
            })
            .transpose()
    }
}

/// A duration as seconds.
mod seconds {
    use std::time::Duration;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Duration::try_from_secs_f64(f64::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// A digest of what a plan runs (every job's arguments and script, in
/// order, and the environments), to notice a suite file or script that
/// changed before a resume.
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
        if let Some(script) = &e.job.script {
            h.update(&script.source.text);
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

    #[test]
    fn an_environment_left_out_of_a_suite_is_shown_with_its_whole_reason() {
        // Rootless Podman for a user that does not exist: a reason of some
        // 240 characters whose fix (the usermod line) comes last.
        let user = "vp-no-such-user-probe";
        let suite = crate::suite::Suite {
            name: "s".into(),
            description: String::new(),
            repeat: None,
            envs: vec![format!("podman:rootless={user},name=rootless-podman")],
            entries: Vec::new(),
        };
        let rec = crate::core::observer::Recording::default();
        let kept = suite_envs(&suite, &rec).unwrap();
        assert!(kept.is_empty());
        let notes: Vec<String> = rec
            .events()
            .into_iter()
            .filter_map(|e| match e {
                crate::core::observer::Event::Note(n) => Some(n),
                _ => None,
            })
            .collect();
        let left = notes.iter().find(|n| n.contains("leaving out")).unwrap();
        assert!(!left.contains("(cut)"), "{left}");
        if left.contains("there is no user") {
            assert!(
                left.ends_with(&format!("--add-subgids 100000-165535 {user})")),
                "{left}"
            );
        }
    }

    #[test]
    fn the_suite_option_names_every_builtin_suite() {
        let help = OPTIONS.iter().find(|o| o.name == "suite").unwrap().help;
        for (name, _) in suite::BUILTIN {
            assert!(help.contains(name), "--suite's help lacks {name}: {help}");
        }
    }

    #[test]
    fn a_plan_request_survives_the_store_without_its_secrets() {
        let args = PlanArgs {
            suite: SuiteSource::Invocation(
                ["cpu", "--time=2", "--pgsql-password=hunter2"]
                    .map(String::from)
                    .to_vec(),
            ),
            baseline: Spec::parse("host").unwrap(),
            envs: vec![Spec::parse("host:name=host-b").unwrap()],
            repeat: Some(Repeat::Fixed(3)),
            budget: Duration::from_secs_f64(12.5),
            margin_pct: 2.5,
            baseline_from: None,
        };
        let json = serde_json::to_string(&args).unwrap();
        let back: PlanArgs = serde_json::from_str(&json).unwrap();
        assert_eq!(back, args);
        let auto = PlanArgs {
            repeat: None,
            suite: SuiteSource::Suite("quick".into()),
            ..args.clone()
        };
        let back: PlanArgs = serde_json::from_str(&serde_json::to_string(&auto).unwrap()).unwrap();
        assert_eq!(back, auto);
        assert!(!args.to_args().join(" ").contains("hunter2"));
        let kept = args.suite.without_secrets();
        assert!(!serde_json::to_string(&kept).unwrap().contains("hunter2"));
    }
}
