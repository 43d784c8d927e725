//! One observer for everything a run tells the user while it works: progress
//! of long work, interim statistics lines, and the chatter of prepare and
//! cleanup. Layers report through it instead of printing, so the terminal,
//! an agent (which must keep its stdout for the protocol) and tests each
//! choose what becomes of those lines. Every hook defaults to doing nothing.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use super::text;

/// Where a long piece of work stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub done: usize,
    /// `None` when the total is open (`--repeat auto`).
    pub total: Option<usize>,
    pub text: String,
    /// Estimated seconds left, when known.
    pub eta_s: Option<f64>,
}

pub trait Observer: Send + Sync {
    /// A line about preparing or cleaning up ("Creating files for the test...").
    fn chatter(&self, _line: &str) {}
    /// An interim statistics line (`--report-interval`).
    fn interim(&self, _line: &str) {}
    /// Something the user should read (a fallback taken, an environment that
    /// failed while the others carry on).
    fn note(&self, _line: &str) {}
    /// Where long work stands; redrawn in place on a terminal.
    fn progress(&self, _p: &Progress) {}
    /// The long work is over: end the progress line.
    fn progress_done(&self) {}
}

/// Says nothing.
pub struct Silent;

impl Observer for Silent {}

/// Writes to the terminal: notes on stderr, chatter and interim lines on
/// stdout (as sysbench does) unless stdout carries a JSON document, progress
/// as one redrawn line on a terminal and plain lines otherwise.
pub struct Terminal {
    interim_to_stderr: bool,
    /// Chatter and interim lines are not printed (`--verbosity` below
    /// sysbench's notices).
    quiet: bool,
    tty: bool,
    /// Whether a progress line is open (and must be ended before a note).
    open: Mutex<bool>,
}

impl Terminal {
    pub fn new(interim_to_stderr: bool) -> Terminal {
        Terminal {
            interim_to_stderr,
            quiet: false,
            tty: std::io::stderr().is_terminal(),
            open: Mutex::new(false),
        }
    }

    /// The same, printing no chatter and no interim lines.
    pub fn quiet(mut self, quiet: bool) -> Terminal {
        self.quiet = quiet;
        self
    }

    fn close_line(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if *open {
            eprintln!();
            *open = false;
        }
    }
}

// Every line passes the output gate (`text::output`): a note may quote a
// guest's error or label, an interim line a guest's text.
impl Observer for Terminal {
    fn chatter(&self, line: &str) {
        let line = &*text::output(line, text::Form::Text);
        if self.quiet {
        } else if self.interim_to_stderr {
            self.close_line();
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }

    fn interim(&self, line: &str) {
        if self.quiet {
            return;
        }
        let line = &*text::output(line, text::Form::Text);
        if self.interim_to_stderr {
            self.close_line();
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }

    fn note(&self, line: &str) {
        self.close_line();
        eprintln!("virtperf: {}", text::output(line, text::Form::Text));
    }

    fn progress(&self, p: &Progress) {
        let count = match p.total {
            Some(t) => format!("[{}/{t}]", p.done),
            None => format!("[{} done]", p.done),
        };
        let eta = p
            .eta_s
            .map(|s| format!(", ETA {}m{:02}s", (s / 60.0) as u64, s as u64 % 60))
            .unwrap_or_default();
        let line = format!("{count} {}{eta}", text::output(&p.text, text::Form::Text));
        if self.tty {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            eprint!("\r\x1b[2K{line}");
            let _ = std::io::stderr().flush();
            *open = true;
        } else {
            eprintln!("{line}");
        }
    }

    fn progress_done(&self) {
        self.close_line();
    }
}

/// What was observed, kind by kind, for tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Chatter(String),
    Interim(String),
    Note(String),
    Progress(Progress),
    ProgressDone,
}

/// Keeps every event in order.
#[derive(Default)]
pub struct Recording {
    events: Mutex<Vec<Event>>,
}

impl Recording {
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn push(&self, e: Event) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(e);
    }
}

impl Observer for Recording {
    fn chatter(&self, line: &str) {
        self.push(Event::Chatter(line.into()));
    }
    fn interim(&self, line: &str) {
        self.push(Event::Interim(line.into()));
    }
    fn note(&self, line: &str) {
        self.push(Event::Note(line.into()));
    }
    fn progress(&self, p: &Progress) {
        self.push(Event::Progress(p.clone()));
    }
    fn progress_done(&self) {
        self.push(Event::ProgressDone);
    }
}
