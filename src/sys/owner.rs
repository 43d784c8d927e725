//! Who owns a container, a volume or a temporary directory: this process,
//! named so that a later run can tell whether the owner still lives (boot,
//! PID namespace, pid and start time: a recycled pid is another process).
//! What a killed run (SIGKILL leaves no chance to clean up) left behind is
//! swept by the next run that finds its owner dead.

use std::sync::OnceLock;

/// One process, as a tag: `BOOT.PIDNS.PID.START` (hex, digits and dots: safe
/// in a file name, a container label and a shell word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The first 8 hex digits of the kernel's boot id.
    boot: String,
    /// The inode of the PID namespace the pid is counted in.
    pidns: u64,
    pid: u32,
    /// Clock ticks after boot when the process started.
    start: u64,
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let hex: String = id.chars().filter(char::is_ascii_hexdigit).take(8).collect();
    (hex.len() == 8).then_some(hex)
}

fn pid_namespace() -> Option<u64> {
    // "pid:[4026531836]"
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let text = link.to_str()?;
    text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// A process's start time and whether it is a zombie (field 22 and 3 of
/// `/proc/PID/stat`); None if there is no such process.
fn start_of(pid: u32) -> Option<(u64, bool)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields follow the last ')'.
    let rest = stat.rsplit_once(") ")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let start = fields.get(19)?.parse().ok()?;
    Some((start, fields.first() == Some(&"Z")))
}

impl Owner {
    /// This process (None only where /proc cannot say).
    pub fn me() -> Option<&'static Owner> {
        static ME: OnceLock<Option<Owner>> = OnceLock::new();
        ME.get_or_init(|| {
            let pid = std::process::id();
            Some(Owner {
                boot: boot_id()?,
                pidns: pid_namespace()?,
                pid,
                start: start_of(pid)?.0,
            })
        })
        .as_ref()
    }

    pub fn tag(&self) -> String {
        format!("{}.{}.{}.{}", self.boot, self.pidns, self.pid, self.start)
    }

    /// The owner a tag names; None for anything else.
    pub fn parse(tag: &str) -> Option<Owner> {
        let mut parts = tag.split('.');
        let boot = parts.next()?;
        if boot.len() != 8 || !boot.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let owner = Owner {
            boot: boot.to_string(),
            pidns: parts.next()?.parse().ok()?,
            pid: parts.next()?.parse().ok()?,
            start: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(owner)
    }

    /// Whether this owner is known to have ended: only a process of this
    /// boot and PID namespace can be judged (a run in another container or
    /// on another machine sharing the engine is not ours to judge).
    pub fn is_dead(&self) -> bool {
        let Some(me) = Owner::me() else {
            return false;
        };
        if self.boot != me.boot || self.pidns != me.pidns {
            return false;
        }
        match start_of(self.pid) {
            None => true,
            Some((start, zombie)) => start != self.start || zombie,
        }
    }
}

/// The owner named in a file name made with `with_tag` (`PREFIX` + tag + `-`
/// + anything), when `name` starts with `prefix`.
pub fn in_name(name: &str, prefix: &str) -> Option<Owner> {
    let rest = name.strip_prefix(prefix)?;
    Owner::parse(rest.split_once('-')?.0)
}

/// Removes the directories in `dir` named `PREFIX<owner tag>-...` whose owner
/// is dead (a run killed before its cleanup); returns how many went.
pub fn sweep_dirs(dir: &std::path::Path, prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(|n| in_name(n, prefix)) else {
            continue;
        };
        // Only real directories (never through a symbolic link).
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && owner.is_dead() && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_its_tag_reads_back() {
        let me = Owner::me().expect("Linux /proc");
        assert_eq!(Owner::parse(&me.tag()).as_ref(), Some(me));
        assert!(!me.is_dead());
        for bad in [
            "",
            "x.1.2.3",
            "abcdefgh.1.2",
            "0123abcd.1.2.3.4",
            "0123abcd.-1.2.3",
        ] {
            assert_eq!(Owner::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_ended_process_is_dead_and_a_recycled_pid_is_not_it() {
        let me = Owner::me().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let (start, _) = start_of(pid).unwrap_or((me.start, false));
        child.wait().unwrap();
        let ended = Owner {
            pid,
            start,
            ..me.clone()
        };
        assert!(ended.is_dead());
        // Our own pid with another start time: another process.
        let recycled = Owner {
            start: me.start + 1,
            ..me.clone()
        };
        assert!(recycled.is_dead());
        // Another boot or namespace is not judged.
        let elsewhere = Owner {
            boot: "00000000".into(),
            ..ended.clone()
        };
        assert!(!elsewhere.is_dead());
    }

    #[test]
    fn only_dead_owners_directories_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let me = Owner::me().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_of(pid).map(|s| s.0).unwrap_or(1);
        child.wait().unwrap();
        let dead = Owner {
            pid,
            start,
            ..me.clone()
        };
        let mk = |name: &str| {
            std::fs::create_dir(dir.path().join(name)).unwrap();
            std::fs::write(dir.path().join(name).join("f"), "x").unwrap();
        };
        mk(&format!("virtperf-x-{}-abc", dead.tag()));
        mk(&format!("virtperf-x-{}-abc", me.tag()));
        mk("virtperf-x-backup");
        mk(&format!("other-{}-abc", dead.tag()));
        // A symbolic link named like a dead run's directory is not followed.
        std::os::unix::fs::symlink(
            dir.path().join("virtperf-x-backup"),
            dir.path().join(format!("virtperf-x-{}-link", dead.tag())),
        )
        .unwrap();
        assert_eq!(sweep_dirs(dir.path(), "virtperf-x-"), 1);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left.len(), 4, "{left:?}");
        assert!(!left.contains(&format!("virtperf-x-{}-abc", dead.tag())));
        assert!(dir.path().join("virtperf-x-backup/f").exists());
    }
}
