//! The HTML report in a real browser (issue 27: marks hidden past a chart's
//! edge). Each page, at a desktop's and a phone's width, is opened in
//! headless Chromium with `tests/browser/check.js` appended, which measures
//! what the browser drew: every `.mark` of an `svg.chart` inside its chart,
//! no two `.label`s of a chart overlapping, and a page that does not scroll
//! sideways. A hand-written page that breaks each rule proves the checker
//! can fail. Screenshots are kept under `target/browser-artifacts/`.

mod common;

use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::report_fixture::{extreme_analysis, golden_analysis};
use common::skip;
use serde_json::Value;
use virtperf::report::{View, EXPORTERS};

const CHECK: &str = include_str!("browser/check.js");
const WIDTHS: [u32; 2] = [1280, 390];
/// No single browser run may take longer.
const LIMIT: Duration = Duration::from_secs(60);

/// The Chromium on this machine, if any.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Runs Chromium headless on `page` in a window `size` with `args`, in its
/// own process group with a fresh profile under `dir`, killed (the whole
/// group) after `LIMIT`; its stdout.
fn run_chromium(bin: &str, dir: &Path, page: &Path, size: (u32, u64), args: &[String]) -> String {
    let width = size.0;
    let profile = tempfile::tempdir_in(dir).unwrap();
    let log = dir.join(format!("chromium-{width}.log"));
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--window-size={width},{}", size.1))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{bin}: {e}"));
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > LIMIT {
            // SAFETY: signalling the process group of our own child.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "chromium on {} did not finish within {LIMIT:?}; its log: {}",
                page.display(),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = reader.join().unwrap();
    assert!(
        status.success(),
        "chromium on {} failed ({status}): {}",
        page.display(),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    out
}

/// Headless Chromium's window is never narrower than 500 px, so a page is
/// shown in a frame of exactly `width` px; check.js in it posts its result
/// to this outer page, which writes it where `--dump-dom` shows it.
fn frame(page: &str, width: u32, height: u64) -> String {
    format!(
        r#"<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0"><iframe src="{page}" style="border:0;display:block;width:{width}px;height:{height}px"></iframe><script>
window.addEventListener('message', function (e) {{
  var out = document.createElement('pre');
  out.id = 'browser-check';
  out.textContent = e.data;
  document.body.appendChild(out);
}});
</script></body></html>"#
    )
}

/// What check.js found on `html` at `width` (its JSON); `html` is left in
/// `dir` as NAME-WIDTH.html with the check appended.
fn check(bin: &str, dir: &Path, name: &str, html: &str, width: u32) -> Value {
    let page = format!("{name}-{width}.html");
    let at = html.rfind("</body>").unwrap_or(html.len());
    let checked = format!("{}<script>{CHECK}</script>{}", &html[..at], &html[at..]);
    std::fs::write(dir.join(&page), checked).unwrap();
    let outer = dir.join(format!("{name}-{width}.frame.html"));
    std::fs::write(&outer, frame(&page, width, 2000)).unwrap();
    let window = (width.max(500) + 20, 2000);
    let dom = run_chromium(bin, dir, &outer, window, &["--dump-dom".into()]);
    let start = dom
        .rfind(r#"<pre id="browser-check""#)
        .and_then(|i| Some(i + dom[i..].find('>')? + 1))
        .unwrap_or_else(|| panic!("{name} at {width} px: check.js wrote no result"));
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    let result: Value =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e}: {json}"));
    assert_eq!(
        result["width"], width,
        "{name}: the frame is not {width} px wide"
    );
    result
}

/// A screenshot of the page `check` left at `width`, its whole `height`,
/// kept as an artifact.
fn screenshot(bin: &str, dir: &Path, name: &str, width: u32, height: u64) -> PathBuf {
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("browser-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let png = artifacts.join(format!("{name}-{width}.png"));
    let _ = std::fs::remove_file(&png);
    let height = height.clamp(600, 16000);
    let outer = dir.join(format!("{name}-{width}.shot.html"));
    std::fs::write(
        &outer,
        frame(&format!("{name}-{width}.html"), width, height),
    )
    .unwrap();
    run_chromium(
        bin,
        dir,
        &outer,
        (width.max(500), height),
        &[format!("--screenshot={}", png.display())],
    );
    assert!(png.exists(), "no screenshot at {}", png.display());
    png
}

/// One report page at one width as Chromium drew it: the page's name, the
/// width and check.js's result.
type Measured = (&'static str, u32, Value);

/// Each report page at each width, measured once for all tests; None
/// without Chromium.
fn measured() -> Option<&'static [Measured]> {
    static RESULTS: OnceLock<Option<Vec<Measured>>> = OnceLock::new();
    RESULTS
        .get_or_init(|| {
            let bin = chromium()?;
            let html = EXPORTERS.iter().find(|e| e.name() == "html").unwrap();
            let pages = [
                ("golden", html.render(&golden_analysis(), View::default())),
                (
                    "extremes",
                    html.render(&extreme_analysis(), View::default()),
                ),
            ];
            // The extremes' every ratio is drawn: 1500× as an arrow with its
            // figure.
            assert!(pages[1].1.contains(r#"class="mark offscale""#));
            assert!(pages[1].1.contains(">1500×</text>"));
            let dir = tempfile::tempdir().unwrap();
            let mut out = Vec::new();
            for (name, text) in &pages {
                for width in WIDTHS {
                    let result = check(bin, dir.path(), name, text, width);
                    let height = result["height"].as_u64().unwrap_or(2000);
                    let shot = screenshot(bin, dir.path(), name, width, height);
                    println!(
                        "{name} at {width} px: {} charts, {} marks, {} labels; screenshot {}",
                        result["charts"],
                        result["marks"],
                        result["labels"],
                        shot.display()
                    );
                    assert!(result["charts"].as_u64().unwrap() >= 3, "{result}");
                    out.push((*name, width, result));
                }
            }
            Some(out)
        })
        .as_deref()
}

/// The violations of one kind, one line each.
fn of_kind(result: &Value, kind: &str) -> Vec<String> {
    result["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["kind"] == kind)
        .map(|v| {
            format!(
                "  {}: chart {:?}: {} at {} (chart {})",
                v["kind"].as_str().unwrap_or(""),
                v["chart"].as_str().unwrap_or(""),
                v["element"].as_str().unwrap_or(""),
                v["box"],
                if v["chart_box"].is_null() {
                    &v["other_box"]
                } else {
                    &v["chart_box"]
                }
            )
        })
        .collect()
}

#[test]
fn every_chart_keeps_its_marks_and_labels_inside_in_a_real_browser() {
    let Some(results) = measured() else {
        skip("chromium is not installed (apt-get install chromium; see .ci/packages.txt)");
        return;
    };
    let mut found = Vec::new();
    for (name, width, result) in results {
        for kind in [
            "mark outside its chart",
            "mark without a title",
            "label outside its chart",
            "labels overlap",
        ] {
            found.extend(
                of_kind(result, kind)
                    .into_iter()
                    .map(|v| format!("{name} at {width} px: {v}")),
            );
        }
    }
    assert!(
        found.is_empty(),
        "charts hide or overlap what they draw:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_report_page_does_not_scroll_sideways_on_a_phone() {
    let Some(results) = measured() else {
        skip("chromium is not installed (apt-get install chromium; see .ci/packages.txt)");
        return;
    };
    let found: Vec<String> = results
        .iter()
        .flat_map(|(name, width, result)| {
            of_kind(result, "page overflows")
                .into_iter()
                .map(move |v| format!("{name} at {width} px: {v}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "the page scrolls sideways (its layout is src/report/html/mod.rs's):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_browser_check_finds_a_mark_outside_overlapping_labels_and_a_wide_page() {
    let Some(bin) = chromium() else {
        skip("chromium is not installed (apt-get install chromium; see .ci/packages.txt)");
        return;
    };
    let page = r#"<!DOCTYPE html><html><body>
<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 200 100" width="200" height="100"><title>control</title>
<circle class="mark run" cx="260" cy="50" r="4"><title>run 1: 9×</title></circle>
<circle class="mark run" cx="50" cy="50" r="4"><title>run 2: 1×</title></circle>
<text class="label a" x="20" y="30" font-size="11">overlapping</text>
<text class="label a" x="26" y="34" font-size="11">labels</text>
</svg><div style="width:2000px">wide</div></body></html>"#;
    let dir = tempfile::tempdir().unwrap();
    let result = check(bin, dir.path(), "control", page, 390);
    let outside = of_kind(&result, "mark outside its chart");
    assert_eq!(outside.len(), 1, "{result}");
    assert!(outside[0].contains("run 1: 9×"), "{outside:?}");
    assert_eq!(of_kind(&result, "labels overlap").len(), 1, "{result}");
    assert_eq!(of_kind(&result, "page overflows").len(), 1, "{result}");
    assert_eq!(result["marks"], 2);
}
