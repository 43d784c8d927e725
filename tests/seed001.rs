//! Seed 001's study end to end (issue 26): the `seed001-tschudin` suite at
//! reduced sizes on the host, Docker and QEMU with 1 and 2 instances at
//! once, and the report's tables — each category's figure per environment
//! with its interval, recomputed here from the metrics' own ratios, the
//! instances each ran, and the ranking of the kinds by their best
//! configurations.

use serde_json::Value;

mod common;
use common::{engine_ok, output_ok, qemu_ok, virtperf};

/// The built-in suite with its sizes cut down and this test's matrix.
fn reduced_suite() -> String {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/seed001-tschudin.toml"),
    )
    .unwrap();
    let mut suite: toml::Table = text.parse().unwrap();
    // Each environment starts once: a boot per run would make this test
    // minutes long (reboot=each-run is tested in tests/env.rs).
    suite.insert(
        "envs".into(),
        toml::Value::Array(
            [
                "docker:name=docker-x1",
                "docker:cpus=1,count=2,name=docker-x2",
                "qemu:accel=tcg,smp=1,memory=1g,disk=256m,name=qemu-x1",
                "qemu:accel=tcg,smp=1,memory=1g,disk=256m,count=2,name=qemu-x2",
            ]
            .iter()
            .map(|s| toml::Value::String(s.to_string()))
            .collect(),
        ),
    );
    suite.insert("repeat".into(), toml::Value::Integer(2));
    let runs = suite.get_mut("run").unwrap().as_array_mut().unwrap();
    assert_eq!(runs.len(), 4, "the suite's four workloads");
    for run in runs.iter_mut() {
        let t = run.as_table_mut().unwrap();
        let set = |t: &mut toml::Table, k: &str, v: toml::Value| {
            assert!(t.contains_key(k), "the suite sets {k}");
            t.insert(k.into(), v);
        };
        match t["workload"].as_str().unwrap() {
            "linpack" => {
                set(t, "linpack_sizes", toml::Value::String("200".into()));
                set(t, "linpack_trials", toml::Value::Integer(1));
            }
            "disk" => {
                set(t, "disk_file_size", toml::Value::String("8M".into()));
                // The file tests feed no category: left out here.
                set(t, "disk_files", toml::Value::Integer(0));
                t.insert("disk_seeks".into(), toml::Value::Integer(500));
            }
            "net" => set(t, "time", toml::Value::Float(0.3)),
            "microops" => set(t, "time", toml::Value::Float(0.3)),
            other => panic!("unexpected workload {other}"),
        }
    }
    toml::to_string(&suite).unwrap()
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn seed001_suite_reduced_on_host_docker_and_qemu_with_one_and_two_instances() {
    if !engine_ok("docker") || !qemu_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("seed001-reduced.toml");
    std::fs::write(&suite, reduced_suite()).unwrap();
    let out = dir.path().join("out");
    let json = output_ok(virtperf().args([
        "compare",
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]));
    let a: Value = serde_json::from_slice(&json.stdout).unwrap();
    let envs = ["docker-x1", "docker-x2", "qemu-x1", "qemu-x2"];
    assert_eq!(a["envs"].as_array().unwrap().len(), 5, "{}", a["envs"]);
    // The instances each environment ran at once, and what it was.
    for (env, kind, n) in [
        ("docker-x1", "docker", None),
        ("docker-x2", "docker", Some(2)),
        ("qemu-x1", "qemu", None),
        ("qemu-x2", "qemu", Some(2)),
    ] {
        let f = &a["fingerprints"][env];
        assert_eq!(f["kind"], kind, "{env}");
        assert_eq!(f["instances"].as_u64(), n, "{env}");
    }

    // Every category has a figure with an interval in every environment,
    // and each is the mean of its metrics' ratios, recomputed here.
    let rankings = a["rankings"].as_array().unwrap();
    assert_eq!(rankings.len(), 4);
    for pair in rankings {
        let env = pair[0].as_str().unwrap();
        assert!(envs.contains(&env), "{env}");
        let ei = a["envs"]
            .as_array()
            .unwrap()
            .iter()
            .position(|e| e == env)
            .unwrap();
        let r = &pair[1];
        assert!(r["missing"].as_array().unwrap().is_empty(), "{env}: {r}");
        for c in r["categories"].as_array().unwrap() {
            let value = num(&c["value"]);
            let (lo, hi) = (num(&c["interval"][0]), num(&c["interval"][1]));
            assert!(
                lo <= value && value <= hi,
                "{env} {}: {lo} {value} {hi}",
                c["name"]
            );
            let ratios: Vec<f64> = c["from"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    let metric = a["entries"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .flat_map(|e| e["metrics"].as_array().unwrap())
                        .find(|x| x["name"] == *m)
                        .unwrap_or_else(|| panic!("metric {m}"));
                    num(&metric["per_env"][ei]["vs_baseline"]["ratio"]["point"])
                })
                .collect();
            assert!(!ratios.is_empty(), "{env}: {c}");
            let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
            let want = match c["unit"].as_str().unwrap() {
                "% overhead" => (1.0 - mean) * 100.0,
                "times slower" => mean,
                u => panic!("unit {u}"),
            };
            assert!(
                (value - want).abs() <= 1e-6 * want.abs().max(1.0),
                "{env} {}: {value} vs {want}",
                c["name"]
            );
        }
        // The score: (Σ overhead %) × (Σ times slower).
        let cats = r["categories"].as_array().unwrap();
        let sum = |unit: &str| -> f64 {
            cats.iter()
                .filter(|c| c["unit"] == unit)
                .map(|c| num(&c["value"]))
                .sum()
        };
        let want = sum("% overhead") * sum("times slower");
        assert!((num(&r["score"]) - want).abs() <= 1e-6 * want.abs().max(1.0));
    }
    // Under TCG, LINPACK is many times slower than on the host.
    let qemu = rankings.iter().find(|p| p[0] == "qemu-x1").unwrap();
    assert!(num(&qemu[1]["categories"][0]["value"]) > 50.0, "{qemu}");

    // The ranking: docker and qemu, each category's best configuration.
    let solutions = a["solutions"].as_array().unwrap();
    let kinds: Vec<&str> = solutions
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["docker", "qemu"]);
    let mut ranks: Vec<u64> = solutions
        .iter()
        .map(|s| s["rank"].as_u64().unwrap())
        .collect();
    ranks.sort();
    assert_eq!(ranks, [1, 2]);
    for s in solutions {
        let kind = s["kind"].as_str().unwrap();
        for (ci, best) in s["best"].as_array().unwrap().iter().enumerate() {
            let env = best[0].as_str().unwrap();
            assert!(env.starts_with(kind), "{kind}: {env}");
            // No configuration of that kind has a lower figure.
            let lowest = rankings
                .iter()
                .filter(|p| p[0].as_str().unwrap().starts_with(kind))
                .map(|p| num(&p[1]["categories"][ci]["value"]))
                .fold(f64::INFINITY, f64::min);
            assert_eq!(num(&best[1]["value"]), lowest, "{kind} category {ci}");
        }
    }

    // The text report lays the tables out.
    let text = output_ok(virtperf().args(["report", out.to_str().unwrap()]));
    let text = String::from_utf8_lossy(&text.stdout);
    for want in [
        "Overhead categories (seed 001's method)",
        "instances at once",
        "qemu ×2",
        "docker ×1",
        "ranking score",
        "kinds ranked by score",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    // The ranking's columns: the kinds, best first.
    let first = solutions.iter().find(|s| s["rank"] == 1).unwrap()["kind"]
        .as_str()
        .unwrap();
    let second = if first == "docker" { "qemu" } else { "docker" };
    let (a, b) = (format!("1. {first}"), format!("2. {second}"));
    assert!(
        text.contains(&a) && text.contains(&b) && text.find(&a) < text.find(&b),
        "{a} before {b}:\n{text}"
    );
}
