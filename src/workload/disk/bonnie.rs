//! bonnie++'s CSV line read back as runs of `disk` (`virtperf import`):
//! the 1.97 format (48 fields: format version, bonnie version, name,
//! concurrency, seed, file size, chunk size, then six rate/%CPU pairs —
//! putc, put_block, rewrite, getc, get_block, seeks — the file tests'
//! number of files, max and min size, directories and chunk, six more
//! pairs — sequential create, stat, delete, random create, stat, delete —
//! and the twelve latencies in the same orders) and 1.98's, which bonnie++
//! 1.98 to 2.00 write (50 fields: the number of seeks and of seeking
//! processes after the chunk size). Each CSV line is one run (`-x N`
//! writes N); the human table bonnie++ prints beside it is skipped.
//! `+++++` (a test too quick to measure) leaves that figure out. The file
//! size, chunk size and number of files (in 1024s) choose the entry; the
//! seek count and processes do not (bonnie++ 2.00 seeks 8192 times with 5
//! processes, virtperf's disk 8000 with 3 by default), and are kept in the
//! run's details.

use super::DEF;
use crate::core::units::Bytes;
use crate::workload::import::{lines, Format, Imported, Refusal, MAX_RUNS};

pub const BONNIE: Format = Format {
    kind: "bonnie",
    tool: "bonnie++",
    summary: "bonnie++'s CSV line, 1.97 or 1.98 format (bonnie++ 1.97 to 2.00, latency columns included); each line one run",
    detect: |text| text.lines().take(200).any(|l| layout(l).is_some()),
    parse,
};

/// Where a format's fields are: the block tests' first rate, the file
/// tests' number of files, their first rate, and the first latency.
struct Layout {
    fields: usize,
    io: usize,
    files: usize,
    file_io: usize,
    latency: usize,
    seeks: Option<usize>,
}

const V197: Layout = Layout {
    fields: 48,
    io: 7,
    files: 19,
    file_io: 24,
    latency: 36,
    seeks: None,
};
const V198: Layout = Layout {
    fields: 50,
    io: 9,
    files: 21,
    file_io: 26,
    latency: 38,
    seeks: Some(7),
};

/// A line's layout, if it is one of bonnie++'s CSV lines.
fn layout(line: &str) -> Option<&'static Layout> {
    let mut f = line.split(',');
    let format = f.next()?;
    if !format.starts_with("1.9") || format.len() > 6 {
        return None;
    }
    match line.trim_end().split(',').count() {
        48 => Some(&V197),
        50 => Some(&V198),
        _ => None,
    }
}

const IO: [(&str, &str); 6] = [
    ("putc", "putc_kib_per_sec"),
    ("put_block", "put_block_kib_per_sec"),
    ("rewrite", "rewrite_kib_per_sec"),
    ("getc", "getc_kib_per_sec"),
    ("get_block", "get_block_kib_per_sec"),
    ("seeks", "seeks_per_sec"),
];
const FILES: [&str; 6] = [
    "seq_create",
    "seq_stat",
    "seq_delete",
    "rnd_create",
    "rnd_stat",
    "rnd_delete",
];

/// A latency as bonnie++ writes it ("20772us", "4086ms", "2s") in ms.
fn latency_ms(text: &str) -> Option<f64> {
    let t = text.trim();
    let (digits, scale) = if let Some(d) = t.strip_suffix("us") {
        (d, 1e-3)
    } else if let Some(d) = t.strip_suffix("ms") {
        (d, 1.0)
    } else if let Some(d) = t.strip_suffix('s') {
        (d, 1e3)
    } else {
        return None;
    };
    digits
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(|x| x * scale)
}

fn parse(text: &str, _sub: Option<&str>) -> Result<Vec<Imported>, Refusal> {
    let mut runs = Vec::new();
    for (n, l) in lines(text)? {
        let first = l.split(',').next().unwrap_or("");
        if !first.starts_with("1.9") || !l.contains(',') {
            continue; // bonnie++'s table, a header line
        }
        let Some(layout) = layout(l) else {
            return Err(Refusal::new(
                n,
                "bonnie++'s CSV line with 48 fields (format 1.97) or 50 (format 1.98)",
                l,
            ));
        };
        if runs.len() >= MAX_RUNS {
            return Err(Refusal::new(n, format!("at most {MAX_RUNS} CSV lines"), l));
        }
        runs.push(line(n, l, layout)?);
    }
    if runs.is_empty() {
        let (n, l) = lines(text)?.last().copied().unwrap_or((0, ""));
        return Err(Refusal::new(
            n,
            "a bonnie++ CSV line ('1.98,2.00a,host,1,...') before the end of the file",
            l,
        ));
    }
    Ok(runs)
}

fn line(n: usize, text: &str, layout: &Layout) -> Result<Imported, Refusal> {
    let f: Vec<&str> = text.trim_end().split(',').map(str::trim).collect();
    debug_assert_eq!(f.len(), layout.fields);
    let mut imp = Imported::new(&DEF, "bonnie++", &f[1].chars().take(20).collect::<String>());
    imp.host = f[2].chars().take(80).collect();
    sizes(n, &f, layout, &mut imp)?;
    let number = |i: usize| -> Result<Option<f64>, Refusal> {
        let v = f[i];
        if v.is_empty() || v.chars().all(|c| c == '+') {
            return Ok(None);
        }
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .map(Some)
            .ok_or_else(|| {
                Refusal::new(
                    n,
                    format!("field {}: a number, '+++++' or nothing", i + 1),
                    v,
                )
            })
    };
    let mut skipped = Vec::new();
    for (k, (test, metric)) in IO.iter().enumerate() {
        let at = layout.io + 2 * k;
        match number(at)? {
            Some(rate) if test.ends_with('c') => imp.own(metric, rate, "KiB/s", true),
            Some(rate) => {
                imp.declared(metric, rate);
            }
            None => skipped.push(*test),
        }
        if let Some(cpu) = number(at + 1)? {
            imp.own(&format!("{test}_cpu_pct"), cpu, "%", false);
        }
        if let Some(ms) = latency_ms(f[layout.latency + k]) {
            let name = format!("{test}_latency_max_ms");
            if test.ends_with('c') {
                imp.own(&name, ms, "ms", false);
            } else {
                imp.declared(&name, ms);
            }
        }
    }
    for (k, test) in FILES.iter().enumerate() {
        let at = layout.file_io + 2 * k;
        match number(at)? {
            Some(rate) => {
                imp.declared(&format!("{test}_per_sec"), rate);
            }
            None => skipped.push(*test),
        }
        if let Some(cpu) = number(at + 1)? {
            imp.own(&format!("{test}_cpu_pct"), cpu, "%", false);
        }
        if let Some(ms) = latency_ms(f[layout.latency + 6 + k]) {
            imp.declared(&format!("{test}_latency_max_ms"), ms);
        }
    }
    let mut details = serde_json::json!({
        "format": f[0],
        "concurrency": f[3],
        "seed": f[4],
        "too_quick_to_measure": skipped,
    });
    if let Some(s) = layout.seeks {
        details["seeks"] = f[s].into();
        details["seek_procs"] = f[s + 1].into();
    }
    imp.details = details;
    Ok(imp)
}

/// The run's options from line `n`'s fields `f`: the file size, the chunk
/// size and the number of files.
fn sizes(n: usize, f: &[&str], layout: &Layout, imp: &mut Imported) -> Result<(), Refusal> {
    let size = f[5].split(':').next().unwrap_or("");
    let bytes = Bytes::parse(size)
        .ok()
        .filter(|b| b.0 >= 1 << 20)
        .ok_or_else(|| Refusal::new(n, "field 6, the file size (e.g. 2G or 4096M)", size))?;
    imp.option("disk-file-size", bytes.0);
    if !f[6].is_empty() {
        let chunk = Bytes::parse(f[6])
            .ok()
            .filter(|b| b.0 >= 512)
            .ok_or_else(|| Refusal::new(n, "field 7, the chunk size (e.g. 8k)", f[6]))?;
        imp.option("disk-chunk-size", chunk.0);
    }
    let files = f[layout.files];
    let thousands = if files.is_empty() {
        0.0
    } else {
        files
            .parse::<f64>()
            .ok()
            .filter(|x| *x >= 0.0 && x.fract() == 0.0)
            .ok_or_else(|| {
                Refusal::new(
                    n,
                    format!("field {}, the number of files (in 1024s)", layout.files + 1),
                    files,
                )
            })?
    };
    imp.option("disk-files", thousands);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_read_and_quick_tests_are_left_out() {
        let v198 = "1.98,2.00a,vm,1,1795657904,64M,,8192,5,984,91,2000,50,+++++,+++,1361,91,90000,20,300.5,10,1,,,,,+++++,+++,+++++,+++,+++++,+++,+++++,+++,+++++,+++,+++++,+++,20772us,72us,4086us,10532us,4081us,24106us,4298us,87us,4123us,4559us,10us,4262us";
        assert!((BONNIE.detect)(v198));
        let r = &parse(v198, None).unwrap()[0];
        let m = |n: &str| r.metrics.iter().find(|m| m.name == n).map(|m| m.value);
        assert_eq!(m("put_block_kib_per_sec"), Some(2000.0));
        assert_eq!(m("rewrite_kib_per_sec"), None);
        assert_eq!(m("get_block_kib_per_sec"), Some(90000.0));
        assert_eq!(m("seeks_per_sec"), Some(300.5));
        assert_eq!(m("get_block_latency_max_ms"), Some(4.081));
        assert_eq!(m("putc_kib_per_sec"), Some(984.0));
        assert!(r
            .options
            .contains(&("disk-file-size".into(), (64u64 << 20).to_string())));
        assert!(r.options.contains(&("disk-files".into(), "1".into())));
        let v197 = "1.97,1.97,box,1,1300000000,2G,8k,500,95,60000,10,30000,5,2000,90,120000,8,250.0,3,16,,,,,3000,20,+++++,+++,4000,15,3100,21,+++++,+++,3900,14,15000us,900ms,1200ms,9000us,80ms,300ms,200us,300us,400us,500us,600us,700us";
        let r = &parse(v197, None).unwrap()[0];
        assert_eq!(
            r.metrics
                .iter()
                .find(|m| m.name == "rewrite_latency_max_ms")
                .unwrap()
                .value,
            1200.0
        );
        assert!(r
            .options
            .contains(&("disk-chunk-size".into(), "8192".into())));
        let bad = v198.replace(",2000,", ",fast,");
        let err = parse(&bad, None).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.expected.contains("field 12"), "{err}");
        assert!(parse("1.98,2.00a,short\n", None)
            .unwrap_err()
            .expected
            .contains("48 fields"));
    }
}
