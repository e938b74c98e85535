//! Timeline, recent events, relations and creation order (reference §7.4, §7.5), as insta
//! snapshots on the frozen corpus workspace.

use std::collections::BTreeMap;

use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::{TopicFile, parse_tree};
use scriptorium_views::{FsSources, read_topics, rebuild};

use crate::common::{corpus_workspace, parse_workspace};

#[test]
fn corpus_workspace_views() {
    let parse = parse_workspace(&corpus_workspace());
    assert!(parse.is_valid(), "{:?}", parse.diagnostics);
    let views = rebuild(&parse.units, None, 50);
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
    insta::assert_debug_snapshot!("creation_order", views.creation_order);
}

#[test]
fn relations_match_the_reference_example() {
    let parse = parse_workspace(&corpus_workspace());
    let views = rebuild(&parse.units, None, 50);
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
    let views = rebuild(&parse.units, Some(&order), 2);
    let ids: Vec<&str> = views
        .recent_events
        .lines()
        .map(|line| line.split('"').nth(3).unwrap_or_default())
        .collect();
    assert_eq!(ids, ["18d91425", "4d5ed8b5"]);
    assert_eq!(rebuild(&parse.units, Some(&order), 0).recent_events, "");
}

#[test]
fn new_ids_get_max_plus_one_in_parse_order_and_moves_keep_numbers() {
    let root = corpus_workspace();
    let resolver = ArchiveResolver::new(FsSources::new(&root));
    let files = read_topics(&root).expect("corpus");
    let before = rebuild(&parse_tree(&files, &resolver).units, None, 50).creation_order;
    // Move the Dave paragraph into a new file that sorts first, and add a new paragraph.
    let mut moved: Vec<TopicFile> = Vec::new();
    for file in &files {
        if file.path == "people/dave.md" {
            moved.push(TopicFile::new(
                "aa/dave.md",
                file.text.replace(
                    "^4d5ed8b5\n",
                    "^4d5ed8b5\n\nDave also fixes tandems.[^e-763c42eaba] ^0fe0fe01\n",
                ),
            ));
        } else {
            moved.push(file.clone());
        }
    }
    let parse = parse_tree(&moved, &resolver);
    assert!(parse.is_valid(), "{:?}", parse.diagnostics);
    let after = rebuild(&parse.units, Some(&before), 50).creation_order;
    for (id, number) in &before {
        assert_eq!(after.get(id), Some(number), "{id} renumbered");
    }
    assert_eq!(after.get("0fe0fe01"), Some(&3));
}

#[test]
fn rebuild_is_deterministic() {
    let parse = parse_workspace(&corpus_workspace());
    assert_eq!(rebuild(&parse.units, None, 50), rebuild(&parse.units, None, 50));
}

#[test]
fn empty_tree_has_empty_views() {
    let views = rebuild(&[], None, 50);
    assert!(views.timeline.is_empty());
    assert_eq!(views.recent_events, "");
    assert_eq!(views.relations, "{\"backlinks\": {}, \"outbound\": {}}\n");
    assert!(views.creation_order.is_empty());
}

#[test]
fn non_ascii_text_stays_utf8_and_controls_are_escaped() {
    let text = "# 写入\n\n主人喜欢 \"plain\" language.[^e1] ^aaaa0009\n\n\
                [^e1]: Time: `2024`; Sources: [偏好](../sources/D1.md#d1-1)\n";
    let parse =
        parse_tree(&[TopicFile::new("zh.md", text)], &ArchiveResolver::new(BTreeMap::new()));
    assert!(parse.is_valid(), "{:?}", parse.diagnostics);
    let views = rebuild(&parse.units, None, 50);
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
