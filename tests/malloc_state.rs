//! The malloc state microops' `malloc_1m` is timed in (`sys::malloc`): the
//! one a fresh process is in, whatever ran before it in the agent. This
//! test binary holds one test, so its process starts fresh, as virtperf's
//! does when `main` pins the thresholds.
//!
//! The pointers and sizes go through `black_box`, or the compiler, which
//! knows malloc, would drop unused blocks and the reads before them.

use std::hint::black_box;

use virtperf::sys::malloc::{is_mmapped, pin_thresholds, Held};

fn malloc(size: usize) -> *mut libc::c_void {
    // SAFETY: plain malloc; every caller frees the block.
    let p = black_box(unsafe { libc::malloc(black_box(size)) });
    assert!(!p.is_null(), "malloc({size}) failed");
    p
}

fn free(p: *mut libc::c_void) {
    // SAFETY: p came from malloc above.
    unsafe { libc::free(black_box(p)) }
}

/// Which of 8 live blocks of 1 MB malloc mmapped.
fn megabytes_mmapped() -> Vec<bool> {
    let blocks: Vec<_> = (0..8).map(|_| malloc(1_000_000)).collect();
    // SAFETY: each is live and non-null.
    let served = blocks.iter().map(|&p| unsafe { is_mmapped(p) }).collect();
    blocks.into_iter().for_each(free);
    served
}

#[test]
fn a_megabyte_is_mmapped_whatever_the_process_did_before() {
    pin_thresholds();

    // History 1: large blocks mmapped and freed. Unpinned, each free raises
    // the mmap threshold to the block's size (here to 16 MB), and 1 MB
    // comes from the heap from then on.
    for size in [1 << 20, 4 << 20, 16 << 20] {
        free(malloc(size));
    }
    let served = megabytes_mmapped();
    assert!(
        served.iter().all(|&m| m),
        "1 MB blocks mmapped after large ones were freed: {served:?} (the thresholds moved)"
    );

    // History 2: 16 MB of small blocks freed below a live one, as a
    // workload's worker leaves its arena: a free chunk that serves 1 MB
    // from the heap even with the thresholds pinned.
    let small: Vec<_> = (0..4000).map(|_| malloc(4000)).collect();
    // Below the mmap threshold and larger than any hole a smaller block
    // left: it comes from the top, above the small blocks.
    let live = malloc(100_000);
    small.into_iter().for_each(free);
    let served = megabytes_mmapped();
    assert!(
        served.iter().any(|&m| !m),
        "the freed small blocks served no 1 MB block ({served:?}): this test's history no longer makes the state it is about"
    );
    // What microops does before timing: hold what could serve 1 MB.
    let held = Held::take(1_000_000);
    assert!(!held.is_empty());
    let served = megabytes_mmapped();
    assert!(
        served.iter().all(|&m| m),
        "1 MB blocks mmapped with the arena's {} reusable ones held: {served:?}",
        held.len()
    );
    drop(held);
    free(live);
}
