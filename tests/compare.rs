//! `virtperf compare` and `virtperf report` end to end: repetitions stored as
//! they finish, verdicts that find a real difference and no fake one, a
//! failing environment that does not stop the others, resume after Ctrl-C,
//! every report format, and the HTML report looked at in headless Chromium.

use std::path::Path;
use std::process::{Command as Std, Stdio};
use std::sync::{RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use predicates::prelude::*;

mod common;
use common::{output_ok, skip, virtperf};

/// `half_a_cpu_is_found_slower` checks a known truth: the host's single
/// thread has a whole CPU and the container half of one. Run beside this
/// binary's other tests on 2 cores, the host's run got less than a whole
/// one and the ratio came out 0.70 instead of 0.5 (a CI run). So that test
/// takes this lock for writing and runs alone; every other test reads it.
static ALONE: RwLock<()> = RwLock::new(());

fn beside_others() -> RwLockReadGuard<'static, ()> {
    ALONE.read().unwrap_or_else(|e| e.into_inner())
}

fn report(dir: &Path, format: &str) -> String {
    let out = output_ok(virtperf().args(["report", dir.to_str().unwrap(), "--format", format]));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn host_against_host_is_no_difference_and_everything_is_stored() {
    let _shared = beside_others();
    let dir = tempfile::tempdir().unwrap();
    // Host against host is never slower or faster in truth, but a shared
    // machine can drift between two 0.3 s runs: up to three attempts, each
    // checked in full, and the verdict must hold in one of them.
    let mut seen = Vec::new();
    let mut chosen = None;
    for attempt in 1..=3 {
        let out = dir.path().join(format!("r{attempt}"));
        virtperf()
            .args([
                "compare",
                "--env",
                "host:name=host-b",
                "--repeat",
                "3",
                "--out",
            ])
            .arg(&out)
            .args(["cpu", "--time=0.3", "--cpu-max-prime=2000"])
            .assert()
            .success()
            .stdout(predicate::str::contains("events_per_sec"))
            .stdout(predicate::str::contains("host-b"));
        assert!(out.join("comparison-1.html").exists());
        let csv = report(&out, "csv");
        // The workload's own metric: the accounting's derived figures
        // (acct_*, issue 56) have rows of their own.
        let rows: Vec<&str> = csv.lines().filter(|l| !l.contains(",acct_")).collect();
        assert!(rows[0].starts_with("comparison,entry,label,workload,metric"));
        assert_eq!(rows.len(), 3, "{csv}");
        let b = rows
            .iter()
            .find(|r| r.contains(",host-b,"))
            .unwrap()
            .to_string();
        assert!(b.contains(",3,"), "n = 3: {b}");
        // At n = 3 and 0.3 s runs usually inconclusive; equivalent when quiet.
        if b.contains(",equivalent,") || b.contains(",inconclusive,") {
            chosen = Some(out);
            break;
        }
        eprintln!("A/A attempt {attempt} called a difference (the machine drifted?): {b}");
        seen.push(b);
    }
    let out = chosen.unwrap_or_else(|| {
        panic!(
            "host against host was called slower or faster in all three attempts:\n{}",
            seen.join("\n")
        )
    });
    let json: serde_json::Value = serde_json::from_str(&report(&out, "json")).unwrap();
    assert_eq!(json["schema"], "virtperf.comparison/2");
    assert_eq!(json["envs"], serde_json::json!(["host", "host-b"]));
    let md = report(&out, "markdown");
    assert!(md.contains("## Headline summary"), "{md}");
    assert!(md.contains("| host-b | events_per_sec |"), "{md}");
    assert!(!md.contains("| metric | environment | n | mean |"), "{md}");
    let detail = virtperf()
        .args([
            "report",
            out.to_str().unwrap(),
            "--format",
            "markdown",
            "--detail",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&detail.stdout).contains("| metric | environment | n | mean |"));
    assert!(md.contains("baseline host"));
    // The overview comes first, in the terminal too.
    let table = report(&out, "table");
    let overview = table.find("\nOverview:").expect("an overview");
    assert!(
        overview < table.find("\nHeadline summary").unwrap(),
        "{table}"
    );
    assert!(table.contains("  host-b "), "{table}");

    // Every chart as a standalone SVG file.
    let figs = dir.path().join("figs");
    let done = output_ok(
        virtperf()
            .args(["report", out.to_str().unwrap(), "--figures"])
            .arg(&figs),
    );
    assert!(done.status.success());
    for name in [
        "overview.svg",
        "slowdown-host-b.svg",
        "entry-1-events-per-sec.svg",
    ] {
        let svg =
            std::fs::read_to_string(figs.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            svg.starts_with("<?xml") && svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
            "{name}: {svg}"
        );
        assert!(svg.contains("<style>"), "{name} carries its own styles");
    }
    // A --figures that cannot be a directory: refused, named, nothing made.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let bad = virtperf()
        .args(["report", out.to_str().unwrap(), "--figures"])
        .arg(file.join("sub"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("--figures"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn half_a_cpu_is_found_slower() {
    let _alone = ALONE.write().unwrap_or_else(|e| e.into_inner());
    if Std::new("docker")
        .args(["version"])
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        skip("no Docker engine");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = output_ok(
        virtperf()
            .args([
                "compare",
                "--env",
                "docker:cpus=0.5",
                "--repeat",
                "5",
                "--format",
                "csv",
                "--out",
            ])
            .arg(dir.path())
            .args(["cpu", "--time=0.5"]),
    );
    let csv = String::from_utf8_lossy(&out.stdout);
    let row = csv.lines().find(|l| l.contains("docker:cpus=0.5")).unwrap();
    if row.ends_with(",true") && !row.contains(",slower,") {
        // Other processes loaded the machine during the runs (the flag):
        // the host's agent then competes with them task by task while the
        // container's cgroup is scheduled as one group, and the host can get
        // less than half a CPU. There is no known truth to test then.
        skip(&format!(
            "the machine was loaded by other processes during the runs: {row}"
        ));
        return;
    }
    assert!(row.contains(",slower,"), "{row}");
    let cols: Vec<&str> = row.split(',').collect();
    let ratio: f64 = cols[18].parse().unwrap();
    // Loose: the strict ±10% ground truth is in tests/env.rs.
    assert!((0.35..0.65).contains(&ratio), "{ratio}");
}

#[test]
fn a_failing_environment_is_reported_and_the_others_carry_on() {
    let _shared = beside_others();
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on loopback port 1: the ssh target fails at once.
    let out = virtperf()
        .args([
            "compare",
            "--env",
            "ssh:nobody@127.0.0.1:1,host-key-check=off",
            "--env",
            "host:name=other",
            "--repeat",
            "2",
            "--out",
        ])
        .arg(dir.path())
        .args(["cpu", "--time=0.2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("carrying on"), "{stderr}");
    let table = report(dir.path(), "table");
    assert!(table.contains("other"), "{table}");
    assert!(table.contains("Failed runs"), "{table}");
}

#[test]
fn file_workloads_keep_their_prepare_chatter_off_the_progress_line() {
    let _shared = beside_others();
    let dir = tempfile::tempdir().unwrap();
    let out = output_ok(
        virtperf()
            .args(["compare", "--env", "host", "--repeat", "1", "--out"])
            .arg(dir.path())
            .args([
                "fileio",
                "--file-num=2",
                "--file-total-size=2M",
                "--file-test-mode=rndrw",
                "--time=0.3",
            ]),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for chatter in ["Creating files", "bytes written", "Removing test files"] {
        assert!(!stderr.contains(chatter), "{chatter:?} in {stderr}");
    }
    assert!(report(dir.path(), "csv").contains("reads_per_sec"));
}

#[test]
fn ctrl_c_keeps_what_was_measured_and_resume_finishes() {
    let _shared = beside_others();
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("virtperf");
    let mut child = Std::new(&bin)
        .args(["compare", "--env", "host:name=b", "--repeat", "4", "--out"])
        .arg(dir.path())
        .args(["cpu", "--time=0.5"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let a few runs finish, then interrupt.
    std::thread::sleep(Duration::from_millis(2200));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let status = child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
    let csv = report(dir.path(), "csv");
    let stored: usize = csv
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(4) == Some("events_per_sec"))
        .map(|l| l.split(',').nth(9).unwrap().parse::<usize>().unwrap())
        .sum();
    assert!((1..8).contains(&stored), "{stored} runs kept of 8");
    virtperf()
        .args(["compare", "--resume", "--out"])
        .arg(dir.path())
        .assert()
        .success();
    let csv = report(dir.path(), "csv");
    for line in csv.lines().skip(1) {
        assert_eq!(line.split(',').nth(9), Some("4"), "{line}");
    }
}

#[test]
fn a_store_from_before_typed_requests_resumes_from_its_arguments() {
    let _shared = beside_others();
    // Builds before typed requests kept only compare's arguments; such an
    // unfinished comparison still resumes, its arguments parsed as then.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--env",
        "host:name=b",
        "--repeat",
        "2",
        "cpu",
        "--time=0.1",
        "--cpu-max-prime=500",
    ];
    virtperf()
        .arg("compare")
        .args(&args[..4])
        .arg("--out")
        .arg(dir.path())
        .args(&args[4..])
        .assert()
        .success();
    {
        let db = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
        let old_args = serde_json::to_string(&args).unwrap();
        db.execute_batch(&format!(
            "DROP TABLE requests; DELETE FROM runs WHERE round = 1; \
             UPDATE comparisons SET finished = 0, args = '{old_args}';"
        ))
        .unwrap();
    }
    virtperf()
        .args(["compare", "--resume", "--out"])
        .arg(dir.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("resuming comparison #1"));
    let csv = report(dir.path(), "csv");
    for line in csv.lines().skip(1) {
        assert_eq!(line.split(',').nth(9), Some("2"), "{line}");
    }
}

#[test]
fn bad_input_names_the_option() {
    let _shared = beside_others();
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["compare", "--repeat", "0", "cpu"], "--repeat"),
        (
            vec!["compare", "--suite", "no-such-suite"],
            "built-in suites are",
        ),
        (vec!["compare", "--env", "docker:cpu=1", "cpu"], "use cpus"),
        (
            vec!["compare", "--env", "host", "gpu"],
            "neither an option nor a workload",
        ),
    ] {
        virtperf()
            .current_dir(dir.path())
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
    virtperf()
        .current_dir(dir.path())
        .args(["report", "nowhere"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "neither a comparison number nor a results directory",
        ));
    // Nothing was created by refused commands.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Renders the HTML report in headless Chromium and checks the picture has
/// marks of every environment's colour in it (its bars, its runs' points),
/// with every environment string escaped.
#[test]
fn html_report_renders_in_chromium_and_escapes_environment_strings() {
    let _shared = beside_others();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    virtperf()
        .args([
            "compare",
            "--env",
            "host:name=<script>alert(1)</script>",
            "--env",
            "host:name=third",
            "--repeat",
            "3",
            "--out",
        ])
        .arg(&out)
        .args(["cpu", "--time=0.2", "--cpu-max-prime=1000"])
        .assert()
        .success();
    let html = std::fs::read_to_string(out.join("comparison-1.html")).unwrap();
    assert!(!html.contains("<script>"), "unescaped environment name");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("<svg"));
    // One ratio chart per environment besides the baseline, a point per run.
    assert!(html.matches("<svg").count() >= 3);
    for env in [
        "&lt;script&gt;alert(1)&lt;/script&gt; against host",
        "third against host",
    ] {
        assert!(html.contains(env), "no ratio chart for {env}");
    }
    assert!(html.matches("class=\"mark run\"").count() >= 2 * 3 + 3 * 3);
    assert!(
        !html.contains("http://")
            || html
                .matches("http://")
                .all(|_| html.contains("xmlns=\"http://www.w3.org/2000/svg\""))
    );
    let chromium = ["chromium", "chromium-browser"].into_iter().find(|c| {
        Std::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(chromium) = chromium else {
        skip("chromium is not installed (apt-get install chromium)");
        return;
    };
    let png = dir.path().join("shot.png");
    let status = Std::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1400,3000",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!(
            "file://{}",
            out.join("comparison-1.html").display()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let decoder = png::Decoder::new(std::fs::File::open(&png).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    // Every environment's marks in its palette colour (baseline blue,
    // then orange, then green): bars and run points.
    let near = |p: &[u8], (r, g, b): (i32, i32, i32)| {
        (p[0] as i32 - r).abs() + (p[1] as i32 - g).abs() + (p[2] as i32 - b).abs() < 24
    };
    for (env, colour) in [
        ("host", (0x4e, 0x79, 0xa7)),
        ("<script>", (0xf2, 0x8e, 0x2b)),
        ("third", (0x59, 0xa1, 0x4f)),
    ] {
        let n = pixels.chunks(px).filter(|p| near(p, colour)).count();
        assert!(
            n > 300,
            "only {n} pixels in {env}'s colour: its marks are not drawn"
        );
    }
}

#[test]
fn a_password_never_reaches_the_store_the_reports_or_the_terminal() {
    let _shared = beside_others();
    // Issue 24, item 3: --pgsql-password's value was in the entry label,
    // comparisons.args, runs.label, every report format and progress lines.
    const SECRET: &str = "hunter2-not-for-reports";
    let dir = tempfile::tempdir().unwrap();
    let out = virtperf()
        .args(["compare", "--env", "host:name=b", "--repeat", "1", "--out"])
        .arg(dir.path())
        .args([
            "oltp_read_write",
            "--tables=1",
            "--table-size=100",
            "--time=0.3",
            &format!("--pgsql-password={SECRET}"),
        ])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(!said.contains(SECRET), "{said}");
    assert!(said.contains("pgsql-password=***"), "{said}");
    for format in ["table", "markdown", "csv", "json", "html"] {
        let out = virtperf()
            .args(["report", "--format", format])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains(SECRET),
            "report --format {format} shows it"
        );
    }
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "{} holds the password",
            path.display()
        );
    }
}
