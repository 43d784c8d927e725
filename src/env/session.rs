//! One live agent process as the host holds it: its stdin for the host's
//! lines, a reader thread that turns its stdout into bounded lines (each at
//! most `MAX_LINE`, a few queued), the tail of its stderr and console log
//! for error messages, a deadline on every wait, and at its end a kill of
//! its whole process group and the driver's cleanup.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::{Launched, OnHost};
use crate::agent::protocol::Message;
use crate::core::signals;
use crate::core::text;

/// The longest line the host accepts from an agent: a result document is a
/// few KiB; anything near this is a broken or hostile agent.
pub const MAX_LINE: usize = 4 << 20;
/// Lines an agent may have waiting for the host (instances are read in
/// turn); beyond that its writes block. Memory per instance stays below
/// `MAX_LINE * (QUEUED_LINES + 2)`.
const QUEUED_LINES: usize = 8;
/// How much of a piped stderr (QEMU's, systemd-nspawn's, lxc-execute's) is
/// kept for error messages.
const STDERR_TAIL: usize = 4096;
/// How much of a console log is read for an error message.
const CONSOLE_TAIL: u64 = 64 << 10;

#[derive(Debug)]
enum Line {
    Text(String),
    /// The stream broke the protocol (not UTF-8, a line too long) or could
    /// not be read; nothing more is read from it.
    Broken(String),
    Eof,
}

/// How a protocol message opens (its tag comes first, as the agent writes
/// it), and how any JSON object does.
const MESSAGE_OPENS: &str = "{\"type\"";
const OBJECT_OPENS: char = '{';

/// The protocol message on one line of an agent's output: none on a line of
/// other text (a shell's banner), or why a line that claims to be one is not.
/// Public for the fuzz targets.
pub fn message_in(line: &str) -> std::result::Result<Option<Message>, String> {
    let t = line.trim().trim_start_matches('\u{0}');
    // A message may follow noise on its line (a serial port's); a line that
    // is all JSON is a message whatever its key order.
    let Some(start) = t
        .find(MESSAGE_OPENS)
        .or(t.starts_with(OBJECT_OPENS).then_some(0))
    else {
        return Ok(None);
    };
    serde_json::from_str::<Message>(&t[start..])
        .map(Some)
        .map_err(|e| {
            format!(
                "the agent sent a message that does not parse ({e}): {}",
                text::one_line(&t[start..], 200)
            )
        })
}

/// Reads `input` line by line into `tx`, bounded in line length and (with a
/// bounded channel) in what waits for the host.
fn read_lines(input: impl std::io::Read, tx: SyncSender<Line>) {
    let mut reader = BufReader::with_capacity(64 << 10, input);
    let mut line = Vec::new();
    loop {
        let (complete, used) = match reader.fill_buf() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Line::Broken(format!("reading the agent's output: {e}")));
                return;
            }
            Ok([]) => {
                let _ = tx.send(Line::Eof);
                return;
            }
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    line.extend_from_slice(&buf[..i]);
                    (true, i + 1)
                }
                None => {
                    line.extend_from_slice(buf);
                    (false, buf.len())
                }
            },
        };
        reader.consume(used);
        if line.len() > MAX_LINE {
            let _ = tx.send(Line::Broken(format!(
                "the agent sent a line longer than {} MiB: a broken or hostile agent",
                MAX_LINE >> 20
            )));
            return;
        }
        if complete {
            match String::from_utf8(std::mem::take(&mut line)) {
                Ok(text) => {
                    if tx.send(Line::Text(text)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let at = e.utf8_error().valid_up_to();
                    let _ = tx.send(Line::Broken(format!(
                        "the agent sent a line that is not UTF-8 (byte {at}: {:#04x}): a broken or hostile agent",
                        e.as_bytes()[at]
                    )));
                    return;
                }
            }
        }
    }
}

/// Keeps the last `STDERR_TAIL` bytes of `input`, read until it ends, so a
/// chatty process never blocks on a full pipe and its last words are kept.
fn keep_tail(mut input: impl std::io::Read, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 8192];
    loop {
        match input.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                t.extend_from_slice(&buf[..n]);
                if t.len() > STDERR_TAIL {
                    let cut = t.len() - STDERR_TAIL;
                    t.drain(..cut);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Waits up to `limit` for `child` to end; its status, or `None` if it is
/// still running.
fn wait_for(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    wait_unless(child, limit, || false)
}

/// [`wait_for`], given up as soon as `give_up` says so.
fn wait_unless(
    child: &mut Child,
    limit: Duration,
    give_up: impl Fn() -> bool,
) -> Option<ExitStatus> {
    let until = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < until && !give_up() => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => return None,
        }
    }
}

/// Kills `child` and, when it leads its own process group, everything it
/// started; then reaps it and waits (at most 2 s) until nothing of the
/// group is left: SIGKILL is not instant, and a grandchild that init
/// inherits could otherwise outlive the run for a moment.
fn kill(child: &mut Child) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: getpgid and kill take plain integers; the pid is our own
    // unreaped child, so it cannot have been recycled.
    let group = unsafe {
        let group = libc::getpgid(pid) == pid;
        if group {
            libc::kill(-pid, libc::SIGKILL);
        }
        group
    };
    let _ = child.kill();
    let _ = child.wait();
    let until = Instant::now() + Duration::from_secs(2);
    // SAFETY: signal 0 only asks whether any process of the group is left.
    while group && unsafe { libc::kill(-pid, 0) } == 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A live agent with its reader thread.
pub(super) struct Session {
    /// The instance's name, which opens every error about it.
    pub(super) label: String,
    child: Option<Child>,
    /// The agent's stdin (a child's pipe; a scripted agent's in tests).
    stdin: Option<Box<dyn Write + Send>>,
    lines: Receiver<Line>,
    stderr: Option<Arc<Mutex<Vec<u8>>>>,
    cleanup: Option<Box<dyn FnOnce() + Send>>,
    console: Option<PathBuf>,
    /// As the driver handed them over (`Launched`).
    pub(super) workdir: String,
    pub(super) forwarded: Option<(u16, u16)>,
    pub(super) on_host: OnHost,
    pub(super) launched_at: Instant,
}

impl Session {
    pub(super) fn start(launched: Launched, label: String) -> Result<Session> {
        let mut launched = launched;
        let stdout = launched.child.stdout.take();
        let stderr = launched.child.stderr.take();
        let stdin = launched.child.stdin.take();
        let (tx, rx) = mpsc::sync_channel(QUEUED_LINES);
        // From here on the session owns the process: dropping it (on any
        // error below) kills it and runs the cleanup.
        let mut session = Session {
            label,
            child: Some(launched.child),
            stdin: stdin.map(|s| Box::new(s) as Box<dyn Write + Send>),
            lines: rx,
            stderr: None,
            cleanup: launched.cleanup,
            console: launched.console,
            workdir: launched.workdir,
            forwarded: launched.forwarded,
            on_host: launched.on_host,
            launched_at: Instant::now(),
        };
        let stdout = stdout.ok_or_else(|| anyhow!("the agent's stdout is not piped"))?;
        std::thread::Builder::new()
            .name("agent-reader".into())
            .spawn(move || read_lines(stdout, tx))
            .context("starting a thread to read the agent")?;
        if let Some(stderr) = stderr {
            let tail = Arc::new(Mutex::new(Vec::new()));
            let t = tail.clone();
            std::thread::Builder::new()
                .name("agent-stderr".into())
                .spawn(move || keep_tail(stderr, t))
                .context("starting a thread to read the agent's stderr")?;
            session.stderr = Some(tail);
        }
        Ok(session)
    }

    /// The next protocol message, within `deadline`. Lines that are not
    /// JSON (a shell's banner, a kernel message) are skipped; a line that
    /// claims to be a message and is not one is a protocol error.
    pub(super) fn next(&mut self, deadline: Duration) -> Result<Message> {
        let until = Instant::now() + deadline;
        loop {
            if signals::interrupted() {
                return self.received_before_the_stop();
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "{}: no answer from the agent within {:.0} s{}",
                    self.label,
                    deadline.as_secs_f64(),
                    self.last_words()
                );
            }
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(Line::Text(text)) => match message_in(&text) {
                    Ok(Some(msg)) => return Ok(msg),
                    Ok(None) => {}
                    Err(why) => bail!("{}: protocol error: {why}", self.label),
                },
                Ok(Line::Broken(why)) => {
                    bail!("{}: protocol error: {why}{}", self.label, self.last_words())
                }
                Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    let status = match self.child.as_mut() {
                        Some(c) => match wait_for(c, Duration::from_secs(5)) {
                            Some(s) => format!(" ({s})"),
                            None => " (its output closed, the process still runs)".into(),
                        },
                        None => String::new(),
                    };
                    bail!(
                        "{}: the agent ended unexpectedly{status}{}",
                        self.label,
                        self.last_words()
                    );
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// After a stop: a result or an error the agent had already sent (the
    /// reader holds it, the signal came first) is still taken, so no
    /// finished measurement is lost; then `Interrupted`. Only what has
    /// arrived is looked at, a bounded number of lines.
    fn received_before_the_stop(&mut self) -> Result<Message> {
        for _ in 0..=QUEUED_LINES {
            let Ok(Line::Text(text)) = self.lines.try_recv() else {
                break;
            };
            match message_in(&text) {
                Ok(Some(msg @ (Message::Result { .. } | Message::Error { .. }))) => return Ok(msg),
                Ok(None) => {}
                _ => break,
            }
        }
        Err(signals::Interrupted.into())
    }

    /// The launched process's pid, while it is ours.
    pub(super) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// How the launched process ended, if it has (not waiting).
    pub(super) fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// The end of the process's stderr and of its console log, if kept, for
    /// an error message; made safe for a terminal.
    fn last_words(&self) -> String {
        let mut out = String::new();
        if let Some(tail) = &self.stderr {
            // Give a process that just died a moment to have its last words read.
            std::thread::sleep(Duration::from_millis(50));
            let bytes = tail.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let text = String::from_utf8_lossy(&bytes);
            if !text.trim().is_empty() {
                out.push_str(&format!(
                    "; its stderr: {}",
                    text::terminal_safe(text.trim(), STDERR_TAIL)
                ));
            }
        }
        if let Some(path) = &self.console {
            let text = read_tail(path, CONSOLE_TAIL);
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n    ");
            out.push_str(&format!(
                "; last console lines:\n    {}",
                text::terminal_safe(&tail, CONSOLE_TAIL as usize)
            ));
        }
        out
    }

    pub(super) fn send_line(&mut self, line: &str) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow!("{}: the agent's stdin is closed", self.label))?;
        let sent = stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|_| stdin.flush());
        // An agent that died shows as a broken pipe here: its last words
        // say why.
        sent.map_err(|e| {
            anyhow::Error::new(e).context(format!(
                "{}: sending to the agent{}",
                self.label,
                self.last_words()
            ))
        })
    }

    /// Closes the agent's stdin: it ends after "done", and stops (cleaning
    /// up after itself) when a plan is under way.
    pub(super) fn hang_up(&mut self) {
        self.stdin.take();
    }

    /// Whether the process has ended within `limit` (or before a second
    /// signal); it is left running otherwise.
    pub(super) fn ended_within(&mut self, limit: Duration) -> bool {
        match self.child.as_mut() {
            Some(child) => wait_unless(child, limit, signals::hurried).is_some(),
            None => true,
        }
    }

    /// Waits for the process to end (it does after "done"), at most
    /// `grace` and not past a second signal (`signals::hurried`), or kills
    /// it; then the driver's cleanup. Whether it had to be killed.
    pub(super) fn finish(&mut self, grace: Duration) -> bool {
        self.hang_up();
        let mut killed = false;
        if let Some(mut child) = self.child.take() {
            if wait_unless(&mut child, grace, signals::hurried).is_none() {
                kill(&mut child);
                killed = true;
            }
        }
        if let Some(cleanup) = self.cleanup.take() {
            cleanup();
        }
        killed
    }
}

/// The last `max` bytes of a file, as text.
fn read_tail(path: &std::path::Path, max: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut bytes = Vec::new();
    let _ = f.take(max).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Drop for Session {
    fn drop(&mut self) {
        self.finish(Duration::from_secs(2));
    }
}

/// A session whose agent is a script run on a thread of the test: no
/// process, no container; its input is the host's lines, its output goes
/// through the same bounded reader as a real agent's.
#[cfg(test)]
pub(super) mod scripted {
    use super::*;
    use std::io::{PipeReader, PipeWriter};

    /// The agent's end: the host's lines in, its own out.
    pub struct Agent {
        pub input: BufReader<PipeReader>,
        pub output: PipeWriter,
    }

    impl Agent {
        /// Writes `line` as the agent would.
        pub fn say(&mut self, line: &str) {
            let _ = writeln!(self.output, "{line}");
        }

        /// The host's next line, without its newline ("" when it hung up).
        pub fn hear(&mut self) -> String {
            let mut line = String::new();
            let _ = self.input.read_line(&mut line);
            line.trim_end().to_string()
        }
    }

    /// A session labelled `label` whose agent runs `script`.
    pub fn session(label: &str, script: impl FnOnce(Agent) + Send + 'static) -> Session {
        let (host_in, agent_out) = std::io::pipe().unwrap();
        let (agent_in, host_out) = std::io::pipe().unwrap();
        let (tx, rx) = mpsc::sync_channel(QUEUED_LINES);
        std::thread::spawn(move || read_lines(host_in, tx));
        std::thread::spawn(move || {
            script(Agent {
                input: BufReader::new(agent_in),
                output: agent_out,
            })
        });
        Session {
            label: label.to_string(),
            child: None,
            stdin: Some(Box::new(host_out)),
            lines: rx,
            stderr: None,
            cleanup: None,
            console: None,
            workdir: "/tmp/scripted".into(),
            forwarded: None,
            on_host: OnHost::Elsewhere,
            launched_at: Instant::now(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_console_log_is_read_from_its_end_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        let mut text = "x".repeat(8 << 20);
        text.push_str("\nKernel panic - the last words\n");
        std::fs::write(&path, &text).unwrap();
        let tail = read_tail(&path, CONSOLE_TAIL);
        assert!(tail.len() as u64 <= CONSOLE_TAIL);
        assert!(tail.ends_with("the last words\n"));
    }

    #[test]
    fn the_reader_bounds_lines_and_refuses_bad_bytes() {
        let lines = |input: Vec<u8>| {
            let (tx, rx) = mpsc::sync_channel(4);
            std::thread::spawn(move || read_lines(&input[..], tx));
            rx.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>()
        };
        assert_eq!(lines(b"a\nb".to_vec()), ["Text(\"a\")", "Eof"]);
        let bad = lines(b"ok\n\xff\nnever\n".to_vec());
        assert!(bad[1].contains("not UTF-8"), "{bad:?}");
        assert_eq!(bad.len(), 2, "nothing is read after a protocol error");
        let long = lines(vec![b'a'; MAX_LINE + 10]);
        assert!(long[0].contains("longer than"), "{long:?}");
    }
}
