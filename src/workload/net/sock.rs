//! Socket details std does not expose: buffer sizes set before connecting
//! (so the window scale follows them), a connect with a deadline, the
//! kernel's default send buffer (netperf's default send size), a stream
//! receiver's wake-up threshold, TCP_INFO's retransmission count, and
//! whole-system CPU busy time. `socket2` makes the calls it offers; the
//! rest (SO_RCVLOWAT, TCP_INFO, poll) are libc calls here.

use std::io;
use std::mem::size_of;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Duration;

use socket2::{Domain, SockAddr, SockRef, Socket, Type};

use crate::sys::monitor::CpuTimes;

fn setsockopt_int(
    socket: &impl AsFd,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: the descriptor is borrowed for the call; the value is a plain
    // int whose size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_fd().as_raw_fd(),
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Socket buffer sizes to request; 0 keeps the system default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Buffers {
    pub sndbuf: u64,
    pub rcvbuf: u64,
}

/// Applies buffer sizes to a socket (before connect or listen where it matters).
pub fn set_buffers(socket: &impl AsFd, b: Buffers) -> io::Result<()> {
    let s = SockRef::from(socket);
    if b.sndbuf > 0 {
        s.set_send_buffer_size(b.sndbuf.min(i32::MAX as u64) as usize)?;
    }
    if b.rcvbuf > 0 {
        s.set_recv_buffer_size(b.rcvbuf.min(i32::MAX as u64) as usize)?;
    }
    Ok(())
}

/// A TCP socket of `addr`'s family with buffers set, not yet connected.
fn tcp_socket(addr: &SocketAddr, b: Buffers) -> io::Result<TcpStream> {
    // Close-on-exec, as socket2 makes every socket.
    let socket = Socket::new(Domain::for_address(*addr), Type::STREAM, None)?;
    set_buffers(&socket, b)?;
    Ok(socket.into())
}

/// Starts connecting `stream` to `addr`: true when the connection is
/// already made, false when it is in progress (a non-blocking socket, or a
/// blocking one whose send timeout ran out).
fn start_connect(stream: &TcpStream, addr: &SocketAddr) -> io::Result<bool> {
    match SockRef::from(stream).connect(&SockAddr::from(*addr)) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Waits at most `wait` for a connect in progress on `stream`: true once it
/// is made, false if it is still in progress, its error if it failed.
fn connected_within(stream: &TcpStream, wait: Duration) -> io::Result<bool> {
    let n = poll_one(
        stream.as_raw_fd(),
        libc::POLLOUT,
        wait.max(Duration::from_millis(1)),
    );
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::Interrupted => Ok(false),
            _ => Err(e),
        };
    }
    if n == 0 {
        return Ok(false);
    }
    match SockRef::from(stream).take_error()? {
        None => Ok(true),
        Some(so_error) => Err(so_error),
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection timed out")
}

/// Connects with buffers set first and a deadline on the handshake.
pub fn connect(addr: &SocketAddr, b: Buffers, timeout: Duration) -> io::Result<TcpStream> {
    let stream = tcp_socket(addr, b)?;
    stream.set_nonblocking(true)?;
    if !start_connect(&stream, addr)? && !connected_within(&stream, timeout)? {
        return Err(timed_out());
    }
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// A blocking connect for TCP_CRR's inner loop, with few system calls but
/// still bounded: the send timeout (`tick`, kept afterwards for writes) ends
/// a connect the kernel cannot finish at once, which then goes on in the
/// background while this waits in `tick` slices, at most `timeout`, asking
/// `give_up` between them (Ctrl-C, the test's end).
pub fn connect_fast(
    addr: &SocketAddr,
    b: Buffers,
    tick: Duration,
    timeout: Duration,
    give_up: impl Fn() -> bool,
) -> io::Result<TcpStream> {
    let stream = tcp_socket(addr, b)?;
    stream.set_write_timeout(Some(tick))?;
    if start_connect(&stream, addr)? {
        return Ok(stream);
    }
    let started = std::time::Instant::now();
    while !connected_within(&stream, tick)? {
        if give_up() || started.elapsed() >= timeout {
            return Err(timed_out());
        }
    }
    Ok(stream)
}

/// SO_SNDBUF of a fresh socket of this kind after applying `b`: netperf's
/// default send size.
pub fn send_buffer(udp: bool, b: Buffers) -> io::Result<u64> {
    let kind = if udp { Type::DGRAM } else { Type::STREAM };
    let socket = Socket::new(Domain::IPV4, kind, None)?;
    set_buffers(&socket, b)?;
    Ok(socket.send_buffer_size()? as u64)
}

/// How a stream test's receiver reads: in chunks of this size, woken only
/// once this much has arrived (or the sender closed, or the window is
/// nearly shut). On loopback the sender's CPU is the bottleneck and every
/// wake-up of a sleeping receiver is an inter-processor interrupt sent from
/// it (expensive in a VM); waking per 256 KiB instead of per segment halves
/// those and leaves the bytes counted and the sender's clock as they were.
pub const STREAM_READ: usize = 256 << 10;

/// Sets a TCP receiver's SO_RCVLOWAT: a blocked read or poll wakes once
/// `bytes` are queued (the kernel caps it at half a fixed receive buffer,
/// and still wakes at the end of the stream, when the window closes or
/// when receive memory runs short). Kernels before 5.7 lack that last
/// wake-up and can stall a reader on fat buffers, so there it is left at
/// the default (one byte).
pub fn set_receive_lowat(socket: &impl AsFd, bytes: usize) -> io::Result<()> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if !lowat_is_safe(&release) {
        return Ok(());
    }
    setsockopt_int(
        socket,
        libc::SOL_SOCKET,
        libc::SO_RCVLOWAT,
        bytes.min(i32::MAX as usize) as i32,
    )
}

/// Whether a kernel release (`uname -r`) wakes SO_RCVLOWAT readers under
/// memory pressure (Linux 5.7 and later).
fn lowat_is_safe(release: &str) -> bool {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= (5, 7)
}

/// SO_SNDBUF and SO_RCVBUF of a socket, as the kernel reports them.
pub fn buffer_sizes(socket: &impl AsFd) -> (u64, u64) {
    let s = SockRef::from(socket);
    (
        s.send_buffer_size().map_or(0, |n| n as u64),
        s.recv_buffer_size().map_or(0, |n| n as u64),
    )
}

/// Total retransmitted segments of a TCP connection (TCP_INFO).
pub fn retransmits(socket: &impl AsFd) -> u64 {
    // SAFETY: an all-zero tcp_info is valid; the kernel fills what it knows.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the descriptor is borrowed for the call; info and len are
    // valid for writes, and len says how much of info the kernel may fill.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if rc < 0 {
        0
    } else {
        info.tcpi_total_retrans as u64
    }
}

/// Waits until `socket` is readable or `timeout` passes; true when readable.
pub fn wait_readable(socket: &impl AsFd, timeout: Duration) -> bool {
    poll_one(socket.as_fd().as_raw_fd(), libc::POLLIN, timeout) > 0
}

/// poll(2) on one descriptor for `events`, at most `timeout` (in whole
/// milliseconds): its return value.
fn poll_one(fd: RawFd, events: libc::c_short, timeout: Duration) -> libc::c_int {
    let mut pfd = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: pfd is one valid pollfd, and the count passed is 1.
    unsafe { libc::poll(&mut pfd, 1, ms) }
}

/// Whole-system CPU counters now.
pub fn cpu_now() -> CpuTimes {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| CpuTimes::parse(&s))
        .unwrap_or_default()
}

/// Busy share of all CPUs between two samples, in percent (netperf's -c/-C
/// figure: the whole system, not this process).
pub fn cpu_busy_pct(a: &CpuTimes, b: &CpuTimes) -> f64 {
    let busy = |c: &CpuTimes| c.user + c.nice + c.system + c.irq + c.softirq;
    let total = |c: &CpuTimes| busy(c) + c.idle + c.iowait + c.steal;
    let dt = total(b).saturating_sub(total(a));
    if dt == 0 {
        return 0.0;
    }
    100.0 * busy(b).saturating_sub(busy(a)) as f64 / dt as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requested_send_buffer_is_what_the_kernel_reports() {
        let default = send_buffer(false, Buffers::default()).unwrap();
        assert!(default > 0);
        // Linux doubles the request for bookkeeping.
        let set = send_buffer(
            false,
            Buffers {
                sndbuf: 65536,
                rcvbuf: 0,
            },
        )
        .unwrap();
        assert_eq!(set, 131072);
    }

    #[test]
    fn the_receive_threshold_is_set_only_on_kernels_that_wake_under_pressure() {
        assert!(lowat_is_safe("6.18.44-fc-v595"));
        assert!(lowat_is_safe("5.7.0"));
        assert!(lowat_is_safe("10.0"));
        assert!(!lowat_is_safe("5.6.19"));
        assert!(!lowat_is_safe("4.19.0-27-amd64"));
        assert!(!lowat_is_safe("3.10.0-1160.el7.x86_64"));
        assert!(!lowat_is_safe(""));
        // Where it is set, the kernel reports it back.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        set_receive_lowat(&s, STREAM_READ).unwrap();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let want = if lowat_is_safe(&release) {
            STREAM_READ
        } else {
            1
        };
        let mut lowat: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: lowat and len are valid for writes, len says lowat's size.
        let rc = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                &mut lowat as *mut libc::c_int as *mut libc::c_void,
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        assert_eq!(lowat as usize, want);
    }

    #[test]
    fn connect_to_a_closed_port_fails_fast() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let t = std::time::Instant::now();
        let err = connect(&addr, Buffers::default(), Duration::from_secs(2)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}
