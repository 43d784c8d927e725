//! A container's cgroup as the host reads it, v1 controllers or v2:
//! its CPU time (user and system), CFS throttling, block I/O by bytes and
//! operations, and on v2 its own pressure. These machines mount v1
//! controllers (`cpuacct.usage`, `cpu.stat`'s `nr_throttled` and
//! `throttled_time`, `blkio`) beside an empty v2 `unified` mount; a v2
//! machine has one tree with `cpu.stat`, `io.stat` and `*.pressure`.

use std::path::{Path, PathBuf};

use super::read;
use crate::core::accounting::{CgroupFigures, Pressure};

/// Where a cgroup's files are.
#[derive(Debug, Clone, PartialEq)]
pub enum Cgroup {
    /// Each v1 controller's directory, where mounted.
    V1 {
        cpuacct: Option<PathBuf>,
        cpu: Option<PathBuf>,
        blkio: Option<PathBuf>,
    },
    V2(PathBuf),
}

/// One reading of a cgroup's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reading {
    cpu_s: Option<f64>,
    user_s: Option<f64>,
    system_s: Option<f64>,
    nr_periods: Option<u64>,
    nr_throttled: Option<u64>,
    throttled_s: Option<f64>,
    io: Option<[u64; 4]>,
    pressure: Option<Pressure>,
}

impl Cgroup {
    /// The cgroup of process `pid`, from /proc/PID/cgroup, under
    /// `/sys/fs/cgroup`.
    pub fn of(pid: u32) -> Option<Cgroup> {
        let text = read::file(format!("/proc/{pid}/cgroup"))?;
        Cgroup::from_table(&text, Path::new("/sys/fs/cgroup"))
    }

    /// The cgroup named by a /proc/PID/cgroup `table` under `root`: the v1
    /// controllers where any is mounted, else the v2 tree.
    pub fn from_table(table: &str, root: &Path) -> Option<Cgroup> {
        let mut dirs = [None, None, None];
        for line in table.lines() {
            let mut f = line.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            let rel = path.trim_start_matches('/');
            for (i, name) in ["cpuacct", "cpu", "blkio"].iter().enumerate() {
                if controllers.split(',').any(|c| c == *name) {
                    let dir = root.join(controllers).join(rel);
                    if dir.is_dir() {
                        dirs[i] = Some(dir);
                    }
                }
            }
        }
        if dirs.iter().any(Option::is_some) {
            let [cpuacct, cpu, blkio] = dirs;
            return Some(Cgroup::V1 {
                cpuacct,
                cpu,
                blkio,
            });
        }
        let path = table.lines().find_map(|l| l.strip_prefix("0::"))?;
        let dir = root.join(path.trim_start_matches('/'));
        dir.join("cpu.stat").exists().then_some(Cgroup::V2(dir))
    }

    pub fn read(&self) -> Reading {
        match self {
            Cgroup::V1 {
                cpuacct,
                cpu,
                blkio,
            } => read_v1(cpuacct.as_deref(), cpu.as_deref(), blkio.as_deref()),
            Cgroup::V2(dir) => read_v2(dir),
        }
    }

    fn version(&self) -> u8 {
        match self {
            Cgroup::V1 { .. } => 1,
            Cgroup::V2(_) => 2,
        }
    }

    /// What the cgroup did between two readings.
    pub fn figures(&self, a: &Reading, b: &Reading) -> CgroupFigures {
        let ds = |x: Option<f64>, y: Option<f64>| Some((y? - x?).max(0.0));
        let dn = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?));
        let io = |i: usize| dn(a.io.map(|v| v[i]), b.io.map(|v| v[i]));
        CgroupFigures {
            version: self.version(),
            cpu_s: ds(a.cpu_s, b.cpu_s),
            user_s: ds(a.user_s, b.user_s),
            system_s: ds(a.system_s, b.system_s),
            nr_periods: dn(a.nr_periods, b.nr_periods),
            nr_throttled: dn(a.nr_throttled, b.nr_throttled),
            throttled_s: ds(a.throttled_s, b.throttled_s),
            io_read_bytes: io(0),
            io_write_bytes: io(1),
            io_read_ops: io(2),
            io_write_ops: io(3),
            pressure: a
                .pressure
                .zip(b.pressure)
                .map(|(x, y)| read::pressure_delta(&x, &y)),
        }
    }
}

fn keyed_in(dir: Option<&Path>, name: &str) -> Option<std::collections::HashMap<String, u64>> {
    read::file(dir?.join(name)).map(|t| read::keyed(&t))
}

fn read_v1(cpuacct: Option<&Path>, cpu: Option<&Path>, blkio: Option<&Path>) -> Reading {
    let hz = read::ticks_per_s();
    let usage = cpuacct
        .and_then(|d| read::file(d.join("cpuacct.usage")))
        .and_then(|t| t.trim().parse::<u64>().ok());
    let stat = keyed_in(cpuacct, "cpuacct.stat");
    let cpu_stat = keyed_in(cpu, "cpu.stat");
    let ticks = |k: &str| Some(*stat.as_ref()?.get(k)? as f64 / hz);
    let cs = |k: &str| cpu_stat.as_ref()?.get(k).copied();
    let io = blkio.and_then(|d| {
        let bytes = blkio_sums(&read::file(d.join("blkio.throttle.io_service_bytes"))?);
        let ops = blkio_sums(&read::file(d.join("blkio.throttle.io_serviced"))?);
        Some([bytes.0, bytes.1, ops.0, ops.1])
    });
    Reading {
        cpu_s: usage.map(|ns| ns as f64 / 1e9),
        user_s: ticks("user"),
        system_s: ticks("system"),
        nr_periods: cs("nr_periods"),
        nr_throttled: cs("nr_throttled"),
        throttled_s: cs("throttled_time").map(|ns| ns as f64 / 1e9),
        io,
        pressure: None,
    }
}

/// blkio's `MAJ:MIN Read N` / `MAJ:MIN Write N` lines summed over devices.
pub fn blkio_sums(text: &str) -> (u64, u64) {
    let mut sums = (0u64, 0u64);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [_, kind, n] = f[..] {
            let n: u64 = n.parse().unwrap_or(0);
            match kind {
                "Read" => sums.0 = sums.0.saturating_add(n),
                "Write" => sums.1 = sums.1.saturating_add(n),
                _ => {}
            }
        }
    }
    sums
}

/// io.stat's `MAJ:MIN rbytes=N wbytes=N rios=N wios=N ...` summed.
pub fn io_stat_sums(text: &str) -> [u64; 4] {
    let mut sums = [0u64; 4];
    for field in text.split_whitespace() {
        let Some((k, v)) = field.split_once('=') else {
            continue;
        };
        let i = match k {
            "rbytes" => 0,
            "wbytes" => 1,
            "rios" => 2,
            "wios" => 3,
            _ => continue,
        };
        sums[i] = sums[i].saturating_add(v.parse().unwrap_or(0));
    }
    sums
}

fn read_v2(dir: &Path) -> Reading {
    let stat = keyed_in(Some(dir), "cpu.stat");
    let us = |k: &str| Some(*stat.as_ref()?.get(k)? as f64 / 1e6);
    Reading {
        cpu_s: us("usage_usec"),
        user_s: us("user_usec"),
        system_s: us("system_usec"),
        nr_periods: stat.as_ref().and_then(|s| s.get("nr_periods").copied()),
        nr_throttled: stat.as_ref().and_then(|s| s.get("nr_throttled").copied()),
        throttled_s: us("throttled_usec"),
        io: read::file(dir.join("io.stat")).map(|t| io_stat_sums(&t)),
        pressure: read::pressure(dir, ".pressure"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_figures_from_files_as_the_kernel_writes_them() {
        let root = tempfile::tempdir().unwrap();
        let mk = |ctl: &str, files: &[(&str, &str)]| {
            let d = root.path().join(ctl).join("docker/abc");
            std::fs::create_dir_all(&d).unwrap();
            for (n, t) in files {
                std::fs::write(d.join(n), t).unwrap();
            }
        };
        let table = "12:blkio:/docker/abc\n5:cpuacct:/docker/abc\n4:cpu:/docker/abc\n0::/\n";
        mk(
            "cpuacct",
            &[
                ("cpuacct.usage", "1000000000\n"),
                ("cpuacct.stat", "user 50\nsystem 25\n"),
            ],
        );
        mk(
            "cpu",
            &[(
                "cpu.stat",
                "nr_periods 10\nnr_throttled 2\nthrottled_time 500000000\n",
            )],
        );
        mk(
            "blkio",
            &[
                (
                    "blkio.throttle.io_service_bytes",
                    "254:0 Read 4096\n254:0 Write 8192\n254:0 Total 12288\nTotal 12288\n",
                ),
                (
                    "blkio.throttle.io_serviced",
                    "254:0 Read 1\n254:0 Write 2\nTotal 3\n",
                ),
            ],
        );
        let cg = Cgroup::from_table(table, root.path()).unwrap();
        assert_eq!(cg.version(), 1);
        let a = cg.read();
        mk(
            "cpuacct",
            &[
                ("cpuacct.usage", "3500000000\n"),
                ("cpuacct.stat", "user 250\nsystem 75\n"),
            ],
        );
        mk(
            "cpu",
            &[(
                "cpu.stat",
                "nr_periods 30\nnr_throttled 12\nthrottled_time 2500000000\n",
            )],
        );
        let b = cg.read();
        let f = cg.figures(&a, &b);
        assert_eq!(f.cpu_s, Some(2.5));
        assert_eq!(f.nr_throttled, Some(10));
        assert_eq!(f.throttled_s, Some(2.0));
        assert!((f.user_s.unwrap() - 200.0 / read::ticks_per_s()).abs() < 1e-9);
        assert_eq!(f.io_write_bytes, Some(0));
        // v1 has no per-cgroup pressure: null, not 0.
        assert_eq!(f.pressure, None);
    }

    #[test]
    fn v2_figures_and_io_stat() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("system.slice/x.scope");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("cpu.stat"),
            "usage_usec 100\nuser_usec 60\nsystem_usec 40\n",
        )
        .unwrap();
        std::fs::write(d.join("io.stat"), "8:0 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=0 dios=0\n8:16 rbytes=5 wbytes=5 rios=1 wios=1\n").unwrap();
        std::fs::write(
            d.join("io.pressure"),
            "some avg10=0 total=100\nfull avg10=0 total=50\n",
        )
        .unwrap();
        let cg = Cgroup::from_table("0::/system.slice/x.scope\n", root.path()).unwrap();
        assert_eq!(cg, Cgroup::V2(d.clone()));
        let a = cg.read();
        assert_eq!(a.io, Some([15, 25, 2, 3]));
        std::fs::write(
            d.join("cpu.stat"),
            "usage_usec 1100\nuser_usec 60\nsystem_usec 1040\nnr_throttled 0\n",
        )
        .unwrap();
        let f = cg.figures(&a, &cg.read());
        assert_eq!(f.cpu_s, Some(0.001));
        // No throttling line before: its change is unknown.
        assert_eq!(f.nr_throttled, None);
        assert_eq!(f.pressure.unwrap().io_some_s, Some(0.0));
        assert_eq!(f.pressure.unwrap().cpu_some_s, None);
    }
}
