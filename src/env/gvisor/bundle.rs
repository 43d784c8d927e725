//! An OCI bundle made on the spot for one sandboxed agent: a root file
//! system of only the static binary and an empty `/work` (what the docker
//! driver's image holds), and a `config.json` that runs `/virtperf agent`
//! with Docker's default capabilities and open-file limit, so that the
//! runtime is the only difference from a container.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Value};

/// The capabilities Docker gives a container by default.
const DOCKER_CAPS: &[&str] = &[
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
];

/// The open-file limit Docker's containers get.
const NOFILE: u64 = 1 << 20;

/// The bundle's `config.json`: `/virtperf agent` in `/work`, in new PID,
/// IPC, UTS and mount namespaces; the network namespace is the one the
/// runtime is started in.
pub fn config(hostname: &str) -> Value {
    json!({
        "ociVersion": "1.0.0",
        "process": {
            "terminal": false,
            "user": {"uid": 0, "gid": 0},
            "args": ["/virtperf", "agent"],
            "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "cwd": "/work",
            "capabilities": {
                "bounding": DOCKER_CAPS,
                "effective": DOCKER_CAPS,
                "permitted": DOCKER_CAPS,
            },
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": NOFILE, "soft": NOFILE}],
        },
        "root": {"path": "rootfs", "readonly": false},
        "hostname": hostname,
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs",
             "options": ["nosuid", "noexec", "nodev", "ro"]},
        ],
        "linux": {
            "namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}],
        },
    })
}

/// Makes bundle directory `dir` (which must not exist): `rootfs/virtperf`
/// hard-linked to `binary` (a copy of this binary in the same directory
/// tree), `rootfs/work` and `config.json`.
pub fn make(dir: &Path, binary: &Path, hostname: &str) -> Result<PathBuf> {
    let rootfs = dir.join("rootfs");
    std::fs::create_dir_all(rootfs.join("work")).context("making the bundle's rootfs")?;
    std::fs::hard_link(binary, rootfs.join("virtperf"))
        .context("putting virtperf in the bundle's rootfs")?;
    let text = serde_json::to_vec_pretty(&config(hostname))?;
    std::fs::write(dir.join("config.json"), text).context("writing the bundle's config.json")?;
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_runs_the_agent_in_work_with_dockers_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("virtperf");
        std::fs::write(&binary, b"binary").unwrap();
        let bundle = make(&dir.path().join("b0"), &binary, "virtperf-0").unwrap();
        assert_eq!(
            std::fs::read(bundle.join("rootfs/virtperf")).unwrap(),
            b"binary"
        );
        assert!(bundle.join("rootfs/work").is_dir());
        let config: Value =
            serde_json::from_slice(&std::fs::read(bundle.join("config.json")).unwrap()).unwrap();
        assert_eq!(config["process"]["args"], json!(["/virtperf", "agent"]));
        assert_eq!(config["process"]["cwd"], "/work");
        assert_eq!(config["process"]["terminal"], false);
        assert_eq!(config["hostname"], "virtperf-0");
        let caps = config["process"]["capabilities"]["effective"]
            .as_array()
            .unwrap();
        assert_eq!(caps.len(), DOCKER_CAPS.len());
        assert!(!caps.contains(&json!("CAP_SYS_ADMIN")));
        // The network namespace is not the bundle's to make.
        let ns = config["linux"]["namespaces"].as_array().unwrap();
        assert!(ns.iter().all(|n| n["type"] != "network"), "{ns:?}");
    }
}
