//! Markdown, for an issue or a wiki: the document's text and pipe tables
//! (figures are the HTML page's, or `--figures`' files); what HTML folds
//! is shown with `--detail`.

use std::fmt::Write as _;

use crate::report::format::Layout;
use crate::report::model::{self, Block, Document, Table};

pub struct MarkdownExporter;

/// Escapes text for a Markdown table cell: no table breaks, no HTML, no
/// code spans, links or images, and no control characters.
fn cell(s: &str) -> String {
    let s = s
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "\\`")
        .replace('[', "\\[")
        .replace(']', "\\]")
        .replace('!', "\\!")
        .replace(['\n', '\r'], " ");
    crate::core::text::one_line(&s, usize::MAX)
}

impl Layout for MarkdownExporter {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn render(&self, d: &Document) -> String {
        markdown(d)
    }
}

fn markdown(d: &Document) -> String {
    let mut out = format!("# {}\n", cell(&d.title));
    for p in &d.intro {
        let _ = writeln!(out, "\n{}", cell(p));
    }
    for s in &d.sections {
        if !s.blocks.iter().any(Block::has_text) {
            continue;
        }
        let mut body = String::new();
        blocks(&mut body, &s.blocks);
        let _ = writeln!(out, "\n{} {}", "#".repeat(s.level as usize), cell(&s.title));
        out.push_str(&body);
    }
    out
}

fn blocks(out: &mut String, bs: &[Block]) {
    for b in model::text_blocks(bs) {
        match b {
            Block::Para(t) | Block::Note(t) | Block::TextHint(t) if !t.is_empty() => {
                let _ = writeln!(out, "\n{}", cell(t));
            }
            Block::Warning(t) => {
                let _ = writeln!(out, "\n> {}", cell(t));
            }
            Block::List(items) if !items.is_empty() => {
                out.push('\n');
                for i in items {
                    let _ = writeln!(out, "- {}", cell(i));
                }
            }
            Block::Table(t) => table(out, t),
            _ => {}
        }
    }
}

/// A pipe table; grouped rows carry their group as the first column.
fn table(out: &mut String, t: &Table) {
    let mut head: Vec<String> = t.group.iter().map(|g| g.to_string()).collect();
    head.extend(t.columns.iter().map(|c| cell(&c.name)));
    let mut rule: Vec<&str> = t.group.iter().map(|_| "---").collect();
    rule.extend(
        t.columns
            .iter()
            .map(|c| if c.numeric { "---:" } else { "---" }),
    );
    let _ = writeln!(out, "\n| {} |\n|{}|", head.join(" | "), rule.join("|"));
    for r in &t.rows {
        let mut cells: Vec<String> = t.group.iter().map(|_| cell(&r.group)).collect();
        cells.extend(r.cells.iter().map(|c| cell(&c.text)));
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
}

#[cfg(test)]
mod tests {
    use super::cell;
    use crate::report::model::View;
    use crate::report::registry::exporter;
    use crate::report::tests_support::fixture;

    #[test]
    fn cells_carry_no_markup_or_control_characters() {
        // Issue 14, item 12.
        let c = cell("a\rb`code`![img](http://x/t.png)[l](u)\x1b[31m|");
        assert!(!c.contains(['\r', '\n', '\u{1b}']), "{c:?}");
        assert!(
            !c.contains("![") && c.contains("\\](") && !c.contains(" `"),
            "{c}"
        );
        assert!(c.contains("\\`code\\`") && c.ends_with("\\|"), "{c}");
    }

    #[test]
    fn markdown_puts_the_headline_summary_first() {
        let md = exporter("markdown")
            .unwrap()
            .render(&fixture(), View::default());
        assert!(md.starts_with("# virtperf comparison #7\n"));
        let summary = md.find("## Headline summary").unwrap();
        assert!(
            md.contains("| cpu | vm | events_per_sec | 2.000× \\[1.966, 2.035\\] | slower ⚑ |"),
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
}
