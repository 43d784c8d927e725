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
    wait_until_settled(dirty_bytes, LIMIT, Duration::from_millis(50))
}

/// Reads `dirty` until it is at most [`SETTLED_BYTES`] or `limit` has
/// passed, `pause` apart; returns the last reading.
fn wait_until_settled(
    mut dirty: impl FnMut() -> Option<u64>,
    limit: Duration,
    pause: Duration,
) -> Option<u64> {
    let until = Instant::now() + limit;
    loop {
        let left = dirty();
        match left {
            Some(b) if b > SETTLED_BYTES && Instant::now() < until => std::thread::sleep(pause),
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
    fn the_wait_ends_when_settled_or_at_the_limit() {
        let pause = Duration::from_millis(1);
        let mut readings = [100 << 20, 40 << 20, 1 << 20, 0].into_iter();
        let mut reads = 0;
        let left = wait_until_settled(
            || {
                reads += 1;
                readings.next()
            },
            Duration::from_secs(5),
            pause,
        );
        assert_eq!((left, reads), (Some(1 << 20), 3));
        // Never settling: the last reading, after the limit and not long after.
        let t = Instant::now();
        let limit = Duration::from_millis(40);
        assert_eq!(
            wait_until_settled(|| Some(u64::MAX), limit, pause),
            Some(u64::MAX)
        );
        assert!(t.elapsed() >= limit && t.elapsed() < limit * 10);
        // No /proc/meminfo: nothing to wait for.
        assert_eq!(wait_until_settled(|| None, limit, pause), None);
    }

    #[test]
    fn settling_returns_early_only_once_settled() {
        // The machine's dirty pages are shared with every other process (the
        // test lanes write files beside this test): what holds whatever they
        // do is that settle() returns before its limit only with the pages
        // settled, and not long after the limit.
        let dir = tempfile::tempdir().unwrap();
        let mut f = std::fs::File::create(dir.path().join("dirty")).unwrap();
        let chunk = vec![7u8; 1 << 20];
        for _ in 0..64 {
            f.write_all(&chunk).unwrap();
        }
        drop(f);
        let t = Instant::now();
        let left = settle().expect("/proc/meminfo");
        let took = t.elapsed();
        // sync() itself may wait on other processes' writeback: a bound, not a rate.
        assert!(took < LIMIT + Duration::from_secs(10), "took {took:?}");
        assert!(
            left <= SETTLED_BYTES || took >= LIMIT,
            "returned after {took:?} with {left} bytes dirty"
        );
    }
}
