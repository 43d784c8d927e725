//! The adaptive design's verdicts (`--repeat auto`), from the stored runs:
//! one row per entry, environment and headline metric, its runs paired
//! with the baseline's of the same round (the order within a round is
//! rotated, so a pair shares the machine's state of that moment), judged by
//! `stats::sequential`'s confidence sequence at α, with the slower and
//! faster claims of the whole summary held to a false-discovery rate of α
//! ([`judge_all`]). The scheduler reads the same rows to decide what runs
//! next, and reports overlay them on the fixed-design analysis, so what
//! stopped a pair is what the report shows.

use std::collections::BTreeMap;

use crate::stats::sequential::{Bound, Call, Interval, Pairs, Track, MIN_PAIRS};
use crate::stats::{Estimate, Goal, Outcome, RunsNeeded, VerdictSettings};
use crate::store::RunRow;

use super::{direction, is_headline, unusable, Analysis};

/// One headline metric of one entry in one environment against the
/// baseline.
#[derive(Debug, Clone)]
pub struct Row {
    pub entry: usize,
    pub env: String,
    pub metric: String,
    pub higher_is_better: bool,
    /// ln(env) − ln(baseline), one per round both have, in round order.
    pub diffs: Vec<f64>,
}

/// What the sequence says about a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowVerdict {
    pub outcome: Outcome,
    /// Its sequence called it slower or faster, the summary's Benjamini–Hochberg did not:
    /// shown inconclusive.
    pub held_back: bool,
    /// Pairs in all that would decide it if the next looked like these
    /// (None: more than `MAX_PROJECTED`, or nothing to project from).
    pub pairs_needed: Option<usize>,
    pub goal: Goal,
}

/// The rows of a comparison, from its stored runs.
pub fn rows(runs: &[RunRow], baseline: &str) -> Vec<Row> {
    // (entry, env, metric) -> round -> value, and the directions its
    // documents stated; each entry's workload (its first run's).
    let mut values: BTreeMap<(usize, String, String), BTreeMap<usize, f64>> = BTreeMap::new();
    let mut stated: BTreeMap<(usize, String, String), (bool, bool)> = BTreeMap::new();
    let mut workloads: BTreeMap<usize, &str> = BTreeMap::new();
    for r in runs {
        // An imported run has no partner of its round: another tool ran it
        // some other day. Its environment is judged unpaired (Welch).
        let Some(doc) = r
            .doc
            .as_ref()
            .filter(|d| unusable(d).is_none() && d.env.imported.is_none())
        else {
            continue;
        };
        workloads.entry(r.entry).or_insert(&doc.workload);
        for m in &doc.metrics {
            if !(m.value.is_finite() && m.value > 0.0 && is_headline(&doc.workload, &m.name)) {
                continue;
            }
            let s = stated
                .entry((r.entry, r.env.clone(), m.name.clone()))
                .or_default();
            *(if m.higher_is_better {
                &mut s.0
            } else {
                &mut s.1
            }) = true;
            values
                .entry((r.entry, r.env.clone(), m.name.clone()))
                .or_default()
                .insert(r.round, m.value);
        }
    }
    let mut out: Vec<Row> = Vec::new();
    for ((entry, env, metric), by_round) in &values {
        if env == baseline {
            continue;
        }
        let Some(base) = values.get(&(*entry, baseline.to_string(), metric.clone())) else {
            continue;
        };
        let diffs: Vec<f64> = by_round
            .iter()
            .filter_map(|(round, v)| Some(v.ln() - base.get(round)?.ln()))
            .collect();
        if diffs.is_empty() {
            continue;
        }
        // The definition's direction, else the baseline's runs' (never
        // another environment's documents: `super::direction`).
        let said = |env: &str| stated[&(*entry, env.to_string(), metric.clone())];
        let Ok(higher_is_better) = direction(workloads[entry], metric, said(baseline), said(env))
        else {
            continue;
        };
        out.push(Row {
            entry: *entry,
            env: env.clone(),
            metric: metric.clone(),
            higher_is_better,
            diffs,
        });
    }
    out
}

impl Row {
    /// The row's verdict: the first claim its sequence makes at any n is
    /// kept (the sequence covers every n at once, so reading it after every
    /// pair costs nothing).
    pub fn judge(&self, settings: &VerdictSettings) -> RowVerdict {
        let all = Pairs::new(&self.diffs);
        let ex = all.exclusions(&Self::bounds(settings), settings.alpha);
        self.verdict(&all, &ex, settings)
    }

    /// The centres whose exclusion makes the calls: no difference (either
    /// side, two-sided), and the margin's two ends (each one-sided: the two
    /// one-sided tests of equivalence; `stats::sequential`'s module doc).
    fn bounds(settings: &VerdictSettings) -> [Bound; 3] {
        let b = settings.margin.ln_1p();
        [
            Bound::two_sided(0.0),
            Bound::one_sided(-b),
            Bound::one_sided(b),
        ]
    }

    /// The row's sequence, to be fed its pairs ([`Track::push`]).
    fn track(&self, settings: &VerdictSettings) -> Track {
        Track::new(&Self::bounds(settings), settings.alpha, settings.alpha)
    }

    /// [`Row::judge`] from the row's pairs and what its looks excluded
    /// ([`Pairs::exclusions`] at [`Row::bounds`]).
    fn verdict(&self, all: &Pairs, ex: &[(bool, bool)], settings: &VerdictSettings) -> RowVerdict {
        let alpha = settings.alpha;
        let b = settings.margin.ln_1p();
        // 0 excluded with the mean above it: the centre is above 0; −b
        // excluded from above and b from below: inside the margin.
        let (above, below, low_in, high_in) = (ex[0].0, ex[0].1, ex[1].0, ex[2].1);
        let call = match (above, below) {
            (true, false) => Call::Above,
            (false, true) => Call::Below,
            // Both (the centre drifted across 0): claim neither.
            (true, true) => Call::Open,
            (false, false) if low_in && high_in => Call::Within,
            (false, false) => Call::Open,
        };
        let outcome = match (call, self.higher_is_better) {
            (Call::Above, true) | (Call::Below, false) => Outcome::Faster,
            (Call::Above, false) | (Call::Below, true) => Outcome::Slower,
            (Call::Within, _) => Outcome::Equivalent,
            (Call::Open, _) => Outcome::Inconclusive,
        };
        let mean = all.mean().abs();
        // Once its looks have excluded 0 on both sides, no later look can
        // make a claim (the exclusions are kept): more pairs are wasted on
        // it. Docker's page_fault_ns on a noisy EPYC VM read −0.8%, −0.6%,
        // −0.7% in its first three rounds, then ±20%, and took 96 pairs
        // while the planner projected "~96 runs to show equivalence".
        let contradicted = above && below;
        // Once they have excluded 0 on one side, the row is a difference or
        // nothing: only a smaller p-value can carry it past the summary's
        // false-discovery step, where that held it back. Projected as an
        // equivalence, docker's STREAM row on a 2-vCPU Xeon VM (called
        // faster at its 8th pair, 1.029× [1.006, 1.078] the host's rate,
        // and held back; then centred within 1% of the host's at 4.6%
        // noise) was "one pair" from a decision at every round, and took
        // 121 pairs, two of the budget's ten minutes.
        let claimed = above != below;
        let pairs_needed = if self.diffs.len() < 2 || contradicted {
            None
        } else if claimed {
            all.pairs_to_differ(alpha, above)
        } else {
            all.pairs_to_decide(alpha, settings.margin)
        };
        RowVerdict {
            outcome,
            held_back: false,
            pairs_needed,
            goal: if claimed || mean > b - mean {
                Goal::Difference
            } else {
                Goal::Equivalence
            },
        }
    }

    /// The running intersection of the row's intervals (log scale), which
    /// is itself a confidence sequence; an empty intersection (the centre
    /// drifted) keeps the newest. `one_sided`: each end a one-sided bound at
    /// the row's level, the interval an equivalence is read from.
    pub fn interval(&self, settings: &VerdictSettings, one_sided: bool) -> Interval {
        let alpha = settings.alpha;
        let all = Pairs::new(&self.diffs);
        let mut iv = all
            .prefix(self.diffs.len().min(2))
            .interval_at(alpha, one_sided);
        for n in MIN_PAIRS..=self.diffs.len() {
            let now = all.prefix(n).interval_at(alpha, one_sided);
            let (lower, upper) = (iv.lower.max(now.lower), iv.upper.min(now.upper));
            iv = if lower <= upper {
                Interval { lower, upper }
            } else {
                now
            };
        }
        iv
    }

    /// Its anytime-valid p-value for "no difference" where the row's pairs
    /// stopped ([`Pairs::p_value`]). The scheduler stops a pair on its own
    /// rows' data, so that is a stopping time, which the p-value allows.
    pub fn p_value(&self, settings: &VerdictSettings) -> f64 {
        Pairs::new(&self.diffs).p_value(settings.alpha)
    }

    /// The mean of the paired log differences.
    pub fn log_mean(&self) -> f64 {
        self.diffs.iter().sum::<f64>() / self.diffs.len().max(1) as f64
    }

    /// The point shown with [`interval`](Self::interval): the
    /// Hodges–Lehmann centre of the log differences (the median of their
    /// pairwise averages, `stats::hodges_lehmann`), kept inside the
    /// interval. The interval covers the centre of the differences — its
    /// betting part is robust, and the running intersection keeps whichever
    /// part is tighter — so the point beside it estimates the same centre
    /// robustly: the mean, which one outlier or a run of tied pairs moves
    /// away from the centre, could lie outside its own interval (docker
    /// mutex once read "1.215× [0.967, 1.162]", podman's gettimeofday
    /// "0.995× [0.999, 1.001]"). Where even the robust point lies outside
    /// (values there are ruled out at the row's level) it is the nearest end.
    pub fn centre(&self, iv: &Interval) -> f64 {
        crate::stats::hodges_lehmann(&self.diffs).clamp(iv.lower, iv.upper.max(iv.lower))
    }

    /// Coefficient of variation of the paired ratios (≈ the log sd).
    pub fn cv(&self) -> f64 {
        crate::stats::mean_sd(&self.diffs).1
    }
}

/// Every row's verdict, with the whole summary's false-discovery rate of
/// slower/faster claims held at α: a row keeps its sequence's slower or
/// faster only when the Benjamini–Hochberg procedure over all rows'
/// anytime-valid p-values rejects it too.
///
/// Why each row at α, and not α/m for its entry's m headline metrics
/// (Bonferroni, as it was): BH over every row already controls what is
/// decided together, and dividing α again within an entry made its rows
/// pay twice. Micro-ops has 12 headline metrics, mostly equivalent: at
/// α/12 each, its rows were half of those a default comparison left
/// undecided at five minutes. A row's own claim keeps its rate ≤ α; the
/// summary's slower/faster claims keep their FDR ≤ α (the simulations in
/// `compare::adaptive`: no effect, any slower/faster in 2.15% of 2,000
/// trials; 36 null rows, any false claim in 3.45% of 2,000; FDR 2.2% over
/// 600 summaries with effects). Equivalence stays a per-row claim (two
/// one-sided bounds at α): a wrong "equivalent" needs the centre past the
/// margin, and a 5.01% effect was called equivalent in 1.35% of trials.
///
/// Why BH, and not family-wise control or e-BH: a default comparison has
/// a hundred headline rows, and half of them are real differences. Holm
/// over all rows would ask each for p ≤ α/100 at its first look;
/// e-BH (Wang & Ramdas, JRSS B 2022) holds under any dependence but needs
/// e-values, which at three to five pairs are a tenth of what the spent
/// t-tests reach, so most rows waited rounds for it. BH needs the p-values
/// to be positively dependent (PRDS; Benjamini & Yekutieli, Ann. Statist.
/// 2001): the rows of an entry come from the same runs and every
/// environment's row is paired with the same baseline run, which makes
/// them positively correlated; the simulation in `compare::adaptive` runs
/// the whole procedure with metrics that share their runs' noise and
/// environments that share the baseline's, both ways, and checks the rate.
pub fn judge_all(rows: &[Row], settings: &VerdictSettings) -> Vec<RowVerdict> {
    Sequences::new(rows.to_vec(), settings).judge()
}

/// A comparison's rows read look by look, as the scheduler and the
/// simulations read them after every round: each row keeps its
/// sequence ([`Track`]) and its verdict, and a new pair updates only its
/// own row, where [`judge_all`] on the rows afresh redoes every row's whole
/// history at every look. The verdicts are the same, to the bit.
#[derive(Debug, Clone)]
pub struct Sequences {
    settings: VerdictSettings,
    rows: Vec<Row>,
    tracks: Vec<Track>,
    /// Each row's verdict before the summary's Benjamini–Hochberg (None:
    /// a pair came since it was made).
    judged: Vec<Option<RowVerdict>>,
}

impl Sequences {
    pub fn new(rows: Vec<Row>, settings: &VerdictSettings) -> Sequences {
        let tracks = rows
            .iter()
            .map(|r| {
                let mut t = r.track(settings);
                for &d in &r.diffs {
                    t.push(d);
                }
                t
            })
            .collect();
        Sequences {
            settings: *settings,
            judged: vec![None; rows.len()],
            rows,
            tracks,
        }
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Adds the next pair (ln(env) − ln(baseline)) to row `i`.
    pub fn push(&mut self, i: usize, d: f64) {
        self.rows[i].diffs.push(d);
        self.tracks[i].push(d);
        self.judged[i] = None;
    }

    /// Every row's verdict now: [`judge_all`] of [`Sequences::rows`].
    pub fn judge(&mut self) -> Vec<RowVerdict> {
        let settings = self.settings;
        for ((r, t), v) in self.rows.iter().zip(&self.tracks).zip(&mut self.judged) {
            if v.is_none() {
                *v = Some(r.verdict(t.pairs(), t.exclusions(), &settings));
            }
        }
        let verdicts = self.judged.iter().map(|v| v.unwrap()).collect();
        // Before MIN_PAIRS no look has been taken: p = 1.
        let p: Vec<f64> = self.tracks.iter().map(|t| t.p_value()).collect();
        hold_back(verdicts, &p, settings.alpha)
    }
}

/// The summary's false-discovery rate over the rows' verdicts: a slower or
/// faster claim stands only where Benjamini–Hochberg at `alpha` over all
/// rows' p-values `p` rejects it too.
fn hold_back(mut verdicts: Vec<RowVerdict>, p: &[f64], alpha: f64) -> Vec<RowVerdict> {
    let keep = crate::stats::bh(p, alpha);
    for (v, keep) in verdicts.iter_mut().zip(keep) {
        if matches!(v.outcome, Outcome::Slower | Outcome::Faster) && !keep {
            v.outcome = Outcome::Inconclusive;
            v.held_back = true;
        }
    }
    verdicts
}

/// Replaces the headline verdicts of `a` (the fixed design's, from Welch's
/// test) with the sequence's: outcome, ratio (the robust centre of the
/// paired ratios, [`Row::centre`], with the confidence-sequence interval)
/// and, for an undecided
/// row, the pairs that would decide it. Detail metrics keep Welch's
/// descriptive verdicts.
pub fn overlay(a: &mut Analysis, runs: &[RunRow], settings: &VerdictSettings) {
    let rows = rows(runs, &a.baseline);
    let verdicts = judge_all(&rows, settings);
    let envs = a.envs.clone();
    let imported: Vec<bool> = envs.iter().map(|e| a.imported.contains_key(e)).collect();
    // Each row found in one step: an entry may have thousands of metrics.
    let found: std::collections::HashMap<(usize, &str, &str), usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| ((r.entry, r.env.as_str(), r.metric.as_str()), i))
        .collect();
    for e in &mut a.entries {
        for m in e.metrics.iter_mut().filter(|m| m.headline) {
            for (ei, stat) in m.per_env.iter_mut().enumerate() {
                let Some(assess) = stat.vs_baseline.as_mut() else {
                    continue;
                };
                let Some((row, v)) = found
                    .get(&(e.index, envs[ei].as_str(), m.name.as_str()))
                    .map(|&i| (&rows[i], &verdicts[i]))
                else {
                    // Imported runs: Welch's unpaired verdict stands.
                    if imported[ei] {
                        continue;
                    }
                    // No pairs (the two sides ran in different rounds):
                    // nothing the sequence can say.
                    assess.outcome = Outcome::Inconclusive;
                    assess.runs_needed = None;
                    continue;
                };
                // An equivalence is shown with the bounds it was read from.
                let iv = row.interval(settings, v.outcome == Outcome::Equivalent);
                let point = row.centre(&iv).exp();
                assess.ratio = Estimate {
                    point,
                    lower: iv.lower.exp(),
                    upper: iv.upper.exp(),
                };
                if assess.overhead_pct.is_some() {
                    assess.overhead_pct = Some((1.0 - point) * 100.0);
                }
                if assess.times_slower.is_some() {
                    assess.times_slower = Some(point);
                }
                assess.outcome = v.outcome;
                // The † mark compares Welch with the rank test, neither of
                // which made this verdict.
                assess.tests_disagree = false;
                assess.runs_needed = (v.outcome == Outcome::Inconclusive).then_some(RunsNeeded {
                    per_side: v.pairs_needed,
                    to_show: v.goal,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_barely_called_row_among_many_nulls_is_held_back() {
        let settings = VerdictSettings::default();
        let row = |metric: &str, diffs: Vec<f64>| Row {
            entry: 0,
            env: "vm".into(),
            metric: metric.into(),
            higher_is_better: false,
            diffs,
        };
        // Alone, four pairs 10% slower at 2% noise are called slower ...
        let called = row("m", vec![0.10, 0.12, 0.08, 0.11]);
        assert_eq!(called.judge(&settings).outcome, Outcome::Slower);
        let p = called.p_value(&settings);
        assert!(p <= 0.05, "{p}");
        // ... among 40 rows with nothing, its p-value is too large for the
        // summary (BH asks p ≤ α/41 of a lone discovery) unless it is far
        // stronger.
        let mut rows = vec![called];
        for i in 0..40 {
            let s = if i % 2 == 0 { 1.0 } else { -1.0 };
            rows.push(row(&format!("n{i}"), vec![0.01 * s, -0.01 * s, 0.0]));
        }
        let v = judge_all(&rows, &settings);
        assert!(p > 0.05 / 41.0, "{p}");
        assert_eq!(v[0].outcome, Outcome::Inconclusive, "p = {p}");
        assert!(v[0].held_back);
        // A strong one stays called.
        rows[0] = row("m", vec![0.70, 0.71, 0.69, 0.70, 0.72, 0.70]);
        assert_eq!(judge_all(&rows, &settings)[0].outcome, Outcome::Slower);
    }

    #[test]
    fn a_row_whose_looks_excluded_both_sides_asks_for_no_more_pairs() {
        let settings = VerdictSettings::default();
        // Three tight pairs below 0 (called faster at the third), then a
        // run of pairs 10% above it, which exclude 0 from the other side.
        let mut diffs = vec![-0.008, -0.006, -0.007];
        let row = |diffs: &[f64]| Row {
            entry: 0,
            env: "docker".into(),
            metric: "page_fault_ns".into(),
            higher_is_better: false,
            diffs: diffs.to_vec(),
        };
        let first = row(&diffs).judge(&settings);
        assert_eq!(first.outcome, Outcome::Faster);
        diffs.extend([0.10, 0.11, 0.09, 0.10, 0.12, 0.10, 0.11, 0.09, 0.10, 0.11]);
        let ex = Pairs::new(&diffs).exclusions(&Row::bounds(&settings), settings.alpha);
        assert_eq!(ex[0], (true, true), "{ex:?}");
        let v = row(&diffs).judge(&settings);
        assert_eq!(v.outcome, Outcome::Inconclusive);
        assert_eq!(v.pairs_needed, None);
        // Without the first three, the same pairs are slower.
        assert_eq!(row(&diffs[3..]).judge(&settings).outcome, Outcome::Slower);
    }

    #[test]
    fn a_row_that_excluded_0_on_one_side_projects_only_a_difference() {
        let settings = VerdictSettings::default();
        // Eight tight pairs 3% above 0 (excluded at the third), then sixty
        // around 0 at ±4%: the row is faster or nothing, and what it lacks
        // is evidence of a difference, which pairs around 0 do not bring.
        let mut diffs = vec![0.030, 0.025, 0.035, 0.028, 0.032, 0.030, 0.027, 0.033];
        for _ in 0..12 {
            diffs.extend([-0.04, -0.02, 0.0, 0.02, 0.04]);
        }
        let row = Row {
            entry: 0,
            env: "docker".into(),
            metric: "mib_per_sec".into(),
            higher_is_better: true,
            diffs: diffs.clone(),
        };
        let v = row.judge(&settings);
        assert_eq!(v.outcome, Outcome::Faster);
        assert_eq!(v.goal, Goal::Difference);
        let n = diffs.len();
        assert!(
            v.pairs_needed.is_none_or(|k| k > 4 * n),
            "{:?}",
            v.pairs_needed
        );
        // Projected as an equivalence, the same pairs look decided now: the
        // planner would feed the row one pair at a time for ever.
        let as_equivalence = Pairs::new(&diffs).pairs_to_decide(settings.alpha, settings.margin);
        assert!(
            as_equivalence.is_some_and(|k| k <= n + 1),
            "{as_equivalence:?}"
        );
        // Where the later pairs sit below 0 (by 0.5%, without excluding
        // it), only "slower" lies ahead, which would contradict the call:
        // nothing to project.
        diffs.truncate(8);
        for _ in 0..12 {
            diffs.extend([-0.045, -0.025, -0.005, 0.015, 0.035]);
        }
        let v = Row { diffs, ..row }.judge(&settings);
        assert_eq!(v.outcome, Outcome::Faster);
        assert_eq!(v.pairs_needed, None);
    }

    #[test]
    fn the_point_shown_lies_in_its_interval() {
        let settings = VerdictSettings::default();
        // Twenty pairs equal to the tick and two 20% outliers: the mean is
        // 1.8% faster, the centre (and its interval) at no difference.
        let mut diffs = vec![0.0; 20];
        diffs.extend([-0.2, -0.2]);
        let row = Row {
            entry: 0,
            env: "podman".into(),
            metric: "gettimeofday_ns".into(),
            higher_is_better: false,
            diffs,
        };
        let iv = row.interval(&settings, false);
        assert!(row.log_mean() < iv.lower, "{} {iv:?}", row.log_mean());
        let c = row.centre(&iv);
        assert!(iv.lower <= c && c <= iv.upper, "{c} {iv:?}");
        assert_eq!(c, iv.lower);
        // Where the robust point is inside, it is the point.
        let spread = Row {
            diffs: vec![0.05, -0.03, 0.02, 0.01, -0.01, 0.04],
            ..row.clone()
        };
        let iv = spread.interval(&settings, false);
        let hl = crate::stats::hodges_lehmann(&spread.diffs);
        assert!(iv.lower < hl && hl < iv.upper, "{hl} {iv:?}");
        assert_eq!(spread.centre(&iv), hl);
    }

    #[test]
    fn one_outlier_moves_the_mean_out_of_the_interval_but_not_the_point() {
        // Docker's mutex, as it read: pairs about 5% slower and one run
        // 2.7× off. The mean is far above the interval; the point shown is
        // the robust centre, inside it and not stuck at its end.
        let settings = VerdictSettings::default();
        let mut diffs = vec![
            0.050, 0.060, 0.040, 0.055, 0.045, 0.050, 0.065, 0.035, 0.050, 0.052, 0.048, 0.058,
        ];
        diffs.push(1.0);
        let row = Row {
            entry: 0,
            env: "docker".into(),
            metric: "events_per_sec".into(),
            higher_is_better: true,
            diffs,
        };
        let iv = row.interval(&settings, false);
        assert!(row.log_mean() > iv.upper, "{} {iv:?}", row.log_mean());
        let c = row.centre(&iv);
        assert!(iv.lower < c && c < iv.upper, "{c} {iv:?}");
        assert!((c - 0.05).abs() < 0.01, "{c}");
    }

    /// judge_all as it was before [`Sequences`]: every row's pairs built
    /// and swept afresh.
    fn judge_all_afresh(rows: &[Row], settings: &VerdictSettings) -> Vec<RowVerdict> {
        let verdicts = rows.iter().map(|r| r.judge(settings)).collect();
        let p: Vec<f64> = rows.iter().map(|r| r.p_value(settings)).collect();
        hold_back(verdicts, &p, settings.alpha)
    }

    #[test]
    fn sequences_read_look_by_look_equal_the_rows_judged_afresh() {
        let mut rng = crate::stats::SplitMix64(29);
        let mut normal = move || {
            let (a, b) = (rng.unit().max(1e-300), rng.unit());
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        };
        let mut seen = std::collections::BTreeSet::new();
        for trial in 0..40 {
            let settings = VerdictSettings {
                margin: [0.05, 0.02, 0.1][trial % 3],
                ..VerdictSettings::default()
            };
            // Three entries, families of 1 to 3, effects from none to large,
            // some rows noisy: slower, faster, equivalent, held back and
            // inconclusive all come up.
            let mut rows = Vec::new();
            let mut shape = Vec::new();
            for entry in 0..3 {
                let family = 1 + (trial + entry) % 3;
                for i in 0..family {
                    rows.push(Row {
                        entry,
                        env: "vm".into(),
                        metric: format!("m{i}"),
                        higher_is_better: i % 2 == 0,
                        diffs: Vec::new(),
                    });
                    let shift = [0.0, 0.01, 0.08, -0.2, 0.049][(trial + i + entry) % 5];
                    let sd = [0.02, 0.05, 0.15][(trial * 7 + i) % 3];
                    shape.push((shift, sd));
                }
            }
            let mut seq = Sequences::new(rows.clone(), &settings);
            for look in 0..40 {
                for (i, (shift, sd)) in shape.iter().enumerate() {
                    // Some rows stop early, as decided pairs do.
                    if look < 10 + 5 * (i % 4) {
                        let mut d = shift + sd * normal();
                        if (look + i) % 17 == 0 {
                            d += 1.0; // an outlier
                        }
                        seq.push(i, d);
                        rows[i].diffs.push(d);
                    }
                }
                assert_eq!(seq.rows().len(), rows.len());
                for (a, b) in seq.rows().iter().zip(&rows) {
                    assert_eq!(a.diffs, b.diffs);
                }
                let afresh = judge_all_afresh(&rows, &settings);
                assert_eq!(seq.judge(), afresh, "trial {trial}, look {look}");
                assert_eq!(judge_all(&rows, &settings), afresh);
                for v in &afresh {
                    seen.insert(format!("{:?} {}", v.outcome, v.held_back));
                }
            }
        }
        // Every kind of verdict was compared.
        for want in [
            "Slower false",
            "Faster false",
            "Equivalent false",
            "Inconclusive false",
            "Inconclusive true",
        ] {
            assert!(seen.contains(want), "{want} never came up: {seen:?}");
        }
    }
}
