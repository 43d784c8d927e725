//! The sections of a comparison's report, one file each, and the one list
//! that orders them. A section builder reads the analysis and returns its
//! sections: none when it has nothing to say, one, or one per entry.
//!
//! Adding a section is a file here with a `build` function, its `mod` line
//! and one line in `SECTIONS` where the reader should meet it.

mod against_baseline;
mod areas;
mod baseline_from;
mod categories;
mod entry;
mod environments;
mod failures;
mod flags;
mod fleet;
mod headline;
mod imported;
mod method;
mod net_paths;
mod overhead;
mod overview;
mod seed002;
mod storage;
mod sweeps;
mod timeline;

pub(crate) use areas::area_slowdowns;
pub(crate) use fleet::fleet_view;

use crate::analysis::Analysis;
use crate::report::model::{Section, View};

/// What builds one part of the report.
pub(crate) type Build = fn(&Analysis, View) -> Vec<Section>;

/// The report's sections, in the order a reader wants them: an overview
/// to read in ten seconds, the headline verdicts, what was compared, the
/// figures, then each entry in detail, what went wrong, and last how the
/// verdicts were reached.
pub(crate) const SECTIONS: &[Build] = &[
    baseline_from::build,
    overview::build,
    overhead::build,
    headline::build,
    environments::build,
    imported::build,
    against_baseline::build,
    sweeps::build,
    categories::build,
    seed002::build,
    net_paths::build,
    storage::build,
    entry::build,
    flags::build,
    failures::build,
    method::build,
];
