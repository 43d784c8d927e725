//! The malloc state every virtperf process runs in (`sys::malloc`). This
//! test binary holds one test, so its process is fresh as virtperf's is when
//! `main` pins the thresholds.
//!
//! glibc marks a chunk it mmapped with bit 1 (IS_MMAPPED) of the size word
//! just before the pointer malloc returns; the test reads that bit. The
//! pointers and sizes go through `black_box`, or the compiler, which knows
//! malloc, would drop the unused blocks and the read outside them.

use std::hint::black_box;

fn malloc(size: usize) -> *mut libc::c_void {
    // SAFETY: plain malloc; every caller frees the block.
    black_box(unsafe { libc::malloc(black_box(size)) })
}

fn free(p: *mut libc::c_void) {
    // SAFETY: p came from malloc above.
    unsafe { libc::free(black_box(p)) }
}

/// Whether glibc served `p` by its own mmap.
fn mmapped(p: *mut libc::c_void) -> bool {
    // SAFETY: p is a live block from glibc's malloc, which keeps the chunk's
    // size word (a usize) right before it.
    let size_word = unsafe { std::ptr::read_volatile((black_box(p) as *const usize).sub(1)) };
    size_word & 2 != 0
}

#[test]
fn after_large_blocks_are_freed_a_megabyte_is_still_mmapped() {
    virtperf::sys::malloc::pin_thresholds();
    // A workload's history: large blocks mmapped and freed. Unpinned, each
    // free raises the mmap threshold to the block's size (here to 16 MB),
    // and 1 MB comes from the heap from then on.
    for size in [1 << 20, 4 << 20, 16 << 20] {
        free(malloc(size));
    }
    let blocks: Vec<_> = (0..8).map(|_| malloc(1_000_000)).collect();
    assert!(blocks.iter().all(|p| !p.is_null()));
    let served: Vec<bool> = blocks.iter().map(|&p| mmapped(p)).collect();
    blocks.into_iter().for_each(free);
    assert!(
        served.iter().all(|&m| m),
        "1 MB blocks mmapped after the history: {served:?} (the thresholds moved)"
    );
}
