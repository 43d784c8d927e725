//! The host's view of a run's load (`sys::monitor`): the processes and
//! cgroups that do an instance's work on this machine, and what other
//! processes took meanwhile, stamped on each result.

use super::session::Session;
use super::{NetNeed, OnHost};
use crate::core::result::ResultDoc;
use crate::sys::account::procs::Table;
use crate::sys::monitor;

/// The host's check of each run's foreign load (`sys::monitor`): the
/// processes and cgroups that do the instance's work, and the snapshot the
/// next run's interval starts from.
pub(super) struct ForeignLoad {
    roots: Vec<u32>,
    /// A container or VM runs: the runtimes' helpers work for it.
    helpers: bool,
    cgroups: Vec<monitor::CgroupCpu>,
    mark: monitor::HostSnapshot,
}

impl ForeignLoad {
    /// None when an instance runs elsewhere or the host cannot be read.
    /// One instance's results arrive as its runs end, so each run gets its
    /// own interval; simultaneous instances' results are read one instance
    /// after the other, so theirs get the plan's (every instance's work,
    /// siblings included, is the run's own).
    pub(super) fn start(sessions: &[Session], need: NetNeed) -> Option<ForeignLoad> {
        let mut roots = Vec::new();
        let mut cgroups = Vec::new();
        let helpers = sessions.iter().any(|s| s.on_host.has_helpers());
        for s in sessions {
            let (r, c) = host_roots(s)?;
            roots.extend(r);
            cgroups.extend(c);
        }
        // A host server or client runs in this process: its CPU is the
        // run's own work, not other processes' load.
        if need.any() {
            roots.push(std::process::id());
        }
        let mark = monitor::HostSnapshot::take(&cgroups)?;
        Some(ForeignLoad {
            roots,
            helpers,
            cgroups,
            mark,
        })
    }

    /// The load since the mark, which moves to now (None when the host
    /// cannot be read now: the mark is kept).
    pub(super) fn take(&mut self) -> Option<monitor::HostLoad> {
        let now = monitor::HostSnapshot::take(&self.cgroups)?;
        let load = monitor::host_load(&self.mark, &now, &self.roots, self.helpers);
        self.mark = now;
        Some(load)
    }

    /// Puts the load since the last run's end on `doc`, the run just
    /// ended, from `now`, the process table read at its end (the mark is
    /// kept when there is none).
    pub(super) fn stamp(&mut self, doc: &mut ResultDoc, now: Option<&Table>) {
        let Some(now) = now.and_then(|t| monitor::HostSnapshot::of_table(t, &self.cgroups)) else {
            return;
        };
        put_load(
            doc,
            &monitor::host_load(&self.mark, &now, &self.roots, self.helpers),
        );
        self.mark = now;
    }
}

/// Puts `load` on `doc`: the share of other processes, and the
/// instance's own.
pub(super) fn put_load(doc: &mut ResultDoc, load: &monitor::HostLoad) {
    doc.monitor.foreign_busy_pct = load.foreign_pct;
    doc.monitor.env_busy_pct = Some(load.env_pct);
}

/// The host's accounting of `job` in a session on this machine
/// (`sys::account::outside`); None elsewhere, for simultaneous instances
/// (their runs share the host) and with accounting off.
pub(super) fn account_watch(
    s: &Session,
    job: &crate::workload::Job,
    together: bool,
) -> Option<crate::sys::account::outside::Watch> {
    let (roots, init) = match &s.on_host {
        OnHost::Elsewhere => return None,
        _ if together => return None,
        OnHost::Tree => (vec![s.pid()?], None),
        OnHost::Container(init) => (vec![s.pid()?], init()),
        // Its processes are its init's tree, beside the launched client's.
        OnHost::Detached(init) => (std::iter::once(s.pid()?).chain(init()).collect(), None),
    };
    let peer = job.def.needs.network.is_some();
    crate::sys::account::outside::Watch::new(roots, init, peer)
}

/// What works for a session on this machine: the launched process's tree
/// and, for a container, its cgroup. None when it runs elsewhere.
fn host_roots(s: &Session) -> Option<(Vec<u32>, Vec<monitor::CgroupCpu>)> {
    let child = s.pid()?;
    match &s.on_host {
        OnHost::Elsewhere => None,
        OnHost::Tree => Some((vec![child], Vec::new())),
        OnHost::Detached(init) => {
            Some((std::iter::once(child).chain(init()).collect(), Vec::new()))
        }
        OnHost::Container(init) => Some((
            vec![child],
            init()
                .and_then(monitor::CgroupCpu::of)
                .into_iter()
                .collect(),
        )),
    }
}
