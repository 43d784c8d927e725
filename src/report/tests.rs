//! The report as a whole: each format rendering one made-up analysis.

use super::text::flag_summary;
use super::*;
use crate::core::result::{Metric, Monitor, ResultDoc};
use crate::stats::Outcome;
use crate::stats::VerdictSettings;
use crate::store::RunRow;
use tests_support::comparison_row;

fn run(env: &str, round: usize, v: f64, steal: f64) -> RunRow {
    RunRow {
        env: env.into(),
        entry: 0,
        label: "cpu".into(),
        round,
        doc: Some(ResultDoc {
            params: serde_json::json!({"threads": 1})
                .as_object()
                .unwrap()
                .clone(),
            monitor: Monitor {
                cpu_steal_pct: steal,
                ..Monitor::default()
            },
            ..ResultDoc::new(
                "cpu",
                env,
                vec![Metric::new("events_per_sec", v, "events/s", true)],
            )
        }),
        error: None,
    }
}

fn fixture() -> Analysis {
    analyze(
        &comparison_row(),
        &fixture_runs(),
        &VerdictSettings::default(),
    )
}

fn fixture_runs() -> Vec<RunRow> {
    let mut runs = Vec::new();
    for (r, (h, v)) in [
        (100.0, 50.0),
        (101.0, 51.0),
        (99.0, 49.0),
        (100.0, 50.0),
        (100.0, 50.0),
    ]
    .iter()
    .enumerate()
    {
        runs.push(run("host", r, *h, 0.0));
        runs.push(run("vm", r, *v, if r == 2 { 9.0 } else { 0.0 }));
    }
    runs
}

fn microops_runs(ops_cycles: usize, rounds: usize) -> Vec<RunRow> {
    let mut runs = Vec::new();
    for r in 0..rounds {
        for (env, v) in [("host", 100.0 + r as f64), ("vm", 50.0 + r as f64)] {
            let mut row = run(env, r, v, 0.0);
            let doc = row.doc.as_mut().unwrap();
            doc.workload = "microops".into();
            doc.metrics = vec![Metric::new("getpid_ns", v, "ns", false)];
            doc.metrics.extend(
                (0..ops_cycles)
                    .map(|i| Metric::new(&format!("op{i}_cycles"), v * 3.0, "cycles", false)),
            );
            runs.push(row);
        }
    }
    runs
}

#[test]
fn detail_metrics_do_not_dilute_the_headline_verdict() {
    // getpid_ns is the headline; 24 more figures in cycles are detail.
    // With 3 runs a side the headline is decided (a 2× difference),
    // whatever the number of detail metrics.
    let a = analyze(
        &comparison_row(),
        &microops_runs(24, 3),
        &VerdictSettings::default(),
    );
    let m = &a.entries[0].metrics;
    assert!(m[0].headline && m[1..].iter().all(|m| !m.headline));
    let head = m[0].per_env[1].vs_baseline.as_ref().unwrap();
    assert_eq!(head.outcome, Outcome::Faster, "{head:?}");
    // A family of one: Holm changes nothing.
    assert_eq!(head.p_welch, head.p_welch_adjusted);
    // The detail family is corrected on its own, over 24.
    let detail = m[1].per_env[1].vs_baseline.as_ref().unwrap();
    assert!(
        detail.p_welch_adjusted >= detail.p_welch * 2.0,
        "{detail:?}"
    );
    assert!(a.headline_decided());
    // The summary has the one headline row; --detail shows the rest,
    // their verdicts in brackets.
    let t = exporter("table").unwrap();
    let short = t.render(&a, View::default());
    assert!(
        short.contains("getpid_ns") && !short.contains("op3_cycles"),
        "{short}"
    );
    let long = t.render(&a, View { detail: true });
    assert!(
        long.contains("op3_cycles") && long.contains("[faster]"),
        "{long}"
    );
}

#[test]
fn an_inconclusive_verdict_says_how_many_runs_would_decide_it() {
    // A 3% difference under 3% noise with 3 runs a side.
    let mut runs = Vec::new();
    for (r, j) in [1.0, 1.03, 0.97].iter().enumerate() {
        runs.push(run("host", r, 100.0 * j, 0.0));
        runs.push(run("vm", r, 97.0 * [1.02, 0.97, 1.01][r], 0.0));
    }
    let a = analyze(&comparison_row(), &runs, &VerdictSettings::default());
    let v = a.entries[0].metrics[0].per_env[1]
        .vs_baseline
        .as_ref()
        .unwrap();
    assert_eq!(v.outcome, Outcome::Inconclusive);
    let n = v.runs_needed.unwrap().per_side.unwrap();
    assert!(n > 3, "{n}");
    let text = exporter("table").unwrap().render(&a, View::default());
    assert!(text.contains(&format!("inconclusive (~{n} runs")), "{text}");
    assert!(text.contains(&format!("--repeat {n}")), "{text}");
    assert!(!a.headline_decided());
}

#[test]
fn a_wider_margin_turns_a_small_difference_equivalent() {
    let mut runs = Vec::new();
    for r in 0..5 {
        let j = [1.0, 1.005, 0.995, 1.002, 0.998][r];
        runs.push(run("host", r, 100.0 * j, 0.0));
        runs.push(run("vm", r, 96.0 * j, 0.0));
    }
    let outcome = |margin: f64| {
        let s = VerdictSettings {
            margin,
            ..VerdictSettings::default()
        };
        let a = analyze(&comparison_row(), &runs, &s);
        a.entries[0].metrics[0].per_env[1]
            .vs_baseline
            .as_ref()
            .unwrap()
            .outcome
    };
    assert_eq!(outcome(0.02), Outcome::Slower);
    assert_eq!(outcome(0.10), Outcome::Equivalent);
}

/// A memory sweep over block size × threads, the vm 2× slower at 2
/// threads only.
fn grid_runs() -> Vec<RunRow> {
    let mut runs = Vec::new();
    let mut entry = 0;
    for threads in [1, 2] {
        for block in ["1K", "4K"] {
            for r in 0..4 {
                for (env, speed) in [("host", 1.0), ("vm", if threads == 2 { 0.5 } else { 1.0 })] {
                    let mut row = run(env, r, 100.0 * speed * (1.0 + 0.001 * r as f64), 0.0);
                    row.entry = entry;
                    row.label = format!("memory threads={threads} block={block}");
                    let doc = row.doc.as_mut().unwrap();
                    doc.workload = "memory".into();
                    doc.params = serde_json::json!({"threads": threads, "memory_block_size": block, "memory_oper": "write"})
                        .as_object()
                        .unwrap()
                        .clone();
                    doc.metrics = vec![Metric::new(
                        "mib_per_sec",
                        100.0 * speed * (1.0 + 0.001 * r as f64),
                        "MiB/s",
                        true,
                    )];
                    runs.push(row);
                }
            }
            entry += 1;
        }
    }
    runs
}

#[test]
fn sweeps_become_lines_and_a_grid_a_heat_map() {
    let a = analyze(&comparison_row(), &grid_runs(), &VerdictSettings::default());
    assert_eq!(a.entries.len(), 4);
    // threads is numeric: one line chart per block size.
    let lines = sweeps::one_way(&a);
    assert_eq!(
        lines.len(),
        2,
        "{:?}",
        lines.iter().map(|l| &l.1).collect::<Vec<_>>()
    );
    assert!(lines
        .iter()
        .all(|(w, k, g)| w == "memory" && k == "threads" && g.len() == 2));
    // Block size × threads is a full 2 × 2 grid.
    let grids = sweeps::two_way(&a);
    assert_eq!(grids.len(), 1);
    let g = &grids[0];
    assert_eq!((g.xs.len(), g.ys.len(), g.entries.len()), (2, 2, 4));
    let d = document(&a, View::default());
    let heat: Vec<&model::Figure> = d
        .figures()
        .into_iter()
        .filter(|f| matches!(f.kind, model::FigureKind::Heat { .. }))
        .collect();
    assert_eq!(heat.len(), 1, "one heat map, for the vm");
    let model::FigureKind::Heat { cells, xs, ys, .. } = &heat[0].kind else {
        unreachable!()
    };
    for (xi, yi, v, _) in cells {
        let threads = if g.xkey == "threads" {
            &xs[*xi]
        } else {
            &ys[*yi]
        };
        let want = if threads == "2" { 2.0 } else { 1.0 };
        assert!((v - want).abs() < 0.01, "threads {threads}: {v}");
    }
    // The overview: memory only, 2 of 4 metrics slower.
    let areas = sections::area_slowdowns(&a);
    assert_eq!(areas.len(), 1);
    assert_eq!(areas[0].area, crate::workload::Area::Memory);
    assert_eq!(areas[0].verdicts[0], 2, "{:?}", areas[0]);
    assert!(
        (areas[0].point - 2f64.sqrt()).abs() < 0.01,
        "{:?}",
        areas[0]
    );
}

#[test]
fn csv_is_pinned() {
    let csv = exporter("csv").unwrap().render(&fixture(), View::default());
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].contains(",p_welch,p_welch_holm,p_rank,p_rank_holm,"));
    assert_eq!(
        lines[1],
        "7,0,cpu,cpu,events_per_sec,events/s,true,true,host,5,100,100,0.7071067811865476,0.007071067811865475,99,101,99.12201096691491,100.87798903308509,,,,,,,,,,,,baseline,,false"
    );
    assert!(lines[2].starts_with("7,0,cpu,cpu,events_per_sec,events/s,true,true,vm,5,50,50,"));
    assert!(lines[2].ends_with(",false,slower,,true"), "{}", lines[2]);
    let col = |i: usize| -> f64 { lines[2].split(',').nth(i).unwrap().parse().unwrap() };
    assert!((col(18) - 0.5).abs() < 0.001, "ratio {}", col(18));
    assert!((col(21) - 50.0).abs() < 0.1, "overhead {}", col(21));
    assert!(col(23) < 1e-6, "Welch p {}", col(23));
    // Tied values: the rank test's normal approximation.
    assert!((col(25) - 0.0102).abs() < 0.0005, "rank p {}", col(25));
}

#[test]
fn markdown_puts_the_headline_summary_first() {
    let md = exporter("markdown")
        .unwrap()
        .render(&fixture(), View::default());
    assert!(md.starts_with("# virtperf comparison #7\n"));
    let summary = md.find("## Headline summary").unwrap();
    assert!(
        md.contains(
            "| cpu | vm | events_per_sec | 0.500× \\[0.491, 0.509\\] | 50.0% overhead | slower ⚑ |"
        ),
        "{md}"
    );
    assert!(md.contains("Headline verdicts: 1 slower."), "{md}");
    assert!(!md.contains("## Every metric"));
    assert!(md.find("## Flagged runs").unwrap() > summary);
    assert!(
        md.contains("1 run flagged:\n\n- steal: 1 run (vm 1), median 9.0%"),
        "{md}"
    );
    let long = exporter("markdown")
        .unwrap()
        .render(&fixture(), View { detail: true });
    assert!(
        long.contains("- ⚑ vm / cpu / round 3: steal 9.0%"),
        "{long}"
    );
    assert!(
        long.contains(
            "| events_per_sec (events/s) | host | 5 | 100.0 | \\[99.1, 100.9\\] | 0.7% |"
        ),
        "{long}"
    );
}

#[test]
fn a_guests_error_never_reaches_the_terminal_raw() {
    // Issue 14, item 11: a failed run's error text comes from a guest.
    let mut runs = fixture_runs();
    runs[3].doc = None;
    runs[3].error = Some("boom\x1b]0;owned\x07\x1b[2J\r\u{202e}".into());
    let a = analyze(&comparison_row(), &runs, &VerdictSettings::default());
    for format in ["table", "markdown"] {
        let out = exporter(format).unwrap().render(&a, View::default());
        assert!(out.contains("boom"), "{format}: {out}");
        assert!(
            !out.contains(['\x1b', '\x07', '\r', '\u{202e}']),
            "{format}: {out:?}"
        );
    }
}

#[test]
fn flags_are_summarised_by_kind_with_counts_per_environment() {
    use crate::analysis::{Flag, FlagKind};
    let mut a = fixture();
    a.flags.clear();
    let flag = |env: &str, round, kind, pct, reason: &str| Flag {
        env: env.into(),
        label: "cpu".into(),
        round,
        kind,
        pct,
        reason: reason.into(),
    };
    a.flags.push(flag("host", 0, FlagKind::Load, 20.0, "load"));
    a.flags.push(flag("vm", 0, FlagKind::Load, 40.0, "load"));
    a.flags.push(flag("vm", 1, FlagKind::Load, 90.0, "load"));
    a.flags.push(flag("vm", 1, FlagKind::Multimodal, 0.0, "a"));
    a.flags.push(flag("vm", 1, FlagKind::Multimodal, 0.0, "b"));
    let lines = flag_summary(&a);
    assert_eq!(
        lines,
        [
            "3 runs flagged:",
            "other processes' load: 3 runs (host 1, vm 2), median 40.0%, up to 90.0% of the CPUs",
            "multimodal timings: 2 parts in 1 run (vm 1); a part measured two faces of the machine",
        ],
    );
    a.flags.truncate(2);
    assert!(
        flag_summary(&a)[1].contains("median 30.0%"),
        "{:?}",
        flag_summary(&a)
    );
}

#[test]
fn every_format_flags_noisy_runs() {
    let a = fixture();
    let v = View::default();
    assert!(exporter("table")
        .unwrap()
        .render(&a, v)
        .contains("steal: 1 run (vm 1), median 9.0%, up to 9.0% of the CPUs"));
    assert!(exporter("table")
        .unwrap()
        .render(&a, View { detail: true })
        .contains("vm / cpu / round 3: steal 9.0%"));
    assert!(exporter("table")
        .unwrap()
        .render(&a, v)
        .contains("slower ⚑"));
    assert!(exporter("html")
        .unwrap()
        .render(&a, v)
        .contains("steal 9.0%"));
    assert!(exporter("json")
        .unwrap()
        .render(&a, v)
        .contains("steal 9.0%"));
    assert!(exporter("csv").unwrap().render(&a, v).contains(",true"));
}
