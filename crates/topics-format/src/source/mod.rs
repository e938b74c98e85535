//! The source archive: IDs, locations, v2 frames, the strict scan, append planning, legacy forms,
//! and source-target resolution for topic files (see `docs/format.md#source-archive` and
//! `docs/format.md#source-link-targets`).
//!
//! Key decision: one strict reading everywhere. The scan stops at the first fault and never
//! resynchronizes, so a record body can never forge a frame, a speaker or a trust line; the same
//! scan decides citation ([`ArchiveResolver`]), trust, the per-file check ([`check_archive`]) and
//! whether an archive may be appended to ([`plan_append`]). Everything byte-level follows the
//! Python implementation exactly (its `quote`, `isprintable`, `casefold`, canonical JSON), so
//! archives written by either side scan identically on the other.
//!
//! # Limitations
//!
//! * No IO: reading files, listing directories and the atomic write are the caller's, through
//!   [`crate::catalog::SourceFiles`] and [`ArchiveTree`].
//! * A legacy-shape `source-meta` token whose `version` is spelled `1.0`/`true`, or whose string
//!   fields hold other JSON types, is refused; Python's reader would accept such hand-made tokens
//!   (no writer ever produced them).
//! * The Unicode tables (printable, case folding, decimal digits) are Python 3.11's (Unicode
//!   14.0).
//!
//! ```
//! use scriptorium_topics_format::source::{ArchiveRecord, plan_append, scan};
//! use std::collections::BTreeMap;
//!
//! let mut record = ArchiveRecord::new("openprogram", "sess-7f2a", "u1", 1, "user", "Hello");
//! record.timestamp = Some("2024-03-15T10:00:00+08:00".into());
//! let tree = BTreeMap::new();
//! let plan = plan_append(&[record], &tree).expect("valid record");
//! let write = &plan.writes[0];
//! assert_eq!(write.rel_path, "sources/openprogram/_v2/sess-7f2a.md");
//! let scanned = scan(&write.rel_path, &write.new_text);
//! assert!(scanned.complete);
//! assert_eq!(scanned.frames[0].source_id, "openprogram/sess-7f2a/u1");
//! ```

pub mod append;
pub mod frame;
pub mod id;
pub mod legacy;
pub mod meta;
pub mod resolve;
pub mod scan;
pub mod speaker;
pub mod unicode;

pub use append::{AppendError, AppendPlan, ArchiveTree, PlannedWrite, plan_append};
pub use frame::{ArchiveRecord, FrameParts, render_archive, render_frame};
pub use id::{Location, SourceId, V2_MARKER, anchor_for, is_v2_emittable, is_v2_source_path};
pub use meta::{AuthorityTier, DecodedMeta, SourceMeta, TrustState};
pub use resolve::ArchiveResolver;
pub use scan::{Frame, Scan, scan};

use crate::diag::Diagnostic;

/// The per-file check `scriptorium check` runs on `sources/**`: a v2 path gets the strict scan
/// (an incomplete archive yields one diagnostic at its first fault), a legacy path gets the
/// lenient legacy reading ([`legacy::check_legacy`]); any other file (not `.md`, not under
/// `sources/`) is ignored.
pub fn check_archive(rel_path: &str, text: &str) -> Vec<Diagnostic> {
    if !rel_path.starts_with("sources/") || !rel_path.ends_with(".md") {
        return Vec::new();
    }
    if is_v2_source_path(rel_path) {
        return scan(rel_path, text).fault.into_iter().collect();
    }
    legacy::check_legacy(rel_path, text)
}
