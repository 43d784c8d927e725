//! Golden files for every exporter: one fixed analysis (three environments,
//! throughput and latency metrics, seed 001 categories, a flagged run, a
//! failed run, a hostile environment name and a file system that ignores
//! fsync) rendered in each format and
//! compared with `tests/golden/report.<format>` (`report.detail.<format>`:
//! with `--detail`). After an intended change,
//! regenerate with `UPDATE_GOLDEN=1 cargo test --test golden` and review the
//! diff.

use std::path::Path;

use virtperf::analysis::analyze;
use virtperf::core::result::{EnvInfo, Metric, Monitor, ResultDoc, Storage};
use virtperf::report::{Fleet, HostAnalysis, View, EXPORTERS};
use virtperf::stats::VerdictSettings;
use virtperf::store::{ComparisonRow, RunRow};

const ENVS: [&str; 3] = ["host", "docker", "qemu <b>&\"x\""];

fn doc(env: &str, workload: &str, metrics: Vec<Metric>, steal: f64) -> ResultDoc {
    ResultDoc {
        params: serde_json::json!({"threads": 1})
            .as_object()
            .unwrap()
            .clone(),
        env: EnvInfo {
            name: env.into(),
            kind: env.split(' ').next().unwrap().into(),
            kernel: "6.1.0-test".into(),
            cpu_model: "Test CPU".into(),
            cpus: 2,
            ..EnvInfo::default()
        },
        started_at: "2026-11-23T00:00:00Z".into(),
        events: 100,
        monitor: Monitor {
            cpu_steal_pct: steal,
            ..Monitor::default()
        },
        ..ResultDoc::new(workload, env, metrics)
    }
}

fn runs() -> Vec<RunRow> {
    runs_at(0.97)
}

/// The fixture with docker at `docker` of the host's speed.
fn runs_at(docker: f64) -> Vec<RunRow> {
    let mut runs = Vec::new();
    // Deterministic jitter: a small, fixed pattern per round.
    let jitter = [1.0, 1.01, 0.99, 1.005, 0.995];
    for (round, j) in jitter.iter().enumerate() {
        for (ei, env) in ENVS.iter().enumerate() {
            let speed = [1.0, docker, 0.05][ei];
            let slow = [1.0, 1.4, 4.0][ei];
            let cpu = doc(
                env,
                "cpu",
                vec![Metric::new(
                    "events_per_sec",
                    1500.0 * speed * j,
                    "events/s",
                    true,
                )],
                if ei == 1 && round == 2 { 9.0 } else { 0.0 },
            );
            runs.push(RunRow {
                env: env.to_string(),
                entry: 0,
                label: "cpu cpu-max-prime=20000".into(),
                round,
                doc: Some(cpu),
                error: None,
            });
            let mut disk = doc(
                env,
                "disk",
                vec![
                    Metric::new("put_block_kib_per_sec", 170000.0 * speed * j, "KiB/s", true),
                    Metric::new("rewrite_kib_per_sec", 90000.0 * speed / j, "KiB/s", true),
                    Metric::new("get_block_kib_per_sec", 250000.0 * speed * j, "KiB/s", true),
                    Metric::new("get_block_latency_max_ms", 2.0 * slow * j, "ms", false),
                ],
                0.0,
            );
            // The file system under the disk test; docker's ignores fsync.
            disk.env.storage = Some(Storage {
                fs: ["ext4", "overlay", "ext4"][ei].into(),
                source: ["/dev/vda", "overlay", "/dev/vdb"][ei].into(),
                fsync_ignored: (ei == 1).then(|| "mounted volatile".into()),
            });
            let failed = ei == 2 && round == 4;
            runs.push(RunRow {
                env: env.to_string(),
                entry: 1,
                label: "disk disk-file-size=256M".into(),
                round,
                doc: (!failed).then_some(disk),
                error: failed.then(|| "qemu: no answer from the agent within 600 s".into()),
            });
            let micro = doc(
                env,
                "microops",
                vec![
                    Metric::new("getpid_ns", 160.0 * slow * j, "ns", false),
                    Metric::new("getpid_cycles", 420.0 * slow * j, "cycles", false),
                ],
                0.0,
            );
            runs.push(RunRow {
                env: env.to_string(),
                entry: 2,
                label: "microops ops=getpid".into(),
                round,
                doc: Some(micro),
                error: None,
            });
        }
    }
    runs
}

fn comparison() -> ComparisonRow {
    ComparisonRow {
        id: 3,
        started_at: "2026-11-23T00:00:00Z".into(),
        suite: "golden".into(),
        baseline: "host".into(),
        envs: ENVS.iter().map(|s| s.to_string()).collect(),
        args: vec![],
        finished: true,
        adaptive: false,
    }
}

/// Compares `text` with `tests/golden/NAME` (or writes it under
/// UPDATE_GOLDEN); the first differing line, if any.
fn check_golden(name: &str, text: &str) -> Option<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, text).unwrap();
        return None;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} is missing: run UPDATE_GOLDEN=1 cargo test --test golden",
            path.display()
        )
    });
    (want != text).then(|| {
        let line = want
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(text.lines().count()));
        format!(
            "{}: first difference at line {}:\n  golden: {:?}\n  now:    {:?}",
            name,
            line + 1,
            want.lines().nth(line).unwrap_or(""),
            text.lines().nth(line).unwrap_or("")
        )
    })
}

#[test]
fn every_exporter_renders_the_fleet_view_as_its_golden_file() {
    // Three hosts of one suite: docker 3%, 4% and 25% slower than each
    // host's own baseline, so the third is the outlier.
    let hosts: Vec<HostAnalysis> = [("hv-a", 0.97), ("hv-b", 0.96), ("hv-c <i>", 0.75)]
        .iter()
        .map(|(host, docker)| HostAnalysis {
            host: host.to_string(),
            analysis: analyze(
                &comparison(),
                &runs_at(*docker),
                &VerdictSettings::default(),
            ),
        })
        .collect();
    let fleet = Fleet::build(hosts).unwrap();
    let differ: Vec<String> = EXPORTERS
        .iter()
        .filter_map(|e| {
            let text = e.render_fleet(&fleet, View::default());
            // Every format names every host and the outlier.
            assert!(
                text.contains("hv-a") && text.contains("hv-b"),
                "{}",
                e.name()
            );
            if matches!(e.name(), "html" | "markdown") {
                assert!(text.contains("hv-c &lt;i&gt;") && !text.contains("<i>"));
            } else {
                assert!(text.contains("hv-c <i>"), "{}: {text}", e.name());
            }
            check_golden(&format!("fleet.{}", e.name()), &text)
        })
        .collect();
    let row = fleet
        .rows
        .iter()
        .find(|r| r.kind == "docker" && r.label.starts_with("cpu"))
        .unwrap();
    assert_eq!(row.outliers, vec!["hv-c <i>".to_string()]);
    assert!((row.median - 4.0).abs() < 0.1, "{}", row.median);
    assert!(
        differ.is_empty(),
        "fleet reports differ from tests/golden (if intended: UPDATE_GOLDEN=1 cargo test --test golden, then review the diff):\n{}",
        differ.join("\n")
    );
}

#[test]
fn every_exporter_matches_its_golden_file() {
    let cmp = comparison();
    let analysis = analyze(&cmp, &runs(), &VerdictSettings::default());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut differ = Vec::new();
    // Every format as `compare` prints it, and the two whose content
    // `--detail` changes with it.
    let views = EXPORTERS
        .iter()
        .map(|e| (*e, View::default(), e.name().to_string()))
        .chain(
            EXPORTERS
                .iter()
                .filter(|e| matches!(e.name(), "table" | "markdown"))
                .map(|e| (*e, View { detail: true }, format!("detail.{}", e.name()))),
        );
    for (exporter, view, name) in views {
        let text = exporter.render(&analysis, view);
        let path = dir.join(format!("report.{name}"));
        if update {
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run UPDATE_GOLDEN=1 cargo test --test golden",
                path.display()
            )
        });
        if want != text {
            let line = want
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(want.lines().count().min(text.lines().count()));
            differ.push(format!(
                "{}: first difference at line {}:\n  golden: {:?}\n  now:    {:?}",
                name,
                line + 1,
                want.lines().nth(line).unwrap_or(""),
                text.lines().nth(line).unwrap_or("")
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "reports differ from tests/golden (if intended: UPDATE_GOLDEN=1 cargo test --test golden, then review the diff):\n{}",
        differ.join("\n")
    );
}
