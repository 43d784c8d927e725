//! Inside the VM: virtperf is PID 1. It mounts /proc, /sys and /dev, loads
//! the modules listed in /modules.order, brings up the network the host asked
//! for on the kernel command line, mounts the scratch disk, speaks the
//! agent protocol on the second serial port (ttyS1, raw mode) and powers the
//! machine off when the plan is done, or on any failure.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::io::BufReader;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

fn mount(src: &str, target: &str, fstype: &str) -> bool {
    let _ = std::fs::create_dir_all(target);
    // SAFETY: NUL-terminated strings that outlive the call.
    unsafe {
        libc::mount(
            c(src).as_ptr(),
            c(target).as_ptr(),
            c(fstype).as_ptr(),
            0,
            std::ptr::null(),
        ) == 0
    }
}

fn load_modules() {
    let list = std::fs::read_to_string("/modules.order").unwrap_or_default();
    for path in list.lines().filter(|l| !l.is_empty()) {
        match std::fs::File::open(path) {
            Ok(f) => {
                // SAFETY: finit_module on an open module file, no parameters.
                let r = unsafe {
                    libc::syscall(libc::SYS_finit_module, f.as_raw_fd(), c("").as_ptr(), 0)
                };
                let err = std::io::Error::last_os_error();
                if r != 0 && err.raw_os_error() != Some(libc::EEXIST) {
                    eprintln!("virtperf-init: loading {path}: {err}");
                }
            }
            Err(e) => eprintln!("virtperf-init: {path}: {e}"),
        }
    }
}

fn power_off() -> ! {
    // SAFETY: sync and reboot have no memory-safety preconditions.
    unsafe {
        libc::sync();
        libc::reboot(libc::LINUX_REBOOT_CMD_POWER_OFF);
    }
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Brings the loopback up and, when the host put `virtperf.ip=A.B.C.D/N` on
/// the kernel command line (QEMU's user-mode network), gives the first NIC
/// that address, so a server in the guest is reachable through the port the
/// host forwards. No route is needed: QEMU's side (10.0.2.2) is on-link.
fn configure_network() {
    if let Err(e) = interface_up("lo", None) {
        eprintln!("virtperf-init: bringing lo up: {e}");
    }
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let Some(addr) = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("virtperf.ip="))
        .and_then(|a| a.split_once('/'))
        .and_then(|(ip, n)| Some((ip.parse::<Ipv4Addr>().ok()?, n.parse::<u32>().ok()?)))
        .filter(|&(_, n)| n <= 32)
    else {
        return;
    };
    // virtio_net registers eth0 while its module loads; allow for a slow probe.
    let until = Instant::now() + Duration::from_secs(5);
    while !std::path::Path::new("/sys/class/net/eth0").exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Err(e) = interface_up("eth0", Some(addr)) {
        eprintln!("virtperf-init: configuring eth0: {e}");
    }
}

fn sockaddr_v4(ip: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr are both 16 bytes; the kernel reads
    // the address family to interpret it.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// Sets an interface's IPv4 address and netmask (if given) and its UP flag.
fn interface_up(name: &str, addr: Option<(Ipv4Addr, u32)>) -> std::io::Result<()> {
    let check = |r: libc::c_int| {
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    // SAFETY: a socket of our own for the ioctls, closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    check(fd)?;
    // SAFETY: ifreq is plain data; each ioctl gets a valid, named request.
    let result = unsafe {
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, b) in req
            .ifr_name
            .iter_mut()
            .zip(name.bytes().take(libc::IFNAMSIZ - 1))
        {
            *d = b as libc::c_char;
        }
        (|| {
            if let Some((ip, prefix)) = addr {
                req.ifr_ifru.ifru_addr = sockaddr_v4(ip);
                check(libc::ioctl(fd, libc::SIOCSIFADDR, &req))?;
                let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
                req.ifr_ifru.ifru_netmask = sockaddr_v4(Ipv4Addr::from(mask));
                check(libc::ioctl(fd, libc::SIOCSIFNETMASK, &req))?;
            }
            check(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req))?;
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            check(libc::ioctl(fd, libc::SIOCSIFFLAGS, &req))
        })()
    };
    // SAFETY: closing the socket opened above.
    unsafe { libc::close(fd) };
    result
}

/// The scratch disk's device name: `virtperf.disk=NAME` on the kernel
/// command line (the libvirt driver's `disk-bus=scsi` gives `sda`), else
/// `vda` (virtio-blk). Only a plain device name is taken.
fn scratch_disk() -> String {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("virtperf.disk="))
        .filter(|d| {
            !d.is_empty()
                && d.len() < 32
                && d.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
        .unwrap_or("vda")
        .to_string()
}

/// Makes a serial port a clean 8-bit channel: no echo, no line editing.
fn raw_mode(fd: i32) {
    // SAFETY: termios calls on an open tty descriptor.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) == 0 {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(fd, libc::TCSANOW, &t);
        }
    }
}

/// PID 1's whole life.
pub fn main() -> ! {
    mount("proc", "/proc", "proc");
    mount("sysfs", "/sys", "sysfs");
    mount("devtmpfs", "/dev", "devtmpfs");
    load_modules();
    configure_network();
    // The disk node appears once its driver has probed the device.
    let disk = format!("/dev/{}", scratch_disk());
    let until = Instant::now() + Duration::from_secs(10);
    while !std::path::Path::new(&disk).exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    if std::path::Path::new(&disk).exists() && !mount(&disk, "/scratch", "ext4") {
        eprintln!(
            "virtperf-init: mounting {disk}: {}",
            std::io::Error::last_os_error()
        );
    }
    let tty = match OpenOptions::new().read(true).write(true).open("/dev/ttyS1") {
        Ok(t) => t,
        Err(e) => {
            eprintln!("virtperf-init: opening /dev/ttyS1: {e}");
            power_off();
        }
    };
    raw_mode(tty.as_raw_fd());
    let mut out = tty.try_clone().expect("dup of the serial port");
    let mut input = BufReader::new(tty);
    if let Err(e) = crate::agent::serve(&mut input, &mut out) {
        eprintln!("virtperf-init: {e:#}");
    }
    // SAFETY: unmounting our own mount; failure is harmless before power-off.
    unsafe { libc::umount2(c("/scratch").as_ptr(), 0) };
    power_off();
}
