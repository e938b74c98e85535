//! Edits made outside a transaction (an editor, the Python implementation, `git pull`) are found
//! by the next `search`, which takes them in as one transaction: the views and git follow, a
//! read never makes an empty commit, and a copy of the workspace changes nothing.

use std::fs;
use std::path::Path;

use crate::support::{git, home_with_note, scriptorium};

fn json(out: &std::process::Output) -> serde_json::Value {
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn commits(memory: &Path) -> usize {
    git(memory, &["rev-list", "--count", "HEAD"]).trim().parse().expect("a count")
}

#[test]
fn a_search_finds_an_outside_edit_and_takes_it_in_as_one_commit() {
    let home = home_with_note();
    let memory = home.path().join("memory");
    let garden = memory.join("topics/garden.md");
    let before = commits(&memory);

    // Another program rewrites the paragraph, keeping its block ID and citation.
    let text = fs::read_to_string(&garden).expect("read");
    fs::write(&garden, text.replace("vegetable garden", "zanzibar herb garden")).expect("write");

    let found = json(&scriptorium(home.path(), &["search", "zanzibar", "--json"]));
    let hits = found["hits"].as_array().expect("hits");
    assert_eq!(hits.len(), 1, "{found}");
    assert!(hits[0]["snippet"].as_str().expect("snippet").contains("zanzibar"), "{found}");
    assert_eq!(found["outside_edits"]["adopted"], true, "{found}");
    assert_eq!(found["outside_edits"]["files"], serde_json::json!(["topics/garden.md"]));

    // One commit holds exactly the edit (and the views it changed), with its own message.
    assert_eq!(commits(&memory), before + 1);
    let message = git(&memory, &["log", "-1", "--format=%s"]);
    assert_eq!(message.trim(), "memory: adopt outside edits to topics/garden.md");
    let shown = git(&memory, &["show", "--stat", "--format=", "HEAD"]);
    assert!(shown.contains("topics/garden.md"), "{shown}");
    // The derived views caught up in the same commit.
    let day = fs::read_to_string(memory.join("timeline/2024/04/02.md")).expect("the timeline");
    assert!(day.contains("zanzibar herb garden"), "{day}");
    assert!(shown.contains("timeline/2024/04/02.md"), "{shown}");
    assert!(git(&memory, &["status", "--porcelain"]).is_empty(), "git is in step");
    let status = json(&scriptorium(home.path(), &["status", "--json"]));
    assert_eq!(status["topics_edited_outside"], false, "{status}");
    assert_eq!(status["git"]["in_sync"], true, "{status}");

    // The next search has nothing to take in, and reads make no commit.
    let again = json(&scriptorium(home.path(), &["search", "zanzibar", "--json"]));
    assert_eq!(again["hits"].as_array().expect("hits").len(), 1);
    assert!(again.get("outside_edits").is_none(), "{again}");
    json(&scriptorium(home.path(), &["status", "--json"]));
    assert_eq!(commits(&memory), before + 1);
}

#[test]
fn an_invalid_outside_edit_is_reported_not_installed_and_not_validated_twice() {
    let home = home_with_note();
    let memory = home.path().join("memory");
    let garden = memory.join("topics/garden.md");
    let before = commits(&memory);
    let status = json(&scriptorium(home.path(), &["status", "--json"]));
    let installed = (status["transactions"].clone(), status["last_transaction"].clone());

    // An uncited paragraph: not a valid record, so it cannot be taken in.
    let mut text = fs::read_to_string(&garden).expect("read");
    text.push_str("\nThe quokka sleeps under the shed.\n");
    fs::write(&garden, &text).expect("write");

    let found = json(&scriptorium(home.path(), &["search", "quokka", "--json"]));
    assert_eq!(found["outside_edits"]["adopted"], false, "{found}");
    assert_eq!(found["outside_edits"]["files"], serde_json::json!(["topics/garden.md"]));
    assert!(found["outside_edits"]["violations"].as_u64().is_some_and(|n| n >= 1), "{found}");
    assert_eq!(commits(&memory), before, "nothing installed, nothing committed");
    assert_eq!(fs::read_to_string(&garden).expect("read"), text, "the file is left as written");

    // The same edits are not validated again (no violation count: they were not looked at),
    // and a person is told on stderr, stdout staying the recall.
    let out = scriptorium(home.path(), &["search", "quokka"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("do not validate: topics/garden.md"), "{stderr}");
    let again = json(&scriptorium(home.path(), &["search", "quokka", "--json"]));
    assert_eq!(again["outside_edits"]["adopted"], false, "{again}");
    assert!(again["outside_edits"]["violations"].is_null(), "not validated again: {again}");

    let status = json(&scriptorium(home.path(), &["status", "--json"]));
    assert_eq!((status["transactions"].clone(), status["last_transaction"].clone()), installed);
    assert_eq!(status["topics_edited_outside"], true, "{status}");
    assert_eq!(commits(&memory), before);
}

#[test]
fn reads_make_no_empty_commit_after_a_commit_by_hand() {
    let home = home_with_note();
    let memory = home.path().join("memory");
    let identity = ["-c", "user.name=x", "-c", "user.email=y@example.invalid"];
    git(&memory, &[&identity[..], &["commit", "-q", "--allow-empty", "-m", "mine"]].concat());
    let before = commits(&memory);
    for _ in 0..2 {
        json(&scriptorium(home.path(), &["status", "--json"]));
        json(&scriptorium(home.path(), &["search", "garden", "--json"]));
    }
    assert_eq!(commits(&memory), before, "HEAD already holds the installed tree");
    let status = json(&scriptorium(home.path(), &["status", "--json"]));
    assert_eq!(status["git"]["in_sync"], true, "{status}");
}

#[test]
fn a_copied_workspace_has_the_same_revision_and_no_outside_change() {
    let home = home_with_note();
    let status = json(&scriptorium(home.path(), &["status", "--json"]));
    let copy = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new("cp")
        .arg("-r")
        .arg(home.path().join("memory"))
        .arg(copy.path())
        .output()
        .expect("cp runs");
    assert!(out.status.success());
    let copied = json(&scriptorium(copy.path(), &["status", "--json"]));
    assert_eq!(copied["revision"], status["revision"], "{copied}");
    assert_eq!(copied["topics_edited_outside"], false, "{copied}");
    assert_eq!(copied["sources_changed_outside"], false, "{copied}");
    let memory = copy.path().join("memory");
    let before = commits(&memory);
    json(&scriptorium(copy.path(), &["search", "garden", "--json"]));
    assert_eq!(commits(&memory), before);
}

#[test]
fn a_change_that_takes_in_an_outside_edit_says_so() {
    let home = home_with_note();
    crate::support::add_topic(home.path(), "herbs.md", "Dana dries the sage in the attic.");
    let memory = home.path().join("memory");
    // Two files edited outside: one valid, one that no longer validates (an uncited line).
    let herbs = memory.join("topics/herbs.md");
    let renamed = fs::read_to_string(&herbs).expect("read").replace("# Topic", "# Herbs");
    fs::write(&herbs, &renamed).expect("write");
    let garden = memory.join("topics/garden.md");
    let fixed = fs::read_to_string(&garden).expect("read").replace("vegetable", "herb");
    fs::write(&garden, format!("{fixed}\nAn uncited line.\n")).expect("write");
    // The status cannot take them in (they do not validate together) and says so; its
    // revision is the live one, which the next update is compared against.
    let status = json(&scriptorium(home.path(), &["status", "--json"]));
    assert_eq!(status["outside_edits"]["adopted"], false, "{status}");
    let base = status["revision"].as_str().expect("revision").to_owned();
    // A change request that repairs the invalid file installs it, and its install records the
    // other outside edit too: the result says which file it took in.
    let changes =
        serde_json::json!([{"path": "topics/garden.md", "action": "write", "content": fixed}]);
    let file = home.path().join("changes.json");
    fs::write(&file, changes.to_string()).expect("write the request");
    let args = ["update", "--base", &base, "--changes", file.to_str().expect("utf-8"), "--json"];
    let result = json(&scriptorium(home.path(), &args));
    // Both were edited outside; the request rewrote one of them.
    assert_eq!(result["adopted"], serde_json::json!(["topics/garden.md", "topics/herbs.md"]));
    assert_eq!(result["noop"], false, "{result}");
    let shown = git(&memory, &["show", "--stat", "--format=", "HEAD"]);
    assert!(shown.contains("topics/garden.md") && shown.contains("topics/herbs.md"), "{shown}");
}

#[test]
fn status_takes_in_a_valid_outside_edit_before_it_reports_the_revision() {
    let home = home_with_note();
    let memory = home.path().join("memory");
    let garden = memory.join("topics/garden.md");
    let edited = fs::read_to_string(&garden).expect("read").replace("vegetable", "herb");
    fs::write(&garden, &edited).expect("write");
    let status = json(&scriptorium(home.path(), &["status", "--json"]));
    assert_eq!(status["outside_edits"]["adopted"], true, "{status}");
    assert_eq!(status["outside_edits"]["files"], serde_json::json!(["topics/garden.md"]));
    assert_eq!(status["topics_edited_outside"], false, "{status}");
    let shown = git(&memory, &["show", "--stat", "--format=", "HEAD"]);
    assert!(shown.contains("topics/garden.md"), "{shown}");
    // A change request that writes what the file already says is now a no-op.
    let changes =
        serde_json::json!([{"path": "topics/garden.md", "action": "write", "content": edited}]);
    let file = home.path().join("changes.json");
    fs::write(&file, changes.to_string()).expect("write the request");
    let base = status["revision"].as_str().expect("revision");
    let args = ["update", "--base", base, "--changes", file.to_str().expect("utf-8"), "--json"];
    let result = json(&scriptorium(home.path(), &args));
    assert_eq!(result["noop"], true, "{result}");
}

/// With an outside-edit watch running (`scriptorium_search::watch`, which a long-lived process
/// holds), a search skips the stat scan while the watch saw nothing happen, and still finds an
/// edit made in place (which moves no directory's mtime) and an invalid one (reported on every
/// search, validated once). New directories and renames: the watch's own tests.
#[test]
fn with_a_watch_running_outside_edits_are_still_found() {
    use scriptorium_search::watch::{OutsideWatch, ask};
    let home = home_with_note();
    let memory = home.path().join("memory");
    let garden = memory.join("topics/garden.md");
    let watch = OutsideWatch::start(&memory).expect("start").expect("a watch");
    assert!(!ask(&memory).expect("the watch answers").clean, "nobody scanned yet");

    // The first search scans, finds nothing outside, and says so to the watch.
    let first = json(&scriptorium(home.path(), &["search", "garden", "--json"]));
    assert!(first.get("outside_edits").is_none(), "{first}");
    assert!(ask(&memory).expect("answers").clean, "the scan found the trees as recorded");
    let before = commits(&memory);

    // In place: the watch says dirty, the search scans and takes the edit in.
    let text = fs::read_to_string(&garden).expect("read");
    fs::write(&garden, text.replace("vegetable garden", "zanzibar herb garden")).expect("write");
    let found = json(&scriptorium(home.path(), &["search", "zanzibar", "--json"]));
    assert_eq!(found["outside_edits"]["adopted"], true, "{found}");
    assert_eq!(found["hits"].as_array().expect("hits").len(), 1, "{found}");
    assert_eq!(commits(&memory), before + 1);
    // Its own install moved the trees: the next search scans once more, then the watch is clean.
    let again = json(&scriptorium(home.path(), &["search", "zanzibar", "--json"]));
    assert!(again.get("outside_edits").is_none(), "{again}");
    assert!(ask(&memory).expect("answers").clean);
    let clean = json(&scriptorium(home.path(), &["search", "zanzibar", "--json"]));
    assert_eq!(clean["hits"], again["hits"], "the clean path answers the same");

    // An invalid edit is reported by every search and never marked clean.
    let mut invalid = fs::read_to_string(&garden).expect("read");
    invalid.push_str("\nThe quokka sleeps under the shed.\n");
    fs::write(&garden, &invalid).expect("write");
    for _ in 0..2 {
        let found = json(&scriptorium(home.path(), &["search", "quokka", "--json"]));
        assert_eq!(found["outside_edits"]["adopted"], false, "{found}");
        assert!(!ask(&memory).expect("answers").clean);
    }
    fs::write(&garden, text.replace("vegetable garden", "zanzibar herb garden")).expect("write");
    json(&scriptorium(home.path(), &["search", "garden", "--json"]));
    json(&scriptorium(home.path(), &["search", "garden", "--json"]));
    assert!(ask(&memory).expect("answers").clean, "back as recorded");

    drop(watch);
    assert!(ask(&memory).is_none(), "a stopped watch answers nobody");
    let status = json(&scriptorium(home.path(), &["status", "--json"]));
    assert_eq!(status["topics_edited_outside"], false, "{status}");
}
