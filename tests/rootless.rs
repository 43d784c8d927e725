//! Rootless Podman with the real thing: a throwaway user made here (with
//! subordinate uid and gid ranges) runs a cpu and a tcp_rr job through
//! `podman:rootless=USER`, the result's fingerprint names the user, the
//! network, Podman's version and the runtime, and the user goes at the end
//! with its home, its storage and every process it left (Podman's pause
//! process, slirp4netns) — also when the test fails. Where rootless Podman
//! cannot run here the test says why it skips; under CI=true a skip fails.
//! Ctrl-C during a rootless run ends it with 130 and leaves none of this.

use std::path::{Path, PathBuf};
use std::process::Command as Std;
use std::time::Duration;

use serde_json::Value;

mod common;
use common::{is_root, json_of, skip, virtperf, wait_until};

/// The tests that make a user run one at a time: each user's name is
/// made of the test process's id, and two `useradd`s at once contend for
/// /etc/passwd's lock.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A user made for one test, removed with everything it left when dropped.
struct ThrowawayUser {
    name: String,
    uid: u32,
}

/// Where Podman keeps a rootless user's state outside its home: its run
/// directory, its pause process's files and its lock in shared memory.
const STATE_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm", "/run", "/run/user"];

impl ThrowawayUser {
    /// The user, or None (having said why) where rootless Podman cannot run.
    fn create() -> Option<ThrowawayUser> {
        if !is_root() {
            skip("making a user needs root");
            return None;
        }
        for (tool, package) in [
            ("podman", "podman"),
            ("newuidmap", "uidmap"),
            ("slirp4netns", "slirp4netns"),
            ("useradd", "passwd"),
        ] {
            if !Path::new("/usr/bin").join(tool).exists()
                && !Path::new("/usr/sbin").join(tool).exists()
            {
                skip(&format!("{tool} is missing (apt-get install {package})"));
                return None;
            }
        }
        let name = format!("vprl{}", std::process::id());
        let made = Std::new("useradd")
            .args(["-m", "-s", "/bin/sh", &name])
            .status()
            .unwrap();
        assert!(made.success(), "useradd {name}");
        let uid = uid_of(&name).expect("the new user's uid");
        let user = ThrowawayUser { name, uid };
        // useradd gives a range where login.defs says so; else one here.
        for (file, flag) in [
            ("/etc/subuid", "--add-subuids"),
            ("/etc/subgid", "--add-subgids"),
        ] {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            if !text
                .lines()
                .any(|l| l.starts_with(&format!("{}:", user.name)))
            {
                let ok = Std::new("usermod")
                    .args([flag, "900000-965535", &user.name])
                    .status()
                    .unwrap();
                assert!(ok.success(), "usermod {flag}");
            }
        }
        Some(user)
    }

    /// The user's own podman command.
    fn podman(&self, args: &[&str]) -> std::process::Output {
        Std::new("runuser")
            .args(["-u", &self.name, "--", "env", "-i"])
            .arg(format!("HOME=/home/{}", self.name))
            .args(["PATH=/usr/bin:/bin", "podman"])
            .args(args)
            .current_dir("/")
            .output()
            .unwrap()
    }

    /// Ends its processes, then removes the user, its home and what Podman
    /// kept for it elsewhere. Idempotent.
    fn remove(&mut self) {
        if self.name.is_empty() {
            return;
        }
        wait_until(Duration::from_secs(5), || {
            let left = processes_of(self.uid);
            for pid in &left {
                // SAFETY: signalling a process of the user this test made.
                unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
            }
            left.is_empty()
        });
        let _ = Std::new("userdel").args(["-r", "-f", &self.name]).output();
        for path in files_of(self.uid) {
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
        }
        // Older shadow-utils keep the ranges of a deleted user.
        for file in ["/etc/subuid", "/etc/subgid"] {
            if let Ok(text) = std::fs::read_to_string(file) {
                let mark = format!("{}:", self.name);
                let kept: String = text
                    .lines()
                    .filter(|l| !l.starts_with(&mark))
                    .map(|l| format!("{l}\n"))
                    .collect();
                if kept != text {
                    std::fs::write(file, kept).unwrap();
                }
            }
        }
        self.name.clear();
    }
}

impl Drop for ThrowawayUser {
    fn drop(&mut self) {
        self.remove();
    }
}

fn uid_of(name: &str) -> Option<u32> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&name)).then(|| f.get(2)?.parse().ok())?
    })
}

/// The processes whose real uid is `uid`.
fn processes_of(uid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|u| u.split_whitespace().next()?.parse::<u32>().ok())
                    == Some(uid)
            })
        })
        .collect()
}

/// Entries owned by `uid` in the directories Podman keeps state in.
fn files_of(uid: u32) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    STATE_DIRS
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten())
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .map(|e| e.path())
        .collect()
}

fn podman_version() -> String {
    let out = Std::new("podman")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Runs virtperf with a private TMPDIR and --json; the one result document.
fn run_json(tmp: &Path, args: &[&str]) -> Value {
    let out = virtperf()
        .env("TMPDIR", tmp)
        .args(args)
        .arg("--json")
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    json_of(&out, &args.join(" "))
}

#[test]
fn rootless_podman_runs_as_the_user_reaches_the_host_and_leaves_nothing() {
    let _serial = serial();
    let Some(user) = ThrowawayUser::create() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let spec = format!("podman:rootless={}", user.name);
    let doc = run_json(tmp.path(), &["cpu", "--time=0.2", "--env", &spec]);
    assert!(common::metric(&doc, "events_per_sec") > 0.0);
    let settings = &doc["env"]["settings"];
    assert_eq!(doc["env"]["kind"], "podman", "{doc}");
    assert_eq!(settings["rootless"], "true", "{settings}");
    assert_eq!(settings["user"], user.name.as_str(), "{settings}");
    assert_eq!(settings["network"], "slirp4netns", "{settings}");
    assert_eq!(settings["podman_version"], podman_version().as_str());
    assert!(settings["runtime"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(settings["runtime_version"]
        .as_str()
        .is_some_and(|v| !v.is_empty()));

    // A client inside reaches the host's server through slirp4netns.
    let doc = run_json(
        tmp.path(),
        &["net", "--net-test=tcp_rr", "--time=0.3", "--env", &spec],
    );
    assert!(common::metric(&doc, "tcp_rr_trans_per_sec") > 0.0);
    assert!(doc.to_string().contains("slirp4netns (10.0.2.2"), "{doc}");

    // pasta where this Podman has none (before 4.4) is refused before any
    // container starts, naming the version and the network to use instead.
    let version = podman_version();
    let numbers: Vec<u32> = version.split('.').filter_map(|p| p.parse().ok()).collect();
    if numbers.len() >= 2 && (numbers[0], numbers[1]) < (4, 4) {
        let pasta = format!("{spec},network=pasta");
        let out = virtperf()
            .env("TMPDIR", tmp.path())
            .args(["cpu", "--time=0.2", "--env", &pasta])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "network=pasta ran: {err}");
        assert!(err.contains(&format!("this Podman is {version}")), "{err}");
        assert!(err.contains("use network=slirp4netns"), "{err}");
    }

    // The image was built in the user's own storage; no container is left.
    let images = user.podman(&["images", "--format", "{{.Repository}}"]);
    let images = String::from_utf8_lossy(&images.stdout);
    assert!(images.contains("virtperf-agent"), "{images}");
    let left = user.podman(&["ps", "-aq"]);
    assert!(left.status.success());
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "");
    assert!(common::entries(tmp.path()).is_empty(), "TMPDIR: left files");

    remove_and_check(user);
}

/// Removes `user` and checks nothing of it is left: the account, its
/// processes, its files, its home, its subordinate ids.
fn remove_and_check(mut user: ThrowawayUser) {
    let (name, uid) = (user.name.clone(), user.uid);
    user.remove();
    assert_eq!(uid_of(&name), None, "{name} still exists");
    assert!(processes_of(uid).is_empty(), "processes of {name} left");
    assert!(files_of(uid).is_empty(), "{:?}", files_of(uid));
    assert!(!Path::new(&format!("/home/{name}")).exists());
    let subuid = std::fs::read_to_string("/etc/subuid").unwrap();
    assert!(!subuid.contains(&format!("{name}:")), "{subuid}");
}

/// The names (`comm`) of the processes whose real uid is `uid`.
fn process_names_of(uid: u32) -> Vec<String> {
    processes_of(uid)
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).ok())
        .map(|c| c.trim().to_string())
        .collect()
}

#[test]
fn ctrl_c_during_a_rootless_run_ends_it_and_leaves_nothing() {
    let _serial = serial();
    let Some(user) = ThrowawayUser::create() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let spec = format!("podman:rootless={}", user.name);
    let mut child = Std::new(env!("CARGO_BIN_EXE_virtperf"))
        .env("TMPDIR", tmp.path())
        .args(["cpu", "--time=60", "--env", &spec])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The agent runs in the container as the user's id on the host (the
    // image is built first, in the user's own storage).
    let running = wait_until(Duration::from_secs(180), || {
        process_names_of(user.uid).iter().any(|c| c == "virtperf")
            || child.try_wait().unwrap().is_some()
    });
    let names = process_names_of(user.uid);
    if !(running && names.iter().any(|c| c == "virtperf")) {
        // Say why: virtperf's own words if it ended (once, in a loaded CI
        // lane, it had ended after 4 s with Podman's helpers still up).
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "no agent of {} started: {names:?}; virtperf: {:?}: {}",
            user.name,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    let ended = common::signal_and_wait(&mut child, &[libc::SIGINT], Duration::from_secs(60));
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(ended, "virtperf did not end on SIGINT: {err}");
    assert_eq!(out.status.code(), Some(130), "{err}");

    // The container and its helpers are gone while the user still exists
    // (Podman's pause process may stay: it is the user's, ended below).
    let left = user.podman(&["ps", "-aq"]);
    assert!(left.status.success(), "{left:?}");
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "");
    let ended = wait_until(Duration::from_secs(10), || {
        !process_names_of(user.uid)
            .iter()
            .any(|c| ["conmon", "slirp4netns", "virtperf"].contains(&c.as_str()))
    });
    assert!(ended, "left running: {:?}", process_names_of(user.uid));
    assert!(common::entries(tmp.path()).is_empty(), "TMPDIR: left files");
    remove_and_check(user);
}

#[test]
fn a_broken_rootless_configuration_is_refused_naming_the_fix() {
    if !is_root() && skip("the refusals are checked as root, as the runs are") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let refused = |spec: &str, fix: &str| {
        let out = virtperf()
            .env("TMPDIR", tmp.path())
            .args(["cpu", "--time=0.2", "--env", spec])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains(fix), "{spec}: {err}");
    };
    refused(
        "podman:rootless=no-such-user-vp",
        "useradd -m no-such-user-vp",
    );
    refused("podman:rootless=root", "leave rootless= out");
    refused(
        "podman:rootless=no-such-user-vp,network=bridge",
        "network=slirp4netns or network=pasta or network=host",
    );
    refused("podman:network=slirp4netns", "add rootless=USER");
    assert!(common::entries(tmp.path()).is_empty(), "TMPDIR: left files");
}
