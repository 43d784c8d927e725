//! `virtperf history STORE...`: every finished comparison of one or more
//! results stores, analysed as `report` would, laid out as a history
//! (`analysis::history`): series per environment, entry and headline
//! metric, change points by E-divisive means, the settings and
//! fingerprints that changed. `--fail-on=changed` ends it with the gate's
//! exit code when a series changed at its newest comparisons.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::analysis::gate::{self, Gate};
use crate::analysis::history::{method, History, Stored};
use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::core::text::Form;
use crate::report;
use crate::stats::changepoint::Settings;
use crate::store::{is_url, ComparisonRow, Location, Store};

pub const HISTORY_OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "format",
        OptKind::Choice(report::HISTORY_FORMATS),
        "table",
        "output format",
    ),
    OptionSpec::new(
        "out",
        OptKind::Text,
        "",
        "write to this file instead of standard output",
    ),
    super::plan::MARGIN,
    OptionSpec::new(
        "alpha",
        OptKind::Float { min: 0.001, max: 0.2 },
        "0.02",
        "the level of the change points' permutation test",
    ),
    OptionSpec::new(
        "permutations",
        OptKind::Int { min: 19, max: 9999 },
        "499",
        "permutations per test, at most (seeded: the same stores give the same answer)",
    ),
    OptionSpec::new(
        "fail-on",
        OptKind::Choice(&["changed"]),
        "",
        "changed: exit with code 3 when a series has a change point among its newest comparisons (the newest 3, the fewest a side of a change point can have), naming it",
    )
    .repeatable(),
    crate::store::PASSWORD_FILE,
];

/// `virtperf history`, parsed.
#[derive(Debug, Clone)]
pub struct HistoryArgs {
    /// Results directories and PostgreSQL stores, in the order given;
    /// never empty.
    pub stores: Vec<Location>,
    pub format: String,
    pub out: Option<PathBuf>,
    pub margin_pct: f64,
    pub settings: Settings,
    pub fail_on: Vec<Gate>,
}

/// `virtperf history --help` below its synopsis.
pub fn history_help() -> String {
    format!(
        "Every finished comparison in one or more results stores (DIRs, as 'report' takes them, or\n\
         postgresql://USER@HOST[:PORT]/DB stores; password: --store-password-file or $PGPASSWORD), in\n\
         time order, as series per environment label, entry and headline metric: each comparison's\n\
         slowdown against the baseline (times slower) with its 95% interval, the raw means, the\n\
         verdict, and the settings and fingerprint facts (spec, kernel, CPU quota, ...) that\n\
         changed beside the comparison where they changed. Change points: {}.\n\
         A significant split that a straight line fits as well as two levels is reported as a\n\
         drift, not a step. Formats: table, markdown, json (virtperf.history/1), html (a trend\n\
         chart per series: interval band, change points marked, facts on hover).\n\n{}\n\
         Exit codes: 0, or 3 when a --fail-on gate tripped; 2 bad input.\n",
        method(&Settings::default()),
        options::render_help("Options", HISTORY_OPTIONS)
    )
}

/// Parses history's arguments (without the word `history`).
pub fn parse(args: &[String]) -> Result<HistoryArgs, CliError> {
    let (v, rest) = options::parse(&[HISTORY_OPTIONS], args, "history")?;
    if rest.is_empty() {
        return Err(CliError::Usage(
            "history: name one or more results directories: 'virtperf history DIR...'".into(),
        ));
    }
    let mut stores: Vec<Location> = Vec::new();
    let password_file = v.text_opt("store-password-file").map(Path::new);
    for t in &rest {
        if is_url(t) {
            let at = Location::parse(t, "history", password_file)?;
            if stores.contains(&at) {
                return Err(CliError::Usage(format!(
                    "history: {t} is given twice: name each results store once"
                )));
            }
            stores.push(at);
            continue;
        }
        let dir = PathBuf::from(t.trim_end_matches('/'));
        if stores.contains(&Location::Dir(dir.clone())) {
            return Err(CliError::Usage(format!(
                "history: {t} is given twice: name each results store once"
            )));
        }
        if !dir.join("results.db").is_file() {
            return Err(CliError::Usage(format!(
                "history: no results store in {t} (no results.db): give a directory 'virtperf compare --out' wrote"
            )));
        }
        stores.push(Location::Dir(dir));
    }
    let words = v.list("fail-on").to_vec();
    Ok(HistoryArgs {
        stores,
        format: v.text("format").to_string(),
        out: v.text_opt("out").map(PathBuf::from),
        margin_pct: v.float("margin"),
        settings: Settings {
            alpha: v.float("alpha"),
            permutations: v.int("permutations") as usize,
            ..Settings::default()
        },
        fail_on: Gate::parse_all(&words)?,
    })
}

/// `virtperf history ...`
pub fn history_main(args: &HistoryArgs) -> Result<()> {
    let verdicts = super::plan::settings(args.margin_pct);
    let several = args.stores.len() > 1;
    let mut stored = Vec::new();
    for at in &args.stores {
        let reading = || format!("history: reading the results store in {at}");
        let store = Store::read(at).with_context(reading)?;
        for cmp in store.comparisons().with_context(reading)? {
            if !cmp.finished {
                continue;
            }
            let runs = store.runs(cmp.id).with_context(reading)?;
            stored.push(Stored {
                name: if several {
                    format!("{at}#{}", cmp.id)
                } else {
                    format!("#{}", cmp.id)
                },
                specs: specs_of(&cmp),
                analysis: report::analyze(&cmp, &runs, &verdicts),
            });
        }
    }
    let h = History::build(stored, args.settings);
    let text = report::render_history(&h, &args.format);
    let text = crate::core::text::output(&text, Form::of(&args.format));
    match &args.out {
        None => print!("{text}"),
        Some(path) => write_out(path, &text)?,
    }
    let tripped: Vec<String> = if args.fail_on.contains(&Gate::Changed) {
        h.newest_changes()
            .iter()
            .map(|(s, c)| h.sentence(s, c))
            .collect()
    } else {
        Vec::new()
    };
    let what = format!("{} series", h.series.len());
    Ok(gate::verdict(what, tripped)?)
}

fn write_out(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("--out {}", path.display()))?;
    }
    std::fs::write(path, text.as_bytes()).with_context(|| format!("--out {}", path.display()))
}

/// Each environment label's spec text, from the arguments the store kept
/// (labels as the plan gives them: a name=, else the driver's word, a
/// second of the same kind numbered).
fn specs_of(cmp: &ComparisonRow) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(parsed) = super::args::parse(&cmp.args) else {
        return out;
    };
    let plan = parsed.plan;
    out.insert(plan.baseline.label.clone(), plan.baseline.text.clone());
    for s in plan.envs.iter().filter(|s| s.label != plan.baseline.label) {
        let mut label = s.label.clone();
        let mut k = 2;
        while out.contains_key(&label) {
            label = format!("{} ({k})", s.label);
            k += 1;
        }
        out.insert(label, s.text.clone());
    }
    out
}
