//! `scriptorium note`: one fact by hand, archived as the owner's record and installed as the
//! block citing it; a refused note changes nothing.

use serde_json::Value;

use crate::support::scriptorium;

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn init() -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("a temp dir");
    let out = scriptorium(home.path(), &["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    home
}

#[test]
fn a_note_is_archived_cited_recalled_and_pinned_with_core() {
    let home = init();
    let out = scriptorium(home.path(), &["note", "Dana's garden is in Leeds, by the river."]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("noted in topics/notes.md as ^"));
    let notes = std::fs::read_to_string(home.path().join("memory/topics/notes.md")).expect("notes");
    assert!(
        notes.starts_with("# Notes\n\nDana's garden is in Leeds, by the river.[^e-"),
        "{notes}"
    );
    // The cited record is the owner's own, verbatim.
    let link = notes.split("](../").nth(1).expect("a citation").split('#').next().expect("a path");
    let archive = std::fs::read_to_string(home.path().join("memory").join(link)).expect("archive");
    assert!(archive.contains("Dana's garden is in Leeds, by the river."), "{archive}");
    // The same note again (a run that was interrupted after installing, retried): nothing
    // changes, and the answer says so.
    let status = |home: &std::path::Path| {
        json(&scriptorium(home, &["status", "--json"]))["revision"].clone()
    };
    let before = status(home.path());
    let again = scriptorium(home.path(), &["note", "Dana's garden is in Leeds, by the river."]);
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stdout).contains("already noted in topics/notes.md"));
    assert_eq!(status(home.path()), before, "nothing installed twice");
    let notes = std::fs::read_to_string(home.path().join("memory/topics/notes.md")).expect("notes");
    assert_eq!(notes.matches("Dana's garden is in Leeds").count(), 1, "{notes}");
    let hits = json(&scriptorium(
        home.path(),
        &["search", "where is the garden", "--topics-only", "--json"],
    ));
    assert_eq!(hits["hits"][0]["path"], "topics/notes.md", "{hits}");

    let out =
        scriptorium(home.path(), &["note", "--core", "Always answer in metric units.", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let changed = json(&out)["changed_files"].to_string();
    assert!(changed.contains("\"topics/core.md\"") && changed.contains("sources/"), "{changed}");
    let core = scriptorium(home.path(), &["core"]);
    assert!(String::from_utf8_lossy(&core.stdout).contains("Always answer in metric units."));

    let out = scriptorium(
        home.path(),
        &["note", "--topic", "people/dana", "--time", "2024-03", "Dana prefers raised beds."],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let dana =
        std::fs::read_to_string(home.path().join("memory/topics/people/dana.md")).expect("dana");
    assert!(dana.starts_with("# Dana\n\nDana prefers raised beds.[^e-"), "{dana}");
    assert!(dana.contains("Time: `2024-03`"), "{dana}");
}

#[test]
fn a_refused_note_changes_nothing() {
    let home = init();
    let revision = |home: &std::path::Path| {
        json(&scriptorium(home, &["status", "--json"]))["revision"].clone()
    };
    let before = revision(home.path());
    for (args, code) in [
        (&["note", "A bad date.", "--time", "2024-13"][..], "INVALID_ARGUMENT"),
        (&["note", "   "], "INVALID_ARGUMENT"),
        (&["note", "Outside.", "--topic", "../escape"], "PATH_OUTSIDE_WORKSPACE"),
    ] {
        let out = scriptorium(home.path(), &[args, &["--json"]].concat());
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(json(&out)["error"]["code"], code, "{args:?}");
        assert_eq!(revision(home.path()), before, "{args:?} changed nothing");
    }
    assert!(!home.path().join("memory/topics/notes.md").exists());
    assert!(!home.path().join("memory/sources").read_dir().is_ok_and(|mut d| d.next().is_some()));
    // --core and --topic do not go together.
    let out = scriptorium(home.path(), &["note", "x", "--core", "--topic", "a"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_note_never_stores_terminal_control_sequences() {
    let home = init();
    let typed = "Dana\u{7} likes \u{1b}[31mred\u{1b}[0m tulips\u{8}s \u{1b}]0;title\u{7}best.";
    let out = scriptorium(home.path(), &["note", typed, "--json"]);
    assert_eq!(json(&out)["ok"], true, "{}", String::from_utf8_lossy(&out.stdout));
    let mut stored = String::new();
    for entry in walk(&home.path().join("memory")) {
        stored.push_str(&std::fs::read_to_string(entry).unwrap_or_default());
    }
    assert!(stored.contains("Dana likes red tulipss best."), "{stored}");
    for control in ['\u{7}', '\u{8}', '\u{1b}'] {
        assert!(!stored.contains(control), "{control:?} stored");
    }
}

/// Every file under `dir` (not `.git`).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a directory").flatten() {
        let path = entry.path();
        if entry.file_name() == ".git" {
            continue;
        }
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn text_with_an_escape_sequence_is_printed_escaped_on_a_terminal() {
    let home = init();
    // A topic edited elsewhere holds an escape sequence (a note can no longer bring one).
    let topic = home.path().join("memory/topics/notes.md");
    let out = scriptorium(home.path(), &["note", "Dana likes red tulips."]);
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&topic).expect("the topic");
    std::fs::write(&topic, text.replace("red", "\u{1b}[31mred\u{1b}]0;owned\u{7}")).expect("edit");
    let command = format!(
        "'{}' --home '{}' get topics/notes.md",
        env!("CARGO_BIN_EXE_scriptorium"),
        home.path().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("SCRIPTORIUM_HOME")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("`script` (util-linux) runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("\\u{1b}[31mred\\u{1b}]0;owned\\u{7}"), "{shown}");
    assert!(!shown.contains('\u{1b}') && !shown.contains('\u{7}'), "{shown:?}");
    // Piped, the bytes are as stored.
    let piped = scriptorium(home.path(), &["get", "topics/notes.md"]);
    assert!(String::from_utf8_lossy(&piped.stdout).contains("\u{1b}[31mred"));
}

#[test]
fn a_topic_that_is_no_plain_path_is_refused_in_a_notes_words() {
    let home = init();
    let outside = "PATH_OUTSIDE_WORKSPACE";
    for (topic, code, why) in [
        ("x/", "INVALID_ARGUMENT", "empty part"),
        ("x/..", outside, "leaves topics/"),
        (".hidden/x", "INVALID_ARGUMENT", "starts with a dot"),
        ("dana.md.md", "INVALID_ARGUMENT", ".md twice"),
        ("/etc/evil", outside, "absolute"),
        ("a\u{1}b", "INVALID_ARGUMENT", "control character"),
    ] {
        let out =
            scriptorium(home.path(), &["note", "Dana likes tulips.", "--topic", topic, "--json"]);
        let doc = json(&out);
        assert_eq!(out.status.code(), Some(1), "{topic}: {doc}");
        assert_eq!(doc["error"]["code"], code, "{doc}");
        let message = doc["error"]["message"].as_str().expect("a message");
        assert!(message.contains(why), "{topic}: {message}");
        assert!(!message.contains("memory_changes") && !message.contains("INVALID_ARGUMENT:"));
    }
    for (text, why) in [("  ", "the note is empty"), ("Tulips ^abc12345", "block ID")] {
        let doc = json(&scriptorium(home.path(), &["note", text, "--json"]));
        let message = doc["error"]["message"].as_str().expect("a message");
        assert!(message.contains(why) && !message.contains("Runtime"), "{message}");
    }
    let doc = json(&scriptorium(home.path(), &["note", "x", "--time", "2024-13", "--json"]));
    assert!(doc["error"]["message"].as_str().expect("a message").contains("YYYY-MM-DD"));
    assert!(!home.path().join("memory/topics").read_dir().expect("topics").any(|_| true));
}
