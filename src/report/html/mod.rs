//! One self-contained HTML file with inline SVG charts (no script, no
//! network), laid out from the report's document: the overview first, the
//! headline summary, the environments' fingerprints, per environment the
//! headline slowdowns on a log axis with every run drawn, sweeps as lines
//! and heat maps, per entry bar charts of the headline metrics and every
//! metric's table (folded unless `--detail`). Every figure is also
//! available as a standalone SVG file (`--figures`). Every string that
//! came from an environment is escaped.

mod svg;

use std::fmt::Write as _;

use crate::report::format::Layout;
use crate::report::model::{Block, Document, Figure, FigureKind, Table, Tone};
pub use svg::esc;
use svg::*;

pub struct HtmlExporter;

const STYLE: &str = r#"body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;color:#222;padding:0 16px}
h1{font-size:24px}h2{font-size:19px;margin-top:34px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:12.5px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right;white-space:nowrap}th{background:#f4f4f4}td.l,th.l{text-align:left;white-space:normal}
.scroll{overflow-x:auto;max-width:100%}
.slower{color:#c0392b;font-weight:600}.faster{color:#2e7d32;font-weight:600}.equivalent{color:#1f5fa8;font-weight:600}.ns{color:#777}.flag{background:#fff3cd}
td.slower{background:#fdecea}td.faster{background:#e8f5e9}td.equivalent{background:#e8f0fb}
svg{margin:6px 12px 6px 0;background:#fff;border:1px solid #eee}svg .t{font-size:13px;font-weight:600}svg .a{font-size:11px;fill:#444}svg .v{font-size:10.5px;fill:#222}
.charts{display:flex;flex-wrap:wrap}.note{color:#555}.warn{background:#fff3cd;padding:4px 8px}nav{font-size:12.5px;color:#555}nav a{margin-right:10px}"#;

/// The styles the charts use, for a standalone SVG file.
const SVG_STYLE: &str = "<style>svg{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;background:#fff}.t{font-size:13px;font-weight:600}.a{font-size:11px;fill:#444}.v{font-size:10.5px;fill:#222}</style>";

impl Layout for HtmlExporter {
    fn name(&self) -> &'static str {
        "html"
    }

    fn render(&self, d: &Document) -> String {
        page(d)
    }
}

fn page(d: &Document) -> String {
    let mut h = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>\n{STYLE}\n</style></head><body><h1>{}</h1><p class=\"note\">{}</p><nav>",
        esc(d.short_title),
        esc(&d.title),
        d.intro.iter().map(|p| esc(p)).collect::<Vec<_>>().join(" ")
    );
    // The report's sections, and its entries as one link to the first.
    let mut entries = false;
    for s in d.sections.iter().filter(|s| s.level == 2) {
        let is_entry = s.id.starts_with("entry-");
        if is_entry && entries {
            continue;
        }
        entries |= is_entry;
        let title = if is_entry { "Every entry" } else { &s.title };
        let _ = write!(h, "<a href=\"#{}\">{}</a>", esc(&s.id), esc(title));
    }
    h.push_str("</nav>");
    for s in &d.sections {
        let mut body = String::new();
        blocks(&mut body, &s.blocks);
        if body.is_empty() {
            continue;
        }
        let _ = write!(
            h,
            "<section id=\"{}\"><h{l}>{}</h{l}>{body}</section>",
            esc(&s.id),
            esc(&s.title),
            l = s.level
        );
    }
    h.push_str("</body></html>\n");
    h
}

fn blocks(h: &mut String, bs: &[Block]) {
    for b in bs {
        match b {
            Block::Para(t) if !t.is_empty() => {
                let _ = write!(h, "<p>{}</p>", esc(t));
            }
            Block::Note(t) => {
                let _ = write!(h, "<p class=\"note\">{}</p>", esc(t));
            }
            Block::Warning(t) => {
                let _ = write!(h, "<p class=\"warn\">{}</p>", esc(t));
            }
            Block::List(items) if !items.is_empty() => {
                h.push_str("<ul>");
                for i in items {
                    let _ = write!(h, "<li>{}</li>", esc(i));
                }
                h.push_str("</ul>");
            }
            Block::Table(t) => table(h, t),
            Block::Figures(fs) if !fs.is_empty() => {
                h.push_str("<div class=\"charts\">");
                for f in fs {
                    h.push_str(&figure(f));
                }
                h.push_str("</div>");
            }
            Block::Folded {
                summary,
                open,
                blocks: inner,
            } => {
                let _ = write!(
                    h,
                    "<details{}><summary>{}</summary>",
                    if *open { " open" } else { "" },
                    esc(summary)
                );
                blocks(h, inner);
                h.push_str("</details>");
            }
            _ => {}
        }
    }
}

fn class(t: Tone) -> &'static str {
    match t {
        Tone::Plain => "",
        Tone::Slower => "slower",
        Tone::Faster => "faster",
        Tone::Equivalent => "equivalent",
        Tone::Muted => "ns",
    }
}

fn table(h: &mut String, t: &Table) {
    h.push_str("<div class=\"scroll\"><table><tr>");
    if let Some(g) = t.group {
        let _ = write!(h, "<th class=\"l\">{}</th>", esc(g));
    }
    for c in &t.columns {
        let _ = write!(
            h,
            "<th{}>{}</th>",
            if c.numeric { "" } else { " class=\"l\"" },
            esc(&c.name)
        );
    }
    h.push_str("</tr>");
    for r in &t.rows {
        let _ = write!(h, "<tr{}>", if r.flagged { " class=\"flag\"" } else { "" });
        if t.group.is_some() {
            let _ = write!(h, "<td class=\"l\">{}</td>", esc(&r.group));
        }
        for (c, col) in r.cells.iter().zip(&t.columns) {
            let classes = [if col.numeric { "" } else { "l" }, class(c.tone)]
                .into_iter()
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let _ = write!(
                h,
                "<td{}{}>{}</td>",
                if classes.is_empty() {
                    String::new()
                } else {
                    format!(" class=\"{classes}\"")
                },
                c.hover
                    .as_ref()
                    .map(|t| format!(" title=\"{}\"", esc(t)))
                    .unwrap_or_default(),
                esc(&c.text)
            );
        }
        h.push_str("</tr>");
    }
    h.push_str("</table></div>");
}

/// One figure as inline SVG.
pub fn figure(f: &Figure) -> String {
    match &f.kind {
        FigureKind::Slowdown { rows, margin } => ratio_chart(&f.title, rows, *margin),
        FigureKind::Bars { unit, bars } => bar_chart(&f.title, unit, bars),
        FigureKind::Stacked { unit, parts, bars } => stacked_chart(&f.title, unit, parts, bars),
        FigureKind::Timeline { views } => timeline_chart(&f.title, views),
        FigureKind::Lines {
            xlabel,
            unit,
            series,
        } => line_chart(&f.title, xlabel, unit, series),
        FigureKind::Heat {
            xlabel,
            ylabel,
            xs,
            ys,
            cells,
        } => heat_map(&f.title, xlabel, ylabel, xs, ys, cells),
    }
}

/// A figure as a standalone SVG file: an XML declaration, and the styles
/// the page would give it inside.
pub fn standalone(f: &Figure) -> String {
    let svg = figure(f);
    match svg.find('>') {
        Some(i) => format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n{}{SVG_STYLE}{}\n",
            &svg[..=i],
            &svg[i + 1..]
        ),
        None => svg,
    }
}
