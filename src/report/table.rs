//! The terminal report: the document's text and tables, aligned for a
//! fixed-width font; figures and tables too wide for a terminal are left
//! to the HTML page, and what it folds is shown with `--detail`.

use std::fmt::Write as _;

use crate::report::format::Layout;
use crate::report::model::{self, Block, Document, Table};

pub struct TableExporter;

impl Layout for TableExporter {
    fn name(&self) -> &'static str {
        "table"
    }

    fn render(&self, d: &Document) -> String {
        text(d)
    }
}

/// The whole document as terminal text. Labels and errors come from users
/// and guests: printed to a terminal, they are never escape sequences.
fn text(d: &Document) -> String {
    let mut out = format!("{}\n", d.title);
    for p in &d.intro {
        let _ = writeln!(out, "{}", wrap(p, 100, ""));
    }
    for s in d.sections.iter().filter(|s| s.terminal) {
        if !s.blocks.iter().any(Block::has_text) {
            continue;
        }
        let mut body = String::new();
        blocks(&mut body, &s.blocks);
        if s.level <= 2 && s.title.starts_with("Host ") {
            let _ = writeln!(out, "\n=== {} ===", s.title);
        } else if s.level <= 2 {
            let _ = writeln!(out, "\n{}:", s.title);
        } else {
            let _ = writeln!(out, "\n== {} ==", s.title);
        }
        out.push_str(&body);
    }
    crate::core::text::terminal_safe(&out, usize::MAX)
}

fn blocks(out: &mut String, bs: &[Block]) {
    for b in model::text_blocks(bs) {
        match b {
            Block::Para(t) | Block::Note(t) | Block::TextHint(t) if !t.is_empty() => {
                let _ = writeln!(out, "{}", wrap(t, 98, "  "));
            }
            Block::Warning(t) => {
                let _ = writeln!(
                    out,
                    "{}",
                    wrap(&format!("⚠ {}", t.trim_start_matches("⚠ ")), 98, "  ")
                );
            }
            Block::List(items) => {
                for i in items {
                    let _ = writeln!(out, "{}", wrap(i, 96, "    ").replacen("    ", "  - ", 1));
                }
            }
            Block::Table(t) => table(out, t),
            _ => {}
        }
    }
}

/// Columns as wide as their widest cell (at most the column's `max`),
/// numbers right-aligned; grouped rows under their group's line.
fn table(out: &mut String, t: &Table) {
    let cell = |c: &str, i: usize| {
        let max = t.columns[i].max;
        if max > 0 {
            truncate(c, max)
        } else {
            c.to_string()
        }
    };
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            r.cells
                .iter()
                .enumerate()
                .map(|(i, c)| cell(&c.text, i))
                .collect()
        })
        .collect();
    let width: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .fold(c.name.chars().count(), usize::max)
        })
        .collect();
    let line = |cells: Vec<&str>| -> String {
        let last = cells.len().saturating_sub(1);
        let mut s = String::from("  ");
        for (i, c) in cells.iter().enumerate() {
            let pad = width[i].saturating_sub(c.chars().count());
            if t.columns[i].numeric {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i < last {
                    s.push_str(&" ".repeat(pad));
                }
            }
            if i < last {
                s.push_str("  ");
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(
        out,
        "{}",
        line(t.columns.iter().map(|c| c.name.as_str()).collect())
    );
    let mut last: Option<&str> = None;
    for (r, cells) in t.rows.iter().zip(&rows) {
        if t.group.is_some() && last != Some(r.group.as_str()) {
            let _ = writeln!(out, "{}", r.group);
            last = Some(&r.group);
        }
        let _ = writeln!(out, "{}", line(cells.iter().map(String::as_str).collect()));
    }
}

/// Breaks a paragraph into lines of at most `width` characters, each
/// starting with `indent`.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::from(indent);
    let mut line = 0;
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > width {
            out.push('\n');
            out.push_str(indent);
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
