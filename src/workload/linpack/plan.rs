//! Which tests a LINPACK run performs: from the option lists, from a
//! `lininput` file, or from the memory seen (`--linpack-sizes=auto`), and
//! the refusal of a size whose matrix does not fit, before any allocation.

use crate::core::options::{CliError, Values};
use crate::core::units::Bytes;

use super::input::{self, Test};

/// The share of the environment's memory a matrix may take: the rest is for
/// the kernel, page cache, the binary and (in a VM) the guest's own needs.
pub const USABLE: f64 = 0.8;

/// The tests of a run, and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub tests: Vec<Test>,
    /// The input file's title and subtitle, if one was read.
    pub title: Option<(String, String)>,
    /// Things the input left implicit, printed before the table.
    pub notes: Vec<String>,
}

/// Sizes seed 001 used across its input files; `auto` picks from these.
const LADDER: &[usize] = &[1000, 2000, 4000, 6000, 8000, 10000, 15000];

/// The share of memory the largest `auto` size may take: seed 001 ran
/// N = 15000 (1.7 GiB) on hosts and 1-VM guests, 10000 with 2 VMs and
/// 7500 with 4, scaling the problem with the memory each guest had.
const AUTO_SHARE: f64 = 0.25;

fn invalid(name: &str, value: &str, allowed: impl Into<String>) -> CliError {
    CliError::InvalidValue {
        name: name.into(),
        value: value.into(),
        allowed: allowed.into(),
    }
}

/// A comma list of whole numbers in `min..=max`.
fn list(values: &Values, name: &str, min: u64, max: u64) -> Result<Vec<usize>, CliError> {
    let raw = values.text(name);
    raw.split(',')
        .map(|tok| {
            tok.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .map(|n| n as usize)
                .ok_or_else(|| {
                    invalid(
                        name,
                        raw,
                        format!("a comma-separated list of whole numbers from {min} to {max}"),
                    )
                })
        })
        .collect()
}

/// A list of one value (for every size) or one per size.
fn per_size(
    values: &Values,
    name: &str,
    count: usize,
    min: u64,
    max: u64,
) -> Result<Vec<usize>, CliError> {
    let v = list(values, name, min, max)?;
    match v.len() {
        1 => Ok(vec![v[0]; count]),
        n if n == count => Ok(v),
        n => Err(invalid(
            name,
            values.text(name),
            format!("one value for every size, or one per size ({count} sizes, {n} values)"),
        )),
    }
}

/// Builds the plan from validated options; `memory` is the environment's
/// memory limit in bytes (`None`: unknown, nothing is refused).
pub fn from_values(values: &Values, memory: Option<u64>) -> Result<Plan, CliError> {
    let file = values.text("linpack-input");
    let explicit = [
        "linpack-sizes",
        "linpack-lda",
        "linpack-trials",
        "linpack-align",
    ]
    .into_iter()
    .find(|n| values.was_given(n));
    let plan = if !file.is_empty() {
        if let Some(name) = explicit {
            return Err(CliError::Usage(format!(
                "--linpack-input and --{name} both say what to run: give the file or the lists, not both"
            )));
        }
        let text = std::fs::read_to_string(file).map_err(|e| {
            invalid(
                "linpack-input",
                file,
                format!("a readable lininput file ({e})"),
            )
        })?;
        let parsed = input::parse(&text, file).map_err(|msg| {
            CliError::Usage(format!(
                "--linpack-input: {msg}. The format is Intel's lininput: a title line, a subtitle line, the number of tests, then one line each of sizes, leading dimensions, trials and alignments (KiB)"
            ))
        })?;
        Plan {
            tests: parsed.tests,
            title: Some((parsed.title, parsed.subtitle)),
            notes: parsed.notes,
        }
    } else if values.text("linpack-sizes") == "auto" {
        auto_plan(values, memory)?
    } else {
        let sizes = list(values, "linpack-sizes", 1, 1_000_000)?;
        let lda = if values.text("linpack-lda").is_empty() {
            sizes.clone()
        } else {
            per_size(values, "linpack-lda", sizes.len(), 1, 10_000_000)?
        };
        if let Some((n, l)) = sizes.iter().zip(&lda).find(|(n, l)| l < n) {
            return Err(invalid(
                "linpack-lda",
                values.text("linpack-lda"),
                format!("a leading dimension at least its size ({l} < {n})"),
            ));
        }
        let trials = per_size(values, "linpack-trials", sizes.len(), 1, 1000)?;
        let align = per_size(values, "linpack-align", sizes.len(), 0, 1024)?;
        Plan {
            tests: (0..sizes.len())
                .map(|i| Test {
                    size: sizes[i],
                    lda: lda[i],
                    trials: trials[i],
                    align_kib: align[i],
                })
                .collect(),
            title: None,
            notes: Vec::new(),
        }
    };
    if let Some(memory) = memory {
        check_fit(&plan.tests, memory)?;
    }
    Ok(plan)
}

/// `--linpack-sizes=auto`: sizes for `memory` (the environment's, which
/// must be known), each LDA padded as seed 001's, trials and alignments per
/// size.
fn auto_plan(values: &Values, memory: Option<u64>) -> Result<Plan, CliError> {
    if values.was_given("linpack-lda") {
        return Err(invalid(
            "linpack-lda",
            values.text("linpack-lda"),
            "nothing with --linpack-sizes=auto, which sets each LDA itself",
        ));
    }
    let Some(memory) = memory else {
        return Err(invalid(
            "linpack-sizes",
            "auto",
            "explicit sizes here: this environment's memory could not be read",
        ));
    };
    let sizes = auto_sizes(memory);
    let trials = per_size(values, "linpack-trials", sizes.len(), 1, 1000)?;
    let align = per_size(values, "linpack-align", sizes.len(), 0, 1024)?;
    Ok(Plan {
        tests: sizes
            .iter()
            .zip(trials.iter().zip(&align))
            .map(|(&size, (&trials, &align_kib))| Test {
                size,
                // Seed 001 padded larger sizes' LDA by 8 elements, off a
                // power of two, as Intel's samples do.
                lda: if size >= 2000 { size + 8 } else { size },
                trials,
                align_kib,
            })
            .collect(),
        title: None,
        notes: vec![format!(
            "--linpack-sizes=auto: sizes for {} of memory",
            Bytes(memory)
        )],
    })
}

/// The largest N whose N×N matrix (LDA = N, 4 KiB aligned) fits in
/// `budget` bytes.
pub fn largest_fitting(budget: u64) -> usize {
    let mut n = ((budget as f64 / 8.0).sqrt()) as usize;
    let fits = |n: usize| {
        Test {
            size: n,
            lda: n,
            trials: 1,
            align_kib: 4,
        }
        .bytes()
            <= budget
    };
    while n > 0 && !fits(n) {
        n -= 1;
    }
    n
}

/// Refuses the first test whose matrix does not fit in `USABLE` of `memory`.
pub fn check_fit(tests: &[Test], memory: u64) -> Result<(), CliError> {
    let budget = (memory as f64 * USABLE) as u64;
    if let Some(t) = tests.iter().find(|t| t.bytes() > budget) {
        return Err(CliError::Usage(format!(
            "LINPACK size {} (LDA {}) needs {} but this environment has {} of memory, of which {:.0}% ({}) may hold the matrix; the largest size that fits is {}. Give smaller --linpack-sizes, or --linpack-sizes=auto",
            t.size,
            t.lda,
            Bytes(t.bytes()),
            Bytes(memory),
            USABLE * 100.0,
            Bytes(budget),
            largest_fitting(budget)
        )));
    }
    Ok(())
}

/// Sizes for `--linpack-sizes=auto`: the three largest of seed 001's sizes
/// whose matrix takes at most `AUTO_SHARE` of memory, and 1000, largest
/// first as in its files.
pub fn auto_sizes(memory: u64) -> Vec<usize> {
    let cap = (memory as f64 * AUTO_SHARE) as u64;
    let fit = |n: usize| 8 * (n as u64) * (n as u64 + 8) <= cap;
    let mut sizes: Vec<usize> = LADDER
        .iter()
        .rev()
        .copied()
        .filter(|&n| n > 1000 && fit(n))
        .take(3)
        .collect();
    if fit(1000) {
        sizes.push(1000);
    } else {
        // Below 32 MiB of memory: one size that does fit, for the record.
        sizes.push(largest_fitting(cap).max(1));
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::options::{parse, OptionSpec};

    fn values(args: &[&str]) -> Values {
        let tables: &[&[OptionSpec]] = &[super::super::OPTIONS];
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse(tables, &args, "linpack").unwrap().0
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn lists_broadcast_one_value_and_pair_the_rest() {
        let p = from_values(
            &values(&[
                "--linpack-sizes=100,200",
                "--linpack-lda=104,200",
                "--linpack-trials=3",
            ]),
            Some(GIB),
        )
        .unwrap();
        assert_eq!(
            p.tests,
            [
                Test {
                    size: 100,
                    lda: 104,
                    trials: 3,
                    align_kib: 4
                },
                Test {
                    size: 200,
                    lda: 200,
                    trials: 3,
                    align_kib: 4
                }
            ]
        );
    }

    #[test]
    fn bad_lists_name_their_option() {
        for (args, option) in [
            (vec!["--linpack-sizes=100,x"], "--linpack-sizes"),
            (vec!["--linpack-sizes=0"], "--linpack-sizes"),
            (
                vec!["--linpack-sizes=100,200", "--linpack-trials=1,2,3"],
                "--linpack-trials",
            ),
            (
                vec!["--linpack-sizes=100", "--linpack-lda=99"],
                "--linpack-lda",
            ),
            (vec!["--linpack-align=4096"], "--linpack-align"),
            (
                vec!["--linpack-sizes=auto", "--linpack-lda=5000"],
                "--linpack-lda",
            ),
            (
                vec!["--linpack-input=/nonexistent/lininput"],
                "--linpack-input",
            ),
            (
                vec!["--linpack-input=/x", "--linpack-sizes=100"],
                "--linpack-sizes",
            ),
        ] {
            let e = from_values(&values(&args), Some(GIB)).unwrap_err();
            assert!(e.to_string().contains(option), "{args:?}: {e}");
        }
    }

    #[test]
    fn sizes_that_do_not_fit_are_refused_naming_the_largest_that_does() {
        // 1 GiB: 80% is 858993459 bytes, and 8·N² fits up to N = 10362.
        let budget = (GIB as f64 * USABLE) as u64;
        let largest = largest_fitting(budget);
        assert!((10300..10363).contains(&largest), "{largest}");
        let big = Test {
            size: largest + 1,
            lda: largest + 1,
            trials: 1,
            align_kib: 4,
        };
        assert!(big.bytes() > budget);
        let e = from_values(&values(&["--linpack-sizes=1000,11000"]), Some(GIB)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("size 11000"), "{msg}");
        assert!(
            msg.contains(&format!("largest size that fits is {largest}")),
            "{msg}"
        );
        // A leading dimension counts too.
        let e = from_values(
            &values(&["--linpack-sizes=10000", "--linpack-lda=20000"]),
            Some(GIB),
        )
        .unwrap_err();
        assert!(e.to_string().contains("LDA 20000"), "{e}");
        assert!(from_values(&values(&["--linpack-sizes=10000"]), Some(GIB)).is_ok());
    }

    #[test]
    fn auto_scales_with_memory_like_the_seeds_files() {
        assert_eq!(auto_sizes(24 * GIB), [15000, 10000, 8000, 1000]);
        assert_eq!(auto_sizes(2 * GIB), [8000, 6000, 4000, 1000]);
        assert_eq!(auto_sizes(512 << 20), [4000, 2000, 1000]);
        let tiny = auto_sizes(16 << 20);
        assert_eq!(tiny.len(), 1);
        assert!(tiny[0] < 1000 && 8 * tiny[0] * tiny[0] <= 4 << 20);
        let p = from_values(&values(&["--linpack-sizes=auto"]), Some(2 * GIB)).unwrap();
        assert_eq!(p.tests[0].lda, 8008);
        assert_eq!(p.tests[3].lda, 1000);
    }
}
