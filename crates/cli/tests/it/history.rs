//! `scriptorium log --offset` and `scriptorium show REV [PATH]`: one transaction's commit found
//! by Txn-Id or id prefix, with its diffs, agreeing with the real git CLI.

use crate::support::{add_topic, git, home_with_note, scriptorium};

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        let (stdout, stderr) =
            (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        panic!("{e}: {stdout}{stderr}")
    })
}

#[test]
fn log_pages_and_show_finds_a_commit_by_txn_id_or_prefix() {
    let home = home_with_note();
    add_topic(home.path(), "tea.md", "Dana drinks green tea.");
    let memory = home.path().join("memory");

    // Pages follow `git log --skip -n`.
    let page = json(&scriptorium(home.path(), &["log", "--json", "--offset", "1", "--limit", "1"]));
    let second = git(&memory, &["log", "--format=%H", "--skip=1", "-n1"]);
    assert_eq!(page["commits"].as_array().expect("rows").len(), 1);
    assert_eq!(page["commits"][0]["commit"], second.trim());

    // `show` by Txn-Id and by prefix is the same commit; its files are git's.
    let log = json(&scriptorium(home.path(), &["log", "topics/tea.md", "--json"]));
    let txn = log["commits"][0]["txn_id"].as_str().expect("a Txn-Id").to_owned();
    let by_txn = json(&scriptorium(home.path(), &["show", &txn, "--json"]));
    let commit = by_txn["commit"]["commit"].as_str().expect("id").to_owned();
    assert_eq!(by_txn["commit"]["txn_id"], txn.as_str());
    let by_prefix = json(&scriptorium(home.path(), &["show", &commit[..10], "--json"]));
    assert_eq!(by_prefix, by_txn);
    let files: Vec<&str> = by_txn["commit"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("path"))
        .collect();
    let git_files = git(&memory, &["show", "--first-parent", "--name-only", "--format=", &commit]);
    assert_eq!(files, git_files.lines().collect::<Vec<_>>());
    assert!(files.contains(&"recent_events.jsonl"), "derived views are part of it: {files:?}");

    // PATH keeps only that file; the text output shows the transaction and the added line.
    let out = scriptorium(home.path(), &["show", &txn, "topics/tea.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("Txn-Id: {txn}")), "{text}");
    assert!(
        text.contains("+++ b/topics/tea.md") && text.contains("\n+Dana drinks green tea."),
        "{text}"
    );
    assert!(!text.contains("recent_events"), "PATH limits the diff: {text}");

    // An unknown revision and an escaping path are stable errors and change nothing.
    let before = git(&memory, &["rev-parse", "HEAD"]);
    let missing = scriptorium(home.path(), &["show", "t-0000000000000-nothing", "--json"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(json(&missing)["error"]["code"], "NOT_FOUND");
    let escaping = scriptorium(home.path(), &["show", "HEAD", "../outside", "--json"]);
    assert_eq!(json(&escaping)["error"]["code"], "INVALID_ARGUMENT");
    assert_eq!(git(&memory, &["rev-parse", "HEAD"]), before);
}

#[test]
fn commit_subjects_say_what_the_transaction_did() {
    let home = home_with_note();
    let memory = home.path().join("memory");
    crate::support::append_session(home.path(), &["I water the garden at dawn.", "Noted."]);
    let out = scriptorium(home.path(), &["write", "--session", "s", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let subject = git(&memory, &["log", "-1", "--format=%s"]);
    assert_eq!(subject.trim(), "memory: write 2 turns of session s", "{subject}");
    // A change request without a message: the files it changed, not "Update memory".
    let status = json(&scriptorium(home.path(), &["status", "--json"]));
    let base = status["revision"].as_str().expect("a revision");
    let file = home.path().join("changes.json");
    let text = std::fs::read_to_string(memory.join("topics/garden.md")).expect("the topic");
    let changes = serde_json::json!([{"path": "topics/garden.md", "action": "write",
        "content": text.replace("# Garden", "# Garden plans")}]);
    std::fs::write(&file, changes.to_string()).expect("the request");
    let out = scriptorium(
        home.path(),
        &["update", "--base", base, "--changes", file.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let subject = git(&memory, &["log", "-1", "--format=%s"]);
    assert_eq!(subject.trim(), "memory: update topics/garden.md", "{subject}");
}
