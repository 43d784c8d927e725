//! System monitors sampled around a run: CPU time shares from /proc/stat
//! (user, system, iowait, steal) and the busy time of other processes.
//!
//! Two vantage points. The agent samples inside the environment
//! ([`Sampler`]): busy CPU beyond its own process counts as foreign there.
//! Inside a container that is wrong: /proc/stat is the host's, and the
//! kernel work done for the container outside its processes (writeback,
//! block I/O completion in kernel threads), the container runtime and the
//! relay of the agent's stdio all count as "foreign", so a file-I/O run in
//! docker is flagged every time. Inside a VM it misses the host's other
//! processes entirely.
//!
//! So the host checks too ([`HostSnapshot`], taken by the environment
//! driver around each run when the environment runs on this machine).
//! Busy CPU of the whole machine (user, nice, system from /proc/stat; not
//! irq and softirq, which no process is charged with) is split into:
//! - on the environment's behalf: virtperf itself, the process tree it
//!   launched (the host agent, QEMU with every vCPU thread, the `docker run`
//!   client; each including the time of children they reaped, and still
//!   there as zombies until virtperf reaps them), a container's cgroup CPU
//!   time ([`CgroupCpu`], found from its init's pid, which `docker inspect`
//!   gives; the cgroup outlives the processes, which the container runtime
//!   reaps at once), and kernel threads (the kernel's work for everyone's
//!   I/O);
//! - everything else: other processes' load, the only part that flags a
//!   run ([`HostLoad::foreign_pct`]), with steal from inside.
//!
//! A process that other software started and that ended within the run is
//! still counted as foreign: it is in the machine's busy time and in no
//! tree. The driver replaces the agent's foreign figure with the host's.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::Instant;

use crate::core::result::Monitor;

/// Jiffy counters of all CPUs together, as /proc/stat's first line gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    pub fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        let get = |i: usize| f.get(i).copied().unwrap_or(0);
        Some(CpuTimes {
            user: get(0),
            nice: get(1),
            system: get(2),
            idle: get(3),
            iowait: get(4),
            irq: get(5),
            softirq: get(6),
            steal: get(7),
        })
    }

    fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }
}

/// A started sampling interval.
pub struct Sampler {
    start: Option<CpuTimes>,
    own_start: f64,
    wall: Instant,
}

/// CPU time of this process and of the children it reaped (microops
/// measures in a child process of its own, pipe_echo in forked ones).
fn own_cpu_seconds() -> f64 {
    let of = |who: libc::c_int| {
        // SAFETY: an all-zero rusage (integers and timevals) is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage only writes into the struct we pass.
        unsafe { libc::getrusage(who, &mut usage) };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(usage.ru_utime) + tv(usage.ru_stime)
    };
    of(libc::RUSAGE_SELF) + of(libc::RUSAGE_CHILDREN)
}

fn read_times() -> Option<CpuTimes> {
    CpuTimes::parse(&fs::read_to_string("/proc/stat").ok()?)
}

impl Sampler {
    pub fn start() -> Sampler {
        Sampler {
            start: read_times(),
            own_start: own_cpu_seconds(),
            wall: Instant::now(),
        }
    }

    /// Shares of CPU time over the interval, in percent of all CPUs.
    pub fn finish(self) -> Monitor {
        let (Some(a), Some(b)) = (self.start, read_times()) else {
            return Monitor::default();
        };
        let own = own_cpu_seconds() - self.own_start;
        let wall = self.wall.elapsed().as_secs_f64();
        shares(&a, &b, own, wall, crate::sys::fingerprint::online_cpus())
    }
}

/// The monitor figures between two samples. `own_cpu_s` is the CPU time this
/// process used; what is busy beyond it is foreign load.
pub fn shares(a: &CpuTimes, b: &CpuTimes, own_cpu_s: f64, wall_s: f64, cpus: u32) -> Monitor {
    let total = b.total().saturating_sub(a.total()) as f64;
    if total <= 0.0 {
        return Monitor::default();
    }
    let pct = |x: u64, y: u64| 100.0 * x.saturating_sub(y) as f64 / total;
    let busy_pct = pct(b.busy(), a.busy());
    let own_pct = if wall_s > 0.0 {
        100.0 * own_cpu_s / (wall_s * cpus.max(1) as f64)
    } else {
        0.0
    };
    Monitor {
        cpu_user_pct: pct(b.user + b.nice, a.user + a.nice),
        cpu_sys_pct: pct(b.system + b.irq + b.softirq, a.system + a.irq + a.softirq),
        cpu_iowait_pct: pct(b.iowait, a.iowait),
        cpu_steal_pct: pct(b.steal, a.steal),
        foreign_busy_pct: (busy_pct - own_pct).max(0.0),
        env_busy_pct: None,
    }
}

/// One process as the host sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Proc {
    ppid: u32,
    /// utime + stime + the same of reaped children, in clock ticks.
    ticks: u64,
    kernel_thread: bool,
    /// One of the runtimes' helpers (`sys::account::outside::is_helper`):
    /// a shim, conmon, fuse-overlayfs, slirp4netns, an engine's daemon.
    helper: bool,
}

/// The machine's CPU counters and every process's CPU time at one moment.
#[derive(Debug, Clone, Default)]
pub struct HostSnapshot {
    cpu: CpuTimes,
    procs: HashMap<u32, Proc>,
    /// CPU time of each cgroup asked for, in clock ticks.
    cgroups: Vec<Option<u64>>,
}

/// A container's CPU accounting file on the host: its cgroup outlives its
/// processes until the container is removed, so the last run's time is
/// still there when its init has already exited and been reaped.
#[derive(Debug, Clone, PartialEq)]
pub enum CgroupCpu {
    /// cgroup v1 `cpuacct.usage`, nanoseconds.
    V1(std::path::PathBuf),
    /// cgroup v2 `cpu.stat`, its `usage_usec` line.
    V2(std::path::PathBuf),
}

impl CgroupCpu {
    /// The cgroup of process `pid`, as /proc/PID/cgroup names it.
    pub fn of(pid: u32) -> Option<CgroupCpu> {
        let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let root = Path::new("/sys/fs/cgroup");
        for line in text.lines() {
            let mut f = line.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            let rel = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "cpuacct") {
                let file = root.join(controllers).join(rel).join("cpuacct.usage");
                if file.exists() {
                    return Some(CgroupCpu::V1(file));
                }
            }
        }
        let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
        let file = root.join(path.trim_start_matches('/')).join("cpu.stat");
        file.exists().then_some(CgroupCpu::V2(file))
    }

    fn ticks(&self) -> Option<u64> {
        // SAFETY: sysconf only reads a configuration value.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        match self {
            CgroupCpu::V1(f) => {
                let ns: u64 = fs::read_to_string(f).ok()?.trim().parse().ok()?;
                Some(ns / (1_000_000_000 / hz))
            }
            CgroupCpu::V2(f) => {
                let text = fs::read_to_string(f).ok()?;
                let us: u64 = text
                    .lines()
                    .find_map(|l| l.strip_prefix("usage_usec "))?
                    .trim()
                    .parse()
                    .ok()?;
                Some(us / (1_000_000 / hz))
            }
        }
    }
}

/// Where a run's busy CPU went, as the host saw it, in percent of all CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HostLoad {
    /// Used on the environment's behalf (see the module doc).
    pub env_pct: f64,
    /// Used by other processes: what flags a run.
    pub foreign_pct: f64,
}

impl HostSnapshot {
    /// Reads /proc (and the given cgroups' CPU time) now; None where there
    /// is no /proc/stat.
    pub fn take(cgroups: &[CgroupCpu]) -> Option<HostSnapshot> {
        let cpu = read_times()?;
        let table = crate::sys::account::procs::Table::take(&|_| false)?;
        Some(HostSnapshot::of(cpu, &table, cgroups))
    }

    /// The snapshot of a process table already read (the accounting's, at
    /// a run's end: /proc is walked once), the CPU counters and the given
    /// cgroups read now.
    pub fn of_table(
        table: &crate::sys::account::procs::Table,
        cgroups: &[CgroupCpu],
    ) -> Option<HostSnapshot> {
        Some(HostSnapshot::of(read_times()?, table, cgroups))
    }

    fn of(
        cpu: CpuTimes,
        table: &crate::sys::account::procs::Table,
        cgroups: &[CgroupCpu],
    ) -> HostSnapshot {
        let procs = table
            .procs
            .iter()
            .map(|(&pid, p)| {
                let proc = Proc {
                    ppid: p.ppid,
                    ticks: p.ticks,
                    kernel_thread: p.kernel_thread,
                    helper: crate::sys::account::outside::is_helper(&p.comm),
                };
                (pid, proc)
            })
            .collect();
        HostSnapshot {
            cpu,
            procs,
            cgroups: cgroups.iter().map(CgroupCpu::ticks).collect(),
        }
    }

    /// `roots` and every process below them, as of this snapshot.
    fn trees(&self, roots: &[u32]) -> Vec<u32> {
        crate::sys::account::procs::process_trees(
            self.procs.iter().map(|(&pid, p)| (pid, p.ppid)),
            roots,
        )
    }
}

/// The split of busy CPU between two snapshots; `roots` are the process
/// trees working on the environment's behalf (virtperf itself is added),
/// and the snapshots' cgroups (a container's) too. A container's processes
/// must be given by its cgroup, not as a root, or they count twice. With
/// `helpers` (a container or VM runs), the runtimes' helpers outside those
/// trees work on its behalf too, as the run's accounting counts them:
/// fuse-overlayfs under a container's files, slirp4netns under a rootless
/// one's network, conmon and the shims relaying its output.
pub fn host_load(a: &HostSnapshot, b: &HostSnapshot, roots: &[u32], helpers: bool) -> HostLoad {
    let total = b.cpu.total().saturating_sub(a.cpu.total()) as f64;
    if total <= 0.0 {
        return HostLoad::default();
    }
    let busy = (b.cpu.user + b.cpu.nice + b.cpu.system)
        .saturating_sub(a.cpu.user + a.cpu.nice + a.cpu.system) as f64;
    let delta = |pid: u32| -> u64 {
        let end = b.procs.get(&pid).map_or(0, |p| p.ticks);
        // A process that started within the interval used all its time in it.
        end.saturating_sub(a.procs.get(&pid).map_or(0, |p| p.ticks))
    };
    let mut roots = roots.to_vec();
    roots.push(std::process::id());
    let own = b.trees(&roots);
    let on_behalf: u64 = own.iter().map(|&p| delta(p)).sum::<u64>()
        + b.procs
            .iter()
            .filter(|(pid, p)| (p.kernel_thread || helpers && p.helper) && !own.contains(pid))
            .map(|(&pid, _)| delta(pid))
            .sum::<u64>()
        + a.cgroups
            .iter()
            .zip(&b.cgroups)
            .map(|(x, y)| match (x, y) {
                (Some(x), Some(y)) => y.saturating_sub(*x),
                _ => 0,
            })
            .sum::<u64>();
    let env = (on_behalf as f64).min(busy);
    HostLoad {
        env_pct: 100.0 * env / total,
        foreign_pct: 100.0 * (busy - env).max(0.0) / total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat_and_computes_shares() {
        let a = CpuTimes::parse("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3").unwrap();
        let b = CpuTimes::parse("cpu  200 0 100 1500 20 0 0 180 0 0\n").unwrap();
        assert_eq!(a.steal, 40);
        let m = shares(&a, &b, 0.0, 1.0, 2);
        // total delta = 100+50+700+10+140 = 1000
        assert!((m.cpu_user_pct - 10.0).abs() < 1e-9);
        assert!((m.cpu_sys_pct - 5.0).abs() < 1e-9);
        assert!((m.cpu_iowait_pct - 1.0).abs() < 1e-9);
        assert!((m.cpu_steal_pct - 14.0).abs() < 1e-9);
        assert!((m.foreign_busy_pct - 15.0).abs() < 1e-9);
    }

    fn snap(busy: u64, idle: u64, procs: &[(u32, u32, u64, bool)]) -> HostSnapshot {
        HostSnapshot {
            cpu: CpuTimes {
                user: busy,
                idle,
                ..CpuTimes::default()
            },
            procs: procs
                .iter()
                .map(|&(pid, ppid, ticks, kernel_thread)| {
                    (
                        pid,
                        Proc {
                            ppid,
                            ticks,
                            kernel_thread,
                            helper: false,
                        },
                    )
                })
                .collect(),
            cgroups: Vec::new(),
        }
    }

    #[test]
    fn a_runtimes_helpers_are_a_containers_own_work_not_the_hosts() {
        // 1000 ticks: 500 busy. The client's tree (pid 10) 100, a rootless
        // container's init (20, under conmon 19, a helper) 200, conmon 20,
        // slirp4netns (30, a helper) 100, a compiler (50) 80.
        let procs = [
            (10, 1, 0, false),
            (19, 1, 0, false),
            (20, 19, 0, false),
            (30, 1, 0, false),
            (50, 1, 0, false),
        ];
        let a = snap(0, 0, &procs);
        let mut b = snap(
            500,
            500,
            &[
                (10, 1, 100, false),
                (19, 1, 20, false),
                (20, 19, 200, false),
                (30, 1, 100, false),
                (50, 1, 80, false),
            ],
        );
        for pid in [19, 30] {
            b.procs.get_mut(&pid).unwrap().helper = true;
        }
        // The container's tree and its helpers are its own: the compiler
        // (8%) is all that is foreign.
        let l = host_load(&a, &b, &[10, 20], true);
        assert!((l.foreign_pct - 8.0).abs() < 1e-9, "{l:?}");
        assert!((l.env_pct - 42.0).abs() < 1e-9, "{l:?}");
        // For the host's own runs the helpers are others' load.
        let l = host_load(&a, &b, &[10, 20], false);
        assert!((l.foreign_pct - 20.0).abs() < 1e-9, "{l:?}");
        // Without the container's init among the roots its 200 are
        // foreign, as when rootless Podman on cgroup v1 gave none.
        let l = host_load(&a, &b, &[10], true);
        assert!((l.foreign_pct - 28.0).abs() < 1e-9, "{l:?}");
    }

    #[test]
    fn the_environments_trees_and_kernel_threads_are_not_foreign() {
        // 1000 ticks elapse: 600 busy. QEMU (pid 10) and its vCPU child
        // (11) use 300, a kernel thread 100, a compiler (50) 150, and a
        // short job that came and went 50 (in no process table).
        let a = snap(
            0,
            0,
            &[
                (10, 1, 0, false),
                (11, 10, 0, false),
                (3, 2, 0, true),
                (50, 1, 0, false),
            ],
        );
        let b = snap(
            600,
            400,
            &[
                (10, 1, 100, false),
                (11, 10, 200, false),
                (3, 2, 100, true),
                (50, 1, 150, false),
            ],
        );
        let l = host_load(&a, &b, &[10], false);
        assert!((l.env_pct - 40.0).abs() < 1e-9, "{l:?}");
        assert!((l.foreign_pct - 20.0).abs() < 1e-9, "{l:?}");
        // The same interval with the compiler as the environment: the
        // QEMU tree becomes the foreign load.
        let l = host_load(&a, &b, &[50], false);
        assert!((l.foreign_pct - 35.0).abs() < 1e-9, "{l:?}");
    }

    #[test]
    fn a_busy_process_of_the_environment_is_not_foreign_load_on_the_real_machine() {
        // A real busy child, measured both ways from the same snapshots:
        // as the environment's process it is not foreign, as anyone else's
        // it is. Other load on the machine is the same in both figures, so
        // only the difference is asserted.
        // Both detached (parent gone), so they are outside virtperf's own
        // tree, as a container's processes are.
        let detached = |script: &str| -> u32 {
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("{script} >/dev/null 2>&1 & echo $!")])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        };
        // Bounded by its count (some seconds), killed sooner below.
        let busy = detached("i=0; while [ $i -lt 20000000 ]; do i=$((i+1)); done");
        let idle = detached("sleep 10");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let a = HostSnapshot::take(&[]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let b = HostSnapshot::take(&[]).unwrap();
        for pid in [busy, idle] {
            // SAFETY: kill(2) with the pid of a process this test started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        let as_env = host_load(&a, &b, &[busy], false);
        let as_other = host_load(&a, &b, &[idle], false);
        // The machine may be busy with other work, so the loop's share is
        // not known in advance; what it did get moves, exactly.
        let used = b.procs[&busy].ticks - a.procs.get(&busy).map_or(0, |p| p.ticks);
        let total = (b.cpu.total() - a.cpu.total()) as f64;
        let moved = as_other.foreign_pct - as_env.foreign_pct;
        assert!(used > 0, "the busy loop never ran");
        assert!(
            (moved - 100.0 * used as f64 / total).abs() < 1e-6 || as_env.foreign_pct == 0.0,
            "the busy child used {used} of {total} ticks but moved {moved:.2}%: {as_env:?} {as_other:?}"
        );
        assert!(as_env.env_pct >= moved - 1e-9);
    }

    #[test]
    fn a_containers_cgroup_counts_after_its_processes_are_gone() {
        // The container's init (pid 20) ran 200 ticks and exited before the
        // second snapshot; its cgroup still says so.
        let mut a = snap(0, 0, &[(20, 5, 0, false)]);
        let mut b = snap(300, 700, &[]);
        a.cgroups = vec![Some(1000)];
        b.cgroups = vec![Some(1200)];
        let l = host_load(&a, &b, &[], false);
        assert!((l.env_pct - 20.0).abs() < 1e-9, "{l:?}");
        assert!((l.foreign_pct - 10.0).abs() < 1e-9, "{l:?}");
    }

    #[test]
    fn finds_and_reads_this_process_cgroup() {
        if !Path::new("/sys/fs/cgroup")
            .join("cgroup.controllers")
            .exists()
            && !Path::new("/sys/fs/cgroup/cpuacct").exists()
        {
            eprintln!("skipping: no cgroup file system mounted");
            return;
        }
        let cg = CgroupCpu::of(std::process::id()).expect("this process's cgroup");
        let t0 = cg.ticks().expect("its CPU time");
        let spin = Instant::now();
        while spin.elapsed().as_millis() < 300 {
            std::hint::black_box(0u64);
        }
        assert!(cg.ticks().unwrap() >= t0);
    }
}
