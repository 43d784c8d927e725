//! The overview's figures: each environment's slowdown in each area of
//! the suite (CPU, memory, disk...), from the headline rows of the area's
//! workloads. The overview shows them; the JSON report carries them.

use std::collections::BTreeMap;

use crate::analysis::{verdict_kind, Analysis, VERDICT_KINDS};
use crate::report::text::slowdown;
use crate::stats::Outcome;
use crate::workload::Area;

/// One overview cell: an environment's slowdown in one area, from the
/// headline rows of that area's workloads.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AreaSlowdown {
    pub env: String,
    pub area: Area,
    /// Geometric mean of the rows' slowdown factors (rates inverted).
    pub point: f64,
    pub lower: f64,
    pub upper: f64,
    /// The rows' verdicts of each kind, in the order of
    /// `analysis::VERDICT_KINDS` (slower and faster within the margin
    /// counted apart from the others).
    #[serde(serialize_with = "named_counts")]
    pub verdicts: [usize; 6],
    pub rows: usize,
}

fn named_counts<S: serde::Serializer>(v: &[usize; 6], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for (k, n) in VERDICT_KINDS.iter().zip(v) {
        m.serialize_entry(k, n)?;
    }
    m.end()
}

impl AreaSlowdown {
    /// The area's own verdict, read off its interval as a row's is:
    /// equivalent when it lies within the margin, else slower or faster
    /// when it excludes 1.
    pub fn outcome(&self, margin: f64) -> Outcome {
        if self.lower >= 1.0 / (1.0 + margin) && self.upper <= 1.0 + margin {
            Outcome::Equivalent
        } else if self.lower > 1.0 {
            Outcome::Slower
        } else if self.upper < 1.0 {
            Outcome::Faster
        } else {
            Outcome::Inconclusive
        }
    }
}

/// Per environment and area, the slowdown over its headline rows: the
/// geometric mean of the rows' factors, and as interval the mean of their
/// intervals' ends on the log scale. That interval is conservative
/// whatever the rows' correlation (the spread of a mean is at most the
/// mean of the spreads), so several metrics of one run do not pass for
/// independent evidence.
pub fn area_slowdowns(a: &Analysis) -> Vec<AreaSlowdown> {
    // Per (environment, area): each row's log slowdown and interval ends,
    // and the count of each verdict.
    type Acc = (Vec<(f64, f64, f64)>, [usize; 6]);
    let mut acc: BTreeMap<(usize, Area), Acc> = BTreeMap::new();
    for r in a.headline_rows() {
        let Some(x) = &r.stat.vs_baseline else {
            continue;
        };
        let Some(area) = crate::workload::def_of_result(&r.entry.workload).map(|d| d.area) else {
            continue;
        };
        let (p, l, u) = slowdown(r.metric.higher_is_better, x);
        if !(p > 0.0 && l > 0.0 && u.is_finite()) {
            continue;
        }
        let Some(ei) = a.envs.iter().position(|e| *e == r.stat.env) else {
            continue;
        };
        let slot = acc.entry((ei, area)).or_default();
        slot.0.push((p.ln(), l.ln(), u.ln()));
        let kind = verdict_kind(x);
        let k = VERDICT_KINDS.iter().position(|v| *v == kind).unwrap_or(0);
        slot.1[k] += 1;
    }
    acc.into_iter()
        .map(|((ei, area), (logs, verdicts))| {
            let n = logs.len() as f64;
            let mean = |f: fn(&(f64, f64, f64)) -> f64| (logs.iter().map(f).sum::<f64>() / n).exp();
            AreaSlowdown {
                env: a.envs[ei].clone(),
                area,
                point: mean(|x| x.0),
                lower: mean(|x| x.1),
                upper: mean(|x| x.2),
                verdicts,
                rows: logs.len(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_area_is_decided_by_its_interval() {
        let c = AreaSlowdown {
            env: "vm".into(),
            area: Area::Cpu,
            point: 1.2,
            lower: 1.06,
            upper: 1.3,
            verdicts: [1, 0, 0, 0, 0, 0],
            rows: 1,
        };
        assert_eq!(c.outcome(0.05), Outcome::Slower);
        let eq = AreaSlowdown {
            point: 1.0,
            lower: 0.97,
            upper: 1.03,
            ..c.clone()
        };
        assert_eq!(eq.outcome(0.05), Outcome::Equivalent);
        // Slower by 3% and inside a 5% margin: equivalent, as a row is.
        let small = AreaSlowdown {
            point: 1.03,
            lower: 1.02,
            upper: 1.04,
            ..c.clone()
        };
        assert_eq!(small.outcome(0.05), Outcome::Equivalent);
        assert_eq!(small.outcome(0.01), Outcome::Slower);
        let inc = AreaSlowdown {
            lower: 0.9,
            upper: 1.1,
            ..c.clone()
        };
        assert_eq!(inc.outcome(0.05), Outcome::Inconclusive);
        let fast = AreaSlowdown {
            lower: 0.5,
            upper: 0.8,
            ..c
        };
        assert_eq!(fast.outcome(0.05), Outcome::Faster);
    }
}
