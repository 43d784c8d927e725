//! `--figures`: the directory checked before anything runs, and every
//! figure of a report written into it as a standalone SVG file, each under
//! a name of its own and never through a link planted there.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

use anyhow::Context as _;

use crate::core::options::CliError;
use crate::report::html::standalone;
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
/// (creating the directory), each under a name of its own; returns how
/// many.
pub fn write_figures(d: &Document, dir: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "--figures {}: cannot create that directory; give one you can write to",
            dir.display()
        )
    })?;
    let figures = d.figures();
    let names = file_names(figures.iter().map(|f| f.id.as_str()));
    for (f, name) in figures.iter().zip(&names) {
        let path = dir.join(name);
        let mut file = open_figure(&path)?;
        file.write_all(standalone(f).as_bytes())
            .with_context(|| format!("--figures: writing {}", path.display()))?;
    }
    Ok(figures.len())
}

/// `<id>.svg` for each figure, unique among them: where ids collide (labels
/// that differ only in what a file name leaves out, `a.b` and `a_b`), the
/// first keeps its name and each later one takes the first `<id>-2`,
/// `<id>-3`... that neither another figure's id nor an earlier name took.
/// The same ids in the same order give the same names.
fn file_names<'a>(ids: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
    let mut taken: HashSet<String> = ids.clone().map(str::to_string).collect();
    let mut seen = HashSet::new();
    ids.map(|id| {
        let name = if seen.insert(id) {
            id.to_string()
        } else {
            let free = (2..)
                .map(|k| format!("{id}-{k}"))
                .find(|n| !taken.contains(n))
                .expect("an unbounded range has a free name");
            taken.insert(free.clone());
            free
        };
        format!("{name}.svg")
    })
    .collect()
}

/// Opens `path` to write a figure into, never through a link planted
/// there (a shared directory's other users can plant one): a symbolic
/// link is not followed (`O_NOFOLLOW`), and anything but a plain file with
/// no other name (a FIFO, a device, a hard link to a file elsewhere) is
/// refused before a byte of it changes. A FIFO is not waited on
/// (`O_NONBLOCK`).
fn open_figure(path: &Path) -> anyhow::Result<File> {
    let refuse = |what: &str| {
        anyhow::anyhow!(
            "--figures: {} is {what}; virtperf writes a figure only into a plain file of its own: remove it, or give --figures a directory only you can write to",
            path.display()
        )
    };
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("a symbolic link"),
            Some(libc::ENXIO) => refuse("a FIFO"),
            _ => anyhow::Error::new(e).context(format!("--figures: writing {}", path.display())),
        })?;
    let meta = file
        .metadata()
        .with_context(|| format!("--figures: writing {}", path.display()))?;
    if !meta.is_file() {
        return Err(refuse("not a plain file"));
    }
    if meta.nlink() > 1 {
        return Err(refuse("a hard link to a file elsewhere"));
    }
    file.set_len(0)
        .with_context(|| format!("--figures: writing {}", path.display()))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::document::document;
    use crate::report::model::View;
    use crate::report::tests_support::analysis_of_envs;

    /// The files in `dir`: (name, text), by name.
    fn files(dir: &Path) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                (e.file_name().to_string_lossy().into_owned(), text)
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn figures_whose_names_slug_alike_get_a_file_each() {
        // Issue 53, item 13: `a.b` and `a_b` are both `a-b` in a file
        // name; the second chart overwrote the first. `a-b-2` takes the
        // name a suffix would give first, so the suffix moves on.
        let d = document(
            &analysis_of_envs(&["host", "a.b", "a_b", "a-b-2"]),
            View::default(),
        );
        let slowdowns: Vec<&str> = d
            .figures()
            .into_iter()
            .map(|f| f.id.as_str())
            .filter(|id| id.starts_with("slowdown-"))
            .collect();
        assert_eq!(
            slowdowns,
            ["slowdown-a-b", "slowdown-a-b", "slowdown-a-b-2"]
        );
        let dir = tempfile::tempdir().unwrap();
        let n = write_figures(&d, dir.path()).unwrap();
        let written = files(dir.path());
        assert_eq!(n, d.figures().len());
        assert_eq!(
            written.len(),
            n,
            "{:?}",
            written.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
        // Each environment's chart in a file of its own, the first under
        // the name it always had.
        for (name, env) in [
            ("slowdown-a-b.svg", "a.b"),
            ("slowdown-a-b-3.svg", "a_b"),
            ("slowdown-a-b-2.svg", "a-b-2"),
        ] {
            let text = &written
                .iter()
                .find(|f| f.0 == name)
                .unwrap_or_else(|| panic!("no {name}: {written:?}"))
                .1;
            assert!(
                text.contains(&format!("{env} against host")),
                "{name}: {text}"
            );
        }
        // The same document, the same names.
        let again = tempfile::tempdir().unwrap();
        write_figures(&d, again.path()).unwrap();
        assert_eq!(files(again.path()), written);
    }

    #[test]
    fn a_link_planted_among_the_figures_is_refused_not_written_through() {
        // Issue 53, item 14: in a shared directory, someone else's
        // `overview.svg` can point anywhere.
        let d = document(&analysis_of_envs(&["host", "vm"]), View::default());
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let figs = dir.path().join("figs");
        std::fs::create_dir(&figs).unwrap();
        let planted = figs.join("overview.svg");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let err = format!("{:#}", write_figures(&d, &figs).unwrap_err());
        assert!(
            err.contains("--figures") && err.contains(&planted.display().to_string()),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&planted)
            .unwrap()
            .file_type()
            .is_symlink());
        // A hard link to a file elsewhere: refused before a byte changes.
        std::fs::remove_file(&planted).unwrap();
        std::fs::hard_link(&victim, &planted).unwrap();
        let err = format!("{:#}", write_figures(&d, &figs).unwrap_err());
        assert!(err.contains(&planted.display().to_string()), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // A FIFO nobody reads: refused at once, not waited on.
        std::fs::remove_file(&planted).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&planted)
            .status()
            .unwrap();
        assert!(made.success());
        let err = format!("{:#}", write_figures(&d, &figs).unwrap_err());
        assert!(err.contains(&planted.display().to_string()), "{err}");
        // Where nothing is planted, every figure is written.
        std::fs::remove_file(&planted).unwrap();
        assert_eq!(write_figures(&d, &figs).unwrap(), d.figures().len());
        assert!(std::fs::read_to_string(&planted).unwrap().contains("<svg"));
    }
}
