//! An environment's instances from start to end: start every instance and
//! check each agent's hello, run plans in them (each plan's exchange is
//! `exchange`'s), boot them afresh where `reboot=` asks, and end them with
//! "bye" — after an error or a stop, with the grace and the cleanup the
//! agent's files need.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::exchange::{self, check_hello, InstanceOutcome, OnResult};
use super::peer;
use super::session::Session;
use super::{Environment, NetNeed, Reboot};
use crate::agent::protocol::BYE;
use crate::core::observer::Observer;
use crate::core::result::ResultDoc;
use crate::workload::Job;

/// Runs `jobs` in every instance of `env`, started together.
pub fn run(
    env: &mut dyn Environment,
    jobs: &[Job],
    obs: &dyn Observer,
) -> Result<Vec<InstanceOutcome>> {
    run_with(env, jobs, obs, &mut |_, _, _| {})
}

/// As `run`, handing every result to `on_result` the moment it arrives:
/// the instances are started for these jobs and ended after them.
pub fn run_with(
    env: &mut dyn Environment,
    jobs: &[Job],
    obs: &dyn Observer,
    on_result: &mut OnResult,
) -> Result<Vec<InstanceOutcome>> {
    peer::check(jobs)?;
    let mut open = Opened::start(env, NetNeed::of(jobs), obs)?;
    let outcome = open.run(env, None, jobs, on_result, obs)?;
    open.close();
    Ok(outcome)
}

/// The cleanup a killed host agent could not finish, done by this process
/// on the same file system: for each job that prepares files in a
/// directory the user named (the agent's own work directory goes with the
/// driver's cleanup), what the agent runs after such a job. A job's cleanup
/// removes only what its prepare makes (fileio's `test_file.N`), so one
/// that had not begun or had already cleaned up loses nothing.
fn clean_up_here(jobs: &[Job], label: &str) {
    for job in jobs {
        let needs = &job.def.needs;
        let named = needs.workdir.is_some_and(|dir| job.values.was_given(dir));
        if needs.prepare && named && job.script.is_none() {
            let _ = crate::workload::execute(
                &job.with_command(crate::workload::Command::Cleanup),
                label,
                "host",
                Arc::new(crate::core::observer::Silent),
            );
        }
    }
}

/// An environment's instances, started and greeted, kept for as many plans
/// as the caller has for them (a comparison's every turn there), so a VM
/// boots and a container starts once. Dropped, they are killed and cleaned
/// up; `close` ends them politely.
pub struct Opened {
    sessions: Vec<Session>,
    ready_after: Vec<Duration>,
    need: NetNeed,
    /// The instances have run nothing since a fresh boot (`reboot=`).
    fresh: bool,
    /// `reboot=each-round`: the round the instances were booted for.
    booted_for: Option<usize>,
}

/// Launches every instance of `env` and waits for each agent's hello:
/// the sessions and how long each took to be ready.
fn launch_all(env: &dyn Environment, obs: &dyn Observer) -> Result<(Vec<Session>, Vec<Duration>)> {
    let count = env.spec().count;
    let mut sessions = Vec::with_capacity(count);
    for i in 0..count {
        let label = env.instance_label(i);
        let launched = env.launch(i).with_context(|| format!("starting {label}"))?;
        sessions.push(Session::start(launched, label)?);
    }
    let mut ready_after = Vec::new();
    for s in &mut sessions {
        let first = s.next(env.boot_deadline())?;
        check_hello(&s.label, first, obs)?;
        ready_after.push(s.launched_at.elapsed());
    }
    Ok((sessions, ready_after))
}

impl Opened {
    /// Starts every instance of `env` and waits for each agent's hello.
    /// `need` is every network peer the plans to come will use.
    pub fn start(env: &mut dyn Environment, need: NetNeed, obs: &dyn Observer) -> Result<Opened> {
        env.use_network(need);
        env.prepare(obs)?;
        let (sessions, ready_after) = launch_all(env, obs)?;
        Ok(Opened {
            sessions,
            ready_after,
            need,
            fresh: env.launch_is_fresh(),
            booted_for: None,
        })
    }

    /// `reboot=`: ends every instance, has the driver reboot it
    /// ([`Environment::reboot`]) and starts it again, greeted as at the
    /// start.
    fn restart(&mut self, env: &dyn Environment, obs: &dyn Observer) -> Result<()> {
        for s in &mut self.sessions {
            let _ = s.send_line(BYE);
        }
        for s in self.sessions.drain(..) {
            let mut s = s;
            s.finish(Duration::from_secs(20));
        }
        for i in 0..env.spec().count {
            let label = env.instance_label(i);
            env.reboot(i).with_context(|| {
                format!(
                    "rebooting {label} before the next run (reboot={})",
                    env.spec().reboot.name().unwrap_or("no")
                )
            })?;
        }
        let (sessions, ready_after) = launch_all(env, obs)?;
        self.sessions = sessions;
        self.ready_after = ready_after;
        Ok(())
    }

    /// Whether plans needing `need` can run here (the network the
    /// instances were started with covers it).
    pub fn covers(&self, need: NetNeed) -> bool {
        (!need.to_host || self.need.to_host) && (!need.to_env || self.need.to_env)
    }

    /// Ends every instance: "bye", then a grace period for it to stop on
    /// its own, then a kill; the driver's cleanup either way.
    pub fn close(mut self) {
        for s in &mut self.sessions {
            let _ = s.send_line(BYE);
        }
        for s in &mut self.sessions {
            s.finish(Duration::from_secs(20));
        }
    }

    /// Runs `jobs` in every instance (started together when there are
    /// several), handing each result to `on_result` as it arrives. With
    /// `reboot=each-run` every job runs in freshly booted instances; with
    /// `reboot=each-round` the instances are booted afresh when `round`
    /// (the comparison's round these jobs belong to) is a new one.
    ///
    /// On an error the instances are ended here. After a stop (Ctrl-C) the
    /// host's agent is given the time to clean up after itself, unless the
    /// user asked twice; when it had to be killed, its cleanup is done
    /// here.
    pub fn run(
        &mut self,
        env: &dyn Environment,
        round: Option<usize>,
        jobs: &[Job],
        on_result: &mut OnResult,
        obs: &dyn Observer,
    ) -> Result<Vec<InstanceOutcome>> {
        peer::make_room(jobs, &env.spec().label, obs)?;
        let outcome = self.run_jobs(env, round, jobs, on_result, obs);
        if let Err(e) = &outcome {
            let stopped = e
                .downcast_ref::<crate::core::signals::Interrupted>()
                .is_some();
            self.end_after_error(env, jobs, stopped, obs);
        }
        outcome
    }

    /// Ends every instance after a failed or stopped plan of `jobs`.
    fn end_after_error(
        &mut self,
        env: &dyn Environment,
        jobs: &[Job],
        stopped: bool,
        obs: &dyn Observer,
    ) {
        // The host agent's files are the user's (a directory they named):
        // it may take its time. Elsewhere they go with the instance.
        let patient = stopped && env.shares_files();
        let grace = if patient {
            Duration::from_secs(20)
        } else {
            Duration::from_secs(2)
        };
        for s in &mut self.sessions {
            s.hang_up();
        }
        if patient {
            let first = Duration::from_secs(1);
            let slow = !self.sessions.iter_mut().all(|s| s.ended_within(first));
            if slow && !crate::core::signals::hurried() {
                obs.note(&format!(
                    "{}: waiting up to {} s for the agent to stop and clean up; Ctrl-C again stops it at once (what it leaves is removed from here)",
                    env.spec().label,
                    grace.as_secs()
                ));
            }
        }
        let mut killed = false;
        for s in &mut self.sessions {
            killed |= s.finish(grace);
        }
        if killed && env.shares_files() {
            clean_up_here(jobs, &env.spec().label);
        }
    }

    fn run_jobs(
        &mut self,
        env: &dyn Environment,
        round: Option<usize>,
        jobs: &[Job],
        on_result: &mut OnResult,
        obs: &dyn Observer,
    ) -> Result<Vec<InstanceOutcome>> {
        match env.spec().reboot {
            Reboot::No => return self.run_plan(env, jobs, on_result),
            Reboot::EachRound => {
                if !self.fresh && self.booted_for != round {
                    self.restart(env, obs)?;
                }
                self.fresh = false;
                self.booted_for = round;
                return self.run_plan(env, jobs, on_result);
            }
            Reboot::EachRun => {}
        }
        let mut outcomes: Vec<InstanceOutcome> = Vec::new();
        for (k, job) in jobs.iter().enumerate() {
            if !self.fresh {
                self.restart(env, obs)?;
            }
            self.fresh = false;
            let mut shifted =
                |i: usize, _: usize, r: &std::result::Result<ResultDoc, String>| on_result(i, k, r);
            let one = self.run_plan(env, std::slice::from_ref(job), &mut shifted)?;
            if outcomes.is_empty() {
                outcomes = one;
            } else {
                for (all, one) in outcomes.iter_mut().zip(one) {
                    all.results.extend(one.results);
                    all.ready_after = one.ready_after;
                    all.forwarded = one.forwarded;
                }
            }
        }
        Ok(outcomes)
    }

    /// Sends `jobs` as one plan to every instance and reads the results.
    fn run_plan(
        &mut self,
        env: &dyn Environment,
        jobs: &[Job],
        on_result: &mut OnResult,
    ) -> Result<Vec<InstanceOutcome>> {
        peer::check(jobs)?;
        if !self.covers(NetNeed::of(jobs)) {
            bail!("internal: these jobs need a network the instances were not started with");
        }
        exchange::run_plan(&mut self.sessions, &self.ready_after, env, jobs, on_result)
    }
}
