//! System monitors sampled around a run: CPU time shares from /proc/stat
//! (user, system, iowait, steal) and the busy time of other processes.

use std::fs;
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

fn own_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
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
}
