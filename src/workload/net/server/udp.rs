//! The server's one UDP socket: a client socket registers with a session's
//! cookie (only from the control connection's address, so a spoofed hello
//! cannot point the answers at a third party), then UDP_RR is answered at
//! most four times what came in and UDP_STREAM counted.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::super::protocol::{Test, MAX_SESSIONS, MAX_STREAMS, MAX_UDP_BYTES, UDP_HELLO};
use super::session::{lookup, Session};
use super::Shared;

pub(super) fn udp_loop(udp: UdpSocket, shared: Arc<Shared>) {
    let mut buf = vec![0u8; 65536];
    let response = vec![0u8; MAX_UDP_BYTES as usize];
    // Registered client sockets: their session and the next sequence number.
    let mut peers: HashMap<SocketAddr, (Arc<Session>, u64)> = HashMap::new();
    // The CPUs this thread started with, and the one a session bound it to.
    let cpus = crate::sys::affinity::allowed().unwrap_or_default();
    let mut bound: Option<u32> = None;
    while !shared.stop.load(Ordering::Relaxed) {
        let (n, from) = match udp.recv_from(&mut buf) {
            Ok(x) => x,
            Err(_) => {
                peers.retain(|_, (s, _)| !s.done.load(Ordering::Relaxed));
                continue;
            }
        };
        if n == 12 && buf[..4] == UDP_HELLO {
            register(&udp, &shared, &mut peers, &buf[..12], from);
            continue;
        }
        let Some((session, next)) = peers.get_mut(&from) else {
            continue;
        };
        if session.done.load(Ordering::Relaxed) {
            peers.remove(&from);
            continue;
        }
        session.activity.fetch_add(1, Ordering::Relaxed);
        // One thread serves every UDP session: it moves to the CPU the
        // session asks for, and back to all of them for one that asks none.
        if session.hello.server_cpu != bound && !cpus.is_empty() {
            let _ = match session.hello.server_cpu {
                Some(cpu) => crate::sys::affinity::bind_nth_of(&cpus, cpu as usize).map(drop),
                None => crate::sys::affinity::bind_to(&cpus),
            };
            bound = session.hello.server_cpu;
        }
        match session.hello.test {
            // A response only for a whole request, never larger than four
            // times what came in (and the client chose both sizes).
            Test::UdpRr if n as u64 >= session.hello.request_size => {
                let size = (session.hello.response_size as usize).min(4 * n.max(64));
                let _ = udp.send_to(&response[..size], from);
            }
            Test::UdpRr => {}
            _ => {
                session.udp_datagrams.fetch_add(1, Ordering::Relaxed);
                session.udp_bytes.fetch_add(n as u64, Ordering::Relaxed);
                if n >= 8 {
                    let seq = u64::from_le_bytes(buf[..8].try_into().unwrap());
                    if seq < *next {
                        session.udp_out_of_order.fetch_add(1, Ordering::Relaxed);
                    } else {
                        *next = seq + 1;
                    }
                }
            }
        }
    }
}

/// A client socket's registration (`hello`: the tag and a cookie), echoed
/// when it names a UDP session whose control connection came from `from`.
fn register(
    udp: &UdpSocket,
    shared: &Shared,
    peers: &mut HashMap<SocketAddr, (Arc<Session>, u64)>,
    hello: &[u8],
    from: SocketAddr,
) {
    let cookie = u64::from_le_bytes(hello[4..12].try_into().unwrap());
    let Some(session) = lookup(shared, cookie) else {
        return;
    };
    // Only from the control connection's address: a spoofed hello cannot
    // point the server's answers at a third party.
    if session.hello.test.is_udp()
        && from.ip() == session.peer
        && peers.len() < MAX_SESSIONS * MAX_STREAMS as usize
    {
        peers.insert(from, (session, 0));
        let _ = udp.send_to(hello, from);
    }
}
