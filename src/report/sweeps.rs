//! Parameter sweeps in a suite: entries of one workload that differ only
//! in one value (a line against it) or in two (a grid).

use std::collections::BTreeMap;

use crate::analysis::{Analysis, EntryAnalysis};

/// Entries of one workload whose parameters, all but `keys`, are equal.
fn groups<'a>(
    entries: &[&'a EntryAnalysis],
    keys: &[&str],
) -> BTreeMap<String, Vec<&'a EntryAnalysis>> {
    let mut groups: BTreeMap<String, Vec<&EntryAnalysis>> = BTreeMap::new();
    for e in entries {
        if !keys.iter().all(|k| e.params.contains_key(*k)) {
            continue;
        }
        let mut rest = e.params.clone();
        for k in keys {
            rest.remove(*k);
        }
        groups
            .entry(serde_json::Value::Object(rest).to_string())
            .or_default()
            .push(e);
    }
    groups
}

fn by_workload(a: &Analysis) -> BTreeMap<&str, Vec<&EntryAnalysis>> {
    let mut out: BTreeMap<&str, Vec<&EntryAnalysis>> = BTreeMap::new();
    for e in &a.entries {
        out.entry(&e.workload).or_default().push(e);
    }
    out.retain(|_, v| v.len() >= 2);
    out
}

/// One-way sweeps: (workload, the parameter, its entries in order of the
/// value), for entries that differ in exactly one numeric parameter.
pub(super) fn one_way(a: &Analysis) -> Vec<(String, String, Vec<&EntryAnalysis>)> {
    let mut out = Vec::new();
    for (workload, entries) in by_workload(a) {
        for key in entries[0].params.keys() {
            let numeric: Vec<&EntryAnalysis> = entries
                .iter()
                .copied()
                .filter(|e| e.params.get(key).is_some_and(|v| v.is_number()))
                .collect();
            for (_, mut g) in groups(&numeric, &[key]) {
                let mut values: Vec<f64> =
                    g.iter().filter_map(|e| e.params[key].as_f64()).collect();
                values.sort_by(f64::total_cmp);
                values.dedup();
                if values.len() >= 2 && values.len() == g.len() {
                    g.sort_by(|x, y| {
                        let v = |e: &EntryAnalysis| e.params[key].as_f64().unwrap_or(0.0);
                        v(x).total_cmp(&v(y))
                    });
                    out.push((workload.to_string(), key.clone(), g));
                }
            }
        }
    }
    out
}

/// A full grid over two parameters of one workload.
pub(super) struct Grid<'a> {
    pub workload: String,
    pub xkey: String,
    pub ykey: String,
    /// The values, in the suite's order.
    pub xs: Vec<String>,
    pub ys: Vec<String>,
    /// (x index, y index, the entry): every cell once.
    pub entries: Vec<(usize, usize, &'a EntryAnalysis)>,
}

/// Two-way sweeps: entries that differ in exactly two parameters and
/// cover every combination of their values (at least 2 × 2).
pub(super) fn two_way(a: &Analysis) -> Vec<Grid<'_>> {
    let mut out = Vec::new();
    for (workload, entries) in by_workload(a) {
        let keys: Vec<&String> = entries[0].params.keys().collect();
        for (i, xkey) in keys.iter().enumerate() {
            for ykey in &keys[i + 1..] {
                for (_, g) in groups(&entries, &[xkey, ykey]) {
                    let (mut xs, mut ys) = (Vec::<String>::new(), Vec::<String>::new());
                    let show = |v: &serde_json::Value| match v {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    for e in &g {
                        let (x, y) = (show(&e.params[*xkey]), show(&e.params[*ykey]));
                        if !xs.contains(&x) {
                            xs.push(x);
                        }
                        if !ys.contains(&y) {
                            ys.push(y);
                        }
                    }
                    if xs.len() < 2 || ys.len() < 2 || xs.len() * ys.len() != g.len() {
                        continue;
                    }
                    let mut cells: Vec<(usize, usize, &EntryAnalysis)> = g
                        .iter()
                        .map(|e| {
                            let xi = xs.iter().position(|x| *x == show(&e.params[*xkey]));
                            let yi = ys.iter().position(|y| *y == show(&e.params[*ykey]));
                            (xi.unwrap_or(0), yi.unwrap_or(0), *e)
                        })
                        .collect();
                    cells.sort_by_key(|c| (c.1, c.0));
                    cells.dedup_by_key(|c| (c.1, c.0));
                    if cells.len() == g.len() {
                        out.push(Grid {
                            workload: workload.to_string(),
                            xkey: xkey.to_string(),
                            ykey: ykey.to_string(),
                            xs,
                            ys,
                            entries: cells,
                        });
                    }
                }
            }
        }
    }
    out
}
