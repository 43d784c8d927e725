//! `fileio`: sysbench 1.0.20's file I/O test with its option names,
//! defaults and request pattern (shared sequential position or uniform
//! random blocks, read/write choice by per-thread ratio, periodic fsync of
//! every file), with random incompressible data by default, per-operation
//! latency, `--validate` checksums, io_uring for `--file-io-mode=async`, and
//! test files that never outlive an interrupted or failed run.

pub mod data;
pub mod files;
mod uring;

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, bail, Result};

use crate::core::observer::Observer;
use crate::core::options::{CliError, OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::core::signals;
use crate::core::units::Bytes;
use crate::engine::{self, new_histogram, EngineOptions, FastRng, Histogram, Worker};
use crate::workload::{Measurement, MetricDef, Needs, Workload, WorkloadDef};
use data::{AlignedBuf, DataSource};

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "file-num",
        OptKind::Int {
            min: 1,
            max: 1 << 20,
        },
        "128",
        "number of files to create",
    ),
    OptionSpec::new(
        "file-block-size",
        OptKind::Size { min: 16 },
        "16384",
        "block size to use in all IO operations",
    ),
    OptionSpec::new(
        "file-total-size",
        OptKind::Size { min: 1 },
        "2G",
        "total size of files to create",
    ),
    OptionSpec::new(
        "file-test-mode",
        OptKind::Choice(&["seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"]),
        "",
        "test mode (required for run)",
    ),
    OptionSpec::new(
        "file-io-mode",
        OptKind::Choice(&["sync", "async", "mmap"]),
        "sync",
        "file operations mode (async uses io_uring; latency is submission to completion)",
    ),
    OptionSpec::new(
        "file-async-backlog",
        OptKind::Int { min: 1, max: 4096 },
        "128",
        "number of asynchronous operations to queue per thread",
    ),
    OptionSpec::new(
        "file-extra-flags",
        OptKind::Text,
        "",
        "comma-separated extra flags to open files with: sync, dsync, direct",
    ),
    OptionSpec::new(
        "file-fsync-freq",
        OptKind::Int {
            min: 0,
            max: u32::MAX as u64,
        },
        "100",
        "do fsync() after this number of requests (0 - don't use fsync())",
    ),
    OptionSpec::new(
        "file-fsync-all",
        OptKind::Bool,
        "off",
        "do fsync() after each write operation",
    ),
    OptionSpec::new(
        "file-fsync-end",
        OptKind::Bool,
        "on",
        "do fsync() at the end of test",
    ),
    OptionSpec::new(
        "file-fsync-mode",
        OptKind::Choice(&["fsync", "fdatasync"]),
        "fsync",
        "which method to use for synchronization",
    ),
    OptionSpec::new(
        "file-merged-requests",
        OptKind::Int { min: 0, max: 1024 },
        "0",
        "merge at most this number of IO requests if possible (0 - don't merge)",
    ),
    OptionSpec::new(
        "file-rw-ratio",
        OptKind::Float { min: 0.0, max: 1e9 },
        "1.5",
        "reads/writes ratio for combined test",
    ),
    OptionSpec::new(
        "validate",
        OptKind::Bool,
        "off",
        "store an offset and checksum in every block and check them on read",
    ),
    OptionSpec::new(
        "file-dir",
        OptKind::Text,
        "",
        "directory the test files live in (default: the current directory)",
    ),
    OptionSpec::new(
        "file-data",
        OptKind::Choice(&["random", "zero"]),
        "random",
        "random: incompressible blocks; zero: sysbench's zero-filled blocks",
    ),
];

pub const DEF: WorkloadDef = WorkloadDef {
    name: "fileio",
    summary: "File I/O: sysbench fileio modes on test files (prepare, run, cleanup)",
    options: OPTIONS,
    engine: engine::ALL,
    needs: Needs {
        workdir: Some("file-dir"),
        prepare: true,
        network: false,
        root: false,
    },
    metrics: &[
        MetricDef::new("reads_per_sec", "ops/s", true, true, None),
        MetricDef::new("writes_per_sec", "ops/s", true, true, None),
        MetricDef::new("fsyncs_per_sec", "ops/s", true, false, None),
        MetricDef::new("read_mib_per_sec", "MiB/s", true, false, None),
        MetricDef::new("written_mib_per_sec", "MiB/s", true, false, None),
    ],
    build,
};

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(FileioWorkload::new(values)?))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    SeqWr,
    SeqRewr,
    SeqRd,
    RndRd,
    RndWr,
    RndRw,
}

impl Mode {
    fn parse(word: &str) -> Option<Mode> {
        Some(match word {
            "seqwr" => Mode::SeqWr,
            "seqrewr" => Mode::SeqRewr,
            "seqrd" => Mode::SeqRd,
            "rndrd" => Mode::RndRd,
            "rndwr" => Mode::RndWr,
            "rndrw" => Mode::RndRw,
            _ => return None,
        })
    }

    fn sequential(self) -> bool {
        matches!(self, Mode::SeqWr | Mode::SeqRewr | Mode::SeqRd)
    }

    fn writes(self) -> bool {
        !matches!(self, Mode::SeqRd | Mode::RndRd)
    }

    fn describe(self) -> &'static str {
        match self {
            Mode::SeqWr => "sequential write (creation)",
            Mode::SeqRewr => "sequential rewrite",
            Mode::SeqRd => "sequential read",
            Mode::RndRd => "random read",
            Mode::RndWr => "random write",
            Mode::RndRw => "random r/w",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoMode {
    Sync,
    Async,
    Mmap,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub dir: PathBuf,
    pub num: usize,
    pub block: u64,
    pub file_size: u64,
    pub mode: Option<Mode>,
    pub io: IoMode,
    pub backlog: usize,
    pub open_flags: i32,
    pub direct: bool,
    pub fsync_freq: u64,
    pub fsync_all: bool,
    pub fsync_end: bool,
    pub fdatasync: bool,
    pub merged: u64,
    pub rw_ratio: f64,
    pub validate: bool,
    pub random_data: bool,
}

impl Config {
    pub fn from_values(v: &Values) -> Result<Config> {
        let invalid = |name: &str, value: String, allowed: &str| -> anyhow::Error {
            CliError::InvalidValue {
                name: name.into(),
                value,
                allowed: allowed.into(),
            }
            .into()
        };
        let num = v.int("file-num") as usize;
        let block = v.int("file-block-size");
        let total = v.int("file-total-size");
        let file_size = total / num as u64;
        if file_size < block {
            return Err(invalid(
                "file-total-size",
                Bytes(total).to_string(),
                &format!(
                    "at least --file-num × --file-block-size ({} × {})",
                    num,
                    Bytes(block)
                ),
            ));
        }
        let mut open_flags = 0;
        let mut direct = false;
        for flag in v
            .text("file-extra-flags")
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
        {
            match flag {
                "sync" => open_flags |= libc::O_SYNC,
                "dsync" => open_flags |= libc::O_DSYNC,
                "direct" => {
                    open_flags |= libc::O_DIRECT;
                    direct = true;
                }
                other => {
                    return Err(invalid(
                        "file-extra-flags",
                        other.to_string(),
                        "a comma-separated list of sync, dsync, direct",
                    ))
                }
            }
        }
        if direct && !block.is_multiple_of(512) {
            return Err(invalid(
                "file-block-size",
                Bytes(block).to_string(),
                "a multiple of 512 bytes with --file-extra-flags=direct",
            ));
        }
        let io = match v.text("file-io-mode") {
            "async" => IoMode::Async,
            "mmap" => IoMode::Mmap,
            _ => IoMode::Sync,
        };
        if io == IoMode::Mmap && direct {
            return Err(invalid(
                "file-io-mode",
                "mmap".into(),
                "sync or async with --file-extra-flags=direct (mapped files bypass O_DIRECT)",
            ));
        }
        Ok(Config {
            dir: files::test_dir(v.text("file-dir"), "file-dir")?,
            num,
            block,
            // Files hold whole blocks, as sysbench's prepare writes them.
            file_size: file_size - file_size % block,
            mode: Mode::parse(v.text("file-test-mode")),
            io,
            backlog: v.int("file-async-backlog") as usize,
            open_flags,
            direct,
            fsync_freq: v.int("file-fsync-freq"),
            fsync_all: v.flag("file-fsync-all"),
            fsync_end: v.flag("file-fsync-end"),
            fdatasync: v.text("file-fsync-mode") == "fdatasync",
            merged: v.int("file-merged-requests"),
            rw_ratio: v.float("file-rw-ratio"),
            validate: v.flag("validate"),
            random_data: v.text("file-data") == "random",
        })
    }

    fn path(&self, i: usize) -> PathBuf {
        self.dir.join(files::file_name(i))
    }

    fn total(&self) -> u64 {
        self.file_size * self.num as u64
    }

    /// Bytes per sequential request (blocks merged up to `--file-merged-requests`).
    fn request_size(&self) -> u64 {
        if self.merged > 0 && self.mode.is_some_and(Mode::sequential) {
            (self.block * self.merged).min(self.file_size)
        } else {
            self.block
        }
    }
}

pub struct FileioWorkload {
    cfg: Config,
}

impl FileioWorkload {
    pub fn new(values: &Values) -> Result<FileioWorkload> {
        Ok(FileioWorkload {
            cfg: Config::from_values(values)?,
        })
    }
}

/// Creates (or extends) the test files, block by block, each fsynced at the
/// end as sysbench does so cache flushes do not land in the run.
pub fn create_files(cfg: &Config) -> Result<(u64, f64)> {
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
        let file = files::open(&path, true, true, cfg.open_flags)
            .map_err(|e| files::io_context(e, "cannot create", &path))?;
        guard.track(path.clone());
        let mut offset = file.metadata()?.len();
        offset -= offset % cfg.block;
        while offset < cfg.file_size {
            if signals::interrupted() {
                return Err(signals::Interrupted.into());
            }
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

fn pwrite_all(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(buf, offset)
}

impl Workload for FileioWorkload {
    fn prepare(&mut self, obs: &dyn Observer) -> Result<()> {
        let cfg = &self.cfg;
        if cfg.mode == Some(Mode::SeqWr) {
            // The sequential write test creates its files itself.
            files::remove_all(&cfg.dir)?;
            return Ok(());
        }
        obs.chatter(&format!(
            "{} files, {}KiB each, {}MiB total\nCreating files for the test...",
            cfg.num,
            cfg.file_size / 1024,
            cfg.total() >> 20
        ));
        let (written, secs) = create_files(cfg)?;
        obs.chatter(&format!(
            "{written} bytes written in {secs:.2} seconds ({:.2} MiB/sec).",
            written as f64 / (1024.0 * 1024.0) / secs.max(1e-9)
        ));
        Ok(())
    }

    fn cleanup(&mut self, obs: &dyn Observer) -> Result<()> {
        let n = files::remove_all(&self.cfg.dir)?;
        obs.chatter(&format!("Removing test files... {n} removed"));
        Ok(())
    }

    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        let mode = self.cfg.mode.ok_or_else(|| {
            anyhow::Error::from(CliError::Usage(
                "--file-test-mode is required for run: choose seqwr, seqrewr, seqrd, rndrd, rndwr or rndrw".into(),
            ))
        })?;
        let result = run_test(&self.cfg, mode, engine);
        if matches!(&result, Err(e) if e.downcast_ref::<signals::Interrupted>().is_some()) {
            // Ctrl-C during a run leaves no test files behind.
            let _ = files::remove_all(&self.cfg.dir);
        }
        result
    }
}

/// One open test file, and its mapping in mmap mode.
pub struct TestFile {
    pub file: File,
    pub map: Option<(*mut u8, usize)>,
}

// SAFETY: the mapping is shared memory of the file; threads write disjoint
// or racing blocks exactly as with pwrite, and it is unmapped on drop.
unsafe impl Send for TestFile {}
unsafe impl Sync for TestFile {}

impl Drop for TestFile {
    fn drop(&mut self) {
        if let Some((ptr, len)) = self.map {
            // SAFETY: mapped in `open_files` with this length.
            unsafe { libc::munmap(ptr.cast(), len) };
        }
    }
}

fn open_files(cfg: &Config, mode: Mode) -> Result<(Vec<TestFile>, files::RemoveOnDrop)> {
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
                anyhow!(
                    "cannot open {}: run 'virtperf fileio prepare' with the same --file-num, --file-total-size and --file-dir first",
                    path.display()
                )
            } else {
                files::io_context(e, "cannot open", &path)
            }
        })?;
        if create {
            guard.track(path.clone());
        } else {
            let len = file.metadata()?.len();
            if len < cfg.file_size {
                bail!(
                    "{} is {} but at least {} is expected: did 'prepare' run with different --file-total-size or --file-num values?",
                    path.display(),
                    Bytes(len),
                    Bytes(cfg.file_size)
                );
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
struct Generator {
    position: u64,
    current_file: usize,
    fsynced_file: usize,
    req_performed: u64,
    is_dirty: bool,
    /// Block each thread is working on, so validated random tests never
    /// have two threads on one block.
    busy: Vec<Option<(usize, u64)>>,
}

pub struct Shared {
    cfg: Config,
    mode: Mode,
    files: Vec<TestFile>,
    gen: Mutex<Generator>,
}

impl Shared {
    /// The next request, exactly as sysbench 1.0's file_next_event.
    fn next(&self, tid: usize, reads: u64, writes: u64, rng: &mut FastRng) -> Request {
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

    fn fsync(&self, file: usize) -> Result<()> {
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

/// Per-operation counts and latencies of one thread.
pub struct OpStats {
    pub reads: u64,
    pub writes: u64,
    pub fsyncs: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub read_hist: Histogram,
    pub write_hist: Histogram,
    pub fsync_hist: Histogram,
}

impl OpStats {
    fn new() -> OpStats {
        OpStats {
            reads: 0,
            writes: 0,
            fsyncs: 0,
            bytes_read: 0,
            bytes_written: 0,
            read_hist: new_histogram(),
            write_hist: new_histogram(),
            fsync_hist: new_histogram(),
        }
    }

    pub fn record(&mut self, op: Op, bytes: u64, ns: u64) {
        let ns = ns.max(1);
        match op {
            Op::Read => {
                self.reads += 1;
                self.bytes_read += bytes;
                self.read_hist.saturating_record(ns);
            }
            Op::Write => {
                self.writes += 1;
                self.bytes_written += bytes;
                self.write_hist.saturating_record(ns);
            }
            Op::Fsync => {
                self.fsyncs += 1;
                self.fsync_hist.saturating_record(ns);
            }
        }
    }

    fn merge(&mut self, other: &OpStats) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.fsyncs += other.fsyncs;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.read_hist.add(&other.read_hist).expect("same bounds");
        self.write_hist.add(&other.write_hist).expect("same bounds");
        self.fsync_hist.add(&other.fsync_hist).expect("same bounds");
    }
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

struct SyncWorker {
    shared: Arc<Shared>,
    tid: usize,
    rng: FastRng,
    buf: AlignedBuf,
    source: DataSource,
    stats: OpStats,
}

impl SyncWorker {
    fn write_buf(&mut self, req: &Request) -> &[u8] {
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
                self.stats
                    .record(Op::Fsync, 0, t0.elapsed().as_nanos() as u64);
            }
        }
        Ok(())
    }
}

fn run_test(cfg: &Config, mode: Mode, engine: &EngineOptions) -> Result<Measurement> {
    let (test_files, guard) = open_files(cfg, mode)?;
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        mode,
        files: test_files,
        gen: Mutex::new(Generator {
            position: 0,
            current_file: 0,
            fsynced_file: 0,
            req_performed: 0,
            is_dirty: false,
            busy: vec![None; engine.threads],
        }),
    });
    let req_size = cfg.request_size() as usize;
    let (outcome, stats) = if cfg.io == IoMode::Async {
        let workers = (0..engine.threads)
            .map(|tid| uring::UringWorker::new(Arc::clone(&shared), tid, req_size))
            .collect::<Result<Vec<_>>>()?;
        let (outcome, workers) = engine::run(engine, workers)?;
        let stats = workers
            .into_iter()
            .map(|mut w| std::mem::replace(&mut w.stats, OpStats::new()))
            .collect::<Vec<_>>();
        (outcome, stats)
    } else {
        let workers = (0..engine.threads)
            .map(|tid| SyncWorker {
                shared: Arc::clone(&shared),
                tid,
                rng: FastRng::new(0xf11e + tid as u64),
                buf: AlignedBuf::zeroed(req_size),
                source: DataSource::new(req_size, cfg.random_data, 0xda7a + tid as u64),
                stats: OpStats::new(),
            })
            .collect();
        let (outcome, workers) = engine::run(engine, workers)?;
        (
            outcome,
            workers.into_iter().map(|w| w.stats).collect::<Vec<_>>(),
        )
    };
    // Files created by seqwr stay for later runs, like sysbench's.
    guard.disarm();
    let mut total = OpStats::new();
    for s in &stats {
        total.merge(s);
    }
    Ok(measurement(cfg, mode, engine, &outcome, &total))
}

fn measurement(
    cfg: &Config,
    mode: Mode,
    engine: &EngineOptions,
    outcome: &engine::Outcome,
    t: &OpStats,
) -> Measurement {
    let secs = outcome.duration.as_secs_f64().max(1e-9);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut m = Measurement::from_outcome(outcome, engine.percentile);
    m.events = t.reads + t.writes + t.fsyncs;
    if cfg.io == IoMode::Async {
        // Engine events are submissions; the honest latency is each
        // operation's submission-to-completion time.
        let mut all = new_histogram();
        for h in [&t.read_hist, &t.write_hist, &t.fsync_hist] {
            all.add(h).expect("same bounds");
        }
        m.latency = Some(engine::summarize(&all, engine.percentile));
        m.histogram = Some(all);
    }
    m.metrics = vec![
        Metric::new("reads_per_sec", t.reads as f64 / secs, "ops/s", true),
        Metric::new("writes_per_sec", t.writes as f64 / secs, "ops/s", true),
        Metric::new("fsyncs_per_sec", t.fsyncs as f64 / secs, "ops/s", true),
        Metric::new("read_mib_per_sec", mib(t.bytes_read) / secs, "MiB/s", true),
        Metric::new(
            "written_mib_per_sec",
            mib(t.bytes_written) / secs,
            "MiB/s",
            true,
        ),
    ];
    let per_op = |h: &Histogram| {
        if h.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::to_value(engine::summarize(h, engine.percentile)).unwrap_or_default()
        }
    };
    m.details = serde_json::json!({
        "latency_ms_by_op": {
            "read": per_op(&t.read_hist),
            "write": per_op(&t.write_hist),
            "fsync": per_op(&t.fsync_hist),
        },
        "reads": t.reads, "writes": t.writes, "fsyncs": t.fsyncs,
        "bytes_read": t.bytes_read, "bytes_written": t.bytes_written,
    });
    let p = engine.percentile;
    let lat_line = |name: &str, h: &Histogram| {
        if h.is_empty() {
            String::new()
        } else {
            let s = engine::summarize(h, p);
            format!(
                "  {name:<6} latency (ms): min {:.3}  avg {:.3}  p50 {:.3}  p{} {:.3}  p99 {:.3}  max {:.3}\n",
                s.min,
                s.avg,
                s.p50,
                p,
                s.selected.map(|x| x.1).unwrap_or(s.p95),
                s.p99,
                s.max
            )
        }
    };
    m.text = format!(
        "Extra file open flags: {}\n{} files, {} each\n{} total file size\nBlock size {}\n{}Using {} I/O mode{}\nDoing {} test\n\nFile operations:\n    reads/s:                      {:.2}\n    writes/s:                     {:.2}\n    fsyncs/s:                     {:.2}\n\nThroughput:\n    read, MiB/s:                  {:.2}\n    written, MiB/s:               {:.2}\n\nLatency by operation:\n{}{}{}",
        flags_text(cfg),
        cfg.num,
        Bytes(cfg.file_size),
        Bytes(cfg.total()),
        Bytes(cfg.block),
        if cfg.fsync_freq > 0 {
            format!("Periodic FSYNC enabled, calling fsync() each {} requests.\n", cfg.fsync_freq)
        } else {
            String::new()
        },
        match cfg.io {
            IoMode::Sync => "synchronous",
            IoMode::Async => "asynchronous (io_uring)",
            IoMode::Mmap => "mmaped",
        },
        if cfg.validate { ", with checksum validation" } else { "" },
        mode.describe(),
        t.reads as f64 / secs,
        t.writes as f64 / secs,
        t.fsyncs as f64 / secs,
        mib(t.bytes_read) / secs,
        mib(t.bytes_written) / secs,
        lat_line("read", &t.read_hist),
        lat_line("write", &t.write_hist),
        lat_line("fsync", &t.fsync_hist),
    );
    m
}

fn flags_text(cfg: &Config) -> String {
    let mut f = Vec::new();
    if cfg.open_flags & libc::O_SYNC == libc::O_SYNC {
        f.push("sync");
    } else if cfg.open_flags & libc::O_DSYNC != 0 {
        f.push("dsync");
    }
    if cfg.direct {
        f.push("direct");
    }
    if f.is_empty() {
        "(none)".into()
    } else {
        f.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::options;

    fn cfg(args: &[&str]) -> Config {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (v, _) = options::parse(&[crate::engine::OPTIONS, OPTIONS], &args, "fileio").unwrap();
        Config::from_values(&v).unwrap()
    }

    fn shared(c: Config, mode: Mode, threads: usize) -> Shared {
        Shared {
            cfg: c,
            mode,
            files: Vec::new(),
            gen: Mutex::new(Generator {
                position: 0,
                current_file: 0,
                fsynced_file: 0,
                req_performed: 0,
                is_dirty: false,
                busy: vec![None; threads],
            }),
        }
    }

    #[test]
    fn random_rw_follows_the_ratio_and_fsyncs_every_file_periodically() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("--file-dir={}", dir.path().display());
        let c = cfg(&[
            &d,
            "--file-num=4",
            "--file-total-size=4M",
            "--file-fsync-freq=10",
        ]);
        let s = shared(c, Mode::RndRw, 1);
        let mut rng = FastRng::new(1);
        let (mut r, mut w, mut f) = (0u64, 0u64, 0u64);
        let mut fsync_files = Vec::new();
        for _ in 0..1000 {
            let req = s.next(0, r, w, &mut rng);
            match req.op {
                Op::Read => r += 1,
                Op::Write => w += 1,
                Op::Fsync => {
                    f += 1;
                    fsync_files.push(req.file);
                }
            }
            assert!(req.pos + req.size <= 1 << 20);
            assert_eq!(req.pos % 16384, 0);
        }
        let ratio = r as f64 / w as f64;
        assert!((ratio - 1.5).abs() < 0.05, "{ratio}");
        // Every 10 requests, all four files are fsynced in turn.
        assert_eq!(&fsync_files[..4], &[0, 1, 2, 3]);
        // 4 fsyncs per 10 requests: 1000 events hold about 286 fsyncs.
        assert!((270..=300).contains(&f), "{f}");
    }

    #[test]
    fn sequential_requests_sweep_the_files_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("--file-dir={}", dir.path().display());
        let c = cfg(&[
            &d,
            "--file-num=2",
            "--file-total-size=64K",
            "--file-block-size=16K",
            "--file-merged-requests=0",
        ]);
        let s = shared(c, Mode::SeqRd, 1);
        let mut rng = FastRng::new(1);
        let got: Vec<(usize, u64)> = (0..5)
            .map(|_| {
                let r = s.next(0, 0, 0, &mut rng);
                (r.file, r.pos)
            })
            .collect();
        assert_eq!(got, vec![(0, 0), (0, 16384), (1, 0), (1, 16384), (0, 0)]);
    }

    #[test]
    fn bad_combinations_are_refused() {
        let args: Vec<String> = ["--file-num=100", "--file-total-size=1M"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (v, _) = options::parse(&[crate::engine::OPTIONS, OPTIONS], &args, "fileio").unwrap();
        let err = Config::from_values(&v).unwrap_err().to_string();
        assert!(err.contains("--file-total-size"), "{err}");
        let args: Vec<String> = ["--file-extra-flags=direct", "--file-block-size=1000"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (v, _) = options::parse(&[crate::engine::OPTIONS, OPTIONS], &args, "fileio").unwrap();
        let err = Config::from_values(&v).unwrap_err().to_string();
        assert!(err.contains("multiple of 512"), "{err}");
    }
}
