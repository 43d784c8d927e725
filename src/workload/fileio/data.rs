//! What file workloads write: random, incompressible blocks by default (zero
//! blocks flatter compressing and deduplicating file systems), taken from a
//! per-thread pool so producing them costs nothing per write, and — with
//! `--validate` — stamped with their offset and a checksum that reads verify.

use crate::engine::FastRng;

/// Bytes at the end of a validated block: offset (8) + checksum (8).
pub const STAMP: usize = 16;
/// Alignment for O_DIRECT buffers.
pub const ALIGN: usize = 4096;

/// A heap buffer aligned for O_DIRECT.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is owned and only reached through &/&mut.
unsafe impl Send for AlignedBuf {}
// SAFETY: as for Send: shared access is through &, which only reads.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    pub fn zeroed(len: usize) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(len.max(1), ALIGN).expect("layout");
        // SAFETY: a non-zero-sized layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory allocating {len} bytes");
        AlignedBuf { ptr, len }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes for our lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len.max(1), ALIGN).expect("layout");
        // SAFETY: allocated in `zeroed` with the same layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) };
    }
}

/// Where written blocks come from.
pub struct DataSource {
    pool: AlignedBuf,
    block: usize,
    rng: FastRng,
    /// A copy for stamped (validated) or zero blocks.
    scratch: AlignedBuf,
    random: bool,
    counter: u64,
}

/// The pool holds this many distinct aligned windows beyond one block.
const POOL_WINDOWS: usize = 256;

impl DataSource {
    pub fn new(block: usize, random: bool, seed: u64) -> DataSource {
        let mut rng = FastRng::new(seed);
        let pool_len = if random {
            block + POOL_WINDOWS * ALIGN
        } else {
            0
        };
        let mut pool = AlignedBuf::zeroed(pool_len);
        for chunk in pool.as_mut_slice().chunks_mut(8) {
            let word = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        DataSource {
            pool,
            block,
            rng,
            scratch: AlignedBuf::zeroed(block),
            random,
            counter: seed << 40,
        }
    }

    /// A block to write at `offset`, of `len` bytes (≤ the block size).
    /// Random data is a fresh window of the pool with a unique counter in
    /// its first word, so no two blocks are alike.
    pub fn block(&mut self, offset: u64, len: usize, validate: bool) -> &[u8] {
        if !self.random && !validate {
            return &self.scratch.as_slice()[..len];
        }
        if validate {
            self.fill_scratch(len);
            stamp(&mut self.scratch.as_mut_slice()[..len], offset);
            return &self.scratch.as_slice()[..len];
        }
        let start = self.rng.below(POOL_WINDOWS as u64) as usize * ALIGN;
        self.counter += 1;
        let window = &mut self.pool.as_mut_slice()[start..start + len];
        window[..8.min(len)].copy_from_slice(&self.counter.to_le_bytes()[..8.min(len)]);
        &self.pool.as_slice()[start..start + len]
    }

    fn fill_scratch(&mut self, len: usize) {
        if self.random {
            let start = self.rng.below(POOL_WINDOWS as u64) as usize * ALIGN;
            let src = &self.pool.as_slice()[start..start + len];
            self.scratch.as_mut_slice()[..len].copy_from_slice(src);
            self.counter += 1;
            self.scratch.as_mut_slice()[..8.min(len)]
                .copy_from_slice(&self.counter.to_le_bytes()[..8.min(len)]);
        } else {
            self.scratch.as_mut_slice()[..len].fill(0);
        }
    }

    pub fn block_size(&self) -> usize {
        self.block
    }
}

/// FNV-1a over the bytes: cheap, and any flipped byte changes it.
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Writes the block's offset and the checksum of everything before them
/// into its last 16 bytes.
pub fn stamp(block: &mut [u8], offset: u64) {
    let n = block.len();
    assert!(
        n >= STAMP,
        "a validated block must be at least {STAMP} bytes"
    );
    block[n - STAMP..n - 8].copy_from_slice(&offset.to_le_bytes());
    let sum = checksum(&block[..n - 8]);
    block[n - 8..].copy_from_slice(&sum.to_le_bytes());
}

/// Why a block read back is not what was written.
#[derive(Debug, PartialEq, Eq)]
pub enum Corruption {
    Offset { stored: u64 },
    Checksum,
}

pub fn verify(block: &[u8], offset: u64) -> Result<(), Corruption> {
    let n = block.len();
    let stored_offset = u64::from_le_bytes(block[n - STAMP..n - 8].try_into().expect("8 bytes"));
    let stored_sum = u64::from_le_bytes(block[n - 8..].try_into().expect("8 bytes"));
    if stored_sum != checksum(&block[..n - 8]) {
        return Err(Corruption::Checksum);
    }
    if stored_offset != offset {
        return Err(Corruption::Offset {
            stored: stored_offset,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamped_blocks_verify_and_catch_flips() {
        let mut src = DataSource::new(4096, true, 1);
        let mut block = src.block(8192, 4096, true).to_vec();
        assert_eq!(verify(&block, 8192), Ok(()));
        assert_eq!(
            verify(&block, 4096),
            Err(Corruption::Offset { stored: 8192 })
        );
        block[100] ^= 1;
        assert_eq!(verify(&block, 8192), Err(Corruption::Checksum));
    }

    #[test]
    fn random_blocks_differ_and_do_not_compress_to_nothing() {
        let mut src = DataSource::new(4096, true, 2);
        let a = src.block(0, 4096, false).to_vec();
        let b = src.block(4096, 4096, false).to_vec();
        assert_ne!(a, b);
        let distinct: std::collections::HashSet<_> = a.chunks(8).collect();
        assert!(distinct.len() > 500, "{}", distinct.len());
        let mut zero = DataSource::new(4096, false, 3);
        assert!(zero.block(0, 4096, false).iter().all(|&x| x == 0));
    }

    #[test]
    fn buffers_are_aligned_for_direct_io() {
        let b = AlignedBuf::zeroed(16384);
        assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0);
        let mut src = DataSource::new(16384, true, 4);
        let blk = src.block(0, 16384, false);
        assert_eq!(blk.as_ptr() as usize % ALIGN, 0);
    }
}
