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
    // Its latency figures, written when every one was a number, read as
    // given (they became optional for what an import's file does not give).
    let store = virtperf::store::Store::open_read_only(dir.path()).unwrap();
    let cmp = store.latest().unwrap().unwrap();
    let runs = store.runs(cmp.id).unwrap();
    assert!(!runs.is_empty());
    for r in &runs {
        let doc = r.doc.as_ref().expect("every run of the fixture parses");
        let lat = doc.latency_ms.as_ref().expect("its latency");
        assert!(lat.p50.is_some() && lat.p95.is_some() && lat.p99.is_some() && lat.sum.is_some());
        assert!(lat.max >= lat.min);
    }
    drop(store);
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
