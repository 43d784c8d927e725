//! Entry point: wiring only. Parses the request, runs it, prints the result,
//! and maps failures to exit codes (1 run failed, 2 bad input, 3 a --fail-on
//! gate tripped, 130 interrupted).

use std::process::ExitCode;

use virtperf::cli;
use virtperf::core::fatal::{InitFatal, SysbenchFatal};
use virtperf::core::options::CliError;
use virtperf::core::signals;

fn main() -> ExitCode {
    // A reader that goes away (`virtperf cpu run | head`) ends the output:
    // the print that finds the pipe closed unwinds quietly, cleaning up as
    // any error does, and the exit code is a shell's for SIGPIPE.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !stdout_closed(info.payload()) {
            report(info);
        }
    }));
    match std::panic::catch_unwind(virtperf_main) {
        Ok(code) => code,
        Err(payload) if stdout_closed(payload.as_ref()) => ExitCode::from(141),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// Whether a panic is std's for printing to a standard output whose
/// reader has gone.
fn stdout_closed(payload: &(dyn std::any::Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    text.starts_with("failed printing to stdout") && text.contains("Broken pipe")
}

fn virtperf_main() -> ExitCode {
    virtperf::sys::malloc::pin_thresholds();
    virtperf::workload::microops::fresh::enable();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if std::process::id() == 1 && args.is_empty() {
        // The kernel started us as a VM guest's init.
        virtperf::env::qemu::guest::main();
    }
    signals::install();
    if cli::as_sysbench() {
        return as_sysbench(&args);
    }
    match cli::parse_request(&args)
        .map_err(anyhow::Error::from)
        .and_then(cli::run)
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.downcast_ref::<cli::script::Exit>().is_some() => {
            ExitCode::from(err.downcast_ref::<cli::script::Exit>().map_or(1, |e| e.0))
        }
        // The host's agent writes to the user's terminal (its stderr is
        // this process's): after a Ctrl-C its host says it was interrupted,
        // once, with what to do next.
        Err(err)
            if args.first().is_some_and(|a| a == "agent")
                && err.downcast_ref::<signals::Interrupted>().is_some() =>
        {
            ExitCode::from(130)
        }
        // A --fail-on gate tripped: everything was written; the rows that
        // tripped it are said, and the exit code is the gate's own.
        Err(err)
            if err
                .downcast_ref::<virtperf::analysis::gate::Tripped>()
                .is_some() =>
        {
            eprintln!("virtperf: {}", error_text(&err));
            ExitCode::from(virtperf::analysis::gate::EXIT_CODE)
        }
        Err(err) => {
            // An error may carry a server's, a guest's or a store's text:
            // its control characters are shown, never interpreted.
            eprintln!("virtperf: error: {}", error_text(&err));
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

fn error_text(err: &anyhow::Error) -> String {
    virtperf::core::text::terminal_safe(&format!("{err:#}"), 16_000)
}

/// Started as `sysbench`: its refusals, warnings and exit codes (1 for
/// anything that failed, as sysbench; 130 after Ctrl-C).
fn as_sysbench(args: &[String]) -> ExitCode {
    let (prefix, request) = match cli::sysbench::front(args) {
        Ok(r) => r,
        Err(answer) => {
            print!("{}", answer.stdout);
            eprint!("{}", answer.stderr);
            return ExitCode::from(answer.code);
        }
    };
    print!("{prefix}");
    match cli::run(request) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.downcast_ref::<signals::Interrupted>().is_some() => ExitCode::from(130),
        Err(err) if err.downcast_ref::<cli::script::Exit>().is_some() => {
            ExitCode::from(err.downcast_ref::<cli::script::Exit>().map_or(1, |e| e.0))
        }
        Err(err) if err.downcast_ref::<InitFatal>().is_some() => {
            let fatal = &err.downcast_ref::<InitFatal>().expect("checked").0;
            let verbosity = cli::sysbench::verbosity(args);
            if verbosity >= 3 {
                print!("{}\n\n", cli::banner());
            }
            print!("{}", fatal.text(verbosity));
            ExitCode::FAILURE
        }
        Err(err) if err.downcast_ref::<SysbenchFatal>().is_some() => {
            let fatal = err.downcast_ref::<SysbenchFatal>().expect("checked");
            print!("{}", fatal.text(cli::sysbench::verbosity(args)));
            ExitCode::FAILURE
        }
        Err(err) => {
            // sysbench logs its FATAL lines on standard output.
            match err
                .downcast_ref::<CliError>()
                .and_then(|e| cli::sysbench::own_check(e, args))
            {
                // Refused before the run printed its banner.
                Some(fatal) if cli::sysbench::verbosity(args) >= 3 => {
                    print!("{}\n\n{fatal}", cli::banner())
                }
                Some(fatal) => print!("{fatal}"),
                None => println!("FATAL: {}", error_text(&err)),
            }
            ExitCode::FAILURE
        }
    }
}
