//! Cuts a database connection whose client cannot be woken from a blocking
//! read (the `mysql` crate's, and the reads on its socket): at the stop
//! (Ctrl-C), and when the operation under way passes its deadline, which
//! the connection sets when the operation begins and no byte from the
//! server renews. A connection registers its socket while it lives; one
//! watcher thread, running only while some connection is registered, shuts
//! the socket down, so the read waiting on it returns at once and its
//! operation fails, saying which of the two it was.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::core::signals;

/// How often the watcher looks: a cut comes at most this long after the
/// stop or the deadline.
const TICK: Duration = Duration::from_millis(50);

/// Why a connection was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The user stopped (or, for a connection opened after the stop,
    /// stopped again).
    Stopped,
    /// The operation under way passed its deadline.
    Expired,
}

const OPEN: u8 = 0;
const STOPPED: u8 = 1;
const EXPIRED: u8 = 2;

struct Entry {
    fd: RawFd,
    /// Cut at the first signal; a connection opened after it (the
    /// cleanup's) only at the second.
    at_first_stop: bool,
    /// The current operation's deadline in milliseconds from [`epoch`],
    /// 0 when none is under way.
    deadline: AtomicU64,
    state: AtomicU8,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    open: Vec::new(),
    watching: false,
});

struct Registry {
    open: Vec<Arc<Entry>>,
    watching: bool,
}

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// The instant deadlines count from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

/// A registered socket. Its owner drops the guard before it closes the
/// socket, so the watcher never touches a descriptor number that has
/// been reused.
pub struct Guard {
    entry: Arc<Entry>,
}

/// Registers `fd`, to be shut down at the stop (the first signal if
/// `at_first_stop`, else the second) or when an operation armed with
/// [`Guard::arm`] passes its deadline.
pub fn watch(fd: RawFd, at_first_stop: bool) -> Guard {
    let entry = Arc::new(Entry {
        fd,
        at_first_stop,
        deadline: AtomicU64::new(0),
        state: AtomicU8::new(OPEN),
    });
    let mut r = registry();
    r.open.push(Arc::clone(&entry));
    if !r.watching {
        // Without a watcher (no thread to be had) the socket's read
        // timeout still ends a stalled statement, only later.
        r.watching = std::thread::Builder::new()
            .name("db-stop-watch".into())
            .spawn(run)
            .is_ok();
    }
    Guard { entry }
}

impl Guard {
    /// Begins an operation that must end within `limit`.
    pub fn arm(&self, limit: Duration) {
        let at = now_ms() + limit.as_millis() as u64;
        self.entry.deadline.store(at.max(1), Ordering::Relaxed);
    }

    /// Ends the operation: no deadline until the next `arm`.
    pub fn disarm(&self) {
        self.entry.deadline.store(0, Ordering::Relaxed);
    }

    /// Whether the connection was cut, and why (its errors since are ours).
    pub fn was_cut(&self) -> Option<Cut> {
        match self.entry.state.load(Ordering::Acquire) {
            STOPPED => Some(Cut::Stopped),
            EXPIRED => Some(Cut::Expired),
            _ => None,
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        registry().open.retain(|e| !Arc::ptr_eq(e, &self.entry));
    }
}

/// The watcher: cuts what is due every tick, and ends when nothing is
/// left to cut.
fn run() {
    loop {
        std::thread::sleep(TICK);
        let mut r = registry();
        let (first, second) = (signals::interrupted(), signals::hurried());
        let now = now_ms();
        for e in r.open.iter() {
            if e.state.load(Ordering::Relaxed) != OPEN {
                continue;
            }
            let deadline = e.deadline.load(Ordering::Relaxed);
            let why = if second || (first && e.at_first_stop) {
                STOPPED
            } else if deadline != 0 && now >= deadline {
                EXPIRED
            } else {
                continue;
            };
            e.state.store(why, Ordering::Release);
            // SAFETY: shutdown(2) on a descriptor its owner keeps open
            // while it is registered (the lock is held).
            unsafe { libc::shutdown(e.fd, libc::SHUT_RDWR) };
        }
        if r.open
            .iter()
            .all(|e| e.state.load(Ordering::Relaxed) != OPEN)
        {
            r.watching = false;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (peer, _) = l.accept().unwrap();
        (s, peer)
    }

    #[test]
    fn without_a_stop_or_a_deadline_a_registered_socket_is_left_alone() {
        let (mut s, _peer) = pair();
        let guard = watch(s.as_raw_fd(), true);
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        // The read times out as it would anyway: nothing shut it down.
        let e = s.read(&mut [0u8; 8]).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{e}"
        );
        assert_eq!(guard.was_cut(), None);
        let entry = Arc::clone(&guard.entry);
        drop(guard);
        assert!(!registry().open.iter().any(|e| Arc::ptr_eq(e, &entry)));
    }

    #[test]
    fn a_deadline_cuts_a_read_that_bytes_keep_alive() {
        // Issue 53, item 15: a reply trickled a byte at a time renewed
        // the read timeout forever. The deadline is the operation's.
        let (mut s, mut peer) = pair();
        let guard = watch(s.as_raw_fd(), true);
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let trickle = std::thread::spawn(move || {
            for _ in 0..40 {
                if peer.write_all(b"x").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let start = Instant::now();
        guard.arm(Duration::from_millis(300));
        let mut got = 0;
        let mut buf = [0u8; 8];
        while let Ok(n @ 1..) = s.read(&mut buf) {
            got += n;
        }
        let took = start.elapsed();
        assert!(got > 0, "the trickle reached the reader");
        assert!(took < Duration::from_millis(600), "cut after {took:?}");
        assert_eq!(guard.was_cut(), Some(Cut::Expired));
        drop(guard);
        trickle.join().unwrap();
        // Disarmed, an operation is not cut however long it takes.
        let (mut s, _peer) = pair();
        let guard = watch(s.as_raw_fd(), true);
        guard.arm(Duration::from_millis(100));
        guard.disarm();
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert!(s.read(&mut buf).is_err(), "timed out, not cut");
        assert_eq!(guard.was_cut(), None);
    }
}
