//! Per-operation counts and latencies of one worker thread.

use super::*;

/// The operations of every thread as they happen, for the checkpoint
/// reports (`--report-checkpoints`): reads, writes, fsyncs, bytes read,
/// bytes written.
#[derive(Default)]
pub struct LiveOps([std::sync::atomic::AtomicU64; 5]);

impl LiveOps {
    fn add(&self, i: usize, n: u64) {
        self.0[i].fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    pub(super) fn get(&self) -> [u64; 5] {
        std::array::from_fn(|i| self.0[i].load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Per-operation counts and latencies of one thread.
pub struct OpStats {
    pub reads: u64,
    pub writes: u64,
    pub fsyncs: u64,
    /// Of `fsyncs`, those `--file-fsync-end` made after the last request:
    /// counted in the fsync rate, not as events (as sysbench counts).
    pub end_fsyncs: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub read_hist: Histogram,
    pub write_hist: Histogram,
    pub fsync_hist: Histogram,
    /// Where the counts are also published, when checkpoint reports need
    /// them while the run goes on.
    pub live: Option<Arc<LiveOps>>,
}

impl OpStats {
    pub(super) fn new() -> OpStats {
        OpStats {
            reads: 0,
            writes: 0,
            fsyncs: 0,
            end_fsyncs: 0,
            bytes_read: 0,
            bytes_written: 0,
            read_hist: new_histogram(),
            write_hist: new_histogram(),
            fsync_hist: new_histogram(),
            live: None,
        }
    }

    pub fn record(&mut self, op: Op, bytes: u64, ns: u64) {
        let ns = ns.max(1);
        if let Some(live) = &self.live {
            match op {
                Op::Read => {
                    live.add(0, 1);
                    live.add(3, bytes);
                }
                Op::Write => {
                    live.add(1, 1);
                    live.add(4, bytes);
                }
                Op::Fsync => live.add(2, 1),
            }
        }
        match op {
            Op::Read => {
                self.reads += 1;
                self.bytes_read += bytes;
                self.read_hist.saturating_record(ns);
            }
            Op::Write => {
                self.writes += 1;
                self.bytes_written += bytes;
                self.write_hist.saturating_record(ns);
            }
            Op::Fsync => {
                self.fsyncs += 1;
                self.fsync_hist.saturating_record(ns);
            }
        }
    }

    /// An fsync made after the last request (`--file-fsync-end`).
    pub(super) fn record_end_fsync(&mut self, ns: u64) {
        self.record(Op::Fsync, 0, ns);
        self.end_fsyncs += 1;
    }

    pub(super) fn merge(&mut self, other: &OpStats) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.fsyncs += other.fsyncs;
        self.end_fsyncs += other.end_fsyncs;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.read_hist.add(&other.read_hist).expect("same bounds");
        self.write_hist.add(&other.write_hist).expect("same bounds");
        self.fsync_hist.add(&other.fsync_hist).expect("same bounds");
    }
}
