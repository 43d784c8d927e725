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

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::ops::Op;
use crate::core::result::ResultDoc;
use crate::sys::bounded::{run_bounded, Bounded, Limits};
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

/// How long a child asked to stop has before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Runs the child and waits for it (at most `limit`, or until Ctrl-C, when
/// it is asked to stop as Ctrl-C would, so it removes its files).
pub fn run(args: &[String], limit: Duration) -> Result<Measurement> {
    let mut cmd =
        crate::sys::this_binary().context("microops: finding this binary for a fresh process")?;
    cmd.args(args).env(ENV, "1");
    let limits = Limits {
        kept: MAX_OUTPUT,
        grace: Some(STOP_GRACE),
        ..Limits::new(limit)
    };
    let out = run_bounded(cmd, None, limits).map_err(|e| match e {
        Bounded::Interrupted => crate::core::signals::Interrupted.into(),
        Bounded::TimedOut(limit) => {
            anyhow!("microops: the measuring process did not end within {limit:?}; stopped")
        }
        Bounded::Failed(e) => e.context("microops: starting the measuring process"),
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("").trim();
        bail!(
            "microops: the measuring process failed ({}): {last}",
            out.status
        );
    }
    measurement(&out.stdout)
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
