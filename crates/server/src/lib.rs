//! The REST API and the web UI (Topics, Timeline, Recent, Core), secure by default.
//!
//! Key decision: every write goes through the same transaction as every other change, with
//! compare-and-set on the revision the page read.
//!
//! # Limitations
//!
//! Not implemented yet: this crate is filled by the web UI issue.
