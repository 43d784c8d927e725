//! The file system under a workload's files (fileio, disk, OLTP on SQLite),
//! read from /proc/self/mountinfo where the workload runs: its type and
//! source, and whether an fsync there reaches a disk at all. A Podman `--rm`
//! container's overlay is mounted `volatile` (fsync returns at once) and a
//! tmpfs has no disk: durable commits and fsyncs cost nothing there, which
//! a comparison must say rather than report as speed. Also the free space
//! there, which workloads check before they write.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::core::result::Storage;

/// The storage holding `dir`, or None where mountinfo cannot be read.
pub fn of(dir: &Path) -> Option<Storage> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    from_mountinfo(&info, &dir)
}

/// The mount of `path` (an absolute, canonical path) in a mountinfo text:
/// the last-listed mount whose mount point is the longest prefix of it.
pub fn from_mountinfo(info: &str, path: &Path) -> Option<Storage> {
    let mut best: Option<(usize, Storage)> = None;
    for line in info.lines() {
        let Some((mount_point, fs, source, options)) = parse_line(line) else {
            continue;
        };
        if !path.starts_with(&mount_point) {
            continue;
        }
        let depth = mount_point.components().count();
        if best.as_ref().is_some_and(|(d, _)| *d > depth) {
            continue;
        }
        let fsync_ignored = fsync_ignored(&fs, &options);
        best = Some((
            depth,
            Storage {
                fs,
                source,
                fsync_ignored,
            },
        ));
    }
    best.map(|(_, s)| s)
}

/// One mountinfo line: mount point, file system type, source and the
/// super block's options ("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3
/// /dev/root rw,errors=continue", proc(5)).
fn parse_line(line: &str) -> Option<(PathBuf, String, String, String)> {
    // Bounded: a line this long is not a mount the kernel wrote.
    if line.len() > 64 * 1024 {
        return None;
    }
    let (head, tail) = line.split_once(" - ")?;
    let mount_point = head.split(' ').nth(4)?;
    let mut tail = tail.split(' ');
    let fs = tail.next()?;
    let source = tail.next().unwrap_or("");
    let options = tail.next().unwrap_or("");
    Some((
        PathBuf::from(unescape(mount_point)),
        fs.to_string(),
        unescape(source),
        options.to_string(),
    ))
}

/// Mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|o| o.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(o)) => {
                out.push((o[0] - b'0') * 64 + (o[1] - b'0') * 8 + (o[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why an fsync on this file system reaches no disk, if it does not.
fn fsync_ignored(fs: &str, options: &str) -> Option<String> {
    let has = |o: &str| options.split(',').any(|x| x == o);
    match fs {
        "overlay" if has("volatile") || has("fsync=volatile") => Some("mounted volatile".into()),
        "tmpfs" | "ramfs" => Some("in memory".into()),
        _ => None,
    }
}

/// Bytes available to an unprivileged writer on the file system holding
/// `dir` (statvfs's `f_bavail` blocks of `f_frsize` bytes). A name with a
/// NUL byte is an `InvalidInput` error carrying the `NulError`.
pub fn free_bytes(dir: &Path) -> io::Result<u64> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `libc::statvfs` is a C struct of integers only, for which all
    // zero bytes are a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated string alive across the call, and `st`
    // is a struct of ours that statvfs only writes into.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PODMAN: &str = "79 51 0:40 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/containers/storage/overlay/l/4V6H,upperdir=/var/lib/containers/storage/overlay/3ddc/diff,workdir=/var/lib/containers/storage/overlay/3ddc/work,uuid=on,fsync=volatile
80 79 254:0 /usr/lib /lib ro,relatime - ext4 /dev/vda rw,discard
81 79 0:45 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=64000k
82 79 254:0 /var/lib/containers/storage/volumes/x/_data /data rw,relatime - ext4 /dev/vda rw,discard
";

    #[test]
    fn a_podman_rm_containers_root_ignores_fsync_and_its_volume_does_not() {
        let root = from_mountinfo(PODMAN, Path::new("/tmp/virtperf-work")).unwrap();
        assert_eq!(root.fs, "overlay");
        assert!(root.fsync_ignored.unwrap().contains("volatile"));
        let volume = from_mountinfo(PODMAN, Path::new("/data/db")).unwrap();
        assert_eq!(
            (volume.fs.as_str(), volume.source.as_str()),
            ("ext4", "/dev/vda")
        );
        assert_eq!(volume.fsync_ignored, None);
        let shm = from_mountinfo(PODMAN, Path::new("/dev/shm/x")).unwrap();
        assert_eq!(shm.fsync_ignored.as_deref(), Some("in memory"));
        assert_eq!(shm.describe(), "tmpfs on shm, fsync ignored (in memory)");
    }

    #[test]
    fn the_longest_mount_point_wins_and_a_later_mount_over_it_too() {
        let info = "1 0 8:1 / / rw - ext4 /dev/sda1 rw
2 1 0:5 / /tmp rw - tmpfs tmpfs rw
3 1 0:6 / /tmpdir rw - xfs /dev/sdb rw
4 2 8:2 / /tmp rw - ext4 /dev/sdc rw
";
        let at = |p: &str| from_mountinfo(info, Path::new(p)).unwrap();
        assert_eq!(at("/tmp/a").source, "/dev/sdc", "the later mount over /tmp");
        assert_eq!(
            at("/tmpdir/a").fs,
            "xfs",
            "a prefix of the name is not a parent"
        );
        assert_eq!(at("/home").fs, "ext4");
        // Docker's fuse-overlayfs keeps fsync: nothing to warn about.
        let fuse = "1 0 0:50 / / rw - fuse.fuse-overlayfs fuse-overlayfs rw,user_id=0\n";
        let fuse = from_mountinfo(fuse, Path::new("/w")).unwrap();
        assert_eq!(fuse.fsync_ignored, None);
        assert_eq!(fuse.describe(), "fuse.fuse-overlayfs");
        assert_eq!(at("/tmp/a").describe(), "ext4 on /dev/sdc");
        assert_eq!(at("/tmpdir/a").describe(), "xfs on /dev/sdb");
    }

    #[test]
    fn escaped_names_and_broken_lines() {
        let info = "1 0 8:1 / / rw - ext4 /dev/sda1 rw
2 1 8:2 / /mnt/my\\040disk rw - xfs /dev/my\\134disk rw
garbage without a separator
3 1 8:3
";
        let s = from_mountinfo(info, Path::new("/mnt/my disk/x")).unwrap();
        assert_eq!((s.fs.as_str(), s.source.as_str()), ("xfs", "/dev/my\\disk"));
        assert_eq!(from_mountinfo("", Path::new("/x")), None);
    }

    #[test]
    fn this_machines_working_directory_has_a_file_system() {
        let s = of(Path::new(".")).expect("mountinfo readable here");
        assert!(!s.fs.is_empty());
    }

    #[test]
    fn free_bytes_reads_the_file_system_and_names_what_went_wrong() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).unwrap() > 0);
        let missing = free_bytes(&dir.path().join("missing")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let nul = free_bytes(Path::new("a\0b")).unwrap_err();
        assert_eq!(nul.kind(), io::ErrorKind::InvalidInput);
        assert!(nul.to_string().contains("nul byte"), "{nul}");
    }
}
