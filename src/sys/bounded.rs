//! Commands that must end: set-up commands over ssh, a container engine's
//! client (a hung daemon must not hang virtperf), a workload's measuring
//! child. Each is stopped when its time limit passes or the user
//! interrupts, and only a bounded part of its output is kept.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How much of a set-up command's output is kept by default (they print a
/// path).
pub const OUTPUT_KEPT: u64 = 64 << 10;

/// What a bounded command may take.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall time before it is stopped.
    pub time: Duration,
    /// Bytes kept of each of its outputs; the rest is read and dropped.
    pub kept: u64,
    /// `Some(grace)`: it is asked to stop as Ctrl-C would (SIGTERM, so it
    /// can remove what it made) and killed if it has not ended within
    /// `grace`. `None`: killed at once.
    pub grace: Option<Duration>,
    /// Whether an interrupt lets it run on to its end (within `time`): a
    /// command whose outcome must be known to undo it (a remote `mktemp`
    /// that made a directory whose name only its output gives).
    pub finish: bool,
}

impl Limits {
    /// `time`, [`OUTPUT_KEPT`] bytes of output, killed at once.
    pub fn new(time: Duration) -> Self {
        Limits {
            time,
            kept: OUTPUT_KEPT,
            grace: None,
            finish: false,
        }
    }

    /// The same, run to its end after an interrupt (the caller undoes
    /// what it made, then reports the interrupt).
    pub fn finishing(mut self) -> Self {
        self.finish = true;
        self
    }
}

/// Why a bounded command did not give its output.
#[derive(Debug)]
pub enum Bounded {
    TimedOut(Duration),
    Interrupted,
    Failed(anyhow::Error),
}

/// How often a bounded command's state is polled.
const POLL: Duration = Duration::from_millis(5);

/// Runs `cmd` with `input` on its stdin, keeping at most `limits.kept`
/// bytes of each output; stops it when `limits.time` passes or the user
/// interrupts.
pub fn run_bounded(
    mut cmd: Command,
    input: Option<&[u8]>,
    limits: Limits,
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
    let keep = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = (&mut pipe).take(limits.kept).read_to_end(&mut kept);
                // The rest is read and dropped, so the process never blocks.
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            }
            kept
        })
    };
    let out_reader = keep(child.stdout.take().map(|p| Box::new(p) as _));
    let err_reader = keep(child.stderr.take().map(|p| Box::new(p) as _));
    let until = Instant::now() + limits.time;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(Bounded::Failed(e.into())),
        }
        let interrupted = crate::core::signals::interrupted() && !limits.finish;
        if Instant::now() >= until || interrupted {
            stop(&mut child, limits.grace);
            return Err(if interrupted {
                Bounded::Interrupted
            } else {
                Bounded::TimedOut(limits.time)
            });
        }
        std::thread::sleep(POLL);
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

/// Stops `child` (asked first when there is a `grace`) and reaps it.
fn stop(child: &mut Child, grace: Option<Duration>) {
    if let Some(grace) = grace {
        // SAFETY: kill(2) on our own child's pid, which is not reaped yet
        // (try_wait said it is running), so it names no other process.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(POLL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs a cleanup command within `limit`; unlike `run_bounded` it goes on
/// after an interrupt (that is when it runs).
pub fn run_cleanup(mut cmd: Command, limit: Duration) -> bool {
    let Ok(mut child) = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let until = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if Instant::now() < until => std::thread::sleep(POLL),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn output_beyond_the_bound_is_dropped_and_the_command_still_ends() {
        let limits = Limits {
            kept: 1000,
            ..Limits::new(Duration::from_secs(20))
        };
        let out = run_bounded(sh("head -c 5000000 /dev/zero"), None, limits).unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout.len(), 1000);
    }

    #[test]
    fn a_command_past_its_time_is_killed() {
        let t = Instant::now();
        let r = run_bounded(
            sh("sleep 30"),
            None,
            Limits::new(Duration::from_millis(200)),
        );
        assert!(matches!(r, Err(Bounded::TimedOut(_))), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_graceful_stop_lets_the_command_clean_up() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("cleaned");
        let script = format!(
            "trap 'touch {}; exit 1' TERM; while :; do sleep 0.05; done",
            mark.display()
        );
        let limits = Limits {
            grace: Some(Duration::from_secs(5)),
            ..Limits::new(Duration::from_millis(300))
        };
        let r = run_bounded(sh(&script), None, limits);
        assert!(matches!(r, Err(Bounded::TimedOut(_))), "{r:?}");
        assert!(mark.exists(), "SIGTERM reached the command before the kill");
    }
}
