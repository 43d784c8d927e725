//! What an LXC container of virtperf's is: its mode (unprivileged, in a
//! user namespace mapped onto root's subordinate ids, where the machine
//! gives root such ids; privileged otherwise, with the reason), and the
//! configuration file `lxc-execute -f` reads: the root file system made on
//! the spot, the host's network (`lxc.net.0.type = none`: the network
//! namespace `lxc-execute` runs in, the host's or a veth namespace of
//! virtperf's), and `cpus=`/`memory=` as cgroup limits on the hierarchy
//! that holds the controllers (v1 here, beside an empty v2 mount; v2 where
//! it is the only one), with the container's own cgroup mounted where the
//! agent's fingerprint reads its limits.

use std::path::Path;

use anyhow::{bail, Result};

/// The ids an unprivileged container maps its root onto.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    pub uid: u64,
    pub gid: u64,
}

/// How many subordinate ids a container's map needs.
pub const MAP_SIZE: u64 = 65536;

/// A container's mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Unprivileged(IdRange),
    /// Privileged, with why it is not unprivileged when the user did not ask.
    Privileged(Option<String>),
}

impl Mode {
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Unprivileged(_) => "unprivileged",
            Mode::Privileged(_) => "privileged",
        }
    }
}

/// The first range of at least `MAP_SIZE` ids that file text `text`
/// (`/etc/subuid`'s form, `NAME:START:COUNT`) gives root.
pub fn root_range(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut f = line.trim().split(':');
        let (who, start, count) = (f.next()?, f.next()?, f.next()?);
        let (start, count) = (start.parse::<u64>().ok()?, count.parse::<u64>().ok()?);
        ((who == "root" || who == "0") && count >= MAP_SIZE).then_some(start)
    })
}

/// Why this machine cannot run an unprivileged container, if it cannot.
fn unprivileged_range() -> std::result::Result<IdRange, String> {
    let max = std::fs::read_to_string("/proc/sys/user/max_user_namespaces").unwrap_or_default();
    if max.trim() == "0" {
        return Err(
            "user namespaces are switched off (/proc/sys/user/max_user_namespaces is 0)".into(),
        );
    }
    let read = |f: &str| root_range(&std::fs::read_to_string(f).unwrap_or_default());
    match (read("/etc/subuid"), read("/etc/subgid")) {
        (Some(uid), Some(gid)) => Ok(IdRange { uid, gid }),
        _ => Err(format!(
            "root has no {MAP_SIZE} subordinate ids in /etc/subuid and /etc/subgid (add a line such as root:1000000:{MAP_SIZE} to both)"
        )),
    }
}

/// The mode to run in: as `mode=` asks (unprivileged refused with the
/// reason and the fix where the machine does not allow it), by default
/// unprivileged where it can, else privileged with the reason.
pub fn choose_mode(asked: Option<&str>) -> Result<Mode> {
    match (asked, unprivileged_range()) {
        (Some("privileged"), _) => Ok(Mode::Privileged(None)),
        (_, Ok(range)) => Ok(Mode::Unprivileged(range)),
        (Some(_), Err(why)) => {
            bail!("--env lxc:mode=unprivileged cannot run here: {why}; or use mode=privileged")
        }
        (None, Err(why)) => Ok(Mode::Privileged(Some(why))),
    }
}

/// One container's configuration.
pub struct Config<'a> {
    pub name: &'a str,
    pub hostname: &'a str,
    pub rootfs: &'a Path,
    pub mode: &'a Mode,
    /// `cpus=`: CPUs' worth of time per period.
    pub cpus: Option<f64>,
    /// `memory=` in bytes.
    pub memory: Option<u64>,
    /// Whether the limits go to cgroup v1 controllers.
    pub v1: bool,
}

/// The CFS period the CPU limit is given in, in microseconds.
const PERIOD_US: u64 = 100_000;

impl Config<'_> {
    /// The text of the file `lxc-execute -f` reads.
    pub fn text(&self) -> String {
        let mut lines = vec![
            format!("lxc.uts.name = {}", self.hostname),
            format!("lxc.rootfs.path = dir:{}", self.rootfs.display()),
            "lxc.init.cwd = /work".to_string(),
            // The network namespace lxc-execute runs in: the host's, or
            // virtperf's veth namespace.
            "lxc.net.0.type = none".to_string(),
        ];
        match self.mode {
            Mode::Privileged(_) => {
                lxc_line(&mut lines, "lxc.mount.auto", "proc:mixed sys:ro");
            }
            Mode::Unprivileged(range) => {
                lxc_line(&mut lines, "lxc.mount.auto", "proc:mixed");
                // In the host's network namespace a user namespace may not
                // mount sysfs: the host's, read-only.
                lxc_line(
                    &mut lines,
                    "lxc.mount.entry",
                    "/sys sys none rbind,ro,create=dir 0 0",
                );
                lxc_line(
                    &mut lines,
                    "lxc.idmap",
                    &format!("u 0 {} {MAP_SIZE}", range.uid),
                );
                lxc_line(
                    &mut lines,
                    "lxc.idmap",
                    &format!("g 0 {} {MAP_SIZE}", range.gid),
                );
            }
        }
        // The container's own cgroups where the agent's fingerprint reads
        // its limits (LXC's `cgroup:ro` mounts nothing here).
        if self.v1 {
            lxc_line(
                &mut lines,
                "lxc.mount.entry",
                "tmpfs sys/fs/cgroup tmpfs rw,nosuid,nodev,noexec,mode=755,create=dir 0 0",
            );
        }
        for (host, inside) in self.cgroup_binds() {
            lxc_line(
                &mut lines,
                "lxc.mount.entry",
                &format!("{host} {inside} none bind,ro,create=dir 0 0"),
            );
        }
        self.limits(&mut lines);
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }

    /// The container's own cgroup directories and where they are mounted
    /// inside (where the agent's fingerprint reads its limits).
    fn cgroup_binds(&self) -> Vec<(String, String)> {
        let payload = format!("lxc.payload.{}", self.name);
        if self.v1 {
            ["cpu", "memory"]
                .iter()
                .map(|c| {
                    (
                        format!("/sys/fs/cgroup/{c}/{payload}"),
                        format!("sys/fs/cgroup/{c}"),
                    )
                })
                .collect()
        } else {
            vec![(
                format!("/sys/fs/cgroup/{payload}"),
                "sys/fs/cgroup".to_string(),
            )]
        }
    }

    fn limits(&self, lines: &mut Vec<String>) {
        let quota = self.cpus.map(|c| (c * PERIOD_US as f64).round() as u64);
        match (self.v1, quota) {
            (true, Some(q)) => {
                lxc_line(
                    lines,
                    "lxc.cgroup.cpu.cfs_period_us",
                    &PERIOD_US.to_string(),
                );
                lxc_line(lines, "lxc.cgroup.cpu.cfs_quota_us", &q.to_string());
            }
            (false, Some(q)) => lxc_line(lines, "lxc.cgroup2.cpu.max", &format!("{q} {PERIOD_US}")),
            _ => {}
        }
        match (self.v1, self.memory) {
            (true, Some(m)) => lxc_line(lines, "lxc.cgroup.memory.limit_in_bytes", &m.to_string()),
            (false, Some(m)) => lxc_line(lines, "lxc.cgroup2.memory.max", &m.to_string()),
            _ => {}
        }
    }
}

fn lxc_line(lines: &mut Vec<String>, key: &str, value: &str) {
    lines.push(format!("{key} = {value}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_range_is_found_by_name_or_id_and_must_be_large_enough() {
        assert_eq!(
            root_range("vp:100000:65536\nroot:300000:65536\n"),
            Some(300000)
        );
        assert_eq!(root_range("0:5:70000"), Some(5));
        assert_eq!(root_range("root:300000:1000"), None);
        assert_eq!(root_range("rooted:1:65536\nbad line\n"), None);
    }

    #[test]
    fn an_unprivileged_config_maps_ids_and_mounts_its_own_cgroups() {
        let mode = Mode::Unprivileged(IdRange {
            uid: 100000,
            gid: 200000,
        });
        let c = Config {
            name: "virtperf-lxc-t-0-0",
            hostname: "virtperf-0",
            rootfs: Path::new("/r"),
            mode: &mode,
            cpus: Some(0.5),
            memory: Some(256 << 20),
            v1: true,
        };
        let text = c.text();
        assert!(text.contains("lxc.idmap = u 0 100000 65536\n"), "{text}");
        assert!(text.contains("lxc.idmap = g 0 200000 65536\n"), "{text}");
        assert!(
            text.contains("lxc.cgroup.cpu.cfs_quota_us = 50000\n"),
            "{text}"
        );
        assert!(
            text.contains("lxc.cgroup.memory.limit_in_bytes = 268435456\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "/sys/fs/cgroup/memory/lxc.payload.virtperf-lxc-t-0-0 sys/fs/cgroup/memory"
            ),
            "{text}"
        );
        assert!(text.contains("lxc.net.0.type = none\n"), "{text}");
        assert!(!text.contains("sys:ro"), "{text}");
    }

    #[test]
    fn a_privileged_v2_config_has_cgroup2_limits_and_no_map() {
        let mode = Mode::Privileged(None);
        let c = Config {
            name: "n",
            hostname: "h",
            rootfs: Path::new("/r"),
            mode: &mode,
            cpus: Some(1.0),
            memory: Some(1 << 30),
            v1: false,
        };
        let text = c.text();
        assert!(!text.contains("idmap"), "{text}");
        assert!(
            text.contains("lxc.cgroup2.cpu.max = 100000 100000\n"),
            "{text}"
        );
        assert!(
            text.contains("lxc.cgroup2.memory.max = 1073741824\n"),
            "{text}"
        );
        assert!(text.contains("proc:mixed sys:ro\n"), "{text}");
        assert!(
            text.contains("/sys/fs/cgroup/lxc.payload.n sys/fs/cgroup none bind"),
            "{text}"
        );
    }

    #[test]
    fn privileged_is_always_allowed_and_named() {
        assert_eq!(
            choose_mode(Some("privileged")).unwrap(),
            Mode::Privileged(None)
        );
        assert_eq!(Mode::Privileged(None).name(), "privileged");
    }
}
