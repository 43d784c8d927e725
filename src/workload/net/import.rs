//! iperf3's and netperf's output read back as runs of `net` (`virtperf
//! import`).
//!
//! iperf3 `-J`, client or server side: TCP is tcp_stream (tcp_maerts with
//! `-R`), its receiver's `end.sum_received.bits_per_second` the Mbit/s;
//! UDP is udp_stream, the receiver's rate, `lost_percent` the loss, the
//! sender's rate beside them; `-P` is `--net-streams`, UDP's `-b`
//! `--net-udp-rate`. Retransmits (client) and CPU use are kept too.
//!
//! netperf, TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, UDP_RR and UDP_STREAM:
//! the test from its banner (`MIGRATED TCP STREAM TEST from ...`); the
//! figures from its default table, from `-o` (a CSV header of output
//! names and a line of values) or from `-k` (`NAME=value` lines). A
//! stream's throughput in its `-f` units becomes Mbit/s, a
//! request/response test's rate trans/s, with its request and response
//! sizes (`-r`) choosing the entry; `-I`'s confidence (the banner's `+/-W%
//! @ L% conf.` and the `!!! Confidence intervals:` warning) is kept as
//! the run's own figures. netperf's output does not state its version.

use super::DEF;
use crate::workload::import::{
    self, json_number, leading_number, lines, Format, Imported, Refusal,
};

pub const IPERF3: Format = Format {
    kind: "iperf3",
    tool: "iperf3",
    summary: "iperf3 -J, client or server side, TCP or UDP (its \"start\" with an iperf version)",
    detect: |text| {
        let head: String = text.chars().take(4096).collect();
        head.trim_start().starts_with('{')
            && head.contains("\"start\"")
            && (head.contains("\"iperf 3") || head.contains("\"test_start\""))
    },
    parse: parse_iperf3,
};

fn parse_iperf3(text: &str, _sub: Option<&str>) -> Result<Vec<Imported>, Refusal> {
    let doc = import::json(text, "iperf3's JSON document")?;
    if let Some(e) = doc.get("error").and_then(|e| e.as_str()) {
        return Err(Refusal::new(
            0,
            "a finished iperf3 test",
            &format!("iperf3's error: {e}"),
        ));
    }
    let start = doc
        .get("start")
        .ok_or_else(|| Refusal::new(0, "iperf3's \"start\" object", ""))?;
    let end = doc
        .get("end")
        .filter(|e| e.is_object())
        .ok_or_else(|| Refusal::new(0, "iperf3's \"end\" object (was the test cut short?)", ""))?;
    let version = start
        .get("version")
        .and_then(|v| v.as_str())
        .map(|v| v.trim_start_matches("iperf ").chars().take(20).collect())
        .unwrap_or_else(|| "unknown".to_string());
    let test = start
        .get("test_start")
        .ok_or_else(|| Refusal::new(0, "iperf3's \"start.test_start\" object", ""))?;
    let protocol = test.get("protocol").and_then(|p| p.as_str()).unwrap_or("");
    let server = start.get("accepted_connection").is_some();
    let reverse = json_number(test, &["reverse"]).unwrap_or(0.0) != 0.0;
    let streams = json_number(test, &["num_streams"])
        .unwrap_or(1.0)
        .clamp(1.0, 1024.0);
    let mut imp = Imported::new(&DEF, "iperf3", &version);
    imp.host = start
        .get("system_info")
        .and_then(|s| s.as_str())
        .map(|s| s.chars().take(120).collect())
        .unwrap_or_default();
    let received = |key: &str| {
        json_number(end, &["sum_received", key]).or_else(|| json_number(end, &["sum", key]))
    };
    match protocol {
        "TCP" => {
            let test_word = if reverse { "tcp_maerts" } else { "tcp_stream" };
            imp.option("net-test", test_word);
            imp.option("net-streams", streams);
            let bps = json_number(end, &["sum_received", "bits_per_second"]).ok_or_else(|| {
                Refusal::new(0, "end.sum_received.bits_per_second in iperf3's JSON", "")
            })?;
            imp.declared(&format!("{test_word}_mbit_per_sec"), bps / 1e6);
            if !server {
                if let Some(r) = json_number(end, &["sum_sent", "retransmits"]) {
                    imp.declared("tcp_retransmits", r);
                }
            }
            imp.duration_s = received("seconds").unwrap_or(0.0);
        }
        "UDP" => iperf3_udp(&mut imp, end, test, streams)?,
        other => {
            return Err(Refusal::new(
                0,
                "start.test_start.protocol TCP or UDP",
                other,
            ))
        }
    }
    if let Some(cpu) = end.get("cpu_utilization_percent") {
        if let Some(h) = json_number(cpu, &["host_total"]) {
            imp.declared("cpu_local_pct", h);
        }
        if let Some(r) = json_number(cpu, &["remote_total"]).filter(|_| !server) {
            imp.declared("cpu_remote_pct", r);
        }
    }
    imp.details = serde_json::json!({
        "side": if server { "server" } else { "client" },
        "test_start": test.clone(),
    });
    Ok(vec![imp])
}

/// A UDP test's figures from iperf3's `end` (the receiver's sums, `sum`
/// on a server's side).
fn iperf3_udp(
    imp: &mut Imported,
    end: &serde_json::Value,
    test: &serde_json::Value,
    streams: f64,
) -> Result<(), Refusal> {
    let received = |key: &str| {
        json_number(end, &["sum_received", key]).or_else(|| json_number(end, &["sum", key]))
    };
    imp.option("net-test", "udp_stream");
    imp.option("net-streams", streams);
    if let Some(rate) = json_number(test, &["target_bitrate"]).filter(|r| *r > 0.0) {
        imp.option("net-udp-rate", rate / 1e6);
    }
    let bps = received("bits_per_second")
        .ok_or_else(|| Refusal::new(0, "end.sum_received.bits_per_second in iperf3's JSON", ""))?;
    imp.declared("udp_stream_mbit_per_sec", bps / 1e6);
    if let Some(loss) = received("lost_percent") {
        imp.declared("udp_stream_loss_pct", loss);
    }
    if let Some(sent) = json_number(end, &["sum_sent", "bits_per_second"]).filter(|b| *b > 0.0) {
        imp.declared("udp_stream_send_mbit_per_sec", sent / 1e6);
    }
    if let Some(j) = received("jitter_ms") {
        imp.own("jitter_ms", j, "ms", false);
    }
    if let Some(p) = received("lost_packets") {
        imp.own("lost_packets", p, "datagrams", false);
    }
    imp.duration_s = received("seconds").unwrap_or(0.0);
    Ok(())
}

/// netperf's banner words and the test they name.
const TESTS: &[(&str, &str)] = &[
    ("TCP STREAM TEST", "tcp_stream"),
    ("TCP MAERTS TEST", "tcp_maerts"),
    ("TCP REQUEST/RESPONSE TEST", "tcp_rr"),
    ("TCP Connect/Request/Response TEST", "tcp_crr"),
    ("UDP REQUEST/RESPONSE TEST", "udp_rr"),
    ("UDP STREAM TEST", "udp_stream"),
];

/// The test a banner line names.
fn banner(line: &str) -> Option<&'static str> {
    let t = line.trim();
    let t = t.strip_prefix("MIGRATED ").unwrap_or(t);
    TESTS
        .iter()
        .find(|(words, _)| t.starts_with(words) && t[words.len()..].starts_with(" from"))
        .map(|(_, test)| *test)
}

pub const NETPERF: Format = Format {
    kind: "netperf",
    tool: "netperf",
    summary: "netperf's default output, -o (CSV) or -k (NAME=value), with or without -I, of TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, UDP_RR and UDP_STREAM (its 'MIGRATED ... TEST from' banner)",
    detect: |text| text.lines().take(20).any(|l| banner(l).is_some()),
    parse: parse_netperf,
};

/// The `-o`/`-k` output names netperf prints, by their `-k` name and the
/// header `-o` prints for them.
const NAMES: &[(&str, &str)] = &[
    ("THROUGHPUT", "Throughput"),
    ("THROUGHPUT_UNITS", "Throughput Units"),
    ("ELAPSED_TIME", "Elapsed Time (sec)"),
    ("REQUEST_SIZE", "Request Size Bytes"),
    ("RESPONSE_SIZE", "Response Size Bytes"),
    ("LOCAL_CPU_UTIL", "Local CPU Util %"),
    ("REMOTE_CPU_UTIL", "Remote CPU Util %"),
    ("MIN_LATENCY", "Minimum Latency Microseconds"),
    ("MEAN_LATENCY", "Mean Latency Microseconds"),
    ("P50_LATENCY", "50th Percentile Latency Microseconds"),
    ("P90_LATENCY", "90th Percentile Latency Microseconds"),
    ("P99_LATENCY", "99th Percentile Latency Microseconds"),
    ("MAX_LATENCY", "Maximum Latency Microseconds"),
    ("STDDEV_LATENCY", "Stddev Latency Microseconds"),
    ("LOCAL_SEND_CALLS", "Local Send Calls"),
    ("REMOTE_RECV_CALLS", "Remote Recv Calls"),
    ("CONFIDENCE_LEVEL", "Confidence Level Percent"),
    ("CONFIDENCE_INTERVAL", "Confidence Width Target"),
    ("CONFIDENCE_ITERATION", "Confidence Iterations Run"),
    ("THROUGHPUT_CONFID", "Throughput Confidence Width (%)"),
    ("LOCAL_CPU_CONFID", "Local CPU Confidence Width (%)"),
    ("REMOTE_CPU_CONFID", "Remote CPU Confidence Width (%)"),
];

/// An output name (either spelling) as its `-k` name; one netperf does
/// not document here becomes upper snake case of itself.
fn key_of(name: &str) -> String {
    let name = name.trim();
    NAMES
        .iter()
        .find(|(k, h)| *k == name || *h == name)
        .map(|(k, _)| k.to_string())
        .unwrap_or_else(|| {
            name.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_uppercase()
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
                .split('_')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("_")
        })
}

/// Mbit/s per one of netperf's throughput units (`-f`).
fn mbit_scale(units: &str) -> Option<f64> {
    Some(match units.trim().trim_end_matches("ec") {
        "10^0bits/s" => 1e-6,
        "10^3bits/s" => 1e-3,
        "10^6bits/s" => 1.0,
        "10^9bits/s" => 1e3,
        "Bytes/s" => 8.0 / 1e6,
        "KBytes/s" => 8.0 * 1024.0 / 1e6,
        "MBytes/s" => 8.0 * 1048576.0 / 1e6,
        "GBytes/s" => 8.0 * 1073741824.0 / 1e6,
        _ => return None,
    })
}

fn numbers(line: &str) -> Option<Vec<f64>> {
    let xs: Vec<f64> = line
        .split_whitespace()
        .map(|w| w.parse::<f64>().ok().filter(|x| x.is_finite()))
        .collect::<Option<_>>()?;
    (!xs.is_empty()).then_some(xs)
}

fn parse_netperf(text: &str, _sub: Option<&str>) -> Result<Vec<Imported>, Refusal> {
    let all = lines(text)?;
    let (at, test) = all
        .iter()
        .take(20)
        .enumerate()
        .find_map(|(i, (_, l))| banner(l).map(|t| (i, t)))
        .ok_or_else(|| {
            let (n, l) = all.first().copied().unwrap_or((0, ""));
            Refusal::new(
                n,
                "netperf's banner ('MIGRATED TCP STREAM TEST from ...'; run netperf without -P 0)",
                l,
            )
        })?;
    let (banner_no, banner_line) = all[at];
    let body = &all[at + 1..];
    let rr = test.ends_with("rr");
    let mut imp = Imported::new(&DEF, "netperf", "unknown");
    imp.option("net-test", test);
    // -I: "... : +/-2.500% @ 99% conf. : ..."
    if let Some((_, conf)) = banner_line.split_once("+/-") {
        if let Some((w, rest)) = leading_number(conf) {
            imp.own("confidence_target_pct", w, "%", false);
            if let Some((_, l)) = rest.split_once('@') {
                if let Some((level, _)) = leading_number(l) {
                    imp.own("confidence_level_pct", level, "%", true);
                }
            }
        }
    }
    // -I's warning: "!!! Confidence intervals: Throughput      : 6.127%"
    for (_, l) in body {
        let t = l.trim_start_matches('!').trim();
        let t = t.strip_prefix("Confidence intervals:").unwrap_or(t).trim();
        for (name, metric) in [
            ("Throughput", "throughput_confidence_width_pct"),
            ("Local CPU util", "local_cpu_confidence_width_pct"),
            ("Remote CPU util", "remote_cpu_confidence_width_pct"),
        ] {
            if let Some(rest) = t.strip_prefix(name) {
                if let Some((_, v)) = rest.split_once(':') {
                    if let Some((x, _)) = leading_number(v) {
                        imp.own(metric, x, "%", false);
                    }
                }
            }
        }
    }
    let fields: Vec<(usize, &str)> = body
        .iter()
        .filter(|(_, l)| !l.trim_start().starts_with("!!!") && !l.trim().is_empty())
        .copied()
        .collect();
    let keyval = fields.iter().any(|(_, l)| {
        l.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
    });
    let csv = !keyval
        && fields.len() >= 2
        && fields[0].1.contains(',')
        && fields[0].1.split(',').count() == fields[1].1.split(',').count()
        && fields[0].1.chars().any(|c| c.is_ascii_alphabetic());
    let mut values: Vec<(String, String)> = Vec::new();
    if keyval {
        for (_, l) in &fields {
            if let Some((k, v)) = l.split_once('=') {
                values.push((key_of(k), v.trim().to_string()));
            }
        }
    } else if csv {
        for (k, v) in fields[0].1.split(',').zip(fields[1].1.split(',')) {
            values.push((key_of(k), v.trim().to_string()));
        }
    }
    if keyval || csv {
        selected(&mut imp, test, rr, &values, banner_no, body)?;
    } else {
        table(&mut imp, test, rr, body, banner_no)?;
    }
    Ok(vec![imp])
}

/// The figures of `-o` or `-k` output.
fn selected(
    imp: &mut Imported,
    test: &str,
    rr: bool,
    values: &[(String, String)],
    banner_no: usize,
    body: &[(usize, &str)],
) -> Result<(), Refusal> {
    let get = |k: &str| values.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let num = |k: &str| {
        get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|x| x.is_finite())
    };
    let last = body.last().map(|(n, _)| *n).unwrap_or(banner_no);
    let throughput = num("THROUGHPUT").ok_or_else(|| {
        Refusal::new(
            last,
            "a THROUGHPUT figure in netperf's -o/-k output (select THROUGHPUT,THROUGHPUT_UNITS)",
            get("THROUGHPUT").unwrap_or(""),
        )
    })?;
    if rr {
        imp.declared(&format!("{test}_trans_per_sec"), throughput);
        for (k, opt) in [
            ("REQUEST_SIZE", "net-req-size"),
            ("RESPONSE_SIZE", "net-resp-size"),
        ] {
            if let Some(x) = num(k).filter(|x| *x >= 1.0) {
                imp.option(opt, x);
            }
        }
        for (k, p) in [
            ("P50_LATENCY", "p50"),
            ("P90_LATENCY", "p90"),
            ("P99_LATENCY", "p99"),
            ("MAX_LATENCY", "max"),
        ] {
            if let Some(x) = num(k) {
                imp.declared(&format!("{test}_latency_{p}_us"), x);
            }
        }
    } else {
        let units = get("THROUGHPUT_UNITS").unwrap_or("10^6bits/s");
        let scale = mbit_scale(units).ok_or_else(|| {
            Refusal::new(
                last,
                "THROUGHPUT_UNITS of 10^6bits/s, 10^3bits/s, KBytes/s ... (netperf -f)",
                units,
            )
        })?;
        imp.declared(&format!("{test}_mbit_per_sec"), throughput * scale);
        if test == "udp_stream" {
            if let (Some(sent), Some(got)) = (num("LOCAL_SEND_CALLS"), num("REMOTE_RECV_CALLS")) {
                if sent > 0.0 {
                    imp.declared("udp_stream_loss_pct", (1.0 - got / sent).max(0.0) * 100.0);
                }
            }
        }
    }
    if let Some(x) = num("LOCAL_CPU_UTIL").filter(|x| *x >= 0.0) {
        imp.declared("cpu_local_pct", x);
    }
    if let Some(x) = num("REMOTE_CPU_UTIL").filter(|x| *x >= 0.0) {
        imp.declared("cpu_remote_pct", x);
    }
    if let Some(t) = num("ELAPSED_TIME") {
        imp.duration_s = t;
    }
    // Every other number under netperf's own name.
    for (k, v) in values {
        if matches!(
            k.as_str(),
            "THROUGHPUT"
                | "LOCAL_CPU_UTIL"
                | "REMOTE_CPU_UTIL"
                | "P50_LATENCY"
                | "P90_LATENCY"
                | "P99_LATENCY"
                | "MAX_LATENCY"
        ) {
            continue;
        }
        // netperf writes -1 for what it did not measure: absent.
        if let Some(x) = v.parse::<f64>().ok().filter(|x| *x != -1.0) {
            imp.own(&k.to_ascii_lowercase(), x, "", true);
        }
    }
    Ok(())
}

/// The figures of netperf's default table: the data lines are the lines of
/// numbers after the column headers.
fn table(
    imp: &mut Imported,
    test: &str,
    rr: bool,
    body: &[(usize, &str)],
    banner_no: usize,
) -> Result<(), Refusal> {
    let data: Vec<(usize, Vec<f64>)> = body
        .iter()
        .filter(|(_, l)| !l.trim_start().starts_with("!!!"))
        .filter_map(|(n, l)| numbers(l).map(|xs| (*n, xs)))
        .collect();
    let last = body.last().copied().unwrap_or((banner_no, ""));
    let first = data.first().ok_or_else(|| {
        Refusal::new(
            last.0,
            "netperf's result line (numbers under its column headers) before the end of the file",
            last.1,
        )
    })?;
    if rr {
        rr_line(imp, test, first, body)
    } else if test == "udp_stream" {
        udp_stream_lines(imp, &data, body, last)
    } else {
        stream_line(imp, test, first, body, banner_no)
    }
}

/// A refusal of result line `n` of `body` for having fewer than `want`
/// numbers (`what` they are).
fn too_few(body: &[(usize, &str)], n: usize, want: usize, what: &str) -> Refusal {
    Refusal::new(
        n,
        format!("{want} or more numbers on netperf's result line ({what})"),
        body.iter()
            .find(|(m, _)| *m == n)
            .map(|(_, l)| *l)
            .unwrap_or(""),
    )
}

/// A request/response test's line: send socket, recv socket, request,
/// response, elapsed, rate[, cpu local, cpu remote, ...].
fn rr_line(
    imp: &mut Imported,
    test: &str,
    (n, xs): &(usize, Vec<f64>),
    body: &[(usize, &str)],
) -> Result<(), Refusal> {
    if xs.len() < 6 {
        return Err(too_few(
            body,
            *n,
            6,
            "socket sizes, request and response size, elapsed seconds, transactions per second",
        ));
    }
    imp.declared(&format!("{test}_trans_per_sec"), xs[5]);
    if xs[2] >= 1.0 {
        imp.option("net-req-size", xs[2]);
    }
    if xs[3] >= 1.0 {
        imp.option("net-resp-size", xs[3]);
    }
    imp.duration_s = xs[4];
    if xs.len() >= 8 {
        cpu_utilization(imp, xs[6], xs[7]);
    }
    Ok(())
}

/// UDP_STREAM's two lines. Sender: socket, message, elapsed, messages
/// okay, errors, throughput; receiver: socket, elapsed, messages okay,
/// throughput.
fn udp_stream_lines(
    imp: &mut Imported,
    data: &[(usize, Vec<f64>)],
    body: &[(usize, &str)],
    last: (usize, &str),
) -> Result<(), Refusal> {
    let (n, xs) = &data[0];
    if xs.len() < 6 {
        return Err(too_few(
            body,
            *n,
            6,
            "socket size, message size, elapsed seconds, messages, errors, throughput",
        ));
    }
    let recv = data.get(1).ok_or_else(|| {
        Refusal::new(
            last.0,
            "netperf's second UDP_STREAM line (the receiver's) before the end of the file",
            last.1,
        )
    })?;
    if recv.1.len() < 4 {
        return Err(too_few(
            body,
            recv.0,
            4,
            "socket size, elapsed seconds, messages, throughput",
        ));
    }
    let scale = units_of(body).unwrap_or(1.0);
    imp.declared("udp_stream_mbit_per_sec", recv.1[3] * scale);
    imp.declared("udp_stream_send_mbit_per_sec", xs[5] * scale);
    if xs[3] > 0.0 {
        imp.declared(
            "udp_stream_loss_pct",
            (1.0 - recv.1[2] / xs[3]).max(0.0) * 100.0,
        );
    }
    imp.own("messages_sent", xs[3], "datagrams", true);
    imp.own("messages_received", recv.1[2], "datagrams", true);
    imp.duration_s = xs[2];
    Ok(())
}

/// A stream test's line: recv socket, send socket, message, elapsed,
/// throughput[, cpu local, cpu remote, ...].
fn stream_line(
    imp: &mut Imported,
    test: &str,
    (n, xs): &(usize, Vec<f64>),
    body: &[(usize, &str)],
    banner_no: usize,
) -> Result<(), Refusal> {
    if xs.len() < 5 {
        return Err(too_few(
            body,
            *n,
            5,
            "socket sizes, message size, elapsed seconds, throughput",
        ));
    }
    let scale = units_of(body).ok_or_else(|| {
        Refusal::new(
            banner_no + 1,
            "a throughput unit in netperf's column headers (10^6bits/sec, KBytes/sec, ...)",
            "",
        )
    })?;
    imp.declared(&format!("{test}_mbit_per_sec"), xs[4] * scale);
    imp.duration_s = xs[3];
    if xs.len() >= 7 && body.iter().any(|(_, l)| l.contains("Utilization")) {
        cpu_utilization(imp, xs[5], xs[6]);
    }
    Ok(())
}

/// netperf's CPU utilization columns; -1 is its "not measured" (a side
/// without -c or -C): absent, never stored.
fn cpu_utilization(imp: &mut Imported, local: f64, remote: f64) {
    for (name, x) in [("cpu_local_pct", local), ("cpu_remote_pct", remote)] {
        if x != -1.0 {
            imp.declared(name, x);
        }
    }
}

/// The throughput unit in the column headers, as Mbit/s per unit.
fn units_of(body: &[(usize, &str)]) -> Option<f64> {
    body.iter()
        .flat_map(|(_, l)| l.split_whitespace())
        .find_map(mbit_scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banners_name_the_five_tests() {
        assert_eq!(
            banner("MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET"),
            Some("tcp_stream")
        );
        assert_eq!(
            banner("TCP Connect/Request/Response TEST from x"),
            Some("tcp_crr")
        );
        assert_eq!(banner("MIGRATED UDP STREAM TESTING"), None);
        assert_eq!(key_of("Throughput Units"), "THROUGHPUT_UNITS");
        assert_eq!(
            key_of("Local Transport Retransmissions"),
            "LOCAL_TRANSPORT_RETRANSMISSIONS"
        );
        assert_eq!(mbit_scale("10^9bits/sec"), Some(1e3));
    }
}
