//! The identity types that layers which must not know each other share.
//!
//! Key decision: [`WorkspaceId`] is both a line of the on-disk format
//! (`.scriptorium/workspace-id`, parsed by the engine through `scriptorium-topics-format`, which
//! re-exports it) and the value of every session marker (`scriptorium-markers`, which must know
//! no Markdown). A crate of its own, with no dependency of ours, lets both use the one type
//! without the markers crate pulling in the topic grammar.
//!
//! # Example
//!
//! ```
//! use scriptorium_ids::{InvalidWorkspaceId, WorkspaceId};
//!
//! // A file's final newline is ignored; anything else must be `w-` + 8 lower-case hex digits.
//! let id = WorkspaceId::parse("w-4f21c8e0\n")?;
//! assert_eq!(id.as_str(), "w-4f21c8e0");
//! assert_eq!(WorkspaceId::from_bits(0xdead_beef).to_string(), "w-deadbeef");
//! assert_eq!(WorkspaceId::parse("w-4F21C8E0"), Err(InvalidWorkspaceId("w-4F21C8E0".into())));
//! # Ok::<(), InvalidWorkspaceId>(())
//! ```

mod workspace_id;

pub use workspace_id::{InvalidWorkspaceId, WorkspaceId};
