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
