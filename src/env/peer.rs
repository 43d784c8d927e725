//! A job's network peer, owned from placement to stop. A job whose workload
//! talks to a network peer gets one from the host: by default a server
//! started on the host for that job (bounded, on a free port, bound only
//! where the environment reaches it, started when the agent asks as the job
//! begins and stopped when its result arrives) with the client inside; with
//! the job's placement option at its "inside" value (`--net-server=env`),
//! the agent starts the server and the host runs the client against it.
//! Every server started for a run requires a fresh secret, which travels
//! with the job (over the agent's stdin, never in an argv) and is redacted
//! wherever options are shown: whoever else reaches the port cannot open a
//! session. The driver says how its instances and the host reach each other
//! (`net::Route`), and every result records the path it crossed.
//!
//! It is called at four moments only: before a plan (`check`, `make_room`,
//! from `run`), and from `exchange` when an instance is sent its plan
//! (`Peers::place`), for each message the agent sends while a job runs
//! (`Peers::answer`), and when the job's result arrives (`Peers::job_over`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::net::Route;
use crate::agent::protocol::{Message, Served, ServerAnswer};
use crate::core::observer::{Observer, Silent};
use crate::core::result::ResultDoc;
use crate::workload::{Job, NetworkPeer, PeerServer};

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
enum Placement {
    /// No network peer.
    None,
    /// The job names its own (`--net-host`): run as given.
    Given,
    /// A server on the host, the client inside.
    OnHost,
    /// A server inside, the client on the host.
    Inside,
}

/// How `job` meets its peer, from its options.
fn placement(job: &Job) -> Placement {
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

/// Jobs that ask for two contradicting network peers are refused before
/// anything starts.
pub(super) fn check(jobs: &[Job]) -> Result<()> {
    for job in jobs {
        if let Some(peer) = job.def.needs.network {
            if peer.address_given(&job.values) && peer.server_inside(&job.values) {
                bail!(
                    "{}: --{} names a server that already runs; --{}={} starts one inside the environment: give one of them",
                    job.def.name,
                    peer.address_option,
                    peer.placement_option,
                    peer.placement_env
                );
            }
        }
    }
    Ok(())
}

/// Before a plan with a network job: waits until the kernel's
/// connection-tracking table has room (sys::conntrack), telling the user
/// why the wait.
pub(super) fn make_room(jobs: &[Job], label: &str, obs: &dyn Observer) -> Result<()> {
    use crate::sys::conntrack;
    if !jobs.iter().any(|j| j.def.needs.network.is_some()) {
        return Ok(());
    }
    let time_wait = conntrack::time_wait();
    let limit = time_wait + Duration::from_secs(10);
    let waited = conntrack::wait_for_room(
        conntrack::usage,
        limit,
        Duration::from_millis(500),
        |count, max| {
            obs.note(&format!(
                "{label}: waiting for room in the kernel's connection-tracking table before a \
                 network run ({count} of {max} entries in use; closed connections leave it \
                 after {} s, at most {} s)",
                time_wait.as_secs(),
                limit.as_secs()
            ))
        },
        crate::core::signals::check,
    )?;
    if let conntrack::Waited::GaveUp(count, max) = waited {
        obs.note(&format!(
            "{label}: the connection-tracking table is still {count} of {max} entries after {} s; \
             running anyway (new connections may be dropped)",
            limit.as_secs()
        ));
    }
    Ok(())
}

/// The network peers of one instance's plan: the host servers it uses, the
/// routes to servers inside, and each job's path.
pub(super) struct Peers {
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
    /// The jobs whose one request for a peer has been answered.
    answered: BTreeSet<usize>,
    /// The instance's name and driver, as the host's client reports them.
    label: String,
    kind: &'static str,
}

impl Peers {
    /// Places the peers of `jobs` for one instance (`label`, of driver
    /// `kind`) and rewrites the jobs to meet them: jobs with a server
    /// inside get the address to serve on; jobs with a host server are left
    /// to ask for it when they start (`answer`), or, when `on_demand` is
    /// false (simultaneous instances), get its address now (one server per
    /// peer kind, started here for the plan). `host_route` and
    /// `inside_route` ask the driver, once each and only when needed.
    pub(super) fn place(
        jobs: &[Job],
        on_demand: bool,
        (label, kind): (&str, &'static str),
        host_route: impl FnOnce() -> Result<Route>,
        inside_route: impl FnOnce() -> Result<Route>,
    ) -> Result<(Vec<Job>, Peers)> {
        let mut peers = Peers {
            on_demand: BTreeMap::new(),
            running: None,
            servers: Vec::new(),
            inside: BTreeMap::new(),
            paths: BTreeMap::new(),
            answered: BTreeSet::new(),
            label: label.to_string(),
            kind,
        };
        let mut host_route = Some(host_route);
        let mut inside_route = Some(inside_route);
        let mut to_host: Option<Route> = None;
        let mut to_env: Option<Route> = None;
        let mut out = Vec::with_capacity(jobs.len());
        for (k, job) in jobs.iter().enumerate() {
            let job = match (placement(job), job.def.needs.network) {
                (Placement::OnHost, Some(peer)) => {
                    if to_host.is_none() {
                        let f = host_route.take().expect("asked once");
                        to_host = Some(f()?);
                    }
                    let route = to_host.as_ref().expect("set above");
                    peers.paths.insert(k, route.path.clone());
                    if on_demand {
                        peers.on_demand.insert(k, (peer, route.clone()));
                        job.clone()
                    } else {
                        peers.serve_for_the_plan(job, peer, route)?
                    }
                }
                (Placement::Inside, Some(peer)) => {
                    if to_env.is_none() {
                        let f = inside_route.take().expect("asked once");
                        to_env = Some(f()?);
                    }
                    let route = to_env.clone().expect("set above");
                    peers.paths.insert(k, route.path.clone());
                    // The agent's server requires it, the host's client proves it.
                    let secret = crate::workload::net::protocol::new_secret()?;
                    let job = job
                        .with_option(peer.address_option, &route.bind.to_string())?
                        .with_option(peer.secret_option, &secret)?;
                    peers.inside.insert(k, (route, secret));
                    job
                }
                _ => job.clone(),
            };
            out.push(job);
        }
        Ok((out, peers))
    }

    /// `job` pointed at the host's server of its peer kind for the whole
    /// plan, started now if it is the first such job.
    fn serve_for_the_plan(
        &mut self,
        job: &Job,
        peer: &'static NetworkPeer,
        route: &Route,
    ) -> Result<Job> {
        let (port, secret) = match self.servers.iter().find(|(p, ..)| *p == peer) {
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
                self.servers.push((peer, server, secret.clone()));
                (port, secret)
            }
        };
        Ok(job
            .with_option(peer.address_option, &route.dial(port).to_string())?
            .with_option(peer.secret_option, &secret)?)
    }

    /// The jobs (by index) whose server the agent asks for as they start.
    pub(super) fn on_demand(&self) -> Vec<usize> {
        self.on_demand.keys().copied().collect()
    }

    /// The line that answers `msg`, when it is job `want`'s one request for
    /// its peer: a server started here (`NeedServer`), or the client run
    /// here against the server inside (`Serving`). None for any other
    /// message, and for a second request, which the caller refuses as it
    /// refuses every message it did not expect.
    pub(super) fn answer(
        &mut self,
        msg: &Message,
        want: usize,
        job: &Job,
    ) -> Result<Option<String>> {
        let line = match *msg {
            Message::NeedServer { index } if index == want && self.answered.insert(want) => {
                serde_json::to_string(&self.start_server(want, job))?
            }
            Message::Serving { index, port } if index == want && self.answered.insert(want) => {
                serde_json::to_string(&self.serve_client(want, job, port))?
            }
            _ => return Ok(None),
        };
        Ok(Some(line))
    }

    /// Job `k` is over (`outcome` is its result, or why it failed): its
    /// host server stops, its result records the path it crossed, and a
    /// network run that failed while the kernel dropped new connections
    /// says so.
    pub(super) fn job_over(
        &mut self,
        k: usize,
        job: &Job,
        outcome: &mut std::result::Result<ResultDoc, String>,
    ) {
        self.stop_for(k);
        match outcome {
            Ok(doc) => {
                if let Some(path) = self.path(k) {
                    doc.env.net_path = Some(path.to_string());
                }
            }
            Err(message) if job.def.needs.network.is_some() => {
                if let Some(why) = crate::sys::conntrack::full_now() {
                    message.push_str(&format!(" ({why})"));
                }
            }
            Err(_) => {}
        }
    }

    /// The path job `k` crossed, when the host set it up.
    fn path(&self, k: usize) -> Option<&str> {
        self.paths.get(&k).map(String::as_str)
    }

    /// Stops job `k`'s host server, if it runs.
    fn stop_for(&mut self, k: usize) {
        if self.running.as_ref().is_some_and(|(j, _)| *j == k) {
            self.running = None;
        }
    }

    /// Starts job `k`'s server here, as the agent asked: where its client
    /// dials and the secret, or why there is no server.
    fn start_server(&mut self, k: usize, job: &Job) -> ServerAnswer {
        match self.start_for(k, job.def.name) {
            Ok((address, secret)) => ServerAnswer::Listening {
                address: address.to_string(),
                secret,
            },
            Err(e) => ServerAnswer::Failed {
                message: format!("{e:#}"),
            },
        }
    }

    /// Starts job `k`'s host server, with a fresh secret, stopping any
    /// other first: the address its client dials and the secret.
    fn start_for(&mut self, k: usize, job_name: &str) -> Result<(SocketAddr, String)> {
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

    /// Runs the client of job `k` here against its server inside the
    /// instance (listening on `port` there): the answer the agent waits for.
    fn serve_client(&self, k: usize, job: &Job, port: u16) -> Served {
        let run = self.client_of(k, job, port).and_then(|client| {
            crate::workload::execute(&client, &self.label, self.kind, Arc::new(Silent))
        });
        match run {
            Ok(Some(done)) => Served::Served {
                doc: Box::new(done.doc),
            },
            Ok(None) => Served::Failed {
                message: "the client produced no result".into(),
            },
            Err(e) => Served::Failed {
                message: format!("the client on the host: {e:#}"),
            },
        }
    }

    /// The client of job `k`, whose server listens inside on `port`: the
    /// same job pointed at the route's address, placed on the host.
    fn client_of(&self, k: usize, job: &Job, port: u16) -> Result<Job> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

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

    /// Whether a host server runs for this instance now.
    fn serves(peers: &Peers) -> bool {
        !peers.servers.is_empty() || peers.running.is_some()
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
        let (out, net) = Peers::place(
            &jobs,
            false,
            ("test", "host"),
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
        assert!(serves(&net));
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
        let (out, mut net) = Peers::place(
            &jobs,
            true,
            ("test", "host"),
            || Ok(Route::loopback("lo")),
            || Ok(forwarded()),
        )
        .unwrap();
        // Nothing listens before a job asks, and the jobs go out as they are.
        assert!(!serves(&net));
        assert_eq!(net.on_demand(), vec![0, 2]);
        assert_eq!(out[0].to_wire(), jobs[0].to_wire());
        assert_eq!(net.path(2), Some("lo"));
        let (a, secret_a) = net.start_for(0, "net").unwrap();
        assert!(serves(&net));
        assert!(hello_to(a, None).contains("needs the secret"));
        assert!(hello_to(a, Some(secret_a.as_bytes())).contains("Welcome"));
        // Another job's stop leaves it; its own stops it.
        net.stop_for(2);
        assert!(std::net::TcpStream::connect(a).is_ok());
        net.stop_for(0);
        assert!(!serves(&net));
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
        let (out, net) = Peers::place(
            &jobs,
            true,
            ("test", "host"),
            || panic!("no host server needed"),
            || panic!("no server inside needed"),
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        assert!(!serves(&net));
        // A driver that cannot route says so, and the run stops there.
        let err = Peers::place(
            &[job(&["net"])],
            true,
            ("test", "host"),
            || Err(anyhow!("net=none gives the guest no network")),
            || Ok(forwarded()),
        )
        .err()
        .unwrap();
        assert!(format!("{err:#}").contains("net=none"), "{err:#}");
    }

    #[test]
    fn the_agent_s_one_request_for_a_server_here_is_answered_with_a_listening_one() {
        let jobs = [job(&["net", "--net-test=tcp_rr"]), job(&["cpu"])];
        let (_, mut peers) = Peers::place(
            &jobs,
            true,
            ("test", "host"),
            || Ok(Route::loopback("lo")),
            || Ok(forwarded()),
        )
        .unwrap();
        let ask = Message::NeedServer { index: 0 };
        // Another job's request is not this job's to answer.
        assert_eq!(peers.answer(&ask, 1, &jobs[1]).unwrap(), None);
        assert!(!serves(&peers));
        let line = peers.answer(&ask, 0, &jobs[0]).unwrap().expect("answered");
        let ServerAnswer::Listening { address, secret } = serde_json::from_str(&line).unwrap()
        else {
            panic!("no server: {line}")
        };
        let addr: SocketAddr = address.parse().unwrap();
        assert!(hello_to(addr, Some(secret.as_bytes())).contains("Welcome"));
        // A second request for the same job is left to the caller to refuse.
        assert_eq!(peers.answer(&ask, 0, &jobs[0]).unwrap(), None);
        // Its result stops the server and records the path it crossed.
        let mut outcome = Ok(ResultDoc::new("net", "test", Vec::new()));
        peers.job_over(0, &jobs[0], &mut outcome);
        assert!(std::net::TcpStream::connect(addr).is_err());
        assert_eq!(outcome.unwrap().env.net_path.as_deref(), Some("lo"));
    }

    #[test]
    fn a_request_for_a_server_the_host_does_not_keep_is_answered_with_why() {
        // The job's server is inside: the host has none to start for it.
        let jobs = [job(&["net", "--net-server=env"])];
        let (_, mut peers) = Peers::place(
            &jobs,
            true,
            ("test", "host"),
            || Ok(Route::loopback("lo")),
            || Ok(forwarded()),
        )
        .unwrap();
        let line = peers
            .answer(&Message::NeedServer { index: 0 }, 0, &jobs[0])
            .unwrap()
            .expect("answered");
        let ServerAnswer::Failed { message } = serde_json::from_str(&line).unwrap() else {
            panic!("a server where none is due: {line}")
        };
        assert!(message.contains("none on the host"), "{message}");
        // A client for a job with no server inside fails the same way.
        let jobs = [job(&["net", "--net-test=tcp_rr"])];
        let (_, mut peers) = Peers::place(
            &jobs,
            true,
            ("test", "host"),
            || Ok(Route::loopback("lo")),
            || Ok(forwarded()),
        )
        .unwrap();
        let serving = Message::Serving { index: 0, port: 9 };
        let line = peers
            .answer(&serving, 0, &jobs[0])
            .unwrap()
            .expect("answered");
        let Served::Failed { message } = serde_json::from_str(&line).unwrap() else {
            panic!("a client where none is due: {line}")
        };
        assert!(message.contains("no server inside"), "{message}");
    }

    #[test]
    fn a_server_inside_is_answered_with_the_host_client_s_result() {
        let jobs = [job(&[
            "net",
            "--net-server=env",
            "--net-test=tcp_rr",
            "--time=1",
        ])];
        let (out, mut peers) = Peers::place(
            &jobs,
            true,
            ("test", "host"),
            || panic!("no host server"),
            || Ok(Route::loopback("inside loopback")),
        )
        .unwrap();
        // The agent's server, as the agent starts it: where and with the
        // secret its job was given.
        let peer = jobs[0].def.needs.network.unwrap();
        let bind: SocketAddr = out[0].values.text("net-host").parse().unwrap();
        let server = (peer.serve)(bind, out[0].values.text("net-secret")).unwrap();
        let serving = Message::Serving {
            index: 0,
            port: server.addr().port(),
        };
        let line = peers
            .answer(&serving, 0, &jobs[0])
            .unwrap()
            .expect("answered");
        let Served::Served { doc } = serde_json::from_str(&line).unwrap() else {
            panic!("the client failed: {line}")
        };
        assert_eq!(doc.workload, "net");
        assert!(!doc.metrics.is_empty());
        // One client per job: a second request is not answered.
        assert_eq!(peers.answer(&serving, 0, &jobs[0]).unwrap(), None);
        // Messages that end a job are the caller's.
        let done = Message::Error {
            index: 0,
            message: "x".into(),
        };
        assert_eq!(peers.answer(&done, 0, &jobs[0]).unwrap(), None);
    }
}
