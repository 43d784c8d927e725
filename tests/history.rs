//! `virtperf history` and the `--fail-on` gates end to end, on results
//! stores written here through the store's own API (synthetic runs, so no
//! test waits for a benchmark), and one short real comparison whose exit
//! code must agree with its own verdicts.

use std::path::Path;

mod common;
use common::{output_ok, virtperf};
use virtperf::analysis::history_sim::{synthetic, Setup};
use virtperf::stats::splitmix::SplitMix64;
use virtperf::store::Store;

/// A store in `dir` with comparisons 1..=n of host and d (the history
/// simulation's synthetic comparisons: cpu, 3 rounds, CV 3%), d given 0.7
/// of a CPU instead of 1 from comparison `step` on.
fn history_store(dir: &Path, n: i64, step: i64) {
    history_store_with(dir, n, |id| {
        Setup::quota(if id >= step { 0.7 } else { 1.0 })
    });
}

/// A store in `dir` with comparisons 1..=n as `setup(id)` says.
fn history_store_with(dir: &Path, n: i64, setup: impl Fn(i64) -> Setup) {
    let store = Store::open(dir).unwrap();
    let mut rng = SplitMix64(n as u64);
    for id in 1..=n {
        let s = synthetic(id, &setup(id), &mut rng);
        let c = &s.cmp;
        let cmp = store
            .begin(&c.started_at, &c.suite, &c.baseline, &c.envs, &c.args)
            .unwrap();
        assert_eq!(cmp, id);
        for r in &s.runs {
            let doc = r.doc.as_ref().unwrap();
            store
                .record(cmp, &r.env, r.entry, &r.label, r.round, Ok(doc))
                .unwrap();
        }
        store.finish(cmp).unwrap();
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn history_names_the_step_its_comparison_and_the_setting_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    history_store(dir.path(), 10, 6);
    let d = dir.path().to_str().unwrap();
    let out = virtperf().args(["history", d]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    eprintln!("{table}");
    assert!(table.contains("History of 10 comparisons"), "{table}");
    assert!(
        table.contains("d cpu events_per_sec: ")
            && table.contains("slower from comparison #6 (2026-12-06), p = "),
        "{table}"
    );
    assert!(
        table.contains("d spec: docker:cpus=1,name=d → docker:cpus=0.7,name=d"),
        "{table}"
    );
    // Exactly one change point.
    assert_eq!(table.matches("from comparison #").count(), 1, "{table}");
    let json: serde_json::Value = serde_json::from_slice(
        &virtperf()
            .args(["history", d, "--format", "json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(json["schema"], "virtperf.history/1");
    assert_eq!(json["series"][0]["changes"][0]["at"], 5);
    assert_eq!(json["series"][0]["points"].as_array().unwrap().len(), 10);
    let page = dir.path().join("h/history.html");
    let out = virtperf()
        .args(["history", d, "--format", "html", "--out"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<svg").count(), 1);
    assert!(html.contains("class=\"band\"") && html.contains("class=\"change\""));
    let md = text(
        &virtperf()
            .args(["history", d, "--format", "markdown"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(md.contains("| comparison | date | slowdown |"), "{md}");
    // The change is four comparisons old: the gate holds.
    let out = virtperf()
        .args(["history", d, "--fail-on=changed"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn history_names_the_kernel_and_engine_version_that_changed_at_the_change_point() {
    // The step comes with a new kernel and a new engine; the engine's
    // version also changed once earlier, where nothing else did.
    let dir = tempfile::tempdir().unwrap();
    history_store_with(dir.path(), 10, |id| Setup {
        kernel: if id >= 6 { "6.5.0" } else { "6.1.0" }.into(),
        engine_version: Some(
            if id >= 6 {
                "25.0.1"
            } else if id >= 3 {
                "24.0.7"
            } else {
                "24.0.5"
            }
            .into(),
        ),
        slowdown: if id >= 6 { 1.3 } else { 1.0 },
        quota: 1.0,
    });
    let out = virtperf()
        .args(["history", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let line = table
        .lines()
        .find(|l| l.contains("from comparison #6"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        line.contains(
            "versions changed there: baseline kernel: 6.1.0 → 6.5.0, \
             d docker_version: 24.0.7 → 25.0.1, d kernel: 6.1.0 → 6.5.0"
        ),
        "{line}"
    );
    assert!(!line.contains("also changed"), "{line}");
    // The earlier engine update is no change point.
    assert_eq!(table.matches("from comparison #").count(), 1, "{table}");
    let json: serde_json::Value = serde_json::from_slice(
        &virtperf()
            .args(["history", dir.path().to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let versions = &json["series"][0]["changes"][0]["versions"];
    assert_eq!(versions.as_array().map(Vec::len), Some(3), "{versions}");
}

#[test]
fn history_fail_on_changed_trips_while_the_change_is_new() {
    let dir = tempfile::tempdir().unwrap();
    // Ten comparisons before the step and its three newest after it: the
    // fewest a side can have, and enough before for the test to tell.
    history_store(dir.path(), 13, 11);
    let out = virtperf()
        .args([
            "history",
            dir.path().to_str().unwrap(),
            "--fail-on",
            "changed",
        ])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("--fail-on: 1 of 1 series") && err.contains("from comparison #11"),
        "{err}"
    );
    // Everything was still printed.
    assert!(text(&out.stdout).contains("History of 13 comparisons"));
}

#[test]
fn report_fail_on_exits_3_naming_the_rows_and_junit_marks_them() {
    let dir = tempfile::tempdir().unwrap();
    history_store(dir.path(), 6, 6);
    let newest = format!("{}/6", dir.path().display());
    let out = virtperf()
        .args(["report", &newest, "--fail-on=slower"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("d / cpu / events_per_sec: slower"), "{err}");
    assert!(
        text(&out.stdout).contains("events_per_sec"),
        "the report is printed too"
    );
    let out = virtperf()
        .args([
            "report",
            &newest,
            "--fail-on=faster",
            "--fail-on=inconclusive",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = virtperf()
        .args([
            "report",
            &newest,
            "--format",
            "junit",
            "--fail-on",
            "changed",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let xml = text(&out.stdout);
    well_formed(&xml);
    assert!(xml.contains("tests=\"1\" failures=\"1\""), "{xml}");
    assert!(xml.contains("<failure type=\"changed\""), "{xml}");
    // Comparison 1 (d had a whole CPU) passes the same gate.
    let first = format!("{}/1", dir.path().display());
    let out = virtperf()
        .args(["report", &first, "--format", "junit", "--fail-on=slower"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(!text(&out.stdout).contains("<failure"));
}

#[test]
fn bad_gate_and_history_input_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for (args, says) in [
        (vec!["history"], "name one or more results directories"),
        (vec!["history", d], "no results store"),
        (vec!["report", d, "--fail-on=worse"], "--fail-on"),
        (
            vec!["compare", "--fail-on", "equivalent", "cpu"],
            "--fail-on",
        ),
        (vec!["history", d, "--fail-on=slower"], "--fail-on"),
    ] {
        let out = virtperf().args(&args).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing left behind"
    );
}

#[test]
fn a_real_comparisons_exit_code_agrees_with_its_verdicts() {
    // Host against host, two short rounds: whatever the verdict, the exit
    // code is 3 exactly when it is one the gates name, and the JUnit file
    // says so, with every result written first.
    let dir = tempfile::tempdir().unwrap();
    let out = virtperf()
        .args([
            "compare",
            "--env",
            "host:name=b",
            "--repeat",
            "2",
            "--format",
            "junit",
        ])
        .args(["--fail-on=changed", "--fail-on=inconclusive", "--out"])
        .arg(dir.path())
        .args(["cpu", "--time=0.2", "--cpu-max-prime=2000"])
        .output()
        .unwrap();
    let xml = text(&out.stdout);
    well_formed(&xml);
    let csv = text(
        &virtperf()
            .args(["report", dir.path().to_str().unwrap(), "--format", "csv"])
            .output()
            .unwrap()
            .stdout,
    );
    let row = csv
        .lines()
        .find(|l| l.contains(",b,") && l.contains(",events_per_sec,"))
        .unwrap_or_else(|| panic!("{csv}"))
        .to_string();
    let gated = !row.contains(",equivalent,");
    assert_eq!(
        out.status.code(),
        Some(if gated { 3 } else { 0 }),
        "{row}\n{}",
        text(&out.stderr)
    );
    assert_eq!(xml.contains("<failure"), gated, "{xml}");
    assert!(dir.path().join("comparison-1.html").exists());
}

/// Panics unless `xml` is well-formed as far as these documents go: one
/// declaration, balanced tags, only the five predefined entities.
fn well_formed(xml: &str) {
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
        "{xml}"
    );
    let mut stack: Vec<String> = Vec::new();
    let body = &xml[xml.find("?>").unwrap() + 2..];
    let mut rest = body;
    while let Some(open) = rest.find('<') {
        check_text(&rest[..open]);
        let close = rest[open..].find('>').expect("an unclosed tag") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "{xml}");
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap();
            stack.push(name.to_string());
        }
        let attrs = tag.split_once(' ').map_or("", |(_, a)| a);
        assert_eq!(attrs.matches('"').count() % 2, 0, "{tag}");
        check_text(&attrs.replace('"', ""));
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

fn check_text(t: &str) {
    assert!(!t.contains('<') && !t.contains('>'), "{t}");
    for (i, _) in t.match_indices('&') {
        let entity = &t[i..t[i..].find(';').map_or(t.len(), |e| i + e + 1)];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity),
            "{entity} in {t}"
        );
    }
    assert!(
        !t.chars()
            .any(|c| (c as u32) < 0x20 && !"\t\n\r".contains(c)),
        "{t:?}"
    );
}

/// `compare --baseline-from` end to end: a real comparison on the host,
/// then a second whose baseline is the first one's: unpaired, said so in
/// every format with the comparison's number, an entry of other parameters
/// not comparable with why; a wrong #N, a missing store and no common entry
/// refused with exit 2, naming the option, leaving nothing behind.
#[test]
fn a_comparison_against_an_earlier_ones_baseline_is_unpaired_and_says_so() {
    let root = tempfile::tempdir().unwrap();
    let first = root.path().join("first");
    output_ok(
        virtperf()
            .args(["compare", "--env", "host:name=b", "--repeat", "2", "--out"])
            .arg(&first)
            .args(["cpu", "--time=0.2", "--cpu-max-prime=2000"]),
    );
    let suite = root.path().join("two.toml");
    std::fs::write(
        &suite,
        "[[run]]\nworkload = \"cpu\"\ntime = 0.2\ncpu_max_prime = [2000, 3000]\n",
    )
    .unwrap();
    let second = root.path().join("second");
    let from = format!("{}#1", first.display());
    let out = output_ok(
        virtperf()
            .args(["compare", "--baseline-from", &from, "--env", "host"])
            .args(["--repeat", "2", "--format", "json", "--suite"])
            .arg(&suite)
            .arg("--out")
            .arg(&second),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["baseline"], "host from #1", "{json}");
    assert_eq!(json["baseline_from"]["comparison"], 1);
    let said = json["unpaired"]["said"].as_str().unwrap();
    assert!(
        said.starts_with(
            "Unpaired: the baseline (host from #1) is host's runs of comparison #1 of "
        ) && said.contains(&first.join("results.db").display().to_string()),
        "{said}"
    );
    assert!(json["unpaired"]["why_wider"]
        .as_str()
        .unwrap()
        .contains("intervals are wider"));
    // The entry of the same parameters has a verdict on two runs a side,
    // the baseline's copied from the first comparison; the other says why
    // it has none.
    let eps = |entry: usize| -> &serde_json::Value {
        json["entries"][entry]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "events_per_sec")
            .unwrap()
    };
    let same = &eps(0)["per_env"];
    assert_eq!(same[0]["env"], "host from #1");
    assert_eq!(same[0]["samples"].as_array().unwrap().len(), 2);
    assert_eq!(same[1]["samples"].as_array().unwrap().len(), 2);
    assert!(same[1]["vs_baseline"]["ratio"].is_object(), "{same}");
    let other = &eps(1)["per_env"][1];
    assert!(other["vs_baseline"].is_null(), "{other}");
    let why = other["not_comparable"].as_str().unwrap();
    assert!(
        why.contains("comparison #1 of ") && why.contains("cpu_max_prime 3000 vs 2000"),
        "{why}"
    );
    // Every layout says it first.
    let s = second.to_str().unwrap();
    for format in ["table", "markdown", "html"] {
        let out = output_ok(virtperf().args(["report", s, "--format", format]));
        // HTML escapes the apostrophe; the terminal wraps lines.
        let t = text(&out.stdout).replace("&#39;", "'");
        let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            t.contains("Unpaired: against comparison #1 from ")
                && t.contains("is host's runs of comparison #1 of ")
                && t.contains("intervals are wider")
                && t.contains("cpu_max_prime 3000 vs 2000"),
            "{format}: {t}"
        );
    }
    let page = std::fs::read_to_string(second.join("comparison-1.html")).unwrap();
    assert!(page.contains("Unpaired: against comparison #1"));

    // Bad input: exit 2, the option named, no --out made.
    let third = root.path().join("third");
    let missing = root.path().join("no-store");
    let f = first.to_str().unwrap();
    for (from, workload, says) in [
        (format!("{f}#7"), "cpu", "no comparison #7 in"),
        (
            missing.display().to_string(),
            "cpu",
            "no results store there",
        ),
        (f.to_string(), "threads", "has no entry in common"),
    ] {
        let out = virtperf()
            .args(["compare", "--baseline-from", &from, "--env", "host"])
            .args(["--repeat", "2", "--out"])
            .arg(&third)
            .args([workload, "--time=0.2"])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{from}: {err}");
        assert!(
            err.contains(&format!("--baseline-from {from}")) && err.contains(says),
            "{from}: {err}"
        );
        assert!(!third.exists(), "{from}: nothing left behind");
    }
    let out = virtperf()
        .args(["compare", "--baseline-from", f, "--repeat", "auto", "cpu"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--repeat auto"));
}
