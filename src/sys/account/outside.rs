//! The host's accounting of one run of an environment on this machine:
//! host CPU on its behalf by where it went (the launched tree; QEMU's vCPU
//! threads and its other threads, by thread name; a container's cgroup;
//! the runtime's helpers outside it, by process name; kernel threads; this
//! process when it is the run's network peer; the host's irq and softirq),
//! the cgroup's throttling and I/O, the host's whole disks, pressure and
//! network counters, and the host's CPU shares and disk bytes once a second
//! (`series`). A [`Watch`] is made per instance; it is marked when the run
//! starts (the agent's `running`) and read when its result arrives, from
//! one walk of /proc ([`table`]) that the foreign-load check shares.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use super::cgroup::{self, Cgroup};
use super::procs::Table;
use super::read;
use super::series::Recorder;
use crate::core::accounting::{
    bounded_name, CpuSplit, DeviceIo, Helper, NetCounters, Outside, Pressure, MAX_HELPERS,
};

/// Processes that work for a container or VM from outside it: the
/// runtime's shims and monitors, the rootless file system and network
/// helpers, and the engines' daemons (which relay a container's stdio).
const HELPERS: &[&str] = &[
    "containerd-shim",
    "conmon",
    "fuse-overlayfs",
    "slirp4netns",
    "pasta",
    "pasta.avx2",
    "rootlessport",
    "dockerd",
    "containerd",
    "docker-proxy",
    "virtiofsd",
    "libvirtd",
    "virtqemud",
];

/// Whether a process named `comm` is one of the runtimes' helpers
/// ([`HELPERS`]): work done for a container or VM from outside it.
pub fn is_helper(comm: &str) -> bool {
    HELPERS.iter().any(|h| comm.starts_with(h))
}

/// Whether a process name is QEMU's (its threads are split by name).
fn is_qemu(comm: &str) -> bool {
    comm.starts_with("qemu-system") || comm.starts_with("qemu-kvm")
}

/// Whether a QEMU thread runs a guest vCPU (`CPU 0/TCG`, `CPU 1/KVM`).
fn is_vcpu(thread: &str) -> bool {
    thread.starts_with("CPU ") && (thread.ends_with("/TCG") || thread.ends_with("/KVM"))
}

/// Whether a kernel thread runs deferred softirqs (`ksoftirqd/N`): the
/// kernel counts its time as the CPU's softirq in /proc/stat as well as
/// the thread's own, so it belongs to the host's softirq, not again to the
/// kernel threads.
fn is_softirq_thread(comm: &str) -> bool {
    comm.starts_with("ksoftirqd/")
}

/// What is watched for one instance.
#[derive(Debug, Clone)]
pub struct Watch {
    roots: Vec<u32>,
    cgroup: Option<Cgroup>,
    /// This process runs the job's network peer.
    peer: bool,
}

/// The host's process table now, with QEMU's threads: the one walk of
/// /proc a run's end needs. None where /proc cannot be read.
pub fn table() -> Option<Table> {
    Table::take(&is_qemu)
}

/// One reading of everything [`Outside`] is the difference of; a run's
/// first also samples the host each second until the second.
pub struct Mark {
    at: Instant,
    table: Table,
    cgroup: Option<cgroup::Reading>,
    cpu: Option<CpuSplit>,
    disks: Vec<read::DiskLine>,
    pressure: Option<Pressure>,
    net: Option<NetCounters>,
    samples: Option<Recorder>,
}

impl Watch {
    /// The instance launched as `roots` (its process trees) with, for a
    /// container, its init's pid `init`; `peer` when this process serves
    /// or drives the job's network peer. None when accounting is off.
    pub fn new(roots: Vec<u32>, init: Option<u32>, peer: bool) -> Option<Watch> {
        super::enabled().then(|| Watch {
            roots,
            cgroup: init.and_then(Cgroup::of),
            peer,
        })
    }

    /// Reads everything now and starts sampling each second; None where
    /// /proc cannot be read.
    pub fn mark(&self) -> Option<Mark> {
        let mut m = self.reading(table()?);
        m.samples = Recorder::start(std::time::Duration::from_secs(1));
        Some(m)
    }

    fn reading(&self, table: Table) -> Mark {
        Mark {
            at: Instant::now(),
            table,
            cgroup: self.cgroup.as_ref().map(Cgroup::read),
            cpu: read::file("/proc/stat").and_then(|t| read::cpu_split(&t)),
            disks: read::file("/proc/diskstats")
                .map(|t| read::diskstats(&t, &read::is_physical_disk))
                .unwrap_or_default(),
            pressure: read::pressure(Path::new("/proc/pressure"), ""),
            net: read::file("/proc/net/snmp").map(|t| read::snmp(&t)),
            samples: None,
        }
    }

    /// The run since `a`, read now, with `now` the process table just
    /// read ([`table`]).
    pub fn since(&self, a: Mark, now: Table) -> Outside {
        let samples = a.samples.and_then(Recorder::finish);
        let a = Mark { samples: None, ..a };
        Outside {
            samples,
            ..self.between(&a, &self.reading(now))
        }
    }

    fn between(&self, a: &Mark, b: &Mark) -> Outside {
        let hz = read::ticks_per_s();
        let secs = |t: u64| t as f64 / hz;
        let delta = |pid: u32, own: bool| -> u64 {
            let get = |t: &Table| {
                t.procs
                    .get(&pid)
                    .map_or(0, |p| if own { p.own_ticks } else { p.ticks })
            };
            // A process that started within the run used all its time in it.
            get(&b.table).saturating_sub(get(&a.table))
        };
        let tree = b.table.trees(&self.roots);
        let tree_ticks: u64 = tree.iter().map(|&p| delta(p, false)).sum();
        let (vcpu, emulator) = qemu_threads(a, b, &tree);
        let me = std::process::id();
        let outside_tree = |pid: &u32| !tree.contains(pid) && *pid != me;
        let kernel: u64 = b
            .table
            .procs
            .iter()
            .filter(|(pid, p)| p.kernel_thread && !is_softirq_thread(&p.comm) && outside_tree(pid))
            .map(|(&pid, _)| delta(pid, true))
            .sum();
        let mut helpers: BTreeMap<String, u64> = BTreeMap::new();
        for (&pid, p) in &b.table.procs {
            if outside_tree(&pid) && is_helper(&p.comm) {
                *helpers.entry(p.comm.clone()).or_default() += delta(pid, false);
            }
        }
        let qemu_found = b.table.threads.keys().any(|p| tree.contains(p));
        Outside {
            wall_s: b.at.duration_since(a.at).as_secs_f64(),
            tree_s: Some(secs(tree_ticks.saturating_sub(vcpu + emulator))),
            vcpu_s: qemu_found.then(|| secs(vcpu)),
            emulator_s: qemu_found.then(|| secs(emulator)),
            cgroup: self
                .cgroup
                .as_ref()
                .zip(a.cgroup.zip(b.cgroup))
                .map(|(cg, (x, y))| cg.figures(&x, &y)),
            helpers: Some(
                helpers
                    .into_iter()
                    .filter(|(_, t)| *t > 0)
                    .take(MAX_HELPERS)
                    .map(|(name, t)| Helper {
                        name: bounded_name(&name),
                        cpu_s: secs(t),
                    })
                    .collect(),
            ),
            kernel_threads_s: Some(secs(kernel)),
            peer_s: self.peer.then(|| secs(delta(me, false))),
            cpu: a.cpu.zip(b.cpu).map(|(x, y)| read::cpu_delta(&x, &y)),
            device: device(&a.disks, &b.disks),
            pressure: a
                .pressure
                .zip(b.pressure)
                .map(|(x, y)| read::pressure_delta(&x, &y)),
            net: a.net.zip(b.net).map(|(x, y)| read::net_delta(&x, &y)),
            samples: None,
        }
    }
}

/// Ticks of QEMU's vCPU threads and of its other threads, for the QEMU
/// processes in `tree`.
fn qemu_threads(a: &Mark, b: &Mark, tree: &[u32]) -> (u64, u64) {
    let (mut vcpu, mut other) = (0, 0);
    for (pid, threads) in b.table.threads.iter().filter(|(p, _)| tree.contains(p)) {
        let before = a.table.threads.get(pid);
        for (tid, name, ticks) in threads {
            let was = before
                .and_then(|t| t.iter().find(|x| x.0 == *tid))
                .map_or(0, |x| x.2);
            let d = ticks.saturating_sub(was);
            if is_vcpu(name) {
                vcpu += d;
            } else {
                other += d;
            }
        }
    }
    (vcpu, other)
}

/// The whole disks' figures between two readings; None without disks.
fn device(a: &[read::DiskLine], b: &[read::DiskLine]) -> Option<DeviceIo> {
    if b.is_empty() {
        return None;
    }
    let mut io = DeviceIo::default();
    let mut names = Vec::new();
    for (name, rs, ws, r, w, busy) in b {
        let Some((_, rs0, ws0, r0, w0, busy0)) = a.iter().find(|x| &x.0 == name) else {
            continue;
        };
        names.push(name.clone());
        io.read_bytes += rs.saturating_sub(*rs0) * 512;
        io.write_bytes += ws.saturating_sub(*ws0) * 512;
        io.read_ops += r.saturating_sub(*r0);
        io.write_ops += w.saturating_sub(*w0);
        io.busy_s += busy.saturating_sub(*busy0) as f64 / 1e3;
    }
    io.devices = bounded_name(&names.join(","));
    (!names.is_empty()).then_some(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::account::procs::{Proc, Thread};

    fn proc(ppid: u32, comm: &str, ticks: u64, kernel_thread: bool) -> Proc {
        Proc {
            ppid,
            comm: comm.into(),
            own_ticks: ticks,
            ticks,
            kernel_thread,
        }
    }

    fn mark(procs: Vec<(u32, Proc)>, threads: Vec<(u32, Vec<Thread>)>) -> Mark {
        Mark {
            at: Instant::now(),
            table: Table {
                procs: procs.into_iter().collect(),
                threads: threads.into_iter().collect(),
            },
            cgroup: None,
            cpu: None,
            disks: Vec::new(),
            pressure: None,
            net: None,
            samples: None,
        }
    }

    #[test]
    fn splits_qemu_by_thread_and_names_helpers_outside_the_tree() {
        let hz = read::ticks_per_s();
        let t = |v: u64, o: u64| {
            vec![
                (11, "CPU 0/TCG".to_string(), v),
                (12, "worker".to_string(), o),
            ]
        };
        let a = mark(
            vec![
                (10, proc(1, "qemu-system-x86", 0, false)),
                (30, proc(1, "fuse-overlayfs", 5, false)),
                (3, proc(2, "kworker/0:1", 0, true)),
                (4, proc(2, "ksoftirqd/0", 0, true)),
                (40, proc(1, "cc1", 0, false)),
            ],
            vec![(10, t(0, 0))],
        );
        let b = mark(
            vec![
                (10, proc(1, "qemu-system-x86", 300, false)),
                (30, proc(1, "fuse-overlayfs", 45, false)),
                (3, proc(2, "kworker/0:1", 20, true)),
                (4, proc(2, "ksoftirqd/0", 70, true)),
                (40, proc(1, "cc1", 500, false)),
            ],
            vec![(10, t(250, 40))],
        );
        let w = Watch {
            roots: vec![10],
            cgroup: None,
            peer: false,
        };
        let o = w.between(&a, &b);
        assert_eq!(o.vcpu_s, Some(250.0 / hz));
        assert_eq!(o.emulator_s, Some(40.0 / hz));
        assert_eq!(o.tree_s, Some(10.0 / hz));
        // ksoftirqd's time is the host's softirq already: not counted twice.
        assert_eq!(o.kernel_threads_s, Some(20.0 / hz));
        let h = o.helpers.unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(
            (h[0].name.as_str(), h[0].cpu_s),
            ("fuse-overlayfs", 40.0 / hz)
        );
        // A compiler is nobody's helper; a container has no QEMU threads.
        let w = Watch {
            roots: vec![40],
            ..w
        };
        let o = w.between(&a, &b);
        assert_eq!(o.vcpu_s, None);
        assert_eq!(o.tree_s, Some(500.0 / hz));
    }

    #[test]
    fn device_bytes_are_sectors_times_512() {
        let a = vec![("vda".to_string(), 100, 200, 1, 2, 10)];
        let b = vec![("vda".to_string(), 108, 2248, 2, 5, 1010)];
        let d = device(&a, &b).unwrap();
        assert_eq!((d.read_bytes, d.write_bytes), (8 * 512, 2048 * 512));
        assert_eq!((d.read_ops, d.write_ops), (1, 3));
        assert!((d.busy_s - 1.0).abs() < 1e-12);
        assert_eq!(device(&a, &[]), None);
    }

    #[test]
    fn a_real_child_is_accounted_as_the_tree() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let w = Watch {
            roots: vec![child.id()],
            cgroup: None,
            peer: true,
        };
        let a = w.mark().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(400));
        let o = w.since(a, table().unwrap());
        let _ = child.kill();
        let _ = child.wait();
        assert!(o.tree_s.unwrap() > 0.0, "{o:?}");
        assert!(o.peer_s.is_some());
        assert!(o.cpu.is_some() && o.wall_s >= 0.4);
        // Under a second: the sampler ran and had nothing to keep yet.
        assert_eq!(o.samples.map(|s| s.samples.len()), Some(0));
    }
}
