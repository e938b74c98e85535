//! The session store: conversations as a branching DAG of nodes, with heads, branches and node
//! metadata, plus importers for Claude Code, Codex, pi and generic JSONL transcripts.
//!
//! Key decision: one append-only, fsynced log per session, so a crash can only tear the last
//! line, which is skipped on read.
//!
//! # Limitations
//!
//! Filled in by the sessions issue.
