//! A session's data path over TCP: its data connections (a stream each
//! way, or request/response) and TCP_CRR's one-transaction connections.
//! A connection is admitted once its header names an open session's
//! cookie, each (stream, direction) is served once, and every loop ends at
//! the session's deadline.

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::protocol::{Direction, Test};
use super::super::sock::{self, Buffers};
use super::admission::Ticket;
use super::session::{lookup, Session};
use super::wait::{discard, is_timeout, read_full, write_full, Until};
use super::{Shared, DISCARD_CHUNK, IDLE, MAX_READ};

/// One TCP_CRR transaction: the cookie within the handshake deadline, the
/// request, the response; then this side closes first.
pub(super) fn crr_transaction(
    mut s: TcpStream,
    shared: &Shared,
    ticket: Ticket,
    until: Instant,
) -> io::Result<()> {
    let mut cookie = [0u8; 8];
    let mut r = Until {
        s: &mut s,
        until,
        stop: &shared.stop,
    };
    r.read_exact(&mut cookie)?;
    let Some(session) = lookup(shared, u64::from_le_bytes(cookie)) else {
        return Ok(());
    };
    if session.hello.test != Test::TcpCrr || session.over() {
        return Ok(());
    }
    let Ok(_slot) = ticket.admit() else {
        return Ok(());
    };
    if let Some(cpu) = session.hello.server_cpu {
        crate::sys::affinity::bind_nth(cpu as usize)?;
    }
    session.activity.fetch_add(1, Ordering::Relaxed);
    let mut r = Until {
        s: &mut s,
        until: session.until(),
        stop: &shared.stop,
    };
    discard(&mut r, session.hello.request_size)?;
    let n = session.hello.response_size as usize;
    let payload = session.payload(n);
    write_full(&mut s, &payload[..n], &shared.stop, session.until())
    // Dropping `s` closes first, so TIME_WAIT stays on this side.
}

/// A data connection: its header (cookie, stream, direction) within the
/// handshake deadline, then the stream, served on this thread.
pub(super) fn attach_data(mut s: TcpStream, shared: &Arc<Shared>, ticket: Ticket, until: Instant) {
    let mut rest = [0u8; 13];
    let mut r = Until {
        s: &mut s,
        until,
        stop: &shared.stop,
    };
    if r.read_exact(&mut rest).is_err() {
        return;
    }
    let cookie = u64::from_le_bytes(rest[..8].try_into().unwrap());
    let stream = u32::from_le_bytes(rest[8..12].try_into().unwrap());
    let Some(dir) = Direction::from_u8(rest[12]) else {
        return;
    };
    let Some(session) = lookup(shared, cookie) else {
        return;
    };
    let h = &session.hello;
    let allowed = match h.test {
        Test::TcpStream | Test::TcpMaerts => {
            matches!(dir, Direction::ToServer | Direction::ToClient)
        }
        Test::TcpRr => dir == Direction::RequestResponse,
        _ => false,
    };
    let conns = session.data_conns.fetch_add(1, Ordering::SeqCst);
    if !allowed || stream >= h.streams || conns >= 2 * h.streams as u64 || session.over() {
        return;
    }
    // Each (stream, direction) once: a second connection for the same one
    // would only multiply what the server holds.
    if !session.claimed.lock().unwrap().insert((stream, dir as u8)) {
        return;
    }
    let Ok(_slot) = ticket.admit() else {
        return;
    };
    session.activity.fetch_add(1, Ordering::Relaxed);
    session.live.fetch_add(1, Ordering::SeqCst);
    let _ = serve_data(s, &session, stream as usize, dir, &shared.stop);
    session.live.fetch_sub(1, Ordering::SeqCst);
}

fn serve_data(
    s: TcpStream,
    session: &Session,
    stream: usize,
    dir: Direction,
    stop: &AtomicBool,
) -> io::Result<()> {
    let h = &session.hello;
    if let Some(cpu) = h.server_cpu {
        crate::sys::affinity::bind_nth(cpu as usize)?;
    }
    s.set_read_timeout(Some(super::TICK))?;
    s.set_write_timeout(Some(super::TICK))?;
    s.set_nodelay(h.nodelay)?;
    sock::set_buffers(
        &s,
        Buffers {
            sndbuf: h.sndbuf,
            rcvbuf: h.rcvbuf,
        },
    )?;
    match dir {
        Direction::ToServer => receive(s, session, stream, stop),
        Direction::ToClient => send(s, session, stream, stop),
        Direction::RequestResponse => answer(s, session, stop),
    }
}

/// TCP_STREAM: counts what arrives until the client closes, then says how
/// much (the sender's signal that its last byte landed).
fn receive(
    mut s: TcpStream,
    session: &Session,
    stream: usize,
    stop: &AtomicBool,
) -> io::Result<()> {
    let until = session.until();
    sock::set_receive_lowat(&s, sock::STREAM_READ)?;
    let mut buf = vec![0u8; (session.hello.send_size as usize).clamp(sock::STREAM_READ, MAX_READ)];
    let mut total = 0u64;
    let mut idle_since = Instant::now();
    loop {
        if Instant::now() >= until {
            return Err(io::ErrorKind::TimedOut.into());
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                total += n as u64;
                idle_since = Instant::now();
            }
            Err(e) if is_timeout(&e) => {
                if stop.load(Ordering::Relaxed) || idle_since.elapsed() > IDLE {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    session.bytes_received.lock().unwrap()[stream] = total;
    write_full(&mut s, &total.to_le_bytes(), stop, until)
}

/// TCP_MAERTS: sends for the session's duration, then waits for the
/// client's acknowledgement of the last byte.
fn send(mut s: TcpStream, session: &Session, stream: usize, stop: &AtomicBool) -> io::Result<()> {
    let (h, until) = (&session.hello, session.until());
    let n = h.send_size as usize;
    let buf = session.payload(n);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(h.duration_s);
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        write_full(&mut s, &buf[..n], stop, until)?;
    }
    s.shutdown(Shutdown::Write)?;
    let mut ack = [0u8; 8];
    read_full(&mut s, &mut ack, stop, until)?;
    session.maerts_elapsed_s.lock().unwrap()[stream] = start.elapsed().as_secs_f64();
    session
        .retransmits
        .fetch_add(sock::retransmits(&s), Ordering::Relaxed);
    Ok(())
}

/// TCP_RR: a response for every whole request. A request up to 64 KiB is
/// read whole (the common case, one read); a larger one in chunks, never
/// one buffer of its size.
fn answer(mut s: TcpStream, session: &Session, stop: &AtomicBool) -> io::Result<()> {
    let (h, until) = (&session.hello, session.until());
    let want = h.request_size as usize;
    let mut req = vec![0u8; want.min(DISCARD_CHUNK)];
    let n = h.response_size as usize;
    let resp = session.payload(n);
    loop {
        if !read_full(&mut s, &mut req, stop, until)? {
            return Ok(());
        }
        let mut left = want - req.len();
        while left > 0 {
            let k = left.min(req.len());
            if !read_full(&mut s, &mut req[..k], stop, until)? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            left -= k;
        }
        write_full(&mut s, &resp[..n], stop, until)?;
    }
}
