//! The crate's layering, checked from the source: every `crate::` path in a
//! module names a layer below it (the order is at the top of `src/lib.rs`),
//! `stats` imports nothing of the crate, `cli` is imported by nobody, and
//! outside a workload's folder no code matches on a workload's name or
//! names a metric.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Layers from the bottom; modules on one line are peers and may not import
/// each other.
const LAYERS: &[&[&str]] = &[
    &["core"],
    &["stats", "sys"],
    &["engine"],
    &["workload"],
    &["agent", "suite", "import"],
    &["env"],
    &["store"],
    &["analysis"],
    &["report"],
    &["compare"],
    &["cli"],
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to, and its code before the tests.
fn modules() -> Vec<(String, PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let rel = path.strip_prefix(&src).unwrap();
            let first = rel.components().next()?.as_os_str().to_str()?.to_string();
            let module = first.trim_end_matches(".rs").to_string();
            if module == "main" || module == "lib" {
                return None;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = match text.find("#[cfg(test)]") {
                Some(i) => text[..i].to_string(),
                None => text,
            };
            Some((module, path, code))
        })
        .collect()
}

/// Every `crate::NAME` in `code`, with its line number.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((n + 1, name));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn every_import_goes_down() {
    let mut wrong = Vec::new();
    for (module, path, code) in modules() {
        let own = rank(&module)
            .unwrap_or_else(|| panic!("{}: module '{module}' is in no layer", path.display()));
        for (line, used) in crate_paths(&code) {
            if used == module {
                continue;
            }
            match rank(&used) {
                None => wrong.push(format!(
                    "{}:{line}: crate::{used} is in no layer",
                    path.display()
                )),
                Some(r) if r >= own => wrong.push(format!(
                    "{}:{line}: {module} uses crate::{used}, which is {} it",
                    path.display(),
                    if r == own { "beside" } else { "above" }
                )),
                Some(_) if module == "stats" => wrong.push(format!(
                    "{}:{line}: stats is pure and uses crate::{used}",
                    path.display()
                )),
                Some(_) => {}
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_layer_list_matches_lib_rs() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let mut declared: Vec<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    declared.sort();
    let mut layered: Vec<String> = LAYERS
        .iter()
        .flat_map(|l| l.iter())
        .filter(|m| **m != "import")
        .map(|m| m.to_string())
        .collect();
    layered.sort();
    assert_eq!(
        declared, layered,
        "src/lib.rs's modules and the layer list differ"
    );
    for layer in LAYERS.iter().flat_map(|l| l.iter()) {
        if *layer != "import" {
            assert!(
                lib.contains(&format!("//! {layer} ")),
                "{layer} missing from lib.rs's doc"
            );
        }
    }
}

#[test]
fn nothing_outside_a_workload_matches_on_its_name_or_metrics() {
    let names = [
        "cpu", "memory", "threads", "mutex", "microops", "fileio", "disk",
    ];
    let mut wrong = Vec::new();
    let mut by_file: BTreeMap<String, usize> = BTreeMap::new();
    for (module, path, code) in modules() {
        let rel = path.to_string_lossy().to_string();
        for &name in &names {
            // A workload's own folder (the eight oltp_* tests live in oltp/).
            let folder = name.split('_').next().unwrap_or(name);
            if rel.contains(&format!("src/workload/{folder}")) {
                continue;
            }
            for pattern in [
                format!("\"{name}\" =>"),
                format!("== \"{name}\""),
                format!("\"{name}\" |"),
            ] {
                if code.contains(&pattern) {
                    wrong.push(format!("{rel}: matches on workload name: {pattern}"));
                }
            }
        }
        if module != "workload" {
            for needle in ["_per_sec\"", "_ns\"", "_cycles\"", "\"gflops\"", "_mbit"] {
                let hits = code.matches(needle).count();
                if hits > 0 {
                    *by_file.entry(format!("{rel}: {needle}")).or_default() += hits;
                }
            }
        }
    }
    wrong.extend(
        by_file
            .into_iter()
            .map(|(k, n)| format!("{k} ({n}×): names a metric")),
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
