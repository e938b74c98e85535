//! `scriptorium forget`: a conversation, a record, a block or a text gone from every place
//! Scriptorium keeps it — the session store, the archive (as tombstones), the topics, the
//! views, the search index, git history (rewritten and pruned) and a second home through a bare
//! remote — and staying gone when the transcript is imported again; a forget killed at any
//! point finishes on the next command.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{
    bare_remote, check_clean, files_holding, fsck_clean, git, git_objects_hold, ok, scriptorium,
};

/// The real Claude Code transcripts of the test data: the session forgotten, and one that stays.
const FORGOTTEN: &str = "codemie-code/claude/incremental-simple/turn-2.jsonl";
const FORGOTTEN_ID: &str = "3fb74381-1bf4-475e-8c6f-442d872b1bcf";
const KEPT: &str = "codemie-code/claude/session-624a4a58.jsonl";
/// Phrases only the forgotten session holds (its user turns).
const PHRASES: [&str; 2] = ["show tools", "tell me more about agent module"];

/// A home that imported and wrote both transcripts (journal writer), synced with `remote` when
/// given.
fn written_home(data: &Path, home: &Path, remote: Option<&Path>) {
    ok(&scriptorium(home, &["init"]));
    if let Some(remote) = remote {
        std::fs::write(
            home.join("scriptorium.toml"),
            format!("[sync]\nremote = {}\n", Value::from(remote.to_string_lossy())),
        )
        .expect("the configuration");
    }
    let (a, b) = (data.join(FORGOTTEN), data.join(KEPT));
    ok(&scriptorium(
        home,
        &["import", "claude-code", a.to_str().expect("utf-8"), b.to_str().expect("utf-8")],
    ));
    ok(&scriptorium(home, &["write", "--all", "--force"]));
}

#[test]
fn a_forgotten_session_is_gone_from_both_homes_their_history_and_the_remote_and_stays_gone() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let remote = bare_remote(dir.path());
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    written_home(&data, &a, Some(&remote));
    ok(&scriptorium(&a, &["sync", "--json"]));
    ok(&scriptorium(&b, &["init"]));
    std::fs::copy(a.join("scriptorium.toml"), b.join("scriptorium.toml")).expect("config");
    ok(&scriptorium(&b, &["sync", "--json"]));
    for phrase in PHRASES {
        assert!(!files_holding(&b.join("memory/topics"), phrase).is_empty(), "B has {phrase}");
    }

    // A dry run lists what would go and changes nothing.
    let plan = ok(&scriptorium(&a, &["forget", "--session", FORGOTTEN_ID, "--dry-run", "--json"]));
    assert_eq!(plan["forgotten"], false, "{plan}");
    assert!(plan["plan"]["records"].as_array().is_some_and(|r| !r.is_empty()), "{plan}");
    assert!(!files_holding(&a.join("memory/topics"), PHRASES[0]).is_empty());
    // Off a terminal, without --yes, nothing is forgotten, and it says why.
    let refused = scriptorium(&a, &["forget", "--session", FORGOTTEN_ID, "--json"]);
    let refused_doc: Value = serde_json::from_slice(&refused.stdout).expect("json");
    assert_eq!(refused_doc["error"]["code"], "CONFIRMATION_REQUIRED", "{refused_doc}");
    assert!(!files_holding(&a.join("memory/topics"), PHRASES[0]).is_empty());

    let done = ok(&scriptorium(&a, &["forget", "--session", FORGOTTEN_ID, "--yes", "--json"]));
    assert_eq!(done["forgotten"], true, "{done}");
    // B's first sync pushed a merge commit A has not seen: A does not overwrite it unseen, and
    // its next sync rewrites it, merges and replaces the remote's branch with a lease.
    assert_eq!(done["remote"], "pending", "{done}");
    ok(&scriptorium(&a, &["sync", "--json"]));
    for phrase in PHRASES {
        assert_eq!(files_holding(&a, phrase), Vec::<PathBuf>::new(), "{phrase} in home A");
        assert!(!git_objects_hold(&a.join("memory"), phrase), "{phrase} in A's git objects");
        assert!(!git_objects_hold(&remote, phrase), "{phrase} in the remote's git objects");
    }
    // The other session stays, written and recalled.
    let kept = scriptorium(&a, &["grep", "conversation"]);
    assert!(!String::from_utf8_lossy(&kept.stdout).is_empty(), "the other session's turns stay");
    // The commit says it is a forget, with counts and no content.
    let log = git(&a.join("memory"), &["log", "--format=%B"]);
    assert!(log.contains("Forget: sessions=1 nodes=14 records=9 blocks=3"), "{log}");

    // B applies the same forget on its next sync.
    ok(&scriptorium(&b, &["sync", "--json"]));
    for phrase in PHRASES {
        assert_eq!(files_holding(&b, phrase), Vec::<PathBuf>::new(), "{phrase} in home B");
        assert!(!git_objects_hold(&b.join("memory"), phrase), "{phrase} in B's git objects");
    }
    // Importing the transcript again, on either home, brings nothing back.
    for home in [&a, &b] {
        let path = data.join(FORGOTTEN);
        ok(&scriptorium(home, &["import", "claude-code", path.to_str().expect("utf-8")]));
        ok(&scriptorium(home, &["write", "--all", "--force"]));
        for phrase in PHRASES {
            assert_eq!(files_holding(home, phrase), Vec::<PathBuf>::new(), "{phrase} is back");
        }
        check_clean(home);
        fsck_clean(&home.join("memory"));
    }
    // And A and B keep syncing.
    ok(&scriptorium(&a, &["note", "Dana keeps the seeds in the shed."]));
    ok(&scriptorium(&a, &["sync", "--json"]));
    ok(&scriptorium(&b, &["sync", "--json"]));
    let found = scriptorium(&b, &["grep", "Dana keeps the seeds in the shed."]);
    assert!(String::from_utf8_lossy(&found.stdout).contains("notes.md"));
    assert!(!git_objects_hold(&remote, PHRASES[0]), "the remote stays clean");
}

#[test]
fn forgetting_a_text_removes_it_from_every_session_record_and_block_that_holds_it() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let home = dir.path().join("home");
    written_home(&data, &home, None);
    // A phrase in both sessions and in a note of the owner's.
    ok(&scriptorium(&home, &["note", "The codemie agent module is the one to read first."]));
    let phrase = "agent module";
    let before = files_holding(&home.join("memory/topics"), phrase);
    assert!(before.len() >= 2, "the phrase is in several topics: {before:?}");
    let done = ok(&scriptorium(&home, &["forget", "--matching", phrase, "--yes", "--json"]));
    let plan = &done["plan"];
    assert!(plan["blocks"].as_array().is_some_and(|b| b.len() >= 2), "{done}");
    assert!(plan.get("matching").is_none(), "the text is never echoed back: {done}");
    assert_eq!(files_holding(&home, phrase), Vec::<PathBuf>::new());
    assert!(!git_objects_hold(&home.join("memory"), phrase));
    let ledger = std::fs::read_to_string(home.join("memory/forgotten.jsonl")).expect("ledger");
    assert!(ledger.contains("matching_sha256"), "the ledger keeps a hash of the text: {ledger}");
    check_clean(&home);
    fsck_clean(&home.join("memory"));
}

#[test]
fn a_record_and_a_block_can_be_forgotten_one_by_one() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let home = dir.path().join("home");
    written_home(&data, &home, None);
    // The record of the first prompt, by its citation's link, as a topic writes it.
    let journal = files_holding(&home.join("memory/topics"), PHRASES[0]);
    let text = std::fs::read_to_string(&journal[0]).expect("the journal");
    let link = text
        .lines()
        .filter(|l| l.starts_with("[^"))
        .find_map(|l| {
            let rest = l.split("](").nth(1)?;
            rest.split(')').next().map(str::to_owned)
        })
        .expect("a citation");
    let done = ok(&scriptorium(&home, &["forget", "--record", &link, "--yes", "--json"]));
    assert_eq!(done["plan"]["records"].as_array().map(Vec::len), Some(1), "{done}");
    // The citation now resolves to a tombstone: the record says it was forgotten.
    let anchor = link.rsplit_once('#').map(|(_, a)| a).expect("an anchor");
    let archive = format!("sources/openprogram/_v2/{FORGOTTEN_ID}.md");
    let got = scriptorium(&home, &["get", &archive, "--block", anchor]);
    assert!(String::from_utf8_lossy(&got.stdout).contains("forgotten"), "a tombstone");
    // A block of the other session, by its ID.
    let kept = files_holding(&home.join("memory/topics"), "conversation");
    let text = std::fs::read_to_string(&kept[0]).expect("a topic");
    let block = text
        .lines()
        .find_map(|l| l.rsplit_once(" ^").map(|(_, id)| id.to_owned()))
        .expect("a block");
    let done = ok(&scriptorium(&home, &["forget", "--block", &block, "--yes", "--json"]));
    assert!(done["plan"]["blocks"].to_string().contains(&block), "{done}");
    let after = ok(&scriptorium(&home, &["grep", &format!("^{block}"), "--json"]));
    assert_eq!(after["matches"].as_array().map(Vec::len), Some(0), "{after}");
    check_clean(&home);
    // An unknown block or record changes nothing and says so.
    let missing = scriptorium(&home, &["forget", "--block", "deadbeef", "--yes", "--json"]);
    let missing: Value = serde_json::from_slice(&missing.stdout).expect("json");
    assert_eq!(missing["error"]["code"], "NOT_FOUND", "{missing}");
}

#[test]
fn the_python_implementation_s_workspace_still_checks_clean_after_a_forget() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let home = dir.path().join("home");
    let memory = home.join("memory");
    copy_tree(&data.join("openprogram-workspace/memory"), &memory);
    ok(&scriptorium(&home, &["init"]));
    let archive = std::fs::read_dir(memory.join("sources/openprogram/_v2"))
        .expect("archives")
        .flatten()
        .next()
        .expect("an archive")
        .path();
    let text = std::fs::read_to_string(&archive).expect("the archive");
    let source = text
        .lines()
        .find_map(|l| l.strip_prefix("<!-- source-id:").and_then(|r| r.strip_suffix(" -->")))
        .expect("a frame")
        .to_owned();
    ok(&scriptorium(&home, &["forget", "--record", &source, "--yes", "--json"]));
    // The strict scans (the Python implementation's rules, see docs/format.md) accept every
    // archive and topic, tombstones included.
    check_clean(&home);
    let after = std::fs::read_to_string(&archive).expect("the archive");
    assert!(after.contains(&format!("<!-- source-id:{source} -->\n<!-- record-lines:1 -->\n")));
    assert!(after.contains("] forgotten: [FORGOTTEN]\n"), "{after}");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("a directory").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A forget killed at random points (SIGKILL of its whole process group, so a `git gc` it ran
/// dies with it) is either not started or finished by the next command; the other session and
/// the history are never damaged.
#[test]
fn a_forget_killed_at_any_point_is_finished_by_the_next_command() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let template = dir.path().join("template");
    written_home(&data, &template, None);
    // How long an uninterrupted forget takes here, to spread the kills over it.
    let probe = dir.path().join("probe");
    copy_tree(&template, &probe);
    let start = std::time::Instant::now();
    ok(&scriptorium(&probe, &["forget", "--session", FORGOTTEN_ID, "--yes", "--json"]));
    let full = start.elapsed();
    let runs: u64 =
        std::env::var("SCRIPTORIUM_FORGET_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    let mut finished_by_next = 0;
    for run in 0..runs {
        let home = dir.path().join(format!("run-{run}"));
        copy_tree(&template, &home);
        let delay = full.mul_f64((run as f64 + 0.5) / runs as f64);
        let mut child = {
            use std::os::unix::process::CommandExt as _;
            Command::new(env!("CARGO_BIN_EXE_scriptorium"))
                .arg("--home")
                .arg(&home)
                .args(["forget", "--session", FORGOTTEN_ID, "--yes"])
                .env_remove("SCRIPTORIUM_HOME")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .expect("the forget starts")
        };
        std::thread::sleep(delay);
        // The child leads its own process group (so a `git gc` it started dies with it).
        if let Some(group) = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = child.kill();
        let _ = child.wait();
        let intent = home.join("memory/.scriptorium/forget.json").exists();
        // The next command finishes what the intent started (or finds nothing started).
        ok(&scriptorium(&home, &["status", "--json"]));
        assert!(!home.join("memory/.scriptorium/forget.json").exists(), "run {run}: done");
        let forgotten = files_holding(&home.join("memory/topics"), PHRASES[0]).is_empty();
        if intent {
            assert!(forgotten, "run {run}: an intent means the forget completes");
            finished_by_next += 1;
        }
        if forgotten {
            for phrase in PHRASES {
                assert_eq!(files_holding(&home, phrase), Vec::<PathBuf>::new(), "run {run}");
                assert!(!git_objects_hold(&home.join("memory"), phrase), "run {run}: {phrase}");
            }
        } else {
            // Not started: everything is as it was.
            let archive = home.join(format!("memory/sources/openprogram/_v2/{FORGOTTEN_ID}.md"));
            let text = std::fs::read_to_string(archive).expect("the archive");
            assert!(text.contains(PHRASES[0]) && !text.contains("[FORGOTTEN]"), "run {run}");
        }
        let kept = scriptorium(&home, &["grep", "conversation"]);
        assert!(!String::from_utf8_lossy(&kept.stdout).is_empty(), "run {run}: the other session");
        check_clean(&home);
        fsck_clean(&home.join("memory"));
        let status = git(&home.join("memory"), &["status", "--porcelain"]);
        assert!(status.trim().is_empty(), "run {run}: git in step: {status}");
    }
    eprintln!("{finished_by_next} of {runs} killed forgets were finished by the next command");
}

#[test]
fn sessions_remove_forgets_the_session_after_saying_what_goes() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let home = dir.path().join("home");
    written_home(&data, &home, None);
    let planned =
        ok(&scriptorium(&home, &["sessions", "remove", FORGOTTEN_ID, "--dry-run", "--json"]));
    assert_eq!(planned["forgotten"], false, "{planned}");
    assert_eq!(planned["plan"]["sessions"][0], FORGOTTEN_ID, "{planned}");
    assert!(!files_holding(&home, PHRASES[0]).is_empty(), "a dry run changes nothing");
    // Without a terminal and without --yes, nothing goes.
    let refused = scriptorium(&home, &["sessions", "remove", FORGOTTEN_ID, "--json"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stdout).contains("CONFIRMATION_REQUIRED"));
    let done = ok(&scriptorium(&home, &["sessions", "remove", FORGOTTEN_ID, "--yes", "--json"]));
    assert_eq!(done["forgotten"], true, "{done}");
    for phrase in PHRASES {
        assert_eq!(files_holding(&home, phrase), Vec::<PathBuf>::new(), "{phrase} stays");
        assert!(!git_objects_hold(&home.join("memory"), phrase));
    }
    check_clean(&home);
}
