//! Latency histograms (HDR, nanoseconds) and their summary in milliseconds.

use crate::core::result::Latency;

pub type Histogram = hdrhistogram::Histogram<u64>;

/// A histogram from 1 ns to one hour at three significant digits.
pub fn new_histogram() -> Histogram {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// min/avg/max and percentiles in milliseconds; `percentile` is the one the
/// user picked for the text summary.
pub fn summarize(h: &Histogram, percentile: f64) -> Latency {
    if h.is_empty() {
        // No event: no percentile exists; their sum is 0, as sysbench says.
        return Latency {
            sum: Some(0.0),
            ..Latency::default()
        };
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    let q = |p: f64| ms(h.value_at_quantile(p));
    Latency {
        min: ms(h.min()),
        avg: h.mean() / 1e6,
        max: ms(h.max()),
        p50: Some(q(0.50)),
        p95: Some(q(0.95)),
        p99: Some(q(0.99)),
        p999: Some(q(0.999)),
        selected: Some((percentile, q(percentile / 100.0))),
        sum: Some(h.mean() * h.len() as f64 / 1e6),
    }
}
