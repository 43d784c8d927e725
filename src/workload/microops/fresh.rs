//! Each microops run in a fresh process of this binary.
//!
//! Some operations cost what the process's state makes them cost, and a
//! long-lived agent (one per environment, serving a whole comparison)
//! carries its state from run to run: where its mappings lie (address
//! randomisation, what earlier workloads mapped) decides whether a new
//! mapping needs new page tables or merges with a neighbour. So an agent
//! kept one offset for all its runs: a host-against-host comparison called
//! `mmap_munmap_ns` 0.807× [0.782, 0.832] "faster" and `malloc_1g_ns` 0.837×
//! (each agent steady, the two agents apart), which no number of rounds can
//! average out. In a fresh process per run the layout is drawn anew each
//! run: the offset becomes run-to-run noise, which the comparison's
//! intervals account for.
//!
//! The run is `virtperf microops ... --json run` with [`ENV`] set: the
//! child measures in its own process and carries its text summary in the
//! document's details, which the parent reads (bounded, validated, within
//! a deadline) and turns back into this run's measurement. Only the binary's
//! `main` turns this on ([`enable`]), so a library caller (and the unit
//! tests) measure in their own process.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::ops::Op;
use crate::core::result::ResultDoc;
use crate::workload::Measurement;

/// Set in the child: measure here.
pub const ENV: &str = "VIRTPERF_MICROOPS_CHILD";
/// Where the child's text summary travels in its document's details.
pub const TEXT_KEY: &str = "child_text";
/// The most the child may print.
const MAX_OUTPUT: u64 = 4 << 20;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Runs from here on measure in a fresh process (called by `main`).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether this run goes to a fresh process: enabled, and not in the child.
pub fn wanted() -> bool {
    ENABLED.load(Ordering::Relaxed) && std::env::var_os(ENV).is_none()
}

/// Whether this process is the child.
pub fn in_child() -> bool {
    std::env::var_os(ENV).is_some()
}

/// The child's command line.
pub fn args(ops: &[Op], repeats: u64, batch: u64, time: Option<Duration>) -> Vec<String> {
    let names: Vec<&str> = ops.iter().map(|o| o.name()).collect();
    vec![
        "microops".into(),
        format!("--ops={}", names.join(",")),
        format!("--repeats={repeats}"),
        format!("--batch={batch}"),
        format!("--time={}", time.map_or(0.0, |t| t.as_secs_f64())),
        "--json".into(),
        "run".into(),
    ]
}

fn drain(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut from).take(MAX_OUTPUT).read_to_end(&mut out);
        // Whatever is beyond the bound is read and dropped, so the child
        // never blocks on a full pipe.
        let _ = std::io::copy(&mut from, &mut std::io::sink());
        out
    })
}

/// Asks the child to stop as Ctrl-C would (it removes its scratch files),
/// and kills it if it has not ended within [`STOP_GRACE`].
fn stop(child: &mut std::process::Child) {
    // SAFETY: kill(2) on our own child's pid, not yet reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let until = Instant::now() + STOP_GRACE;
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// How long a child asked to stop has before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Runs the child and waits for it (at most `limit`, or until Ctrl-C).
pub fn run(args: &[String], limit: Duration) -> Result<Measurement> {
    let exe =
        std::env::current_exe().context("microops: finding this binary for a fresh process")?;
    let mut child = Command::new(&exe)
        .args(args)
        .env(ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("microops: starting {}", exe.display()))?;
    let out = drain(child.stdout.take().expect("piped"));
    let err = drain(child.stderr.take().expect("piped"));
    let until = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if crate::core::signals::interrupted() || Instant::now() >= until {
            stop(&mut child);
            crate::core::signals::check()?;
            bail!("microops: the measuring process did not end within {limit:?}; stopped");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    crate::core::signals::check()?;
    if !status.success() {
        let err = String::from_utf8_lossy(&err);
        let last = err.lines().last().unwrap_or("").trim();
        bail!("microops: the measuring process failed ({status}): {last}");
    }
    measurement(&out)
}

/// The child's document as this run's measurement.
fn measurement(out: &[u8]) -> Result<Measurement> {
    let mut doc: ResultDoc = serde_json::from_slice(out)
        .context("microops: the measuring process's result is not a result document")?;
    if doc.workload != "microops" || doc.metrics.iter().any(|m| !m.value.is_finite()) {
        bail!("microops: the measuring process's result is not a microops measurement");
    }
    let text = match doc.details.as_object_mut().and_then(|d| d.remove(TEXT_KEY)) {
        Some(serde_json::Value::String(t)) => t,
        _ => bail!("microops: the measuring process's result has no summary"),
    };
    if !(doc.duration_s.is_finite() && doc.duration_s >= 0.0) {
        bail!("microops: the measuring process's duration is not a duration");
    }
    Ok(Measurement {
        duration: Duration::from_secs_f64(doc.duration_s),
        events: doc.events,
        metrics: doc.metrics,
        details: doc.details,
        text,
        ..Measurement::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_childs_command_line_carries_every_option() {
        let a = args(
            &[Op::Getpid, Op::PipeEcho],
            0,
            5,
            Some(Duration::from_millis(500)),
        );
        assert_eq!(
            a,
            [
                "microops",
                "--ops=getpid,pipe_echo",
                "--repeats=0",
                "--batch=5",
                "--time=0.5",
                "--json",
                "run"
            ]
        );
    }

    #[test]
    fn a_document_that_is_not_a_microops_measurement_is_refused() {
        assert!(measurement(b"not json").is_err());
        assert!(measurement(br#"{"schema":"x"}"#).is_err());
    }
}
