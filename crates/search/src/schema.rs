//! The index schema and the text each document is indexed under.

use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};

use crate::tokenize::TOKENIZER_NAME;

/// Bumped whenever the schema or what is indexed changes: an index of another version is
/// rebuilt.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// `kind` values.
pub(crate) const KIND_BLOCK: &str = "block";
pub(crate) const KIND_SOURCE: &str = "source";

/// The fields of the one schema.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields {
    /// `block` or `source`.
    pub(crate) kind: Field,
    /// Block identity or source id.
    pub(crate) id: Field,
    /// Workspace-relative file: the unit of re-indexing (delete by this term).
    pub(crate) file: Field,
    /// The file path and, for archives, the logical path without `/_v2` (prefix filter).
    pub(crate) paths: Field,
    /// `^<block id>` or `source-…` (stored), without `#`.
    pub(crate) anchor: Field,
    /// `<archive path>#<anchor>` of a source record: resolves citations.
    pub(crate) akey: Field,
    /// The searched text.
    pub(crate) text: Field,
    /// The display text.
    pub(crate) content: Field,
    /// Heading path (one value per level).
    pub(crate) headings: Field,
    /// Dates as written (`YYYY[-MM[-DD]]`).
    pub(crate) dates: Field,
    /// Day-precision dates as day numbers.
    pub(crate) day: Field,
    /// Month-precision dates as month indexes.
    pub(crate) month: Field,
    /// Year-precision dates.
    pub(crate) year: Field,
    /// Lower-cased speaker id, display and label (filter).
    pub(crate) speaker: Field,
    /// Speaker id as archived.
    pub(crate) speaker_id: Field,
    /// Speaker display.
    pub(crate) speaker_display: Field,
    /// Speaker label.
    pub(crate) speaker_label: Field,
    /// 1 when trusted, 0 when pending.
    pub(crate) trusted: Field,
    /// A block's source references.
    pub(crate) refs: Field,
    /// 1-based start line.
    pub(crate) line: Field,
}

pub(crate) fn build_schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        kind: builder.add_text_field("kind", STRING | STORED),
        id: builder.add_text_field("id", STRING | STORED),
        file: builder.add_text_field("file", STRING | STORED),
        paths: builder.add_text_field("paths", STRING),
        anchor: builder.add_text_field("anchor", STORED),
        akey: builder.add_text_field("akey", STRING),
        text: builder.add_text_field("text", text_options),
        content: builder.add_text_field("content", STORED),
        headings: builder.add_text_field("headings", STORED),
        dates: builder.add_text_field("dates", STORED),
        day: builder.add_u64_field("day", INDEXED),
        month: builder.add_u64_field("month", INDEXED),
        year: builder.add_u64_field("year", INDEXED),
        speaker: builder.add_text_field("speaker", STRING),
        speaker_id: builder.add_text_field("speaker_id", STORED),
        speaker_display: builder.add_text_field("speaker_display", STORED),
        speaker_label: builder.add_text_field("speaker_label", STORED),
        trusted: builder.add_u64_field("trusted", INDEXED | STORED),
        refs: builder.add_text_field("refs", STRING | STORED),
        line: builder.add_u64_field("line", STORED),
    };
    (builder.build(), fields)
}

/// The text a document is indexed under; recomputed from the stored fields at query time to
/// check which query terms a hit matches.
pub(crate) fn index_text(
    content: &str,
    path: &str,
    headings: &[&str],
    dates: &[&str],
    speaker: Option<&str>,
) -> String {
    let mut text = String::with_capacity(content.len() + path.len() + 64);
    text.push_str(content);
    text.push(' ');
    let logical = path.strip_prefix("topics/").unwrap_or(path).trim_end_matches(".md");
    text.extend(logical.chars().map(|c| if c == '/' || c == '_' { ' ' } else { c }));
    for heading in headings {
        text.push(' ');
        text.push_str(heading);
    }
    for date in dates {
        text.push(' ');
        text.push_str(date);
    }
    if let Some(speaker) = speaker {
        text.push(' ');
        text.push_str(speaker);
    }
    text
}
