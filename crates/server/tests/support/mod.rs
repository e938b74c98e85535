//! The fixture the MCP tests share: a memory workspace holding one valid topic that cites a
//! source archived with the owner's provenance.

use std::path::{Path, PathBuf};

use scriptorium_backend::engine::{Surface, UpdateContext, UpdateRequest};
use scriptorium_backend::memory::MemoryWorkspace;

/// The topic the fixture installs (its label is replaced by the archived source ID).
pub(crate) const TOPIC: &str = "# Garden\n\nDana is planning a vegetable garden.[^e1]\n\n\
[^e1]: Time: `2024-04-02`; Sources: [garden](new-source-garden)\n";

/// Where the fixture installs [`TOPIC`].
pub(crate) const TOPIC_PATH: &str = "topics/garden.md";

/// The local owner's update context, as the CLI and the MCP server build it.
pub(crate) fn owner_context() -> UpdateContext {
    UpdateContext::owner(Surface::Cli, "owner-test/fixture")
}

/// Creates a workspace at `<dir>/memory` with [`TOPIC`] installed and returns its root. The
/// workspace is closed again (its index writer released) before this returns.
pub(crate) fn memory_with_topic(dir: &Path) -> PathBuf {
    let root = dir.join("memory");
    let memory = MemoryWorkspace::open(&root, true).expect("a new workspace opens");
    let base = memory.workspace().revision().expect("a revision");
    let body = serde_json::json!({
        "base_revision": base.as_str(),
        "changes": [{ "path": TOPIC_PATH, "action": "write", "content": TOPIC }],
        "sources": [{
            "label": "new-source-garden", "role": "user",
            "content": "I'm planning a vegetable garden.",
            "observed_at": "2024-04-02T09:00:00+02:00",
        }],
        "commit_message": "add the garden",
    });
    let request = UpdateRequest::from_json(&body.to_string()).expect("a valid request");
    let outcome = memory.workspace().update_with(request, owner_context()).expect("installs");
    assert!(outcome.installed.changed_files.iter().any(|f| f == TOPIC_PATH));
    root
}
