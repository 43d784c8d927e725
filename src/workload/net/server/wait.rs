//! The server's reads and writes, each bounded: every one wakes every tick
//! to look at the stop flag and its deadline, so a peer that trickles,
//! stalls or never closes holds a thread no longer than the deadline it
//! is under (a handshake's, or its session's).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::IDLE;

/// A reader that waits for its bytes until a deadline, whatever the
/// socket's own timeout, looking at the stop flag every tick: what bounds a
/// handshake as a whole, so trickled bytes cannot stretch it.
pub(super) struct Until<'a> {
    pub s: &'a mut TcpStream,
    pub until: Instant,
    pub stop: &'a AtomicBool,
}

impl Read for Until<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.stop.load(Ordering::Relaxed) || Instant::now() >= self.until {
                return Err(io::ErrorKind::TimedOut.into());
            }
            match self.s.read(buf) {
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
}

/// Reads exactly `buf.len()` bytes, waking every tick to look at `stop`
/// and the session's deadline `until`. False on a clean end of stream
/// before the first byte.
pub(super) fn read_full(
    s: &mut TcpStream,
    buf: &mut [u8],
    stop: &AtomicBool,
    until: Instant,
) -> io::Result<bool> {
    let mut got = 0;
    let mut idle_since = Instant::now();
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                got += n;
                idle_since = Instant::now();
            }
            Err(e) if is_timeout(&e) => {
                if stop.load(Ordering::Relaxed)
                    || idle_since.elapsed() > IDLE
                    || Instant::now() >= until
                {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Writes all of `buf`, waking every tick to look at `stop` and the
/// session's deadline `until`.
pub(super) fn write_full(
    s: &mut TcpStream,
    buf: &[u8],
    stop: &AtomicBool,
    until: Instant,
) -> io::Result<()> {
    let mut sent = 0;
    let mut idle_since = Instant::now();
    while sent < buf.len() {
        match s.write(&buf[sent..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                sent += n;
                idle_since = Instant::now();
            }
            Err(e) if is_timeout(&e) => {
                if stop.load(Ordering::Relaxed)
                    || idle_since.elapsed() > IDLE
                    || Instant::now() >= until
                {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads `n` bytes and drops them, in small chunks (a request may be up to
/// 16 MiB: no buffer of that size per connection).
pub(super) fn discard(s: &mut impl Read, n: u64) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    let mut left = n;
    while left > 0 {
        let k = left.min(chunk.len() as u64) as usize;
        s.read_exact(&mut chunk[..k])?;
        left -= k as u64;
    }
    Ok(())
}

pub(super) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}
