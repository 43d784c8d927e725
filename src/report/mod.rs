//! Reports of a comparison, in every format. `document` builds the
//! report's content once, section by section (`sections/`), as a
//! `model::Document`; the layout formats (terminal table, markdown, HTML)
//! lay it out and the data formats (CSV, JSON) carry the `Analysis`
//! itself (`format`, `registry`). This file only lists the parts.

mod csv;
mod document;
mod figures;
mod format;
mod html;
mod json;
mod markdown;
pub mod model;
mod registry;
mod sections;
mod sweeps;
mod table;
mod text;

pub use crate::analysis::fleet::{Fleet, FleetRow, HostAnalysis, Measure};
pub use crate::analysis::{analyze, Analysis};
pub use document::{document, fleet_document};
pub use figures::{figures_dir, write_figures};
pub use format::{Data, Layout};
pub use model::View;
pub use registry::{exporter, format_names, html, Exporter, EXPORTERS};

#[cfg(test)]
pub(crate) mod tests_support;

#[cfg(test)]
mod tests;
