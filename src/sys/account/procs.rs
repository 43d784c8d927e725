//! The host's process table for accounting and the foreign-load check
//! (`sys::monitor`): every process's parent, name, CPU time and whether it
//! is a kernel thread, and for QEMU its threads by name, so a run's host
//! CPU can be split by where it went; and the process trees in it.

use std::collections::HashMap;
use std::path::Path;

use super::read;

/// One process (or thread) as /proc/PID/stat gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Proc {
    pub ppid: u32,
    /// The command name (`comm`, at most 15 bytes).
    pub comm: String,
    /// utime + stime, in clock ticks.
    pub own_ticks: u64,
    /// The same plus its reaped children's.
    pub ticks: u64,
    pub kernel_thread: bool,
}

const PF_KTHREAD: u64 = 0x0020_0000;

/// Parses a /proc/PID/stat line; the name may hold spaces and parentheses,
/// so fields are counted from the last ')'.
pub fn parse_stat(stat: &str) -> Option<Proc> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    // f[0] is field 3 (state).
    let num = |field: usize| -> Option<u64> { f.get(field - 3)?.parse().ok() };
    let signed = |field: usize| -> Option<u64> {
        Some(f.get(field - 3)?.parse::<i64>().ok()?.max(0) as u64)
    };
    let own = num(14)? + num(15)?;
    Some(Proc {
        ppid: num(4)? as u32,
        comm: crate::core::accounting::bounded_name(&comm),
        own_ticks: own,
        ticks: own + signed(16)? + signed(17)?,
        kernel_thread: num(9)? & PF_KTHREAD != 0,
    })
}

/// A thread: (tid, name, utime + stime ticks).
pub type Thread = (u32, String, u64);

/// Every process at one moment, and the threads of those asked for.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub procs: HashMap<u32, Proc>,
    /// Per process whose threads were read: (thread name, ticks).
    pub threads: HashMap<u32, Vec<Thread>>,
}

impl Table {
    /// Reads /proc now, and the threads of every process whose name
    /// `threads_of` accepts.
    pub fn take(threads_of: &dyn Fn(&str) -> bool) -> Option<Table> {
        let mut t = Table::default();
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            // A process may end between listing and reading: skip it.
            let Some(p) = read::file(Path::new("/proc").join(format!("{pid}/stat")))
                .and_then(|s| parse_stat(&s))
            else {
                continue;
            };
            if threads_of(&p.comm) {
                t.threads.insert(pid, threads(pid));
            }
            t.procs.insert(pid, p);
        }
        Some(t)
    }

    /// `roots` and every process below them.
    pub fn trees(&self, roots: &[u32]) -> Vec<u32> {
        process_trees(self.procs.iter().map(|(&pid, p)| (pid, p.ppid)), roots)
    }
}

/// `roots` and every process below them, from each process's (pid, parent
/// pid); a root that is not among them is left out.
pub fn process_trees(parents: impl IntoIterator<Item = (u32, u32)>, roots: &[u32]) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut known = std::collections::HashSet::new();
    for (pid, ppid) in parents {
        known.insert(pid);
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut stack: Vec<u32> = roots
        .iter()
        .copied()
        .filter(|r| known.contains(r))
        .collect();
    while let Some(pid) = stack.pop() {
        if out.contains(&pid) {
            continue;
        }
        out.push(pid);
        stack.extend(children.get(&pid).into_iter().flatten());
    }
    out
}

/// The threads of `pid`: (tid, name, utime + stime).
fn threads(pid: u32) -> Vec<Thread> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let p = parse_stat(&read::file(e.path().join("stat"))?)?;
            Some((tid, p.comm, p.own_ticks))
        })
        // A process has at most a few hundred threads; QEMU a handful.
        .take(4096)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_qemu_thread_and_a_kernel_thread() {
        let t =
            parse_stat("77 (CPU 0/TCG) R 70 70 70 0 -1 4194368 0 0 0 0 900 30 0 0 20 0 9 0 1 0 0")
                .unwrap();
        assert_eq!(t.comm, "CPU 0/TCG");
        assert_eq!((t.ppid, t.own_ticks, t.ticks), (70, 930, 930));
        assert!(!t.kernel_thread);
        let k = parse_stat("9 (kworker/0:1) I 2 0 0 0 -1 69238880 0 0 0 0 3 4 0 0 20 0 1 0 5 0 0")
            .unwrap();
        assert!(k.kernel_thread);
        // A name may hold spaces and parentheses; reaped children count.
        let p =
            parse_stat("42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 10 5 20 0 1 0 1 0 0")
                .unwrap();
        assert_eq!((p.comm.as_str(), p.ppid), ("a (b) c", 7));
        assert_eq!((p.own_ticks, p.ticks), (300, 315));
    }

    #[test]
    fn reads_this_process_and_its_threads() {
        let me = std::process::id();
        let t = Table::take(&|_| false).unwrap();
        assert!(t.procs.contains_key(&me));
        assert!(t.threads.is_empty());
        assert!(threads(me).iter().any(|t| t.0 == me));
    }
}
