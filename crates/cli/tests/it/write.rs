//! `scriptorium write` and `scriptorium sleep` through the binary: the journal writer (no
//! model), the scripted model, exit codes and `--json`.

use std::path::Path;

use serde_json::Value;

use crate::support::{append_session, scriptorium};

/// A home with a workspace and one session `s` of four turns on 2024-03-15.
fn home_with_session(home: &Path) {
    let out = scriptorium(home, &["init"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    append_session(
        home,
        &[
            "I'm Dana. I moved to Lisbon in June.",
            "Welcome to Lisbon, Dana.",
            "Please remember that I prefer tea over coffee.",
            "Noted: tea.",
        ],
    );
}

#[test]
fn journal_write_files_each_user_turn_and_marks_the_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    home_with_session(home);
    let out = scriptorium(home, &["write", "--session", "s", "--force"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("using the journal writer"), "{stderr}");
    assert!(stdout.contains("s: wrote 1 batch(es)"), "{stdout}");
    assert!(stdout.contains("topics/journal/2024/03-15.md"), "{stdout}");
    let journal =
        std::fs::read_to_string(home.join("memory/topics/journal/2024/03-15.md")).expect("journal");
    assert!(journal.starts_with("# Journal 2024-03-15\n"), "{journal}");
    assert!(journal.contains("Dana said: I'm Dana. I moved to Lisbon in June.[^e-"), "{journal}");
    assert!(journal.contains("Dana said: Please remember that I prefer tea over coffee.[^e-"));
    assert!(!journal.contains("Welcome to Lisbon"), "assistant turns are not filed");
    // The views and the index heard about it: search finds the entry.
    let found = scriptorium(home, &["search", "tea"]);
    assert!(
        String::from_utf8_lossy(&found.stdout).contains("prefer tea"),
        "{}",
        String::from_utf8_lossy(&found.stdout)
    );
    // Nothing owed any more.
    let again = scriptorium(home, &["write", "--all", "--force", "--json"]);
    assert!(again.status.success());
    let json: Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(json["ok"], true);
    assert_eq!(json["sessions"][0]["session"], "s");
    assert_eq!(json["sessions"][0]["ok"], true);
    assert_eq!(json["sessions"][0]["batches"].as_array().map(Vec::len), Some(0));
    // Sleep with the journal model: nothing to reorganize, ok.
    let sleep = scriptorium(home, &["sleep", "--json"]);
    assert!(sleep.status.success(), "{}", String::from_utf8_lossy(&sleep.stderr));
    let json: Value = serde_json::from_slice(&sleep.stdout).expect("json");
    assert_eq!(json["status"], "ok");
    assert_eq!(json["changed_files"], serde_json::json!([]));
}

#[test]
fn a_twice_rejected_scripted_write_exits_1_with_its_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    home_with_session(home);
    let bad = serde_json::json!({"tool": "write", "arguments":
        {"path": "topics/people/dana.md", "content": "# Dana\n\nDana moved.[^e1]\n"}});
    let commit = serde_json::json!({"tool": "commit_edits"});
    let script = serde_json::json!([bad, commit, bad, commit]);
    std::fs::write(home.join("script.json"), script.to_string()).expect("script");
    let out = scriptorium(
        home,
        &[
            "write",
            "--session",
            "s",
            "--force",
            "--model",
            "scripted",
            "--script",
            &home.join("script.json").to_string_lossy(),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["ok"], false);
    assert_eq!(json["sessions"][0]["ok"], false);
    assert_eq!(json["sessions"][0]["error"]["reason_code"], "COMMIT_REJECTED");
    assert_eq!(json["sessions"][0]["error"]["retryable"], false);
    assert!(!home.join("memory/topics/people/dana.md").exists());
}

#[test]
fn model_options_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    home_with_session(home);
    let out = scriptorium(home, &["write", "--session", "s", "--model", "openai"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the model name is required (--model-name")
    );
    let out = scriptorium(home, &["write", "--session", "s", "--threshold", "123"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("8000, 16000, 32000"));
}
