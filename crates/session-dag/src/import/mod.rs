//! Transcript importers: Claude Code, Codex, pi and generic JSONL.
