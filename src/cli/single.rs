//! The single-workload form: runs one job in this process, or in each
//! `--env` environment through its agent, and prints a sysbench-style text
//! summary or one JSON document per result.

use std::sync::Arc;

use anyhow::Result;

use super::{summary, Invocation};
use crate::core::observer::{Observer, Terminal};
use crate::core::options::CliError;
use crate::core::result::{ResultDoc, StartAt};
use crate::core::signals;
use crate::core::start_at;
use crate::core::text;
use crate::env;
use crate::workload;

/// Runs the invocation where it asks and prints what came back.
pub fn main(inv: &Invocation) -> Result<()> {
    let start = match inv.start_at {
        Some(at) => Some(start_at::wait(at, &Terminal::new(true))?),
        None => None,
    };
    if inv.envs.is_empty() {
        in_process(inv, start)
    } else {
        in_envs(inv, start)
    }
}

/// Runs the job here. The text comes as sysbench prints it: the banner and
/// options before the run, the workload's header as the workers start,
/// the statistics after.
fn in_process(inv: &Invocation, start: Option<StartAt>) -> Result<()> {
    // With --json, stdout carries the document: interim lines go to stderr.
    let observer: Arc<dyn Observer> =
        Arc::new(Terminal::new(inv.json).quiet(!inv.json && !inv.prints_text()));
    let text = inv.prints_text() && inv.job.command == workload::Command::Run;
    let show = |s: &str| {
        use std::io::Write;
        print!("{s}");
        let _ = std::io::stdout().flush();
    };
    // Printed once the workload is built and about to run: bad input
    // leaves standard output empty.
    if inv.prints_banner() && inv.job.command != workload::Command::Run {
        // sysbench's banner heads its prepare and cleanup text too.
        show(&format!("{}\n\n", super::banner()));
    }
    let mut mode = summary::RunMode::of(&inv.job.values);
    mode.rand_seed = mode.rand_seed.max(inv.rand_seed);
    mode.validate |= inv.validate;
    let mut announce = |header: &str| {
        if text {
            let mut started = summary::started(header);
            if mode.debug {
                started = started.replace(
                    "Threads started!",
                    &format!("{}Threads started!", summary::workers_started(mode.threads)),
                );
            }
            show(&format!(
                "{}\n\n{}{started}",
                super::banner(),
                summary::preamble(&mode),
            ));
        }
    };
    let Some(mut done) =
        workload::execute_announced(&inv.job, "host", "host", observer, &mut announce)?
    else {
        return Ok(());
    };
    done.doc.env.start_at = start;
    if inv.json {
        println!("{}", serde_json::to_string(&done.doc)?);
    } else if text {
        if mode.debug {
            show(&summary::workers_done(&done.threads));
        }
        if let (true, Some(h)) = (inv.histogram, &done.histogram) {
            show(&summary::render_histogram(h));
        }
        // The sysbench persona prints sysbench's text only.
        let workload_text = if super::as_sysbench() {
            workload::oltp::sysbench_text(&done.text)
        } else {
            done.text.clone()
        };
        show(&summary::results(
            &done.doc,
            &workload_text,
            inv.percentile(),
        ));
        if mode.debug {
            show(&crate::engine::report::per_thread(&done.threads));
        }
        // A virtperf addition: not where sysbench's own output is asked for.
        if let (Some(w), false) = (summary::noise_warning(&done.doc), super::as_sysbench()) {
            eprintln!("{w}");
        }
    }
    Ok(())
}

/// The job in each environment, one result per instance (and the summed
/// throughput of simultaneous instances).
fn in_envs(inv: &Invocation, start: Option<StartAt>) -> Result<()> {
    let observer = Terminal::new(true);
    let text = Text::of(inv);
    let mut failed = Vec::new();
    // Every environment is built before any runs: a spec refused as given
    // (a rootless user that does not exist) stops here, exit 2.
    let mut built = Vec::new();
    for spec in &inv.envs {
        match env::driver(spec) {
            Err(e) if e.downcast_ref::<CliError>().is_some() => return Err(e),
            b => built.push(b),
        }
    }
    for (spec, b) in inv.envs.iter().zip(built) {
        let outcome =
            b.and_then(|mut e| env::run(e.as_mut(), std::slice::from_ref(&inv.job), &observer));
        let instances = match outcome {
            Ok(i) => i,
            Err(e) => {
                if e.downcast_ref::<signals::Interrupted>().is_some() {
                    return Err(e);
                }
                observer.note(&about(&spec.label, &format!("{e:#}")));
                failed.push(spec.label.clone());
                continue;
            }
        };
        let mut docs = Vec::new();
        for inst in instances {
            for r in inst.results {
                match r {
                    Ok(mut doc) => {
                        doc.env.start_at = start.clone();
                        docs.push(doc)
                    }
                    Err(msg) => {
                        observer.note(&about(&spec.label, &msg));
                        failed.push(spec.label.clone());
                    }
                }
            }
        }
        let label = format!("{} (sum of {})", spec.label, docs.len());
        let combined = match (docs.len() > 1, spec.members.is_empty()) {
            (false, _) => None,
            (true, true) => env::combine(&label, &docs),
            (true, false) => env::combine_group(&label, &docs),
        };
        for doc in docs.iter().chain(combined.iter()) {
            print!("{}", shown(doc, inv.json, &text)?);
            if let Some(w) = summary::noise_warning(doc).filter(|_| !inv.json) {
                eprintln!("{}: {}", text::one_line(&doc.env.name, 80), w);
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("failed in: {}", failed.join(", "))
    }
}

/// A failure in environment `label`, opened by its name once: the
/// session's errors already open with it ("nspawn: the agent ended
/// unexpectedly"), a driver's own (a tool not found) do not.
fn about(label: &str, msg: &str) -> String {
    match msg.strip_prefix(label) {
        Some(rest) if rest.starts_with(": ") => msg.to_string(),
        _ => format!("{label}: {msg}"),
    }
}

/// How a run that came back from an environment is told as text: as the
/// same run here would be (sysbench's layout).
struct Text {
    percentile: f64,
    mode: summary::RunMode,
    /// The workload built here, for its header and its section read back
    /// from the document; only one that needs nothing but CPU and memory is
    /// built (no files, no peer, nothing to prepare).
    built: Option<(Box<dyn workload::Workload>, String)>,
}

impl Text {
    fn of(inv: &Invocation) -> Text {
        let needs = &inv.job.def.needs;
        let pure = needs.workdir.is_none() && !needs.prepare && needs.network.is_none();
        let built = pure
            .then(|| (inv.job.def.build)(&inv.job.values).ok())
            .flatten()
            .map(|w| {
                let silent: Arc<dyn Observer> = Arc::new(crate::core::observer::Silent);
                let engine = crate::engine::EngineOptions::from_values(&inv.job.values, silent);
                let header = w.header(&engine);
                (w, header)
            });
        Text {
            percentile: inv.percentile(),
            mode: summary::RunMode::of(&inv.job.values),
            built,
        }
    }
}

/// What is printed of a document that came back from an agent: its JSON
/// line, or sysbench-style text. Every string in it is the guest's: made
/// terminal-safe here, where it is written ([`text::output`]).
fn shown(doc: &ResultDoc, json: bool, how: &Text) -> Result<String> {
    if json {
        let line = format!("{}\n", serde_json::to_string(doc)?);
        return Ok(text::output(&line, text::Form::Json).into_owned());
    }
    let hv = crate::sys::fingerprint::hypervisor_name(&doc.env.hypervisor);
    let banner = format!(
        "virtperf {} (environment: {}, hypervisor: {})",
        doc.env.virtperf_version,
        doc.env.name,
        if hv.is_empty() { "unknown" } else { hv }
    );
    let (header, section) = match &how.built {
        Some((w, header)) => (header.as_str(), w.text_of(doc)),
        None => ("", None),
    };
    let section = section.unwrap_or_else(|| metrics_text(doc));
    let mut mode = how.mode.clone();
    if let Some(t) = doc.params.get("threads").and_then(|v| v.as_u64()) {
        mode.threads = t.max(1);
    }
    let out = summary::render(doc, &banner, (&mode, header), &section, how.percentile);
    Ok(text::output(&out, text::Form::Text).into_owned())
}

/// The headline figures of a document whose workload's own text is not
/// read back here.
fn metrics_text(doc: &ResultDoc) -> String {
    let mut out = String::from("Results:\n");
    for m in &doc.metrics {
        out.push_str(&format!(
            "    {:<32} {:>14.2} {}\n",
            m.name, m.value, m.unit
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::result::Metric;

    #[test]
    fn an_environments_failure_names_it_once() {
        // The session's words open with the instance's name already.
        let died = "nspawn: the agent ended unexpectedly (exit status: 255); its stderr: x";
        assert_eq!(about("nspawn", died), died);
        // A driver's own words do not.
        assert_eq!(
            about(
                "nspawn",
                "systemd-nspawn not found: apt-get install systemd-container"
            ),
            "nspawn: systemd-nspawn not found: apt-get install systemd-container"
        );
        // Only the whole name followed by ": " counts as it.
        assert_eq!(
            about("lxc", "lxc-execute failed"),
            "lxc: lxc-execute failed"
        );
        assert_eq!(
            about("docker", "docker:cpus=2: the agent ended"),
            "docker: docker:cpus=2: the agent ended"
        );
        assert_eq!(about("qemu#1", "qemu#1: no answer"), "qemu#1: no answer");
    }

    #[test]
    fn a_guests_strings_reach_the_terminal_escaped() {
        // Issue 53, item 6: a guest's metric names, units, version and
        // hypervisor were printed raw in the single-run text.
        let evil = "\x1b]0;owned\x07\x1b[2J\r\u{9b}1m\u{202e}";
        let mut doc = ResultDoc::new(
            "cpu",
            &format!("env{evil}"),
            vec![Metric::new(
                &format!("eps{evil}"),
                1.0,
                &format!("u{evil}"),
                true,
            )],
        );
        doc.env.virtperf_version = format!("9{evil}");
        doc.env.hypervisor = format!("KVM{evil}");
        for json in [false, true] {
            let how = Text {
                percentile: 95.0,
                mode: summary::RunMode::default(),
                built: None,
            };
            let out = shown(&doc, json, &how).unwrap();
            assert!(out.contains("eps") && out.contains("KVM"), "{out}");
            assert!(
                !out.chars()
                    .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
                "json {json}: {out:?}"
            );
        }
        let how = Text {
            percentile: 95.0,
            mode: summary::RunMode::default(),
            built: None,
        };
        let back: ResultDoc = serde_json::from_str(&shown(&doc, true, &how).unwrap()).unwrap();
        assert_eq!(back, doc, "the JSON line still says what the guest said");
    }
}
