//! `virtperf serve`: the network-test server. One port, TCP and UDP, for
//! control and data; it never opens another port and never dials out. It is
//! bounded against a hostile client: connections at once (each on its own
//! thread, never on the accept loop), a whole-handshake deadline, sessions
//! at once and an idle session's life, streams per session and each stream
//! index claimed once, one send buffer per session, a session's deadline
//! (its duration plus a grace) on every data loop, UDP accepted only from
//! the control connection's address, and an idle timeout on every socket,
//! so a vanished or hostile client frees its threads by itself. `Server::start` runs it in-process (the client uses
//! that when no server is running on loopback; the host side of an
//! environment run can too), `virtperf serve` runs it until Ctrl-C.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::protocol::{
    self, Control, Direction, Hello, ProtocolError, ServerResults, Test, MAX_DURATION_S,
    MAX_MESSAGE_BYTES, MAX_SESSIONS, MAX_STREAMS, MAX_UDP_BYTES, TAG_CONTROL, TAG_CRR, TAG_DATA,
    UDP_HELLO, VERSION,
};
use super::sock::{self, Buffers};
use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::core::signals;

/// How long a socket may sit silent before the server gives up on it.
const IDLE: Duration = Duration::from_secs(30);
/// How often blocked loops look at the stop flag.
const TICK: Duration = Duration::from_millis(100);
/// Socket buffers a client may ask for.
const MAX_BUFFER: u64 = 256 << 20;
/// Connections being served at once (control, data and TCP_CRR alike);
/// more are closed as they come.
pub const MAX_CONNECTIONS: usize = 128;
/// A connection's whole handshake (its tag and what follows) must arrive
/// within this, however it trickles.
pub const HANDSHAKE: Duration = Duration::from_secs(5);
/// A session whose client opened nothing within this after its welcome is
/// given up, so idle sessions cannot hold every slot for their duration.
pub const SESSION_IDLE: Duration = Duration::from_secs(10);
/// A data loop ends this long after its session's duration at the latest.
const GRACE: Duration = Duration::from_secs(10);
/// The largest read a stream's receiver makes at once.
const MAX_READ: usize = 1 << 20;
/// Requests are read (and dropped) in chunks of this.
const DISCARD_CHUNK: usize = 64 << 10;

pub const SERVE_OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "bind",
        OptKind::Text,
        "127.0.0.1",
        "address to listen on (loopback unless you say otherwise; 0.0.0.0 for all)",
    ),
    OptionSpec::new(
        "port",
        OptKind::Int { min: 0, max: 65535 },
        "12866",
        "the one TCP and UDP port for control and data (0: a free one, named in the first line on stderr)",
    ),
    OptionSpec::new(
        "secret-file",
        OptKind::Text,
        "",
        "a file whose first line is the secret clients must prove they hold (also VIRTPERF_NET_SECRET); without one, any client that reaches the port is served",
    ),
];

/// Where a secret for `serve` and `net` may come from besides a file.
pub const SECRET_ENV: &str = "VIRTPERF_NET_SECRET";

/// The nonces of accepted hellos a server remembers (a replayed one is
/// refused); the oldest go first.
const NONCES_KEPT: usize = 4096;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{proto} port {port} on {ip} is in use: stop what holds it or choose another --port")]
    InUse {
        proto: &'static str,
        ip: IpAddr,
        port: u16,
    },
    #[error("cannot listen on {addr}: {err}")]
    Other { addr: SocketAddr, err: io::Error },
}

/// One client's test, from its hello to its results.
struct Session {
    hello: Hello,
    /// The control connection's address: UDP is taken only from it.
    peer: IpAddr,
    started: Instant,
    /// Data connections, TCP_CRR transactions and datagrams seen.
    activity: AtomicU64,
    /// (stream, direction) pairs already served: each once.
    claimed: Mutex<HashSet<(u32, u8)>>,
    /// What the server sends (TCP_MAERTS, responses): one buffer per
    /// session, shared by its connections.
    payload: std::sync::OnceLock<Arc<Vec<u8>>>,
    bytes_received: Mutex<Vec<u64>>,
    maerts_elapsed_s: Mutex<Vec<f64>>,
    retransmits: AtomicU64,
    udp_datagrams: AtomicU64,
    udp_bytes: AtomicU64,
    udp_out_of_order: AtomicU64,
    data_conns: AtomicU64,
    /// Data connections being served now.
    live: AtomicU64,
    done: AtomicBool,
}

impl Session {
    /// Past its duration and the grace: every loop of it ends.
    fn over(&self) -> bool {
        self.started.elapsed() > Duration::from_secs_f64(self.hello.duration_s) + GRACE
    }

    fn until(&self) -> Instant {
        self.started + Duration::from_secs_f64(self.hello.duration_s) + GRACE
    }

    /// At least `n` bytes of the session's payload.
    fn payload(&self, n: usize) -> Arc<Vec<u8>> {
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

struct Shared {
    stop: AtomicBool,
    sessions: Mutex<HashMap<u64, Arc<Session>>>,
    /// Every connection's thread (handshake, control, data, TCP_CRR).
    conn_threads: Mutex<Vec<JoinHandle<()>>>,
    connections: AtomicUsize,
    /// A hello must prove it holds this (see `protocol::verify`).
    secret: Option<Vec<u8>>,
    /// Nonces of accepted hellos, oldest first, and as a set.
    nonces: Mutex<(std::collections::VecDeque<String>, HashSet<String>)>,
}

/// Counts a connection while its thread lives.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running server; `stop` (or dropping it) ends it.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Server {
    /// Listens on `addr` (TCP and UDP; port 0 picks a free port for both),
    /// serving any client that reaches it.
    pub fn start(addr: SocketAddr) -> Result<Server, StartError> {
        Server::start_with_secret(addr, None)
    }

    /// Listens on `addr`, serving only clients that prove they hold
    /// `secret` (when there is one).
    pub fn start_with_secret(
        addr: SocketAddr,
        secret: Option<Vec<u8>>,
    ) -> Result<Server, StartError> {
        let (listener, udp) = bind_both(addr)?;
        let addr = listener
            .local_addr()
            .map_err(|err| StartError::Other { addr, err })?;
        udp.set_read_timeout(Some(TICK))
            .map_err(|err| StartError::Other { addr, err })?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            sessions: Mutex::new(HashMap::new()),
            conn_threads: Mutex::new(Vec::new()),
            connections: AtomicUsize::new(0),
            secret,
            nonces: Mutex::new(Default::default()),
        });
        let s1 = shared.clone();
        let s2 = shared.clone();
        let threads = vec![
            std::thread::spawn(move || accept_loop(listener, s1)),
            std::thread::spawn(move || udp_loop(udp, s2)),
        ];
        Ok(Server {
            addr,
            shared,
            threads,
        })
    }

    /// The address it listens on (with the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Stops accepting, ends every session and waits for its threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let conns: Vec<_> = self.shared.conn_threads.lock().unwrap().drain(..).collect();
        for t in conns {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn bind_both(addr: SocketAddr) -> Result<(TcpListener, UdpSocket), StartError> {
    let in_use = |proto, port| StartError::InUse {
        proto,
        ip: addr.ip(),
        port,
    };
    // With port 0 the kernel picks the TCP port; the same UDP port may be
    // taken, so try a few.
    for _ in 0..20 {
        let listener = TcpListener::bind(addr).map_err(|err| match err.kind() {
            io::ErrorKind::AddrInUse => in_use("TCP", addr.port()),
            _ => StartError::Other { addr, err },
        })?;
        let port = listener
            .local_addr()
            .map_err(|err| StartError::Other { addr, err })?
            .port();
        match UdpSocket::bind(SocketAddr::new(addr.ip(), port)) {
            Ok(udp) => return Ok((listener, udp)),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && addr.port() == 0 => continue,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => return Err(in_use("UDP", port)),
            Err(err) => return Err(StartError::Other { addr, err }),
        }
    }
    Err(in_use("UDP", 0))
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::Relaxed) {
        if !sock::wait_readable(&listener, TICK) {
            continue;
        }
        let s = match listener.accept() {
            Ok((s, _)) => s,
            // Out of file descriptors (or another transient failure): the
            // connection stays queued; wait instead of spinning on it.
            Err(_) => {
                std::thread::sleep(TICK);
                continue;
            }
        };
        if shared.connections.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            shared.connections.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        let slot = Slot(shared.clone());
        let sh = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("net-conn".into())
            .spawn(move || {
                let _slot = slot;
                connection(s, sh);
            });
        if let Ok(t) = spawned {
            let mut threads = shared.conn_threads.lock().unwrap();
            threads.retain(|t| !t.is_finished());
            threads.push(t);
        }
    }
}

/// A reader that waits for its bytes until a deadline, whatever the
/// socket's own timeout, looking at the stop flag every tick: what bounds a
/// handshake as a whole, so trickled bytes cannot stretch it.
struct Until<'a> {
    s: &'a mut TcpStream,
    until: Instant,
    stop: &'a AtomicBool,
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

/// One connection, on its own thread: its tag within the handshake
/// deadline, then what it is.
fn connection(mut s: TcpStream, shared: Arc<Shared>) {
    if s.set_read_timeout(Some(TICK)).is_err() || s.set_write_timeout(Some(TICK)).is_err() {
        return;
    }
    let until = Instant::now() + HANDSHAKE;
    let mut tag = [0u8; 4];
    let mut r = Until {
        s: &mut s,
        until,
        stop: &shared.stop,
    };
    if r.read_exact(&mut tag).is_err() {
        return;
    }
    match tag {
        TAG_CONTROL => control(s, shared, until),
        TAG_DATA => attach_data(s, &shared, until),
        TAG_CRR => {
            let _ = crr_transaction(s, &shared, until);
        }
        _ => {}
    }
}

fn lookup(shared: &Shared, cookie: u64) -> Option<Arc<Session>> {
    shared.sessions.lock().unwrap().get(&cookie).cloned()
}

/// Reads `n` bytes and drops them, in small chunks (a request may be up to
/// 16 MiB: no buffer of that size per connection).
fn discard(s: &mut impl Read, n: u64) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    let mut left = n;
    while left > 0 {
        let k = left.min(chunk.len() as u64) as usize;
        s.read_exact(&mut chunk[..k])?;
        left -= k as u64;
    }
    Ok(())
}

fn crr_transaction(mut s: TcpStream, shared: &Shared, until: Instant) -> io::Result<()> {
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

fn attach_data(mut s: TcpStream, shared: &Arc<Shared>, until: Instant) {
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
    session.activity.fetch_add(1, Ordering::Relaxed);
    // This thread is the connection's own: serve it here.
    session.live.fetch_add(1, Ordering::SeqCst);
    let _ = serve_data(s, &session, stream as usize, dir, &shared.stop);
    session.live.fetch_sub(1, Ordering::SeqCst);
}

/// Reads exactly `buf.len()` bytes, waking every tick to look at `stop`
/// and the session's deadline `until`. False on a clean end of stream
/// before the first byte.
fn read_full(
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
fn write_full(s: &mut TcpStream, buf: &[u8], stop: &AtomicBool, until: Instant) -> io::Result<()> {
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

pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn serve_data(
    mut s: TcpStream,
    session: &Session,
    stream: usize,
    dir: Direction,
    stop: &AtomicBool,
) -> io::Result<()> {
    let h = &session.hello;
    if let Some(cpu) = h.server_cpu {
        crate::sys::affinity::bind_nth(cpu as usize)?;
    }
    s.set_read_timeout(Some(TICK))?;
    s.set_write_timeout(Some(TICK))?;
    s.set_nodelay(h.nodelay)?;
    sock::set_buffers(
        &s,
        Buffers {
            sndbuf: h.sndbuf,
            rcvbuf: h.rcvbuf,
        },
    )?;
    let until = session.until();
    match dir {
        Direction::ToServer => {
            sock::set_receive_lowat(&s, sock::STREAM_READ)?;
            let mut buf = vec![0u8; (h.send_size as usize).clamp(sock::STREAM_READ, MAX_READ)];
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
            // The count is also the sender's signal that the last byte landed.
            write_full(&mut s, &total.to_le_bytes(), stop, until)
        }
        Direction::ToClient => {
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
        Direction::RequestResponse => {
            // A request up to 64 KiB is read whole (the common case, one
            // read); a larger one in chunks, never one buffer of its size.
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
    }
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

fn new_cookie() -> u64 {
    match protocol::random_bytes::<8>() {
        Ok(c) => u64::from_le_bytes(c),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    }
}

fn refuse(s: &mut TcpStream, reason: String) {
    let _ = protocol::write_control(
        s,
        &Control::Refused {
            version: VERSION,
            reason,
        },
    );
}

/// One control connection: hello (within the handshake deadline),
/// welcome, wait for finish, results.
fn control(mut s: TcpStream, shared: Arc<Shared>, until: Instant) {
    let peer = match s.peer_addr() {
        Ok(a) => a.ip(),
        Err(_) => return,
    };
    let mut r = Until {
        s: &mut s,
        until,
        stop: &shared.stop,
    };
    let hello = match protocol::read_control(&mut r) {
        Ok(Control::Hello(h)) => h,
        Ok(other) => return refuse(&mut s, format!("expected a hello, got {other:?}")),
        Err(e @ ProtocolError::Version { .. }) => return refuse(&mut s, e.to_string()),
        Err(_) => return,
    };
    if let Some(secret) = &shared.secret {
        let nonce = match protocol::verify(secret, &hello) {
            Ok(n) => n.to_string(),
            Err(why) => return refuse(&mut s, format!("the server refuses: {why}")),
        };
        let mut seen = shared.nonces.lock().unwrap();
        if !seen.1.insert(nonce.clone()) {
            drop(seen);
            return refuse(&mut s, "the server refuses: a replayed hello".into());
        }
        seen.0.push_back(nonce);
        if seen.0.len() > NONCES_KEPT {
            if let Some(old) = seen.0.pop_front() {
                seen.1.remove(&old);
            }
        }
    }
    if let Err(reason) = validate(&hello) {
        return refuse(&mut s, format!("the server refuses: {reason}"));
    }
    let cookie = new_cookie();
    let streams = hello.streams as usize;
    let session = Arc::new(Session {
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
    });
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

fn udp_loop(udp: UdpSocket, shared: Arc<Shared>) {
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
            let cookie = u64::from_le_bytes(buf[4..12].try_into().unwrap());
            if let Some(session) = lookup(&shared, cookie) {
                // Only from the control connection's address: a spoofed
                // hello cannot point the server's answers at a third party.
                if session.hello.test.is_udp()
                    && from.ip() == session.peer
                    && peers.len() < MAX_SESSIONS * MAX_STREAMS as usize
                {
                    peers.insert(from, (session, 0));
                    let _ = udp.send_to(&buf[..12], from);
                }
            }
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

pub fn help() -> String {
    format!(
        "virtperf serve [--bind ADDR] [--port N] [--secret-file FILE]\n\n\
         The network-test server for `virtperf net`: one TCP and UDP port for control and data, \
         net protocol {VERSION}. It listens on loopback unless --bind says otherwise, never opens \
         another port and never dials out. Ctrl-C stops it. Beyond loopback, give it a secret \
         (--secret-file or {SECRET_ENV}) and the clients the same (net's --net-secret-file or \
         {SECRET_ENV}): a hello without a proof of it (HMAC-SHA256 over a fresh nonce) is refused.\n\n{}",
        options::render_help("Options", SERVE_OPTIONS)
    )
}

/// `virtperf serve`: runs until Ctrl-C.
/// A secret from a file (its first line) or else from [`SECRET_ENV`];
/// `option` names the file option in errors.
pub fn read_secret(file: &str, option: &str) -> Result<Option<Vec<u8>>, CliError> {
    let text = if !file.is_empty() {
        let t = std::fs::read_to_string(file).map_err(|e| {
            CliError::Usage(format!(
                "--{option}={file}: cannot read it ({e}); give a readable file whose first line is the secret, or set {SECRET_ENV}"
            ))
        })?;
        t.lines().next().unwrap_or("").to_string()
    } else {
        std::env::var(SECRET_ENV).unwrap_or_default()
    };
    let text = text.trim();
    if text.is_empty() {
        if !file.is_empty() {
            return Err(CliError::Usage(format!(
                "--{option}={file}: its first line is empty; put the secret there"
            )));
        }
        return Ok(None);
    }
    Ok(Some(text.as_bytes().to_vec()))
}

/// `virtperf serve`, parsed (by `cli`).
#[derive(Debug, Clone, PartialEq)]
pub struct ServeArgs {
    /// `--bind` and `--port` (0: a free one).
    pub addr: SocketAddr,
    /// `--secret-file`; without one, [`SECRET_ENV`] may give the secret.
    pub secret_file: Option<std::path::PathBuf>,
}

/// `virtperf serve`: serves until Ctrl-C.
pub fn main(args: &ServeArgs) -> Result<()> {
    let file = args
        .secret_file
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let secret = read_secret(&file, "secret-file")?;
    let addr = args.addr;
    let guarded = secret.is_some();
    let server = Server::start_with_secret(addr, secret).map_err(|e| match e {
        StartError::InUse { .. } => anyhow::Error::new(CliError::Usage(e.to_string())),
        other => anyhow::Error::new(other),
    })?;
    eprintln!(
        "virtperf serve: listening on {} (TCP and UDP), net protocol {VERSION}, {}; Ctrl-C stops",
        server.addr(),
        if guarded {
            "clients must prove the secret"
        } else {
            "open to any client that reaches it"
        }
    );
    while !signals::interrupted() {
        std::thread::sleep(TICK);
    }
    server.stop();
    eprintln!("virtperf serve: stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(test: Test) -> Hello {
        Hello::for_test(test)
    }

    fn control_conn(server: &Server) -> TcpStream {
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(&TAG_CONTROL).unwrap();
        s
    }

    #[test]
    fn a_client_of_another_version_is_refused_with_both_versions() {
        let server = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut s = control_conn(&server);
        let body = br#"{"type":"hello","version":99}"#;
        s.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
        s.write_all(body).unwrap();
        match protocol::read_control(&mut s).unwrap() {
            Control::Refused { reason, .. } => {
                assert!(reason.contains("protocol 99"), "{reason}");
                assert!(reason.contains(&format!("speaks {VERSION}")), "{reason}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        server.stop();
    }

    /// What the server answers `h` on a fresh control connection.
    fn answer(server: &Server, h: &Hello) -> Control {
        let mut s = control_conn(server);
        protocol::write_control(&mut s, &Control::Hello(h.clone())).unwrap();
        protocol::read_control(&mut s).unwrap()
    }

    #[test]
    fn a_server_with_a_secret_opens_sessions_only_for_fresh_proofs_of_it() {
        // Issue 24, item 11: the host's server for an environment run served
        // anyone who reached it.
        let server =
            Server::start_with_secret("127.0.0.1:0".parse().unwrap(), Some(b"s3".to_vec()))
                .unwrap();
        let refused = |c: Control| match c {
            Control::Refused { reason, .. } => reason,
            other => panic!("expected a refusal, got {other:?}"),
        };
        let plain = hello(Test::TcpRr);
        assert!(refused(answer(&server, &plain)).contains("needs the secret"));
        let mut wrong = plain.clone();
        protocol::prove(b"s4", &mut wrong).unwrap();
        assert!(refused(answer(&server, &wrong)).contains("wrong secret"));
        let mut good = plain.clone();
        protocol::prove(b"s3", &mut good).unwrap();
        let mut s = control_conn(&server);
        protocol::write_control(&mut s, &Control::Hello(good.clone())).unwrap();
        assert!(matches!(
            protocol::read_control(&mut s).unwrap(),
            Control::Welcome { .. }
        ));
        // The same hello again, as a captured one would be replayed.
        assert!(refused(answer(&server, &good)).contains("replayed"));
        // A proof for another request does not carry over.
        let mut stretched = good.clone();
        stretched.duration_s = 3600.0;
        assert!(refused(answer(&server, &stretched)).contains("wrong secret"));
        // Nor to a request that names a CPU it did not.
        let mut moved = good.clone();
        moved.server_cpu = Some(1);
        assert!(refused(answer(&server, &moved)).contains("wrong secret"));
        drop(s);
        server.stop();
    }

    #[test]
    fn out_of_bounds_requests_are_refused() {
        let server = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        for h in [
            Hello {
                streams: MAX_STREAMS + 1,
                ..hello(Test::TcpRr)
            },
            Hello {
                duration_s: MAX_DURATION_S + 1.0,
                ..hello(Test::TcpRr)
            },
            Hello {
                send_size: MAX_UDP_BYTES + 1,
                ..hello(Test::UdpStream)
            },
            Hello {
                server_cpu: Some(protocol::MAX_CPU + 1),
                ..hello(Test::TcpRr)
            },
        ] {
            let mut s = control_conn(&server);
            protocol::write_control(&mut s, &Control::Hello(h)).unwrap();
            assert!(matches!(
                protocol::read_control(&mut s).unwrap(),
                Control::Refused { .. }
            ));
        }
        server.stop();
    }

    #[test]
    fn a_port_in_use_is_named() {
        let holder = TcpListener::bind("127.0.0.1:0").unwrap();
        let err = match Server::start(holder.local_addr().unwrap()) {
            Err(e) => e,
            Ok(_) => panic!("started on a port in use"),
        };
        let port = holder.local_addr().unwrap().port();
        assert!(err.to_string().contains(&format!("port {port}")), "{err}");
        assert!(err.to_string().contains("--port"));
    }

    fn welcome(server: &Server, h: Hello) -> (TcpStream, u64) {
        let mut s = control_conn(server);
        protocol::write_control(&mut s, &Control::Hello(h)).unwrap();
        match protocol::read_control(&mut s).unwrap() {
            Control::Welcome { cookie, .. } => (s, cookie),
            other => panic!("expected a welcome, got {other:?}"),
        }
    }

    fn threads_of_this_process() -> usize {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn a_crr_client_that_never_reads_holds_neither_other_clients_nor_stop() {
        // Issue 24, item 1: the TCP_CRR transaction ran on the accept thread
        // with a blocking write; a client asking for 16 MiB and never
        // reading blocked every later client and the server's stop.
        let server = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let (_ctl, cookie) = welcome(
            &server,
            Hello {
                response_size: MAX_MESSAGE_BYTES,
                ..hello(Test::TcpCrr)
            },
        );
        let mut hog = TcpStream::connect(server.addr()).unwrap();
        hog.write_all(&TAG_CRR).unwrap();
        hog.write_all(&cookie.to_le_bytes()).unwrap();
        hog.write_all(&[0]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let t = Instant::now();
        let _other = welcome(&server, hello(Test::TcpRr));
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        let t = Instant::now();
        server.stop();
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }

    #[test]
    fn silent_connections_do_not_delay_a_real_client() {
        // Issue 24, item 5: eight silent connections delayed a hello by 16 s.
        let server = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let _silent: Vec<TcpStream> = (0..8)
            .map(|_| TcpStream::connect(server.addr()).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        let t = Instant::now();
        let _ok = welcome(&server, hello(Test::TcpRr));
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        server.stop();
    }

    #[test]
    fn connections_beyond_the_bound_are_closed_and_threads_stay_bounded() {
        // Issue 24, item 4: 400 trickling control connections made 403
        // threads.
        let server = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let before = threads_of_this_process();
        let conns: Vec<TcpStream> = (0..300)
            .filter_map(|_| TcpStream::connect(server.addr()).ok())
            .collect();
        for c in &conns {
            // A whole control tag, then the hello trickles (never).
            let _ = (&*c).write_all(&TAG_CONTROL);
            let _ = (&*c).write_all(&[0]);
        }
        // The most threads seen over a second and a half.
        let grown = (0..15)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(100));
                threads_of_this_process().saturating_sub(before)
            })
            .max()
            .unwrap();
        // Other tests of this process run beside it: some slack.
        assert!(grown <= MAX_CONNECTIONS + 32, "{grown} threads more");
        // The connections beyond the bound were closed at once (an end of
        // stream or a reset, not a read that merely timed out).
        let closed = conns
            .iter()
            .filter(|c| {
                c.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                match (&**c).read(&mut [0u8; 1]) {
                    Ok(0) => true,
                    Err(e) => e.kind() == io::ErrorKind::ConnectionReset,
                    Ok(_) => false,
                }
            })
            .count();
        assert!(
            closed >= conns.len().saturating_sub(MAX_CONNECTIONS + 32),
            "{closed} of {} closed",
            conns.len()
        );
        // Past the handshake deadline the slots are free again.
        drop(conns);
        std::thread::sleep(HANDSHAKE + Duration::from_millis(500));
        let _ok = welcome(&server, hello(Test::TcpRr));
        server.stop();
    }

    #[test]
    fn an_idle_session_gives_its_slot_back() {
        // Issue 24, item 6: sessions asking for an hour and opening nothing
        // made every later client "busy" for that hour.
        let server = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let idle: Vec<_> = (0..MAX_SESSIONS)
            .map(|_| {
                welcome(
                    &server,
                    Hello {
                        duration_s: 3600.0,
                        ..hello(Test::TcpRr)
                    },
                )
                .0
            })
            .collect();
        let mut s = control_conn(&server);
        protocol::write_control(&mut s, &Control::Hello(hello(Test::TcpRr))).unwrap();
        assert!(matches!(
            protocol::read_control(&mut s).unwrap(),
            Control::Refused { .. }
        ));
        std::thread::sleep(SESSION_IDLE + Duration::from_secs(1));
        let _ok = welcome(&server, hello(Test::TcpRr));
        drop(idle);
        server.stop();
    }

    #[test]
    fn a_udp_hello_from_another_address_gets_no_answer() {
        // Issue 24, item 8: a spoofed UDP hello with a valid cookie made the
        // server send a third party its answers.
        let server = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let (_ctl, cookie) = welcome(&server, hello(Test::UdpRr));
        let mut pkt = UDP_HELLO.to_vec();
        pkt.extend_from_slice(&cookie.to_le_bytes());
        let stranger = UdpSocket::bind("127.0.0.2:0").unwrap();
        stranger
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        stranger.send_to(&pkt, server.addr()).unwrap();
        let mut b = [0u8; 64];
        assert!(
            stranger.recv_from(&mut b).is_err(),
            "a stranger was answered"
        );
        let own = UdpSocket::bind("127.0.0.1:0").unwrap();
        own.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        own.send_to(&pkt, server.addr()).unwrap();
        assert!(
            own.recv_from(&mut b).is_ok(),
            "the control peer was not answered"
        );
        server.stop();
    }

    #[test]
    fn stop_returns_promptly_with_a_silent_client_attached() {
        let server = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let _silent = TcpStream::connect(server.addr()).unwrap();
        let mut s = control_conn(&server);
        protocol::write_control(&mut s, &Control::Hello(hello(Test::TcpRr))).unwrap();
        assert!(matches!(
            protocol::read_control(&mut s).unwrap(),
            Control::Welcome { .. }
        ));
        let t = Instant::now();
        server.stop();
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    }
}
