//! sysbench's request generator: a shared sequential position or uniform
//! random blocks, the read/write choice by ratio, and periodic fsync of
//! every file.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    Fsync,
}

#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub op: Op,
    pub file: usize,
    pub pos: u64,
    pub size: u64,
}

/// sysbench's request generator state, shared by all threads.
pub(super) struct Generator {
    pub(super) position: u64,
    pub(super) current_file: usize,
    pub(super) fsynced_file: usize,
    pub(super) req_performed: u64,
    pub(super) is_dirty: bool,
    /// Block each thread is working on, so validated random tests never
    /// have two threads on one block.
    pub(super) busy: Vec<Option<(usize, u64)>>,
}

pub struct Shared {
    pub(super) cfg: Config,
    pub(super) mode: Mode,
    pub(super) files: Vec<TestFile>,
    pub(super) gen: Mutex<Generator>,
}

impl Shared {
    /// The next request, exactly as sysbench 1.0's file_next_event.
    pub(super) fn next(&self, tid: usize, reads: u64, writes: u64, rng: &mut FastRng) -> Request {
        let cfg = &self.cfg;
        let mut g = self.gen.lock().expect("generator");
        let write = match self.mode {
            Mode::SeqWr | Mode::SeqRewr | Mode::RndWr => true,
            Mode::SeqRd | Mode::RndRd => false,
            Mode::RndRw => (reads as f64 + 1.0) / (writes as f64 + 1.0) >= cfg.rw_ratio,
        };
        let fsync_due = cfg.fsync_freq != 0
            && g.is_dirty
            && g.req_performed.is_multiple_of(cfg.fsync_freq)
            && (!self.mode.sequential() || write);
        if fsync_due {
            let file = g.fsynced_file;
            g.fsynced_file += 1;
            if g.fsynced_file == cfg.num {
                g.fsynced_file = 0;
                g.is_dirty = false;
            }
            return Request {
                op: Op::Fsync,
                file,
                pos: 0,
                size: 0,
            };
        }
        g.req_performed += 1;
        if write {
            g.is_dirty = true;
        }
        let op = if write { Op::Write } else { Op::Read };
        if self.mode.sequential() {
            if g.current_file == cfg.num {
                g.position = 0;
                g.current_file = 0;
            }
            let req = Request {
                op,
                file: g.current_file,
                pos: g.position,
                size: cfg.request_size().min(cfg.file_size - g.position),
            };
            g.position += req.size;
            if g.position == cfg.file_size {
                g.current_file += 1;
                g.position = 0;
            }
            return req;
        }
        let total = cfg.total();
        loop {
            let mut pos = (rng.unit() * total as f64) as u64;
            pos -= pos % cfg.block;
            let file = ((pos / cfg.file_size) as usize).min(cfg.num - 1);
            let pos = pos % cfg.file_size;
            if cfg.validate
                && g.busy
                    .iter()
                    .enumerate()
                    .any(|(t, b)| t != tid && *b == Some((file, pos)))
            {
                continue;
            }
            g.busy[tid] = Some((file, pos));
            return Request {
                op,
                file,
                pos,
                size: cfg.block.min(cfg.file_size - pos),
            };
        }
    }

    pub(super) fn fsync(&self, file: usize) -> Result<()> {
        let f = &self.files[file];
        let r = if let Some((ptr, len)) = f.map {
            // SAFETY: the whole mapping, still mapped.
            if unsafe { libc::msync(ptr.cast(), len, libc::MS_SYNC) } == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        } else if self.cfg.fdatasync {
            f.file.sync_data()
        } else {
            f.file.sync_all()
        };
        r.map_err(|e| files::io_context(e, "fsync", &self.cfg.path(file)))
    }
}
