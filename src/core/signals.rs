//! Ctrl-C, SIGTERM and SIGHUP: the first one asks every running loop to stop
//! so the workload and every environment clean up after themselves; a second
//! one says hurry (no grace periods: agents are killed at once) but cleanup
//! still runs; only a third exits on the spot.

use std::sync::atomic::{AtomicU32, Ordering};

static SIGNALS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 2 {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Installs the handlers for SIGINT, SIGTERM and SIGHUP.
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches an atomic and calls _exit.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
        libc::signal(libc::SIGHUP, handler);
    }
}

/// Asks every running loop to stop, as one signal does: an agent whose host
/// went away (its input ended) stops its work and cleans up.
pub fn stop() {
    SIGNALS.fetch_max(1, Ordering::SeqCst);
}

/// Whether the user asked to stop.
pub fn interrupted() -> bool {
    SIGNALS.load(Ordering::Relaxed) > 0
}

/// Whether the user asked twice: clean up without waiting on anything.
pub fn hurried() -> bool {
    SIGNALS.load(Ordering::Relaxed) > 1
}

/// `Err(Interrupted)` once the user asked to stop: `signals::check()?` at
/// the top of each step of a long loop.
#[inline]
pub fn check() -> Result<(), Interrupted> {
    if interrupted() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

/// The error a loop returns when it stopped because of a signal.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;
