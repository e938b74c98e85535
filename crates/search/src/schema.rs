//! The index schema and the text each document is indexed under.

use tantivy::Term;
use tantivy::schema::{
    Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};

use crate::tokenize::TOKENIZER_NAME;

/// Bumped whenever the schema or what is indexed changes: an index of another version is
/// rebuilt.
pub(crate) const SCHEMA_VERSION: u32 = 4;

/// `kind` values.
pub(crate) const KIND_BLOCK: &str = "block";
pub(crate) const KIND_SOURCE: &str = "source";

/// What a document is filtered and looked up by: one indexed `keys` field holds them all, each
/// term `<tag>\u{1f}<value>`. One keyword field rather than one per key because tantivy's
/// per-segment cost grows with the number of indexed fields (each gets its own term
/// dictionary, built and written on every commit): an install commits one small segment, so
/// two indexed fields instead of twelve is what keeps that commit cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    /// `block` or `source`.
    Kind,
    /// Block identity or source id.
    Id,
    /// Workspace-relative file: the unit of re-indexing (delete by this term).
    File,
    /// The file path and, for archives, the logical path without `/_v2` (prefix filter).
    Path,
    /// `<archive path>#<anchor>` of a source record: resolves citations.
    Anchor,
    /// Lower-cased speaker id, display and label (filter).
    Speaker,
    /// Each analyzed word of a speaker's display name or label: a query naming the speaker
    /// ranks the speaker's own records higher (see `index.rs`, "Ranking").
    SpeakerWord,
    /// `1` when trusted, `0` when pending.
    Trusted,
    /// A block's source references.
    Ref,
    /// Day-precision dates as day numbers ([`Key::number`]).
    Day,
    /// Month-precision dates as month indexes ([`Key::number`]).
    Month,
    /// Year-precision dates ([`Key::number`]).
    Year,
}

impl Key {
    fn tag(self) -> char {
        match self {
            Key::Kind => 'k',
            Key::Id => 'i',
            Key::File => 'f',
            Key::Path => 'p',
            Key::Anchor => 'a',
            Key::Speaker => 's',
            Key::SpeakerWord => 'w',
            Key::Trusted => 't',
            Key::Ref => 'r',
            Key::Day => 'd',
            Key::Month => 'm',
            Key::Year => 'y',
        }
    }

    /// The indexed text of `value` under this key.
    pub(crate) fn text(self, value: &str) -> String {
        let mut out = String::with_capacity(value.len() + 2);
        out.push(self.tag());
        out.push('\u{1f}');
        out.push_str(value);
        out
    }

    /// A number under this key, zero-padded so that the order of terms is the order of
    /// numbers (range filters are term ranges).
    pub(crate) fn number(self, value: u64) -> String {
        self.text(&format!("{value:020}"))
    }

    /// The term of `value` under this key.
    pub(crate) fn term(self, fields: &Fields, value: &str) -> Term {
        Term::from_field_text(fields.keys, &self.text(value))
    }

    /// The term of a number under this key.
    pub(crate) fn number_term(self, fields: &Fields, value: u64) -> Term {
        Term::from_field_text(fields.keys, &self.number(value))
    }
}

/// The fields of the one schema: three indexed (`text`, `context`, `keys`), the rest stored.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields {
    /// Every [`Key`] of the document (indexed, not stored).
    pub(crate) keys: Field,
    /// `block` or `source`.
    pub(crate) kind: Field,
    /// Block identity or source id.
    pub(crate) id: Field,
    /// Workspace-relative file.
    pub(crate) file: Field,
    /// `^<block id>` or `source-…`, without `#`.
    pub(crate) anchor: Field,
    /// The searched text.
    pub(crate) text: Field,
    /// A source record's conversational context: the turns around it in its session (indexed,
    /// not stored; searched with a lower weight).
    pub(crate) context: Field,
    /// The display text.
    pub(crate) content: Field,
    /// Heading path (one value per level).
    pub(crate) headings: Field,
    /// Dates as written (`YYYY[-MM[-DD]]`).
    pub(crate) dates: Field,
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
    /// [`fingerprint`] of the document's text: hits with equal fingerprints say the same thing.
    pub(crate) fingerprint: Field,
}

pub(crate) fn build_schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        keys: builder.add_text_field("keys", STRING),
        kind: builder.add_text_field("kind", STORED),
        id: builder.add_text_field("id", STORED),
        file: builder.add_text_field("file", STORED),
        anchor: builder.add_text_field("anchor", STORED),
        text: builder.add_text_field("text", text_options.clone()),
        context: builder.add_text_field("context", text_options),
        content: builder.add_text_field("content", STORED),
        headings: builder.add_text_field("headings", STORED),
        dates: builder.add_text_field("dates", STORED),
        speaker_id: builder.add_text_field("speaker_id", STORED),
        speaker_display: builder.add_text_field("speaker_display", STORED),
        speaker_label: builder.add_text_field("speaker_label", STORED),
        trusted: builder.add_u64_field("trusted", STORED),
        refs: builder.add_text_field("refs", STORED),
        line: builder.add_u64_field("line", STORED),
        fingerprint: builder.add_u64_field("fingerprint", STORED),
    };
    (builder.build(), fields)
}

/// English month names, for [`index_text`].
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The text a document is indexed under: its content, its logical path, headings, dates (with
/// the month by name) and speaker.
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
        // The month by name, so that "what did she do in May" meets a record of 2023-05-08.
        if let Some(name) = date
            .get(5..7)
            .and_then(|m| m.parse::<usize>().ok())
            .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
        {
            text.push(' ');
            text.push_str(name);
        }
    }
    if let Some(speaker) = speaker {
        text.push(' ');
        text.push_str(speaker);
    }
    text
}

/// A hash of `text` with case and whitespace folded: two hits with the same fingerprint say the
/// same thing (a note archived and filed, a message imported twice), and only the better ranked
/// is returned.
pub(crate) fn fingerprint(text: &str) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    let mut feed = |byte: u8| hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            feed(b' ');
        }
        for c in word.chars().flat_map(char::to_lowercase) {
            let mut buf = [0; 4];
            c.encode_utf8(&mut buf).bytes().for_each(&mut feed);
        }
    }
    hash
}
