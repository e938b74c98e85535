//! Derived views of the memory workspace: `core.md`, `timeline/`, `recent_events.jsonl`,
//! `relations.json`.
//!
//! This crate will render `core.md` from `topics/core.md` under a token budget and rebuild the
//! timeline, recent-events and relations views deterministically (same topics, same bytes).
//!
//! Key decision: views never fail a transaction; they are rebuilt after every install and can be
//! deleted and rebuilt at any time (`scriptorium rebuild`).
//!
//! # Limitations
//!
//! Not implemented yet: this crate is filled by the views and recall issue.
