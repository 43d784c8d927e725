//! The fileio option table: sysbench 1.0.20's names and defaults.

use crate::core::options::{OptKind, OptionSpec};

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
