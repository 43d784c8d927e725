//! Figures derived from a run's accounting (`core::accounting`), compared
//! like any metric: each run's host CPU per unit of work (an event, a
//! transaction, an operation: the run's `events`) in all and by where it
//! went, the share of the run its cgroup was throttled, the device's bytes
//! per byte the workload moved, and the share of the run the environment
//! stalled (PSI). They are never headline figures: they explain verdicts,
//! they are not verdicts. A figure whose source gave nothing is not made.

use crate::core::accounting::Outside;
use crate::core::result::{Metric, ResultDoc};

/// Prefix of every derived figure's name.
pub const PREFIX: &str = "acct_";

/// Where host CPU went, in the order a breakdown shows it: (name, what it
/// is, for a sentence).
pub const PLACES: &[(&str, &str)] = &[
    (
        "work",
        "the environment's own CPU (its processes, cgroup or vCPU threads)",
    ),
    ("emulation", "QEMU's threads other than its vCPUs"),
    (
        "launcher",
        "the launching process tree outside the environment",
    ),
    ("helpers", "the runtime's helpers outside the environment"),
    ("kernel", "kernel threads (writeback, block completion)"),
    ("softirq", "the host's irq and softirq"),
    ("peer", "the network peer in virtperf"),
];

/// The figure of host CPU per event at a place.
pub fn place_metric(place: &str) -> String {
    format!("{PREFIX}host_cpu_{place}_per_event")
}

pub const HOST_CPU: &str = "acct_host_cpu_per_event";
pub const THROTTLED: &str = "acct_throttled_pct";
pub const AMPLIFICATION: &str = "acct_device_bytes_per_workload_byte";
pub const DEVICE_WRITTEN: &str = "acct_device_written_kib_per_event";
pub const WORKLOAD_CPU: &str = "acct_workload_cpu_per_event";
pub const STEAL: &str = "acct_steal_pct";

/// Pressure figures: (the explanation's rule, the figure's name), for
/// PSI's cpu, io and memory in that order.
pub const PRESSURE: &[(&str, &str)] = &[
    ("cpu_pressure", "acct_pressure_cpu_pct"),
    ("io_pressure", "acct_pressure_io_pct"),
    ("memory_pressure", "acct_pressure_memory_pct"),
];

/// Whether a metric is one of these derived figures.
pub fn is_derived(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// Below this many bytes moved by the workload, an amplification is not
/// made: a CPU test's few bytes of output would make any device write look
/// like thousands of times its work.
const MIN_WORKLOAD_BYTES: u64 = 1 << 20;

/// Host CPU-seconds by place (see [`PLACES`]); None where a place does
/// not exist for this environment.
pub fn places(o: &Outside) -> [(&'static str, Option<f64>); 7] {
    let helpers = o
        .helpers
        .as_ref()
        .map(|h| h.iter().map(|h| h.cpu_s).sum::<f64>());
    let cgroup = o.cgroup.as_ref().and_then(|c| c.cpu_s);
    let inside_tree = cgroup.is_none() && o.vcpu_s.is_none();
    let work = cgroup.or(o.vcpu_s).or(o.tree_s);
    [
        ("work", work),
        ("emulation", o.emulator_s),
        ("launcher", if inside_tree { None } else { o.tree_s }),
        ("helpers", helpers),
        ("kernel", o.kernel_threads_s),
        ("softirq", o.cpu.map(|c| c.irq_s + c.softirq_s)),
        ("peer", o.peer_s),
    ]
}

/// The run's derived figures.
pub fn derived(doc: &ResultDoc) -> Vec<Metric> {
    let Some(acct) = &doc.accounting else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // `+ 0.0`: a difference of equal counters is -0, printed "-0".
    let lower = |name: &str, value: f64, unit: &str| Metric::new(name, value + 0.0, unit, false);
    let events = doc.events as f64;
    if let Some(i) = &acct.inside {
        if let (Some(u), Some(s), true) = (i.cpu_user_s, i.cpu_sys_s, events > 0.0) {
            out.push(lower(WORKLOAD_CPU, (u + s) / events * 1e6, "µs/event"));
        }
        if let (Some(c), true) = (i.cpu, i.wall_s > 0.0) {
            let total = c.total_s();
            if total > 0.0 {
                out.push(lower(STEAL, 100.0 * c.steal_s / total, "%"));
            }
        }
    }
    if let Some(o) = &acct.outside {
        outside_figures(doc, o, &mut out);
    }
    pressure_figures(doc, &mut out);
    out.retain(|m| m.value.is_finite() && m.value >= 0.0);
    out
}

fn outside_figures(doc: &ResultDoc, o: &Outside, out: &mut Vec<Metric>) {
    let events = doc.events as f64;
    // `+ 0.0`: a difference of equal counters is -0, printed "-0".
    let lower = |name: &str, value: f64, unit: &str| Metric::new(name, value + 0.0, unit, false);
    if events > 0.0 {
        out.push(lower(HOST_CPU, o.total_s() / events * 1e6, "µs/event"));
        for (place, s) in places(o) {
            if let Some(s) = s {
                out.push(lower(&place_metric(place), s / events * 1e6, "µs/event"));
            }
        }
    }
    if let (Some(t), true) = (
        o.cgroup.as_ref().and_then(|c| c.throttled_s),
        o.wall_s > 0.0,
    ) {
        out.push(lower(THROTTLED, 100.0 * t / o.wall_s, "%"));
    }
    // The device is the whole machine's: beside a workload that moves
    // little, its bytes are other processes'.
    let inside = doc.accounting.as_ref().and_then(|a| a.inside.as_ref());
    let (Some(d), Some(i)) = (&o.device, inside) else {
        return;
    };
    if let (Some(wrote), true) = (i.syscall_write_bytes, events > 0.0) {
        if wrote >= MIN_WORKLOAD_BYTES {
            let kib = d.write_bytes as f64 / 1024.0 / events;
            out.push(lower(DEVICE_WRITTEN, kib, "KiB/event"));
        }
    }
    if let (Some(r), Some(w)) = (i.syscall_read_bytes, i.syscall_write_bytes) {
        if r + w >= MIN_WORKLOAD_BYTES {
            let device = (d.read_bytes + d.write_bytes) as f64;
            out.push(lower(AMPLIFICATION, device / (r + w) as f64, "×"));
        }
    }
}

/// The share of the run the environment stalled: its cgroup's own
/// pressure (cgroup v2), else what the environment's kernel says.
fn pressure_figures(doc: &ResultDoc, out: &mut Vec<Metric>) {
    let Some(acct) = &doc.accounting else { return };
    let cgroup = acct
        .outside
        .as_ref()
        .and_then(|o| Some((o.cgroup.as_ref()?.pressure?, o.wall_s)));
    let inside = acct
        .inside
        .as_ref()
        .and_then(|i| Some((i.pressure?, i.wall_s)));
    let Some((p, wall)) = cgroup.or(inside) else {
        return;
    };
    if wall <= 0.0 {
        return;
    }
    for ((_, name), some) in PRESSURE
        .iter()
        .zip([p.cpu_some_s, p.io_some_s, p.memory_some_s])
    {
        if let Some(s) = some {
            out.push(Metric::new(name, (100.0 * s / wall).min(100.0), "%", false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::accounting::{Accounting, CgroupFigures, DeviceIo, Helper, Inside};

    fn doc(outside: Outside, inside: Inside, events: u64) -> ResultDoc {
        let mut d = ResultDoc::new("fileio", "docker", vec![]);
        d.events = events;
        d.accounting = Some(Accounting {
            version: 1,
            inside: Some(inside),
            outside: Some(outside),
            rejected: None,
        });
        d
    }

    #[test]
    fn a_container_run_splits_its_host_cpu_and_amplification() {
        let o = Outside {
            wall_s: 2.0,
            tree_s: Some(0.1),
            cgroup: Some(CgroupFigures {
                cpu_s: Some(1.0),
                throttled_s: Some(0.5),
                ..CgroupFigures::default()
            }),
            helpers: Some(vec![Helper {
                name: "fuse-overlayfs".into(),
                cpu_s: 0.4,
            }]),
            kernel_threads_s: Some(0.0),
            device: Some(DeviceIo {
                write_bytes: 4 << 20,
                ..DeviceIo::default()
            }),
            ..Outside::default()
        };
        let i = Inside {
            wall_s: 2.0,
            syscall_read_bytes: Some(0),
            syscall_write_bytes: Some(2 << 20),
            ..Inside::default()
        };
        let m = derived(&doc(o, i, 1000));
        let get = |n: &str| m.iter().find(|x| x.name == n).map(|x| x.value);
        assert_eq!(get(HOST_CPU), Some(1500.0));
        assert_eq!(get(&place_metric("work")), Some(1000.0));
        assert_eq!(get(&place_metric("launcher")), Some(100.0));
        assert!((get(&place_metric("helpers")).unwrap() - 400.0).abs() < 1e-9);
        assert_eq!(get(&place_metric("emulation")), None);
        assert_eq!(get(THROTTLED), Some(25.0));
        assert_eq!(get(AMPLIFICATION), Some(2.0));
        assert!(m.iter().all(|x| is_derived(&x.name) && !x.higher_is_better));
    }

    #[test]
    fn no_accounting_no_figures_and_few_bytes_no_amplification() {
        assert!(derived(&ResultDoc::new("cpu", "host", vec![])).is_empty());
        let o = Outside {
            wall_s: 1.0,
            tree_s: Some(1.0),
            device: Some(DeviceIo::default()),
            ..Outside::default()
        };
        let i = Inside {
            wall_s: 1.0,
            syscall_read_bytes: Some(10),
            syscall_write_bytes: Some(10),
            ..Inside::default()
        };
        let m = derived(&doc(o, i, 10));
        assert!(m.iter().all(|x| x.name != AMPLIFICATION));
        // The host runs its work in its own tree: no launcher apart.
        assert!(m.iter().all(|x| x.name != place_metric("launcher")));
    }
}
