//! `virtperf import`: other tools' results (sysbench, fio, iperf3,
//! bonnie++, netperf) into a results store, each file one run under an
//! environment label the user gives, so `virtperf report` sets them beside
//! measured runs.
//!
//! How an imported run finds its entry: the parser says which workload it
//! is a run of and which of that workload's options the file states
//! (sysbench cpu: `--cpu-max-prime`, `--threads`); those are validated
//! against the workload's option table, and the run joins the first entry
//! of the store's newest comparison (or the one `--comparison` names; in a
//! PostgreSQL store, which a fleet shares, a comparison of its own unless
//! `--comparison` says) whose workload is the same and whose parameters
//! agree on every one of them. Options a file does not state
//! (the run's length: `--time`, `--events`; what the tool cannot say) do
//! not count. With no such entry the run starts a new one. Files are read
//! before anything is written, and all runs of one call are written in
//! one transaction: a file that is refused leaves the store as it was.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{Map, Value};

use crate::core::options::{self, CliError, OptKind, OptionSpec};
use crate::core::result::{EnvInfo, ImportedFrom, ResultDoc, SCHEMA};
use crate::core::text;
use crate::store::{RunRow, Store};
use crate::workload::import::{Imported, MAX_FILE_BYTES};
use crate::workload::Job;

/// The most files one call reads.
pub const MAX_FILES: usize = 10_000;
/// The longest environment label.
const MAX_LABEL: usize = 64;

pub const IMPORT_OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "env",
        OptKind::Text,
        "",
        "environment label the runs are stored under (required; not one a comparison in the store measured)",
    ),
    OptionSpec::new(
        "kind",
        OptKind::Text,
        "",
        "the files' format, when detection should not decide (see below); sysbench:TEST names the test",
    ),
    OptionSpec::new(
        "out",
        OptKind::Text,
        "virtperf-results",
        "results directory whose store (results.db) the runs go into, or postgresql://USER@HOST[:PORT]/DB",
    ),
    OptionSpec::new(
        "comparison",
        OptKind::Int { min: 1, max: i64::MAX as u64 },
        "",
        "the number of the comparison the runs join (default: the newest in a results directory; in a postgresql:// store, shared by a fleet, a new comparison of their own)",
    ),
    crate::store::PASSWORD_FILE,
];

/// A parsed `virtperf import`.
#[derive(Debug, Clone)]
pub struct ImportArgs {
    pub env: String,
    /// `--kind`: a format and, after ':', a part of it (a sysbench test).
    pub kind: Option<(String, Option<String>)>,
    pub out: crate::store::Location,
    /// `--comparison N`: the comparison the runs join.
    pub comparison: Option<i64>,
    pub files: Vec<PathBuf>,
}

/// `virtperf import --help` below its synopsis (the command table's).
pub fn help() -> String {
    let mut out = String::from(
        "Reads other tools' results into a results store, each file one run (several files:\n\
         repetitions) under the environment label NAME, so 'virtperf report DIR' sets them\n\
         beside measured runs: last year's logs beside today's comparison.\n\n\
         The runs go into the store's newest comparison (the one 'report' shows), or a new one\n\
         if the store has none; --comparison N names another. Into a postgresql:// store, which\n\
         a fleet shares (its newest comparison may be another host's, still running), they go\n\
         into a comparison of their own unless --comparison says which to join. Each run is a run of one of virtperf's workloads, with the tool's\n\
         figures under virtperf's metric names where they mean the same (events/s, MiB/s, IOPS,\n\
         latency, Mbit/s, trans/s, KiB/s) and its other figures under their own names. It joins\n\
         the entry of the same workload whose parameters agree on every option the file states:\n\
         a sysbench cpu log of --cpu-max-prime=20000 with 1 thread pairs with\n\
         'virtperf compare ... cpu --cpu-max-prime=20000' (--time and --events do not count),\n\
         fio's rw/bs/numjobs/ioengine with fileio's --file-test-mode/--file-block-size/--threads/\n\
         --file-io-mode, iperf3's -P with net's --net-streams. Otherwise it starts an entry.\n\
         Each run records the tool, its version and the file; reports mark them imported.\n\n\
         A file that cannot be read is refused with the line and what was expected there, and\n\
         then nothing of the call is stored.\n\n",
    );
    out.push_str(&options::render_help("Options", IMPORT_OPTIONS));
    out.push_str("\nKinds (detected from the content unless --kind says):\n");
    for f in crate::workload::IMPORT_FORMATS {
        out.push_str(&format!("  {:<13} {}\n", f.kind, f.summary));
    }
    out.push_str(
        "\nExamples:\n  virtperf import --env esxi-2019 cpu-1.log cpu-2.log cpu-3.log\n  \
         virtperf import --env vendor --kind fio --out results fio-randread.json\n  \
         virtperf import --env old-kvm --kind sysbench:mutex mutex.log\n",
    );
    out
}

/// Parses import's arguments (without the word `import`).
pub fn parse(args: &[String]) -> Result<ImportArgs, CliError> {
    let (v, files) = options::parse(&[IMPORT_OPTIONS], args, "import")?;
    let env = v.text("env").to_string();
    if env.is_empty() {
        return Err(CliError::Usage(
            "import: --env NAME is required: the environment label the imported runs are stored under (e.g. --env esxi-2019)".into(),
        ));
    }
    if env.chars().count() > MAX_LABEL || env.chars().any(|c| c.is_control()) || env.trim() != env {
        return Err(CliError::Usage(format!(
            "import: --env '{}' is not a usable label: give at most {MAX_LABEL} printable characters without leading or trailing blanks",
            crate::core::text::terminal_safe(&env, 80)
        )));
    }
    let kind = match v.text("kind") {
        "" => None,
        k => {
            let (name, sub) = match k.split_once(':') {
                Some((n, s)) => (n, Some(s.to_string())),
                None => (k, None),
            };
            if crate::workload::import_format(name).is_none() {
                return Err(CliError::Usage(format!(
                    "import: --kind {k}: no such format; use one of {}",
                    crate::workload::import_kinds()
                )));
            }
            Some((name.to_string(), sub))
        }
    };
    if files.is_empty() {
        return Err(CliError::Usage(
            "import: no FILE given: name the logs to import (each file one run)".into(),
        ));
    }
    if files.len() > MAX_FILES {
        return Err(CliError::Usage(format!(
            "import: {} files in one call; give at most {MAX_FILES}",
            files.len()
        )));
    }
    Ok(ImportArgs {
        env,
        kind,
        out: crate::store::Location::parse(
            v.text("out"),
            "--out",
            v.text_opt("store-password-file").map(std::path::Path::new),
        )?,
        comparison: v
            .was_given("comparison")
            .then(|| v.int("comparison") as i64),
        files: files.into_iter().map(PathBuf::from).collect(),
    })
}

/// A file's text, bounded. Only a regular file is read: it is opened
/// without blocking (a FIFO's open(2) would wait for a writer for as long
/// as there is none, deaf to Ctrl-C) and refused when fstat says it is a
/// FIFO, a device, a socket or a directory.
fn read_bounded(path: &Path) -> Result<(String, Option<String>), CliError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let name = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| CliError::Usage(format!("import: {name}: cannot open it ({e})")))?;
    let meta = file
        .metadata()
        .map_err(|e| CliError::Usage(format!("import: {name}: {e}")))?;
    if !meta.is_file() {
        let t = meta.file_type();
        let what = if t.is_fifo() {
            "a FIFO"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_socket() {
            "a socket"
        } else {
            "a device"
        };
        return Err(CliError::Usage(format!(
            "import: {name} is {what}, not a regular file: give the log file the tool wrote (save a stream to a file first)"
        )));
    }
    // The day it was written: when the tool ran, as near as a file tells.
    let date = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| {
            let day = crate::core::time::rfc3339(d.as_secs_f64(), false);
            day.get(..10).map(str::to_string)
        });
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::Usage(format!("import: {name}: cannot read it ({e})")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(CliError::Usage(format!(
            "import: {name} is larger than {} MiB: no tool's result file is; give the tool's output file itself",
            MAX_FILE_BYTES >> 20
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
        CliError::Usage(format!(
            "import: {name}: line {line}: expected text (UTF-8), found other bytes: is it the tool's output?"
        ))
    })?;
    Ok((text, date))
}

/// One run ready to store.
struct Prepared {
    file: String,
    workload: &'static str,
    /// The options and parameters that choose its entry (snake_case, as
    /// result documents name parameters).
    identity: Map<String, Value>,
    label: String,
    doc: ResultDoc,
}

/// Reads one file into its runs.
fn prepare(path: &Path, args: &ImportArgs) -> Result<Vec<Prepared>, CliError> {
    let name = path.display().to_string();
    let (text, date) = read_bounded(path)?;
    let (format, sub) = match &args.kind {
        Some((k, sub)) => (
            crate::workload::import_format(k).expect("checked when parsed"),
            sub.as_deref(),
        ),
        None => (
            crate::workload::detect_import(&text).ok_or_else(|| {
                CliError::Usage(format!(
                    "import: {name}: line 1: expected the output of one of {} (see 'virtperf import --help'), found '{}'; if it is one, say which with --kind",
                    crate::workload::import_kinds(),
                    crate::core::text::terminal_safe(
                        &text.lines().next().unwrap_or("").chars().take(60).collect::<String>(),
                        80
                    )
                ))
            })?,
            None,
        ),
    };
    let runs = (format.parse)(&text, sub)
        .and_then(|runs| {
            // A figure its format cannot hold refuses the file.
            runs.iter().try_for_each(Imported::check)?;
            Ok(runs)
        })
        .map_err(|r| {
            CliError::Usage(format!(
                "import: {name} ({} format): {}",
                format.kind,
                crate::core::text::terminal_safe(&r.to_string(), 400)
            ))
        })?;
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.clone());
    runs.into_iter()
        .map(|imp| document(imp, &args.env, (&file, date.as_deref()), &name))
        .collect()
}

/// An imported run as a result document, its options checked against its
/// workload's table.
fn document(
    imp: Imported,
    env: &str,
    (file, file_date): (&str, Option<&str>),
    shown: &str,
) -> Result<Prepared, CliError> {
    let mut argv = vec![imp.def.name.to_string()];
    let mut keys = Vec::new();
    for (k, v) in &imp.options {
        argv.push(format!("--{k}={v}"));
        keys.push(k.replace('-', "_"));
    }
    let job = Job::from_args(&argv).map_err(|e| {
        CliError::Usage(format!(
            "import: {shown}: the file's settings are not a valid {} run: {e}",
            imp.def.name
        ))
    })?;
    let all = job.values.to_params(&[]);
    let mut identity: Map<String, Value> =
        all.into_iter().filter(|(k, _)| keys.contains(k)).collect();
    for (k, v) in &imp.params {
        identity.insert(k.clone(), v.clone());
    }
    let mut label = job.args().join(" ");
    for (k, v) in &imp.params {
        label.push_str(&format!(
            " {k}={}",
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string())
        ));
    }
    let from = ImportedFrom {
        tool: imp.tool.to_string(),
        version: imp.version.clone(),
        file: file.to_string(),
        file_date: file_date.map(str::to_string),
    };
    let doc = ResultDoc {
        schema: SCHEMA.into(),
        workload: imp.def.name.into(),
        params: identity.clone(),
        env: EnvInfo {
            name: env.into(),
            kind: "imported".into(),
            kernel: imp.host.clone(),
            imported: Some(from.clone()),
            ..EnvInfo::default()
        },
        started_at: crate::core::time::now_rfc3339(),
        duration_s: imp.duration_s,
        events: imp.events,
        metrics: imp.metrics,
        latency_ms: imp.latency,
        fairness: imp.fairness,
        monitor: Default::default(),
        details: serde_json::json!({ "imported": from, "tool": imp.details }),
        // Another tool's file says nothing of what its run cost.
        accounting: None,
    };
    Ok(Prepared {
        file: file.to_string(),
        workload: imp.def.name,
        identity,
        label,
        doc,
    })
}

/// An entry of the comparison, as its first run shows it.
struct Entry {
    index: usize,
    label: String,
    workload: String,
    params: Map<String, Value>,
}

pub fn main(args: &ImportArgs) -> Result<()> {
    // Everything is read and checked before the store is touched.
    let mut prepared = Vec::new();
    for path in &args.files {
        prepared.extend(prepare(path, args)?);
    }
    let store = Store::create(&args.out)?;
    let lines = store.in_transaction(|store| write(store, args, &prepared))?;
    for l in lines {
        // The file's version, names and figures' names are its own.
        println!("{}", text::output(&l, text::Form::Text));
    }
    Ok(())
}

/// Writes every run; the lines to print.
fn write(store: &Store, args: &ImportArgs, prepared: &[Prepared]) -> Result<Vec<String>> {
    let env = &args.env;
    // A shared store's newest comparison is whichever host began one
    // last (maybe still running): an import there joins only the one it
    // names.
    let joined = match args.comparison {
        Some(n) => Some(store.comparison(n)?.ok_or_else(|| {
            CliError::Usage(format!(
                "import: --comparison {n}: {} holds no comparison #{n}; 'virtperf history {}' lists them, or leave out --comparison",
                args.out, args.out
            ))
        })?),
        None if args.out.dir().is_some() => store.latest()?,
        None => None,
    };
    let (id, new) = match joined {
        Some(c) => {
            if c.suite != SUITE && c.envs.iter().any(|e| e == env) {
                return Err(CliError::Usage(format!(
                    "import: --env {env}: comparison #{} measured an environment of that name; give the imported runs a label of their own (e.g. --env {env}-imported)",
                    c.id
                ))
                .into());
            }
            (c.id, false)
        }
        None => (
            store.begin(
                &crate::core::time::now_rfc3339(),
                SUITE,
                env,
                std::slice::from_ref(env),
                &[],
            )?,
            true,
        ),
    };
    let runs = store.runs(id)?;
    if let Some(r) = runs
        .iter()
        .find(|r| r.env == *env && r.doc.as_ref().is_some_and(|d| d.env.imported.is_none()))
    {
        return Err(CliError::Usage(format!(
            "import: --env {env}: comparison #{id} has runs measured in an environment of that name (entry '{}'); give the imported runs a label of their own",
            r.label
        ))
        .into());
    }
    let (mut entries, mut rounds) = entries_of(&runs, env);
    let mut out = Vec::new();
    if new {
        out.push(format!(
            "comparison #{id}: new, baseline {env} (imported runs only) in {}",
            store.place()
        ));
    }
    for p in prepared {
        let found = entries.iter().find(|e| {
            e.workload == p.workload && p.identity.iter().all(|(k, v)| e.params.get(k) == Some(v))
        });
        let (index, label, why_new) = match found {
            Some(e) => (e.index, e.label.clone(), String::new()),
            None => {
                let why = why_new(p, &entries);
                let index = entries
                    .iter()
                    .map(|e| e.index + 1)
                    .chain(runs.iter().map(|r| r.entry + 1))
                    .max()
                    .unwrap_or(0);
                entries.push(Entry {
                    index,
                    label: p.label.clone(),
                    workload: p.workload.to_string(),
                    params: p.identity.clone(),
                });
                (index, p.label.clone(), why)
            }
        };
        let round = rounds.entry(index).or_default();
        store.record(id, env, index, &label, *round, Ok(&p.doc))?;
        *round += 1;
        let from = p
            .doc
            .env
            .imported
            .as_ref()
            .map(|i| i.describe())
            .unwrap_or_default();
        let figures = headline_figures(&p.doc);
        out.push(format!(
            "{}: {from}, {} run {} of entry #{index} '{label}'{} in comparison #{id}: {figures}",
            p.file, env, *round, why_new,
        ));
    }
    Ok(out)
}

/// Why a run starts an entry of its own: the parameters in which it
/// differs from the nearest entry of its workload.
fn why_new(p: &Prepared, entries: &[Entry]) -> String {
    use crate::analysis::unpaired::{describe, differing};
    let nearest = entries
        .iter()
        .filter(|e| e.workload == p.workload)
        .map(|e| (e, differing(&p.identity, &e.params)))
        .min_by_key(|(_, d)| d.len());
    match nearest {
        Some((e, d)) if !d.is_empty() => format!(
            " (new entry: the file's {} in entry #{} '{}')",
            describe(&d),
            e.index,
            e.label
        ),
        Some(_) => " (new entry)".into(),
        None if entries.is_empty() => " (new entry: the comparison had none)".into(),
        None => format!(
            " (new entry: the comparison has no {} entry to join)",
            p.workload
        ),
    }
}

/// The entries of a comparison's runs, as each one's first run shows it,
/// in order, and how many runs `env` has in each.
fn entries_of(runs: &[RunRow], env: &str) -> (Vec<Entry>, BTreeMap<usize, usize>) {
    let mut entries: Vec<Entry> = Vec::new();
    let mut rounds: BTreeMap<usize, usize> = BTreeMap::new();
    for r in runs {
        if r.env == env {
            *rounds.entry(r.entry).or_default() += 1;
        }
        if entries.iter().any(|e| e.index == r.entry) {
            continue;
        }
        if let Some(d) = &r.doc {
            entries.push(Entry {
                index: r.entry,
                label: r.label.clone(),
                workload: d.workload.clone(),
                params: d.params.clone(),
            });
        }
    }
    entries.sort_by_key(|e| e.index);
    (entries, rounds)
}

/// An imported run's headline figures, as its line says them.
fn headline_figures(doc: &ResultDoc) -> String {
    let figures = doc
        .metrics
        .iter()
        .filter(|m| crate::analysis::is_headline(&doc.workload, &m.name))
        .map(|m| format!("{} {} {}", m.name, fmt(m.value), m.unit))
        .collect::<Vec<_>>()
        .join(", ");
    // A log whose headline figures the tool could not give (bonnie++'s
    // '+++++' for a pass too fast to time) still has its others.
    match (figures.is_empty(), doc.metrics.len()) {
        (false, _) => figures,
        (true, n) => format!(
            "no headline figure in the file, {n} other{} (--detail)",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// The suite name of a comparison `import` started (a store with no
/// measured comparison).
pub const SUITE: &str = "import";

fn fmt(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.4}")
    }
}
