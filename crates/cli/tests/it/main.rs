//! Integration tests of the `scriptorium` binary (one binary, one module per command).

mod agents;
mod check;
mod concurrency;
mod demo;
mod edit;
mod forget;
mod history;
mod hook;
mod import;
mod memory;
mod model;
mod note;
mod outside;
mod pg_tls;
mod plugin;
mod read;
mod recall;
mod redact;
mod sessions;
mod setup;
mod support;
mod sync;
mod truth;
mod update;
mod watch;
mod write;
