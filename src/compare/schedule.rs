//! The comparison scheduler: rounds in which each entry runs in every
//! environment back to back, the environments' order rotated and reversed
//! from entry to entry and round to round (`suite::order`), only what the store does not hold yet (so `--resume`
//! finishes an interrupted comparison), every result stored the moment it
//! arrives, an environment that fails reported and skipped while the others
//! carry on, simultaneous instances combined into one summed result, and
//! `--repeat auto` adding rounds until every headline verdict is decided
//! (slower, faster or equivalent) or the budget is spent. Environments are reached through an `Executor`, so
//! all of this is tested with a scripted one in milliseconds.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::core::observer::{Observer, Progress};
use crate::core::result::ResultDoc;
use crate::core::signals;
use crate::env::{self, Environment, InstanceOutcome, NetNeed, OnResult};
use crate::stats::sequential::MIN_PAIRS;
use crate::stats::VerdictSettings;
use crate::store::Store;
use crate::suite::{self, Suite};

use super::adaptive;
use crate::workload::Job;

/// How many rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Repeat {
    Fixed(usize),
    /// Until no headline verdict is inconclusive, at least 3 rounds.
    Auto,
}

/// Runs jobs in the environments of a comparison.
pub trait Executor {
    /// Runs `jobs` in environment `env` (an index into the comparison's
    /// environments), handing each instance's result to `on_result` as it
    /// arrives; returns every instance's outcome.
    fn run(
        &mut self,
        env: usize,
        round: usize,
        jobs: &[Job],
        on_result: &mut OnResult,
    ) -> Result<Vec<InstanceOutcome>>;

    /// Environment `env` has no more work planned: what was started for it
    /// can end.
    fn retire(&mut self, _env: usize) {}
}

/// The real thing: one driver per environment, each environment's instances
/// started at its first turn and kept until it has no more work (a VM boots
/// once, not once per turn).
pub struct Drivers<'a> {
    drivers: Vec<Box<dyn Environment>>,
    observer: &'a dyn Observer,
    open: Vec<Option<env::Opened>>,
    /// The network peers any turn of the comparison may need: instances
    /// are started with what all of them need.
    need: NetNeed,
}

impl<'a> Drivers<'a> {
    pub fn new(
        drivers: Vec<Box<dyn Environment>>,
        observer: &'a dyn Observer,
        suite: &Suite,
    ) -> Drivers<'a> {
        let jobs: Vec<Job> = suite.entries.iter().map(|e| e.job.clone()).collect();
        Drivers {
            open: drivers.iter().map(|_| None).collect(),
            drivers,
            observer,
            need: NetNeed::of(&jobs),
        }
    }
}

impl Executor for Drivers<'_> {
    fn run(
        &mut self,
        env: usize,
        round: usize,
        jobs: &[Job],
        on_result: &mut OnResult,
    ) -> Result<Vec<InstanceOutcome>> {
        let driver = self.drivers[env].as_mut();
        if let Some(open) = self.open[env].take() {
            match open.covers(NetNeed::of(jobs)) {
                true => self.open[env] = Some(open),
                false => open.close(),
            }
        }
        let open = match &mut self.open[env] {
            Some(open) => open,
            slot => slot.insert(env::Opened::start(driver, self.need, self.observer)?),
        };
        let outcome = open.run(driver, Some(round), jobs, on_result, self.observer);
        if outcome.is_err() {
            // Whatever broke (a hung agent, a stop), the instances go.
            self.open[env] = None;
        }
        outcome
    }

    fn retire(&mut self, env: usize) {
        if let Some(open) = self.open[env].take() {
            open.close();
        }
    }
}

impl Drop for Drivers<'_> {
    fn drop(&mut self) {
        for open in self.open.iter_mut().filter_map(Option::take) {
            open.close();
        }
    }
}

/// One environment of the comparison, as the scheduler sees it.
#[derive(Debug, Clone)]
pub struct EnvSlot {
    pub label: String,
    /// Simultaneous instances (`count=N`, or a group's members).
    pub count: usize,
    /// A group of different environments (their sum is of kind "group").
    pub group: bool,
}

/// How the scheduling went.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    pub rounds: usize,
    pub interrupted: bool,
    /// Environments that failed and were skipped from then on.
    pub failed: Vec<String>,
    /// Why `--repeat auto` stopped, when it did.
    pub stopped_because: Option<String>,
}

pub struct Schedule<'a> {
    pub comparison: i64,
    /// The `--start-at` wait this comparison began with: recorded in every
    /// result's fingerprint.
    pub start_at: Option<crate::core::result::StartAt>,
    pub suite: &'a Suite,
    pub envs: &'a [EnvSlot],
    pub repeat: Repeat,
    pub budget: Duration,
    /// The verdicts `--repeat auto` waits for are judged with these.
    pub settings: VerdictSettings,
    pub store: &'a Store,
    pub observer: &'a dyn Observer,
}

impl Schedule<'_> {
    pub fn run(&self, executor: &mut dyn Executor) -> Result<Outcome> {
        let entries = &self.suite.entries;
        let n_envs = self.envs.len();
        let adaptive = self.repeat == Repeat::Auto;
        if adaptive {
            self.store.set_adaptive(self.comparison)?;
        }
        let rounds_max = match self.repeat {
            Repeat::Fixed(n) => n,
            Repeat::Auto => 1000,
        };
        let mut st = State {
            out: Outcome::default(),
            failed: vec![false; n_envs],
            done: 0,
            total: match self.repeat {
                Repeat::Fixed(n) => Some(n * n_envs * entries.len()),
                Repeat::Auto => None,
            },
            eta: Eta::default(),
            eta_s: None,
        };
        let started = Instant::now();
        for round in 0..rounds_max {
            let want: Vec<Vec<usize>> = if adaptive {
                match self.plan(round, &mut st, started)? {
                    Some(w) => w,
                    None => break,
                }
            } else {
                vec![(0..entries.len()).collect(); n_envs]
            };
            st.out.rounds = round + 1;
            // An environment with nothing in this round of the adaptive
            // design is decided everywhere: its instances end now rather
            // than idle beside the others' runs.
            for (ei, w) in want.iter().enumerate() {
                if w.is_empty() {
                    executor.retire(ei);
                }
            }
            // Entry by entry, each in every environment back to back: a
            // pair's two runs are seconds apart (see `suite::order`).
            for k in 0..entries.len() {
                for ei in suite::order(n_envs, round, k) {
                    if st.failed[ei] || !want[ei].contains(&k) {
                        continue;
                    }
                    if !self.turn(executor, round, ei, &[k], &mut st)? {
                        st.out.interrupted = true;
                        self.observer.progress_done();
                        return Ok(st.out);
                    }
                    // The fixed design's last run there: nothing more to run.
                    if round + 1 == rounds_max && want[ei].iter().max() == Some(&k) {
                        executor.retire(ei);
                    }
                }
            }
        }
        self.observer.progress_done();
        Ok(st.out)
    }

    /// The adaptive design's next round (None: stop, with the why in
    /// `st.out` and each undecided pair's reason noted).
    fn plan(
        &self,
        round: usize,
        st: &mut State,
        started: Instant,
    ) -> Result<Option<Vec<Vec<usize>>>> {
        let labels: Vec<String> = self.envs.iter().map(|e| e.label.clone()).collect();
        let runs = self.store.runs(self.comparison)?;
        let rows = crate::analysis::sequential::rows(&runs, &labels[0]);
        let open = adaptive::pair_states(&rows, &labels, &self.settings);
        let active: Vec<bool> = st.failed.iter().map(|f| !f).collect();
        let cost = |env: usize, entry: usize| st.eta.cost(&labels[env], entry);
        let budget = self.budget.as_secs_f64();
        let left = budget - started.elapsed().as_secs_f64();
        let worth = adaptive::worth_s(budget, rows.len());
        match adaptive::next_round(
            round,
            self.suite.entries.len(),
            &active,
            &open,
            &cost,
            left,
            worth,
        ) {
            adaptive::Step::Run { want, eta_s } => {
                st.eta_s = Some(eta_s);
                // After the first round's measured times: a budget below
                // what the opening rounds need is said once, with the least
                // that would do.
                if round == 1 && started.elapsed().as_secs_f64() + eta_s > budget {
                    self.observer.note(&format!(
                        "--budget {budget:.0} s is less than the {MIN_PAIRS} rounds every verdict needs, about {:.0} s here (round 1 took {:.0} s): they run, then the comparison stops; give --budget {:.0} or more for the adaptive rounds after them",
                        started.elapsed().as_secs_f64() + eta_s,
                        started.elapsed().as_secs_f64(),
                        ((started.elapsed().as_secs_f64() + eta_s) * 2.0).ceil().max(1.0),
                    ));
                }
                Ok(Some(want))
            }
            adaptive::Step::Stop { why, undecided } => {
                for (entry, env, reason) in &undecided {
                    self.observer.note(&format!(
                        "undecided: {} / {}: {reason}",
                        labels[*env], self.suite.entries[*entry].label
                    ));
                }
                // A round only counts when something ran in it.
                st.out.rounds = round;
                st.out.stopped_because = Some(why);
                Ok(None)
            }
        }
    }

    /// Runs `pending` entries of environment `ei` in `round` (what the
    /// store does not hold yet); false when interrupted.
    fn turn(
        &self,
        executor: &mut dyn Executor,
        round: usize,
        ei: usize,
        wanted: &[usize],
        st: &mut State,
    ) -> Result<bool> {
        let entries = &self.suite.entries;
        let slot = &self.envs[ei];
        let pending: Vec<usize> = wanted
            .iter()
            .copied()
            .filter(|&k| {
                !self
                    .store
                    .done(self.comparison, &slot.label, k, round)
                    .unwrap_or(false)
            })
            .collect();
        st.done += wanted.len() - pending.len();
        if pending.is_empty() {
            return Ok(true);
        }
        let jobs: Vec<Job> = pending.iter().map(|&k| entries[k].job.clone()).collect();
        let show = |done: usize, k: usize, st: &State| {
            let eta_s = match st.total {
                Some(t) => st.eta.left(self.envs, entries.len(), t, done),
                None => st.eta_s,
            };
            self.observer.progress(&Progress {
                done,
                total: st.total,
                text: format!("round {}: {}: {}", round + 1, slot.label, entries[k].label),
                eta_s,
            })
        };
        show(st.done, pending[0], st);
        let mut record_error: Option<anyhow::Error> = None;
        let mut last = Instant::now();
        let outcome = executor.run(ei, round, &jobs, &mut |_inst, idx, res| {
            st.eta.add(&slot.label, pending[idx], last.elapsed());
            if let Some(e) = st.eta_s.as_mut() {
                *e = (*e - last.elapsed().as_secs_f64()).max(0.0);
            }
            last = Instant::now();
            if slot.count > 1 {
                return;
            }
            if let Err(e) = self.record(&slot.label, pending[idx], round, res) {
                record_error.get_or_insert(e);
            }
            st.done += 1;
            if let Some(&next) = pending.get(idx + 1) {
                show(st.done, next, st);
            }
        });
        if let Some(e) = record_error {
            return Err(e.context("writing to the results store"));
        }
        match outcome {
            Ok(instances) if slot.count > 1 => {
                self.record_instances(slot, &pending, round, &instances, st)?;
            }
            Ok(_) => {}
            Err(e) if e.downcast_ref::<signals::Interrupted>().is_some() => return Ok(false),
            Err(e) => {
                self.observer.note(&format!(
                    "{} failed: {e:#}; carrying on with the others",
                    slot.label
                ));
                for &k in &pending {
                    if !self.store.done(self.comparison, &slot.label, k, round)? {
                        self.record(&slot.label, k, round, &Err(format!("{e:#}")))?;
                    }
                }
                st.failed[ei] = true;
                st.out.failed.push(slot.label.clone());
            }
        }
        Ok(true)
    }

    /// Records what the simultaneous instances of `slot` ran of `pending`
    /// in `round`: one combined run per job where every instance gave one,
    /// else a failure saying how many did not.
    fn record_instances(
        &self,
        slot: &EnvSlot,
        pending: &[usize],
        round: usize,
        instances: &[InstanceOutcome],
        st: &mut State,
    ) -> Result<()> {
        for (idx, &k) in pending.iter().enumerate() {
            let docs: Vec<ResultDoc> = instances
                .iter()
                .filter_map(|i| i.results.get(idx).and_then(|r| r.as_ref().ok()))
                .cloned()
                .collect();
            let res = if docs.len() == slot.count {
                let combined = match slot.group {
                    true => env::combine_group(&slot.label, &docs),
                    false => env::combine(&slot.label, &docs),
                };
                Ok(combined.expect("non-empty"))
            } else {
                Err(format!(
                    "{} of {} instances failed",
                    slot.count - docs.len(),
                    slot.count
                ))
            };
            self.record(&slot.label, k, round, &res)?;
            st.done += 1;
        }
        Ok(())
    }

    fn record(
        &self,
        env: &str,
        entry: usize,
        round: usize,
        res: &std::result::Result<ResultDoc, String>,
    ) -> Result<()> {
        let stamped;
        let res = match (res, &self.start_at) {
            (Ok(doc), Some(s)) => {
                let mut doc = doc.clone();
                doc.env.start_at = Some(s.clone());
                stamped = Ok(doc);
                &stamped
            }
            _ => res,
        };
        self.store.record(
            self.comparison,
            env,
            entry,
            &self.suite.entries[entry].label,
            round,
            res.as_ref().map_err(String::as_str),
        )
    }
}

/// What a scheduling run carries from turn to turn.
struct State {
    out: Outcome,
    failed: Vec<bool>,
    done: usize,
    total: Option<usize>,
    eta: Eta,
    /// The adaptive plan's time to decided, counted down as runs finish.
    eta_s: Option<f64>,
}

/// Time left, from each environment's own measured run times: an emulated
/// VM's runs take many times the host's, so one average over all would run
/// low while the slow environment is still ahead.
#[derive(Default)]
struct Eta {
    per_env: BTreeMap<String, (Duration, u32)>,
    per_run: BTreeMap<(String, usize), (Duration, u32)>,
}

impl Eta {
    fn add(&mut self, env: &str, entry: usize, took: Duration) {
        let e = self.per_env.entry(env.to_string()).or_default();
        e.0 += took;
        e.1 += 1;
        let e = self.per_run.entry((env.to_string(), entry)).or_default();
        e.0 += took;
        e.1 += 1;
    }

    /// Seconds a run of `entry` takes in `env`: measured, else the
    /// environment's mean run, else any run's, else 1 s.
    fn cost(&self, env: &str, entry: usize) -> f64 {
        let mean = |(t, n): &(Duration, u32)| t.as_secs_f64() / f64::from((*n).max(1));
        if let Some(m) = self.per_run.get(&(env.to_string(), entry)) {
            return mean(m);
        }
        if let Some(m) = self.per_env.get(env) {
            return mean(m);
        }
        let all: Vec<f64> = self.per_env.values().map(mean).collect();
        match all.is_empty() {
            true => 1.0,
            false => all.iter().sum::<f64>() / all.len() as f64,
        }
    }

    /// Seconds left when `done` of `total` runs are finished, spread evenly
    /// over the environments; `None` until every environment has a run.
    fn left(&self, envs: &[EnvSlot], per_round: usize, total: usize, done: usize) -> Option<f64> {
        let mean = |label: &str| {
            self.per_env
                .get(label)
                .map(|(t, n)| t.as_secs_f64() / f64::from(*n))
        };
        let round_s: f64 = envs
            .iter()
            .map(|e| mean(&e.label).map(|m| m * per_round as f64))
            .sum::<Option<f64>>()?;
        let runs_per_round = (per_round * envs.len()).max(1) as f64;
        Some(round_s * total.saturating_sub(done) as f64 / runs_per_round)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observer::{Event, Recording};
    use crate::core::result::Metric;
    use crate::env::InstanceOutcome;

    /// An environment scripted by a function of (env, entry label, round,
    /// instance): a value for the run's one metric, or an error.
    struct Scripted<F> {
        script: F,
        envs: Vec<EnvSlot>,
        rounds_seen: BTreeMap<usize, usize>,
        calls: Vec<(usize, usize)>,
        /// Each `retire`: the environment, and how many calls came before.
        retired: Vec<(usize, usize)>,
        /// Interrupt (as Ctrl-C would) on this call number.
        interrupt_at: Option<usize>,
    }

    type Script = fn(&str, &str, usize, usize) -> std::result::Result<f64, String>;

    impl Scripted<Script> {
        fn new(envs: &[EnvSlot], script: Script) -> Scripted<Script> {
            Scripted {
                script,
                envs: envs.to_vec(),
                rounds_seen: BTreeMap::new(),
                calls: Vec::new(),
                retired: Vec::new(),
                interrupt_at: None,
            }
        }
    }

    fn doc(env: &str, v: f64) -> ResultDoc {
        ResultDoc::new(
            "cpu",
            env,
            vec![Metric::new("events_per_sec", v, "events/s", true)],
        )
    }

    impl Executor for Scripted<Script> {
        fn run(
            &mut self,
            env: usize,
            round: usize,
            jobs: &[Job],
            on_result: &mut OnResult,
        ) -> Result<Vec<InstanceOutcome>> {
            self.calls.push((env, jobs.len()));
            if self.interrupt_at == Some(self.calls.len()) {
                return Err(signals::Interrupted.into());
            }
            *self.rounds_seen.entry(env).or_insert(0) += 1;
            let slot = self.envs[env].clone();
            let mut outcomes = Vec::new();
            for inst in 0..slot.count {
                let mut results = Vec::new();
                for (idx, job) in jobs.iter().enumerate() {
                    let label = job.args().join(" ");
                    let res = (self.script)(&slot.label, &label, round, inst)
                        .map(|v| doc(&slot.label, v));
                    if let Err(e) = &res {
                        if e == "die" {
                            anyhow::bail!("{} died", slot.label);
                        }
                    }
                    on_result(inst, idx, &res);
                    results.push(res);
                }
                outcomes.push(InstanceOutcome {
                    ready_after: Duration::ZERO,
                    results,
                    forwarded: None,
                });
            }
            Ok(outcomes)
        }

        fn retire(&mut self, env: usize) {
            self.retired.push((env, self.calls.len()));
        }
    }

    /// Whether environment `env` ran after it was first retired.
    fn ran_after_retiring(ex: &Scripted<Script>, env: usize) -> bool {
        ex.retired
            .iter()
            .find(|r| r.0 == env)
            .is_some_and(|&(_, at)| ex.calls[at..].iter().any(|c| c.0 == env))
    }

    fn suite(n: usize) -> Suite {
        Suite {
            name: "t".into(),
            description: String::new(),
            repeat: None,
            envs: Vec::new(),
            entries: (0..n)
                .map(|i| {
                    let args: Vec<String> =
                        vec!["cpu".into(), format!("--cpu-max-prime={}", 100 + i)];
                    crate::suite::Entry {
                        label: args.join(" "),
                        job: Job::from_args(&args).unwrap(),
                    }
                })
                .collect(),
        }
    }

    fn slots(spec: &[(&str, usize)]) -> Vec<EnvSlot> {
        spec.iter()
            .map(|(l, c)| EnvSlot {
                label: l.to_string(),
                count: *c,
                group: false,
            })
            .collect()
    }

    struct World {
        _dir: tempfile::TempDir,
        store: Store,
        id: i64,
        suite: Suite,
        envs: Vec<EnvSlot>,
        recording: Recording,
    }

    fn world(entries: usize, envs: &[(&str, usize)]) -> World {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let envs = slots(envs);
        let labels: Vec<String> = envs.iter().map(|e| e.label.clone()).collect();
        let id = store
            .begin("2026-11-23T00:00:00Z", "t", &labels[0], &labels, &[])
            .unwrap();
        World {
            _dir: dir,
            store,
            id,
            suite: suite(entries),
            envs,
            recording: Recording::default(),
        }
    }

    fn schedule(w: &World, repeat: Repeat) -> Schedule<'_> {
        Schedule {
            comparison: w.id,
            start_at: None,
            suite: &w.suite,
            envs: &w.envs,
            repeat,
            budget: Duration::from_secs(3600),
            settings: VerdictSettings::default(),
            store: &w.store,
            observer: &w.recording,
        }
    }

    #[test]
    fn rounds_rotate_and_every_result_is_stored() {
        let w = world(2, &[("host", 1), ("vm", 1), ("ct", 1)]);
        let mut ex = Scripted::new(&w.envs, |env, _, round, _| {
            Ok(if env == "host" { 100.0 } else { 50.0 } + round as f64)
        });
        let out = schedule(&w, Repeat::Fixed(3)).run(&mut ex).unwrap();
        assert_eq!(out.rounds, 3);
        assert!(!out.interrupted && out.failed.is_empty());
        // Each entry runs in every environment back to back, one run a
        // call; the order is rotated and reversed from step to step.
        assert!(ex.calls.iter().all(|c| c.1 == 1), "{:?}", ex.calls);
        let order: Vec<usize> = ex.calls.iter().map(|c| c.0).collect();
        #[rustfmt::skip]
        assert_eq!(order, vec![
            0, 1, 2, /* entry 2: */ 2, 1, 0, // round 1
            2, 1, 0, /* entry 2: */ 1, 2, 0, // round 2
            1, 2, 0, /* entry 2: */ 0, 2, 1, // round 3
        ]);
        // Each environment ends right after its last run, the one that
        // went last in the round too.
        assert_eq!(ex.retired, vec![(0, 16), (2, 17), (1, 18)]);
        let runs = w.store.runs(w.id).unwrap();
        assert_eq!(runs.len(), 2 * 3 * 3);
        assert!(runs.iter().all(|r| r.doc.is_some()));
        // Progress counted every run and ended its line.
        let events = w.recording.events();
        assert!(matches!(events.last(), Some(Event::ProgressDone)));
        assert!(events
            .iter()
            .any(|e| matches!(e, Event::Progress(p) if p.total == Some(18))));
    }

    #[test]
    fn a_failing_environment_is_reported_and_the_others_carry_on() {
        let w = world(2, &[("host", 1), ("broken", 1)]);
        let mut ex = Scripted::new(&w.envs, |env, _, _, _| {
            if env == "broken" {
                Err("die".into())
            } else {
                Ok(1.0)
            }
        });
        let out = schedule(&w, Repeat::Fixed(3)).run(&mut ex).unwrap();
        assert_eq!(out.failed, vec!["broken".to_string()]);
        let runs = w.store.runs(w.id).unwrap();
        let host_ok = runs
            .iter()
            .filter(|r| r.env == "host" && r.doc.is_some())
            .count();
        assert_eq!(host_ok, 6, "host ran every round");
        let broken: Vec<_> = runs.iter().filter(|r| r.env == "broken").collect();
        assert_eq!(broken.len(), 1, "one failed run recorded, then skipped");
        assert!(broken
            .iter()
            .all(|r| r.error.as_deref().unwrap().contains("broken died")));
        assert!(w
            .recording
            .events()
            .iter()
            .any(|e| matches!(e, Event::Note(n) if n.contains("carrying on"))));
    }

    #[test]
    fn an_interrupted_comparison_resumes_with_only_what_is_left() {
        let w = world(2, &[("host", 1), ("vm", 1)]);
        let mut ex = Scripted::new(&w.envs, |_, _, _, _| Ok(1.0));
        ex.interrupt_at = Some(4);
        let out = schedule(&w, Repeat::Fixed(3)).run(&mut ex).unwrap();
        assert!(out.interrupted);
        let kept = w.store.runs(w.id).unwrap().len();
        assert_eq!(kept, 3, "three runs finished before Ctrl-C");
        // Resume: a fresh executor is asked only for what is missing.
        let mut again = Scripted::new(&w.envs, |_, _, _, _| Ok(2.0));
        let out = schedule(&w, Repeat::Fixed(3)).run(&mut again).unwrap();
        assert!(!out.interrupted);
        assert_eq!(again.calls.len(), 9, "{:?}", again.calls);
        assert_eq!(w.store.runs(w.id).unwrap().len(), 12);
    }

    #[test]
    fn simultaneous_instances_are_summed_into_one_result() {
        let w = world(1, &[("host", 1), ("pair", 2)]);
        let mut ex = Scripted::new(&w.envs, |env, _, _, inst| {
            Ok(if env == "pair" {
                10.0 + inst as f64
            } else {
                5.0
            })
        });
        schedule(&w, Repeat::Fixed(2)).run(&mut ex).unwrap();
        let runs = w.store.runs(w.id).unwrap();
        let pair: Vec<f64> = runs
            .iter()
            .filter(|r| r.env == "pair")
            .map(|r| r.doc.as_ref().unwrap().metric("events_per_sec").unwrap())
            .collect();
        assert_eq!(pair, vec![21.0, 21.0]);
    }

    #[test]
    fn one_failed_instance_fails_the_combined_run() {
        let w = world(1, &[("host", 1), ("pair", 2)]);
        let mut ex = Scripted::new(&w.envs, |env, _, _, inst| {
            if env == "pair" && inst == 1 {
                Err("no".into())
            } else {
                Ok(1.0)
            }
        });
        schedule(&w, Repeat::Fixed(1)).run(&mut ex).unwrap();
        let runs = w.store.runs(w.id).unwrap();
        let pair = runs.iter().find(|r| r.env == "pair").unwrap();
        assert_eq!(pair.error.as_deref(), Some("1 of 2 instances failed"));
    }

    fn verdict(w: &World, env: usize) -> crate::stats::Outcome {
        let cmp = w.store.comparison(w.id).unwrap().unwrap();
        assert!(cmp.adaptive);
        let a = crate::analysis::analyze(
            &cmp,
            &w.store.runs(w.id).unwrap(),
            &VerdictSettings::default(),
        );
        a.entries[0].metrics[0].per_env[env]
            .vs_baseline
            .as_ref()
            .unwrap()
            .outcome
    }

    #[test]
    fn repeat_auto_stops_a_decided_pair_and_keeps_the_undecided_one_running() {
        // "fast" is 3× the host, clean: decided after the minimum of three
        // rounds. "near" is 4% off under 3% noise: it needs more, and only
        // it (with the baseline, for its pairs) runs after round 3.
        let w = world(1, &[("host", 1), ("fast", 1), ("near", 1)]);
        let mut ex = Scripted::new(&w.envs, |env, _, round, _| {
            let noise = [1.0, 1.03, 0.97, 1.02, 0.98, 1.01, 0.99, 1.0];
            Ok(match env {
                "fast" => 300.0 * [1.0, 1.01, 0.99][round % 3],
                "near" => 96.0 * noise[(round + 3) % 8],
                _ => 100.0 * noise[round % 8],
            })
        });
        let out = schedule(&w, Repeat::Auto).run(&mut ex).unwrap();
        assert!(out.rounds > 3, "{out:?}");
        assert!(
            out.stopped_because.as_deref().unwrap().contains("decided"),
            "{out:?}"
        );
        assert_eq!(ex.rounds_seen[&1], 3, "the decided pair stopped: {out:?}");
        // Its instances ended when the plan gave it nothing more, before
        // the others' next turn; the others were kept.
        assert_eq!(ex.retired.first(), Some(&(1, 9)), "{:?}", ex.retired);
        assert!(!ran_after_retiring(&ex, 1));
        assert!(ex.retired.iter().all(|r| r.0 == 1));
        assert_eq!(ex.rounds_seen[&2], out.rounds);
        assert_eq!(
            ex.rounds_seen[&0], out.rounds,
            "the baseline pairs every run"
        );
        assert_eq!(verdict(&w, 1), crate::stats::Outcome::Faster);
        assert_eq!(verdict(&w, 2), crate::stats::Outcome::Slower);
    }

    #[test]
    fn repeat_auto_within_its_budget_says_why_a_pair_is_undecided() {
        // A difference right at the margin under heavy noise: three rounds
        // run, then the budget stops it and the pair says why.
        let w = world(1, &[("host", 1), ("vm", 1)]);
        let mut ex = Scripted::new(&w.envs, |env, _, round, _| {
            // Noise the pairs do not share (shared noise cancels in a pair).
            let noise = [1.0, 1.3, 0.75];
            Ok(if env == "vm" {
                105.0 * noise[(round + 1) % 3]
            } else {
                100.0 * noise[round % 3]
            })
        });
        let mut s = schedule(&w, Repeat::Auto);
        s.budget = Duration::ZERO;
        let out = s.run(&mut ex).unwrap();
        assert_eq!(out.rounds, 3);
        // Said once, after the first round, with the least that would do
        // (issue 52, item 4).
        let below: Vec<String> = w
            .recording
            .events()
            .into_iter()
            .filter_map(|e| match e {
                crate::core::observer::Event::Note(n) if n.contains("less than the 3 rounds") => {
                    Some(n)
                }
                _ => None,
            })
            .collect();
        assert_eq!(below.len(), 1, "{below:?}");
        assert!(below[0].starts_with("--budget 0 s"), "{below:?}");
        let why = out.stopped_because.unwrap();
        assert!(
            why.contains("--budget") && why.contains("undecided"),
            "{why}"
        );
        assert_eq!(verdict(&w, 1), crate::stats::Outcome::Inconclusive);
    }

    #[test]
    fn the_eta_uses_each_environments_own_run_time() {
        let envs = slots(&[("host", 1), ("tcg", 1)]);
        let mut eta = Eta::default();
        assert_eq!(eta.left(&envs, 2, 8, 2), None);
        eta.add("host", 0, Duration::from_secs(1));
        eta.add("tcg", 0, Duration::from_secs(19));
        // A round: 2 runs × 1 s + 2 runs × 19 s = 40 s for 4 runs; 4 left.
        let left = eta.left(&envs, 2, 8, 4).unwrap();
        assert!((left - 40.0).abs() < 1e-9, "{left}");
    }
}
