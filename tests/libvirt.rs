//! The libvirt driver against a real libvirtd (Debian's
//! libvirt-daemon-system, started here when none answers and stopped
//! after), with TCG guests (type='qemu': nested KVM fails on the
//! project's machines): a transient domain, an existing domain defined
//! here (started, measured, shut down, undefined), one reached over ssh
//! on a libvirt network of the test's (CPU and network tests), a
//! snapshot revert, the refusals, and Ctrl-C during boot. Each test says
//! why it skips; under CI=true a skip is a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{metric, output_ok, skip, virtperf};
use predicates::prelude::*;
use serde_json::Value;

const URI: &str = "qemu:///system";

/// One test at a time: they share the daemon and count its domains.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// `virsh -c qemu:///system ARGS`: whether it succeeded, and its output.
fn virsh(args: &[&str]) -> (bool, String) {
    match Command::new("virsh")
        .args(["-q", "-c", URI])
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) => (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (false, e.to_string()),
    }
}

fn answers() -> bool {
    virsh(&["uri"]).0
}

/// A libvirtd for the test: the one that answers, or one started here
/// (with virtlogd, which its QEMU logs go through) and stopped on drop.
struct Daemon {
    started: Vec<(&'static str, &'static str)>,
}

impl Daemon {
    fn get() -> Option<Daemon> {
        if answers() {
            return Some(Daemon { started: vec![] });
        }
        let has = |b: &str| {
            Command::new("sh")
                .args(["-c", &format!("command -v {b}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !has("virsh") || !has("libvirtd") {
            skip("libvirtd or virsh is missing: apt-get install libvirt-daemon-system libvirt-clients");
            return None;
        }
        if !common::is_root() {
            skip("needs root to start libvirtd (qemu:///system)");
            return None;
        }
        if !common::qemu_ok() {
            return None;
        }
        let mut started = Vec::new();
        for (bin, pid) in [
            ("virtlogd", "/run/virtlogd.pid"),
            ("libvirtd", "/run/libvirtd.pid"),
        ] {
            let running = std::fs::read_to_string(pid)
                .ok()
                .and_then(|p| p.trim().parse::<i32>().ok())
                // SAFETY: signal 0 only asks whether the process exists.
                .is_some_and(|p| unsafe { libc::kill(p, 0) } == 0);
            if !running {
                let ok = Command::new(bin)
                    .arg("-d")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                assert!(ok, "{bin} -d failed");
                started.push((bin, pid));
            }
        }
        let daemon = Daemon { started };
        assert!(
            common::wait_until(Duration::from_secs(20), answers),
            "libvirtd does not answer on {URI}"
        );
        Some(daemon)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        for (bin, pid_file) in self.started.iter().rev() {
            let Some(pid) = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|p| p.trim().parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: signalling the daemon this test started (its pid file).
            unsafe { libc::kill(pid, libc::SIGTERM) };
            // SAFETY: signal 0 only asks whether it still runs.
            let gone = common::wait_until(Duration::from_secs(10), || unsafe {
                libc::kill(pid, 0) != 0
            });
            assert!(gone, "{bin} did not stop");
        }
    }
}

/// libvirt's QEMU logs of transient domains whose virtperf has ended.
fn finished_runs_logs() -> Vec<String> {
    let mut logs: Vec<String> = std::fs::read_dir("/var/log/libvirt/qemu")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| {
                    virtperf::sys::owner::in_name(n, virtperf::env::libvirt::PREFIX)
                        .is_some_and(|o| o.is_dead())
                })
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    logs
}

/// Every domain libvirt knows, running or not.
fn domains() -> Vec<String> {
    let (ok, out) = virsh(&["list", "--all", "--name"]);
    assert!(ok, "{out}");
    let mut v: Vec<String> = out.lines().map(|l| l.trim().to_string()).collect();
    v.retain(|l| !l.is_empty());
    v.sort();
    v
}

/// A TMPDIR of the test's own, so what virtperf leaves there is seen.
fn private_tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn leftovers(tmp: &Path) -> Vec<String> {
    common::entries(tmp)
}

fn docs(tmp: &Path, args: &[&str]) -> Vec<Value> {
    let out = virtperf()
        .env("TMPDIR", tmp)
        .args(args)
        .arg("--json")
        .timeout(Duration::from_secs(240))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&text).unwrap();
    match v {
        Value::Array(a) => a,
        one => vec![one],
    }
}

/// A persistent domain of the test's own that boots virtperf's initramfs
/// with its agent on a unix-socket serial port 1 (and `extra` devices);
/// undefined (and destroyed) on drop, its files with it.
struct TestDomain {
    name: String,
    dir: tempfile::TempDir,
    qcow2: bool,
}

impl TestDomain {
    fn define(tag: &str, vcpus: u32, with_channel: bool) -> TestDomain {
        Self::define_with(tag, vcpus, with_channel, false)
    }

    /// `qcow2`: with a small qcow2 disk, which an internal snapshot needs.
    fn define_with(tag: &str, vcpus: u32, with_channel: bool, qcow2: bool) -> TestDomain {
        use std::os::unix::fs::PermissionsExt;
        let name = format!("virtperf-test-{tag}-{}", std::process::id());
        let dir = tempfile::tempdir().unwrap();
        // QEMU runs as libvirt-qemu: it passes through the directory.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let (kernel, modules) = virtperf::env::qemu::initramfs::find_kernel().unwrap();
        let binary = std::fs::read(assert_cmd::cargo::cargo_bin("virtperf")).unwrap();
        let image = virtperf::env::qemu::initramfs::build(&binary, &modules).unwrap();
        let initrd = dir.path().join("initramfs.cpio");
        std::fs::write(&initrd, image).unwrap();
        if qcow2 {
            let disk = dir.path().join("disk.qcow2");
            let ok = Command::new("qemu-img")
                .args(["create", "-q", "-f", "qcow2"])
                .arg(&disk)
                .arg("16M")
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "qemu-img create failed");
        }
        let t = TestDomain { name, dir, qcow2 };
        t.write(vcpus, with_channel, &kernel, &initrd);
        t
    }

    fn write(&self, vcpus: u32, with_channel: bool, kernel: &Path, initrd: &Path) {
        let d = self.dir.path();
        let disk = if self.qcow2 {
            format!(
                "<disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='{}'/><target dev='vda' bus='virtio'/></disk>",
                d.join("disk.qcow2").display()
            )
        } else {
            String::new()
        };
        let channel = if with_channel {
            format!(
                "<serial type='unix'><source mode='bind' path='{}'/><target port='1'/></serial>",
                d.join("agent.sock").display()
            )
        } else {
            String::new()
        };
        // Redefined, it keeps its identity (and so its snapshots).
        let (known, uuid) = virsh(&["domuuid", &self.name]);
        let uuid = if known {
            format!("<uuid>{}</uuid>", uuid.trim())
        } else {
            String::new()
        };
        let xml = format!(
            "<domain type='qemu'><name>{}</name>{uuid}<memory unit='MiB'>256</memory><vcpu>{vcpus}</vcpu>\
             <os><type arch='x86_64' machine='q35'>hvm</type><kernel>{}</kernel><initrd>{}</initrd>\
             <cmdline>console=ttyS0 panic=-1 quiet</cmdline></os><cpu mode='maximum'/>\
             <on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>\
             <devices>{disk}<serial type='file'><source path='{}'/><target port='0'/></serial>{channel}\
             <memballoon model='none'/></devices></domain>",
            self.name,
            kernel.display(),
            initrd.display(),
            d.join("console.log").display(),
        );
        let file = d.join("domain.xml");
        std::fs::write(&file, xml).unwrap();
        let (ok, out) = virsh(&["define", &file.display().to_string()]);
        assert!(ok, "{out}");
    }

    /// Redefines it with another vCPU count (its snapshots stay).
    fn redefine(&self, vcpus: u32) {
        let (kernel, _) = virtperf::env::qemu::initramfs::find_kernel().unwrap();
        self.write(
            vcpus,
            true,
            &kernel,
            &self.dir.path().join("initramfs.cpio"),
        );
    }

    fn state(&self) -> String {
        virsh(&["domstate", &self.name]).1.trim().to_string()
    }
}

impl Drop for TestDomain {
    fn drop(&mut self) {
        let _ = virsh(&["destroy", &self.name]);
        let _ = virsh(&["undefine", "--snapshots-metadata", "--nvram", &self.name]);
        remove_qemu_log(&self.name);
    }
}

/// Removes libvirt's QEMU log of the test's domain `name`.
fn remove_qemu_log(name: &str) {
    let _ = std::fs::remove_file(format!("/var/log/libvirt/qemu/{name}.log"));
}

#[test]
fn a_transient_domain_runs_cpu_with_its_settings_and_leaves_nothing() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let before = domains();
    let logs = finished_runs_logs();
    let tmp = private_tmp();
    let env = "libvirt:vcpus=1,memory=512m,disk=64m,pin=0,disk-cache=writeback,cpu=qemu64";
    let d = docs(
        tmp.path(),
        &["cpu", "--time=1", "--cpu-max-prime=2000", "--env", env],
    );
    let e = &d[0]["env"];
    assert_eq!(e["kind"], "libvirt");
    assert_eq!(e["hypervisor"], "TCGTCGTCGTCG");
    assert_eq!(e["cpus"], 1);
    let s = &e["settings"];
    assert_eq!(s["vcpus"], "1", "{e}");
    assert_eq!(s["pinning"], "0:0");
    assert_eq!(s["cpu"], "custom qemu64");
    assert_eq!(s["memory"], "512 MiB");
    assert_eq!(s["disks"], "vda bus=virtio cache=writeback");
    assert_eq!(s["net"], "virtio (user)");
    assert!(metric(&d[0], "events_per_sec") > 0.0);
    assert_eq!(domains(), before);
    assert_eq!(
        finished_runs_logs(),
        logs,
        "libvirt's QEMU log of the domain is left"
    );
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
}

#[test]
fn an_existing_domain_is_started_measured_shut_down_and_refused_while_it_runs() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let dom = TestDomain::define("existing", 1, true);
    assert_eq!(dom.state(), "shut off");
    let tmp = private_tmp();
    let env = format!("libvirt:domain={}", dom.name);
    let d = docs(tmp.path(), &["cpu", "--events=200", "--env", &env]);
    assert_eq!(d[0]["env"]["hypervisor"], "TCGTCGTCGTCG");
    assert_eq!(d[0]["env"]["settings"]["vcpus"], "1");
    assert_eq!(d[0]["env"]["settings"]["cpu"], "maximum");
    assert_eq!(d[0]["env"]["settings"]["disks"], "none");
    // virtperf started it, so it is off again.
    assert_eq!(dom.state(), "shut off");
    // Running (someone's work): refused unless shared=yes, and left running.
    let (ok, out) = virsh(&["start", &dom.name]);
    assert!(ok, "{out}");
    virtperf()
        .env("TMPDIR", tmp.path())
        .args(["cpu", "--events=10", "--env", &env])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(predicate::str::contains("is running").and(predicate::str::contains("shared=yes")));
    assert_eq!(dom.state(), "running");
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
}

#[test]
fn a_domain_with_no_way_in_a_missing_one_and_a_dead_uri_are_refused_with_the_fix() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let dom = TestDomain::define("closed", 1, false);
    let tmp = private_tmp();
    let t = Instant::now();
    virtperf()
        .env("TMPDIR", tmp.path())
        .args([
            "cpu",
            "--events=10",
            "--env",
            &format!("libvirt:domain={}", dom.name),
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("no way in")
                .and(predicate::str::contains("<serial type='unix'>"))
                .and(predicate::str::contains("domifaddr")),
        );
    // Refused before it was started.
    assert_eq!(dom.state(), "shut off");
    virtperf()
        .args([
            "cpu",
            "--events=10",
            "--env",
            "libvirt:domain=virtperf-no-such-domain",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("does not exist").and(predicate::str::contains("list --all")),
        );
    virtperf()
        .args(["cpu", "--events=10", "--env", "libvirt:uri=qemu:///nowhere"])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(predicate::str::contains("uri=qemu:///nowhere"));
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
}

#[test]
fn a_snapshot_is_reverted_before_the_run_and_by_reboot() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let has_qemu_img = Command::new("qemu-img")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_qemu_img {
        skip("qemu-img is missing (apt-get install qemu-utils): a snapshot needs a qcow2 disk");
        return;
    }
    let dom = TestDomain::define_with("snap", 1, true, true);
    let (ok, out) = virsh(&["snapshot-create-as", &dom.name, "one-vcpu"]);
    assert!(ok, "{out}");
    // After the snapshot the domain changes; the run must see the snapshot's.
    dom.redefine(2);
    let tmp = private_tmp();
    let spec = format!("libvirt:domain={},snapshot=one-vcpu", dom.name);
    let d = docs(tmp.path(), &["cpu", "--events=100", "--env", &spec]);
    assert_eq!(d[0]["env"]["cpus"], 1, "{}", d[0]["env"]);
    assert_eq!(d[0]["env"]["settings"]["snapshot"], "one-vcpu");
    assert_eq!(dom.state(), "shut off");
    // The reboot hook (reboot=each-run) reverts and starts it. Dropped
    // without a run, the guest (virtperf's init, which ignores ACPI) is
    // asked to shut down and destroyed once timeout= has passed: 10 s here,
    // not the default 60 s, which this test used to wait out.
    dom.redefine(2);
    let env = virtperf::env::libvirt::LibvirtEnvironment::new(
        virtperf::env::Spec::parse(&format!("{spec},timeout=10")).unwrap(),
    )
    .unwrap();
    virtperf::env::Environment::reboot(&env, 0).unwrap();
    assert_eq!(dom.state(), "running");
    let (_, xml) = virsh(&["dumpxml", &dom.name]);
    assert!(xml.contains(">1</vcpu>"), "{xml}");
    // Dropped, it shuts down what it started.
    drop(env);
    assert_eq!(dom.state(), "shut off");
    // Through the run loop: two runs, each in a boot of its own from the
    // snapshot, and the domain shut off after.
    dom.redefine(2);
    let out = tempfile::tempdir().unwrap();
    let each = format!("{spec},name=snap,reboot=each-run");
    let mut vp = virtperf();
    vp.env("TMPDIR", tmp.path());
    output_ok(vp.args([
        "compare",
        "--out",
        out.path().to_str().unwrap(),
        "--env",
        &each,
        "--repeat",
        "2",
        "cpu",
        "--events=100",
    ]));
    let db = rusqlite::Connection::open(out.path().join("results.db")).unwrap();
    let runs: Vec<(String, String, i64)> = db
        .prepare(
            "SELECT json_extract(doc, '$.env.boot'), json_extract(doc, '$.env.reboot'), json_extract(doc, '$.env.cpus') FROM runs WHERE env = 'snap'",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_ne!(runs[0].0, runs[1].0, "a boot per run: {runs:?}");
    assert!(
        runs.iter().all(|r| r.1 == "each-run" && r.2 == 1),
        "{runs:?}"
    );
    assert_eq!(dom.state(), "shut off");
}

#[test]
fn ctrl_c_during_boot_leaves_no_domain_socket_or_file() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let before = domains();
    let tmp = private_tmp();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("virtperf"))
        .env("TMPDIR", tmp.path())
        .args([
            "cpu",
            "--time=1",
            "--env",
            "libvirt:vcpus=1,memory=256m,disk=64m,net=none",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The domain exists: the guest is booting.
    let ours = |d: &Vec<String>| d.iter().any(|n| n.starts_with("virtperf-libvirt-"));
    assert!(
        common::wait_until(Duration::from_secs(60), || ours(&domains())),
        "no transient domain appeared"
    );
    let sent = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let ended = common::wait_until(Duration::from_secs(30), || {
        child.try_wait().unwrap().is_some()
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(ended, "virtperf did not end within 30 s of Ctrl-C");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(sent.elapsed() < Duration::from_secs(30));
    assert_eq!(domains(), before);
    let left: Vec<PathBuf> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A virtperf run to interrupt: its own process group (only our signal
/// reaches it), a private TMPDIR, its stderr in a file (a pipe would stay
/// open as long as anything it started).
struct Interruptible {
    what: String,
    tmp: tempfile::TempDir,
    child: std::process::Child,
    stderr: tempfile::NamedTempFile,
    /// A comparison's store.
    out: tempfile::TempDir,
}

impl Interruptible {
    fn start(what: &str, args: &[&str]) -> Interruptible {
        use std::os::unix::process::CommandExt;
        let tmp = private_tmp();
        let out = tempfile::tempdir().unwrap();
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("virtperf"));
        for a in args {
            // `OUT` stands for the comparison's store.
            cmd.arg(if *a == "OUT" {
                out.path().to_str().unwrap()
            } else {
                a
            });
        }
        let child = cmd
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr.reopen().unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        eprintln!("{what}");
        Interruptible {
            what: what.into(),
            tmp,
            child,
            stderr,
            out,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }

    /// Waits (at most 120 s) for `ready`, the phase to interrupt.
    fn wait_for(&mut self, phase: &str, mut ready: impl FnMut(&Self) -> bool) {
        let got = common::wait_until(Duration::from_secs(120), || ready(self));
        if !got {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        assert!(
            got,
            "{}: never reached {phase}: {}",
            self.what,
            self.stderr()
        );
    }

    /// (env, entry) of every result stored so far.
    fn stored(&self) -> Vec<(String, i64)> {
        let path = self.out.path().join("results.db");
        if !path.exists() {
            return Vec::new();
        }
        let Ok(db) = rusqlite::Connection::open(path) else {
            return Vec::new();
        };
        let Ok(mut q) = db.prepare("SELECT env, entry FROM runs WHERE doc IS NOT NULL") else {
            return Vec::new();
        };
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map(|rows| rows.flatten().collect())
            .unwrap_or_default()
    }

    /// Ctrl-C: the run ends within 30 s with exit code 130 and leaves
    /// nothing in its TMPDIR and no QEMU whose command line has its TMPDIR
    /// (a transient domain's files are there) or `marker`. The run's stderr.
    fn ctrl_c(mut self, marker: Option<&str>) -> String {
        let sent = Instant::now();
        let ended =
            common::signal_and_wait(&mut self.child, &[libc::SIGINT], Duration::from_secs(30));
        let status = self.child.wait().unwrap();
        let err = self.stderr();
        // Where it was: its last progress line before the interrupt's.
        let last: Vec<&str> = err.lines().rev().take(3).collect();
        eprintln!(
            "{}: ended {:.1} s after Ctrl-C; its last lines: {last:?}",
            self.what,
            sent.elapsed().as_secs_f64()
        );
        assert!(
            ended,
            "{}: still running 30 s after Ctrl-C: {err}",
            self.what
        );
        assert_eq!(status.code(), Some(130), "{}: {err}", self.what);
        let tmp = self.tmp.path().display().to_string();
        assert!(
            common::wait_until(Duration::from_secs(5), || qemu_with(&tmp).is_empty()
                && marker.is_none_or(|m| qemu_with(m).is_empty())),
            "{}: QEMU left running: {:?} {:?}",
            self.what,
            qemu_with(&tmp),
            marker.map(qemu_with)
        );
        let left = leftovers(self.tmp.path());
        assert!(left.is_empty(), "{}: left {left:?}: {err}", self.what);
        err
    }
}

/// QEMU processes whose command line has `marker`.
fn qemu_with(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains("qemu-system-") && cmdline.contains(marker) {
            out.push(pid);
        }
    }
    out
}

/// A suite of a short entry and a long one: once the short one's result
/// is stored, the long one runs in the environment (it runs both entries
/// back to back, before the host runs the second).
fn short_then_long(dir: &Path) -> String {
    let suite = dir.join("suite.toml");
    std::fs::write(
        &suite,
        "[[run]]\nworkload = \"cpu\"\ncpu_max_prime = 2000\nevents = 20\n\n\
         [[run]]\nworkload = \"cpu\"\ncpu_max_prime = 2000\ntime = 30\n",
    )
    .unwrap();
    suite.display().to_string()
}

/// Ctrl-C while a transient domain runs the workload, and while the
/// second transient domain of `reboot=each-run` boots between runs: exit
/// 130 within 30 s, libvirt's domains as before, no file, no QEMU.
#[test]
fn ctrl_c_while_a_transient_domain_measures_or_reboots_leaves_nothing() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let before = domains();
    let suites = tempfile::tempdir().unwrap();
    let suite = short_then_long(suites.path());
    let env = "libvirt:vcpus=1,memory=256m,disk=64m,net=none,name=lv";

    let mut run = Interruptible::start(
        "transient, measuring",
        &[
            "compare", "--suite", &suite, "--env", env, "--repeat", "1", "--out", "OUT",
        ],
    );
    run.wait_for("the second entry", |run| {
        run.stored().iter().any(|(e, i)| e == "lv" && *i == 0)
    });
    // The long entry runs in the guest now.
    std::thread::sleep(Duration::from_millis(500));
    run.ctrl_c(None);
    assert_eq!(domains(), before);

    let each = format!("{env},reboot=each-run");
    let mut run = Interruptible::start(
        "transient, reboot=each-run, the second boot",
        &[
            "compare",
            "--env",
            &each,
            "--repeat",
            "2",
            "--out",
            "OUT",
            "cpu",
            "--events=20",
        ],
    );
    let mut first = None;
    run.wait_for("the second domain", |_| {
        let new: Vec<String> = domains()
            .into_iter()
            .filter(|d| !before.contains(d))
            .collect();
        match (&first, new.first()) {
            (None, Some(d)) => {
                first = Some(d.clone());
                false
            }
            (Some(f), Some(d)) => d != f,
            _ => false,
        }
    });
    run.ctrl_c(None);
    assert_eq!(domains(), before);
}

/// Ctrl-C in an existing domain (`domain=`, with `snapshot=`) that
/// virtperf started: while the workload runs, and between the runs of
/// `reboot=each-run` (the guest powering off, the revert, the second
/// start). Each time: exit 130 within 30 s, the domain shut off again and
/// as it was (its definition, its snapshots, its directory), no file in
/// the TMPDIR, no QEMU.
#[test]
fn ctrl_c_in_an_existing_domain_shuts_it_off_unchanged() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    if !common::succeeds(&["qemu-img", "--version"]) {
        skip("qemu-img is missing (apt-get install qemu-utils): a snapshot needs a qcow2 disk");
        return;
    }
    let dom = TestDomain::define_with("ctrlc", 1, true, true);
    let (ok, out) = virsh(&["snapshot-create-as", &dom.name, "base"]);
    assert!(ok, "{out}");
    let snapshots = || virsh(&["snapshot-list", "--name", &dom.name]).1;
    let defined = || virsh(&["dumpxml", "--inactive", &dom.name]).1;
    // Its console log is the domain's own (it is made when it runs).
    let files = || {
        let mut f = common::entries(dom.dir.path());
        f.retain(|n| n != "console.log");
        f.sort();
        f
    };
    let (xml, snaps, dir) = (defined(), snapshots(), files());
    let before = domains();
    let unchanged = |what: &str| {
        assert_eq!(dom.state(), "shut off", "{what}");
        assert_eq!(domains(), before, "{what}");
        assert_eq!(defined(), xml, "{what}");
        assert_eq!(snapshots(), snaps, "{what}");
        assert_eq!(files(), dir, "{what}");
    };
    let suites = tempfile::tempdir().unwrap();
    let suite = short_then_long(suites.path());
    let env = format!("libvirt:domain={},snapshot=base,name=dom", dom.name);

    let what = "domain=, measuring";
    let mut run = Interruptible::start(
        what,
        &[
            "compare", "--suite", &suite, "--env", &env, "--repeat", "1", "--out", "OUT",
        ],
    );
    run.wait_for("the second entry", |run| {
        run.stored().iter().any(|(e, i)| e == "dom" && *i == 0)
    });
    std::thread::sleep(Duration::from_millis(500));
    run.ctrl_c(Some(&dom.name));
    unchanged(what);

    let what = "domain=, reboot=each-run, between runs";
    let each = format!("{env},reboot=each-run");
    let mut run = Interruptible::start(
        what,
        &[
            "compare",
            "--env",
            &each,
            "--repeat",
            "2",
            "--out",
            "OUT",
            "cpu",
            "--events=20",
        ],
    );
    run.wait_for("the first result", |run| {
        run.stored().iter().any(|(e, _)| e == "dom")
    });
    run.ctrl_c(Some(&dom.name));
    unchanged(what);
}

/// A domain reached over its network whose address libvirt never reports
/// (a user-mode NIC: no DHCP lease libvirt sees, no guest agent; the guest
/// is a BIOS with nothing to boot): refused after timeout= with the fix,
/// and the domain virtperf started is shut off again. The success path
/// (ssh to the reported address) is
/// `a_domain_reached_over_ssh_on_its_libvirt_network_is_measured_and_shut_down`.
#[test]
fn a_domain_whose_address_never_shows_is_refused_after_the_timeout() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let name = format!("virtperf-test-noaddr-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("domain.xml");
    std::fs::write(
        &file,
        format!(
            "<domain type='qemu'><name>{name}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>\
             <os><type arch='x86_64' machine='q35'>hvm</type></os>\
             <devices><interface type='user'><model type='virtio'/></interface>\
             <memballoon model='none'/></devices></domain>"
        ),
    )
    .unwrap();
    let (ok, out) = virsh(&["define", &file.display().to_string()]);
    assert!(ok, "{out}");
    struct Undefine(String);
    impl Drop for Undefine {
        fn drop(&mut self) {
            let _ = virsh(&["destroy", &self.0]);
            let _ = virsh(&["undefine", &self.0]);
            remove_qemu_log(&self.0);
        }
    }
    let _undefine = Undefine(name.clone());
    let tmp = private_tmp();
    let t = Instant::now();
    virtperf()
        .env("TMPDIR", tmp.path())
        .args([
            "cpu",
            "--events=10",
            "--env",
            &format!("libvirt:domain={name},timeout=5"),
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("has no address libvirt reports within 5 s")
                .and(predicate::str::contains("virsh domifaddr"))
                .and(predicate::str::contains("timeout=")),
        );
    eprintln!("refused after {:.1} s", t.elapsed().as_secs_f64());
    assert!(t.elapsed() < Duration::from_secs(40), "{:?}", t.elapsed());
    assert_eq!(virsh(&["domstate", &name]).1.trim(), "shut off");
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
}

/// The shared libraries `binary` loads, as `ldd` lists them (none for a
/// static one).
fn libraries(binary: &Path) -> Vec<PathBuf> {
    let out = Command::new("ldd").arg(binary).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|w| w.starts_with('/'))
        .map(PathBuf::from)
        .collect()
}

/// The guest's init: busybox's applets, the NIC's and the power button's
/// drivers, acpid (`virsh shutdown` presses the ACPI power button), an
/// address by DHCP, which libvirt's dnsmasq leases and `virsh domifaddr`
/// reports, then sshd, a while later, as in a full guest's boot: the
/// driver must wait for it once the address shows.
const SSH_GUEST_INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do insmod "$m"; done
ip link set lo up
acpid -c /etc/acpi -l /dev/null
n=0; while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done
ip link set eth0 up
udhcpc -i eth0 -s /etc/udhcpc.script -q -n -t 60 -T 1 || poweroff -f
sleep 3
/usr/sbin/sshd -e
echo virtperf-test-guest-ready
while :; do sleep 3600; done
"#;

/// A guest of the kind people run, reached over its network: a libvirt
/// network of the test's own (a bridge in mode 'open', so libvirt adds no
/// firewall rules, with libvirt's dnsmasq for DHCP and one address reserved
/// for the guest's MAC; the guest gets no default route) and a persistent
/// TCG domain on it, with no agent socket, that boots this machine's kernel
/// with an initramfs built here: busybox (shell, DHCP client, acpid), sshd
/// with its libraries, a host key and the test's client key. On drop, or
/// `remove`, the domain is destroyed and undefined and the network
/// destroyed, with the files libvirt leaves named after them.
struct SshDomain {
    name: String,
    net: String,
    bridge: String,
    guest_ip: String,
    dir: tempfile::TempDir,
    removed: bool,
}

impl SshDomain {
    /// None (the reason printed) where a part is missing.
    fn define(tag: &str) -> Option<SshDomain> {
        let busybox = ["/usr/bin/busybox", "/bin/busybox"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.exists());
        let Some(busybox) = busybox else {
            skip("busybox is missing (apt-get install busybox-static): the ssh guest's shell, DHCP client and acpid");
            return None;
        };
        if !Path::new("/usr/sbin/dnsmasq").exists() {
            skip("dnsmasq is missing (apt-get install dnsmasq-base): libvirt's DHCP for the ssh guest's network");
            return None;
        }
        if !["/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen"]
            .iter()
            .all(|p| Path::new(p).exists())
        {
            skip("openssh-server or openssh-client is missing: the guest runs this machine's sshd");
            return None;
        }
        let id = std::process::id();
        let name = format!("virtperf-test-{tag}-{id}");
        let net = format!("virtperf-test-net-{tag}-{id}");
        let bridge = format!("vpt{}{}", &tag[..tag.len().min(3)], id % 1_000_000);
        // A /24 no route of this machine's touches.
        let (ok, routes) = run_out(Command::new("ip").args(["-4", "route"]));
        assert!(ok, "ip -4 route: {routes}");
        let third = (0..200u32)
            .map(|k| 16 + (id + k) % 200)
            .find(|n| !routes.contains(&format!("10.250.{n}.")))
            .expect("a free 10.250.N.0/24");
        let guest_ip = format!("10.250.{third}.10");
        let mac = format!("52:54:00:7e:{:02x}:{:02x}", (id >> 8) & 0xff, id & 0xff);
        let dir = tempfile::tempdir().unwrap();
        let d = SshDomain {
            name,
            net,
            bridge,
            guest_ip,
            dir,
            removed: false,
        };
        d.build_initramfs(busybox);
        let p = |n: &str| d.dir.path().join(n);
        std::fs::write(
            p("network.xml"),
            format!(
                "<network><name>{}</name><forward mode='open'/><bridge name='{}' stp='off' delay='0'/>\
                 <ip address='10.250.{third}.1' netmask='255.255.255.0'><dhcp>\
                 <range start='{}' end='10.250.{third}.20'/><host mac='{mac}' ip='{}'/></dhcp></ip></network>",
                d.net, d.bridge, d.guest_ip, d.guest_ip
            ),
        )
        .unwrap();
        let (ok, out) = virsh(&["net-create", &p("network.xml").display().to_string()]);
        assert!(ok, "net-create: {out}");
        let (kernel, _) = virtperf::env::qemu::initramfs::find_kernel().unwrap();
        std::fs::write(
            p("domain.xml"),
            format!(
                "<domain type='qemu'><name>{}</name><memory unit='MiB'>384</memory><vcpu>1</vcpu>\
                 <os><type arch='x86_64' machine='q35'>hvm</type><kernel>{}</kernel><initrd>{}</initrd>\
                 <cmdline>console=ttyS0 panic=-1 quiet</cmdline></os><features><acpi/></features><cpu mode='maximum'/>\
                 <on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>\
                 <devices><interface type='network'><source network='{}'/><mac address='{mac}'/><model type='virtio'/></interface>\
                 <serial type='file'><source path='{}'/><target port='0'/></serial><memballoon model='none'/></devices></domain>",
                d.name,
                kernel.display(),
                p("initramfs.cpio").display(),
                d.net,
                p("console.log").display(),
            ),
        )
        .unwrap();
        let (ok, out) = virsh(&["define", &p("domain.xml").display().to_string()]);
        assert!(ok, "define: {out}");
        Some(d)
    }

    /// The guest's initramfs, with its ssh keys and known_hosts beside it.
    fn build_initramfs(&self, busybox: &Path) {
        use std::os::unix::fs::PermissionsExt;
        use virtperf::env::qemu::initramfs::{find_kernel, read_module, resolve, Cpio};
        let d = self.dir.path();
        // QEMU runs as libvirt-qemu: it passes through the directory.
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o711)).unwrap();
        common::sshhost::keygen(&d.join("host_key"));
        common::sshhost::keygen(&d.join("id"));
        let read = |n: &str| std::fs::read(d.join(n)).unwrap();
        let host_pub = String::from_utf8(read("host_key.pub")).unwrap();
        std::fs::write(
            d.join("known_hosts"),
            format!("{} {host_pub}", self.guest_ip),
        )
        .unwrap();
        // Each file by its path in the guest, with its mode.
        let mut files: Vec<(String, u32, Vec<u8>)> = vec![
            ("init".into(), 0o755, SSH_GUEST_INIT.into()),
            ("bin/busybox".into(), 0o755, std::fs::read(busybox).unwrap()),
            ("usr/sbin/sshd".into(), 0o755, std::fs::read("/usr/sbin/sshd").unwrap()),
            (
                "etc/passwd".into(),
                0o644,
                b"root:x:0:0:root:/root:/bin/sh\nsshd:x:100:65534::/run/sshd:/bin/false\n".to_vec(),
            ),
            ("etc/group".into(), 0o644, b"root:x:0:\nnogroup:x:65534:\n".to_vec()),
            (
                "etc/ssh/sshd_config".into(),
                0o644,
                b"HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n\
                  PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                  StrictModes no\nUseDNS no\nPidFile /run/sshd.pid\n"
                    .to_vec(),
            ),
            ("etc/ssh/ssh_host_ed25519_key".into(), 0o600, read("host_key")),
            ("root/.ssh/authorized_keys".into(), 0o600, read("id.pub")),
            (
                "etc/udhcpc.script".into(),
                0o755,
                b"#!/bin/sh\ncase \"$1\" in bound|renew) ifconfig \"$interface\" \"$ip\" netmask \"$subnet\" up ;; esac\n"
                    .to_vec(),
            ),
            // acpid runs the file named after the event: the power button.
            (
                "etc/acpi/PWRF/00000080".into(),
                0o755,
                b"#!/bin/sh\nsync\npoweroff -f\n".to_vec(),
            ),
        ];
        for bin in [busybox, Path::new("/usr/sbin/sshd")] {
            for lib in libraries(bin) {
                let at = lib
                    .display()
                    .to_string()
                    .trim_start_matches('/')
                    .to_string();
                if !files.iter().any(|f| f.0 == at) {
                    files.push((at, 0o755, std::fs::read(&lib).unwrap()));
                }
            }
        }
        let (_, modules) = find_kernel().unwrap();
        let dep = std::fs::read_to_string(modules.join("modules.dep")).unwrap();
        let mut order = String::new();
        for (i, rel) in resolve(&dep, &["virtio_pci", "virtio_net", "button", "evdev"])
            .iter()
            .enumerate()
        {
            let at = format!("modules/{i:02}.ko");
            files.push((at.clone(), 0o644, read_module(&modules.join(rel)).unwrap()));
            order.push_str(&format!("/{at}\n"));
        }
        files.push(("modules.order".into(), 0o644, order.into_bytes()));
        // Every directory before what it holds.
        let mut dirs: std::collections::BTreeSet<String> = [
            "dev", "proc", "sys", "tmp", "var/tmp", "run/sshd", "bin", "sbin", "usr/bin",
            "usr/sbin",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        let wanted: Vec<String> = dirs
            .iter()
            .cloned()
            .chain(files.iter().map(|f| f.0.clone()))
            .collect();
        for path in &wanted {
            let mut p = Path::new(path.as_str());
            while let Some(parent) = p.parent().filter(|p| !p.as_os_str().is_empty()) {
                dirs.insert(parent.display().to_string());
                p = parent;
            }
        }
        let mut all: Vec<String> = dirs.into_iter().collect();
        all.sort_by_key(|d| d.matches('/').count());
        let mut cpio = Cpio::default();
        for dir in &all {
            cpio.dir(dir);
        }
        cpio.char_device("dev/console", 5, 1);
        for (path, mode, data) in &files {
            cpio.file(path, *mode, data);
        }
        std::fs::write(d.join("initramfs.cpio"), cpio.finish()).unwrap();
    }

    /// `--env` for it: reached over ssh as root with the test's key.
    fn spec(&self) -> String {
        let p = |n: &str| self.dir.path().join(n).display().to_string();
        format!(
            "libvirt:domain={},user=root,identity={},known-hosts={}",
            self.name,
            p("id"),
            p("known_hosts")
        )
    }

    /// Runs cpu in it with `spec()` and `extra` options, as JSON; the
    /// guest's console with any failure.
    fn measure(&self, tmp: &Path, extra: &str) -> Value {
        let out = virtperf()
            .env("TMPDIR", tmp)
            .args(["cpu", "--events=200", "--json", "--env"])
            .arg(format!("{}{extra}", self.spec()))
            .timeout(Duration::from_secs(240))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}\nthe guest's console:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.console()
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["env"]["hypervisor"], "TCGTCGTCGTCG", "{}", doc["env"]);
        assert!(metric(&doc, "events_per_sec") > 0.0);
        doc
    }

    /// After a run virtperf started it for: the guest powered off on ACPI,
    /// nothing is left in `tmp`, and once removed nothing of it is left.
    fn shut_down_and_remove(mut self, tmp: &Path) {
        assert_eq!(self.state(), "shut off (shutdown)", "{}", self.console());
        assert!(leftovers(tmp).is_empty(), "{:?}", leftovers(tmp));
        self.remove();
        let left = self.left();
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    fn state(&self) -> String {
        virsh(&["domstate", "--reason", &self.name])
            .1
            .trim()
            .to_string()
    }

    fn console(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("console.log")).unwrap_or_default()
    }

    /// Destroys and undefines the domain, destroys the network and
    /// removes the files libvirt keeps for them (its dnsmasq's pid file
    /// and port directory, the domain's QEMU log).
    fn remove(&mut self) {
        self.removed = true;
        let _ = virsh(&["destroy", &self.name]);
        let _ = virsh(&["undefine", "--nvram", &self.name]);
        let _ = virsh(&["net-destroy", &self.net]);
        let _ = std::fs::remove_file(format!("/run/libvirt/network/{}.pid", self.net));
        let _ = std::fs::remove_dir_all(format!("/run/libvirt/network/{}", self.net));
        remove_qemu_log(&self.name);
    }

    /// What is left of it on this machine: the domain, the network, the
    /// bridge, a QEMU or dnsmasq process, a file of libvirt's named after
    /// one of them.
    fn left(&self) -> Vec<String> {
        let mut left = Vec::new();
        if domains().contains(&self.name) {
            left.push(format!("domain {}", self.name));
        }
        let (_, nets) = virsh(&["net-list", "--all", "--name"]);
        if nets.lines().any(|l| l.trim() == self.net) {
            left.push(format!("network {}", self.net));
        }
        if Path::new("/sys/class/net").join(&self.bridge).exists() {
            left.push(format!("bridge {}", self.bridge));
        }
        for pid in qemu_with(&self.name) {
            left.push(format!("QEMU {pid}"));
        }
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            if cmdline.contains("dnsmasq") && cmdline.contains(&self.net) {
                left.push(format!("dnsmasq {}", e.file_name().to_string_lossy()));
            }
        }
        let names = [&self.name, &self.net, &self.bridge];
        for root in [
            "/run/libvirt",
            "/var/lib/libvirt",
            "/var/log/libvirt",
            "/etc/libvirt",
        ] {
            walk(Path::new(root), 4, &mut |p| {
                let n = p.file_name().unwrap_or_default().to_string_lossy();
                if names.iter().any(|m| n.contains(m.as_str())) {
                    left.push(p.display().to_string());
                }
            });
        }
        left
    }
}

/// Calls `f` with every path under `dir`, `depth` levels down.
fn walk(dir: &Path, depth: usize, f: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        f(&p);
        if depth > 1 && e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(&p, depth - 1, f);
        }
    }
}

impl Drop for SshDomain {
    fn drop(&mut self) {
        if !self.removed {
            self.remove();
        }
    }
}

/// Runs a command: whether it succeeded, and its output.
fn run_out(cmd: &mut Command) -> (bool, String) {
    match cmd.stdin(Stdio::null()).output() {
        Ok(o) => (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (false, e.to_string()),
    }
}

/// Issue 29's `domain=` over ssh: a domain with no agent socket, on a
/// libvirt network that leases its address, is started, reached over ssh
/// at the address `virsh domifaddr` reports (its host key checked against
/// known-hosts=), measured, and shut down on ACPI; once the test has
/// undefined it and destroyed its network, nothing of either is left.
#[test]
fn a_domain_reached_over_ssh_on_its_libvirt_network_is_measured_and_shut_down() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let Some(dom) = SshDomain::define("ssh") else {
        return;
    };
    assert!(dom.state().starts_with("shut off"), "{}", dom.state());
    let tmp = private_tmp();
    let t = Instant::now();
    let doc = dom.measure(tmp.path(), "");
    eprintln!("measured over ssh in {:.1} s", t.elapsed().as_secs_f64());
    let e = &doc["env"];
    assert_eq!(e["kind"], "libvirt");
    assert_eq!(e["cpus"], 1);
    assert_eq!(e["settings"]["net"], "virtio (network)", "{e}");
    assert_eq!(e["settings"]["vcpus"], "1");
    dom.shut_down_and_remove(tmp.path());
}

/// `uri=` beyond this machine's system daemon: a remote `qemu+ssh://`
/// connection (through an sshd of the test's own in a network namespace,
/// whose sessions reach this machine's libvirtd) runs the ssh guest, as
/// `domain=` must on a remote libvirt; and `qemu:///session` (root's own
/// session daemon, which libvirt starts on demand) runs a transient domain.
/// Each records its URI and leaves no domain behind.
#[test]
fn a_remote_qemu_ssh_uri_and_the_session_uri_are_used() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let Some(ssh) = common::sshhost::SshHost::start() else {
        return;
    };
    let Some(dom) = SshDomain::define("rem") else {
        return;
    };
    // libvirt's own ssh transport, with the test's key; the sshd's host key
    // is the test's, made a moment ago.
    let uri = format!(
        "qemu+ssh://root@{}:2222/system?keyfile={}&no_verify=1&no_tty=1",
        ssh.addr,
        ssh.dir.path().join("id").display()
    );
    let tmp = private_tmp();
    let doc = dom.measure(tmp.path(), &format!(",uri={uri}"));
    assert_eq!(
        doc["env"]["settings"]["uri"],
        uri.as_str(),
        "{}",
        doc["env"]
    );
    // Started through the remote connection, and shut down through it.
    dom.shut_down_and_remove(tmp.path());
    drop(ssh);

    let session = |args: &[&str]| {
        let out = Command::new("virsh")
            .args(["-c", "qemu:///session"])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let before = session(&["list", "--all", "--name"]);
    let doc = docs(
        tmp.path(),
        &[
            "cpu",
            "--events=50",
            "--env",
            "libvirt:uri=qemu:///session,vcpus=1,memory=512m,net=none",
        ],
    );
    assert_eq!(doc[0]["env"]["settings"]["uri"], "qemu:///session");
    assert!(metric(&doc[0], "events_per_sec") > 0.0);
    assert_eq!(session(&["list", "--all", "--name"]), before);
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
}

/// Network tests in `domain=` reached over ssh: the peer runs on the host
/// and the guest dials this host's address on their libvirt network, or
/// (`--net-server=env`) the server runs in the guest on its address and
/// the host dials it. A domain reached over its agent socket is refused
/// before it starts, naming the fix.
#[test]
fn a_network_test_in_a_domain_reached_over_ssh_crosses_its_libvirt_network() {
    let _serial = serial();
    let Some(_daemon) = Daemon::get() else {
        return;
    };
    let Some(mut dom) = SshDomain::define("net") else {
        return;
    };
    let host_ip = format!("{}.1", dom.guest_ip.rsplit_once('.').unwrap().0);
    let tmp = private_tmp();
    for (test, inside) in [("tcp_rr", false), ("udp_rr", true)] {
        let which = format!("--net-test={test}");
        let mut args = vec!["net", &which, "--time=1", "--json"];
        if inside {
            args.push("--net-server=env");
        }
        let spec = dom.spec();
        args.extend(["--env", &spec]);
        let t = Instant::now();
        let out = virtperf()
            .env("TMPDIR", tmp.path())
            .args(&args)
            .timeout(Duration::from_secs(240))
            .output()
            .unwrap();
        eprintln!(
            "{test} (server inside: {inside}) in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        assert!(
            out.status.success(),
            "{test}: {}\nthe guest's console:\n{}",
            String::from_utf8_lossy(&out.stderr),
            dom.console()
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let (path, server) = if inside {
            (
                format!("libvirt network (host {host_ip} to guest {})", dom.guest_ip),
                format!("{}:12866", dom.guest_ip),
            )
        } else {
            (
                format!("libvirt network (guest {} to host {host_ip})", dom.guest_ip),
                format!("{host_ip}:"),
            )
        };
        assert_eq!(doc["env"]["net_path"], path.as_str(), "{doc}");
        let dialled = doc["details"]["server"].as_str().unwrap_or_default();
        assert!(dialled.starts_with(&server), "{test}: dialled {dialled}");
        assert!(
            metric(&doc, &format!("{test}_trans_per_sec")) > 0.0,
            "{doc}"
        );
        assert_eq!(dom.state(), "shut off (shutdown)");
    }
    // Reached over its socket: refused before it starts.
    let closed = TestDomain::define("netsock", 1, true);
    virtperf()
        .env("TMPDIR", tmp.path())
        .args([
            "net",
            "--time=1",
            "--env",
            &format!("libvirt:domain={}", closed.name),
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("reached over its agent socket")
                .and(predicate::str::contains("domifaddr"))
                .and(predicate::str::contains("leave domain= out")),
        );
    assert_eq!(closed.state(), "shut off");
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
    dom.remove();
    let left = dom.left();
    assert!(left.is_empty(), "left behind: {left:?}");
}
