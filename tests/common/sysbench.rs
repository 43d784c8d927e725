//! Side by side with Debian's sysbench 1.0.20: the same command line run
//! through `/usr/bin/sysbench` and through virtperf started as `sysbench`,
//! each in its own directory, compared on exit code, standard output and
//! standard error once figures are masked (they differ run to run), runs
//! of spaces are one (a figure's width moves its padding), the banner's
//! parenthesis is set aside (it names the build) and the directory's path
//! is `$DIR`.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's sysbench.
pub const REAL: &str = "/usr/bin/sysbench";

/// A command that runs longer than this is killed and reported.
const LIMIT: Duration = Duration::from_secs(90);

/// Figures as N, hexadecimal addresses as 0xH, runs of spaces as one, the
/// banner's parenthesis as ().
pub fn masked(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = if line.starts_with("sysbench 1.0.20 (") {
            "sysbench 1.0.20 ()".to_string()
        } else {
            line.to_string()
        };
        let chars: Vec<char> = line.chars().collect();
        let mut prev_space = false;
        let mut in_number = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '0' && !in_number && chars.get(i + 1) == Some(&'x') {
                let hex = chars[i + 2..]
                    .iter()
                    .take_while(|c| c.is_ascii_hexdigit())
                    .count();
                if hex > 0 {
                    out.push_str("0xH");
                    i += 2 + hex;
                    prev_space = false;
                    continue;
                }
            }
            i += 1;
            if c.is_ascii_digit() || (in_number && c == '.') {
                if !in_number {
                    out.push('N');
                }
                in_number = true;
                prev_space = false;
                continue;
            }
            in_number = false;
            if c == ' ' {
                if !prev_space {
                    out.push(' ');
                }
                prev_space = true;
                continue;
            }
            prev_space = false;
            out.push(c);
        }
        out.push('\n');
    }
    out
}

/// What one side printed and returned, masked.
#[derive(Debug)]
pub struct Seen {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// One command line as a .t file runs it: arguments, standard input (a
/// here-document), environment, a filter of standard output (a pipe into
/// grep or sed), the exit code sysbench is documented to return (or none,
/// where it depends on the machine), and lines of sysbench's standard
/// output virtperf leaves out on purpose.
pub struct Step {
    args: Vec<String>,
    stdin: Option<String>,
    env: Vec<(String, String)>,
    filter: Option<fn(&str) -> String>,
    code: Option<i32>,
    left_out: Vec<(&'static str, &'static str)>,
    differs: Option<&'static str>,
    subset: Option<&'static str>,
}

/// A step running `args`; `$DIR` in an argument is the side's directory,
/// `$SIDE` its name (`theirs`, `ours`).
pub fn step(args: &[&str]) -> Step {
    Step {
        args: args.iter().map(|a| a.to_string()).collect(),
        stdin: None,
        env: Vec::new(),
        filter: None,
        code: Some(0),
        left_out: Vec::new(),
        differs: None,
        subset: None,
    }
}

impl Step {
    /// Feeds `text` on standard input.
    pub fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.to_string());
        self
    }
    /// Sets a variable (`$DIR` in its value is the side's directory).
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }
    /// Compares only what `filter` keeps of standard output.
    pub fn filter(mut self, filter: fn(&str) -> String) -> Self {
        self.filter = Some(filter);
        self
    }
    /// sysbench's documented exit code (0 unless given).
    pub fn code(mut self, code: i32) -> Self {
        self.code = Some(code);
        self
    }
    /// sysbench's exit code depends on the machine (huge pages reserved or
    /// not): only the two sides' codes are compared.
    pub fn code_of_the_machine(mut self) -> Self {
        self.code = None;
        self
    }
    /// A known difference, for the reason `why`: the outputs must differ
    /// (the step fails once they agree, to be taken off); exit codes too
    /// may differ.
    pub fn differs(mut self, why: &'static str) -> Self {
        self.differs = Some(why);
        self
    }
    /// Standard output need only be some of sysbench's lines, in its order
    /// (virtperf lists less, for the reason `why`); it fails when virtperf
    /// prints a line sysbench does not, or prints everything sysbench does.
    pub fn subset(mut self, why: &'static str) -> Self {
        self.subset = Some(why);
        self
    }
    /// Drops sysbench's standard-output lines containing `text` before the
    /// comparison, for the reason `why`; it fails once sysbench no longer
    /// prints such a line.
    pub fn left_out(mut self, text: &'static str, why: &'static str) -> Self {
        self.left_out.push((text, why));
        self
    }
}

/// The lines of `text` that contain `needle` (grep).
pub fn grep(text: &str, needle: &str) -> String {
    text.lines()
        .filter(|l| l.contains(needle))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The two sides of a comparison and the differences seen so far.
pub struct Pair {
    _bin_dir: tempfile::TempDir,
    theirs: tempfile::TempDir,
    ours: tempfile::TempDir,
    ours_bin: PathBuf,
    differ: Vec<String>,
}

impl Pair {
    /// Both sides in fresh directories, or None (having said why the test
    /// skips) where Debian's sysbench is not installed.
    pub fn new() -> Option<Pair> {
        if !Path::new(REAL).exists() {
            super::skip("Debian's sysbench is not installed (apt-get install sysbench)");
            return None;
        }
        let bin_dir = tempfile::tempdir().unwrap();
        let ours_bin = bin_dir.path().join("sysbench");
        std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("virtperf"), &ours_bin).unwrap();
        Some(Pair {
            _bin_dir: bin_dir,
            theirs: tempfile::tempdir().unwrap(),
            ours: tempfile::tempdir().unwrap(),
            ours_bin,
            differ: Vec::new(),
        })
    }

    /// Writes `text` to `name` in both directories (a script of the test's).
    pub fn write(&self, name: &str, text: &str) {
        for dir in [self.theirs.path(), self.ours.path()] {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    /// The names in ours and in sysbench's directory, sorted.
    pub fn listings(&self) -> (Vec<String>, Vec<String>) {
        let list = |dir: &Path| {
            let mut names = super::entries(dir);
            names.sort();
            names
        };
        (list(self.theirs.path()), list(self.ours.path()))
    }

    /// Runs `step` on both sides (sysbench first) and records how they
    /// differ; returns what each printed, sysbench's first.
    pub fn check(&mut self, step: Step) -> (Seen, Seen) {
        let line = step.args.join(" ");
        let mut theirs = run(Path::new(REAL), &step, self.theirs.path());
        let mine = run(&self.ours_bin, &step, self.ours.path());
        if let Some(code) = step.code.filter(|c| theirs.code != Some(*c)) {
            self.differ.push(format!(
                "sysbench {line}: sysbench itself exits {:?}, not {code} as documented\n{}{}",
                theirs.code, theirs.stdout, theirs.stderr
            ));
        }
        for (text, why) in &step.left_out {
            let kept: Vec<&str> = theirs
                .stdout
                .lines()
                .filter(|l| !l.contains(text))
                .collect();
            assert!(
                kept.len() < theirs.stdout.lines().count(),
                "sysbench {line} no longer prints {text}: drop it from the left-out lines"
            );
            eprintln!("sysbench {line}: leaving out {text} ({why})");
            theirs.stdout = kept.iter().map(|l| format!("{l}\n")).collect();
        }
        if theirs.code != mine.code && step.differs.is_none() {
            self.differ.push(format!(
                "sysbench {line}: exit {:?}, ours {:?}",
                theirs.code, mine.code
            ));
        }
        if let Some(why) = step.subset {
            let mut theirs_lines = theirs.stdout.lines();
            let missing: Vec<&str> = mine
                .stdout
                .lines()
                .filter(|l| !theirs_lines.any(|t| t == *l))
                .collect();
            if !missing.is_empty() {
                self.differ.push(format!(
                    "sysbench {line}: ours prints lines sysbench does not, or out of its order:\n{}",
                    missing.join("\n")
                ));
            } else if mine.stdout == theirs.stdout {
                self.differ.push(format!(
                    "sysbench {line}: now the same as sysbench: drop its subset() ({why})"
                ));
            } else {
                eprintln!("sysbench {line}: a part of sysbench's lines ({why})");
            }
            if theirs.stderr != mine.stderr {
                self.differ.push(format!(
                    "sysbench {line}: stderr differs\n--- sysbench\n{}--- ours\n{}",
                    theirs.stderr, mine.stderr
                ));
            }
            return (theirs, mine);
        }
        if let Some(why) = step.differs {
            if (&theirs.stdout, &theirs.stderr) == (&mine.stdout, &mine.stderr) {
                self.differ.push(format!(
                    "sysbench {line}: now the same as sysbench: drop its differs() ({why})"
                ));
            } else {
                eprintln!("sysbench {line}: differs on purpose ({why})");
            }
            return (theirs, mine);
        }
        for (stream, a, b) in [
            ("stdout", &theirs.stdout, &mine.stdout),
            ("stderr", &theirs.stderr, &mine.stderr),
        ] {
            if a != b {
                self.differ.push(format!(
                    "sysbench {line}: {stream} differs\n--- sysbench\n{a}--- ours\n{b}"
                ));
            }
        }
        (theirs, mine)
    }

    /// Fails with every difference seen.
    #[track_caller]
    pub fn finish(self) {
        assert!(self.differ.is_empty(), "{}", self.differ.join("\n"));
    }
}

/// Runs `step` with `program` as `sysbench` (its argv[0]) in `dir`.
pub fn run(program: &Path, step: &Step, dir: &Path) -> Seen {
    let here = dir.to_string_lossy();
    // `$SIDE` in an argument: which side runs it (a database of its own).
    let side = if program == Path::new(REAL) {
        "theirs"
    } else {
        "ours"
    };
    let mut cmd = Command::new(program);
    cmd.arg0("sysbench")
        .args(
            step.args
                .iter()
                .map(|a| a.replace("$DIR", &here).replace("$SIDE", side)),
        )
        .current_dir(dir)
        .stdin(if step.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in &step.env {
        cmd.env(name, value.replace("$DIR", &here));
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    if let Some(text) = &step.stdin {
        let mut input = child.stdin.take().unwrap();
        let _ = input.write_all(text.as_bytes());
    }
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let until = Instant::now() + LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let tidy = |text: String| masked(&text.replace(&*here, "$DIR"));
    let mut out = stdout.join().unwrap();
    if let Some(filter) = step.filter {
        out = filter(&out);
    }
    Seen {
        code: status.and_then(|s| s.code()),
        stdout: tidy(out),
        stderr: tidy(stderr.join().unwrap())
            + if status.is_none() {
                "(killed after the time limit)\n"
            } else {
                ""
            },
    }
}
