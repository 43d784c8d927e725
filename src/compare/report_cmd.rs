//! `virtperf report`: renders a stored comparison in any format.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};

use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::report;
use crate::store::Store;

pub const REPORT_OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "format",
        OptKind::Text,
        "table",
        "output format (see below)",
    ),
    OptionSpec::new(
        "out",
        OptKind::Text,
        "",
        "write to this file instead of standard output",
    ),
    super::plan::MARGIN,
    super::plan::DETAIL,
];

pub fn report_help() -> String {
    format!(
        "virtperf report [RUN|DIR] [--format FORMAT] [--out FILE] [--margin PCT] [--detail]\n\n\
         Renders a stored comparison: RUN is a comparison number in ./virtperf-results, DIR a\n\
         results directory (its newest comparison), DIR/N a number in DIR. Default: the newest in\n\
         ./virtperf-results.\n\n{}",
        options::render_help("Options", REPORT_OPTIONS)
    ) + &format!("\nFormats: {}\n", report::format_names())
}

/// `virtperf report ...`
pub fn report_main(args: &[String]) -> Result<()> {
    let (v, rest) = options::parse(&[REPORT_OPTIONS], args, "report")?;
    let target = rest
        .first()
        .map(String::as_str)
        .unwrap_or("virtperf-results");
    let (dir, id): (PathBuf, Option<i64>) = if let Ok(n) = target.parse::<i64>() {
        (PathBuf::from("virtperf-results"), Some(n))
    } else if Path::new(target).is_dir() {
        (PathBuf::from(target), None)
    } else if let Some((d, n)) = target
        .rsplit_once('/')
        .and_then(|(d, n)| Some((d, n.parse::<i64>().ok()?)))
    {
        (PathBuf::from(d), Some(n))
    } else {
        return Err(CliError::Usage(format!(
            "report: '{target}' is neither a comparison number nor a results directory"
        ))
        .into());
    };
    if !dir.join("results.db").exists() {
        return Err(CliError::Usage(format!(
            "report: no results store in {} (run virtperf compare first, or give --out's directory)",
            dir.display()
        ))
        .into());
    }
    let store = Store::open_read_only(&dir)?;
    let cmp = match id {
        Some(n) => store.comparison(n)?,
        None => store.latest()?,
    }
    .ok_or_else(|| anyhow!("report: no such comparison in {}", dir.display()))?;
    let analysis = report::analyze(
        &cmp,
        &store.runs(cmp.id)?,
        &super::plan::settings(v.float("margin")),
    );
    let view = report::View {
        detail: v.flag("detail"),
    };
    let text = report::exporter(v.text("format"))?.render(&analysis, view);
    match v.text("out") {
        "" => print!("{text}"),
        path => std::fs::write(path, text).with_context(|| format!("--out {path}"))?,
    }
    Ok(())
}
