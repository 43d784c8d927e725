//! A failed KVM probe, remembered until the host reboots. The probe boots a
//! guest with KVM and gives up when the kernel's banner has not shown after
//! 3 s (nested KVM on these machines hangs in the decompressor): 3 s every
//! `virtperf` process that starts a QEMU guest or lists environments paid,
//! for an answer that does not change while the host runs. What is
//! remembered is tied to everything the answer rests on: the host's boot,
//! the `/dev/kvm` device node (a reloaded kvm module makes a new one), and
//! the QEMU binary and guest kernel (path, size, modification time); any of
//! them changed and the probe runs again. Only a failure is remembered: a
//! probe that succeeds takes a fraction of a second.
//!
//! The memo is one line in `/run/virtperf/kvm-probe` for root, or under
//! `$XDG_RUNTIME_DIR/virtperf/` for a user (both are cleared at boot); with
//! neither, nothing is remembered. `rm` of the file probes again.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The memo's directory: `/run/virtperf` for root, the user's runtime
/// directory's `virtperf` otherwise, or none.
pub fn default_dir() -> Option<PathBuf> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return Some(PathBuf::from("/run/virtperf"));
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")?;
    let runtime = PathBuf::from(runtime);
    runtime.is_absolute().then(|| runtime.join("virtperf"))
}

/// What the probe's answer rests on, as one line; None where a part cannot
/// be read (then nothing is remembered or trusted).
pub fn key(qemu: &Path, kernel: &Path) -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let kvm = std::fs::metadata("/dev/kvm").ok()?;
    let file = |p: &Path| -> Option<String> {
        let m = std::fs::metadata(p).ok()?;
        Some(format!("{}:{}:{}", p.display(), m.len(), m.mtime()))
    };
    Some(format!(
        "boot={} kvm={}:{}:{} qemu={} kernel={}",
        boot.trim(),
        kvm.rdev(),
        kvm.ino(),
        kvm.ctime(),
        file(qemu)?,
        file(kernel)?,
    ))
}

fn file_in(dir: &Path) -> PathBuf {
    dir.join("kvm-probe")
}

/// Whether a failed probe with this key was remembered in `dir`.
pub fn failed_before(dir: &Path, key: &str) -> bool {
    let Ok(f) = std::fs::File::open(file_in(dir)) else {
        return false;
    };
    // A line of a few hundred bytes: more is not ours.
    let mut text = String::new();
    if f.take(4096).read_to_string(&mut text).is_err() {
        return false;
    }
    text.trim_end() == format!("failed {key}")
}

/// Remembers a failed probe with this key in `dir` (made 0700 if missing);
/// a memo that cannot be written is no error, the next run probes again.
pub fn remember_failure(dir: &Path, key: &str) {
    use std::os::unix::fs::DirBuilderExt;
    if std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .is_err()
    {
        return;
    }
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    use std::io::Write;
    if writeln!(tmp, "failed {key}").is_ok() {
        let _ = tmp.persist(file_in(dir));
    }
}

/// The sentence that says the answer came from the memo, and how to probe
/// again.
pub fn remembered_note(dir: &Path) -> String {
    format!(
        "found by a probe earlier since the host booted; rm {} to probe again",
        file_in(dir).display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_remembered_for_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let memo = dir.path().join("virtperf");
        assert!(!failed_before(&memo, "k1"), "nothing remembered yet");
        remember_failure(&memo, "k1");
        assert!(failed_before(&memo, "k1"));
        assert!(!failed_before(&memo, "k2"), "another key is another answer");
        assert!(!failed_before(&memo, "k"), "a prefix is not the key");
        remember_failure(&memo, "k2");
        assert!(failed_before(&memo, "k2") && !failed_before(&memo, "k1"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&memo).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Only the memo is left in its directory (no temporary file).
        assert_eq!(std::fs::read_dir(&memo).unwrap().count(), 1);
    }

    #[test]
    fn a_memo_that_is_not_ours_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let big = format!("failed k{}\n", "x".repeat(10_000));
        std::fs::write(dir.path().join("kvm-probe"), big).unwrap();
        assert!(!failed_before(
            dir.path(),
            &format!("k{}", "x".repeat(10_000))
        ));
        std::fs::write(dir.path().join("kvm-probe"), "works k\n").unwrap();
        assert!(!failed_before(dir.path(), "k"));
    }

    #[test]
    fn the_key_changes_with_the_kernel_it_booted() {
        let Some(qemu) = super::super::which(super::super::QEMU) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("vmlinuz");
        std::fs::write(&k, b"one").unwrap();
        let Some(first) = key(&qemu, &k) else {
            return; // no /dev/kvm here: nothing to remember
        };
        std::fs::write(&k, b"other").unwrap();
        assert_ne!(key(&qemu, &k).unwrap(), first);
    }
}
