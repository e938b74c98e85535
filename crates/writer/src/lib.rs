//! The write pipeline: batches, archive-first writes, the model agent loop with confined tools,
//! one repair turn, and organize. The HTTP model clients implement its [`model::Chat`] seam from
//! the crate above (`scriptorium-model-clients`).
//!
//! Key decision: effects happen in the order archive evidence → install topics → mark nodes, so a
//! crash can only cause a recoverable duplicate, never a silently lost turn.

pub mod agent;
pub mod model;
pub mod outcome;
pub mod prompt;
pub mod tools;
pub mod writer;

pub use agent::{ChatModel, Model, Progress, RunReport, Task, TaskKind, TaskTurn, TurnProgress};
pub use outcome::{FailureCode, WriteFailure};
pub use writer::{
    BatchReport, OrganizeReport, PROVIDER, WriteReport, Writer, WriterConfig, archive_path,
    archive_record, source_id,
};
