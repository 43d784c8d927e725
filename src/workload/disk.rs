//! `disk`: bonnie++'s block tests and file-creation tests. Sequential block
//! write (put_block), rewrite (read, dirty, seek back, write), block read
//! (get_block), random seeks from several threads with a tenth of the blocks
//! dirtied and written back, and create/stat/delete of many small files in
//! sequential and random order. Every operation is timed: max latency as
//! bonnie++ reports it, plus p50 and p99. bonnie++ makes one pass over a
//! file of twice the RAM; `--disk-time` instead repeats whole passes (and
//! seeks) until that much time has passed, so one small file gives a rate
//! over long enough to be steady on a fast disk without taking minutes on
//! an emulated one.

pub mod bonnie;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::core::observer::Observer;
use crate::core::options::{CliError, OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::core::signals;
use crate::core::units::Bytes;
use crate::engine::{new_histogram, EngineOptions, FastRng, Histogram};
use crate::workload::fileio::data::{AlignedBuf, DataSource};
use crate::workload::fileio::files;
use crate::workload::{Category, Measurement, MetricDef, Needs, Workload, WorkloadDef};

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "disk-dir",
        OptKind::Text,
        "",
        "directory to test in (default: the current directory)",
    ),
    OptionSpec::new(
        "disk-file-size",
        OptKind::Size { min: 1 << 20 },
        "",
        "size of the test file (default: twice the RAM this environment sees, as bonnie++)",
    ),
    OptionSpec::new(
        "disk-chunk-size",
        OptKind::Size { min: 512 },
        "8K",
        "size of each block read or written",
    ),
    OptionSpec::new(
        "disk-direct",
        OptKind::Bool,
        "off",
        "O_DIRECT for the block tests, so a file smaller than RAM is still honest",
    ),
    OptionSpec::new(
        "disk-sync",
        OptKind::Bool,
        "off",
        "fsync after every write (what bonnie++'s -b promises)",
    ),
    OptionSpec::new(
        "disk-seeks",
        OptKind::Int {
            min: 0,
            max: 1 << 32,
        },
        "8000",
        "random seeks in total (0 = skip the seek test)",
    ),
    OptionSpec::new(
        "disk-time",
        OptKind::Float {
            min: 0.0,
            max: 86400.0,
        },
        "0",
        "seconds each block test and the seek test go on for, repeating passes over the file (at least one); 0 = one pass, as bonnie++",
    ),
    OptionSpec::new(
        "disk-seek-procs",
        OptKind::Int { min: 1, max: 256 },
        "3",
        "threads seeking at the same time",
    ),
    OptionSpec::new(
        "disk-files",
        OptKind::Int {
            min: 0,
            max: 1 << 20,
        },
        "16",
        "thousands (×1024) of files for the create/stat/delete tests (0 = skip)",
    ),
];

pub const DEF: WorkloadDef = WorkloadDef {
    name: "disk",
    summary: "Disk: bonnie++-style block write, rewrite, read, seeks and file create/stat/delete",
    options: OPTIONS,
    engine: &[],
    needs: Needs {
        workdir: Some("disk-dir"),
        prepare: true,
        network: None,
        root: false,
    },
    metrics: &[
        MetricDef::new(
            "put_block_kib_per_sec",
            "KiB/s",
            true,
            true,
            Some(Category::DiskIo),
        ),
        MetricDef::new(
            "rewrite_kib_per_sec",
            "KiB/s",
            true,
            true,
            Some(Category::DiskIo),
        ),
        MetricDef::new(
            "get_block_kib_per_sec",
            "KiB/s",
            true,
            true,
            Some(Category::DiskIo),
        ),
        MetricDef::new("seeks_per_sec", "seeks/s", true, true, None),
        MetricDef::new(
            "get_block_latency_max_ms",
            "ms",
            false,
            false,
            Some(Category::DiskLatency),
        ),
        MetricDef::new("*_latency_max_ms", "ms", false, false, None),
        MetricDef::new("*_latency_p50_ms", "ms", false, false, None),
        MetricDef::new("*_latency_p99_ms", "ms", false, false, None),
        // bonnie++'s file create/stat/delete rates: its second table, not
        // seed 001's disk category (the block tests), and with few files
        // a phase of milliseconds: shown in the detail, not the headline.
        MetricDef::new("*_per_sec", "files/s", true, false, None),
    ],
    area: crate::workload::Area::Disk,
    sysbench: None,
    build,
};

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(DiskWorkload::new(values)?))
}

pub struct DiskWorkload {
    dir: PathBuf,
    file_size: u64,
    chunk: u64,
    direct: bool,
    sync: bool,
    seeks: u64,
    seek_procs: u64,
    files: u64,
    /// Each block test and the seek test go on until this much time has
    /// passed (zero: one pass).
    min_time: Duration,
}

/// RAM as this environment sees it: the cgroup limit counts.
fn visible_ram() -> u64 {
    let env = crate::sys::fingerprint::take("", "");
    match env.cgroup.memory_limit {
        Some(limit) => limit.min(env.memory_bytes),
        None => env.memory_bytes,
    }
}

impl DiskWorkload {
    pub fn new(values: &Values) -> Result<DiskWorkload> {
        let chunk = values.int("disk-chunk-size");
        let direct = values.flag("disk-direct");
        if direct && !chunk.is_multiple_of(4096) {
            return Err(CliError::InvalidValue {
                name: "disk-chunk-size".into(),
                value: Bytes(chunk).to_string(),
                allowed: "a multiple of 4K with --disk-direct".into(),
            }
            .into());
        }
        let file_size = if values.was_given("disk-file-size") {
            values.int("disk-file-size")
        } else {
            2 * visible_ram()
        };
        let file_size = file_size - file_size % chunk;
        if file_size < chunk {
            return Err(CliError::InvalidValue {
                name: "disk-file-size".into(),
                value: Bytes(file_size).to_string(),
                allowed: "at least one --disk-chunk-size".into(),
            }
            .into());
        }
        Ok(DiskWorkload {
            dir: files::test_dir(values.text("disk-dir"), "disk-dir")?,
            file_size,
            chunk,
            direct,
            sync: values.flag("disk-sync"),
            seeks: values.int("disk-seeks"),
            seek_procs: values.int("disk-seek-procs"),
            files: values.int("disk-files"),
            min_time: Duration::from_secs_f64(values.float("disk-time")),
        })
    }
}

/// One test's figures.
struct Phase {
    name: &'static str,
    /// KiB/s for block tests, operations/s for the rest.
    rate: f64,
    unit: &'static str,
    latency: Histogram,
    /// Whole passes over the file (block tests only).
    passes: Option<u64>,
}

/// Removes a directory tree when dropped.
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl DiskWorkload {
    fn block_phase(
        &self,
        name: &'static str,
        file: &File,
        path: &Path,
        mut step: impl FnMut(u64, &mut AlignedBuf) -> std::io::Result<()>,
    ) -> Result<Phase> {
        let mut buf = AlignedBuf::zeroed(self.chunk as usize);
        let mut hist = new_histogram();
        let writes = name != "get_block";
        let started = Instant::now();
        // Time inside the passes: dropping the cache between them is not
        // the disk's work.
        let mut timed = Duration::ZERO;
        let mut passes = 0u64;
        // Whole passes, until --disk-time has passed: a pass over a small
        // file on a fast disk is milliseconds, and a rate over milliseconds
        // is mostly noise.
        while passes == 0 || started.elapsed() < self.min_time {
            if !writes {
                // Reads must come from the disk, not the cache the writes
                // (or the previous pass) filled.
                drop_cache(file);
            }
            let pass = Instant::now();
            let mut offset = 0;
            while offset < self.file_size {
                signals::check()?;
                let t0 = Instant::now();
                step(offset, &mut buf).map_err(|e| files::io_context(e, name, path))?;
                if self.sync && writes {
                    file.sync_data()
                        .map_err(|e| files::io_context(e, "fsync", path))?;
                }
                hist.saturating_record(t0.elapsed().as_nanos() as u64);
                offset += self.chunk;
            }
            if writes {
                // The data is on the disk when the pass ends, not in the cache.
                let t0 = Instant::now();
                file.sync_data()
                    .map_err(|e| files::io_context(e, "fsync", path))?;
                hist.saturating_record(t0.elapsed().as_nanos() as u64);
            }
            timed += pass.elapsed();
            passes += 1;
        }
        let secs = timed.as_secs_f64().max(1e-9);
        Ok(Phase {
            name,
            rate: (passes * self.file_size) as f64 / 1024.0 / secs,
            unit: "KiB/s",
            latency: hist,
            passes: Some(passes),
        })
    }

    fn seek_phase(&self, path: &Path) -> Result<Phase> {
        let chunks = self.file_size / self.chunk;
        let per_thread = self.seeks.div_ceil(self.seek_procs);
        let started = Instant::now();
        let results: Vec<Result<Histogram>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..self.seek_procs)
                .map(|t| {
                    scope.spawn(move || -> Result<Histogram> {
                        let flags = if self.direct { libc::O_DIRECT } else { 0 };
                        let file = files::open(path, false, true, flags)
                            .map_err(|e| files::io_context(e, "opening", path))?;
                        let mut rng = FastRng::new(0x5eec + t);
                        let mut buf = AlignedBuf::zeroed(self.chunk as usize);
                        let mut hist = new_histogram();
                        let mut done = 0;
                        while done < per_thread || started.elapsed() < self.min_time {
                            done += 1;
                            signals::check()?;
                            let offset = rng.below(chunks) * self.chunk;
                            let t0 = Instant::now();
                            file.read_exact_at(buf.as_mut_slice(), offset)
                                .map_err(|e| files::io_context(e, "seek read", path))?;
                            if rng.below(10) == 0 {
                                buf.as_mut_slice()[0] ^= 0x55;
                                file.write_all_at(buf.as_slice(), offset)
                                    .map_err(|e| files::io_context(e, "seek write", path))?;
                            }
                            hist.saturating_record(t0.elapsed().as_nanos() as u64);
                        }
                        Ok(hist)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| bail!("a seek thread panicked")))
                .collect()
        });
        let mut hist = new_histogram();
        for r in results {
            hist.add(&r?).expect("same bounds");
        }
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        Ok(Phase {
            name: "seeks",
            rate: hist.len() as f64 / secs,
            unit: "seeks/s",
            latency: hist,
            passes: None,
        })
    }

    /// Create, stat and delete `n` empty files, in name order or shuffled.
    fn file_phases(&self, random: bool) -> Result<Vec<Phase>> {
        let n = self.files * 1024;
        let dir = self.dir.join(format!(
            "virtperf-disk-files.{}.{}",
            std::process::id(),
            if random { "rnd" } else { "seq" }
        ));
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let _remove = RemoveDir(dir.clone());
        let mut names: Vec<String> = (0..n).map(|i| format!("{i:010}")).collect();
        let mut rng = FastRng::new(0xf11e5);
        let shuffle = |names: &mut Vec<String>, rng: &mut FastRng| {
            for i in (1..names.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                names.swap(i, j);
            }
        };
        if random {
            shuffle(&mut names, &mut rng);
        }
        let prefix = if random { "rnd" } else { "seq" };
        let mut phases = Vec::new();
        for (step, label) in [(0, "create"), (1, "stat"), (2, "delete")] {
            if random && step > 0 {
                shuffle(&mut names, &mut rng);
            }
            let mut hist = new_histogram();
            let started = Instant::now();
            for name in &names {
                signals::check()?;
                let path = dir.join(name);
                let t0 = Instant::now();
                match step {
                    0 => {
                        files::open(&path, true, true, libc::O_EXCL)
                            .map_err(|e| files::io_context(e, "creating", &path))?;
                    }
                    1 => {
                        std::fs::symlink_metadata(&path)
                            .map_err(|e| files::io_context(e, "stat", &path))?;
                    }
                    _ => std::fs::remove_file(&path)
                        .map_err(|e| files::io_context(e, "deleting", &path))?,
                }
                hist.saturating_record(t0.elapsed().as_nanos() as u64);
            }
            let secs = started.elapsed().as_secs_f64().max(1e-9);
            phases.push(Phase {
                name: match (prefix, label) {
                    ("seq", "create") => "seq_create",
                    ("seq", "stat") => "seq_stat",
                    ("seq", _) => "seq_delete",
                    (_, "create") => "rnd_create",
                    (_, "stat") => "rnd_stat",
                    _ => "rnd_delete",
                },
                rate: n as f64 / secs,
                unit: "files/s",
                latency: hist,
                passes: None,
            });
        }
        Ok(phases)
    }
}

enum Leftover {
    File,
    Dir,
}

/// Whether `name` is one this workload makes, for a process that no longer
/// runs (a live one is still using it).
fn leftover(name: &str) -> Option<Leftover> {
    let gone = |pid: &str| {
        !pid.is_empty()
            && pid.chars().all(|c| c.is_ascii_digit())
            && !Path::new("/proc").join(pid).exists()
    };
    if let Some(pid) = name.strip_prefix("virtperf-disk.") {
        return gone(pid).then_some(Leftover::File);
    }
    let rest = name.strip_prefix("virtperf-disk-files.")?;
    let (pid, kind) = rest.split_once('.')?;
    (gone(pid) && matches!(kind, "seq" | "rnd")).then_some(Leftover::Dir)
}

/// Removes the numbered empty files of a files-phase directory, then the
/// directory if nothing else is in it; false if it was kept.
fn remove_files_dir(dir: &Path) -> Result<bool> {
    let mut others = false;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta = entry.path().symlink_metadata()?;
        let ours = name.len() == 10
            && name.chars().all(|c| c.is_ascii_digit())
            && meta.is_file()
            && meta.len() == 0;
        if ours {
            std::fs::remove_file(entry.path())?;
        } else {
            others = true;
        }
    }
    if others {
        return Ok(false);
    }
    std::fs::remove_dir(dir)?;
    Ok(true)
}

impl Workload for DiskWorkload {
    fn files_dir(&self) -> Option<&Path> {
        Some(&self.dir)
    }

    /// Removes what an interrupted run of a process that is gone left
    /// behind: only names this workload makes (`virtperf-disk.PID`,
    /// `virtperf-disk-files.PID.seq|rnd` holding only its numbered empty
    /// files), never anything else in the directory.
    fn cleanup(&mut self, obs: &dyn Observer) -> Result<()> {
        let mut removed = 0;
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = entry.path().symlink_metadata()?;
            match leftover(&name) {
                Some(Leftover::File) if meta.is_file() => {
                    std::fs::remove_file(entry.path())?;
                    removed += 1;
                }
                Some(Leftover::Dir) if meta.is_dir() => {
                    if remove_files_dir(&entry.path())? {
                        removed += 1;
                    } else {
                        obs.note(&format!(
                            "kept {}: it holds files this workload does not make",
                            entry.path().display()
                        ));
                    }
                }
                _ => {}
            }
        }
        obs.chatter(&format!(
            "Removed {removed} leftover disk test files and directories"
        ));
        Ok(())
    }

    fn run(&mut self, _engine: &EngineOptions) -> Result<Measurement> {
        let started = Instant::now();
        let files_room = self.files * 1024 * 4096;
        files::check_space(&self.dir, self.file_size + files_room, "disk-file-size")?;
        let path = self
            .dir
            .join(format!("virtperf-disk.{}", std::process::id()));
        let mut guard = files::RemoveOnDrop::new();
        let flags = libc::O_EXCL | if self.direct { libc::O_DIRECT } else { 0 };
        let file = files::open(&path, true, true, flags).map_err(|e| {
            if self.direct && e.raw_os_error() == Some(libc::EINVAL) {
                anyhow::anyhow!(
                    "creating {}: the file system there does not support O_DIRECT (ramfs, and tmpfs before Linux 6.6, do not): use --disk-direct=off or a --disk-dir on a disk",
                    path.display()
                )
            } else {
                files::io_context(e, "creating", &path)
            }
        })?;
        guard.track(path.clone());
        let mut source = DataSource::new(self.chunk as usize, true, 0xb0);
        let mut phases = Vec::new();
        let chunk = self.chunk as usize;
        phases.push(self.block_phase("put_block", &file, &path, |off, _| {
            file.write_all_at(source.block(off, chunk, false), off)
        })?);
        phases.push(self.block_phase("rewrite", &file, &path, |off, buf| {
            file.read_exact_at(buf.as_mut_slice(), off)?;
            buf.as_mut_slice()[0] ^= 0x55;
            file.write_all_at(buf.as_slice(), off)
        })?);
        phases.push(self.block_phase("get_block", &file, &path, |off, buf| {
            file.read_exact_at(buf.as_mut_slice(), off)
        })?);
        if self.seeks > 0 {
            phases.push(self.seek_phase(&path)?);
        }
        drop(file);
        std::fs::remove_file(&path).ok();
        if self.files > 0 {
            phases.extend(self.file_phases(false)?);
            phases.extend(self.file_phases(true)?);
        }
        Ok(self.measurement(&phases, started.elapsed()))
    }
}

/// Asks the kernel to forget the file's cached pages (advice only).
fn drop_cache(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: advice on an open descriptor; failure is harmless.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

impl DiskWorkload {
    fn measurement(&self, phases: &[Phase], elapsed: Duration) -> Measurement {
        let mut m = Measurement {
            duration: elapsed,
            ..Measurement::default()
        };
        let mut details = serde_json::Map::new();
        let mut text = format!(
            "File {} in {}, chunk {}{}{}{}\n\n{:<12}{:>16}{:>12}{:>12}{:>12}\n",
            Bytes(self.file_size),
            self.dir.display(),
            Bytes(self.chunk),
            if self.direct { ", O_DIRECT" } else { "" },
            if self.sync {
                ", fsync after every write"
            } else {
                ""
            },
            if self.min_time.is_zero() {
                String::new()
            } else {
                format!(
                    ", each block and seek test repeated for {:.2} s",
                    self.min_time.as_secs_f64()
                )
            },
            "test",
            "rate",
            "p50 ms",
            "p99 ms",
            "max ms"
        );
        for p in phases {
            let metric_name = match p.unit {
                "KiB/s" => format!("{}_kib_per_sec", p.name),
                "seeks/s" => "seeks_per_sec".to_string(),
                _ => format!("{}_per_sec", p.name),
            };
            m.metrics
                .push(Metric::new(&metric_name, p.rate, p.unit, true));
            let ms = |q: f64| p.latency.value_at_quantile(q) as f64 / 1e6;
            let max = p.latency.max() as f64 / 1e6;
            for (suffix, v) in [("max", max), ("p50", ms(0.5)), ("p99", ms(0.99))] {
                m.metrics.push(Metric::new(
                    &format!("{}_latency_{suffix}_ms", p.name),
                    v,
                    "ms",
                    false,
                ));
            }
            m.events += p.latency.len();
            let mut detail = serde_json::json!({"rate": p.rate, "unit": p.unit, "ops": p.latency.len(),
                "latency_ms": {"p50": ms(0.5), "p99": ms(0.99), "max": max}});
            if let Some(passes) = p.passes {
                detail["passes"] = passes.into();
            }
            details.insert(p.name.to_string(), detail);
            text.push_str(&format!(
                "{:<12}{:>10.0} {:<6}{:>11.3}{:>12.3}{:>12.3}\n",
                p.name,
                p.rate,
                p.unit,
                ms(0.5),
                ms(0.99),
                max
            ));
        }
        details.insert("file_bytes".into(), serde_json::json!(self.file_size));
        m.details = serde_json::Value::Object(details);
        m.text = text;
        m
    }
}
