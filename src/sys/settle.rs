//! Settling the file systems before a run that writes files: what the
//! previous run (or this job's prepare) left dirty in the page cache is
//! written back first, so its writeback does not land inside the next run's
//! timing. scripts/check-validity's host-against-host comparison called
//! disk's `seq_create_per_sec` 0.37× "slower" before this: the runs after a
//! prepare paid for its writeback.

use std::time::{Duration, Instant};

/// Dirty and writeback pages below this count as settled.
pub const SETTLED_BYTES: u64 = 2 << 20;
/// The longest a run waits for writeback.
pub const LIMIT: Duration = Duration::from_secs(5);

/// `sync()`, then waits (at most [`LIMIT`]) until the kernel's dirty and
/// writeback pages are below [`SETTLED_BYTES`]. Returns what was left.
pub fn settle() -> Option<u64> {
    // SAFETY: sync() takes no arguments and cannot fail.
    unsafe { libc::sync() };
    let until = Instant::now() + LIMIT;
    loop {
        let left = dirty_bytes();
        match left {
            Some(b) if b > SETTLED_BYTES && Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(50))
            }
            _ => return left,
        }
    }
}

/// Dirty + Writeback from /proc/meminfo, in bytes.
pub fn dirty_bytes() -> Option<u64> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn parse_meminfo(text: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    };
    Some(field("Dirty:")? + field("Writeback:")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal: 100 kB\nDirty:             1536 kB\nWriteback:          512 kB\nWritebackTmp: 7 kB\n";
        assert_eq!(parse_meminfo(text), Some(2048 * 1024));
        assert_eq!(parse_meminfo("Dirty: 1 kB\n"), None);
    }

    #[test]
    fn settling_writes_back_what_a_run_left_dirty() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = std::fs::File::create(dir.path().join("dirty")).unwrap();
        let chunk = vec![7u8; 1 << 20];
        for _ in 0..64 {
            f.write_all(&chunk).unwrap();
        }
        drop(f);
        let t = Instant::now();
        let left = settle().expect("/proc/meminfo");
        assert!(t.elapsed() < LIMIT + Duration::from_secs(1));
        // Other processes may dirty pages meanwhile, but not our 64 MiB.
        assert!(left < 32 << 20, "{left} bytes still dirty");
    }
}
