//! The wire protocol between `virtperf net` and `virtperf serve`: one port
//! for everything. Every TCP connection opens with a 4-byte tag saying what it
//! is (control, data stream, or one connect/request/response transaction);
//! control messages are length-prefixed JSON carrying the protocol version; a
//! session cookie from the server ties data connections and UDP sockets to
//! their session. UDP sockets register with a 12-byte hello before sending.
//!
//! A control connection opens with the server's challenge: the server's
//! instance (random, fresh at every start) and a nonce fresh for this
//! connection, valid until its handshake deadline. A server given a secret
//! (every server the host starts for an environment run has a fresh one)
//! opens a session only for a hello carrying a proof: HMAC-SHA256 (RFC 2104)
//! keyed with the secret over that challenge, a fresh client nonce and the
//! request's fields. A captured hello is therefore good for nothing: not on
//! another connection, not after the handshake's few seconds, not on the
//! server restarted. The session's data connections and UDP sockets then
//! carry the server's random cookie, and UDP is taken only from the control
//! peer's address.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

/// Bumped whenever a message or a data-path rule changes meaning (2: the
/// server's challenge opens a control connection).
pub const VERSION: u32 = 2;
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
/// The highest CPU number a client may name for the server (`--net-cpus`).
pub const MAX_CPU: u32 = 1023;
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
    /// The CPU the server binds the session's data to (counted modulo the
    /// CPUs it may use); none: unbound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu: Option<u32>,
    /// Present when the client holds a secret (see [`prove`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
}

#[cfg(test)]
impl Hello {
    /// A plain request for tests: 1 s, one stream, 1-byte requests and
    /// responses, 16 KiB sends, system buffers, no proof.
    pub(crate) fn for_test(test: Test) -> Hello {
        Hello {
            version: VERSION,
            test,
            duration_s: 1.0,
            streams: 1,
            bidir: false,
            request_size: 1,
            response_size: 1,
            send_size: 16384,
            sndbuf: 0,
            rcvbuf: 0,
            nodelay: false,
            server_cpu: None,
            proof: None,
        }
    }
}

/// A client's proof that it holds the server's secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    /// 32 hex digits, fresh for every hello.
    pub nonce: String,
    /// HMAC-SHA256 over [`proof_message`], 64 hex digits.
    pub mac: String,
}

/// HMAC-SHA256 (RFC 2104 with SHA-256).
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(msg);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner);
    outer.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Random bytes from the kernel.
pub fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut b = [0u8; N];
    let mut got = 0;
    while got < N {
        // SAFETY: the pointer and length describe the rest of `b`.
        let n = unsafe { libc::getrandom(b[got..].as_mut_ptr() as *mut libc::c_void, N - got, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        } else {
            got += n as usize;
        }
    }
    Ok(b)
}

/// A fresh secret for one server, as the hex text the client is given.
pub fn new_secret() -> io::Result<String> {
    Ok(hex(&random_bytes::<32>()?))
}

/// What a server asks a control connection to prove: which server (its
/// instance, fresh at every start) and this connection's nonce, each 32
/// hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Challenge {
    pub server: String,
    pub nonce: String,
}

impl Challenge {
    /// A fresh nonce for a connection to the server instance `server`.
    pub fn fresh(server: &str) -> io::Result<Challenge> {
        Ok(Challenge {
            server: server.to_string(),
            nonce: hex(&random_bytes::<16>()?),
        })
    }
}

/// A fresh server instance's name: 32 hex digits.
pub fn new_instance() -> io::Result<String> {
    Ok(hex(&random_bytes::<16>()?))
}

/// What the proof covers: the server's challenge, the client's nonce and
/// every field of the request (the duration in whole milliseconds, so both
/// ends write the same text).
pub fn proof_message(challenge: &Challenge, nonce: &str, h: &Hello) -> Vec<u8> {
    let cpu = h
        .server_cpu
        .map(|c| format!(" cpu {c}"))
        .unwrap_or_default();
    format!(
        "virtperf-net {} {} {} {nonce} {} {} {} {} {} {} {} {} {} {}{cpu}",
        h.version,
        challenge.server,
        challenge.nonce,
        h.test.name(),
        (h.duration_s * 1000.0).round() as u64,
        h.streams,
        h.bidir,
        h.request_size,
        h.response_size,
        h.send_size,
        h.sndbuf,
        h.rcvbuf,
        h.nodelay
    )
    .into_bytes()
}

/// Signs a hello with `secret` over the server's `challenge` and a fresh
/// nonce.
pub fn prove(secret: &[u8], challenge: &Challenge, h: &mut Hello) -> io::Result<()> {
    let nonce = hex(&random_bytes::<16>()?);
    let mac = hex(&hmac_sha256(secret, &proof_message(challenge, &nonce, h)));
    h.proof = Some(Proof { nonce, mac });
    Ok(())
}

/// Checks a hello's proof against `secret` and the `challenge` this
/// connection was given (in constant time): a proof made for another
/// connection, another server instance or another request fails.
pub fn verify(secret: &[u8], challenge: &Challenge, h: &Hello) -> Result<(), &'static str> {
    let Some(p) = &h.proof else {
        return Err("this server needs the secret it was started with (--net-secret-file or VIRTPERF_NET_SECRET on the client)");
    };
    if p.nonce.len() != 32 || !p.nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("a malformed proof");
    }
    let want = hex(&hmac_sha256(secret, &proof_message(challenge, &p.nonce, h)));
    let differ = want
        .bytes()
        .zip(p.mac.bytes())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        | u8::from(want.len() != p.mac.len());
    if differ != 0 {
        return Err("a wrong secret, or a proof made for another connection");
    }
    Ok(())
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
    /// The server's first message on a control connection ([`Challenge`]).
    Challenge {
        version: u32,
        server: String,
        nonce: String,
    },
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
            duration_s: 10.0,
            streams: 2,
            ..Hello::for_test(Test::TcpRr)
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
    fn hmac_sha256_matches_rfc_4231() {
        // Test cases 1, 2 and 6 (a key longer than the block).
        let cases: [(&[u8], &[u8], &str); 3] = [
            (
                &[0x0b; 20],
                b"Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
        ];
        for (key, msg, want) in cases {
            assert_eq!(hex(&hmac_sha256(key, msg)), want);
        }
    }

    #[test]
    fn a_proof_holds_only_for_its_secret_its_challenge_and_its_request() {
        let server = new_instance().unwrap();
        let challenge = Challenge::fresh(&server).unwrap();
        let mut h = Hello {
            duration_s: 10.0,
            ..Hello::for_test(Test::TcpStream)
        };
        let wrong = Err("a wrong secret, or a proof made for another connection");
        assert!(verify(b"k", &challenge, &h)
            .unwrap_err()
            .contains("needs the secret"));
        prove(b"k", &challenge, &mut h).unwrap();
        // It crosses the wire and still holds.
        let mut buf = Vec::new();
        write_control(&mut buf, &Control::Hello(h.clone())).unwrap();
        let Control::Hello(back) = read_control(&mut buf.as_slice()).unwrap() else {
            panic!("a hello")
        };
        assert_eq!(verify(b"k", &challenge, &back), Ok(()));
        assert_eq!(verify(b"K", &challenge, &h), wrong);
        let mut longer = h.clone();
        longer.duration_s = 3600.0;
        assert_eq!(verify(b"k", &challenge, &longer), wrong);
        let mut bad = h.clone();
        bad.proof.as_mut().unwrap().nonce = "zz".into();
        assert_eq!(verify(b"k", &challenge, &bad), Err("a malformed proof"));
        // Issue 53, item 9: not on another connection of the same server,
        // nor on another instance (a restart) given the same nonce.
        let other_conn = Challenge::fresh(&server).unwrap();
        assert_ne!(other_conn, challenge);
        assert_eq!(verify(b"k", &other_conn, &h), wrong);
        let restarted = Challenge {
            server: new_instance().unwrap(),
            nonce: challenge.nonce.clone(),
        };
        assert_eq!(verify(b"k", &restarted, &h), wrong);
        // A fresh nonce every time.
        let mut again = h.clone();
        prove(b"k", &challenge, &mut again).unwrap();
        assert_ne!(again.proof, h.proof);
    }

    #[test]
    fn a_challenge_round_trips_with_its_version() {
        let c = Challenge::fresh(&new_instance().unwrap()).unwrap();
        let msg = Control::Challenge {
            version: VERSION,
            server: c.server,
            nonce: c.nonce,
        };
        let mut buf = Vec::new();
        write_control(&mut buf, &msg).unwrap();
        assert_eq!(read_control(&mut buf.as_slice()).unwrap(), msg);
    }

    #[test]
    fn netperf_names_are_accepted() {
        assert_eq!(Test::parse("TCP_RR"), Some(Test::TcpRr));
        assert_eq!(Test::parse("udp_stream"), Some(Test::UdpStream));
        assert_eq!(Test::parse("tcp_maerts"), Some(Test::TcpMaerts));
        assert_eq!(Test::parse("sctp_rr"), None);
    }
}
