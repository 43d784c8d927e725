//! JUnit XML, for CI systems: one `<testcase>` per headline row (entry,
//! headline metric, environment against the baseline), its verdict and
//! ratio in `<system-out>`, and a `<failure>` where a `--fail-on` gate
//! fails its verdict (without gates nothing fails: the file only reports).
//! Every text is escaped, and characters XML 1.0 cannot hold (control
//! characters from a guest's or a tool's names) become U+FFFD.

use crate::analysis::fleet::Fleet;
use crate::analysis::gate::{gate_of, Gate};
use crate::analysis::Analysis;
use crate::report::format::Data;

pub struct JunitExporter;

impl Data for JunitExporter {
    fn name(&self) -> &'static str {
        "junit"
    }

    fn render(&self, a: &Analysis) -> String {
        self.render_gated(a, &[])
    }

    fn render_gated(&self, a: &Analysis, gates: &[Gate]) -> String {
        let suite = suite(a, gates, &format!("comparison #{}", a.id));
        document(&suite.0, suite.1, suite.2)
    }

    /// One `<testsuite>` per host.
    fn render_fleet(&self, f: &Fleet) -> String {
        let (mut body, mut tests, mut failures) = (String::new(), 0, 0);
        for h in &f.hosts {
            let (text, t, n) = suite(&h.analysis, &[], &h.host);
            body.push_str(&text);
            tests += t;
            failures += n;
        }
        document(&body, tests, failures)
    }
}

/// The XML declaration and `<testsuites>` around the suites.
fn document(suites: &str, tests: usize, failures: usize) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"virtperf\" tests=\"{tests}\" failures=\"{failures}\">\n{suites}</testsuites>\n"
    )
}

/// One comparison's `<testsuite>`, with its number of test cases and of
/// failures.
fn suite(a: &Analysis, gates: &[Gate], name: &str) -> (String, usize, usize) {
    let rows = a.headline_rows();
    let mut cases = String::new();
    let mut failures = 0;
    for r in &rows {
        let v = r.stat.vs_baseline.as_ref();
        let verdict = v.map_or("no verdict", |a| a.outcome.label());
        let said = match v {
            Some(x) => format!(
                "{verdict}: ratio {:.4} [{:.4}, {:.4}] against {}, n = {}/{}",
                x.ratio.point, x.ratio.lower, x.ratio.upper, a.baseline, x.n_base, x.n_env
            ),
            None => format!(
                "no verdict: {}",
                r.stat.not_comparable.as_deref().unwrap_or("no ratio")
            ),
        };
        cases.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\">\n",
            xml(&format!("virtperf.{}", r.stat.env)),
            xml(&format!("{} / {}", r.entry.label, r.metric.name))
        ));
        if let Some(g) = gate_of(r, gates) {
            failures += 1;
            cases.push_str(&format!(
                "      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                g.word(),
                xml(&format!("{verdict} (--fail-on={})", g.word())),
                xml(&said)
            ));
        }
        cases.push_str(&format!(
            "      <system-out>{}</system-out>\n    </testcase>\n",
            xml(&said)
        ));
    }
    let text = format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" timestamp=\"{}\">\n{cases}  </testsuite>\n",
        xml(&format!("{name}: {} suite, baseline {}", a.suite, a.baseline)),
        rows.len(),
        xml(&a.started_at)
    );
    (text, rows.len(), failures)
}

/// Text escaped for XML content and attributes; what XML 1.0 cannot hold
/// becomes U+FFFD.
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || matches!(c as u32, 0xFFFE | 0xFFFF) => out.push('\u{FFFD}'),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::fixture;

    #[test]
    fn a_gated_verdict_is_a_failure_and_the_xml_is_escaped() {
        let a = fixture();
        let plain = JunitExporter.render(&a);
        assert!(plain.contains("tests=\"1\" failures=\"0\""), "{plain}");
        assert!(
            plain.contains("<testcase classname=\"virtperf.vm\" name=\"cpu / events_per_sec\">")
        );
        assert!(!plain.contains("<failure"));
        let gated = JunitExporter.render_gated(&a, &[Gate::Slower]);
        assert!(gated.contains("failures=\"1\""), "{gated}");
        assert!(gated.contains(
            "<failure type=\"slower\" message=\"slower (--fail-on=slower)\">slower: ratio 0.5"
        ));
        assert!(gated.contains("against host"), "{gated}");
        assert_eq!(
            xml("a<b>&\"'\x1b\u{7}"),
            "a&lt;b&gt;&amp;&quot;&apos;\u{FFFD}\u{FFFD}"
        );
    }
}
