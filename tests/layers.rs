//! The crate's layering, checked from the source: every `crate::` path in a
//! module names a layer below it (the order is the table at the top of
//! `src/lib.rs`, its one source; ARCHITECTURE.md's copy is checked against
//! it), `stats` imports nothing of the crate, `cli` is imported by nobody,
//! the files of one folder do not import each other in a cycle, outside a
//! workload's folder no code matches on a workload's name or names a
//! metric, and outside `env` none matches on a driver's name. Workload and
//! driver names come from the registries. Every check reads a file's
//! production code: all of it but its `#[cfg(test)] mod` blocks (and the
//! files such a `mod NAME;` declares); a test-only item outside them is read
//! as production.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use virtperf::env::DRIVERS;
use virtperf::workload::WORKLOADS;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// The first ```text block after `heading` in `doc`, each line's `prefix`
/// (`//! ` in lib.rs) removed.
fn text_block(doc: &str, heading: &str, prefix: &str) -> Vec<String> {
    let lines: Vec<&str> = doc
        .lines()
        .map(|l| {
            l.strip_prefix(prefix)
                .or_else(|| l.strip_prefix(prefix.trim_end()))
                .unwrap_or(l)
        })
        .collect();
    let from = lines
        .iter()
        .position(|l| l.starts_with(heading))
        .unwrap_or_else(|| panic!("no '{heading}'"));
    let open = from
        + lines[from..]
            .iter()
            .position(|l| *l == "```text")
            .expect("a ```text block");
    lines[open + 1..]
        .iter()
        .take_while(|l| **l != "```")
        .map(|l| l.to_string())
        .collect()
}

/// The layer table of `src/lib.rs`'s doc, its one source.
fn lib_table() -> Vec<String> {
    text_block(&read("src/lib.rs"), "Layers, from the bottom", "//! ")
}

/// Layers from the bottom, read from the table: a module per line, and a
/// line saying `(peer of NAME)` shares its layer with NAME's line, next
/// to it. Peers may not import each other.
fn layers() -> &'static [Vec<String>] {
    static LAYERS: OnceLock<Vec<Vec<String>>> = OnceLock::new();
    LAYERS.get_or_init(|| parse_layers(&lib_table()))
}

fn parse_layers(table: &[String]) -> Vec<Vec<String>> {
    let peer_of = |line: &str| -> Option<String> {
        let at = line.rfind("(peer of ")?;
        Some(
            line[at + "(peer of ".len()..]
                .trim_end_matches(')')
                .to_string(),
        )
    };
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut previous: Option<&String> = None;
    for line in table {
        let module = line
            .split_whitespace()
            .next()
            .expect("a module")
            .to_string();
        let joins = previous.is_some_and(|p| {
            peer_of(p).as_deref() == Some(module.as_str())
                || peer_of(line) == Some(p.split_whitespace().next().unwrap().to_string())
        });
        match out.last_mut() {
            Some(layer) if joins => layer.push(module),
            _ => out.push(vec![module]),
        }
        previous = Some(line);
    }
    out
}

fn rank(module: &str) -> Option<usize> {
    layers().iter().position(|l| l.iter().any(|m| m == module))
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

/// The top-level module of each file under `src` (but main.rs and lib.rs),
/// with its path and its production code.
fn modules() -> Vec<(String, PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            (path, text)
        })
        .collect();
    // Files a `#[cfg(test)] mod NAME;` declares are tests.
    let mut test_files = BTreeSet::new();
    for (path, text) in &texts {
        let dir = match path.file_stem().and_then(|s| s.to_str()) {
            Some("mod" | "lib" | "main") => path.parent().unwrap().to_path_buf(),
            _ => path.with_extension(""),
        };
        for name in production(text).1 {
            test_files.insert(dir.join(format!("{name}.rs")));
            test_files.insert(dir.join(&name).join("mod.rs"));
        }
    }
    texts
        .into_iter()
        .filter(|(path, _)| {
            !test_files
                .iter()
                .any(|t| path.starts_with(t.with_extension("")))
                && !test_files.contains(path)
        })
        .filter_map(|(path, text)| {
            let rel = path.strip_prefix(&src).unwrap();
            let first = rel.components().next()?.as_os_str().to_str()?.to_string();
            let module = first.trim_end_matches(".rs").to_string();
            if module == "main" || module == "lib" {
                return None;
            }
            Some((module, path, production(&text).0))
        })
        .collect()
}

/// Which bytes of Rust source `text` are code: not inside a comment, a
/// string or a character literal.
fn code_mask(text: &str) -> Vec<bool> {
    let b = text.as_bytes();
    let mut mask = vec![true; b.len()];
    let mut i = 0;
    while i < b.len() {
        match not_code(text, i) {
            Some(end) => {
                let end = end.min(b.len());
                mask[i..end].iter_mut().for_each(|m| *m = false);
                i = end;
            }
            None => i += 1,
        }
    }
    mask
}

/// Where the comment, string or character literal starting at byte `i` of
/// `text` ends; None if none starts there.
fn not_code(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let rest = &b[i..];
    let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let find = |from: usize, what: &[u8]| -> usize {
        b[from..]
            .windows(what.len())
            .position(|w| w == what)
            .map_or(b.len(), |p| from + p + what.len())
    };
    if rest.starts_with(b"//") {
        return Some(find(i, b"\n"));
    }
    if rest.starts_with(b"/*") {
        let (mut depth, mut j) = (0, i);
        while j < b.len() {
            if b[j..].starts_with(b"/*") {
                depth += 1;
                j += 2;
            } else if b[j..].starts_with(b"*/") {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    break;
                }
            } else {
                j += 1;
            }
        }
        return Some(j);
    }
    let raw = rest.strip_prefix(b"b").unwrap_or(rest);
    if !ident_before && raw.starts_with(b"r") {
        let hashes = raw[1..].iter().take_while(|&&c| c == b'#').count();
        if raw.get(1 + hashes) == Some(&b'"') {
            let body = i + (rest.len() - raw.len()) + 1 + hashes + 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            return Some(find(body, &close));
        }
    }
    match rest[0] {
        b'"' => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            Some(j + 1)
        }
        // A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
        b'\'' => {
            let close = if rest.get(1) == Some(&b'\\') {
                i + 2 + rest[2..].iter().position(|&c| c == b'\'')?
            } else {
                i + 1 + text[i + 1..].chars().next()?.len_utf8()
            };
            (b.get(close) == Some(&b'\'')).then_some(close + 1)
        }
        _ => None,
    }
}

/// `text` with its `#[cfg(test)] mod NAME { ... }` blocks blanked (their
/// lines kept empty, so line numbers hold), and the NAMEs of the
/// `#[cfg(test)] mod NAME;` declarations it has.
fn production(text: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mask = code_mask(text);
    let mut out = text.as_bytes().to_vec();
    let mut declared = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(MARK).map(|i| from + i) {
        from = at + MARK.len();
        if !mask[at] {
            continue;
        }
        // Other attributes and the visibility between the mark and `mod`.
        let mut j = from;
        loop {
            j += text[j..].len() - text[j..].trim_start().len();
            if text[j..].starts_with("#[") {
                j += text[j..].find(']').unwrap() + 1;
            } else if let Some(v) = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .find(|v| text[j..].starts_with(**v))
            {
                j += v.len();
            } else {
                break;
            }
        }
        let Some(after) = text[j..].strip_prefix("mod ") else {
            continue;
        };
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let k = j + "mod ".len() + name.len();
        let k = k + text[k..].len() - text[k..].trim_start().len();
        if text[k..].starts_with(';') {
            declared.push(name);
            continue;
        }
        assert!(
            text[k..].starts_with('{'),
            "#[cfg(test)] mod {name} without a body"
        );
        let mut depth = 0;
        let mut end = k;
        for (n, c) in text.bytes().enumerate().skip(k) {
            if !mask[n] {
                continue;
            }
            match c {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = n + 1;
                break;
            }
        }
        assert!(depth == 0, "#[cfg(test)] mod {name}: no closing brace");
        for byte in &mut out[at..end] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
        from = end;
    }
    (String::from_utf8(out).unwrap(), declared)
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
fn the_layer_table_names_each_module_of_lib_rs_once() {
    let mut declared: Vec<String> = read("src/lib.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    declared.sort();
    let mut layered: Vec<String> = layers().iter().flatten().cloned().collect();
    layered.sort();
    assert_eq!(
        declared, layered,
        "src/lib.rs's modules and its layer table differ"
    );
    // The order the rest of this file relies on.
    assert_eq!(layers()[0], ["core"]);
    assert_eq!(layers()[1], ["stats", "sys"]);
    assert_eq!(layers().last().unwrap(), &["cli"]);
}

#[test]
fn architecture_md_shows_lib_rs_layer_table() {
    let doc = text_block(&read("ARCHITECTURE.md"), "## Layers", "");
    assert_eq!(
        doc.join("\n"),
        lib_table().join("\n"),
        "ARCHITECTURE.md's layer table differs from src/lib.rs's (the one source): copy it over"
    );
}

#[test]
fn peers_share_a_layer() {
    let table: Vec<String> = [
        "a  bottom",
        "b  one   (peer of c)",
        "c  two",
        "d  three",
        "e  four  (peer of d)",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        parse_layers(&table),
        [vec!["a"], vec!["b", "c"], vec!["d", "e"]]
    );
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

#[test]
fn only_test_modules_are_left_out() {
    let text = "use crate::a;\n\
                #[cfg(test)]\n\
                fn helper() { crate::b::f() }\n\
                /* #[cfg(test)] mod c { */\n\
                #[cfg(test)]\n\
                #[allow(unused)]\n\
                pub(crate) mod tests {\n\
                    use crate::c;\n\
                    const S: &str = \"}\";\n\
                    const R: &str = r#\"}\"\"#;\n\
                    const C: char = '}';\n\
                    fn f<'a>(x: &'a str) -> &'a str { /* } */ x } // }\n\
                }\n\
                fn after() { crate::d::g() }\n\
                #[cfg(test)]\n\
                mod more;\n";
    let (code, declared) = production(text);
    assert_eq!(code.lines().count(), text.lines().count());
    let named: Vec<String> = crate_paths(&code).into_iter().map(|(_, n)| n).collect();
    assert_eq!(named, ["a", "b", "d"]);
    assert_eq!(declared, ["more"]);
}
