//! Other tools' file I/O results read back as fileio runs (`virtperf
//! import`): sysbench's fileio text (1.0 and 0.4) and fio's JSON
//! (`--output-format=json` and `json+`, whose extra latency bins are not
//! needed). fio's `rw` becomes `--file-test-mode` where fileio has that
//! mode (read seqrd, write seqwr, randread rndrd, randwrite rndwr, randrw
//! rndrw); fio's other modes keep their own parameter `fio_rw`, so they
//! sit on an entry of their own. `bs` is `--file-block-size`, `numjobs`
//! `--threads`, `ioengine` `--file-io-mode` (psync/sync/pvsync: sync,
//! libaio/io_uring/posixaio: async, mmap), `direct=1`
//! `--file-extra-flags=direct`, `rwmixread` `--file-rw-ratio` (rndrw),
//! `fsync` `--file-fsync-freq` (modes that write).

use super::DEF;
use crate::core::result::Latency;
use crate::core::units::Bytes;
use crate::workload::import::sysbench::{SysbenchLog, SysbenchTestImport};
use crate::workload::import::{self, leading_number, Format, Imported, Refusal};

/// sysbench's fileio test: 1.0's `File operations:` and `Throughput:`
/// blocks, 0.4's `Operations performed:  R Read, W Write, O Other = T
/// Total` and `Read XMb  Written YMb ...` lines; the header's files,
/// sizes, mode, I/O mode, fsync frequency and rw ratio choose the entry.
pub const SYSBENCH_IMPORT: SysbenchTestImport = SysbenchTestImport {
    defs: &[&DEF],
    claims: |log| log.has("File operations:") || log.has("Extra file open flags:"),
    read: read_sysbench,
};

const MODES: &[(&str, &str)] = &[
    ("Doing sequential write (creation) test", "seqwr"),
    ("Doing sequential rewrite test", "seqrewr"),
    ("Doing sequential read test", "seqrd"),
    ("Doing random read test", "rndrd"),
    ("Doing random write test", "rndwr"),
    ("Doing random r/w test", "rndrw"),
];

fn read_sysbench(
    log: &SysbenchLog,
    _: Option<&'static crate::workload::WorkloadDef>,
) -> Result<Imported, Refusal> {
    let mut imp = log.imported(&DEF);
    let mode = MODES
        .iter()
        .find(|(line, _)| log.has(line))
        .map(|(_, m)| *m)
        .ok_or_else(|| log.missing("a line 'Doing ... test' naming the file test mode"))?;
    imp.option("file-test-mode", mode);
    for &(n, l) in &log.lines {
        let t = l.trim();
        if let Some(head) = t.strip_suffix(" each") {
            // "4 files, 4MiB each"
            if let Some((files, _)) = head.split_once(" files,") {
                let files = leading_number(files)
                    .map(|(x, _)| x)
                    .ok_or_else(|| Refusal::new(n, "'N files, SIZE each'", t))?;
                imp.option("file-num", files);
            }
        } else if let Some(size) = t.strip_suffix(" total file size") {
            imp.option("file-total-size", size_text(n, size)?);
        } else if let Some(size) = t.strip_prefix("Block size ") {
            imp.option("file-block-size", size_text(n, size)?);
        }
    }
    if let Some((_, rest)) = log.after("Periodic FSYNC enabled, calling fsync() each") {
        if let Some((x, _)) = leading_number(rest) {
            imp.option("file-fsync-freq", x);
        }
    } else if log.has("Periodic FSYNC disabled") {
        imp.option("file-fsync-freq", 0);
    }
    if let Some((_, io)) = log.after("Using ") {
        let io_mode = if io.contains("asynchronous") {
            "async"
        } else if io.contains("mmap") {
            "mmap"
        } else {
            "sync"
        };
        imp.option("file-io-mode", io_mode);
    }
    if let Some((_, flags)) = log.after("Extra file open flags:") {
        // 1.0 names them, 0.4 gives the number (16384 is O_DIRECT).
        if flags.contains("direct") || flags == "16384" {
            imp.option("file-extra-flags", "direct");
        }
    }
    if mode == "rndrw" {
        if let Some(r) = log.number("Read/Write ratio for combined random IO test:")? {
            imp.option("file-rw-ratio", r);
        }
    }
    if log.old {
        figures_04(&mut imp, log)?;
    } else {
        for (key, metric) in [
            ("reads/s:", "reads_per_sec"),
            ("writes/s:", "writes_per_sec"),
            ("fsyncs/s:", "fsyncs_per_sec"),
            ("read, MiB/s:", "read_mib_per_sec"),
            ("written, MiB/s:", "written_mib_per_sec"),
        ] {
            imp.declared(metric, log.required(key)?);
        }
    }
    Ok(imp)
}

/// 0.4's figures: `Operations performed:  R Read, W Write, O Other = T
/// Total` and `Read XMb  Written YMb  Total transferred ...`, over the
/// run's time.
fn figures_04(imp: &mut Imported, log: &SysbenchLog) -> Result<(), Refusal> {
    let secs = log.total_time_s;
    // "Operations performed:  4348 Read, 2898 Write, 9216 Other = 16462 Total"
    let (n, ops) = log
        .after("Operations performed:")
        .ok_or_else(|| log.missing("a line 'Operations performed:  R Read, W Write, ...'"))?;
    let count = |word: &str| -> Result<f64, Refusal> {
        ops.split(',')
            .find_map(|part| {
                let (x, rest) = leading_number(part)?;
                rest.trim().starts_with(word).then_some(x)
            })
            .ok_or_else(|| Refusal::new(n, format!("'N {word}' in the operations line"), ops))
    };
    imp.declared("reads_per_sec", count("Read")? / secs);
    imp.declared("writes_per_sec", count("Write")? / secs);
    imp.declared("fsyncs_per_sec", count("Other")? / secs);
    // "Read 67.938Mb  Written 45.281Mb  Total transferred 113.22Mb  (1.8869Mb/sec)"
    let (n, moved) = log
        .after("Read ")
        .ok_or_else(|| log.missing("a line 'Read XMb  Written YMb  Total transferred ...'"))?;
    let amount = |text: &str| -> Option<f64> {
        let (x, unit) = leading_number(text)?;
        let unit = unit.split_whitespace().next().unwrap_or("");
        let scale = match unit.to_ascii_lowercase().as_str() {
            "b" => 1.0 / 1048576.0,
            "kb" => 1.0 / 1024.0,
            "mb" => 1.0,
            "gb" => 1024.0,
            "tb" => 1048576.0,
            _ => return None,
        };
        Some(x * scale)
    };
    let read = amount(moved).ok_or_else(|| Refusal::new(n, "'Read N<unit>'", moved))?;
    let written = moved
        .split_once("Written")
        .and_then(|(_, w)| amount(w))
        .ok_or_else(|| Refusal::new(n, "'Written N<unit>'", moved))?;
    imp.declared("read_mib_per_sec", read / secs);
    imp.declared("written_mib_per_sec", written / secs);
    if let Some(rps) = log
        .lines
        .iter()
        .find_map(|(_, l)| l.trim().strip_suffix("Requests/sec executed"))
        .and_then(|r| leading_number(r))
    {
        imp.own("requests_per_sec", rps.0, "requests/s", true);
    }
    Ok(())
}

/// A size as sysbench prints it ("16KiB", "48Mb", "6Gb") as an option value.
fn size_text(line: usize, text: &str) -> Result<String, Refusal> {
    Bytes::parse(text.trim())
        .map(|b| b.0.to_string())
        .map_err(|_| Refusal::new(line, "a size such as 16KiB", text))
}

pub const FIO: Format = Format {
    kind: "fio",
    tool: "fio",
    summary: "fio's JSON (--output-format=json or json+; a \"fio version\" key): each group of jobs one fileio run",
    detect: |text| {
        let head: String = text.chars().take(4096).collect();
        head.trim_start().starts_with('{') && head.contains("\"fio version\"")
            || head.contains("\n{") && head.contains("\"fio version\"")
    },
    parse: parse_fio,
};

fn parse_fio(text: &str, _sub: Option<&str>) -> Result<Vec<Imported>, Refusal> {
    let doc = import::json(text, "fio's JSON document")?;
    let version = doc
        .get("fio version")
        .and_then(|v| v.as_str())
        .ok_or_else(|| Refusal::new(0, "a \"fio version\" key in fio's JSON", ""))?
        .chars()
        .take(40)
        .collect::<String>();
    let jobs = doc
        .get("jobs")
        .and_then(|j| j.as_array())
        .filter(|j| !j.is_empty())
        .ok_or_else(|| Refusal::new(0, "a non-empty \"jobs\" array in fio's JSON", ""))?;
    if jobs.len() > import::MAX_RUNS * 64 {
        return Err(Refusal::new(
            0,
            format!("at most {} jobs", import::MAX_RUNS * 64),
            &jobs.len().to_string(),
        ));
    }
    let global = doc.get("global options").and_then(|g| g.as_object());
    // Jobs of one group ran together (numjobs without group_reporting
    // lists each): their rates add up to one run.
    let mut groups: Vec<(i64, Vec<&serde_json::Value>)> = Vec::new();
    for job in jobs {
        let g = job.get("groupid").and_then(|g| g.as_i64()).unwrap_or(0);
        match groups.iter_mut().find(|(id, _)| *id == g) {
            Some((_, members)) => members.push(job),
            None => groups.push((g, vec![job])),
        }
    }
    if groups.len() > import::MAX_RUNS {
        return Err(Refusal::new(
            0,
            format!("at most {} groups of jobs", import::MAX_RUNS),
            &groups.len().to_string(),
        ));
    }
    let host = doc
        .get("disk_util")
        .and_then(|d| d.as_array())
        .and_then(|d| d.first())
        .and_then(|d| d.get("name"))
        .and_then(|n| n.as_str())
        .map(|n| format!("disk {}", n.chars().take(40).collect::<String>()))
        .unwrap_or_default();
    groups
        .into_iter()
        .map(|(_, members)| fio_group(&members, global, &version, &host))
        .collect()
}

/// A job option as fio printed it: the job's own, else the global one.
fn fio_option<'a>(
    job: &'a serde_json::Value,
    global: Option<&'a serde_json::Map<String, serde_json::Value>>,
    name: &str,
) -> Option<&'a str> {
    job.get("job options")
        .and_then(|o| o.get(name))
        .or_else(|| global?.get(name))
        .and_then(|v| v.as_str())
}

fn fio_group(
    members: &[&serde_json::Value],
    global: Option<&serde_json::Map<String, serde_json::Value>>,
    version: &str,
    host: &str,
) -> Result<Imported, Refusal> {
    let first = members[0];
    let name = first
        .get("jobname")
        .and_then(|n| n.as_str())
        .unwrap_or("")
        .chars()
        .take(80)
        .collect::<String>();
    if let Some(e) = first
        .get("error")
        .and_then(|e| e.as_i64())
        .filter(|e| *e != 0)
    {
        return Err(Refusal::new(
            0,
            format!("a job that finished without error (job '{name}' has error {e})"),
            "",
        ));
    }
    if first.get("read").is_none() && first.get("write").is_none() {
        return Err(Refusal::new(
            0,
            format!("\"read\" and \"write\" figures in job '{name}'"),
            "",
        ));
    }
    let mut imp = Imported::new(&DEF, "fio", version.trim_start_matches("fio-"));
    imp.host = host.to_string();
    fio_options(&mut imp, |n| fio_option(first, global, n), members.len());
    let figures = Figures {
        members,
        job: &name,
    };
    // Rates add up over the group's jobs; a figure no job gives is absent.
    let runtime_ms = figures.max(&["job_runtime"])?;
    let reads = figures.sum(&["read", "total_ios"])?;
    let writes = figures.sum(&["write", "total_ios"])?;
    for (metric, path, scale) in [
        ("reads_per_sec", ["read", "iops"], 1.0),
        ("writes_per_sec", ["write", "iops"], 1.0),
        ("read_mib_per_sec", ["read", "bw_bytes"], 1048576.0),
        ("written_mib_per_sec", ["write", "bw_bytes"], 1048576.0),
    ] {
        if let Some(x) = figures.sum(&path)? {
            imp.declared(metric, x / scale);
        }
    }
    let syncs = figures.sum(&["sync", "total_ios"])?.unwrap_or_default();
    let runtime_ms = runtime_ms.unwrap_or_default();
    if syncs > 0.0 && runtime_ms > 0.0 {
        imp.declared("fsyncs_per_sec", syncs / (runtime_ms / 1000.0));
    }
    imp.duration_s = runtime_ms / 1000.0;
    let (reads, writes) = (reads.unwrap_or_default(), writes.unwrap_or_default());
    imp.events = (reads + writes).min(u64::MAX as f64) as u64;
    let lone = Figures {
        members: &members[..1],
        job: &name,
    };
    for dir in ["read", "write"] {
        if lone.sum(&[dir, "total_ios"])?.unwrap_or_default() <= 0.0 {
            continue;
        }
        if let Some(mean) = lone.sum(&[dir, "lat_ns", "mean"])? {
            imp.own(&format!("{dir}_lat_mean_ms"), mean / 1e6, "ms", false);
        }
        for (key, label) in PERCENTILES {
            if let Some(ns) = lone.sum(&[dir, "clat_ns", "percentile", key])? {
                imp.own(&format!("{dir}_clat_{label}_ms"), ns / 1e6, "ms", false);
            }
        }
    }
    // The run's latency: the direction with more I/O, from the first job.
    imp.latency = fio_latency(&lone, if writes > reads { "write" } else { "read" })?;
    for (key, metric) in [("usr_cpu", "cpu_usr_pct"), ("sys_cpu", "cpu_sys_pct")] {
        if let Some(u) = lone.sum(&[key])? {
            imp.own(metric, u, "%", false);
        }
    }
    imp.details = serde_json::json!({
        "jobname": name,
        "jobs": members.len(),
        "job_options": first.get("job options").cloned().unwrap_or_default(),
    });
    Ok(imp)
}

/// A group's jobs' figures, each checked: a figure fio gives is a number
/// no rate, count, time or size can be below 0 of; one that is not is
/// refused, naming the job and its place in the document.
struct Figures<'a> {
    members: &'a [&'a serde_json::Value],
    job: &'a str,
}

impl Figures<'_> {
    /// Every job's figure at `path` (those that have one).
    fn each(&self, path: &[&str]) -> Result<Vec<f64>, Refusal> {
        let mut out = Vec::new();
        for j in self.members {
            let Some(v) = path.iter().try_fold(*j, |at, k| at.get(k)) else {
                continue;
            };
            match v.as_f64().filter(|x| x.is_finite() && *x >= 0.0) {
                Some(x) => out.push(x),
                None => {
                    return Err(Refusal::new(
                        0,
                        format!(
                            "a number of at least 0 at {} in job '{}'",
                            path.join("."),
                            self.job
                        ),
                        &v.to_string(),
                    ))
                }
            }
        }
        Ok(out)
    }

    /// Their sum, or None where no job gives the figure (never 0).
    fn sum(&self, path: &[&str]) -> Result<Option<f64>, Refusal> {
        let xs = self.each(path)?;
        Ok((!xs.is_empty()).then(|| xs.iter().sum()))
    }

    fn max(&self, path: &[&str]) -> Result<Option<f64>, Refusal> {
        Ok(self.each(path)?.into_iter().reduce(f64::max))
    }
}

/// The file test mode (or fio's own `rw`) and the other options that
/// choose the entry, from the group's first job's options (`opt`).
fn fio_options<'a>(imp: &mut Imported, opt: impl Fn(&str) -> Option<&'a str>, jobs: usize) {
    let rw = opt("rw").or_else(|| opt("readwrite")).unwrap_or("read");
    let mode = match rw {
        "read" => Some("seqrd"),
        "write" => Some("seqwr"),
        "randread" => Some("rndrd"),
        "randwrite" => Some("rndwr"),
        "randrw" => Some("rndrw"),
        _ => None,
    };
    match mode {
        Some(m) => {
            imp.option("file-test-mode", m);
        }
        None => imp.params.push((
            "fio_rw".into(),
            rw.chars().take(40).collect::<String>().into(),
        )),
    }
    let bs = opt("bs").or_else(|| opt("blocksize")).unwrap_or("4k");
    match Bytes::parse(bs) {
        Ok(b) if b.0 >= 16 => {
            imp.option("file-block-size", b.0);
        }
        _ => imp.params.push((
            "fio_bs".into(),
            bs.chars().take(40).collect::<String>().into(),
        )),
    }
    let numjobs = opt("numjobs")
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(1)
        .max(jobs as u64)
        .clamp(1, 100_000);
    imp.option("threads", numjobs);
    let io_mode = match opt("ioengine").unwrap_or("psync") {
        "libaio" | "io_uring" | "posixaio" | "windowsaio" | "solarisaio" => "async",
        "mmap" => "mmap",
        _ => "sync",
    };
    imp.option("file-io-mode", io_mode);
    if io_mode == "async" {
        if let Some(depth) = opt("iodepth").and_then(|d| d.parse::<u64>().ok()) {
            imp.params.push(("fio_iodepth".into(), depth.into()));
        }
    }
    if opt("direct").is_some_and(|d| d == "1" || d == "true") {
        imp.option("file-extra-flags", "direct");
    }
    if mode == Some("rndrw") {
        let read_pct = opt("rwmixread")
            .and_then(|r| r.parse::<f64>().ok())
            .or_else(|| {
                opt("rwmixwrite")
                    .and_then(|w| w.parse::<f64>().ok())
                    .map(|w| 100.0 - w)
            })
            .unwrap_or(50.0);
        if read_pct > 0.0 && read_pct < 100.0 {
            imp.option("file-rw-ratio", read_pct / (100.0 - read_pct));
        }
    }
    if matches!(mode, Some("seqwr") | Some("rndwr") | Some("rndrw")) {
        let every = opt("fsync")
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
        imp.option("file-fsync-freq", every);
    }
}

/// The run's latency from direction `dir` of the first job: min, mean and
/// max of `lat_ns` (all three, or no latency), the percentiles of
/// `clat_ns` fio printed; fio prints no sum (null, never 0).
fn fio_latency(first: &Figures, dir: &str) -> Result<Option<Latency>, Refusal> {
    let ms = |path: &[&str]| -> Result<Option<f64>, Refusal> {
        let mut at = vec![dir];
        at.extend_from_slice(path);
        Ok(first.sum(&at)?.map(|ns| ns / 1e6))
    };
    let (Some(min), Some(avg), Some(max)) = (
        ms(&["lat_ns", "min"])?,
        ms(&["lat_ns", "mean"])?,
        ms(&["lat_ns", "max"])?,
    ) else {
        return Ok(None);
    };
    let pct = |key: &str| ms(&["clat_ns", "percentile", key]);
    Ok(Some(Latency {
        min,
        avg,
        max,
        p50: pct("50.000000")?,
        p95: pct("95.000000")?,
        p99: pct("99.000000")?,
        p999: pct("99.900000")?,
        selected: None,
        sum: None,
    }))
}

const PERCENTILES: &[(&str, &str)] = &[
    ("50.000000", "p50"),
    ("95.000000", "p95"),
    ("99.000000", "p99"),
    ("99.900000", "p999"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_modes_map_onto_fileio_and_others_keep_their_own() {
        let doc = r#"{"fio version":"fio-3.33","jobs":[{"jobname":"a","groupid":0,"error":0,
            "job options":{"rw":"randrw","bs":"8k","rwmixread":"75","ioengine":"libaio","iodepth":"8","direct":"1"},
            "job_runtime":2000,"read":{"iops":300.0,"bw_bytes":2457600,"total_ios":600,
              "lat_ns":{"min":1000,"max":9000000,"mean":200000},"clat_ns":{"percentile":{"50.000000":150000,"99.000000":800000}}},
            "write":{"iops":100.0,"bw_bytes":819200,"total_ios":200},"usr_cpu":1.5,"sys_cpu":3.0},
           {"jobname":"b","groupid":1,"error":0,"job options":{"rw":"rw"},"job_runtime":1000,
            "read":{"iops":10.0,"bw_bytes":40960,"total_ios":10},"write":{"iops":10.0,"bw_bytes":40960,"total_ios":10}}]}"#;
        assert!((FIO.detect)(doc));
        let runs = parse_fio(doc, None).unwrap();
        assert_eq!(runs.len(), 2);
        let a = &runs[0];
        let has = |r: &Imported, k: &str, v: &str| r.options.iter().any(|(n, x)| n == k && x == v);
        assert!(has(a, "file-test-mode", "rndrw") && has(a, "file-block-size", "8192"));
        assert!(has(a, "file-io-mode", "async") && has(a, "file-extra-flags", "direct"));
        assert!(has(a, "file-rw-ratio", "3"));
        let m = |r: &Imported, n: &str| r.metrics.iter().find(|m| m.name == n).unwrap().value;
        assert_eq!(m(a, "reads_per_sec"), 300.0);
        assert_eq!(m(a, "read_mib_per_sec"), 2.34375);
        assert_eq!(m(a, "read_clat_p99_ms"), 0.8);
        assert_eq!(a.latency.as_ref().unwrap().max, 9.0);
        assert_eq!(a.events, 800);
        let b = &runs[1];
        assert!(!b.options.iter().any(|(n, _)| n == "file-test-mode"));
        assert_eq!(b.params[0], ("fio_rw".to_string(), "rw".into()));
        let err = parse_fio("{\"fio version\": \"fio-3\", \"jobs\": []}", None).unwrap_err();
        assert!(err.expected.contains("jobs"), "{err}");
    }

    #[test]
    fn a_figure_fio_does_not_give_is_absent_and_a_negative_one_refused() {
        // Issue 56: absent sums and percentiles were stored as 0. A read
        // job without a "write" section and without percentiles.
        let doc = r#"{"fio version":"fio-3.33","jobs":[{"jobname":"r","groupid":0,"error":0,
            "job options":{"rw":"randread"},"job_runtime":1000,
            "read":{"iops":50.0,"bw_bytes":204800,"total_ios":50,
              "lat_ns":{"min":1000,"max":2000000,"mean":300000}}}]}"#;
        let r = &parse_fio(doc, None).unwrap()[0];
        let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
        assert!(names.contains(&"reads_per_sec"), "{names:?}");
        assert!(
            !names.contains(&"writes_per_sec") && !names.contains(&"written_mib_per_sec"),
            "no write figures in the file, none stored: {names:?}"
        );
        let lat = r.latency.as_ref().unwrap();
        assert_eq!((lat.min, lat.avg, lat.max), (0.001, 0.3, 2.0));
        assert_eq!((lat.p50, lat.p99, lat.sum), (None, None, None));
        // Issue 53, item 10: a negative rate was stored (and reported with
        // an interval of -inf..inf).
        let bad = doc.replace("\"iops\":50.0", "\"iops\":-300");
        let err = parse_fio(&bad, None).unwrap_err();
        assert!(
            err.to_string()
                .contains("a number of at least 0 at read.iops in job 'r', found '-300'"),
            "{err}"
        );
        let bad = doc.replace("\"total_ios\":50", "\"total_ios\":\"many\"");
        let err = parse_fio(&bad, None).unwrap_err();
        assert!(err.to_string().contains("read.total_ios"), "{err}");
    }
}
