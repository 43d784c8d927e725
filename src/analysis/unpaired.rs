//! Imported runs the baseline has nothing to set beside: an entry of
//! imported runs whose parameters no measured entry shares has no ratio,
//! and its rows say why, naming the parameters in which it differs from the
//! nearest entry the baseline ran (what a log would have to be made with to
//! be compared), so its figure still stands beside the measured ones with a
//! reason instead of a blank. Likewise an entry of a comparison made by
//! `compare --baseline-from` that the earlier comparison did not run (or
//! ran with other parameters).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{EntryAnalysis, ImportedSource};

/// The parameters `stated` gives that `other` does not share: (name, the
/// value stated, the other's value or "unset"). How long a run lasted
/// (`time`, `events`) is not a difference: pairing ignores it too.
pub fn differing(
    stated: &Map<String, Value>,
    other: &Map<String, Value>,
) -> Vec<(String, String, String)> {
    stated
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "time" | "events"))
        .filter(|(k, v)| other.get(k.as_str()) != Some(v))
        .map(|(k, v)| {
            let theirs = other
                .get(k.as_str())
                .map_or_else(|| "unset".to_string(), shown);
            (k.clone(), shown(v), theirs)
        })
        .collect()
}

/// "cpu_max_prime 10000 vs 20000, threads 2 vs 1".
pub fn describe(diffs: &[(String, String, String)]) -> String {
    diffs
        .iter()
        .map(|(k, a, b)| format!("{k} {a} vs {b}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn shown(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Gives every imported environment's rows in an entry the baseline did not
/// run the reason they have no ratio.
pub(super) fn explain(
    entries: &mut [EntryAnalysis],
    envs: &[String],
    baseline: &str,
    imported: &BTreeMap<String, Vec<ImportedSource>>,
) {
    let Some(bi) = envs.iter().position(|e| e == baseline) else {
        return;
    };
    let ran = |e: &EntryAnalysis| {
        e.metrics
            .iter()
            .any(|m| m.per_env.get(bi).is_some_and(|s| !s.samples.is_empty()))
    };
    // The entries the baseline ran: (workload, label, parameters).
    let measured: Vec<(String, String, Map<String, Value>)> = entries
        .iter()
        .filter(|e| ran(e))
        .map(|e| (e.workload.clone(), e.label.clone(), e.params.clone()))
        .collect();
    for e in entries.iter_mut().filter(|e| !ran(e)) {
        let nearest = measured
            .iter()
            .filter(|(w, _, _)| *w == e.workload)
            .map(|(_, label, params)| (label, differing(&e.params, params)))
            .min_by_key(|(_, d)| d.len());
        let why = match nearest {
            Some((label, d)) if !d.is_empty() => format!(
                "{baseline} ran this test with other parameters ({} in entry '{label}'): import a log made with {} to compare it",
                describe(&d),
                d.iter()
                    .map(|(k, _, b)| format!("{k} {b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some((label, _)) => format!(
                "{baseline} has no run of this entry; entry '{label}' is the nearest it ran"
            ),
            None => format!(
                "{baseline} ran no {} test: compare one beside it ('virtperf compare ... {}')",
                e.workload, e.workload
            ),
        };
        for m in &mut e.metrics {
            for (ei, s) in m.per_env.iter_mut().enumerate() {
                let unexplained = s.vs_baseline.is_none() && s.not_comparable.is_none();
                if ei != bi
                    && unexplained
                    && !s.samples.is_empty()
                    && imported.contains_key(&envs[ei])
                {
                    s.not_comparable = Some(why.clone());
                }
            }
        }
    }
}

/// Gives the rows of every entry the borrowed baseline has no runs of the
/// reason `compare --baseline-from` found when it planned (the entry is
/// missing there, or was run with other parameters).
pub(super) fn borrowed(
    entries: &mut [EntryAnalysis],
    envs: &[String],
    baseline: &str,
    from: &crate::store::BaselineFrom,
) {
    let Some(bi) = envs.iter().position(|e| e == baseline) else {
        return;
    };
    for e in entries.iter_mut() {
        let why = from
            .not_comparable
            .iter()
            .find(|(label, _)| *label == e.label)
            .map_or_else(
                || {
                    format!(
                        "comparison #{} of {} has no baseline run of this entry",
                        from.comparison, from.store
                    )
                },
                |(_, why)| why.clone(),
            );
        for m in &mut e.metrics {
            if m.per_env.get(bi).is_some_and(|s| !s.samples.is_empty()) {
                continue;
            }
            for (ei, s) in m.per_env.iter_mut().enumerate() {
                if ei != bi && s.not_comparable.is_none() && !s.samples.is_empty() {
                    s.not_comparable = Some(why.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_stated_parameters_that_differ_are_named_and_the_runs_length_is_not() {
        let stated = json!({"cpu_max_prime": 10000, "threads": 1, "time": 10});
        let other = json!({"cpu_max_prime": 20000, "threads": 1, "time": 1, "events": 0});
        let d = differing(stated.as_object().unwrap(), other.as_object().unwrap());
        assert_eq!(describe(&d), "cpu_max_prime 10000 vs 20000");
        let stated = json!({"fio_iodepth": 32});
        let d = differing(stated.as_object().unwrap(), other.as_object().unwrap());
        assert_eq!(describe(&d), "fio_iodepth 32 vs unset");
    }
}
