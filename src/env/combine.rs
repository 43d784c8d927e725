//! Simultaneous instances' results as one document: `count=N` copies of an
//! environment, or a group's members, summed as the comparison sees them,
//! each instance's own figures kept in the details.

use super::group;
use crate::core::result::{Metric, ResultDoc};

/// The summed throughput of instances that ran at once: higher-is-better
/// metrics add up, lower-is-better ones (latencies, times) are averaged, and
/// unitless ones (linpack's `residual` and `residual_passed`: checks, not
/// amounts) take the worst instance.
pub fn combine(label: &str, docs: &[ResultDoc]) -> Option<ResultDoc> {
    let first = docs.first()?;
    let mut out = first.clone();
    out.env.name = label.to_string();
    out.env.instances = Some(docs.len() as u32);
    out.metrics = first
        .metrics
        .iter()
        .map(|m| {
            let values: Vec<f64> = docs.iter().filter_map(|d| d.metric(&m.name)).collect();
            let sum: f64 = values.iter().sum();
            let value = match (m.unit.is_empty(), m.higher_is_better) {
                (true, true) => values.iter().copied().fold(f64::INFINITY, f64::min),
                (true, false) => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                (false, true) => sum,
                (false, false) => sum / values.len().max(1) as f64,
            };
            Metric { value, ..m.clone() }
        })
        .collect();
    out.events = docs.iter().map(|d| d.events).sum();
    // Each instance's own start (milliseconds, by its own clock): a check
    // that they ran together.
    out.details = serde_json::json!({
        "instances": docs.len(),
        "per_instance": docs.iter().map(|d| {
            serde_json::json!({
                "env": d.env.name,
                "kind": d.env.kind,
                "started_at": d.started_at,
                "metrics": d.metrics,
            })
        }).collect::<Vec<_>>(),
    });
    Some(out)
}

/// As `combine`, for a group's members: the sum is of kind "group".
pub fn combine_group(label: &str, docs: &[ResultDoc]) -> Option<ResultDoc> {
    let mut out = combine(label, docs)?;
    out.env.kind = group::DEF.name.to_string();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_instances_sum_throughput_and_average_latency() {
        let doc = |eps: f64, t: f64| ResultDoc {
            events: 10,
            ..ResultDoc::new(
                "cpu",
                "",
                vec![
                    Metric::new("events_per_sec", eps, "events/s", true),
                    Metric::new("total_time_s", t, "s", false),
                ],
            )
        };
        let c = combine("x", &[doc(100.0, 2.0), doc(50.0, 4.0)]).unwrap();
        assert_eq!(c.metric("events_per_sec"), Some(150.0));
        assert_eq!(c.metric("total_time_s"), Some(3.0));
        assert_eq!(c.events, 20);
        assert_eq!(c.env.name, "x");
        // A check is not an amount: two passed instances are "passed" (1),
        // not 2, and the residual is the worst one.
        let check = |passed: f64, residual: f64| {
            let mut d = doc(1.0, 1.0);
            d.metrics = vec![
                Metric::new("gflops", 10.0 * residual, "GFLOPS", true),
                Metric::new("residual", residual, "", false),
                Metric::new("residual_passed", passed, "", true),
            ];
            d
        };
        let c = combine("x", &[check(1.0, 0.5), check(1.0, 3.0), check(1.0, 2.0)]).unwrap();
        assert_eq!(c.metric("gflops"), Some(55.0));
        assert_eq!(c.metric("residual"), Some(3.0));
        assert_eq!(c.metric("residual_passed"), Some(1.0));
        let c = combine("x", &[check(1.0, 0.5), check(0.0, 40.0)]).unwrap();
        assert_eq!(c.metric("residual_passed"), Some(0.0));
        assert_eq!(c.metric("residual"), Some(40.0));
    }
}
