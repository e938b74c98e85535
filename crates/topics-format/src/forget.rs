//! Forgetting: the pure functions that take a conversation, an archived record, a block or a
//! literal text out of every text of the workspace (see `docs/format.md#tombstones`,
//! `docs/format.md#forgetting-in-topic-files` and `docs/format.md#forgetting-in-derived-views`).
//!
//! Key decision: forgetting never leaves a text the strict readers reject. An archived record's
//! frame becomes a [tombstone](tombstone_archive) that keeps its source ID and anchor, so the
//! archive still scans complete in both implementations and a citation resolves to "forgotten"
//! instead of dangling; a topic file loses whole paragraphs, footnote definitions, source links
//! and block links, never a piece that would leave a paragraph the strict parse refuses
//! (an edited paragraph that would no longer segment as one paragraph goes whole). What the rules
//! cannot place structurally, the literal in a heading, an HTML line, a fence or a view, is
//! replaced by [`FORGOTTEN`].
//!
//! Everything here is a function of texts: [`Forgetting`] names what goes (source IDs with their
//! archive locations precomputed, so a citation's link target is recognised without IO; block
//! IDs; an optional literal), and each function takes one file's text and returns its new text
//! (or nothing, when it does not change). Each function is idempotent, so a history rewrite may
//! apply it to a blob it already rewrote, and costs one pass over its text (a further pass
//! only in the rare case described at [`forget_in_tree`]).
//!
//! # Limitations
//!
//! - Legacy archives (`sources/<provider>/<thread>.md`, `sources/D<n>.md`) have no length
//!   framing, so no tombstone fits them: [`tombstone_archive`] refuses one that names a forgotten
//!   record ([`ForgetError::LegacyArchive`]).
//! - The literal is matched exactly (case-sensitive, byte for byte) and may not span lines. It is
//!   not looked for in an archive's framing: a source ID, an anchor or a tombstone's timestamp
//!   that contains it stays (rewriting them would break every later frame).
//! - A literal that is part of a topic file's name removes every paragraph linking to that file.
//!
//! # Example
//!
//! ```
//! use std::collections::HashSet;
//! use scriptorium_topics_format::forget::{Forgetting, forget_in_topic, tombstone_archive};
//!
//! let archive = "<!-- openprogram-source-archive:v2 -->\n\n\
//!     <a id=\"source-d7e6772098d6b0d9\"></a>\n\
//!     <!-- source-id:openprogram/sess-7f2a/u1 -->\n\
//!     <!-- record-lines:1 -->\n\
//!     [2024-03-15T10:00:00+08:00] Owner: I'm building a budget tracker in Flask.\n";
//! let forgotten: HashSet<String> = ["openprogram/sess-7f2a/u1".to_owned()].into();
//! let tombstoned = tombstone_archive("sources/openprogram/_v2/sess-7f2a.md", archive, &forgotten)
//!     .expect("the archive scans complete")
//!     .expect("it holds the record");
//! assert!(tombstoned.ends_with("[2024-03-15T10:00:00+08:00] forgotten: [FORGOTTEN]\n"));
//!
//! let forgetting = Forgetting::new(["openprogram/sess-7f2a/u1"], [] as [&str; 0], None)
//!     .expect("a valid source ID");
//! let topic = "# Budget\n\n\
//!     Craig is building a budget tracker.[^e-1] ^6dfc15f1\n\n\
//!     [^e-1]: Time: `2024-03-15`; Sources: [Flask tracker](../sources/openprogram/_v2/sess-7f2a.md#source-d7e6772098d6b0d9)\n";
//! let out = forget_in_topic("budget.md", topic, &forgetting, &HashSet::new());
//! assert_eq!(out.text.as_deref(), Some("# Budget\n"));
//! assert_eq!(out.removed_blocks, ["6dfc15f1"]);
//! ```

mod archive;
pub(crate) mod json;
mod redact;
mod topic;
mod view;

use std::collections::{BTreeMap, BTreeSet, HashSet};

pub(crate) use archive::replace_frames;
pub use archive::{
    TOMBSTONE_LABEL, is_tombstone, sources_matching, tombstone_archive, tombstone_frame,
    tombstone_record,
};
pub use redact::redact;
pub use topic::{TopicForget, TreeForget, forget_in_topic, forget_in_tree};
pub use view::forget_in_view;
pub(crate) use view::topic_id;

use crate::diag::Diagnostic;
use crate::source::id::parse_d_handle;
use crate::source::{SourceId, anchor_for};
use crate::topic::{is_block_id, is_memory_id};

/// What stands where something was forgotten: a tombstone's record content, and what replaces
/// the literal where no structural rule removes it.
pub const FORGOTTEN: &str = "[FORGOTTEN]";

/// The text a literal may not be part of: it is what forgetting writes ([`FORGOTTEN`] and a
/// tombstone's record after its timestamp), so such a literal could never be gone.
const WRITTEN: &str = "] forgotten: [FORGOTTEN]";

/// Why something cannot be forgotten as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ForgetError {
    /// Not a source reference: neither `<provider>/<thread>/<message>` nor `D<n>:<t>`.
    #[error("not a source reference: {source_id}")]
    InvalidSource {
        /// The offending reference.
        source_id: String,
    },
    /// Not a block ID (`[A-Za-z0-9-]+`) nor a legacy `mem_` ID.
    #[error("not a block ID: {block_id}")]
    InvalidBlock {
        /// The offending ID.
        block_id: String,
    },
    /// A literal that cannot be forgotten: empty or whitespace only, holding a line break, or
    /// part of what forgetting itself writes.
    #[error("cannot forget the literal {literal:?}: {reason}")]
    InvalidLiteral {
        /// The literal.
        literal: String,
        /// Why.
        reason: &'static str,
    },
    /// A v2 archive that does not scan complete: what the strict scan does not trust is never
    /// rewritten.
    #[error("invalid or truncated v2 archive: {rel_path}")]
    IncompleteArchive {
        /// The archive, workspace-relative.
        rel_path: String,
        /// Where the scan stopped.
        fault: Option<Box<Diagnostic>>,
    },
    /// A legacy archive holding a forgotten record: it has no length framing, so no tombstone
    /// fits it.
    #[error("a legacy archive holds a forgotten record: {rel_path}")]
    LegacyArchive {
        /// The archive, workspace-relative.
        rel_path: String,
    },
}

impl ForgetError {
    /// The stable code of the error (`SCREAMING_SNAKE_CASE`), for callers and the wire.
    pub fn code(&self) -> &'static str {
        match self {
            ForgetError::InvalidSource { .. } => "FORGET_INVALID_SOURCE",
            ForgetError::InvalidBlock { .. } => "FORGET_INVALID_BLOCK",
            ForgetError::InvalidLiteral { .. } => "FORGET_INVALID_LITERAL",
            ForgetError::IncompleteArchive { .. } => "FORGET_INCOMPLETE_ARCHIVE",
            ForgetError::LegacyArchive { .. } => "FORGET_LEGACY_ARCHIVE",
        }
    }
}

/// What goes, by identity: archived records (source IDs), blocks, and an optional literal text.
///
/// Each source ID's archive locations are computed once, here: its v2 archive and anchor and
/// its legacy archive and anchor (or `sources/D<n>.md#d<n>-<t>` for a legacy handle), so a
/// citation's link target (`../../sources/openprogram/_v2/s.md#source-…`, relative to the file
/// that holds it) or a plain handle (`openprogram/s/u1`) is recognised without IO.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Forgetting {
    sources: BTreeSet<String>,
    /// (workspace-relative archive path, anchor) of every forgotten source.
    locations: HashSet<(String, String)>,
    /// The v2 archives of the forgotten provider sources.
    archive_paths: HashSet<String>,
    blocks: HashSet<String>,
    literal: Option<String>,
}

impl Forgetting {
    /// What to forget: `sources` (provider source IDs or `D<n>:<t>` handles), `blocks` (block or
    /// legacy `mem_` IDs) and, with `matching`, every text holding that literal.
    ///
    /// A literal must hold a character that is not whitespace and no line break, and must not be
    /// part of `] forgotten: [FORGOTTEN]` (what forgetting writes in its place).
    pub fn new<S, B>(
        sources: impl IntoIterator<Item = S>,
        blocks: impl IntoIterator<Item = B>,
        matching: Option<&str>,
    ) -> Result<Forgetting, ForgetError>
    where
        S: AsRef<str>,
        B: AsRef<str>,
    {
        let mut out = Forgetting::default();
        for source in sources {
            let source = source.as_ref();
            if let Some((n, t)) = parse_d_handle(source) {
                out.locations.insert((format!("sources/D{n}.md"), format!("d{n}-{t}")));
            } else if let Some(id) = SourceId::parse(source) {
                let anchor = anchor_for(source);
                out.archive_paths.insert(id.v2_path());
                out.locations.insert((id.v2_path(), anchor.clone()));
                out.locations.insert((id.legacy_path(), anchor));
            } else {
                return Err(ForgetError::InvalidSource { source_id: source.to_owned() });
            }
            out.sources.insert(source.to_owned());
        }
        for block in blocks {
            let block = block.as_ref();
            if !is_block_id(block) && !is_memory_id(block) {
                return Err(ForgetError::InvalidBlock { block_id: block.to_owned() });
            }
            out.blocks.insert(block.to_owned());
        }
        if let Some(literal) = matching {
            let invalid =
                |reason| ForgetError::InvalidLiteral { literal: literal.to_owned(), reason };
            if literal.chars().all(crate::python::is_space) {
                return Err(invalid("it is empty or whitespace only"));
            }
            if literal.chars().any(is_line_break) {
                return Err(invalid("it holds a line break"));
            }
            if WRITTEN.contains(literal) {
                return Err(invalid("forgetting writes it in place of what it removes"));
            }
            out.literal = Some(literal.to_owned());
        }
        Ok(out)
    }

    /// Whether nothing is to be forgotten.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty() && self.blocks.is_empty() && self.literal.is_none()
    }

    /// The forgotten source references, sorted.
    pub fn sources(&self) -> &BTreeSet<String> {
        &self.sources
    }

    /// The forgotten source references as the set [`tombstone_archive`] takes.
    pub fn source_set(&self) -> HashSet<String> {
        self.sources.iter().cloned().collect()
    }

    /// The v2 archives (workspace-relative) that hold the forgotten provider sources, by path:
    /// the files [`tombstone_archive`] has to see.
    pub fn archives(&self) -> BTreeMap<String, HashSet<String>> {
        let mut out: BTreeMap<String, HashSet<String>> = BTreeMap::new();
        for source in &self.sources {
            if let Some(id) = SourceId::parse(source) {
                out.entry(id.v2_path()).or_default().insert(source.clone());
            }
        }
        out
    }

    /// Whether the v2 archive at `rel_path` (workspace-relative) is one a forgotten record
    /// belongs to.
    pub fn holds_archive(&self, rel_path: &str) -> bool {
        self.archive_paths.contains(rel_path)
    }

    /// Whether `source_ref` is forgotten.
    pub fn forgets_source(&self, source_ref: &str) -> bool {
        self.sources.contains(source_ref)
    }

    /// The forgotten block IDs.
    pub fn blocks(&self) -> &HashSet<String> {
        &self.blocks
    }

    /// Whether the block `id` is forgotten.
    pub fn forgets_block(&self, id: &str) -> bool {
        self.blocks.contains(id)
    }

    /// The literal, if any.
    pub fn literal(&self) -> Option<&str> {
        self.literal.as_deref()
    }

    /// Whether `text` holds the literal.
    pub fn matches(&self, text: &str) -> bool {
        self.literal.as_deref().is_some_and(|literal| text.contains(literal))
    }

    /// Whether a link target, written in a file whose directory is `dir` (workspace-relative,
    /// `""` for the root), names a forgotten record: a plain handle, `relpath#anchor` whose
    /// path resolves to one of its archives with its anchor, or a `#d<n>-<t>` fragment of a
    /// forgotten `D<n>:<t>`.
    pub fn names_source(&self, dir: &str, target: &str) -> bool {
        if self.sources.is_empty() {
            return false;
        }
        let target = crate::source::unicode::strip(target);
        let Some((path, fragment)) = target.split_once('#') else {
            return self.sources.contains(target);
        };
        if let Some(joined) = join(dir, path)
            && self.locations.contains(&(joined, fragment.to_owned()))
        {
            return true;
        }
        d_fragment(fragment).is_some_and(|handle| self.sources.contains(&handle))
    }
}

/// `D<n>:<t>` for a fragment `d<n>-<t>` (any case), as the resolver's fallback reads it.
fn d_fragment(fragment: &str) -> Option<String> {
    let rest = fragment.strip_prefix(['d', 'D'])?;
    let (n, t) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(n) && digits(t)).then(|| format!("D{n}:{t}"))
}

/// `dir/rel` with `.` and `..` applied; `None` when `rel` is absolute or climbs above the root.
pub(crate) fn join(dir: &str, rel: &str) -> Option<String> {
    if rel.is_empty() || rel.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// The directory of a workspace-relative path (`""` at the root).
pub(crate) fn parent_dir(path: &str) -> &str {
    path.rfind('/').map_or("", |slash| &path[..slash])
}

/// A line break of Python's `str.splitlines`.
pub(crate) fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{b}'
            | '\u{c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forgetting(sources: &[&str]) -> Forgetting {
        Forgetting::new(sources, [] as [&str; 0], None).expect("valid")
    }

    #[test]
    fn link_targets_are_recognised_without_io() {
        let f = forgetting(&["openprogram/sess-7f2a/u1", "D1:2"]);
        let v2 = "../../sources/openprogram/_v2/sess-7f2a.md#source-d7e6772098d6b0d9";
        assert!(f.names_source("topics/projects", v2));
        assert!(!f.names_source("topics", v2), "from topics/ the same target climbs out");
        assert!(f.names_source("", "sources/openprogram/_v2/sess-7f2a.md#source-d7e6772098d6b0d9"));
        assert!(
            f.names_source("topics", "../sources/openprogram/sess-7f2a.md#source-d7e6772098d6b0d9")
        );
        assert!(f.names_source("topics", " openprogram/sess-7f2a/u1 "));
        assert!(!f.names_source("topics", "openprogram/sess-7f2a/a1"));
        assert!(!f.names_source(
            "topics",
            "../sources/openprogram/_v2/sess-7f2a.md#source-0640c5fc0b1951db"
        ));
        assert!(f.names_source("topics", "D1:2"));
        assert!(f.names_source("topics", "../sources/D1.md#d1-2"));
        assert!(f.names_source("topics", "anything#D1-2"));
        assert!(!f.names_source("topics", "../sources/D1.md#d1-3"));
    }

    #[test]
    fn what_cannot_be_forgotten_is_refused() {
        let none: [&str; 0] = [];
        assert_eq!(
            Forgetting::new(["not-a-source"], none, None).map_err(|e| e.code()),
            Err("FORGET_INVALID_SOURCE")
        );
        assert_eq!(
            Forgetting::new(none, ["a_b"], None).map_err(|e| e.code()),
            Err("FORGET_INVALID_BLOCK")
        );
        assert!(Forgetting::new(none, ["mem_a_b", "6dfc15f1"], None).is_ok());
        for literal in ["", " \t", "a\nb", "a\u{2028}b", "FORGOTTEN", "[", "forgotten: ", "ten"] {
            assert_eq!(
                Forgetting::new(none, none, Some(literal)).map_err(|e| e.code()),
                Err("FORGET_INVALID_LITERAL"),
                "{literal:?}"
            );
        }
        assert!(Forgetting::new(none, none, Some("[secret]")).is_ok());
    }
}
