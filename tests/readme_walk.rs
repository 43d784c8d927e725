//! A walk through the README's recipes, as a new user would take it: every
//! command of the code blocks marked `<!-- recipes: ... -->` is run, in the
//! README's order, in one directory of the test's own (so `compare` leaves
//! the store that `report`, `--resume` and `import` then read), with sizes
//! and times made small, and must exit 0 and print what its comment says.
//! A command the walk does not know fails the test, so a recipe cannot be
//! added to the README without being walked (or said why not: a run of
//! minutes, a machine of the reader's own). A component missing here skips
//! its recipes with the reason; under CI=true that fails.

mod common;

use std::path::Path;
use std::process::Command;

use common::skip;

/// What a recipe needs besides the binary.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Need {
    Docker,
    Qemu,
    Runsc,
    Lxc,
    Nspawn,
    Sysbench,
}

/// How a recipe is walked.
enum How {
    /// Run with each (from, to) replaced and `append` added at the end;
    /// standard output must contain each of `expect`.
    Run {
        edits: &'static [(&'static str, &'static str)],
        append: &'static [&'static str],
        needs: &'static [Need],
        expect: &'static [&'static str],
    },
    /// As `Run`, after `setup` made what the recipe starts from.
    After(Setup, &'static How),
    /// Not run here, and why.
    Not(&'static str),
}

/// What a recipe starts from that the walk makes first.
#[derive(Clone, Copy, Debug)]
enum Setup {
    /// The logs the import recipe names, written by the real sysbench.
    EsxiLogs,
    /// A comparison stopped by Ctrl-C after its first run.
    Interrupted,
}

use How::{After, Not, Run};

const MINUTES: &str = "a whole suite: minutes of runs (its workloads are walked one by one below)";
const YOURS: &str = "names a machine or domain of the reader's own";

/// Every recipe of the README, as it is written there, and how it is walked.
const RECIPES: &[(&str, How)] = &[
    ("virtperf compare", Not(MINUTES)),
    ("virtperf compare --suite standard --env docker:cpus=2 --env qemu:smp=2,memory=2g --budget 3600", Not(MINUTES)),
    (
        "virtperf compare --env host --env docker:cpus=0.5 --repeat 3 cpu --time=2",
        Run {
            edits: &[("--time=2", "--time=0.2")],
            append: &[],
            needs: &[Need::Docker],
            expect: &["Overview", "Headline summary", "docker:cpus=0.5", "events_per_sec"],
        },
    ),
    ("virtperf compare --suite seed002-qemu-docker", Not(MINUTES)),
    ("virtperf compare --suite seed003-oltp --env qemu:count=4", Not(MINUTES)),
    ("virtperf compare --suite seed001-tschudin", Not(MINUTES)),
    ("virtperf compare --suite seed000-esxi-hyperv", Not(MINUTES)),
    ("virtperf compare --suite seed004-kvm-sysbench", Not(MINUTES)),
    (
        "virtperf compare --resume",
        After(
            Setup::Interrupted,
            &Run {
                edits: &[],
                append: &[],
                needs: &[Need::Docker],
                expect: &["Headline summary", "docker:cpus=0.5"],
            },
        ),
    ),
    (
        "virtperf report virtperf-results --format markdown",
        Run {
            edits: &[],
            append: &[],
            needs: &[Need::Docker],
            expect: &["## Headline summary", "| docker:cpus=0.5"],
        },
    ),
    ("virtperf report hv1/ hv2/ hv3/", Not(YOURS)),
    (
        "virtperf compare --env host --repeat 5 cpu --cpu-max-prime=20000",
        Run {
            edits: &[("--repeat 5", "--repeat 3")],
            append: &["--time=0.2"],
            needs: &[],
            expect: &["what host measured", "events_per_sec"],
        },
    ),
    (
        "virtperf import --env esxi-2019 esxi/cpu-run1.log esxi/cpu-run2.log esxi/cpu-run3.log",
        After(
            Setup::EsxiLogs,
            &Run {
                edits: &[],
                append: &[],
                needs: &[Need::Sysbench],
                expect: &["cpu-run3.log: sysbench", "esxi-2019 run 3 of entry #0 'cpu --cpu-max-prime=20000"],
            },
        ),
    ),
    (
        "virtperf report",
        Run {
            edits: &[],
            append: &[],
            needs: &[Need::Sysbench],
            expect: &["Headline summary", "esxi-2019", "Imported runs"],
        },
    ),
    (
        "virtperf envs",
        Run {
            edits: &[],
            append: &[],
            needs: &[],
            expect: &["host", "available"],
        },
    ),
    (
        "virtperf cpu --time=10 --env host --env docker:cpus=0.5 --env qemu:smp=2,memory=2g --json",
        Run {
            edits: &[("--time=10", "--time=0.2")],
            append: &[],
            needs: &[Need::Docker, Need::Qemu],
            expect: &[r#""name":"host""#, r#""name":"docker:cpus=0.5""#, r#""name":"qemu:smp=2,memory=2g""#],
        },
    ),
    (
        "virtperf fileio --file-test-mode=rndrw --file-total-size=1G --env docker:storage=volume",
        Run {
            edits: &[("--file-total-size=1G", "--file-total-size=16M")],
            append: &["--time=0.3"],
            needs: &[Need::Docker],
            expect: &["environment: docker:storage=volume", "reads_per_sec"],
        },
    ),
    (
        "virtperf cpu --env docker:count=4",
        Run {
            edits: &[],
            append: &["--time=0.2"],
            needs: &[Need::Docker],
            expect: &["docker:count=4 (sum of 4)"],
        },
    ),
    (
        "virtperf microops --ops=getpid --env gvisor:platform=ptrace",
        Run {
            edits: &[],
            append: &["--time=0.2"],
            needs: &[Need::Runsc],
            expect: &["getpid_ns"],
        },
    ),
    (
        "virtperf microops --ops=getpid --env lxc:cpus=1,memory=512m",
        Run {
            edits: &[],
            append: &["--time=0.2"],
            needs: &[Need::Lxc],
            expect: &["environment: lxc:cpus=1,memory=512m", "getpid_ns"],
        },
    ),
    (
        "virtperf net --net-test=tcp_rr --env nspawn:network=veth",
        Run {
            edits: &[],
            append: &["--time=0.5"],
            needs: &[Need::Nspawn],
            expect: &["environment: nspawn:network=veth", "tcp_rr_trans_per_sec"],
        },
    ),
    ("virtperf compare --suite sandboxes", Not(MINUTES)),
    ("virtperf cpu --env podman:rootless=alice", Not("names a user of the reader's own: tests/rootless.rs makes one and walks it")),
    ("virtperf cpu --env ssh:bench@192.0.2.10:22", Not(YOURS)),
    ("virtperf cpu --env libvirt:vcpus=2,memory=2g,cpu=host-model,pin=0-1", Not("a TCG domain of 2 GiB booted through libvirtd: tests/libvirt.rs walks it")),
    ("virtperf cpu --env libvirt:domain=web1,snapshot=clean", Not(YOURS)),
    (
        "virtperf cpu --cpu-max-prime=20000 --threads=2 --time=30 run",
        Run {
            edits: &[("--time=30", "--time=0.2")],
            append: &[],
            needs: &[],
            expect: &["Prime numbers limit: 20000", "events per second:"],
        },
    ),
    (
        "virtperf memory --memory-block-size=1K --memory-oper=read --json",
        Run {
            edits: &[],
            append: &["--time=0.2"],
            needs: &[],
            expect: &[r#""workload":"memory""#, r#""memory_oper":"read""#],
        },
    ),
    (
        "virtperf memory --memory-mode=stream --threads=2",
        Run {
            edits: &[],
            append: &["--time=0.2"],
            needs: &[],
            expect: &["STREAM:", "triad"],
        },
    ),
    (
        "virtperf threads --thread-yields=1000 --thread-locks=8",
        Run {
            edits: &[],
            append: &["--time=0.2"],
            needs: &[],
            expect: &["total number of events:"],
        },
    ),
    (
        "virtperf mutex --mutex-num=4096 --mutex-locks=50000 --mutex-loops=10000",
        Run {
            edits: &[("--mutex-locks=50000", "--mutex-locks=5000")],
            append: &[],
            needs: &[],
            expect: &["total time:"],
        },
    ),
    (
        "virtperf microops --ops=getpid,cpuid,page_fault --time=5",
        Run {
            edits: &[("--time=5", "--time=0.3")],
            append: &[],
            needs: &[],
            expect: &["getpid", "cpuid", "page_fault"],
        },
    ),
    (
        "virtperf fileio --file-total-size=4G --file-num=64 prepare",
        Run {
            edits: &[("--file-total-size=4G", "--file-total-size=16M")],
            append: &[],
            needs: &[],
            expect: &["Creating file test_file.63", "bytes written"],
        },
    ),
    (
        "virtperf fileio --file-total-size=4G --file-num=64 --file-test-mode=rndrw --file-block-size=4K run",
        Run {
            edits: &[("--file-total-size=4G", "--file-total-size=16M")],
            append: &["--time=0.3"],
            needs: &[],
            expect: &["File operations:", "reads/s:"],
        },
    ),
    (
        "virtperf disk --disk-file-size=2G --disk-direct",
        Run {
            edits: &[("--disk-file-size=2G", "--disk-file-size=8M")],
            append: &["--disk-seeks=200", "--disk-files=1"],
            needs: &[],
            expect: &["put_block"],
        },
    ),
    (
        "virtperf linpack --linpack-sizes=1000,4000 --threads=2",
        Run {
            edits: &[("--linpack-sizes=1000,4000", "--linpack-sizes=100,200")],
            append: &[],
            needs: &[],
            expect: &["GFlops"],
        },
    ),
    (
        "virtperf --help",
        Run {
            edits: &[],
            append: &[],
            needs: &[],
            expect: &["Usage:", "virtperf compare"],
        },
    ),
    (
        "virtperf memory help",
        Run {
            edits: &[],
            append: &[],
            needs: &[],
            expect: &["--memory-block-size"],
        },
    ),
];

/// The commands of the README's marked code blocks, in order, comments
/// cut and `;`-joined commands apart.
fn readme_recipes() -> Vec<String> {
    let readme = include_str!("../README.md");
    let mut out = Vec::new();
    for (_, after) in readme.split("<!-- recipes:").skip(1).map(|b| (0, b)) {
        let block = after
            .split_once("```sh\n")
            .expect("a marked recipe block is a ```sh block")
            .1;
        let block = &block[..block.find("```").expect("the block's end")];
        for line in block.lines() {
            let line = line.split(" #").next().unwrap_or("");
            for command in line.split(';').map(str::trim) {
                if command.starts_with("virtperf") {
                    out.push(command.to_string());
                }
            }
        }
    }
    out
}

/// Whether what `need` names is here (a skip with the reason otherwise).
fn have(need: Need) -> bool {
    let runs = |program: &str, arg: &str| {
        Command::new(program)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    match need {
        Need::Docker => common::engine_ok("docker"),
        Need::Qemu => common::qemu_ok(),
        Need::Runsc => {
            runs("runsc", "--version") || !skip("runsc is not installed (Debian's runsc)")
        }
        Need::Lxc => {
            (common::is_root() && runs("lxc-execute", "--version"))
                || !skip("lxc-execute is not installed or the test is not root (Debian's lxc)")
        }
        Need::Nspawn => {
            (common::is_root() && runs("systemd-nspawn", "--version"))
                || !skip("systemd-nspawn is not installed or the test is not root (Debian's systemd-container)")
        }
        Need::Sysbench => runs("sysbench", "--version") || !skip("sysbench is not installed"),
    }
}

/// The logs the import recipe names, written by the real sysbench.
fn esxi_logs(dir: &Path) {
    let esxi = dir.join("esxi");
    std::fs::create_dir_all(&esxi).unwrap();
    for i in 1..=3 {
        let out = common::output_ok(Command::new("sysbench").args([
            "cpu",
            "--cpu-max-prime=20000",
            "--time=0",
            "--events=100",
            "run",
        ]));
        std::fs::write(esxi.join(format!("cpu-run{i}.log")), out.stdout).unwrap();
    }
}

/// `compare` as the resume recipe's comment has it: Ctrl-C once its first
/// run is stored.
fn interrupted(dir: &Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_virtperf"))
        .args([
            "compare",
            "--env",
            "host",
            "--env",
            "docker:cpus=0.5",
            "--repeat",
            "3",
        ])
        .args(["cpu", "--time=0.5"])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let store = dir.join("virtperf-results");
    let stored = common::wait_until(std::time::Duration::from_secs(60), || {
        virtperf::store::Store::open_read_only(&store)
            .ok()
            .and_then(|s| {
                let c = s.latest().ok()??;
                Some(!c.finished && !s.runs(c.id).ok()?.is_empty())
            })
            .unwrap_or(false)
    });
    let ended = common::signal_and_wait(
        &mut child,
        &[libc::SIGINT],
        std::time::Duration::from_secs(30),
    );
    assert!(
        stored && ended,
        "the comparison to resume: a run stored {stored}, ended on Ctrl-C {ended}"
    );
}

#[test]
fn every_readme_recipe_runs_as_documented() {
    let recipes = readme_recipes();
    for r in &recipes {
        assert!(
            RECIPES.iter().any(|(line, _)| line == r),
            "a README recipe the walk does not know: '{r}' (add it to RECIPES)"
        );
    }
    for (line, _) in RECIPES {
        assert!(
            recipes.iter().any(|r| r == line),
            "RECIPES has '{line}', which the README's marked blocks no longer show"
        );
    }
    // Beside the build, so file tests (O_DIRECT too) write on a disk.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    let mut walked = 0;
    for r in &recipes {
        let (_, how) = RECIPES.iter().find(|(line, _)| line == r).unwrap();
        let (setup, how) = match how {
            After(setup, how) => (Some(*setup), *how),
            how => (None, how),
        };
        let (edits, append, needs, expect) = match how {
            Not(why) => {
                eprintln!("not walked: {r}: {why}");
                continue;
            }
            Run {
                edits,
                append,
                needs,
                expect,
            } => (edits, append, needs, expect),
            After(..) => unreachable!("one setup a recipe"),
        };
        if !needs.iter().all(|n| have(*n)) {
            continue;
        }
        match setup {
            Some(Setup::EsxiLogs) => esxi_logs(d),
            Some(Setup::Interrupted) => interrupted(d),
            None => {}
        }
        let mut line = r.clone();
        for (from, to) in *edits {
            assert!(line.contains(from), "{r}: no '{from}' to make small");
            line = line.replacen(from, to, 1);
        }
        let args: Vec<&str> = line
            .split_whitespace()
            .skip(1)
            .chain(append.iter().copied())
            .collect();
        let started = std::time::Instant::now();
        let out = common::virtperf()
            .args(&args)
            .current_dir(d)
            .timeout(std::time::Duration::from_secs(90))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "README recipe '{r}' (walked as {args:?}) failed ({}):\n{stdout}\n{stderr}",
            out.status
        );
        for want in *expect {
            assert!(
                stdout.contains(want),
                "README recipe '{r}' (walked as {args:?}) did not print '{want}':\n{stdout}\n{stderr}"
            );
        }
        eprintln!("walked in {:.1} s: {r}", started.elapsed().as_secs_f64());
        walked += 1;
    }
    assert!(walked >= 10, "only {walked} recipes were walked");
}
