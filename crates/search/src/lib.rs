//! Recall: a persisted tantivy index over topic blocks and source records.
//!
//! This crate will own the index under `.scriptorium/index/`, updated incrementally from what each
//! install and archive append changed, with CJK unigram + bigram tokenization, path, date and
//! speaker filters, a relevance floor, and the `<memory-context>` fence.
//!
//! Key decision: a per-turn query never re-reads or re-hashes the trees; it compares the workspace
//! revision (one small read) and otherwise only reads the index.
//!
//! # Limitations
//!
//! Not implemented yet: this crate is filled by the views and recall issue.
