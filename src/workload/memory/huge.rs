//! `--memory-hugetlb`'s blocks: memory from the HugeTLB pool, taken as
//! sysbench takes it (a private System V segment with SHM_HUGETLB).

use std::sync::atomic::AtomicU64;

/// sysbench's huge page size, by which it rounds a block up (with its own
/// arithmetic: `((size - 1) & ~4M) + 4M`, which the messages show).
const LARGE_PAGE_SIZE: usize = 4 << 20;

/// A block from the HugeTLB pool, as sysbench takes it: a private System V
/// shared memory segment with SHM_HUGETLB, marked for removal at once so
/// that it goes when detached (or when the process ends).
pub struct HugeBlock {
    ptr: *mut libc::c_void,
    words: usize,
}

// SAFETY: the segment is plain memory owned by this value, not tied to
// the thread that attached it.
unsafe impl Send for HugeBlock {}
// SAFETY: shared, it is read and written only through atomics (`atomics`).
unsafe impl Sync for HugeBlock {}

impl HugeBlock {
    /// A block of `block` bytes, or sysbench's FATAL text and virtperf's
    /// message for a pool that cannot give it.
    pub(super) fn new(block: usize) -> std::result::Result<HugeBlock, (String, String)> {
        let size = ((block - 1) & !LARGE_PAGE_SIZE) + LARGE_PAGE_SIZE;
        // SAFETY: a new private segment; no pointer is involved.
        let id = unsafe { libc::shmget(libc::IPC_PRIVATE, size, libc::SHM_HUGETLB | 0o600) };
        if id < 0 {
            let e = std::io::Error::last_os_error();
            return Err((
                format!(
                    "Failed to allocate {size} bytes from HugeTLB memory. errno = {} ({})",
                    e.raw_os_error().unwrap_or(0),
                    strerror(&e)
                ),
                format!(
                    "--memory-hugetlb: the HugeTLB pool cannot give {size} bytes ({}); reserve huge pages first (sysctl vm.nr_hugepages=N, N x Hugepagesize in /proc/meminfo) or leave --memory-hugetlb out",
                    strerror(&e)
                ),
            ));
        }
        // SAFETY: attaching the segment just made, where the kernel picks.
        let ptr = unsafe { libc::shmat(id, std::ptr::null(), 0) };
        // SAFETY: marks the segment for removal once detached.
        unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
        if ptr as isize == -1 {
            let e = std::io::Error::last_os_error();
            return Err((
                format!(
                    "Failed to attach shared memory segment, errno = {} ({})",
                    e.raw_os_error().unwrap_or(0),
                    strerror(&e)
                ),
                format!(
                    "--memory-hugetlb: cannot attach the huge page segment ({})",
                    strerror(&e)
                ),
            ));
        }
        Ok(HugeBlock {
            ptr,
            words: block / 8,
        })
    }

    /// The block's words (a fresh segment is zeroed).
    pub(super) fn atomics(&self) -> &[AtomicU64] {
        // SAFETY: the segment is at least `words` words, aligned to a page,
        // and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr as *const AtomicU64, self.words) }
    }
}

impl Drop for HugeBlock {
    fn drop(&mut self) {
        // SAFETY: detaching what `new` attached.
        unsafe { libc::shmdt(self.ptr) };
    }
}

/// strerror's words, without Rust's "(os error N)".
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    text.split(" (os error").next().unwrap_or(&text).to_string()
}
