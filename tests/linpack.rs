//! `virtperf linpack` driven as a user would: a small solve with its result
//! document and Intel-style table, lininput files, refusal of sizes that do
//! not fit, and bad options.

use serde_json::Value;

mod common;
use common::{metric, virtperf};

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/linpack/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn a_small_run_passes_and_reports_gflops_per_size() {
    let out = virtperf()
        .args([
            "linpack",
            "--linpack-sizes=100,200",
            "--linpack-trials=2,1",
            "--linpack-lda=104,200",
            "--threads=2",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["workload"], "linpack");
    assert_eq!(doc["params"]["linpack_sizes"], "100,200");
    assert!(metric(&doc, "gflops") > 0.0);
    assert_eq!(metric(&doc, "gflops"), metric(&doc, "gflops_n200"));
    assert!(metric(&doc, "gflops_n100") > 0.0);
    assert!(metric(&doc, "gflops_hpl") < metric(&doc, "gflops"));
    assert!(metric(&doc, "residual") < 16.0);
    assert_eq!(metric(&doc, "residual_passed"), 1.0);
    assert_eq!(doc["events"], 3);
    let trials = doc["details"]["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 3);
    assert_eq!(trials[0]["lda"], 104);
    assert_eq!(doc["details"]["threads"], 2);
    let isa = doc["env"]["linalg_isa"].as_str().unwrap();
    assert!(["avx512", "avx2+fma", "sse2"].contains(&isa), "{isa}");
}

#[test]
fn the_text_is_laid_out_like_intels() {
    let out = virtperf()
        .args(["linpack", "--linpack-sizes=120", "--linpack-trials=3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for line in [
        "Number of equations to solve (problem size) : 120",
        "Size   LDA    Align. Time(s)    GFlops   Residual     Residual(norm) Check",
        "Performance Summary (GFlops)",
        "Residual checks PASSED",
        "End of tests",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert_eq!(text.matches(" pass\n").count(), 3, "{text}");
}

#[test]
fn an_input_file_sets_the_tests() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lininput");
    std::fs::write(
        &path,
        "Sample Intel(R) LINPACK data file (small)\nIntel(R) LINPACK data\n2 # number of tests\n60 90 # problem sizes\n64 90 # leading dimensions\n1 2 # trials\n4 0 # alignment values (in KBytes)\n",
    )
    .unwrap();
    let out = virtperf()
        .args(["linpack", "--json", "--linpack-input"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sizes: Vec<(u64, u64, u64)> = doc["details"]["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["size"].as_u64().unwrap(),
                t["lda"].as_u64().unwrap(),
                t["align_kib"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(sizes, [(60, 64, 4), (90, 90, 0), (90, 90, 0)]);
    assert_eq!(
        doc["details"]["title"],
        "Sample Intel(R) LINPACK data file (small)"
    );
}

#[test]
fn a_malformed_input_file_is_refused_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lininput");
    let good = std::fs::read_to_string(fixture("lininput_4vms")).unwrap();
    std::fs::write(&path, good.replace("7508 4008", "7508 four")).unwrap();
    let out = virtperf()
        .args(["linpack", "--linpack-input"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--linpack-input"), "{err}");
    assert!(
        err.contains("line 5: 'four' is not a whole number"),
        "{err}"
    );
}

#[test]
fn a_size_that_does_not_fit_is_refused_before_allocating() {
    // 8·N² for N = 1 000 000 is 7.3 TiB: no test machine has that.
    let out = virtperf()
        .args(["linpack", "--linpack-sizes=1000,1000000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("size 1000000"), "{err}");
    assert!(err.contains("the largest size that fits is"), "{err}");
    assert!(out.stdout.is_empty(), "nothing ran");
}

#[test]
fn bad_options_exit_2_naming_the_option() {
    for (bad, option) in [
        (vec!["--linpack-sizes=abc"], "--linpack-sizes"),
        (vec!["--linpack-sizes=100,0"], "--linpack-sizes"),
        (vec!["--linpack-trials=0"], "--linpack-trials"),
        (
            vec!["--linpack-sizes=100,200", "--linpack-align=4,4,4"],
            "--linpack-align",
        ),
        (
            vec!["--linpack-sizes=100", "--linpack-lda=50"],
            "--linpack-lda",
        ),
        (vec!["--linpack-seed=-1"], "--linpack-seed"),
        (
            vec!["--linpack-input=/nonexistent/lininput"],
            "--linpack-input",
        ),
    ] {
        let out = virtperf().arg("linpack").args(&bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(option), "{bad:?}: {err}");
    }
}
