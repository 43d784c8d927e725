//! A results store written by an earlier build (before typed jobs and the
//! registries: `tests/fixtures/store-0.1.0`, a host-against-host cpu
//! comparison of 3 rounds) still reports in every format.

mod common;

use common::{output_ok, virtperf};

#[test]
fn a_store_from_an_earlier_build_still_reports() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/store-0.1.0/results.db");
    std::fs::copy(&fixture, dir.path().join("results.db")).unwrap();
    let out = output_ok(
        virtperf()
            .arg("report")
            .arg(dir.path())
            .args(["--format", "json"]),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = json.to_string();
    assert!(text.contains("host-b"), "{text}");
    assert!(text.contains("events_per_sec"), "{text}");
    for format in ["table", "markdown", "csv", "html"] {
        let out = output_ok(
            virtperf()
                .arg("report")
                .arg(dir.path())
                .args(["--format", format]),
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("host-b"),
            "{format}"
        );
    }
}
