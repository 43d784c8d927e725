//! The agent's accounting of one run, from inside the environment: the
//! workload's rusage (this process and the children it reaped: microops'
//! measuring child, pipe_echo's forks), its bytes at the system-call and
//! block layers (`/proc/self/io`), its event counters (hardware ones from
//! `perf`, context switches and page faults from the rusage), and the
//! environment's `/proc/stat`, pressure and network counters, read before
//! and after the run; and the environment's CPU shares and disk bytes once
//! a second (`series`).

use std::path::Path;
use std::time::Instant;

use super::perf::Counting;
use super::read;
use super::series::Recorder;
use crate::core::accounting::{Counters, CpuSplit, Inside, NetCounters, Pressure};

/// One reading of everything [`Inside`] is the difference of.
#[derive(Debug, Clone, Default)]
struct Reading {
    rusage: Option<Usage>,
    io: Option<std::collections::HashMap<String, u64>>,
    cpu: Option<CpuSplit>,
    pressure: Option<Pressure>,
    net: Option<NetCounters>,
}

/// rusage of this process plus its reaped children.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    user_s: f64,
    sys_s: f64,
    nvcsw: u64,
    nivcsw: u64,
    minflt: u64,
    majflt: u64,
}

fn usage() -> Usage {
    let of = |who: libc::c_int| {
        // SAFETY: an all-zero rusage (integers and timevals) is a valid value.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage only writes into the struct we pass.
        unsafe { libc::getrusage(who, &mut u) };
        u
    };
    let (a, b) = (of(libc::RUSAGE_SELF), of(libc::RUSAGE_CHILDREN));
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let n = |x: libc::c_long, y: libc::c_long| (x.max(0) + y.max(0)) as u64;
    Usage {
        user_s: tv(a.ru_utime) + tv(b.ru_utime),
        sys_s: tv(a.ru_stime) + tv(b.ru_stime),
        nvcsw: n(a.ru_nvcsw, b.ru_nvcsw),
        nivcsw: n(a.ru_nivcsw, b.ru_nivcsw),
        minflt: n(a.ru_minflt, b.ru_minflt),
        majflt: n(a.ru_majflt, b.ru_majflt),
    }
}

fn reading() -> Reading {
    Reading {
        rusage: Some(usage()),
        io: read::file("/proc/self/io").map(|t| read::keyed(&t)),
        cpu: read::file("/proc/stat").and_then(|t| read::cpu_split(&t)),
        pressure: read::pressure(Path::new("/proc/pressure"), ""),
        net: read::file("/proc/net/snmp").map(|t| read::snmp(&t)),
    }
}

/// A run's accounting, started.
pub struct Sampler {
    start: Reading,
    wall: Instant,
    counting: Option<Counting>,
    samples: Option<Recorder>,
}

impl Sampler {
    /// Starts counting for the calling thread and the threads and children
    /// it starts from now on (the workload's); None when accounting is off.
    pub fn start() -> Option<Sampler> {
        super::enabled().then(|| Sampler {
            start: reading(),
            samples: Recorder::start(std::time::Duration::from_secs(1)),
            counting: Some(Counting::start()),
            wall: Instant::now(),
        })
    }

    /// The run's figures since `start`.
    pub fn finish(self) -> Inside {
        let hardware = self.counting.map(Counting::finish);
        let samples = self.samples.and_then(Recorder::finish);
        let wall_s = self.wall.elapsed().as_secs_f64();
        let inside = difference(&self.start, &reading(), wall_s);
        Inside {
            counters: hardware.map(|h| software(h, &inside)),
            samples,
            ..inside
        }
    }
}

/// Why `cpu_migrations` is null: the one software figure no free source
/// gives for threads that have ended.
pub const MIGRATIONS_NOT_COUNTED: &str = "cpu_migrations not counted: it needs a perf_event \
     counter on every thread, which slows each context switch (switches and faults are from getrusage)";

/// `counters` with the software figures from the rusage difference, which
/// the kernel keeps for every thread and reaped child at no cost to the
/// run (a perf software counter would tax every context switch).
fn software(counters: Counters, inside: &Inside) -> Counters {
    let sum = |a: Option<u64>, b: Option<u64>| Some(a? + b?);
    Counters {
        context_switches: sum(inside.ctx_voluntary, inside.ctx_involuntary),
        page_faults: sum(inside.faults_minor, inside.faults_major),
        cpu_migrations: None,
        software_unavailable: Some(MIGRATIONS_NOT_COUNTED.to_string()),
        ..counters
    }
}

fn difference(a: &Reading, b: &Reading, wall_s: f64) -> Inside {
    let u = a.rusage.zip(b.rusage);
    let io = |key: &str| {
        let (x, y) = (a.io.as_ref()?.get(key)?, b.io.as_ref()?.get(key)?);
        Some(y.saturating_sub(*x))
    };
    Inside {
        wall_s,
        cpu_user_s: u.map(|(x, y)| (y.user_s - x.user_s).max(0.0)),
        cpu_sys_s: u.map(|(x, y)| (y.sys_s - x.sys_s).max(0.0)),
        ctx_voluntary: u.map(|(x, y)| y.nvcsw.saturating_sub(x.nvcsw)),
        ctx_involuntary: u.map(|(x, y)| y.nivcsw.saturating_sub(x.nivcsw)),
        faults_minor: u.map(|(x, y)| y.minflt.saturating_sub(x.minflt)),
        faults_major: u.map(|(x, y)| y.majflt.saturating_sub(x.majflt)),
        syscall_read_bytes: io("rchar"),
        syscall_write_bytes: io("wchar"),
        block_read_bytes: io("read_bytes"),
        block_write_bytes: io("write_bytes"),
        cpu: a.cpu.zip(b.cpu).map(|(x, y)| read::cpu_delta(&x, &y)),
        pressure: a
            .pressure
            .zip(b.pressure)
            .map(|(x, y)| read::pressure_delta(&x, &y)),
        net: a.net.zip(b.net).map(|(x, y)| read::net_delta(&x, &y)),
        counters: None,
        samples: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_writing_run_shows_its_cpu_and_bytes_and_missing_files_are_null() {
        let s = Sampler::start().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed().as_millis() < 200 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        std::fs::write(dir.path().join("f"), vec![7u8; 1 << 20]).unwrap();
        // Fresh pages, touched: faults whatever the allocator reuses (the
        // vector above may come from memory earlier tests faulted in).
        fault_in_fresh_pages(64);
        let got = s.finish();
        // How much CPU the spin got depends on the machine's load; that
        // it got some does not.
        assert!(
            got.cpu_user_s.unwrap() + got.cpu_sys_s.unwrap() > 0.0,
            "{got:?}"
        );
        if Path::new("/proc/self/io").exists() {
            assert!(got.syscall_write_bytes.unwrap() >= 1 << 20, "{got:?}");
        }
        assert!(got.wall_s >= 0.2);
        assert!(got.check().is_ok());
        // Under a second: no sample yet, and the counters were taken.
        assert_eq!(got.samples.map(|s| s.samples.len()), Some(0));
        let c = got.counters.as_ref().unwrap();
        // The software figures are the rusage's, and migrations say why
        // they are null.
        let switches = got.ctx_voluntary.unwrap() + got.ctx_involuntary.unwrap();
        assert_eq!(c.context_switches, Some(switches));
        let faults = got.faults_minor.unwrap() + got.faults_major.unwrap();
        assert_eq!(c.page_faults, Some(faults));
        // The fresh pages were faulted in during the run.
        assert!(faults > 0, "{c:?}");
        assert_eq!(c.cpu_migrations, None);
        assert!(c.software_unavailable.as_deref().unwrap().len() <= 200);
        // A reading without the files: every figure null, none 0.
        let none = difference(&Reading::default(), &Reading::default(), 1.0);
        assert_eq!(none.cpu_user_s, None);
        assert_eq!(none.block_write_bytes, None);
        assert_eq!(none.pressure, None);
    }

    /// Maps `pages` fresh anonymous pages, writes to each, and unmaps them.
    fn fault_in_fresh_pages(pages: usize) {
        let len = pages * 4096;
        // SAFETY: an anonymous private mapping of our own, no file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        for i in 0..pages {
            // SAFETY: within the mapping just made, writable.
            unsafe { std::ptr::write_volatile(p.cast::<u8>().add(i * 4096), 1) };
        }
        // SAFETY: the mapping made above, unmapped once.
        unsafe { libc::munmap(p, len) };
    }
}
