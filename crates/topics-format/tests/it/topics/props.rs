//! Property tests: lossless round trip, normalization idempotence, and a fuzz loop (arbitrary
//! input never panics).

use std::collections::HashSet;

use proptest::prelude::*;
use scriptorium_topics_format::topic::{
    Document, TopicFile, check_tree, is_local_label, normalize, parse_tree, prune,
};

use super::{TestResolver, corpus_dir, read_tree};

/// Lines a topic file is made of: structure, records, prose, definitions, and near misses.
const LINES: &[&str] = &[
    "# Topic",
    "## Section",
    "### Deep  ",
    "####### not a heading",
    "",
    "   ",
    "\t",
    "```",
    "```rust",
    "<!-- a comment -->",
    "<a id=\"x\"></a>",
    "Fact one.[^e1]",
    "Fact two.[^e2] ^madeup12",
    "Kept fact.[^e-0000000001] ^keep0001",
    "Merged.[^e-0000000001] ^keep0001 ^keep0002",
    "Prose without evidence.",
    "- a bullet",
    "continues the paragraph [^e1] and [^e2]",
    "x^2 math",
    "Legacy claim.[^mem_a]",
    "Link to [t](other.md#^keep0001).[^e-0000000001]",
    "Unicode — 日本語.[^e3] ^uni00001",
    "[^e1]: Time: `2024-03-15`; Sources: [a](p/t/a)",
    "[^e2]: 2024 · Sources: p/t/b, D1:2",
    "[^e3]: Time: 2023-02-29; Sources: [x](p/t/x)",
    "[^e-0000000001]: Time: undated; Sources: [c](p/t/c)",
    "[^mem_a]: Time: `2024`; Sources: [D1:1](D1:1)",
    "[^e9]: Time: `2024`; Sources: nothing",
];

fn document() -> impl Strategy<Value = String> {
    let line = (0..LINES.len(), prop_oneof![Just("\n"), Just("\r\n"), Just("\r"), Just("")]);
    prop::collection::vec(line, 0..24).prop_map(|lines| {
        let mut text = String::new();
        for (i, end) in lines {
            text.push_str(LINES[i]);
            text.push_str(end);
        }
        text
    })
}

/// Like [`document`], but with line breaks only where a writer would put them.
fn staged_document() -> impl Strategy<Value = String> {
    let line = (0..LINES.len(), prop_oneof![Just("\n"), Just("\r\n")]);
    prop::collection::vec(line, 0..24)
        .prop_map(|lines| lines.into_iter().map(|(i, end)| format!("{}{end}", LINES[i])).collect())
}

/// Syntax-heavy noise: the characters the grammar cares about.
fn noise() -> impl Strategy<Value = String> {
    "[\\[\\]\\^#`<>!()a-z0-9 \t\r\n:;·_\\-/.\u{85}\u{2028}日]{0,300}"
}

fn committed() -> HashSet<String> {
    ["keep0001".to_owned(), "keep0002".to_owned()].into()
}

proptest! {
    #[test]
    fn render_parse_is_identity_on_documents(text in document()) {
        prop_assert_eq!(Document::parse(&text).render(), text);
    }

    #[test]
    fn render_parse_is_identity_on_any_string(text in any::<String>()) {
        prop_assert_eq!(Document::parse(&text).render(), text);
    }

    #[test]
    fn lines_cover_the_text(text in noise()) {
        let doc = Document::parse(&text);
        let mut at = 0;
        for line in doc.lines() {
            prop_assert_eq!(line.content.start, at);
            prop_assert_eq!(line.content.end, line.terminator.start);
            at = line.terminator.end;
        }
        prop_assert_eq!(at, text.len());
    }

    #[test]
    fn normalize_is_idempotent(a in staged_document(), b in staged_document()) {
        let files = [TopicFile::new("a.md", a), TopicFile::new("sub/b.md", b)];
        let once = normalize(&files, &committed(), &[], &TestResolver);
        // A local label that survives the first pass is an orphan nothing could bind (the parse
        // rejects it as undefined); the reference's second pass may bind it to a definition the
        // first pass renamed, so idempotence is a property of the rest.
        let orphaned = once.files.iter().any(|f| {
            f.text.match_indices("[^").any(|(i, _)| {
                let id: String = f.text[i + 2..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect();
                is_local_label(&id)
            })
        });
        if orphaned {
            return Ok(());
        }
        let mut ids = committed();
        ids.extend(once.block_ids.values().map(|id| id.as_str().to_owned()));
        let twice = normalize(&once.files, &ids, &[], &TestResolver);
        prop_assert_eq!(&twice.files, &once.files);
        prop_assert!(twice.block_ids.is_empty());
        for file in &once.files {
            let pruned = prune(&file.text);
            prop_assert_eq!(pruned.as_deref(), Some(file.text.as_str()));
        }
    }

    #[test]
    fn parser_never_panics(a in noise(), b in any::<String>(), c in document()) {
        let files = [TopicFile::new("a.md", a), TopicFile::new("x/b.md", b), TopicFile::new("c.md", c)];
        let parsed = check_tree(&files, &TestResolver);
        for d in &parsed.diagnostics {
            prop_assert!(d.line >= 1 && d.col >= 1);
        }
        let ids: HashSet<String> = parsed.units.iter().map(|u| u.memory_id.clone()).collect();
        let _ = normalize(&files, &ids, &parsed.units, &TestResolver);
    }
}

/// Every corpus file (topics and sources, valid or not) round-trips through the document model.
#[test]
fn corpus_files_round_trip() {
    let all = read_tree(&corpus_dir());
    assert!(all.len() > 20);
    for (path, text) in all {
        assert_eq!(Document::parse(&text).render(), text, "{path}");
        let _ = parse_tree(&[TopicFile::new(path, text)], &TestResolver);
    }
}
