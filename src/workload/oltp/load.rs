//! `prepare`'s bulk load, as sysbench's: a free-space check when the
//! tables go into a SQLite file, the tables loaded in parallel (one per
//! thread at a time) or on SQLite in turn, each filled by multi-row INSERTs
//! of about 512 KiB, and its indexes built after the rows.

use std::path::Path;

use anyhow::{anyhow, Result};

use crate::core::observer::Observer;
use crate::core::options::CliError;
use crate::core::signals;
use crate::engine::FastRng;
use crate::sys::storage;

use super::config::Config;
use super::driver::{self, Conn};
use super::rand::{digits, C_TEMPLATE, PAD_TEMPLATE};

/// Approximate bytes per row on disk in SQLite (id, k, 120 + 60 characters,
/// record header, b-tree overhead and the `k` index), for the free-space check.
const SQLITE_ROW_BYTES: u64 = 260;

/// Refuses a load that would not fit in the file system of the SQLite file.
pub(super) fn check_free_space(cfg: &Config, path: &Path) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let free = storage::free_bytes(dir)
        .map_err(|e| anyhow!("checking free space in {}: {e}", dir.display()))?;
    let need = cfg.tables * cfg.rows_to_load() * SQLITE_ROW_BYTES;
    if need > free {
        return Err(CliError::Usage(format!(
            "--tables={} --table-size={} needs about {} MiB in {} but only {} MiB are free: lower --table-size or --tables, or point --oltp-dir at a larger file system",
            cfg.tables,
            cfg.table_size,
            need >> 20,
            dir.display(),
            free >> 20
        ))
        .into());
    }
    Ok(())
}

/// Creates and fills tables 1 to `--tables`: on `conn` one after another,
/// or in parallel as sysbench does, each thread on a connection of its own
/// loading every `parallel`-th table.
pub(super) fn load_tables(cfg: &Config, conn: &mut dyn Conn, obs: &dyn Observer) -> Result<()> {
    // sysbench loads tables in parallel, one per thread; SQLite has one
    // writer at a time, so it loads them in turn.
    let parallel = if cfg.dialect().one_writer() {
        1
    } else {
        cfg.threads.clamp(1, cfg.tables)
    };
    if parallel == 1 {
        return (1..=cfg.tables).try_for_each(|n| load_table(cfg, conn, n, n, obs));
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..parallel)
            .map(|tid| {
                s.spawn(move || -> Result<()> {
                    let mut conn = cfg.target.connect(cfg.prepared, false)?;
                    let mut n = tid + 1;
                    while n <= cfg.tables {
                        load_table(cfg, conn.as_mut(), n, n, obs)?;
                        n += parallel;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow!("a prepare thread panicked"))?)
            .collect::<Result<Vec<()>>>()
            .map(|_| ())
    })
}

/// Creates table `n`, fills it with `rows_to_load` rows drawn from `seed`,
/// and builds its indexes.
fn load_table(
    cfg: &Config,
    conn: &mut dyn Conn,
    n: u64,
    seed: u64,
    obs: &dyn Observer,
) -> Result<()> {
    let fail = |e: driver::DbError, sql: &str| {
        if signals::interrupted() {
            // The statement was cut short by Ctrl-C.
            return anyhow::Error::new(signals::Interrupted);
        }
        let head: String = sql.chars().take(200).collect();
        anyhow!("{}: {e}; statement: {head}", cfg.target.describe())
    };
    obs.chatter(&format!("Creating table 'sbtest{n}'..."));
    let create = cfg.create_table_sql(n);
    conn.batch(&create).map_err(|e| fail(e, &create))?;
    let rows = cfg.rows_to_load();
    if rows > 0 {
        obs.chatter(&format!("Inserting {rows} records into 'sbtest{n}'"));
    }
    let mut rng = FastRng::new(seed);
    // Client ids where the table has no generator, and where the dialect
    // sends them anyway.
    let with_id = !cfg.auto_inc || cfg.dialect().load_sends_ids() || cfg.secondary;
    let head = if with_id {
        format!("INSERT INTO sbtest{n}(id, k, c, pad) VALUES")
    } else {
        format!("INSERT INTO sbtest{n}(k, c, pad) VALUES")
    };
    // As sysbench's bulk inserts: multi-row statements of about 512 KiB,
    // on SQLite all in one transaction.
    let one_transaction = cfg.dialect().load_in_one_transaction();
    if one_transaction {
        conn.begin(true).map_err(|e| fail(e, "BEGIN"))?;
    }
    let mut sql = head.clone();
    let mut pending = 0;
    for i in 1..=rows {
        let k = 1 + rng.below(cfg.table_size.max(1));
        let c = digits(&mut rng, C_TEMPLATE);
        let pad = digits(&mut rng, PAD_TEMPLATE);
        if pending > 0 {
            sql.push(',');
        }
        if with_id {
            sql.push_str(&format!("({i}, {k}, '{c}', '{pad}')"));
        } else {
            sql.push_str(&format!("({k}, '{c}', '{pad}')"));
        }
        pending += 1;
        if sql.len() >= 512 * 1024 || i == rows {
            // A load of many large tables takes hours (seed 003: 100
            // of 10 million rows): a signal stops it between statements,
            // and prepare then drops what it created.
            signals::check()?;
            conn.batch(&sql).map_err(|e| fail(e, &sql))?;
            sql.clone_from(&head);
            pending = 0;
        }
    }
    if one_transaction {
        conn.commit().map_err(|e| fail(e, "COMMIT"))?;
    }
    if let Some(sql) = cfg.id_index_sql(n) {
        conn.batch(&sql).map_err(|e| fail(e, &sql))?;
    }
    if let Some(sql) = cfg.k_index_sql(n) {
        signals::check()?;
        obs.chatter(&format!("Creating a secondary index on 'sbtest{n}'..."));
        conn.batch(&sql).map_err(|e| fail(e, &sql))?;
    }
    Ok(())
}
