//! Topic files: segmentation, the strict parse, the lossless document model, normalization and
//! block links (see `docs/format.md#topic-files`).
//!
//! A topic file is Markdown in which every paragraph is a *record*: prose whose claims cite
//! footnotes (`[^e-cecd4ddc68]`), each footnote naming when it happened and which archived
//! messages it came from, and a trailing block ID (`^6dfc15f1`) that other views link to:
//!
//! ```text
//! Craig is building a budget tracker in Flask, due 2024-04-15.[^e-cecd4ddc68] ^6dfc15f1
//!
//! [^e-cecd4ddc68]: Time: `2024-03-15`; Sources: [Flask tracker](../../sources/openprogram/_v2/sess-7f2a.md#source-d7e6772098d6b0d9)
//! ```
//!
//! * [`Document`] classifies every line (heading, prose, definition, HTML, fence, fenced,
//!   blank) with byte ranges; it renders back to its exact input, whatever the input.
//! * [`parse_tree`] is the strict parse: it returns every [`Unit`] it could build **and** every
//!   [`Diagnostic`](crate::Diagnostic), never stopping at the first.
//! * [`normalize`] is the transaction's normalization of staged edits: stable evidence IDs,
//!   block IDs, canonical definitions, pruning.
//! * [`check_topic_links`], [`check_dangling_links`] and [`rewrite_links`] are the block-link
//!   rules a transaction applies (see `docs/format.md#topic-to-topic-links`).
//!
//! Everything matches the Python implementation byte for byte (its `str.splitlines` line
//! breaks, its `str.strip` whitespace, its regexes' exact match semantics), with one deliberate
//! fixes: normalization keys evidence IDs by (file, label), not by label alone, so two files that
//! both introduce `[^e1]` in one transaction get different IDs; and pruning follows the
//! segmentation's heading path, so a `# comment` line inside a code fence no longer closes a
//! section and deletes the record paragraphs after it (both are listed in
//! `docs/format.md#where-we-deliberately-differ`).
//!
//! Where the Python code and the reference's prose differ, the code wins: aliases of a merged
//! paragraph share the paragraph's `created_order`; legacy `mem_` units carry no evidence
//! annotations and no relation targets.
//!
//! # Diagnostics
//!
//! The parse reports each violation once, at the offending token, with the reference's message.
//! To avoid cascades, a paragraph with a violation yields no unit but still counts as citing its
//! footnotes (so they are not also reported unused), and a definition with a violation stays
//! defined (so its citations are not also reported undefined).
//!
//! # Differences from Obsidian
//!
//! Topic files open in Obsidian, and for an ordinary record paragraph (prose, citations,
//! ` ^id` at its end) Obsidian and this parser see the same block ID. They differ on purpose
//! elsewhere. Each difference below has its own test (`tests/it/topics/obsidian.rs`); the
//! data-driven trial checks that on real Obsidian notes (obsidian-export, markdown-oxide) every
//! paragraph's block ID is the same for both, and that the strict parse rejects those notes only
//! for their missing evidence:
//!
//! 1. **Whitespace before `^`.** As in Obsidian, `^id` must follow whitespace (`text^id` is
//!    prose, and a paragraph ending that way has no block ID, so the strict parse reports
//!    `BLOCK_ID_REQUIRED`). Unlike Obsidian, that whitespace may be a line break.
//! 2. **Character set.** Obsidian block IDs are `[A-Za-z0-9-]`; so are ours, but a legacy
//!    `mem_…` ID (with `_`) is accepted only as a footnote label and a block-link target.
//! 3. **Where an ID can stand.** Obsidian gives IDs to list items, headings, quotes, tables and
//!    to a paragraph whose ID sits alone on the next line. Here a heading is never a record, and
//!    lists, quotes and tables are plain prose: a paragraph line that is a list item is part of
//!    an ordinary paragraph (its `^id` names the whole paragraph, not the item). An ID alone on
//!    the line after a paragraph is the end of that paragraph (the suffix may span lines).
//! 4. **Several IDs.** A merged paragraph ends in a run ` ^a ^b`; Obsidian sees only `^b`, we
//!    see both (`b` is the identity, `a` an alias).
//! 5. **Evidence is required.** Obsidian accepts any paragraph; the strict parse rejects a
//!    paragraph without a citation (`FOOTNOTE_REQUIRED`) or without a block ID
//!    (`BLOCK_ID_REQUIRED`), and every footnote definition must have the `Time:`/`Sources:`
//!    form; other footnotes are prose to the parser.
//! 6. **Segmentation.** Paragraphs here end at headings, definitions, HTML comment or `<a `
//!    lines and fences, as in the Python implementation; indented code, HTML blocks other than
//!    those, front matter and callouts are prose.
//! 7. **Line breaks.** Lines split like Python's `str.splitlines` (also at `\r`, `\x0b`, `\x0c`,
//!    `\x1c`–`\x1e`, U+0085, U+2028, U+2029); Obsidian splits at `\n` and `\r\n` only.
//!
//! # Limitations
//!
//! * Digits in temporal values must be ASCII. Python's `\d` also matches other Unicode decimal
//!   digits (`２０２４`); such a line is still classified as a definition here, but its date is
//!   reported invalid.
//! * The reference's normalization is not idempotent in two corner cases, which we reproduce:
//!   a line ending in a run of several invented IDs (`^a ^b`, neither committed) loses only the
//!   last per pass; and a local-label citation that no following definition could take stays
//!   as written, so a later pass may bind it to a definition the first pass renamed. The first
//!   leaves an ID that installing makes committed, the second a tree the parse rejects; so an
//!   installed tree, normalized with its own IDs committed, is always a fixed point.
//! * As in the reference, the prose-line rules of normalization (no space before `[^`, one
//!   space before a trailing `^id`) also apply to lines inside code fences.

mod grammar;
mod ids;
mod links;
mod normalize;
mod parse;
mod segment;
mod text;

pub(crate) use grammar::{
    BLOCK_LINK, any_suffix, block_link_targets, block_suffix, citation_groups, citations,
    definition_match, links, split_bare_sources,
};
pub use grammar::{is_block_id, is_footnote_id, is_local_label, is_memory_id, is_valid_temporal};
pub use ids::{
    BlockId, block_id_candidate, evidence_id_candidate, mint_block_id, mint_evidence_id,
};
pub use links::{
    block_link_ids, check_dangling_links, check_dangling_links_in, check_topic_links,
    check_topic_links_in, check_tree, quote, rewrite_links, rewrite_links_in,
};
pub use normalize::{
    DroppedText, EvidenceAssignment, Normalized, TreeContext, defined_evidence_ids, line_end_ids,
    normalize, normalize_with, prune, prune_report, render_definition,
};
pub use parse::{
    CITE_HINT, Evidence, TopicFile, TreeParse, Unit, compare_topic_paths, excerpt, parse_tree,
    uncited_message,
};
pub use segment::{Document, Line, LineKind, Paragraph};
