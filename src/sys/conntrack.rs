//! Room in the kernel's connection-tracking table before a network run.
//!
//! Where netfilter tracks connections (Docker's and Podman's NAT load it),
//! every TCP connection takes an entry in one table of `nf_conntrack_max`
//! entries and keeps it for `nf_conntrack_tcp_timeout_time_wait` (2 min)
//! after it closes. A connect/request/response test opens thousands of
//! connections a second: a comparison that repeats tcp_crr back to back
//! filled the table on a 2-vCPU machine, and from then on the kernel dropped
//! new connections' first packets (dmesg: "nf_conntrack: table full,
//! dropping packet") — the runs measured retransmission timeouts and then
//! failed with "connection timed out", and every other program on the
//! machine lost its new connections too. So a network run starts only when
//! the table has room: at most [`FULL_SHARE`] of it in use, waiting (at
//! most the time-wait timeout, and never past a Ctrl-C) for closed
//! connections to leave it.

use std::time::{Duration, Instant};

/// A run starts when at most this share of the table is in use: a quarter
/// is left for the run's own connections (a 0.5 s tcp_crr run opens about
/// 4,000 on a 2-vCPU machine, of a table of 262,144) and everyone else's.
pub const FULL_SHARE: f64 = 0.75;

/// What the table holds now and may hold: `(count, max)`, read from
/// `/proc/sys/net/netfilter` (absent where connection tracking is not
/// loaded, and then there is nothing to wait for).
pub fn usage() -> Option<(u64, u64)> {
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/proc/sys/net/netfilter/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((read("nf_conntrack_count")?, read("nf_conntrack_max")?))
}

/// How long a closed TCP connection stays in the table: the kernel's
/// `nf_conntrack_tcp_timeout_time_wait` (120 s unless changed), at most
/// 10 minutes.
pub fn time_wait() -> Duration {
    let secs =
        std::fs::read_to_string("/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_time_wait")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(120);
    Duration::from_secs(secs.min(600))
}

/// Whether a table holding `count` of `max` entries has room for a run.
/// `max` 0 means no limit.
pub fn has_room(count: u64, max: u64) -> bool {
    max == 0 || (count as f64) <= FULL_SHARE * max as f64
}

/// How waiting ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The table had room from the start (or is not there).
    NotNeeded,
    /// The table had room after this long.
    Room(Duration),
    /// The limit passed first: `(count, max)` when it did.
    GaveUp(u64, u64),
}

/// Waits, at most `limit`, until the table read by `read` has room;
/// `on_wait(count, max)` is called once, when waiting starts, and `check`
/// between looks (a Ctrl-C's error ends the wait with it).
pub fn wait_for_room<E>(
    mut read: impl FnMut() -> Option<(u64, u64)>,
    limit: Duration,
    poll: Duration,
    mut on_wait: impl FnMut(u64, u64),
    mut check: impl FnMut() -> Result<(), E>,
) -> Result<Waited, E> {
    let start = Instant::now();
    let mut waiting = false;
    loop {
        let Some((count, max)) = read() else {
            return Ok(Waited::NotNeeded);
        };
        if has_room(count, max) {
            return Ok(if waiting {
                Waited::Room(start.elapsed())
            } else {
                Waited::NotNeeded
            });
        }
        if start.elapsed() >= limit {
            return Ok(Waited::GaveUp(count, max));
        }
        if !waiting {
            on_wait(count, max);
            waiting = true;
        }
        check()?;
        std::thread::sleep(poll);
    }
}

/// Why a failed network run may have failed, when the table is full now:
/// the sentence to add to its error.
pub fn full_now() -> Option<String> {
    let (count, max) = usage()?;
    (max > 0 && count as f64 >= 0.95 * max as f64).then(|| {
        format!(
            "the kernel's connection-tracking table is full ({count} of {max} entries), so it \
             drops new connections until closed ones leave it ({} s after they close)",
            time_wait().as_secs()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const POLL: Duration = Duration::from_millis(1);

    #[test]
    fn a_run_waits_while_the_table_is_more_than_three_quarters_full() {
        assert!(has_room(0, 262_144));
        assert!(has_room(196_608, 262_144));
        assert!(!has_room(196_609, 262_144));
        assert!(!has_room(262_144, 262_144));
        assert!(has_room(5_000_000, 0), "max 0 is no limit");
    }

    #[test]
    fn waiting_ends_when_closed_connections_leave_the_table() {
        // The table drains by 10,000 entries a look, from full.
        let count = Cell::new(262_144u64);
        let told = Cell::new(0);
        let looks = Cell::new(0);
        let waited = wait_for_room(
            || {
                looks.set(looks.get() + 1);
                let c = count.get();
                count.set(c.saturating_sub(10_000));
                Some((c, 262_144))
            },
            Duration::from_secs(60),
            POLL,
            |c, m| {
                assert_eq!((c, m), (262_144, 262_144));
                told.set(told.get() + 1);
            },
            || Ok::<(), ()>(()),
        )
        .unwrap();
        assert!(matches!(waited, Waited::Room(_)), "{waited:?}");
        assert_eq!(told.get(), 1, "the user is told once");
        // 262,144 - 7 × 10,000 = 192,144 is the first count with room.
        assert_eq!(looks.get(), 8);
    }

    #[test]
    fn a_table_with_room_or_none_costs_no_wait() {
        let never = |_: u64, _: u64| panic!("nothing to wait for");
        let ok = || Ok::<(), ()>(());
        let r = wait_for_room(|| Some((10, 100)), Duration::ZERO, POLL, never, ok);
        assert_eq!(r, Ok(Waited::NotNeeded));
        let r = wait_for_room(|| None, Duration::ZERO, POLL, never, ok);
        assert_eq!(r, Ok(Waited::NotNeeded));
    }

    #[test]
    fn a_table_that_stays_full_is_given_up_on_at_the_limit_and_a_stop_ends_the_wait() {
        let start = Instant::now();
        let r = wait_for_room(
            || Some((100, 100)),
            Duration::from_millis(30),
            POLL,
            |_, _| {},
            || Ok::<(), ()>(()),
        );
        assert_eq!(r, Ok(Waited::GaveUp(100, 100)));
        assert!(start.elapsed() >= Duration::from_millis(30));
        let r = wait_for_room(
            || Some((100, 100)),
            Duration::from_secs(60),
            POLL,
            |_, _| {},
            || Err("stopped"),
        );
        assert_eq!(r, Err("stopped"));
    }
}
