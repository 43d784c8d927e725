//! The environments' fingerprints: kind, hypervisor, CPU, memory, quota,
//! kernel, how long each took to be ready, its network path and storage, and
//! how its driver set it up. Too wide for a terminal: HTML shows it.

use crate::analysis::Analysis;
use crate::core::result::EnvInfo;
use crate::report::model::{Block, Cell, Column, Row, Section, Table, Tone, View};

/// What a fingerprint field its source did not give shows.
const UNKNOWN: &str = "unknown";

/// The environments' table.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    vec![environments(a)]
}

fn environments(a: &Analysis) -> Section {
    let cols = [
        "kind",
        "hypervisor",
        "CPU",
        "CPUs",
        "memory",
        "CPU quota",
        "kernel",
        "ready after",
        "network path",
        "storage",
    ];
    let mut columns = vec![Column::text("environment", 0)];
    columns.extend(cols.iter().map(|c| Column::text(c, 0)));
    // How a driver set its environment up (a libvirt domain's XML
    // essentials), where one says.
    let settings = a.fingerprints.values().any(|f| !f.settings.is_empty());
    if settings {
        columns.push(Column::text("settings", 0));
    }
    let rows = a
        .envs
        .iter()
        .map(|env| environment_row(env, a.fingerprints.get(env), settings))
        .collect();
    Section {
        terminal: false,
        ..Section::new(
            "environments",
            "Environments",
            vec![Block::Table(Table {
                group: None,
                columns,
                rows,
            })],
        )
    }
}

/// One environment's row: its fingerprint's facts, "unknown" where the
/// source did not give one, and how its driver set it up (`settings`).
fn environment_row(env: &str, f: Option<&EnvInfo>, settings: bool) -> Row {
    let storage = f.and_then(|f| f.storage.as_ref());
    let hv = f.map(|f| f.hypervisor.as_str()).unwrap_or("");
    // A fingerprint field the source did not give (an imported
    // run's CPUs, memory, kernel) is unknown, never 0.
    let known = |t: String| if t.is_empty() { UNKNOWN.to_string() } else { t };
    let mut row = Row {
        group: String::new(),
        cells: vec![
            env.into(),
            f.map(|f| f.kind.clone()).unwrap_or_default().into(),
            Cell {
                text: known(crate::sys::fingerprint::hypervisor_name(hv).into()),
                tone: Tone::Plain,
                hover: Some(hv.into()),
            },
            known(f.map(|f| f.cpu_model.clone()).unwrap_or_default()).into(),
            known(
                f.filter(|f| f.cpus > 0)
                    .map(|f| f.cpus.to_string())
                    .unwrap_or_default(),
            )
            .into(),
            known(
                f.filter(|f| f.memory_bytes > 0)
                    .map(|f| format!("{:.1} GiB", f.memory_bytes as f64 / (1u64 << 30) as f64))
                    .unwrap_or_default(),
            )
            .into(),
            f.and_then(|f| f.cgroup.cpu_quota)
                .map(|q| format!("{q}"))
                .unwrap_or_else(|| "–".into())
                .into(),
            known(f.map(|f| f.kernel.clone()).unwrap_or_default()).into(),
            f.and_then(|f| f.ready_s)
                .map(|s| format!("{s:.2} s"))
                .unwrap_or_default()
                .into(),
            f.and_then(|f| f.net_path.clone())
                .unwrap_or_else(|| "–".into())
                .into(),
            storage
                .map(|s| s.describe())
                .unwrap_or_else(|| "–".into())
                .into(),
        ],
        flagged: storage.is_some_and(|s| s.fsync_ignored.is_some()),
    };
    if settings {
        let text = f
            .map(|f| {
                f.settings
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "–".into());
        row.cells.push(text.into());
    }
    row
}
