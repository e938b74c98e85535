//! Where everything of a memory workspace lives, and which paths are internal (see
//! `docs/format.md#the-memory-workspace` and `docs/format.md#internal-paths`).

use std::path::{Path, PathBuf};

/// The paths of one workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Layout {
    /// The workspace root (`memory/`).
    pub root: PathBuf,
    /// `topics/`: the Markdown topic files.
    pub topics: PathBuf,
    /// `sources/`: the append-only archives.
    pub sources: PathBuf,
    /// `.scriptorium/`: runtime state (never committed).
    pub runtime: PathBuf,
    /// `.scriptorium/txn/`: stages and the spare tree.
    pub txn: PathBuf,
    /// `.scriptorium/write.lock`: the workspace write lock.
    pub lock: PathBuf,
    /// `.scriptorium/revision`: the revision record.
    pub revision: PathBuf,
    /// `.scriptorium/intent.json`: an install in progress.
    pub intent: PathBuf,
    /// `.scriptorium/intent.next`: the file the next intent record is written into (the last
    /// one, renamed here when it was removed), so that an install makes no new inode for it.
    pub intent_next: PathBuf,
    /// `.scriptorium/txn/spare`: the tree the last install replaced, recycled by the next
    /// `begin` as its stage.
    pub spare: PathBuf,
    /// `.scriptorium/txn/spare-stage`: the empty stage directory the last install left, renamed
    /// by the next `begin` into its stage (no new directory per transaction).
    pub spare_stage: PathBuf,
    /// `.scriptorium/runtime.json`: the Python implementation's runtime record.
    pub runtime_json: PathBuf,
    /// `.scriptorium/workspace-id`: the workspace identity.
    pub workspace_id: PathBuf,
    /// `.scriptorium/catalog`: what validation knows of every committed topic file (derived,
    /// keyed by content hash; see the `txn` crate's `validate::catalog`).
    pub catalog: PathBuf,
}

impl Layout {
    /// The layout of the workspace at `root`.
    pub fn new(root: &Path) -> Layout {
        let runtime = root.join(".scriptorium");
        Layout {
            root: root.to_path_buf(),
            topics: root.join("topics"),
            sources: root.join("sources"),
            txn: runtime.join("txn"),
            lock: runtime.join("write.lock"),
            revision: runtime.join("revision"),
            intent: runtime.join("intent.json"),
            intent_next: runtime.join("intent.next"),
            spare: runtime.join("txn").join("spare"),
            spare_stage: runtime.join("txn").join("spare-stage"),
            runtime_json: runtime.join("runtime.json"),
            workspace_id: runtime.join("workspace-id"),
            catalog: runtime.join("catalog"),
            runtime,
        }
    }
}

/// Whether `name` is a runtime name: `.scriptorium`, `.nativemem`, or starting with
/// `.scriptorium-` / `.nativemem-` (the Python implementation's `is_runtime_name`).
pub fn is_runtime_name(name: &[u8]) -> bool {
    name == b".scriptorium"
        || name == b".nativemem"
        || name.starts_with(b".scriptorium-")
        || name.starts_with(b".nativemem-")
}

/// Whether the workspace-relative path `rel` (components separated by `/`) is internal: its
/// first component is a runtime name or `.git`. Internal paths are never committed, listed,
/// read for a caller or searched.
///
/// ```
/// use scriptorium_workspace_fs::is_internal_path;
/// assert!(is_internal_path(".scriptorium/runtime.json"));
/// assert!(is_internal_path(".scriptorium-bm25.json"));
/// assert!(is_internal_path(".git/config"));
/// assert!(!is_internal_path("topics/core.md"));
/// ```
pub fn is_internal_path(rel: &str) -> bool {
    is_internal_bytes(rel.as_bytes())
}

/// [`is_internal_path`] of a path that may not be UTF-8.
pub fn is_internal_bytes(rel: &[u8]) -> bool {
    let first = rel.split(|b| *b == b'/').next().unwrap_or_default();
    is_runtime_name(first) || first == b".git"
}
