//! `--figures`: the directory checked before anything runs, and every
//! figure of a report written into it as a standalone SVG file.

use crate::core::options::CliError;
use crate::report::html::figure_files;
use crate::report::model::Document;

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
pub fn write_figures(d: &Document, dir: &std::path::Path) -> anyhow::Result<usize> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "--figures {}: cannot create that directory; give one you can write to",
            dir.display()
        )
    })?;
    let files = figure_files(d);
    for (name, svg) in &files {
        let path = dir.join(name);
        std::fs::write(&path, svg)
            .with_context(|| format!("--figures: writing {}", path.display()))?;
    }
    Ok(files.len())
}
