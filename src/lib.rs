//! virtperf: measures what virtualization costs. One benchmark suite runs on the
//! host, in containers and in VMs, and each environment is compared against the
//! baseline with confidence intervals and significance.

pub mod agent;
pub mod cli;
pub mod compare;
pub mod core;
pub mod engine;
pub mod env;
pub mod report;
pub mod stats;
pub mod store;
pub mod suite;
pub mod sys;
pub mod workload;
