//! Parameter sweeps: entries of one workload that differ in exactly one
//! numeric parameter, drawn as lines.

use std::collections::BTreeMap;

use super::super::Analysis;
use crate::analysis::EntryAnalysis;

/// Parameter sweeps: entries of one workload that differ in exactly one
/// numeric parameter form a series.
pub(super) fn sweeps(a: &Analysis) -> Vec<(String, String, Vec<&EntryAnalysis>)> {
    let mut out = Vec::new();
    let mut by_workload: BTreeMap<&str, Vec<&EntryAnalysis>> = BTreeMap::new();
    for e in &a.entries {
        by_workload.entry(&e.workload).or_default().push(e);
    }
    for (workload, entries) in by_workload {
        if entries.len() < 2 {
            continue;
        }
        let keys: Vec<&String> = entries[0].params.keys().collect();
        for key in keys {
            let mut groups: BTreeMap<String, Vec<&EntryAnalysis>> = BTreeMap::new();
            for e in &entries {
                if !e.params.get(key).is_some_and(|v| v.is_number()) {
                    continue;
                }
                let mut rest = e.params.clone();
                rest.remove(key);
                groups
                    .entry(serde_json::Value::Object(rest).to_string())
                    .or_default()
                    .push(e);
            }
            for (_, mut g) in groups {
                let mut values: Vec<f64> =
                    g.iter().filter_map(|e| e.params[key].as_f64()).collect();
                values.sort_by(f64::total_cmp);
                values.dedup();
                if values.len() >= 2 && values.len() == g.len() {
                    g.sort_by(|x, y| {
                        x.params[key]
                            .as_f64()
                            .unwrap_or(0.0)
                            .total_cmp(&y.params[key].as_f64().unwrap_or(0.0))
                    });
                    out.push((workload.to_string(), key.clone(), g));
                }
            }
        }
    }
    out
}
