//! `virtperf report`: renders a stored comparison in any format.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::analysis::gate::{self, Gate};
use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::core::text::Form;
use crate::report::{self, Exporter, Fleet, HostAnalysis, View};
use crate::store::{is_url, ComparisonRow, Location, Store};

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
    super::plan::FIGURES,
    super::plan::FAIL_ON,
    crate::store::PASSWORD_FILE,
];

/// `virtperf report --help` below its synopsis (the command table's).
pub fn report_help() -> String {
    format!(
        "Renders a stored comparison: RUN is a comparison number in ./virtperf-results, DIR a\n\
         results directory (its newest comparison), DIR/N a number in DIR. Default: the newest in\n\
         ./virtperf-results.\n\n\
         Several DIRs (one per host of a fleet, the same suite run on each): every host's report,\n\
         and first a fleet view: per entry, headline metric and environment kind, the median\n\
         effect across hosts (overhead % for rates, times slower for times), its range and\n\
         quartiles, and the outliers (further from the median than max(3 x 1.4826 x MAD, the\n\
         margin), with 3 hosts or more). Stores of different suites, plans or baselines are\n\
         refused, never mixed.\n\n\
         A PostgreSQL store (postgresql://USER@HOST[:PORT]/DB, its newest comparison, or URL#N)\n\
         is read as a directory is; the password comes from --store-password-file or $PGPASSWORD.\n\n{}",
        options::render_help("Options", REPORT_OPTIONS)
    ) + &format!("\nFormats: {}\n", report::format_names())
}

/// The results directory `report` reads when given none.
const DEFAULT_DIR: &str = "virtperf-results";

/// Where one `report` argument points: a results directory and, when
/// given, a comparison number in it.
fn resolve(
    target: &str,
    password_file: Option<&Path>,
) -> Result<(Location, Option<i64>), CliError> {
    if is_url(target) {
        let (url, id) = match target.rsplit_once('#') {
            Some((u, n)) => (
                u,
                Some(n.parse::<i64>().map_err(|_| {
                    CliError::Usage(format!(
                        "report: '{target}': after '#' goes a comparison number (URL#N)"
                    ))
                })?),
            ),
            None => (target, None),
        };
        return Ok((Location::parse(url, "report", password_file)?, id));
    }
    let (dir, id) = if let Ok(n) = target.parse::<i64>() {
        (PathBuf::from(DEFAULT_DIR), Some(n))
    } else if Path::new(target).is_dir() {
        (PathBuf::from(target), None)
    } else if let Some((d, n)) = target
        .rsplit_once('/')
        .and_then(|(d, n)| Some((d, n.parse::<i64>().ok()?)))
    {
        (PathBuf::from(d), Some(n))
    } else if target == DEFAULT_DIR {
        return Err(CliError::Usage(format!(
            "report: there are no results here (no ./{DEFAULT_DIR}): make some with 'virtperf compare' (or 'virtperf import'), or name a results directory: 'virtperf report DIR'"
        )));
    } else {
        return Err(CliError::Usage(format!(
            "report: '{target}' is neither a comparison number nor a results directory (no such directory): give RUN, DIR or DIR/N"
        )));
    };
    if !dir.join("results.db").exists() {
        return Err(CliError::Usage(format!(
            "report: no results store in {} (run virtperf compare first, or give --out's directory)",
            dir.display()
        )));
    }
    Ok((Location::Dir(dir), id))
}

/// One store's comparison, analysed. A comparison the store does not
/// hold is bad input, answered with the ones it does.
fn load(
    target: &str,
    settings: &crate::stats::VerdictSettings,
    password_file: Option<&Path>,
) -> Result<HostAnalysis> {
    let (at, id) = resolve(target, password_file)?;
    let reading = || format!("report: reading the results store in {at}");
    let store = Store::read(&at).with_context(reading)?;
    let found = match id {
        Some(n) => store.comparison(n),
        None => store.latest(),
    }
    .with_context(reading)?;
    let Some(cmp) = found else {
        let held = store.comparisons().with_context(reading)?;
        return Err(no_such_comparison(&at, id, &held).into());
    };
    let runs = store.runs(cmp.id).with_context(reading)?;
    Ok(HostAnalysis {
        host: target.trim_end_matches('/').to_string(),
        analysis: report::analyze(&cmp, &runs, settings),
    })
}

/// "No comparison #N in DIR", with the ones it holds to choose from.
fn no_such_comparison(at: &Location, id: Option<i64>, held: &[ComparisonRow]) -> CliError {
    let d = at;
    let sep = if at.dir().is_some() { "/" } else { "#" };
    if held.is_empty() {
        return CliError::Usage(format!(
            "report: {d} holds no comparison yet: make one with 'virtperf compare --out {d}'"
        ));
    }
    let list: Vec<String> = held
        .iter()
        .map(|c| {
            format!(
                "#{} ({}, {} suite, {})",
                c.id,
                c.started_at,
                c.suite,
                c.envs.join(" ")
            )
        })
        .collect();
    let last = held.last().map_or(0, |c| c.id);
    CliError::Usage(format!(
        "report: no comparison #{} in {d}; it holds {}: name one, e.g. 'virtperf report {d}{sep}{last}'",
        id.unwrap_or(0),
        list.join(", ")
    ))
}

/// `virtperf report`, parsed (by `cli`).
#[derive(Clone)]
pub struct ReportArgs {
    /// What to render, each RUN, DIR or DIR/N as given; never empty (the
    /// default is `virtperf-results`), none given twice.
    pub targets: Vec<String>,
    /// `--format`.
    pub format: &'static Exporter,
    /// `--out`: a file to write instead of standard output.
    pub out: Option<PathBuf>,
    /// `--margin`, in percent.
    pub margin_pct: f64,
    /// `--detail`.
    pub view: View,
    /// `--figures`: where each chart goes as an SVG file.
    pub figures: Option<PathBuf>,
    /// `--fail-on`: gates on every host's headline verdicts.
    pub fail_on: Vec<Gate>,
    /// `--store-password-file`: a PostgreSQL store's password.
    pub password_file: Option<PathBuf>,
}

/// `virtperf report ...`
pub fn report_main(args: &ReportArgs) -> Result<()> {
    let settings = super::plan::settings(args.margin_pct);
    let mut hosts = args
        .targets
        .iter()
        .map(|t| load(t, &settings, args.password_file.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    let tripped = gated_rows(&hosts, &args.fail_on);
    let what = match hosts.as_slice() {
        [one] => format!("comparison #{}", one.analysis.id),
        many => format!("{} stores", many.len()),
    };
    let text = if hosts.len() == 1 {
        let a = hosts.remove(0).analysis;
        if let Some(dir) = &args.figures {
            report::write_figures(&report::document(&a, args.view), dir)?;
        }
        args.format.render_gated(&a, args.view, &args.fail_on)
    } else {
        let fleet = Fleet::build(hosts).map_err(|why| CliError::Usage(format!("report: {why}")))?;
        if let Some(dir) = &args.figures {
            report::write_figures(&report::fleet_document(&fleet, args.view), dir)?;
        }
        args.format.render_fleet(&fleet, args.view)
    };
    let text = crate::core::text::output(&text, Form::of(args.format.name()));
    match &args.out {
        None => print!("{text}"),
        Some(path) => {
            // Missing parents are made, as compare's --out makes its directory.
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("--out {}", path.display()))?;
            }
            std::fs::write(path, text.as_bytes())
                .with_context(|| format!("--out {}", path.display()))?
        }
    }
    Ok(gate::verdict(what, tripped)?)
}

/// Each host's headline rows that `--fail-on` fails, as the message says
/// them (a fleet's prefixed with its host).
fn gated_rows(hosts: &[HostAnalysis], gates: &[Gate]) -> Vec<String> {
    hosts
        .iter()
        .flat_map(|h| {
            let prefix = if hosts.len() > 1 {
                format!("{}: ", h.host)
            } else {
                String::new()
            };
            gate::trips(&h.analysis, gates)
                .into_iter()
                .map(move |r| format!("{prefix}{r}"))
        })
        .collect()
}
