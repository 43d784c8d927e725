//! `virtperf report`'s arguments into a typed `ReportArgs`.

use std::path::PathBuf;

use crate::compare::{ReportArgs, REPORT_OPTIONS};
use crate::core::options::{self, CliError};
use crate::report::{self, View};

/// Parses report's arguments (without the word `report`).
pub fn parse(args: &[String]) -> Result<ReportArgs, CliError> {
    let (v, rest) = options::parse(&[REPORT_OPTIONS], args, "report")?;
    let targets = match rest.is_empty() {
        true => vec!["virtperf-results".to_string()],
        false => rest,
    };
    for (i, t) in targets.iter().enumerate() {
        if targets[..i]
            .iter()
            .any(|u| u.trim_end_matches('/') == t.trim_end_matches('/'))
        {
            return Err(CliError::Usage(format!(
                "report: {t} is given twice: name each results store once"
            )));
        }
    }
    Ok(ReportArgs {
        targets,
        format: report::exporter(v.text("format"))?,
        out: v.text_opt("out").map(PathBuf::from),
        margin_pct: v.float("margin"),
        figures: report::figures_dir(v.text_opt("figures"))?,
        view: View {
            detail: v.flag("detail"),
        },
        fail_on: crate::analysis::gate::Gate::parse_all(v.list("fail-on"))?,
        password_file: v.text_opt("store-password-file").map(PathBuf::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::text::owned as s;

    #[test]
    fn targets_default_and_are_named_once() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.targets, s(&["virtperf-results"]));
        assert_eq!(a.format.name(), "table");
        assert!(a.out.is_none() && !a.view.detail);
        let a = parse(&s(&["a", "b/", "--format=md", "--out", "r.md", "--detail"])).unwrap();
        assert_eq!(a.targets, s(&["a", "b/"]));
        assert_eq!(a.format.name(), "markdown");
        assert_eq!(a.out, Some(PathBuf::from("r.md")));
        assert!(a.view.detail);
        let err = parse(&s(&["a/", "a"])).err().unwrap().to_string();
        assert!(err.contains("given twice"), "{err}");
        assert!(parse(&s(&["--format=nope"])).is_err());
    }
}
