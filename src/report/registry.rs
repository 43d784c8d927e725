//! Every report format, one line each, as an `Exporter` of its kind (a
//! layout of the document or data, as `format` says), and how `--format`
//! finds one.

use crate::analysis::fleet::Fleet;
use crate::analysis::Analysis;
use crate::core::options::CliError;
use crate::report::csv::CsvExporter;
use crate::report::document::{document, fleet_document};
use crate::report::format::{Data, Layout};
use crate::report::html::HtmlExporter;
use crate::report::json::JsonExporter;
use crate::report::markdown::MarkdownExporter;
use crate::report::model::View;
use crate::report::table::TableExporter;

/// A registered format: a layout or data.
#[derive(Clone, Copy)]
pub enum Exporter {
    Layout(&'static dyn Layout),
    Data(&'static dyn Data),
}

impl Exporter {
    /// The `--format` word.
    pub fn name(&self) -> &'static str {
        match self {
            Exporter::Layout(l) => l.name(),
            Exporter::Data(d) => d.name(),
        }
    }

    /// A comparison's report in this format: a layout of its document as
    /// `view` shapes it, or its analysis.
    pub fn render(&self, a: &Analysis, view: View) -> String {
        match self {
            Exporter::Layout(l) => l.render(&document(a, view)),
            Exporter::Data(d) => d.render(a),
        }
    }

    /// A fleet report in this format: a layout of the fleet's document, or
    /// the fleet's figures with each host's analysis.
    pub fn render_fleet(&self, f: &Fleet, view: View) -> String {
        match self {
            Exporter::Layout(l) => l.render(&fleet_document(f, view)),
            Exporter::Data(d) => d.render_fleet(f),
        }
    }
}

/// Every format, one line each.
pub static EXPORTERS: &[Exporter] = &[
    Exporter::Layout(&TableExporter),
    Exporter::Layout(&MarkdownExporter),
    Exporter::Data(&CsvExporter),
    Exporter::Data(&JsonExporter),
    HTML,
];

/// The self-contained HTML page, which `compare` always writes.
const HTML: Exporter = Exporter::Layout(&HtmlExporter);

/// "table, markdown, ...", for help and messages.
pub fn format_names() -> String {
    EXPORTERS
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The exporter for `--format NAME` (`md` is markdown too).
pub fn exporter(name: &str) -> Result<&'static Exporter, CliError> {
    let name = if name == "md" { "markdown" } else { name };
    EXPORTERS
        .iter()
        .find(|e| e.name() == name)
        .ok_or_else(|| CliError::InvalidValue {
            name: "format".into(),
            value: name.into(),
            allowed: format!("one of {}", format_names()),
        })
}

/// The self-contained HTML page `compare` always writes.
pub fn html() -> &'static Exporter {
    &HTML
}
