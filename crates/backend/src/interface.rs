//! The nine-method interface a runtime talks to (see `ARCHITECTURE.md#cratesbackend`): `name` is
//! required, every other method has a default that does nothing, so a runtime can hold any
//! backend (including [`DisabledBackend`]) behind one trait object.
//!
//! Contract: `system_prompt` and `search` return text already fenced in `<memory-context>` (or
//! empty); `write` follows the three-way result of a write (`Ok` is "nothing to report"); no method
//! panics or fails a turn — a failure is a value.

use async_trait::async_trait;
use scriptorium_session_dag::{Node, SessionId};
use scriptorium_writer::{OrganizeReport, WriteFailure, WriteReport};

/// What `write` returns: a report (possibly of nothing) or a retryable/permanent failure.
pub type WriteOutcome = Result<WriteReport, WriteFailure>;

/// A memory backend.
#[async_trait]
pub trait MemoryBackend: Send + Sync {
    /// The backend's name (`local`, `none`).
    fn name(&self) -> &str;

    /// Whether the backend can serve requests now.
    async fn is_available(&self) -> bool {
        true
    }

    /// A session starts (the runtime tells the backend which sessions it owes a final write).
    async fn initialize(&self, _session: &SessionId) {}

    /// The core block to put into the system prompt, fenced (empty when none or disabled).
    async fn system_prompt(&self) -> String {
        String::new()
    }

    /// Recall for one turn, fenced (empty when nothing matches).
    async fn search(&self, _query: &str) -> String {
        String::new()
    }

    /// Writes what `session` owes: `messages` (nodes not yet in the store) are added first;
    /// `force` at a session boundary.
    async fn write(&self, session: &SessionId, _messages: &[Node], _force: bool) -> WriteOutcome {
        Ok(WriteReport { session: session.0.clone(), batches: Vec::new() })
    }

    /// Before a compactor drops `messages` from the context: makes sure they are archived and
    /// pending (written later), and returns the already-written blocks that cite them, fenced.
    async fn extract_before_discard(&self, _session: &SessionId, _messages: &[Node]) -> String {
        String::new()
    }

    /// Reorganizes every topic (nightly, `scriptorium sleep`).
    async fn reorganize(&self) -> OrganizeReport {
        OrganizeReport {
            status: "skipped".into(),
            topics: 0,
            changed_files: Vec::new(),
            error: None,
        }
    }

    /// The runtime stops: flush what is owed.
    async fn shutdown(&self) {}
}

/// `memory.backend = "none"`: every method is its default; `reorganize` says `disabled`.
#[derive(Clone, Copy, Debug, Default)]
pub struct DisabledBackend;

#[async_trait]
impl MemoryBackend for DisabledBackend {
    fn name(&self) -> &str {
        "none"
    }

    async fn is_available(&self) -> bool {
        false
    }

    async fn reorganize(&self) -> OrganizeReport {
        OrganizeReport {
            status: "disabled".into(),
            topics: 0,
            changed_files: Vec::new(),
            error: None,
        }
    }
}
