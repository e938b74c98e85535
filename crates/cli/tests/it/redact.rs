//! `scriptorium redact`: a home written before a rule existed (here: a GitHub token the owner
//! had allowed, and a code name no pattern matched yet) loses every copy of what the rules now
//! match — the session store, the archive, the topics, the views, git history, a bare sync
//! remote and a second home syncing through it — while every citation still resolves, nothing
//! is redacted twice and a re-import brings nothing back.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{
    bare_remote, check_clean, files_holding, fsck_clean, git, git_objects_hold, ok, scriptorium,
};

/// The real Claude Code transcript the secrets are planted in, and the prompt they go after.
const TRANSCRIPT: &str = "codemie-code/claude/incremental-simple/turn-2.jsonl";
const PROMPT: &str = "show tools";

/// A GitHub personal access token (assembled here so that no scanner flags this file).
fn token() -> String {
    format!("ghp_{}", "R7kq2Vx9Lm4Tz8Wb3Nc6Pd1Hf5Js0Ya2Eu7G")
}

/// The code name of a project, which only the owner's pattern added later matches.
const CODENAME: &str = "NIGHTINGALE-4471";

/// The configuration before (the token allowed, no pattern) and after (the pattern, no
/// allowance), both with `remote` as the sync remote.
fn config(remote: &Path, after: bool) -> String {
    let privacy = if after {
        "[privacy]\npatterns = [{ id = \"codename\", regex = 'NIGHTINGALE-\\d+' }]\n".to_owned()
    } else {
        format!("[privacy]\nallow = ['^{}$']\n", token())
    };
    format!("{privacy}\n[sync]\nremote = {}\n", Value::from(remote.to_string_lossy()))
}

/// The transcript with the token and the code name planted in its prompt, in `dir`.
fn planted_transcript(data: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(data.join(TRANSCRIPT)).expect("the transcript");
    assert!(text.contains(PROMPT), "the prompt is in the transcript");
    let planted = text.replace(PROMPT, &format!("{PROMPT} (token {} for {CODENAME})", token()));
    let path = dir.join("planted.jsonl");
    std::fs::write(&path, planted).expect("the planted transcript");
    path
}

fn head(home: &Path) -> String {
    git(&home.join("memory"), &["rev-parse", "HEAD"])
}

/// Every place `text` is kept: files under `home`, objects of its memory repository.
fn kept_in(home: &Path, text: &str) -> (Vec<PathBuf>, bool) {
    (files_holding(home, text), git_objects_hold(&home.join("memory"), text))
}

#[test]
fn an_existing_home_is_redacted_everywhere_its_remote_and_clones_included_and_only_once() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let remote = bare_remote(dir.path());
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let transcript = planted_transcript(&data, dir.path());
    for home in [&a, &b] {
        ok(&scriptorium(home, &["init"]));
        std::fs::write(home.join("scriptorium.toml"), config(&remote, false)).expect("config");
    }
    // Home A imports and writes the session as a home did before the rules: all kept.
    let path = transcript.to_str().expect("utf-8");
    ok(&scriptorium(&a, &["import", "claude-code", path]));
    ok(&scriptorium(&a, &["write", "--all", "--force"]));
    ok(&scriptorium(&a, &["sync", "--json"]));
    ok(&scriptorium(&b, &["sync", "--json"]));
    for secret in [token(), CODENAME.to_owned()] {
        let (files, objects) = kept_in(&a, &secret);
        assert!(files.iter().any(|f| f.starts_with(a.join("sessions"))), "stored: {files:?}");
        assert!(files.iter().any(|f| f.starts_with(a.join("memory/topics"))), "{files:?}");
        assert!(objects && git_objects_hold(&remote, &secret), "in git, here and at the remote");
        assert!(!files_holding(&b.join("memory/topics"), &secret).is_empty(), "and in B");
    }

    // The rules change: the token is no longer allowed, the code name gets a pattern.
    for home in [&a, &b] {
        std::fs::write(home.join("scriptorium.toml"), config(&remote, true)).expect("config");
    }
    let before = head(&a);
    let dry = ok(&scriptorium(&a, &["redact", "--dry-run", "--json"]));
    let plan = &dry["plan"];
    assert_eq!(dry["redacted"], false, "{dry}");
    assert!(plan["messages"].as_u64().is_some_and(|n| n >= 1), "{dry}");
    assert!(plan["records"].as_u64().is_some_and(|n| n >= 1), "{dry}");
    assert!(plan["topics"].as_array().is_some_and(|t| !t.is_empty()), "{dry}");
    assert!(plan["commits"].as_u64().is_some_and(|n| n >= 1), "{dry}");
    assert!(plan["by_rule"]["codename"].as_u64().is_some_and(|n| n >= 3), "{dry}");
    assert!(plan["by_rule"]["github-pat"].as_u64().is_some_and(|n| n >= 3), "{dry}");
    assert!(!dry.to_string().contains(CODENAME), "the plan names no value");
    assert_eq!(head(&a), before, "a dry run changes nothing");
    assert!(!kept_in(&a, CODENAME).0.is_empty());
    // Without a terminal to ask on, nothing happens without --yes.
    let refused = scriptorium(&a, &["redact", "--json"]);
    assert_eq!(refused.status.code(), Some(1), "{}", String::from_utf8_lossy(&refused.stdout));
    assert!(String::from_utf8_lossy(&refused.stdout).contains("CONFIRMATION_REQUIRED"));
    assert_eq!(head(&a), before);

    let done = ok(&scriptorium(&a, &["redact", "--yes", "--json"]));
    assert_eq!(done["redacted"], true, "{done}");
    assert_eq!(done["remote"], "replaced", "{done}");
    for secret in [token(), CODENAME.to_owned()] {
        assert_eq!(kept_in(&a, &secret), (Vec::new(), false), "{secret} is gone from A");
        assert!(!git_objects_hold(&remote, &secret), "{secret} is gone from the remote");
    }
    let topics = files_holding(&a.join("memory/topics"), "[REDACTED:codename]");
    assert!(!topics.is_empty(), "the topic says what was redacted");
    check_clean(&a);
    fsck_clean(&a.join("memory"));
    // The citations still resolve: the record is where it was, redacted.
    let found = scriptorium(&a, &["grep", "[REDACTED:github-pat]"]);
    assert!(String::from_utf8_lossy(&found.stdout).contains("sources/"), "the archive is");

    // Nothing to redact twice; a re-import brings nothing back.
    let again = head(&a);
    let second = ok(&scriptorium(&a, &["redact", "--yes", "--json"]));
    assert_eq!(second["redacted"], false, "{second}");
    assert_eq!(head(&a), again, "no commit");
    let reimport = ok(&scriptorium(&a, &["import", "claude-code", path, "--json"]));
    assert_eq!(reimport["new_nodes"], 0, "nothing new: {reimport}");
    assert_eq!(kept_in(&a, CODENAME), (Vec::new(), false));

    // B syncs: it takes the redact from the ledger, its own copies included.
    ok(&scriptorium(&b, &["sync", "--json"]));
    for secret in [token(), CODENAME.to_owned()] {
        assert_eq!(kept_in(&b, &secret), (Vec::new(), false), "{secret} is gone from B");
    }
    check_clean(&b);
    fsck_clean(&b.join("memory"));
    // And both keep syncing.
    ok(&scriptorium(&b, &["note", "Dana keeps the seeds in the shed."]));
    ok(&scriptorium(&b, &["sync", "--json"]));
    ok(&scriptorium(&a, &["sync", "--json"]));
    let found = scriptorium(&a, &["grep", "Dana keeps the seeds in the shed."]);
    assert!(String::from_utf8_lossy(&found.stdout).contains("notes.md"));
    assert!(!git_objects_hold(&remote, CODENAME), "the remote stays clean");
}

#[test]
fn a_home_with_nothing_to_redact_says_so_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let home = dir.path().join("home");
    ok(&scriptorium(&home, &["init"]));
    ok(&scriptorium(&home, &["note", "Dana waters the garden at dawn."]));
    let before = head(&home);
    let dry = ok(&scriptorium(&home, &["redact", "--dry-run", "--json"]));
    assert_eq!(dry["redacted"], false, "{dry}");
    let out = scriptorium(&home, &["redact", "--yes"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to redact"));
    assert_eq!(head(&home), before);
    assert!(!home.join("memory/forgotten.jsonl").exists(), "no ledger entry");
}
