//! sysbench's OLTP text read back as runs of the oltp_* workloads
//! (`virtperf import`). 1.0's `SQL statistics:` block (`read:`, `write:`,
//! `other:`, `transactions: N (X per sec.)`, `queries: N (X per sec.)`,
//! `ignored errors:`, `reconnects:`) and 0.4's `OLTP test statistics:`
//! (`read/write requests:` instead of `queries:`, `deadlocks:` instead of
//! `ignored errors:`). The log does not name the test: it is told from
//! which queries it made (reads and writes: read_write; reads and
//! BEGIN/COMMIT: read_only; writes and BEGIN/COMMIT: write_only; reads
//! alone: point_select); a test of writes alone (update_index,
//! update_non_index, insert, delete) needs `--kind sysbench:oltp_insert`
//! etc. 0.4's `oltp` test is read as oltp_read_write, its descendant.

use super::{
    DELETE, INSERT, POINT_SELECT, READ_ONLY, READ_WRITE, UPDATE_INDEX, UPDATE_NON_INDEX, WRITE_ONLY,
};
use crate::workload::import::sysbench::{SysbenchLog, SysbenchTestImport};
use crate::workload::import::{leading_number, Imported, Refusal};
use crate::workload::WorkloadDef;

pub const SYSBENCH_IMPORT: SysbenchTestImport = SysbenchTestImport {
    defs: &[
        &READ_WRITE,
        &READ_ONLY,
        &WRITE_ONLY,
        &POINT_SELECT,
        &UPDATE_INDEX,
        &UPDATE_NON_INDEX,
        &INSERT,
        &DELETE,
    ],
    claims: |log| log.has("SQL statistics:") || log.has("OLTP test statistics:"),
    read,
};

/// "N (X per sec.)" into (N, X).
fn count_and_rate(text: &str) -> Option<(f64, Option<f64>)> {
    let (n, rest) = leading_number(text)?;
    let rate = rest
        .split_once('(')
        .and_then(|(_, r)| leading_number(r))
        .map(|(x, _)| x);
    Some((n, rate))
}

fn read(log: &SysbenchLog, forced: Option<&'static WorkloadDef>) -> Result<Imported, Refusal> {
    let reads = log.required("read:")?;
    let writes = log.required("write:")?;
    let other = log.required("other:")?;
    let def: &'static WorkloadDef = match forced {
        Some(d) => d,
        None if log.old => &READ_WRITE,
        None => match (reads > 0.0, writes > 0.0, other > 0.0) {
            (true, true, _) => &READ_WRITE,
            (true, false, true) => &READ_ONLY,
            (false, true, true) => &WRITE_ONLY,
            (true, false, false) => &POINT_SELECT,
            _ => {
                let (n, l) = log.after("write:").unwrap_or((0, ""));
                return Err(Refusal::new(
                    n,
                    "reads or BEGIN/COMMIT beside the writes to tell the OLTP test; for a test of single writes say which with --kind sysbench:oltp_update_index (or oltp_update_non_index, oltp_insert, oltp_delete)",
                    l,
                ));
            }
        },
    };
    let mut imp = log.imported(def);
    let secs = log.total_time_s;
    let (tn, trate) = log
        .after("transactions:")
        .and_then(|(_, r)| count_and_rate(r))
        .ok_or_else(|| log.missing("a line 'transactions: N (X per sec.)'"))?;
    let queries_key = if log.old {
        "read/write requests:"
    } else {
        "queries:"
    };
    let (qn, qrate) = log
        .after(queries_key)
        .and_then(|(_, r)| count_and_rate(r))
        .ok_or_else(|| log.missing(&format!("a line '{queries_key} N (X per sec.)'")))?;
    imp.declared("tps", trate.unwrap_or(tn / secs));
    imp.declared("qps", qrate.unwrap_or(qn / secs));
    imp.declared("reads_per_sec", reads / secs);
    imp.declared("writes_per_sec", writes / secs);
    imp.declared("other_per_sec", other / secs);
    let errors_key = if log.old {
        "deadlocks:"
    } else {
        "ignored errors:"
    };
    if let Some((n, rate)) = log.after(errors_key).and_then(|(_, r)| count_and_rate(r)) {
        imp.declared("ignored_errors_per_sec", rate.unwrap_or(n / secs));
    }
    if let Some((n, rate)) = log
        .after("reconnects:")
        .and_then(|(_, r)| count_and_rate(r))
    {
        imp.declared("reconnects_per_sec", rate.unwrap_or(n / secs));
    }
    if let Some(lat) = &log.latency {
        imp.declared("latency_avg_ms", lat.avg);
        imp.declared("latency_max_ms", lat.max);
        if let Some((p, v)) = lat.selected {
            if p == 95.0 {
                imp.declared("latency_p95_ms", v);
            } else if p == 99.0 {
                imp.declared("latency_p99_ms", v);
            }
        }
    }
    Ok(imp)
}

#[cfg(test)]
mod tests {
    use crate::workload::registry::SYSBENCH;

    const RW: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nRunning the test with following options:\nNumber of threads: 4\nInitializing random number generator from current time\n\n\nInitializing worker threads...\n\nThreads started!\n\nSQL statistics:\n    queries performed:\n        read:                            14000\n        write:                           4000\n        other:                           2000\n        total:                           20000\n    transactions:                        1000   (99.50 per sec.)\n    queries:                             20000  (1990.00 per sec.)\n    ignored errors:                      0      (0.00 per sec.)\n    reconnects:                          0      (0.00 per sec.)\n\nGeneral statistics:\n    total time:                          10.0500s\n    total number of events:              1000\n\nLatency (ms):\n         min:                                    5.00\n         avg:                                   40.10\n         max:                                  120.00\n         95th percentile:                       70.55\n         sum:                                40100.00\n\nThreads fairness:\n    events (avg/stddev):           250.0000/2.00\n    execution time (avg/stddev):   10.0250/0.01\n";

    #[test]
    fn the_test_is_told_from_its_queries() {
        let r = &(SYSBENCH.parse)(RW, None).unwrap()[0];
        assert_eq!(r.def.name, super::READ_WRITE.name);
        let m = |n: &str| r.metrics.iter().find(|m| m.name == n).unwrap().value;
        assert_eq!(
            (m("tps"), m("qps"), m("latency_p95_ms")),
            (99.5, 1990.0, 70.55)
        );
        let ro = RW.replace("4000\n        other", "0\n        other");
        assert_eq!(
            (SYSBENCH.parse)(&ro, None).unwrap()[0].def.name,
            super::READ_ONLY.name
        );
        let single = ro
            .replace("14000", "0")
            .replace("2000\n        total", "0\n        total");
        let single = single.replace(
            "write:                           0",
            "write:                           5",
        );
        let err = (SYSBENCH.parse)(&single, None).unwrap_err();
        assert!(
            err.expected.contains("--kind sysbench:oltp_update_index"),
            "{err}"
        );
        let forced = (SYSBENCH.parse)(&single, Some(super::INSERT.name)).unwrap();
        assert_eq!(forced[0].def.name, super::INSERT.name);
    }
}
