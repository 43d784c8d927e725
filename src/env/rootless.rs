//! Rootless Podman (`podman:rootless=USER`): every engine command runs as
//! that unprivileged user, so its containers live in the user's own storage
//! (under its home) and its user namespace, on a user-mode network
//! (`network=slirp4netns|pasta|host`; by default what Podman picks). Before
//! anything starts the user must exist with subordinate uid and gid ranges,
//! and `newuidmap`/`newgidmap` and the network's helper must be installed;
//! each refusal names its fix. The route to the host's server: slirp4netns
//! with `allow_host_loopback`, whose gateway 10.0.2.2 is the host's
//! loopback; the host's own network shares loopback.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};

use super::def::{Check, EnvOption};
use super::{NetNeed, Route, Spec};
use crate::core::options::CliError;

pub const OPTION: EnvOption = EnvOption::new(
    "rootless",
    Check::Text,
    "run as this unprivileged user (rootless Podman: its own storage, user-mode network); it needs /etc/subuid and /etc/subgid ranges",
);

/// The network modes a rootless container may have here.
pub const NETWORKS: &[&str] = &["slirp4netns", "pasta", "host"];

/// slirp4netns's gateway in its default 10.0.2.0/24, which
/// `allow_host_loopback=true` turns into the host's 127.0.0.1.
const SLIRP_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);

/// The search path the user's engine commands get (their environment is
/// cleared: root's XDG_RUNTIME_DIR or TMPDIR must not reach them).
const PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/// The unprivileged user a rootless Podman runs as.
#[derive(Debug, Clone, PartialEq)]
pub struct Rootless {
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

impl Rootless {
    /// `rootless=` of `spec`, checked: None when not asked.
    pub fn of(spec: &Spec) -> Result<Option<Rootless>> {
        let Some(user) = spec.opt(OPTION.key) else {
            return Ok(None);
        };
        let at = &spec.text;
        if spec.driver.name != "podman" {
            return Err(usage(format!(
                "--env {at}: rootless= is Podman's: use podman:rootless={user}"
            )));
        }
        let valid = !user.is_empty()
            && user.len() <= 32
            && user.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && user
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c));
        if !valid {
            return Err(usage(format!(
                "--env {at}: rootless={user} is not a user name (lowercase letters, digits, _ . -)"
            )));
        }
        match spec.opt("network") {
            Some(net) if !NETWORKS.contains(&net) => return Err(usage(format!(
                "--env {at}: network={net} is not a rootless network: use network={} (or leave it out for what Podman picks)",
                NETWORKS.join(" or network=")
            ))),
            Some("slirp4netns") if find_tool("slirp4netns").is_none() => bail!(
                "--env {at}: slirp4netns is missing: install it (apt-get install slirp4netns)"
            ),
            Some("pasta") if find_tool("pasta").is_none() => {
                bail!("--env {at}: pasta is missing: install it (apt-get install passt)")
            }
            _ => {}
        }
        let Some(r) = lookup(&read("/etc/passwd"), user) else {
            return Err(usage(format!("--env {at}: there is no user {user}: create it (useradd -m {user}) and give it subordinate ids (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 {user})")));
        };
        if r.uid == 0 {
            return Err(usage(format!("--env {at}: rootless={user} is root: name an unprivileged user, or leave rootless= out for rootful Podman")));
        }
        if !r.home.is_dir() {
            return Err(usage(format!("--env {at}: {user}'s home {} does not exist: Podman keeps the user's storage there (create it, e.g. mkhomedir_helper {user})", r.home.display())));
        }
        for (file, flag) in [("/etc/subuid", "subuids"), ("/etc/subgid", "subgids")] {
            if !has_range(&read(file), user, r.uid) {
                return Err(usage(format!("--env {at}: {user} has no range in {file}: give it one (usermod --add-{flag} 100000-165535 {user})")));
            }
        }
        for tool in ["newuidmap", "newgidmap"] {
            if find_tool(tool).is_none() {
                bail!("--env {at}: {tool} is missing, which rootless Podman needs to map the user's ids: install it (apt-get install uidmap)");
            }
        }
        if cgroup_v1() {
            if let Some(key) = ["cpus", "memory", "cpuset"]
                .into_iter()
                .find(|k| spec.opt(k).is_some())
            {
                return Err(usage(format!("--env {at}: rootless Podman cannot set {key}= on this cgroup v1 host (it would be ignored): leave {key}= out, or use rootful Podman")));
            }
        }
        Ok(Some(r))
    }

    /// A command run as the user: its uid and gid (std drops root's
    /// supplementary groups), its home as working directory and a cleared
    /// environment with only what Podman needs.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.uid(self.uid)
            .gid(self.gid)
            .env_clear()
            .current_dir(&self.home)
            .env("HOME", &self.home)
            .env("USER", &self.user)
            .env("LOGNAME", &self.user)
            .env("PATH", PATH);
        cmd
    }
}

/// The `--network` value for a rootless run: slirp4netns opens the host's
/// loopback only when the plan's clients need the host's server.
pub fn network_arg(mode: &str, asked: Option<&str>, need: NetNeed) -> Option<String> {
    match mode {
        "slirp4netns" if need.to_host => Some("slirp4netns:allow_host_loopback=true".into()),
        _ => asked.map(str::to_string),
    }
}

/// What a rootless plan's network jobs cannot do, checked before any
/// launch (`mode`: the network Podman gives the containers).
pub fn refuse_network(spec: &Spec, mode: &str, need: NetNeed) -> Result<()> {
    let at = &spec.text;
    if mode == "host" || !(need.to_host || need.to_env) {
        return Ok(());
    }
    if need.to_env {
        bail!("--env {at}: a server inside a rootless container (--net-server=env) is not supported on its {mode} network: leave --net-server out (the host serves, the container dials it), or use network=host");
    }
    if mode != "slirp4netns" {
        bail!("--env {at}: network workloads on rootless Podman's {mode} network are not supported yet (tried only with slirp4netns): use network=slirp4netns or network=host");
    }
    Ok(())
}

/// `network=pasta` where this Podman (`version`, as `podman version`
/// prints it) has no pasta network: Podman added it in 4.4, and 4.3 refuses
/// the container with "unable to find network with name or ID pasta".
pub fn refuse_pasta(spec: &Spec, version: &str) -> Result<()> {
    if spec.opt("network") != Some("pasta") {
        return Ok(());
    }
    let mut parts = version.trim().split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().flatten(), parts.next().flatten());
    match (major, minor) {
        (Some(major), Some(minor)) if (major, minor) < (4, 4) => Err(usage(format!(
            "--env {}: network=pasta needs Podman 4.4 or later, and this Podman is {}: use network=slirp4netns (or leave network= out)",
            spec.text,
            version.trim()
        ))),
        _ => Ok(()),
    }
}

type Engine<'a> = &'a dyn Fn(&[&str]) -> Result<std::process::Output>;

/// A trial container as the user (`args`: the run arguments up to its
/// image, with our labels, whose binary then prints its version), created, inspected,
/// started and removed: its refusal (a network this Podman lacks, a user
/// whose ids cannot be mapped) is the reason the spec cannot run. Returns
/// the network Podman gave it and the OCI runtime's name and version.
pub fn trial(
    engine: Engine,
    name: &str,
    global: &[String],
    args: &[String],
) -> Result<(String, BTreeMap<String, String>)> {
    let mut create: Vec<&str> = global.iter().map(String::as_str).collect();
    create.extend(["create", "--name", name]);
    create.extend(args.iter().map(String::as_str));
    create.push("--version");
    let made = engine(&create)?;
    let outcome = (|| {
        if !made.status.success() {
            bail!("podman create: {}", complaint(&made.stderr));
        }
        let format = "{{.HostConfig.NetworkMode}}|{{.OCIRuntime}}";
        let seen = engine(&["inspect", "--format", format, name])?;
        let seen = String::from_utf8_lossy(&seen.stdout).trim().to_string();
        let (mode, runtime) = seen.split_once('|').unwrap_or((&seen, ""));
        let mut start: Vec<&str> = global.iter().map(String::as_str).collect();
        start.extend(["start", "--attach", name]);
        let started = engine(&start)?;
        if !started.status.success() {
            bail!("podman start: {}", complaint(&started.stderr));
        }
        let mut settings = BTreeMap::new();
        if !runtime.is_empty() {
            settings.insert("runtime".to_string(), runtime.to_string());
        }
        // `slirp4netns:allow_host_loopback=true` is slirp4netns.
        let mode = mode.split(':').next().unwrap_or_default();
        Ok((mode.to_string(), settings))
    })();
    let _ = engine(&["rm", "--force", name]);
    outcome
}

/// The last lines of Podman's complaint, without its warnings.
fn complaint(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("level=warning"))
        .collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// How a client in a rootless container reaches the host's server.
pub fn route_to_host(mode: &str) -> Route {
    if mode == "host" {
        return Route::loopback("rootless podman, host network (loopback)");
    }
    let mut route =
        Route::loopback("rootless podman, slirp4netns (10.0.2.2 to the host's loopback)");
    route.dial_ip = IpAddr::V4(SLIRP_HOST);
    route
}

/// The fingerprint's settings of a rootless instance (`rootless`: what
/// the user's Podman says of itself).
pub fn settings(
    r: &Rootless,
    rootless: &str,
    mode: &str,
    version: &str,
) -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    s.insert("rootless".into(), rootless.into());
    s.insert("user".into(), r.user.clone());
    s.insert("network".into(), mode.into());
    s.insert("podman_version".into(), version.into());
    s
}

/// A refusal of the spec as given: bad input, exit 2.
fn usage(msg: String) -> anyhow::Error {
    CliError::Usage(msg).into()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The user `name` in passwd-format `text`.
fn lookup(text: &str, name: &str) -> Option<Rootless> {
    text.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.len() >= 7 && f[0] == name).then_some(())?;
        Some(Rootless {
            user: name.to_string(),
            uid: f[2].parse().ok()?,
            gid: f[3].parse().ok()?,
            home: PathBuf::from(f[5]),
        })
    })
}

/// Whether subid-format `text` gives `user` (by name or uid) a range.
fn has_range(text: &str, user: &str, uid: u32) -> bool {
    text.lines().any(|line| {
        let f: Vec<&str> = line.trim().split(':').collect();
        f.len() == 3
            && (f[0] == user || f[0] == uid.to_string())
            && f[2].parse::<u64>().is_ok_and(|n| n > 0)
    })
}

/// Where `tool` is on the search path the user's commands get.
fn find_tool(tool: &str) -> Option<PathBuf> {
    PATH.split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

/// Whether this host's cgroups are v1 or hybrid (rootless Podman sets no
/// limits there).
fn cgroup_v1() -> bool {
    !Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasta_is_refused_where_podman_has_none() {
        let spec = |text: &str| Spec::parse(text).unwrap();
        let pasta = spec("podman:rootless=u,network=pasta");
        let err = format!("{:#}", refuse_pasta(&pasta, "4.3.1\n").unwrap_err());
        assert!(err.contains("this Podman is 4.3.1"), "{err}");
        assert!(err.contains("use network=slirp4netns"), "{err}");
        assert!(refuse_pasta(&pasta, "3.0.1").is_err());
        for newer in ["4.4.0", "5.2.1", "4.10"] {
            assert!(refuse_pasta(&pasta, newer).is_ok(), "{newer}");
        }
        // What cannot be read is left to Podman's own trial.
        assert!(refuse_pasta(&pasta, "dev").is_ok());
        let slirp = spec("podman:rootless=u,network=slirp4netns");
        assert!(refuse_pasta(&slirp, "4.3.1").is_ok());
    }

    #[test]
    fn users_and_their_ranges_are_read_from_the_files() {
        let passwd = "root:x:0:0:root:/root:/bin/sh\nbob:x:1001:1002::/home/bob:/bin/sh\n";
        let bob = lookup(passwd, "bob").unwrap();
        assert_eq!((bob.uid, bob.gid), (1001, 1002));
        assert_eq!(bob.home, Path::new("/home/bob"));
        assert!(lookup(passwd, "bo").is_none());
        assert!(has_range("bob:100000:65536\n", "bob", 1001));
        assert!(has_range("1001:100000:65536\n", "bob", 1001));
        assert!(!has_range("bobby:100000:65536\n", "bob", 1001));
        assert!(!has_range("bob:100000:0\n", "bob", 1001));
    }

    #[test]
    fn slirp_opens_the_hosts_loopback_only_for_a_client_of_the_host() {
        let none = NetNeed::default();
        let to_host = NetNeed {
            to_host: true,
            to_env: false,
        };
        assert_eq!(network_arg("slirp4netns", None, none), None);
        assert_eq!(
            network_arg("slirp4netns", None, to_host).as_deref(),
            Some("slirp4netns:allow_host_loopback=true")
        );
        assert_eq!(
            network_arg("host", Some("host"), to_host).as_deref(),
            Some("host")
        );
        assert_eq!(route_to_host("slirp4netns").dial_ip, IpAddr::V4(SLIRP_HOST));
        assert!(route_to_host("slirp4netns").bind.ip().is_loopback());
    }

    #[test]
    fn a_user_who_is_not_there_is_refused_naming_the_fix() {
        let spec = Spec::parse("podman:rootless=no-such-user-vp").unwrap();
        let err = Rootless::of(&spec).unwrap_err().to_string();
        assert!(err.contains("there is no user no-such-user-vp"), "{err}");
        assert!(err.contains("useradd -m no-such-user-vp"), "{err}");
        let spec = Spec::parse("podman:rootless=root").unwrap();
        let err = Rootless::of(&spec).unwrap_err().to_string();
        assert!(err.contains("is root"), "{err}");
    }
}
