//! `virtperf linpack` driven as a user would: a small solve with its result
//! document and Intel-style table, lininput files, refusal of sizes that do
//! not fit, and bad options.

use serde_json::Value;

mod common;
use common::{json_of, metric, output_ok, virtperf};

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
    let doc = json_of(&out, "the run");
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
    let doc = json_of(&out, "the run");
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

/// Every JSON document in a `--json` run's output, one per line.
fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per line"))
        .collect()
}

#[test]
fn simultaneous_instances_sum_gflops_and_keep_the_worst_check() {
    // Seed 001's 2 and 4 VMs at once: count=N runs N solves together and
    // reports their summed GFLOPS; the residual check is not an amount.
    let out = output_ok(virtperf().args([
        "linpack",
        "--linpack-sizes=150,200",
        "--linpack-trials=1",
        "--json",
        "--env",
        "host:count=2,name=pair",
    ]));
    let d = json_lines(&out.stdout);
    assert_eq!(d.len(), 3, "two instances and their sum");
    let sum = &d[2];
    for name in ["gflops", "gflops_hpl", "gflops_n150", "gflops_n200"] {
        let parts = metric(&d[0], name) + metric(&d[1], name);
        assert!(metric(&d[0], name) > 0.0 && metric(&d[1], name) > 0.0);
        assert!((metric(sum, name) - parts).abs() < 1e-9, "{name}");
    }
    assert_eq!(metric(sum, "residual_passed"), 1.0, "passed, not 2");
    let worst = metric(&d[0], "residual").max(metric(&d[1], "residual"));
    assert_eq!(metric(sum, "residual"), worst);
    assert_eq!(sum["details"]["instances"], 2);
}

#[test]
fn compare_reports_the_summed_gflops_of_simultaneous_instances() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    output_ok(
        virtperf()
            .args([
                "compare",
                "--env",
                "host:count=2,name=pair",
                "--repeat",
                "2",
                "--out",
            ])
            .arg(&out)
            .args(["linpack", "--linpack-sizes=200", "--linpack-trials=1"]),
    );
    // What the store kept for each round of the pair: the sum of its two
    // instances' figures, each instance kept beside it.
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let mut stmt = db
        .prepare("SELECT doc FROM runs WHERE env = 'pair' ORDER BY round")
        .unwrap();
    let docs: Vec<Value> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|d| serde_json::from_str(&d.unwrap()).unwrap())
        .collect();
    assert_eq!(docs.len(), 2, "one summed result per round");
    let mut stored = Vec::new();
    for doc in &docs {
        let parts: Vec<f64> = doc["details"]["per_instance"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                i["metrics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["name"] == "gflops")
                    .unwrap()["value"]
                    .as_f64()
                    .unwrap()
            })
            .collect();
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|&g| g > 0.0));
        let g = metric(doc, "gflops");
        assert!((g - parts.iter().sum::<f64>()).abs() < 1e-9, "{doc}");
        assert_eq!(metric(doc, "residual_passed"), 1.0);
        stored.push(g);
    }
    // ... and the report's samples for the pair are those sums.
    let report = virtperf()
        .args(["report", out.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let a: Value = serde_json::from_slice(&report.stdout).unwrap();
    let gflops = a["entries"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "gflops")
        .unwrap();
    let pair = gflops["per_env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["env"] == "pair")
        .unwrap();
    let mut samples: Vec<f64> = pair["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    samples.sort_by(f64::total_cmp);
    stored.sort_by(f64::total_cmp);
    assert_eq!(samples, stored);
    let md = virtperf()
        .args(["report", out.to_str().unwrap(), "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("| pair | gflops |"), "{md}");
}

#[test]
fn threads_zero_is_one_per_cpu_of_where_it_runs() {
    // The threads a --threads=0 LINPACK run used, with `env` as extra args.
    let threads_used = |env: &[&str]| {
        let out = output_ok(
            virtperf()
                .args([
                    "linpack",
                    "--linpack-sizes=100",
                    "--linpack-trials=1",
                    "--threads=0",
                    "--json",
                ])
                .args(env),
        );
        json_of(&out, "the run")["details"]["threads"].clone()
    };
    // Intel's LINPACK uses every core: --threads=0 is one thread per CPU
    // the run may use, on the host its CPU set...
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert_eq!(threads_used(&[]), cpus);
    // ...and in a container its CPU quota, rounded up.
    if !common::engine_ok("docker") {
        return;
    }
    assert_eq!(threads_used(&["--env", "docker:cpus=0.5"]), 1);
}
