//! The small kernel files accounting reads, and their parsers: /proc/stat's
//! CPU line in seconds, pressure (PSI) totals, /proc/net/snmp's counters,
//! `key value` files (/proc/self/io, cpu.stat, memory.stat) and
//! /proc/diskstats. Each read is bounded; a missing file or field is None.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use crate::core::accounting::{CpuSplit, NetCounters, Pressure};

/// The longest kernel file read (diskstats of many devices is the largest).
const MAX_FILE: u64 = 256 * 1024;

/// A kernel file's text, at most `MAX_FILE` bytes of it.
pub fn file(path: impl AsRef<Path>) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_FILE)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// Clock ticks per second (USER_HZ).
pub fn ticks_per_s() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

/// /proc/stat's `cpu` line in seconds; None without all eight fields.
pub fn cpu_split(stat: &str) -> Option<CpuSplit> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map_while(|x| x.parse::<u64>().ok())
        .map(|t| t as f64 / ticks_per_s())
        .collect();
    if f.len() < 8 {
        return None;
    }
    Some(CpuSplit {
        user_s: f[0],
        nice_s: f[1],
        system_s: f[2],
        idle_s: f[3],
        iowait_s: f[4],
        irq_s: f[5],
        softirq_s: f[6],
        steal_s: f[7],
    })
}

/// The later minus the earlier split (counters only grow; a reset gives 0).
pub fn cpu_delta(a: &CpuSplit, b: &CpuSplit) -> CpuSplit {
    let d = |x: f64, y: f64| (y - x).max(0.0);
    CpuSplit {
        user_s: d(a.user_s, b.user_s),
        nice_s: d(a.nice_s, b.nice_s),
        system_s: d(a.system_s, b.system_s),
        idle_s: d(a.idle_s, b.idle_s),
        iowait_s: d(a.iowait_s, b.iowait_s),
        irq_s: d(a.irq_s, b.irq_s),
        softirq_s: d(a.softirq_s, b.softirq_s),
        steal_s: d(a.steal_s, b.steal_s),
    }
}

/// A pressure file's `some` and `full` totals, in seconds.
pub fn psi_totals(text: &str) -> (Option<f64>, Option<f64>) {
    let total = |kind: &str| {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        let us: u64 = line
            .split_whitespace()
            .find_map(|f| f.strip_prefix("total="))?
            .parse()
            .ok()?;
        Some(us as f64 / 1e6)
    };
    (total("some "), total("full "))
}

/// The pressure files in `dir`: `/proc/pressure`'s `cpu`, `io`, `memory`,
/// or a v2 cgroup's own `cpu.pressure`, ... (named with `suffix`); None
/// where there are none.
pub fn pressure(dir: &Path, suffix: &str) -> Option<Pressure> {
    let read = |name: &str| file(dir.join(format!("{name}{suffix}"))).map(|t| psi_totals(&t));
    let (cpu, io, mem) = (read("cpu"), read("io"), read("memory"));
    if cpu.is_none() && io.is_none() && mem.is_none() {
        return None;
    }
    Some(Pressure {
        cpu_some_s: cpu.and_then(|c| c.0),
        io_some_s: io.and_then(|c| c.0),
        io_full_s: io.and_then(|c| c.1),
        memory_some_s: mem.and_then(|c| c.0),
        memory_full_s: mem.and_then(|c| c.1),
    })
}

/// The later minus the earlier pressure, figure by figure.
pub fn pressure_delta(a: &Pressure, b: &Pressure) -> Pressure {
    let d = |x: Option<f64>, y: Option<f64>| Some((y? - x?).max(0.0));
    Pressure {
        cpu_some_s: d(a.cpu_some_s, b.cpu_some_s),
        io_some_s: d(a.io_some_s, b.io_some_s),
        io_full_s: d(a.io_full_s, b.io_full_s),
        memory_some_s: d(a.memory_some_s, b.memory_some_s),
        memory_full_s: d(a.memory_full_s, b.memory_full_s),
    }
}

/// `/proc/net/snmp`: each protocol's header line followed by its values.
pub fn snmp(text: &str) -> NetCounters {
    let mut table: HashMap<(String, String), u64> = HashMap::new();
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.chunks(2) {
        let [names, values] = pair else { continue };
        let (Some((proto, names)), Some((_, values))) =
            (names.split_once(':'), values.split_once(':'))
        else {
            continue;
        };
        for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
            if let Ok(v) = v.parse::<u64>() {
                table.insert((proto.to_string(), n.to_string()), v);
            }
        }
    }
    let get = |p: &str, n: &str| table.get(&(p.to_string(), n.to_string())).copied();
    NetCounters {
        tcp_out_segs: get("Tcp", "OutSegs"),
        tcp_retrans_segs: get("Tcp", "RetransSegs"),
        udp_in_datagrams: get("Udp", "InDatagrams"),
        udp_in_errors: get("Udp", "InErrors"),
        udp_rcvbuf_errors: get("Udp", "RcvbufErrors"),
    }
}

/// The later minus the earlier counters.
pub fn net_delta(a: &NetCounters, b: &NetCounters) -> NetCounters {
    let d = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?));
    NetCounters {
        tcp_out_segs: d(a.tcp_out_segs, b.tcp_out_segs),
        tcp_retrans_segs: d(a.tcp_retrans_segs, b.tcp_retrans_segs),
        udp_in_datagrams: d(a.udp_in_datagrams, b.udp_in_datagrams),
        udp_in_errors: d(a.udp_in_errors, b.udp_in_errors),
        udp_rcvbuf_errors: d(a.udp_rcvbuf_errors, b.udp_rcvbuf_errors),
    }
}

/// A file of `key value` lines (/proc/self/io with its colons, cpu.stat,
/// blkio's and io.stat's are read elsewhere).
pub fn keyed(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let k = f.next()?.trim_end_matches(':');
            Some((k.to_string(), f.next()?.parse().ok()?))
        })
        .collect()
}

/// One whole disk's counters from /proc/diskstats: (name, sectors read,
/// sectors written, reads, writes, io_ticks ms).
pub type DiskLine = (String, u64, u64, u64, u64, u64);

/// The whole physical disks in /proc/diskstats: those /sys/block lists
/// with a device behind them (not loop, ram, zram or a partition).
pub fn diskstats(text: &str, is_disk: &dyn Fn(&str) -> bool) -> Vec<DiskLine> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let name = *f.get(2)?;
            let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
            is_disk(name).then_some((name.to_string(), n(5)?, n(9)?, n(3)?, n(7)?, n(12)?))
        })
        .collect()
}

/// Whether /sys/block names a whole disk with a device behind it.
pub fn is_physical_disk(name: &str) -> bool {
    !name.contains('/') && Path::new("/sys/block").join(name).join("device").exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pressure_totals_and_their_absence() {
        let t = "some avg10=0.00 avg60=0.00 avg300=0.00 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=500000\n";
        assert_eq!(psi_totals(t), (Some(2.5), Some(0.5)));
        // /proc/pressure/cpu before 5.13 has no full line: null, not 0.
        assert_eq!(psi_totals("some avg10=1 total=7\n"), (Some(7e-6), None));
    }

    #[test]
    fn reads_snmp_by_header_and_a_missing_counter_is_none() {
        let t = "Tcp: RtoAlgorithm OutSegs RetransSegs\nTcp: 1 6212 3\nUdp: InDatagrams NoPorts InErrors\nUdp: 43 0 2\n";
        let n = snmp(t);
        assert_eq!(n.tcp_out_segs, Some(6212));
        assert_eq!(n.tcp_retrans_segs, Some(3));
        assert_eq!(n.udp_in_errors, Some(2));
        assert_eq!(n.udp_rcvbuf_errors, None);
        let later = NetCounters {
            tcp_retrans_segs: Some(10),
            ..n
        };
        assert_eq!(net_delta(&n, &later).tcp_retrans_segs, Some(7));
        assert_eq!(net_delta(&n, &later).udp_rcvbuf_errors, None);
    }

    #[test]
    fn reads_whole_disks_only() {
        let t = "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 254       0 vda 109266 12544 5103746 88557 48776 111282 49592624 199834 0 24356 290923\n 254       1 vda1 1 0 8 0 0 0 0 0 0 1 1\n";
        let d = diskstats(t, &|n| n == "vda");
        assert_eq!(
            d,
            vec![("vda".to_string(), 5103746, 49592624, 109266, 48776, 24356)]
        );
    }

    #[test]
    fn the_cpu_line_needs_all_eight_fields() {
        assert!(cpu_split("cpu  1 2 3 4\n").is_none());
        let s = cpu_split("cpu  100 0 50 800 10 0 7 40 0 0\n").unwrap();
        assert!((s.softirq_s - 7.0 / ticks_per_s()).abs() < 1e-12);
    }
}
