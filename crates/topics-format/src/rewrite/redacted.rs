//! Recognising a redacted frame next to its original (see
//! `docs/format.md#rewriting-texts-in-place-redact`): what lets a merge of two clones, one of
//! which has run `scriptorium redact` and one not yet, keep the redacted frame instead of
//! stopping at a conflict, as it keeps a [tombstone](crate::forget::is_tombstone).
//!
//! The rule is on [`is_redaction`] (its numbers and the names `R`, `O` and `O'` are used
//! below); here is why it is that rule.
//!
//! # Why this rule
//!
//! - It is what the rewrite produces. `rewrite_archive` maps a record's whole message with the
//!   redactor and keeps everything else of the frame (`super::archive`). The redactor first
//!   removes every private span, then replaces non-empty secrets of what is left by markers and
//!   never touches a marker already there; so its output is `O'` with some non-empty runs
//!   replaced by markers, which is exactly (2) (a marker `O'` already held is a piece boundary
//!   of `R` that stands for itself). Redacting twice, or with more rules, still derives from
//!   the original.
//! - It is conservative. Every literal character of `R` outside its markers is a character of
//!   `O'`, in place: `R` says nothing that `O` did not say, so keeping `R` loses only what a
//!   marker or a private span covered. Two unrelated messages conflict, and so does a marker
//!   put where the original had different text around it (the pieces must be found as they
//!   are), a marker that replaced nothing (the gap must be non-empty), a deletion that is not a
//!   whole private span (only `O'` is accepted without a marker; the original still holds the
//!   tags, so this is checkable), and a change of header, speaker or metadata.
//! - A pure removal is accepted because a `<private>` span leaves no marker, but only as the
//!   removal of *every* private span of the original, the way the redactor removes them.
//! - (3) makes the relation one-way, so a merge never has to choose between two frames that
//!   each "redact" the other: `[REDACTED:a]` and `[REDACTED:b]` (or `x [REDACTED:a]` and
//!   `x [REDACTED:b]`) differ only inside their markers, and the redactor never rewrites a
//!   marker, so they are two different redactions and conflict. The redactor's output is never
//!   affected but in contrived cases: the way back would have to find the original's private
//!   tag, or the secret a marker replaced, in the output, right where the original had it.
//!
//! Two clones that redacted the same record with different rules hold two redactions of one
//! original; when one is a redaction of the other (one clone's rules found more), that one
//! wins; otherwise no frame is a redaction of the other and the merge reports a conflict for
//! the source ID: a frame holding both redactions cannot be built without the original, which
//! neither side has any more (redacting again on both clones with the same rules settles it).
//!
//! # Cost
//!
//! Finding the pieces is greedy and linear: each middle piece is taken at its leftmost place
//! after the previous one (plus one character for the marker's text), which leaves the most
//! room for the pieces after it, so the greedy placement fits whenever any placement does.

use std::borrow::Cow;

use crate::forget::is_tombstone;
use crate::source::Frame;
use crate::source::scan::record_content_start;

/// Whether `redacted` is a redaction of `original`: the same frame but for a message that
/// derives from the original's by removing its private spans and replacing non-empty runs of
/// what is left by redaction markers. Never true for a tombstone, for two frames with different
/// source IDs, headers, speaker or metadata lines, or for two equal frames; never true both
/// ways.
///
/// Precisely, a frame `R` is a *redaction* of a frame `O` (same source ID) when
///
/// 1. neither is a tombstone, and everything but the message is the same: the speaker and
///    metadata lines (present or absent alike, byte for byte), and the record header
///    `[<timestamp>] <label>: ` (so the anchor, source-id and header lines are the same, and the
///    `record-lines` count is the only other line that may differ);
/// 2. the messages (all the record text after the header) differ, and `R`'s message *derives
///    from* `O`'s: take `O`'s message with its private spans removed, exactly as
///    `scriptorium-redact` removes them (tags `<private>`/`</private>` matched ASCII
///    case-insensitively, nesting, an unclosed span running to the end of the message, a stray
///    `</private>` kept, repeated while a removal joins a new tag, 16 rounds at most); call it
///    `O'`. Cut `R`'s message at every marker (`[REDACTED]`, or `[REDACTED:<id>]` with `<id>` =
///    `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`, the redactor's own marker shape) into the pieces
///    `p0 m1 p1 … mk pk`. Then `O'` must be `p0 x1 p1 … xk pk` with every `xi` non-empty: the
///    pieces are `O'`'s own text, in order, without overlap, the first at its start and the last
///    at its end, and each marker stands for some text between them. With no marker (`k = 0`)
///    this says `R`'s message *is* `O'`: a pure removal of private spans;
/// 3. and `O`'s message does not also derive from `R`'s: two messages that differ only inside
///    their markers (`[REDACTED:a]` and `[REDACTED:b]`) derive from each other, so neither is
///    the other's redaction, and a merge of the two conflicts.
pub fn is_redaction(redacted: &Frame<'_>, original: &Frame<'_>) -> bool {
    if redacted.source_id != original.source_id
        || redacted.speaker_marker != original.speaker_marker
        || redacted.meta_token != original.meta_token
        || is_tombstone(redacted)
        || is_tombstone(original)
    {
        return false;
    }
    // Every scanned frame's first record line is a header.
    let Some(at) = record_content_start(original.record) else { return false };
    if record_content_start(redacted.record) != Some(at)
        || redacted.record.get(..at) != original.record.get(..at)
    {
        return false;
    }
    is_redacted_message(&redacted.record[at..], &original.record[at..])
}

/// Whether the message `redacted` is a redaction of the message `original` (rules 2 and 3 of
/// [`is_redaction`]): `redacted` derives from `original` and not the other way round. A message
/// never is a redaction of itself.
///
/// ```
/// use scriptorium_topics_format::rewrite::is_redacted_message;
///
/// let original = "key sk-0123 <private>at home</private>for staging";
/// assert!(is_redacted_message("key [REDACTED:openai] for staging", original));
/// assert!(is_redacted_message("key sk-0123 for staging", original));
/// // Other text around the marker, a deletion that is no private span, or the way back.
/// assert!(!is_redacted_message("key [REDACTED:openai] for production", original));
/// assert!(!is_redacted_message("key sk-0123 staging", original));
/// assert!(!is_redacted_message(original, "key [REDACTED:openai] for staging"));
/// ```
pub fn is_redacted_message(redacted: &str, original: &str) -> bool {
    derives(redacted, original) && !derives(original, redacted)
}

/// Rule (2): `redacted` differs from `original` and is `original` without its private spans,
/// with non-empty runs replaced by markers.
fn derives(redacted: &str, original: &str) -> bool {
    if redacted == original {
        return false;
    }
    let kept = strip_private(original);
    let pieces = split_at_markers(redacted);
    let (Some((first, rest)), Some(last)) = (pieces.split_first(), pieces.last()) else {
        return false;
    };
    if rest.is_empty() {
        // No marker: only the removal of the private spans.
        return *first == kept;
    }
    let Some(mut at) = kept.starts_with(first).then_some(first.len()) else { return false };
    let middle = &rest[..rest.len() - 1];
    for piece in middle {
        // The marker before this piece stands for at least one character.
        let Some(from) = after_one_char(&kept, at) else { return false };
        let Some(found) = kept[from..].find(piece) else { return false };
        at = from + found + piece.len();
    }
    let Some(from) = after_one_char(&kept, at) else { return false };
    kept.len() >= from + last.len() && kept.ends_with(last)
}

/// The byte offset one character after `at` in `text`, `None` at its end.
fn after_one_char(text: &str, at: usize) -> Option<usize> {
    text.get(at..)?.chars().next().map(|c| at + c.len_utf8())
}

/// How every marker starts.
const MARKER: &str = "[REDACTED";

/// The longest rule ID a marker holds (the redactor's bound).
const MAX_RULE_ID: usize = 64;

/// The length of the marker that starts `text`, if one does: `[REDACTED]`, or
/// `[REDACTED:<id>]` with `<id>` = `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
fn marker_len(text: &str) -> Option<usize> {
    let rest = text.strip_prefix(MARKER)?;
    if rest.starts_with(']') {
        return Some(MARKER.len() + 1);
    }
    let id = rest.strip_prefix(':')?;
    let bytes = id.as_bytes();
    let len = bytes
        .iter()
        .take(MAX_RULE_ID)
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        .count();
    let valid = len > 0 && bytes[0].is_ascii_alphanumeric() && bytes.get(len) == Some(&b']');
    valid.then_some(MARKER.len() + 1 + len + 1)
}

/// `text` cut at every marker (leftmost first; markers cannot overlap, as none holds a `[`
/// after its first byte): the pieces between them, one more than there are markers.
fn split_at_markers(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut piece_start = 0;
    let mut search = 0;
    while let Some(found) = text[search..].find(MARKER) {
        let start = search + found;
        match marker_len(&text[start..]) {
            Some(len) => {
                pieces.push(&text[piece_start..start]);
                piece_start = start + len;
                search = piece_start;
            }
            None => search = start + 1,
        }
    }
    pieces.push(&text[piece_start..]);
    pieces
}

const OPEN: &str = "<private>";
const CLOSE: &str = "</private>";

/// How many rounds of removal [`strip_private`] makes before it cuts at the first opening tag
/// (the redactor's bound).
const MAX_ROUNDS: usize = 16;

/// `text` with its private spans removed as `scriptorium-redact` removes them (see the
/// [module docs](self)).
fn strip_private(text: &str) -> Cow<'_, str> {
    let mut current = Cow::Borrowed(text);
    for _ in 0..MAX_ROUNDS {
        let spans = private_spans(&current);
        if spans.is_empty() {
            return current;
        }
        let mut out = String::with_capacity(current.len());
        let mut kept_from = 0;
        for (start, end) in spans {
            out.push_str(&current[kept_from..start]);
            kept_from = end;
        }
        out.push_str(&current[kept_from..]);
        current = Cow::Owned(out);
    }
    let first_open = tags(&current).find(|&(_, _, open)| open).map(|(start, _, _)| start);
    match first_open {
        Some(start) => Cow::Owned(current[..start].to_owned()),
        None => current,
    }
}

/// The byte ranges of the private spans of `text`, tags included, in order: a span ends at the
/// closing tag that returns to level 0; an unclosed one at the end of the text.
fn private_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (at, end, open) in tags(text) {
        if open {
            if depth == 0 {
                start = at;
            }
            depth += 1;
        } else if depth > 0 {
            depth -= 1;
            if depth == 0 {
                spans.push((start, end));
            }
        }
    }
    if depth > 0 {
        spans.push((start, text.len()));
    }
    spans
}

/// The private tags of `text` (start, end, whether it opens), matched ASCII
/// case-insensitively, left to right. A tag holds no `<` after its first byte, so trying each
/// `<` in turn finds the same tags as a leftmost search.
fn tags(text: &str) -> impl Iterator<Item = (usize, usize, bool)> + '_ {
    let bytes = text.as_bytes();
    let is_at = move |at: usize, tag: &str| {
        bytes.get(at..at + tag.len()).is_some_and(|b| b.eq_ignore_ascii_case(tag.as_bytes()))
    };
    text.match_indices('<').filter_map(move |(at, _)| {
        if is_at(at, OPEN) {
            Some((at, at + OPEN.len(), true))
        } else if is_at(at, CLOSE) {
            Some((at, at + CLOSE.len(), false))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forget::tombstone_frame;
    use crate::source::{ArchiveRecord, render_archive, scan};

    /// Whether `redacted` is a redaction of `original`, checked against `expect`, and never
    /// both ways.
    #[track_caller]
    fn check(redacted: &str, original: &str, expect: bool) {
        assert_eq!(is_redacted_message(redacted, original), expect, "{redacted:?} of {original:?}");
        if expect {
            assert!(!is_redacted_message(original, redacted), "{original:?} of {redacted:?}");
        }
    }

    #[test]
    fn markers_stand_for_the_text_between_the_pieces() {
        check("a [REDACTED:k] b", "a KEY b", true);
        check("a KEY b", "a [REDACTED:k] b", false);
        check("[REDACTED:aws-access-token]", "AKIA0123", true);
        check("[REDACTED]", "any\nthing", true);
        check("a [REDACTED:k]b", "a KEY b", true);
        check("[REDACTED:k][REDACTED:j] x", "KEYSECRET x", true);
        check("é[REDACTED:k]ü", "éxü", true);
        check("[REDACTED:k]\n[REDACTED:k]", "a\nb", true);
        // A marker the original already held stays, and more is redacted around it.
        check("[REDACTED:a] [REDACTED:b]", "[REDACTED:a] KEY", true);
        check("p=[REDACTED:a] q=[REDACTED:b]", "p=[REDACTED:a] q=KEY", true);
        // Repeated text: the greedy placement still fits.
        check("ab[REDACTED:k]ab[REDACTED:k]ab", "abXabababYab", true);
        check("a[REDACTED:k]a", "aaa", true);
    }

    #[test]
    fn different_text_around_a_marker_conflicts() {
        check("x [REDACTED:k] b", "a KEY b", false);
        check("a [REDACTED:k] c", "a KEY b", false);
        check("a [REDACTED:k] b extra", "a KEY b", false);
        check("hello", "world", false);
        // A marker for nothing.
        check("a [REDACTED:k] b", "a  b", false);
        check("[REDACTED:k]a", "a", false);
        check("a[REDACTED:k]", "a", false);
        check("[REDACTED:k][REDACTED:j]", "K", false);
        check("[REDACTED:k]", "", false);
        // Not markers: literal text that must be found as it is.
        check("a [REDACTED:bad id] b", "a KEY b", false);
        check("a [REDACTED:-x] b", "a KEY b", false);
        check("a [REDACTED:] b", "a KEY b", false);
        let long = format!("[REDACTED:{}]", "x".repeat(65));
        check(&long, "KEY", false);
        check(&format!("[REDACTED:{}]", "x".repeat(64)), "KEY", true);
        // Equal messages are no redaction.
        check("same", "same", false);
        check("[REDACTED:k]", "[REDACTED:k]", false);
    }

    #[test]
    fn markers_that_differ_only_in_themselves_conflict() {
        check("[REDACTED:a]", "[REDACTED:b]", false);
        check("x [REDACTED:a]", "x [REDACTED:b]", false);
        check("[REDACTED]", "[REDACTED:b]", false);
    }

    #[test]
    fn a_removal_is_of_every_whole_private_span() {
        check("ab", "a<private>x</private>b", true);
        check("a b", "a<PRIVATE>x\ny</Private> b", true);
        check("ab", "a<private>1 <private>2</private> 3</private>b", true);
        check("a ", "a <private>runs to the end", true);
        check("a ", "a <private>x</private><private>y", true);
        check("a </private> b", "a </private> b<private>x</private>", true);
        // The redactor joins `<priv` and `ate>` into a new tag once the inner span goes.
        check("a b", "a <priv<private>x</private>ate>y</private>b", true);
        // Not a private span, not every span, or not all of it.
        check("ab", "axb", false);
        check("a", "a <private>x", false);
        check("a <private>y</private>", "a <private>x</private><private>y</private>", false);
        check("a</private>b", "a<private>x</private>b", false);
        check("a<private>x</private>b", "ab", false);
        // With a marker too, in either order of the two rules.
        check("a [REDACTED:k] b", "a <private>p</private>KEY b", true);
        check("a [REDACTED:k]", "a KEY <private>p", true);
        check("a [REDACTED:k] <private>p</private>", "a KEY <private>p</private>", false);
    }

    #[test]
    fn joined_tags_beyond_the_rounds_cut_at_the_first_tag() {
        let depth = 20;
        let mut text = String::from("keep ");
        text.push_str(&"<priv".repeat(depth));
        text.push_str("<private>x</private>");
        for _ in 0..depth {
            text.push_str("ate>y</private>");
        }
        let stripped = strip_private(&text);
        assert!(stripped.starts_with("keep "), "{stripped}");
        assert!(!stripped.to_ascii_lowercase().contains(OPEN), "{stripped}");
        assert!(matches!(strip_private("no tags"), Cow::Borrowed("no tags")));
    }

    /// Rule (2) by exhaustive search: every placement of every piece.
    fn derives_by_search(redacted: &str, original: &str) -> bool {
        fn place(pieces: &[&str], text: &str, from: usize) -> bool {
            let Some((piece, rest)) = pieces.split_first() else { return from == text.len() };
            if rest.is_empty() {
                return text.len() >= from + piece.len() && text.ends_with(piece);
            }
            (from..=text.len()).any(|at| {
                text.is_char_boundary(at)
                    && text[at..].starts_with(piece)
                    && after_one_char(text, at + piece.len())
                        .is_some_and(|next| place(rest, text, next))
            })
        }
        let kept = strip_private(original);
        let pieces = split_at_markers(redacted);
        if redacted == original {
            return false;
        }
        if pieces.len() == 1 {
            return pieces[0] == kept;
        }
        kept.starts_with(pieces[0])
            && after_one_char(&kept, pieces[0].len())
                .is_some_and(|next| place(&pieces[1..], &kept, next))
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2048))]

        /// The greedy placement finds a placement whenever there is one.
        #[test]
        fn the_greedy_placement_fits_whenever_any_does(
            random in "[ab\\[\\]]{0,10}",
            parts in proptest::collection::vec(("[ab]{0,3}", proptest::bool::ANY, "[ab]{0,2}"), 1..5),
            filled in proptest::bool::ANY,
        ) {
            let redacted: String = parts
                .iter()
                .map(|(text, marker, _)| {
                    if *marker { format!("{text}[REDACTED:k]") } else { text.clone() }
                })
                .collect();
            // Either unrelated, or the pieces with each marker filled by some text (maybe none).
            let original = if filled {
                parts
                    .iter()
                    .map(|(text, marker, fill)| if *marker { format!("{text}{fill}") } else { text.clone() })
                    .collect()
            } else {
                random
            };
            proptest::prop_assert_eq!(
                derives(&redacted, &original),
                derives_by_search(&redacted, &original),
                "{:?} of {:?}", redacted, original
            );
        }
    }

    const PATH: &str = "sources/openprogram/_v2/t.md";

    fn frame(speaker: Option<&str>, timestamp: &str, content: &str) -> String {
        let mut record = ArchiveRecord::new("openprogram", "t", "m1", 1, "user", content);
        record.timestamp = Some(timestamp.into());
        record.speaker_id = speaker.map(Into::into);
        record.render()
    }

    /// Whether the one frame of `redacted` is a redaction of the one frame of `original`.
    fn redacts(redacted: &str, original: &str) -> bool {
        let (redacted, original) = (render_archive(&[redacted]), render_archive(&[original]));
        let (r, o) = (scan(PATH, &redacted), scan(PATH, &original));
        assert!(r.complete && o.complete);
        is_redaction(&r.frames[0], &o.frames[0])
    }

    #[test]
    fn a_frame_is_redacted_only_in_its_message() {
        let original = frame(Some("owner/local"), "2024", "a KEY\nb <private>x\ny");
        let redacted = frame(Some("owner/local"), "2024", "a [REDACTED:k]\nb ");
        assert!(redacts(&redacted, &original));
        assert!(!redacts(&original, &redacted));
        assert!(!redacts(&original, &original));
        // Another timestamp, speaker or label is another frame.
        assert!(!redacts(&frame(Some("owner/local"), "2025", "a [REDACTED:k]\nb "), &original));
        assert!(!redacts(&frame(None, "2024", "a [REDACTED:k]\nb "), &original));
        assert!(!redacts(&frame(Some("someone"), "2024", "a [REDACTED:k]\nb "), &original));
        let mut pending =
            ArchiveRecord::new("openprogram", "t", "m1", 1, "user", "a [REDACTED:k]\nb ");
        pending.timestamp = Some("2024".into());
        pending.speaker_id = Some("owner/local".into());
        pending.trust_state = crate::source::TrustState::Pending;
        assert!(!redacts(&pending.render(), &original));
        // A tombstone is not a redaction (it supersedes the frame on its own terms).
        let tomb = tombstone_frame("openprogram/t/m1", "2024");
        assert!(!redacts(&tomb, &original) && !redacts(&original, &tomb));
    }
}
