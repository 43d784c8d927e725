//! `memory`: sysbench's block-transfer test (the compatible mode) and, beside
//! it, STREAM's copy/scale/add/triad kernels over arrays well above the
//! last-level cache (`--memory-mode=stream`) — the honest bandwidth figure.

mod huge;
mod stream;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Result;

use crate::core::fatal::{InitFatal, SysbenchFatal};
use crate::core::options::{CliError, OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::core::units::Bytes;
use crate::engine::{self, EngineOptions, FastRng, Worker};
use crate::workload::import::sysbench::SysbenchTestImport;
use crate::workload::{Measurement, MetricDef, Needs, Workload, WorkloadDef};
pub use huge::HugeBlock;
pub use stream::StreamTest;

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "memory-block-size",
        OptKind::Size { min: 8 },
        "1K",
        "size of memory block for test (a power of two)",
    ),
    OptionSpec::new(
        "memory-total-size",
        OptKind::Size { min: 1 },
        "100G",
        "total size of data to transfer",
    ),
    OptionSpec::new(
        "memory-scope",
        OptKind::Choice(&["global", "local"]),
        "global",
        "memory access scope",
    ),
    OptionSpec::new(
        "memory-hugetlb",
        OptKind::Bool,
        "off",
        "allocate memory from HugeTLB pool (huge pages reserved with vm.nr_hugepages)",
    ),
    OptionSpec::new(
        "memory-oper",
        OptKind::Choice(&["read", "write", "none"]),
        "write",
        "type of memory operations",
    ),
    OptionSpec::new(
        "memory-access-mode",
        OptKind::Choice(&["seq", "rnd"]),
        "seq",
        "memory access mode",
    ),
    OptionSpec::new(
        "memory-mode",
        OptKind::Choice(&["sysbench", "stream"]),
        "sysbench",
        "sysbench: block transfers as sysbench does them; stream: STREAM kernels over arrays larger than the caches",
    ),
    OptionSpec::new(
        "stream-array-size",
        OptKind::Size { min: 4096 },
        "",
        "bytes per STREAM array and thread (default: 4 × the last-level cache, at least 64M)",
    ),
];

pub const DEF: WorkloadDef = WorkloadDef {
    name: "memory",
    summary:
        "Memory: sysbench-compatible block transfers, or STREAM bandwidth (--memory-mode=stream)",
    options: OPTIONS,
    engine: engine::ALL,
    needs: Needs::NONE,
    metrics: &[
        // In STREAM mode mib_per_sec is the triad's best rate, STREAM's own
        // figure, so the headline is one measurement whichever mode ran.
        MetricDef::new("mib_per_sec", "MiB/s", true, true, None),
        MetricDef::new("ops_per_sec", "ops/s", true, false, None),
        MetricDef::new("stream_*", "MiB/s", true, false, None),
    ],
    area: crate::workload::Area::Memory,
    sysbench: Some(crate::workload::SysbenchTest {
        summary: "Memory functions speed test",
        options: "  --memory-block-size=SIZE    size of memory block for test [1K]\n  --memory-total-size=SIZE    total size of data to transfer [100G]\n  --memory-scope=STRING       memory access scope {global,local} [global]\n  --memory-hugetlb[=on|off]   allocate memory from HugeTLB pool [off]\n  --memory-oper=STRING        type of memory operations {read, write, none} [write]\n  --memory-access-mode=STRING memory access mode {seq,rnd} [seq]\n",
        required_for_run: &[],
    }),
    build,
};

/// sysbench's memory test read back (`virtperf import`): 1.0's `block size:
/// 1KiB`, `operation:`, `scope:`, `Total operations: N (X per second)` and
/// `N MiB transferred (X MiB/sec)`; 0.4's `Memory block size: 1K`, `Memory
/// operations type:`, `Memory scope type:`, `Operations performed: N (X
/// ops/sec)` and `N MB transferred (X MB/sec)` (sysbench's MB are MiB).
/// `--memory-total-size` bounds the work as `--events` does, so it does
/// not choose the entry.
pub const SYSBENCH_IMPORT: SysbenchTestImport = SysbenchTestImport {
    defs: &[&DEF],
    claims: |log| {
        log.has("Running memory speed test") || log.has("Doing memory operations speed test")
    },
    read: |log, _| {
        let mut imp = log.imported(&DEF);
        let keys = if log.old {
            [
                "Memory block size:",
                "Memory operations type:",
                "Memory scope type:",
            ]
        } else {
            ["block size:", "operation:", "scope:"]
        };
        for (key, option) in keys
            .iter()
            .zip(["memory-block-size", "memory-oper", "memory-scope"])
        {
            if let Some((_, v)) = log.after(key) {
                imp.option(option, v);
            }
        }
        let (ops_key, mib_key) = if log.old {
            ("Operations performed:", "MB transferred (")
        } else {
            ("Total operations:", "MiB transferred (")
        };
        let ops = log.required(ops_key)?;
        // "N MiB transferred (X MiB/sec)": X is after the parenthesis.
        let mib = log
            .lines
            .iter()
            .find_map(|(_, l)| {
                let (_, rate) = l.split_once(mib_key)?;
                crate::workload::import::leading_number(rate).map(|(x, _)| x)
            })
            .ok_or_else(|| log.missing(&format!("a line 'N {mib_key}X .../sec)'")))?;
        let ops_per_sec = log
            .after(ops_key)
            .and_then(|(_, r)| r.split_once('('))
            .and_then(|(_, r)| crate::workload::import::leading_number(r))
            .map(|(x, _)| x)
            .unwrap_or(ops / log.total_time_s);
        imp.declared("mib_per_sec", mib);
        imp.declared("ops_per_sec", ops_per_sec);
        imp.own("total_operations", ops, "ops", true);
        Ok(imp)
    },
};

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(MemoryWorkload::new(values)?))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Oper {
    Read,
    Write,
    None,
}

pub enum MemoryWorkload {
    Blocks(BlockTest),
    Stream(StreamTest),
}

pub struct BlockTest {
    block: usize,
    total: u64,
    global: bool,
    oper: Oper,
    random: bool,
    /// `--memory-hugetlb`: the blocks, taken from the HugeTLB pool when the
    /// test is built (one for `global` scope, one per thread for `local`),
    /// as sysbench takes them before it says anything of the run.
    huge: Vec<Arc<HugeBlock>>,
}

impl MemoryWorkload {
    pub fn new(values: &Values) -> Result<MemoryWorkload> {
        if values.text("memory-mode") == "stream" {
            let given = values
                .was_given("stream-array-size")
                .then(|| values.int("stream-array-size"));
            return Ok(MemoryWorkload::Stream(StreamTest::new(given)));
        }
        let block = values.int("memory-block-size");
        if !block.is_power_of_two() {
            return Err(CliError::InvalidValue {
                name: "memory-block-size".into(),
                value: Bytes(block).to_string(),
                allowed: "a power of two of at least 8 bytes, such as 1K or 4K".into(),
            }
            .into());
        }
        let global = values.text("memory-scope") == "global";
        let mut huge = Vec::new();
        if values.flag("memory-hugetlb") {
            let blocks = if global { 1 } else { engine::threads(values) };
            for i in 0..blocks {
                let b = HugeBlock::new(block as usize).map_err(|(fatal, ours)| {
                    let then = if global {
                        "Failed to allocate buffer!".to_string()
                    } else {
                        format!("Failed to allocate buffer for thread #{i}!")
                    };
                    InitFatal(SysbenchFatal {
                        ours,
                        fatal: format!("{fatal}\nFATAL: {then}"),
                        hint: None,
                    })
                })?;
                huge.push(Arc::new(b));
            }
        }
        Ok(MemoryWorkload::Blocks(BlockTest {
            block: block as usize,
            total: values.int("memory-total-size"),
            global,
            huge,
            oper: match values.text("memory-oper") {
                "read" => Oper::Read,
                "write" => Oper::Write,
                _ => Oper::None,
            },
            random: values.text("memory-access-mode") == "rnd",
        }))
    }
}

impl Workload for MemoryWorkload {
    fn header(&self, _engine: &EngineOptions) -> String {
        match self {
            MemoryWorkload::Blocks(t) => t.header(_engine),
            MemoryWorkload::Stream(_) => String::new(),
        }
    }

    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        match self {
            MemoryWorkload::Blocks(t) => t.run(engine),
            MemoryWorkload::Stream(t) => t.run(engine),
        }
    }
}

/// Where a block-test thread reads and writes.
enum Buffer {
    /// This thread's own block: plain memory, so loops vectorize.
    Own(Vec<u64>),
    /// One block shared by all threads (`--memory-scope=global` with several
    /// threads): relaxed atomics, the same stores without a data race.
    Shared(Arc<Vec<AtomicU64>>),
    /// A block from the HugeTLB pool (`--memory-hugetlb`), shared or the
    /// thread's own, through the same atomics.
    Huge(Arc<HugeBlock>),
}

impl Buffer {
    /// The words of a shared or huge page block.
    fn atomics(&self) -> &[AtomicU64] {
        match self {
            Buffer::Shared(w) => w,
            Buffer::Huge(b) => b.atomics(),
            Buffer::Own(_) => &[],
        }
    }
}

struct BlockWorker {
    buf: Buffer,
    oper: Oper,
    random: bool,
    rng: FastRng,
    sink: u64,
}

impl BlockWorker {
    #[inline]
    fn seq(&mut self) {
        match (&mut self.buf, self.oper) {
            (Buffer::Own(words), Oper::Write) => {
                words.fill(black_box(0x5a5a_5a5a_5a5a_5a5a));
                black_box(words.as_mut_ptr());
            }
            (Buffer::Own(words), Oper::Read) => {
                let sum = words.iter().fold(0u64, |a, &w| a.wrapping_add(w));
                self.sink = self.sink.wrapping_add(black_box(sum));
            }
            (_, Oper::None) => {}
            (shared, Oper::Write) => {
                for w in shared.atomics() {
                    w.store(0x5a5a_5a5a_5a5a_5a5a, Ordering::Relaxed);
                }
            }
            (shared, Oper::Read) => {
                let sum = shared
                    .atomics()
                    .iter()
                    .fold(0u64, |a, w| a.wrapping_add(w.load(Ordering::Relaxed)));
                self.sink = self.sink.wrapping_add(black_box(sum));
            }
        }
    }

    #[inline]
    fn rnd(&mut self) {
        let n = match &self.buf {
            Buffer::Own(w) => w.len(),
            shared => shared.atomics().len(),
        } as u64;
        let mut sum = 0u64;
        for _ in 0..n {
            let i = self.rng.below(n) as usize;
            match (&mut self.buf, self.oper) {
                (Buffer::Own(w), Oper::Write) => w[i] = i as u64,
                (Buffer::Own(w), Oper::Read) => sum = sum.wrapping_add(w[i]),
                (_, Oper::None) => {}
                (shared, Oper::Write) => shared.atomics()[i].store(i as u64, Ordering::Relaxed),
                (shared, Oper::Read) => {
                    sum = sum.wrapping_add(shared.atomics()[i].load(Ordering::Relaxed))
                }
            }
        }
        if let Buffer::Own(w) = &self.buf {
            black_box(w.as_ptr());
        }
        self.sink = self.sink.wrapping_add(black_box(sum));
    }
}

impl Worker for BlockWorker {
    #[inline]
    fn event(&mut self) -> Result<bool> {
        if self.random {
            self.rnd();
        } else {
            self.seq();
        }
        Ok(true)
    }

    fn batchable(&self) -> bool {
        true
    }
}

impl BlockTest {
    /// sysbench's options block: sizes in whole KiB and MiB, as it prints
    /// them (1KiB, 102400MiB).
    fn header(&self, _engine: &EngineOptions) -> String {
        let oper = match self.oper {
            Oper::Read => "read",
            Oper::Write => "write",
            Oper::None => "none",
        };
        format!(
            "Running memory speed test with the following options:\n  block size: {}KiB\n  total size: {}MiB\n  operation: {oper}\n  scope: {}\n\n",
            self.block / 1024,
            self.total / (1024 * 1024),
            if self.global { "global" } else { "local" },
        )
    }

    fn run(&self, engine: &EngineOptions) -> Result<Measurement> {
        let words = self.block / 8;
        let shared = (self.global && engine.threads > 1)
            .then(|| Arc::new((0..words).map(|_| AtomicU64::new(0)).collect::<Vec<_>>()));
        let workers = (0..engine.threads)
            .map(|tid| BlockWorker {
                buf: match (&shared, self.huge.as_slice()) {
                    (_, [one]) => Buffer::Huge(Arc::clone(one)),
                    (_, [_, ..]) => Buffer::Huge(Arc::clone(&self.huge[tid])),
                    (Some(s), []) => Buffer::Shared(Arc::clone(s)),
                    (None, []) => Buffer::Own(vec![0u64; words]),
                },
                oper: self.oper,
                random: self.random,
                rng: FastRng::new(tid as u64 + 1),
                sink: 0,
            })
            .collect();
        // --memory-total-size is the event budget and --events has no say,
        // as in sysbench (its memory test runs --memory-total-size /
        // --memory-block-size events whatever --events asks).
        let budget = (self.total / self.block as u64).max(1);
        let mut opts = engine.clone();
        opts.events = Some(budget);
        let (block, oper) = (self.block, self.oper);
        opts.section = Some(Arc::new(move |o: &engine::Outcome| {
            transferred(o, block, oper)
        }));
        let (mut outcome, _) = engine::run(&opts, workers)?;
        // The budget is the test's own, not --events: sysbench's memory
        // test says nothing of a limit under --debug.
        for t in &mut outcome.threads {
            if t.stop == engine::Stop::EventLimit {
                t.stop = engine::Stop::Done;
            }
        }
        let secs = outcome.interval.as_secs_f64().max(1e-9);
        let ops = outcome.events as f64 / secs;
        let mib = outcome.events as f64 * self.block as f64 / (1024.0 * 1024.0);
        let mut m = Measurement::from_outcome(&outcome, engine.percentile);
        m.metrics = vec![
            Metric::new("mib_per_sec", mib / secs, "MiB/s", true),
            Metric::new("ops_per_sec", ops, "ops/s", true),
        ];
        m.text = transferred(&outcome, self.block, self.oper);
        Ok(m)
    }
}

/// sysbench's section of the report: operations, and bytes moved.
fn transferred(outcome: &engine::Outcome, block: usize, oper: Oper) -> String {
    let secs = outcome.interval.as_secs_f64().max(1e-9);
    let ops = outcome.events as f64 / secs;
    let mut text = format!(
        "Total operations: {} ({ops:>8.2} per second)\n\n",
        outcome.events
    );
    if !matches!(oper, Oper::None) {
        let mib = outcome.events as f64 * block as f64 / (1024.0 * 1024.0);
        text.push_str(&format!(
            "{mib:>4.2} MiB transferred ({:>4.2} MiB/sec)\n\n",
            mib / secs
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_writes_reach_memory() {
        let mut w = BlockWorker {
            buf: Buffer::Own(vec![0; 128]),
            oper: Oper::Write,
            random: false,
            rng: FastRng::new(1),
            sink: 0,
        };
        w.event().unwrap();
        let Buffer::Own(words) = &w.buf else { panic!() };
        assert!(words.iter().all(|&x| x == 0x5a5a_5a5a_5a5a_5a5a));
        w.oper = Oper::Read;
        w.event().unwrap();
        assert_eq!(w.sink, 0x5a5a_5a5a_5a5a_5a5au64.wrapping_mul(128));
    }
}
