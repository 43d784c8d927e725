//! Seed 002's three questions, answered from the figures of its suite's
//! matrix (suites/seed002-qemu-docker.toml: QEMU and Docker each at 2 GiB
//! and 2 CPUs, 1 GiB and 2 CPUs, 2 GiB and 1 CPU): what memory changes at
//! 2 CPUs, what CPUs change at 2 GiB, and QEMU against Docker. Each answer
//! compares two configurations row by row (each one's ratio to the
//! baseline, divided), says whether their intervals against the baseline
//! part, and puts beside it where their host CPU per event differed.
//! Shown only with that suite, as seed 001's categories are with its own.

use crate::analysis::account::PLACES;
use crate::analysis::{Analysis, HeadlineRow};
use crate::report::model::{Block, Cell, Column, Row, Section, Table, Tone, View};
use crate::report::text::{num, ratio_num, slowdown};

/// The built-in suite of seed 002's study, whose report this is.
const SEED002_SUITE: &str = "seed002";

/// A configuration of the matrix, read from its environment's name as the
/// suite gives it: `<kind>-<memory>g-<cpus>cpu` ("qemu-1g-2cpu").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Config<'a> {
    kind: &'a str,
    gib: u32,
    cpus: u32,
}

fn config(env: &str) -> Option<Config<'_>> {
    let mut parts = env.rsplitn(3, '-');
    let cpus = parts.next()?.strip_suffix("cpu")?.parse().ok()?;
    let gib = parts.next()?.strip_suffix('g')?.parse().ok()?;
    let kind = parts.next()?;
    Some(Config { kind, gib, cpus })
}

/// The two kinds the study compares.
const KINDS: [&str; 2] = ["qemu", "docker"];

/// One question: its title, and the pairs of configurations it compares
/// (the one asked about, the one it is against), per kind.
struct Question {
    title: &'static str,
    pairs: Vec<(Config<'static>, Config<'static>)>,
}

fn questions() -> Vec<Question> {
    let at = |kind, gib, cpus| Config { kind, gib, cpus };
    vec![
        Question {
            title: "The effect of memory at 2 CPUs: 1 GiB against 2 GiB",
            pairs: KINDS.iter().map(|k| (at(k, 1, 2), at(k, 2, 2))).collect(),
        },
        Question {
            title: "The effect of CPUs at 2 GiB: 1 CPU against 2",
            pairs: KINDS.iter().map(|k| (at(k, 2, 1), at(k, 2, 2))).collect(),
        },
        Question {
            title: "QEMU against Docker, at each configuration",
            pairs: [(2, 2), (1, 2), (2, 1)]
                .iter()
                .map(|&(g, c)| (at("qemu", g, c), at("docker", g, c)))
                .collect(),
        },
    ]
}

/// The section, with seed 002's suite.
pub(super) fn build(a: &Analysis, _view: View) -> Vec<Section> {
    if !a.suite.starts_with(SEED002_SUITE) {
        return Vec::new();
    }
    let mut blocks = vec![Block::Note(format!(
        "Seed 002 asked three questions of its matrix (QEMU and Docker at 2 GiB/2 CPUs, 1 GiB/2 CPUs and 2 GiB/1 CPU). Each row compares two configurations: the factor is the first's slowdown against {} divided by the second's (above 1× the first is slower); they differ when their 95% intervals against {} do not overlap. Beside it, each one's host CPU per event and the place where it differed most.",
        a.baseline, a.baseline
    ))];
    let rows = a.headline_rows();
    for q in questions() {
        let mut lines = Vec::new();
        let mut table_rows = Vec::new();
        for (x, y) in &q.pairs {
            let (Some(ex), Some(ey)) = (env_of(a, x), env_of(a, y)) else {
                lines.push(format!(
                    "{} against {}: not in this comparison.",
                    name(x),
                    name(y)
                ));
                continue;
            };
            let answers = answer(a, &rows, ex, ey);
            lines.push(summary(ex, ey, &answers));
            table_rows.extend(answers.into_iter().map(|r| r.row(ex, ey)));
        }
        blocks.push(Block::Para(format!("{}.", q.title)));
        blocks.push(Block::List(lines));
        if !table_rows.is_empty() {
            blocks.push(Block::Table(Table {
                group: Some("compared"),
                columns: vec![
                    Column::text("row", 40),
                    Column::num("factor"),
                    Column::text("verdict", 0),
                    Column::text("explanation", 0),
                ],
                rows: table_rows,
            }));
        }
    }
    vec![Section::new("seed002", "Seed 002's questions", blocks)]
}

fn name(c: &Config) -> String {
    format!("{}-{}g-{}cpu", c.kind, c.gib, c.cpus)
}

/// The comparison's environment of a configuration.
fn env_of<'a>(a: &'a Analysis, c: &Config) -> Option<&'a str> {
    a.envs
        .iter()
        .map(String::as_str)
        .find(|e| config(e).is_some_and(|e| e == *c))
}

/// One headline row answered for a pair of environments.
struct Answer {
    entry: String,
    metric: String,
    /// The first's slowdown over the second's.
    factor: f64,
    /// "slower", "faster" or "no difference shown".
    verdict: &'static str,
    why: String,
}

impl Answer {
    fn row(self, x: &str, y: &str) -> Row {
        let tone = match self.verdict {
            "slower" => Tone::Slower,
            "faster" => Tone::Faster,
            _ => Tone::Muted,
        };
        Row {
            group: format!("{x} against {y}"),
            cells: vec![
                Cell::from(format!("{} {}", self.entry, self.metric)),
                Cell::from(format!("{}×", ratio_num(self.factor))),
                Cell::toned(self.verdict.into(), tone),
                Cell::from(self.why),
            ],
            flagged: false,
        }
    }
}

/// Every headline row both environments have, compared.
fn answer(a: &Analysis, rows: &[HeadlineRow], x: &str, y: &str) -> Vec<Answer> {
    let mut out = Vec::new();
    for rx in rows.iter().filter(|r| r.stat.env == x) {
        let Some(ry) = rows.iter().find(|r| {
            r.stat.env == y && r.entry.label == rx.entry.label && r.metric.name == rx.metric.name
        }) else {
            continue;
        };
        let (Some(vx), Some(vy)) = (&rx.stat.vs_baseline, &ry.stat.vs_baseline) else {
            continue;
        };
        let (px, lx, ux) = slowdown(rx.metric.higher_is_better, vx);
        let (py, ly, uy) = slowdown(ry.metric.higher_is_better, vy);
        let verdict = if lx > uy {
            "slower"
        } else if ux < ly {
            "faster"
        } else {
            "no difference shown"
        };
        out.push(Answer {
            entry: rx.entry.label.clone(),
            metric: rx.metric.name.clone(),
            factor: px / py,
            verdict,
            why: explanation(a, &rx.entry.label, x, y),
        });
    }
    out
}

/// "x 412 µs, y 20.1 µs of host CPU per event; most of the difference:
/// QEMU's threads other than its vCPUs (+380 µs)", from the breakdowns.
fn explanation(a: &Analysis, label: &str, x: &str, y: &str) -> String {
    let parts = |env: &str| -> Option<Vec<(String, f64)>> {
        if env == a.baseline {
            return a
                .breakdowns
                .iter()
                .find(|b| b.label == label)
                .map(|b| b.baseline.clone());
        }
        a.breakdowns
            .iter()
            .find(|b| b.label == label && b.env == env)
            .map(|b| b.places.clone())
    };
    let (Some(px), Some(py)) = (parts(x), parts(y)) else {
        return "not accounted for".into();
    };
    let total = |p: &[(String, f64)]| p.iter().map(|(_, v)| v).sum::<f64>();
    let at = |p: &[(String, f64)], place: &str| {
        p.iter().find(|(q, _)| q == place).map_or(0.0, |(_, v)| *v)
    };
    let most = PLACES
        .iter()
        .map(|(place, what)| (what, at(&px, place) - at(&py, place)))
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()));
    let head = format!(
        "host CPU per event {x} {} µs, {y} {} µs",
        num(total(&px)),
        num(total(&py))
    );
    match most {
        Some((what, d)) if d != 0.0 => format!(
            "{head}; most of the difference: {what} ({}{} µs)",
            if d > 0.0 { "+" } else { "" },
            num(d)
        ),
        _ => head,
    }
}

/// One pair's answer in a sentence: how many rows differ, and which.
fn summary(x: &str, y: &str, answers: &[Answer]) -> String {
    if answers.is_empty() {
        return format!("{x} against {y}: no headline row both have a ratio for.");
    }
    let differ: Vec<String> = answers
        .iter()
        .filter(|r| r.verdict != "no difference shown")
        .map(|r| {
            format!(
                "{} {} {}× ({})",
                r.entry,
                r.metric,
                ratio_num(r.factor),
                r.verdict
            )
        })
        .collect();
    if differ.is_empty() {
        format!(
            "{x} against {y}: no difference shown in any of {} rows.",
            answers.len()
        )
    } else {
        format!(
            "{x} against {y}: {} of {} rows differ: {}.",
            differ.len(),
            answers.len(),
            differ.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_are_read_from_the_suites_names() {
        assert_eq!(
            config("qemu-1g-2cpu"),
            Some(Config {
                kind: "qemu",
                gib: 1,
                cpus: 2
            })
        );
        assert_eq!(
            config("my-docker-2g-1cpu").map(|c| c.kind),
            Some("my-docker")
        );
        assert_eq!(config("host"), None);
        assert_eq!(config("qemu-2g"), None);
        assert_eq!(config("qemu-xg-2cpu"), None);
    }
}
