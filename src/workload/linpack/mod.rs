//! `linpack`: an HPL-style dense solve, as Intel's LINPACK benchmark runs
//! it for seed 001's "computing power": per problem size, a seeded random
//! system is factored (LU, partial pivoting) and solved with faer on
//! `--threads` threads, timed, and checked by HPL's scaled residual against
//! the system regenerated from its seed. Not engine-driven: `--time`,
//! `--events` and `--rate` do not apply.

mod input;
mod lu;
mod plan;
mod solve;

use std::time::Duration;

use anyhow::{bail, Result};
use faer::Par;

use crate::core::options::{OptKind, OptionSpec, Values};
use crate::core::result::Metric;
use crate::engine::EngineOptions;
use crate::sys::fingerprint;
use crate::workload::{Category, Measurement, MetricDef, Needs, Workload, WorkloadDef};

pub use input::Test;

pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "linpack-sizes",
        OptKind::Text,
        "1000,2000,4000",
        "problem sizes N, comma-separated, or auto: sizes scaled to the memory seen",
    ),
    OptionSpec::new(
        "linpack-lda",
        OptKind::Text,
        "",
        "leading dimensions, one for all sizes or one per size (default: each size)",
    ),
    OptionSpec::new(
        "linpack-trials",
        OptKind::Text,
        "2",
        "trials per size, one for all sizes or one per size",
    ),
    OptionSpec::new(
        "linpack-time",
        OptKind::Float {
            min: 0.0,
            max: 86400.0,
        },
        "0",
        "seconds after which a size starts no more trials (at least one runs; 0: every trial runs), so one setting fits a fast host and an emulated guest",
    ),
    OptionSpec::new(
        "linpack-align",
        OptKind::Text,
        "4",
        "alignment of each matrix in KiB (0: none), one for all sizes or one per size",
    ),
    OptionSpec::new(
        "linpack-input",
        OptKind::Text,
        "",
        "read sizes, LDAs, trials and alignments from an Intel lininput file instead",
    ),
    OptionSpec::new(
        "linpack-seed",
        OptKind::Int {
            min: 0,
            max: u64::MAX,
        },
        "1",
        "seed of the random matrices (the residual check regenerates them from it)",
    ),
];

pub const DEF: WorkloadDef = WorkloadDef {
    name: "linpack",
    summary: "LINPACK: dense LU solve with partial pivoting (faer), GFLOPS and HPL's residual check, Intel lininput files",
    options: OPTIONS,
    // A fixed amount of work per size; only the thread count applies.
    engine: &["threads"],
    needs: Needs::NONE,
    metrics: METRICS,
    area: crate::workload::Area::Cpu,
    sysbench: None,
    build,
};

fn build(values: &Values) -> Result<Box<dyn Workload>> {
    Ok(Box::new(LinpackWorkload::new(values)?))
}

/// Every metric `linpack` produces; `gflops_n*` is one metric per problem
/// size, `gflops_n1000`, `gflops_n4000`, ...
pub const METRICS: &[MetricDef] = &[
    MetricDef::new("gflops", "GFLOPS", true, true, Some(Category::Computing)),
    MetricDef::new("gflops_hpl", "GFLOPS", true, false, None),
    MetricDef::new("gflops_n*", "GFLOPS", true, false, None),
    MetricDef::new("residual", "", false, false, None),
    MetricDef::new("residual_passed", "", true, false, None),
];

fn metric(name: &str, value: f64) -> Metric {
    crate::workload::metric_from(METRICS, name, value)
}

/// Floating-point operations of one solve as Intel's LINPACK counts them.
pub fn flops_intel(n: usize) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n + 2.0 * n * n
}

/// ... and as HPL counts them.
pub fn flops_hpl(n: usize) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n + 1.5 * n * n
}

pub struct LinpackWorkload {
    plan: plan::Plan,
    seed: u64,
    /// `--linpack-time`: a size starts no trial after this long.
    time: Option<Duration>,
}

impl LinpackWorkload {
    /// Validates the options and refuses, before any allocation, a size
    /// that does not fit in this environment's memory.
    pub fn new(values: &Values) -> Result<LinpackWorkload> {
        let plan = plan::from_values(values, fingerprint::memory_limit())?;
        let time = values.float("linpack-time");
        Ok(LinpackWorkload {
            plan,
            seed: values.int("linpack-seed"),
            time: (time > 0.0).then(|| Duration::from_secs_f64(time)),
        })
    }
}

/// One timed trial.
#[derive(Debug, Clone, Copy)]
struct Trial {
    test: Test,
    time: Duration,
    residual: solve::Residual,
}

impl Trial {
    fn gflops(&self) -> f64 {
        flops_intel(self.test.size) / self.time.as_secs_f64() / 1e9
    }

    fn gflops_hpl(&self) -> f64 {
        flops_hpl(self.test.size) / self.time.as_secs_f64() / 1e9
    }
}

fn run_trial(test: Test, seed: u64, par: Par) -> Result<Trial> {
    let mut a = solve::Matrix::new(test.size, test.lda, test.align_kib * 1024)?;
    a.generate(seed);
    let mut x = vec![0.0; test.size];
    solve::generate_column(seed, test.size, &mut x);
    let time = solve::factor_and_solve(a.as_mut(), &mut x, par);
    drop(a);
    let residual = solve::residual(seed, test.size, &x);
    Ok(Trial {
        test,
        time: time.max(Duration::from_nanos(1)),
        residual,
    })
}

impl Workload for LinpackWorkload {
    fn run(&mut self, engine: &EngineOptions) -> Result<Measurement> {
        let threads = engine.threads.max(1);
        let trials = if threads == 1 {
            self.trials(Par::Seq)?
        } else {
            // A pool of exactly --threads workers, whatever the CPU count.
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()?;
            pool.install(|| self.trials(Par::rayon(threads)))?
        };
        let isa = fingerprint::linalg_isa();
        let text = render(&self.plan, &trials, threads, isa);
        if let Err(e) = verdict(&trials) {
            // The table shows which trial failed; the error carries the gist.
            eprint!("{text}");
            return Err(e);
        }
        Ok(measurement(
            &self.plan, &trials, text, self.seed, threads, isa,
        ))
    }
}

impl LinpackWorkload {
    fn trials(&self, par: Par) -> Result<Vec<Trial>> {
        let mut out = Vec::new();
        for test in &self.plan.tests {
            let started = std::time::Instant::now();
            for i in 0..test.trials {
                if i > 0 && self.time.is_some_and(|t| started.elapsed() >= t) {
                    break;
                }
                if crate::core::signals::interrupted() {
                    bail!(crate::core::signals::Interrupted);
                }
                out.push(run_trial(*test, self.seed, par)?);
            }
        }
        Ok(out)
    }
}

/// Ok if every trial passed HPL's check, else an error naming the failures
/// (the run exits non-zero).
fn verdict(trials: &[Trial]) -> Result<()> {
    let failed: Vec<String> = trials
        .iter()
        .filter(|t| !t.residual.passed())
        .map(|t| format!("N={} residual(norm) {:.3e}", t.test.size, t.residual.scaled))
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    bail!(
        "LINPACK residual checks FAILED (must be below {}): {}",
        solve::THRESHOLD,
        failed.join(", ")
    )
}

/// The best trial of each distinct (size, LDA, alignment), in plan order.
fn per_test<'a>(plan: &plan::Plan, trials: &'a [Trial]) -> Vec<(Test, Vec<&'a Trial>)> {
    let mut out: Vec<(Test, Vec<&Trial>)> = Vec::new();
    for t in &plan.tests {
        let key = |x: &Test| (x.size, x.lda, x.align_kib);
        if out.iter().any(|(seen, _)| key(seen) == key(t)) {
            continue;
        }
        let runs = trials.iter().filter(|r| key(&r.test) == key(t)).collect();
        out.push((*t, runs));
    }
    out
}

fn best(runs: &[&Trial]) -> f64 {
    runs.iter().map(|t| t.gflops()).fold(0.0, f64::max)
}

fn measurement(
    plan: &plan::Plan,
    trials: &[Trial],
    text: String,
    seed: u64,
    threads: usize,
    isa: &str,
) -> Measurement {
    let groups = per_test(plan, trials);
    let largest = trials.iter().map(|t| t.test.size).max().unwrap_or(0);
    let top: Vec<&Trial> = trials.iter().filter(|t| t.test.size == largest).collect();
    let top_best = top
        .iter()
        .copied()
        .max_by(|a, b| a.gflops().total_cmp(&b.gflops()));
    let worst = trials.iter().map(|t| t.residual.scaled).fold(0.0, f64::max);
    let mut metrics = vec![
        metric("gflops", best(&top)),
        metric("gflops_hpl", top_best.map_or(0.0, |t| t.gflops_hpl())),
    ];
    let mut sizes: Vec<usize> = Vec::new();
    for (t, _) in &groups {
        if !sizes.contains(&t.size) {
            sizes.push(t.size);
        }
    }
    for n in sizes {
        let runs: Vec<&Trial> = trials.iter().filter(|t| t.test.size == n).collect();
        metrics.push(metric(&format!("gflops_n{n}"), best(&runs)));
    }
    metrics.push(metric("residual", worst));
    metrics.push(metric(
        "residual_passed",
        f64::from(u8::from(trials.iter().all(|t| t.residual.passed()))),
    ));
    let details = serde_json::json!({
        "isa": isa,
        "threads": threads,
        "seed": seed,
        "threshold": solve::THRESHOLD,
        "title": plan.title.as_ref().map(|t| &t.0),
        "notes": plan.notes,
        "trials": trials.iter().map(|t| serde_json::json!({
            "size": t.test.size,
            "lda": t.test.lda,
            "align_kib": t.test.align_kib,
            "time_s": t.time.as_secs_f64(),
            "gflops": t.gflops(),
            "gflops_hpl": t.gflops_hpl(),
            "residual": t.residual.norm,
            "residual_norm": t.residual.scaled,
            "passed": t.residual.passed(),
        })).collect::<Vec<_>>(),
    });
    Measurement {
        duration: trials.iter().map(|t| t.time).sum(),
        events: trials.len() as u64,
        metrics,
        details,
        text,
        ..Measurement::default()
    }
}

/// C's `%e`: 1.124326e-02, as Intel's table prints residuals.
fn sci(x: f64) -> String {
    let s = format!("{x:.6e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s, // NaN, inf
    }
}

/// The text section, laid out as Intel's LINPACK prints it.
fn render(plan: &plan::Plan, trials: &[Trial], threads: usize, isa: &str) -> String {
    let mut out = String::from("Intel(R) LINPACK-style benchmark (faer)\n\n");
    if let Some((title, subtitle)) = &plan.title {
        out.push_str(&format!("{title}\n{subtitle}\n\n"));
    }
    out.push_str(&format!(
        "Number of threads: {threads}\nKernels: {isa}\n\nParameters are set to:\n\n"
    ));
    let row = |label: &str, f: &dyn Fn(&Test) -> usize| {
        let cells: Vec<String> = plan.tests.iter().map(|t| format!("{:<6}", f(t))).collect();
        format!("{label:<44}: {}\n", cells.join(" ").trim_end())
    };
    out.push_str(&format!("Number of tests: {}\n", plan.tests.len()));
    out.push_str(&row("Number of equations to solve (problem size)", &|t| {
        t.size
    }));
    out.push_str(&row("Leading dimension of array", &|t| t.lda));
    out.push_str(&row("Number of trials to run", &|t| t.trials));
    out.push_str(&row("Data alignment value (in Kbytes)", &|t| t.align_kib));
    for note in &plan.notes {
        out.push_str(&format!("Note: {note}\n"));
    }
    if let Some(big) = plan.tests.iter().max_by_key(|t| t.bytes()) {
        out.push_str(&format!(
            "\nMaximum memory requested that can be used={}, at the size={}\n",
            big.bytes(),
            big.size
        ));
    }
    out.push_str(
        "\n=================== Timing linear equation system solver ===================\n\n",
    );
    out.push_str("Size   LDA    Align. Time(s)    GFlops   Residual     Residual(norm) Check\n");
    for t in trials {
        out.push_str(&format!(
            "{:<6} {:<6} {:<6} {:<10.3} {:<8.4} {:<12} {:<14} {}\n",
            t.test.size,
            t.test.lda,
            t.test.align_kib,
            t.time.as_secs_f64(),
            t.gflops(),
            sci(t.residual.norm),
            sci(t.residual.scaled),
            if t.residual.passed() { "pass" } else { "FAIL" }
        ));
    }
    out.push_str(
        "\nPerformance Summary (GFlops)\n\nSize   LDA    Align.  Average  Maximal  HPL max\n",
    );
    for (t, runs) in per_test(plan, trials) {
        let avg = runs.iter().map(|r| r.gflops()).sum::<f64>() / runs.len().max(1) as f64;
        let hpl = runs.iter().map(|r| r.gflops_hpl()).fold(0.0, f64::max);
        out.push_str(&format!(
            "{:<6} {:<6} {:<7} {:<8.4} {:<8.4} {:.4}\n",
            t.size,
            t.lda,
            t.align_kib,
            avg,
            best(&runs),
            hpl
        ));
    }
    out.push_str(&format!(
        "\nGFlops count (2/3 N³ + 2 N²)/t as Intel's; HPL max counts (2/3 N³ + 3/2 N²)/t.\nResidual(norm) is HPL's ‖Ax−b‖∞ / (ε (‖A‖∞‖x‖∞ + ‖b‖∞) N), passing below {}.\n\n",
        solve::THRESHOLD
    ));
    if trials.iter().all(|t| t.residual.passed()) {
        out.push_str("Residual checks PASSED\n");
    } else {
        out.push_str("Residual checks FAILED\n");
    }
    out.push_str("\nEnd of tests\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(size: usize, secs: f64, scaled: f64) -> Trial {
        Trial {
            test: Test {
                size,
                lda: size,
                trials: 2,
                align_kib: 4,
            },
            time: Duration::from_secs_f64(secs),
            residual: solve::Residual {
                norm: 1e-12,
                scaled,
            },
        }
    }

    #[test]
    fn residuals_print_like_c() {
        assert_eq!(sci(0.01124326), "1.124326e-02");
        assert_eq!(sci(9.298118e-13), "9.298118e-13");
        assert_eq!(sci(123.0), "1.230000e+02");
        assert_eq!(sci(f64::NAN), "NaN");
    }

    #[test]
    fn flop_counts_are_intels_and_hpls() {
        assert_eq!(flops_intel(3), 18.0 + 18.0);
        assert_eq!(flops_hpl(3), 18.0 + 13.5);
    }

    #[test]
    fn metrics_take_the_largest_sizes_best_trial() {
        let plan = plan::Plan {
            tests: vec![trial(100, 1.0, 0.0).test, trial(1000, 1.0, 0.0).test],
            title: None,
            notes: vec![],
        };
        let trials = [
            trial(100, 0.001, 0.1),
            trial(100, 0.002, 0.1),
            trial(1000, 1.0, 0.5),
            trial(1000, 0.5, 3.0),
        ];
        let m = measurement(&plan, &trials, String::new(), 1, 1, "avx2+fma");
        let get = |n: &str| m.metrics.iter().find(|x| x.name == n).unwrap().value;
        let g1000 = flops_intel(1000) / 0.5 / 1e9;
        assert!((get("gflops") - g1000).abs() < 1e-12);
        assert!((get("gflops_n1000") - g1000).abs() < 1e-12);
        assert!((get("gflops_n100") - flops_intel(100) / 0.001 / 1e9).abs() < 1e-9);
        assert!((get("gflops_hpl") - flops_hpl(1000) / 0.5 / 1e9).abs() < 1e-12);
        assert_eq!(get("residual"), 3.0);
        assert_eq!(get("residual_passed"), 1.0);
        assert_eq!(m.events, 4);
        for x in &m.metrics {
            let def = METRICS.iter().find(|d| d.matches(&x.name)).unwrap();
            assert_eq!(def.higher_is_better, x.higher_is_better, "{}", x.name);
        }
        let text = render(&plan, &trials, 1, "avx2+fma");
        assert!(text.contains("Residual checks PASSED"), "{text}");
        assert!(text.contains(
            "Size   LDA    Align. Time(s)    GFlops   Residual     Residual(norm) Check"
        ));
        assert_eq!(text.matches(" pass\n").count(), 4, "{text}");
        assert!(verdict(&trials).is_ok());
        let bad = [trial(100, 0.001, 1.0), trial(100, 0.001, 40.0)];
        let e = verdict(&bad).unwrap_err().to_string();
        assert!(
            e.contains("FAILED") && e.contains("N=100 residual(norm) 4.000e1"),
            "{e}"
        );
        let failed = render(&plan, &[trial(100, 0.001, 40.0)], 1, "sse2");
        assert!(failed.contains("FAIL\n") && failed.contains("Residual checks FAILED"));
    }

    #[test]
    fn one_headline_in_the_computing_category() {
        let heads: Vec<&MetricDef> = METRICS.iter().filter(|d| d.headline).collect();
        assert_eq!(heads.len(), 1);
        assert_eq!(heads[0].name, "gflops");
        assert_eq!(heads[0].category, Some(Category::Computing));
    }

    /// Runs linpack with these options on `threads` threads.
    fn run_args(args: &[&str], threads: usize) -> Measurement {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let values = crate::core::options::parse(&[OPTIONS], &args, "linpack")
            .unwrap()
            .0;
        let engine = EngineOptions::silent(threads);
        LinpackWorkload::new(&values).unwrap().run(&engine).unwrap()
    }

    #[test]
    fn a_run_solves_every_trial_and_passes() {
        let m = run_args(&["--linpack-sizes=64,130", "--linpack-trials=1,2"], 2);
        assert_eq!(m.events, 3);
        assert!(m.text.contains("Residual checks PASSED"), "{}", m.text);
        assert_eq!(m.details["trials"].as_array().unwrap().len(), 3);
        assert!(m.metrics.iter().any(|x| x.name == "gflops_n130"));
    }

    #[test]
    fn linpack_time_stops_a_sizes_trials_after_the_first_that_outlasts_it() {
        // Each size runs once when one trial outlasts the time, and every
        // size still runs; without the option every trial runs.
        let m = run_args(
            &[
                "--linpack-sizes=64,96",
                "--linpack-trials=50",
                "--linpack-time=0.000001",
            ],
            1,
        );
        assert_eq!(m.events, 2);
        let sizes: Vec<u64> = m.details["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["size"].as_u64().unwrap())
            .collect();
        assert_eq!(sizes, [64, 96]);
        let all = run_args(&["--linpack-sizes=64", "--linpack-trials=7"], 1);
        assert_eq!(all.events, 7);
        // A time that the trials fit in leaves them all.
        let m = run_args(
            &[
                "--linpack-sizes=64",
                "--linpack-trials=5",
                "--linpack-time=60",
            ],
            1,
        );
        assert_eq!(m.events, 5);
    }
}
