//! Cuts the database connections that were open when the user stopped
//! (Ctrl-C): a client whose blocking read has no hook of its own (the
//! `mysql` crate's) would otherwise wait out its read timeout on a server
//! that never answers. A connection registers its socket while it lives;
//! one watcher thread, running only while some connection is registered,
//! shuts their sockets down at the stop, so the read waiting on one returns
//! at once and its statement fails.

use std::os::fd::RawFd;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::core::signals;

/// How often the watcher looks for the stop: a cut comes at most this long
/// after it.
const TICK: Duration = Duration::from_millis(50);

struct Entry {
    id: u64,
    fd: RawFd,
    cut: bool,
}

struct Registry {
    next: u64,
    open: Vec<Entry>,
    watching: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 0,
    open: Vec::new(),
    watching: false,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// A registered socket. Its owner drops the guard before it closes the
/// socket, so the watcher never touches a descriptor number that has
/// been reused.
pub struct Guard {
    id: u64,
}

/// Registers `fd` to be shut down at the stop.
pub fn on_stop(fd: RawFd) -> Guard {
    let mut r = registry();
    r.next += 1;
    let id = r.next;
    r.open.push(Entry { id, fd, cut: false });
    if !r.watching {
        // Without a watcher (no thread to be had) the read timeout still
        // ends a stalled statement, only later.
        r.watching = std::thread::Builder::new()
            .name("db-stop-watch".into())
            .spawn(watch)
            .is_ok();
    }
    Guard { id }
}

impl Guard {
    /// Whether the stop cut this connection (its errors since are ours).
    pub fn was_cut(&self) -> bool {
        registry().open.iter().any(|e| e.id == self.id && e.cut)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        registry().open.retain(|e| e.id != self.id);
    }
}

fn watch() {
    loop {
        std::thread::sleep(TICK);
        let mut r = registry();
        if signals::interrupted() {
            for e in r.open.iter_mut().filter(|e| !e.cut) {
                // SAFETY: shutdown(2) on a descriptor its owner keeps open
                // while it is registered (the lock is held).
                unsafe { libc::shutdown(e.fd, libc::SHUT_RDWR) };
                e.cut = true;
            }
        }
        if r.open.iter().all(|e| e.cut) {
            r.watching = false;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn without_a_stop_a_registered_socket_is_left_alone_and_dropping_unregisters_it() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let _peer = l.accept().unwrap();
        let guard = on_stop(s.as_raw_fd());
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
        assert!(!guard.was_cut());
        let id = guard.id;
        drop(guard);
        assert!(!registry().open.iter().any(|e| e.id == id));
    }
}
