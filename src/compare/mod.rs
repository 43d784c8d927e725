//! `virtperf compare`: runs a suite on the baseline and every environment,
//! round after round with the order rotated, writes each result to the store
//! the moment it arrives, and reports each environment against the baseline.
//! Also `virtperf report`, which renders a stored comparison.

pub mod adaptive;
mod plan;
mod report_cmd;
pub mod schedule;

use anyhow::{anyhow, bail, Context, Result};

use crate::core::observer::{Observer, Terminal};
use crate::core::signals;
use crate::env;
use crate::report;
use crate::store::Store;
pub use plan::{help, Plan};
pub use report_cmd::{report_help, report_main};
use schedule::{Drivers, EnvSlot, Repeat, Schedule};

/// `virtperf compare ...`
pub fn main(args: &[String]) -> Result<()> {
    let observer = Terminal::new(true);
    let (mut plan, resume) = plan::plan(args, &observer)?;
    // Checked now, before anything is written: a moment already past is
    // refused.
    let start_at = plan
        .start_at
        .as_deref()
        .map(crate::core::start_at::check)
        .transpose()?;
    let store = Store::open(&plan.out)?;
    let id = if resume {
        let last = store.latest()?.filter(|c| !c.finished).ok_or_else(|| {
            anyhow!(
                "--resume: no unfinished comparison in {}",
                plan.out.display()
            )
        })?;
        // The stored settings are the plan, so the resumed runs belong
        // together: other settings on the command line are refused, not
        // silently dropped, and so is a suite that changed since.
        let ignored = plan::beyond_resume(args);
        if !ignored.is_empty() {
            return Err(crate::core::options::CliError::Usage(format!(
                "--resume continues comparison #{} with the settings it started with: leave out {}",
                last.id,
                ignored.join(" ")
            ))
            .into());
        }
        let (p, _) = plan::plan(&last.args, &observer)?;
        plan = Plan {
            out: plan.out,
            format: plan.format,
            view: plan.view,
            start_at: plan.start_at,
            ..p
        };
        if let Some(stored) = store.plan_digest(last.id)? {
            if stored != plan::digest(&plan) {
                return Err(crate::core::options::CliError::Usage(format!(
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
        last.id
    } else {
        let labels: Vec<String> = plan.specs.iter().map(|s| s.label.clone()).collect();
        let id = store.begin(
            &crate::core::time::now_rfc3339(),
            &plan.suite.name,
            &plan.specs[0].label,
            &labels,
            // Passwords never reach the store: a resume takes them again
            // from PGPASSWORD, MYSQL_PWD or a file option.
            &crate::core::text::without_secrets(args),
        )?;
        store.set_plan_digest(id, &plan::digest(&plan))?;
        id
    };
    observer.note(&format!(
        "comparison #{id}: suite {} ({} runs), environments {}, {} repetitions; results in {}",
        plan.suite.name,
        plan.suite.entries.len(),
        plan.specs
            .iter()
            .map(|s| s.label.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        match plan.repeat {
            Repeat::Fixed(n) => n.to_string(),
            Repeat::Auto => "auto".into(),
        },
        store.path().display()
    ));
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
        observer.note(&format!(
            "interrupted; everything measured so far is in {}. Continue with: virtperf compare --resume --out {}",
            store.path().display(),
            plan.out.display()
        ));
        return Err(signals::Interrupted.into());
    }
    store.finish(id)?;
    let cmp = store.comparison(id)?.expect("exists");
    let analysis = report::analyze(&cmp, &store.runs(id)?, &plan.settings);
    let html = plan.out.join(format!("comparison-{id}.html"));
    std::fs::write(&html, report::html().render(&analysis, plan.view))
        .with_context(|| format!("writing {}", html.display()))?;
    print!("{}", plan.format.render(&analysis, plan.view));
    observer.note(&format!("report written to {}", html.display()));
    if !outcome.failed.is_empty() {
        bail!("some environments failed; their errors are in the report");
    }
    Ok(())
}
