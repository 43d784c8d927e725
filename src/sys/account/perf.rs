//! The workload process's hardware event counters through
//! `perf_event_open(2)`: cycles and instructions where the environment has
//! a PMU. Counted for the calling thread and every thread and child it
//! starts afterwards (`inherit`), enabled at the run's start and read at
//! its end. Where they cannot be opened their figures are null and the
//! reason says why ("not available here: ..."): a VM without a PMU, a
//! container whose seccomp profile refuses the call, perf_event_paranoid.
//!
//! No software events: a counter inherited by the workload's threads puts
//! every context switch of theirs through perf's scheduler hooks, which
//! slowed net tcp_rr (several switches per transaction) against
//! accounting off. Context switches and page faults come from getrusage
//! instead (`inside`), which the kernel keeps anyway.

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};

use crate::core::accounting::Counters;

const PERF_TYPE_HARDWARE: u32 = 0;
const HW_CPU_CYCLES: u64 = 0;
const HW_INSTRUCTIONS: u64 = 1;

/// `read_format`: the value, then the time enabled and the time running
/// (they differ when the kernel multiplexed the counter).
const FORMAT_TOTAL_TIME_ENABLED: u64 = 1;
const FORMAT_TOTAL_TIME_RUNNING: u64 = 2;

/// `perf_event_attr` flag bits.
const FLAG_DISABLED: u64 = 1;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;

/// perf_event_open's flag: the descriptor closes on exec.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `_IO('$', 0)` and `_IO('$', 1)`.
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;

/// The first 64 bytes of `struct perf_event_attr` (`PERF_ATTR_SIZE_VER0`),
/// all a counting event needs; the kernel takes the size from `size`.
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const _: () = assert!(std::mem::size_of::<Attr>() == 64);

/// Opens one counter for this thread and those it starts, disabled;
/// counting user and kernel time where allowed, user time only where
/// perf_event_paranoid forbids the kernel's.
fn open(kind: u32, config: u64) -> Result<File, std::io::Error> {
    let mut last = None;
    for exclude in [0, FLAG_EXCLUDE_KERNEL] {
        let attr = Attr {
            kind,
            size: std::mem::size_of::<Attr>() as u32,
            config,
            read_format: FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
            flags: FLAG_DISABLED | FLAG_INHERIT | FLAG_EXCLUDE_HV | exclude,
            ..Attr::default()
        };
        // SAFETY: the attribute is a valid, fully initialised
        // perf_event_attr of the size it states; pid 0 and cpu -1 count
        // the calling thread on any CPU; no group fd, no flags. The kernel
        // only reads the struct.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const Attr,
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel just returned this descriptor to us and
            // nothing else owns it.
            return Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) }));
        }
        let err = std::io::Error::last_os_error();
        let permission = matches!(err.raw_os_error(), Some(libc::EACCES | libc::EPERM));
        last = Some(err);
        if !permission {
            break;
        }
    }
    Err(last.expect("one attempt was made"))
}

/// Enables or disables a counter.
fn switch(f: &File, on: bool) {
    use std::os::fd::AsRawFd;
    let request = if on { IOC_ENABLE } else { IOC_DISABLE };
    // SAFETY: an ioctl without an argument on a perf event descriptor we
    // own; it changes only that counter's state.
    unsafe { libc::ioctl(f.as_raw_fd(), request as _, 0) };
}

/// A counter's value, scaled by enabled/running time when the kernel
/// multiplexed it; None when it never ran or the read is short.
fn value(mut f: &File) -> Option<u64> {
    let mut buf = [0u8; 24];
    f.read_exact(&mut buf).ok()?;
    let word = |i: usize| u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
    scaled(word(0), word(1), word(2))
}

/// `value` counted while running `running` of `enabled` ns, as if it had
/// run all along; None when it never ran.
fn scaled(value: u64, enabled: u64, running: u64) -> Option<u64> {
    if running == 0 {
        return None;
    }
    if running >= enabled {
        return Some(value);
    }
    Some((value as f64 * enabled as f64 / running as f64).round() as u64)
}

/// Why the hardware counters cannot be opened, for the document.
fn reason(err: &std::io::Error) -> String {
    let code = err.raw_os_error().unwrap_or(0);
    let (why, name) = match code {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            ("no hardware PMU in this environment", errno_name(code))
        }
        libc::ENOSYS => ("the kernel has no perf_event_open", "ENOSYS"),
        libc::EACCES | libc::EPERM => (
            "perf_event_open is refused (a seccomp profile or kernel.perf_event_paranoid)",
            errno_name(code),
        ),
        _ => ("perf_event_open failed", errno_name(code)),
    };
    match name {
        "" => format!("not available here: {why} ({err})"),
        name => format!("not available here: {why} (perf_event_open: {name})"),
    }
}

fn errno_name(code: i32) -> &'static str {
    match code {
        libc::ENOENT => "ENOENT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENODEV => "ENODEV",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EINVAL => "EINVAL",
        _ => "",
    }
}

/// A run's hardware counters, opened and enabled.
pub struct Counting {
    hardware: Result<[File; 2], String>,
}

impl Counting {
    /// Opens and enables the counters for this thread and what it starts.
    pub fn start() -> Counting {
        let open_both = || {
            Ok([
                open(PERF_TYPE_HARDWARE, HW_CPU_CYCLES)?,
                open(PERF_TYPE_HARDWARE, HW_INSTRUCTIONS)?,
            ])
        };
        let c = Counting {
            hardware: open_both().map_err(|e| reason(&e)),
        };
        c.hardware.iter().flatten().for_each(|f| switch(f, true));
        c
    }

    /// Stops counting; cycles and instructions since `start`, or why
    /// not (the software figures are left to the caller).
    pub fn finish(self) -> Counters {
        let mut c = Counters::default();
        match &self.hardware {
            Ok([cycles, instructions]) => {
                switch(cycles, false);
                switch(instructions, false);
                c.cycles = value(cycles);
                c.instructions = value(instructions);
            }
            Err(why) => c.hardware_unavailable = Some(why.clone()),
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multiplexed_count_is_scaled_and_one_never_run_is_none() {
        assert_eq!(scaled(100, 10, 10), Some(100));
        assert_eq!(scaled(100, 10, 5), Some(200));
        assert_eq!(scaled(0, 0, 0), None);
        assert_eq!(scaled(5, 10, 0), None);
    }

    #[test]
    fn a_missing_pmu_is_a_reason_not_a_zero() {
        let r = reason(&std::io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(
            r,
            "not available here: no hardware PMU in this environment (perf_event_open: ENOENT)"
        );
        let r = reason(&std::io::Error::from_raw_os_error(libc::EPERM));
        assert!(r.contains("seccomp"), "{r}");
    }

    #[test]
    fn counts_this_threads_work_or_says_why_not() {
        let counting = Counting::start();
        let worker = std::thread::spawn(|| {
            let mut v = vec![0u8; 8 << 20];
            for i in (0..v.len()).step_by(4096) {
                v[i] = 1;
            }
            std::thread::yield_now();
            std::hint::black_box(v.iter().map(|&x| x as u64).sum::<u64>())
        });
        worker.join().unwrap();
        let c = counting.finish();
        match &c.hardware_unavailable {
            Some(why) => {
                assert!(why.starts_with("not available here: "), "{why}");
                assert!(c.cycles.is_none() && c.instructions.is_none(), "{c:?}");
            }
            // Counted: the thread started after the counters is inherited
            // and its work summed in when it ends.
            None => assert!(
                c.cycles.unwrap() > 0 && c.instructions.unwrap() > 0,
                "{c:?}"
            ),
        }
        // No software event is opened here: those figures are the caller's.
        assert!(c.context_switches.is_none() && c.page_faults.is_none());
    }
}
