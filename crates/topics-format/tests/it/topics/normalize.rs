//! Normalization (see `docs/format.md#normalization`) on the shared examples of the frozen corpus
//! and each step's edge cases.

use std::collections::{BTreeMap, HashSet};

use scriptorium_topics_format::topic::{
    EvidenceAssignment, TopicFile, block_id_candidate, evidence_id_candidate, normalize, parse_tree,
};

use super::{TestResolver, corpus_dir, topic_files, workspace_resolver};

fn no_ids() -> HashSet<String> {
    HashSet::new()
}

fn text_of<'a>(files: &'a [TopicFile], path: &str) -> &'a str {
    files.iter().find(|f| f.path == path).map_or("<missing>", |f| f.text.as_str())
}

#[test]
fn verified_reference_hashes() {
    let body = "Craig is building a budget tracker in Flask, due 2024-04-15.[^e1]";
    assert_eq!(block_id_candidate("budget-tracker.md", body, 0), "6dfc15f1");
    assert_eq!(evidence_id_candidate("undated", "openprogram/sess-7f2a/a1", 0), "e-cecd4ddc68");
}

/// The example run of `docs/format.md#topic-files` and `docs/format.md#core-view`: the stage the
/// writer produced, normalized.
///
/// Python gave both files `e-cecd4ddc68` because it keyed local labels by label alone (see
/// `docs/format.md#where-we-deliberately-differ`, row "evidence IDs"); we key by (file, label), so
/// `budget-tracker.md` gets the ID of its own definition, exactly what Python gives when that file
/// is normalized on its own. Everything else is byte for byte the Python implementation's output.
#[test]
fn reference_stage_normalizes_to_reference_output() {
    let stage = topic_files(&corpus_dir().join("topics").join("stage"));
    let resolver = workspace_resolver("valid");
    let out = normalize(&stage, &no_ids(), &[], &resolver);
    let valid = topic_files(&corpus_dir().join("topics").join("valid"));
    assert_eq!(text_of(&out.files, "core.md"), text_of(&valid, "core.md"));
    let own = evidence_id_candidate("2024-03-15", "openprogram/sess-7f2a/u1", 0);
    assert_eq!(own, "e-be7bfea2aa");
    assert_eq!(
        text_of(&out.files, "projects/budget-tracker.md"),
        text_of(&valid, "projects/budget-tracker.md").replace("e-cecd4ddc68", &own)
    );
    let found: BTreeMap<&str, &str> =
        out.block_ids.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let expected_blocks: BTreeMap<&str, &str> =
        [("topics/core.md#0", "18d91425"), ("topics/projects/budget-tracker.md#0", "6dfc15f1")]
            .into();
    assert_eq!(found, expected_blocks);
    assert_eq!(
        out.evidence_ids,
        vec![
            EvidenceAssignment {
                path: "core.md".into(),
                label: "e1".into(),
                id: "e-cecd4ddc68".into()
            },
            EvidenceAssignment {
                path: "projects/budget-tracker.md".into(),
                label: "e1".into(),
                id: own.clone()
            },
        ]
    );
    assert_eq!(out.changed, ["core.md", "projects/budget-tracker.md"]);
    // Alone, the budget tracker gets the same IDs Python gives it alone.
    let alone: Vec<TopicFile> = stage.iter().filter(|f| f.path != "core.md").cloned().collect();
    let out_alone = normalize(&alone, &no_ids(), &[], &resolver);
    assert_eq!(
        text_of(&out_alone.files, "projects/budget-tracker.md"),
        text_of(&out.files, "projects/budget-tracker.md")
    );
    // The result parses, and normalizing it again (its IDs now committed) changes nothing.
    let parsed = parse_tree(&out.files, &resolver);
    assert!(parsed.is_valid(), "{:?}", parsed.diagnostics);
    let committed: HashSet<String> = parsed.units.iter().map(|u| u.memory_id.clone()).collect();
    let again = normalize(&out.files, &committed, &parsed.units, &resolver);
    assert_eq!(again.files, out.files);
    assert!(
        again.changed.is_empty() && again.block_ids.is_empty() && again.evidence_ids.is_empty()
    );
}

/// Two files introducing `[^e1]` with different definitions get different IDs (see
/// `docs/format.md#where-we-deliberately-differ`, row "evidence IDs").
#[test]
fn evidence_ids_are_keyed_by_file_and_label() {
    let files = [
        TopicFile::new("a.md", "A.[^e1]\n\n[^e1]: Time: `2024`; Sources: [a](p/t/a)\n"),
        TopicFile::new("b.md", "B.[^e1]\n\n[^e1]: Time: `2025`; Sources: [b](p/t/b)\n"),
    ];
    let out = normalize(&files, &no_ids(), &[], &TestResolver);
    let a = evidence_id_candidate("2024", "p/t/a", 0);
    let b = evidence_id_candidate("2025", "p/t/b", 0);
    assert_ne!(a, b);
    assert!(
        text_of(&out.files, "a.md")
            .contains(&format!("[^{a}]: Time: `2024`; Sources: [a](../sources/p/t/a.md#x)"))
    );
    assert!(
        text_of(&out.files, "b.md")
            .contains(&format!("[^{b}]: Time: `2025`; Sources: [b](../sources/p/t/b.md#x)"))
    );
    assert!(parse_tree(&out.files, &TestResolver).is_valid());
}

/// Identical definitions under one label in two files still mint two IDs (the collision counter).
#[test]
fn identical_definitions_in_two_files_get_distinct_ids() {
    let text = "A.[^e1]\n\n[^e1]: Time: `2024`; Sources: [a](p/t/a)\n";
    let files = [TopicFile::new("a.md", text), TopicFile::new("b.md", text)];
    let out = normalize(&files, &no_ids(), &[], &TestResolver);
    assert_eq!(out.evidence_ids[0].id, evidence_id_candidate("2024", "p/t/a", 0));
    assert_eq!(out.evidence_ids[1].id, evidence_id_candidate("2024", "p/t/a", 1));
}

#[test]
fn orphan_citations_rebind_to_following_definitions() {
    let committed: HashSet<String> = ["abc12345".to_owned()].into();
    let text = "Old fact, now extended.[^e-0000000001][^e2] ^abc12345\n\n[^e-0000000001]: Time: `2024`; Sources: [a](p/t/a)\n[^e1]: Time: `2025`; Sources: [b](p/t/b)\n";
    let out = normalize(&[TopicFile::new("x.md", text)], &committed, &[], &TestResolver);
    let e1 = evidence_id_candidate("2025", "p/t/b", 0);
    // `[^e2]` has no definition: it takes the definition after its paragraph at its position.
    // The first following definition is `e-0000000001` (zip with the orphans), so it binds there.
    assert_eq!(
        out.files[0].text,
        format!(
            "Old fact, now extended.[^e-0000000001][^e-0000000001] ^abc12345\n\n[^e-0000000001]: Time: `2024`; Sources: [a](../sources/p/t/a.md#x)\n[^{e1}]: Time: `2025`; Sources: [b](../sources/p/t/b.md#x)\n"
        )
    );
}

#[test]
fn invented_ids_are_stripped_and_committed_ones_kept() {
    let committed: HashSet<String> = ["keep0001".to_owned()].into();
    let text = "Kept.[^e-0000000001] ^keep0001\n\nNew.[^e-0000000001]  ^madeup12\n\n[^e-0000000001]: Time: `2024`; Sources: [a](p/t/a)\n";
    let out = normalize(&[TopicFile::new("x.md", text)], &committed, &[], &TestResolver);
    let new_id = block_id_candidate("x.md", "New.[^e-0000000001]", 0);
    assert_eq!(out.block_ids.get("topics/x.md#0"), Some(&new_id));
    assert!(out.files[0].text.starts_with(&format!(
        "Kept.[^e-0000000001] ^keep0001\n\nNew.[^e-0000000001] ^{new_id}\n"
    )));
}

#[test]
fn bare_and_legacy_sources_become_canonical_links() {
    let text =
        "Fact.[^e-0000000001] ^abc\n\n[^e-0000000001]: 2024-01 · Sources: p/t/a, D1:3 · q/r/s\n";
    let committed: HashSet<String> = ["abc".to_owned()].into();
    let out = normalize(&[TopicFile::new("x.md", text)], &committed, &[], &TestResolver);
    assert_eq!(
        out.files[0].text,
        "Fact.[^e-0000000001] ^abc\n\n[^e-0000000001]: Time: `2024-01`; Sources: [p/t/a](../sources/p/t/a.md#x), [D1:3](../sources/D1:3.md#x), [q/r/s](../sources/q/r/s.md#x)\n"
    );
}

#[test]
fn whitespace_rules() {
    let committed: HashSet<String> = ["abc".to_owned()].into();
    let text = "# T  \r\n\r\nFact \t[^e-0000000001]\t ^abc   \r\n\r\n\r\n[^e-0000000001]:   Time: 2024 ;Sources:[a]( p/t/a )   \r\n\r\n\r\n";
    let out = normalize(&[TopicFile::new("x.md", text)], &committed, &[], &TestResolver);
    assert_eq!(
        out.files[0].text,
        "# T  \n\nFact[^e-0000000001] ^abc\n\n\n[^e-0000000001]: Time: `2024`; Sources: [a](../sources/p/t/a.md#x)\n"
    );
}

#[test]
fn pruning_drops_empty_sections_and_files() {
    let committed: HashSet<String> = ["abc".to_owned()].into();
    let files = [
        TopicFile::new("empty.md", "# Only headings\n\n## And prose\n\nNo evidence here.\n"),
        TopicFile::new(
            "x.md",
            "# X\n\nIntro.\n\n## Empty\n\nstill nothing\n\n## Facts\n\nFact.[^e-0000000001] ^abc\n\n# References\n\n[^e-0000000001]: Time: `2024`; Sources: [a](p/t/a)\n",
        ),
    ];
    let out = normalize(&files, &committed, &[], &TestResolver);
    assert_eq!(out.deleted, ["empty.md"]);
    assert_eq!(
        text_of(&out.files, "x.md"),
        "# X\n\nIntro.\n\n## Facts\n\nFact.[^e-0000000001] ^abc\n\n[^e-0000000001]: Time: `2024`; Sources: [a](../sources/p/t/a.md#x)\n"
    );
}

/// A shell `mv` left relative source links pointing nowhere: the committed unit's refs rebuild
/// them (keeping the labels).
#[test]
fn relocated_evidence_is_recovered_from_committed_units() {
    let resolver = workspace_resolver("valid");
    let before = [TopicFile::new(
        "a.md",
        "Moved fact.[^e-0000000001] ^mv000001\n\n[^e-0000000001]: Time: `2024`; Sources: [label kept](../sources/openprogram/_v2/sess-7f2a.md#source-d7e6772098d6b0d9)\n",
    )];
    let committed = parse_tree(&before, &resolver);
    assert!(committed.is_valid(), "{:?}", committed.diagnostics);
    let moved = [TopicFile::new("deep/er/b.md", before[0].text.clone())];
    let ids: HashSet<String> = ["mv000001".to_owned()].into();
    let out = normalize(&moved, &ids, &committed.units, &resolver);
    assert_eq!(
        out.files[0].text,
        "Moved fact.[^e-0000000001] ^mv000001\n\n[^e-0000000001]: Time: `2024`; Sources: [label kept](../../../sources/openprogram/_v2/sess-7f2a.md#source-d7e6772098d6b0d9)\n"
    );
    assert!(parse_tree(&out.files, &resolver).is_valid());
}

/// Normalizing the valid corpus workspace (already normalized, every ID committed) changes no byte.
#[test]
fn normalized_workspace_is_a_fixed_point() {
    let resolver = workspace_resolver("valid");
    let files = topic_files(&corpus_dir().join("workspaces").join("valid").join("topics"));
    let parsed = parse_tree(&files, &resolver);
    assert!(parsed.is_valid());
    let ids: HashSet<String> = parsed.units.iter().map(|u| u.memory_id.clone()).collect();
    let out = normalize(&files, &ids, &parsed.units, &resolver);
    assert!(out.changed.is_empty() && out.deleted.is_empty());
    let mut sorted = files.clone();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut got = out.files.clone();
    got.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(got, sorted);
}
