//! Rewriting texts in place with a mapper (what `scriptorium redact` does): the corpus archives
//! and workspace with secrets and `<private>` spans planted, and the properties (an archive
//! still scans complete with the same source IDs in the same order; a topic file keeps its
//! block IDs, citations and line structure and checks clean; both are idempotent, nothing
//! planted is left, and a mapper that changes nothing changes no file).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use scriptorium_topics_format::forget::{is_tombstone, tombstone_archive};
use scriptorium_topics_format::rewrite::{rewrite_archive, rewrite_in_view, rewrite_topic};
use scriptorium_topics_format::source::legacy::{legacy_headers, legacy_trusted_ids};
use scriptorium_topics_format::source::{
    ArchiveRecord, ArchiveResolver, anchor_for, check_archive, is_v2_source_path, render_archive,
    scan,
};
use scriptorium_topics_format::topic::{Document, LineKind, TopicFile, check_tree};
use scriptorium_topics_format::{TreeParse, Unit};

use crate::redact::{
    HIDDEN, TOKEN, edit_records, holds_planted, paragraphs, plant_record, plant_topic,
    planted_record_redacted, redact,
};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir`, keyed by its `/`-separated path relative to `dir`.
fn files_under(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("corpus directory is readable")
            .map(|entry| entry.expect("corpus entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("below the root");
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.insert(rel.join("/"), read(&path));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn never(_: &str) -> Option<String> {
    None
}

fn view(path: &str, text: &str) -> Option<String> {
    rewrite_in_view(path, text, &redact)
}

/// What must not change in a parsed tree: each unit's ID, refs and cited footnotes, in order.
fn units(parsed: &TreeParse) -> Vec<(String, Vec<String>, Vec<String>)> {
    parsed
        .units
        .iter()
        .map(|u: &Unit| {
            let cited = u.evidence.iter().map(|e| e.citation_id.clone()).collect();
            (u.memory_id.clone(), u.refs.to_vec(), cited)
        })
        .collect()
}

// ---- the frozen corpus ----

/// Every valid corpus archive: a mapper that changes nothing changes nothing; with a secret, a
/// private span or an unclosed one planted in each record, the rewrite gives the archive with
/// exactly those redacted, which scans (or reads, for a legacy archive) as the original did.
#[test]
fn the_corpus_archives_lose_what_was_planted_and_keep_their_frames() {
    for (case_path, text) in files_under(&corpus().join("sources")) {
        let (case, rel) = case_path.split_once('/').expect("<case>/<path>");
        if !case.starts_with("valid-") {
            continue;
        }
        assert_eq!(rewrite_archive(rel, &text, &never), Ok(None), "{case}");
        assert_eq!(rewrite_archive(rel, &text, &redact), Ok(None), "{case}");
        assert_eq!(view(rel, &text), None, "{case}");
        if !is_v2_source_path(rel) {
            // A legacy archive: a secret and an unclosed span on every record line.
            let planted: String = text
                .split_inclusive('\n')
                .map(|line| match line.strip_suffix('\n') {
                    Some(body) if body.starts_with('[') => {
                        format!("{body} {TOKEN} <private>{HIDDEN}\n")
                    }
                    _ => line.to_owned(),
                })
                .collect();
            let out = rewrite_archive(rel, &planted, &redact).expect("safe").expect("changed");
            let redacted: String = text
                .split_inclusive('\n')
                .map(|line| match line.strip_suffix('\n') {
                    Some(body) if body.starts_with('[') => format!("{body} [REDACTED:x] \n"),
                    _ => line.to_owned(),
                })
                .collect();
            assert_eq!(out, redacted, "{case}");
            assert_eq!(legacy_headers(rel, &out), legacy_headers(rel, &text), "{case}");
            assert_eq!(legacy_trusted_ids(&out), legacy_trusted_ids(&text), "{case}");
            assert_eq!(rewrite_archive(rel, &out, &redact), Ok(None), "{case}");
            continue;
        }
        let planted = edit_records(rel, &text, &plant_record);
        let out = rewrite_archive(rel, &planted, &redact).expect("complete");
        let frames = scan(rel, &text).frames.len();
        if frames == 0 || scan(rel, &text).frames.iter().all(is_tombstone) {
            assert_eq!(out, None, "{case}");
            continue;
        }
        let out = out.expect("changed");
        assert_eq!(out, edit_records(rel, &text, &planted_record_redacted), "{case}");
        assert!(!holds_planted(&out), "{case}:\n{out}");
        let (before, after) = (scan(rel, &text), scan(rel, &out));
        assert!(after.complete, "{case}");
        let ids = |s: &scriptorium_topics_format::source::Scan<'_>| {
            s.frames.iter().map(|f| f.source_id.to_owned()).collect::<Vec<_>>()
        };
        assert_eq!(ids(&after), ids(&before), "{case}");
        for (old, new) in before.frames.iter().zip(&after.frames) {
            if is_tombstone(old) {
                assert_eq!(new.render(), old.render(), "{case}: a tombstone changed");
            }
        }
        assert_eq!(check_archive(rel, &out), [], "{case}");
        assert_eq!(rewrite_archive(rel, &out, &redact), Ok(None), "{case}: not idempotent");
        assert_eq!(view(rel, &planted).as_deref(), Some(out.as_str()), "{case}");
    }
}

/// Every invalid corpus archive at a v2 path is refused; as a view of an old commit, its valid
/// frames are rewritten and what follows them line by line.
#[test]
fn invalid_corpus_archives_are_refused_and_their_views_mapped_by_line() {
    for (case_path, text) in files_under(&corpus().join("sources")) {
        let (case, rel) = case_path.split_once('/').expect("<case>/<path>");
        if !case.starts_with("invalid-") || !is_v2_source_path(rel) {
            continue;
        }
        let planted = format!("{text}\n{TOKEN} <private>{HIDDEN}\n");
        let err = rewrite_archive(rel, &planted, &redact).expect_err(case);
        assert_eq!(err.code(), "REWRITE_INCOMPLETE_ARCHIVE", "{case}");
        let out = view(rel, &planted).expect("changed");
        assert!(!holds_planted(&out), "{case}:\n{out}");
        assert!(out.starts_with(&text), "{case}");
        let ids = |t: &str| {
            scan(rel, t).frames.iter().map(|f| f.source_id.to_owned()).collect::<Vec<_>>()
        };
        assert_eq!(ids(&out), ids(&planted), "{case}");
    }
}

/// The corpus workspace `valid`, planted: the rewrite of each topic file parses with the same
/// units (IDs, refs, citations) and checks clean; a paragraph left alone is byte for byte the
/// same; the archive keeps its frames.
#[test]
fn the_corpus_workspace_keeps_its_units() {
    let root = corpus().join("workspaces/valid");
    let topics: Vec<TopicFile> = files_under(&root.join("topics"))
        .into_iter()
        .map(|(path, text)| TopicFile::new(path, text))
        .collect();
    let archive_path = "sources/openprogram/_v2/sess-7f2a.md";
    let archive = read(&root.join(archive_path));
    let planted = edit_records(archive_path, &archive, &plant_record);
    let rewritten = rewrite_archive(archive_path, &planted, &redact).expect("complete");
    let rewritten = rewritten.expect("changed");
    let resolver = ArchiveResolver::new(BTreeMap::from([(archive_path.to_owned(), rewritten)]));
    let before = check_tree(&topics, &resolver);
    assert_eq!(before.diagnostics, []);
    let mut after = Vec::new();
    for file in &topics {
        assert_eq!(rewrite_topic(&file.text, &redact), None, "{}", file.path);
        let planted = plant_topic(&file.text);
        assert_ne!(planted, file.text);
        let out = rewrite_topic(&planted, &redact).expect("changed");
        assert!(!holds_planted(&out), "{}:\n{out}", file.path);
        assert_eq!(rewrite_topic(&out, &redact), None, "{}: not idempotent", file.path);
        assert_eq!(view(&format!("topics/{}", file.path), &planted).as_deref(), Some(out.as_str()));
        for (id, (text, untouched)) in paragraphs(&file.text) {
            if untouched {
                assert_eq!(paragraphs(&out).get(&id).map(|p| &p.0), Some(&text), "{id}");
            }
        }
        after.push(TopicFile::new(file.path.clone(), out));
    }
    let parsed = check_tree(&after, &resolver);
    assert_eq!(parsed.diagnostics, []);
    assert_eq!(units(&parsed), units(&before));
    // Each file has one paragraph, planted with the secret.
    let dave = &after.iter().find(|f| f.path == "people/dave.md").expect("dave").text;
    assert!(dave.contains("[REDACTED:x] said: Dave runs a bike shop"), "{dave}");
}

/// A `<private>` left open in one paragraph, heading, label or line ends with it.
#[test]
fn an_unclosed_private_ends_with_its_piece() {
    let text = "# T <private>a\n\n\
        One <private>two.[^e-1] ^aaaaaaaa\n\
        \n\
        Three.[^e-1] ^bbbbbbbb\n\
        \n\
        [^e-1]: Time: `2024`; Sources: [x <private>y](openprogram/s/u1), [z](openprogram/s/u2)\n";
    assert_eq!(
        rewrite_topic(text, &redact).as_deref(),
        Some(
            "# T \n\n\
             One[^e-1] ^aaaaaaaa\n\
             \n\
             Three.[^e-1] ^bbbbbbbb\n\
             \n\
             [^e-1]: Time: `2024`; Sources: [x ](openprogram/s/u1), [z](openprogram/s/u2)\n"
        )
    );
    assert_eq!(view("notes.md", "a <private>b\nc\n").as_deref(), Some("a \nc\n"));
}

// ---- properties ----

/// One piece of text in a generated topic.
#[derive(Clone, Copy, Debug)]
enum Chunk {
    Plain,
    Secret,
    Private,
    Open,
    Close,
}

fn chunk() -> impl Strategy<Value = Chunk> + Clone {
    prop_oneof![
        Just(Chunk::Plain),
        Just(Chunk::Secret),
        Just(Chunk::Private),
        Just(Chunk::Open),
        Just(Chunk::Close),
    ]
}

/// A piece of text; `open` says whether a private span is open (a closer without one holds
/// nothing hidden, since the mapper keeps a stray `</private>`).
fn chunk_text(chunk: Chunk, open: &mut bool) -> String {
    match chunk {
        Chunk::Plain => "It is so".to_owned(),
        Chunk::Secret => format!("It is {TOKEN}"),
        // The mapper does not nest spans: a `</private>` closes the one open.
        Chunk::Private if *open => format!("{HIDDEN} words"),
        Chunk::Private => format!("It is <private>{HIDDEN}</private> so"),
        Chunk::Open => {
            let was = std::mem::replace(open, true);
            if was { format!("{HIDDEN} more") } else { format!("It is <private>{HIDDEN}") }
        }
        Chunk::Close if *open => {
            *open = false;
            format!("{HIDDEN}</private> so")
        }
        Chunk::Close => "so</private> it is".to_owned(),
    }
}

/// One piece of a generated topic file.
#[derive(Clone, Debug)]
enum Piece {
    Heading(Chunk),
    Html(Chunk),
    Fence(Vec<Chunk>),
    /// Its citation groups (the text before each, the footnotes cited), whether it links to
    /// the paragraph before it.
    Paragraph {
        groups: Vec<(Chunk, Vec<usize>)>,
        link: bool,
    },
}

fn piece() -> impl Strategy<Value = Piece> {
    let group = (chunk(), prop::collection::vec(0..3usize, 1..3));
    prop_oneof![
        chunk().prop_map(Piece::Heading),
        chunk().prop_map(Piece::Html),
        prop::collection::vec(chunk(), 1..4).prop_map(Piece::Fence),
        (prop::collection::vec(group.clone(), 1..4), any::<bool>())
            .prop_map(|(groups, link)| Piece::Paragraph { groups, link }),
        (prop::collection::vec(group, 1..4), any::<bool>())
            .prop_map(|(groups, link)| Piece::Paragraph { groups, link }),
    ]
}

/// A topic file from pieces, with block IDs `b0000001`… and its definitions at the end; the
/// source labels hold `labels[k]`.
fn topic(pieces: &[Piece], breaks: &[bool], labels: &[Chunk]) -> String {
    let mut out = String::from("# Topic\n");
    let mut cited = std::collections::BTreeSet::new();
    let mut blocks = 0;
    for (i, piece) in pieces.iter().enumerate() {
        out.push('\n');
        let mut open = false;
        match piece {
            Piece::Heading(c) => {
                out.push_str(&format!("## {}\n", chunk_text(*c, &mut open)));
            }
            Piece::Html(c) => {
                out.push_str(&format!("<!-- {} -->\n", chunk_text(*c, &mut open)));
            }
            Piece::Fence(chunks) => {
                out.push_str("```\n");
                for c in chunks {
                    out.push_str(&chunk_text(*c, &mut open));
                    out.push('\n');
                }
                out.push_str("```\n");
            }
            Piece::Paragraph { groups, link } => {
                for (g, (c, footnotes)) in groups.iter().enumerate() {
                    if g > 0 {
                        let newline = breaks.get(i + g).copied().unwrap_or(false);
                        out.push_str(if newline { "\n" } else { " " });
                    }
                    out.push_str(&chunk_text(*c, &mut open));
                    if *link && g == 0 && blocks > 0 {
                        out.push_str(&format!(", see [before](#^b{blocks:07})"));
                    }
                    out.push('.');
                    for f in footnotes {
                        out.push_str(&format!("[^e-{f}]"));
                        cited.insert(*f);
                    }
                }
                blocks += 1;
                out.push_str(&format!(" ^b{blocks:07}\n"));
            }
        }
    }
    if !cited.is_empty() {
        out.push('\n');
    }
    for f in cited {
        let id = format!("openprogram/s/u{}", f + 1);
        let mut open = false;
        let label = chunk_text(labels.get(f).copied().unwrap_or(Chunk::Plain), &mut open);
        out.push_str(&format!(
            "[^e-{f}]: Time: `2024`; Sources: [{label}](../sources/openprogram/_v2/s.md#{})\n",
            anchor_for(&id)
        ));
    }
    out
}

/// The archive `sources/openprogram/_v2/s.md` with records `u1`…`u3`.
fn archive() -> BTreeMap<String, String> {
    let frames: Vec<String> = (1..=3)
        .map(|n| {
            let mut record =
                ArchiveRecord::new("openprogram", "s", format!("u{n}"), n, "user", "x");
            record.timestamp = Some("t".into());
            record.render()
        })
        .collect();
    BTreeMap::from([("sources/openprogram/_v2/s.md".to_owned(), render_archive(&frames))])
}

/// The shape of a topic file: each line's kind but fenced lines, a paragraph as its block IDs
/// and citations, a definition with its ID and link targets.
fn skeleton(text: &str) -> Vec<String> {
    let cite = regex::Regex::new(r"\[\^([A-Za-z0-9_-]+)\]").expect("pattern");
    let target = regex::Regex::new(r"\[[^\]]+\]\(([^)]+)\)").expect("pattern");
    let doc = Document::parse(text);
    let starts: BTreeMap<usize, usize> =
        doc.paragraphs().iter().map(|p| (p.lines.start, p.lines.end)).collect();
    let lines = doc.lines();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let content = doc.line_text(i);
        if let Some(&end) = starts.get(&i) {
            let p = doc.paragraphs().iter().find(|p| p.lines.start == i).expect("paragraph");
            let par = doc.paragraph_text(p);
            let ids: Vec<String> = doc.block_ids(p).iter().map(|b| b.as_str().to_owned()).collect();
            let cites: Vec<&str> =
                cite.captures_iter(&par).filter_map(|c| c.get(1)).map(|m| m.as_str()).collect();
            out.push(format!("P {ids:?} {cites:?}"));
            i = end;
            continue;
        }
        let entry = match &lines[i].kind {
            LineKind::Heading { level, .. } => format!("H{level}"),
            LineKind::Definition { legacy } => {
                let head = content.split_once(':').map_or(content, |(h, _)| h);
                let targets: Vec<&str> = target
                    .captures_iter(content)
                    .filter_map(|c| c.get(1))
                    .map(|m| m.as_str())
                    .collect();
                format!("D {legacy} {head} {targets:?}")
            }
            LineKind::Fenced => {
                // Content: a fenced block may lose its lines (even its last one, at the end of
                // a file without a final line break), never a fence.
                i += 1;
                continue;
            }
            other => format!("{other:?}"),
        };
        out.push(entry);
        i += 1;
    }
    out
}

/// Lines of a topic file around the rules, holding secrets and private spans.
const NOISY: &[&str] = &[
    "# About <private>a",
    "## sk-PLANTED0secret",
    "",
    "  ",
    "```",
    "```<private>x",
    "<private>x</private>```",
    "<!-- <private>x -->",
    "<private>x</private><!-- y -->",
    "<private>",
    "</private>",
    "<private>x</private># y",
    "It is so.[^e-1] ^b0000001",
    "It <private>is so.[^e-1] ^b0000002",
    "A.[^e-1] <private>x</private>^b0000003 ^b0000004",
    "<private>x[^e-2] y</private>[^e-1] ^b0000005",
    "See [b](#^b0000001) <private>and [c](../y.md#^b0000002).[^e-2] ^b0000006",
    "x <private>y</private>(t.md) sk-PLANTED0secret(#^b0000009).[^e-1] ^b0000007",
    "Legacy <private>a.[^mem_a] More.[^mem_b]",
    "prose <private>only",
    "[^e-1]: Time: `2024`; Sources: [a <private>b](openprogram/s/u1), [c](x)",
    "[^e-2]: Time: `2024`; Sources: [<private>b</private>](openprogram/s/u2)",
    "[^mem_a]: 2024 · Sources: openprogram/s/u1, openprogram/s/u3",
    "[^mem_b]: Time: 2024; Sources: [sk-PLANTED0secret](x)",
    "---",
    "title: <private>x</private>",
];

/// A record's message built from chunks that include frame-looking lines.
const RECORD_CHUNKS: &[&str] = &[
    "plain",
    "sk-PLANTED0secret",
    "<private>",
    "</private>",
    "\n",
    "\r\n",
    "<!-- record-lines:1 -->",
    "<a id=\"source-x\"></a>",
    "[t] user: forged",
    "",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_rewritten_topic_keeps_its_units_checks_clean_and_holds_nothing_planted(
        pieces in prop::collection::vec(piece(), 0..10),
        breaks in prop::collection::vec(any::<bool>(), 0..40),
        labels in prop::collection::vec(chunk(), 3),
    ) {
        let text = topic(&pieces, &breaks, &labels);
        prop_assert_eq!(rewrite_topic(&text, &never), None);
        let out = rewrite_topic(&text, &redact);
        let after = out.clone().unwrap_or_else(|| text.clone());
        prop_assert!(!holds_planted(&after), "{}\nfrom\n{}", after, text);
        prop_assert_eq!(rewrite_topic(&after, &redact), None, "not idempotent on\n{}", after);
        prop_assert_eq!(skeleton(&after), skeleton(&text), "{}\nfrom\n{}", after, text);

        let resolver = ArchiveResolver::new(archive());
        let before = check_tree(&[TopicFile::new("t.md", text.clone())], &resolver);
        prop_assert_eq!(&before.diagnostics, &[], "the generator wrote\n{}", text);
        let parsed = check_tree(&[TopicFile::new("t.md", after.clone())], &resolver);
        prop_assert_eq!(&parsed.diagnostics, &[], "{}\nfrom\n{}", after, text);
        prop_assert_eq!(units(&parsed), units(&before));
    }

    #[test]
    fn a_rewritten_text_keeps_its_structure(
        lines in prop::collection::vec(0..NOISY.len(), 0..16),
        glue in prop::collection::vec(0..3usize, 16),
        text in "[\\[\\]\\^#`<>!()a-z/ \t\r\n:;_-]{0,200}",
    ) {
        let glued: String = lines
            .iter()
            .zip(&glue)
            .map(|(&k, &g)| format!("{}{}", NOISY[k], ["\n", "\r\n", " "][g]))
            .collect();
        let with_tags = text.replace("pr", "<private>").replace("/p", "</private>");
        for input in [glued, with_tags] {
            let after = rewrite_topic(&input, &redact).unwrap_or_else(|| input.clone());
            prop_assert_eq!(skeleton(&after), skeleton(&input), "{:?}\nfrom\n{:?}", after, input);
            prop_assert_eq!(rewrite_topic(&after, &redact), None, "not idempotent on {:?}", after);
            // (The secret may stay where the noise put it into an identifier: a link target, a
            // bare source value.)
            let resolver = ArchiveResolver::new(BTreeMap::new());
            let codes = |t: &str| {
                let parsed = check_tree(&[TopicFile::new("t.md", t.to_owned())], &resolver);
                parsed.units.iter().map(|u| u.memory_id.clone()).collect::<Vec<_>>()
            };
            prop_assert_eq!(codes(&after), codes(&input));
        }
    }

    #[test]
    fn a_rewritten_archive_scans_complete_with_the_same_frames(
        records in prop::collection::vec(prop::collection::vec(0..RECORD_CHUNKS.len(), 0..8), 1..6),
        tombstoned in prop::collection::vec(any::<bool>(), 6),
    ) {
        let path = "sources/openprogram/_v2/t.md";
        let frames: Vec<String> = records
            .iter()
            .enumerate()
            .map(|(n, chunks)| {
                let content: String = chunks.iter().map(|&k| RECORD_CHUNKS[k]).collect();
                let mut record =
                    ArchiveRecord::new("openprogram", "t", format!("m{n}"), n as u64, "user", content);
                record.timestamp = Some(format!("2024-01-0{}", n + 1));
                record.render()
            })
            .collect();
        let text = render_archive(&frames);
        let gone: HashSet<String> = (0..records.len())
            .filter(|&n| tombstoned[n])
            .map(|n| format!("openprogram/t/m{n}"))
            .collect();
        let text = tombstone_archive(path, &text, &gone).expect("complete").unwrap_or(text);
        prop_assert_eq!(rewrite_archive(path, &text, &never), Ok(None));
        let out = rewrite_archive(path, &text, &redact).expect("complete");
        let after = out.clone().unwrap_or_else(|| text.clone());
        let (before, scanned) = (scan(path, &text), scan(path, &after));
        prop_assert!(scanned.complete, "{}", after);
        prop_assert_eq!(check_archive(path, &after), []);
        prop_assert_eq!(scanned.frames.len(), before.frames.len());
        for (old, new) in before.frames.iter().zip(&scanned.frames) {
            prop_assert_eq!(old.source_id, new.source_id);
            prop_assert_eq!(old.timestamp(), new.timestamp());
            prop_assert_eq!(old.speaker_label(), new.speaker_label());
            prop_assert_eq!(old.meta_token, new.meta_token);
            if is_tombstone(old) {
                prop_assert_eq!(old.render(), new.render());
            } else {
                let content = new.content().expect("a header");
                prop_assert!(!content.contains(TOKEN) && !content.contains("<private>"), "{:?}", content);
                let old = old.content().expect("a header");
                let expected = redact(old).unwrap_or_else(|| old.to_owned());
                prop_assert_eq!(content, expected.as_str());
            }
        }
        prop_assert_eq!(rewrite_archive(path, &after, &redact), Ok(None), "not idempotent");
    }
}
