//! The validated configuration of one fileio run, from its options.

use super::*;

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
    pub(super) fn parse(word: &str) -> Option<Mode> {
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

    pub(super) fn sequential(self) -> bool {
        matches!(self, Mode::SeqWr | Mode::SeqRewr | Mode::SeqRd)
    }

    pub(super) fn writes(self) -> bool {
        !matches!(self, Mode::SeqRd | Mode::RndRd)
    }

    pub(super) fn describe(self) -> &'static str {
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
    /// dsync was asked for (O_SYNC includes O_DSYNC's bit: the flags
    /// alone cannot tell "sync" from "sync,dsync").
    pub dsync: bool,
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
        let mut dsync = false;
        let mut direct = false;
        for flag in v
            .text("file-extra-flags")
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
        {
            match flag {
                "sync" => open_flags |= libc::O_SYNC,
                "dsync" => {
                    open_flags |= libc::O_DSYNC;
                    dsync = true;
                }
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
            dsync,
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

    pub(super) fn path(&self, i: usize) -> PathBuf {
        self.dir.join(files::file_name(i))
    }

    pub(super) fn total(&self) -> u64 {
        self.file_size * self.num as u64
    }

    /// Bytes per sequential request (blocks merged up to `--file-merged-requests`).
    pub(super) fn request_size(&self) -> u64 {
        if self.merged > 0 && self.mode.is_some_and(Mode::sequential) {
            (self.block * self.merged).min(self.file_size)
        } else {
            self.block
        }
    }
}
