//! Rewriting the texts of a workspace in place with a text mapper (what `scriptorium redact`
//! applies to every stored text, in the live files and in every blob of the git history; see
//! `docs/format.md#rewriting-texts-in-place-redact`).
//!
//! Key decision: the mapper only ever sees *text*, one piece of the grammar at a time, and what
//! it returns is put back only where it cannot change the structure. A mapper (`&dyn Fn(&str) ->
//! Option<String>`, `None` for "unchanged") may remove a `<private>` span up to the end of what
//! it is given, or turn a secret into `[REDACTED:<rule-id>]`; applied to a whole file it would
//! let an unclosed `<private>` delete every block after it, swallow a frame's metadata comment,
//! or leave a frame's `record-lines` count stale. Here:
//!
//! - an archived record's message (after `[<timestamp>] <label>: `) is mapped as one text and
//!   its frame rendered again (count updated); the framing and tombstones stay byte for byte
//!   ([`rewrite_archive`]). A frame so rewritten is recognised next to its original
//!   ([`is_redaction`]), so a merge with a clone that has not redacted yet keeps it, as it keeps
//!   a tombstone ([`merge_archive`](crate::merge::merge_archive));
//! - a topic paragraph is mapped as one text with its citations, internal links and block IDs
//!   masked out and put back afterwards, so they can be neither altered nor removed (a
//!   citation the mapper's removal covered is put back after what is left of its text);
//!   headings, source labels, HTML, fence lines and fenced blocks are mapped each on their own
//!   ([`rewrite_topic`]);
//! - the derived views and any other file are mapped per JSON string or per line
//!   ([`rewrite_in_view`]).
//!
//! Where a mapped piece would not fit (a paragraph that would split or start a heading, a quote
//! left empty before its citation, a heading left without text), the piece becomes
//! [`REDACTED`] instead: the text is never kept as it was, the structure never changes. So every
//! archive still scans complete with the same source IDs in the same order, and every topic file
//! parses with the same block IDs in the same order and the same citations.
//!
//! # Limitations
//!
//! - Identifiers are never text: source IDs, anchors, speaker lines and labels, metadata
//!   tokens and timestamps of archives; block IDs, footnote IDs, times, source link targets and
//!   internal links (label and target) in topics; the forget ledger (`forgotten.jsonl`). A
//!   secret in one of them stays.
//! - Where a paragraph's mapped text does not fit, every piece of it between two tokens that
//!   the mapper changed becomes [`REDACTED`] whole: more goes than the mapper took.
//! - The result is idempotent when the mapper is (`map(map(x)) == map(x)`), as
//!   `scriptorium-redact`'s is.
//! - A legacy archive (no length framing) is mapped line by line, and refused
//!   ([`RewriteError::LegacyArchive`]) when that would change a header its readers key on.
//!
//! # Example
//!
//! ```
//! use scriptorium_topics_format::rewrite::rewrite_topic;
//!
//! let map = |text: &str| {
//!     let cut = text.find("<private>")?;
//!     Some(text[..cut].to_owned())
//! };
//! let topic = "# T\n\n\
//!     Ana lives at <private>12 Elm St.[^e-1] ^aaaaaaaa\n\n\
//!     Bob likes tea.[^e-1] ^bbbbbbbb\n\n\
//!     [^e-1]: Time: `2024`; Sources: [chat](openprogram/s/u1)\n";
//! assert_eq!(
//!     rewrite_topic(topic, &map).as_deref(),
//!     Some(
//!         "# T\n\n\
//!          Ana lives at[^e-1] ^aaaaaaaa\n\n\
//!          Bob likes tea.[^e-1] ^bbbbbbbb\n\n\
//!          [^e-1]: Time: `2024`; Sources: [chat](openprogram/s/u1)\n"
//!     )
//! );
//! ```

mod archive;
mod redacted;
mod topic;
mod view;

pub use archive::rewrite_archive;
pub use redacted::{is_redacted_message, is_redaction};
pub use topic::rewrite_topic;
pub use view::rewrite_in_view;

use crate::diag::Diagnostic;
use crate::forget::is_line_break;
use crate::python::is_space;

/// What stands for a piece of text whose mapped form would not fit where it stands: a quote
/// the mapper emptied before its citation, a heading left without text, a paragraph that would
/// no longer be one paragraph. A link label gets [`REDACTED_LABEL`] instead.
pub const REDACTED: &str = "[REDACTED]";

/// [`REDACTED`] where a link label stands (a label cannot hold `]`).
pub const REDACTED_LABEL: &str = "(REDACTED)";

/// Why a text cannot be rewritten without breaking what its readers rely on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RewriteError {
    /// A v2 archive that does not scan complete and holds text to rewrite: what the strict scan
    /// does not trust is not rewritten structurally ([`rewrite_in_view`] maps what follows its
    /// valid frames line by line).
    #[error("invalid or truncated v2 archive: {rel_path}")]
    IncompleteArchive {
        /// The archive, workspace-relative.
        rel_path: String,
        /// Where the scan stopped.
        fault: Option<Box<Diagnostic>>,
    },
    /// A legacy archive in which mapping the text lines would change a header its readers key
    /// on (a citable anchor and source-id pair, or a source-id comment that vouches for trust):
    /// without length framing, text and headers can run into each other.
    #[error("rewriting the legacy archive {rel_path} would change its headers")]
    LegacyArchive {
        /// The archive, workspace-relative.
        rel_path: String,
    },
    /// A v2 archive whose mapped records would not scan complete with the same source IDs (a
    /// record grown past the largest `record-lines` count).
    #[error("the rewritten archive {rel_path} would not scan complete")]
    ArchiveStructure {
        /// The archive, workspace-relative.
        rel_path: String,
    },
}

impl RewriteError {
    /// The stable code of the error (`SCREAMING_SNAKE_CASE`), for callers and the wire.
    pub fn code(&self) -> &'static str {
        match self {
            RewriteError::IncompleteArchive { .. } => "REWRITE_INCOMPLETE_ARCHIVE",
            RewriteError::LegacyArchive { .. } => "REWRITE_LEGACY_ARCHIVE",
            RewriteError::ArchiveStructure { .. } => "REWRITE_ARCHIVE_STRUCTURE",
        }
    }
}

/// The caller's mapper, never called on an empty text, and whose answer counts only when it
/// differs from its input.
#[derive(Clone, Copy)]
struct Map<'m>(&'m dyn Fn(&str) -> Option<String>);

impl Map<'_> {
    fn apply(self, text: &str) -> Option<String> {
        if text.is_empty() {
            return None;
        }
        (self.0)(text).filter(|new| new != text)
    }
}

/// `text` with the content of each LF-terminated line (a CR before the LF kept out of it)
/// replaced by what `edit` gives for it (its 0-based index and content); an edit holding a line
/// break becomes [`REDACTED`], so the line count never changes. `None` when nothing changes.
fn map_lines(text: &str, edit: &mut dyn FnMut(usize, &str) -> Option<String>) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut changed = false;
    let mut at = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let start = at;
        at += line.len();
        let content = line.strip_suffix('\n').unwrap_or(line);
        let content = content.strip_suffix('\r').unwrap_or(content);
        let Some(new) = edit(index, content) else { continue };
        let new = if new.contains(['\n', '\r']) { REDACTED } else { new.as_str() };
        out.push_str(&text[copied..start]);
        out.push_str(new);
        copied = start + content.len();
        changed = true;
    }
    if !changed {
        return None;
    }
    out.push_str(&text[copied..]);
    (out != text).then_some(out)
}

/// Every line of `text` mapped on its own: an unclosed `<private>` removes at most to the end
/// of its line.
fn map_text_lines(text: &str, map: Map<'_>) -> Option<String> {
    map_lines(text, &mut |_, line| map.apply(line))
}

/// A link label mapped, made a label again: `[` and `]` become `(` and `)`, a line break a
/// space, and a label left blank is [`REDACTED_LABEL`]. `None` when it does not change.
fn map_label(label: &str, map: Map<'_>) -> Option<String> {
    let mapped = map.apply(label)?;
    let mut out: String = mapped
        .chars()
        .map(|c| match c {
            '[' => '(',
            ']' => ')',
            c if is_line_break(c) => ' ',
            c => c,
        })
        .collect();
    if out.chars().all(is_space) {
        REDACTED_LABEL.clone_into(&mut out);
    }
    (out != label).then_some(out)
}

/// `text` (not blank) with what `text` had of leading and trailing whitespace around
/// [`REDACTED`]; whitespace alone stays as it is.
fn redacted_keeping_space(text: &str) -> String {
    let start = text.len() - text.trim_start_matches(is_space).len();
    let end = text.trim_end_matches(is_space).len();
    if start >= end {
        return text.to_owned();
    }
    format!("{}{REDACTED}{}", &text[..start], &text[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upper(text: &str) -> Option<String> {
        Some(text.to_uppercase())
    }

    #[test]
    fn lines_keep_their_breaks_and_count() {
        let lines = |text: &str| map_text_lines(text, Map(&upper));
        assert_eq!(lines("a\r\nb\n\nc").as_deref(), Some("A\r\nB\n\nC"));
        assert_eq!(lines("A\n"), None);
        assert_eq!(lines(""), None);
        let breaking = |text: &str| Some(format!("{text}\nx"));
        assert_eq!(
            map_text_lines("a\nb", Map(&breaking)).as_deref(),
            Some("[REDACTED]\n[REDACTED]")
        );
    }

    #[test]
    fn labels_stay_labels() {
        let to = |new: &'static str| move |_: &str| Some(new.to_owned());
        assert_eq!(map_label("key", Map(&to("[REDACTED:x]"))).as_deref(), Some("(REDACTED:x)"));
        assert_eq!(map_label("key", Map(&to(" \n"))).as_deref(), Some("(REDACTED)"));
        assert_eq!(map_label("a b", Map(&to("a\u{2028}b"))).as_deref(), None);
        assert_eq!(map_label("key", Map(&|_: &str| None)), None);
    }

    #[test]
    fn redacted_pieces_keep_their_spacing() {
        assert_eq!(redacted_keeping_space(" a b\n"), " [REDACTED]\n");
        assert_eq!(redacted_keeping_space("  "), "  ");
    }
}
