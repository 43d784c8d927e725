//! Network peers of environment runs. A job whose workload talks to a
//! network peer gets one from the host: by default a server started on the
//! host for that job (bounded, on a free port, bound only where the
//! environment reaches it, started when the agent asks as the job begins
//! and stopped when its result arrives) with the client inside;
//! with the job's placement option at its "inside" value (`--net-server=env`),
//! the agent starts the server and the host runs the client against it. Each driver says how its
//! instances and the host reach each other (a `Route`), and every result
//! records the path it crossed. Every server started for a run requires a
//! fresh secret, which travels with the job (over the agent's stdin, never
//! in an argv) and is redacted wherever options are shown: whoever else
//! reaches the port cannot open a session.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use anyhow::{anyhow, Context, Result};

use crate::workload::{Job, NetworkPeer, PeerServer};

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

/// What a plan's network jobs need from an environment, known before its
/// instances start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetNeed {
    /// A client inside reaches a server on the host.
    pub to_host: bool,
    /// The host reaches a server inside.
    pub to_env: bool,
}

/// How one job meets its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// No network peer.
    None,
    /// The job names its own (`--net-host`): run as given.
    Given,
    /// A server on the host, the client inside.
    OnHost,
    /// A server inside, the client on the host.
    Inside,
}

pub fn placement(job: &Job) -> Placement {
    match job.def.needs.network {
        None => Placement::None,
        Some(peer) if peer.address_given(&job.values) => Placement::Given,
        Some(peer) if peer.server_inside(&job.values) => Placement::Inside,
        Some(_) => Placement::OnHost,
    }
}

impl NetNeed {
    pub fn of(jobs: &[Job]) -> NetNeed {
        let mut need = NetNeed::default();
        for job in jobs {
            match placement(job) {
                Placement::OnHost => need.to_host = true,
                Placement::Inside => need.to_env = true,
                Placement::None | Placement::Given => {}
            }
        }
        need
    }

    pub fn any(self) -> bool {
        self.to_host || self.to_env
    }
}

/// The network side of one instance's run: the host servers it uses, the
/// routes to servers inside, and each job's path.
pub struct InstanceNet {
    /// Servers started with the plan (simultaneous instances, whose jobs
    /// the host cannot answer one at a time), kept for the plan; dropping
    /// them stops them. With each, the secret it requires.
    servers: Vec<(&'static NetworkPeer, Box<dyn PeerServer>, String)>,
    /// Jobs whose host server starts when the agent asks for it: the peer
    /// and the route it is reached by.
    on_demand: BTreeMap<usize, (&'static NetworkPeer, Route)>,
    /// The one on-demand server running, for the job it serves.
    running: Option<(usize, Box<dyn PeerServer>)>,
    /// Each job's route to its server inside, and the secret it requires.
    inside: BTreeMap<usize, (Route, String)>,
    paths: BTreeMap<usize, String>,
}

impl InstanceNet {
    /// Rewrites `jobs` for one instance: jobs with a server inside get the
    /// address to serve on; jobs with a host server are left to ask for it
    /// when they start (`start_for`), or, when `on_demand` is false
    /// (simultaneous instances), get its address now (one server per peer
    /// kind, started here for the plan). `host_route` and `inside_route`
    /// ask the driver, once each and only when needed.
    pub fn plan(
        jobs: &[Job],
        on_demand: bool,
        host_route: impl FnOnce() -> Result<Route>,
        inside_route: impl FnOnce() -> Result<Route>,
    ) -> Result<(Vec<Job>, InstanceNet)> {
        let mut net = InstanceNet {
            on_demand: BTreeMap::new(),
            running: None,
            servers: Vec::new(),
            inside: BTreeMap::new(),
            paths: BTreeMap::new(),
        };
        let mut host_route = Some(host_route);
        let mut inside_route = Some(inside_route);
        let mut to_host: Option<Route> = None;
        let mut to_env: Option<Route> = None;
        let mut out = Vec::with_capacity(jobs.len());
        for (k, job) in jobs.iter().enumerate() {
            let peer = job.def.needs.network;
            let job = match (placement(job), peer) {
                (Placement::OnHost, Some(peer)) => {
                    if to_host.is_none() {
                        let f = host_route.take().expect("asked once");
                        to_host = Some(f()?);
                    }
                    let route = to_host.as_ref().expect("set above");
                    net.paths.insert(k, route.path.clone());
                    if on_demand {
                        net.on_demand.insert(k, (peer, route.clone()));
                        out.push(job.clone());
                        continue;
                    }
                    let (port, secret) = match net.servers.iter().find(|(p, ..)| *p == peer) {
                        Some((_, s, secret)) => (s.addr().port(), secret.clone()),
                        None => {
                            let secret = crate::workload::net::protocol::new_secret()?;
                            let server = (peer.serve)(route.bind, &secret).with_context(|| {
                                format!(
                                    "starting the {} server on the host at {}",
                                    job.def.name, route.bind
                                )
                            })?;
                            let port = server.addr().port();
                            net.servers.push((peer, server, secret.clone()));
                            (port, secret)
                        }
                    };
                    job.with_option(peer.address_option, &route.dial(port).to_string())?
                        .with_option(peer.secret_option, &secret)?
                }
                (Placement::Inside, Some(peer)) => {
                    if to_env.is_none() {
                        let f = inside_route.take().expect("asked once");
                        to_env = Some(f()?);
                    }
                    let route = to_env.clone().expect("set above");
                    net.paths.insert(k, route.path.clone());
                    // The agent's server requires it, the host's client proves it.
                    let secret = crate::workload::net::protocol::new_secret()?;
                    let job = job
                        .with_option(peer.address_option, &route.bind.to_string())?
                        .with_option(peer.secret_option, &secret)?;
                    net.inside.insert(k, (route, secret));
                    job
                }
                _ => job.clone(),
            };
            out.push(job);
        }
        Ok((out, net))
    }

    /// The path job `k` crossed, when the host set it up.
    pub fn path(&self, k: usize) -> Option<&str> {
        self.paths.get(&k).map(String::as_str)
    }

    /// Whether a host server runs for this instance now.
    pub fn serves(&self) -> bool {
        !self.servers.is_empty() || self.running.is_some()
    }

    /// The jobs (by index) whose server the agent asks for as they start.
    pub fn on_demand(&self) -> Vec<usize> {
        self.on_demand.keys().copied().collect()
    }

    /// Starts job `k`'s host server, with a fresh secret, stopping any
    /// other first: the address its client dials and the secret.
    pub fn start_for(&mut self, k: usize, job_name: &str) -> Result<(SocketAddr, String)> {
        self.running = None;
        let (peer, route) = self.on_demand.get(&k).ok_or_else(|| {
            anyhow!("the agent asked for a server for job {k}, which has none on the host")
        })?;
        let secret = crate::workload::net::protocol::new_secret()?;
        let server = (peer.serve)(route.bind, &secret).with_context(|| {
            format!(
                "starting the {job_name} server on the host at {}",
                route.bind
            )
        })?;
        let dial = route.dial(server.addr().port());
        self.running = Some((k, server));
        Ok((dial, secret))
    }

    /// Stops job `k`'s host server, if it runs.
    pub fn stop_for(&mut self, k: usize) {
        if self.running.as_ref().is_some_and(|(j, _)| *j == k) {
            self.running = None;
        }
    }

    /// The client of job `k`, whose server listens inside on `port`: the
    /// same job pointed at the route's address, placed on the host.
    pub fn client_of(&self, k: usize, job: &Job, port: u16) -> Result<Job> {
        let (route, secret) = self
            .inside
            .get(&k)
            .ok_or_else(|| anyhow!("the agent serves job {k}, which has no server inside"))?;
        let peer = job
            .def
            .needs
            .network
            .ok_or_else(|| anyhow!("the agent serves job {k}, which has no network peer"))?;
        let host = job
            .def
            .options
            .iter()
            .find(|o| o.name == peer.placement_option)
            .map(|o| o.default)
            .unwrap_or_default();
        Ok(job
            .with_option(peer.placement_option, host)?
            .with_option(peer.address_option, &route.dial(port).to_string())?
            .with_option(peer.secret_option, secret)?)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn job(args: &[&str]) -> Job {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Job::from_args(&args).unwrap()
    }

    /// The server's answer at `addr` to a hello proving `secret`, as text.
    fn hello_to(addr: SocketAddr, secret: Option<&[u8]>) -> String {
        use crate::workload::net::protocol::{self, Control, Hello, Test, TAG_CONTROL};
        use std::io::Write;
        let mut h = Hello {
            send_size: 1,
            ..Hello::for_test(Test::TcpRr)
        };
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        s.write_all(&TAG_CONTROL).unwrap();
        let Control::Challenge { server, nonce, .. } = protocol::read_control(&mut s).unwrap()
        else {
            panic!("no challenge")
        };
        if let Some(k) = secret {
            protocol::prove(k, &protocol::Challenge { server, nonce }, &mut h).unwrap();
        }
        protocol::write_control(&mut s, &Control::Hello(h)).unwrap();
        format!("{:?}", protocol::read_control(&mut s).unwrap())
    }

    fn forwarded() -> Route {
        Route {
            bind: "10.0.2.15:5201".parse().unwrap(),
            dial_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            dial_port: Some(40000),
            path: "forwarded".into(),
        }
    }

    #[test]
    fn each_job_meets_its_peer_where_it_asked() {
        let jobs = [
            job(&["net", "--net-test=tcp_rr"]),
            job(&["net", "--net-server=env"]),
            job(&["net", "--net-host=127.0.0.1:9"]),
            job(&["cpu"]),
            job(&["net", "--net-test=udp_rr"]),
        ];
        assert_eq!(
            NetNeed::of(&jobs),
            NetNeed {
                to_host: true,
                to_env: true
            }
        );
        let (out, net) = InstanceNet::plan(
            &jobs,
            false,
            || Ok(Route::loopback("test loopback")),
            || Ok(forwarded()),
        )
        .unwrap();
        // A server on the host, one for both jobs that need it, reachable.
        let addr: SocketAddr = out[0].values.text("net-host").parse().unwrap();
        assert_eq!(out[4].values.text("net-host"), addr.to_string());
        assert!(addr.ip().is_loopback() && addr.port() != 0);
        // It serves only a client proving the run's fresh secret, which
        // the jobs carry and their shown arguments hide.
        let secret = out[0].values.text("net-secret");
        assert_eq!(secret.len(), 64);
        assert_eq!(out[4].values.text("net-secret"), secret);
        assert!(!out[0].args().join(" ").contains(secret));
        assert!(hello_to(addr, None).contains("needs the secret"));
        assert!(hello_to(addr, Some(b"guess")).contains("wrong secret"));
        assert!(hello_to(addr, Some(secret.as_bytes())).contains("Welcome"));
        assert_eq!(net.path(0), Some("test loopback"));
        assert!(net.serves());
        // The server inside binds where the driver says; the host's client
        // dials the forwarded port, placed on the host.
        assert_eq!(out[1].values.text("net-host"), "10.0.2.15:5201");
        assert_eq!(net.path(1), Some("forwarded"));
        let client = net.client_of(1, &jobs[1], 5201).unwrap();
        assert_eq!(client.values.text("net-host"), "127.0.0.1:40000");
        assert_eq!(client.values.text("net-server"), "host");
        // The agent's server and the host's client share their own secret.
        let inside = out[1].values.text("net-secret");
        assert_eq!(inside.len(), 64);
        assert_ne!(inside, secret);
        assert_eq!(client.values.text("net-secret"), inside);
        assert!(net.client_of(0, &jobs[0], 1).is_err());
        // A given server and a job without a peer run as they are.
        assert_eq!(out[2].to_wire(), jobs[2].to_wire());
        assert_eq!(out[3].to_wire(), jobs[3].to_wire());
        assert_eq!((net.path(2), net.path(3)), (None, None));
        // The server stops with the run.
        drop(net);
        assert!(std::net::TcpStream::connect(addr).is_err());
    }

    #[test]
    fn a_host_server_on_demand_listens_only_while_its_job_runs() {
        let jobs = [
            job(&["net", "--net-test=tcp_rr"]),
            job(&["cpu"]),
            job(&["net", "--net-test=udp_rr"]),
        ];
        let (out, mut net) = InstanceNet::plan(
            &jobs,
            true,
            || Ok(Route::loopback("lo")),
            || Ok(forwarded()),
        )
        .unwrap();
        // Nothing listens before a job asks, and the jobs go out as they are.
        assert!(!net.serves());
        assert_eq!(net.on_demand(), vec![0, 2]);
        assert_eq!(out[0].to_wire(), jobs[0].to_wire());
        assert_eq!(net.path(2), Some("lo"));
        let (a, secret_a) = net.start_for(0, "net").unwrap();
        assert!(net.serves());
        assert!(hello_to(a, None).contains("needs the secret"));
        assert!(hello_to(a, Some(secret_a.as_bytes())).contains("Welcome"));
        // Another job's stop leaves it; its own stops it.
        net.stop_for(2);
        assert!(std::net::TcpStream::connect(a).is_ok());
        net.stop_for(0);
        assert!(!net.serves());
        assert!(std::net::TcpStream::connect(a).is_err());
        // The next job gets a server of its own with a fresh secret.
        let (b, secret_b) = net.start_for(2, "net").unwrap();
        assert_ne!(secret_a, secret_b);
        assert!(hello_to(b, Some(secret_a.as_bytes())).contains("wrong secret"));
        // A job with no host server cannot have one started.
        assert!(net.start_for(1, "cpu").is_err());
        assert!(
            std::net::TcpStream::connect(b).is_err(),
            "starting another stops the last"
        );
    }

    #[test]
    fn routes_are_asked_for_only_when_a_job_needs_them() {
        let jobs = [job(&["cpu"]), job(&["net", "--net-host=127.0.0.1:9"])];
        assert!(!NetNeed::of(&jobs).any());
        let (out, net) = InstanceNet::plan(
            &jobs,
            true,
            || panic!("no host server needed"),
            || panic!("no server inside needed"),
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        assert!(!net.serves());
        // A driver that cannot route says so, and the run stops there.
        let err = InstanceNet::plan(
            &[job(&["net"])],
            true,
            || Err(anyhow!("net=none gives the guest no network")),
            || Ok(forwarded()),
        )
        .err()
        .unwrap();
        assert!(format!("{err:#}").contains("net=none"), "{err:#}");
    }
}
