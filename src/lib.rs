//! virtperf: measures what virtualization costs. One benchmark suite runs on the
//! host, in containers and in VMs, and each environment is compared against the
//! baseline with confidence intervals and significance.
//!
//! Layers, from the bottom; each imports only layers below it, and modules
//! marked as peers do not import each other. This table is the one source of
//! the order: `tests/layers.rs` reads it and checks every `crate::` path of
//! the production code against it, and checks ARCHITECTURE.md's copy:
//!
//! ```text
//! core      result document, option tables and values, observer, units, signals, time
//! stats     pure statistics, naming no metric          (peer of sys)
//! sys       fingerprint, monitors, storage, settling the file system
//! engine    threads, --time/--events, barrier start, HDR latency, --rate, warm-up
//! workload  the Workload trait, WorkloadDef and the registry, the typed Job, execution
//! agent     runs jobs inside an environment; the wire protocol   (peer of suite)
//! suite     TOML suites into jobs, sweeps, run order
//! env       the Environment trait, one file per driver, the driver registry
//! store     the results store (SQLite, or PostgreSQL for a fleet)
//! analysis  summaries, comparisons, verdicts, categories, ranking, flags
//! report    the document built from an analysis; one exporter per format
//! compare   the scheduler: rounds, rotation, resume, the adaptive planner, progress
//! import    other tools' results into the store       (peer of compare)
//! cli       argv into typed requests; help generated from the registries
//! ```
//!
//! `main.rs` only wires: `cli` is imported by nothing else.

pub mod agent;
pub mod analysis;
pub mod cli;
pub mod compare;
pub mod core;
pub mod engine;
pub mod env;
pub mod import;
pub mod report;
pub mod stats;
pub mod store;
pub mod suite;
pub mod sys;
pub mod workload;
