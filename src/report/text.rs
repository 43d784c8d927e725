//! How a report words what it shows: numbers, ratios and p-values to the
//! digits they warrant, verdicts and their marks, and the sentences every
//! format prints (the method, the tally, the flags, a file system that
//! ignores fsync). Every section and every format takes its words from here.

use std::fmt::Write as _;

use crate::analysis::fleet::{Fleet, FleetRow};
use crate::analysis::{Analysis, EnvStat, HeadlineRow};
use crate::core::result::Storage;
use crate::env::def::Check;
use crate::stats::{Assessment, Goal, Outcome};

/// Each environment whose results name their storage, in the report's
/// order: (environment, its kind, the file system).
pub fn storages(a: &Analysis) -> Vec<(&str, &str, &Storage)> {
    a.envs
        .iter()
        .filter_map(|e| {
            let f = a.fingerprints.get(e)?;
            Some((e.as_str(), f.kind.as_str(), f.storage.as_ref()?))
        })
        .collect()
}

/// The warning for an environment whose file system ignores fsync: its
/// durable commits and fsyncs cost nothing, which is not a disk's speed.
pub fn fsync_warning(env: &str, kind: &str, s: &Storage) -> String {
    let why = s.fsync_ignored.as_deref().unwrap_or("");
    let fix = if has_storage_volume(kind) {
        format!("{kind}:storage=volume puts them on a disk")
    } else {
        "--file-dir, --disk-dir or --oltp-dir on a disk's file system measure one".into()
    };
    format!(
        "⚠ {env}: fsync reaches no disk there ({} {why}), so fsyncs and durable commits cost nothing: figures that include them (fileio's fsyncs, OLTP's commits) are not a disk's; {fix}.",
        s.fs
    )
}

/// Whether the driver of that kind takes `storage=volume` (files on a disk
/// the engine manages), as its own option table says.
fn has_storage_volume(kind: &str) -> bool {
    crate::env::find_driver(kind)
        .and_then(|d| d.option("storage"))
        .is_some_and(|o| matches!(o.check, Check::Choice(words) if words.contains(&"volume")))
}

/// A number with as many decimals as its size warrants.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// A p-value to four decimals, "<0.0001" below that.
pub fn pval(p: f64) -> String {
    if p.is_nan() {
        "–".into()
    } else if p < 1e-4 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

/// A fraction as a percentage without needless decimals: 0.05 is "5".
pub fn percent(x: f64) -> String {
    let s = format!("{:.2}", x * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A ratio with three significant figures or so: 0.0412, 0.970, 36.9. The
/// headline rows' ratios and intervals; the overview's cells use the
/// shorter `model::sig3`.
pub fn ratio_num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.1 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// A row's slowdown factor and interval: the ratio environment / baseline
/// with a rate's inverted, so above 1 is always slower, as the overview
/// states every figure.
pub fn slowdown(higher_is_better: bool, x: &Assessment) -> (f64, f64, f64) {
    let s = |r: f64| if higher_is_better { 1.0 / r } else { r };
    let (l, u) = (s(x.ratio.lower), s(x.ratio.upper));
    (s(x.ratio.point), l.min(u), l.max(u))
}

/// "1.91× [1.68, 2.16]": the slowdown factor with its interval, the one
/// way every layout states a row's ratio (the data formats keep the ratio
/// environment / baseline itself).
pub fn slowdown_text(higher_is_better: bool, x: &Assessment) -> String {
    let (p, l, u) = slowdown(higher_is_better, x);
    format!("{}× [{}, {}]", ratio_num(p), ratio_num(l), ratio_num(u))
}

/// A verdict's words: "slower, within ±5%" for a difference whose whole
/// interval lies inside the margin, else the outcome's label.
pub fn verdict_label(a: &Assessment, margin: f64) -> String {
    if a.within_margin {
        format!("{}, within ±{}%", a.outcome.label(), percent(margin))
    } else {
        a.outcome.label().to_string()
    }
}

/// The words of a kind of verdict counted in a tally
/// (`analysis::VERDICT_KINDS`).
pub fn kind_label(kind: &str, margin: f64) -> String {
    match kind.strip_suffix("_within_margin") {
        Some(o) => format!("{o} within ±{}%", percent(margin)),
        None => kind.to_string(),
    }
}

/// The verdict words, and for an inconclusive one the repetitions per side
/// that would decide it at the observed variance.
pub fn verdict_text(a: &Assessment, margin: f64) -> String {
    match (a.outcome, a.runs_needed) {
        (Outcome::Inconclusive, Some(n)) => {
            let goal = match n.to_show {
                Goal::Difference => "a difference",
                Goal::Equivalence => "equivalence",
            };
            match n.per_side {
                Some(k) => format!("inconclusive (~{k} runs to show {goal})"),
                None => format!(
                    "inconclusive (over {} runs to show {goal})",
                    crate::stats::MAX_RUNS_PER_SIDE
                ),
            }
        }
        _ => verdict_label(a, margin),
    }
}

/// The verdict cell of any table: the verdict, in brackets when it is a
/// descriptive one of the detail family, "baseline", or why there is none.
pub fn verdict_cell(s: &EnvStat, headline: bool, baseline: bool, margin: f64) -> String {
    match (&s.vs_baseline, &s.not_comparable) {
        (Some(a), _) if headline => verdict_text(a, margin),
        (Some(a), _) => format!("[{}]", verdict_label(a, margin)),
        (None, Some(_)) => "not comparable".into(),
        (None, None) if baseline => "baseline".into(),
        (None, None) => String::new(),
    }
}

/// Marks after a headline row's verdict: ⚑ a noisy run, † the tests
/// disagree.
pub fn marks(r: &HeadlineRow) -> String {
    let mut m = String::new();
    if r.noisy {
        m.push_str(" ⚑");
    }
    if r.fsync_ignored {
        m.push_str(" ⚠");
    }
    if r.stat
        .vs_baseline
        .as_ref()
        .is_some_and(|a| a.tests_disagree)
    {
        m.push_str(" †");
    }
    m
}

/// How a difference smaller than the margin reads, for the method text.
fn within_text(margin: f64) -> String {
    let m = percent(margin);
    format!(
        "A slower or faster row whose whole interval lies within ±{m}% reads \"slower, within ±{m}%\" (or faster): a real difference, shown to be smaller than the margin; the overview (△ ▽) and the tally count these apart."
    )
}

/// The method, in one paragraph every format prints.
pub fn method(a: &Analysis) -> String {
    if a.adaptive {
        return format!(
            "Adaptive design: each environment's runs are paired with the baseline's of the same round; a row's slowdown (how many times slower than the baseline: above 1× slower, below faster; a rate's ratio inverted) is the robust centre of the paired ratios (Hodges–Lehmann: the median of their pairwise geometric means, kept inside the interval, which covers that centre), \
             with anytime-valid 95% confidence-sequence intervals (t-intervals with α spent over a schedule of looks, intersected with a t-mixture and robust betting e-process), so the verdicts could be read after every round. \
             Verdicts at α = {} for each row: slower or faster when the interval excludes 1, \
             equivalent when its two one-sided bounds lie within ±{}% (the interval shown for such a row has each end at α on its own side), otherwise inconclusive with the pairs that would decide it; \
             across the whole summary, slower and faster are held to a false-discovery rate of {} (Benjamini–Hochberg over the rows' anytime-valid p-values). \
             {} \
             Welch's and the Mann–Whitney p (--detail) are descriptive here. ⚑: a run was noisy (steal, or other processes' load).{}",
            a.settings.alpha,
            percent(a.settings.margin),
            a.settings.alpha,
            within_text(a.settings.margin),
            if a.fsync_ignored.is_empty() {
                ""
            } else {
                " ⚠: its files were where fsync reaches no disk (see Storage)."
            }
        );
    }
    format!(
        "A row's slowdown is how many times slower the environment is than the baseline (above 1× slower, below faster): the ratio of geometric means, a rate's inverted, with a 95% interval (Welch's t on log values). \
         Verdicts over each entry's headline metrics, Holm-corrected, at α = {}: slower or faster when the difference is significant \
         (and, across the whole summary, within a false-discovery rate of α by Benjamini–Yekutieli), \
         equivalent when the ratio lies within ±{}% (two one-sided tests), otherwise inconclusive with the runs per side that would decide it. \
         {} \
         The exact Mann–Whitney p is shown beside Welch's as a robustness check (†: they disagree). ⚑: a run was noisy (steal, or other processes' load).{}",
        a.settings.alpha,
        percent(a.settings.margin),
        within_text(a.settings.margin),
        if a.fsync_ignored.is_empty() {
            ""
        } else {
            " ⚠: its files were where fsync reaches no disk (see Storage)."
        }
    )
}

/// "3 slower, 2 equivalent, 1 inconclusive" over the headline verdicts,
/// and the repetitions that would decide the inconclusive ones.
pub fn tally(a: &Analysis) -> String {
    let (counts, not_comparable) = a.headline_counts();
    let mut parts: Vec<String> = crate::analysis::VERDICT_KINDS
        .iter()
        .filter_map(|k| {
            let n = counts.get(k)?;
            Some(format!("{n} {}", kind_label(k, a.settings.margin)))
        })
        .collect();
    if not_comparable > 0 {
        parts.push(format!("{not_comparable} not comparable"));
    }
    if parts.is_empty() {
        return "No headline verdicts.".into();
    }
    let mut out = format!("Headline verdicts: {}.", parts.join(", "));
    if a.baseline_from.is_some() && counts.contains_key("inconclusive") {
        out.push_str(
            " The earlier baseline's runs are fixed: more runs of this side alone narrow an inconclusive row's interval only down to that side's noise; compare against a baseline measured now (without --baseline-from), in pairs, to decide it.",
        );
    }
    match a.headline_runs_needed() {
        Some(Some(n)) => {
            // The fixed design is told its --repeat; the adaptive one
            // already repeats as needed, and was stopped by its budget.
            let how = if a.adaptive {
                "with a larger --budget".to_string()
            } else {
                format!("--repeat {n}, or the adaptive default")
            };
            let _ = write!(
                out,
                " About {n} runs per side would decide every inconclusive one at the observed noise ({how})."
            );
        }
        Some(None) => {
            let _ = write!(
                out,
                " Some inconclusive ones would need more than {} runs per side: the difference is too close to the ±{}% margin to tell at this noise.",
                crate::stats::MAX_RUNS_PER_SIDE,
                percent(a.settings.margin)
            );
        }
        None => {}
    }
    out
}

/// The flagged runs in a few lines, one per kind of flag (the full list
/// is for `--detail`): how many runs, in which environments, how strong.
pub fn flag_summary(a: &Analysis) -> Vec<String> {
    use crate::analysis::FlagKind;
    use std::collections::{BTreeMap, BTreeSet};
    // The distinct runs among some flags.
    let runs_of = |flags: &[&crate::analysis::Flag]| -> BTreeSet<(String, String, usize)> {
        flags
            .iter()
            .map(|f| (f.env.clone(), f.label.clone(), f.round))
            .collect()
    };
    let all: Vec<_> = a.flags.iter().collect();
    let runs = runs_of(&all);
    if runs.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!("{} flagged:", counted(runs.len(), "run"))];
    for (kind, what) in [
        (FlagKind::Load, "other processes' load"),
        (FlagKind::Steal, "steal"),
        (FlagKind::Multimodal, "multimodal timings"),
    ] {
        let of_kind: Vec<_> = a.flags.iter().filter(|f| f.kind == kind).collect();
        if of_kind.is_empty() {
            continue;
        }
        let kind_runs = runs_of(&of_kind);
        let mut per_env: BTreeMap<&str, usize> = BTreeMap::new();
        for (env, _, _) in &kind_runs {
            *per_env.entry(env).or_default() += 1;
        }
        let envs = a
            .envs
            .iter()
            .filter_map(|e| per_env.get(e.as_str()).map(|n| format!("{e} {n}")))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(if kind == FlagKind::Multimodal {
            format!(
                "{what}: {} in {} ({envs}); a part measured two faces of the machine",
                counted(of_kind.len(), "part"),
                counted(kind_runs.len(), "run"),
            )
        } else {
            let pct: Vec<f64> = of_kind.iter().map(|f| f.pct).collect();
            format!(
                "{what}: {} ({envs}), median {:.1}%, up to {:.1}% of the CPUs",
                counted(kind_runs.len(), "run"),
                crate::stats::median(&pct),
                pct.iter().copied().fold(f64::MIN, f64::max),
            )
        });
    }
    out
}

/// "1 run", "3 runs".
fn counted(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// "h1, h2 (3 hosts)": the hosts of a fleet report, for its heading.
pub fn fleet_hosts(f: &Fleet) -> String {
    let names: Vec<&str> = f.hosts.iter().map(|h| h.host.as_str()).collect();
    format!("{}: {}", counted(names.len(), "host"), names.join(", "))
}

/// A fleet row's spread as text: "min … max, IQR q1 … q3".
pub fn fleet_spread(r: &FleetRow) -> (String, String) {
    (
        format!("{} … {}", r.measure.show(r.min), r.measure.show(r.max)),
        format!("{} … {}", r.measure.show(r.q1), r.measure.show(r.q3)),
    )
}

/// A name made safe for a file and an anchor: letters, digits, '-'.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let t = out.trim_matches('-');
    let t: String = t.chars().take(60).collect();
    if t.is_empty() {
        "x".into()
    } else {
        t
    }
}

/// "vm / cpu / round 3: why", a run in a list of flagged or failed ones.
pub fn run_line(env: &str, label: &str, round: usize, why: &str) -> String {
    format!("{env} / {label} / round {}: {why}", round + 1)
}

/// One measured cause of a verdict, as a clause with its figures and the
/// rule it rests on: "the runtime's helpers outside the environment used
/// 412 µs of host CPU per event (baseline: none; 80% of the extra)
/// [runtime_helpers]".
pub fn finding_clause(f: &crate::analysis::explain::Finding) -> String {
    use crate::analysis::account::PLACES;
    let base = |unit: &str| match f.baseline {
        Some(b) => format!("baseline {} {unit}", num(b)),
        None => "baseline: none".into(),
    };
    let share = f
        .share_of_extra
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| format!("; {:.0}% of the extra", 100.0 * s))
        .unwrap_or_default();
    let text = match f.rule {
        "throttled" => format!(
            "its cgroup's run queues were throttled for {}% of the run, summed over its CPUs ({})",
            num(f.env),
            match f.baseline {
                Some(b) => format!("baseline {}%", num(b)),
                None => "baseline: no limit".into(),
            }
        ),
        "device_bytes" => format!(
            "the device wrote {} KiB per event ({})",
            num(f.env),
            base("KiB")
        ),
        "io_amplification" => format!(
            "the device moved {}× the bytes the workload read and wrote ({})",
            num(f.env),
            base("×")
        ),
        "cpu_pressure" | "io_pressure" | "memory_pressure" => format!(
            "tasks stalled on {} for {}% of the run ({})",
            f.rule.trim_end_matches("_pressure"),
            num(f.env),
            base("%")
        ),
        "steal" => format!(
            "the hypervisor stole {}% of the CPU time ({})",
            num(f.env),
            base("%")
        ),
        _ => {
            let place = f
                .figure
                .trim_start_matches("acct_host_cpu_")
                .trim_end_matches("_per_event");
            let what = PLACES
                .iter()
                .find(|(p, _)| *p == place)
                .map_or(place, |(_, what)| what);
            format!(
                "{what} used {} µs of host CPU per event ({}{share})",
                num(f.env),
                base("µs")
            )
        }
    };
    format!("{text} [{}]", f.rule)
}

/// What a comparison made by `compare --baseline-from` is, in a sentence:
/// unpaired, against which comparison of which store, from when, on what.
pub fn baseline_from_said(a: &Analysis, f: &crate::store::BaselineFrom) -> String {
    format!(
        "Unpaired: the baseline ({}) is {}'s runs of comparison #{} of {} from {} ({}), copied in by 'virtperf compare --baseline-from'; this comparison measured only {}.",
        a.baseline,
        f.env,
        f.comparison,
        f.store,
        f.started_at,
        f.fingerprint,
        a.envs
            .iter()
            .filter(|e| **e != a.baseline)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Why an unpaired comparison's intervals are wider than a paired one's,
/// and what its ratios include.
pub const BASELINE_FROM_WIDER: &str = "No run has a partner of its round, so the verdicts come from the fixed design's tests for independent samples (Welch's t on logs, Mann-Whitney beside it), not from paired runs: the machine's drift, which falls on both runs of a pair alike and cancels in a paired ratio, stays in each side's noise here, so the 95% intervals are wider and need more runs to decide. And whatever changed between the two days (kernel, firmware, other load, another host) is part of every ratio, which is what such a comparison asks.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::fixture;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("qemu <b>&\"x\""), "qemu-b-x");
        assert_eq!(slug("///"), "x");
        assert_eq!(slug("cpu threads=2"), "cpu-threads-2");
    }

    #[test]
    fn flags_are_summarised_by_kind_with_counts_per_environment() {
        use crate::analysis::{Flag, FlagKind};
        let mut a = fixture();
        a.flags.clear();
        let flag = |env: &str, round, kind, pct, reason: &str| Flag {
            env: env.into(),
            label: "cpu".into(),
            round,
            kind,
            pct,
            reason: reason.into(),
        };
        a.flags.push(flag("host", 0, FlagKind::Load, 20.0, "load"));
        a.flags.push(flag("vm", 0, FlagKind::Load, 40.0, "load"));
        a.flags.push(flag("vm", 1, FlagKind::Load, 90.0, "load"));
        a.flags.push(flag("vm", 1, FlagKind::Multimodal, 0.0, "a"));
        a.flags.push(flag("vm", 1, FlagKind::Multimodal, 0.0, "b"));
        let lines = flag_summary(&a);
        assert_eq!(
            lines,
            [
                "3 runs flagged:",
                "other processes' load: 3 runs (host 1, vm 2), median 40.0%, up to 90.0% of the CPUs",
                "multimodal timings: 2 parts in 1 run (vm 1); a part measured two faces of the machine",
            ],
        );
        a.flags.truncate(2);
        assert!(
            flag_summary(&a)[1].contains("median 30.0%"),
            "{:?}",
            flag_summary(&a)
        );
    }
}
