//! A control connection: the server's challenge, the client's hello and
//! its proof, the session it opens (within the server's bounds and its
//! count of sessions), the wait for the client's finish, and the results.

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::protocol::{
    self, Challenge, Control, Hello, ProtocolError, ServerResults, Test, MAX_SESSIONS, VERSION,
};
use super::super::sock;
use super::admission::{NotAdmitted, Slot, Ticket, HANDSHAKE, MAX_CONNECTIONS};
use super::session::{new_cookie, validate, Session};
use super::wait::Until;
use super::{Shared, IDLE, SESSION_IDLE, TICK};

fn refuse(s: &mut TcpStream, reason: String) {
    let _ = protocol::write_control(
        s,
        &Control::Refused {
            version: VERSION,
            reason,
        },
    );
}

/// One control connection: challenge, hello (both within the handshake
/// deadline `until`), welcome, wait for finish, results.
pub(super) fn control(mut s: TcpStream, shared: Arc<Shared>, ticket: Ticket, until: Instant) {
    let Ok(peer) = s.peer_addr().map(|a| a.ip()) else {
        return;
    };
    let Some((hello, _slot)) = handshake(&mut s, &shared, ticket, until) else {
        return;
    };
    let cookie = new_cookie();
    let session = Arc::new(Session::new(hello, peer));
    {
        let mut sessions = shared.sessions.lock().unwrap();
        if sessions.len() >= MAX_SESSIONS {
            drop(sessions);
            return refuse(
                &mut s,
                format!("the server is busy with {MAX_SESSIONS} tests; try again later"),
            );
        }
        sessions.insert(cookie, session.clone());
    }
    let cpu0 = sock::cpu_now();
    let finished = protocol::write_control(
        &mut s,
        &Control::Welcome {
            version: VERSION,
            cookie,
        },
    )
    .is_ok()
        && wait_finish(&mut s, &session, &shared.stop);
    if finished && session.hello.test == Test::UdpStream {
        // Let datagrams still in the socket buffer be counted.
        let mut last = u64::MAX;
        for _ in 0..40 {
            let now = session.udp_datagrams.load(Ordering::SeqCst);
            if now == last {
                break;
            }
            last = now;
            std::thread::sleep(Duration::from_millis(25));
        }
    }
    session.done.store(true, Ordering::SeqCst);
    // Its data connections end by themselves (the finish, their deadline,
    // the stop); what they counted is in once they have.
    while session.live.load(Ordering::SeqCst) > 0 && !session.over() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let cpu1 = sock::cpu_now();
    shared.sessions.lock().unwrap().remove(&cookie);
    if finished {
        let results = ServerResults {
            bytes_received: session.bytes_received.lock().unwrap().clone(),
            maerts_elapsed_s: session.maerts_elapsed_s.lock().unwrap().clone(),
            udp_datagrams: session.udp_datagrams.load(Ordering::SeqCst),
            udp_bytes: session.udp_bytes.load(Ordering::SeqCst),
            udp_out_of_order: session.udp_out_of_order.load(Ordering::SeqCst),
            retransmits: session.retransmits.load(Ordering::SeqCst),
            cpu_pct: sock::cpu_busy_pct(&cpu0, &cpu1),
        };
        let _ = protocol::write_control(
            &mut s,
            &Control::Results {
                version: VERSION,
                results,
            },
        );
    }
}

/// The challenge out, the hello in, its proof checked (with a secret) and
/// its request within the server's bounds: the request and the admitted
/// connection's slot, or None after a refusal (or none, for a peer that
/// said nothing sensible).
fn handshake(
    s: &mut TcpStream,
    shared: &Shared,
    ticket: Ticket,
    until: Instant,
) -> Option<(Hello, Slot)> {
    // Fresh for this connection and good until its deadline: a proof made
    // for it is worth nothing anywhere else, or later, or on a restart.
    let challenge = Challenge::fresh(&shared.instance).ok()?;
    let asked = Control::Challenge {
        version: VERSION,
        server: challenge.server.clone(),
        nonce: challenge.nonce.clone(),
    };
    protocol::write_control(s, &asked).ok()?;
    let mut r = Until {
        s,
        until,
        stop: &shared.stop,
    };
    let hello = match protocol::read_control(&mut r) {
        Ok(Control::Hello(h)) => h,
        Ok(other) => {
            refuse(s, format!("expected a hello, got {other:?}"));
            return None;
        }
        Err(e @ ProtocolError::Version { .. }) => {
            refuse(s, e.to_string());
            return None;
        }
        Err(_) => return None,
    };
    if let Some(secret) = &shared.secret {
        if let Err(why) = protocol::verify(secret, &challenge, &hello) {
            refuse(s, format!("the server refuses: {why}"));
            return None;
        }
    }
    if let Err(reason) = validate(&hello) {
        refuse(s, format!("the server refuses: {reason}"));
        return None;
    }
    match ticket.admit() {
        Ok(slot) => Some((hello, slot)),
        Err(NotAdmitted::Evicted) => None,
        Err(NotAdmitted::Full) => {
            refuse(
                s,
                format!("the server is serving {MAX_CONNECTIONS} connections; try again later"),
            );
            None
        }
    }
}

/// Waits for the client's finish, bounded by the test's duration plus the
/// idle timeout; false if it never came, or if the client opened nothing
/// within [`SESSION_IDLE`] (an idle session gives its slot back).
fn wait_finish(s: &mut TcpStream, session: &Session, stop: &AtomicBool) -> bool {
    let welcomed = Instant::now();
    let deadline = welcomed + Duration::from_secs_f64(session.hello.duration_s) + IDLE;
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        if sock::wait_readable(s, TICK) {
            let mut r = Until {
                s,
                until: Instant::now() + HANDSHAKE,
                stop,
            };
            return matches!(protocol::read_control(&mut r), Ok(Control::Finish { .. }));
        }
        if welcomed.elapsed() > SESSION_IDLE && session.activity.load(Ordering::Relaxed) == 0 {
            return false;
        }
    }
    false
}
