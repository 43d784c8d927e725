//! `compare --baseline-from STORE[#N]`: an earlier comparison's baseline
//! (another day, maybe another host) as this comparison's. Its runs of the
//! entries this suite also runs, with the same parameters, are copied into
//! the new comparison under a label of their own ("host from #3"), and this
//! comparison measures only its own environments. No run then has a
//! partner of its round, so the paired sequential design does not hold:
//! the comparison runs in the fixed design, whose verdicts (Welch's t on
//! logs, Mann–Whitney beside it: `stats::assess_family`) are valid for
//! independent samples. An entry the earlier comparison did not run, or ran
//! with other parameters, is run and reported as not comparable, with why.
//!
//! Everything is read and checked before anything is written: a store that
//! is not there, a comparison it does not hold or no entry in common is bad
//! input naming `--baseline-from`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use crate::analysis::{unpaired, unusable};
use crate::core::options::{CliError, OptKind, OptionSpec, NOT_PARAMS};
use crate::core::result::EnvInfo;
use crate::store::{is_url, BaselineFrom, ComparisonRow, Location, RunRow, Store};
use crate::suite::Suite;

pub const OPTION: OptionSpec = OptionSpec::new(
    "baseline-from",
    OptKind::Text,
    "",
    "STORE[#N]: take the baseline's runs from comparison N (default: the newest) of an earlier store (a results directory, its results.db or a postgresql:// URL) and measure only the --env environments, unpaired (see 'Against an earlier run' in the README)",
);

/// The fewest rounds a comparison against an earlier baseline runs when
/// neither `--repeat` nor the suite says (the adaptive design's opening).
const MIN_ROUNDS: usize = 3;
/// The most it runs by default, however many runs the earlier baseline has.
const MAX_ROUNDS: usize = 30;

/// What `--baseline-from` names: a store, and a comparison in it if given.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// As given, for messages.
    pub text: String,
    pub at: Location,
    pub id: Option<i64>,
}

/// Reads `STORE[#N]`. A directory whose name holds a `#` is that
/// directory; a `results.db` file is its directory's store.
pub fn parse(text: &str, password_file: Option<&Path>) -> Result<Source, CliError> {
    let bad = |why: String| CliError::Usage(format!("--baseline-from {text}: {why}"));
    let (place, id) = match text.rsplit_once('#') {
        Some((p, n)) if is_url(text) || !Path::new(text).exists() => {
            let n = n.parse::<i64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                bad(format!(
                    "after '#' goes a comparison number (STORE#N, e.g. {p}#1)"
                ))
            })?;
            (p, Some(n))
        }
        _ => (text, None),
    };
    if place.is_empty() {
        return Err(bad("give the earlier comparison's store: a results directory, its results.db or a postgresql:// URL".into()));
    }
    let at = Location::parse(place, "--baseline-from", password_file)?;
    let at = match at {
        Location::Dir(d) if d.is_file() && d.file_name().is_some_and(|n| n == "results.db") => {
            let parent = d
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            Location::Dir(if parent.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                parent
            })
        }
        other => other,
    };
    if let Location::Dir(d) = &at {
        if !d.join("results.db").is_file() {
            return Err(bad(format!(
                "no results store there (no {}): give the --out directory of the earlier 'virtperf compare' (or its results.db), or a postgresql:// URL, with #N for a comparison other than the newest",
                d.join("results.db").display()
            )));
        }
    }
    Ok(Source {
        text: text.to_string(),
        at,
        id,
    })
}

/// The earlier comparison's baseline, ready to be copied in.
pub struct Borrowed {
    /// What the new comparison records of where they came from.
    pub from: BaselineFrom,
    /// Their label in the new comparison: "host from #3".
    pub label: String,
    /// Each run to copy, with the index of this suite's entry it stands
    /// for.
    pub runs: Vec<(usize, RunRow)>,
    /// The rounds this comparison runs when neither `--repeat` nor the
    /// suite says: as many as the earlier baseline has runs of an entry in
    /// common (so both sides weigh alike), within 3 and 30.
    pub rounds: usize,
}

/// One entry of the earlier comparison, as its baseline ran it.
struct Earlier {
    label: String,
    workload: String,
    params: Map<String, Value>,
    runs: Vec<RunRow>,
}

/// Reads the earlier comparison `src` names and matches its baseline's
/// entries with `suite`'s.
pub fn read(src: &Source, suite: &Suite) -> Result<Borrowed> {
    let reading = || {
        format!(
            "--baseline-from {}: reading the results store in {}",
            src.text, src.at
        )
    };
    let store = Store::read(&src.at).with_context(reading)?;
    let found = match src.id {
        Some(n) => store.comparison(n),
        None => store.latest(),
    }
    .with_context(reading)?;
    let Some(cmp) = found else {
        let held = store.comparisons().with_context(reading)?;
        return Err(no_such_comparison(src, &held).into());
    };
    let runs = store.runs(cmp.id).with_context(reading)?;
    let earlier = baseline_entries(&cmp, runs);
    let mut copies = Vec::new();
    let mut not_comparable = Vec::new();
    for (k, entry) in suite.entries.iter().enumerate() {
        let params = entry.job.values.to_params(NOT_PARAMS);
        match matching(&earlier, entry.job.def.name, &entry.label, &params) {
            Ok(e) => copies.extend(e.runs.iter().map(|r| (k, r.clone()))),
            Err(why) => not_comparable.push((entry.label.clone(), why_not(&cmp, &src.at, &why))),
        }
    }
    if copies.is_empty() {
        return Err(no_common_entry(src, &cmp, &earlier, &not_comparable).into());
    }
    let mut per_entry: BTreeMap<usize, usize> = BTreeMap::new();
    for (k, _) in &copies {
        *per_entry.entry(*k).or_default() += 1;
    }
    let most = per_entry.values().copied().max().unwrap_or(0);
    let fingerprint = copies
        .iter()
        .find_map(|(_, r)| r.doc.as_ref())
        .map_or_else(|| "unknown".to_string(), |d| fingerprint(&d.env));
    Ok(Borrowed {
        label: format!("{} from #{}", cmp.baseline, cmp.id),
        from: BaselineFrom {
            store: store.place().to_string(),
            comparison: cmp.id,
            started_at: cmp.started_at.clone(),
            env: cmp.baseline.clone(),
            fingerprint,
            not_comparable,
        },
        runs: copies,
        rounds: most.clamp(MIN_ROUNDS, MAX_ROUNDS),
    })
}

/// The earlier comparison's baseline runs that hold a usable result, by
/// entry, in the order it ran them.
fn baseline_entries(cmp: &ComparisonRow, runs: Vec<RunRow>) -> Vec<Earlier> {
    let mut by_entry: BTreeMap<usize, Earlier> = BTreeMap::new();
    for r in runs.into_iter().filter(|r| r.env == cmp.baseline) {
        let Some(doc) = r.doc.as_ref().filter(|d| unusable(d).is_none()) else {
            continue;
        };
        let e = by_entry.entry(r.entry).or_insert_with(|| Earlier {
            label: r.label.clone(),
            workload: doc.workload.clone(),
            params: doc.params.clone(),
            runs: Vec::new(),
        });
        e.runs.push(r);
    }
    by_entry.into_values().collect()
}

/// Why an entry has no earlier counterpart.
enum Unmatched {
    /// The earlier baseline ran this workload only with other parameters:
    /// the nearest entry's label and (parameter, ours, theirs).
    Params(String, Vec<(String, String, String)>),
    /// It ran no such workload.
    Workload(String),
}

/// The earlier entry this one is compared with: the same workload with the
/// same parameters (how long a run lasted aside, as pairing ignores it),
/// the one of the same label first.
fn matching<'a>(
    earlier: &'a [Earlier],
    workload: &str,
    label: &str,
    params: &Map<String, Value>,
) -> Result<&'a Earlier, Unmatched> {
    let same: Vec<&Earlier> = earlier.iter().filter(|e| e.workload == workload).collect();
    let exact = || {
        same.iter()
            .filter(|e| unpaired::differing(params, &e.params).is_empty())
    };
    if let Some(e) = exact()
        .find(|e| e.label == label)
        .or_else(|| exact().next())
    {
        return Ok(e);
    }
    same.iter()
        .map(|e| (e, unpaired::differing(params, &e.params)))
        .min_by_key(|(_, d)| d.len())
        .map_or_else(
            || Err(Unmatched::Workload(workload.to_string())),
            |(e, d)| Err(Unmatched::Params(e.label.clone(), d)),
        )
}

/// The reason an entry's rows give.
fn why_not(cmp: &ComparisonRow, at: &Location, why: &Unmatched) -> String {
    match why {
        Unmatched::Params(label, d) => format!(
            "comparison #{} of {at} ran it with other parameters ({}, in its entry '{label}'): not comparable; run this entry with {} to compare it",
            cmp.id,
            unpaired::describe(d),
            d.iter()
                .map(|(k, _, theirs)| format!("{k} {theirs}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Unmatched::Workload(w) => format!(
            "comparison #{} of {at} has no baseline run of a {w} entry: not comparable",
            cmp.id
        ),
    }
}

/// The earlier baseline's machine in a line.
fn fingerprint(e: &EnvInfo) -> String {
    let or_unknown = |s: &str| {
        if s.is_empty() {
            "unknown".to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "{}, {} CPUs, kernel {}, hypervisor {}, virtperf {}",
        or_unknown(&e.cpu_model),
        e.cpus,
        or_unknown(&e.kernel),
        or_unknown(&e.hypervisor),
        or_unknown(&e.virtperf_version)
    )
}

/// "No comparison #N in STORE", with the ones it holds.
fn no_such_comparison(src: &Source, held: &[ComparisonRow]) -> CliError {
    let at = &src.at;
    if held.is_empty() {
        return CliError::Usage(format!(
            "--baseline-from {}: {at} holds no comparison: make one there first with 'virtperf compare --out {at}', or name another store",
            src.text
        ));
    }
    let list: Vec<String> = held
        .iter()
        .map(|c| format!("#{} ({}, suite {})", c.id, c.started_at, c.suite))
        .collect();
    let last = held.last().map_or(1, |c| c.id);
    CliError::Usage(format!(
        "--baseline-from {}: no comparison #{} in {at}; it holds {}: name one, e.g. '--baseline-from {at}#{last}'",
        src.text,
        src.id.unwrap_or(0),
        list.join(", ")
    ))
}

/// Nothing of this suite was run by the earlier baseline.
fn no_common_entry(
    src: &Source,
    cmp: &ComparisonRow,
    earlier: &[Earlier],
    not_comparable: &[(String, String)],
) -> CliError {
    let theirs: Vec<&str> = earlier.iter().map(|e| e.label.as_str()).collect();
    let ours: Vec<String> = not_comparable
        .iter()
        .map(|(label, why)| format!("'{label}': {why}"))
        .collect();
    CliError::Usage(format!(
        "--baseline-from {}: comparison #{} ({}, suite {}) has no entry in common with this comparison (its baseline ran {}; here {}): compare the same suite or workload with the same parameters, or name another comparison with #N",
        src.text,
        cmp.id,
        cmp.started_at,
        cmp.suite,
        if theirs.is_empty() {
            "nothing".to_string()
        } else {
            theirs.join(", ")
        },
        ours.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn earlier(label: &str, workload: &str, params: Value) -> Earlier {
        Earlier {
            label: label.into(),
            workload: workload.into(),
            params: params.as_object().unwrap().clone(),
            runs: Vec::new(),
        }
    }

    #[test]
    fn an_entry_matches_the_same_workload_and_parameters_whatever_its_length() {
        let before = [
            earlier("cpu a", "cpu", json!({"cpu_max_prime": 10000, "time": 1})),
            earlier("cpu b", "cpu", json!({"cpu_max_prime": 20000, "time": 1})),
            earlier("memory", "memory", json!({"memory_block_size": "1K"})),
        ];
        let ours = json!({"cpu_max_prime": 20000, "time": 3});
        let ours = ours.as_object().unwrap();
        let e = matching(&before, "cpu", "mine", ours).ok().unwrap();
        assert_eq!(e.label, "cpu b");
        let other = json!({"cpu_max_prime": 5000, "time": 1});
        match matching(&before, "cpu", "cpu a", other.as_object().unwrap()) {
            Err(Unmatched::Params(label, d)) => {
                assert_eq!(label, "cpu a");
                assert_eq!(unpaired::describe(&d), "cpu_max_prime 5000 vs 10000");
            }
            _ => panic!("other parameters must not match"),
        }
        assert!(matches!(
            matching(&before, "threads", "t", ours),
            Err(Unmatched::Workload(w)) if w == "threads"
        ));
    }

    #[test]
    fn a_store_that_is_not_there_or_a_bad_number_is_refused_naming_the_option() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nothing-here");
        let text = missing.display().to_string();
        let err = parse(&text, None).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("--baseline-from {text}: no results store there")),
            "{err}"
        );
        assert!(!missing.exists(), "nothing made");
        let err = parse(&format!("{text}#x"), None).unwrap_err().to_string();
        assert!(err.contains("after '#' goes a comparison number"), "{err}");
        // A store's directory, its results.db, and #N.
        Store::open(dir.path())
            .unwrap()
            .begin("t", "s", "host", &["host".into()], &[])
            .unwrap();
        let d = dir.path().display().to_string();
        let s = parse(&format!("{d}#2"), None).unwrap();
        assert_eq!((s.at.dir(), s.id), (Some(dir.path()), Some(2)));
        let s = parse(&format!("{d}/results.db"), None).unwrap();
        assert_eq!((s.at.dir(), s.id), (Some(dir.path()), None));
    }
}
