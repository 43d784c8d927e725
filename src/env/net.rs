//! Routes between an environment's instances and the host: each driver
//! says how a client on one side reaches a server on the other (a `Route`:
//! where the server binds, what the client dials, the path results record),
//! with the two look-ups drivers build them from. Whose peer runs where,
//! and for how long, is `peer`'s.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use anyhow::{anyhow, Context, Result};

/// How a client reaches a server across an environment's boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Where the server listens: on the host for a host server, inside for
    /// a server in the environment. Port 0: any free one.
    pub bind: SocketAddr,
    /// The address the client dials.
    pub dial_ip: IpAddr,
    /// The port the client dials when it is not the server's own (a port
    /// forwarded by QEMU).
    pub dial_port: Option<u16>,
    /// The path, as results record it ("docker bridge", "QEMU user network").
    pub path: String,
}

impl Route {
    /// Both ends on this machine's loopback.
    pub fn loopback(path: &str) -> Route {
        Route {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            dial_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            dial_port: None,
            path: path.to_string(),
        }
    }

    /// Where the client dials a server listening on `port`.
    pub fn dial(&self, port: u16) -> SocketAddr {
        SocketAddr::new(self.dial_ip, self.dial_port.unwrap_or(port))
    }
}

/// This host's address on the interface that faces `remote`, as the
/// routing table picks it: a connected UDP socket learns its source
/// address, and nothing is sent.
pub fn local_address_towards(remote: IpAddr) -> Result<IpAddr> {
    let any: SocketAddr = if remote.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let probe = std::net::UdpSocket::bind(any)?;
    probe
        .connect((remote, 9))
        .with_context(|| format!("finding the route to {remote}"))?;
    Ok(probe.local_addr()?.ip())
}

/// The first line of `cli inspect -f FORMAT NAME`, for a container's
/// address or gateway; an error saying what was asked otherwise.
pub fn inspect_ip(cli: &str, name: &str, format: &str) -> Result<IpAddr> {
    let out = std::process::Command::new(cli)
        .args(["inspect", "-f", format, name])
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("running {cli} inspect"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let word = text.split_whitespace().next().unwrap_or("");
    word.parse().map_err(|_| {
        anyhow!(
            "{cli} inspect {format} of {name} gave '{}' (stderr: {}), not an IP address: is the container on a bridge network?",
            crate::core::text::one_line(word, 60),
            crate::core::text::one_line(String::from_utf8_lossy(&out.stderr).trim(), 200)
        )
    })
}
