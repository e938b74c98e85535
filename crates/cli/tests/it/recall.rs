//! `scriptorium search`, `core`, `grep`, `get`, `browse` and `rebuild` on a workspace built
//! through real transactions.

use std::fs;
use std::path::Path;

use crate::support::scriptorium;

/// A home whose workspace holds the example topics, installed through `scriptorium edit`.
fn example_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("temp dir");
    assert_eq!(scriptorium(home.path(), &["init"]).status.code(), Some(0));
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/workspace");
    let archive = "sources/openprogram/_v2/garden-2024.md";
    let target = home.path().join("memory").join(archive);
    fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
    fs::copy(example.join(archive), &target).expect("copy archive");
    for topic in ["core.md", "projects/garden-planner.md"] {
        let from = example.join("topics").join(topic);
        let out = scriptorium(
            home.path(),
            &["edit", &format!("topics/{topic}"), "--from", from.to_str().expect("utf-8")],
        );
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    home
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json output")
}

#[test]
fn search_recalls_blocks_and_sources_with_resolving_anchors() {
    let home = example_home();
    let hits = json(&scriptorium(home.path(), &["search", "two users share the plot", "--json"]));
    let hits = hits["hits"].as_array().expect("a list");
    assert!(!hits.is_empty());
    let block = hits.iter().find(|h| h["kind"] == "block").expect("a topic block");
    let path = block["path"].as_str().expect("path");
    let anchor = block["anchor"].as_str().expect("anchor");
    let text = fs::read_to_string(home.path().join("memory").join(path)).expect("read");
    assert!(text.contains(&format!(" {}", anchor.trim_start_matches('#'))), "{anchor} resolves");
    let topics_only =
        json(&scriptorium(home.path(), &["search", "two users", "--topics-only", "--json"]));
    assert!(topics_only["hits"].as_array().expect("list").iter().all(|h| h["kind"] == "block"));
}

#[test]
fn unrelated_queries_recall_nothing_and_bad_filters_are_refused() {
    let home = example_home();
    let none = json(&scriptorium(home.path(), &["search", "quantum chromodynamics", "--json"]));
    assert_eq!(none, serde_json::json!({ "ok": true, "hits": [] }));
    let out = scriptorium(
        home.path(),
        &["search", "garden", "--speaker", "owner/local", "--topics-only"],
    );
    // A filter that cannot apply is a usage error.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("INVALID_ARGUMENT"));
    let out = scriptorium(home.path(), &["search", "garden", "--from", "2025", "--to", "2024"]);
    assert_eq!(out.status.code(), Some(2));
    // Regression: a date that does not exist was refused with exit 1, like a found problem.
    let out = scriptorium(home.path(), &["search", "garden", "--from", "2025-13-01", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let error: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON error");
    assert_eq!(error["error"]["code"], "INVALID_ARGUMENT");
}

#[test]
fn search_project_scopes_to_the_project_and_the_shared_topics() {
    let home = crate::support::home_with_projects();
    let paths = |args: &[&str]| -> Vec<String> {
        let doc = json(&scriptorium(
            home.path(),
            &[&["search", "vegetable garden", "--json"], args].concat(),
        ));
        let mut paths: Vec<String> = doc["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|h| h["path"].as_str().expect("a path").to_owned())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    };
    let all = paths(&["--topics-only"]);
    assert!(all.contains(&"topics/projects/beta/garden.md".to_owned()), "{all:?}");
    let alpha = ["topics/garden.md", "topics/projects/alpha/garden.md"];
    assert_eq!(paths(&["--topics-only", "--project", "alpha"]), alpha);
    // A directory stands for its project: the repository it is in.
    let dir = tempfile::tempdir().expect("a temp dir");
    let repo = dir.path().join("alpha");
    std::fs::create_dir_all(repo.join(".git")).expect("a repository");
    std::fs::create_dir_all(repo.join("docs")).expect("a subdirectory");
    let docs = repo.join("docs");
    assert_eq!(paths(&["--topics-only", "--project", docs.to_str().expect("utf-8")]), alpha);
    // With sources: the project has no session, so only its topics and the shared ones.
    let with_sources = paths(&["--project", "alpha"]);
    assert!(!with_sources.iter().any(|p| p.contains("beta")), "{with_sources:?}");
    assert!(with_sources.iter().all(|p| p.starts_with("topics/")), "{with_sources:?}");
}

#[test]
fn the_fenced_recall_is_fenced_exactly_once() {
    let home = example_home();
    let out = scriptorium(home.path(), &["search", "garden app deadline", "--fenced"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("<memory-context>").count(), 1, "{text}");
    assert_eq!(text.matches("</memory-context>").count(), 1, "{text}");
    assert!(text.contains("[System note: The following is recalled memory context"));
}

#[test]
fn core_reports_the_render_within_the_budget() {
    let home = example_home();
    let core = json(&scriptorium(home.path(), &["core", "--json"]));
    assert_eq!(core["budget_tokens"], 2000);
    let tokens = core["rendered_tokens"].as_u64().expect("tokens");
    assert!(tokens > 0 && tokens <= 2000);
    assert!(core["canonical"].as_str().expect("master").contains("plain language"));
    assert!(core["rendered"].as_str().expect("render").contains("(sources/openprogram/_v2/"));
    assert_eq!(core["injected"].as_str().expect("injected").matches("<memory-context>").count(), 1);
    let tight = json(&scriptorium(home.path(), &["core", "--budget", "5", "--json"]));
    assert_eq!(tight["rendered_block_ids"], serde_json::json!([]));
    assert_eq!(tight["excluded_block_ids"].as_array().expect("list").len(), 1);
}

#[test]
fn grep_get_and_browse_read_the_files() {
    let home = example_home();
    let out = scriptorium(home.path(), &["grep", "NEIGHBOUR", "--prefix", "topics"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("topics/projects/garden-planner.md:"), "{text}");
    let out = scriptorium(
        home.path(),
        &["get", "topics/projects/garden-planner.md", "--heading", "requirements"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("## Requirements\n") && !text.contains("## Status"), "{text}");
    let out = scriptorium(home.path(), &["get", "../outside.md"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("PATH_OUTSIDE_WORKSPACE"));
    let listing = json(&scriptorium(home.path(), &["browse", "--json"]));
    let entries = listing["entries"].as_array().expect("entries");
    assert!(entries.iter().any(|e| e["path"] == "core.md" && e["derived"] == true));
    assert!(entries.iter().any(|e| e["path"] == "topics/core.md" && e["derived"] == false));
    assert!(entries.iter().all(|e| !e["path"].as_str().unwrap_or_default().starts_with('.')));
}

#[test]
fn rebuild_restores_deleted_views_and_index() {
    let home = example_home();
    let memory = home.path().join("memory");
    let before = fs::read(memory.join("recent_events.jsonl")).expect("views exist");
    fs::remove_file(memory.join("recent_events.jsonl")).expect("delete");
    fs::remove_dir_all(memory.join("timeline")).expect("delete");
    fs::remove_dir_all(memory.join(".scriptorium/index")).ok();
    let report = json(&scriptorium(home.path(), &["rebuild", "--json"]));
    assert_eq!(report["blocks"], 3);
    assert!(report["indexed_documents"].as_u64().expect("docs") >= 3);
    assert_eq!(fs::read(memory.join("recent_events.jsonl")).expect("rebuilt"), before);
    assert!(memory.join("timeline/2024/04/09.md").is_file());
    let hits = json(&scriptorium(home.path(), &["search", "two users", "--json"]));
    assert!(!hits["hits"].as_array().expect("list").is_empty());
}

#[test]
fn rebuild_numbers_recent_events_by_the_engines_creation_order() {
    let home = example_home();
    let memory = home.path().join("memory");
    let runtime = memory.join(".scriptorium/runtime.json");
    let mut state: serde_json::Value =
        serde_json::from_slice(&fs::read(&runtime).expect("runtime")).expect("json");
    let order = state["creation_order"].as_object_mut().expect("order");
    let count = order.len() as u64;
    // Reverse the numbers: the views must follow the file, not the parse order.
    for value in order.values_mut() {
        *value = (count - 1 - value.as_u64().expect("number")).into();
    }
    let reversed = state["creation_order"].clone();
    fs::write(&runtime, serde_json::to_vec_pretty(&state).expect("json")).expect("write");
    json(&scriptorium(home.path(), &["rebuild", "--json"]));
    let recent = fs::read_to_string(memory.join("recent_events.jsonl")).expect("recent");
    let mut last = None;
    for line in recent.lines() {
        let event: serde_json::Value = serde_json::from_str(line).expect("event");
        let id = event["memory_id"].as_str().expect("id");
        assert_eq!(event["created_order"], reversed[id], "{line}");
        let number = event["created_order"].as_u64();
        assert!(last < number, "recent events are listed by creation number: {recent}");
        last = number;
    }
    assert_eq!(recent.lines().count() as u64, count);
}

#[test]
fn rebuild_promotes_a_legacy_root_core_through_a_transaction() {
    let home = tempfile::tempdir().expect("temp dir");
    assert_eq!(scriptorium(home.path(), &["init"]).status.code(), Some(0));
    let memory = home.path().join("memory");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/workspace");
    let archive = "sources/openprogram/_v2/garden-2024.md";
    fs::create_dir_all(memory.join("sources/openprogram/_v2")).expect("mkdir");
    fs::copy(example.join(archive), memory.join(archive)).expect("copy");
    // A legacy workspace: the core lives at the root, its links relative to the root.
    let master = fs::read_to_string(example.join("topics/core.md")).expect("read");
    fs::write(memory.join("core.md"), master.replace("../sources/", "sources/")).expect("write");
    let report = json(&scriptorium(home.path(), &["rebuild", "--json"]));
    assert_eq!(report["promoted_legacy_core"], true);
    let promoted = fs::read_to_string(memory.join("topics/core.md")).expect("promoted");
    assert!(promoted.contains("(../sources/openprogram/_v2/garden-2024.md#"), "{promoted}");
    let log = json(&scriptorium(home.path(), &["log", "--json"]));
    assert_eq!(log["commits"][0]["summary"], "memory: promote legacy core.md to topics/core.md");
    let core = json(&scriptorium(home.path(), &["core", "--json"]));
    assert!(core["rendered"].as_str().expect("render").contains("plain language"));
}

/// One hit per fact, named for a person: the block stands for the record it cites (listed in
/// `collapsed`, not returned again), every hit says where it comes from (`origin`: a block's
/// heading path, a record's session, speaker and date), and the text output says so too.
#[test]
fn a_block_stands_for_its_evidence_and_every_hit_names_its_origin() {
    let home = example_home();
    let doc = json(&scriptorium(home.path(), &["search", "two users share the plot", "--json"]));
    let hits = doc["hits"].as_array().expect("a list");
    let block = &hits[0];
    assert_eq!(block["kind"], "block", "{doc}");
    assert_eq!(
        block["origin"], "topics/projects/garden-planner.md › Garden planner › Requirements",
        "{doc}"
    );
    let cited = block["collapsed"].as_array().expect("collapsed");
    assert_eq!(cited.len(), 1, "{doc}");
    assert!(block["refs"].as_array().expect("refs").contains(&cited[0]), "{doc}");
    assert!(hits.iter().all(|h| h["id"] != cited[0]), "the record is not repeated: {doc}");

    let records = json(&scriptorium(
        home.path(),
        &["search", "two users share the plot", "--prefix", "sources", "--json"],
    ));
    let record = &records["hits"][0];
    assert_eq!(record["id"], cited[0], "{records}");
    // No session of this home holds the archive (it was copied in): named by the archive.
    assert_eq!(record["origin"], "openprogram session garden-2024 · Owner · 2024-04-09");

    let out = scriptorium(home.path(), &["search", "two users share the plot"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("topics/projects/garden-planner.md › Garden planner › Requirements  ("),
        "{text}"
    );
    assert!(text.contains("    + 1 cited record (its evidence)\n"), "{text}");
}

/// Notes a person keeps (topic, text), and questions asked as people ask them (other words,
/// other forms) with the note each must find in its top 5; and questions about nothing in
/// memory, which must find nothing. The relevance floor must do both on a small memory, where
/// every word is "common".
const NOTES: &[(&str, &str)] = &[
    ("people/dana", "Dana's sister Marta lives in Lisbon and visits every August."),
    ("people/dana", "Dana is allergic to peanuts and carries an epinephrine pen."),
    ("people/luis", "Luis, the neighbour, grows chili peppers and shares the garden plot."),
    ("projects/garden-planner", "The garden planner app stores its data in a single SQLite file."),
    ("projects/garden-planner", "The first release of the garden planner is due on 10 May 2024."),
    (
        "projects/garden-planner",
        "Dana decided to write the planner's user interface in plain HTML, without a framework.",
    ),
    ("preferences", "Dana prefers metric units in every answer."),
    ("preferences", "Dana wants short answers without jargon."),
    ("work/infra", "The production database is backed up every night at 02:00 to an S3 bucket."),
    ("work/infra", "Deployments go through GitHub Actions and need a review from Priya."),
    ("work/team", "Priya leads the backend team and reviews every database migration."),
    ("travel", "Dana booked a train to Porto for the conference in October."),
    ("health", "Dana runs five kilometres every Tuesday and Thursday morning."),
    ("home", "The boiler was serviced in January; the next service is due next winter."),
    ("books", "Dana is reading a biography of Ada Lovelace."),
    ("cooking", "Dana bakes sourdough bread on Sundays."),
    ("pets", "Dana's cat is called Miso and needs a thyroid pill every morning."),
    ("car", "Dana's car needs new winter tyres before November."),
    ("finance", "Dana pays the mortgage on the first day of each month."),
    ("learning", "Dana is learning Portuguese with a tutor on Wednesday evenings."),
];

#[test]
fn realistic_questions_find_their_note_and_unrelated_ones_nothing() {
    let home = tempfile::tempdir().expect("temp dir");
    assert_eq!(scriptorium(home.path(), &["init"]).status.code(), Some(0));
    for (topic, text) in NOTES {
        let out =
            scriptorium(home.path(), &["note", text, "--topic", topic, "--time", "2024-04-02"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let asked = [
        ("Where does Dana's sister live?", 0),
        ("Is Dana allergic to anything?", 1),
        ("what does luis grow", 2),
        ("which database does the garden planner use", 3),
        ("when is the garden planner release due", 4),
        ("which framework does the planner UI use", 5),
        ("units preference", 6),
        ("when are the nightly database backups", 8),
        ("who reviews deployments", 9),
        ("who leads the backend team", 10),
        ("train to Porto", 11),
        ("when does Dana go running", 12),
        ("when is the boiler service due", 13),
        ("what book is Dana reading", 14),
        ("what pill does Miso need", 16),
        ("winter tyres for the car", 17),
        ("when is the mortgage paid", 18),
        ("Portuguese lessons", 19),
    ];
    let mut missed = Vec::new();
    for (question, note) in asked {
        let doc = json(&scriptorium(home.path(), &["search", question, "--top-k", "5", "--json"]));
        let found = doc["hits"].as_array().expect("hits").iter().any(|h| {
            h["kind"] == "block" && h["content"].as_str().is_some_and(|c| c.contains(NOTES[note].1))
        });
        if !found {
            missed.push(format!("{question:?} → {:?}: {doc}", NOTES[note].1));
        }
    }
    assert!(missed.is_empty(), "questions that missed their note:\n{}", missed.join("\n"));
    for question in [
        "How do I configure a Kubernetes ingress?",
        "What is the capital of Mongolia?",
        "Recommend a good science fiction movie",
        "What is the boiling point of nitrogen?",
        "How do I rebase a git branch onto upstream?",
        "Explain quantum entanglement simply",
        "What is the exchange rate of the yen?",
        "Write a haiku about autumn leaves",
    ] {
        let doc = json(&scriptorium(home.path(), &["search", question, "--json"]));
        assert_eq!(doc["hits"], serde_json::json!([]), "{question}: {doc}");
    }
}
