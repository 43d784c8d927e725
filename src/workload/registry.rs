//! The registry: every workload virtperf knows, one line each. Adding a
//! workload is its own file or folder plus one line here.

use super::def::WorkloadDef;
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
