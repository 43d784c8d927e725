//! virtperf: measures what virtualization costs. One benchmark suite runs on the
//! host, in containers and in VMs, and each environment is compared against the
//! baseline with confidence intervals and significance.

pub mod agent;
pub mod cli;
pub mod compare;
pub mod engine;
pub mod env;
pub mod fingerprint;
pub mod monitor;
pub mod report;
pub mod result;
pub mod signals;
pub mod stats;
pub mod store;
pub mod suite;
pub mod units;
pub mod workload;
