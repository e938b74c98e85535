//! `scriptorium demo --no-serve` runs to completion offline and its tour is checked; running it
//! again changes nothing.

use crate::support::scriptorium;

#[test]
fn the_demo_imports_writes_pins_the_core_and_recalls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("demo-home");
    let out = scriptorium(&home, &["demo", "--no-serve"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for expected in [
        "no model configured: writing with the journal writer",
        "imported 16 nodes (16 new) of session `garden-planning`: 2 branches",
        "topics/journal/2026/03-14.md",
        "the abandoned branch ending at a6b is written too",
        "Mara wants every quantity in metric units.",
        "recall for \"compost bin\"",
        "she wants to build a compost bin from old pallets",
        "0 turn(s) pending",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
    assert_eq!(
        stdout.matches("<memory-context>").count(),
        4,
        "core + three recalls, each fenced once"
    );
    let memory = home.join("memory");
    let check = scriptorium(&home, &["check", "--workspace", &memory.to_string_lossy()]);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
    let log = std::process::Command::new("git")
        .args(["-C", &memory.to_string_lossy(), "log", "--oneline"])
        .output()
        .expect("git log");
    let commits = String::from_utf8_lossy(&log.stdout);
    assert!(commits.contains("Pin Mara's standing preferences to the core"), "{commits}");
    // Nothing stays pending: the abandoned branch was written too.
    let status = scriptorium(&home, &["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status json");
    assert_eq!(json["pending_turns"], 0, "{json}");
    assert_eq!(json["writer"]["last_outcome"], "success", "{json}");
    // Again: idempotent (nothing new imported, nothing written, the core kept).
    let again = scriptorium(&home, &["demo", "--no-serve"]);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success());
    assert!(stdout.contains("(0 new)") && stdout.contains("wrote 0 batch(es)"), "{stdout}");
}

#[test]
fn a_disabled_memory_refuses_every_verb_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    std::fs::write(home.join("scriptorium.toml"), "[memory]\nbackend = \"none\"\n")
        .expect("config");
    for args in [&["init"][..], &["status"], &["write", "--all"], &["mcp"], &["search", "x"]] {
        let out = scriptorium(home, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("memory is disabled by memory.backend=none"), "{args:?}: {stderr}");
    }
    assert!(!home.join("memory").exists() && !home.join("sessions").exists());
    std::fs::write(home.join("scriptorium.toml"), "[memory.writer]\ntrigger_tokens = 5\n")
        .expect("config");
    let out = scriptorium(home, &["status"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("memory.writer.trigger_tokens"));
}
