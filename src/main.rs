//! Entry point: wiring only. Parses the request, runs it, prints the result,
//! and maps failures to exit codes (1 run failed, 2 bad input, 130 interrupted).

use std::process::ExitCode;

use virtperf::cli::{self, Request};
use virtperf::core::options::CliError;
use virtperf::core::signals;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if std::process::id() == 1 && args.is_empty() {
        // The kernel started us as a VM guest's init.
        virtperf::env::qemu::guest::main();
    }
    signals::install();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("virtperf: error: {err:#}");
            if err.downcast_ref::<CliError>().is_some() {
                ExitCode::from(2)
            } else if err.downcast_ref::<signals::Interrupted>().is_some() {
                ExitCode::from(130)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(args: &[String]) -> anyhow::Result<()> {
    match cli::parse_request(args)? {
        Request::Help(text) => print!("{text}"),
        Request::Version => println!("virtperf {}", env!("CARGO_PKG_VERSION")),
        Request::Agent => virtperf::agent::main()?,
        Request::Compare(args) => virtperf::compare::main(&args)?,
        Request::Report(args) => virtperf::compare::report_main(&args)?,
        Request::Serve(args) => virtperf::workload::net::server::main(&args)?,
        Request::Envs(specs) => print!("{}", virtperf::env::probe::report(&specs)),
        Request::Workload(inv) if !inv.envs.is_empty() => run_in_envs(&inv)?,
        Request::Workload(inv) => {
            if let Some(done) = cli::execute(&inv, "host", "host")? {
                if inv.values.flag("json") {
                    println!("{}", serde_json::to_string(&done.doc)?);
                } else {
                    let percentile = inv.values.float("percentile");
                    print!(
                        "{}",
                        cli::summary::render(&done.doc, &done.text, percentile)
                    );
                    if let (true, Some(h)) = (inv.values.flag("histogram"), &done.histogram) {
                        print!("{}", cli::summary::render_histogram(h));
                    }
                }
            }
        }
    }
    Ok(())
}

/// `--env`: the invocation in each environment, one result per instance
/// (and the summed throughput of simultaneous instances).
fn run_in_envs(inv: &cli::Invocation) -> anyhow::Result<()> {
    let json = inv.values.flag("json");
    let percentile = inv.values.float("percentile");
    let mut failed = Vec::new();
    for spec in &inv.envs {
        let outcome = virtperf::env::driver(spec).and_then(|mut env| {
            virtperf::env::run(env.as_mut(), std::slice::from_ref(&inv.agent_args))
        });
        let instances = match outcome {
            Ok(i) => i,
            Err(e) => {
                if e.downcast_ref::<signals::Interrupted>().is_some() {
                    return Err(e);
                }
                eprintln!("virtperf: {}: {e:#}", spec.label);
                failed.push(spec.label.clone());
                continue;
            }
        };
        let mut docs = Vec::new();
        for inst in instances {
            for r in inst.results {
                match r {
                    Ok(doc) => docs.push(doc),
                    Err(msg) => {
                        eprintln!("virtperf: {}: {msg}", spec.label);
                        failed.push(spec.label.clone());
                    }
                }
            }
        }
        let combined = (docs.len() > 1)
            .then(|| {
                virtperf::env::combine(&format!("{} (sum of {})", spec.label, docs.len()), &docs)
            })
            .flatten();
        for doc in docs.iter().chain(combined.iter()) {
            if json {
                println!("{}", serde_json::to_string(doc)?);
            } else {
                print!(
                    "{}",
                    cli::summary::render(doc, &metrics_text(doc), percentile)
                );
                println!();
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("failed in: {}", failed.join(", "))
    }
}

/// The headline figures of a document that came back from an agent.
fn metrics_text(doc: &virtperf::core::result::ResultDoc) -> String {
    let mut out = String::from("Results:\n");
    for m in &doc.metrics {
        out.push_str(&format!(
            "    {:<32} {:>14.2} {}\n",
            m.name, m.value, m.unit
        ));
    }
    out
}
