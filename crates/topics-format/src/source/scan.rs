//! The strict v2 scan (see `docs/format.md#the-strict-scan`): the valid prefix of frames, whether
//! the archive is complete, and where it went wrong.
//!
//! Architecture Invariant: the scan never resynchronizes. After the first fault nothing is
//! trusted, so a body line that looks like a frame header can never become a frame, and a
//! frame's body is skipped by its declared line count without being inspected. A declared count
//! is compared with the lines that exist before anything is sized by it, so
//! `record-lines:999999999` costs nothing.

use std::collections::HashSet;
use std::sync::Arc;

use super::frame::{FrameParts, render_frame};
use super::id::{
    SourceId, V2_MARKER, anchor_matches, is_v2_emittable, path_parts, split_id, v2_path_of,
};
use super::meta::{DecodedMeta, TrustState};
use super::speaker::{decode_speaker_id, normalize_identity_header_part};
use super::unicode::{decimal_value, is_space};
use crate::diag::{Code, Diagnostic};

/// One valid frame, borrowing from the scanned text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The source id.
    pub source_id: &'a str,
    /// The anchor id (`source-…`).
    pub anchor: &'a str,
    /// The `speaker-id` marker value as written (canonical), if the line is present.
    pub speaker_marker: Option<&'a str>,
    /// The `source-meta` token as written, if the line is present.
    pub meta_token: Option<&'a str>,
    /// The decoded metadata, if the line is present.
    pub meta: Option<Arc<DecodedMeta>>,
    /// The record text: the record lines joined by LF (CR and trailing spaces kept).
    pub record: &'a str,
    /// 1-based line of the anchor line.
    pub line: u32,
    /// 1-based line of the first record line.
    pub record_line: u32,
    /// The declared (and verified) number of record lines.
    pub record_lines: u32,
}

impl<'a> Frame<'a> {
    /// The decoded speaker id: `None` without a marker, `Some("")` for the empty marker (a
    /// trusted display-only identity).
    pub fn speaker_id(&self) -> Option<String> {
        self.speaker_marker.and_then(decode_speaker_id)
    }

    /// Trusted unless the metadata says pending; a frame without metadata is pre-authority
    /// evidence and counts as trusted.
    pub fn trust(&self) -> TrustState {
        self.meta.as_ref().map_or(TrustState::Trusted, |decoded| decoded.meta.trust_state)
    }

    /// The timestamp between the brackets of the first record line.
    pub fn timestamp(&self) -> &'a str {
        let end = self.record.find(']').unwrap_or(1);
        self.record.get(1..end).unwrap_or("")
    }

    /// The speaker label of the record header as the archive writes it (`] ` label `: `), or
    /// `None` for a header that was not written with a single space after `]`.
    pub fn speaker_label(&self) -> Option<&'a str> {
        self.label_and_content().map(|(label, _)| label)
    }

    /// The content after the speaker label (see [`Frame::speaker_label`]).
    pub fn content(&self) -> Option<&'a str> {
        self.label_and_content().map(|(_, content)| content)
    }

    /// The display part of the label: the label without a trailing ` (<normalized id>)`; `None`
    /// when the frame has no speaker marker.
    pub fn speaker_display(&self) -> Option<String> {
        let id = self.speaker_id()?;
        let label = self.speaker_label()?;
        let normalized = normalize_identity_header_part(&id);
        if !normalized.is_empty()
            && let Some(display) = label
                .strip_suffix(')')
                .and_then(|rest| rest.strip_suffix(normalized.as_str()))
                .and_then(|rest| rest.strip_suffix(" ("))
                .filter(|display| !display.is_empty())
        {
            return Some(display.to_owned());
        }
        Some(label.to_owned())
    }

    fn label_and_content(&self) -> Option<(&'a str, &'a str)> {
        let close = self.record.find(']')?;
        let after = self.record.get(close + 1..)?.strip_prefix(' ')?;
        let first = after.chars().next()?;
        let search_from = first.len_utf8();
        let colon = search_from + after.get(search_from..)?.find(": ")?;
        Some((&after[..colon], &after[colon + 2..]))
    }

    /// The parts to render this frame again.
    pub fn parts(&self) -> FrameParts<'a> {
        FrameParts {
            source_id: self.source_id,
            speaker_marker: self.speaker_marker,
            meta_token: self.meta_token,
            record: self.record,
        }
    }

    /// The frame rendered again; byte-identical to the scanned frame (with its final LF).
    pub fn render(&self) -> String {
        render_frame(&self.parts())
    }
}

/// The result of a strict scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scan<'a> {
    /// The valid frames before the first fault, in file order.
    pub frames: Vec<Frame<'a>>,
    /// Whether the whole file is valid (it ends exactly after the last frame's record lines
    /// plus one LF, or is a header with no frames).
    pub complete: bool,
    /// The first fault, when not complete.
    pub fault: Option<Diagnostic>,
    seen: HashSet<&'a str>,
}

impl<'a> Scan<'a> {
    /// Whether a valid frame holds `source_id`.
    pub fn contains(&self, source_id: &str) -> bool {
        self.seen.contains(source_id)
    }

    /// The valid frame holding `source_id`.
    pub fn frame(&self, source_id: &str) -> Option<&Frame<'a>> {
        if !self.contains(source_id) {
            return None;
        }
        self.frames.iter().find(|frame| frame.source_id == source_id)
    }

    /// The set of framed source ids.
    pub fn known_source_ids(&self) -> &HashSet<&'a str> {
        &self.seen
    }
}

/// Scans `text` as the v2 archive at `rel_path` (workspace-relative; a path without the leading
/// `sources/` is read as inside it). Every frame's source id must belong to this very file.
pub fn scan<'a>(rel_path: &str, text: &'a str) -> Scan<'a> {
    let mut scanner = Scanner {
        rel_path,
        expected_path: expected_path(rel_path),
        text,
        lines: text.split('\n').collect(),
        frames: Vec::new(),
        seen: HashSet::new(),
        last_meta: None,
        last_thread: None,
        last_speaker: None,
    };
    let fault = scanner.run().err();
    let complete = fault.is_none();
    Scan { frames: scanner.frames, complete, fault, seen: scanner.seen }
}

/// `Path(rel)` with `sources/` prefixed when missing, compared part by part like Python.
fn expected_path(rel_path: &str) -> Option<String> {
    if rel_path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = path_parts(rel_path).collect();
    if parts.first() != Some(&"sources") {
        parts.insert(0, "sources");
    }
    Some(parts.join("/"))
}

struct Scanner<'a, 'p> {
    rel_path: &'p str,
    expected_path: Option<String>,
    text: &'a str,
    lines: Vec<&'a str>,
    frames: Vec<Frame<'a>>,
    seen: HashSet<&'a str>,
    last_meta: Option<(&'a str, Arc<DecodedMeta>)>,
    last_thread: Option<(&'a str, &'a str)>,
    last_speaker: Option<&'a str>,
}

impl<'a> Scanner<'a, '_> {
    fn fault(&self, index: usize, col: usize, code: Code, message: String) -> Diagnostic {
        Diagnostic::new(
            self.rel_path,
            line_no(index),
            u32::try_from(col).unwrap_or(u32::MAX),
            code,
            message,
        )
    }

    fn run(&mut self) -> Result<(), Diagnostic> {
        let len = self.lines.len();
        if self.lines[0] != V2_MARKER {
            return Err(self.fault(
                0,
                1,
                Code::ArchiveHeader,
                format!("first line is not {V2_MARKER}"),
            ));
        }
        if len < 3 {
            return Err(self.fault(
                1,
                1,
                Code::ArchiveTruncated,
                "archive ends before the empty line after the marker".to_owned(),
            ));
        }
        if !self.lines[1].is_empty() {
            return Err(self.fault(
                1,
                1,
                Code::ArchiveHeader,
                "second line is not empty".to_owned(),
            ));
        }
        let mut index = 2;
        while index < len {
            if index == len - 1 && self.lines[index].is_empty() {
                return Ok(());
            }
            index = self.frame(index)?;
        }
        Ok(())
    }

    /// Reads the frame starting at `index`; returns the index after its empty line.
    fn frame(&mut self, index: usize) -> Result<usize, Diagnostic> {
        let len = self.lines.len();
        if index + 2 >= len {
            return Err(self.truncated(index, "archive ends inside a frame header"));
        }
        let anchor_line = self.lines[index];
        let Some(anchor) = match_anchor(anchor_line) else {
            return Err(self.fault(
                index,
                1,
                Code::FrameAnchor,
                format!("expected <a id=\"source-…\"></a>, found {}", excerpt(anchor_line)),
            ));
        };
        let Some(source_id) = between(self.lines[index + 1], "<!-- source-id:", " -->")
            .filter(|id| !id.is_empty() && !id.contains('>'))
        else {
            return Err(self.fault(
                index + 1,
                1,
                Code::FrameSourceId,
                format!("expected <!-- source-id:… -->, found {}", excerpt(self.lines[index + 1])),
            ));
        };
        let id_col = "<!-- source-id:".len() + 1;
        if !is_v2_emittable(source_id) {
            return Err(self.fault(
                index + 1,
                id_col,
                Code::FrameSourceId,
                format!("source id is not valid in a v2 header: {}", excerpt(source_id)),
            ));
        }
        if !self.belongs_here(source_id) {
            let location_path =
                SourceId::parse(source_id).map(|id| id.v2_path()).unwrap_or_default();
            return Err(self.fault(
                index + 1,
                id_col,
                Code::FramePathMismatch,
                format!("source id {source_id} belongs to {location_path}"),
            ));
        }
        if !anchor_matches(source_id, anchor) {
            return Err(self.fault(
                index,
                8,
                Code::FrameAnchorMismatch,
                format!(
                    "anchor {} does not match source id {source_id} (expected {})",
                    excerpt(anchor),
                    super::id::anchor_for(source_id)
                ),
            ));
        }
        if self.seen.contains(source_id) {
            return Err(self.fault(
                index + 1,
                id_col,
                Code::FrameDuplicateSourceId,
                format!("duplicate source id: {source_id}"),
            ));
        }

        let mut cursor = index + 2;
        let mut speaker_marker = None;
        if let Some(value) = between(self.lines[cursor], "<!-- speaker-id:", " -->")
            .filter(|value| !value.contains('>'))
        {
            if !self.speaker_ok(value) {
                return Err(self.fault(
                    cursor,
                    "<!-- speaker-id:".len() + 1,
                    Code::FrameSpeakerId,
                    format!("speaker id is not canonically encoded: {}", excerpt(value)),
                ));
            }
            speaker_marker = Some(value);
            cursor += 1;
            if cursor >= len {
                return Err(self.truncated(index, "archive ends inside a frame header"));
            }
        }

        let mut meta_token = None;
        let mut meta = None;
        if let Some(token) = between(self.lines[cursor], "<!-- source-meta:", " -->")
            .filter(|token| is_meta_token(token))
        {
            let Some(decoded) = self.decode_meta(token) else {
                return Err(self.fault(
                    cursor,
                    "<!-- source-meta:".len() + 1,
                    Code::FrameSourceMeta,
                    format!(
                        "source-meta token does not decode to canonical metadata: {}",
                        excerpt(token)
                    ),
                ));
            };
            meta_token = Some(token);
            meta = Some(decoded);
            cursor += 1;
            if cursor >= len {
                return Err(self.truncated(index, "archive ends inside a frame header"));
            }
        }

        let count_line = self.lines[cursor];
        let Some(count) = between(count_line, "<!-- record-lines:", " -->").and_then(parse_count)
        else {
            return Err(self.fault(
                cursor,
                1,
                Code::FrameRecordLines,
                format!("expected <!-- record-lines:N -->, found {}", excerpt(count_line)),
            ));
        };
        if count < 1 {
            return Err(self.fault(
                cursor,
                "<!-- record-lines:".len() + 1,
                Code::FrameRecordLines,
                "record-lines must be at least 1".to_owned(),
            ));
        }
        let record_index = cursor + 1;
        // `count` has at most nine digits, so this cannot overflow a usize.
        let record_end = record_index + count as usize;
        if record_end >= len {
            let available = len.saturating_sub(record_index + 1);
            let message = format!(
                "record-lines:{count} runs past the end of the archive ({available} record lines follow)"
            );
            return Err(if self.text.ends_with('\n') {
                self.fault(cursor, "<!-- record-lines:".len() + 1, Code::FrameRecordLines, message)
            } else {
                self.truncated(index, "archive ends inside a frame's record lines (torn tail)")
            });
        }
        if !is_record_header(self.lines[record_index]) {
            return Err(self.fault(
                record_index,
                1,
                Code::FrameRecordHeader,
                format!(
                    "record does not start with [<timestamp>] <speaker>: , found {}",
                    excerpt(self.lines[record_index])
                ),
            ));
        }
        if !self.lines[record_end].is_empty() {
            return Err(self.fault(
                record_end,
                1,
                Code::FrameSeparator,
                format!(
                    "expected an empty line after {count} record lines, found {}",
                    excerpt(self.lines[record_end])
                ),
            ));
        }
        let record = self.span(record_index, record_end);
        self.frames.push(Frame {
            source_id,
            anchor,
            speaker_marker,
            meta_token,
            meta,
            record,
            line: line_no(index),
            record_line: line_no(record_index),
            record_lines: count,
        });
        self.seen.insert(source_id);
        Ok(record_end + 1)
    }

    /// Whether the v2 path of `source_id` is this file; the (provider, thread) of the last match
    /// is remembered, since one file holds one thread.
    fn belongs_here(&mut self, source_id: &'a str) -> bool {
        let Some((provider, thread, _)) = split_id(source_id) else {
            return false;
        };
        if self.last_thread == Some((provider, thread)) {
            return true;
        }
        let matches = self.expected_path.as_deref() == Some(v2_path_of(provider, thread).as_str());
        if matches {
            self.last_thread = Some((provider, thread));
        }
        matches
    }

    /// Whether a speaker marker is canonical, remembering the last canonical one.
    fn speaker_ok(&mut self, value: &'a str) -> bool {
        if self.last_speaker == Some(value) {
            return true;
        }
        let ok = decode_speaker_id(value).is_some();
        if ok {
            self.last_speaker = Some(value);
        }
        ok
    }

    fn truncated(&self, index: usize, message: &str) -> Diagnostic {
        self.fault(index, 1, Code::ArchiveTruncated, message.to_owned())
    }

    /// Decodes a token, reusing the previous result when a file repeats one token (the common
    /// case: one principal per thread).
    fn decode_meta(&mut self, token: &'a str) -> Option<Arc<DecodedMeta>> {
        if let Some((last, decoded)) = &self.last_meta
            && *last == token
        {
            return Some(decoded.clone());
        }
        let decoded = Arc::new(super::meta::SourceMeta::decode(token)?);
        self.last_meta = Some((token, Arc::clone(&decoded)));
        Some(decoded)
    }

    /// The text of lines `start..end` (exclusive), joined by their LFs.
    fn span(&self, start: usize, end: usize) -> &'a str {
        let base = self.text.as_ptr() as usize;
        let first = self.lines[start];
        let last = self.lines[end - 1];
        let from = first.as_ptr() as usize - base;
        let to = last.as_ptr() as usize - base + last.len();
        self.text.get(from..to).unwrap_or("")
    }
}

fn line_no(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

/// At most 80 characters of a line, for messages.
fn excerpt(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    format!("{out:?}")
}

fn between<'t>(line: &'t str, prefix: &str, suffix: &str) -> Option<&'t str> {
    line.strip_prefix(prefix)?.strip_suffix(suffix)
}

/// `<a id="([^"]+)"></a>` (full match).
fn match_anchor(line: &str) -> Option<&str> {
    between(line, "<a id=\"", "\"></a>").filter(|id| !id.is_empty() && !id.contains('"'))
}

/// `[A-Za-z0-9_-]+`.
fn is_meta_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `\d{1,9}` with Python's Unicode `\d`, as an integer.
fn parse_count(digits: &str) -> Option<u32> {
    let mut value: u32 = 0;
    let mut count = 0;
    for c in digits.chars() {
        count += 1;
        if count > 9 {
            return None;
        }
        value = value * 10 + decimal_value(c)?;
    }
    (count > 0).then_some(value)
}

/// `^\[[^]]*\]\s+.+?: .*$` (full match) with Python's `\s`.
pub(crate) fn is_record_header(line: &str) -> bool {
    record_content_start(line).is_some()
}

/// Where the content of a record text starts: the byte offset right after the `: ` that ends
/// the header `[<timestamp>]<whitespace><label>: ` of its first line, as the header rule reads
/// it (the label is the shortest run of at least one character before a `: `). `None` when the
/// first line is not a record header.
pub(crate) fn record_content_start(record: &str) -> Option<usize> {
    let line = record.split('\n').next().unwrap_or(record);
    let rest = line.strip_prefix('[')?;
    let close = 1 + rest.find(']')?;
    let first = line[close + 1..].chars().next().filter(|c| is_space(*c))?;
    // `.+?` needs one character after that first whitespace; `": "` may follow anywhere later.
    let label = close + 1 + first.len_utf8();
    let second = line[label..].chars().next()?;
    let search = label + second.len_utf8();
    Some(search + line[search..].find(": ")? + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_header_regex() {
        for ok in ["[t] a: b", "[] a: ", "[t]\u{1f}a: b", "[t]  : x", "[t] a:b: c", "[t] é: x"] {
            assert!(is_record_header(ok), "{ok:?}");
        }
        for bad in ["t] a: b", "[t]a: b", "[t] : x", "[t] a:b", "[t] a", "[t", "[t]]"] {
            assert!(!is_record_header(bad), "{bad:?}");
        }
        fn content(record: &str) -> Option<&str> {
            record_content_start(record).map(|at| &record[at..])
        }
        assert_eq!(content("[t] a: b: c\nd: e"), Some("b: c\nd: e"));
        assert_eq!(content("[t]  : x"), Some("x"));
        assert_eq!(content("[] a: "), Some(""));
        assert_eq!(content("[t] a\nb: c"), None);
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("1"), Some(1));
        assert_eq!(parse_count("999999999"), Some(999_999_999));
        assert_eq!(parse_count("1000000000"), None);
        assert_eq!(parse_count("٣"), Some(3));
        assert_eq!(parse_count(""), None);
        assert_eq!(parse_count("1a"), None);
    }
}
