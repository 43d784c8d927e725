//! The fixed comparisons the report tests render: the golden files' (three
//! environments, throughput and latency metrics, a flagged run, a failed
//! run, a hostile environment name, a file system that ignores fsync) and
//! one of extreme slowdowns with a parameter sweep, the browser test's.

use virtperf::analysis::{analyze, Analysis};
use virtperf::core::accounting::{Accounting, CgroupFigures, Helper, Outside};
use virtperf::core::result::{EnvInfo, Metric, Monitor, ResultDoc, Storage};
use virtperf::stats::VerdictSettings;
use virtperf::store::{ComparisonRow, RunRow};

pub const ENVS: [&str; 3] = ["host", "docker", "qemu <b>&\"x\""];

pub fn doc(env: &str, workload: &str, metrics: Vec<Metric>, steal: f64) -> ResultDoc {
    doc_with(
        env,
        workload,
        serde_json::json!({"threads": 1}),
        metrics,
        steal,
    )
}

/// `doc` with its own parameters.
pub fn doc_with(
    env: &str,
    workload: &str,
    params: serde_json::Value,
    metrics: Vec<Metric>,
    steal: f64,
) -> ResultDoc {
    ResultDoc {
        params: params.as_object().unwrap().clone(),
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

/// What the host saw a run of the environment at `ei` of `ENVS` spend
/// (a 1 s run): the host's own process; docker's cgroup, a little more,
/// and a fuse-overlayfs daemon busy with `io` seconds; QEMU's vCPU threads
/// at four times the host's and its other threads.
fn accounted(ei: usize, j: f64, io: f64) -> Accounting {
    let outside = match ei {
        0 => Outside {
            tree_s: Some(0.5 * j),
            ..Outside::default()
        },
        1 => Outside {
            tree_s: Some(0.01),
            cgroup: Some(CgroupFigures {
                version: 1,
                cpu_s: Some(0.51 * j),
                throttled_s: Some(0.0),
                ..CgroupFigures::default()
            }),
            helpers: Some(vec![Helper {
                name: "fuse-overlayfs".into(),
                cpu_s: 0.001 + io * j,
            }]),
            ..Outside::default()
        },
        _ => Outside {
            tree_s: Some(0.01),
            vcpu_s: Some(2.0 * j),
            emulator_s: Some(0.6 * j),
            ..Outside::default()
        },
    };
    Accounting {
        version: 1,
        outside: Some(Outside {
            wall_s: 1.0,
            kernel_threads_s: Some(0.01),
            ..outside
        }),
        ..Accounting::default()
    }
}

pub fn runs() -> Vec<RunRow> {
    runs_at(0.97)
}

/// The fixture with docker at `docker` of the host's speed.
pub fn runs_at(docker: f64) -> Vec<RunRow> {
    let mut runs = Vec::new();
    // Deterministic jitter: a small, fixed pattern per round.
    let jitter = [1.0, 1.01, 0.99, 1.005, 0.995];
    for (round, j) in jitter.iter().enumerate() {
        for (ei, env) in ENVS.iter().enumerate() {
            let speed = [1.0, docker, 0.05][ei];
            let slow = [1.0, 1.4, 4.0][ei];
            let mut cpu = doc(
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
            cpu.accounting = Some(accounted(ei, *j, 0.0));
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
            disk.accounting = Some(accounted(ei, *j, 0.3));
            let failed = ei == 2 && round == 4;
            runs.push(RunRow {
                env: env.to_string(),
                entry: 1,
                label: "disk disk-file-size=256M".into(),
                round,
                doc: (!failed).then_some(disk),
                error: failed.then(|| "qemu: no answer from the agent within 600 s".into()),
            });
            let mut micro = doc(
                env,
                "microops",
                vec![
                    Metric::new("getpid_ns", 160.0 * slow * j, "ns", false),
                    Metric::new("getpid_cycles", 420.0 * slow * j, "cycles", false),
                ],
                0.0,
            );
            micro.accounting = Some(accounted(ei, *j, 0.0));
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

pub fn comparison() -> ComparisonRow {
    ComparisonRow {
        id: 3,
        started_at: "2026-11-23T00:00:00Z".into(),
        suite: "golden".into(),
        baseline: "host".into(),
        envs: ENVS.iter().map(|s| s.to_string()).collect(),
        args: vec![],
        finished: true,
        adaptive: false,
        baseline_from: None,
    }
}

/// The golden files' analysis.
pub fn golden_analysis() -> Analysis {
    analyze(&comparison(), &runs(), &VerdictSettings::default())
}

/// Environments at these slowdowns of the host (the first): from 333×
/// faster to 1500× slower, so a chart's axis has to reach its ends.
pub const EXTREMES: [(&str, f64); 8] = [
    ("host", 1.0),
    ("firecracker", 0.003),
    ("gvisor", 0.05),
    ("docker", 1.0),
    ("podman", 5.8),
    ("qemu", 20.8),
    ("qemu-tcg-emulated", 300.0),
    ("bochs", 1500.0),
];

/// Every environment of `EXTREMES` slower by its factor on a throughput
/// and a latency metric of an entry with a long label (a workload unknown
/// to the registry, so both are headline), and on memory's bandwidth over
/// threads 1 … 16 × block sizes 1K and 4K: lines per block size, a heat map
/// per environment, and the overview's memory column.
pub fn extreme_analysis() -> Analysis {
    let jitter = [1.0, 1.01, 0.99, 1.005, 0.995];
    let mut runs = Vec::new();
    for (round, j) in jitter.iter().enumerate() {
        for (env, slow) in EXTREMES {
            let fs = doc_with(
                env,
                "fsbench",
                serde_json::json!({"file-num": 16, "file-total-size": "64M"}),
                vec![
                    Metric::new("open_close_per_sec", 52000.0 / slow * j, "ops/s", true),
                    Metric::new("stat_latency_ms", 0.02 * slow / j, "ms", false),
                ],
                0.0,
            );
            runs.push(RunRow {
                env: env.to_string(),
                entry: 0,
                label: "fileio seqwr file-num=16 file-total-size=64M".into(),
                round,
                doc: Some(fs),
                error: None,
            });
            for (b, block) in ["1K", "4K"].into_iter().enumerate() {
                for (k, threads) in [1u32, 2, 4, 8, 16].into_iter().enumerate() {
                    let bw = 9000.0 * f64::from(threads).powf(0.8) * (1.0 + b as f64) / slow * j;
                    let mem = doc_with(
                        env,
                        "memory",
                        serde_json::json!({"threads": threads, "memory-block-size": block}),
                        vec![Metric::new("mib_per_sec", bw, "MiB/s", true)],
                        0.0,
                    );
                    runs.push(RunRow {
                        env: env.to_string(),
                        entry: 1 + b * 5 + k,
                        label: format!("memory memory-block-size={block} threads={threads}"),
                        round,
                        doc: Some(mem),
                        error: None,
                    });
                }
            }
        }
    }
    let cmp = ComparisonRow {
        envs: EXTREMES.iter().map(|e| e.0.to_string()).collect(),
        suite: "extremes".into(),
        ..comparison()
    };
    analyze(&cmp, &runs, &VerdictSettings::default())
}
