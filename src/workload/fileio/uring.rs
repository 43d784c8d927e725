//! `--file-io-mode=async` through io_uring: each thread keeps up to
//! `--file-async-backlog` requests in flight, and each operation's latency
//! runs from its submission to its completion.

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use io_uring::{opcode, types, IoUring};

use super::data::{AlignedBuf, DataSource};
use super::{files, verify_read, Op, OpStats, Request, Shared};
use crate::engine::{FastRng, Worker};

struct Slot {
    buf: AlignedBuf,
    req: Option<Request>,
    submitted: Instant,
}

pub struct UringWorker {
    shared: Arc<Shared>,
    tid: usize,
    ring: IoUring,
    slots: Vec<Slot>,
    free: Vec<usize>,
    rng: FastRng,
    source: DataSource,
    pub stats: OpStats,
}

impl UringWorker {
    pub fn new(shared: Arc<Shared>, tid: usize, req_size: usize) -> Result<UringWorker> {
        let backlog = shared.cfg.backlog;
        if shared.cfg.fsync_all {
            bail!("--file-fsync-all is not supported with --file-io-mode=async: use --file-io-mode=sync");
        }
        let ring = IoUring::new(backlog.next_power_of_two() as u32).map_err(|e| {
            anyhow!(
                "--file-io-mode=async needs io_uring, which this kernel or container does not allow ({e}): use --file-io-mode=sync"
            )
        })?;
        let random = shared.cfg.random_data;
        Ok(UringWorker {
            ring,
            slots: (0..backlog)
                .map(|_| Slot {
                    buf: AlignedBuf::zeroed(req_size),
                    req: None,
                    submitted: Instant::now(),
                })
                .collect(),
            free: (0..backlog).rev().collect(),
            rng: FastRng::new(0xa51c + tid as u64),
            source: DataSource::new(req_size, random, 0xb10c + tid as u64),
            stats: OpStats::new(),
            shared,
            tid,
        })
    }

    fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Waits for at least `n` completions and accounts for every one.
    fn reap(&mut self, n: usize) -> Result<()> {
        if n > 0 {
            self.ring.submit_and_wait(n)?;
        }
        let done: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let now = Instant::now();
        for (idx, res) in done {
            let idx = idx as usize;
            let slot = &mut self.slots[idx];
            let req = slot.req.take().expect("a completed slot had a request");
            let path = self.shared.cfg.path(req.file);
            if res < 0 {
                let err = std::io::Error::from_raw_os_error(-res);
                return Err(files::io_context(err, "asynchronous I/O on", &path));
            }
            if req.op != Op::Fsync && res as u64 != req.size {
                bail!(
                    "asynchronous I/O on {}: {} of {} bytes at offset {}",
                    path.display(),
                    res,
                    req.size,
                    req.pos
                );
            }
            if req.op == Op::Read && self.shared.cfg.validate {
                verify_read(
                    &self.shared.cfg,
                    req.file,
                    req.pos,
                    &slot.buf.as_slice()[..req.size as usize],
                )?;
            }
            let ns = (now - slot.submitted).as_nanos() as u64;
            self.stats.record(req.op, req.size, ns);
            self.free.push(idx);
        }
        Ok(())
    }
}

impl Worker for UringWorker {
    fn event(&mut self) -> Result<bool> {
        if self.free.is_empty() {
            self.reap(1)?;
        }
        let shared = Arc::clone(&self.shared);
        let req = shared.next(self.tid, self.stats.reads, self.stats.writes, &mut self.rng);
        let idx = self.free.pop().expect("a free slot");
        let fd = types::Fd(shared.files[req.file].file.as_raw_fd());
        let len = req.size as usize;
        let slot = &mut self.slots[idx];
        let entry = match req.op {
            Op::Read => opcode::Read::new(fd, slot.buf.as_mut_slice().as_mut_ptr(), len as u32)
                .offset(req.pos)
                .build(),
            Op::Write => {
                if shared.cfg.validate {
                    for start in (0..len).step_by(shared.cfg.block as usize) {
                        let end = (start + shared.cfg.block as usize).min(len);
                        let block = self.source.block(req.pos + start as u64, end - start, true);
                        slot.buf.as_mut_slice()[start..end].copy_from_slice(block);
                    }
                } else {
                    let block = self.source.block(req.pos, len, false);
                    slot.buf.as_mut_slice()[..len].copy_from_slice(block);
                }
                opcode::Write::new(fd, slot.buf.as_slice().as_ptr(), len as u32)
                    .offset(req.pos)
                    .build()
            }
            Op::Fsync => {
                let flags = if shared.cfg.fdatasync {
                    types::FsyncFlags::DATASYNC
                } else {
                    types::FsyncFlags::empty()
                };
                opcode::Fsync::new(fd).flags(flags).build()
            }
        };
        slot.req = Some(req);
        slot.submitted = Instant::now();
        // SAFETY: the buffer lives in `slots` until the completion is reaped.
        unsafe {
            self.ring
                .submission()
                .push(&entry.user_data(idx as u64))
                .map_err(|_| anyhow!("io_uring submission queue full"))?;
        }
        self.ring.submit()?;
        // Pick up whatever has completed, without waiting.
        self.reap(0)?;
        Ok(true)
    }

    fn finish(&mut self) -> Result<()> {
        while self.in_flight() > 0 {
            self.reap(1)?;
        }
        let cfg = &self.shared.cfg;
        if cfg.fsync_end && self.shared.mode.writes() {
            for file in 0..cfg.num {
                let t0 = Instant::now();
                self.shared.fsync(file)?;
                self.stats.record_end_fsync(t0.elapsed().as_nanos() as u64);
            }
        }
        Ok(())
    }
}

impl Drop for UringWorker {
    fn drop(&mut self) {
        // Buffers must outlive the kernel's use of them.
        while self.in_flight() > 0 {
            if self.reap(1).is_err() {
                break;
            }
        }
    }
}
