//! JSON: the whole analysis, for other tools: every metric with its
//! summary, samples and full assessment, whatever `--detail` says.

use super::{Analysis, Exporter, View};

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn name(&self) -> &'static str {
        "json"
    }

    fn extension(&self) -> &'static str {
        "json"
    }

    fn render(&self, a: &Analysis, _view: View) -> String {
        let mut v = serde_json::to_value(a).unwrap_or_default();
        if let Some(obj) = v.as_object_mut() {
            obj.insert("schema".into(), serde_json::json!("virtperf.comparison/2"));
        }
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    }
}
