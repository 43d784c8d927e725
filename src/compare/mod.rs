//! `virtperf compare`: runs a suite on the baseline and every environment,
//! round after round with the order rotated, writes each result to the store
//! the moment it arrives, and reports each environment against the baseline.
//! Also `virtperf report`, which renders a stored comparison.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::core::signals;
use crate::env::{self, probe, Environment, Spec};
use crate::report::{self, Exporter};
use crate::store::Store;
use crate::suite::{self, Suite};
use crate::workload;

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "suite",
        OptKind::Text,
        "quick",
        "built-in suite (quick, standard, seed000-esxi-hyperv, seed002-qemu-docker, seed004-kvm-sysbench) or a TOML file",
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
        "5",
        "repetitions per environment, or auto: until every headline metric's 95% CI is within ±2% of its mean (at least 3, within --budget)",
    ),
    OptionSpec::new(
        "budget",
        OptKind::Float { min: 1.0, max: 1e7 },
        "3600",
        "seconds --repeat auto may spend",
    ),
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
];

pub fn help() -> String {
    format!(
        "virtperf compare [options] [WORKLOAD [workload options]]\n\n\
         Runs a suite (or one workload given after the options) on the baseline and on every\n\
         environment, --repeat times with the order rotated, stores every result in\n\
         --out/results.db as it arrives, and reports each environment against the baseline:\n\
         ratio with a bootstrap 95% CI, overhead or times slower, Mann–Whitney U with Holm\n\
         correction, and a verdict. Writes --out/comparison-N.html.\n\n{}\n\
         Examples:\n  virtperf compare\n  virtperf compare --env host --env docker:cpus=0.5 --repeat 3 cpu --time=2\n  \
         virtperf compare --suite standard --env qemu:smp=2 --repeat auto --budget 7200\n",
        options::render_help("Options", OPTIONS)
    ) + &format!("\nFormats: {}\n\n{}", report::format_names(), env::help())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Repeat {
    Fixed(usize),
    Auto,
}

struct Plan {
    suite: Suite,
    specs: Vec<Spec>,
    repeat: Repeat,
    budget: Duration,
    out: PathBuf,
    format: &'static dyn Exporter,
}

/// Splits compare's own options from a trailing workload invocation.
fn split_args(args: &[String]) -> (Vec<String>, Vec<String>) {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if workload::find(a).is_some() {
            return (args[..i].to_vec(), args[i..].to_vec());
        }
        // An option taking the next word as its value.
        if a.starts_with("--") && !a.contains('=') && !matches!(a.as_str(), "--resume") {
            i += 1;
        }
        i += 1;
    }
    (args.to_vec(), Vec::new())
}

fn plan(args: &[String]) -> Result<(Plan, bool)> {
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
        eprintln!("virtperf: looking for available environments (virtperf envs)...");
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
        },
        v.flag("resume"),
    ))
}

/// Progress on stderr: a rewritten line on a terminal, plain lines otherwise.
struct Progress {
    tty: bool,
    started: Instant,
    done: usize,
}

impl Progress {
    fn show(&mut self, text: &str, total: Option<usize>) {
        let eta = match total {
            Some(t) if self.done > 0 && t > self.done => {
                let per = self.started.elapsed().as_secs_f64() / self.done as f64;
                let left = per * (t - self.done) as f64;
                format!(", ETA {}m{:02}s", (left / 60.0) as u64, left as u64 % 60)
            }
            _ => String::new(),
        };
        let count = total
            .map(|t| format!(" [{}/{t}]", self.done))
            .unwrap_or_else(|| format!(" [{} done]", self.done));
        let line = format!("{count} {text}{eta}");
        if self.tty {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
    }

    fn end(&self) {
        if self.tty {
            eprintln!();
        }
    }
}

/// `virtperf compare ...`
pub fn main(args: &[String]) -> Result<()> {
    let (mut plan, resume) = plan(args)?;
    let store = Store::open(&plan.out)?;
    let (id, stored_args) = if resume {
        let last = store.latest()?.filter(|c| !c.finished).ok_or_else(|| {
            anyhow!(
                "--resume: no unfinished comparison in {}",
                plan.out.display()
            )
        })?;
        // The stored settings win, so the resumed runs belong together.
        let (p, _) = self::plan(&last.args)?;
        plan = Plan { out: plan.out, ..p };
        eprintln!(
            "virtperf: resuming comparison #{} started {}",
            last.id, last.started_at
        );
        (last.id, last.args)
    } else {
        let labels: Vec<String> = plan.specs.iter().map(|s| s.label.clone()).collect();
        let id = store.begin(
            &crate::core::time::now_rfc3339(),
            &plan.suite.name,
            &plan.specs[0].label,
            &labels,
            args,
        )?;
        (id, args.to_vec())
    };
    let _ = stored_args;
    eprintln!(
        "virtperf: comparison #{id}: suite {} ({} runs), environments {}, {} repetitions; results in {}",
        plan.suite.name,
        plan.suite.entries.len(),
        plan.specs.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(", "),
        match plan.repeat {
            Repeat::Fixed(n) => n.to_string(),
            Repeat::Auto => "auto".into(),
        },
        store.path().display()
    );
    let mut drivers: Vec<Box<dyn Environment>> =
        plan.specs.iter().map(env::driver).collect::<Result<_>>()?;
    let mut failed = vec![false; drivers.len()];
    let rounds_max = match plan.repeat {
        Repeat::Fixed(n) => n,
        Repeat::Auto => 1000,
    };
    let total = match plan.repeat {
        Repeat::Fixed(n) => Some(n * drivers.len() * plan.suite.entries.len()),
        Repeat::Auto => None,
    };
    let mut progress = Progress {
        tty: std::io::stderr().is_terminal(),
        started: Instant::now(),
        done: 0,
    };
    let started = Instant::now();
    let mut interrupted = false;
    'rounds: for (round, order) in suite::rounds(drivers.len(), rounds_max)
        .into_iter()
        .enumerate()
    {
        for ei in order {
            if failed[ei] {
                continue;
            }
            let label = plan.specs[ei].label.clone();
            let pending: Vec<usize> = (0..plan.suite.entries.len())
                .filter(|&k| !store.done(id, &label, k, round).unwrap_or(false))
                .collect();
            if pending.is_empty() {
                progress.done += plan.suite.entries.len();
                continue;
            }
            progress.done += plan.suite.entries.len() - pending.len();
            let jobs: Vec<workload::Job> = pending
                .iter()
                .map(|&k| plan.suite.entries[k].job.clone())
                .collect();
            progress.show(
                &format!(
                    "round {}: {label}: {}",
                    round + 1,
                    plan.suite.entries[pending[0]].label
                ),
                total,
            );
            let count = plan.specs[ei].count;
            let entries = &plan.suite.entries;
            let mut record_error: Option<anyhow::Error> = None;
            let outcome = env::run_with(drivers[ei].as_mut(), &jobs, &mut |inst, idx, res| {
                if count > 1 {
                    return;
                }
                let k = pending[idx];
                let r = store.record(
                    id,
                    &label,
                    k,
                    &entries[k].label,
                    round,
                    res.as_ref().map_err(String::as_str),
                );
                if let Err(e) = r {
                    record_error.get_or_insert(e);
                }
                let _ = inst;
                progress.done += 1;
                if let Some(next) = pending.get(idx + 1) {
                    progress.show(
                        &format!("round {}: {label}: {}", round + 1, entries[*next].label),
                        total,
                    );
                }
            });
            if let Some(e) = record_error {
                return Err(e.context("writing to the results store"));
            }
            match outcome {
                Ok(instances) if count > 1 => {
                    for (idx, &k) in pending.iter().enumerate() {
                        let docs: Vec<_> = instances
                            .iter()
                            .filter_map(|i| {
                                i.results.get(idx).and_then(|r| r.as_ref().ok()).cloned()
                            })
                            .collect();
                        let res = if docs.len() == count {
                            Ok(env::combine(&label, &docs).expect("non-empty"))
                        } else {
                            Err(format!(
                                "{} of {count} instances failed",
                                count - docs.len()
                            ))
                        };
                        store.record(
                            id,
                            &label,
                            k,
                            &entries[k].label,
                            round,
                            res.as_ref().map_err(String::as_str),
                        )?;
                        progress.done += 1;
                    }
                }
                Ok(_) => {}
                Err(e) if e.downcast_ref::<signals::Interrupted>().is_some() => {
                    interrupted = true;
                    break 'rounds;
                }
                Err(e) => {
                    progress.end();
                    eprintln!("virtperf: {label} failed: {e:#}; carrying on with the others");
                    for &k in &pending {
                        if !store.done(id, &label, k, round)? {
                            store.record(
                                id,
                                &label,
                                k,
                                &entries[k].label,
                                round,
                                Err(&format!("{e:#}")),
                            )?;
                        }
                    }
                    failed[ei] = true;
                }
            }
        }
        if plan.repeat == Repeat::Auto && round + 1 >= 3 {
            let cmp = store.comparison(id)?.expect("exists");
            let a = report::analyze(&cmp, &store.runs(id)?);
            if a.precise_enough(0.02) {
                progress.end();
                eprintln!(
                    "virtperf: every headline metric is within ±2% after {} rounds",
                    round + 1
                );
                break;
            }
            if started.elapsed() > plan.budget {
                progress.end();
                eprintln!(
                    "virtperf: --budget of {:.0} s spent after {} rounds; some metrics are less precise than ±2%",
                    plan.budget.as_secs_f64(),
                    round + 1
                );
                break;
            }
        }
    }
    progress.end();
    if interrupted {
        eprintln!(
            "virtperf: interrupted; everything measured so far is in {}. Continue with: virtperf compare --resume --out {}",
            store.path().display(),
            plan.out.display()
        );
        return Err(signals::Interrupted.into());
    }
    store.finish(id)?;
    let cmp = store.comparison(id)?.expect("exists");
    let analysis = report::analyze(&cmp, &store.runs(id)?);
    let html = plan.out.join(format!("comparison-{id}.html"));
    std::fs::write(&html, report::html().render(&analysis))
        .with_context(|| format!("writing {}", html.display()))?;
    print!("{}", plan.format.render(&analysis));
    eprintln!("virtperf: report written to {}", html.display());
    if failed.iter().any(|&f| f) {
        bail!("some environments failed; their errors are in the report");
    }
    Ok(())
}

pub const REPORT_OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "format",
        OptKind::Text,
        "table",
        "output format (see below)",
    ),
    OptionSpec::new(
        "out",
        OptKind::Text,
        "",
        "write to this file instead of standard output",
    ),
];

pub fn report_help() -> String {
    format!(
        "virtperf report [RUN|DIR] [--format FORMAT] [--out FILE]\n\n\
         Renders a stored comparison: RUN is a comparison number in ./virtperf-results, DIR a\n\
         results directory (its newest comparison), DIR/N a number in DIR. Default: the newest in\n\
         ./virtperf-results.\n\n{}",
        options::render_help("Options", REPORT_OPTIONS)
    ) + &format!("\nFormats: {}\n", report::format_names())
}

/// `virtperf report ...`
pub fn report_main(args: &[String]) -> Result<()> {
    let (v, rest) = options::parse(&[REPORT_OPTIONS], args, "report")?;
    let target = rest
        .first()
        .map(String::as_str)
        .unwrap_or("virtperf-results");
    let (dir, id): (PathBuf, Option<i64>) = if let Ok(n) = target.parse::<i64>() {
        (PathBuf::from("virtperf-results"), Some(n))
    } else if Path::new(target).is_dir() {
        (PathBuf::from(target), None)
    } else if let Some((d, n)) = target
        .rsplit_once('/')
        .and_then(|(d, n)| Some((d, n.parse::<i64>().ok()?)))
    {
        (PathBuf::from(d), Some(n))
    } else {
        return Err(CliError::Usage(format!(
            "report: '{target}' is neither a comparison number nor a results directory"
        ))
        .into());
    };
    if !dir.join("results.db").exists() {
        return Err(CliError::Usage(format!(
            "report: no results store in {} (run virtperf compare first, or give --out's directory)",
            dir.display()
        ))
        .into());
    }
    let store = Store::open(&dir)?;
    let cmp = match id {
        Some(n) => store.comparison(n)?,
        None => store.latest()?,
    }
    .ok_or_else(|| anyhow!("report: no such comparison in {}", dir.display()))?;
    let analysis = report::analyze(&cmp, &store.runs(cmp.id)?);
    let text = report::exporter(v.text("format"))?.render(&analysis);
    match v.text("out") {
        "" => print!("{text}"),
        path => std::fs::write(path, text).with_context(|| format!("--out {path}"))?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
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
        let (p, _) = plan(&s(&[
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
        let (p, _) = plan(&s(&["--env", "docker", "--env", "docker", "cpu"])).unwrap();
        let labels: Vec<_> = p.specs.iter().map(|s| s.label.clone()).collect();
        assert_eq!(labels, vec!["host", "docker", "docker (2)"]);
        assert!(plan(&s(&["--repeat", "zero", "--env", "host", "cpu"])).is_err());
    }
}
