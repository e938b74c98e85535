//! What the faces (the CLI, the web API, the MCP server, the hooks) take from the engine below
//! the backend: its vocabulary — revisions, errors and their codes, the change request, the
//! outcome of an install — and the pure checks and renders they show. They depend on the
//! backend only (`cargo xtask deps` refuses a face → `txn` or `views` edge): every change and
//! every read that needs the workspace lock goes through [`crate::memory::MemoryWorkspace`]
//! (`edit`, `update`, `adopt_outside_edits`, `search`, `rebuild`), so no face runs its own
//! begin → validate → install.

pub use scriptorium_txn::validate::Violation;
pub use scriptorium_txn::{
    Error as TxnError, ErrorCode, IdSource, Installed, LockTimeout, RandomIds, Revision, Surface,
    UpdateContext, UpdateOutcome, UpdateRequest, Workspace, WorkspaceId, restore_workspace_id,
    writable_path,
};
pub use scriptorium_views::{compact as compact_core, render_core};
pub use scriptorium_workspace_fs::read::{FsSources, read_topics};
