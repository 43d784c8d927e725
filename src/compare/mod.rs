//! `virtperf compare`: runs a suite on the baseline and every environment,
//! round after round, each entry in every environment back to back with
//! the order rotated (`suite::order`), writes each result to the store
//! the moment it arrives, and reports each environment against the baseline.
//! Also `virtperf report`, which renders a stored comparison, and
//! `virtperf history`, every stored comparison over time.

pub mod adaptive;
pub mod args;
pub mod baseline_from;
mod history_cmd;
pub mod plan;
mod report_cmd;
pub mod schedule;

use anyhow::{bail, Context, Result};

use crate::analysis::gate;
use crate::core::observer::{Observer, Terminal};
use crate::core::options::CliError;
use crate::core::signals;
use crate::core::text;
use crate::env;
use crate::report;
use crate::store::Store;
pub use history_cmd::{
    history_help, history_main, parse as history_cmd_parse, HistoryArgs, HISTORY_OPTIONS,
};
use plan::Plan;
pub use plan::{help, CompareArgs, PlanArgs, Resume, SuiteSource};
pub use report_cmd::{report_help, report_main, ReportArgs, REPORT_OPTIONS};
use schedule::{Drivers, EnvSlot, Repeat, Schedule};

/// `virtperf compare ...`. A resume takes its plan from the store; a store
/// from before typed requests kept only the arguments, which
/// [`args::parse`] reads as it reads a command line.
pub fn main(args: CompareArgs) -> Result<()> {
    let observer = Terminal::new(true);
    // A new comparison's plan is resolved before anything is written; a
    // resumed one's is read from the store.
    let fresh = match &args.resume {
        None => Ok(plan::resolve(&args.plan, &observer)?),
        Some(resume) => Err(resume),
    };
    // Checked now, before anything is written: a moment already past is
    // refused.
    let start_at = args
        .start_at
        .as_deref()
        .map(crate::core::start_at::check)
        .transpose()?;
    // An earlier comparison's baseline is read and matched before
    // anything is written too.
    let fresh = match (fresh, &args.baseline_from) {
        (Ok((plan, stored)), Some(src)) => Ok(borrow(plan, stored, src)?),
        (Ok((plan, stored)), None) => Ok((plan, stored, None)),
        (Err(resume), _) => Err(resume),
    };
    let store = Store::create(&args.out)?;
    let (plan, id) = match fresh {
        Ok((plan, stored, borrowed)) => {
            let id = begin(&store, &plan, &stored, borrowed.as_ref())?;
            (plan, id)
        }
        Err(resume) => resumed(&store, resume, &args.out, &observer)?,
    };
    announce(&observer, id, &plan, &store);
    let drivers = plan.specs.iter().map(env::driver).collect::<Result<_>>()?;
    let envs: Vec<EnvSlot> = plan
        .specs
        .iter()
        .map(|s| EnvSlot {
            label: s.label.clone(),
            count: s.count,
            group: !s.members.is_empty(),
        })
        .collect();
    let start = match start_at {
        Some(at) => Some(crate::core::start_at::wait(at, &observer)?),
        None => None,
    };
    if let Some(s) = &start {
        observer.note(&format!(
            "started at {}, {:.1} ms after the --start-at moment {}",
            s.began,
            s.late_s * 1000.0,
            s.target
        ));
    }
    let outcome = Schedule {
        comparison: id,
        start_at: start,
        suite: &plan.suite,
        envs: &envs,
        repeat: plan.repeat,
        budget: plan.budget,
        settings: plan.settings,
        store: &store,
        observer: &observer,
    }
    .run(&mut Drivers::new(drivers, &observer, &plan.suite))?;
    if let Some(why) = &outcome.stopped_because {
        observer.note(why);
    }
    if outcome.interrupted {
        let next = match args.out.dir() {
            Some(_) => format!(
                "Continue with: virtperf compare --resume --out {}",
                args.out
            ),
            None => format!("'virtperf report {}#{id}' reports it", args.out),
        };
        observer.note(&format!(
            "interrupted; everything measured so far is in {}. {next}",
            store.place()
        ));
        return Err(signals::Interrupted.into());
    }
    store.finish(id)?;
    let cmp = store.comparison(id)?.expect("exists");
    let analysis = report::analyze(&cmp, &store.runs(id)?, &plan.settings);
    write_reports(&args, id, &analysis, &observer)?;
    let tripped: Vec<String> = gate::trips(&analysis, &args.fail_on)
        .iter()
        .map(|r| r.to_string())
        .collect();
    let gated = gate::verdict(format!("comparison #{id}"), tripped);
    if !outcome.failed.is_empty() {
        // A failed run is the graver news (exit 1); the gate is said too.
        if let Err(t) = &gated {
            observer.note(&t.to_string());
        }
        bail!("some environments failed; their errors are in the report");
    }
    Ok(gated?)
}

/// The line that opens a comparison: its number, suite, environments,
/// repetitions and where its results go.
fn announce(observer: &Terminal, id: i64, plan: &Plan, store: &Store) {
    let entries = plan.suite.entries.len();
    observer.note(&format!(
        "comparison #{id}: suite {} ({entries} {}), environments {}, repetitions: {}; results in {}",
        plan.suite.name,
        if entries == 1 { "entry" } else { "entries" },
        plan.specs
            .iter()
            .map(|s| s.label.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        match plan.repeat {
            Repeat::Fixed(n) => n.to_string(),
            Repeat::Auto => "auto".into(),
        },
        store.place()
    ));
    let from = store
        .comparison(id)
        .ok()
        .flatten()
        .and_then(|c| c.baseline_from);
    if let Some(f) = from.filter(|_| plan.borrowed_baseline) {
        observer.note(&format!(
            "comparison #{id} is unpaired: its baseline is {}'s runs of comparison #{} of {} from {} ({}); only the environments above run, in the fixed design",
            f.env, f.comparison, f.store, f.started_at, f.fingerprint
        ));
        for (label, why) in &f.not_comparable {
            observer.note(&format!("{label}: {why}"));
        }
    }
}

/// Reads the earlier comparison `--baseline-from` names and fits the plan
/// to it: the fixed design (the adaptive one pairs runs by round), by
/// default with as many rounds as the earlier baseline has runs; the
/// request stored says so, so a resume runs the same.
fn borrow(
    mut plan: Plan,
    mut stored: PlanArgs,
    src: &baseline_from::Source,
) -> Result<(Plan, PlanArgs, Option<baseline_from::Borrowed>)> {
    let borrowed = baseline_from::read(src, &plan.suite)?;
    if plan.repeat == Repeat::Auto {
        plan.repeat = Repeat::Fixed(borrowed.rounds);
    }
    stored.repeat = Some(plan.repeat);
    Ok((plan, stored, Some(borrowed)))
}

/// Records a new comparison of `plan` in the store, with its digest and
/// the request it was made from (what `--resume` reads back), and with
/// `--baseline-from` the earlier baseline's runs and where they came from,
/// all in one transaction; its id.
fn begin(
    store: &Store,
    plan: &Plan,
    stored: &PlanArgs,
    borrowed: Option<&baseline_from::Borrowed>,
) -> Result<i64> {
    let mut labels: Vec<String> = plan.specs.iter().map(|s| s.label.clone()).collect();
    if let Some(b) = borrowed {
        labels.insert(0, b.label.clone());
    }
    store.in_transaction(|store| {
        let id = store.begin(
            &crate::core::time::now_rfc3339(),
            &plan.suite.name,
            &labels[0],
            &labels,
            &stored.to_args(),
        )?;
        store.set_plan_digest(id, &plan::digest(plan))?;
        store.set_request(id, &serde_json::to_string(stored)?)?;
        if let Some(b) = borrowed {
            store.set_baseline_from(id, &b.from)?;
            for (k, r) in &b.runs {
                let Some(doc) = &r.doc else { continue };
                let label = &plan.suite.entries[*k].label;
                store.record(id, &b.label, *k, label, r.round, Ok(doc))?;
            }
        }
        Ok(id)
    })
}

/// The HTML report in `--out`, the report in `--format` on stdout, and
/// with `--figures` the charts as SVG files.
fn write_reports(
    args: &CompareArgs,
    id: i64,
    analysis: &report::Analysis,
    observer: &Terminal,
) -> Result<()> {
    let report = args.format.render_gated(analysis, args.view, &args.fail_on);
    print!(
        "{}",
        text::output(&report, text::Form::of(args.format.name()))
    );
    // A PostgreSQL store has no directory for the page: `report` makes it.
    match args.out.dir() {
        Some(dir) => {
            let html = dir.join(format!("comparison-{id}.html"));
            let page = report::html().render(analysis, args.view);
            std::fs::write(&html, text::output(&page, text::Form::Text).as_bytes())
                .with_context(|| format!("writing {}", html.display()))?;
            observer.note(&format!("report written to {}", html.display()));
        }
        None => observer.note(&format!(
            "stored in {}: 'virtperf report {}#{id} --format html' makes its page",
            args.out, args.out
        )),
    }
    if let Some(dir) = &args.figures {
        let n = report::write_figures(&report::document(analysis, args.view), dir)?;
        observer.note(&format!("{n} figures written to {}", dir.display()));
    }
    Ok(())
}

/// The comparison `--resume` continues (the newest unfinished one in the
/// store) and the plan it started with, read from the store.
fn resumed(
    store: &Store,
    resume: &Resume,
    out: &crate::store::Location,
    observer: &dyn Observer,
) -> Result<(Plan, i64)> {
    let last = store
        .latest()?
        .filter(|c| !c.finished)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--resume: no unfinished comparison in {}: every one there finished (or none started); 'virtperf report {}' shows the newest, and 'virtperf compare' without --resume starts another",
                out,
                out
            ))
        })?;
    // The stored settings are the plan, so the resumed runs belong
    // together: other settings on the command line are refused, not
    // silently dropped, and so is a suite that changed since.
    if !resume.ignored.is_empty() {
        return Err(CliError::Usage(format!(
            "--resume continues comparison #{} with the settings it started with: leave out {}",
            last.id,
            resume.ignored.join(" ")
        ))
        .into());
    }
    let request = match store.request(last.id)? {
        Some(json) => serde_json::from_str::<PlanArgs>(&json).with_context(|| {
            format!(
                "--resume: the plan stored for comparison #{} does not read; start a new comparison (without --resume)",
                last.id
            )
        })?,
        // A store from before typed requests kept only the arguments.
        None => args::parse(&last.args)?.plan,
    };
    let (plan, _) = plan::resolve(&request, observer)?;
    if let Some(stored) = store.plan_digest(last.id)? {
        if stored != plan::digest(&plan) {
            return Err(CliError::Usage(format!(
                "--resume: the suite '{}' changed since comparison #{} started: start a new comparison (without --resume)",
                plan.suite.name, last.id
            ))
            .into());
        }
    }
    observer.note(&format!(
        "resuming comparison #{} started {}",
        last.id, last.started_at
    ));
    Ok((plan, last.id))
}
