//! Fleets from the command line: `virtperf report` over several hosts'
//! result stores (the fleet view in every format, different suites refused,
//! a missing or broken store named), `--start-at` (waits, records how late it
//! began, refuses a past or far-future time), and `group:` environments
//! (members released together, each one's start recorded, a bad member
//! refused).

use std::path::{Path, PathBuf};

use serde_json::Value;
use virtperf::core::result::{EnvInfo, Metric, ResultDoc};
use virtperf::store::Store;

mod common;
use common::{output_ok, virtperf};

/// A results store in `dir` as `compare` leaves it: `host` at 1000
/// events/s and `docker` at `docker` of that, three rounds of `label` in
/// suite `suite`.
fn store(dir: &Path, suite: &str, label: &str, docker: f64) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let s = Store::open(dir).unwrap();
    let envs = vec!["host".to_string(), "docker".to_string()];
    let id = s
        .begin("2026-11-23T00:00:00Z", suite, "host", &envs, &[])
        .unwrap();
    for (round, j) in [1.0, 1.01, 0.99].iter().enumerate() {
        for (env, speed) in [("host", 1.0), ("docker", docker)] {
            let doc = ResultDoc {
                env: EnvInfo {
                    name: env.into(),
                    kind: env.into(),
                    ..EnvInfo::default()
                },
                started_at: "2026-11-23T00:00:00.000Z".into(),
                events: 1000,
                ..ResultDoc::new(
                    "cpu",
                    env,
                    vec![Metric::new(
                        "events_per_sec",
                        1000.0 * speed * j,
                        "events/s",
                        true,
                    )],
                )
            };
            s.record(id, env, 0, label, round, Ok(&doc)).unwrap();
        }
    }
    s.finish(id).unwrap();
    dir.to_path_buf()
}

fn run_report(args: &[&str]) -> std::process::Output {
    virtperf().arg("report").args(args).output().unwrap()
}

fn three_hosts(root: &Path) -> Vec<String> {
    [("hv1", 0.97), ("hv2", 0.96), ("hv3", 0.70)]
        .iter()
        .map(|(h, d)| {
            store(&root.join(h), "fleet-test", "cpu --time=1", *d)
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn report_over_three_stores_shows_each_host_and_the_fleet_view() {
    let root = tempfile::tempdir().unwrap();
    let dirs = three_hosts(root.path());
    let args = |format: &str| -> Vec<String> {
        let mut a = dirs.clone();
        a.extend(["--format".to_string(), format.to_string()]);
        a
    };
    let text = |format: &str| {
        let a = args(format);
        let out = run_report(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let table = text("table");
    assert!(
        table.starts_with("virtperf fleet report\nSuite fleet-test,"),
        "{table}"
    );
    for d in &dirs {
        assert!(table.contains(&format!("=== Host {d} ===")), "{table}");
    }
    // About 3%, 4% and 30% overhead: median 4.0%, hv3 the outlier.
    // The entry's label heads its rows; the docker row follows it.
    let line = table
        .lines()
        .skip_while(|l| !l.starts_with("cpu --time=1"))
        .find(|l| l.trim_start().starts_with("docker"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains(" 3 ") && line.contains("4.0%"), "{line}");
    // The outlier column names hv3, and its figure is starred per host.
    assert!(line.contains(&format!("  {}  ", dirs[2])), "{line}");
    assert!(line.trim_end().ends_with('*'), "{line}");
    let json: Value = serde_json::from_str(&text("json")).unwrap();
    assert_eq!(json["schema"], "virtperf.fleet/1");
    assert_eq!(json["hosts"].as_array().unwrap().len(), 3);
    assert_eq!(
        json["hosts"][0]["analysis"]["schema"],
        "virtperf.comparison/2"
    );
    let row = &json["fleet"][0];
    assert_eq!(row["kind"], "docker");
    assert_eq!(row["measure"], "overhead_pct");
    assert_eq!(row["n"], 3);
    assert!((row["median"].as_f64().unwrap() - 4.0).abs() < 0.1, "{row}");
    assert_eq!(row["outliers"][0], dirs[2].as_str());
    let csv = text("csv");
    assert!(csv.starts_with("host,comparison,entry,"), "{csv}");
    let docker_rows: Vec<&str> = csv.lines().filter(|l| l.contains(",docker,")).collect();
    assert_eq!(docker_rows.len(), 3, "{csv}");
    assert!(docker_rows.iter().any(|l| l.contains(",true,3,")), "{csv}");
    let md = text("markdown");
    assert!(md.starts_with("# virtperf fleet report"), "{md}");
    assert!(
        md.contains("## Fleet view") && md.contains("\n### Overview\n"),
        "{md}"
    );
    assert_eq!(md.matches("\nvirtperf comparison #1\n").count(), 3, "{md}");
    let html = text("html");
    assert!(html.contains("<h1>virtperf fleet report</h1>"));
    assert_eq!(html.matches("<h2>Host ").count(), 3);
    assert_eq!(html.matches("</html>").count(), 1);
    // One store alone is the plain report, as before.
    let one = run_report(&[&dirs[0]]);
    assert!(String::from_utf8_lossy(&one.stdout).starts_with("virtperf comparison #1\n"));
}

#[test]
fn stores_of_different_suites_are_refused_plainly() {
    let root = tempfile::tempdir().unwrap();
    let a = store(&root.path().join("a"), "quick", "cpu --time=1", 0.9);
    let b = store(&root.path().join("b"), "standard", "cpu --time=1", 0.9);
    let out = run_report(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("suite 'quick'") && err.contains("suite 'standard'"),
        "{err}"
    );
    assert!(err.contains("one at a time"), "{err}");
    assert!(out.stdout.is_empty(), "nothing mixed is printed");
    // The same suite name over other runs (two one-off command lines).
    let c = store(&root.path().join("c"), "command-line", "cpu --time=1", 0.9);
    let d = store(
        &root.path().join("d"),
        "command-line",
        "threads --time=1",
        0.9,
    );
    let out = run_report(&[c.to_str().unwrap(), d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("different entries"), "{err}");
}

#[test]
fn a_missing_or_broken_store_is_named() {
    let root = tempfile::tempdir().unwrap();
    let good = store(&root.path().join("good"), "s", "cpu", 0.9);
    let missing = root.path().join("nothing-here");
    std::fs::create_dir_all(&missing).unwrap();
    let out = run_report(&[good.to_str().unwrap(), missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no results store in") && err.contains("nothing-here"),
        "{err}"
    );
    let broken = root.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("results.db"), b"this is not SQLite").unwrap();
    let out = run_report(&[good.to_str().unwrap(), broken.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken"), "{err}");
    let out = run_report(&[good.to_str().unwrap(), good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("given twice"));
}

/// Every JSON document a single-workload run printed.
fn docs(args: &[&str]) -> Vec<Value> {
    let out = output_ok(virtperf().args(args));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A result's `started_at` (RFC 3339 with milliseconds) in seconds.
fn started(doc: &Value) -> f64 {
    let t = doc["started_at"].as_str().unwrap();
    assert_eq!(t.len(), 24, "milliseconds kept: {t}");
    moment(t)
}

fn moment(t: &str) -> f64 {
    virtperf::core::time::parse_moment(t).unwrap()
}

#[test]
fn start_at_waits_for_the_moment_and_records_how_late_it_began() {
    let now = virtperf::core::time::unix_now();
    let at = virtperf::core::time::rfc3339(now + 1.5, true);
    let d = docs(&[
        "cpu",
        "--time=0.2",
        "--cpu-max-prime=1000",
        &format!("--start-at={at}"),
        "--json",
    ]);
    let s = &d[0]["env"]["start_at"];
    assert_eq!(s["target"], at.as_str());
    let late = s["late_s"].as_f64().unwrap();
    assert!((0.0..0.5).contains(&late), "late by {late} s");
    assert!(moment(s["began"].as_str().unwrap()) >= moment(&at));
    assert!(started(&d[0]) >= moment(&at), "it never runs early");
}

#[test]
fn start_at_in_the_past_or_far_ahead_is_refused_and_leaves_nothing() {
    for (when, says) in [
        ("2020-01-01T00:00:00Z", "already past"),
        ("1000000000", "already past"),
        ("99999999999", "24 hours"),
        ("tomorrow", "RFC 3339"),
    ] {
        let out = virtperf()
            .args(["cpu", "--time=0.1", &format!("--start-at={when}")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{when}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--start-at") && err.contains(says),
            "{when}: {err}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let out = virtperf()
        .args([
            "compare",
            "--env",
            "host:name=b",
            "--start-at",
            "1000000000",
        ])
        .arg("--out")
        .arg(&results)
        .args(["cpu", "--time=0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--start-at=1000000000: that moment is already past"));
    assert!(!results.exists(), "nothing written");
}

#[test]
fn a_group_of_two_members_starts_together_and_is_summed() {
    let d = docs(&[
        "cpu",
        "--time=0.3",
        "--cpu-max-prime=2000",
        "--env",
        "group:host+host:name=b",
        "--json",
    ]);
    assert_eq!(d.len(), 3, "each member and the sum");
    assert_eq!(d[0]["env"]["name"], "host");
    assert_eq!(d[1]["env"]["name"], "b");
    assert_eq!(d[1]["env"]["kind"], "host");
    assert_eq!(d[2]["env"]["name"], "group:host+host:name=b (sum of 2)");
    assert_eq!(d[2]["env"]["kind"], "group");
    let eps = |d: &Value| common::metric(d, "events_per_sec");
    assert!((eps(&d[2]) - eps(&d[0]) - eps(&d[1])).abs() < 1e-6);
    let gap = (started(&d[0]) - started(&d[1])).abs();
    assert!(gap <= 0.05, "members started {gap} s apart");
    let per = d[2]["details"]["per_instance"].as_array().unwrap();
    assert_eq!(per.len(), 2);
    assert_eq!(per[0]["started_at"], d[0]["started_at"]);
}

#[test]
fn compare_runs_a_group_and_stores_each_members_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let at = format!("{:.3}", virtperf::core::time::unix_now() + 1.0);
    virtperf()
        .args([
            "compare",
            "--env",
            "group:host:name=g1+host:name=g2",
            "--repeat",
            "1",
            "--start-at",
            &at,
            "--out",
        ])
        .arg(&out)
        .args(["cpu", "--time=0.2", "--cpu-max-prime=1000"])
        .assert()
        .success();
    let store = Store::open_read_only(&out).unwrap();
    let cmp = store.latest().unwrap().unwrap();
    let runs = store.runs(cmp.id).unwrap();
    let group = runs
        .iter()
        .find(|r| r.env == "group:host:name=g1+host:name=g2")
        .and_then(|r| r.doc.as_ref())
        .expect("the group's run is stored");
    assert_eq!(group.env.kind, "group");
    let starts: Vec<f64> = group.details["per_instance"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| moment(m["started_at"].as_str().unwrap()))
        .collect();
    assert_eq!(starts.len(), 2);
    assert!((starts[0] - starts[1]).abs() <= 0.05, "{starts:?}");
    let s = group.env.start_at.as_ref().expect("the start is recorded");
    assert!(s.late_s >= 0.0 && s.late_s < 0.5, "{s:?}");
    let target: f64 = at.parse().unwrap();
    assert!((moment(&s.target) - target).abs() < 0.002, "{s:?}");
    // The host baseline carries the same record.
    assert!(runs
        .iter()
        .filter_map(|r| r.doc.as_ref())
        .all(|d| d.env.start_at.as_ref() == Some(s)));
}

#[test]
fn a_group_with_an_invalid_member_is_refused_naming_it() {
    let out = virtperf()
        .args(["cpu", "--time=0.1", "--env", "group:host+vmware"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--env group:host+vmware: member 2 'vmware': unknown environment"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let out = virtperf()
        .args(["compare", "--env", "group:host+host", "--out"])
        .arg(&results)
        .args(["cpu", "--time=0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("both labelled 'host'"));
    assert!(!results.exists(), "nothing written");
}

#[test]
fn a_group_of_a_host_and_a_container_starts_together() {
    let engine = std::process::Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output();
    if !engine.is_ok_and(|o| o.status.success()) {
        common::skip("no Docker engine answers `docker info`");
        return;
    }
    let d = docs(&[
        "cpu",
        "--time=0.3",
        "--cpu-max-prime=2000",
        "--env",
        "group:host+docker:cpus=1,name=fleet-core-ct",
        "--json",
    ]);
    assert_eq!(d.len(), 3, "each member and the sum");
    assert_eq!(d[1]["env"]["name"], "fleet-core-ct");
    assert_eq!(d[1]["env"]["kind"], "docker");
    assert_eq!(d[2]["env"]["kind"], "group");
    let per = d[2]["details"]["per_instance"].as_array().unwrap();
    let kinds: Vec<&str> = per.iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["host", "docker"]);
    let gap = (started(&d[0]) - started(&d[1])).abs();
    assert!(gap <= 0.05, "members started {gap} s apart");
}
