//! One measured run and its result: metrics, per-operation latency and
//! the text summary as sysbench prints it.

use super::*;

pub(super) fn run_test(cfg: &Config, mode: Mode, engine: &EngineOptions) -> Result<Measurement> {
    let (test_files, guard) = open_files(cfg, mode)?;
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        mode,
        files: test_files,
        gen: Mutex::new(Generator {
            position: 0,
            current_file: 0,
            fsynced_file: 0,
            req_performed: 0,
            is_dirty: false,
            busy: vec![None; engine.threads],
        }),
    });
    let req_size = cfg.request_size() as usize;
    // Checkpoint reports read the operations as they happen, and each
    // counts afresh from the one before, the last report too.
    let live = (!engine.checkpoints.is_empty()).then(|| Arc::new(LiveOps::default()));
    let counted = Arc::new(Mutex::new([0u64; 5]));
    let mut opts = engine.clone();
    if let Some(live) = &live {
        let (live, counted) = (Arc::clone(live), Arc::clone(&counted));
        opts.section = Some(Arc::new(move |part: &engine::Outcome| {
            let now = live.get();
            let mut counted = counted.lock().unwrap_or_else(|p| p.into_inner());
            let delta: [u64; 5] = std::array::from_fn(|i| now[i].saturating_sub(counted[i]));
            *counted = now;
            operations(delta, part.interval.as_secs_f64())
        }));
    }
    let engine = &opts;
    let (outcome, stats) = if cfg.io == IoMode::Async {
        let workers = (0..engine.threads)
            .map(|tid| {
                let mut w = uring::UringWorker::new(Arc::clone(&shared), tid, req_size)?;
                w.stats.live = live.clone();
                Ok(w)
            })
            .collect::<Result<Vec<_>>>()?;
        let (outcome, workers) = engine::run(engine, workers)?;
        let stats = workers
            .into_iter()
            .map(|mut w| std::mem::replace(&mut w.stats, OpStats::new()))
            .collect::<Vec<_>>();
        (outcome, stats)
    } else {
        let workers = (0..engine.threads)
            .map(|tid| SyncWorker {
                shared: Arc::clone(&shared),
                tid,
                rng: FastRng::new(0xf11e + tid as u64),
                buf: AlignedBuf::zeroed(req_size),
                source: DataSource::new(req_size, cfg.random_data, 0xda7a + tid as u64),
                stats: OpStats {
                    live: live.clone(),
                    ..OpStats::new()
                },
            })
            .collect();
        let (outcome, workers) = engine::run(engine, workers)?;
        (
            outcome,
            workers.into_iter().map(|w| w.stats).collect::<Vec<_>>(),
        )
    };
    // Files created by seqwr stay for later runs, like sysbench's.
    guard.disarm();
    let mut total = OpStats::new();
    for s in &stats {
        total.merge(s);
    }
    // After checkpoint reports, the last covers what came since.
    let before = *counted.lock().unwrap_or_else(|p| p.into_inner());
    total.reads -= before[0].min(total.reads);
    total.writes -= before[1].min(total.writes);
    total.fsyncs -= before[2].min(total.fsyncs);
    total.bytes_read -= before[3].min(total.bytes_read);
    total.bytes_written -= before[4].min(total.bytes_written);
    Ok(measurement(cfg, engine, &outcome, &total))
}

/// sysbench's section of fileio's report: operations and bytes over
/// `secs` seconds.
fn operations([reads, writes, fsyncs, bytes_read, bytes_written]: [u64; 5], secs: f64) -> String {
    let secs = secs.max(1e-9);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    format!(
        "\nFile operations:\n    reads/s:                      {:.2}\n    writes/s:                     {:.2}\n    fsyncs/s:                     {:.2}\n\nThroughput:\n    read, MiB/s:                  {:.2}\n    written, MiB/s:               {:.2}\n",
        reads as f64 / secs,
        writes as f64 / secs,
        fsyncs as f64 / secs,
        mib(bytes_read) / secs,
        mib(bytes_written) / secs,
    )
}

pub(super) fn measurement(
    cfg: &Config,
    engine: &EngineOptions,
    outcome: &engine::Outcome,
    t: &OpStats,
) -> Measurement {
    let secs = outcome.interval.as_secs_f64().max(1e-9);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut m = Measurement::from_outcome(outcome, engine.percentile);
    // Requests are events; the fsyncs after the last one are not.
    m.events = t.reads + t.writes + t.fsyncs - t.end_fsyncs;
    if cfg.io == IoMode::Async {
        // Engine events are submissions; the honest latency is each
        // operation's submission-to-completion time.
        let mut all = new_histogram();
        for h in [&t.read_hist, &t.write_hist, &t.fsync_hist] {
            all.add(h).expect("same bounds");
        }
        m.latency = Some(engine::summarize(&all, engine.percentile));
        m.histogram = Some(all);
    }
    m.metrics = vec![
        Metric::new("reads_per_sec", t.reads as f64 / secs, "ops/s", true),
        Metric::new("writes_per_sec", t.writes as f64 / secs, "ops/s", true),
        Metric::new("fsyncs_per_sec", t.fsyncs as f64 / secs, "ops/s", true),
        Metric::new("read_mib_per_sec", mib(t.bytes_read) / secs, "MiB/s", true),
        Metric::new(
            "written_mib_per_sec",
            mib(t.bytes_written) / secs,
            "MiB/s",
            true,
        ),
    ];
    let per_op = |h: &Histogram| {
        if h.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::to_value(engine::summarize(h, engine.percentile)).unwrap_or_default()
        }
    };
    m.details = serde_json::json!({
        "latency_ms_by_op": {
            "read": per_op(&t.read_hist),
            "write": per_op(&t.write_hist),
            "fsync": per_op(&t.fsync_hist),
        },
        "reads": t.reads, "writes": t.writes, "fsyncs": t.fsyncs,
        "bytes_read": t.bytes_read, "bytes_written": t.bytes_written,
    });
    // sysbench's own lines; the latency per operation is in the
    // document's details, not in sysbench's text.
    m.text = operations(
        [t.reads, t.writes, t.fsyncs, t.bytes_read, t.bytes_written],
        secs,
    );
    m
}

/// What sysbench prints of a fileio run before it starts, line for line.
pub(super) fn header(cfg: &Config, mode: Mode, engine: &EngineOptions) -> String {
    let mut h = format!(
        "Extra file open flags: {}\n{} files, {} each\n{} total file size\nBlock size {}\n",
        flags_text(cfg),
        cfg.num,
        Bytes(cfg.file_size),
        Bytes(cfg.total()),
        Bytes(cfg.block),
    );
    if cfg.merged > 0 {
        h.push_str(&format!(
            "Merging requests up to {} for sequential IO.\n",
            Bytes(cfg.block * cfg.merged)
        ));
    }
    if matches!(mode, Mode::RndRd | Mode::RndWr | Mode::RndRw) {
        h.push_str(&format!(
            "Number of IO requests: {}\nRead/Write ratio for combined random IO test: {:2.2}\n",
            engine.events.unwrap_or(0),
            cfg.rw_ratio
        ));
    }
    if cfg.fsync_freq > 0 {
        h.push_str(&format!(
            "Periodic FSYNC enabled, calling fsync() each {} requests.\n",
            cfg.fsync_freq
        ));
    }
    if cfg.fsync_end {
        h.push_str("Calling fsync() at the end of test, Enabled.\n");
    }
    if cfg.fsync_all {
        h.push_str("Calling fsync() after each write operation.\n");
    }
    h.push_str(&format!(
        "Using {} I/O mode\n",
        match cfg.io {
            IoMode::Sync => "synchronous",
            IoMode::Async => "asynchronous",
            IoMode::Mmap => "mmaped",
        }
    ));
    if cfg.validate {
        h.push_str("Using checksums validation.\n");
    }
    h.push_str(&format!("Doing {} test\n", mode.describe()));
    h
}

/// The extra open flags as sysbench words them: "(none)", or each flag
/// followed by a space ("sync ", "dsync ") and "directio" last.
pub(super) fn flags_text(cfg: &Config) -> String {
    let mut f = String::new();
    if cfg.open_flags & libc::O_SYNC == libc::O_SYNC {
        f.push_str("sync ");
    }
    if cfg.dsync {
        f.push_str("dsync ");
    }
    if cfg.direct {
        f.push_str("directio");
    }
    if f.is_empty() {
        "(none)".into()
    } else {
        f
    }
}
