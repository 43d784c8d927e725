//! Reports of a comparison: one exporter per format behind one trait, all
//! rendering the same `Analysis`.

mod csv;
mod document;
mod html;
mod json;
mod markdown;
pub mod model;
mod sections;
mod sweeps;
mod table;
mod text;

pub use crate::analysis::fleet::{Fleet, FleetRow, HostAnalysis, Measure};
pub use crate::analysis::{analyze, Analysis};

use crate::core::options::CliError;

pub use document::{document, fleet_document};
pub use model::View;

/// Renders an analysis in one format.
pub trait Exporter: Sync {
    /// The `--format` word.
    fn name(&self) -> &'static str;
    fn render(&self, a: &Analysis, view: View) -> String;
    /// Several hosts' stores at once: the fleet view across them, then
    /// each host's report as `render` gives it.
    fn render_fleet(&self, f: &Fleet, view: View) -> String;
    /// File extension for `--out` defaults.
    fn extension(&self) -> &'static str;
}

/// Every format, one line each.
pub static EXPORTERS: &[&dyn Exporter] = &[
    &table::TableExporter,
    &markdown::MarkdownExporter,
    &csv::CsvExporter,
    &json::JsonExporter,
    &html::HtmlExporter,
];

/// "table, markdown, ...", for help and messages.
pub fn format_names() -> String {
    EXPORTERS
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The exporter for `--format NAME` (`md` is markdown too).
pub fn exporter(name: &str) -> Result<&'static dyn Exporter, CliError> {
    let name = if name == "md" { "markdown" } else { name };
    EXPORTERS
        .iter()
        .copied()
        .find(|e| e.name() == name)
        .ok_or_else(|| CliError::InvalidValue {
            name: "format".into(),
            value: name.into(),
            allowed: format!("one of {}", format_names()),
        })
}

/// The self-contained HTML page `compare` always writes.
pub fn html() -> &'static dyn Exporter {
    &html::HtmlExporter
}

/// `--figures DIR`, checked before anything runs: a directory, or a path
/// whose nearest existing ancestor is one (it is created when written).
pub fn figures_dir(value: Option<&str>) -> Result<Option<std::path::PathBuf>, CliError> {
    let Some(v) = value else { return Ok(None) };
    let path = std::path::PathBuf::from(v);
    let bad = |why: &str| CliError::InvalidValue {
        name: "figures".into(),
        value: v.into(),
        allowed: format!("a directory to write SVG files into ({why})"),
    };
    let mut p = path.as_path();
    loop {
        if p.as_os_str().is_empty() || p.is_dir() {
            return Ok(Some(path.clone()));
        }
        if p.exists() {
            return Err(bad(&format!("{} is a file", p.display())));
        }
        match p.parent() {
            Some(parent) => p = parent,
            None => return Err(bad("no such place")),
        }
    }
}

/// Writes each figure of a report into `dir` as a standalone SVG file
/// (creating the directory); returns how many.
pub fn write_figures(d: &model::Document, dir: &std::path::Path) -> anyhow::Result<usize> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "--figures {}: cannot create that directory; give one you can write to",
            dir.display()
        )
    })?;
    let files = html::figure_files(d);
    for (name, svg) in &files {
        let path = dir.join(name);
        std::fs::write(&path, svg)
            .with_context(|| format!("--figures: writing {}", path.display()))?;
    }
    Ok(files.len())
}

#[cfg(test)]
pub(crate) mod tests_support;

#[cfg(test)]
mod tests;
