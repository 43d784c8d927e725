//! Commands that must end: set-up commands over ssh, a container engine's
//! client (a hung daemon must not hang virtperf). Each is killed when its
//! time limit passes or the user interrupts, and only a bounded part of its
//! output is kept.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How much of a set-up command's output is kept (they print a path).
pub(crate) const OUTPUT_KEPT: u64 = 64 << 10;

/// Why a bounded command did not give its output.
pub(crate) enum Bounded {
    TimedOut(Duration),
    Interrupted,
    Failed(anyhow::Error),
}

/// Runs `cmd` with `input` on its stdin, keeping at most `OUTPUT_KEPT` bytes
/// of each output; kills it when `limit` passes or the user interrupts.
pub(crate) fn run_bounded(
    mut cmd: Command,
    input: Option<&[u8]>,
    limit: Duration,
) -> std::result::Result<std::process::Output, Bounded> {
    let mut child = cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Bounded::Failed(e.into()))?;
    // Feeding and reading happen on threads so the wait below can give up;
    // they end when the process does (its pipes close).
    let feeder = input.map(|data| {
        let mut stdin = child.stdin.take().expect("piped");
        let data = data.to_vec();
        std::thread::spawn(move || stdin.write_all(&data))
    });
    let keep = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = (&mut pipe).take(OUTPUT_KEPT).read_to_end(&mut kept);
                // The rest is read and dropped, so the process never blocks.
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            }
            kept
        })
    };
    let out_reader = keep(child.stdout.take().map(|p| Box::new(p) as _));
    let err_reader = keep(child.stderr.take().map(|p| Box::new(p) as _));
    let until = std::time::Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(Bounded::Failed(e.into())),
        }
        let interrupted = crate::core::signals::interrupted();
        if std::time::Instant::now() >= until || interrupted {
            let _ = child.kill();
            let _ = child.wait();
            return Err(if interrupted {
                Bounded::Interrupted
            } else {
                Bounded::TimedOut(limit)
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    Ok(std::process::Output {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    })
}

/// Runs a cleanup command within `limit`; unlike `run_bounded` it goes on
/// after an interrupt (that is when it runs).
pub(crate) fn run_cleanup(mut cmd: Command, limit: Duration) -> bool {
    let Ok(mut child) = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let until = std::time::Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if std::time::Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}
