//! One malloc state for every measurement of malloc.
//!
//! glibc serves a request from memory it already holds (its heap's top, or
//! a freed chunk) when one is large enough, and otherwise, above its mmap
//! threshold, by a fresh mmap. What it holds depends on what ran before:
//! - It raises its mmap threshold the first time a program frees a block it
//!   had mmapped (up to 32 MiB), and its trim threshold with it, so from
//!   then on such blocks come from the heap and stay there when freed.
//! - A worker thread takes over the arena of an earlier thread, with what
//!   that thread's small blocks left free below a live one.
//!
//! An agent runs many workloads in one process, so microops' `malloc_1m`
//! timed an mmap (~3.7 µs here) or a split of held memory (~20 ns) by what
//! had run before it in that environment, and the comparison called one
//! environment "faster" for its history. Two things make it the state a
//! fresh process is in, where 1 MB is mmapped:
//! - [`pin_thresholds`] fixes the thresholds at glibc's own defaults
//!   (128 KiB), first thing in `main` and again before microops runs;
//! - [`Held::take`] allocates, untimed, every block of the size that the
//!   arena could serve from what it holds, and keeps them until the timed
//!   blocks are freed, so each timed one is mmapped.
//!
//! The binary links glibc statically (crt-static), so the chunk layout read
//! by [`is_mmapped`] is the one built in, not whatever the machine has.

use std::hint::black_box;

/// glibc's default mmap and trim thresholds.
pub const THRESHOLD: i32 = 128 * 1024;

/// The most blocks [`Held::take`] holds: 4096 MB of 1 MB blocks, more
/// than an arena of this program holds free.
pub const MAX_HELD: usize = 4096;

/// Fixes malloc's mmap and trim thresholds at [`THRESHOLD`] (which also
/// turns glibc's dynamic adjustment off).
pub fn pin_thresholds() {
    // SAFETY: mallopt only sets malloc's tunables; a refusal (returns 0)
    // leaves them as they were, which is no worse than not calling it.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, THRESHOLD);
    }
}

/// Whether glibc served the live block `p` by its own mmap: bit 1
/// (IS_MMAPPED) of the chunk's size word, the usize just before `p`.
///
/// # Safety
/// `p` must be a live, non-null block from this process's `malloc`.
pub unsafe fn is_mmapped(p: *mut libc::c_void) -> bool {
    // SAFETY: the caller's promise: glibc keeps the size word right before
    // every block it hands out.
    let size_word = unsafe { std::ptr::read_volatile((black_box(p) as *const usize).sub(1)) };
    size_word & 2 != 0
}

/// Blocks of one size taken from what malloc already held; freed on drop.
pub struct Held {
    blocks: Vec<*mut libc::c_void>,
}

impl Held {
    /// Allocates blocks of `size` until malloc mmaps one (freed at once) or
    /// fails, at most [`MAX_HELD`]; from then until the drop, with the
    /// thresholds pinned and nothing freed, every further block of `size`
    /// is mmapped.
    pub fn take(size: usize) -> Held {
        let mut blocks = Vec::new();
        while blocks.len() < MAX_HELD {
            // SAFETY: plain malloc; each block is freed here or on drop.
            let p = unsafe { libc::malloc(black_box(size)) };
            if p.is_null() {
                break;
            }
            // SAFETY: p is live and non-null, from malloc just above.
            if unsafe { is_mmapped(p) } {
                // SAFETY: from malloc above, not kept.
                unsafe { libc::free(p) };
                break;
            }
            blocks.push(p);
        }
        Held { blocks }
    }

    /// How many blocks it holds.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        for &p in &self.blocks {
            // SAFETY: each came from malloc in take and is freed once.
            unsafe { libc::free(p) };
        }
    }
}
