//! The result document, schema `virtperf.result/1`: one measured run of one
//! workload in one environment, with where it was measured. Everything that
//! leaves a run (JSON output, the agent's stream, the results store) is this.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "virtperf.result/1";

/// The most metrics one run's document may have. The largest a workload
/// makes is a few hundred (microops' every operation, netperf's omni
/// output imported); a guest that sends more is refused, so that no
/// document can make every report slow.
pub const MAX_METRICS: usize = 1024;

/// One named figure of a run. The unit is separate from the name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
}

impl Metric {
    pub fn new(name: &str, value: f64, unit: &str, higher_is_better: bool) -> Metric {
        Metric {
            name: name.to_string(),
            value,
            unit: unit.to_string(),
            higher_is_better,
        }
    }
}

/// Per-event latency in milliseconds. A measured run has every figure; an
/// imported one has what its file gives, and a figure the file does not
/// give is null, never 0 (a sysbench log prints one percentile, fio no
/// sum). Stores written before these were optional read as they were.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
    #[serde(default)]
    pub p50: Option<f64>,
    #[serde(default)]
    pub p95: Option<f64>,
    #[serde(default)]
    pub p99: Option<f64>,
    #[serde(default)]
    pub p999: Option<f64>,
    /// The percentile chosen with `--percentile`, and its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<(f64, f64)>,
    /// Sum of all event latencies, as sysbench prints it.
    #[serde(default)]
    pub sum: Option<f64>,
}

impl Latency {
    /// Every figure it has, for checks that each is a finite, non-negative
    /// number.
    pub fn figures(&self) -> Vec<f64> {
        let mut out = vec![self.min, self.avg, self.max];
        out.extend(
            [self.p50, self.p95, self.p99, self.p999, self.sum]
                .into_iter()
                .flatten(),
        );
        out.extend(self.selected.map(|s| s.1));
        out
    }
}

/// How evenly the threads shared the work, as sysbench prints it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    pub events_avg: f64,
    pub events_stddev: f64,
    pub exec_time_avg: f64,
    pub exec_time_stddev: f64,
}

/// Limits imposed by the control group the run was in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cgroup {
    /// CPUs worth of quota (e.g. 0.5), if limited.
    pub cpu_quota: Option<f64>,
    pub memory_limit: Option<u64>,
}

/// Where a run was measured, as seen from inside.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvInfo {
    pub name: String,
    pub kind: String,
    /// The CPUID leaf 0x40000000 signature, or "none" on bare metal.
    pub hypervisor: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: u32,
    pub memory_bytes: u64,
    pub cgroup: Cgroup,
    pub clocksource: String,
    pub virtperf_version: String,
    /// SHA-256 of the running binary, so results from different builds are
    /// never silently mixed.
    pub binary_sha256: String,
    /// Seconds from starting the environment (container, VM boot, SSH
    /// connection) to its agent's hello, as the host measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_s: Option<f64>,
    /// The instruction set the dense linear-algebra kernels (faer) dispatch
    /// to on this CPU: "avx512", "avx2+fma" or "sse2". A guest whose CPUID
    /// hides AVX computes more slowly for that reason alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linalg_isa: Option<String>,
    /// Network interfaces with an IPv4 address, loopback excepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<NetInterface>,
    /// For a network workload: the path between client and server
    /// (loopback, netns, docker bridge, QEMU user network, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_path: Option<String>,
    /// The moment `--start-at` asked for and how late the run began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<StartAt>,
    /// For workloads that write files (fileio, disk, OLTP on SQLite): the
    /// file system they were on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Storage>,
    /// Which boot of which machine ran it: the kernel's boot id and the
    /// host name, as seen inside (a fresh VM has a new boot id, a fresh
    /// container a new host name), so runs that should have had a boot of
    /// their own can be checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    /// How many instances ran at once and were summed into this result
    /// (`count=N`, a group's members); none for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<u32>,
    /// `each-run` when the instance was booted afresh for this run,
    /// `each-round` when for this round of runs (set by the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reboot: Option<String>,
    /// How the environment's driver set it up, as the host saw it (a
    /// libvirt domain's vCPUs, pinning, CPU mode, memory backing, disk bus
    /// and cache, NIC model), setting by setting.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    /// For a run read from another tool's output (`virtperf import`):
    /// which tool, its version and the file; not measured by virtperf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<ImportedFrom>,
}

/// Where an imported run came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportedFrom {
    /// "sysbench", "fio", "iperf3", "bonnie++", "netperf".
    pub tool: String,
    /// As the file states it ("unknown" where it does not).
    pub version: String,
    /// The file's name as given to `virtperf import`.
    pub file: String,
    /// The day the file was last written (its modification time, UTC,
    /// YYYY-MM-DD): when the tool ran, as near as the file tells; absent
    /// where the file system does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_date: Option<String>,
}

impl ImportedFrom {
    /// "sysbench 1.0.20"; "netperf (version not stated)" where the file
    /// does not say.
    pub fn describe(&self) -> String {
        match self.version.as_str() {
            "unknown" | "" => format!("{} (version not stated)", self.tool),
            v => format!("{} {v}", self.tool),
        }
    }
}

/// The file system under a workload's files, as seen from inside.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Storage {
    /// The type mountinfo gives: ext4, xfs, overlay, fuse.fuse-overlayfs,
    /// tmpfs, virtiofs, ...
    pub fs: String,
    /// The mount's source: a device, "overlay", "tmpfs".
    pub source: String,
    /// Why an fsync there reaches no disk, when it does not ("mounted
    /// volatile" for an overlay, "in memory" for a tmpfs): durable commits
    /// and fsyncs cost nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsync_ignored: Option<String>,
}

impl Storage {
    /// "ext4 on /dev/vda", "overlay, fsync ignored (mounted volatile)".
    pub fn describe(&self) -> String {
        // "fuse.fuse-overlayfs on fuse-overlayfs" says it twice.
        let said = self.source.is_empty()
            || self.source == self.fs
            || self
                .fs
                .strip_suffix(self.source.as_str())
                .is_some_and(|p| p.ends_with('.'));
        let place = if said {
            self.fs.clone()
        } else {
            format!("{} on {}", self.fs, self.source)
        };
        match &self.fsync_ignored {
            Some(why) => format!("{place}, fsync ignored ({why})"),
            None => place,
        }
    }
}

/// A synchronised start (`--start-at`): the moment asked for and what this
/// machine's clock said when the wait ended, so runs launched independently
/// on several hosts can be checked for having started together.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StartAt {
    /// The moment asked for, RFC 3339 UTC with milliseconds.
    pub target: String,
    /// When the wait ended, by this machine's clock, RFC 3339 UTC with
    /// milliseconds.
    pub began: String,
    /// How late it began against the target, in seconds (the observed
    /// offset; negative would mean early, which the wait never is).
    pub late_s: f64,
}

/// A network interface as seen from inside: `eth0`, `10.0.2.15/24`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetInterface {
    pub name: String,
    pub ipv4: String,
}

/// CPU time shares over the run, from /proc/stat.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Monitor {
    pub cpu_user_pct: f64,
    pub cpu_sys_pct: f64,
    pub cpu_iowait_pct: f64,
    pub cpu_steal_pct: f64,
    /// Busy share of the CPUs used by other processes: load from something
    /// else that was running at the same time. The agent's figure, replaced
    /// by the host's when the environment runs on this machine (see
    /// `sys::monitor`).
    #[serde(default)]
    pub foreign_busy_pct: f64,
    /// Busy share of the CPUs used on the environment's behalf as the host
    /// saw it (its processes, virtperf, kernel threads); None when the host
    /// did not check (a remote machine, simultaneous instances).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_busy_pct: Option<f64>,
}

/// One run's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultDoc {
    pub schema: String,
    pub workload: String,
    pub params: serde_json::Map<String, serde_json::Value>,
    pub env: EnvInfo,
    pub started_at: String,
    pub duration_s: f64,
    pub events: u64,
    pub metrics: Vec<Metric>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<Latency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness: Option<Fairness>,
    #[serde(default)]
    pub monitor: Monitor,
    /// Workload-specific detail (per-kernel figures, per-operation
    /// distributions) that does not fit the common fields.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
    /// What the run cost, from inside and from the host (`accounting`,
    /// versioned on its own); absent in documents from before it, from
    /// other tools, and with accounting off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounting: Option<crate::core::accounting::Accounting>,
}

impl ResultDoc {
    /// A document of `workload` in the environment named `env` with these
    /// metrics, one event over one second and nothing else (tests, and
    /// documents made from other tools' figures).
    pub fn new(workload: &str, env: &str, metrics: Vec<Metric>) -> ResultDoc {
        ResultDoc {
            schema: SCHEMA.into(),
            workload: workload.into(),
            params: Default::default(),
            env: EnvInfo {
                name: env.into(),
                ..EnvInfo::default()
            },
            started_at: String::new(),
            duration_s: 1.0,
            events: 1,
            metrics,
            latency_ms: None,
            fairness: None,
            monitor: Monitor::default(),
            details: serde_json::Value::Null,
            accounting: None,
        }
    }

    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }
}
