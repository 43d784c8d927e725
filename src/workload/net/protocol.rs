//! The wire protocol between `virtperf net` and `virtperf serve`: one port
//! for everything. Every TCP connection opens with a 4-byte tag saying what it
//! is (control, data stream, or one connect/request/response transaction);
//! control messages are length-prefixed JSON carrying the protocol version; a
//! session cookie from the server ties data connections and UDP sockets to
//! their session. UDP sockets register with a 12-byte hello before sending.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

/// Bumped whenever a message or a data-path rule changes meaning.
pub const VERSION: u32 = 1;
/// The port `virtperf serve` listens on (TCP and UDP), as netperf's 12865 plus one.
pub const DEFAULT_PORT: u16 = 12866;

/// A control connection: framed JSON messages follow.
pub const TAG_CONTROL: [u8; 4] = *b"VPNC";
/// A data connection of a session: cookie, stream index and direction follow.
pub const TAG_DATA: [u8; 4] = *b"VPND";
/// One TCP_CRR transaction: cookie and the request follow; the server answers
/// and closes first (so TIME_WAIT lands on the server, as with netperf).
pub const TAG_CRR: [u8; 4] = *b"VPNR";
/// A UDP socket's registration: the cookie follows; the server echoes it.
pub const UDP_HELLO: [u8; 4] = *b"VPNU";

/// Bounds the server enforces (and the client checks first, for a clear error).
pub const MAX_CONTROL_BYTES: u32 = 64 * 1024;
pub const MAX_MESSAGE_BYTES: u64 = 16 << 20;
pub const MAX_UDP_BYTES: u64 = 65_507;
pub const MAX_STREAMS: u32 = 64;
pub const MAX_DURATION_S: f64 = 3600.0;
pub const MAX_SESSIONS: usize = 16;

/// The direction of a data connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Direction {
    /// The client sends, the server counts (TCP_STREAM).
    ToServer = 0,
    /// The server sends, the client counts (TCP_MAERTS).
    ToClient = 1,
    /// Request/response (TCP_RR).
    RequestResponse = 2,
}

impl Direction {
    pub fn from_u8(b: u8) -> Option<Direction> {
        match b {
            0 => Some(Direction::ToServer),
            1 => Some(Direction::ToClient),
            2 => Some(Direction::RequestResponse),
            _ => None,
        }
    }
}

/// The tests, with netperf's meanings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    TcpStream,
    TcpMaerts,
    TcpRr,
    TcpCrr,
    UdpRr,
    UdpStream,
}

impl Test {
    pub const ALL: &'static [Test] = &[
        Test::TcpStream,
        Test::TcpMaerts,
        Test::TcpRr,
        Test::TcpCrr,
        Test::UdpRr,
        Test::UdpStream,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Test::TcpStream => "tcp_stream",
            Test::TcpMaerts => "tcp_maerts",
            Test::TcpRr => "tcp_rr",
            Test::TcpCrr => "tcp_crr",
            Test::UdpRr => "udp_rr",
            Test::UdpStream => "udp_stream",
        }
    }

    /// Our names and netperf's upper-case ones.
    pub fn parse(word: &str) -> Option<Test> {
        let lower = word.to_ascii_lowercase();
        Test::ALL.iter().copied().find(|t| t.name() == lower)
    }

    pub fn is_udp(self) -> bool {
        matches!(self, Test::UdpRr | Test::UdpStream)
    }

    pub fn is_rr(self) -> bool {
        matches!(self, Test::TcpRr | Test::TcpCrr | Test::UdpRr)
    }
}

/// What a client asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub test: Test,
    pub duration_s: f64,
    pub streams: u32,
    pub bidir: bool,
    pub request_size: u64,
    pub response_size: u64,
    pub send_size: u64,
    /// 0: the system default.
    pub sndbuf: u64,
    pub rcvbuf: u64,
    pub nodelay: bool,
}

/// What the server measured of one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerResults {
    /// TCP_STREAM: bytes received, per stream, in stream order.
    pub bytes_received: Vec<u64>,
    /// TCP_MAERTS: the sending time of each stream including the final
    /// flush (until the client acknowledged the last byte), in seconds.
    pub maerts_elapsed_s: Vec<f64>,
    pub udp_datagrams: u64,
    pub udp_bytes: u64,
    pub udp_out_of_order: u64,
    /// TCP retransmissions on the server's sending sockets.
    pub retransmits: u64,
    /// Whole-system CPU busy % on the server while the session ran.
    pub cpu_pct: f64,
}

/// A control message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Control {
    Hello(Hello),
    Welcome {
        version: u32,
        cookie: u64,
    },
    Refused {
        version: u32,
        reason: String,
    },
    /// The client finished sending; the server answers with `Results`.
    Finish {
        version: u32,
    },
    Results {
        version: u32,
        results: ServerResults,
    },
}

/// Why a control exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the peer speaks virtperf net protocol {theirs}, this virtperf speaks {VERSION}: run the same virtperf version on both ends")]
    Version { theirs: u64 },
    #[error("the peer is not a virtperf net server or client ({0})")]
    Garbled(String),
}

/// Writes one framed message.
pub fn write_control(w: &mut impl Write, msg: &Control) -> io::Result<()> {
    let body = serde_json::to_vec(msg).expect("control messages serialize");
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    w.write_all(&frame)
}

/// Reads one framed message, checking its size and version before its shape,
/// so that a peer of another version gets a version error, not a parse error.
pub fn read_control(r: &mut impl Read) -> Result<Control, ProtocolError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len);
    if len == 0 || len > MAX_CONTROL_BYTES {
        return Err(ProtocolError::Garbled(format!(
            "a control message of {len} bytes"
        )));
    }
    let mut body = vec![0u8; len as usize];
    r.read_exact(&mut body)?;
    let value: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| ProtocolError::Garbled(format!("bad JSON: {e}")))?;
    match value.get("version").and_then(|v| v.as_u64()) {
        Some(v) if v == VERSION as u64 => {}
        Some(theirs) => return Err(ProtocolError::Version { theirs }),
        None => return Err(ProtocolError::Garbled("no version".into())),
    }
    serde_json::from_value(value).map_err(|e| ProtocolError::Garbled(e.to_string()))
}

/// The header of a data connection.
pub fn data_header(cookie: u64, stream: u32, dir: Direction) -> [u8; 17] {
    let mut h = [0u8; 17];
    h[..4].copy_from_slice(&TAG_DATA);
    h[4..12].copy_from_slice(&cookie.to_le_bytes());
    h[12..16].copy_from_slice(&stream.to_le_bytes());
    h[16] = dir as u8;
    h
}

/// The 12-byte UDP registration datagram (and the server's echo).
pub fn udp_hello(cookie: u64) -> [u8; 12] {
    let mut h = [0u8; 12];
    h[..4].copy_from_slice(&UDP_HELLO);
    h[4..].copy_from_slice(&cookie.to_le_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_messages_round_trip() {
        let msg = Control::Hello(Hello {
            version: VERSION,
            test: Test::TcpRr,
            duration_s: 10.0,
            streams: 2,
            bidir: false,
            request_size: 1,
            response_size: 1,
            send_size: 16384,
            sndbuf: 0,
            rcvbuf: 0,
            nodelay: false,
        });
        let mut buf = Vec::new();
        write_control(&mut buf, &msg).unwrap();
        assert_eq!(read_control(&mut buf.as_slice()).unwrap(), msg);
    }

    #[test]
    fn another_version_is_named_and_garbage_refused() {
        let body = br#"{"type":"welcome","version":7,"cookie":1}"#;
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        let err = read_control(&mut frame.as_slice()).unwrap_err();
        assert!(matches!(err, ProtocolError::Version { theirs: 7 }), "{err}");
        assert!(err.to_string().contains("protocol 7"));
        let huge = [0xffu8, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_control(&mut huge.as_slice()),
            Err(ProtocolError::Garbled(_))
        ));
    }

    #[test]
    fn netperf_names_are_accepted() {
        assert_eq!(Test::parse("TCP_RR"), Some(Test::TcpRr));
        assert_eq!(Test::parse("udp_stream"), Some(Test::UdpStream));
        assert_eq!(Test::parse("tcp_maerts"), Some(Test::TcpMaerts));
        assert_eq!(Test::parse("sctp_rr"), None);
    }
}
