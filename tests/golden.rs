//! Golden files for every exporter: one fixed analysis (three environments,
//! throughput and latency metrics, seed 001 categories, a flagged run, a
//! failed run, a hostile environment name and a file system that ignores
//! fsync) rendered in each format and
//! compared with `tests/golden/report.<format>` (`report.detail.<format>`:
//! with `--detail`). After an intended change,
//! regenerate with `UPDATE_GOLDEN=1 cargo test --test golden` and review the
//! diff.

use std::path::Path;

mod common;

use common::report_fixture::{comparison, golden_analysis, runs_at};
use virtperf::analysis::analyze;
use virtperf::report::{Fleet, HostAnalysis, View, EXPORTERS};
use virtperf::stats::VerdictSettings;

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
            if matches!(e.name(), "html" | "markdown" | "junit") {
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
    let analysis = golden_analysis();
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
