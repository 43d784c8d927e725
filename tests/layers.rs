//! The crate's layering, checked from the source: every `crate::` path in a
//! module names a layer below it (the order is at the top of `src/lib.rs`),
//! `stats` imports nothing of the crate, `cli` is imported by nobody, the
//! files of one folder do not import each other in a cycle, outside a
//! workload's folder no code matches on a workload's name or names a
//! metric, and outside `env` none matches on a driver's name. Workload and
//! driver names come from the registries.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use virtperf::env::DRIVERS;
use virtperf::workload::WORKLOADS;

/// Layers from the bottom; modules on one line are peers and may not import
/// each other.
const LAYERS: &[&[&str]] = &[
    &["core"],
    &["stats", "sys"],
    &["engine"],
    &["workload"],
    &["agent", "suite"],
    &["env"],
    &["store"],
    &["analysis"],
    &["report"],
    &["compare", "import"],
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
        .map(|m| m.to_string())
        .collect();
    layered.sort();
    assert_eq!(
        declared, layered,
        "src/lib.rs's modules and the layer list differ"
    );
    for layer in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(
            lib.contains(&format!("//! {layer} ")),
            "{layer} missing from lib.rs's doc"
        );
    }
}

/// The ways code matches on a name.
fn matches_on(name: &str) -> [String; 3] {
    [
        format!("\"{name}\" =>"),
        format!("== \"{name}\""),
        format!("\"{name}\" |"),
    ]
}

#[test]
fn nothing_outside_a_workload_matches_on_its_name_or_metrics() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/workload");
    let mut wrong = Vec::new();
    // A workload's own file or folder: its name up to the first '_' (the
    // eight oltp_* tests live in oltp/).
    let folders: Vec<(&str, String)> = WORKLOADS
        .iter()
        .map(|w| (w.name, w.name.split('_').next().unwrap().to_string()))
        .collect();
    for (name, folder) in &folders {
        if !src.join(folder).is_dir() && !src.join(format!("{folder}.rs")).is_file() {
            wrong.push(format!("workload {name}: no src/workload/{folder}(.rs)"));
        }
    }
    let mut by_file: BTreeMap<String, usize> = BTreeMap::new();
    for (module, path, code) in modules() {
        let rel = path.to_string_lossy().to_string();
        for (name, folder) in &folders {
            if rel.contains(&format!("src/workload/{folder}")) {
                continue;
            }
            for pattern in matches_on(name) {
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

#[test]
fn nothing_outside_env_matches_on_a_driver_name() {
    let mut wrong = Vec::new();
    for (module, path, code) in modules() {
        if module == "env" {
            continue;
        }
        for driver in DRIVERS {
            for pattern in matches_on(driver.name) {
                if code.contains(&pattern) {
                    wrong.push(format!(
                        "{}: matches on driver name: {pattern}",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The paths a file's code names, as module paths from the crate root:
/// those its `use` declarations import (braces expanded; `self`, `super`
/// and `crate` resolved against `here`, the file's own module path, and a
/// path starting with one of its `children` read as relative), then every
/// `crate::` or `super::` path in the rest of its code. Paths of other
/// crates are left out.
fn named_paths(
    code: &str,
    here: &[String],
    children: &BTreeSet<String>,
) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut imported = Vec::new();
    let mut rest = code.as_str();
    let mut outside_uses = String::new();
    while let Some(i) = find_use(rest) {
        outside_uses.push_str(&rest[..i]);
        let after = &rest[i..];
        let end = after.find(';').unwrap_or(after.len());
        let tokens = tokenize(&after["use".len()..end]);
        expand(&tokens, &mut 0, &[], &mut imported);
        rest = &after[end..];
    }
    outside_uses.push_str(rest);
    let mut inline = Vec::new();
    for anchor in ["crate::", "super::"] {
        for (i, _) in outside_uses.match_indices(anchor) {
            let before = outside_uses[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = outside_uses[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            inline.push(
                path.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            );
        }
    }
    let resolve_all = |paths: Vec<Vec<String>>| -> Vec<Vec<String>> {
        paths
            .into_iter()
            .filter_map(|p| resolve(&p, here, children))
            .collect()
    };
    (resolve_all(imported), resolve_all(inline))
}

/// Where the next `use` statement starts in `code`.
fn find_use(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = code[from..].find("use ") {
        let at = from + i;
        let before = code[..at].trim_end_matches([' ', '\t']);
        if before.is_empty()
            || before.ends_with(['\n', ';', '{', '}', ')', ']'])
            || before.ends_with("pub")
        {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// The words and the `{ } , *` of a use tree; `::` only separates words.
fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if matches!(c, '{' | '}' | ',' | '*') {
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Expands one use tree from `tokens[*at..]` under `prefix` into `out`.
fn expand(tokens: &[String], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    // `{self, ...}` names the prefix itself.
    let mut named_self = false;
    while *at < tokens.len() {
        let t = tokens[*at].as_str();
        *at += 1;
        match t {
            "{" => {
                loop {
                    expand(tokens, at, &path, out);
                    match tokens.get(*at).map(String::as_str) {
                        Some(",") => *at += 1,
                        Some("}") => {
                            *at += 1;
                            break;
                        }
                        _ => break,
                    }
                }
                return;
            }
            "," | "}" => {
                *at -= 1;
                break;
            }
            "*" => {}
            "as" => {
                // The alias names nothing new to resolve.
                *at += 1;
            }
            "self" if !prefix.is_empty() && path.len() == prefix.len() => named_self = true,
            word => path.push(word.to_string()),
        }
    }
    if path.len() > prefix.len() || named_self {
        out.push(path);
    }
}

/// A path as written in the module `here` (whose child modules are
/// `children`), from the crate root; None for another crate's path (std,
/// anyhow) or a name of the module's own.
fn resolve(path: &[String], here: &[String], children: &BTreeSet<String>) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" => Some(rest.to_vec()),
        "self" => Some(here.iter().chain(rest).cloned().collect()),
        "super" => {
            let mut base = here.to_vec();
            base.pop();
            let mut rest = rest;
            while let Some(("super", more)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
                base.pop();
                rest = more;
            }
            Some(base.into_iter().chain(rest.iter().cloned()).collect())
        }
        child if children.contains(child) => Some(here.iter().chain(path).cloned().collect()),
        _ => None,
    }
}

/// A module's path from the crate root, for a file under `src`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

/// Cycles among the files of one folder: for each folder below `src`, its
/// files (a subfolder counts as one) and which of the others each imports.
/// The folder's `mod.rs` is left out, as the root that declares and
/// re-exports the others; a name it re-exports counts as its file's.
#[test]
fn no_folder_imports_its_own_files_in_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files: Vec<(Vec<String>, String)> = modules()
        .into_iter()
        .map(|(_, path, code)| (module_path(path.strip_prefix(&src).unwrap()), code))
        .collect();
    let folders: BTreeSet<Vec<String>> = modules()
        .into_iter()
        .filter_map(|(_, path, _)| {
            let rel = path.strip_prefix(&src).unwrap().parent()?.to_path_buf();
            (!rel.as_os_str().is_empty()).then(|| module_path(&rel))
        })
        .collect();
    let mut cycles = Vec::new();
    for folder in &folders {
        let depth = folder.len();
        // The member of `folder` a module path falls in, if any.
        let member = |m: &[String]| -> Option<String> {
            (m.len() > depth && m[..depth] == folder[..]).then(|| m[depth].clone())
        };
        let root_code = files
            .iter()
            .find(|(m, _)| m == folder)
            .map(|(_, c)| c.as_str())
            .unwrap_or("");
        let members: BTreeSet<String> = files.iter().filter_map(|(m, _)| member(m)).collect();
        // Names the folder's root imports from one of its members: its
        // members see them as `super::NAME`.
        let mut reexported: BTreeMap<String, String> = BTreeMap::new();
        for path in named_paths(root_code, folder, &members).0 {
            if let (Some(m), Some(last)) = (member(&path), path.last()) {
                if path.len() > depth + 1 {
                    reexported.insert(last.clone(), m);
                }
            }
        }
        let none = BTreeSet::new();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (m, code) in &files {
            let Some(from) = member(m) else { continue };
            let (imported, inline) = named_paths(code, m, &none);
            for path in imported.into_iter().chain(inline) {
                let to = match member(&path) {
                    Some(to) if members.contains(&to) => Some(to),
                    Some(name) => reexported.get(&name).cloned(),
                    None => None,
                };
                if let Some(to) = to.filter(|to| *to != from) {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
        for tangle in tangles(&edges) {
            let at = format!("src/{}", folder.join("/"));
            let files: Vec<&str> = tangle.iter().map(String::as_str).collect();
            let inside = edges
                .iter()
                .filter(|(f, _)| tangle.contains(*f))
                .map(|(f, to)| (f.clone(), to & &tangle))
                .collect();
            let cycle = find_cycle(&inside).unwrap_or_default();
            cycles.push(format!(
                "{at}: {} (the tangle: {})",
                cycle.join(" -> "),
                files.join(", ")
            ));
        }
    }
    assert!(
        cycles.is_empty(),
        "files of one folder import each other in a cycle:\n{}",
        cycles.join("\n")
    );
}

/// The groups of two or more nodes that all reach each other (the strongly
/// connected components with a cycle), each sorted.
fn tangles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for next in edges.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|n| (n, reach(n))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for (n, from_n) in &reached {
        if out.iter().any(|t| t.contains(*n)) {
            continue;
        }
        let tangle: BTreeSet<String> = from_n
            .iter()
            .filter(|m| reached.get(m).is_some_and(|r| r.contains(*n)))
            .cloned()
            .collect();
        if tangle.len() > 1 {
            out.push(tangle);
        }
    }
    out
}

/// One cycle in a directed graph, as the nodes along it (first repeated
/// at the end).
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

#[test]
fn the_cycle_check_reads_paths_as_rust_does() {
    let here: Vec<String> = ["workload", "net", "client"].map(String::from).to_vec();
    let (imported, inline) = named_paths(
        "use super::sock::{self, Buffers};\n\
         pub(crate) use crate::engine::{rng::FastRng, Histogram as H};\n\
         use std::io;\n\
         use tcp::Stream;\n\
         fn f() { super::super::cpu::run(); }\n",
        &here,
        &BTreeSet::from(["tcp".to_string()]),
    );
    let paths = |ps: &[&[&str]]| -> Vec<Vec<String>> {
        ps.iter()
            .map(|p| p.iter().map(|s| s.to_string()).collect())
            .collect()
    };
    assert_eq!(
        imported,
        paths(&[
            &["workload", "net", "sock"],
            &["workload", "net", "sock", "Buffers"],
            &["engine", "rng", "FastRng"],
            &["engine", "Histogram"],
            &["workload", "net", "client", "tcp", "Stream"],
        ])
    );
    assert_eq!(inline, paths(&[&["workload", "cpu", "run"]]));
    let edges: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a")]
        .iter()
        .map(|(f, t)| (f.to_string(), BTreeSet::from([t.to_string()])))
        .collect();
    assert_eq!(find_cycle(&edges).unwrap(), ["a", "b", "c", "a"]);
    let mut edges = edges;
    edges.insert("d".into(), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        tangles(&edges),
        [BTreeSet::from(["a", "b", "c"].map(String::from))]
    );
}
