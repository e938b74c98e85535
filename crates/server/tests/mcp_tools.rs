//! The MCP tools driven in-process: the error shape of a refusal, path confinement, argument
//! checks, fencing the recall exactly once, and forgetting (a plan changes nothing; a confirmed
//! forget leaves the text nowhere the tools can find it).

mod support;

use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject};
use scriptorium_server::mcp::{
    MemoryTools, NO_MEMORY_MATCHED, TOOLS_TOKEN_BUDGET, tool_definitions,
};
use serde_json::{Value, json};

/// The arguments object of a tool call.
fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("tool arguments must be an object, not {other}"),
    }
}

/// Whether the result is an error, and its one text content.
fn reply(result: &CallToolResult) -> (bool, String) {
    assert_eq!(result.content.len(), 1, "one content block: {result:?}");
    let text = result.content[0].as_text().expect("text content").text.clone();
    (result.is_error == Some(true), text)
}

/// The `error` object of a refused call (which must be flagged as an error).
fn refusal(result: &CallToolResult) -> Value {
    let (is_error, text) = reply(result);
    assert!(is_error, "expected a refusal, got {text}");
    let value: Value = serde_json::from_str(&text).expect("a refusal is JSON");
    assert_eq!(value["ok"], false, "{value}");
    let error = value["error"].clone();
    assert!(error["code"].is_string() && error["message"].is_string(), "{error}");
    assert!(error.get("path").is_some(), "path is always present: {error}");
    error
}

/// A JSON answer of a successful call.
fn answer(result: &CallToolResult) -> Value {
    let (is_error, text) = reply(result);
    assert!(!is_error, "expected success, got {text}");
    serde_json::from_str(&text).expect("a JSON answer")
}

fn fixture() -> (tempfile::TempDir, MemoryTools) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = support::memory_with_topic(dir.path());
    (dir, MemoryTools::new(root))
}

async fn revision(tools: &MemoryTools) -> String {
    let status = answer(&tools.memory_status(JsonObject::new()).await);
    status["revision"].as_str().expect("a revision").to_owned()
}

/// A whole-file write of a new topic citing a source declared with it.
fn write_topic(base: &str, path: &str, sentence: &str) -> JsonObject {
    let content = format!(
        "# Note\n\n{sentence}[^e1]\n\n[^e1]: Time: `2024-05`; Sources: [note](new-source-note)\n"
    );
    args(json!({
        "base_revision": base,
        "changes": [{ "path": path, "action": "write", "content": content }],
        "sources": [{ "label": "new-source-note", "role": "user", "content": sentence }],
    }))
}

#[tokio::test]
async fn an_update_installs_and_a_stale_base_revision_is_a_concurrent_update() {
    let (_dir, tools) = fixture();
    let base = revision(&tools).await;
    let done = answer(
        &tools.memory_update(write_topic(&base, "topics/bees.md", "Dana keeps two hives.")).await,
    );
    assert_eq!(done["ok"], true);
    assert_ne!(done["revision"], base.as_str());
    assert_eq!(done["memory_committed"], true);
    assert_eq!(done["git_committed"], true, "{done}");
    assert!(done["git_commit"].is_string());
    assert!(done["changed_files"].as_array().expect("list").iter().any(|f| f == "topics/bees.md"));
    assert_eq!(done["block_ids"].as_object().expect("map").len(), 1);
    assert!(done["source_ids"]["new-source-note"].is_string(), "{done}");
    assert_eq!(revision(&tools).await, done["revision"].as_str().expect("revision"));

    let stale =
        tools.memory_update(write_topic(&base, "topics/wasps.md", "Dana fears wasps.")).await;
    let error = refusal(&stale);
    assert_eq!(error["code"], "CONCURRENT_UPDATE", "{error}");
    assert_eq!(revision(&tools).await, done["revision"].as_str().expect("revision"));
    assert!(!tools.memory_root().join("topics/wasps.md").exists());
}

#[tokio::test]
async fn malformed_updates_are_invalid_arguments_and_change_nothing() {
    let (_dir, tools) = fixture();
    let base = revision(&tools).await;
    let both = json!({
        "base_revision": base,
        "changes": [{ "path": "topics/x.md", "action": "delete" }],
        "patch": "--- a/topics/garden.md\n+++ b/topics/garden.md\n",
    });
    let error = refusal(&tools.memory_update(args(both)).await);
    assert_eq!(error["code"], "INVALID_ARGUMENT");
    assert!(error["message"].as_str().expect("message").contains("exactly one"), "{error}");
    let none = json!({ "base_revision": base });
    assert_eq!(refusal(&tools.memory_update(args(none)).await)["code"], "INVALID_ARGUMENT");
    let no_base = json!({ "changes": [] });
    assert_eq!(refusal(&tools.memory_update(args(no_base)).await)["code"], "INVALID_ARGUMENT");
    let unknown = json!({ "base_revision": base, "patch": "x", "git_commit": true });
    assert_eq!(refusal(&tools.memory_update(args(unknown)).await)["code"], "INVALID_ARGUMENT");
    let outside = json!({
        "base_revision": base,
        "changes": [{ "path": "../escape.md", "action": "write", "content": "# x\n" }],
    });
    let error = refusal(&tools.memory_update(args(outside)).await);
    assert_eq!(error["code"], "PATH_OUTSIDE_WORKSPACE", "{error}");
    assert_eq!(revision(&tools).await, base);
}

#[tokio::test]
async fn reads_are_confined_to_the_workspace() {
    let (_dir, tools) = fixture();
    let error = refusal(&tools.memory_get(args(json!({ "path": "../x" }))).await);
    assert_eq!(error["code"], "PATH_OUTSIDE_WORKSPACE");
    assert_eq!(error["path"], "../x");
    let error = refusal(&tools.memory_get(args(json!({ "path": ".scriptorium/revision" }))).await);
    assert_eq!(error["code"], "PATH_OUTSIDE_WORKSPACE");
    let error = refusal(&tools.memory_browse(args(json!({ "prefix": "../.." }))).await);
    assert_eq!(error["code"], "PATH_OUTSIDE_WORKSPACE");
    let error = refusal(&tools.memory_grep(args(json!({ "query": "x", "prefix": "/etc" }))).await);
    assert_eq!(error["code"], "PATH_OUTSIDE_WORKSPACE");
    let error = refusal(&tools.memory_get(args(json!({ "path": "topics/none.md" }))).await);
    assert_eq!(error["code"], "NOT_FOUND");
}

#[tokio::test]
async fn get_grep_and_browse_read_the_topic() {
    let (_dir, tools) = fixture();
    let (is_error, text) =
        reply(&tools.memory_get(args(json!({ "path": support::TOPIC_PATH }))).await);
    assert!(!is_error && text.starts_with("# Garden\n"), "{text}");
    let (_, grep) = reply(&tools.memory_grep(args(json!({ "query": "VEGETABLE" }))).await);
    assert!(grep.lines().any(|l| l.starts_with("topics/garden.md:3: Dana is planning")), "{grep}");
    let (_, exact) = reply(
        &tools.memory_grep(args(json!({ "query": "VEGETABLE", "case_sensitive": true }))).await,
    );
    assert_eq!(exact, "No matches.");
    let (_, files) = reply(&tools.memory_browse(args(json!({}))).await);
    assert!(files.lines().any(|l| l.starts_with("topics/garden.md (")), "{files}");
    let status = answer(&tools.memory_status(JsonObject::new()).await);
    assert_eq!(status["topic_files"], 1);
    assert_eq!(status["blocks"], 1);
    assert!(status["source_records"].as_u64().expect("count") >= 1, "{status}");
    assert!(status["last_transaction"].is_string());
    assert_eq!(status["git"]["in_sync"], true, "{status}");
}

#[tokio::test]
async fn search_fences_the_recall_once() {
    let (_dir, tools) = fixture();
    let found = tools.memory_search(args(json!({ "query": "vegetable garden", "top_k": 3 }))).await;
    let (is_error, text) = reply(&found);
    assert!(!is_error, "{text}");
    assert_eq!(text.matches("<memory-context>").count(), 1, "{text}");
    assert_eq!(text.matches("</memory-context>").count(), 1, "{text}");
    assert!(text.starts_with("<memory-context>\n") && text.ends_with("</memory-context>"));
    assert!(text.contains("--- topics/garden.md › Garden\n"), "{text}");
    assert!(text.contains("link: topics/garden.md#^"), "{text}");
    assert!(text.contains("evidence: "), "the record the block cites: {text}");
    assert!(text.contains("Dana is planning a vegetable garden."), "{text}");
    let only_sources = json!({ "query": "vegetable garden", "path_prefix": "sources" });
    let (_, sources) = reply(&tools.memory_search(args(only_sources)).await);
    assert!(!sources.contains("topics/garden.md"), "{sources}");
    let (is_error, none) =
        reply(&tools.memory_search(args(json!({ "query": "quantum chromodynamics" }))).await);
    assert!(!is_error);
    assert_eq!(none, NO_MEMORY_MATCHED);
}

#[tokio::test]
async fn search_takes_in_an_outside_edit_and_notes_it_outside_the_fence() {
    let (dir, tools) = fixture();
    let path = dir.path().join("memory").join(support::TOPIC_PATH);
    let text = std::fs::read_to_string(&path).expect("the topic");
    std::fs::write(&path, text.replace("vegetable garden", "vegetable garden with raised beds"))
        .expect("an outside edit");
    let (is_error, text) =
        reply(&tools.memory_search(args(json!({ "query": "raised beds" }))).await);
    assert!(!is_error, "{text}");
    let (recall, note) = text.split_once("</memory-context>").expect("a fenced recall");
    assert!(recall.contains("vegetable garden with raised beds"), "{text}");
    assert!(
        note.trim().starts_with("note: took in edits made outside a transaction: topics/garden.md"),
        "{text}"
    );
    // Taken in once: the next search has nothing to add.
    let (_, again) = reply(&tools.memory_search(args(json!({ "query": "raised beds" }))).await);
    assert!(again.ends_with("</memory-context>"), "{again}");
}

#[tokio::test]
async fn bad_argument_shapes_are_tool_errors_not_protocol_errors() {
    let (_dir, tools) = fixture();
    let error = refusal(&tools.memory_search(args(json!({ "query": "x", "top_k": "many" }))).await);
    assert_eq!(error["code"], "INVALID_ARGUMENT");
    assert_eq!(refusal(&tools.memory_search(args(json!({}))).await)["code"], "INVALID_ARGUMENT");
    let error = refusal(&tools.memory_get(args(json!({ "path": "x", "extra": 1 }))).await);
    assert_eq!(error["code"], "INVALID_ARGUMENT");
    // Out of the declared ranges: refused, never clamped into something else.
    for (top_k, message) in [(0, "top_k must be 1 to 10"), (11, "top_k must be 1 to 10")] {
        let error =
            refusal(&tools.memory_search(args(json!({ "query": "x", "top_k": top_k }))).await);
        assert_eq!(
            (error["code"].as_str(), error["message"].as_str()),
            (Some("INVALID_ARGUMENT"), Some(message))
        );
    }
    for limit in [0, 401] {
        let error =
            refusal(&tools.memory_get(args(json!({ "path": "core.md", "limit": limit }))).await);
        assert_eq!(error["message"], "limit must be 1 to 400", "{error}");
    }
    let error = refusal(&tools.memory_get(args(json!({ "path": " " }))).await);
    assert_eq!(error["message"], "path must not be empty", "{error}");
}

#[tokio::test]
async fn without_a_workspace_every_tool_is_no_workspace() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("memory");
    let tools = MemoryTools::new(&root);
    let results = [
        tools.memory_status(JsonObject::new()).await,
        tools.memory_search(args(json!({ "query": "garden" }))).await,
        tools.memory_grep(args(json!({ "query": "garden" }))).await,
        tools.memory_get(args(json!({ "path": "topics/garden.md" }))).await,
        tools.memory_browse(args(json!({}))).await,
        tools.memory_update(args(json!({ "base_revision": "r", "patch": "x" }))).await,
        tools.memory_forget(args(json!({ "session": "s" }))).await,
    ];
    // (Not MEMORY_NOT_FOUND, which names a record a change refers to.)
    for result in &results {
        let error = refusal(result);
        assert_eq!(error["code"], "NO_WORKSPACE");
        assert_eq!(error["violations"], json!([]), "the one error shape: {error}");
    }
    assert!(!root.exists(), "no workspace is created");
}

/// Regression: an update whose text normalization would drop answered `ok: true` with
/// `changed_files: []`.
#[tokio::test]
async fn an_uncited_update_is_refused_and_a_change_of_nothing_is_a_noop() {
    let (_dir, tools) = fixture();
    let base = revision(&tools).await;
    let uncited = args(json!({
        "base_revision": base,
        "changes": [{ "path": "topics/core.md", "action": "write",
                      "content": "# Core\n\nThe owner wants only e2e tests.\n" }],
    }));
    let error = refusal(&tools.memory_update(uncited).await);
    assert_eq!(error["code"], "UNCITED_PARAGRAPH", "{error}");
    assert_eq!(error["violations"][0]["path"], "topics/core.md", "{error}");
    assert_eq!(revision(&tools).await, base);
    let done = answer(
        &tools.memory_update(write_topic(&base, "topics/bees.md", "Dana keeps bees.")).await,
    );
    let revision_now = done["revision"].as_str().expect("revision").to_owned();
    let installed =
        std::fs::read_to_string(tools.memory_root().join("topics/bees.md")).expect("installed");
    let same = args(json!({
        "base_revision": revision_now,
        "changes": [{ "path": "topics/bees.md", "action": "write", "content": installed }],
    }));
    let noop = answer(&tools.memory_update(same).await);
    assert_eq!(noop["noop"], true, "{noop}");
    assert_eq!(noop["changed_files"], json!([]));
    assert_eq!(noop["git_committed"], false);
    assert_eq!(noop["revision"], revision_now.as_str());
}

#[tokio::test]
async fn a_note_is_archived_and_cited_in_one_step_and_a_bad_one_changes_nothing() {
    let (_dir, tools) = fixture();
    let base = revision(&tools).await;
    let done = answer(&tools.memory_note(args(json!({ "text": "Dana keeps two hives." }))).await);
    assert_eq!(done["ok"], true, "{done}");
    let changed = done["changed_files"].to_string();
    assert!(changed.contains("\"topics/notes.md\"") && changed.contains("sources/"), "{done}");
    let hits = tools.memory_search(args(json!({ "query": "Dana hives" }))).await;
    assert!(reply(&hits).1.contains("Dana keeps two hives."), "{hits:?}");
    let pinned = answer(
        &tools.memory_note(args(json!({ "text": "Use metric units.", "core": true }))).await,
    );
    assert!(pinned["changed_files"].to_string().contains("\"topics/core.md\""), "{pinned}");
    let after = revision(&tools).await;
    assert_ne!(after, base);
    // The same note again changes nothing and says so.
    let again = answer(&tools.memory_note(args(json!({ "text": "Dana keeps two hives." }))).await);
    assert_eq!((again["noop"].clone(), again["already_noted"].clone()), (json!(true), json!(true)));
    assert_eq!(revision(&tools).await, after);
    // A project-scoped search sees the project's notes and the shared ones, not another's.
    for (topic, text) in [
        ("projects/alpha/bees", "Alpha's hives face south."),
        ("projects/beta/bees", "Beta's hives face north."),
    ] {
        answer(&tools.memory_note(args(json!({ "text": text, "topic": topic }))).await);
    }
    let scoped =
        reply(&tools.memory_search(args(json!({ "query": "hives", "project": "alpha" }))).await).1;
    assert!(
        scoped.contains("Alpha's hives") && scoped.contains("Dana keeps two hives."),
        "{scoped}"
    );
    assert!(!scoped.contains("Beta's hives"), "{scoped}");
    let after = revision(&tools).await;
    for bad in [
        json!({ "text": "x", "time": "2024-13" }),
        json!({ "text": " " }),
        json!({ "text": "x", "core": true, "topic": "people/dana" }),
        json!({ "text": "x", "colour": "red" }),
    ] {
        let error = refusal(&tools.memory_note(args(bad.clone())).await);
        assert_eq!(error["code"], "INVALID_ARGUMENT", "{bad}: {error}");
    }
    assert_eq!(revision(&tools).await, after, "a refused note changes nothing");
}

/// The citation link of the fixture's topic, as written in its evidence definition.
fn citation_link(root: &std::path::Path) -> String {
    let topic = std::fs::read_to_string(root.join(support::TOPIC_PATH)).expect("the topic");
    let start = topic.find("](").expect("a link") + 2;
    let end = start + topic[start..].find(')').expect("its end");
    topic[start..end].to_owned()
}

#[tokio::test]
async fn a_citation_opens_the_record_it_cites() {
    let (dir, tools) = fixture();
    let link = citation_link(&dir.path().join("memory"));
    assert!(link.contains("#source-"), "{link}");
    let (is_error, text) = reply(&tools.memory_get(args(json!({ "path": link }))).await);
    assert!(!is_error, "{text}");
    assert!(text.contains("I'm planning a vegetable garden."), "{text}");
    assert!(text.contains("turn 1 of 1 of the conversation in sources/"), "{text}");
    assert!(!text.contains("source-meta"), "no archive metadata: {text}");
    assert!(text.contains("\ncited by: topics/garden.md block "), "{text}");
    // The same by archive and block, as a search hit names them.
    let (archive, anchor) = link.trim_start_matches("../").split_once('#').expect("an anchor");
    let (_, same) =
        reply(&tools.memory_get(args(json!({ "path": archive, "block_id": anchor }))).await);
    assert_eq!(same, text);
    let error = refusal(
        &tools.memory_get(args(json!({ "path": archive, "block_id": "source-0000" }))).await,
    );
    assert_eq!(error["code"], "MEMORY_NOT_FOUND", "{error}");
}

#[tokio::test]
async fn a_long_read_says_where_it_was_cut_and_how_to_read_on() {
    let (_dir, tools) = fixture();
    let page = |offset: u64| {
        let tools = &tools;
        async move {
            reply(
                &tools
                    .memory_get(args(
                        json!({ "path": support::TOPIC_PATH, "offset": offset, "limit": 2 }),
                    ))
                    .await,
            )
            .1
        }
    };
    let first = page(0).await;
    assert!(first.starts_with("# Garden\n\n"), "{first}");
    assert!(first.contains("(cut: lines 1–2 of "), "{first}");
    assert!(first.contains("call memory_get again with offset 2"), "{first}");
    let second = page(2).await;
    assert!(second.starts_with("Dana is planning a vegetable garden."), "{second}");
    let error = refusal(
        &tools.memory_get(args(json!({ "path": support::TOPIC_PATH, "offset": -1 }))).await,
    );
    assert_eq!(error["code"], "INVALID_ARGUMENT", "{error}");
}

/// Every tool declares an input and an output schema, and a successful call's structured content
/// is its JSON text (for the JSON tools) or carries what the text shows.
#[tokio::test]
async fn every_tool_declares_both_schemas_and_answers_structured_content() {
    let tools = tool_definitions();
    assert_eq!(tools.len(), 8, "{tools:?}");
    for tool in &tools {
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{}", tool.name);
        let output = tool.output_schema.as_ref().unwrap_or_else(|| panic!("{}", tool.name));
        assert_eq!(output.get("type"), Some(&json!("object")), "{}", tool.name);
        assert_eq!(output["properties"]["ok"], json!({"type": "boolean", "const": true}));
        assert!(!serde_json::to_string(&**output).expect("json").contains("$ref"), "{}", tool.name);
    }
    let (_dir, tools) = fixture();
    let status = tools.memory_status(JsonObject::new()).await;
    let structured = status.structured_content.clone().expect("structured content");
    assert_eq!(structured, answer(&status), "the text is the structured content's JSON");
    let found = tools.memory_search(args(json!({ "query": "vegetable garden" }))).await;
    let structured = found.structured_content.clone().expect("structured content");
    assert_eq!(structured["recall"].as_str(), Some(reply(&found).1.as_str()));
    assert_eq!(structured["hits"][0]["kind"], "block", "{structured}");
    assert!(
        structured["hits"][0]["link"].as_str().is_some_and(|l| l.starts_with("topics/garden.md#^"))
    );
    // A refusal has no structured content: clients check only successes against the schema.
    let refused = tools.memory_get(args(json!({ "path": "../x" }))).await;
    assert_eq!(refused.structured_content, None);
}

/// The operations of `memory_update` are spelled out: no item schema is `true` or empty, and
/// each operation names its fields.
#[test]
fn the_update_schema_spells_out_every_operation() {
    let tools = tool_definitions();
    let update = tools.iter().find(|t| t.name == "memory_update").expect("memory_update");
    let schema = Value::Object((*update.input_schema).clone());
    let operations = &schema["properties"]["memory_changes"]["items"]["oneOf"];
    let names: Vec<&str> = operations
        .as_array()
        .expect("a oneOf")
        .iter()
        .map(|op| op["properties"]["op"]["const"].as_str().expect("an op name"))
        .collect();
    assert_eq!(names, ["create_record", "update_record", "delete_record", "move_records"]);
    let create = &operations[0];
    assert_eq!(create["additionalProperties"], false);
    let required: Vec<&str> =
        create["required"].as_array().expect("required").iter().filter_map(Value::as_str).collect();
    for field in ["op", "content", "time", "sources", "destination"] {
        assert!(required.contains(&field), "create_record requires {field}: {create}");
    }
    let position = &create["properties"]["destination"]["properties"]["position"];
    assert_eq!(position["enum"], json!(["start", "end", "before", "after"]), "{position}");
    let actions = &schema["properties"]["changes"]["items"]["oneOf"];
    assert_eq!(actions[0]["properties"]["action"]["const"], "write", "{actions}");
    assert_eq!(actions[1]["properties"]["action"]["const"], "delete", "{actions}");
    let role = &schema["properties"]["sources"]["items"]["properties"]["role"];
    assert_eq!(role["enum"], json!(["user", "assistant", "system", "tool"]), "{role}");
    let one_form: Vec<Value> = schema["oneOf"].as_array().expect("exactly one form").clone();
    assert_eq!(one_form.len(), 3, "{schema}");
    // No schema anywhere is `true`, `{}` or an item list without a type.
    fn no_open_schema(value: &Value, at: &str) {
        match value {
            Value::Bool(true) => panic!("a `true` schema at {at}"),
            Value::Object(object) => {
                assert!(!object.is_empty(), "an empty schema at {at}");
                if let Some(items) = object.get("items") {
                    assert!(
                        items.get("type").is_some() || items.get("oneOf").is_some(),
                        "an untyped item schema at {at}: {items}"
                    );
                }
                for (key, child) in object {
                    if key != "const" && key != "enum" {
                        no_open_schema(child, &format!("{at}/{key}"));
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    no_open_schema(item, &format!("{at}/{i}"));
                }
            }
            _ => {}
        }
    }
    for tool in &tools {
        no_open_schema(&Value::Object((*tool.input_schema).clone()), &tool.name);
        let output = tool.output_schema.as_ref().expect("an output schema");
        no_open_schema(&Value::Object((**output).clone()), &tool.name);
    }
}

/// The tool definitions are sent to the model on every turn: together they stay within the
/// stated budget (o200k tokens, counted as the core is).
#[test]
fn the_tool_definitions_fit_their_token_budget() {
    let listed = serde_json::to_string(&tool_definitions()).expect("json");
    let tokens = scriptorium_topics_format::tokens::count(&listed);
    eprintln!("tools/list: {tokens} tokens of {TOOLS_TOKEN_BUDGET}");
    assert!(tokens <= TOOLS_TOKEN_BUDGET, "{tokens} tokens > {TOOLS_TOKEN_BUDGET}: {listed}");
    // The budget is a real bound, not a ceiling nobody gets near.
    assert!(tokens * 2 > TOOLS_TOKEN_BUDGET, "{tokens} tokens: lower the budget");
}

/// [`fixture`] with the home's (empty) session store, as `scriptorium mcp` is given it.
fn fixture_with_store() -> (tempfile::TempDir, MemoryTools) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = support::memory_with_topic(dir.path());
    let store = scriptorium_session_dag::EmbeddedStore::open(dir.path().join("sessions"))
        .expect("a session store");
    (dir, MemoryTools::new(root).with_store(Arc::new(store)))
}

/// The block ID of the fixture's paragraph.
fn garden_block(root: &std::path::Path) -> String {
    let topic = std::fs::read_to_string(root.join(support::TOPIC_PATH)).expect("the topic");
    let line = topic.lines().find(|l| l.starts_with("Dana is planning")).expect("the paragraph");
    line.rsplit(" ^").next().expect("a block ID").to_owned()
}

/// What `memory_grep` finds of `query` (its text; "No matches." when nothing).
async fn grep(tools: &MemoryTools, query: &str) -> String {
    reply(&tools.memory_grep(args(json!({ "query": query }))).await).1
}

#[tokio::test]
async fn forgetting_a_record_plans_first_then_leaves_its_text_nowhere() {
    let (dir, tools) = fixture_with_store();
    let root = dir.path().join("memory");
    let link = citation_link(&root);
    let block = garden_block(&root);
    let base = revision(&tools).await;

    // Without confirm: the plan, and nothing changes.
    let planned = tools.memory_forget(args(json!({ "record": link }))).await;
    let plan = answer(&planned);
    assert_eq!(planned.structured_content.as_ref(), Some(&plan), "the text is the structured JSON");
    assert_eq!((plan["ok"].clone(), plan["forgotten"].clone()), (json!(true), json!(false)));
    assert_eq!(plan["plan"]["records"], 1, "{plan}");
    assert_eq!(plan["plan"]["blocks"], json!([block]), "the block citing only it goes: {plan}");
    let files = plan["plan"]["files"].to_string();
    assert!(files.contains("\"topics/garden.md\"") && files.contains("sources/"), "{plan}");
    assert!(plan["plan"]["commits"].as_u64().is_some_and(|n| n >= 1), "{plan}");
    assert!(plan.get("revision").is_none(), "a plan did nothing: {plan}");
    assert_eq!(revision(&tools).await, base);
    assert!(grep(&tools, "vegetable garden").await.contains("topics/garden.md:"));

    // With confirm: done, and the text is nowhere the tools look.
    let done =
        answer(&tools.memory_forget(args(json!({ "record": [link], "confirm": true }))).await);
    assert_eq!(done["forgotten"], true, "{done}");
    assert_eq!(done["plan"]["blocks"], json!([block]), "{done}");
    assert_eq!(done["remote"], "none", "no sync remote: {done}");
    assert!(done["commits_rewritten"].as_u64().is_some_and(|n| n >= 1), "{done}");
    assert!(done["commit"].is_string(), "{done}");
    assert_ne!(done["revision"], base.as_str());
    assert_eq!(revision(&tools).await, done["revision"].as_str().expect("a revision"));
    assert_eq!(grep(&tools, "vegetable garden").await, "No matches.");
    let (is_error, found) =
        reply(&tools.memory_search(args(json!({ "query": "vegetable garden" }))).await);
    assert!(!is_error && found == NO_MEMORY_MATCHED, "{found}");
    let archive = std::fs::read_to_string(
        root.join(link.trim_start_matches("../").split('#').next().expect("a path")),
    )
    .expect("the archive");
    assert!(archive.contains("[FORGOTTEN]") && !archive.contains("vegetable"), "{archive}");
}

#[tokio::test]
async fn forgetting_a_block_removes_it_from_its_topic_and_keeps_the_record() {
    let (dir, tools) = fixture_with_store();
    let root = dir.path().join("memory");
    let block = garden_block(&root);
    let base = revision(&tools).await;
    let plan = answer(&tools.memory_forget(args(json!({ "block": format!("^{block}") }))).await);
    assert_eq!(
        (plan["forgotten"].clone(), plan["plan"]["blocks"].clone()),
        (json!(false), json!([block]))
    );
    assert_eq!(plan["plan"]["records"], 0, "a block's records stay: {plan}");
    assert_eq!(revision(&tools).await, base, "a plan changes nothing");
    let done = answer(&tools.memory_forget(args(json!({ "block": block, "confirm": true }))).await);
    assert_eq!(done["forgotten"], true, "{done}");
    let topic = std::fs::read_to_string(root.join(support::TOPIC_PATH)).unwrap_or_default();
    assert!(!topic.contains("vegetable garden") && !topic.contains(&block), "{topic}");
    let only_topics = json!({ "query": "vegetable garden", "topics_only": true });
    let (_, found) = reply(&tools.memory_search(args(only_topics)).await);
    assert_eq!(found, NO_MEMORY_MATCHED);
    // The record it cited stays, and is still recalled.
    let (_, records) =
        reply(&tools.memory_search(args(json!({ "query": "vegetable garden" }))).await);
    assert!(records.contains("I'm planning a vegetable garden."), "{records}");
}

#[tokio::test]
async fn bad_forget_arguments_are_refused_with_codes_and_change_nothing() {
    let (_dir, tools) = fixture_with_store();
    let base = revision(&tools).await;
    for bad in [
        json!({}),
        json!({ "confirm": true }),
        json!({ "session": [] }),
        json!({ "session": " " }),
        json!({ "session": ["s", ""] }),
        json!({ "session": 7 }),
        json!({ "session": [7] }),
        json!({ "matching": "abc", "confirm": true }),
        json!({ "block": "x", "confirm": "yes" }),
        json!({ "block": "x", "everywhere": true }),
    ] {
        let error = refusal(&tools.memory_forget(args(bad.clone())).await);
        assert_eq!(error["code"], "INVALID_ARGUMENT", "{bad}: {error}");
    }
    for missing in [
        json!({ "session": "no-such-session", "confirm": true }),
        json!({ "block": "zzzzzzzz", "confirm": true }),
        json!({ "record": "source-0000000000000000", "confirm": true }),
    ] {
        let error = refusal(&tools.memory_forget(args(missing.clone())).await);
        assert_eq!(error["code"], "NOT_FOUND", "{missing}: {error}");
    }
    // Without the session store (a server not started as `scriptorium mcp`): refused, said why.
    let bare = MemoryTools::new(tools.memory_root());
    let error = refusal(&bare.memory_forget(args(json!({ "block": "x", "confirm": true }))).await);
    assert_eq!(error["code"], "UNSUPPORTED", "{error}");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("session store")), "{error}");
    assert_eq!(revision(&tools).await, base, "nothing refused changed anything");
    assert!(grep(&tools, "vegetable garden").await.contains("topics/garden.md:"));
}

/// The forget tool is marked destructive and says it cannot be undone; its input schema asks
/// for at least one selector.
#[test]
fn the_forget_tool_is_marked_destructive() {
    let tools = tool_definitions();
    let forget = tools.iter().find(|t| t.name == "memory_forget").expect("memory_forget");
    let hints = forget.annotations.as_ref().expect("annotations");
    assert_eq!((hints.destructive_hint, hints.read_only_hint), (Some(true), Some(false)));
    assert!(forget.description.as_deref().is_some_and(|d| d.contains("Cannot be undone")));
    let schema = Value::Object((*forget.input_schema).clone());
    assert_eq!(schema["anyOf"].as_array().map(Vec::len), Some(4), "{schema}");
    assert_eq!(schema["additionalProperties"], false);
}

/// A real Claude Code session (the test data), imported and written by the journal writer, then
/// forgotten through the tool: gone from the topics, the archive, the search and the store.
#[tokio::test]
async fn a_forgotten_session_is_gone_from_topics_search_and_the_session_store() {
    use scriptorium_backend::interface::MemoryBackend as _;
    use scriptorium_session_dag::SessionId;
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    const SESSION: &str = "3fb74381-1bf4-475e-8c6f-442d872b1bcf";
    const PHRASE: &str = "tell me more about agent module";
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    {
        let backend = scriptorium_backend::LocalBackend::open(
            &home,
            scriptorium_backend::Config::default(),
            Arc::new(scriptorium_writer::model::journal::Journal),
        )
        .expect("the backend opens");
        let transcript = data.join("codemie-code/claude/incremental-simple/turn-2.jsonl");
        let (units, errors) = scriptorium_session_dag::import::discover(
            scriptorium_session_dag::import::Format::ClaudeCode,
            &[transcript],
        );
        assert!(errors.is_empty() && units.len() == 1, "{errors:?}");
        backend.intake().import_unit(&**backend.store(), &units[0]).expect("imported");
        let written = backend.write(&SessionId(SESSION.into()), &[], true).await;
        assert!(written.is_ok(), "{written:?}");
    }
    let store = scriptorium_backend::sessions::Sessions::open(&home, &Default::default())
        .expect("the store");
    let tools = MemoryTools::new(home.join("memory")).with_store(store.shared());
    assert!(grep(&tools, PHRASE).await.contains("topics/"), "the session was written");
    let base = revision(&tools).await;

    let plan = answer(&tools.memory_forget(args(json!({ "session": SESSION }))).await);
    assert_eq!(plan["plan"]["sessions"], json!([SESSION]), "{plan}");
    assert_eq!(
        (plan["plan"]["messages"].clone(), plan["plan"]["records"].clone()),
        (json!(14), json!(9))
    );
    assert!(plan["plan"]["blocks"].as_array().is_some_and(|b| !b.is_empty()), "{plan}");
    assert_eq!(revision(&tools).await, base, "a plan changes nothing");
    assert!(grep(&tools, PHRASE).await.contains("topics/"));

    let done =
        answer(&tools.memory_forget(args(json!({ "session": [SESSION], "confirm": true }))).await);
    assert_eq!(done["forgotten"], true, "{done}");
    assert_eq!(grep(&tools, PHRASE).await, "No matches.");
    let (_, found) = reply(&tools.memory_search(args(json!({ "query": PHRASE }))).await);
    assert!(!found.to_lowercase().contains(PHRASE), "{found}");
    let nodes = store.nodes(&SessionId(SESSION.into())).expect("the session's nodes");
    assert!(!nodes.is_empty() && nodes.iter().all(|n| n.content.is_empty() && n.is_forgotten()));
}
