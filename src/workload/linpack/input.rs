//! Intel's `lininput` data file, read line by line as seed 001 prints it:
//! a title, a subtitle, the number of tests, then one line each of problem
//! sizes, leading dimensions, trials and alignments (KiB); `#` starts a
//! comment. An error names the line and what it should hold. `Test` is one
//! column of that table, wherever a run's tests come from.

/// One line of Intel's parameter table: a size, run `trials` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Test {
    pub size: usize,
    pub lda: usize,
    pub trials: usize,
    /// Alignment of the matrix's first element, in KiB (0: none).
    pub align_kib: usize,
}

impl Test {
    /// Bytes a trial holds at once: the matrix, its alignment slack, and
    /// the O(N) vectors (b/x, pivots, residual scratch).
    pub fn bytes(&self) -> u64 {
        let elements = super::solve::Matrix::elements(self.size, self.lda, self.align_kib * 1024);
        8 * elements as u64 + 64 * self.size as u64
    }
}

/// A parsed data file.
#[derive(Debug, Clone, PartialEq)]
pub struct InputFile {
    pub title: String,
    pub subtitle: String,
    pub tests: Vec<Test>,
    /// What the file left implicit: trials or alignment lines shorter than
    /// the number of tests (seed 001's first file has 9 sizes, 8 trials).
    pub notes: Vec<String>,
}

/// What each numbered line holds, for error messages.
const LINES: [&str; 5] = [
    "the problem sizes",
    "the leading dimensions",
    "the trials per size",
    "the alignments in KiB",
    "",
];

/// Parses a `lininput` text; `origin` (the file name) prefixes errors.
pub fn parse(text: &str, origin: &str) -> Result<InputFile, String> {
    let lines: Vec<&str> = text.lines().collect();
    let line = |i: usize| lines.get(i).copied();
    let err = |i: usize, msg: String| format!("{origin}, line {}: {msg}", i + 1);
    let (Some(title), Some(subtitle)) = (line(0), line(1)) else {
        return Err(err(
            lines.len(),
            "ends early: a lininput file starts with a title line and a subtitle line".into(),
        ));
    };
    let count = numbers(line(2), 2, "the number of tests")
        .map_err(|m| err(2, m))
        .and_then(|v| match v.as_slice() {
            [n] if *n >= 1 => Ok(*n as usize),
            _ => Err(err(
                2,
                "expected the number of tests, one whole number ≥ 1".into(),
            )),
        })?;
    let mut lists = Vec::new();
    for (k, what) in LINES.iter().take(4).enumerate() {
        let i = 3 + k;
        let v = numbers(line(i), i, what).map_err(|m| err(i, m))?;
        if v.len() > count {
            return Err(err(
                i,
                format!(
                    "{} values of {what} for {count} tests (line 3); give {count}",
                    v.len()
                ),
            ));
        }
        lists.push(v);
    }
    let mut notes = Vec::new();
    for k in 0..2 {
        if lists[k].len() < count {
            return Err(err(
                3 + k,
                format!(
                    "{} values of {} for {count} tests (line 3); give {count}",
                    lists[k].len(),
                    LINES[k]
                ),
            ));
        }
    }
    for k in 2..4 {
        let given = lists[k].len();
        if given == 0 {
            return Err(err(
                3 + k,
                format!("expected {} ({count} whole numbers)", LINES[k]),
            ));
        }
        if given < count {
            // Intel's own samples are not always complete here; the last
            // value carries on, and the output says so.
            let last = lists[k][given - 1];
            notes.push(format!(
                "line {}: {given} values of {} for {count} tests; the last, {last}, also applies to the remaining {}",
                3 + k + 1,
                LINES[k],
                count - given
            ));
            lists[k].resize(count, last);
        }
    }
    let mut tests = Vec::with_capacity(count);
    let rows = lists[0].iter().zip(&lists[1]).zip(&lists[2]).zip(&lists[3]);
    for (t, (((&size, &lda), &trials), &align)) in rows.enumerate() {
        if size == 0 {
            return Err(err(3, format!("problem size {} is 0", t + 1)));
        }
        if lda < size {
            return Err(err(
                4,
                format!("leading dimension {lda} is smaller than its problem size {size}"),
            ));
        }
        if trials == 0 {
            return Err(err(5, format!("test {} runs 0 trials", t + 1)));
        }
        tests.push(Test {
            size: size as usize,
            lda: lda as usize,
            trials: trials as usize,
            align_kib: align as usize,
        });
    }
    Ok(InputFile {
        title: title.trim().to_string(),
        subtitle: subtitle.trim().to_string(),
        tests,
        notes,
    })
}

/// The whole numbers of a line before its `#` comment.
fn numbers(line: Option<&str>, index: usize, what: &str) -> Result<Vec<u64>, String> {
    let Some(line) = line else {
        return Err(format!(
            "the file ends here; line {} should hold {what}",
            index + 1
        ));
    };
    let body = line.split_once('#').map_or(line, |(b, _)| b);
    body.split_whitespace()
        .map(|tok| {
            tok.parse::<u64>()
                .map_err(|_| format!("'{tok}' is not a whole number; this line holds {what}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 001's three files, as printed there.
    const HARDWARE: &str = include_str!("../../../tests/fixtures/linpack/lininput_hardware");
    const TWO_VMS: &str = include_str!("../../../tests/fixtures/linpack/lininput_2vms");
    const FOUR_VMS: &str = include_str!("../../../tests/fixtures/linpack/lininput_4vms");

    fn sizes(f: &InputFile) -> Vec<(usize, usize, usize, usize)> {
        f.tests
            .iter()
            .map(|t| (t.size, t.lda, t.trials, t.align_kib))
            .collect()
    }

    #[test]
    fn reads_the_seeds_hardware_file_with_its_short_lines() {
        let f = parse(HARDWARE, "hw").unwrap();
        assert_eq!(
            f.title,
            "Sample Intel(R) LINPACK data file (lininput_xeon32)"
        );
        assert_eq!(f.subtitle, "Intel(R) LINPACK data");
        assert_eq!(
            sizes(&f),
            [
                (15000, 15000, 1, 4),
                (14000, 14008, 2, 4),
                (13000, 13000, 2, 4),
                (12000, 12008, 2, 4),
                (11000, 11000, 2, 4),
                (10000, 10008, 2, 4),
                (8000, 8008, 3, 4),
                (6000, 6008, 4, 4),
                // 8 trials and 8 alignments for 9 tests: the last carries on.
                (1000, 1000, 4, 4),
            ]
        );
        assert_eq!(f.notes.len(), 2, "{:?}", f.notes);
        assert!(f.notes[0].starts_with("line 6:"), "{:?}", f.notes);
    }

    #[test]
    fn reads_the_seeds_vm_files() {
        let two = parse(TWO_VMS, "2").unwrap();
        assert_eq!(
            sizes(&two),
            [
                (10000, 10008, 2, 4),
                (8000, 8008, 2, 4),
                (6000, 6008, 3, 4),
                (1000, 1000, 4, 4)
            ]
        );
        assert!(two.notes.is_empty());
        let four = parse(FOUR_VMS, "4").unwrap();
        assert_eq!(
            sizes(&four),
            [(7500, 7508, 3, 4), (4000, 4008, 3, 4), (1000, 1000, 4, 4)]
        );
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("t\ns\n", "line 3"),
            ("t\ns\nx # number of tests\n", "line 3"),
            ("t\ns\n2\n1000 2000\n1000 # lda\n1 1\n4 4\n", "line 5"),
            ("t\ns\n2\n1000 2000\n1000 1999\n1 1\n4 4\n", "line 5"),
            ("t\ns\n1\n1000 2000\n1000\n1\n4\n", "line 4"),
            ("t\ns\n1\n1000\n1000\n1\n", "line 7"),
            ("t\ns\n1\n1000\n1000\n1\nfour\n", "line 7"),
            ("t\ns\n1\n100O\n1000\n1\n4\n", "line 4"),
            ("t\n", "line 2"),
        ];
        for (text, line) in cases {
            let e = parse(text, "f").unwrap_err();
            assert!(e.starts_with(&format!("f, {line}:")), "{text:?}: {e}");
        }
    }
}
