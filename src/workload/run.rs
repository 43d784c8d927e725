//! Executes one job in this process: `prepare` and `cleanup` run the
//! workload's own steps, `run` measures once and wraps the measurement in a
//! result document fingerprinted where it ran.

use std::sync::Arc;

use anyhow::Result;

use super::{Command, Executed, Job};
use crate::core::accounting::Accounting;
use crate::core::observer::Observer;
use crate::core::result::{ResultDoc, SCHEMA};
use crate::core::time::now_rfc3339_ms;
use crate::engine::EngineOptions;
use crate::sys::{account, fingerprint, monitor, storage};

use crate::core::options::NOT_PARAMS;

/// Executes `job` here. `run` yields a result document (fingerprinted as
/// environment `env_name` of `env_kind`); `prepare` and `cleanup` yield none.
pub fn execute(
    job: &Job,
    env_name: &str,
    env_kind: &str,
    observer: Arc<dyn Observer>,
) -> Result<Option<Executed>> {
    execute_announced(job, env_name, env_kind, observer, &mut |_| {})
}

/// [`execute`], handing `announce` the workload's header
/// ([`super::Workload::header`]) just before a `run` starts, for a text
/// summary printed as the run goes (sysbench's order).
pub fn execute_announced(
    job: &Job,
    env_name: &str,
    env_kind: &str,
    observer: Arc<dyn Observer>,
    announce: &mut dyn FnMut(&str),
) -> Result<Option<Executed>> {
    let mut workload = (job.def.build)(&job.values)?;
    match job.command {
        Command::Prepare => {
            if job.def.needs.prepare {
                workload.prepare(observer.as_ref())?;
            } else {
                observer.note(&format!("{} has nothing to prepare", job.def.name));
            }
            Ok(None)
        }
        Command::Cleanup => {
            if job.def.needs.prepare {
                workload.cleanup(observer.as_ref())?;
            } else {
                observer.note(&format!("{} has nothing to clean up", job.def.name));
            }
            Ok(None)
        }
        Command::Run => {
            let engine = EngineOptions::from_values(&job.values, observer);
            workload.ready()?;
            announce(&workload.header(&engine));
            let started_at = now_rfc3339_ms();
            let sampler = monitor::Sampler::start();
            let accounting = account::inside::Sampler::start();
            let m = workload.run(&engine)?;
            let inside = accounting.map(account::inside::Sampler::finish);
            let monitor = sampler.finish();
            let mut env = fingerprint::take(env_name, env_kind);
            env.net_path = m.net_path;
            env.storage = workload.files_dir().and_then(storage::of);
            let doc = ResultDoc {
                schema: SCHEMA.to_string(),
                workload: job.def.name.to_string(),
                params: job.values.to_params(NOT_PARAMS),
                env,
                started_at,
                duration_s: m.duration.as_secs_f64(),
                events: m.events,
                metrics: m.metrics,
                latency_ms: m.latency,
                fairness: m.fairness,
                monitor,
                details: m.details,
                accounting: inside.map(Accounting::of_inside),
            };
            Ok(Some(Executed {
                doc,
                text: m.text,
                histogram: m.histogram,
                threads: m.threads,
            }))
        }
    }
}
