//! The `docker` and `podman` drivers: an image holding only the static
//! virtperf binary, imported from a tarball made here (no registry needed)
//! and cached by the binary's checksum — or any `image=IMG` with the binary
//! mounted in. Containers are started with `--rm` (storage=volume is an
//! anonymous volume of each container's own, removed with it) and labelled
//! with their owner: when this process is killed outright, the agent sees
//! its input end and exits, which removes its container; whatever a killed
//! run still left (a hung agent) is swept by the next run that finds the
//! owner dead. An OOM kill is reported as one, without the exited container
//! to inspect: Docker's `oom` event, Podman's conmon marker, or SIGKILL
//! under a memory limit.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};

use super::def::{Check, DriverDef, EnvOption};
use super::engine_cli::{
    engine, engine_command, engine_limit, engine_version, sweep_dead_owners, OWNER_LABEL,
};
use super::rootless::{self, Rootless};
use super::tarball::agent_tar;
use super::{net, Environment, Launched, NetNeed, OnHost, Route, Spec};
use crate::core::observer::Observer;
use crate::sys::bounded::run_cleanup;
use crate::sys::owner::{self, Owner};

/// The label every container of ours carries; `OWNER_LABEL` names the
/// virtperf process that started it (see `sys::owner`).
const LABEL: &str = "virtperf=1";
/// Podman's conmon directories in TMPDIR: `virtperf-podman-OWNER-XXXXXX`.
const CONMON_PREFIX: &str = "virtperf-podman-";

const CPUS: EnvOption = EnvOption::new(
    "cpus",
    Check::HostCpus,
    "CPU limit, e.g. 0.5 or 2 (at most this machine's CPUs)",
);
const MEMORY: EnvOption = EnvOption::new(
    "memory",
    Check::Size(6 << 20),
    "memory limit, e.g. 512m or 2g (at least 6m)",
);
const CPUSET: EnvOption = EnvOption::new("cpuset", Check::HostCpuList, "CPUs to pin to, e.g. 0-1");
const IMAGE: EnvOption = EnvOption::new(
    "image",
    Check::Image,
    "your image, with virtperf mounted in (default: an image of only the binary)",
);
const STORAGE: EnvOption = EnvOption::new(
    "storage",
    Check::Choice(&["overlay", "volume", "tmpfs"]),
    "where file tests write",
);
const TIMEOUT: EnvOption = EnvOption::new(
    "timeout",
    Check::Whole(1, 86400),
    "seconds one engine command (version, image import, inspect, rm) may take (60)",
);

const OPTIONS: &[EnvOption] = &[
    CPUS,
    MEMORY,
    CPUSET,
    IMAGE,
    STORAGE,
    EnvOption::new(
        "network",
        Check::Choice(&["bridge", "host"]),
        "the container's network",
    ),
    super::runtime::OPTION,
    TIMEOUT,
];

/// Podman's: a rootless user, and the user-mode networks it has.
const PODMAN_OPTIONS: &[EnvOption] = &[
    CPUS,
    MEMORY,
    CPUSET,
    IMAGE,
    STORAGE,
    EnvOption::new(
        "network",
        Check::Choice(&["bridge", "host", "slirp4netns", "pasta"]),
        "the container's network (rootless: slirp4netns, pasta or host; default what Podman picks)",
    ),
    super::runtime::OPTION,
    rootless::OPTION,
    TIMEOUT,
];

pub const DOCKER: DriverDef = DriverDef {
    name: "docker",
    summary: "a Docker container holding only the static binary (no registry needed)",
    target: None,
    options: OPTIONS,
    probe_by_default: true,
    build: |spec| Ok(Box::new(DockerEnvironment::new(spec.clone())?)),
    probe,
};

pub const PODMAN: DriverDef = DriverDef {
    name: "podman",
    summary: "a Podman container, as docker; rootless=USER runs it as that unprivileged user",
    target: None,
    options: PODMAN_OPTIONS,
    probe_by_default: true,
    build: |spec| Ok(Box::new(DockerEnvironment::new(spec.clone())?)),
    probe,
};

/// The engine's version, and a trivial container started from the agent's
/// image (with `runtime=`'s runtime, or the engine's default): an engine
/// that answers but cannot start a container (Podman whose crun refuses a
/// cgroup v1 host) is unavailable, with its refusal as the reason. The
/// image is cached by the engine per binary (`prepare`), the trial's
/// verdict in this process per engine, version, image and spec.
fn probe(spec: &Spec) -> (bool, String) {
    static TRIED: Mutex<Vec<(String, Result<String, String>)>> = Mutex::new(Vec::new());
    let checked = DockerEnvironment::new(spec.clone()).and_then(|mut env| {
        let v = engine_version(env.cli, env.rootless.as_ref(), engine_limit(spec))?;
        env.prepare(&crate::core::observer::Silent)?;
        let key = format!("{} {v} {} {}", env.cli, env.image, spec.text);
        let known = TRIED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, r)| r.clone());
        let verdict = known.unwrap_or_else(|| {
            let r = env.trial(&v).map_err(|e| format!("{e:#}"));
            TRIED
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((key, r.clone()));
            r
        });
        verdict.map_err(|e| anyhow!(e))
    });
    match checked {
        Ok(detail) => (true, detail),
        Err(e) => (false, format!("{e:#}")),
    }
}

/// The port a server inside a container listens on (its own namespace).
const CONTAINER_PORT: u16 = 12866;

pub struct DockerEnvironment {
    spec: Spec,
    /// `docker` or `podman`.
    cli: &'static str,
    image: String,
    run_id: String,
    /// Podman's conmon writes an `oom` marker into its working directory; it
    /// runs in a private directory per instance under this one, removed
    /// with the environment, where the marker tells an OOM kill.
    conmon_dir: Option<tempfile::TempDir>,
    /// When each instance started (unix seconds), for the engine's events.
    launched_at: Mutex<Vec<(usize, f64)>>,
    /// `runtime=`'s name and version, once checked (`runtime`).
    runtime: BTreeMap<String, String>,
    /// `rootless=`'s user, checked; None for the engine's own (root).
    rootless: Option<Rootless>,
    /// What the plan's network jobs need (a rootless network opens the
    /// host's loopback only for them).
    need: NetNeed,
    /// A rootless container's network, as Podman gives it (a trial's).
    net_mode: String,
}

impl DockerEnvironment {
    pub fn new(spec: Spec) -> Result<DockerEnvironment> {
        let cli = if spec.driver.name == PODMAN.name {
            "podman"
        } else {
            "docker"
        };
        let rootless = Rootless::of(&spec)?;
        if rootless.is_none() && matches!(spec.opt("network"), Some("slirp4netns" | "pasta")) {
            return Err(crate::core::options::CliError::Usage(format!(
                "--env {}: network=slirp4netns and pasta are rootless Podman's here: add rootless=USER, or use network=bridge or host",
                spec.text
            ))
            .into());
        }
        // Rootless, conmon runs as the user, who cannot enter our directory.
        let conmon_dir = if cli == "podman" && rootless.is_none() {
            // Named after its owner: a killed run's is swept by the next.
            owner::sweep_dirs(&std::env::temp_dir(), CONMON_PREFIX);
            let tag = Owner::me().map(Owner::tag).unwrap_or_default();
            Some(
                tempfile::Builder::new()
                    .prefix(&format!("{CONMON_PREFIX}{tag}-"))
                    .tempdir()?,
            )
        } else {
            None
        };
        Ok(DockerEnvironment {
            conmon_dir,
            launched_at: Mutex::new(Vec::new()),
            runtime: BTreeMap::new(),
            rootless,
            need: NetNeed::default(),
            net_mode: String::new(),
            cli,
            image: String::new(),
            run_id: format!("{}-{}", std::process::id(), rand_suffix()),
            spec,
        })
    }

    /// Where file tests write. `/work` exists in our image and is mounted for
    /// storage=tmpfs|volume; in a user's `image=` on its own overlay it may
    /// not exist, and Podman refuses a missing working directory, so `/tmp`.
    fn workdir(&self) -> &'static str {
        let own_dir = self.spec.opt("image").is_none()
            || matches!(self.spec.opt("storage"), Some("tmpfs" | "volume"));
        if own_dir || self.cli == "docker" {
            "/work"
        } else {
            "/tmp"
        }
    }

    fn container_name(&self, index: usize) -> String {
        format!("virtperf-{}-{index}", self.run_id)
    }
}

fn rand_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{nanos:08x}")
}

/// Rootful Podman gives containers 1048576 open files and processes, which
/// the OCI runtime can only set with CAP_SYS_RESOURCE; without it (as in a
/// restricted sandbox) every container fails with "error setting rlimit".
/// Then ask for limits it can set: this process's hard open-file limit, and
/// processes capped at 32768, the hard limit Podman 4 starts conmon with.
/// (RLIMIT_NPROC is not enforced for root, which the agent runs as.)
fn podman_ulimits() -> Vec<(&'static str, u64)> {
    if has_cap_sys_resource() {
        return Vec::new();
    }
    let hard = |resource| {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit into `r`.
        let ok = unsafe { libc::getrlimit(resource, &mut r) } == 0;
        ok.then_some(r.rlim_max)
    };
    let mut limits = Vec::new();
    if let Some(n) = hard(libc::RLIMIT_NOFILE) {
        limits.push(("nofile", n.min(1 << 20)));
    }
    if let Some(n) = hard(libc::RLIMIT_NPROC) {
        limits.push(("nproc", n.min(32768)));
    }
    limits
}

/// Whether this process holds CAP_SYS_RESOURCE (bit 24 of CapEff).
fn has_cap_sys_resource() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << 24) != 0)
}

/// Seconds since the epoch, as the engines' `events --since` takes them.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl DockerEnvironment {
    /// Podman's conmon's working directory for instance `index`.
    fn conmon_dir_of(&self, index: usize) -> Option<std::path::PathBuf> {
        self.conmon_dir
            .as_ref()
            .map(|d| d.path().join(index.to_string()))
    }

    /// The `run` command of instance `index`.
    fn run_command(&self, index: usize) -> Result<Command> {
        let name = self.container_name(index);
        let mut cmd = engine_command(self.cli, self.rootless.as_ref());
        if let Some(dir) = self.conmon_dir_of(index) {
            cmd.current_dir(dir);
        }
        cmd.args(super::runtime::global_args(self.cli, &self.spec));
        cmd.args(["run", "-i", "--rm", "--name", &name, "--label", LABEL]);
        cmd.args(super::runtime::run_args(self.cli, &self.spec));
        if let Some(owner) = Owner::me() {
            cmd.args(["--label", &format!("{OWNER_LABEL}={}", owner.tag())]);
        }
        cmd.args(["--workdir", self.workdir()]);
        if self.cli == "podman" && self.rootless.is_none() {
            for (name, limit) in podman_ulimits() {
                cmd.args(["--ulimit", &format!("{name}={limit}:{limit}")]);
            }
        }
        if let Some(cpus) = self.spec.opt("cpus") {
            cmd.args(["--cpus", cpus]);
        }
        if let Some(mem) = self.spec.opt("memory") {
            cmd.args(["--memory", mem]);
        }
        if let Some(set) = self.spec.opt("cpuset") {
            cmd.args(["--cpuset-cpus", set]);
        }
        let net = match &self.rootless {
            Some(_) => rootless::network_arg(&self.net_mode, self.spec.opt("network"), self.need),
            None => self.spec.opt("network").map(str::to_string),
        };
        if let Some(net) = net {
            cmd.args(["--network", &net]);
        }
        match self.spec.opt("storage") {
            Some("tmpfs") => {
                cmd.args(["--tmpfs", "/work:exec"]);
            }
            // An anonymous volume: each container's own, and `--rm`
            // removes it with the container.
            Some("volume") => {
                cmd.args(["-v", "/work"]);
            }
            _ => {}
        }
        if self.spec.opt("image").is_some() {
            let exe = std::env::current_exe()?;
            cmd.args(["-v", &format!("{}:/virtperf:ro", exe.display())]);
            cmd.args(["--entrypoint", "/virtperf"]);
        }
        cmd.arg(&self.image).arg("agent");
        Ok(cmd)
    }
}

impl DockerEnvironment {
    /// After `prepare`: a trivial container starts (`runtime=`'s and
    /// `rootless=`'s were started by `prepare` itself); what `envs` says of it.
    fn trial(&self, version: &str) -> Result<String> {
        // The engine's own version is always in `runtime` (the
        // fingerprint's docker_version/podman_version): a runtime= is what
        // made prepare start a container already.
        if self.spec.opt("runtime").is_some() || self.rootless.is_some() {
            let own = format!("{}_version", self.cli);
            let settings: Vec<String> = self
                .settings(0)
                .iter()
                .filter(|(k, _)| **k != own)
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            return Ok(format!("engine {version}, {}", settings.join(", ")));
        }
        let limit = engine_limit(&self.spec);
        let run = |args: &[&str]| engine(self.cli, None, args, None, limit);
        super::runtime::trial_container(self.cli, &self.spec, &run, &self.trial_args()?)?;
        Ok(format!("engine {version}, a trial container started"))
    }

    /// A trivial container's arguments up to its image (the binary then
    /// takes `--version`), as `run_command` would mount it.
    fn trial_args(&self) -> Result<Vec<String>> {
        // Labelled as every container of ours: a killed run's is swept.
        let mut args = vec!["--label".to_string(), LABEL.to_string()];
        if let Some(owner) = Owner::me() {
            args.extend([
                "--label".to_string(),
                format!("{OWNER_LABEL}={}", owner.tag()),
            ]);
        }
        if self.cli == "podman" && self.rootless.is_none() {
            for (name, limit) in podman_ulimits() {
                args.extend(["--ulimit".to_string(), format!("{name}={limit}:{limit}")]);
            }
        }
        if let Some(net) = self.spec.opt("network") {
            args.extend(["--network".to_string(), net.to_string()]);
        }
        if self.spec.opt("image").is_some() {
            let exe = std::env::current_exe()?;
            args.push("-v".to_string());
            args.push(format!("{}:/virtperf:ro", exe.display()));
            args.extend(["--entrypoint".to_string(), "/virtperf".to_string()]);
        }
        args.push(self.image.clone());
        Ok(args)
    }
}

impl Environment for DockerEnvironment {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn prepare(&mut self, obs: &dyn Observer) -> Result<()> {
        let user = self.rootless.clone();
        let user = user.as_ref();
        let version = engine_version(self.cli, user, engine_limit(&self.spec))?;
        if user.is_some() {
            rootless::refuse_pasta(&self.spec, &version)?;
        }
        let swept = sweep_dead_owners(self.cli, user, engine_limit(&self.spec));
        if swept > 0 {
            obs.note(&format!(
                "{}: removed {swept} container(s) left by virtperf runs that were killed",
                self.cli
            ));
        }
        if let Some(img) = self.spec.opt("image") {
            self.image = img.to_string();
        } else {
            let sha = crate::sys::fingerprint::binary_sha256()
                .ok_or_else(|| anyhow!("cannot read this binary to put it in an image"))?;
            self.image = format!("virtperf-agent:{}", &sha[..16]);
            let limit = engine_limit(&self.spec);
            let exists = engine(
                self.cli,
                user,
                &["image", "inspect", &self.image],
                None,
                limit,
            )?
            .status
            .success();
            if !exists {
                let exe = std::fs::read("/proc/self/exe").context("reading this binary")?;
                let tar = agent_tar(&exe);
                let out = engine(
                    self.cli,
                    user,
                    &[
                        "import",
                        "--change",
                        "ENTRYPOINT [\"/virtperf\"]",
                        "-",
                        &self.image,
                    ],
                    Some(&tar),
                    limit,
                )?;
                if !out.status.success() {
                    bail!(
                        "{} import failed: {}",
                        self.cli,
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
            }
        }
        let limit = engine_limit(&self.spec);
        let run = |args: &[&str]| engine(self.cli, user, args, None, limit);
        self.runtime = super::runtime::check(self.cli, &self.spec, &run, &self.trial_args()?)?;
        if let Some(r) = user {
            let trial = format!("virtperf-trial-{}", self.run_id);
            let global = super::runtime::global_args(self.cli, &self.spec);
            let (mode, runtime) = rootless::trial(&run, &trial, &global, &self.trial_args()?)
                .with_context(|| {
                    format!("--env {}: a trial container as {}", self.spec.text, r.user)
                })?;
            rootless::refuse_network(&self.spec, &mode, self.need)?;
            for (key, value) in runtime {
                self.runtime.entry(key).or_insert(value);
            }
            // Podman's own word that it runs rootless, and the default
            // runtime's version (its first line) unless runtime= gave one.
            let format = "{{.Host.Security.Rootless}}|{{.Host.OCIRuntime.Version}}";
            let out = run(&["info", "--format", format])?;
            let text = String::from_utf8_lossy(&out.stdout);
            let first = text.lines().next().unwrap_or_default();
            let (is_rootless, runtime_version) = first.split_once('|').unwrap_or((first, ""));
            if !runtime_version.trim().is_empty() {
                self.runtime
                    .entry("runtime_version".into())
                    .or_insert_with(|| runtime_version.trim().into());
            }
            self.runtime
                .extend(rootless::settings(r, is_rootless.trim(), &mode, &version));
            self.net_mode = mode;
        }
        // The engine's version in the fingerprint (docker_version, podman_version).
        let key = format!("{}_version", self.cli);
        self.runtime.entry(key).or_insert(version);
        Ok(())
    }

    fn launch(&self, index: usize) -> Result<Launched> {
        let name = self.container_name(index);
        if let Some(dir) = self.conmon_dir_of(index) {
            std::fs::create_dir_all(&dir).context("creating conmon's directory")?;
        }
        self.launched_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((index, unix_now()));
        let mut cmd = self.run_command(index)?;
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("running {} run", self.cli))?;
        let cli = self.cli;
        let limit = engine_limit(&self.spec);
        let inspect_name = name.clone();
        let (user, rm_user) = (self.rootless.clone(), self.rootless.clone());
        let init: Box<dyn Fn() -> Option<u32> + Send> = Box::new(move || {
            let out = engine(
                cli,
                user.as_ref(),
                &["inspect", "-f", "{{.State.Pid}}", &inspect_name],
                None,
                limit,
            )
            .ok()?;
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .ok()
                .filter(|&pid: &u32| pid > 0)
        });
        // Rootless on cgroup v1, the container has no cgroup of its own (it
        // is in the root one): its init's tree counts instead.
        let on_host = if self.rootless.is_some()
            && !Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
        {
            OnHost::Detached(init)
        } else {
            OnHost::Container(init)
        };
        Ok(Launched {
            child,
            // `--rm` removes an agent that ended; this one is hung or was
            // left behind, so it goes with its anonymous volume.
            cleanup: Some(Box::new(move || {
                let mut rm = engine_command(cli, rm_user.as_ref());
                rm.args(["rm", "-f", "-v", &name]);
                run_cleanup(rm, limit);
            })),
            console: None,
            workdir: self.workdir().into(),
            forwarded: None,
            on_host,
        })
    }

    fn boot_deadline(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn use_network(&mut self, need: NetNeed) {
        self.need = need;
    }

    fn settings(&self, _index: usize) -> BTreeMap<String, String> {
        self.runtime.clone()
    }

    /// On the engine's bridge the host server binds the container's
    /// gateway (the host's address on that bridge, nowhere else); with
    /// network=host both ends share the host's loopback.
    fn route_to_host(&self, index: usize) -> Result<Route> {
        if self.rootless.is_some() {
            return Ok(rootless::route_to_host(&self.net_mode));
        }
        if self.spec.opt("network") == Some("host") {
            return Ok(Route::loopback("host network (loopback)"));
        }
        let gateway = net::inspect_ip(
            self.cli,
            &self.container_name(index),
            "{{.NetworkSettings.Gateway}}",
        )?;
        Ok(Route {
            bind: std::net::SocketAddr::new(gateway, 0),
            dial_ip: gateway,
            dial_port: None,
            path: format!("{} bridge (container to host gateway)", self.cli),
        })
    }

    /// The server inside listens on the container's own network (port
    /// 12866, the container has its own namespace) and the host dials the
    /// container's address on the bridge; with network=host, loopback.
    fn route_to_env(&self, index: usize, _forwarded: Option<(u16, u16)>) -> Result<Route> {
        if self.spec.opt("network") == Some("host") || self.net_mode == "host" {
            return Ok(Route::loopback("host network (loopback)"));
        }
        let ip = net::inspect_ip(
            self.cli,
            &self.container_name(index),
            "{{.NetworkSettings.IPAddress}}",
        )?;
        Ok(Route {
            bind: std::net::SocketAddr::new(ip, CONTAINER_PORT),
            dial_ip: ip,
            dial_port: None,
            path: format!("{} bridge (host to container)", self.cli),
        })
    }

    fn explain_exit_status(&self, index: usize, status: Option<ExitStatus>) -> Option<String> {
        let memory = self.spec.opt("memory");
        if self.oom_killed(index) {
            return Some(format!(
                "the container was killed for running out of memory (OOM; memory={}): give it more memory",
                memory.unwrap_or("unlimited")
            ));
        }
        // `run` exits with the container's code: 137 is SIGKILL.
        let killed = status.and_then(|s| s.code()) == Some(137);
        match memory {
            // Podman 4 on cgroup v2 does not record OOM kills; SIGKILL under
            // a memory limit, with nothing else sending one, is the OOM killer.
            Some(memory) if killed => Some(format!(
                "the container was killed with SIGKILL (exit 137) under memory={memory}: most likely out of memory (the {} engine recorded no OOM kill); give it more memory",
                self.cli
            )),
            _ => None,
        }
    }
}

impl DockerEnvironment {
    /// Whether the engine saw instance `index` killed for lack of memory.
    /// The container is gone (`--rm`): Podman's conmon left its marker;
    /// Docker keeps an `oom` event in its recent events.
    fn oom_killed(&self, index: usize) -> bool {
        if let Some(dir) = self.conmon_dir_of(index) {
            return dir.join("oom").exists();
        }
        let since = self
            .launched_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .rev()
            .find(|(i, _)| *i == index)
            .map_or(0.0, |(_, t)| t - 1.0);
        let since = format!("{since:.3}");
        let until = format!("{:.3}", unix_now());
        let container = format!("container={}", self.container_name(index));
        let out = engine(
            self.cli,
            self.rootless.as_ref(),
            &[
                "events",
                "--since",
                &since,
                "--until",
                &until,
                "--filter",
                &container,
                "--filter",
                "event=oom",
                "--format",
                "{{.Status}}",
            ],
            None,
            engine_limit(&self.spec),
        );
        out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("oom"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cmd: &Command) -> Vec<String> {
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn every_instance_mounts_a_volume_of_its_own_removed_with_it() {
        // Issue 14, items 7 and 9: two instances shared one named volume,
        // removed only by the last one's cleanup, and containers were not
        // started with --rm. An anonymous volume is the container's own.
        let mut env =
            DockerEnvironment::new(Spec::parse("docker:storage=volume,count=2").unwrap()).unwrap();
        env.image = "virtperf-agent:test".into();
        for i in 0..2 {
            let a = args(&env.run_command(i).unwrap());
            let mount = &a[a.iter().position(|x| x == "-v").unwrap() + 1];
            assert_eq!(mount, "/work", "no name: anonymous, one per container");
            assert!(a.contains(&"--rm".to_string()), "{a:?}");
            let owner = format!("{OWNER_LABEL}={}", Owner::me().unwrap().tag());
            assert!(a.contains(&owner), "{a:?}");
        }
    }

    #[test]
    fn the_image_is_the_one_word_after_the_options() {
        let mut env =
            DockerEnvironment::new(Spec::parse("docker:image=debian:12").unwrap()).unwrap();
        env.image = "debian:12".into();
        let a = args(&env.run_command(0).unwrap());
        assert_eq!(&a[a.len() - 2..], ["debian:12", "agent"]);
    }
}
