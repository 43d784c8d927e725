//! What a report format is. A *layout* (the terminal table, markdown,
//! HTML) lays out the report's `Document`: what the report says is decided
//! once, by `report::document` and its sections, and a layout only decides
//! how it looks. A *data* format (CSV, JSON) carries the `Analysis` itself,
//! every figure whatever `--detail` says, for other tools to read.
//! `registry` lists them, each as an `Exporter` of either kind.

use crate::analysis::fleet::Fleet;
use crate::analysis::gate::Gate;
use crate::analysis::Analysis;
use crate::report::model::Document;

/// A format that lays out the document.
pub trait Layout: Sync {
    /// The `--format` word.
    fn name(&self) -> &'static str;
    /// The document, laid out: a comparison's, or a fleet's (its fleet
    /// view, then each host's sections one level down).
    fn render(&self, d: &Document) -> String;
}

/// A format that carries the analysis itself.
pub trait Data: Sync {
    /// The `--format` word.
    fn name(&self) -> &'static str;
    fn render(&self, a: &Analysis) -> String;
    /// The analysis with `--fail-on`'s gates applied; only a format that
    /// marks what failed (JUnit) differs from `render`.
    fn render_gated(&self, a: &Analysis, _gates: &[Gate]) -> String {
        self.render(a)
    }
    /// Several hosts' stores at once: the fleet's figures and each host's
    /// analysis as `render` gives it.
    fn render_fleet(&self, f: &Fleet) -> String;
}
