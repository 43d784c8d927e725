//! `virtperf import` on logs the real tools write in the test (sysbench,
//! fio, iperf3 on loopback, bonnie++), each imported figure checked against
//! what the tool printed, read here independently of virtperf's parsers;
//! netperf (not packaged) and sysbench 0.4 from fixtures written from their
//! documented layouts (tests/fixtures/import/README.md). A refused file
//! leaves the store as it was; imported runs sit beside measured ones of
//! the same entry in `virtperf report`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{output_ok, skip, virtperf};
use serde_json::Value;
use virtperf::core::result::ResultDoc;
use virtperf::store::Store;

/// Whether `tool` runs here; a skip with the reason otherwise.
fn have(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    ok || !skip(&format!("{tool} is not installed (see .ci/packages.txt)"))
}

/// Runs a tool, its standard output into `file`.
fn run_into(file: &Path, cmd: &mut Command) -> String {
    let out = output_ok(cmd);
    std::fs::write(file, &out.stdout).unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Every stored run: (env, entry, label, round, document).
fn stored(dir: &Path) -> Vec<(String, usize, String, usize, ResultDoc)> {
    let store = Store::open_read_only(dir).unwrap();
    let cmp = store.latest().unwrap().unwrap();
    store
        .runs(cmp.id)
        .unwrap()
        .into_iter()
        .map(|r| (r.env, r.entry, r.label, r.round, r.doc.expect("a document")))
        .collect()
}

/// The run imported from the file named `name`.
fn from_file<'a>(
    runs: &'a [(String, usize, String, usize, ResultDoc)],
    name: &str,
) -> &'a ResultDoc {
    &runs
        .iter()
        .find(|r| r.4.env.imported.as_ref().is_some_and(|i| i.file == name))
        .unwrap_or_else(|| panic!("no run from {name}"))
        .4
}

fn metric(doc: &ResultDoc, name: &str) -> f64 {
    doc.metric(name)
        .unwrap_or_else(|| panic!("{name} missing in {:?}", doc.metrics))
}

/// The number after `key` on the first line of `text` that has it.
fn after(text: &str, key: &str) -> f64 {
    let line = text
        .lines()
        .find_map(|l| l.split_once(key).map(|(_, r)| r))
        .unwrap_or_else(|| panic!("'{key}' not in the tool's output"));
    let word: String = line
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    word.parse().unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn import(out: &Path, env: &str, files: &[PathBuf], extra: &[&str]) -> String {
    let mut cmd = virtperf();
    cmd.args(["import", "--env", env, "--out"])
        .arg(out)
        .args(extra)
        .args(files);
    String::from_utf8(output_ok(&mut cmd).stdout).unwrap()
}

#[test]
fn sysbench_text_of_each_test_is_imported_as_printed() {
    if !have("sysbench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sb = |args: &[&str]| {
        let mut c = Command::new("sysbench");
        c.args(args).current_dir(d);
        c
    };
    let cpu = run_into(
        &d.join("cpu.log"),
        &mut sb(&[
            "cpu",
            "--cpu-max-prime=3000",
            "--threads=2",
            "--time=0",
            "--events=2000",
            "run",
        ]),
    );
    let mem = run_into(
        &d.join("memory.log"),
        &mut sb(&[
            "memory",
            "--memory-total-size=64M",
            "--memory-block-size=4K",
            "run",
        ]),
    );
    let thr = run_into(
        &d.join("threads.log"),
        &mut sb(&["threads", "--time=0", "--events=300", "run"]),
    );
    let mutex = run_into(
        &d.join("mutex.log"),
        &mut sb(&["mutex", "--threads=2", "--mutex-locks=2000", "run"]),
    );
    let file_opts = [
        "--file-num=2",
        "--file-total-size=4M",
        "--file-test-mode=rndrw",
    ];
    output_ok(sb(&[&["fileio"][..], &file_opts, &["prepare"]].concat()).stdout(Stdio::null()));
    let fio = run_into(
        &d.join("fileio.log"),
        &mut sb(&[&["fileio"][..], &file_opts, &["--time=1", "run"]].concat()),
    );
    output_ok(&mut sb(
        &[&["fileio"][..], &file_opts, &["cleanup"]].concat()
    ));
    let files: Vec<PathBuf> = ["cpu", "memory", "threads", "mutex", "fileio"]
        .iter()
        .map(|n| d.join(format!("{n}.log")))
        .collect();
    let store = d.join("store");
    let printed = import(&store, "debian-sysbench", &files, &[]);
    assert_eq!(
        printed.lines().filter(|l| l.contains("(new entry")).count(),
        5,
        "{printed}"
    );
    let runs = stored(&store);
    assert_eq!(runs.len(), 5);

    let c = from_file(&runs, "cpu.log");
    assert_eq!(c.workload, "cpu");
    assert_eq!(c.params["cpu_max_prime"], 3000);
    assert_eq!(c.params["threads"], 2);
    assert!(close(
        metric(c, "events_per_sec"),
        after(&cpu, "events per second:")
    ));
    assert_eq!(c.events as f64, after(&cpu, "total number of events:"));
    assert!(close(c.duration_s, after(&cpu, "total time:")));
    let lat = c.latency_ms.as_ref().unwrap();
    assert!(close(lat.min, after(&cpu, "min:")));
    assert!(close(lat.avg, after(&cpu, "avg:")));
    assert!(close(lat.max, after(&cpu, "max:")));
    assert!(close(lat.p95.unwrap(), after(&cpu, "95th percentile:")));
    assert!(close(lat.sum.unwrap(), after(&cpu, "sum:")));
    // Issue 56: what the log does not print is absent, not 0.
    assert_eq!((lat.p50, lat.p99, lat.p999), (None, None, None));
    let f = c.fairness.as_ref().unwrap();
    assert!(close(f.events_avg, after(&cpu, "events (avg/stddev):")));
    let from = c.env.imported.as_ref().unwrap();
    assert_eq!(
        (from.tool.as_str(), from.version.as_str()),
        ("sysbench", "1.0.20")
    );
    assert_eq!(c.env.kind, "imported");

    let m = from_file(&runs, "memory.log");
    assert_eq!(m.workload, "memory");
    assert_eq!(m.params["memory_block_size"], 4096);
    let mib = mem.split_once("MiB transferred (").unwrap().1;
    assert!(close(metric(m, "mib_per_sec"), after(mib, "")));
    let ops = mem.split_once("Total operations:").unwrap().1;
    assert!(close(
        metric(m, "ops_per_sec"),
        after(ops.split_once('(').unwrap().1, "")
    ));

    let t = from_file(&runs, "threads.log");
    assert_eq!(t.workload, "threads");
    let eps = after(&thr, "total number of events:") / after(&thr, "total time:");
    assert!(close(metric(t, "events_per_sec"), eps));

    let x = from_file(&runs, "mutex.log");
    assert_eq!(
        x.workload, "mutex",
        "one event per thread tells mutex from threads"
    );
    assert!(close(
        metric(x, "total_time_s"),
        after(&mutex, "total time:")
    ));

    let io = from_file(&runs, "fileio.log");
    assert_eq!(io.workload, "fileio");
    assert_eq!(io.params["file_test_mode"], "rndrw");
    assert_eq!(io.params["file_num"], 2);
    assert_eq!(io.params["file_total_size"], 4 << 20);
    for (key, name) in [
        ("reads/s:", "reads_per_sec"),
        ("writes/s:", "writes_per_sec"),
        ("fsyncs/s:", "fsyncs_per_sec"),
        ("read, MiB/s:", "read_mib_per_sec"),
        ("written, MiB/s:", "written_mib_per_sec"),
    ] {
        assert!(close(metric(io, name), after(&fio, key)), "{name}");
    }
    // Imported again, the same logs are more runs of the same entries.
    let again = import(&store, "debian-sysbench", &files[..1], &[]);
    assert!(
        again.contains("run 2 of entry #0") && !again.contains("new entry"),
        "{again}"
    );
}

#[test]
fn sysbench_0_4_text_is_imported() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        fixtures.join("sysbench-0.4-cpu.txt"),
        fixtures.join("sysbench-0.4-fileio.txt"),
    ];
    import(dir.path(), "seed004-guest", &files, &[]);
    let runs = stored(dir.path());
    let c = from_file(&runs, "sysbench-0.4-cpu.txt");
    assert_eq!(c.params["cpu_max_prime"], 20000);
    assert!(close(metric(c, "events_per_sec"), 10000.0 / 35.4331));
    let lat = c.latency_ms.as_ref().unwrap();
    assert_eq!(lat.p95, Some(3.60));
    // 0.4 prints no sum and one percentile: the rest is absent, not 0.
    assert_eq!((lat.p50, lat.p99, lat.sum), (None, None, None));
    assert_eq!(c.env.imported.as_ref().unwrap().version, "0.4.12");
    let f = from_file(&runs, "sysbench-0.4-fileio.txt");
    assert_eq!(f.params["file_extra_flags"], "direct");
    assert_eq!(f.params["file_total_size"], 6u64 << 30);
    assert!(close(metric(f, "reads_per_sec"), 4348.0 / 60.0028));
    assert!(close(metric(f, "fsyncs_per_sec"), 9216.0 / 60.0028));
    assert!(close(metric(f, "read_mib_per_sec"), 67.938 / 60.0028));
    assert!(close(metric(f, "written_mib_per_sec"), 45.281 / 60.0028));
}

#[test]
fn fio_json_and_json_plus_are_imported_as_printed() {
    if !have("fio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut files = Vec::new();
    let mut docs = Vec::new();
    for (name, format, rw) in [
        ("fio.json", "json", "randread"),
        ("fio-plus.json", "json+", "randrw"),
    ] {
        let text = run_into(
            &d.join(name),
            Command::new("fio")
                .args(["--name=t", "--size=4M", "--bs=4k", "--ioengine=psync"])
                .arg(format!("--rw={rw}"))
                .arg(format!("--output-format={format}"))
                .arg(format!("--filename={}", d.join("data").display())),
        );
        files.push(d.join(name));
        docs.push(serde_json::from_str::<Value>(&text).unwrap());
    }
    let store = d.join("store");
    import(&store, "fio-host", &files, &[]);
    let runs = stored(&store);
    for (name, fio) in ["fio.json", "fio-plus.json"].iter().zip(&docs) {
        let r = from_file(&runs, name);
        let job = &fio["jobs"][0];
        assert_eq!(r.workload, "fileio");
        assert_eq!(r.params["file_block_size"], 4096);
        assert_eq!(r.params["file_io_mode"], "sync");
        for (dir, iops, mib) in [
            ("read", "reads_per_sec", "read_mib_per_sec"),
            ("write", "writes_per_sec", "written_mib_per_sec"),
        ] {
            assert!(
                close(metric(r, iops), job[dir]["iops"].as_f64().unwrap()),
                "{name} {iops}"
            );
            assert!(close(
                metric(r, mib),
                job[dir]["bw_bytes"].as_f64().unwrap() / 1048576.0
            ));
        }
        let clat = &job["read"]["clat_ns"]["percentile"];
        assert!(close(
            metric(r, "read_clat_p99_ms"),
            clat["99.000000"].as_f64().unwrap() / 1e6
        ));
        assert_eq!(
            r.env.imported.as_ref().unwrap().version,
            fio["fio version"]
                .as_str()
                .unwrap()
                .trim_start_matches("fio-")
        );
    }
    assert_eq!(
        from_file(&runs, "fio.json").params["file_test_mode"],
        "rndrd"
    );
    let mixed = from_file(&runs, "fio-plus.json");
    assert_eq!(mixed.params["file_test_mode"], "rndrw");
    assert_eq!(mixed.params["file_rw_ratio"], 1.0, "fio's 50% reads");
    // fio prints no sum of latencies: null, not 0 (issue 52, item 1).
    let lat = mixed
        .latency_ms
        .as_ref()
        .expect("fio gives min, mean and max");
    assert_eq!(lat.sum, None, "{lat:?}");
    let stored = serde_json::to_value(lat).unwrap();
    assert!(stored["sum"].is_null(), "{stored}");
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One iperf3 test on loopback: the server's and the client's JSON.
fn iperf3_pair(d: &Path, name: &str, client_args: &[&str]) -> (PathBuf, PathBuf) {
    let port = free_port().to_string();
    let server_file = d.join(format!("{name}-server.json"));
    // The server writes its JSON when the test ends; it is stopped once
    // that document is whole.
    let mut server = Command::new("iperf3")
        .args(["-s", "-J", "-B", "127.0.0.1", "-p", &port])
        .stdout(std::fs::File::create(&server_file).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client_file = d.join(format!("{name}-client.json"));
    let started = Instant::now();
    let out = loop {
        let out = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "1", "-J"])
            .args(client_args)
            .output()
            .unwrap();
        // With -J, a client that cannot connect (the server is not
        // listening yet) still exits 0, with an "error" in its JSON.
        let tested = out.status.success()
            && serde_json::from_slice::<Value>(&out.stdout)
                .is_ok_and(|v| v.get("error").is_none() && v.get("end").is_some());
        if tested || started.elapsed() > Duration::from_secs(10) {
            break out;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let whole = || {
        std::fs::read_to_string(&server_file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|v| v.get("end").is_some())
    };
    let ended = common::wait_until(Duration::from_secs(30), whole);
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        out.status.success(),
        "iperf3 client: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        ended,
        "the iperf3 server wrote no whole JSON document after its test"
    );
    std::fs::write(&client_file, &out.stdout).unwrap();
    (client_file, server_file)
}

#[test]
fn iperf3_json_of_both_sides_tcp_and_udp_is_imported_as_printed() {
    if !have("iperf3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (tcp_c, tcp_s) = iperf3_pair(d, "tcp", &[]);
    let (udp_c, udp_s) = iperf3_pair(d, "udp", &["-u", "-b", "50M"]);
    let store = d.join("store");
    let files = vec![tcp_c, tcp_s, udp_c, udp_s];
    import(&store, "iperf3-lo", &files, &[]);
    let runs = stored(&store);
    let json = |p: &PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    for (file, metric_name) in [
        ("tcp-client.json", "tcp_stream_mbit_per_sec"),
        ("tcp-server.json", "tcp_stream_mbit_per_sec"),
        ("udp-client.json", "udp_stream_mbit_per_sec"),
        ("udp-server.json", "udp_stream_mbit_per_sec"),
    ] {
        let r = from_file(&runs, file);
        let src = json(&d.join(file));
        let bps = src["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap();
        assert!(close(metric(r, metric_name), bps / 1e6), "{file}");
        assert_eq!(r.params["net_streams"], 1);
        if file.starts_with("udp") {
            let loss = src["end"]["sum_received"]["lost_percent"].as_f64().unwrap();
            assert!(close(metric(r, "udp_stream_loss_pct"), loss));
            assert_eq!(r.params["net_udp_rate"], 50.0);
        }
    }
    let tcp_client = from_file(&runs, "tcp-client.json");
    let src = json(&d.join("tcp-client.json"));
    assert!(close(
        metric(tcp_client, "tcp_retransmits"),
        src["end"]["sum_sent"]["retransmits"].as_f64().unwrap()
    ));
    // Both sides of one test are two runs of one entry.
    let entry_of = |f: &str| {
        runs.iter()
            .find(|r| r.4.env.imported.as_ref().unwrap().file == f)
            .unwrap()
            .1
    };
    assert_eq!(entry_of("tcp-client.json"), entry_of("tcp-server.json"));
    assert_ne!(entry_of("tcp-client.json"), entry_of("udp-client.json"));
}

#[test]
fn bonnie_csv_is_imported_as_printed() {
    if !have("bonnie++") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("work")).unwrap();
    let mut cmd = Command::new("bonnie++");
    cmd.arg("-d")
        .arg(d.join("work"))
        .args(["-s", "64", "-r", "32", "-n", "0", "-f", "-D", "-q"]);
    if common::is_root() {
        cmd.args(["-u", "root"]);
    }
    let csv = run_into(&d.join("bonnie.csv"), &mut cmd);
    let store = d.join("store");
    let said = import(&store, "bonnie-host", &[d.join("bonnie.csv")], &[]);
    let runs = stored(&store);
    let r = from_file(&runs, "bonnie.csv");
    // The import's line gives the headline rates the file has, or says it
    // has none (every block rate '+++++' on a fast disk) and counts the rest.
    let rates: Vec<&str> = [
        "put_block_kib_per_sec",
        "rewrite_kib_per_sec",
        "get_block_kib_per_sec",
        "seeks_per_sec",
    ]
    .into_iter()
    .filter(|m| r.metric(m).is_some())
    .collect();
    match rates.first() {
        Some(m) => assert!(said.contains(&format!("{m} ")), "{said}"),
        None => assert!(
            said.contains(&format!(
                "no headline figure in the file, {} others (--detail)",
                r.metrics.len()
            )),
            "{said}"
        ),
    }
    assert_eq!(r.workload, "disk");
    assert_eq!(r.params["disk_file_size"], 64 << 20);
    let f: Vec<&str> = csv.trim().split(',').collect();
    assert_eq!(f.len(), 50, "bonnie++ 2.00's CSV: {csv}");
    let mut measured = 0;
    // The 1.98 format: rate/%CPU pairs from field 10, latencies from 39.
    for (k, name) in ["putc", "put_block", "rewrite", "getc", "get_block", "seeks"]
        .iter()
        .enumerate()
    {
        let rate = f[9 + 2 * k];
        let metric_name = match *name {
            "seeks" => "seeks_per_sec".to_string(),
            n => format!("{n}_kib_per_sec"),
        };
        match rate.parse::<f64>() {
            Ok(x) => {
                assert_eq!(metric(r, &metric_name), x, "{name}");
                measured += 1;
            }
            Err(_) => assert_eq!(r.metric(&metric_name), None, "{name} was {rate}"),
        }
        if let Some(us) = f[38 + k].strip_suffix("us") {
            let ms = us.parse::<f64>().unwrap() / 1000.0;
            assert!(
                close(metric(r, &format!("{name}_latency_max_ms")), ms),
                "{name}"
            );
            measured += 1;
        }
    }
    // A fast disk finishes the 64 MiB block tests too soon for a rate
    // (bonnie++ prints +++++), but their latencies are always printed.
    assert!(measured > 0, "some figure was measured and compared: {csv}");
}

#[test]
fn netperf_outputs_are_imported() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "netperf-tcp_stream.txt",
        "netperf-tcp_stream-I.txt",
        "netperf-tcp_rr.txt",
        "netperf-tcp_crr-k.txt",
        "netperf-udp_rr-o.txt",
        "netperf-udp_stream.txt",
    ];
    let files: Vec<PathBuf> = names.iter().map(|n| fixtures.join(n)).collect();
    import(dir.path(), "netperf-2012", &files, &[]);
    let runs = stored(dir.path());
    let r = from_file(&runs, "netperf-tcp_stream.txt");
    assert_eq!(r.params["net_test"], "tcp_stream");
    assert_eq!(metric(r, "tcp_stream_mbit_per_sec"), 21543.27);
    let i = from_file(&runs, "netperf-tcp_stream-I.txt");
    assert!(close(
        metric(i, "tcp_stream_mbit_per_sec"),
        2500000.0 * 8.0 * 1024.0 / 1e6
    ));
    assert_eq!(metric(i, "confidence_level_pct"), 99.0);
    assert_eq!(metric(i, "confidence_target_pct"), 2.5);
    assert_eq!(metric(i, "throughput_confidence_width_pct"), 6.127);
    let rr = from_file(&runs, "netperf-tcp_rr.txt");
    assert_eq!(metric(rr, "tcp_rr_trans_per_sec"), 38211.45);
    assert_eq!(
        (
            rr.params["net_req_size"].clone(),
            rr.params["net_resp_size"].clone()
        ),
        (1.into(), 1.into())
    );
    let crr = from_file(&runs, "netperf-tcp_crr-k.txt");
    assert_eq!(metric(crr, "tcp_crr_trans_per_sec"), 9120.33);
    assert_eq!(metric(crr, "tcp_crr_latency_p99_us"), 180.0);
    assert_eq!(metric(crr, "tcp_crr_latency_max_us"), 2411.0);
    let udp_rr = from_file(&runs, "netperf-udp_rr-o.txt");
    assert_eq!(metric(udp_rr, "udp_rr_trans_per_sec"), 41877.10);
    assert_eq!(udp_rr.params["net_resp_size"], 1024);
    assert_eq!(metric(udp_rr, "mean_latency"), 23.79);
    let us = from_file(&runs, "netperf-udp_stream.txt");
    assert_eq!(metric(us, "udp_stream_mbit_per_sec"), 6162.90);
    assert_eq!(metric(us, "udp_stream_send_mbit_per_sec"), 6288.67);
    assert!(close(metric(us, "udp_stream_loss_pct"), 2.0));
    // The two TCP_STREAM files are two runs of one entry.
    assert_eq!(
        runs.iter()
            .filter(|r| r.4.params["net_test"] == "tcp_stream")
            .map(|r| r.1)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        1
    );
}

/// Every file in `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_refused_file_is_named_with_its_line_and_nothing_is_stored() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let dir = tempfile::tempdir().unwrap();
    let good = fixtures.join("sysbench-0.4-cpu.txt");
    let text = std::fs::read_to_string(&good).unwrap();
    let cut = dir.path().join("cut.log");
    // A log that ends before its summary: cut after the limit's line.
    let kept: Vec<&str> = text.lines().take(11).collect();
    std::fs::write(&cut, kept.join("\n")).unwrap();
    // Into a store that does not exist yet: none is made.
    let fresh = dir.path().join("fresh");
    let out = virtperf()
        .args(["import", "--env", "x", "--out"])
        .arg(&fresh)
        .arg(&good)
        .arg(&cut)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut.log")
            && err.contains("line 11: expected sysbench's 'Test execution summary:' section"),
        "{err}"
    );
    assert!(!fresh.exists(), "nothing made for a refused call");
    // Into a store with runs: it stays as it was, byte for byte.
    let store = dir.path().join("store");
    import(&store, "x", std::slice::from_ref(&good), &[]);
    let before = snapshot(&store);
    let json = dir.path().join("bad.json");
    std::fs::write(
        &json,
        "{\"fio version\": \"fio-3.33\",\n \"jobs\": [ {\"jobname\": \"a\",\n  oops } ]}\n",
    )
    .unwrap();
    let out = virtperf()
        .args(["import", "--env", "x", "--out"])
        .arg(&store)
        .arg(&good)
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json (fio format): line 3: expected fio's JSON document"),
        "{err}"
    );
    assert_eq!(snapshot(&store), before);
    assert_eq!(stored(&store).len(), 1);
    // A file of no known format, and one forced to a format it is not.
    let out = virtperf()
        .args(["import", "--env", "x", "--out"])
        .arg(&store)
        .arg(&json)
        .args(["--kind", "bonnie"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected a bonnie++ CSV line"));
    let other = dir.path().join("notes.txt");
    std::fs::write(&other, "hello\n").unwrap();
    let out = virtperf()
        .args(["import", "--env", "x", "--out"])
        .arg(&store)
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("notes.txt: line 1: expected the output of one of fio, iperf3, sysbench"),
        "{err}"
    );
    assert_eq!(snapshot(&store), before);
    // No --env, an unknown kind: usage errors naming the option.
    let out = virtperf().args(["import"]).arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--env NAME is required"));
    let out = virtperf()
        .args(["import", "--env", "x", "--kind", "iozone"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kind iozone: no such format"));
}

#[test]
fn report_sets_imported_runs_beside_measured_ones_of_the_same_entry() {
    if !have("sysbench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("results");
    output_ok(
        virtperf()
            .args([
                "compare", "--env", "host", "--repeat", "3", "--format", "json", "--out",
            ])
            .arg(&store)
            .args(["cpu", "--cpu-max-prime=2000", "--time=0.3"]),
    );
    let mut logs = Vec::new();
    for i in 1..=3 {
        let log = d.join(format!("cpu-{i}.log"));
        run_into(
            &log,
            Command::new("sysbench").args([
                "cpu",
                "--cpu-max-prime=2000",
                "--time=0",
                "--events=500",
                "run",
            ]),
        );
        logs.push(log);
    }
    let printed = import(&store, "sysbench-1.0.20", &logs, &[]);
    assert!(
        printed.contains("run 3 of entry #0 'cpu --cpu-max-prime=2000 --time=0.3'"),
        "{printed}"
    );
    // The measured environment's label is not the imported runs'.
    let out = virtperf()
        .args(["import", "--env", "host", "--out"])
        .arg(&store)
        .arg(&logs[0])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("measured an environment of that name"));
    let json = common::json_of(
        &virtperf()
            .arg("report")
            .arg(&store)
            .args(["--format", "json"])
            .output()
            .unwrap(),
        "report --format json",
    );
    let entries = json["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "imported runs joined the measured entry");
    let eps = entries[0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "events_per_sec")
        .unwrap();
    let per_env: Vec<(String, usize, bool)> = eps["per_env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["env"].as_str().unwrap().to_string(),
                p["samples"].as_array().unwrap().len(),
                p["vs_baseline"].is_object(),
            )
        })
        .collect();
    assert_eq!(
        per_env,
        vec![
            ("host".into(), 3, false),
            ("sysbench-1.0.20".into(), 3, true)
        ]
    );
    let table = String::from_utf8(output_ok(virtperf().arg("report").arg(&store)).stdout).unwrap();
    assert!(
        table.contains("Imported runs") && table.contains("imported from sysbench 1.0.20"),
        "{table}"
    );
    assert!(table.contains("sysbench-1.0.20  events_per_sec"), "{table}");
}

/// Issue 52, item 1: a sysbench cpu log made at another --cpu-max-prime
/// than the comparison's stands beside the measured runs with its value,
/// tool and date and the parameter that differs; the import says why it
/// made a new entry; a single matching log asks for another log, never
/// for more rounds; the imported environment's unknown fingerprint shows
/// as unknown in the HTML; the stored latency has null for the percentiles
/// sysbench does not print.
#[test]
fn an_import_of_other_parameters_stands_beside_measured_runs_with_the_reason() {
    if !have("sysbench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("results");
    output_ok(
        virtperf()
            .args([
                "compare", "--env", "host", "--repeat", "3", "--format", "json", "--out",
            ])
            .arg(&store)
            .args(["cpu", "--cpu-max-prime=2000", "--time=0.3"]),
    );
    let log = |name: &str, prime: &str| {
        let path = d.join(name);
        let prime = format!("--cpu-max-prime={prime}");
        run_into(
            &path,
            Command::new("sysbench").args(["cpu", &prime, "--time=0", "--events=300", "run"]),
        );
        path
    };
    let (old, same) = (log("old.log", "1000"), log("same.log", "2000"));
    let printed = import(&store, "esxi-2019", std::slice::from_ref(&old), &[]);
    assert!(
        printed.contains("(new entry: the file's cpu_max_prime 1000 vs 2000 in entry #0 'cpu --cpu-max-prime=2000 --time=0.3')"),
        "{printed}"
    );
    let printed = import(&store, "esxi-one", std::slice::from_ref(&same), &[]);
    assert!(printed.contains("run 1 of entry #0"), "{printed}");
    let today = virtperf::core::time::now_rfc3339()[..10].to_string();
    let table = String::from_utf8(output_ok(virtperf().arg("report").arg(&store)).stdout).unwrap();
    let row = |env: &str| {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(env) && l.contains("events_per_sec"))
            .unwrap_or_else(|| panic!("no headline row of {env}: {table}"))
            .to_string()
    };
    let esxi = row("esxi-2019");
    for part in [
        &format!("events/s (sysbench 1.0.20, file of {today}; baseline: no runs)"),
        "not comparable: host ran this test with other parameters (cpu_max_prime 1000 vs 2000",
        "import a log made with cpu_max_prime 2000",
    ] {
        assert!(esxi.contains(part), "'{part}' not in {esxi}\n{table}");
    }
    let one = row("esxi-one");
    assert!(
        one.contains("import another log of the same test") && one.contains(" vs "),
        "{one}\n{table}"
    );
    assert!(
        !table.contains("run more rounds") && !table.contains("--repeat"),
        "{table}"
    );
    // The HTML's environments table: what an import does not give is unknown.
    let html = d.join("r.html");
    output_ok(
        virtperf()
            .arg("report")
            .arg(&store)
            .args(["--format", "html", "--out"])
            .arg(&html),
    );
    let html = std::fs::read_to_string(&html).unwrap();
    let table = html
        .find("<section id=\"environments\">")
        .expect("the environments");
    let at = table
        + html[table..]
            .find(">esxi-2019<")
            .expect("the imported environment's row");
    let tr = &html[at..at + html[at..].find("</tr>").unwrap()];
    assert!(tr.contains(">unknown<"), "{tr}");
    assert!(!tr.contains("0.0 GiB") && !tr.contains(">0<"), "{tr}");
    // sysbench prints the 95th percentile only: the others are null.
    let runs = stored(&store);
    let lat =
        serde_json::to_value(from_file(&runs, "old.log").latency_ms.as_ref().unwrap()).unwrap();
    assert!(lat["p95"].as_f64().is_some_and(|p| p > 0.0), "{lat}");
    for absent in ["p50", "p99", "p999"] {
        assert!(lat[absent].is_null(), "{absent}: {lat}");
    }
}

/// Runs `virtperf import` of `file` into `store`, killed if it takes more
/// than 10 s: (exit code, stderr, how long it took).
fn import_bounded(store: &Path, file: &Path) -> (Option<i32>, String, Duration) {
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_virtperf"))
        .args(["import", "--env", "x", "--out"])
        .arg(store)
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let done = common::wait_until(Duration::from_secs(10), || {
        child.try_wait().unwrap().is_some()
    });
    if !done {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        t.elapsed(),
    )
}

#[test]
fn a_fifo_or_a_device_is_refused_at_once() {
    // Issue 53, item 11: importing a FIFO blocked in open(2) for minutes,
    // deaf to SIGTERM and the first SIGINT.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("cpu.log");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let store = dir.path().join("store");
    let (code, err, took) = import_bounded(&store, &fifo);
    assert!(took < Duration::from_secs(5), "{took:?}: {err}");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is a FIFO, not a regular file: give the log file"),
        "{err}"
    );
    assert!(!store.exists(), "nothing made for a refused call");
    for (path, what) in [
        (Path::new("/dev/null"), "a device"),
        (dir.path(), "a directory"),
    ] {
        let (code, err, _) = import_bounded(&store, path);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("is {what}, not a regular file")),
            "{err}"
        );
    }
}

#[test]
fn figures_no_run_can_have_are_refused_naming_the_field() {
    // Issue 53, item 10: 'events per second: -1234.56' and fio's
    // 'iops: -300' were stored, and reported with an interval of -inf..inf.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixtures.join("sysbench-0.4-cpu.txt")).unwrap();
    let store = dir.path().join("store");
    let fio = r#"{"fio version":"fio-3.33","jobs":[{"jobname":"neg","groupid":0,"error":0,
        "job options":{"rw":"randread"},"job_runtime":1000,
        "read":{"iops":-300,"bw_bytes":1024,"total_ios":10}}]}"#;
    let per_request = good
        .lines()
        .find(|l| l.contains("min:"))
        .expect("a min: line in the fixture");
    for (name, text, says) in [
        (
            "neg.log",
            good.replacen(
                per_request,
                "         min:                                  -3.41ms",
                1,
            ),
            "a finite figure of at least 0 for the latency",
        ),
        (
            "neg.json",
            fio.to_string(),
            "a number of at least 0 at read.iops in job 'neg', found '-300'",
        ),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let (code, err, _) = import_bounded(&store, &file);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(err.contains(name) && err.contains(says), "{name}: {err}");
        assert!(!store.exists(), "{name}: nothing stored");
    }
}

#[test]
fn an_imported_files_strings_reach_the_terminal_escaped() {
    // Issue 53, item 6: an imported file's tool version was printed raw.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("evil.json");
    std::fs::write(
        &file,
        r#"{"fio version":"fio-3.33\u001b]0;owned\u0007\u001b[2J\r\u009b31m\u202e","jobs":[{"jobname":"j\u001b[2J","groupid":0,"error":0,
        "job options":{"rw":"randread"},"job_runtime":1000,
        "read":{"iops":10.0,"bw_bytes":40960,"total_ios":10}}]}"#,
    )
    .unwrap();
    let printed = import(&dir.path().join("store"), "x", &[file], &[]);
    assert!(printed.contains("fio 3.33\\u{1b}]0;owned"), "{printed}");
    assert!(
        !printed
            .chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "{printed:?}"
    );
}
