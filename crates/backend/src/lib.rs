//! The memory backend: where the transaction engine, the derived views, the git history, the
//! session store and the writer are put together behind the nine-method [`MemoryBackend`]
//! interface ([`LocalBackend`]), with its configuration ([`config`]).
//!
//! [`runtime`] holds the runtime services: the idle-session watcher, the nightly reorganize and
//! the writer status file.
//!
//! Key decision: this is the layer where the wall clock and git meet the synchronous crates
//! below it. [`memory::MemoryWorkspace`] opens a workspace with one install observer that, after
//! every install and still under the write lock, rebuilds the derived views from the installed
//! units and then records the transaction (and the views it rewrote) as one git commit. Neither
//! step can undo an install: a failure is reported as "memory committed, git not".
//!
//! # Limitations
//!
//! - Views that a crash left stale between an install and their rebuild are refreshed by the
//!   next install or by a full rebuild, not on open.
//!
//! # Example
//!
//! ```
//! use scriptorium_backend::memory::MemoryWorkspace;
//! use scriptorium_txn::BeginOptions;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let memory = MemoryWorkspace::open(dir.path().join("memory"), true)?;
//! let mut staged = memory.workspace().begin(BeginOptions::default())?;
//! staged.write_file("topics/empty.md", "# Nothing cited yet\n")?;
//! // A file without records is pruned by normalization: the install changes nothing.
//! let installed = staged.validate().map_err(|r| format!("{:?}", r.violations()))?.install()?;
//! assert!(installed.changed_files.is_empty());
//! assert!(memory.history().is_some());
//! # Ok(())
//! # }
//! ```

pub mod config;
pub mod conversations;
pub mod edit;
pub mod engine;
pub mod forget;
pub mod hits;
pub mod inspect;
pub mod intake;
pub mod interface;
pub mod local;
pub mod memory;
pub mod models;
pub mod privacy;
pub mod project;
pub mod redact;
pub mod runtime;
pub mod sessions;
pub mod summary;
pub mod sync;
pub mod wire;

pub use config::Config;
pub use interface::{DisabledBackend, MemoryBackend, WriteOutcome};
pub use local::{
    BackendStatus, LocalBackend, OpenError, archive_unwritten, injected_core, injected_core_at,
};
