//! Every text format of a Scriptorium memory workspace: topic files, the v2 source archive, the ID
//! formulas and token counting. No IO.
//!
//! Key decision: the formats are byte-compatible with the Python implementation (OpenProgram's
//! "scriptorium"), so a workspace written by either opens in the other; where the reference
//! lists a bug we fix it in a way the other side still accepts (evidence IDs keyed by (file,
//! label); special-token text counted as plain text). Parsing never stops at the first problem:
//! it returns what it understood **and** every [`Diagnostic`] at once, each with a stable
//! [`Code`], so an editor, the CLI and a transaction can all show the full list. Files come in as
//! text: reading them (and refusing symlinks) is the caller's job, through the
//! [`catalog::SourceFiles`] seam.
//!
//! - [`topic`]: segmentation, the strict parse ([`parse_tree`], [`check_tree`]), the lossless
//!   [`topic::Document`] (`render(parse(text)) == text` for every input), normalization
//!   ([`normalize`]) and block links.
//! - [`source`]: source IDs and locations, v2 frames, the strict scan that never
//!   resynchronizes, idempotent append planning, legacy read-only forms, and
//!   [`source::ArchiveResolver`], which resolves citations against the archive.
//! - [`tokens`]: o200k_base token counts.
//! - [`forget`] and [`rewrite`]: the pure rewrites of every stored text that a forget and a
//!   redaction apply to the live files and to the blobs of the git history, never breaking the
//!   structure the readers rely on.
//!
//! # Limitations
//!
//! - The strict grammar rejects unevidenced prose (intros, bare lists): every paragraph must be a
//!   cited record, as in the Python implementation.
//! - Differences from Obsidian's block-ID rules are listed in the [`topic`] module docs.
//! - Unicode tables (printable, case folding, digits) follow Python 3.11 (Unicode 14.0).
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use scriptorium_topics_format::source::ArchiveResolver;
//! use scriptorium_topics_format::{Code, TopicFile, parse_tree};
//!
//! let archive = "<!-- openprogram-source-archive:v2 -->\n\n\
//!     <a id=\"source-d7e6772098d6b0d9\"></a>\n\
//!     <!-- source-id:openprogram/sess-7f2a/u1 -->\n\
//!     <!-- record-lines:1 -->\n\
//!     [2024-03-15T10:00:00+08:00] Owner: I'm building a budget tracker in Flask.\n";
//! let sources = BTreeMap::from([(
//!     "sources/openprogram/_v2/sess-7f2a.md".to_owned(),
//!     archive.to_owned(),
//! )]);
//! let topic = TopicFile {
//!     path: "projects/budget-tracker.md".into(),
//!     text: "# Budget tracker\n\n\
//!            Craig is building a budget tracker in Flask.[^e-cecd4ddc68] ^6dfc15f1\n\n\
//!            [^e-cecd4ddc68]: Time: `2024-03-15`; Sources: [Flask tracker]\
//!            (../../sources/openprogram/_v2/sess-7f2a.md#source-d7e6772098d6b0d9)\n\n\
//!            A paragraph without evidence.\n"
//!         .into(),
//! };
//! let parsed = parse_tree(&[topic], &ArchiveResolver::new(sources));
//! assert_eq!(parsed.units[0].memory_id, "6dfc15f1");
//! assert_eq!(parsed.units[0].refs, ["openprogram/sess-7f2a/u1"]);
//! assert_eq!(parsed.diagnostics[0].code, Code::UncitedParagraph);
//! assert_eq!(parsed.diagnostics[0].line, 7);
//! ```

pub mod catalog;
pub mod diag;
pub mod forget;
pub mod merge;
pub mod project;
pub mod python;
pub mod rewrite;
pub mod source;
pub mod tokens;
pub mod topic;

pub use diag::{Code, Diagnostic};
pub use forget::{ForgetError, Forgetting};
pub use rewrite::RewriteError;
/// The workspace identity (`.scriptorium/workspace-id`), re-exported from `scriptorium-ids`, where
/// the markers crate reaches it without this crate.
pub use scriptorium_ids::{InvalidWorkspaceId, WorkspaceId};
pub use topic::{BlockId, TopicFile, TreeParse, Unit, check_tree, normalize, parse_tree};
