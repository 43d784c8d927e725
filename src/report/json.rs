//! JSON: the whole analysis, for other tools: every metric with its
//! summary, samples and full assessment, whatever `--detail` says, and the
//! overview's slowdown per environment and area.

use crate::analysis::fleet::Fleet;
use crate::analysis::Analysis;
use crate::report::format::Data;
use crate::report::sections::area_slowdowns;

pub struct JsonExporter;

impl Data for JsonExporter {
    fn name(&self) -> &'static str {
        "json"
    }

    fn render(&self, a: &Analysis) -> String {
        let mut v = serde_json::to_value(a).unwrap_or_default();
        if let Some(obj) = v.as_object_mut() {
            obj.insert("schema".into(), serde_json::json!("virtperf.comparison/2"));
            // The overview's figures, as the other formats show them.
            let overview: Vec<serde_json::Value> = area_slowdowns(a)
                .iter()
                .map(|c| {
                    let mut v = serde_json::to_value(c).unwrap_or_default();
                    if let Some(o) = v.as_object_mut() {
                        o.insert(
                            "outcome".into(),
                            serde_json::json!(c.outcome(a.settings.margin).label()),
                        );
                    }
                    v
                })
                .collect();
            obj.insert("overview".into(), overview.into());
            // A comparison against an earlier one says so, and why its
            // intervals are wider, as the other formats do.
            if let Some(f) = &a.baseline_from {
                obj.insert(
                    "unpaired".into(),
                    serde_json::json!({
                        "said": crate::report::text::baseline_from_said(a, f),
                        "why_wider": crate::report::text::BASELINE_FROM_WIDER,
                    }),
                );
            }
        }
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    }

    /// `virtperf.fleet/1`: the hosts with each one's whole analysis (as
    /// `virtperf.comparison/2`), and the fleet rows.
    fn render_fleet(&self, f: &Fleet) -> String {
        let hosts: Vec<serde_json::Value> = f
            .hosts
            .iter()
            .map(|h| {
                let analysis: serde_json::Value =
                    serde_json::from_str(&self.render(&h.analysis)).unwrap_or_default();
                serde_json::json!({"host": h.host, "analysis": analysis})
            })
            .collect();
        let v = serde_json::json!({
            "schema": "virtperf.fleet/1",
            "suite": f.suite,
            "baseline": f.baseline,
            "settings": f.settings,
            "outlier_rule": crate::analysis::fleet::outlier_rule(&f.settings),
            "hosts": hosts,
            "fleet": f.rows,
        });
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    }
}
