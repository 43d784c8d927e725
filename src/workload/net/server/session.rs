//! A session: one client's test from its welcome to its results — the
//! request it was granted (checked against the server's bounds), what its
//! data connections, transactions and datagrams counted, and its deadline.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::super::protocol::{
    self, Hello, MAX_DURATION_S, MAX_MESSAGE_BYTES, MAX_STREAMS, MAX_UDP_BYTES,
};
use super::{Shared, GRACE, MAX_BUFFER};

/// One client's test, from its hello to its results.
pub(super) struct Session {
    pub hello: Hello,
    /// The control connection's address: UDP is taken only from it.
    pub peer: IpAddr,
    pub started: Instant,
    /// Data connections, TCP_CRR transactions and datagrams seen.
    pub activity: AtomicU64,
    /// (stream, direction) pairs already served: each once.
    pub claimed: Mutex<HashSet<(u32, u8)>>,
    /// What the server sends (TCP_MAERTS, responses): one buffer per
    /// session, shared by its connections.
    payload: std::sync::OnceLock<Arc<Vec<u8>>>,
    pub bytes_received: Mutex<Vec<u64>>,
    pub maerts_elapsed_s: Mutex<Vec<f64>>,
    pub retransmits: AtomicU64,
    pub udp_datagrams: AtomicU64,
    pub udp_bytes: AtomicU64,
    pub udp_out_of_order: AtomicU64,
    pub data_conns: AtomicU64,
    /// Data connections being served now.
    pub live: AtomicU64,
    pub done: AtomicBool,
}

impl Session {
    /// A session for `hello` (already checked by [`validate`]) from `peer`.
    pub fn new(hello: Hello, peer: IpAddr) -> Session {
        let streams = hello.streams as usize;
        Session {
            peer,
            started: Instant::now(),
            activity: AtomicU64::new(0),
            claimed: Mutex::new(HashSet::new()),
            payload: std::sync::OnceLock::new(),
            bytes_received: Mutex::new(vec![0; streams]),
            maerts_elapsed_s: Mutex::new(vec![0.0; streams]),
            retransmits: AtomicU64::new(0),
            udp_datagrams: AtomicU64::new(0),
            udp_bytes: AtomicU64::new(0),
            udp_out_of_order: AtomicU64::new(0),
            data_conns: AtomicU64::new(0),
            live: AtomicU64::new(0),
            done: AtomicBool::new(false),
            hello,
        }
    }

    /// Past its duration and the grace: every loop of it ends.
    pub fn over(&self) -> bool {
        self.started.elapsed() > Duration::from_secs_f64(self.hello.duration_s) + GRACE
    }

    pub fn until(&self) -> Instant {
        self.started + Duration::from_secs_f64(self.hello.duration_s) + GRACE
    }

    /// At least `n` bytes of the session's payload.
    pub fn payload(&self, n: usize) -> Arc<Vec<u8>> {
        let h = &self.hello;
        let most = h.send_size.max(h.response_size) as usize;
        let p = self
            .payload
            .get_or_init(|| Arc::new(vec![0x5au8; most]))
            .clone();
        debug_assert!(p.len() >= n);
        p
    }
}

/// The session a cookie names, if it is open.
pub(super) fn lookup(shared: &Shared, cookie: u64) -> Option<Arc<Session>> {
    shared.sessions.lock().unwrap().get(&cookie).cloned()
}

/// Checks a client's request against the server's bounds.
pub fn validate(h: &Hello) -> Result<(), String> {
    if !(h.duration_s > 0.0 && h.duration_s <= MAX_DURATION_S) {
        return Err(format!(
            "duration {} s is outside 0..{MAX_DURATION_S} s",
            h.duration_s
        ));
    }
    if h.streams == 0 || h.streams > MAX_STREAMS {
        return Err(format!("{} streams is outside 1..{MAX_STREAMS}", h.streams));
    }
    let max = if h.test.is_udp() {
        MAX_UDP_BYTES
    } else {
        MAX_MESSAGE_BYTES
    };
    for (what, v) in [
        ("request size", h.request_size),
        ("response size", h.response_size),
        ("send size", h.send_size),
    ] {
        if v == 0 || v > max {
            return Err(format!("{what} {v} is outside 1..{max} bytes"));
        }
    }
    if h.sndbuf > MAX_BUFFER || h.rcvbuf > MAX_BUFFER {
        return Err(format!("socket buffers above {MAX_BUFFER} bytes"));
    }
    if h.server_cpu.is_some_and(|c| c > protocol::MAX_CPU) {
        return Err(format!("a server CPU above {}", protocol::MAX_CPU));
    }
    Ok(())
}

/// A session's random cookie.
pub(super) fn new_cookie() -> u64 {
    match protocol::random_bytes::<8>() {
        Ok(c) => u64::from_le_bytes(c),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    }
}
