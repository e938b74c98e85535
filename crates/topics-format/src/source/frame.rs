//! Rendering v2 frames (see `docs/format.md#frame-layout`): the record text
//! `[ts] label: content`, its LF-split record lines, and the header lines around them.

use super::id::{V2_MARKER, anchor_for};
use super::meta::{AuthorityTier, SourceMeta, TrustState};
use super::speaker::{encode_speaker_id, normalize_identity_header_part, speaker_label};

/// One record to archive (Python's `SourceRecord`): where it goes, what was said, by whom, and
/// its trust metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveRecord {
    /// The provider, e.g. `openprogram`.
    pub provider: String,
    /// The thread, e.g. the session id.
    pub thread: String,
    /// The message, e.g. the node id.
    pub message: String,
    /// Position in the thread; records are appended in (provider, thread, ordinal) order.
    pub ordinal: u64,
    /// `user`, `assistant`, …; the label when no speaker identity is known.
    pub role: String,
    /// The message text, verbatim (CR, trailing spaces and newlines kept).
    pub content: String,
    /// The timestamp shown in brackets (empty when `None`).
    pub timestamp: Option<String>,
    /// The trusted speaker id, if any.
    pub speaker_id: Option<String>,
    /// The speaker's display name, if any.
    pub speaker_display: Option<String>,
    /// `owner`, `assistant`, `human`, … (`unknown` by default).
    pub speaker_kind: String,
    /// The principal (`unknown` by default).
    pub principal_id: String,
    /// The authority tier, if any.
    pub authority_tier: Option<AuthorityTier>,
    /// Trusted (default) or pending.
    pub trust_state: TrustState,
}

impl ArchiveRecord {
    /// A record with no speaker identity, `unknown` kind and principal, no tier, trusted.
    pub fn new(
        provider: impl Into<String>,
        thread: impl Into<String>,
        message: impl Into<String>,
        ordinal: u64,
        role: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        ArchiveRecord {
            provider: provider.into(),
            thread: thread.into(),
            message: message.into(),
            ordinal,
            role: role.into(),
            content: content.into(),
            timestamp: None,
            speaker_id: None,
            speaker_display: None,
            speaker_kind: "unknown".to_owned(),
            principal_id: "unknown".to_owned(),
            authority_tier: None,
            trust_state: TrustState::Trusted,
        }
    }

    /// `<provider>/<thread>/<message>`.
    pub fn source_id(&self) -> String {
        format!("{}/{}/{}", self.provider, self.thread, self.message)
    }

    /// The label before normalization (see [`speaker_label`]).
    pub fn speaker_label(&self) -> String {
        speaker_label(&self.role, self.speaker_display.as_deref(), self.speaker_id.as_deref())
    }

    /// The metadata written on the frame's `source-meta` line.
    pub fn meta(&self) -> SourceMeta {
        SourceMeta {
            trust_state: self.trust_state,
            speaker_kind: self.speaker_kind.clone(),
            principal_id: self.principal_id.clone(),
            authority_tier: self.authority_tier,
        }
    }

    /// The `speaker-id` marker value, written when the normalized id or display is non-empty:
    /// the canonical encoding of the *raw* id (empty for a display-only identity).
    pub fn speaker_marker(&self) -> Option<String> {
        let id = self.speaker_id.as_deref().unwrap_or("");
        let display = self.speaker_display.as_deref().unwrap_or("");
        let shown = !normalize_identity_header_part(id).is_empty()
            || !normalize_identity_header_part(display).is_empty();
        shown.then(|| encode_speaker_id(id))
    }

    /// The record text `[<timestamp>] <normalized label>: <content>`.
    pub fn record_text(&self) -> String {
        record_text(
            self.timestamp.as_deref().unwrap_or(""),
            &normalize_identity_header_part(&self.speaker_label()),
            &self.content,
        )
    }

    /// The whole frame as the archive writes it (see [`render_frame`]). The caller validates
    /// the record first (`append` does).
    pub fn render(&self) -> String {
        let source_id = self.source_id();
        let marker = self.speaker_marker();
        let token = self.meta().token();
        render_frame(&FrameParts {
            source_id: &source_id,
            speaker_marker: marker.as_deref(),
            meta_token: Some(&token),
            record: &self.record_text(),
        })
    }
}

/// `"[" + timestamp + "] " + label + ": " + content`.
pub fn record_text(timestamp: &str, label: &str, content: &str) -> String {
    let mut text = String::with_capacity(timestamp.len() + label.len() + content.len() + 5);
    text.push('[');
    text.push_str(timestamp);
    text.push_str("] ");
    text.push_str(label);
    text.push_str(": ");
    text.push_str(content);
    text
}

/// The number of record lines of a record text: its LF-separated pieces (`alpha\r\nbeta\n` → 3).
pub fn record_line_count(record: &str) -> usize {
    record.bytes().filter(|&b| b == b'\n').count() + 1
}

/// The parts of one frame, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameParts<'a> {
    /// The source id (the anchor is computed from it).
    pub source_id: &'a str,
    /// The already-encoded `speaker-id` value, if the frame has the line.
    pub speaker_marker: Option<&'a str>,
    /// The `source-meta` token, if the frame has the line.
    pub meta_token: Option<&'a str>,
    /// The record text (lines joined by LF).
    pub record: &'a str,
}

/// Renders one frame: anchor, source-id, optional speaker, optional meta, record-lines, the
/// record lines, each followed by LF. Frames are joined with one more LF (the empty line that
/// ends a frame), see [`render_archive`].
pub fn render_frame(parts: &FrameParts<'_>) -> String {
    let mut out = String::with_capacity(parts.record.len() + parts.source_id.len() + 256);
    out.push_str("<a id=\"");
    out.push_str(&anchor_for(parts.source_id));
    out.push_str("\"></a>\n<!-- source-id:");
    out.push_str(parts.source_id);
    out.push_str(" -->\n");
    if let Some(marker) = parts.speaker_marker {
        out.push_str("<!-- speaker-id:");
        out.push_str(marker);
        out.push_str(" -->\n");
    }
    if let Some(token) = parts.meta_token {
        out.push_str("<!-- source-meta:");
        out.push_str(token);
        out.push_str(" -->\n");
    }
    out.push_str("<!-- record-lines:");
    out.push_str(&record_line_count(parts.record).to_string());
    out.push_str(" -->\n");
    out.push_str(parts.record);
    out.push('\n');
    out
}

/// A whole new archive: the marker line, the empty line, then the frames separated by one
/// empty line. Ends with a single LF after the last record line.
pub fn render_archive<S: AsRef<str>>(frames: &[S]) -> String {
    let mut out = String::from(V2_MARKER);
    out.push_str("\n\n");
    append_frames(&mut out, frames);
    out
}

/// Appends frames after existing archive text the way the archive does: the separator is `\n`
/// when the text ends with LF, else `\n\n`; an empty text gets the marker and empty line.
pub fn append_frames_to<S: AsRef<str>>(existing: &str, frames: &[S]) -> String {
    if existing.is_empty() {
        return render_archive(frames);
    }
    let mut out = String::from(existing);
    out.push_str(if existing.ends_with('\n') { "\n" } else { "\n\n" });
    append_frames(&mut out, frames);
    out
}

fn append_frames<S: AsRef<str>>(out: &mut String, frames: &[S]) {
    for (index, frame) in frames.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(frame.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_lines_are_lf_pieces() {
        assert_eq!(record_line_count("[t] user: alpha\r\nbeta\n"), 3);
        assert_eq!(record_line_count("[t] user: x"), 1);
    }

    #[test]
    fn frame_layout() {
        let mut record = ArchiveRecord::new("openprogram", "s", "m1", 1, "user", "hi  \nthere");
        record.timestamp = Some("2024-03-15T10:00:00+08:00".into());
        record.speaker_id = Some("telegram-user-42".into());
        record.speaker_display = Some("B".into());
        let frame = record.render();
        let lines: Vec<&str> = frame.split('\n').collect();
        assert_eq!(lines[0], format!("<a id=\"{}\"></a>", anchor_for("openprogram/s/m1")));
        assert_eq!(lines[1], "<!-- source-id:openprogram/s/m1 -->");
        assert_eq!(lines[2], "<!-- speaker-id:telegram%2Duser%2D42 -->");
        assert!(lines[3].starts_with("<!-- source-meta:"));
        assert_eq!(lines[4], "<!-- record-lines:2 -->");
        assert_eq!(lines[5], "[2024-03-15T10:00:00+08:00] B (telegram-user-42): hi  ");
        assert_eq!(lines[6], "there");
        assert_eq!(lines[7], "");
        assert_eq!(lines.len(), 8);
    }

    #[test]
    fn display_only_identity_writes_an_empty_marker() {
        let mut record = ArchiveRecord::new("p", "t", "m", 1, "user", "x");
        record.speaker_display = Some("assistant".into());
        assert_eq!(record.speaker_marker().as_deref(), Some(""));
        record.speaker_display = Some(" \u{0}".into());
        assert_eq!(record.speaker_marker(), None);
        assert_eq!(record.record_text(), "[] user: x");
    }

    #[test]
    fn archive_joining() {
        let one = render_archive(&["A\n", "B\n"]);
        assert_eq!(one, format!("{V2_MARKER}\n\nA\n\nB\n"));
        assert_eq!(append_frames_to(&one, &["C\n"]), format!("{V2_MARKER}\n\nA\n\nB\n\nC\n"));
        assert_eq!(append_frames_to("x", &["C\n"]), "x\n\nC\n");
        assert_eq!(append_frames_to("", &["C\n"]), format!("{V2_MARKER}\n\nC\n"));
    }
}
