//! From workspace files to index documents: the blocks of one topic file, the frames of one
//! v2 archive, and the resolution of a block's citations against the index.

use std::collections::HashMap;

use scriptorium_topics_format::catalog::{SourceResolver, TargetError};
use scriptorium_topics_format::source::id::parse_d_handle;
use scriptorium_topics_format::source::unicode::strip;
use scriptorium_topics_format::source::{TrustState, is_v2_emittable, scan};
use scriptorium_topics_format::{TopicFile, parse_tree};
use tantivy::TantivyDocument;

use crate::model::{DateEncoding, parse_temporal};
use crate::schema::{Fields, KIND_BLOCK, KIND_SOURCE, Key, fingerprint, index_text};
use crate::tokenize::for_each_token;

/// Turns before a record that are indexed as its context.
const CONTEXT_BEFORE: usize = 2;
/// Turns after a record that are indexed as its context (the reply it got).
const CONTEXT_AFTER: usize = 1;
/// Characters of each neighbouring turn in a record's context: the start of a long tool output
/// says what it is about; its tail would only make every neighbour match everything.
const CONTEXT_CHARS: usize = 500;

/// Marks a citation whose target names no archived record (yet): the rest is the
/// `sources/…#anchor` key, so the block is found again when that archive appears.
pub(crate) const UNRESOLVED: &str = "\u{1}unresolved:";

/// What a sync learned about source records before it commits: these win over the index.
#[derive(Debug, Default)]
pub(crate) struct Overrides {
    /// Source id → trusted (`None`: the record is gone).
    pub(crate) ids: HashMap<String, Option<bool>>,
    /// `<archive>#<anchor>` → source id, for the archives this sync re-read.
    pub(crate) anchors: HashMap<String, String>,
    /// The archives this sync re-read (their anchors are exactly `anchors`).
    pub(crate) archives: std::collections::HashSet<String>,
}

/// Looks up what the committed index knows about source records.
pub(crate) trait SourceLookup {
    /// The source id archived under `akey` (`<archive>#<anchor>`).
    fn id_for_anchor(&self, akey: &str) -> Option<String>;
    /// Whether the source record `id` is archived and trusted (`None`: not archived).
    fn trusted(&self, id: &str) -> Option<bool>;
}

/// Resolves citations of one topic file for indexing: never fails (an unresolvable target
/// becomes an [`UNRESOLVED`] reference, which makes the block pending).
pub(crate) struct IndexResolver<'a> {
    pub(crate) overrides: &'a Overrides,
    pub(crate) lookup: &'a dyn SourceLookup,
}

impl IndexResolver<'_> {
    fn anchor_id(&self, akey: &str) -> Option<String> {
        if let Some(id) = self.overrides.anchors.get(akey) {
            return Some(id.clone());
        }
        let archive = akey.split_once('#').map_or(akey, |(path, _)| path);
        if self.overrides.archives.contains(archive) {
            return None;
        }
        self.lookup.id_for_anchor(akey)
    }

    /// Whether a resolved reference is trusted.
    pub(crate) fn trusted(&self, reference: &str) -> bool {
        if reference.starts_with(UNRESOLVED) {
            return false;
        }
        match self.overrides.ids.get(reference) {
            Some(state) => state.unwrap_or(false),
            None => self.lookup.trusted(reference).unwrap_or(false),
        }
    }
}

impl SourceResolver for IndexResolver<'_> {
    fn resolve_target(&self, topic_path: &str, target: &str) -> Result<String, TargetError> {
        let stripped = strip(target);
        if parse_d_handle(stripped).is_some()
            || (!stripped.contains('#') && is_v2_emittable(stripped))
        {
            return Ok(stripped.to_owned());
        }
        if let Some(akey) = archive_key(topic_path, stripped) {
            if let Some(id) = self.anchor_id(&akey) {
                return Ok(id);
            }
            return Ok(format!("{UNRESOLVED}{akey}"));
        }
        if let Some(handle) = d_fragment(stripped) {
            return Ok(handle);
        }
        Ok(format!("{UNRESOLVED}{stripped}"))
    }

    fn link_target(&self, _topic_path: &str, source_ref: &str) -> String {
        source_ref.to_owned()
    }
}

/// `relpath#anchor` of a topic file (relative to `topics/`) → `sources/…#anchor`, when the
/// path stays inside `sources/`.
fn archive_key(topic_path: &str, target: &str) -> Option<String> {
    let (raw_path, anchor) = target.split_once('#')?;
    if raw_path.is_empty() || anchor.is_empty() || raw_path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = vec!["topics"];
    parts.extend(topic_path.split('/').filter(|p| !p.is_empty()));
    parts.pop();
    for part in raw_path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    let path = parts.join("/");
    path.starts_with("sources/").then(|| format!("{path}#{anchor}"))
}

/// `…#d<n>-<t>` (case-insensitive) → `D<n>:<t>`.
fn d_fragment(target: &str) -> Option<String> {
    let (_, fragment) = target.rsplit_once('#')?;
    let rest = fragment.strip_prefix(['d', 'D'])?;
    let (n, t) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(n) && digits(t)).then(|| format!("D{n}:{t}"))
}

/// Link text instead of links, no HTML comments, whitespace collapsed.
///
/// A link is `[text](target)` where `text` holds no `[`, `]` or newline and `target` runs to the
/// first `)`; an unclosed `<!--` hides the rest of the text. Linear in the length of `text`:
/// each of its four searches (the next `<` or `[`, the end of a link text, the next `)`, the end
/// of a comment) examines every byte at most once, so a message of bracket soup costs what any
/// other message of its size costs.
pub(crate) fn clean_text(text: &str) -> String {
    clean_text_counting(text, &mut 0)
}

/// [`clean_text`], adding to `steps` the bytes its searches examined.
fn clean_text_counting(text: &str, steps: &mut usize) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    // The first `)` at or after the position it was searched from: link targets are searched
    // from ever later positions, so one search serves every `[` until the `)` is passed, and a
    // text without `)` is searched once, not once per `[`.
    let mut paren: Option<(usize, Option<usize>)> = None;
    let mut at = 0;
    while at < bytes.len() {
        let Some(skip) = position(&bytes[at..], steps, |b| b == b'<' || b == b'[') else {
            out.push_str(&text[at..]);
            break;
        };
        out.push_str(&text[at..at + skip]);
        at += skip;
        if bytes[at..].starts_with(b"<!--") {
            let body = &text[at + 4..];
            let end = body.find("-->");
            *steps += end.map_or(body.len(), |end| end + 3);
            at = end.map_or(bytes.len(), |end| at + 4 + end + 3);
            out.push(' ');
            continue;
        }
        if bytes[at] == b'[' {
            // The link text ends at the first `[`, `]` or newline; only a `](` there opens a
            // target. The bytes examined lie before the next `[`, so these searches never
            // overlap.
            let from = at + 1;
            let stop = position(&bytes[from..], steps, |b| matches!(b, b'[' | b']' | b'\n'));
            if let Some(close) = stop.map(|i| from + i)
                && bytes[close] == b']'
                && bytes.get(close + 1) == Some(&b'(')
            {
                let start = close + 2;
                let target_end = match paren {
                    Some((searched, found))
                        if searched <= start && found.is_none_or(|p| p >= start) =>
                    {
                        found
                    }
                    _ => {
                        let found =
                            position(&bytes[start..], steps, |b| b == b')').map(|i| start + i);
                        paren = Some((start, found));
                        found
                    }
                };
                if let Some(end) = target_end {
                    out.push_str(&text[from..close]);
                    at = end + 1;
                    continue;
                }
            }
        }
        // A `<` or `[` that opens nothing: ASCII, so one byte is one character.
        out.push(char::from(bytes[at]));
        at += 1;
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What an empty searchable field holds: a stopword, which no query looks up. Every segment
/// then has every searchable field, and a search never meets a segment without one, for which
/// tantivy builds an empty term dictionary (an FST builder of a 10 000-cell registry, about half a
/// millisecond of a search process).
const PLACEHOLDER: &str = "a";

fn or_placeholder(text: String) -> String {
    if text.is_empty() { PLACEHOLDER.to_owned() } else { text }
}

/// The first `max` characters of `text`.
fn truncate_at_char(text: &str, max: usize) -> &str {
    text.char_indices().nth(max).map_or(text, |(at, _)| &text[..at])
}

/// The first index of `hay` whose byte satisfies `pred`, adding the bytes examined to `steps`.
fn position(hay: &[u8], steps: &mut usize, pred: impl Fn(u8) -> bool) -> Option<usize> {
    let found = hay.iter().position(|&b| pred(b));
    *steps += found.map_or(hay.len(), |i| i + 1);
    found
}

fn add_dates(doc: &mut TantivyDocument, fields: &Fields, dates: &[String]) {
    for date in dates {
        doc.add_text(fields.dates, date);
        match parse_temporal(date).map(|t| t.encoding()) {
            Some(DateEncoding::Day(v)) => doc.add_text(fields.keys, Key::Day.number(v)),
            Some(DateEncoding::Month(v)) => doc.add_text(fields.keys, Key::Month.number(v)),
            Some(DateEncoding::Year(v)) => doc.add_text(fields.keys, Key::Year.number(v)),
            None => {}
        }
    }
}

/// The documents of one topic file (`rel` is workspace-relative, `topics/…`): one per block
/// paragraph, keyed by its identity (aliases are not repeated).
pub(crate) fn block_docs(
    fields: &Fields,
    rel: &str,
    text: &str,
    resolver: &IndexResolver<'_>,
) -> Vec<TantivyDocument> {
    let Some(topic_path) = rel.strip_prefix("topics/") else {
        return Vec::new();
    };
    let parsed = parse_tree(&[TopicFile::new(topic_path, text)], resolver);
    let mut docs = Vec::new();
    for unit in parsed.units.iter().filter(|u| !u.legacy && u.memory_id == u.identity) {
        let content = clean_text(&unit.content);
        let headings: Vec<&str> = unit.headings.iter().map(String::as_str).collect();
        let dates: Vec<&str> = unit.whens.iter().map(String::as_str).collect();
        let trusted = !unit.refs.is_empty() && unit.refs.iter().all(|r| resolver.trusted(r));
        let mut doc = TantivyDocument::new();
        doc.add_text(fields.kind, KIND_BLOCK);
        doc.add_text(fields.keys, Key::Kind.text(KIND_BLOCK));
        doc.add_text(fields.id, &unit.identity);
        doc.add_text(fields.keys, Key::Id.text(&unit.identity));
        doc.add_text(fields.file, rel);
        doc.add_text(fields.keys, Key::File.text(rel));
        doc.add_text(fields.keys, Key::Path.text(rel));
        doc.add_text(fields.anchor, format!("^{}", unit.identity));
        // Only what can be recalled is searchable: a pending block is stored (its trust is
        // looked up and changes with its sources) but holds no search terms.
        let text = if trusted {
            index_text(&content, rel, &headings, &dates, None)
        } else {
            String::new()
        };
        doc.add_text(fields.text, or_placeholder(text));
        // A block has no conversational context.
        doc.add_text(fields.context, PLACEHOLDER);
        doc.add_text(fields.content, &content);
        for heading in &headings {
            doc.add_text(fields.headings, heading);
        }
        add_dates(&mut doc, fields, &unit.whens);
        doc.add_u64(fields.trusted, u64::from(trusted));
        doc.add_text(fields.keys, Key::Trusted.text(if trusted { "1" } else { "0" }));
        for reference in &unit.refs {
            let reference = reference.strip_prefix(UNRESOLVED).unwrap_or(reference);
            doc.add_text(fields.refs, reference);
            doc.add_text(fields.keys, Key::Ref.text(reference));
        }
        doc.add_u64(fields.line, u64::from(unit.line));
        doc.add_u64(fields.fingerprint, fingerprint(&content));
        docs.push(doc);
    }
    docs
}

/// One archived record as the index sees it.
pub(crate) struct SourceRecord {
    pub(crate) id: String,
    pub(crate) akey: String,
    pub(crate) trusted: bool,
    pub(crate) doc: TantivyDocument,
}

/// The records of one v2 archive (`rel` workspace-relative); an incomplete archive yields the
/// frames before its first fault, as the strict scan does.
///
/// Each record's `context` field holds the text of the [`CONTEXT_BEFORE`] turns before it and
/// the [`CONTEXT_AFTER`] after it in the same archive (one archive is one session), so a short
/// reply ("Yes, last weekend!") is found by the question it answers; only trusted turns count.
pub(crate) fn source_docs(fields: &Fields, rel: &str, text: &str) -> Vec<SourceRecord> {
    let scanned = scan(rel, text);
    let logical = rel.replace("/_v2/", "/");
    let bodies: Vec<String> = scanned
        .frames
        .iter()
        .map(|frame| clean_text(frame.content().unwrap_or(frame.record)))
        .collect();
    let mut records = Vec::with_capacity(scanned.frames.len());
    for (at, frame) in scanned.frames.iter().enumerate() {
        let trusted = frame.trust() == TrustState::Trusted;
        let label = frame.speaker_label();
        let display = frame.speaker_display();
        let speaker_id = frame.speaker_id();
        let timestamp = frame.timestamp();
        let date = timestamp
            .get(..10)
            .filter(|d| parse_temporal(d).is_some())
            .map(str::to_owned)
            .into_iter()
            .collect::<Vec<_>>();
        let dates: Vec<&str> = date.iter().map(String::as_str).collect();
        let speaker_text = display.as_deref().or(label);
        let mut doc = TantivyDocument::new();
        doc.add_text(fields.kind, KIND_SOURCE);
        doc.add_text(fields.keys, Key::Kind.text(KIND_SOURCE));
        doc.add_text(fields.id, frame.source_id);
        doc.add_text(fields.keys, Key::Id.text(frame.source_id));
        doc.add_text(fields.file, rel);
        doc.add_text(fields.keys, Key::File.text(rel));
        doc.add_text(fields.keys, Key::Path.text(rel));
        if logical != rel {
            doc.add_text(fields.keys, Key::Path.text(&logical));
        }
        doc.add_text(fields.anchor, frame.anchor);
        let akey = format!("{rel}#{}", frame.anchor);
        doc.add_text(fields.keys, Key::Anchor.text(&akey));
        let text = if trusted {
            index_text(&bodies[at], "", &[], &dates, speaker_text)
        } else {
            String::new()
        };
        doc.add_text(fields.text, or_placeholder(text));
        let mut context = String::new();
        let neighbours =
            at.saturating_sub(CONTEXT_BEFORE)..(at + CONTEXT_AFTER + 1).min(bodies.len());
        // Only trusted turns lend their words: a pending record is never recalled, nor does it
        // steer what is.
        let trusted_neighbour =
            |&n: &usize| n != at && scanned.frames[n].trust() == TrustState::Trusted;
        for body in neighbours.filter(trusted_neighbour).map(|n| &bodies[n]) {
            if !context.is_empty() {
                context.push(' ');
            }
            context.push_str(truncate_at_char(body, CONTEXT_CHARS));
        }
        doc.add_text(fields.context, or_placeholder(if trusted { context } else { String::new() }));
        doc.add_text(fields.content, frame.record);
        add_dates(&mut doc, fields, &date);
        let mut speakers: Vec<String> = Vec::new();
        for value in [speaker_id.as_deref(), display.as_deref(), label].into_iter().flatten() {
            let lowered = value.to_lowercase();
            if !lowered.is_empty() && !speakers.contains(&lowered) {
                speakers.push(lowered);
            }
        }
        for value in &speakers {
            doc.add_text(fields.keys, Key::Speaker.text(value));
        }
        let mut words: Vec<String> = Vec::new();
        for name in [display.as_deref(), label].into_iter().flatten() {
            for_each_token(name, |word, _, _| {
                if !words.iter().any(|w| w == word) {
                    words.push(word.to_owned());
                }
            });
        }
        for word in words.iter().filter(|_| trusted) {
            doc.add_text(fields.keys, Key::SpeakerWord.text(word));
        }
        if let Some(id) = &speaker_id {
            doc.add_text(fields.speaker_id, id);
        }
        if let Some(display) = &display {
            doc.add_text(fields.speaker_display, display);
        }
        if let Some(label) = label {
            doc.add_text(fields.speaker_label, label);
        }
        doc.add_u64(fields.trusted, u64::from(trusted));
        doc.add_text(fields.keys, Key::Trusted.text(if trusted { "1" } else { "0" }));
        doc.add_u64(fields.line, u64::from(frame.line));
        doc.add_u64(fields.fingerprint, fingerprint(&bodies[at]));
        records.push(SourceRecord { id: frame.source_id.to_owned(), akey, trusted, doc });
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_keys() {
        assert_eq!(
            archive_key("projects/a.md", "../../sources/p/_v2/t.md#source-1").as_deref(),
            Some("sources/p/_v2/t.md#source-1")
        );
        assert_eq!(archive_key("a.md", "../x.md#y"), None);
        assert_eq!(d_fragment("../sources/D1.md#d1-3").as_deref(), Some("D1:3"));
    }

    /// Bracket runs of a 200 KB message made the cleaning quadratic: every `[` searched the
    /// rest of the text for `](` (and every `[](` for a `)`), ~30 s per message at indexing.
    #[test]
    fn bracket_soup_is_cleaned_in_linear_steps() {
        for unit in ["[", "[^", "[x]", "[](", "[a](b", "[[](", "<!--[", "]("] {
            let text = unit.repeat(200 * 1024 / unit.len());
            let mut steps = 0;
            let cleaned = clean_text_counting(&text, &mut steps);
            assert!(steps <= 4 * text.len(), "{unit:?}: {steps} steps for {} bytes", text.len());
            // Nothing here is a complete link or comment: the text survives, except a comment
            // that is never closed, which hides the rest.
            if !unit.starts_with("<!--") {
                assert_eq!(cleaned, text, "{unit:?}");
            }
        }
    }

    /// The quadratic cleaning this module used before, kept as the reference the linear one must
    /// agree with.
    fn clean_text_reference(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("<!--") {
                rest = after.find("-->").map_or("", |end| &after[end + 3..]);
                out.push(' ');
                continue;
            }
            if rest.starts_with('[')
                && let Some(close) = rest.find("](")
                && let Some(end) = rest[close..].find(')')
                && !rest[1..close].contains(['[', ']', '\n'])
            {
                out.push_str(&rest[1..close]);
                rest = &rest[close + end + 1..];
                continue;
            }
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                out.push(c);
            }
            rest = chars.as_str();
        }
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn links_and_comments() {
        for (text, want) in [
            ("[a](x) [b](y)", "a b"),
            ("[a [b](x)", "[a b"),
            ("[a]](x)", "[a]](x)"),
            ("[a\nb](x)", "[a b](x)"),
            ("[a](x\ny) z", "a z"),
            ("[a](no close", "[a](no close"),
            ("[](x)é", "é"),
            ("<!-- [a](x) --> b <!-- open", "b"),
            ("[a<!--](x)-->", "a<!---->"),
            ("<b>[^1]</b>", "<b>[^1]</b>"),
        ] {
            assert_eq!(clean_text(text), want, "{text:?}");
            assert_eq!(clean_text_reference(text), want, "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_the_reference(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "[", "]", "(", ")", "](", "<", "<!--", "-->", "\n", " ", "a", "é", "^",
                ]),
                0..40,
            )
        ) {
            let text = parts.concat();
            proptest::prop_assert_eq!(clean_text(&text), clean_text_reference(&text));
        }
    }

    #[test]
    fn cleaning() {
        assert_eq!(
            clean_text("see [the tracker](x.md#^ab)  <!-- c --> now"),
            "see the tracker now"
        );
    }
}
