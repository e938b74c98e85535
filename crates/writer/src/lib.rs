//! The write pipeline: batches, archive-first writes, the model agent loop with confined tools,
//! one repair turn, and organize. The HTTP model clients implement its [`model::Chat`] seam from
//! the crate above (`scriptorium-model-clients`).
//!
//! Key decision: effects happen in the order archive evidence → install topics → mark nodes, so a
//! crash can only cause a recoverable duplicate, never a silently lost turn.
//!
//! # Example
//!
//! The `journal` model (no model at all: each user turn becomes one cited paragraph) writes a
//! session's two turns into the day's journal, and marks them written.
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//! use scriptorium_session_dag::{
//!     EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Speaker, Timestamp,
//! };
//! use scriptorium_txn::Workspace;
//! use scriptorium_writer::model::journal::Journal;
//! use scriptorium_writer::{Writer, WriterConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let ws = Workspace::init(dir.path().join("memory"))?;
//! let store = Arc::new(EmbeddedStore::open(dir.path().join("sessions"))?);
//! let session = SessionId("garden".into());
//! for (i, (role, text)) in [(Role::User, "I planted beans today."), (Role::Assistant, "Noted.")]
//!     .into_iter()
//!     .enumerate()
//! {
//!     store.append(&session, Node {
//!         id: NodeId(format!("t{i}")),
//!         parent: (i > 0).then(|| NodeId(format!("t{}", i - 1))),
//!         role,
//!         kind: NodeKind::Message,
//!         speaker: (role == Role::User)
//!             .then(|| Speaker { id: "owner/local".into(), display: "Dana".into() }),
//!         content: text.into(),
//!         created_at: Timestamp(1_710_493_200_000 + 60_000 * i as i64), // 2024-03-15
//!         metadata: BTreeMap::new(),
//!         rewound: false,
//!     })?;
//! }
//! let writer = Writer::new(ws.clone(), store, Arc::new(Journal), WriterConfig::default());
//! let report = writer.write(&session, true).map_err(|f| f.reason)?; // forced: session end
//! assert_eq!(report.batches.len(), 1);
//! let journal = std::fs::read_to_string(ws.root().join("topics/journal/2024/03-15.md"))?;
//! assert!(journal.contains("Dana said: I planted beans today."), "{journal}");
//! // Written once: a second pass owes nothing.
//! assert!(writer.write(&session, true).map_err(|f| f.reason)?.batches.is_empty());
//! # Ok(())
//! # }
//! ```

pub mod agent;
pub mod model;
pub mod outcome;
pub mod prompt;
pub mod tools;
pub mod usage;
pub mod writer;

pub use agent::{ChatModel, Model, Progress, RunReport, Task, TaskKind, TaskTurn, TurnProgress};
pub use outcome::{FailureCode, WriteFailure};
pub use usage::{Ledger, TokenUsage, UsageTotals};
pub use writer::{
    BatchReport, OrganizeReport, PROVIDER, WriteReport, Writer, WriterConfig, archive_path,
    archive_record, source_id,
};
