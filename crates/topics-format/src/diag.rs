//! Diagnostics: every violation a parse or scan finds, with a stable code, file, line and column.

use std::fmt;

/// A stable, closed diagnostic code. Callers match on the code, never on the message text.
///
/// The string form (`Code::as_str`) is part of the public contract (`scriptorium check` prints
/// it, `--json` emits it); a code is never renamed, only added.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    // ---- topic files (see `docs/format.md#diagnostic-codes`) ----
    /// `duplicate footnote definition: <id>`
    DuplicateFootnoteDefinition,
    /// `invalid evidence date: <when>`
    InvalidEvidenceDate,
    /// `memory source links required: <id>`
    SourceLinksRequired,
    /// `memory source labels required: <id>`
    SourceLabelsRequired,
    /// `invalid source target: <target>`
    InvalidSourceTarget,
    /// `invalid block_id: <token>`
    InvalidBlockId,
    /// `missing memory content before <id>`
    MissingContent,
    /// `undefined footnote: <id>`
    UndefinedFootnote,
    /// `memory source footnote required: <identity>`
    FootnoteRequired,
    /// `content after final evidence: <identity>`
    ContentAfterEvidence,
    /// `memory block ID required: <file>`
    BlockIdRequired,
    /// `duplicate memory_id: <id>`
    DuplicateMemoryId,
    /// `unused footnote definition: <id>`
    UnusedFootnote,
    /// `Topic-to-Topic link must target #^block-id: <topic> -> <target>`
    TopicLinkNotBlock,
    /// `dangling block link: <id>`
    DanglingBlockLink,
    /// A topic file that is not valid UTF-8 (reported by whoever reads files).
    InvalidUtf8,
    /// `paragraph cites no source: "<excerpt>" …` — a paragraph without any footnote
    /// reference (before, such paragraphs were reported as `BLOCK_ID_REQUIRED`, which named
    /// the wrong thing: the runtime assigns block IDs, the author must supply the citation).
    UncitedParagraph,
    /// A topic file holding a NUL byte (reported by whoever reads files).
    NulByte,
    // (topic codes added by later work go above this line)

    // ---- source archives (see `docs/format.md#diagnostic-codes`) ----
    /// The first line is not `<!-- openprogram-source-archive:v2 -->` or the second is not empty.
    ArchiveHeader,
    /// The archive ends in the middle of a frame (torn or truncated).
    ArchiveTruncated,
    /// A frame's `<a id="source-…"></a>` line is malformed.
    FrameAnchor,
    /// A frame's `<!-- source-id:… -->` line is malformed or the id is not v2-emittable.
    FrameSourceId,
    /// The frame's source id belongs to another archive file.
    FramePathMismatch,
    /// The anchor line does not match the anchor computed from the source id.
    FrameAnchorMismatch,
    /// A source id framed twice in one archive.
    FrameDuplicateSourceId,
    /// A `<!-- speaker-id:… -->` value that is not the canonical percent-encoding.
    FrameSpeakerId,
    /// A `<!-- source-meta:… -->` token that does not decode to the canonical metadata.
    FrameSourceMeta,
    /// A missing or malformed `<!-- record-lines:N -->` line, or `N` is 0 or runs past the end.
    FrameRecordLines,
    /// The first record line is not `[<timestamp>] <speaker>: <text>`.
    FrameRecordHeader,
    /// The line after the record lines is not empty.
    FrameSeparator,
    /// A legacy archive (`sources/<provider>/<thread>.md`, `sources/D<n>.md`) that cannot be read.
    LegacyArchive,
    // (source codes added by later work go above this line)

    // ---- workspace files (reported by whoever reads the files) ----
    /// A topic file or archive that is a symlink or not a regular file; it is never read.
    NotRegularFile,
}

impl Code {
    /// The stable SCREAMING_SNAKE_CASE name of the code.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::DuplicateFootnoteDefinition => "DUPLICATE_FOOTNOTE_DEFINITION",
            Code::InvalidEvidenceDate => "INVALID_EVIDENCE_DATE",
            Code::SourceLinksRequired => "SOURCE_LINKS_REQUIRED",
            Code::SourceLabelsRequired => "SOURCE_LABELS_REQUIRED",
            Code::InvalidSourceTarget => "INVALID_SOURCE_TARGET",
            Code::InvalidBlockId => "INVALID_BLOCK_ID",
            Code::MissingContent => "MISSING_CONTENT",
            Code::UndefinedFootnote => "UNDEFINED_FOOTNOTE",
            Code::FootnoteRequired => "FOOTNOTE_REQUIRED",
            Code::ContentAfterEvidence => "CONTENT_AFTER_EVIDENCE",
            Code::BlockIdRequired => "BLOCK_ID_REQUIRED",
            Code::DuplicateMemoryId => "DUPLICATE_MEMORY_ID",
            Code::UnusedFootnote => "UNUSED_FOOTNOTE",
            Code::TopicLinkNotBlock => "TOPIC_LINK_NOT_BLOCK",
            Code::DanglingBlockLink => "DANGLING_BLOCK_LINK",
            Code::InvalidUtf8 => "INVALID_UTF8",
            Code::UncitedParagraph => "UNCITED_PARAGRAPH",
            Code::NulByte => "NUL_BYTE",
            Code::ArchiveHeader => "ARCHIVE_HEADER",
            Code::ArchiveTruncated => "ARCHIVE_TRUNCATED",
            Code::FrameAnchor => "FRAME_ANCHOR",
            Code::FrameSourceId => "FRAME_SOURCE_ID",
            Code::FramePathMismatch => "FRAME_PATH_MISMATCH",
            Code::FrameAnchorMismatch => "FRAME_ANCHOR_MISMATCH",
            Code::FrameDuplicateSourceId => "FRAME_DUPLICATE_SOURCE_ID",
            Code::FrameSpeakerId => "FRAME_SPEAKER_ID",
            Code::FrameSourceMeta => "FRAME_SOURCE_META",
            Code::FrameRecordLines => "FRAME_RECORD_LINES",
            Code::FrameRecordHeader => "FRAME_RECORD_HEADER",
            Code::FrameSeparator => "FRAME_SEPARATOR",
            Code::LegacyArchive => "LEGACY_ARCHIVE",
            Code::NotRegularFile => "NOT_REGULAR_FILE",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One violation: where it is (workspace-relative path, 1-based line and column) and what it is.
///
/// `message` follows the reference's wording (e.g. `undefined footnote: e3`) so a workspace that
/// the Python implementation rejects is rejected here with a recognisable message.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// Workspace-relative path with `/` separators, e.g. `topics/people/dave.md`.
    pub path: String,
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub col: u32,
    /// The stable code.
    pub code: Code,
    /// The human-readable message.
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic at `path:line:col`.
    pub fn new(
        path: impl Into<String>,
        line: u32,
        col: u32,
        code: Code,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic { path: path.into(), line, col, code, message: message.into() }
    }
}

impl fmt::Display for Diagnostic {
    /// `path:line:col: CODE message`, the form `scriptorium check` prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {} {}", self.path, self.line, self.col, self.code, self.message)
    }
}
