//! The seam between the topic grammar and the source archive: what a topic parse needs to know
//! about `sources/`, supplied by the caller because this crate does no IO.

use std::collections::BTreeMap;
use std::sync::Arc;

/// The outcome of looking up one file under `sources/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileLookup {
    /// A regular file (not a symlink) with this UTF-8 text.
    Text(Arc<str>),
    /// Nothing at that path.
    Missing,
    /// Something that must not be cited: a symlink, a directory, a non-UTF-8 file.
    NotRegularFile,
}

/// Read access to the workspace's `sources/` tree.
///
/// Implemented by callers that do IO (the CLI, `txn`) and by in-memory maps in tests. Paths are
/// workspace-relative, `/`-separated, and start with `sources/` (e.g.
/// `sources/openprogram/_v2/sess-7f2a.md`). Implementations must not follow symlinks.
pub trait SourceFiles {
    /// Looks up one file.
    fn lookup(&self, rel: &str) -> FileLookup;
}

/// An in-memory tree: workspace-relative path → text.
impl SourceFiles for BTreeMap<String, String> {
    fn lookup(&self, rel: &str) -> FileLookup {
        match self.get(rel) {
            Some(text) => FileLookup::Text(Arc::from(text.as_str())),
            None => FileLookup::Missing,
        }
    }
}

/// Why a definition link target did not resolve to a source reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetError {
    /// The message, e.g. `invalid source target: ../../sources/x.md#source-…`.
    pub message: String,
}

/// Source-target resolution as the topic parser and the normalizer need it (see
/// `docs/format.md#source-link-targets`).
///
/// `topic_path` is always relative to `topics/` (e.g. `projects/budget-tracker.md`).
pub trait SourceResolver {
    /// Resolves one definition link target of `topic_path` to a source reference: a plain handle
    /// is returned verbatim, `relpath#anchor` is looked up in the archive it names, a
    /// `#d<n>-<t>` fragment falls back to `D<n>:<t>`; anything else is an error.
    fn resolve_target(&self, topic_path: &str, target: &str) -> Result<String, TargetError>;

    /// The relative link target that cites `source_ref` from `topic_path` (`_source_link`): the
    /// v2 location when the archive holds a valid frame for it, otherwise the legacy location.
    fn link_target(&self, topic_path: &str, source_ref: &str) -> String;
}
