//! The documented differences from Obsidian (`topic` module docs), one assertion each.

use scriptorium_topics_format::Code;
use scriptorium_topics_format::topic::{Document, LineKind, TopicFile, parse_tree};

use super::TestResolver;

fn ids(text: &str) -> Vec<Vec<String>> {
    let doc = Document::parse(text);
    doc.paragraphs()
        .iter()
        .map(|p| doc.block_ids(p).into_iter().map(String::from).collect())
        .collect()
}

const DEF: &str = "\n\n[^e-1]: Time: `2024`; Sources: [a](p/t/a)\n";

/// 1. `^id` needs whitespace before it.
#[test]
fn caret_needs_whitespace() {
    assert_eq!(ids("glued^abc1"), [Vec::<String>::new()]);
    let parsed =
        parse_tree(&[TopicFile::new("x.md", format!("Fact.[^e-1]^abc1{DEF}"))], &TestResolver);
    assert_eq!(parsed.diagnostics[0].code, Code::BlockIdRequired);
}

/// 2. `mem_…` is a footnote label and a link target, never a block ID.
#[test]
fn legacy_ids_are_not_block_ids() {
    assert_eq!(ids("text ^mem_abc"), [Vec::<String>::new()]);
    let parsed =
        parse_tree(&[TopicFile::new("x.md", format!("Fact.[^e-1] ^mem_abc{DEF}"))], &TestResolver);
    assert_eq!(parsed.diagnostics[0].code, Code::InvalidBlockId);
}

/// 3. Headings are never records; list items are prose inside a paragraph; an ID alone on the
///    next line ends the paragraph above it.
#[test]
fn where_an_id_can_stand() {
    let doc = Document::parse("## Heading ^h1\n- item one ^li1\n- item two ^li2\n");
    assert!(matches!(doc.lines()[0].kind, LineKind::Heading { .. }));
    assert_eq!(doc.paragraphs().len(), 1);
    assert_eq!(doc.block_ids(&doc.paragraphs()[0]), ["li2"]);
    assert_eq!(ids("A paragraph.\n^next1"), [vec!["next1".to_owned()]]);
}

/// 4. A run of IDs: Obsidian sees the last, we see all (identity last).
#[test]
fn several_ids() {
    assert_eq!(ids("Merged. ^abc ^def"), [vec!["abc".to_owned(), "def".to_owned()]]);
}

/// 5. Evidence is required, and only `Time:`/`Sources:` footnotes are definitions.
#[test]
fn evidence_is_required() {
    let parsed =
        parse_tree(&[TopicFile::new("x.md", "Just a random file   ^d4acb\n")], &TestResolver);
    assert_eq!(parsed.diagnostics[0].code, Code::FootnoteRequired);
    let doc = Document::parse("Text.[^1]\n\n[^1]: An ordinary footnote.\n");
    assert_eq!(doc.lines()[2].kind, LineKind::Paragraph);
}

/// 6. Front matter, callouts and indented code are prose.
#[test]
fn other_markdown_is_prose() {
    let doc = Document::parse("---\ntitle: x\n---\n\n> [!NOTE]\n> callout\n\n    code\n");
    assert_eq!(doc.paragraphs().len(), 3);
}

/// 7. Python's line breaks: a form feed ends a line.
#[test]
fn python_line_breaks() {
    let doc = Document::parse("one\x0ctwo");
    assert_eq!(doc.lines().len(), 2);
    assert_eq!(doc.render(), "one\x0ctwo");
}
