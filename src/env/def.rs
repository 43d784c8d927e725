//! What an environment driver declares about itself: its name, what it is,
//! the `--env` options it takes with their checks and help, how to build it
//! and how to tell whether this machine can run it. Spec parsing, `--env`
//! help and `virtperf envs` are generated from these. A `Spec` (an `--env`
//! value) is declared here too: it names its driver, and a driver builds
//! from a spec.

use std::collections::BTreeMap;

use anyhow::Result;

use super::Environment;

/// A parsed `--env` value (parsed by `spec`).
/// `reboot=`: how often an environment's instances are booted afresh.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reboot {
    /// Started once and kept for every run (the default, `reboot=no`).
    #[default]
    No,
    /// `reboot=each-run`: every run starts in freshly booted instances.
    EachRun,
    /// `reboot=each-round`: a fresh boot before each round, whose runs of
    /// the suite's entries then share it, as seed 001 rebooted before each
    /// of its five runs of the whole benchmark set.
    EachRound,
}

impl Reboot {
    /// The option's value, as results record it; `None` for `no`.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Reboot::No => None,
            Reboot::EachRun => Some("each-run"),
            Reboot::EachRound => Some("each-round"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub driver: &'static DriverDef,
    pub label: String,
    pub count: usize,
    /// `reboot=`: when the instances are ended and started again, after
    /// the driver's [`Environment::reboot`](super::Environment::reboot).
    pub reboot: Reboot,
    /// `USER@HOST` and port for ssh.
    pub target: Option<(String, Option<u16>)>,
    pub opts: BTreeMap<String, String>,
    /// The text as given.
    pub text: String,
    /// A group's members (`group:SPEC+SPEC`), each started once; empty for
    /// every other driver.
    pub members: Vec<Spec>,
}

impl Spec {
    pub fn opt(&self, key: &str) -> Option<&str> {
        self.opts.get(key).map(String::as_str)
    }
}

/// What values an `--env` option takes.
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// A finite number above zero, up to the given most (`cpus=0.5`).
    Positive(f64),
    /// A whole number in the range (`smp=2`).
    Whole(u64, u64),
    /// A size such as 512m or 2g, at least the given bytes.
    Size(u64),
    /// One word from a list.
    Choice(&'static [&'static str]),
    /// A TCP port, 1 to 65535.
    Port,
    /// CPU numbers and ranges, `0-3` (commas separate spec options).
    CpuList,
    /// A CPU limit this machine can give (a container's `cpus=`): above
    /// zero, at most its online CPUs, as the engine will insist.
    HostCpus,
    /// CPU numbers and ranges of this machine (a container's `cpuset=`).
    HostCpuList,
    /// A size such as 512m (at least the given bytes) this machine can
    /// give: at most what virtperf itself may use (a container's `memory=`).
    HostMemory(u64),
    /// A limit systemd sets on a unit's scope (nspawn's `cpus=`/`memory=`):
    /// refused where systemd is not PID 1, otherwise checked as the inner.
    ScopeLimit(&'static Check),
    /// A container image reference: never an option of the engine's CLI.
    Image,
    /// Anything (a path, a model name), but never a word starting with `-`.
    Text,
}

impl Check {
    /// Why `value` is refused, if it is.
    pub fn refuse(&self, key: &str, value: &str) -> Option<String> {
        match *self {
            Check::Positive(most)
                if !value
                    .parse::<f64>()
                    .is_ok_and(|x| x.is_finite() && x > 0.0 && x <= most) =>
            {
                Some(format!("{key}={value}: expected a number above 0, at most {most}"))
            }
            Check::Whole(least, most)
                if !value
                    .parse::<u64>()
                    .is_ok_and(|n| (least..=most).contains(&n)) =>
            {
                Some(format!("{key}={value}: expected a whole number, {least} to {most}"))
            }
            Check::Size(least) => match crate::core::units::Bytes::parse(value) {
                Err(_) => Some(format!("{key}={value}: expected a size such as 512m or 2g")),
                Ok(b) if b.0 < least => Some(format!(
                    "{key}={value}: too small, give at least {}m",
                    least.div_ceil(1 << 20)
                )),
                Ok(_) => None,
            },
            Check::Choice(words) if !words.contains(&value) => {
                Some(format!("{key}={value}: use {}", words.join(" or ")))
            }
            Check::Port if !value.parse::<u16>().is_ok_and(|p| p > 0) => {
                Some(format!("{key}={value}: expected a TCP port, 1 to 65535"))
            }
            Check::CpuList
                if value.is_empty()
                    || !value.chars().all(|c| c.is_ascii_digit() || c == '-')
                    || value.starts_with('-') =>
            {
                Some(format!("{key}={value}: expected CPU numbers such as 0-3"))
            }
            Check::HostCpus => {
                let have = host_cpus();
                match value.parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 && x <= have as f64 => None,
                    Ok(x) if x.is_finite() && x > have as f64 => Some(format!(
                        "{key}={value}: this machine has {have} CPU{}; give {key}={have} or less",
                        if have == 1 { "" } else { "s" }
                    )),
                    _ => Some(format!("{key}={value}: expected a number above 0, at most {have} (this machine's CPUs)")),
                }
            }
            Check::HostCpuList => Check::CpuList.refuse(key, value).or_else(|| {
                let have = host_cpus();
                let top = value
                    .split('-')
                    .filter_map(|n| n.parse::<usize>().ok())
                    .max()?;
                (top >= have).then(|| {
                    format!(
                        "{key}={value}: this machine's CPUs are 0-{}; CPU {top} does not exist",
                        have - 1
                    )
                })
            }),
            Check::HostMemory(least) => Check::Size(least).refuse(key, value).or_else(|| {
                let asked = crate::core::units::Bytes::parse(value).ok()?.0;
                let have = crate::sys::fingerprint::memory_limit()?;
                (asked > have).then(|| {
                    format!(
                        "{key}={value} is more than this machine gives virtperf ({} MiB): give {key}={}m or less",
                        have >> 20,
                        have >> 20
                    )
                })
            }),
            Check::ScopeLimit(inner) => match systemd_is_init() {
                Ok(()) => inner.refuse(key, value),
                Err(why) => Some(format!(
                    "{key}={value}: {why}: leave cpus= and memory= out, or use lxc:cpus=...,memory=... (LXC sets cgroup limits itself)"
                )),
            },
            Check::Image
                if value.is_empty()
                    || !value.starts_with(|c: char| c.is_ascii_alphanumeric())
                    || !value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c)) =>
            {
                Some(format!(
                    "{key}={value}: expected an image name such as debian:12 (letters, digits and . _ - / : @, starting with a letter or digit)"
                ))
            }
            Check::Text if value.is_empty() || value.starts_with('-') => Some(format!(
                "{key}={value}: give a value that does not start with '-'"
            )),
            _ => None,
        }
    }
}

/// The CPUs this machine has online, whatever this process's own CPU set
/// (what a container engine counts: "Range of CPUs is from 0.01 to N").
fn host_cpus() -> usize {
    // SAFETY: sysconf reads a system constant and touches no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(1)
}

/// Whether systemd runs as PID 1 here, which cgroup limits on nspawn's
/// scope need; why not otherwise.
pub fn systemd_is_init() -> std::result::Result<(), String> {
    let comm = std::fs::read_to_string("/proc/1/comm").unwrap_or_default();
    let comm = comm.trim();
    if comm == "systemd" && std::path::Path::new("/run/systemd/system").is_dir() {
        Ok(())
    } else {
        Err(format!(
            "systemd is not PID 1 on this machine (PID 1 is {}), so there is no scope to give CPUQuota=/MemoryMax= to",
            crate::core::text::one_line(if comm.is_empty() { "unknown" } else { comm }, 40)
        ))
    }
}

/// One `--env` option of a driver.
#[derive(Debug, Clone, Copy)]
pub struct EnvOption {
    pub key: &'static str,
    pub check: Check,
    pub help: &'static str,
}

impl EnvOption {
    pub const fn new(key: &'static str, check: Check, help: &'static str) -> EnvOption {
        EnvOption { key, check, help }
    }
}

/// One environment driver, as the registry lists it.
pub struct DriverDef {
    pub name: &'static str,
    pub summary: &'static str,
    /// What follows `NAME:` before the options, for drivers that need a
    /// target (`USER@HOST[:PORT]`).
    pub target: Option<&'static str>,
    pub options: &'static [EnvOption],
    /// Whether `virtperf envs` and `compare` try it without being asked.
    pub probe_by_default: bool,
    pub build: fn(&Spec) -> Result<Box<dyn Environment>>,
    /// Whether this machine can run it, and the detail (a version, or why not).
    pub probe: fn(&Spec) -> (bool, String),
}

impl DriverDef {
    pub fn option(&self, key: &str) -> Option<&EnvOption> {
        self.options.iter().find(|o| o.key == key)
    }

    /// `docker[:cpus=N,...]`, for help.
    pub fn usage(&self) -> String {
        let keys: Vec<&str> = self.options.iter().map(|o| o.key).collect();
        match (self.target, keys.is_empty()) {
            (Some(t), true) => format!("{}:{t}", self.name),
            (Some(t), false) => format!("{}:{t}[,{}=...]", self.name, keys.join("=,")),
            (None, true) => self.name.to_string(),
            (None, false) => format!("{}[:{}=...]", self.name, keys.join("=,")),
        }
    }
}

impl std::fmt::Debug for DriverDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DriverDef({})", self.name)
    }
}

impl PartialEq for DriverDef {
    fn eq(&self, other: &DriverDef) -> bool {
        self.name == other.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 52, item 5: a container's CPU limit or CPU set beyond this
    /// machine is refused before anything starts, naming what it has.
    #[test]
    fn a_cpu_limit_beyond_this_machine_is_refused_naming_its_cpus() {
        let have = host_cpus();
        assert_eq!(Check::HostCpus.refuse("cpus", &have.to_string()), None);
        assert_eq!(Check::HostCpus.refuse("cpus", "0.5"), None);
        let over = Check::HostCpus
            .refuse("cpus", &(have * 4).to_string())
            .unwrap();
        assert!(
            over.contains(&format!("this machine has {have} CPU")),
            "{over}"
        );
        assert!(over.contains(&format!("cpus={have} or less")), "{over}");
        assert!(Check::HostCpus.refuse("cpus", "0").is_some());
        assert!(Check::HostCpus.refuse("cpus", "NaN").is_some());
        assert_eq!(Check::HostCpuList.refuse("cpuset", "0"), None);
        let set = Check::HostCpuList
            .refuse("cpuset", &format!("0-{have}"))
            .unwrap();
        assert!(set.contains(&format!("CPU {have} does not exist")), "{set}");
        assert!(Check::HostCpuList.refuse("cpuset", "x").is_some());
    }

    #[test]
    fn more_memory_than_the_machine_is_refused_naming_what_it_has() {
        let check = Check::HostMemory(6 << 20);
        let err = check.refuse("memory", "100000g").unwrap();
        assert!(err.contains("memory=100000g"), "{err}");
        assert!(err.contains("or less"), "{err}");
        assert_eq!(check.refuse("memory", "64m"), None);
        assert!(check.refuse("memory", "1m").unwrap().contains("too small"));
    }
}
