//! Forgetting: the tombstone corpus, the forgotten corpus workspace, merging against a
//! tombstone, and the properties (forgetting in a topic is idempotent, leaves no literal and no
//! diagnostic; a tombstoned archive round-trips through scan and render and can be appended to).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use scriptorium_topics_format::forget::{
    Forgetting, forget_in_topic, forget_in_tree, is_tombstone, redact, tombstone_archive,
    tombstone_frame,
};
use scriptorium_topics_format::merge::{extends_archive, merge_archive};
use scriptorium_topics_format::source::{
    ArchiveRecord, ArchiveResolver, anchor_for, check_archive, plan_append, render_archive, scan,
};
use scriptorium_topics_format::topic::{Document, TopicFile, check_tree, normalize, prune};

const ARCHIVE: &str = "sources/openprogram/_v2/sess-7f2a.md";

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ids(list: &[&str]) -> HashSet<String> {
    list.iter().map(|id| (*id).to_owned()).collect()
}

// ---- the frozen corpus ----

/// Each tombstone case of the corpus is its original with the first record tombstoned, byte
/// for byte, and reads without a diagnostic.
#[test]
fn the_corpus_tombstones_are_their_originals_tombstoned() {
    for (original, tombstoned) in [
        ("valid-reference-example", "valid-tombstone-reference-example"),
        ("valid-forged-frame-in-body", "valid-tombstone-forged-frame-in-body"),
    ] {
        let before = read(corpus().join("sources").join(original).join(ARCHIVE));
        let after = read(corpus().join("sources").join(tombstoned).join(ARCHIVE));
        let made = tombstone_archive(ARCHIVE, &before, &ids(&["openprogram/sess-7f2a/u1"]))
            .expect("complete")
            .expect("holds u1");
        assert_eq!(made, after, "{tombstoned}");
        assert_eq!(check_archive(ARCHIVE, &after), [], "{tombstoned}");
        let scanned = scan(ARCHIVE, &after);
        assert!(scanned.complete);
        assert!(is_tombstone(&scanned.frames[0]));
        assert!(!is_tombstone(&scanned.frames[1]));
        assert_eq!(scanned.frames[0].timestamp(), "2024-03-15T10:00:00+08:00");
        assert_eq!(scanned.frames[0].speaker_label(), Some("forgotten"));
        assert_eq!(scanned.frames[0].content(), Some("[FORGOTTEN]"));
        // The frame after it is read exactly as before.
        assert_eq!(
            scanned.frames[1].render(),
            scan(ARCHIVE, &before).frames.last().map(|f| f.render()).unwrap_or_default()
        );
        let frames: Vec<String> = scanned.frames.iter().map(|f| f.render()).collect();
        assert_eq!(render_archive(&frames), after);
        assert_eq!(
            tombstone_archive(ARCHIVE, &after, &ids(&["openprogram/sess-7f2a/u1"])),
            Ok(None)
        );
    }
}

/// The corpus workspace `valid-forgotten-u1` is `valid` with the record `u1` forgotten: the
/// archive tombstoned, the paragraph that cited only it gone, the link to that paragraph turned
/// into its label. It checks clean (its `EXPECTED` is empty), and normalization only deletes
/// the file left without a record.
#[test]
fn the_forgotten_corpus_workspace_is_the_valid_one_forgotten() {
    let root = corpus().join("workspaces");
    let files = |name: &str| -> Vec<TopicFile> {
        ["core.md", "people/dave.md", "projects/budget-tracker.md"]
            .iter()
            .map(|path| TopicFile::new(*path, read(root.join(name).join("topics").join(path))))
            .collect()
    };
    let forgetting =
        Forgetting::new(["openprogram/sess-7f2a/u1"], [] as [&str; 0], None).expect("valid");
    let out = forget_in_tree(&files("valid"), &forgetting);
    let expected = files("valid-forgotten-u1");
    let changed: Vec<&str> = out.changed.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(changed, ["people/dave.md", "projects/budget-tracker.md"]);
    for file in &out.changed {
        let want = expected.iter().find(|f| f.path == file.path).expect("expected file");
        assert_eq!(file.text, want.text, "{}", file.path);
    }
    assert_eq!(out.removed_blocks.iter().collect::<Vec<_>>(), ["6dfc15f1"]);
    assert_eq!(out.kept_blocks_unlinked.iter().collect::<Vec<_>>(), ["4d5ed8b5"]);
    let archive = read(root.join("valid").join(ARCHIVE));
    let tombstoned = tombstone_archive(ARCHIVE, &archive, &forgetting.source_set())
        .expect("complete")
        .expect("holds u1");
    assert_eq!(tombstoned, read(root.join("valid-forgotten-u1").join(ARCHIVE)));

    let resolver = ArchiveResolver::new(BTreeMap::from([(ARCHIVE.to_owned(), tombstoned)]));
    let parsed = check_tree(&expected, &resolver);
    assert_eq!(parsed.diagnostics, []);
    let committed: HashSet<String> = parsed.units.iter().map(|u| u.memory_id.clone()).collect();
    let normalized = normalize(&expected, &committed, &parsed.units, &resolver);
    assert_eq!(normalized.deleted, ["projects/budget-tracker.md"]);
    assert!(normalized.changed.is_empty() && normalized.dropped.is_empty());
}

// ---- merging against a tombstone ----

fn record(message: &str, n: u64, content: &str) -> String {
    let mut record = ArchiveRecord::new("openprogram", "sess-7f2a", message, n, "user", content);
    record.timestamp = Some(format!("2024-03-15T10:00:0{n}Z"));
    record.speaker_id = Some("owner/local".into());
    record.render()
}

fn tomb(message: &str, n: u64) -> String {
    tombstone_frame(&format!("openprogram/sess-7f2a/{message}"), &format!("2024-03-15T10:00:0{n}Z"))
}

#[test]
fn a_merge_keeps_the_tombstone_at_the_originals_place() {
    let original =
        render_archive(&[record("u1", 1, "one"), record("u2", 2, "two"), record("u3", 3, "three")]);
    let forgotten =
        render_archive(&[record("u1", 1, "one"), tomb("u2", 2), record("u3", 3, "three")]);
    for (ours, theirs) in [(&original, &forgotten), (&forgotten, &original)] {
        let merged = merge_archive(ARCHIVE, Some(ours), Some(theirs)).expect("merges");
        assert_eq!(merged.as_deref(), Some(forgotten.as_str()));
    }
    // With new frames on each side: ours' order, the tombstone where the frame was in ours,
    // theirs' new frames appended.
    let ours =
        render_archive(&[record("u1", 1, "one"), record("u2", 2, "two"), record("u4", 4, "four")]);
    let theirs = render_archive(&[record("u1", 1, "one"), tomb("u2", 2), record("u5", 5, "five")]);
    let merged = merge_archive(ARCHIVE, Some(&ours), Some(&theirs)).expect("merges").expect("text");
    assert_eq!(
        merged,
        render_archive(&[
            record("u1", 1, "one"),
            tomb("u2", 2),
            record("u4", 4, "four"),
            record("u5", 5, "five")
        ])
    );
    let back = merge_archive(ARCHIVE, Some(&theirs), Some(&ours)).expect("merges").expect("text");
    assert_eq!(
        back,
        render_archive(&[
            record("u1", 1, "one"),
            tomb("u2", 2),
            record("u5", 5, "five"),
            record("u4", 4, "four")
        ])
    );
    assert!(scan(ARCHIVE, &merged).complete && scan(ARCHIVE, &back).complete);
    // What a sync installs: ours extended, but for the tombstone (theirs already held it).
    assert!(!merged.starts_with(ours.as_str()));
    assert!(extends_archive(ARCHIVE, &ours, &merged));
    assert!(extends_archive(ARCHIVE, &theirs, &back));
    // A tombstone arriving for a record this side never had is simply added.
    let only_tomb = render_archive(&[record("u1", 1, "one"), tomb("u6", 6)]);
    let merged =
        merge_archive(ARCHIVE, Some(&ours), Some(&only_tomb)).expect("merges").expect("text");
    assert!(merged.ends_with(&tomb("u6", 6)));
    // Two different originals are still a conflict.
    let other = render_archive(&[record("u1", 1, "one"), record("u2", 2, "TWO")]);
    assert!(merge_archive(ARCHIVE, Some(&original), Some(&other)).is_err());
}

// ---- properties ----

/// Lines of a topic file around the rules: records, near misses, structure holding the word.
const NOISY: &[&str] = &[
    "# About Ana",
    "## Ana",
    "#Ana",
    "",
    "  ",
    "```",
    "```Ana",
    "Ana();",
    "<!-- Ana -->",
    "<a id=\"Ana\"></a>",
    "It is so.[^e-1] ^b0000001",
    "It is so.[^e-1] ^b0000003",
    "Ana said so.[^e-2] ^b0000004",
    "It is so.[^e-2] Really.[^e-1] ^b0000005",
    "See [b](#^b0000001) and [c](../y.md#^b0000002).[^e-2] ^b0000006",
    "continues [^e-1]",
    "Legacy.[^mem_a] More.[^mem_b]",
    "prose only",
    "[^e-1]: Time: `2024`; Sources: [a](../../sources/openprogram/_v2/s.md#source-6a1ab5d9e4b5e3c6)",
    "[^e-1]: Time: `2024`; Sources: [a](openprogram/s/u1), [Ana](openprogram/s/u2)",
    "[^e-2]: Time: `2024`; Sources: [b](openprogram/s/u2)",
    "[^mem_a]: 2024 · Sources: openprogram/s/u1, openprogram/s/u3",
    "[^mem_b]: Time: 2024; Sources: [Ana's](x)",
];

/// One paragraph of a generated topic: its citation groups (quote, footnotes cited), whether
/// it links to the paragraph before it.
#[derive(Clone, Debug)]
enum Piece {
    Heading(bool),
    Html(bool),
    Fence(bool),
    Paragraph { groups: Vec<(bool, Vec<usize>)>, link: bool },
}

fn piece() -> impl Strategy<Value = Piece> {
    let group = (any::<bool>(), prop::collection::vec(0..4usize, 1..3));
    prop_oneof![
        any::<bool>().prop_map(Piece::Heading),
        any::<bool>().prop_map(Piece::Html),
        any::<bool>().prop_map(Piece::Fence),
        (prop::collection::vec(group, 1..4), any::<bool>())
            .prop_map(|(groups, link)| Piece::Paragraph { groups, link }),
        (
            prop::collection::vec((any::<bool>(), prop::collection::vec(0..4usize, 1..3)), 1..4),
            any::<bool>()
        )
            .prop_map(|(groups, link)| Piece::Paragraph { groups, link }),
    ]
}

/// The source a footnote `e-<k>` cites (two for `k` = 3), and whether its label holds the word.
const FOOTNOTE_SOURCES: [&[(usize, bool)]; 4] =
    [&[(1, false)], &[(2, true)], &[(3, false)], &[(1, false), (4, false)]];

fn link_to(message: usize, ana: bool) -> String {
    let id = format!("openprogram/s/u{message}");
    let label = if ana { format!("chat with Ana {message}") } else { format!("chat {message}") };
    format!("[{label}](../sources/openprogram/_v2/s.md#{})", anchor_for(&id))
}

/// A topic file from pieces, with block IDs `b0000001`… and its definitions at the end.
fn topic(pieces: &[Piece], breaks: &[bool]) -> String {
    let mut out = String::from("# Topic\n");
    let mut cited = std::collections::BTreeSet::new();
    let mut blocks = 0;
    for (i, piece) in pieces.iter().enumerate() {
        out.push('\n');
        match piece {
            Piece::Heading(ana) => {
                out.push_str(if *ana { "## About Ana\n" } else { "## Section\n" });
            }
            Piece::Html(ana) => {
                out.push_str(if *ana { "<!-- Ana was here -->\n" } else { "<!-- note -->\n" });
            }
            Piece::Fence(ana) => {
                out.push_str(if *ana { "```\nAna();\n```\n" } else { "```\ncode();\n```\n" });
            }
            Piece::Paragraph { groups, link } => {
                for (g, (ana, footnotes)) in groups.iter().enumerate() {
                    if g > 0 {
                        out.push_str(if breaks.get(i + g).copied().unwrap_or(false) {
                            "\n"
                        } else {
                            " "
                        });
                    }
                    out.push_str(if *ana { "Ana said so" } else { "It is so" });
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
        let links: Vec<String> =
            FOOTNOTE_SOURCES[f].iter().map(|(m, ana)| link_to(*m, *ana)).collect();
        out.push_str(&format!("[^e-{f}]: Time: `2024`; Sources: {}\n", links.join(", ")));
    }
    out
}

/// The archive `sources/openprogram/_v2/s.md` with records `u1`…`u4`, some tombstoned.
fn archive_of(tombstoned: &HashSet<String>) -> BTreeMap<String, String> {
    let frames: Vec<String> = (1..=4)
        .map(|n| {
            let mut record =
                ArchiveRecord::new("openprogram", "s", format!("u{n}"), n, "user", "x");
            record.timestamp = Some("t".into());
            record.render()
        })
        .collect();
    let text = render_archive(&frames);
    let path = "sources/openprogram/_v2/s.md";
    let text = tombstone_archive(path, &text, tombstoned).expect("complete").unwrap_or(text);
    BTreeMap::from([(path.to_owned(), text)])
}

/// Each paragraph's text by its identity block ID.
fn paragraphs(text: &str) -> BTreeMap<String, String> {
    let doc = Document::parse(text);
    doc.paragraphs()
        .iter()
        .filter_map(|p| Some((doc.block_ids(p).last()?.as_str().to_owned(), doc.paragraph_text(p))))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn forgetting_in_a_topic_is_idempotent_clean_and_leaves_no_literal(
        pieces in prop::collection::vec(piece(), 0..10),
        breaks in prop::collection::vec(any::<bool>(), 0..40),
        sources in prop::collection::vec(1..=4usize, 0..3),
        blocks in prop::collection::vec(1..=10usize, 0..2),
        literal in any::<bool>(),
    ) {
        let text = topic(&pieces, &breaks);
        let sources: Vec<String> = sources.iter().map(|m| format!("openprogram/s/u{m}")).collect();
        let blocks: Vec<String> = blocks.iter().map(|b| format!("b{b:07}")).collect();
        let forgetting =
            Forgetting::new(&sources, &blocks, literal.then_some("Ana")).expect("valid");
        let out = forget_in_topic("t.md", &text, &forgetting, &HashSet::new());
        let after = out.text.clone().unwrap_or_else(|| text.clone());
        if literal {
            prop_assert!(!after.contains("Ana"), "{}", after);
        }
        let again = forget_in_topic("t.md", &after, &forgetting, &HashSet::new());
        prop_assert_eq!(again.text, None, "not idempotent on\n{}", after);

        // A clean input gives a clean output (against the tombstoned archive).
        let before_resolver = ArchiveResolver::new(archive_of(&HashSet::new()));
        let input = [TopicFile::new("t.md", text.clone())];
        if check_tree(&input, &before_resolver).diagnostics.is_empty() {
            let resolver = ArchiveResolver::new(archive_of(&forgetting.source_set()));
            let output = [TopicFile::new("t.md", after.clone())];
            let parsed = check_tree(&output, &resolver);
            prop_assert!(
                parsed.diagnostics.is_empty(),
                "{:?}\n{}\nfrom\n{}",
                parsed.diagnostics,
                after,
                text
            );
            // Removed blocks are gone; untouched paragraphs are byte for byte the same.
            let (old, new) = (paragraphs(&text), paragraphs(&after));
            for id in &out.removed_blocks {
                prop_assert!(!new.contains_key(id), "{} still there", id);
            }
            for (id, paragraph) in &new {
                let edited =
                    out.kept_blocks_uncited.contains(id) || out.kept_blocks_unlinked.contains(id);
                if !edited {
                    prop_assert_eq!(Some(paragraph), old.get(id));
                }
            }
            // Normalization changes nothing but pruning the sections (or the file) left
            // without a record, when it changed nothing in the input.
            let units = |parsed: &scriptorium_topics_format::TreeParse| {
                let ids: HashSet<String> =
                    parsed.units.iter().map(|u| u.memory_id.clone()).collect();
                (ids, parsed.units.clone())
            };
            let (ids, before_units) = units(&check_tree(&input, &before_resolver));
            if normalize(&input, &ids, &before_units, &before_resolver).changed.is_empty() {
                let (ids, units) = units(&parsed);
                let normalized = normalize(&output, &ids, &units, &resolver);
                let text = normalized.files.first().map(|f| f.text.clone());
                prop_assert_eq!(text, prune(&after), "{}", after);
            }
        }
    }

    #[test]
    fn forgetting_in_any_text_is_idempotent_and_leaves_no_literal(
        text in "[\\[\\]\\^#`<>!()a-z0-9 \t\r\n:;·_\\-/.\u{85}\u{2028}日]{0,300}",
        lines in prop::collection::vec(0..NOISY.len(), 0..16),
        crlf in any::<bool>(),
    ) {
        let glued: String = lines
            .iter()
            .map(|&k| format!("{}{}", NOISY[k], if crlf { "\r\n" } else { "\n" }))
            .collect();
        let forgetting =
            Forgetting::new(["openprogram/s/u1"], ["b0000001"], Some("Ana")).expect("valid");
        for input in [text, glued] {
            let out = forget_in_topic("x/t.md", &input, &forgetting, &ids(&["b0000002"]));
            let after = out.text.unwrap_or(input);
            prop_assert!(!after.contains("Ana"), "{:?}", after);
            let again = forget_in_topic("x/t.md", &after, &forgetting, &ids(&["b0000002"]));
            prop_assert_eq!(again.text, None, "not idempotent on {:?}", after);
        }
    }

    #[test]
    fn the_safety_net_leaves_no_occurrence(
        text in "[\\[\\]NOab FGTE日]{0,60}",
        literal in "[\\[\\]NOab FGTE日]{1,4}",
    ) {
        let out = redact(&text, &literal);
        if "[FORGOTTEN]".contains(literal.as_str()) {
            // Refused by `Forgetting::new`; left alone here.
            prop_assert_eq!(out.as_ref(), text.as_str());
            return Ok(());
        }
        prop_assert!(!out.contains(literal.as_str()), "{:?} in {:?}", literal, out);
        prop_assert_eq!(redact(&out, &literal), out.clone());
        if !text.contains(literal.as_str()) {
            prop_assert_eq!(out.as_ref(), text.as_str());
        }
    }

    #[test]
    fn a_tombstoned_archive_round_trips_and_takes_appends(
        contents in prop::collection::vec("[ -~\\n\\r]{0,40}", 1..6),
        doomed in prop::collection::vec(any::<bool>(), 6),
    ) {
        let path = "sources/openprogram/_v2/t.md";
        let frames: Vec<String> = contents
            .iter()
            .enumerate()
            .map(|(n, content)| {
                let (message, content) = (format!("m{n}"), content.clone());
                let mut record =
                    ArchiveRecord::new("openprogram", "t", message, n as u64, "user", content);
                record.timestamp = Some(format!("2024-01-0{}", n + 1));
                record.render()
            })
            .collect();
        let text = render_archive(&frames);
        let gone: HashSet<String> = (0..contents.len())
            .filter(|&n| doomed[n])
            .map(|n| format!("openprogram/t/m{n}"))
            .collect();
        let out = tombstone_archive(path, &text, &gone)
            .expect("complete")
            .unwrap_or_else(|| text.clone());
        prop_assert_eq!(out == text, gone.is_empty());
        let scanned = scan(path, &out);
        prop_assert!(scanned.complete);
        prop_assert_eq!(check_archive(path, &out), []);
        prop_assert_eq!(scanned.frames.len(), contents.len());
        let before = scan(path, &text);
        for (n, frame) in scanned.frames.iter().enumerate() {
            prop_assert_eq!(is_tombstone(frame), doomed[n]);
            if !doomed[n] {
                prop_assert_eq!(frame.render(), before.frames[n].render());
            }
        }
        let rendered: Vec<String> = scanned.frames.iter().map(|f| f.render()).collect();
        prop_assert_eq!(render_archive(&rendered), out.clone());
        prop_assert_eq!(tombstone_archive(path, &out, &gone), Ok(None));
        // Appending after tombstones works as before.
        let tree = BTreeMap::from([(path.to_owned(), out.clone())]);
        let new = ArchiveRecord::new("openprogram", "t", "new", 99, "user", "later");
        let plan = plan_append(&[new], &tree).expect("appendable");
        let appended = &plan.writes[0].new_text;
        prop_assert!(appended.starts_with(&out));
        prop_assert!(scan(path, appended).complete);
    }
}
