//! Timeline, recent events and relations (see `docs/format.md#derived-views`), as insta
//! snapshots on the frozen corpus workspace.

use std::collections::BTreeMap;

use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::{TopicFile, parse_tree};
use scriptorium_views::rebuild;

use crate::common::{corpus_workspace, parse_workspace};

#[test]
fn corpus_workspace_views() {
    let parse = parse_workspace(&corpus_workspace());
    assert!(parse.is_valid(), "{:?}", parse.diagnostics);
    let views = rebuild(parse.units.iter(), &BTreeMap::new(), 50);
    let files: Vec<&String> = views.timeline.keys().collect();
    insta::assert_debug_snapshot!("timeline_files", files);
    for (path, text) in &views.timeline {
        // Snapshots ignore the final line break; the bytes end with exactly one.
        assert!(text.ends_with(")\n"), "{path}");
        insta::assert_snapshot!(format!("timeline__{}", path.replace('/', "_")), text);
    }
    assert!(views.recent_events.ends_with("}\n") && views.relations.ends_with("}}\n"));
    insta::assert_snapshot!("recent_events", views.recent_events);
    insta::assert_snapshot!("relations", views.relations);
}

#[test]
fn relations_match_the_reference_example() {
    let parse = parse_workspace(&corpus_workspace());
    let views = rebuild(parse.units.iter(), &BTreeMap::new(), 50);
    assert_eq!(
        views.relations,
        "{\"backlinks\": {\"6dfc15f1\": [\"4d5ed8b5\"]}, \"outbound\": {\"18d91425\": [], \
         \"4d5ed8b5\": [\"6dfc15f1\"], \"6dfc15f1\": []}}\n"
    );
}

#[test]
fn recent_limit_keeps_the_newest_and_zero_is_empty() {
    let parse = parse_workspace(&corpus_workspace());
    let order = BTreeMap::from([
        ("6dfc15f1".to_owned(), 0),
        ("18d91425".to_owned(), 1),
        ("4d5ed8b5".to_owned(), 2),
    ]);
    let views = rebuild(parse.units.iter(), &order, 2);
    let ids: Vec<&str> = views
        .recent_events
        .lines()
        .map(|line| line.split('"').nth(3).unwrap_or_default())
        .collect();
    assert_eq!(ids, ["18d91425", "4d5ed8b5"]);
    assert_eq!(rebuild(parse.units.iter(), &order, 0).recent_events, "");
}

#[test]
fn rebuild_is_deterministic() {
    let parse = parse_workspace(&corpus_workspace());
    assert_eq!(
        rebuild(parse.units.iter(), &BTreeMap::new(), 50),
        rebuild(parse.units.iter(), &BTreeMap::new(), 50)
    );
}

#[test]
fn empty_tree_has_empty_views() {
    let views = rebuild(std::iter::empty(), &BTreeMap::new(), 50);
    assert!(views.timeline.is_empty());
    assert_eq!(views.recent_events, "");
    assert_eq!(views.relations, "{\"backlinks\": {}, \"outbound\": {}}\n");
}

#[test]
fn non_ascii_text_stays_utf8_and_controls_are_escaped() {
    let text = "# 写入\n\n主人喜欢 \"plain\" language.[^e1] ^aaaa0009\n\n\
                [^e1]: Time: `2024`; Sources: [偏好](../sources/D1.md#d1-1)\n";
    let parse =
        parse_tree(&[TopicFile::new("zh.md", text)], &ArchiveResolver::new(BTreeMap::new()));
    assert!(parse.is_valid(), "{:?}", parse.diagnostics);
    let views = rebuild(parse.units.iter(), &BTreeMap::new(), 50);
    assert_eq!(
        views.recent_events,
        "{\"memory_id\": \"aaaa0009\", \"when\": \"2024\", \"whens\": [\"2024\"], \
         \"content\": \"主人喜欢 \\\"plain\\\" language.\", \"refs\": [\"D1:1\"], \
         \"source_refs\": [\"D1:1\"], \"topic_path\": \"topics/zh.md\", \"headings\": [\"写入\"], \
         \"created_order\": 0}\n"
    );
    assert_eq!(
        views.timeline.get("timeline/2024.md").map(String::as_str),
        Some(
            "# 2024\n\n主人喜欢 \"plain\" language. [Topic](../topics/zh.md#^aaaa0009) [偏好](../sources/D1.md#d1-1)\n"
        )
    );
}

/// One paragraph of a generated tree: its ID number, its dates and the ID number it links to.
#[derive(Clone, Debug)]
struct Para {
    id: u32,
    whens: Vec<&'static str>,
    link: Option<u32>,
}

const WHENS: [&str; 6] = ["2024", "2024-03", "2024-03-15", "2025-01-02", "undated", "2024-03"];

fn para() -> impl proptest::strategy::Strategy<Value = Para> {
    use proptest::prelude::*;
    (0u32..24, proptest::collection::vec(0..WHENS.len(), 1..3), proptest::option::of(0u32..24))
        .prop_map(|(id, whens, link)| Para {
            id,
            whens: whens.into_iter().map(|i| WHENS[i]).collect(),
            link,
        })
}

fn block_id(n: u32) -> String {
    format!("{:08x}", 0xb000_0000_u32 + n)
}

/// A topic file of `paras`, each cited by one footnote per date.
fn topic(paras: &[Para]) -> String {
    let mut text = String::from("# Generated\n");
    let mut notes = String::new();
    for para in paras {
        text.push_str(&format!("\nFact number {}", para.id));
        if let Some(link) = para.link {
            text.push_str(&format!(" (see [fact {link}](f0.md#^{}))", block_id(link)));
        }
        text.push('.');
        // Labels and sources follow the paragraph, not its position: a paragraph kept by an
        // edit of its file renders the same rows.
        for (k, when) in para.whens.iter().enumerate() {
            let label = para.id * 10 + k as u32;
            text.push_str(&format!("[^e{label}]"));
            notes.push_str(&format!(
                "[^e{label}]: Time: `{when}`; Sources: [s{label}](../sources/D1.md#d1-{label})\n"
            ));
        }
        text.push_str(&format!(" ^{}\n", block_id(para.id)));
    }
    if !notes.is_empty() {
        text.push('\n');
        text.push_str(&notes);
    }
    text
}

/// Keeps the first paragraph of each ID among `taken` and `paras`, so IDs stay unique.
fn unique(paras: Vec<Para>, taken: &mut std::collections::BTreeSet<u32>) -> Vec<Para> {
    paras.into_iter().filter(|p| taken.insert(p.id)).collect()
}

proptest::proptest! {
    /// Views updated from one changed file equal, file for file, the views rebuilt from the
    /// whole new tree.
    #[test]
    fn an_update_equals_a_full_rebuild(
        files in proptest::collection::vec(proptest::collection::vec(para(), 0..5), 1..4),
        changed in 0usize..4,
        replacement in proptest::collection::vec(para(), 0..5),
        limit in 0usize..6,
        edit_in_place in proptest::bool::ANY,
        aspect in 0u8..3,
    ) {
        use std::collections::BTreeSet;
        use scriptorium_views::{affected, update};
        let changed = changed % files.len();
        let mut taken = BTreeSet::new();
        let before: Vec<Vec<Para>> =
            files.into_iter().map(|paras| unique(paras, &mut taken)).collect();
        let mut others: BTreeSet<u32> = BTreeSet::new();
        for (i, paras) in before.iter().enumerate() {
            if i != changed {
                others.extend(paras.iter().map(|p| p.id));
            }
        }
        let mut after = before.clone();
        // Either a new file, or the old one with one paragraph replaced and one added.
        after[changed] = if edit_in_place && !before[changed].is_empty() {
            let mut paras = before[changed].clone();
            let mut own: BTreeSet<u32> = BTreeSet::new();
            let extra = unique(replacement, &mut others);
            let at = extra.len() % paras.len();
            if let Some(first) = extra.first() {
                // Its text only, its dates only, or both.
                let old = paras[at].clone();
                paras[at] = match aspect {
                    0 => Para { link: first.link.or(Some(old.id)).filter(|l| Some(*l) != old.link), ..old },
                    1 => Para { whens: first.whens.clone(), ..old },
                    _ => Para { id: old.id, ..first.clone() },
                };
            }
            paras.extend(extra.into_iter().skip(1).take(1));
            paras.into_iter().filter(|p| own.insert(p.id)).collect()
        } else {
            unique(replacement, &mut others)
        };
        let tree = |paras: &[Vec<Para>]| -> Vec<TopicFile> {
            paras.iter().enumerate().map(|(i, p)| TopicFile::new(format!("f{i}.md"), topic(p))).collect()
        };
        let resolver = ArchiveResolver::new(BTreeMap::new());
        let old = parse_tree(&tree(&before), &resolver);
        let new = parse_tree(&tree(&after), &resolver);
        // Every generated paragraph parses (the comparison is about views, not diagnostics).
        proptest::prop_assert!(old.diagnostics.is_empty(), "{:?}", old.diagnostics);
        proptest::prop_assert!(new.diagnostics.is_empty(), "{:?}", new.diagnostics);
        let path = format!("f{changed}.md");
        let of_file = |parse: &scriptorium_topics_format::TreeParse| -> Vec<scriptorium_topics_format::Unit> {
            parse.units.iter().filter(|u| u.topic_path == path).cloned().collect()
        };
        let (old_units, new_units) = (of_file(&old), of_file(&new));
        let order = BTreeMap::new();
        let mut views = rebuild(old.units.iter(), &order, limit);
        let changes = update(
            new.units.iter(),
            &order,
            limit,
            &affected(old_units.iter(), new_units.iter()),
        );
        for (file, text) in changes.timeline {
            match text {
                Some(text) => views.timeline.insert(file, text),
                None => views.timeline.remove(&file),
            };
        }
        views.recent_events = changes.recent_events;
        if let Some(relations) = changes.relations {
            views.relations = relations;
        }
        proptest::prop_assert_eq!(views, rebuild(new.units.iter(), &order, limit));
    }
}
