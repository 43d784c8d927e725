//! Socket details std does not expose: buffer sizes set before connecting
//! (so the window scale follows them), a connect with a deadline, the
//! kernel's default send buffer (netperf's default send size), a stream
//! receiver's wake-up threshold, TCP_INFO's retransmission count, and
//! whole-system CPU busy time.

use std::io;
use std::mem::size_of;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::time::Duration;

use crate::sys::monitor::CpuTimes;

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: fd is a socket we own; the value is a plain int.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

fn getsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<u64> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: v and len are valid for the call.
    check(unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            &mut v as *mut _ as *mut libc::c_void,
            &mut len,
        )
    })?;
    Ok(v.max(0) as u64)
}

/// Socket buffer sizes to request; 0 keeps the system default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Buffers {
    pub sndbuf: u64,
    pub rcvbuf: u64,
}

/// Applies buffer sizes to a socket (before connect or listen where it matters).
pub fn set_buffers(fd: RawFd, b: Buffers) -> io::Result<()> {
    if b.sndbuf > 0 {
        setsockopt_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            b.sndbuf.min(i32::MAX as u64) as i32,
        )?;
    }
    if b.rcvbuf > 0 {
        setsockopt_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            b.rcvbuf.min(i32::MAX as u64) as i32,
        )?;
    }
    Ok(())
}

fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in6.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// A TCP socket of `addr`'s family with buffers set, not yet connected.
fn tcp_socket(addr: &SocketAddr, b: Buffers) -> io::Result<TcpStream> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket(2); the fd is owned by the TcpStream at once.
    let fd = check(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fd is a fresh socket nobody else owns.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    set_buffers(fd, b)?;
    Ok(stream)
}

/// Starts connecting `fd` to `addr`: true when the connection is already
/// made, false when it is in progress (a non-blocking socket, or a blocking
/// one whose send timeout ran out).
fn start_connect(fd: RawFd, addr: &SocketAddr) -> io::Result<bool> {
    let (ss, len) = sockaddr(addr);
    // SAFETY: ss/len describe a valid address.
    if unsafe { libc::connect(fd, &ss as *const _ as *const libc::sockaddr, len) } == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINPROGRESS) => Ok(false),
        _ => Err(err),
    }
}

/// Waits at most `wait` for a connect in progress on `fd`: true once it is
/// made, false if it is still in progress, its error if it failed.
fn connected_within(fd: RawFd, wait: Duration) -> io::Result<bool> {
    let n = poll_one(fd, libc::POLLOUT, wait.max(Duration::from_millis(1)));
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
    match getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_ERROR)? as i32 {
        0 => Ok(true),
        so_error => Err(io::Error::from_raw_os_error(so_error)),
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection timed out")
}

/// Connects with buffers set first and a deadline on the handshake.
pub fn connect(addr: &SocketAddr, b: Buffers, timeout: Duration) -> io::Result<TcpStream> {
    let stream = tcp_socket(addr, b)?;
    let fd = stream.as_raw_fd();
    stream.set_nonblocking(true)?;
    if !start_connect(fd, addr)? && !connected_within(fd, timeout)? {
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
    let fd = stream.as_raw_fd();
    if start_connect(fd, addr)? {
        return Ok(stream);
    }
    let started = std::time::Instant::now();
    while !connected_within(fd, tick)? {
        if give_up() || started.elapsed() >= timeout {
            return Err(timed_out());
        }
    }
    Ok(stream)
}

/// SO_SNDBUF of a fresh socket of this kind after applying `b`: netperf's
/// default send size.
pub fn send_buffer(udp: bool, b: Buffers) -> io::Result<u64> {
    let kind = if udp {
        libc::SOCK_DGRAM
    } else {
        libc::SOCK_STREAM
    };
    // SAFETY: plain socket(2), closed below.
    let fd = check(unsafe { libc::socket(libc::AF_INET, kind | libc::SOCK_CLOEXEC, 0) })?;
    let result =
        set_buffers(fd, b).and_then(|_| getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF));
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    result
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
pub fn set_receive_lowat(fd: RawFd, bytes: usize) -> io::Result<()> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if !lowat_is_safe(&release) {
        return Ok(());
    }
    setsockopt_int(
        fd,
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
pub fn buffer_sizes(fd: RawFd) -> (u64, u64) {
    (
        getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF).unwrap_or(0),
        getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap_or(0),
    )
}

/// Total retransmitted segments of a TCP connection (TCP_INFO).
pub fn retransmits(fd: RawFd) -> u64 {
    // SAFETY: an all-zero tcp_info is valid; the kernel fills what it knows.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: info and len are valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd,
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

/// Waits until `fd` is readable or `timeout` passes; true when readable.
pub fn wait_readable(fd: RawFd, timeout: Duration) -> bool {
    poll_one(fd, libc::POLLIN, timeout) > 0
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
    // SAFETY: one valid pollfd.
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
        set_receive_lowat(s.as_raw_fd(), STREAM_READ).unwrap();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let want = if lowat_is_safe(&release) {
            STREAM_READ
        } else {
            1
        };
        assert_eq!(
            getsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT).unwrap(),
            want as u64
        );
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
