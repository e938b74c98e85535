//! The nine-method `MemoryBackend` interface, `LocalBackend`, configuration and the runtime
//! services (idle-session watcher, nightly reorganize).
//!
//! Key decision: this is the layer where async, the wall clock, HTTP and git meet; everything
//! below it is synchronous and has the clock and ID generation injected.
//!
//! # Limitations
//!
//! Not implemented yet: this crate is filled by the backend issue.
