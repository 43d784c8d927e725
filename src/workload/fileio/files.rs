//! The test files and their safety rules: names fixed inside the test
//! directory (never followed through symlinks), a free-space check before
//! anything is written, and a guard that removes what was created when a
//! run is interrupted or fails.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::core::units::Bytes;

/// `test_file.N`, as sysbench names them.
pub fn file_name(i: usize) -> String {
    format!("test_file.{i}")
}

/// Whether a directory entry is one of ours (from any `--file-num`).
pub fn is_test_file(name: &str) -> bool {
    name.strip_prefix("test_file.")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Checks that `dir` is an existing directory, and returns it.
pub fn test_dir(dir: &str, option: &str) -> Result<PathBuf> {
    let path = if dir.is_empty() {
        PathBuf::from(".")
    } else {
        PathBuf::from(dir)
    };
    let meta = std::fs::metadata(&path)
        .with_context(|| format!("--{option}={}: cannot use this directory", path.display()))?;
    if !meta.is_dir() {
        bail!("--{option}={}: not a directory", path.display());
    }
    Ok(path)
}

/// Bytes available to us on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Result<u64> {
    let c = CString::new(dir.as_os_str().as_bytes()).context("directory name has a NUL byte")?;
    // SAFETY: an all-zero statvfs (plain integers) is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is NUL-terminated; statvfs writes into the struct we pass.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        bail!(
            "statvfs {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Refuses to start when `needed` bytes will not fit, giving the numbers.
pub fn check_space(dir: &Path, needed: u64, option: &str) -> Result<()> {
    let free = free_bytes(dir)?;
    if needed > free {
        bail!(
            "--{option} needs {:.1} MiB more in {} but only {:.1} MiB is free: choose a smaller --{option} or another directory",
            Bytes(needed).as_mib(),
            dir.display(),
            Bytes(free).as_mib()
        );
    }
    Ok(())
}

/// Opens (and with `create`, creates) a test file without following a
/// symlink, so nothing outside the test directory is ever written; a file
/// with other hard links (another name for someone's data) or that is not a
/// regular file is refused.
pub fn open(path: &Path, create: bool, write: bool, extra: i32) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut o = std::fs::OpenOptions::new();
    o.read(true)
        .write(write)
        .create(create)
        .custom_flags(libc::O_NOFOLLOW | extra)
        .mode(0o600);
    let file = o.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(
            "not a regular file, so not a test file of ours: remove it or choose another directory",
        ));
    }
    if meta.nlink() > 1 {
        return Err(std::io::Error::other(format!(
            "has {} hard links, so writing it would change another file: remove it or choose another directory",
            meta.nlink()
        )));
    }
    Ok(file)
}

/// Removes every test file in `dir`; returns how many.
pub fn remove_all(dir: &Path) -> Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        if is_test_file(&name.to_string_lossy()) {
            std::fs::remove_file(entry.path())
                .with_context(|| format!("removing {}", entry.path().display()))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes the files it tracks when dropped, unless disarmed: an error or
/// Ctrl-C midway leaves nothing behind.
pub struct RemoveOnDrop {
    paths: Vec<PathBuf>,
    armed: bool,
}

impl RemoveOnDrop {
    pub fn new() -> RemoveOnDrop {
        RemoveOnDrop {
            paths: Vec::new(),
            armed: true,
        }
    }

    pub fn track(&mut self, path: PathBuf) {
        self.paths.push(path);
    }

    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Default for RemoveOnDrop {
    fn default() -> Self {
        RemoveOnDrop::new()
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if self.armed {
            for p in &self.paths {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// Adds the file and the fix to an I/O error; ENOSPC gets its own words.
pub fn io_context(err: std::io::Error, what: &str, path: &Path) -> anyhow::Error {
    if err.raw_os_error() == Some(libc::ENOSPC) {
        anyhow::anyhow!(
            "{what} {}: the file system is full (no space or no inodes left); the partial test files were removed",
            path.display()
        )
    } else {
        anyhow::anyhow!("{what} {}: {err}", path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_only_its_own_files() {
        assert!(is_test_file("test_file.0"));
        assert!(is_test_file("test_file.127"));
        assert!(!is_test_file("test_file."));
        assert!(!is_test_file("test_file.1.bak"));
        assert!(!is_test_file("my_data"));
    }

    #[test]
    fn guard_removes_unless_disarmed() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("test_file.0");
        std::fs::write(&a, b"x").unwrap();
        {
            let mut g = RemoveOnDrop::new();
            g.track(a.clone());
        }
        assert!(!a.exists());
        std::fs::write(&a, b"x").unwrap();
        let mut g = RemoveOnDrop::new();
        g.track(a.clone());
        g.disarm();
        assert!(a.exists());
    }

    #[test]
    fn never_follows_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"precious").unwrap();
        let link = dir.path().join("test_file.0");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert!(open(&link, true, true, 0).is_err());
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
    }

    #[test]
    fn never_writes_through_a_hard_link() {
        // Issue 14, item 15.
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("precious");
        std::fs::write(&precious, b"precious").unwrap();
        let link = dir.path().join("test_file.0");
        std::fs::hard_link(&precious, &link).unwrap();
        let err = open(&link, true, true, 0).unwrap_err().to_string();
        assert!(err.contains("hard links"), "{err}");
        assert_eq!(std::fs::read(&precious).unwrap(), b"precious");
        let fifo = dir.path().join("test_file.1");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(open(&fifo, true, true, 0).is_err());
    }

    #[test]
    fn space_check_gives_the_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let err = check_space(dir.path(), u64::MAX / 2, "file-total-size").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("MiB is free"), "{text}");
        assert!(text.contains("--file-total-size"), "{text}");
        check_space(dir.path(), 1, "file-total-size").unwrap();
    }
}
