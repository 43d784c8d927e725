//! The registry: every workload virtperf knows, one line each, and every
//! other tool's output `virtperf import` reads. Adding a workload is its own
//! file or folder, its `pub mod` line in `workload/mod.rs` and one line in
//! `WORKLOADS`; a parser of another tool's output of it is one more line in
//! `IMPORT_FORMATS` (or `SYSBENCH_TESTS`). Lua scripts are not listed: their
//! runs are described by `lua::DEF` ([`def_of_result`]).

use super::def::WorkloadDef;
use super::import::sysbench::{self, SysbenchTestImport};
use super::import::Format;
use super::{cpu, disk, fileio, linpack, memory, microops, mutex, net, oltp, threads};

pub static WORKLOADS: &[&WorkloadDef] = &[
    &cpu::DEF,
    &memory::DEF,
    &threads::DEF,
    &mutex::DEF,
    &microops::DEF,
    &fileio::DEF,
    &disk::DEF,
    &linpack::DEF,
    &net::DEF,
    &oltp::READ_WRITE,
    &oltp::READ_ONLY,
    &oltp::WRITE_ONLY,
    &oltp::POINT_SELECT,
    &oltp::UPDATE_INDEX,
    &oltp::UPDATE_NON_INDEX,
    &oltp::INSERT,
    &oltp::DELETE,
];

/// The workload of that name.
pub fn find(name: &str) -> Option<&'static WorkloadDef> {
    WORKLOADS.iter().copied().find(|d| d.name == name)
}

/// The definition behind a result's `workload`: the workload of that name,
/// or, for a Lua script's file name (`*.lua`), what script jobs have
/// ([`super::lua::DEF`]: its metrics and their headline).
pub fn def_of_result(name: &str) -> Option<&'static WorkloadDef> {
    find(name).or_else(|| name.ends_with(".lua").then_some(&super::lua::DEF))
}

/// Every format `virtperf import` reads, in the order detection tries
/// them: each tool's parser lives with the workload it makes runs of.
pub static IMPORT_FORMATS: &[&Format] = &[
    &fileio::import::FIO,
    &net::import::IPERF3,
    &SYSBENCH,
    &SYSBENCH_04,
    &disk::bonnie::BONNIE,
    &net::import::NETPERF,
];

/// sysbench's tests as `import` reads them, in the order they are tried:
/// the ones with lines of their own first; threads, whose text has none,
/// last.
static SYSBENCH_TESTS: &[&SysbenchTestImport] = &[
    &cpu::SYSBENCH_IMPORT,
    &memory::SYSBENCH_IMPORT,
    &fileio::import::SYSBENCH_IMPORT,
    &oltp::import::SYSBENCH_IMPORT,
    &mutex::SYSBENCH_IMPORT,
    &threads::SYSBENCH_IMPORT,
];

pub const SYSBENCH: Format = Format {
    kind: "sysbench",
    tool: "sysbench",
    summary: "sysbench 1.0.x text of cpu, memory, threads, mutex, fileio and the oltp_* tests (its 'sysbench 1.' banner); the test from its lines, or sysbench:TEST",
    detect: sysbench::detect_10,
    parse: |text, sub| sysbench::parse(text, sub, false, SYSBENCH_TESTS),
};

pub const SYSBENCH_04: Format = Format {
    kind: "sysbench-0.4",
    tool: "sysbench",
    summary: "sysbench 0.4.x text (its 'sysbench 0.4' banner, 'Test execution summary:'), as seed 004 used; the test from its 'Doing ...' line, or sysbench-0.4:TEST",
    detect: sysbench::detect_04,
    parse: |text, sub| sysbench::parse(text, sub, true, SYSBENCH_TESTS),
};

/// The import format of that `--kind` (before any ':').
pub fn import_format(kind: &str) -> Option<&'static Format> {
    IMPORT_FORMATS.iter().copied().find(|f| f.kind == kind)
}

/// "fio, iperf3, sysbench, ...", for messages.
pub fn import_kinds() -> String {
    IMPORT_FORMATS
        .iter()
        .map(|f| f.kind)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The import format `text` is in, if one recognises it.
pub fn detect_import(text: &str) -> Option<&'static Format> {
    IMPORT_FORMATS.iter().copied().find(|f| (f.detect)(text))
}

/// "cpu, memory, ...", for messages.
pub fn names() -> String {
    WORKLOADS
        .iter()
        .map(|d| d.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::options;

    #[test]
    fn every_import_kind_is_listed_once() {
        let mut kinds: Vec<&str> = IMPORT_FORMATS.iter().map(|f| f.kind).collect();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), IMPORT_FORMATS.len());
        assert_eq!(import_format("fio").unwrap().tool, "fio");
    }

    #[test]
    fn every_definition_is_consistent() {
        let mut seen = Vec::new();
        for def in WORKLOADS {
            assert!(!seen.contains(&def.name), "{} listed twice", def.name);
            seen.push(def.name);
            // Defaults parse; names are kebab-case and unique; engine names exist.
            let (engine, own) = def.option_tables();
            let _ = options::defaults(&[&engine, own]);
            let mut names: Vec<&str> = engine.iter().chain(own).map(|s| s.name).collect();
            for n in &names {
                assert!(
                    n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                    "{}: {n}",
                    def.name
                );
            }
            let before = names.len();
            names.sort();
            names.dedup();
            assert_eq!(before, names.len(), "duplicate option in {}", def.name);
            for e in def.engine {
                assert!(crate::engine::ALL.contains(e), "{}: {e}", def.name);
            }
            if let Some(w) = def.needs.workdir {
                assert!(def.accepts(w), "{}: workdir option --{w}", def.name);
            }
            assert!(!def.metrics.is_empty(), "{} declares no metric", def.name);
            assert!(
                def.metrics.iter().any(|m| m.headline),
                "{} has no headline metric",
                def.name
            );
        }
    }
}
