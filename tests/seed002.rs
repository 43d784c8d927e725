//! Seed 002's study as one command (issue 56): its suite names the study's
//! matrix, and the report of that suite answers the study's three
//! questions (memory at 2 CPUs, CPUs at 2 GiB, QEMU against Docker) from
//! the figures, each with where the host CPU per event differed. Checked
//! on a result store written here (no VM boots): configurations whose
//! effects are known, reported by `virtperf report`.

use virtperf::core::accounting::{Accounting, CgroupFigures, Outside};
use virtperf::core::result::{Metric, ResultDoc};
use virtperf::store::Store;

mod common;
use common::{output_ok, virtperf};

/// The matrix as the suite names it: (environment, cpu events/s, fileio
/// ops/s, host CPU-seconds a run spent in the environment's own work and
/// in QEMU's other threads).
const MATRIX: [(&str, f64, f64, f64, f64); 7] = [
    ("host", 1000.0, 3000.0, 1.0, 0.0),
    ("qemu-2g-2cpu", 50.0, 300.0, 2.0, 0.5),
    // Less memory: no effect on the CPU test, a third fewer file
    // operations (a smaller page cache).
    ("qemu-1g-2cpu", 50.0, 200.0, 2.0, 0.5),
    // One CPU: half the events of two threads.
    ("qemu-2g-1cpu", 25.0, 300.0, 1.0, 0.3),
    ("docker-2g-2cpu", 1000.0, 2500.0, 1.0, 0.0),
    ("docker-1g-2cpu", 1000.0, 2500.0, 1.0, 0.0),
    ("docker-2g-1cpu", 500.0, 2500.0, 0.5, 0.0),
];

fn doc(env: &str, workload: &str, metrics: Vec<Metric>, work: f64, emulation: f64) -> ResultDoc {
    let mut d = ResultDoc::new(workload, env, metrics);
    d.events = 1000;
    let outside = if env.starts_with("qemu") {
        Outside {
            tree_s: Some(0.01),
            vcpu_s: Some(work),
            emulator_s: Some(emulation),
            ..Outside::default()
        }
    } else if env.starts_with("docker") {
        Outside {
            tree_s: Some(0.01),
            cgroup: Some(CgroupFigures {
                version: 1,
                cpu_s: Some(work),
                ..CgroupFigures::default()
            }),
            ..Outside::default()
        }
    } else {
        Outside {
            tree_s: Some(work),
            ..Outside::default()
        }
    };
    d.accounting = Some(Accounting {
        version: 1,
        outside: Some(Outside {
            wall_s: 1.0,
            ..outside
        }),
        ..Accounting::default()
    });
    d
}

/// A finished comparison of the seed 002 suite over `MATRIX`, 5 rounds.
fn store(dir: &std::path::Path) {
    let s = Store::open(dir).unwrap();
    let envs: Vec<String> = MATRIX.iter().map(|m| m.0.to_string()).collect();
    let id = s
        .begin(
            "2026-11-28T00:00:00Z",
            "seed002-qemu-docker",
            "host",
            &envs,
            &[],
        )
        .unwrap();
    let jitter = [1.0, 1.01, 0.99, 1.005, 0.995];
    for (round, j) in jitter.iter().enumerate() {
        for (env, eps, ops, work, emulation) in MATRIX {
            let cpu = doc(
                env,
                "cpu",
                vec![Metric::new("events_per_sec", eps * j, "events/s", true)],
                work * j,
                emulation * j,
            );
            s.record(id, env, 0, "cpu threads=2", round, Ok(&cpu))
                .unwrap();
            let fileio = doc(
                env,
                "fileio",
                vec![
                    Metric::new("reads_per_sec", ops * j, "ops/s", true),
                    Metric::new("writes_per_sec", ops / 1.5 * j, "ops/s", true),
                ],
                work * j,
                emulation * j,
            );
            s.record(id, env, 1, "fileio rndrw", round, Ok(&fileio))
                .unwrap();
        }
    }
    s.finish(id).unwrap();
}

/// The lines of `text` from `from` to the next line starting with
/// `until`.
fn between<'a>(text: &'a str, from: &str, until: &str) -> &'a str {
    let start = text.find(from).unwrap_or_else(|| panic!("no {from:?}"));
    let rest = &text[start..];
    let end = rest[from.len()..]
        .find(until)
        .map_or(rest.len(), |e| e + from.len());
    &rest[..end]
}

#[test]
fn the_seed002_report_answers_the_studys_three_questions() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let out = output_ok(
        virtperf()
            .arg("report")
            .arg(dir.path())
            .args(["--format", "markdown"]),
    );
    let md = String::from_utf8_lossy(&out.stdout).to_string();
    if std::env::var_os("SEED002_PRINT").is_some() {
        println!("{md}");
    }
    let section = between(&md, "## Seed 002's questions", "\n## ");
    // Memory at 2 CPUs: QEMU's file operations at 1 GiB are 1.5× slower,
    // its CPU test is not; Docker's show no difference.
    let memory = between(section, "The effect of memory", "The effect of CPUs");
    assert!(
        memory.contains("qemu-1g-2cpu against qemu-2g-2cpu: 2 of 3 rows differ: fileio rndrw reads_per_sec 1.500× (slower); fileio rndrw writes_per_sec 1.500× (slower)."),
        "{memory}"
    );
    assert!(
        memory.contains(
            "docker-1g-2cpu against docker-2g-2cpu: no difference shown in any of 3 rows."
        ),
        "{memory}"
    );
    // CPUs at 2 GiB: both kinds' two-thread CPU test at half the speed.
    let cpus = between(section, "The effect of CPUs", "QEMU against Docker");
    for kind in ["qemu", "docker"] {
        assert!(
            cpus.contains(&format!(
                "{kind}-2g-1cpu against {kind}-2g-2cpu: 1 of 3 rows differ: cpu threads=2 events_per_sec 2.000× (slower)."
            )),
            "{cpus}"
        );
    }
    // QEMU against Docker: 20× slower on the CPU test at 2 GiB/2 CPUs,
    // and beside it the host CPU per event each spent (2500 µs of QEMU's
    // against 1010 of Docker's), most of the difference in QEMU's own
    // threads.
    let kinds = between(section, "QEMU against Docker", "\n## ");
    assert!(
        kinds.contains("qemu-2g-2cpu against docker-2g-2cpu: 3 of 3 rows differ: cpu threads=2 events_per_sec 20.0× (slower)"),
        "{kinds}"
    );
    assert!(
        kinds.contains("host CPU per event qemu-2g-2cpu 2510 µs, docker-2g-2cpu 1010 µs; most of the difference: the environment's own CPU"),
        "{kinds}"
    );
    assert!(
        kinds.contains("qemu-2g-1cpu against docker-2g-1cpu"),
        "{kinds}"
    );
    // Another suite's report does not answer seed 002's questions.
    let other = tempfile::tempdir().unwrap();
    let s = Store::open(other.path()).unwrap();
    let id = s
        .begin(
            "2026-11-28T00:00:00Z",
            "quick",
            "host",
            &["host".into()],
            &[],
        )
        .unwrap();
    let d = doc(
        "host",
        "cpu",
        vec![Metric::new("events_per_sec", 1.0, "events/s", true)],
        1.0,
        0.0,
    );
    s.record(id, "host", 0, "cpu", 0, Ok(&d)).unwrap();
    s.finish(id).unwrap();
    let out = output_ok(
        virtperf()
            .arg("report")
            .arg(other.path())
            .args(["--format", "markdown"]),
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Seed 002"));
}
