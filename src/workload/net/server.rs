//! `virtperf serve`: the network-test server. One port, TCP and UDP, for
//! control and data; it never opens another port and never dials out. It is
//! bounded against a hostile client: strangers' handshakes in a pool of
//! their own, apart from proven connections, so they cannot starve them
//! ([`admission`]); each connection on its own thread, never on the accept
//! loop; a whole-handshake deadline; a per-connection challenge, so a proof
//! cannot be replayed ([`control`]); sessions at once and an idle session's
//! life; streams per session and each stream index claimed once, one send
//! buffer per session, a session's deadline (its duration plus a grace) on
//! every data loop ([`data`]); UDP accepted only from the control
//! connection's address ([`udp`]); and an idle timeout on every socket, so
//! a vanished or hostile client frees its threads by itself.
//! `Server::start` runs it in-process (the client uses that when no server
//! is running on loopback; the host side of an environment run can too),
//! `virtperf serve` runs it until Ctrl-C.

mod admission;
mod control;
mod data;
mod session;
mod udp;
mod wait;

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::protocol::{self, TAG_CONTROL, TAG_CRR, TAG_DATA, VERSION};
use super::sock;
use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::core::signals;

pub use admission::{HANDSHAKE, MAX_CONNECTIONS, MAX_PENDING, MAX_PENDING_PER_PEER};
pub use session::validate;

/// How long a socket may sit silent before the server gives up on it.
const IDLE: Duration = Duration::from_secs(30);
/// How often blocked loops look at the stop flag.
const TICK: Duration = Duration::from_millis(100);
/// Socket buffers a client may ask for.
const MAX_BUFFER: u64 = 256 << 20;
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

/// What the server's threads share.
struct Shared {
    stop: AtomicBool,
    sessions: Mutex<HashMap<u64, Arc<session::Session>>>,
    /// Every connection's thread (handshake, control, data, TCP_CRR).
    conn_threads: Mutex<Vec<JoinHandle<()>>>,
    /// Connections in their handshake ([`admission`]).
    pending: Mutex<admission::Pending>,
    /// Admitted connections being served.
    admitted: AtomicUsize,
    /// A hello must prove it holds this (see `protocol::verify`).
    secret: Option<Vec<u8>>,
    /// This instance's name in every challenge, fresh at every start.
    instance: String,
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
        let instance = protocol::new_instance().map_err(|err| StartError::Other { addr, err })?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            sessions: Mutex::new(HashMap::new()),
            conn_threads: Mutex::new(Vec::new()),
            pending: Mutex::new(Default::default()),
            admitted: AtomicUsize::new(0),
            secret,
            instance,
        });
        let s1 = shared.clone();
        let s2 = shared.clone();
        let threads = vec![
            std::thread::spawn(move || accept_loop(listener, s1)),
            std::thread::spawn(move || udp::udp_loop(udp, s2)),
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

/// Accepts connections, each on a thread of its own once it has a place
/// in the pending pool ([`admission`]).
fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::Relaxed) {
        if !sock::wait_readable(&listener, TICK) {
            continue;
        }
        let (s, from) = match listener.accept() {
            Ok(x) => x,
            // Out of file descriptors (or another transient failure): the
            // connection stays queued; wait instead of spinning on it.
            Err(_) => {
                std::thread::sleep(TICK);
                continue;
            }
        };
        let Some(ticket) = admission::enter(&shared, &s, from.ip()) else {
            continue;
        };
        let sh = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("net-conn".into())
            .spawn(move || connection(s, sh, ticket));
        if let Ok(t) = spawned {
            let mut threads = shared.conn_threads.lock().unwrap();
            threads.retain(|t| !t.is_finished());
            threads.push(t);
        }
    }
}

/// One connection, on its own thread: its tag within the handshake
/// deadline, then what it is.
fn connection(mut s: TcpStream, shared: Arc<Shared>, ticket: admission::Ticket) {
    if s.set_read_timeout(Some(TICK)).is_err() || s.set_write_timeout(Some(TICK)).is_err() {
        return;
    }
    let until = Instant::now() + HANDSHAKE;
    let mut tag = [0u8; 4];
    let mut r = wait::Until {
        s: &mut s,
        until,
        stop: &shared.stop,
    };
    if r.read_exact(&mut tag).is_err() {
        return;
    }
    ticket.spoke();
    match tag {
        TAG_CONTROL => control::control(s, shared, ticket, until),
        TAG_DATA => data::attach_data(s, &shared, ticket, until),
        TAG_CRR => {
            let _ = data::crr_transaction(s, &shared, ticket, until);
        }
        _ => {}
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

/// `virtperf serve --help` below its synopsis (the command table's).
pub fn help() -> String {
    format!(
        "The network-test server for `virtperf net`: one TCP and UDP port for control and data, \
         net protocol {VERSION}. It listens on loopback unless --bind says otherwise, never opens \
         another port and never dials out. Ctrl-C stops it. Beyond loopback, give it a secret \
         (--secret-file or {SECRET_ENV}) and the clients the same (net's --net-secret-file or \
         {SECRET_ENV}): a hello without a proof of it (HMAC-SHA256 over the challenge the server gave that connection) is refused.\n\n{}",
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
mod tests;
