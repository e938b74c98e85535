//! [`Baseline`]: the committed state a transaction is validated against (reference §4.2).

use std::collections::{BTreeSet, HashMap, HashSet};

use scriptorium_topics_format::topic::Document;
use scriptorium_topics_format::{Diagnostic, TopicFile, TreeParse, Unit, parse_tree};

use super::SourceCatalog;

/// Committed state, read before anything touches the stage (and again before a repair turn,
/// never after): the committed units, block IDs, the refs each block ID cites, every committed
/// ref, and the committed file sizes.
///
/// Reading it after the edit would treat the edit's own IDs as committed, and a dropped ID would
/// look as if it never existed.
#[derive(Clone, Debug, Default)]
pub struct Baseline {
    units: Vec<Unit>,
    block_ids: BTreeSet<String>,
    /// Where each block ID was committed: file (relative to `topics/`) and paragraph line.
    homes: HashMap<String, (String, u32)>,
    refs_by_block: HashMap<String, BTreeSet<String>>,
    refs: HashSet<String>,
    file_bytes: HashMap<String, u64>,
    total_bytes: u64,
    diagnostics: Vec<Diagnostic>,
}

impl Baseline {
    /// Reads the committed tree `files` (paths relative to `topics/`), resolving source targets
    /// through `sources`.
    ///
    /// A committed tree that does not parse cleanly (edited by hand) still yields a baseline:
    /// the units that parsed, plus the suffix block IDs of every paragraph of a file with a
    /// diagnostic, so a block that is broken in the committed tree must still not disappear.
    /// The committed diagnostics are kept in [`Baseline::diagnostics`].
    pub fn read(files: &[TopicFile], sources: &dyn SourceCatalog) -> Baseline {
        Baseline::from_parse(files, parse_tree(files, sources))
    }

    /// The baseline of `files` from their strict parse `parsed` (what [`parse_tree`] returns
    /// for exactly these files): the same as [`Baseline::read`] without parsing again. The
    /// install uses it to hand the next transaction the tree it just parsed.
    pub(crate) fn from_parse(files: &[TopicFile], parsed: TreeParse) -> Baseline {
        let mut baseline = Baseline::default();
        for file in files {
            let bytes = super::len_u64(&file.text);
            baseline.total_bytes = baseline.total_bytes.saturating_add(bytes);
            baseline.file_bytes.insert(file.path.clone(), bytes);
        }
        for unit in &parsed.units {
            baseline.block_ids.insert(unit.memory_id.clone());
            baseline
                .homes
                .entry(unit.memory_id.clone())
                .or_insert_with(|| (unit.topic_path.clone(), unit.line));
            let cited = baseline.refs_by_block.entry(unit.memory_id.clone()).or_default();
            for source_ref in &unit.refs {
                cited.insert(source_ref.clone());
                if !baseline.refs.contains(source_ref) {
                    baseline.refs.insert(source_ref.clone());
                }
            }
        }
        let broken: HashSet<&str> = parsed.diagnostics.iter().map(|d| d.path.as_str()).collect();
        for file in files.iter().filter(|f| broken.contains(f.workspace_path().as_str())) {
            let doc = Document::parse(&file.text);
            for paragraph in doc.paragraphs() {
                let line = u32::try_from(paragraph.lines.start + 1).unwrap_or(u32::MAX);
                for id in doc.block_ids(paragraph) {
                    baseline.homes.entry(id.clone()).or_insert_with(|| (file.path.clone(), line));
                    baseline.block_ids.insert(id);
                }
            }
        }
        baseline.units = parsed.units;
        baseline.diagnostics = parsed.diagnostics;
        baseline
    }

    /// Every committed block ID (aliases included).
    pub fn block_ids(&self) -> &BTreeSet<String> {
        &self.block_ids
    }

    /// The committed units, in tree order.
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// The refs the committed block `block_id` cites; `None` when no committed unit has that ID.
    pub fn refs_of(&self, block_id: &str) -> Option<&BTreeSet<String>> {
        self.refs_by_block.get(block_id)
    }

    /// Whether some committed block cites `source_ref`: such a ref is committed evidence, not
    /// new evidence (SPEC §2, the organizer fix).
    pub fn is_committed_ref(&self, source_ref: &str) -> bool {
        self.refs.contains(source_ref)
    }

    /// Every ref some committed block cites.
    pub fn committed_refs(&self) -> &HashSet<String> {
        &self.refs
    }

    /// The committed size in bytes of the topic file at `path` (relative to `topics/`).
    pub fn file_bytes(&self, path: &str) -> Option<u64> {
        self.file_bytes.get(path).copied()
    }

    /// The committed size in bytes of the whole topic tree.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Where the committed block `block_id` lives: its file (relative to `topics/`) and the
    /// 1-based line its paragraph starts on.
    pub fn home(&self, block_id: &str) -> Option<(&str, u32)> {
        self.homes.get(block_id).map(|(path, line)| (path.as_str(), *line))
    }

    /// The diagnostics of the committed tree itself (empty for a tree the runtime installed).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}
