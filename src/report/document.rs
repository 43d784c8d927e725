//! The document a report lays out, assembled: a comparison's title, intro
//! and the sections `sections::SECTIONS` lists, in its order; a fleet's
//! view across hosts followed by each host's document, one level down.

use crate::analysis::fleet::Fleet;
use crate::analysis::Analysis;
use crate::report::model::{Block, Document, Section, View};
use crate::report::sections::{fleet_view, SECTIONS};
use crate::report::text::{fleet_hosts, slug};

/// The report of one comparison.
pub fn document(a: &Analysis, view: View) -> Document {
    Document {
        short_title: "virtperf comparison",
        title: format!("virtperf comparison #{}", a.id),
        intro: vec![format!(
            "Suite {}, baseline {}, started {}.",
            a.suite, a.baseline, a.started_at
        )],
        sections: SECTIONS.iter().flat_map(|build| build(a, view)).collect(),
    }
}

/// The fleet report: the fleet view across hosts, then each host's own
/// report, its sections one level down.
pub fn fleet_document(f: &Fleet, view: View) -> Document {
    let mut sections = vec![fleet_view(f)];
    for h in &f.hosts {
        let d = document(&h.analysis, view);
        let mut blocks: Vec<Block> = vec![Block::Para(d.title)];
        blocks.extend(d.intro.into_iter().map(Block::Para));
        let host = slug(&h.host);
        sections.push(Section::new(
            &format!("host-{host}"),
            &format!("Host {}", h.host),
            blocks,
        ));
        sections.extend(d.sections.into_iter().map(|mut s| {
            s.level = 3;
            s.id = format!("{host}-{}", s.id);
            prefix_figures(&mut s.blocks, &host);
            s
        }));
    }
    Document {
        short_title: "virtperf fleet report",
        title: "virtperf fleet report".into(),
        intro: vec![
            format!(
                "Suite {}, baseline {}, {}.",
                f.suite,
                f.baseline,
                fleet_hosts(f)
            ),
            crate::analysis::fleet::outlier_rule(&f.settings),
        ],
        sections,
    }
}

/// Figures of several hosts in one document need distinct file names.
fn prefix_figures(blocks: &mut [Block], prefix: &str) {
    for b in blocks {
        match b {
            Block::Figures(fs) => {
                for f in fs {
                    f.id = format!("{prefix}-{}", f.id);
                }
            }
            Block::Folded { blocks, .. } => prefix_figures(blocks, prefix),
            _ => {}
        }
    }
}
