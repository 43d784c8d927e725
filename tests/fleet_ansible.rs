//! Fleets with the real thing: deploy/ansible/virtperf.yml run by real
//! ansible-core (scripts/setup-ansible) against sshd in network namespaces
//! made by the test (tests/fleet_support), and `group:` of two ssh hosts.
//! Without root, sshd or ansible-core the tests say why they skip; under
//! CI=true a skip is a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

mod common;
mod fleet_support;
use common::{output_ok, skip, virtperf};
use fleet_support::{leftovers_in, Fleet};

/// The tests make namespaces and run several virtperf at once on a small
/// machine: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `ansible-playbook` from scripts/setup-ansible's virtual environment.
fn ansible_playbook() -> Option<PathBuf> {
    let venv = std::env::var_os("VIRTPERF_ANSIBLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/ansible-venv"));
    let p = venv.join("bin/ansible-playbook");
    let ok = Command::new(&p)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(p)
}

/// What a fleet test needs, or why it skips.
fn ready(names: &[&str], with_ansible: bool) -> Option<(Fleet, Option<PathBuf>)> {
    if let Some(why) = fleet_support::missing() {
        skip(&why);
        return None;
    }
    let ap = if with_ansible {
        match ansible_playbook() {
            Some(p) => Some(p),
            None => {
                skip("ansible-core is missing: run bash scripts/setup-ansible");
                return None;
            }
        }
    } else {
        None
    };
    Some((Fleet::start(names), ap))
}

fn binary() -> PathBuf {
    assert_cmd::cargo::cargo_bin("virtperf")
}

/// One inventory line.
struct Entry {
    name: String,
    addr: String,
    port: u16,
    key: String,
    remote_base: PathBuf,
    extra: String,
}

impl Entry {
    fn host(fleet: &Fleet, i: usize) -> Entry {
        let h = &fleet.hosts[i];
        Entry {
            name: h.name.clone(),
            addr: h.addr.clone(),
            port: h.port,
            key: fleet.path("id"),
            remote_base: h.remote_tmp.clone(),
            extra: String::new(),
        }
    }
}

/// An INI inventory of `entries` in group `virtperf`.
fn inventory(fleet: &Fleet, entries: &[Entry]) -> PathBuf {
    let mut ini = String::from("[virtperf]\n");
    for e in entries {
        ini.push_str(&format!(
            "{} ansible_host={} ansible_port={} ansible_ssh_private_key_file={} virtperf_remote_base={} {}\n",
            e.name,
            e.addr,
            e.port,
            e.key,
            e.remote_base.display(),
            e.extra
        ));
    }
    // The targets are this machine, whose root login may put a version
    // manager's python3 first in PATH: name the system's.
    ini.push_str(&format!(
        "\n[virtperf:vars]\nansible_user=root\nansible_python_interpreter=/usr/bin/python3\n\
         ansible_ssh_common_args='-o UserKnownHostsFile={} -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes'\n\
         virtperf_compare_args={}\n",
        fleet.path("known_hosts"),
        short_compare()
    ));
    let path = fleet.dir.path().join("inventory.ini");
    std::fs::write(&path, ini).unwrap();
    path
}

/// A comparison short enough for a test: host against host, two rounds of
/// a 0.2 s cpu run.
fn short_compare() -> Value {
    json!([
        "--env",
        "host:name=host-b",
        "--repeat",
        "2",
        "cpu",
        "--time=0.2",
        "--cpu-max-prime=2000"
    ])
}

/// Runs the playbook over `inv` with extra variables `vars` (merged over the
/// test's defaults; the comparison is in the inventory, so that a host can
/// have its own); returns its output and the fetch directory.
fn playbook(fleet: &Fleet, ap: &Path, inv: &Path, vars: Value) -> (Output, PathBuf) {
    let fetch = fleet.dir.path().join("fetched");
    let mut all = json!({
        "virtperf_binary": binary(),
        "virtperf_fetch_dir": fetch,
        "virtperf_hosts": "virtperf",
        // Starting the runs takes a few seconds on a loaded 2-CPU machine.
        "virtperf_start_delay": 12,
        "virtperf_poll": 1,
        "virtperf_timeout": 300,
    });
    for (k, v) in vars.as_object().unwrap() {
        all[k] = v.clone();
    }
    let vars_file = fleet.dir.path().join("vars.json");
    std::fs::write(&vars_file, all.to_string()).unwrap();
    let home = fleet.dir.path().join("ah");
    let started = Instant::now();
    let out = Command::new(ap)
        .arg("-i")
        .arg(inv)
        .arg("-e")
        .arg(format!("@{}", vars_file.display()))
        .arg(repo().join("deploy/ansible/virtperf.yml"))
        .env("ANSIBLE_CONFIG", repo().join("deploy/ansible/ansible.cfg"))
        // The controller's own files (ssh control sockets, local temporary
        // files) stay in the test's directory.
        .env("ANSIBLE_HOME", &home)
        .env("ANSIBLE_LOCAL_TEMP", home.join("tmp"))
        .env("ANSIBLE_SSH_CONTROL_PATH_DIR", home.join("cp"))
        .env("ANSIBLE_NOCOLOR", "1")
        // Seconds before a host that does not answer is given up.
        .env("ANSIBLE_TIMEOUT", "6")
        .env("LC_ALL", "C.UTF-8")
        .current_dir(fleet.dir.path())
        .output()
        .expect("running ansible-playbook");
    eprintln!(
        "ansible-playbook took {:.1} s, exit {:?}",
        started.elapsed().as_secs_f64(),
        out.status.code()
    );
    (out, fetch)
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The lines of the playbook's output under task `task` (up to the next task).
fn task_section<'a>(all: &'a str, task: &str) -> &'a str {
    let head = format!("TASK [{task}]");
    let Some(start) = all.find(&head) else {
        return "";
    };
    let rest = &all[start + head.len()..];
    let end = rest
        .find("TASK [")
        .or_else(|| rest.find("PLAY RECAP"))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The results stored in a fetched store, (env, round, doc) in run order.
fn stored_runs(dir: &Path) -> Vec<(String, usize, Value)> {
    let store = virtperf::store::Store::open_read_only(dir).unwrap();
    let cmp = store.latest().unwrap().expect("a comparison in the store");
    assert!(cmp.finished, "{}: the comparison finished", dir.display());
    store
        .runs(cmp.id)
        .unwrap()
        .into_iter()
        .map(|r| {
            let doc = r
                .doc
                .unwrap_or_else(|| panic!("{}: run failed: {:?}", dir.display(), r.error));
            (r.env, r.round, serde_json::to_value(doc).unwrap())
        })
        .collect()
}

fn epoch_of(rfc3339: &str) -> f64 {
    // "2026-11-23T14:00:00.123Z": seconds since the epoch, by hand (UTC only).
    let (date, time) = rfc3339.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (y, m, day) = (d[0], d[1], d[2]);
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let t: Vec<f64> = time.split(':').map(|x| x.parse().unwrap()).collect();
    days as f64 * 86400.0 + t[0] * 3600.0 + t[1] * 60.0 + t[2]
}

fn now_epoch() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// What the test machine shows of a fleet test's temporary directories.
fn assert_clean(fleet: &Fleet) {
    for (i, h) in fleet.hosts.iter().enumerate() {
        let left = fleet.leftovers(i);
        assert!(left.is_empty(), "{} left {left:?}", h.name);
    }
}

#[test]
fn playbook_runs_three_hosts_together_and_reports_the_fleet() {
    let _serial = serial();
    let Some((fleet, Some(ap))) = ready(&["vpf-a", "vpf-b", "vpf-c"], true) else {
        return;
    };
    let entries: Vec<Entry> = (0..3).map(|i| Entry::host(&fleet, i)).collect();
    let inv = inventory(&fleet, &entries);
    let before = now_epoch();
    let (out, fetch) = playbook(&fleet, &ap, &inv, json!({}));
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    // Every host's store is home, one directory per inventory name.
    let mut targets = Vec::new();
    for h in &fleet.hosts {
        let dir = fetch.join(&h.name);
        assert!(dir.join("results.db").is_file(), "{}: {all}", h.name);
        let runs = stored_runs(&dir);
        assert_eq!(runs.len(), 4, "{}: host and host-b, 2 rounds", h.name);
        // The first run of each host waited for the common start.
        let first = &runs[0].2;
        let start = &first["env"]["start_at"];
        let target = start["target"].as_str().expect("env.start_at.target");
        targets.push(target.to_string());
        let late = start["late_s"].as_f64().unwrap();
        assert!(
            (0.0..2.0).contains(&late),
            "{}: began {late} s late",
            h.name
        );
        let t = epoch_of(target);
        assert!(t > before, "the start was agreed after the playbook began");
        // No run of a host began before the common start.
        for (_, _, doc) in &runs {
            let began = epoch_of(doc["started_at"].as_str().unwrap());
            assert!(
                began >= t - 0.001,
                "{}: a run began before the start",
                h.name
            );
        }
    }
    assert!(
        targets.windows(2).all(|w| w[0] == w[1]),
        "one common start: {targets:?}"
    );
    // The fleet report over the three stores lists them all.
    let report = std::fs::read_to_string(fetch.join("fleet-report.txt")).unwrap();
    println!("{report}");
    assert!(report.contains("3 hosts: vpf-a, vpf-b, vpf-c."), "{report}");
    for h in &fleet.hosts {
        assert!(
            report.contains(&format!("=== Host {} ===", h.name)),
            "{report}"
        );
    }
    // The fleet view: host-b against host, with each host's figure.
    assert!(report.contains("Fleet view"), "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.contains("vpf-a ") && l.contains("vpf-b ") && l.contains("vpf-c ")),
        "{report}"
    );
    assert!(!report.contains("FAILED"), "{report}");
    assert!(fetch.join("fleet-report.html").is_file());
    // The playbook showed it too.
    assert!(all.contains("TASK [Show the fleet report]"), "{all}");
    // Nothing left on the targets: the run's directory, Ansible's temporary
    // and async files all lived in each host's own directory.
    assert_clean(&fleet);
}

#[test]
fn an_unreachable_host_fails_while_the_others_finish_and_bad_hosts_are_refused() {
    let _serial = serial();
    let Some((mut fleet, Some(ap))) = ready(&["vpf-a", "vpf-b", "vpf-c", "vpf-d", "vpf-e"], true)
    else {
        return;
    };
    // vpf-c: its link is taken down before the run.
    fleet.link_down(2);
    let mut entries: Vec<Entry> = (0..5).map(|i| Entry::host(&fleet, i)).collect();
    // vpf-d: reachable, but its run fails (a suite that does not exist).
    entries[3].extra = "virtperf_compare_args='[\"--suite\",\"no-such-suite\"]'".into();
    // vpf-e: its run goes on past virtperf_wait: the playbook stops it.
    entries[4].extra =
        "virtperf_wait=4 virtperf_compare_args='[\"--env\",\"host:name=b\",\"cpu\",\"--time=60\"]'"
            .into();
    // A host that claims aarch64: a second sshd in vpf-b's namespace whose
    // sessions find a `uname` printing aarch64 first in their PATH.
    let arm_tmp = fleet.dir.path().join("remote-vpf-arm");
    std::fs::create_dir(&arm_tmp).unwrap();
    let arm_addr = fleet.fake_arch_sshd(1, 2200, "aarch64", &arm_tmp);
    let host_pub = std::fs::read_to_string(fleet.path("host_key_1.pub")).unwrap();
    let known = std::fs::read_to_string(fleet.path("known_hosts")).unwrap();
    std::fs::write(
        fleet.path("known_hosts"),
        format!("{known}[{arm_addr}]:2200 {host_pub}"),
    )
    .unwrap();
    entries.push(Entry {
        name: "vpf-arm".into(),
        addr: arm_addr,
        port: 2200,
        key: fleet.path("id"),
        remote_base: arm_tmp.clone(),
        extra: String::new(),
    });
    // A key the hosts do not authorize (its own ssh connection: no reuse of
    // vpf-a's authenticated one).
    let wrong_tmp = fleet.dir.path().join("remote-vpf-wrongkey");
    std::fs::create_dir(&wrong_tmp).unwrap();
    entries.push(Entry {
        name: "vpf-wrongkey".into(),
        addr: fleet.hosts[0].addr.clone(),
        port: 22,
        key: fleet.path("wrong_id"),
        remote_base: wrong_tmp.clone(),
        extra: "ansible_ssh_args='-o ControlMaster=no -o BatchMode=yes'".into(),
    });
    // An address where nothing answers.
    let silent = fleet.silent_addr(0);
    let silent_tmp = fleet.dir.path().join("remote-vpf-silent");
    std::fs::create_dir(&silent_tmp).unwrap();
    entries.push(Entry {
        name: "vpf-silent".into(),
        addr: silent,
        port: 22,
        key: fleet.path("id"),
        remote_base: silent_tmp.clone(),
        extra: String::new(),
    });
    // A host named '..' (issue 24, item 14): its results directory on the
    // controller would be the fetch directory's parent, removed first.
    let dots_tmp = fleet.dir.path().join("remote-dots");
    std::fs::create_dir(&dots_tmp).unwrap();
    entries.push(Entry {
        name: "..".into(),
        addr: fleet.silent_addr(0),
        port: 22,
        key: fleet.path("id"),
        remote_base: dots_tmp.clone(),
        extra: String::new(),
    });
    let inv = inventory(&fleet, &entries);
    let (out, fetch) = playbook(&fleet, &ap, &inv, json!({}));
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("the host name '..' names the directory its results go to"),
        "{all}"
    );
    // The fetch directory's parent (the test's own) is still there.
    assert!(Path::new(&fleet.path("inventory.ini")).is_file());
    assert!(dots_tmp.is_dir() && leftovers_in(&dots_tmp).is_empty());
    let report = std::fs::read_to_string(fetch.join("fleet-report.txt")).unwrap();
    println!("{report}");
    // The two good hosts finished and are in the report.
    assert!(report.contains("2 hosts: vpf-a, vpf-b."), "{report}");
    for name in ["vpf-a", "vpf-b"] {
        assert!(
            fetch.join(name).join("results.db").is_file(),
            "{name}: {all}"
        );
        assert_eq!(stored_runs(&fetch.join(name)).len(), 4);
        assert!(report.contains(&format!("=== Host {name} ===")), "{report}");
        assert!(!report.contains(&format!("{name}: FAILED")), "{report}");
    }
    // Each bad one is reported as failed, saying why.
    let failed = |name: &str| {
        report
            .lines()
            .find(|l| l.starts_with(&format!("{name}: FAILED")))
            .unwrap_or_else(|| panic!("{name} not reported as failed:\n{report}\n{all}"))
            .to_string()
    };
    let c = failed("vpf-c");
    assert!(
        c.contains("unreachable") && c.contains("No route to host"),
        "{c}"
    );
    let w = failed("vpf-wrongkey");
    assert!(
        w.contains("unreachable") && w.contains("Permission denied"),
        "{w}"
    );
    let s = failed("vpf-silent");
    assert!(s.contains("unreachable") && s.contains("timed out"), "{s}");
    let d = failed("vpf-d");
    assert!(
        d.contains("virtperf failed on vpf-d (exit 2)") && d.contains("no-such-suite"),
        "{d}"
    );
    let e = failed("vpf-e");
    assert!(
        e.contains("virtperf still ran after 4 s (virtperf_wait): it was stopped"),
        "{e}"
    );
    // Stopped: no process runs a binary from vpf-e's directory.
    let remote_e = fleet.hosts[4].remote_tmp.display().to_string();
    let running: Vec<_> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|p| std::fs::read_link(p.ok()?.path().join("exe")).ok())
        .filter(|exe| exe.display().to_string().starts_with(&remote_e))
        .collect();
    assert!(running.is_empty(), "{running:?}");
    let a = failed("vpf-arm");
    assert!(
        a.contains("vpf-arm is aarch64, not x86_64") && a.contains("nothing was copied"),
        "{a}"
    );
    assert!(all.contains("virtperf fleet: 7 of 9 hosts failed"), "{all}");
    for name in ["vpf-c", "vpf-wrongkey", "vpf-silent", "vpf-arm"] {
        assert!(!fetch.join(name).exists(), "{name}");
        // Refused before anything was made or copied there.
        for task in ["Make a private temporary directory", "Copy the binary"] {
            let section = task_section(&all, task);
            assert!(
                !section.contains(&format!("[{name}]")),
                "{name} reached {task}: {section}"
            );
        }
    }
    let copied = task_section(&all, "Copy the binary");
    assert!(
        ["vpf-a", "vpf-b", "vpf-d"]
            .iter()
            .all(|h| copied.contains(&format!("[{h}]"))),
        "{all}"
    );
    assert_clean(&fleet);
    for d in [&arm_tmp, &wrong_tmp, &silent_tmp] {
        assert!(leftovers_in(d).is_empty(), "{:?}", leftovers_in(d));
    }
}

#[test]
fn a_start_time_in_the_past_is_refused_before_any_host_is_touched() {
    let _serial = serial();
    let Some((fleet, Some(ap))) = ready(&["vpf-a"], true) else {
        return;
    };
    let inv = inventory(&fleet, &[Entry::host(&fleet, 0)]);
    let past = (now_epoch() - 120.0).floor();
    let (out, fetch) = playbook(
        &fleet,
        &ap,
        &inv,
        json!({"virtperf_start_at": format!("{past}")}),
    );
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("s in the past by this controller's clock"),
        "{all}"
    );
    assert!(
        !all.contains("TASK [Ask the host its architecture"),
        "{all}"
    );
    assert!(!fetch.join("vpf-a").exists());
    // A time that is no time at all.
    let (out, _) = playbook(&fleet, &ap, &inv, json!({"virtperf_start_at": "tomorrow"}));
    let all = text(&out);
    assert!(!out.status.success());
    assert!(
        all.contains("is neither epoch seconds nor RFC 3339"),
        "{all}"
    );
    assert_clean(&fleet);
    // The binary on its own refuses it too (exit 2, naming the option).
    let out = virtperf()
        .args([
            "compare",
            "--start-at",
            &format!("{past}"),
            "--env",
            "host",
            "cpu",
            "--time=0.1",
        ])
        .current_dir(fleet.dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--start-at") && err.contains("already past"),
        "{err}"
    );
    assert!(!fleet.dir.path().join("virtperf-results").exists());
}

#[test]
fn a_group_of_two_ssh_hosts_starts_together() {
    let _serial = serial();
    let Some((fleet, _)) = ready(&["vpf-g1", "vpf-g2"], false) else {
        return;
    };
    let group = format!("group:{}+{}", fleet.spec(0, "g1"), fleet.spec(1, "g2"));
    let out = output_ok(
        virtperf()
            .args([
                "cpu",
                "--time=0.5",
                "--cpu-max-prime=2000",
                "--json",
                "--env",
                &group,
            ])
            .timeout(Duration::from_secs(120)),
    );
    let docs: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 3, "two members and their sum");
    assert_eq!(docs[0]["env"]["name"], "g1");
    assert_eq!(docs[1]["env"]["name"], "g2");
    assert!(docs.iter().take(2).all(|d| d["env"]["kind"] == "ssh"));
    let t: Vec<f64> = docs[..2]
        .iter()
        .map(|d| epoch_of(d["started_at"].as_str().unwrap()))
        .collect();
    let gap = (t[0] - t[1]).abs();
    eprintln!("group members' starts {:.0} ms apart", gap * 1000.0);
    assert!(gap <= 0.050, "members started {gap:.3} s apart");
    // The sum is the members' sum.
    let rate = |d: &Value| common::metric(d, "events_per_sec");
    let sum = rate(&docs[2]);
    assert!(
        (sum - rate(&docs[0]) - rate(&docs[1])).abs() <= 1e-6 * sum,
        "{sum}"
    );
    // Each remote side cleaned up in its own TMPDIR.
    assert_clean(&fleet);
}

#[test]
fn a_fleet_is_removed_when_a_test_panics() {
    let _serial = serial();
    if let Some(why) = fleet_support::missing() {
        skip(&why);
        return;
    }
    let made = std::sync::Mutex::new(None);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let fleet = Fleet::start(&["vpf-p"]);
        let h = &fleet.hosts[0];
        *made.lock().unwrap() = Some((h.ns.clone(), h.link.clone(), fleet.net.clone()));
        panic!("a test fails with its fleet up");
    }));
    assert!(caught.is_err());
    let (ns, link, net) = made.into_inner().unwrap().expect("the fleet was made");
    let out = |args: &[&str]| {
        let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(!out(&["ip", "netns", "list"]).contains(&ns), "{ns} is left");
    assert!(
        !out(&["ip", "-o", "link"]).contains(&link),
        "{link} is left"
    );
    assert!(
        !out(&["ip", "route"]).contains(&format!("{net}.")),
        "a route in {net}.0/24 is left"
    );
}

#[test]
fn playbook_writes_every_host_into_one_postgresql_store_with_the_password_in_a_file() {
    // virtperf_store: each host writes its comparison into one PostgreSQL
    // store as it measures (--out URL), the password reaching it only as a
    // 0600 file (--store-password-file), never on a command line; the
    // controller reports every host's comparison from that store.
    let _serial = serial();
    let Some((fleet, Some(ap))) = ready(&["vpf-p", "vpf-q"], true) else {
        return;
    };
    // The server listens on this machine's address on vpf-p's link; vpf-q
    // reaches it through its own.
    let gw = fleet.hosts[0].gateway.clone();
    for h in &fleet.hosts[1..] {
        let ok = Command::new("ip")
            .args(["-n", &h.ns, "route", "add", &format!("{gw}/32"), "via"])
            .arg(&h.gateway)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "a route from {} to {gw}", h.name);
    }
    let net = format!("{}.0/24", fleet.net);
    let Some(pg) = common::dbservers::Postgres::start_on(Some((&gw, &net))) else {
        skip("PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb)");
        return;
    };
    const SECRET: &str = "Zq7-fleet-store-secret";
    pg.psql(
        "postgres",
        &format!("ALTER USER sbtest PASSWORD '{SECRET}'"),
    );
    pg.psql("postgres", "CREATE DATABASE fleet OWNER sbtest");
    let url = format!("postgresql://sbtest@{gw}:{}/fleet", pg.port());
    let entries: Vec<Entry> = (0..2).map(|i| Entry::host(&fleet, i)).collect();
    let inv = inventory(&fleet, &entries);
    let (out, fetch) = playbook(
        &fleet,
        &ap,
        &inv,
        json!({"virtperf_store": url, "virtperf_store_password": SECRET}),
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        !all.contains(SECRET),
        "the password in the playbook's output"
    );
    // Both hosts' comparisons are in the one store, whole; nothing fetched.
    let store =
        virtperf::store::Store::read(&virtperf::store::Location::Pg(virtperf::store::PgUrl {
            host: gw.clone(),
            port: pg.port(),
            user: "sbtest".into(),
            db: "fleet".into(),
            password: SECRET.into(),
            option: "--out",
        }))
        .unwrap();
    let cmps = store.comparisons().unwrap();
    assert_eq!(cmps.len(), 2, "{cmps:?}");
    for c in &cmps {
        assert!(c.finished, "{c:?}");
        assert_eq!(
            store.runs(c.id).unwrap().len(),
            4,
            "host and host-b, 2 rounds"
        );
    }
    for h in &fleet.hosts {
        assert!(!fetch.join(&h.name).join("results.db").exists());
    }
    // The report over both hosts' comparisons, from the store.
    let report = std::fs::read_to_string(fetch.join("fleet-report.txt")).unwrap();
    println!("{report}");
    for c in &cmps {
        assert!(
            report.contains(&format!("=== Host {url}#{} ===", c.id)),
            "{report}"
        );
    }
    assert!(
        report.contains("Fleet view") && !report.contains("FAILED"),
        "{report}"
    );
    assert!(!report.contains(SECRET));
    let dump = pg.psql(
        "fleet",
        "SELECT c.args || c.envs || coalesce(r.doc, '') FROM comparisons c JOIN runs r ON r.comparison = c.id",
    );
    assert!(!dump.is_empty() && !dump.contains(SECRET));
    // The password file went with the run's directory.
    assert_clean(&fleet);
}
