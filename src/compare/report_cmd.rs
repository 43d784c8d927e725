//! `virtperf report`: renders a stored comparison in any format.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};

use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::report::{self, Fleet, HostAnalysis};
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
        "virtperf report [RUN|DIR ...] [--format FORMAT] [--out FILE] [--margin PCT] [--detail]\n\n\
         Renders a stored comparison: RUN is a comparison number in ./virtperf-results, DIR a\n\
         results directory (its newest comparison), DIR/N a number in DIR. Default: the newest in\n\
         ./virtperf-results.\n\n\
         Several DIRs (one per host of a fleet, the same suite run on each): every host's report,\n\
         and first a fleet view: per entry, headline metric and environment kind, the median\n\
         effect across hosts (overhead % for rates, times slower for times), its range and\n\
         quartiles, and the outliers (further from the median than max(3 x 1.4826 x MAD, the\n\
         margin), with 3 hosts or more). Stores of different suites, plans or baselines are\n\
         refused, never mixed.\n\n{}",
        options::render_help("Options", REPORT_OPTIONS)
    ) + &format!("\nFormats: {}\n", report::format_names())
}

/// Where one `report` argument points: a results directory and, when
/// given, a comparison number in it.
fn resolve(target: &str) -> Result<(PathBuf, Option<i64>)> {
    let (dir, id) = if let Ok(n) = target.parse::<i64>() {
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
    Ok((dir, id))
}

/// One store's comparison, analysed.
fn load(target: &str, settings: &crate::stats::VerdictSettings) -> Result<HostAnalysis> {
    let (dir, id) = resolve(target)?;
    let read = || -> Result<HostAnalysis> {
        let store = Store::open_read_only(&dir)?;
        let cmp = match id {
            Some(n) => store.comparison(n)?,
            None => store.latest()?,
        }
        .ok_or_else(|| anyhow!("report: no such comparison in {}", dir.display()))?;
        let runs = store.runs(cmp.id)?;
        Ok(HostAnalysis {
            host: target.trim_end_matches('/').to_string(),
            analysis: report::analyze(&cmp, &runs, settings),
        })
    };
    read().with_context(|| format!("report: reading the results store in {}", dir.display()))
}

/// `virtperf report ...`
pub fn report_main(args: &[String]) -> Result<()> {
    let (v, rest) = options::parse(&[REPORT_OPTIONS], args, "report")?;
    let targets: Vec<&str> = match rest.is_empty() {
        true => vec!["virtperf-results"],
        false => rest.iter().map(String::as_str).collect(),
    };
    for (i, t) in targets.iter().enumerate() {
        if targets[..i]
            .iter()
            .any(|u| u.trim_end_matches('/') == t.trim_end_matches('/'))
        {
            return Err(CliError::Usage(format!(
                "report: {t} is given twice: name each results store once"
            ))
            .into());
        }
    }
    let settings = super::plan::settings(v.float("margin"));
    let mut hosts = targets
        .iter()
        .map(|t| load(t, &settings))
        .collect::<Result<Vec<_>>>()?;
    let view = report::View {
        detail: v.flag("detail"),
    };
    let exporter = report::exporter(v.text("format"))?;
    let text = if hosts.len() == 1 {
        exporter.render(&hosts.remove(0).analysis, view)
    } else {
        let fleet = Fleet::build(hosts).map_err(|why| CliError::Usage(format!("report: {why}")))?;
        exporter.render_fleet(&fleet, view)
    };
    match v.text("out") {
        "" => print!("{text}"),
        path => std::fs::write(path, text).with_context(|| format!("--out {path}"))?,
    }
    Ok(())
}
