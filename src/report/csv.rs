//! CSV for spreadsheets: one row per entry, metric and environment.

use std::fmt::Write as _;

use super::{Analysis, Exporter};

pub struct CsvExporter;

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

impl Exporter for CsvExporter {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn extension(&self) -> &'static str {
        "csv"
    }

    fn render(&self, a: &Analysis) -> String {
        let mut out = String::from("comparison,entry,label,workload,metric,unit,higher_is_better,environment,n,mean,median,stddev,cv,min,max,ci_lower,ci_upper,ratio,ratio_lower,ratio_upper,overhead_pct,times_slower,p_value,p_holm,verdict,flagged\n");
        for e in &a.entries {
            for m in &e.metrics {
                for s in &m.per_env {
                    let Some(sum) = &s.summary else { continue };
                    let c = s.vs_baseline.as_ref();
                    let flagged = a.flags.iter().any(|f| f.env == s.env && f.label == e.label);
                    let _ = writeln!(
                        out,
                        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                        a.id,
                        e.index,
                        field(&e.label),
                        field(&e.workload),
                        field(&m.name),
                        field(&m.unit),
                        m.higher_is_better,
                        field(&s.env),
                        sum.n,
                        sum.mean,
                        sum.median,
                        sum.stddev,
                        sum.cv,
                        sum.min,
                        sum.max,
                        sum.ci.lower,
                        sum.ci.upper,
                        opt(c.map(|c| c.ratio.point)),
                        opt(c.map(|c| c.ratio.lower)),
                        opt(c.map(|c| c.ratio.upper)),
                        opt(c.and_then(|c| c.overhead_pct)),
                        opt(c.and_then(|c| c.times_slower)),
                        opt(c.map(|c| c.p_value)),
                        opt(c.map(|c| c.p_adjusted)),
                        c.map(|c| c.verdict.label()).unwrap_or("baseline"),
                        flagged
                    );
                }
            }
        }
        out
    }
}
