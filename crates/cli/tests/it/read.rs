//! `scriptorium get` as a person follows a citation: the record behind a link, the turns around
//! it, and a long file read page by page.

use crate::support::{home_with_note, scriptorium};

/// The citation link `scriptorium edit` wrote into the note's evidence definition.
fn citation(home: &std::path::Path) -> String {
    let topic = std::fs::read_to_string(home.join("memory/topics/garden.md")).expect("the topic");
    let start = topic.find("](").expect("a link") + 2;
    let end = start + topic[start..].find(')').expect("its end");
    topic[start..end].to_owned()
}

#[test]
fn get_follows_a_citation_to_the_record_and_its_neighbours() {
    let home = home_with_note();
    let link = citation(home.path());
    assert!(link.starts_with("../sources/openprogram/_v2/garden-2024.md#source-"), "{link}");

    let out = scriptorium(home.path(), &["get", &link]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains("vegetable garden"), "{text}");
    assert!(
        text.contains(
            "— turn 3 of 5 in sources/openprogram/_v2/garden-2024.md (openprogram/garden-2024/u2)"
        ),
        "{text}"
    );
    assert!(text.contains("  before: sources/openprogram/_v2/garden-2024.md#source-"), "{text}");
    assert!(text.contains("  cited by: topics/garden.md ^"), "the block citing it: {text}");

    let (archive, anchor) = link.trim_start_matches("../").split_once('#').expect("an anchor");
    let out = scriptorium(home.path(), &["get", archive, "--block", anchor, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["record"]["source_id"], "openprogram/garden-2024/u2", "{json}");
    assert_eq!(json["record"]["position"], 3, "{json}");
    assert_eq!(json["record"]["cited_by"][0]["path"], "topics/garden.md", "{json}");
    assert!(
        json["record"]["cited_by"][0]["snippet"]
            .as_str()
            .is_some_and(|s| s.contains("vegetable garden"))
    );
    assert!(
        json["record"]["previous"]["anchor"].as_str().is_some_and(|a| a.starts_with("source-"))
    );

    let out = scriptorium(home.path(), &["get", archive, "--block", "source-0000", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let refusal: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(refusal["error"]["code"], "MEMORY_NOT_FOUND", "{refusal}");
}

#[test]
fn get_reads_a_long_file_page_by_page() {
    let home = home_with_note();
    let out = scriptorium(home.path(), &["get", "topics/garden.md", "--limit", "2"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "# Garden\n\n");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(said.contains("(cut: lines 1–2 of ") && said.contains("--offset 2"), "{said}");
    let out = scriptorium(home.path(), &["get", "topics/garden.md", "--offset", "2", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(json["text"].as_str().is_some_and(|t| t.starts_with("Dana is planning")), "{json}");
    assert_eq!((json["offset"].as_u64(), json["truncated"].as_bool()), (Some(2), Some(false)));
}
