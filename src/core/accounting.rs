//! The accounting section of a result document (`accounting`, versioned on
//! its own): what one run cost, seen from inside the environment (the
//! workload's rusage, its block bytes, the environment's `/proc/stat`,
//! pressure and network counters) and, for an environment on this machine,
//! from the host (its CPU on the environment's behalf by where it went,
//! throttling, the device's bytes, the host's counters). Filled by
//! `sys::account`; read by `analysis::explain`.
//!
//! A figure the source does not give is None (null), never 0. What comes
//! back from a guest is untrusted: [`Accounting::kept_from_guest`] keeps only a
//! bounded, valid inside section and drops anything claiming to be the
//! host's view.

use serde::{Deserialize, Serialize};

pub use crate::core::series::Series;

/// The version of this section's layout; a store holds documents of
/// earlier versions (or none: documents from before accounting). 2 added
/// the per-second samples (`samples`, inside and outside) and the
/// workload's event counters (`inside.counters`).
pub const VERSION: u32 = 2;

/// At most this many runtime helpers are named per run.
pub const MAX_HELPERS: usize = 16;

/// Longest name kept for a helper or a device.
const MAX_NAME: usize = 64;

/// One run's accounting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    pub version: u32,
    /// The environment's own view, taken by the agent around the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside: Option<Inside>,
    /// The host's view, for an environment that runs on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside: Option<Outside>,
    /// Why part of what the guest sent was dropped, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
}

/// The run as the agent saw it inside: the workload's process (itself and
/// the children it reaped) and the environment's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Inside {
    /// Wall-clock seconds between the two readings.
    pub wall_s: f64,
    pub cpu_user_s: Option<f64>,
    pub cpu_sys_s: Option<f64>,
    pub ctx_voluntary: Option<u64>,
    pub ctx_involuntary: Option<u64>,
    pub faults_minor: Option<u64>,
    pub faults_major: Option<u64>,
    /// Bytes the workload's reads and writes moved through system calls
    /// (`/proc/self/io` rchar, wchar).
    pub syscall_read_bytes: Option<u64>,
    pub syscall_write_bytes: Option<u64>,
    /// Bytes it caused to be read from and sent to the block layer
    /// (`/proc/self/io` read_bytes, write_bytes).
    pub block_read_bytes: Option<u64>,
    pub block_write_bytes: Option<u64>,
    /// The environment's `/proc/stat` over the run (a container's is the
    /// host's).
    pub cpu: Option<CpuSplit>,
    /// The environment's `/proc/pressure/*` over the run.
    pub pressure: Option<Pressure>,
    pub net: Option<NetCounters>,
    /// The workload process's event counters (`perf_event_open`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// The environment's CPU shares and disk bytes, one sample a second.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::core::series::lenient"
    )]
    pub samples: Option<Series>,
}

/// The workload process's event counters over the run (its threads and
/// children included): cycles and instructions from `perf_event_open`,
/// context switches and page faults from getrusage (a perf software
/// counter would slow every context switch of the run). Where a figure
/// cannot be counted it is null and the reason says why ("not available
/// here: ...", or why it is not counted), never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    /// Why cycles and instructions are null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_unavailable: Option<String>,
    pub context_switches: Option<u64>,
    pub cpu_migrations: Option<u64>,
    pub page_faults: Option<u64>,
    /// Why a software figure is null (today always `cpu_migrations`,
    /// which no free source gives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub software_unavailable: Option<String>,
}

/// The most events a second one CPU may count (cycles at 10 GHz times an
/// IPC of 10).
const MAX_EVENTS_PER_CPU_S: f64 = 1e11;

/// Longest reason kept for a counter that could not be read.
const MAX_REASON: usize = 200;

impl Counters {
    /// Why these counts cannot be a run of `wall_s` seconds, if they
    /// cannot; the reasons are bounded text.
    fn check(&self, wall_s: f64) -> Result<(), String> {
        let limit = (wall_s + 1.0) * MAX_CPUS * MAX_EVENTS_PER_CPU_S;
        let counts = [
            self.cycles,
            self.instructions,
            self.context_switches,
            self.cpu_migrations,
            self.page_faults,
        ];
        if let Some(n) = counts.into_iter().flatten().find(|&n| n as f64 > limit) {
            return Err(format!("{n} events in {wall_s} s"));
        }
        let reasons = [&self.hardware_unavailable, &self.software_unavailable];
        if reasons
            .into_iter()
            .flatten()
            .any(|r| r.chars().count() > MAX_REASON || r.chars().any(char::is_control))
        {
            return Err(format!(
                "a reason longer than {MAX_REASON} characters or with control characters"
            ));
        }
        Ok(())
    }
}

/// CPU-seconds of all CPUs together, by kind, as `/proc/stat` counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSplit {
    pub user_s: f64,
    pub nice_s: f64,
    pub system_s: f64,
    pub idle_s: f64,
    pub iowait_s: f64,
    pub irq_s: f64,
    pub softirq_s: f64,
    pub steal_s: f64,
}

impl CpuSplit {
    fn figures(&self) -> [f64; 8] {
        [
            self.user_s,
            self.nice_s,
            self.system_s,
            self.idle_s,
            self.iowait_s,
            self.irq_s,
            self.softirq_s,
            self.steal_s,
        ]
    }

    /// All CPUs' seconds together.
    pub fn total_s(&self) -> f64 {
        self.figures().iter().sum()
    }
}

/// Seconds in which some (or all) tasks stalled on a resource, from a
/// pressure (PSI) file's `total=` microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    pub cpu_some_s: Option<f64>,
    pub io_some_s: Option<f64>,
    pub io_full_s: Option<f64>,
    pub memory_some_s: Option<f64>,
    pub memory_full_s: Option<f64>,
}

impl Pressure {
    fn figures(&self) -> [Option<f64>; 5] {
        [
            self.cpu_some_s,
            self.io_some_s,
            self.io_full_s,
            self.memory_some_s,
            self.memory_full_s,
        ]
    }
}

/// `/proc/net/snmp` counters over the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NetCounters {
    pub tcp_out_segs: Option<u64>,
    pub tcp_retrans_segs: Option<u64>,
    pub udp_in_datagrams: Option<u64>,
    pub udp_in_errors: Option<u64>,
    pub udp_rcvbuf_errors: Option<u64>,
}

/// The run as the host saw it, for an environment on this machine: host
/// CPU-seconds spent on its behalf, by where they went. A place that does
/// not exist for this environment (QEMU's threads for a container) is None.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outside {
    /// Wall-clock seconds from the run's start to its result.
    pub wall_s: f64,
    /// The launched process tree (the host agent, the `docker run` client,
    /// QEMU), QEMU's threads split out below.
    pub tree_s: Option<f64>,
    /// QEMU's vCPU threads (`CPU n/TCG`, `CPU n/KVM`).
    pub vcpu_s: Option<f64>,
    /// QEMU's other threads (main loop, I/O threads, workers).
    pub emulator_s: Option<f64>,
    /// A container's cgroup.
    pub cgroup: Option<CgroupFigures>,
    /// The runtime's helpers outside the environment (containerd-shim,
    /// conmon, fuse-overlayfs, slirp4netns, the engine's daemon), by name.
    pub helpers: Option<Vec<Helper>>,
    /// Kernel threads (writeback, block completion, loop devices).
    pub kernel_threads_s: Option<f64>,
    /// This process, when the run's network peer is here.
    pub peer_s: Option<f64>,
    /// The host's `/proc/stat` (its irq and softirq are charged to no
    /// process).
    pub cpu: Option<CpuSplit>,
    /// The host's whole disks (`/proc/diskstats`).
    pub device: Option<DeviceIo>,
    /// The host's system-wide pressure.
    pub pressure: Option<Pressure>,
    pub net: Option<NetCounters>,
    /// The host's CPU shares and whole disks' bytes, one sample a second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<Series>,
}

/// A container's cgroup over the run (v1 or v2 controllers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupFigures {
    /// 1 or 2.
    pub version: u8,
    pub cpu_s: Option<f64>,
    pub user_s: Option<f64>,
    pub system_s: Option<f64>,
    pub nr_periods: Option<u64>,
    pub nr_throttled: Option<u64>,
    pub throttled_s: Option<f64>,
    pub io_read_bytes: Option<u64>,
    pub io_write_bytes: Option<u64>,
    pub io_read_ops: Option<u64>,
    pub io_write_ops: Option<u64>,
    /// Its own pressure files (cgroup v2 only).
    pub pressure: Option<Pressure>,
}

/// A runtime helper's host CPU over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Helper {
    pub name: String,
    pub cpu_s: f64,
}

/// Block-device figures over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceIo {
    /// The devices summed, comma-separated ("vda").
    pub devices: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    /// Seconds the devices were busy (io_ticks).
    pub busy_s: f64,
}

impl Outside {
    /// Host CPU-seconds by where they went: the launched tree, QEMU's
    /// vCPUs and other threads, the cgroup, the helpers, kernel threads,
    /// the peer and the host's irq and softirq. A place that does not
    /// exist is no CPU.
    pub fn total_s(&self) -> f64 {
        let helpers: f64 = self.helpers.iter().flatten().map(|h| h.cpu_s).sum();
        [
            self.tree_s,
            self.vcpu_s,
            self.emulator_s,
            self.cgroup.as_ref().and_then(|c| c.cpu_s),
            self.kernel_threads_s,
            self.peer_s,
            self.cpu.map(|c| c.irq_s + c.softirq_s),
        ]
        .into_iter()
        .flatten()
        .sum::<f64>()
            + helpers
    }
}

impl Accounting {
    /// What the agent writes for a run: its own view, inside.
    pub fn of_inside(inside: Inside) -> Accounting {
        Accounting {
            version: VERSION,
            inside: Some(inside),
            ..Accounting::default()
        }
    }

    /// This section as it may be kept from a guest's document: the inside
    /// view if it is valid (every figure finite, non-negative and within
    /// what the run's wall time allows), never an outside view (only the
    /// host writes that). Returns None when nothing is left.
    pub fn kept_from_guest(self) -> Option<Accounting> {
        let mut rejected = Vec::new();
        if self.outside.is_some() {
            rejected.push("an outside view (only the host's is kept)".to_string());
        }
        let inside = match self.inside {
            Some(inside) => match inside.check() {
                Ok(()) => Some(inside.without_bad_parts(&mut rejected)),
                Err(why) => {
                    rejected.push(format!("its inside figures ({why})"));
                    None
                }
            },
            None => None,
        };
        let rejected = (!rejected.is_empty()).then(|| format!("dropped {}", rejected.join("; ")));
        (inside.is_some() || rejected.is_some()).then_some(Accounting {
            version: VERSION,
            inside,
            outside: None,
            rejected,
        })
    }
}

impl Accounting {
    /// A result's accounting as the host keeps it: what the agent sent
    /// (see [`Accounting::kept_from_guest`]) with the host's own view.
    pub fn received(sent: Option<Accounting>, outside: Option<Outside>) -> Option<Accounting> {
        let mut kept = sent.and_then(Accounting::kept_from_guest);
        if outside.is_some() {
            kept.get_or_insert_with(|| Accounting {
                version: VERSION,
                ..Accounting::default()
            })
            .outside = outside;
        }
        kept
    }
}

/// The most CPUs a guest may claim: CPU-seconds beyond this many times the
/// wall time cannot be one run's.
const MAX_CPUS: f64 = 4096.0;

impl Inside {
    /// Why these figures cannot be a run's, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        let wall = self.wall_s;
        if !wall.is_finite() || !(0.0..=1e7).contains(&wall) {
            return Err(format!("a wall time of {wall} s"));
        }
        let limit = (wall + 1.0) * MAX_CPUS;
        let mut seconds: Vec<Option<f64>> = vec![self.cpu_user_s, self.cpu_sys_s];
        seconds.extend(self.cpu.iter().flat_map(|c| c.figures().map(Some)));
        seconds.extend(self.pressure.iter().flat_map(|p| p.figures()));
        for s in seconds.into_iter().flatten() {
            if !s.is_finite() || s < 0.0 || s > limit {
                return Err(format!("{s} CPU-seconds in {wall} s"));
            }
        }
        Ok(())
    }
}

impl Inside {
    /// These figures without the samples or counters that cannot be the
    /// run's (each reason pushed on `rejected`): the rest stays.
    fn without_bad_parts(mut self, rejected: &mut Vec<String>) -> Inside {
        let wall = self.wall_s;
        if let Some(Err(why)) = self.samples.as_ref().map(|s| s.check(wall)) {
            rejected.push(format!("its samples ({why})"));
            self.samples = None;
        }
        if let Some(Err(why)) = self.counters.as_ref().map(|c| c.check(wall)) {
            rejected.push(format!("its counters ({why})"));
            self.counters = None;
        }
        self
    }
}

/// A name from the host's process table or device list, bounded.
pub fn bounded_name(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inside(user: f64) -> Inside {
        Inside {
            wall_s: 10.0,
            cpu_user_s: Some(user),
            cpu: Some(CpuSplit {
                user_s: 5.0,
                idle_s: 15.0,
                ..CpuSplit::default()
            }),
            ..Inside::default()
        }
    }

    #[test]
    fn a_guest_keeps_valid_inside_figures_and_never_an_outside_view() {
        let sent = Accounting {
            version: VERSION,
            inside: Some(inside(9.5)),
            outside: Some(Outside::default()),
            rejected: None,
        };
        let kept = sent.kept_from_guest().unwrap();
        assert_eq!(kept.inside, Some(inside(9.5)));
        assert!(kept.outside.is_none());
        assert!(kept.rejected.unwrap().contains("outside"));
    }

    #[test]
    fn impossible_inside_figures_are_dropped_with_the_reason() {
        for bad in [f64::NAN, -1.0, 1e12] {
            let sent = Accounting {
                version: VERSION,
                inside: Some(inside(bad)),
                ..Accounting::default()
            };
            let kept = sent.kept_from_guest().unwrap();
            assert!(kept.inside.is_none(), "{bad}");
            assert!(kept.rejected.unwrap().contains("inside"), "{bad}");
        }
        assert_eq!(Accounting::default().kept_from_guest(), None);
    }

    #[test]
    fn absent_figures_are_null_and_old_documents_read() {
        let json = serde_json::to_value(Inside {
            wall_s: 1.0,
            ..Inside::default()
        })
        .unwrap();
        assert!(json["cpu_user_s"].is_null());
        assert!(json["pressure"].is_null());
        let old: Accounting = serde_json::from_str(r#"{"version":1}"#).unwrap();
        assert!(old.inside.is_none() && old.outside.is_none());
    }

    #[test]
    fn a_guests_bad_samples_or_counters_are_dropped_alone_with_the_reason() {
        let series = |share: f64| Series {
            interval_s: 1.0,
            samples: vec![crate::core::series::Sample {
                t_s: 1.0,
                user_pct: share,
                ..Default::default()
            }],
            ..Series::default()
        };
        let sent = |samples: Series, cycles: u64, why: &str| Accounting {
            version: VERSION,
            inside: Some(Inside {
                samples: Some(samples),
                counters: Some(Counters {
                    cycles: Some(cycles),
                    software_unavailable: Some(why.into()),
                    ..Counters::default()
                }),
                ..inside(9.5)
            }),
            ..Accounting::default()
        };
        let kept = sent(series(40.0), 1000, "not available here: x")
            .kept_from_guest()
            .unwrap();
        assert!(kept.rejected.is_none(), "{kept:?}");
        let i = kept.inside.unwrap();
        assert!(i.samples.is_some() && i.counters.is_some());
        let long = "x".repeat(500);
        for (samples, cycles, why, dropped) in [
            (series(400.0), 1000, "ok", "samples"),
            (series(40.0), u64::MAX, "ok", "counters"),
            (series(40.0), 1, "a\x1b]0;owned\x07", "counters"),
            (series(40.0), 1, long.as_str(), "counters"),
        ] {
            let kept = sent(samples, cycles, why).kept_from_guest().unwrap();
            let reason = kept.rejected.unwrap();
            assert!(reason.contains(dropped), "{reason}");
            // The rest of the inside view stays.
            let i = kept.inside.unwrap();
            assert_eq!(i.cpu_user_s, Some(9.5));
            assert_eq!(dropped == "samples", i.samples.is_none());
            assert_eq!(dropped == "counters", i.counters.is_none());
        }
        // A series that does not parse is reported, never fatal.
        let json = r#"{"version":2,"inside":{"wall_s":1.0,"samples":{"samples":7}}}"#;
        let kept = serde_json::from_str::<Accounting>(json)
            .unwrap()
            .kept_from_guest()
            .unwrap();
        assert!(kept.rejected.unwrap().contains("do not parse"));
        assert!(kept.inside.unwrap().samples.is_none());
    }

    #[test]
    fn a_version_1_section_reads_without_samples_or_counters() {
        let v1 = r#"{"version":1,"inside":{"wall_s":2.0,"cpu_user_s":1.5,"cpu_sys_s":0.1,"ctx_voluntary":3,"ctx_involuntary":1,"faults_minor":10,"faults_major":0,"syscall_read_bytes":null,"syscall_write_bytes":null,"block_read_bytes":null,"block_write_bytes":null,"cpu":null,"pressure":null,"net":null},"outside":{"wall_s":2.1,"tree_s":1.6,"vcpu_s":null,"emulator_s":null,"cgroup":null,"helpers":[],"kernel_threads_s":0.0,"peer_s":null,"cpu":null,"device":null,"pressure":null,"net":null}}"#;
        let a: Accounting = serde_json::from_str(v1).unwrap();
        assert_eq!(a.version, 1);
        let (i, o) = (a.inside.unwrap(), a.outside.unwrap());
        assert_eq!(i.cpu_user_s, Some(1.5));
        assert!(i.samples.is_none() && i.counters.is_none() && o.samples.is_none());
    }

    #[test]
    fn the_host_total_sums_every_place_and_counts_a_missing_one_as_none() {
        let o = Outside {
            wall_s: 1.0,
            tree_s: Some(0.5),
            vcpu_s: Some(1.0),
            helpers: Some(vec![Helper {
                name: "fuse-overlayfs".into(),
                cpu_s: 0.25,
            }]),
            cpu: Some(CpuSplit {
                irq_s: 0.05,
                softirq_s: 0.2,
                ..CpuSplit::default()
            }),
            ..Outside::default()
        };
        assert!((o.total_s() - 2.0).abs() < 1e-12);
    }
}
