//! The write pipeline: batches, archive-first writes, the model agent loop with confined tools,
//! one repair turn, organize, and the model clients.
//!
//! Key decision: effects happen in the order archive evidence → install topics → mark nodes, so a
//! crash can only cause a recoverable duplicate, never a silently lost turn.
//!
//! # Limitations
//!
//! Not implemented yet: this crate is filled by the writer issue.
