//! Binding a thread to one CPU, as netperf's `-T` binds netperf and
//! netserver: on a machine of few CPUs, a request/response test whose two
//! ends the scheduler places on one CPU in one run and on two in the next
//! is bimodal from run to run (on a 2-vCPU VM, loopback tcp_rr was 32k–54k
//! transactions/s unbound, 11.4k–13.2k with the ends on CPUs 1 and 0).

use std::io;

/// The CPUs the calling thread may run on, in order.
pub fn allowed() -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t filled in by the kernel for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Lets the calling thread run on exactly `cpus`.
pub fn bind_to(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: a cpu_set_t on the stack, for this thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Binds the calling thread to the `n`th of the CPUs it may use, counted
/// modulo their number, so one setting fits an environment of any size
/// (CPU 1 of a 1-CPU guest is its CPU 0); returns the CPU.
pub fn bind_nth(n: usize) -> io::Result<usize> {
    bind_nth_of(&allowed()?, n)
}

/// Binds the calling thread to the `n`th of `cpus` (modulo their number):
/// for a thread that binds more than once, with the CPUs it started with.
pub fn bind_nth_of(cpus: &[usize], n: usize) -> io::Result<usize> {
    if cpus.is_empty() {
        return Err(io::Error::other("this thread may run on no CPU"));
    }
    let cpu = cpus[n % cpus.len()];
    bind_to(&[cpu])?;
    Ok(cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_bound_to_its_nth_cpu_modulo_and_set_free_again() {
        std::thread::spawn(|| {
            let all = allowed().unwrap();
            assert!(!all.is_empty());
            let cpu = bind_nth(all.len() + 1).unwrap();
            assert_eq!(cpu, all[1 % all.len()]);
            assert_eq!(allowed().unwrap(), [cpu]);
            // SAFETY: sched_getcpu has no preconditions.
            assert_eq!(unsafe { libc::sched_getcpu() }, cpu as i32);
            bind_to(&all).unwrap();
            assert_eq!(allowed().unwrap(), all);
        })
        .join()
        .unwrap();
    }
}
