//! Accounting of what a run cost (the document's `accounting` section,
//! `core::accounting`): the agent's view from inside ([`inside`]) and the
//! host's from outside ([`outside`]), each two readings around the run and
//! their difference. Every reader here is cheap (a few small files, one walk
//! of /proc on the host) and returns None for what the machine does not
//! give. `VIRTPERF_ACCOUNTING=off` turns it off, for the check that it costs
//! nothing (`scripts/bench-accounting`).

pub mod cgroup;
pub mod inside;
pub mod outside;
pub mod perf;
pub mod procs;
pub mod read;
pub mod series;

/// Whether accounting is on: always, unless `VIRTPERF_ACCOUNTING=off`
/// (the on/off check only).
pub fn enabled() -> bool {
    std::env::var("VIRTPERF_ACCOUNTING").map_or(true, |v| v != "off")
}
