//! `scriptorium init`, `status`, `edit` and `log`: a workspace changed only through validated
//! transactions, each one a git commit that the real `git` CLI reads back.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::support::{NOTE, git, home_with_sources, scriptorium};

/// Every file under `dir` (except the lock file) with its SHA-256.
fn tree_hashes(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).expect("list a directory") {
            let path = entry.expect("a directory entry").path();
            let rel = path.strip_prefix(root).expect("inside").to_string_lossy().into_owned();
            if path.is_dir() {
                walk(root, &path, out);
            } else if !rel.ends_with("write.lock") {
                let bytes = fs::read(&path).expect("read a file");
                out.insert(rel, hex::encode(Sha256::digest(bytes)));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn init_is_idempotent_and_status_reports_the_workspace() {
    let home = tempfile::tempdir().expect("a temp dir");
    let first = scriptorium(home.path(), &["init", "--json"]);
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let first: serde_json::Value = serde_json::from_slice(&first.stdout).expect("json");
    let id = first["workspace"].as_str().expect("an id").to_owned();
    assert!(id.starts_with("w-") && id.len() == 10, "{id}");
    let again = scriptorium(home.path(), &["init", "--json"]);
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(again["workspace"], id.as_str(), "init must not mint a second id");

    let status = scriptorium(home.path(), &["status", "--json"]);
    assert_eq!(status.status.code(), Some(0));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(status["workspace"], id.as_str());
    assert_eq!(status["blocks"], 0);
    assert_eq!(status["last_transaction"], serde_json::Value::Null);
    assert_eq!(status["git"]["in_sync"], true);
    let memory = home.path().join("memory");
    for (path, mode) in [(".", 0o700), ("topics", 0o700), (".scriptorium", 0o700)] {
        let meta = fs::metadata(memory.join(path)).expect("exists");
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            mode,
            "{path}"
        );
    }
}

#[test]
fn commands_that_need_a_workspace_say_so() {
    let home = tempfile::tempdir().expect("a temp dir");
    for args in [&["status"][..], &["log"][..], &["edit", "x.md", "--from", "-"][..]] {
        let out = scriptorium(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("scriptorium init"), "{args:?}");
    }
    assert!(!home.path().join("memory").exists(), "nothing is created by a failed command");
}

#[test]
fn an_edit_installs_normalized_text_and_commits_it() {
    let home = home_with_sources();
    let memory = home.path().join("memory");
    let note = home.path().join("note.md");
    fs::write(&note, NOTE).expect("write the note");
    let out = scriptorium(
        home.path(),
        &["edit", "topics/garden.md", "--from", note.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = fs::read_to_string(memory.join("topics/garden.md")).expect("installed");
    assert!(text.contains("^"), "a block ID was assigned: {text}");
    assert!(text.contains("(../sources/openprogram/_v2/garden-2024.md#source-"), "{text}");
    assert!(!text.contains("[^e1]"), "local labels became stable IDs: {text}");

    // The real git CLI reads the history: one commit per transaction, with its Txn-Id.
    let status: serde_json::Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("json");
    let txn = status["last_transaction"].as_str().expect("a transaction").to_owned();
    assert_eq!(status["git"]["in_sync"], true);
    assert_eq!(status["blocks"], 1);
    let message = git(&memory, &["log", "-1", "--format=%B"]);
    assert!(message.starts_with("memory: edit topics/garden.md"), "{message}");
    assert!(message.contains(&format!("Txn-Id: {txn}")), "{message}");
    let shown = git(&memory, &["show", "--stat", "--format=", "HEAD"]);
    assert!(shown.contains("topics/garden.md"), "{shown}");
    assert!(shown.contains("recent_events.jsonl"), "derived views are committed too: {shown}");
    git(&memory, &["fsck", "--full"]);

    let log = scriptorium(home.path(), &["log", "topics/garden.md", "--json"]);
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).expect("json");
    assert_eq!(log["commits"].as_array().expect("rows").len(), 1);
    assert_eq!(log["commits"][0]["txn_id"], txn.as_str());

    // `log --patch`: the file's diff in each commit, as a person reviews it.
    let patch = scriptorium(home.path(), &["log", "topics/garden.md", "--patch"]);
    assert_eq!(patch.status.code(), Some(0), "{}", String::from_utf8_lossy(&patch.stderr));
    let patch = String::from_utf8_lossy(&patch.stdout);
    assert!(patch.contains(&format!("[{txn}]")), "{patch}");
    assert!(patch.contains("+++ b/topics/garden.md"), "{patch}");
    assert!(patch.lines().any(|l| l.starts_with("+# Garden")), "{patch}");
    let json = scriptorium(home.path(), &["log", "topics/garden.md", "--patch", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(json["changes"][0]["change"], "created", "{json}");
    assert_eq!(json["changes"][0]["txn_id"], txn.as_str(), "{json}");
    // A patch needs a file.
    let bare = scriptorium(home.path(), &["log", "--patch"]);
    assert_eq!(bare.status.code(), Some(2), "{}", String::from_utf8_lossy(&bare.stderr));
}

#[test]
fn a_rejected_edit_changes_nothing_and_keeps_the_draft() {
    let home = home_with_sources();
    let memory = home.path().join("memory");
    let note = home.path().join("note.md");
    fs::write(&note, NOTE).expect("write");
    let ok =
        scriptorium(home.path(), &["edit", "garden.md", "--from", note.to_str().expect("utf-8")]);
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    let before = tree_hashes(&memory);

    let broken = "# Garden\n\nThis paragraph dropped its block and its evidence.\n";
    fs::write(&note, broken).expect("write");
    let out =
        scriptorium(home.path(), &["edit", "garden.md", "--from", note.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("BLOCK_ID_REMOVED"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let draft = stderr
        .split_whitespace()
        .find(|w| w.contains("/drafts/"))
        .expect("the draft path is printed");
    assert_eq!(fs::read_to_string(draft).expect("the draft exists"), broken);
    assert_eq!(tree_hashes(&memory), before, "a rejected edit changes no byte");
}

#[test]
fn the_editor_edits_the_staged_copy() {
    let home = home_with_sources();
    let note = home.path().join("note.md");
    fs::write(&note, NOTE).expect("write");
    let ok =
        scriptorium(home.path(), &["edit", "garden.md", "--from", note.to_str().expect("utf-8")]);
    assert_eq!(ok.status.code(), Some(0));
    let out = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home.path())
        .args(["edit", "topics/garden.md"])
        .env("EDITOR", "sed -i s/vegetable/herb/")
        .env_remove("VISUAL")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = fs::read_to_string(home.path().join("memory/topics/garden.md")).expect("read");
    assert!(text.contains("planning a herb garden"), "{text}");
    // An editor that changes nothing installs nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home.path())
        .args(["edit", "topics/garden.md"])
        .env("EDITOR", "true")
        .env_remove("VISUAL")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("unchanged"));
}

#[test]
fn paths_outside_topics_are_refused() {
    let home = home_with_sources();
    for path in ["../outside.md", "topics/../../x.md", "sources/x.md", "topics/notes.txt"] {
        let out = scriptorium(home.path(), &["edit", path, "--from", "-"]);
        assert_eq!(out.status.code(), Some(2), "{path}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("PATH_OUTSIDE_WORKSPACE") || stderr.contains("READ_ONLY_PATH"),
            "{path}: {stderr}"
        );
    }
}
