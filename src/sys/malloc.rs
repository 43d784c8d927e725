//! One malloc state for every process. glibc raises its mmap threshold the
//! first time a program frees a block it had mmapped (up to 32 MiB), and its
//! trim threshold with it; from then on such blocks come from the heap, and
//! freed ones stay there for the next request. An agent runs many workloads
//! in one process, so microops' `malloc_1m` timed an mmap (~3 µs here) or a
//! heap split (~20 ns) by what had run before it in that environment, and
//! the comparison called one environment "faster" for its history.
//! Pinning the thresholds at glibc's own defaults (128 KiB) before anything
//! is allocated keeps every process in the state a fresh one starts in.

/// glibc's default mmap and trim thresholds.
pub const THRESHOLD: i32 = 128 * 1024;

/// Fixes malloc's mmap and trim thresholds at [`THRESHOLD`] (which also
/// turns glibc's dynamic adjustment off). Call first thing in `main`.
pub fn pin_thresholds() {
    // SAFETY: mallopt only sets malloc's tunables; a refusal (returns 0)
    // leaves them as they were, which is no worse than not calling it.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, THRESHOLD);
    }
}
