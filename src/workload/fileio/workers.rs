//! The test files and the threads that do I/O on them: creating and
//! opening the files, the synchronous and mmap worker, and `--validate`'s
//! block checks.

use super::*;

/// Creates (or extends) the test files, block by block, each fsynced at the
/// end as sysbench does so cache flushes do not land in the run.
/// Creates the test files (or extends them to size), telling `creating`
/// each file's number as it starts on it; returns the bytes written and
/// the seconds it took.
pub fn create_files(cfg: &Config, creating: &mut dyn FnMut(usize, bool)) -> Result<(u64, f64)> {
    let existing: u64 = (0..cfg.num)
        .map(|i| {
            std::fs::symlink_metadata(cfg.path(i))
                .map(|m| m.len().min(cfg.file_size))
                .unwrap_or(0)
        })
        .sum();
    files::check_space(&cfg.dir, cfg.total() - existing, "file-total-size")?;
    let started = Instant::now();
    let mut guard = files::RemoveOnDrop::new();
    let mut source = DataSource::new(cfg.block as usize, cfg.random_data, 0x9e37);
    let mut written = 0u64;
    for i in 0..cfg.num {
        let path = cfg.path(i);
        // A file already at its size is reused as it is.
        let full = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.file_type().is_file() && m.len() >= cfg.file_size);
        creating(i, full);
        if full {
            continue;
        }
        // A file that was there before (an earlier prepare being extended)
        // is not ours to remove if this one fails.
        let existed = std::fs::symlink_metadata(&path).is_ok();
        let file = files::open(&path, true, true, cfg.open_flags)
            .map_err(|e| files::io_context(e, "cannot create", &path))?;
        if !existed {
            guard.track(path.clone());
        }
        let mut offset = file.metadata()?.len();
        offset -= offset % cfg.block;
        while offset < cfg.file_size {
            signals::check()?;
            let len = cfg.block.min(cfg.file_size - offset) as usize;
            let buf = source.block(offset, len, cfg.validate);
            pwrite_all(&file, buf, offset).map_err(|e| files::io_context(e, "writing", &path))?;
            offset += len as u64;
            written += len as u64;
        }
        file.sync_all()
            .map_err(|e| files::io_context(e, "fsync", &path))?;
    }
    guard.disarm();
    Ok((written, started.elapsed().as_secs_f64()))
}

pub(super) fn pwrite_all(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(buf, offset)
}

/// One open test file, and its mapping in mmap mode.
pub struct TestFile {
    pub file: File,
    pub map: Option<(*mut u8, usize)>,
}

// SAFETY: the mapping is shared memory of the file; threads write disjoint
// or racing blocks exactly as with pwrite, and it is unmapped on drop.
unsafe impl Send for TestFile {}
// SAFETY: as for Send: shared use writes blocks as pwrite would.
unsafe impl Sync for TestFile {}

impl Drop for TestFile {
    fn drop(&mut self) {
        if let Some((ptr, len)) = self.map {
            // SAFETY: mapped in `open_files` with this length.
            unsafe { libc::munmap(ptr.cast(), len) };
        }
    }
}

pub(super) fn open_files(cfg: &Config, mode: Mode) -> Result<(Vec<TestFile>, files::RemoveOnDrop)> {
    let mut guard = files::RemoveOnDrop::new();
    let mut out = Vec::with_capacity(cfg.num);
    if mode == Mode::SeqWr {
        files::remove_all(&cfg.dir)?;
        files::check_space(&cfg.dir, cfg.total(), "file-total-size")?;
    }
    for i in 0..cfg.num {
        let path = cfg.path(i);
        let create = mode == Mode::SeqWr;
        let file = files::open(&path, create, mode.writes(), cfg.open_flags).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                anyhow::Error::from(SysbenchFatal {
                    ours: format!(
                        "cannot open {}: run 'virtperf fileio prepare' with the same --file-num, --file-total-size and --file-dir first",
                        path.display()
                    ),
                    fatal: format!(
                        "Cannot open file '{}' errno = 2 (No such file or directory)",
                        files::file_name(i)
                    ),
                    hint: Some("Did you forget to run the prepare step?".into()),
                })
            } else {
                files::io_context(e, "cannot open", &path)
            }
        })?;
        if create {
            guard.track(path.clone());
        } else {
            let len = file.metadata()?.len();
            if len < cfg.file_size {
                return Err(SysbenchFatal {
                    ours: format!(
                        "{} is {} but at least {} is expected: did 'prepare' run with different --file-total-size or --file-num values?",
                        path.display(),
                        Bytes(len),
                        Bytes(cfg.file_size)
                    ),
                    fatal: format!(
                        "Size of file '{}' is {}, but at least {} is expected.",
                        files::file_name(i),
                        Bytes(len),
                        Bytes(cfg.file_size)
                    ),
                    hint: Some(
                        "Did you run 'prepare' with different --file-total-size or --file-num values?"
                            .into(),
                    ),
                }
                .into());
            }
        }
        let map = if cfg.io == IoMode::Mmap {
            if create {
                file.set_len(cfg.file_size)?;
            }
            let prot = if mode.writes() {
                libc::PROT_READ | libc::PROT_WRITE
            } else {
                libc::PROT_READ
            };
            // SAFETY: mapping a regular file of at least file_size bytes.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    cfg.file_size as usize,
                    prot,
                    libc::MAP_SHARED,
                    file.as_raw_fd(),
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                bail!(
                    "mmap {}: {}",
                    path.display(),
                    std::io::Error::last_os_error()
                );
            }
            Some((p as *mut u8, cfg.file_size as usize))
        } else {
            None
        };
        out.push(TestFile { file, map });
    }
    Ok((out, guard))
}

/// Checks every block of a read buffer; names the file and offset.
pub fn verify_read(cfg: &Config, file: usize, pos: u64, buf: &[u8]) -> Result<()> {
    for (i, chunk) in buf.chunks(cfg.block as usize).enumerate() {
        let offset = pos + (i as u64) * cfg.block;
        if let Err(why) = data::verify(chunk, offset) {
            bail!(
                "validation failed: {} at offset {offset}: {}",
                cfg.path(file).display(),
                match why {
                    data::Corruption::Checksum =>
                        "checksum mismatch (the block was corrupted)".to_string(),
                    data::Corruption::Offset { stored } =>
                        format!("the block belongs at offset {stored}"),
                }
            );
        }
    }
    Ok(())
}

pub(super) struct SyncWorker {
    pub(super) shared: Arc<Shared>,
    pub(super) tid: usize,
    pub(super) rng: FastRng,
    pub(super) buf: AlignedBuf,
    pub(super) source: DataSource,
    pub(super) stats: OpStats,
}

impl SyncWorker {
    pub(super) fn write_buf(&mut self, req: &Request) -> &[u8] {
        let cfg = &self.shared.cfg;
        if cfg.validate {
            // Stamp every block of a (merged) request.
            let len = req.size as usize;
            let blocks = len.div_ceil(cfg.block as usize);
            let dst = &mut self.buf.as_mut_slice()[..len];
            for b in 0..blocks {
                let start = b * cfg.block as usize;
                let end = (start + cfg.block as usize).min(len);
                let block = self.source.block(req.pos + start as u64, end - start, true);
                dst[start..end].copy_from_slice(block);
            }
            &self.buf.as_slice()[..len]
        } else {
            self.source.block(req.pos, req.size as usize, false)
        }
    }
}

impl Worker for SyncWorker {
    fn event(&mut self) -> Result<bool> {
        use std::os::unix::fs::FileExt;
        let shared = Arc::clone(&self.shared);
        let req = shared.next(self.tid, self.stats.reads, self.stats.writes, &mut self.rng);
        let t0 = Instant::now();
        let f = &shared.files[req.file];
        let len = req.size as usize;
        match req.op {
            Op::Read => {
                if let Some((ptr, _)) = f.map {
                    // SAFETY: pos + len ≤ file_size, inside the mapping.
                    let src = unsafe { std::slice::from_raw_parts(ptr.add(req.pos as usize), len) };
                    self.buf.as_mut_slice()[..len].copy_from_slice(src);
                } else {
                    f.file
                        .read_exact_at(&mut self.buf.as_mut_slice()[..len], req.pos)
                        .map_err(|e| files::io_context(e, "reading", &shared.cfg.path(req.file)))?;
                }
                if shared.cfg.validate {
                    verify_read(&shared.cfg, req.file, req.pos, &self.buf.as_slice()[..len])?;
                }
            }
            Op::Write => {
                let data = self.write_buf(&req).as_ptr();
                // SAFETY: `data` points at len bytes owned by this worker.
                let data = unsafe { std::slice::from_raw_parts(data, len) };
                if let Some((ptr, _)) = f.map {
                    // SAFETY: inside the mapping, as above.
                    unsafe {
                        std::ptr::copy_nonoverlapping(data.as_ptr(), ptr.add(req.pos as usize), len)
                    };
                } else {
                    pwrite_all(&f.file, data, req.pos)
                        .map_err(|e| files::io_context(e, "writing", &shared.cfg.path(req.file)))?;
                }
                if shared.cfg.fsync_all {
                    shared.fsync(req.file)?;
                }
            }
            Op::Fsync => {
                if !shared.cfg.fsync_all {
                    shared.fsync(req.file)?;
                }
            }
        }
        self.stats
            .record(req.op, req.size, t0.elapsed().as_nanos() as u64);
        Ok(true)
    }

    fn finish(&mut self) -> Result<()> {
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
