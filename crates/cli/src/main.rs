//! `scriptorium`: the command-line tool of Scriptorium, long-term memory for LLM agents.

fn main() {}
