//! Every text format of a Scriptorium memory workspace: topic files, the v2 source archive, the ID
//! formulas and token counting. No IO.
//!
//! Key decision: the formats are byte-compatible with the Python implementation (OpenProgram's
//! "scriptorium"), so a workspace written by either opens in the other. Parsing never stops at
//! the first problem: it returns what it understood **and** every [`Diagnostic`] at once, each
//! with a stable [`Code`], so an editor, the CLI and a transaction can all show the full list.
//! Files come in as text: reading them (and refusing symlinks) is the caller's job, through the
//! [`catalog::SourceFiles`] seam.
//!
//! # Limitations
//!
//! Filled in by the formats issue; see each module for what it covers.
#![forbid(unsafe_code)]

pub mod catalog;
pub mod diag;

pub use diag::{Code, Diagnostic};
pub mod source;
pub mod tokens;
pub mod topic;

pub use topic::{TopicFile, TreeParse, Unit, check_tree, normalize, parse_tree};
