//! `net`: netperf's tests (TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, UDP_RR,
//! UDP_STREAM) with netperf's defaults and meanings, against `virtperf serve`
//! on one port. Adds several streams, both directions at once, a UDP send
//! rate, a UDP_RR timeout, latency percentiles and CPU on both ends.
//!
//! Without `--net-host`, the client talks to 127.0.0.1:12866 and, when no
//! server runs there, starts one in this process on a free loopback port, so
//! `virtperf net` works alone (the run's details say which).

pub mod client;
mod figures;
pub mod import;
pub mod protocol;
pub mod server;
pub mod sock;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::core::options::{CliError, OptKind, OptionSpec, Values};
use crate::engine::{self, EngineOptions};
use crate::workload::{
    Category, Measurement, MetricDef, Needs, NetworkPeer, PeerServer, Workload, WorkloadDef,
};
use client::Params;
use figures::figures;
use protocol::{Test, DEFAULT_PORT, MAX_MESSAGE_BYTES, MAX_STREAMS, MAX_UDP_BYTES};
use sock::Buffers;

const TEST_WORDS: &[&str] = &[
    "tcp_stream",
    "tcp_maerts",
    "tcp_rr",
    "tcp_crr",
    "udp_rr",
    "udp_stream",
    "TCP_STREAM",
    "TCP_MAERTS",
    "TCP_RR",
    "TCP_CRR",
    "UDP_RR",
    "UDP_STREAM",
];

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "net-test",
        OptKind::Choice(TEST_WORDS),
        "tcp_stream",
        "the test, netperf's meaning (upper-case names too): tcp_stream, tcp_maerts (server sends), tcp_rr, tcp_crr (a connection per transaction), udp_rr, udp_stream",
    ),
    OptionSpec::new(
        "net-host",
        OptKind::Text,
        "",
        "HOST[:PORT] of a running 'virtperf serve' (default 127.0.0.1:12866; when none runs there, one is started in this process)",
    ),
    OptionSpec::new(
        "net-server",
        OptKind::Choice(&["host", "env"]),
        "host",
        "with --env: where the server runs. host: virtperf starts one on the host, reached from inside (a container at its bridge gateway, a QEMU guest at 10.0.2.2); env: inside the environment, reached from the host (the container's address, QEMU's forwarded port), the client on the host",
    ),
    OptionSpec::new(
        "net-streams",
        OptKind::Int {
            min: 1,
            max: MAX_STREAMS as u64,
        },
        "1",
        "connections (or UDP sockets) in parallel, figures summed",
    ),
    OptionSpec::new(
        "net-bidir",
        OptKind::Bool,
        "off",
        "tcp_stream/tcp_maerts: send in both directions at once (each stream both ways)",
    ),
    OptionSpec::new(
        "net-req-size",
        OptKind::Size { min: 1 },
        "1",
        "RR tests: request size in bytes (netperf -r's first figure)",
    ),
    OptionSpec::new(
        "net-resp-size",
        OptKind::Size { min: 1 },
        "1",
        "RR tests: response size in bytes (netperf -r's second figure)",
    ),
    OptionSpec::new(
        "net-send-size",
        OptKind::Size { min: 1 },
        "",
        "stream tests: bytes per send (netperf -m; default the socket's send buffer, at most 65507 for UDP)",
    ),
    OptionSpec::new(
        "net-sndbuf",
        OptKind::Size { min: 1 },
        "",
        "socket send buffer to request, both ends (default: the system's)",
    ),
    OptionSpec::new(
        "net-rcvbuf",
        OptKind::Size { min: 1 },
        "",
        "socket receive buffer to request, both ends (default: the system's)",
    ),
    OptionSpec::new(
        "net-nodelay",
        OptKind::Bool,
        "off",
        "TCP_NODELAY: turn Nagle's algorithm off (netperf -D)",
    ),
    OptionSpec::new(
        "net-cpus",
        OptKind::Text,
        "",
        "L,R: bind the client's streams to CPU L of its environment and the server's to CPU R of its machine, as netperf -T L,R (one may be left out: 1, or ,0; each counted modulo the CPUs its end may use); a request/response test whose ends the scheduler puts on one CPU in one run and on two in the next is bimodal",
    ),
    OptionSpec::new(
        "net-udp-rate",
        OptKind::Float { min: 0.0, max: 1e6 },
        "0",
        "udp_stream: offered load in 10^6 bit/s over all streams (0 = as fast as possible)",
    ),
    OptionSpec::new(
        "net-udp-timeout",
        OptKind::Float {
            min: 1.0,
            max: 60_000.0,
        },
        "200",
        "udp_rr: milliseconds to wait for a response before counting the datagram lost",
    ),
    OptionSpec::new(
        "net-connect-timeout",
        OptKind::Float {
            min: 0.1,
            max: 600.0,
        },
        "5",
        "seconds to wait for the server to accept and answer",
    ),
    OptionSpec::new(
        "net-secret",
        OptKind::Text,
        "",
        "the secret the server was started with (an environment run's host sets it; by hand prefer --net-secret-file or VIRTPERF_NET_SECRET, which stay out of ps)",
    ),
    OptionSpec::new(
        "net-secret-file",
        OptKind::Text,
        "",
        "a file whose first line is the server's secret (serve --secret-file)",
    ),
];

/// Where `net-secret` comes from when not given: its file option, else the
/// environment (as the database passwords, see `Job::resolve_passwords`).
pub const SECRET_SOURCES: &[(&str, &str)] = &[("net-secret", server::SECRET_ENV)];

pub const DEF: WorkloadDef = WorkloadDef {
    name: "net",
    summary: "Network: netperf's TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, UDP_RR, UDP_STREAM against `virtperf serve`",
    options: OPTIONS,
    // One test for --time; latency percentiles as the engine reports them.
    engine: &["time", "percentile"],
    needs: Needs {
        workdir: None,
        prepare: false,
        network: Some(&PEER),
        root: false,
    },
    metrics: METRICS,
    area: crate::workload::Area::Network,
    sysbench: None,
    build,
};

/// How an environment run gives `net` its server.
pub const PEER: NetworkPeer = NetworkPeer {
    address_option: "net-host",
    placement_option: "net-server",
    placement_env: "env",
    secret_option: "net-secret",
    serve: |addr, secret| {
        Ok(Box::new(server::Server::start_with_secret(
            addr,
            Some(secret.as_bytes().to_vec()),
        )?))
    },
};

impl PeerServer for server::Server {
    fn addr(&self) -> SocketAddr {
        server::Server::addr(self)
    }
}

/// The path to a server at `addr`, as this process sees it: loopback, a
/// network namespace other than init's (`ip netns exec`), or a network.
/// An environment run replaces it with the path it set up.
fn path_to(addr: SocketAddr) -> String {
    let ns = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
    if addr.ip().is_loopback() {
        "loopback".into()
    } else if matches!((ns("self"), ns("1")), (Some(a), Some(b)) if a != b) {
        format!("netns (to {})", addr.ip())
    } else {
        format!("network (to {})", addr.ip())
    }
}

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(NetWorkload::new(values)?))
}

const NET: Option<Category> = Some(Category::NetworkIo);

/// Every metric `net` can produce; a run reports those of its test.
/// Throughputs are in 10^6 bit/s (netperf's unit), latencies in microseconds.
pub const METRICS: &[MetricDef] = &[
    MetricDef::new("tcp_stream_mbit_per_sec", "Mbit/s", true, true, NET),
    MetricDef::new("tcp_maerts_mbit_per_sec", "Mbit/s", true, true, None),
    MetricDef::new("tcp_rr_trans_per_sec", "trans/s", true, true, NET),
    MetricDef::new("tcp_crr_trans_per_sec", "trans/s", true, true, NET),
    MetricDef::new("udp_rr_trans_per_sec", "trans/s", true, true, NET),
    MetricDef::new("udp_stream_mbit_per_sec", "Mbit/s", true, true, NET),
    MetricDef::new("udp_stream_send_mbit_per_sec", "Mbit/s", true, false, None),
    MetricDef::new("udp_stream_loss_pct", "%", false, false, None),
    MetricDef::new("udp_stream_out_of_order", "datagrams", false, false, None),
    MetricDef::new("udp_rr_timeouts", "datagrams", false, false, None),
    MetricDef::new("tcp_rr_latency_p50_us", "us", false, false, None),
    MetricDef::new("tcp_rr_latency_p90_us", "us", false, false, None),
    MetricDef::new("tcp_rr_latency_p99_us", "us", false, false, None),
    MetricDef::new("tcp_rr_latency_p999_us", "us", false, false, None),
    MetricDef::new("tcp_rr_latency_max_us", "us", false, false, None),
    MetricDef::new("tcp_crr_latency_p50_us", "us", false, false, None),
    MetricDef::new("tcp_crr_latency_p90_us", "us", false, false, None),
    MetricDef::new("tcp_crr_latency_p99_us", "us", false, false, None),
    MetricDef::new("tcp_crr_latency_p999_us", "us", false, false, None),
    MetricDef::new("tcp_crr_latency_max_us", "us", false, false, None),
    MetricDef::new("udp_rr_latency_p50_us", "us", false, false, None),
    MetricDef::new("udp_rr_latency_p90_us", "us", false, false, None),
    MetricDef::new("udp_rr_latency_p99_us", "us", false, false, None),
    MetricDef::new("udp_rr_latency_p999_us", "us", false, false, None),
    MetricDef::new("udp_rr_latency_max_us", "us", false, false, None),
    MetricDef::new("tcp_retransmits", "segments", false, false, None),
    MetricDef::new("cpu_local_pct", "%", false, false, None),
    MetricDef::new("cpu_remote_pct", "%", false, false, None),
];

/// Where the server is: an explicit `--net-host`, or the default on loopback.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    Given(SocketAddr),
    Default,
}

pub struct NetWorkload {
    test: Test,
    target: Target,
    streams: u32,
    bidir: bool,
    request_size: u64,
    response_size: u64,
    send_size: u64,
    bufs: Buffers,
    nodelay: bool,
    /// `--net-cpus`: the client's and the server's CPU.
    cpus: (Option<u32>, Option<u32>),
    udp_rate_mbit: f64,
    udp_timeout: Duration,
    connect_timeout: Duration,
    secret: Option<Vec<u8>>,
}

fn out_of_range(name: &str, value: u64, max: u64) -> CliError {
    CliError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        allowed: format!("a size from 1 to {max} bytes for this test"),
    }
}

/// `HOST[:PORT]`, `[V6]:PORT` or a bare IPv6 address.
fn parse_host(text: &str) -> Result<SocketAddr, CliError> {
    let bad = |why: String| CliError::InvalidValue {
        name: "net-host".into(),
        value: text.into(),
        allowed: format!("HOST[:PORT], e.g. 127.0.0.1:12866 or [::1]:12866 ({why})"),
    };
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_PORT));
    }
    let with_port = if text.ends_with(']') || !text.contains(':') {
        format!("{text}:{DEFAULT_PORT}")
    } else {
        text.to_string()
    };
    let mut addrs = with_port
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?;
    addrs.next().ok_or_else(|| bad("no address".into()))
}

/// `--net-cpus=L,R`, either part empty.
fn parse_cpus(text: &str) -> Result<(Option<u32>, Option<u32>), CliError> {
    let bad = || CliError::InvalidValue {
        name: "net-cpus".into(),
        value: text.into(),
        allowed: format!(
            "L,R: the client's and the server's CPU, each from 0 to {}, either left out (1, or ,0)",
            protocol::MAX_CPU
        ),
    };
    let one = |part: &str| -> Result<Option<u32>, CliError> {
        match part.trim() {
            "" => Ok(None),
            n => n
                .parse::<u32>()
                .ok()
                .filter(|&c| c <= protocol::MAX_CPU)
                .map(Some)
                .ok_or_else(bad),
        }
    };
    let mut parts = text.split(',');
    let (l, r) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok((one(l)?, one(r)?))
}

impl NetWorkload {
    pub fn new(v: &Values) -> Result<NetWorkload> {
        let test = Test::parse(v.text("net-test")).expect("the option table lists only tests");
        if v.flag("net-bidir") && !matches!(test, Test::TcpStream | Test::TcpMaerts) {
            return Err(CliError::Usage(format!(
                "--net-bidir applies to tcp_stream and tcp_maerts, not {}",
                test.name()
            ))
            .into());
        }
        if v.float("net-udp-rate") > 0.0 && test != Test::UdpStream {
            return Err(CliError::Usage(format!(
                "--net-udp-rate applies to udp_stream, not {}",
                test.name()
            ))
            .into());
        }
        let max = if test.is_udp() {
            MAX_UDP_BYTES
        } else {
            MAX_MESSAGE_BYTES
        };
        for name in ["net-req-size", "net-resp-size", "net-send-size"] {
            let n = v.int(name);
            if n > max {
                return Err(out_of_range(name, n, max).into());
            }
        }
        for name in ["net-sndbuf", "net-rcvbuf"] {
            let n = v.int(name);
            if n > 256 << 20 {
                return Err(out_of_range(name, n, 256 << 20).into());
            }
        }
        let bufs = Buffers {
            sndbuf: v.int("net-sndbuf"),
            rcvbuf: v.int("net-rcvbuf"),
        };
        let send_size = match v.int("net-send-size") {
            0 => sock::send_buffer(test.is_udp(), bufs)
                .context("reading the default socket send buffer")?
                .clamp(1, max),
            n => n,
        };
        if test == Test::UdpStream && send_size < 8 {
            return Err(CliError::InvalidValue {
                name: "net-send-size".into(),
                value: send_size.to_string(),
                allowed: format!(
                    "a size from 8 to {MAX_UDP_BYTES} bytes for udp_stream (8 carry the sequence number)"
                ),
            }
            .into());
        }
        if PEER.server_inside(v) && PEER.address_given(v) {
            return Err(CliError::Usage(
                "--net-host names a server that already runs; --net-server=env starts one inside the environment: give one of them".into(),
            )
            .into());
        }
        let cpus = parse_cpus(v.text("net-cpus"))?;
        let target = match v.text("net-host") {
            "" => Target::Default,
            text => Target::Given(parse_host(text)?),
        };
        Ok(NetWorkload {
            test,
            target,
            streams: v.int("net-streams") as u32,
            bidir: v.flag("net-bidir"),
            request_size: v.int("net-req-size"),
            response_size: v.int("net-resp-size"),
            send_size,
            bufs,
            nodelay: v.flag("net-nodelay"),
            cpus,
            udp_rate_mbit: v.float("net-udp-rate"),
            udp_timeout: Duration::from_secs_f64(v.float("net-udp-timeout") / 1000.0),
            connect_timeout: Duration::from_secs_f64(v.float("net-connect-timeout")),
            secret: Some(v.text("net-secret"))
                .filter(|t| !t.is_empty())
                .map(|t| t.as_bytes().to_vec()),
        })
    }

    fn params(&self, addr: SocketAddr, duration: Duration) -> Params {
        Params {
            addr,
            test: self.test,
            duration,
            streams: self.streams,
            bidir: self.bidir,
            request_size: self.request_size,
            response_size: self.response_size,
            send_size: self.send_size,
            bufs: self.bufs,
            nodelay: self.nodelay,
            cpus: self.cpus,
            udp_rate_mbit: self.udp_rate_mbit,
            udp_timeout: self.udp_timeout,
            connect_timeout: self.connect_timeout,
            secret: self.secret.clone(),
        }
    }
}

impl NetWorkload {
    /// The control connection to the server `p` names; with no server at
    /// the default address, one started in this process on a free loopback
    /// port with a fresh secret (`p` then names it), returned to be stopped.
    fn connect(
        &self,
        p: &mut Params,
        addr: SocketAddr,
    ) -> Result<(std::net::TcpStream, Option<server::Server>)> {
        let control = match client::connect_control(p) {
            Ok(s) => s,
            // Nothing on the default port: be our own server, on a free port
            // so a later `virtperf serve` is not blocked.
            Err(e)
                if self.target == Target::Default
                    && e.kind() == std::io::ErrorKind::ConnectionRefused =>
            {
                // Loopback, for this test only, and still guarded: another
                // user of this machine could reach it.
                let secret = protocol::new_secret()?.into_bytes();
                let server = server::Server::start_with_secret(
                    SocketAddr::from(([127, 0, 0, 1], 0)),
                    Some(secret.clone()),
                )
                .context("starting an in-process server")?;
                p.addr = server.addr();
                p.secret = Some(secret);
                                return Ok((client::connect_control(p)?, Some(server)));
            }
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "cannot reach a virtperf server at {addr} (TCP port {}, --net-host): {e}; start one there with 'virtperf serve --port {}' or point --net-host=HOST[:PORT] at a running one",
                    addr.port(),
                    addr.port()
                ))
            }
        };
        Ok((control, None))
    }
}

impl Workload for NetWorkload {
    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        let duration = engine.time.ok_or_else(|| {
            CliError::Usage("net tests are timed: set --time=SECONDS (above 0)".into())
        })?;
        let default_addr = SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT));
        let addr = match self.target {
            Target::Given(a) => a,
            Target::Default => default_addr,
        };
        let mut p = self.params(addr, duration);
        let (mut control, local_server) = self.connect(&mut p, addr)?;
        let cookie = client::handshake(&mut control, &p)?;
        let outcome = client::run(&p, control, cookie)?;
        if let Some(server) = local_server {
            server.stop();
        }
        let (metrics, body) = figures(&p, &outcome);
        let server_text = if p.addr == addr {
            addr.to_string()
        } else {
            format!("{} (in-process: no server at {addr})", p.addr)
        };
        let mut m = Measurement {
            duration: outcome.elapsed,
            events: if p.test.is_rr() {
                outcome.transactions
            } else if p.test.is_udp() {
                outcome.udp_datagrams_sent
            } else {
                outcome.writes
            },
            metrics,
            net_path: Some(path_to(p.addr)),
            ..Measurement::default()
        };
        if let Some(h) = &outcome.histogram {
            m.latency = Some(engine::summarize(h, engine.percentile));
            m.histogram = Some(h.clone());
        }
        m.text = format!(
            "Test: {} to {server_text}, {} stream(s){}, {:.0} s; send size {} B, request {} B, response {} B; \
             socket buffers send {} B, receive {} B; Nagle {}\n\nResults:\n{body}",
            p.test.name().to_ascii_uppercase(),
            p.streams,
            if p.bidir { " each way" } else { "" },
            duration.as_secs_f64(),
            p.send_size,
            p.request_size,
            p.response_size,
            outcome.sndbuf,
            outcome.rcvbuf,
            if p.nodelay { "off" } else { "on" },
        );
        m.details = serde_json::json!({
            "test": p.test.name(),
            "server": p.addr.to_string(),
            "server_in_process": p.addr != addr,
            "streams": p.streams,
            "bidir": p.bidir,
            "send_size": p.send_size,
            "socket_sndbuf": outcome.sndbuf,
            "socket_rcvbuf": outcome.rcvbuf,
            "bytes_sent": outcome.bytes_sent,
            "bytes_received_by_server": outcome.server.bytes_received.iter().sum::<u64>(),
            "bytes_received_by_client": outcome.bytes_received,
            "udp_datagrams_sent": outcome.udp_datagrams_sent,
            "udp_datagrams_received": outcome.server.udp_datagrams,
            "udp_send_errors": outcome.udp_send_errors,
            "protocol": protocol::VERSION,
        });
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::options::{defaults, Values};

    fn values(set: &[(&str, &str)]) -> Values {
        let mut v = defaults(&[OPTIONS]);
        for (name, raw) in set {
            let spec = OPTIONS.iter().find(|s| s.name == *name).unwrap();
            v.set(spec, raw).unwrap();
        }
        v
    }

    fn run(set: &[(&str, &str)], secs: f64) -> Measurement {
        let mut w = NetWorkload::new(&values(set)).unwrap();
        let engine = EngineOptions {
            time: Some(Duration::from_secs_f64(secs)),
            ..EngineOptions::silent(1)
        };
        w.run(&engine).unwrap()
    }

    fn get(m: &Measurement, name: &str) -> f64 {
        m.metrics
            .iter()
            .find(|x| x.name == name)
            .unwrap_or_else(|| panic!("{name} missing"))
            .value
    }

    /// Each test against a server of its own, so tests running at once do
    /// not share one.
    fn with_server(set: &[(&str, &str)], secs: f64) -> Measurement {
        let server = server::Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let host = server.addr().to_string();
        let mut all = set.to_vec();
        all.push(("net-host", &host));
        let m = run(&all, secs);
        server.stop();
        m
    }

    #[test]
    fn every_test_runs_on_loopback_with_sane_figures() {
        let m = with_server(&[("net-test", "tcp_stream")], 0.3);
        assert!(get(&m, "tcp_stream_mbit_per_sec") > 10.0);
        let m = with_server(&[("net-test", "TCP_MAERTS"), ("net-streams", "2")], 0.3);
        assert!(get(&m, "tcp_maerts_mbit_per_sec") > 10.0);
        for test in ["tcp_rr", "tcp_crr", "udp_rr"] {
            let m = with_server(&[("net-test", test)], 0.3);
            let tps = get(&m, &format!("{test}_trans_per_sec"));
            assert!(tps > 100.0, "{test}: {tps}");
            let p50 = get(&m, &format!("{test}_latency_p50_us"));
            let p99 = get(&m, &format!("{test}_latency_p99_us"));
            assert!(p50 > 0.0 && p50 <= p99, "{test}: p50 {p50} p99 {p99}");
            // Transactions are closed-loop: the mean latency is the inverse rate.
            let mean_us = 1e6 / tps;
            assert!(p50 < mean_us * 3.0, "{test}: p50 {p50} mean {mean_us}");
        }
        let m = with_server(&[("net-test", "udp_stream"), ("net-udp-rate", "50")], 0.5);
        let sent = get(&m, "udp_stream_send_mbit_per_sec");
        assert!((40.0..=55.0).contains(&sent), "paced send {sent}");
        assert!(get(&m, "udp_stream_mbit_per_sec") <= sent + 0.01);
    }

    /// The threads of this process bound to exactly one CPU.
    fn bound_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("status")).ok())
            .filter(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .is_some_and(|l| l.trim().parse::<usize>().is_ok())
            })
            .count()
    }

    #[test]
    fn net_cpus_binds_the_clients_stream_and_the_servers_session_to_their_cpus() {
        assert_eq!(parse_cpus("").unwrap(), (None, None));
        assert_eq!(parse_cpus("1,0").unwrap(), (Some(1), Some(0)));
        assert_eq!(parse_cpus(",0").unwrap(), (None, Some(0)));
        assert_eq!(parse_cpus("3").unwrap(), (Some(3), None));
        if crate::sys::affinity::allowed().unwrap().len() < 2 {
            eprintln!("one CPU here: every thread is bound to it, nothing to tell apart");
            return;
        }
        for (test, cpus, want) in [
            ("tcp_rr", "1,0", 2),
            ("udp_rr", "1,0", 2),
            ("tcp_crr", "0,", 1),
        ] {
            // Sampled halfway through a 0.6 s run: the client's stream and
            // the server's session thread (or its UDP thread) are bound.
            let watch = std::thread::spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                bound_threads()
            });
            let m = with_server(&[("net-test", test), ("net-cpus", cpus)], 0.6);
            assert!(get(&m, &format!("{test}_trans_per_sec")) > 100.0);
            let seen = watch.join().unwrap();
            // Other tests' threads in this process may be bound too.
            assert!(
                seen >= want,
                "{test} --net-cpus={cpus}: {seen} bound threads"
            );
        }
    }

    #[test]
    fn bidir_reports_both_directions() {
        let m = with_server(&[("net-test", "tcp_stream"), ("net-bidir", "on")], 0.3);
        assert_eq!(m.net_path.as_deref(), Some("loopback"));
        assert!(get(&m, "tcp_stream_mbit_per_sec") > 1.0);
        assert!(get(&m, "tcp_maerts_mbit_per_sec") > 1.0);
    }

    #[test]
    fn bad_sizes_and_combinations_name_the_option() {
        let err = |set: &[(&str, &str)]| match NetWorkload::new(&values(set)) {
            Err(e) => e.downcast::<CliError>().unwrap().to_string(),
            Ok(_) => panic!("{set:?} accepted"),
        };
        assert!(
            err(&[("net-test", "udp_rr"), ("net-req-size", "70000")]).contains("--net-req-size")
        );
        assert!(err(&[("net-send-size", "32M")]).contains("--net-send-size"));
        assert!(
            err(&[("net-test", "udp_stream"), ("net-send-size", "4")]).contains("--net-send-size")
        );
        assert!(err(&[("net-test", "tcp_rr"), ("net-bidir", "on")]).contains("--net-bidir"));
        assert!(err(&[("net-host", "300.1.1.1:x")]).contains("--net-host"));
        for bad in ["x", "1,2,3", "1024", ",-1"] {
            assert!(err(&[("net-cpus", bad)]).contains("--net-cpus"), "{bad}");
        }
        let both = err(&[("net-host", "127.0.0.1:9"), ("net-server", "env")]);
        assert!(
            both.contains("--net-host") && both.contains("--net-server"),
            "{both}"
        );
    }

    #[test]
    fn defaults_are_netperfs() {
        let w = NetWorkload::new(&values(&[])).unwrap();
        assert_eq!(w.test, Test::TcpStream);
        assert_eq!((w.request_size, w.response_size), (1, 1));
        assert_eq!(
            w.send_size,
            sock::send_buffer(false, Buffers::default()).unwrap()
        );
        assert!(!w.nodelay);
        let udp = NetWorkload::new(&values(&[("net-test", "udp_stream")])).unwrap();
        assert!(udp.send_size <= MAX_UDP_BYTES);
        assert_eq!(
            parse_host("[::1]:9").unwrap(),
            "[::1]:9".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(parse_host("127.0.0.1").unwrap().port(), DEFAULT_PORT);
    }

    #[test]
    fn the_metric_table_is_consistent() {
        let mut names: Vec<_> = METRICS.iter().map(|d| d.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), METRICS.len());
        let netperf: Vec<_> = METRICS
            .iter()
            .filter(|d| d.category == Some(Category::NetworkIo))
            .map(|d| d.name)
            .collect();
        assert_eq!(netperf.len(), 5);
        assert!(METRICS
            .iter()
            .filter(|d| d.category.is_some())
            .all(|d| d.headline));
    }
}
