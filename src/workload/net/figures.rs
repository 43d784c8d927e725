//! The figures of one net test's outcome, netperf's way: its metrics and
//! the lines of its report (throughput each way, transactions and latency
//! percentiles, UDP loss, retransmissions, CPU on both ends).

use crate::core::result::Metric;

use super::client::{Outcome, Params};
use super::protocol::Test;
use super::METRICS;

fn metric(name: &str, value: f64) -> Metric {
    crate::workload::metric_from(METRICS, name, value)
}

fn mbit(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    }
}

/// The figures of one outcome, netperf's way.
pub(super) fn figures(p: &Params, o: &Outcome) -> (Vec<Metric>, String) {
    let mut metrics = Vec::new();
    let mut text = String::new();
    let secs = o.elapsed.as_secs_f64();
    let stream_part = |metrics: &mut Vec<Metric>, text: &mut String| {
        let received: u64 = o.server.bytes_received.iter().sum();
        let v = mbit(received, secs);
        metrics.push(metric("tcp_stream_mbit_per_sec", v));
        text.push_str(&format!(
            "    client to server: {v:>12.2} 10^6bit/s ({received} bytes received in {secs:.3} s)\n"
        ));
    };
    let maerts_part = |metrics: &mut Vec<Metric>, text: &mut String| {
        let server_secs = o
            .server
            .maerts_elapsed_s
            .iter()
            .copied()
            .fold(0.0, f64::max);
        let v = mbit(o.bytes_received, server_secs);
        metrics.push(metric("tcp_maerts_mbit_per_sec", v));
        text.push_str(&format!(
            "    server to client: {v:>12.2} 10^6bit/s ({} bytes received in {server_secs:.3} s)\n",
            o.bytes_received
        ));
    };
    match p.test {
        Test::TcpStream => {
            stream_part(&mut metrics, &mut text);
            if p.bidir {
                maerts_part(&mut metrics, &mut text);
            }
        }
        Test::TcpMaerts => {
            maerts_part(&mut metrics, &mut text);
            if p.bidir {
                stream_part(&mut metrics, &mut text);
            }
        }
        Test::TcpRr | Test::TcpCrr | Test::UdpRr => {
            request_response(p, o, secs, &mut metrics, &mut text)
        }
        Test::UdpStream => {
            let sent = mbit(o.udp_bytes_sent, secs);
            let recv = mbit(o.server.udp_bytes, secs);
            let loss = if o.udp_datagrams_sent > 0 {
                (100.0 * (1.0 - o.server.udp_datagrams as f64 / o.udp_datagrams_sent as f64))
                    .max(0.0)
            } else {
                0.0
            };
            metrics.push(metric("udp_stream_mbit_per_sec", recv));
            metrics.push(metric("udp_stream_send_mbit_per_sec", sent));
            metrics.push(metric("udp_stream_loss_pct", loss));
            metrics.push(metric(
                "udp_stream_out_of_order",
                o.server.udp_out_of_order as f64,
            ));
            text.push_str(&format!(
                "    sent:     {sent:>12.2} 10^6bit/s ({} datagrams of {} bytes, {} send errors)\n    \
                 received: {recv:>12.2} 10^6bit/s ({} datagrams)\n    \
                 loss: {loss:.3} %, out of order: {}\n",
                o.udp_datagrams_sent,
                p.send_size,
                o.udp_send_errors,
                o.server.udp_datagrams,
                o.server.udp_out_of_order
            ));
        }
    }
    if !p.test.is_udp() {
        let retrans = o.retransmits + o.server.retransmits;
        metrics.push(metric("tcp_retransmits", retrans as f64));
        text.push_str(&format!("    TCP retransmissions: {retrans}\n"));
    }
    metrics.push(metric("cpu_local_pct", o.cpu_local_pct));
    metrics.push(metric("cpu_remote_pct", o.server.cpu_pct));
    text.push_str(&format!(
        "    CPU busy (whole system): local {:.1} %, remote {:.1} %\n",
        o.cpu_local_pct, o.server.cpu_pct
    ));
    (metrics, text)
}

/// A request/response test's figures (TCP_RR, TCP_CRR, UDP_RR):
/// transactions per second, latency percentiles, and UDP_RR's timeouts.
fn request_response(
    p: &Params,
    o: &Outcome,
    secs: f64,
    metrics: &mut Vec<Metric>,
    text: &mut String,
) {
    let tps = if secs > 0.0 {
        o.transactions as f64 / secs
    } else {
        0.0
    };
    let name = p.test.name();
    metrics.push(metric(&format!("{name}_trans_per_sec"), tps));
    text.push_str(&format!(
        "    transactions per second: {tps:>12.2} ({} in {secs:.3} s)\n",
        o.transactions
    ));
    if let Some(h) = o.histogram.as_ref().filter(|h| !h.is_empty()) {
        let us = |ns: u64| ns as f64 / 1e3;
        let rows = [
            ("p50", us(h.value_at_quantile(0.50))),
            ("p90", us(h.value_at_quantile(0.90))),
            ("p99", us(h.value_at_quantile(0.99))),
            ("p999", us(h.value_at_quantile(0.999))),
            ("max", us(h.max())),
        ];
        text.push_str("    latency (us):");
        for (label, v) in rows {
            metrics.push(metric(&format!("{name}_latency_{label}_us"), v));
            text.push_str(&format!(" {label} {v:.1}"));
        }
        text.push('\n');
    }
    if p.test == Test::UdpRr {
        metrics.push(metric("udp_rr_timeouts", o.udp_timeouts as f64));
        text.push_str(&format!(
            "    timeouts (lost datagrams): {}\n",
            o.udp_timeouts
        ));
    }
}
