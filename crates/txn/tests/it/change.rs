//! The unified change interface: `Workspace::update` with whole-file `changes` and `patch`.
//! Every rejection is checked to leave the workspace byte for byte unchanged, revision included.

use std::path::Path;

use scriptorium_txn::{
    Error, ErrorCode, Installed, UpdateContext, UpdateOutcome, UpdateRequest, Workspace,
};
use serde_json::json;

use crate::pipeline::{fixture, live, stages, tree_state};

mod legacy;
mod model;
mod records;
mod snapshots;
mod sources;

/// Runs one JSON request against the workspace's current revision.
fn update(ws: &Workspace, body: serde_json::Value) -> scriptorium_txn::Result<Installed> {
    update_with(ws, body, UpdateContext::default()).map(|outcome| outcome.installed)
}

/// [`update`] with the caller's context.
fn update_with(
    ws: &Workspace,
    mut body: serde_json::Value,
    ctx: UpdateContext,
) -> scriptorium_txn::Result<UpdateOutcome> {
    if let Some(object) = body.as_object_mut() {
        object
            .entry("base_revision")
            .or_insert_with(|| json!(ws.revision().expect("revision").as_str()));
    }
    ws.update_with(UpdateRequest::from_json(&body.to_string())?, ctx)
}

/// Asserts that `body` is refused with `code` and `message`, leaving every byte unchanged.
fn refused(
    root: &Path,
    ws: &Workspace,
    body: serde_json::Value,
    code: ErrorCode,
    message: &str,
) -> Error {
    refused_with(root, ws, body, UpdateContext::default(), code, message)
}

/// [`refused`] with the caller's context.
fn refused_with(
    root: &Path,
    ws: &Workspace,
    body: serde_json::Value,
    ctx: UpdateContext,
    code: ErrorCode,
    message: &str,
) -> Error {
    let before = tree_state(root, false);
    let revision = ws.revision().expect("revision");
    let error = update_with(ws, body, ctx).expect_err("refused");
    assert_eq!(error.code(), code, "{error}");
    assert!(error.to_string().contains(message), "{error:?} does not contain {message:?}");
    assert_eq!(tree_state(root, false), before, "a rejection changed the workspace");
    assert_eq!(ws.revision().expect("revision"), revision);
    assert!(stages(root).is_empty(), "stage left behind: {:?}", stages(root));
    error
}

/// The block ID at the end of the live line containing `needle`.
fn block_id(root: &Path, rel: &str, needle: &str) -> String {
    let text = live(root, rel);
    let line = text.lines().find(|l| l.contains(needle)).expect("line present");
    line.rsplit('^').next().expect("id").trim().to_owned()
}

/// The 1-based number of the live line containing `needle`, and the line.
fn line_of(root: &Path, rel: &str, needle: &str) -> (usize, String) {
    let text = live(root, rel);
    let (i, line) =
        text.lines().enumerate().find(|(_, l)| l.contains(needle)).expect("line present");
    (i + 1, line.to_owned())
}

fn note(title: &str, fact: &str) -> String {
    format!(
        "# {title}\n\n{fact}[^e1]\n\n\
         [^e1]: Time: `2024-04-02`; Sources: [s1](openprogram/garden/u1)\n"
    )
}

#[test]
fn write_and_delete_in_one_transaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let base = ws.revision().expect("revision");
    let installed = update(
        &ws,
        json!({"changes": [
            {"path": "topics/notes/a.md", "action": "write", "content": note("A", "A holds.")},
            {"path": "topics/projects/garden.md", "action": "delete"},
        ], "commit_message": "Tidy\nup\u{7}"}),
    )
    .expect("installed");
    assert_eq!(installed.base_revision, base);
    assert_eq!(installed.revision, ws.revision().expect("revision"));
    assert_eq!(installed.message, "Tidy up");
    assert!(installed.changed_files.contains(&"topics/notes/a.md".to_owned()));
    assert!(installed.changed_files.contains(&"topics/projects/garden.md".to_owned()));
    assert!(!dir.path().join("topics/projects/garden.md").exists());
    assert!(live(dir.path(), "topics/notes/a.md").starts_with("# A\n\nA holds."));
}

#[test]
fn an_invalid_item_rolls_back_every_item() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let write = json!({"path": "topics/notes/a.md", "action": "write", "content": note("A", "A.")});
    let delete = json!({"path": "topics/projects/garden.md", "action": "delete"});
    for (bad, code, message) in [
        ("../outside.md", ErrorCode::PathOutsideWorkspace, "changes[2]: path escapes"),
        ("topics/../../x.md", ErrorCode::PathOutsideWorkspace, "changes[2]: path escapes"),
        ("/etc/x.md", ErrorCode::PathOutsideWorkspace, "changes[2]: path escapes"),
        ("sources/x.md", ErrorCode::ReadOnlyPath, "changes[2]: only topics/**/*.md"),
        ("topics/notes/a.txt", ErrorCode::ReadOnlyPath, "changes[2]: only topics/**/*.md"),
    ] {
        let bad = json!({"path": bad, "action": "write", "content": "x"});
        refused(dir.path(), &ws, json!({"changes": [write, delete, bad]}), code, message);
    }
    // A valid shape whose result does not validate rolls back too.
    let broken =
        json!({"path": "topics/notes/b.md", "action": "write", "content": "no title\n[^x]\n"});
    let before = tree_state(dir.path(), false);
    let error = update(&ws, json!({"changes": [write, broken]})).expect_err("rejected");
    assert!(!error.violations().is_empty(), "{error}");
    assert_eq!(tree_state(dir.path(), false), before);
}

#[test]
fn deleting_a_file_another_topic_links_into_names_the_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let id = block_id(dir.path(), "topics/people/dana.md", "Dana lives in Lyon.");
    let fact = format!("Dana's city is known, see [Lyon](dana.md#^{id}).");
    update(
        &ws,
        json!({"changes": [{"path": "topics/people/links.md", "action": "write",
                            "content": note("Links", &fact)}]}),
    )
    .expect("link installed");
    let dana = live(dir.path(), "topics/people/dana.md");
    // Decision: the Python implementation reports INVALID_TOPIC_FORMAT; this engine keeps its
    // more specific closed code DANGLING_BLOCK_LINK (the message names the ID either way).
    refused(
        dir.path(),
        &ws,
        json!({"changes": [{"path": "topics/people/dana.md", "action": "delete"}]}),
        ErrorCode::DanglingBlockLink,
        &format!("dangling block link: {id}"),
    );
    assert_eq!(live(dir.path(), "topics/people/dana.md"), dana);
}

#[test]
fn invalid_shapes_are_invalid_argument() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let write = |path: &str| json!({"path": path, "action": "write", "content": note("N", "N.")});
    let cases = [
        (json!([]), "changes must be a non-empty list"),
        (json!([{"path": "topics/n.md", "action": "rename"}]), "unknown variant `rename`"),
        (json!([write("topics/note.md"), write("topics/note.md")]), "changes[1]: duplicate path"),
        (
            json!([write("topics/note.md"), write("topics/./note.md")]),
            "duplicate path topics/note.md",
        ),
        (
            json!([write("topics//note.md"), write("topics/note.md")]),
            "duplicate path topics/note.md",
        ),
        (
            json!([{"path": "topics/n.md", "action": "write"}]),
            "changes[0]: content is required for write",
        ),
        (
            json!([{"path": "topics/people/dana.md", "action": "delete", "content": ""}]),
            "changes[0]: content is not allowed for delete",
        ),
        (json!([{"path": "topics/n.md", "action": "delete", "extra": 1}]), "unknown field `extra`"),
        (json!([{"action": "delete"}]), "missing field `path`"),
        (
            json!((0..65).map(|i| write(&format!("topics/n{i}.md"))).collect::<Vec<_>>()),
            "changes has more than 64 items",
        ),
        (
            json!([{"path": "topics/big.md", "action": "write", "content": "x".repeat(511_990)}]),
            "changes exceed 512000 bytes",
        ),
        (json!("topics/n.md"), "invalid type"),
    ];
    for (changes, message) in cases {
        refused(dir.path(), &ws, json!({"changes": changes}), ErrorCode::InvalidArgument, message);
    }
    refused(
        dir.path(),
        &ws,
        json!({"base_revision": "", "changes": [write("topics/n.md")]}),
        ErrorCode::InvalidArgument,
        "base_revision is required",
    );
    refused(
        dir.path(),
        &ws,
        json!(["not an object"]),
        ErrorCode::InvalidArgument,
        "must be a JSON object",
    );
}

#[test]
fn exactly_one_form_is_required() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let changes = json!([{"path": "topics/people/dana.md", "action": "delete"}]);
    let exactly = "exactly one of patch, changes or memory_changes is required";
    refused(
        dir.path(),
        &ws,
        json!({"changes": changes, "patch": "x"}),
        ErrorCode::InvalidArgument,
        exactly,
    );
    refused(dir.path(), &ws, json!({}), ErrorCode::InvalidArgument, exactly);
    refused(
        dir.path(),
        &ws,
        json!({"changes": null, "patch": null}),
        ErrorCode::InvalidArgument,
        exactly,
    );
    refused(
        dir.path(),
        &ws,
        json!({"changes": changes, "memory_changes": [{"op": "delete_record", "memory_id": "x"}]}),
        ErrorCode::InvalidArgument,
        exactly,
    );
}

#[test]
fn deleting_a_missing_file_is_a_patch_conflict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let write = json!({"path": "topics/notes/a.md", "action": "write", "content": note("A", "A.")});
    let error = refused(
        dir.path(),
        &ws,
        json!({"changes": [write, {"path": "topics/people/nobody.md", "action": "delete"}]}),
        ErrorCode::PatchConflict,
        "change deletes a file that does not exist",
    );
    assert!(
        matches!(error, Error::Change { path: Some(ref p), .. } if p == "topics/people/nobody.md")
    );
}

#[test]
fn a_stale_base_revision_is_a_concurrent_update() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let stale = ws.revision().expect("revision");
    update(
        &ws,
        json!({"changes": [{"path": "topics/notes/a.md", "action": "write",
                                    "content": note("A", "A.")}]}),
    )
    .expect("installed");
    let error = refused(
        dir.path(),
        &ws,
        json!({"base_revision": stale.as_str(),
               "changes": [{"path": "topics/notes/b.md", "action": "write",
                            "content": note("B", "B.")}]}),
        ErrorCode::ConcurrentUpdate,
        "workspace changed since base_revision was read",
    );
    assert!(error.is_retryable());
}

#[test]
fn a_legacy_dev_null_patch_deletes_a_topic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let text = live(dir.path(), "topics/projects/garden.md");
    let count = text.lines().count();
    let body: String = text.lines().map(|l| format!("-{l}\n")).collect();
    let patch =
        format!("--- a/topics/projects/garden.md\n+++ /dev/null\n@@ -1,{count} +0,0 @@\n{body}");
    let installed = update(&ws, json!({"patch": patch})).expect("installed");
    assert!(installed.changed_files.contains(&"topics/projects/garden.md".to_owned()));
    assert!(!dir.path().join("topics/projects/garden.md").exists());
}

#[test]
fn a_patch_modifies_and_creates_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let (n, line) = line_of(dir.path(), "topics/projects/garden.md", "south bed");
    let new_line = line.replace("south", "north");
    let created = note("Note", "A note holds.");
    let added: String = created.lines().map(|l| format!("+{l}\n")).collect();
    let patch = format!(
        "diff --git a/topics/projects/garden.md b/topics/projects/garden.md\n\
         index 0000000..1111111 100644\n\
         --- a/topics/projects/garden.md\t2024-04-02\n+++ b/topics/projects/garden.md\n\
         @@ -{n},1 +{n},1 @@ Tomatoes\n-{line}\n+{new_line}\n\
         --- /dev/null\n+++ b/topics/notes/new.md\n@@ -0,0 +1,{} @@\n{added}",
        created.lines().count()
    );
    update(&ws, json!({"patch": patch})).expect("installed");
    assert!(live(dir.path(), "topics/projects/garden.md").contains(&new_line));
    assert!(live(dir.path(), "topics/notes/new.md").starts_with("# Note\n\nA note holds."));
}

#[test]
fn every_patch_error_has_its_message_and_code() {
    use ErrorCode::{InvalidArgument as Arg, PatchConflict as Conflict};
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let garden = "--- a/topics/projects/garden.md\n+++ b/topics/projects/garden.md\n";
    let len = live(dir.path(), "topics/projects/garden.md").lines().count();
    let cases: Vec<(String, ErrorCode, &str)> = vec![
        (String::new(), Arg, "patch is empty"),
        (" \n\n".into(), Arg, "patch is empty"),
        ("just some text\n".into(), Arg, "patch contains no file sections"),
        (
            "--- a/topics/x.md\n@@ -1 +1 @@\n-a\n+b\n".into(),
            Arg,
            "malformed patch: --- without +++",
        ),
        ("--- \n+++ \n@@ -1 +1 @@\n-a\n+b\n".into(), Arg, "patch section has no file path"),
        (
            "--- /dev/null\n+++ /dev/null\n@@ -1 +1 @@\n-a\n+b\n".into(),
            Arg,
            "patch section has no file path",
        ),
        ("@@ -1 +1 @@\n-a\n+b\n".into(), Arg, "patch hunk outside a file section"),
        (garden.into(), Arg, "patch file section has no hunks"),
        (format!("{garden}@@ -1 +1\n-a\n+b\n"), Arg, "malformed patch hunk header"),
        (format!("{garden}@@ -1,2 +1,2 @@\n # Garden planner\n"), Arg, "malformed patch hunk"),
        (format!("{garden}@@ -1 +1 @@\n*a\n"), Arg, "malformed patch hunk: *a"),
        (
            format!("diff --git a/x b/y\nrename from topics/a.md\n{garden}"),
            Arg,
            "unsupported patch header: rename from",
        ),
        (format!("copy from topics/a.md\n{garden}"), Arg, "unsupported patch header: copy from"),
        (
            format!("old mode 100644\nnew mode 100755\n{garden}"),
            Arg,
            "unsupported patch header: old mode",
        ),
        (
            "new file mode 120000\n--- /dev/null\n+++ b/topics/l.md\n@@ -0,0 +1 @@\n+x\n".into(),
            Arg,
            "unsupported patch header: new file mode 120000",
        ),
        (
            format!("{garden}Binary files a/x and b/x differ\n"),
            Arg,
            "unsupported patch header: Binary files",
        ),
        (format!("GIT binary patch\n{garden}"), Arg, "unsupported patch header: GIT binary patch"),
        (
            "--- a/topics/a.md\n+++ b/topics/b.md\n@@ -1 +1 @@\n-a\n+b\n".into(),
            Arg,
            "patch renames a file",
        ),
        (
            "--- a/../x.md\n+++ b/../x.md\n@@ -1 +1 @@\n-a\n+b\n".into(),
            ErrorCode::PathOutsideWorkspace,
            "path escapes",
        ),
        (
            "--- a/sources/x.md\n+++ b/sources/x.md\n@@ -1 +1 @@\n-a\n+b\n".into(),
            ErrorCode::ReadOnlyPath,
            "only topics/**/*.md",
        ),
        (
            "--- /dev/null\n+++ b/topics/projects/garden.md\n@@ -0,0 +1 @@\n+x\n".into(),
            Conflict,
            "patch creates a file that already exists",
        ),
        (
            "--- a/topics/none.md\n+++ b/topics/none.md\n@@ -1 +1 @@\n-a\n+b\n".into(),
            Conflict,
            "patch modifies a file that does not exist",
        ),
        (
            "--- a/topics/none.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n".into(),
            Conflict,
            "patch deletes a file that does not exist",
        ),
        (
            format!(
                "{garden}@@ -1,2 +1,2 @@\n-# Garden planner\n+# Garden\n \n@@ -2,1 +2,1 @@\n-\n+\n"
            ),
            Conflict,
            "overlapping patch hunks",
        ),
        (
            format!("{garden}@@ -{},1 +{},1 @@\n x\n", len + 1, len + 1),
            Conflict,
            "patch context runs past end of file",
        ),
        (
            format!("{garden}@@ -{},0 +{},1 @@\n+tail\n", len + 5, len + 5),
            Conflict,
            "patch context runs past end of file",
        ),
        (
            format!("{garden}@@ -1 +1 @@\n-# Vegetable planner\n+# Garden\n"),
            Conflict,
            "patch context does not match file contents",
        ),
        ("x".repeat(512_001), Arg, "patch exceeds 512000 bytes"),
    ];
    for (patch, code, message) in cases {
        refused(dir.path(), &ws, json!({"patch": patch}), code, message);
    }
}

#[test]
fn patch_conflicts_carry_line_expected_and_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let garden = "--- a/topics/projects/garden.md\n+++ b/topics/projects/garden.md\n";
    let error = refused(
        dir.path(),
        &ws,
        json!({"patch": format!("{garden}@@ -1,2 +1,2 @@\n # Garden planner\n-not blank\n+x\n")}),
        ErrorCode::PatchConflict,
        "patch context does not match file contents",
    );
    let Error::Change { path, details, .. } = error else { panic!("not a change error") };
    assert_eq!(path.as_deref(), Some("topics/projects/garden.md"));
    assert_eq!(
        serde_json::Value::Object(details),
        json!({"line": 2, "expected": "not blank", "found": ""})
    );

    let len = live(dir.path(), "topics/projects/garden.md").lines().count();
    let error = refused(
        dir.path(),
        &ws,
        json!({"patch": format!("{garden}@@ -{},1 +{},1 @@\n x\n", len + 1, len + 1)}),
        ErrorCode::PatchConflict,
        "patch context runs past end of file",
    );
    let Error::Change { details, .. } = error else { panic!("not a change error") };
    assert_eq!(details.get("line"), Some(&json!(len + 1)));
}

#[test]
fn blank_lines_inside_a_hunk_are_empty_context() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    // Line 2 of the topic is blank; the patch writes it as an empty line, not " ".
    let patch = "--- a/topics/projects/garden.md\n+++ b/topics/projects/garden.md\n\
                 @@ -1,2 +1,2 @@\n-# Garden planner\n+# Garden planner (2024)\n\n";
    update(&ws, json!({"patch": patch})).expect("installed");
    assert!(
        live(dir.path(), "topics/projects/garden.md").starts_with("# Garden planner (2024)\n\n")
    );
}

#[test]
fn a_hunk_header_that_undercounts_its_body_is_refused_not_partly_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let (n, line) = line_of(dir.path(), "topics/projects/garden.md", "south bed");
    let (m, other) = line_of(dir.path(), "topics/projects/garden.md", "SQLite");
    assert!(m < n);
    // One header for the first change only; the second change's lines follow it uncounted.
    let patch = format!(
        "--- a/topics/projects/garden.md\n+++ b/topics/projects/garden.md\n\
         @@ -{m},1 +{m},1 @@\n-{other}\n+{}\n-{line}\n+{}\n",
        other.replace("SQLite", "Postgres"),
        line.replace("south", "north")
    );
    refused(
        dir.path(),
        &ws,
        json!({"patch": patch}),
        ErrorCode::InvalidArgument,
        "undercounts its body",
    );
    // An empty line between the body and a stray line does not hide it.
    let patch = format!(
        "--- a/topics/projects/garden.md\n+++ b/topics/projects/garden.md\n\
         @@ -{m},1 +{m},1 @@\n-{other}\n+{other}!\n\n+stray\n"
    );
    refused(
        dir.path(),
        &ws,
        json!({"patch": patch}),
        ErrorCode::InvalidArgument,
        "undercounts its body",
    );
}

#[test]
fn uncited_text_is_refused_through_every_change_form() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let core = "# Core\n\nThe owner wants only e2e tests.\n";
    let error = refused(
        dir.path(),
        &ws,
        json!({"changes": [{"path": "topics/core.md", "action": "write", "content": core}]}),
        ErrorCode::UncitedParagraph,
        "The owner wants only e2e tests.",
    );
    let violation = &error.violations()[0];
    assert_eq!((violation.path.as_deref(), violation.line), (Some("topics/core.md"), 3));
    let added: String = core.lines().map(|l| format!("+{l}\n")).collect();
    let patch = format!("--- /dev/null\n+++ b/topics/core.md\n@@ -0,0 +1,3 @@\n{added}");
    refused(
        dir.path(),
        &ws,
        json!({"patch": patch}),
        ErrorCode::UncitedParagraph,
        "would be dropped",
    );
}

#[test]
fn a_change_identical_to_the_files_is_a_noop_with_no_new_revision() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let before = tree_state(dir.path(), false);
    let revision = ws.revision().expect("revision");
    let text = live(dir.path(), "topics/people/dana.md");
    let installed = update(
        &ws,
        json!({"changes": [{"path": "topics/people/dana.md", "action": "write", "content": text}]}),
    )
    .expect("accepted");
    assert!(installed.noop);
    assert!(installed.changed_files.is_empty());
    assert_eq!(installed.revision, revision);
    assert_eq!(tree_state(dir.path(), false), before);
}
