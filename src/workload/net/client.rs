//! The client side of one network test: opens a session on the server's
//! control connection, sets up every stream's socket before the clock starts
//! (so a failure cannot leave other streams waiting), runs the streams
//! together behind a barrier, then collects the server's counts.
//!
//! The server is untrusted: every socket call wakes every `TICK` to check
//! Ctrl-C and the test's hard end (its duration plus `GRACE`), so a server
//! that trickles, stalls or never closes cannot hold the client longer.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::protocol::{
    self, data_header, udp_hello, Control, Direction, Hello, ProtocolError, ServerResults, Test,
    TAG_CONTROL, TAG_CRR,
};
use super::sock::{self, Buffers};
use crate::core::signals;
use crate::engine::{new_histogram, Histogram};
use crate::sys::monitor::CpuTimes;

/// How long past its duration a test may go on before the client gives up
/// on a server that keeps it waiting (trickling, stalling, never closing).
pub const GRACE: Duration = Duration::from_secs(10);
/// A blocked socket call wakes this often to check the deadline and Ctrl-C.
const TICK: Duration = Duration::from_millis(200);

/// The hard end of one phase of a test: every read and write of the client
/// returns by then, or soon after Ctrl-C.
#[derive(Debug, Clone, Copy)]
struct Bound {
    until: Instant,
    addr: SocketAddr,
}

impl Bound {
    fn new(p: &Params, within: Duration) -> Bound {
        Bound {
            until: Instant::now() + within,
            addr: p.addr,
        }
    }

    fn check(&self, doing: &str) -> Result<()> {
        signals::check()?;
        if Instant::now() >= self.until {
            bail!(
                "{doing}: the server at {} kept the test waiting {} s past its end; given up (is it a virtperf server, and is the path to it sound?)",
                self.addr,
                GRACE.as_secs()
            );
        }
        Ok(())
    }

    /// One read: what arrived (0 at the server's close).
    fn read(&self, s: &mut TcpStream, buf: &mut [u8], doing: &str) -> Result<usize> {
        self.check(doing)?;
        self.read_unchecked(s, buf, doing)
    }

    /// One read, checking only when a read times out: for loops that
    /// check on their own between calls.
    fn read_unchecked(&self, s: &mut TcpStream, buf: &mut [u8], doing: &str) -> Result<usize> {
        loop {
            match s.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if sock_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {
                    self.check(doing)?
                }
                Err(e) => return Err(e).context(doing.to_string()),
            }
        }
    }

    /// Fills `buf`; the clock is read only when one read does not (the
    /// request/response loops' common case stays as it was).
    fn read_exact(&self, s: &mut TcpStream, buf: &mut [u8], doing: &str) -> Result<()> {
        let mut got = 0;
        loop {
            match self.read_unchecked(s, &mut buf[got..], doing)? {
                0 => bail!("{doing}: the server at {} closed the connection", self.addr),
                n => got += n,
            }
            if got == buf.len() {
                return Ok(());
            }
            self.check(doing)?;
        }
    }

    /// Writes all of `buf`; the clock is read only when one write does not.
    fn write_all(&self, s: &mut TcpStream, buf: &[u8], doing: &str) -> Result<()> {
        let mut sent = 0;
        loop {
            match s.write(&buf[sent..]) {
                Ok(0) => bail!("{doing}: the server at {} stopped reading", self.addr),
                Ok(n) => sent += n,
                Err(e) if sock_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).context(doing.to_string()),
            }
            if sent == buf.len() {
                return Ok(());
            }
            self.check(doing)?;
        }
    }
}

/// A control connection read through a `Bound`, for `read_control`.
struct BoundedRead<'a> {
    s: &'a mut TcpStream,
    bound: Bound,
}

impl Read for BoundedRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.bound
            .read(self.s, buf, "reading the server's answer")
            .map_err(|e| match e.downcast::<io::Error>() {
                Ok(io) => io,
                // Ctrl-C or the deadline: the caller checks which.
                Err(_) => io::ErrorKind::TimedOut.into(),
            })
    }
}

/// One test, resolved.
#[derive(Debug, Clone)]
pub struct Params {
    pub addr: SocketAddr,
    pub test: Test,
    pub duration: Duration,
    pub streams: u32,
    pub bidir: bool,
    pub request_size: u64,
    pub response_size: u64,
    pub send_size: u64,
    pub bufs: Buffers,
    pub nodelay: bool,
    /// `--net-cpus`: the CPU the client's streams and the server's are
    /// bound to (counted modulo the CPUs each may use).
    pub cpus: (Option<u32>, Option<u32>),
    /// UDP_STREAM's offered load over all streams, 10^6 bit/s; 0 = as fast as possible.
    pub udp_rate_mbit: f64,
    pub udp_timeout: Duration,
    pub connect_timeout: Duration,
    /// The server's secret, proved in the hello (`protocol::prove`).
    pub secret: Option<Vec<u8>>,
}

/// What the client measured, with the server's counts.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Longest stream's measured time (for stream tests, the sender's time
    /// including the final flush).
    pub elapsed: Duration,
    /// TCP_STREAM: bytes written by the client.
    pub bytes_sent: u64,
    /// TCP_MAERTS: bytes the client received.
    pub bytes_received: u64,
    pub writes: u64,
    pub transactions: u64,
    pub histogram: Option<Histogram>,
    pub udp_timeouts: u64,
    pub udp_datagrams_sent: u64,
    pub udp_bytes_sent: u64,
    pub udp_send_errors: u64,
    pub retransmits: u64,
    pub cpu_local_pct: f64,
    /// The kernel's buffer sizes on the first data socket.
    pub sndbuf: u64,
    pub rcvbuf: u64,
    pub server: ServerResults,
}

fn reach_error(addr: &SocketAddr, e: &io::Error) -> anyhow::Error {
    anyhow!(
        "cannot reach a virtperf server at {addr} (TCP port {}): {e}; start one there with \
         'virtperf serve --port {}' (add --bind ADDR to listen beyond loopback) or point \
         --net-host=HOST[:PORT] at a running one",
        addr.port(),
        addr.port()
    )
}

/// Connects the control connection (the error kind tells a refused
/// connection from the rest).
pub fn connect_control(p: &Params) -> io::Result<TcpStream> {
    sock::connect(&p.addr, Buffers::default(), p.connect_timeout)
}

/// Says hello on a control connection and returns the session cookie.
pub fn handshake(s: &mut TcpStream, p: &Params) -> Result<u64> {
    let addr = p.addr;
    let wait = p.connect_timeout + Duration::from_secs(5);
    s.set_read_timeout(Some(TICK))?;
    s.set_write_timeout(Some(TICK))?;
    let mut hello = Hello {
        version: protocol::VERSION,
        test: p.test,
        duration_s: p.duration.as_secs_f64(),
        streams: p.streams,
        bidir: p.bidir,
        request_size: p.request_size,
        response_size: p.response_size,
        send_size: p.send_size,
        sndbuf: p.bufs.sndbuf,
        rcvbuf: p.bufs.rcvbuf,
        nodelay: p.nodelay,
        server_cpu: p.cpus.1,
        proof: None,
    };
    let bound = Bound::new(p, wait);
    let reached = |e: anyhow::Error| match e.downcast::<io::Error>() {
        Ok(io) => reach_error(&addr, &io),
        Err(e) => e,
    };
    bound
        .write_all(s, &TAG_CONTROL, "saying hello")
        .map_err(reached)?;
    // The server's challenge first: the proof covers it, so it holds for
    // this connection only.
    let answer = match protocol::read_control(&mut BoundedRead { s, bound }) {
        Ok(Control::Challenge { server, nonce, .. }) => {
            if let Some(secret) = &p.secret {
                protocol::prove(secret, &protocol::Challenge { server, nonce }, &mut hello)?;
            }
            let mut frame = Vec::new();
            protocol::write_control(&mut frame, &Control::Hello(hello))?;
            bound
                .write_all(s, &frame, "saying hello")
                .map_err(reached)?;
            protocol::read_control(&mut BoundedRead { s, bound })
        }
        other => other,
    };
    signals::check()?;
    match answer {
        Ok(Control::Welcome { cookie, .. }) => Ok(cookie),
        Ok(Control::Refused { reason, .. }) => {
            bail!("the virtperf server at {addr} refused the test: {reason}")
        }
        Ok(other) => bail!("the server at {addr} answered the hello with {other:?}"),
        Err(ProtocolError::Io(e)) if sock_timeout(&e) => bail!(
            "the server at {addr} accepted the connection but did not answer within {wait:?}: is it a virtperf server of this version (one before net protocol 2 waits for the hello)?"
        ),
        Err(ProtocolError::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof => bail!(
            "the server at {addr} closed the connection without answering: is it a virtperf server of this version?"
        ),
        Err(e) => Err(anyhow!("the server at {addr}: {e}")),
    }
}

fn sock_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// A stream's socket, connected and registered, waiting for the start.
enum Prepared {
    Tcp(TcpStream, Direction),
    Crr,
    Udp(UdpSocket),
}

fn prepare_tcp(p: &Params, cookie: u64, stream: u32, dir: Direction) -> Result<TcpStream> {
    let mut s =
        sock::connect(&p.addr, p.bufs, p.connect_timeout).map_err(|e| reach_error(&p.addr, &e))?;
    s.set_nodelay(p.nodelay)?;
    s.set_read_timeout(Some(TICK))?;
    s.set_write_timeout(Some(TICK))?;
    Bound::new(p, p.connect_timeout).write_all(
        &mut s,
        &data_header(cookie, stream, dir),
        "opening a data connection",
    )?;
    Ok(s)
}

fn prepare_udp(p: &Params, cookie: u64) -> Result<UdpSocket> {
    let local: SocketAddr = if p.addr.is_ipv4() {
        "0.0.0.0:0".parse().unwrap()
    } else {
        "[::]:0".parse().unwrap()
    };
    let s = UdpSocket::bind(local)?;
    sock::set_buffers(&s, p.bufs)?;
    s.connect(p.addr)?;
    s.set_read_timeout(Some(Duration::from_millis(300)))?;
    s.set_write_timeout(Some(Duration::from_secs(1)))?;
    let hello = udp_hello(cookie);
    let mut buf = [0u8; 64];
    for _ in 0..10 {
        s.send(&hello)?;
        if let Ok(n) = s.recv(&mut buf) {
            if buf[..n] == hello {
                s.set_read_timeout(Some(p.udp_timeout))?;
                return Ok(s);
            }
        }
    }
    bail!(
        "the virtperf server at {} answered on TCP but not on UDP port {} within 3 s: is UDP blocked or not forwarded?",
        p.addr,
        p.addr.port()
    )
}

/// One stream's figures.
#[derive(Default)]
struct StreamResult {
    elapsed: Duration,
    bytes_sent: u64,
    bytes_received: u64,
    writes: u64,
    transactions: u64,
    histogram: Option<Histogram>,
    udp_timeouts: u64,
    udp_sent: u64,
    udp_bytes: u64,
    udp_errors: u64,
    retransmits: u64,
}

/// Runs the test on an open session and collects the server's results.
pub fn run(p: &Params, mut control: TcpStream, cookie: u64) -> Result<Outcome> {
    let prepared = prepare(p, cookie)?;
    let (sndbuf, rcvbuf) = match prepared.first() {
        Some(Prepared::Tcp(s, _)) => sock::buffer_sizes(s),
        Some(Prepared::Udp(s)) => sock::buffer_sizes(s),
        _ => (0, 0),
    };
    let barrier = Barrier::new(prepared.len());
    let cpu0: CpuTimes = sock::cpu_now();
    let results: Vec<Result<StreamResult>> = std::thread::scope(|scope| {
        let handles: Vec<_> = prepared
            .into_iter()
            .map(|prep| {
                let barrier = &barrier;
                scope.spawn(move || {
                    if let Some(cpu) = p.cpus.0 {
                        crate::sys::affinity::bind_nth(cpu as usize)
                            .context("binding the client to its --net-cpus CPU")?;
                    }
                    run_stream(p, cookie, prep, barrier)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a stream panicked")))
            })
            .collect()
    });
    let cpu1 = sock::cpu_now();
    // Tell the server we are done even when a stream failed, so it frees the session.
    let finish = protocol::write_control(
        &mut control,
        &Control::Finish {
            version: protocol::VERSION,
        },
    );
    let mut out = Outcome {
        cpu_local_pct: sock::cpu_busy_pct(&cpu0, &cpu1),
        sndbuf,
        rcvbuf,
        ..Outcome::default()
    };
    let mut hist: Option<Histogram> = None;
    for r in results {
        let r = r?;
        out.elapsed = out.elapsed.max(r.elapsed);
        out.bytes_sent += r.bytes_sent;
        out.bytes_received += r.bytes_received;
        out.writes += r.writes;
        out.transactions += r.transactions;
        out.udp_timeouts += r.udp_timeouts;
        out.udp_datagrams_sent += r.udp_sent;
        out.udp_bytes_sent += r.udp_bytes;
        out.udp_send_errors += r.udp_errors;
        out.retransmits += r.retransmits;
        if let Some(h) = r.histogram {
            match &mut hist {
                Some(all) => all.add(&h).context("merging latency histograms")?,
                None => hist = Some(h),
            }
        }
    }
    out.histogram = hist;
    finish.with_context(|| format!("telling the server at {} the test ended", p.addr))?;
    control.set_read_timeout(Some(TICK))?;
    let answer = protocol::read_control(&mut BoundedRead {
        s: &mut control,
        bound: Bound::new(p, GRACE),
    });
    signals::check()?;
    match answer {
        Ok(Control::Results { results, .. }) => out.server = results,
        Ok(other) => bail!("the server at {} sent {other:?} instead of results", p.addr),
        Err(e) => bail!("the server at {} sent no results: {e}", p.addr),
    }
    Ok(out)
}

/// The sockets of every stream of the test, connected and announced with
/// `cookie`: one per stream, and one more each way with `--net-bidir`.
fn prepare(p: &Params, cookie: u64) -> Result<Vec<Prepared>> {
    let mut prepared = Vec::new();
    for i in 0..p.streams {
        match p.test {
            Test::TcpStream | Test::TcpMaerts => {
                let first = if p.test == Test::TcpStream {
                    Direction::ToServer
                } else {
                    Direction::ToClient
                };
                prepared.push(Prepared::Tcp(prepare_tcp(p, cookie, i, first)?, first));
                if p.bidir {
                    let other = if first == Direction::ToServer {
                        Direction::ToClient
                    } else {
                        Direction::ToServer
                    };
                    prepared.push(Prepared::Tcp(prepare_tcp(p, cookie, i, other)?, other));
                }
            }
            Test::TcpRr => prepared.push(Prepared::Tcp(
                prepare_tcp(p, cookie, i, Direction::RequestResponse)?,
                Direction::RequestResponse,
            )),
            Test::TcpCrr => prepared.push(Prepared::Crr),
            Test::UdpRr | Test::UdpStream => prepared.push(Prepared::Udp(prepare_udp(p, cookie)?)),
        }
    }
    Ok(prepared)
}

fn run_stream(p: &Params, cookie: u64, prep: Prepared, barrier: &Barrier) -> Result<StreamResult> {
    match prep {
        Prepared::Tcp(s, Direction::ToServer) => tcp_send(p, s, barrier),
        Prepared::Tcp(s, Direction::ToClient) => tcp_receive(p, s, barrier),
        Prepared::Tcp(s, Direction::RequestResponse) => tcp_rr(p, s, barrier),
        Prepared::Crr => tcp_crr(p, cookie, barrier),
        Prepared::Udp(s) if p.test == Test::UdpRr => udp_rr(p, s, barrier),
        Prepared::Udp(s) => udp_stream(p, s, barrier),
    }
}

/// TCP_STREAM: write until the time is up, then wait for the server's count
/// of what arrived, which is also the moment the last byte landed.
fn tcp_send(p: &Params, mut s: TcpStream, barrier: &Barrier) -> Result<StreamResult> {
    let buf = vec![0x5au8; p.send_size as usize];
    let mut r = StreamResult::default();
    barrier.wait();
    let start = Instant::now();
    let deadline = start + p.duration;
    let bound = Bound::new(p, p.duration + GRACE);
    loop {
        signals::check()?;
        bound.write_all(&mut s, &buf, "sending (TCP_STREAM)")?;
        r.bytes_sent += buf.len() as u64;
        r.writes += 1;
        if Instant::now() >= deadline {
            break;
        }
    }
    s.shutdown(Shutdown::Write)?;
    let mut count = [0u8; 8];
    bound.read_exact(
        &mut s,
        &mut count,
        "waiting for the server's count of received bytes",
    )?;
    r.elapsed = start.elapsed();
    r.retransmits = sock::retransmits(&s);
    Ok(r)
}

/// TCP_MAERTS: count what the server sends until it closes, then
/// acknowledge (which ends the server's clock).
fn tcp_receive(p: &Params, mut s: TcpStream, barrier: &Barrier) -> Result<StreamResult> {
    sock::set_receive_lowat(&s, sock::STREAM_READ)?;
    let mut buf = vec![0u8; sock::STREAM_READ];
    let mut r = StreamResult::default();
    barrier.wait();
    let start = Instant::now();
    let bound = Bound::new(p, p.duration + GRACE);
    loop {
        match bound.read(&mut s, &mut buf, "receiving (TCP_MAERTS)")? {
            0 => break,
            n => r.bytes_received += n as u64,
        }
    }
    bound.write_all(
        &mut s,
        &r.bytes_received.to_le_bytes(),
        "acknowledging (TCP_MAERTS)",
    )?;
    r.elapsed = start.elapsed();
    Ok(r)
}

fn tcp_rr(p: &Params, mut s: TcpStream, barrier: &Barrier) -> Result<StreamResult> {
    let req = vec![0u8; p.request_size as usize];
    let mut resp = vec![0u8; p.response_size as usize];
    let mut hist = new_histogram();
    let mut r = StreamResult::default();
    barrier.wait();
    let start = Instant::now();
    let deadline = start + p.duration;
    let bound = Bound::new(p, p.duration + GRACE);
    let mut t = start;
    while t < deadline {
        signals::check()?;
        bound.write_all(&mut s, &req, "sending a request (TCP_RR)")?;
        bound.read_exact(&mut s, &mut resp, "reading a response (TCP_RR)")?;
        let done = Instant::now();
        hist.saturating_record((done - t).as_nanos().max(1) as u64);
        r.transactions += 1;
        t = done;
    }
    r.elapsed = t - start;
    r.retransmits = sock::retransmits(&s);
    let _ = s.shutdown(Shutdown::Both);
    r.histogram = Some(hist);
    Ok(r)
}

/// TCP_CRR: connect, one request and response, and the server's close,
/// per transaction.
fn tcp_crr(p: &Params, cookie: u64, barrier: &Barrier) -> Result<StreamResult> {
    let mut req = TAG_CRR.to_vec();
    req.extend_from_slice(&cookie.to_le_bytes());
    req.resize(req.len() + p.request_size as usize, 0);
    let mut resp = vec![0u8; p.response_size as usize];
    let mut hist = new_histogram();
    let mut r = StreamResult::default();
    barrier.wait();
    let start = Instant::now();
    let deadline = start + p.duration;
    let bound = Bound::new(p, p.duration + GRACE);
    let mut t = start;
    while t < deadline {
        signals::check()?;
        let mut s = sock::connect_fast(&p.addr, p.bufs, TICK, p.connect_timeout, || {
            signals::interrupted() || Instant::now() >= bound.until
        })
        .with_context(|| format!("connecting to {} (TCP_CRR)", p.addr))?;
        s.set_read_timeout(Some(TICK))?;
        s.set_nodelay(p.nodelay)?;
        bound.write_all(&mut s, &req, "sending a request (TCP_CRR)")?;
        bound.read_exact(&mut s, &mut resp, "reading a response (TCP_CRR)")?;
        // Wait for the server's close so TIME_WAIT stays on its side.
        let mut one = [0u8; 1];
        if let Err(e) = bound.read(&mut s, &mut one, "waiting for the server's close (TCP_CRR)") {
            // A reset is a close; Ctrl-C and the deadline are not.
            if e.downcast_ref::<io::Error>().is_none() {
                return Err(e);
            }
        }
        drop(s);
        let done = Instant::now();
        hist.saturating_record((done - t).as_nanos().max(1) as u64);
        r.transactions += 1;
        t = done;
    }
    r.elapsed = t - start;
    r.histogram = Some(hist);
    Ok(r)
}

/// UDP_RR: a lost datagram costs one timeout, counted, never a stall.
fn udp_rr(p: &Params, s: UdpSocket, barrier: &Barrier) -> Result<StreamResult> {
    let req = vec![0u8; p.request_size as usize];
    let mut resp = vec![0u8; (p.response_size as usize).max(64)];
    let mut hist = new_histogram();
    let mut r = StreamResult::default();
    barrier.wait();
    let start = Instant::now();
    let deadline = start + p.duration;
    let mut t = start;
    while t < deadline {
        signals::check()?;
        if let Err(e) = s.send(&req) {
            if e.kind() == io::ErrorKind::ConnectionRefused {
                bail!("the server at {} stopped answering on UDP: {e}", p.addr);
            }
        }
        match s.recv(&mut resp) {
            Ok(_) => {
                let done = Instant::now();
                hist.saturating_record((done - t).as_nanos().max(1) as u64);
                r.transactions += 1;
                t = done;
            }
            Err(e) if sock_timeout(&e) => {
                r.udp_timeouts += 1;
                t = Instant::now();
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                bail!("the server at {} stopped answering on UDP: {e}", p.addr)
            }
            Err(e) => return Err(e).context("receiving a response (UDP_RR)"),
        }
    }
    r.elapsed = t - start;
    r.histogram = Some(hist);
    Ok(r)
}

/// UDP_STREAM: numbered datagrams, paced when a rate is set.
fn udp_stream(p: &Params, s: UdpSocket, barrier: &Barrier) -> Result<StreamResult> {
    let mut buf = vec![0x5au8; p.send_size as usize];
    let bits_per_sec = p.udp_rate_mbit * 1e6 / p.streams as f64;
    let mut r = StreamResult::default();
    barrier.wait();
    let start = Instant::now();
    let deadline = start + p.duration;
    let mut seq = 0u64;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        signals::check()?;
        if bits_per_sec > 0.0 {
            let due = start + Duration::from_secs_f64(r.udp_bytes as f64 * 8.0 / bits_per_sec);
            if due > now {
                std::thread::sleep((due - now).min(deadline - now));
                continue;
            }
        }
        buf[..8].copy_from_slice(&seq.to_le_bytes());
        seq += 1;
        match s.send(&buf) {
            Ok(n) => {
                r.udp_sent += 1;
                r.udp_bytes += n as u64;
            }
            // A full queue or an ICMP error: the datagram is lost, the test goes on.
            Err(_) => r.udp_errors += 1,
        }
    }
    r.elapsed = start.elapsed();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(addr: SocketAddr, test: Test) -> Params {
        Params {
            addr,
            test,
            duration: Duration::from_millis(300),
            streams: 1,
            bidir: false,
            request_size: 1,
            response_size: 1,
            send_size: 1472,
            bufs: Buffers::default(),
            nodelay: false,
            cpus: (None, None),
            udp_rate_mbit: 0.0,
            udp_timeout: Duration::from_millis(20),
            connect_timeout: Duration::from_secs(1),
            secret: None,
        }
    }

    #[test]
    fn udp_rr_counts_lost_datagrams_and_ends_on_time() {
        // A peer that swallows every request.
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        let p = params(sink.local_addr().unwrap(), Test::UdpRr);
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.connect(p.addr).unwrap();
        s.set_read_timeout(Some(p.udp_timeout)).unwrap();
        let t = Instant::now();
        let r = udp_rr(&p, s, &Barrier::new(1)).unwrap();
        assert!(
            t.elapsed() < Duration::from_millis(600),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(r.transactions, 0);
        // 300 ms of 20 ms timeouts.
        assert!((8..=16).contains(&r.udp_timeouts), "{}", r.udp_timeouts);
    }

    #[test]
    fn udp_stream_paces_to_the_rate_and_numbers_datagrams() {
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        sink.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut p = params(sink.local_addr().unwrap(), Test::UdpStream);
        p.udp_rate_mbit = 10.0;
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.connect(p.addr).unwrap();
        let r = udp_stream(&p, s, &Barrier::new(1)).unwrap();
        let mbit = r.udp_bytes as f64 * 8.0 / r.elapsed.as_secs_f64() / 1e6;
        assert!((8.0..=11.0).contains(&mbit), "{mbit} Mbit/s");
        let mut buf = [0u8; 2048];
        for want in 0..3u64 {
            let n = sink.recv(&mut buf).unwrap();
            assert_eq!(n, 1472);
            assert_eq!(u64::from_le_bytes(buf[..8].try_into().unwrap()), want);
        }
    }
}
