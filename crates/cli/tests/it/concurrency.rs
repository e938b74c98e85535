//! What other processes do meanwhile never costs a write its work, a note its install or a turn
//! its recall: a model write carried onto a revision another install moved, parallel notes
//! (processes, and pipelined MCP calls), a search while another process holds the index's
//! writer, and status → search → update after an outside edit.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{append_session, check_clean, home_with_note, scriptorium};

/// A `command` writer: a POSIX shell script run by `sh -c` in the stage, its task on stdin,
/// with `$1` the `scriptorium` binary and `$2` the home. `$REF` holds the task's first turn's
/// source handle.
fn script_writer(home: &Path, session: &str, script: &str) -> Command {
    // An organize task (the first write also starts the daily one) is answered with no edit.
    let prelude = "task=$(cat); case \"$task\" in *'Task: write memory'*) ;; *) exit 0 ;; esac; \
                   REF=$(printf '%s' \"$task\" | grep -o '\"ref\":\"[^\"]*\"' | head -n 1 | \
                   cut -d '\"' -f 4); ";
    let mut command = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    command
        .arg("--home")
        .arg(home)
        .args(["write", "--session", session, "--force", "--model", "command"])
        .args(["--command", "sh", "--command-arg", "-c", "--command-arg"])
        .arg(format!("{prelude}{script}"))
        .args(["--command-arg", "sh", "--command-arg", env!("CARGO_BIN_EXE_scriptorium")])
        .arg("--command-arg")
        .arg(home)
        .args(["--timeout", "120", "--json"])
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME");
    command
}

/// Writes `topics/people/<name>.md` with one paragraph citing `$REF` (script text).
fn write_topic(name: &str, text: &str) -> String {
    format!(
        "mkdir -p topics/people && printf '# {name}\\n\\n{text}[^e1]\\n\\n[^e1]: Time: \
         `2024-03-15`; Sources: [garden](%s)\\n' \"$REF\" > topics/people/{name}.md; "
    )
}

/// The one batch a successful `write --json` reported.
fn batch_of(out: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let batches = report["sessions"][0]["batches"].as_array().cloned().unwrap_or_default();
    assert_eq!(batches.len(), 1, "one batch: {report:#}");
    batches[0].clone()
}

fn grep(home: &Path, text: &str) -> String {
    String::from_utf8_lossy(&scriptorium(home, &["grep", text]).stdout).into_owned()
}

#[test]
fn a_note_installed_while_the_model_writes_costs_no_repair_turn() {
    let home = home_with_note();
    append_session(home.path(), &["I water the garden at dawn.", "Noted."]);
    // The model notes something (another transaction: a source archived, a block installed)
    // while it edits the stage, as a person adding a note on the page would.
    let script = format!(
        "\"$1\" --home \"$2\" note 'Dana keeps the seeds in the shed.' > /dev/null || exit 9; {}",
        write_topic("dana", "Dana waters the garden at dawn.")
    );
    let batch = batch_of(&script_writer(home.path(), "s", &script).output().expect("runs"));
    assert_eq!(batch["repaired"], false, "no repair turn: {batch}");
    assert_eq!(batch["rebases"], 1, "carried onto the note's revision once: {batch}");
    assert!(grep(home.path(), "Dana waters the garden at dawn.").contains("people/dana.md"));
    assert!(grep(home.path(), "Dana keeps the seeds in the shed.").contains("notes.md"));
    check_clean(home.path());
}

#[test]
fn two_sessions_written_by_a_model_at_once_both_install() {
    let home = home_with_note();
    append_session(home.path(), &["I water the garden at dawn.", "Noted."]);
    crate::support::append_named_session(home.path(), "t", &["The tomatoes need stakes.", "Ok."]);
    let ready = home.path().join("a-ready");
    // Session s: edits its stage, says so, and finishes only once another install moved the
    // memory (session t's), so its install always comes second.
    let revision =
        "\"$1\" --home \"$2\" status --json | grep -o '\"revision\": *\"[^\"]*\"' | head -n 1";
    let script = format!(
        "{}start=$({revision}); touch '{}'; while [ \"$({revision})\" = \"$start\" ]; do \
         sleep 0.05; done",
        write_topic("dana", "Dana waters the garden at dawn."),
        ready.display()
    );
    let first = script_writer(home.path(), "s", &script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the first write starts");
    let mut first = Guarded(Some(first));
    while !ready.exists() {
        assert!(first.child().try_wait().expect("waits").is_none(), "the first write ended early");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = script_writer(
        home.path(),
        "t",
        &write_topic("tomatoes", "The tomatoes need stakes this summer."),
    )
    .output()
    .expect("the second write runs");
    let second = batch_of(&second);
    assert_eq!(second["repaired"], false, "{second}");
    let first = batch_of(&first.take().wait_with_output().expect("the first write ends"));
    assert_eq!(first["repaired"], false, "{first}");
    // It began before the other write's archive append and install, so it was carried over at
    // least once; how many times depends on how the two interleave.
    assert!(first["rebases"].as_u64().is_some_and(|n| n >= 1), "{first}");
    assert!(grep(home.path(), "Dana waters the garden at dawn.").contains("people/dana.md"));
    assert!(grep(home.path(), "The tomatoes need stakes").contains("people/tomatoes.md"));
    check_clean(home.path());
}

/// A child killed when dropped (a failing test leaves no write running).
struct Guarded(Option<std::process::Child>);

impl Guarded {
    fn take(&mut self) -> std::process::Child {
        self.0.take().expect("the child is there")
    }

    fn child(&mut self) -> &mut std::process::Child {
        self.0.as_mut().expect("the child is there")
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn ten_notes_at_once_all_install() {
    let home = home_with_note();
    let notes: Vec<String> = (0..10).map(|i| format!("Dana planted row {i} of beans.")).collect();
    let children: Vec<_> = notes
        .iter()
        .map(|text| {
            Command::new(env!("CARGO_BIN_EXE_scriptorium"))
                .arg("--home")
                .arg(home.path())
                .args(["note", text, "--json"])
                .env_remove("SCRIPTORIUM_HOME")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a note starts")
        })
        .map(|c| Guarded(Some(c)))
        .collect();
    for mut child in children {
        let out = child.take().wait_with_output().expect("the note ends");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let notes_md = std::fs::read_to_string(home.path().join("memory/topics/notes.md"))
        .expect("the notes topic");
    for text in &notes {
        assert_eq!(notes_md.matches(text.as_str()).count(), 1, "{text}: {notes_md}");
    }
    check_clean(home.path());
}

#[test]
fn pipelined_mcp_notes_on_one_server_all_install() {
    let home = home_with_note();
    let mut server = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home.path())
        .arg("mcp")
        .env_remove("SCRIPTORIUM_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the MCP server starts");
    let mut stdin = server.stdin.take().expect("stdin");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let mut guard = Guarded(Some(server));
    let send = |stdin: &mut std::process::ChildStdin, message: Value| {
        writeln!(stdin, "{message}").expect("the server reads");
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
    );
    let first: Value =
        serde_json::from_str(&lines.next().expect("an answer").expect("a line")).expect("JSON-RPC");
    assert_eq!(first["id"], 1, "{first}");
    send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Eight calls written at once, before any answer is read.
    for i in 0..8 {
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {
                "name": "memory_note", "arguments": {"text": format!("Dana sowed bed {i}.")}}}),
        );
    }
    let mut answered = 0;
    while answered < 8 {
        let line = lines.next().expect("an answer").expect("a line");
        let message: Value = serde_json::from_str(&line).expect("JSON-RPC");
        if message.get("id").is_none() {
            continue;
        }
        let result = &message["result"];
        let doc: Value = result["structuredContent"].clone();
        assert_eq!(doc["ok"], true, "every note installs: {message}");
        answered += 1;
    }
    drop(stdin);
    let _ = guard.take().wait();
    let notes_md = std::fs::read_to_string(home.path().join("memory/topics/notes.md"))
        .expect("the notes topic");
    for i in 0..8 {
        assert_eq!(notes_md.matches(&format!("Dana sowed bed {i}.")).count(), 1, "{notes_md}");
    }
}

#[test]
fn a_search_while_another_process_holds_the_index_writer_answers_from_the_last_commit() {
    let home = home_with_note();
    let search = |query: &str| {
        let out = scriptorium(home.path(), &["search", query, "--json"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
        text
    };
    assert!(search("vegetable garden").contains("Dana is planning a vegetable garden."));
    // Another process is updating the index (it holds tantivy's writer lock) while a note
    // installs: the note's own index update cannot run, the index stays one install behind.
    let lock = home.path().join("memory/.scriptorium/index/.tantivy-writer.lock");
    let held = std::fs::OpenOptions::new().create(true).append(true).open(&lock).expect("lock");
    held.lock().expect("the writer lock");
    let out = scriptorium(home.path(), &["note", "Dana grows pumpkins by the fence."]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Recall still answers, from the last commit, instead of INDEX_BUSY.
    assert!(search("vegetable garden").contains("Dana is planning a vegetable garden."));
    drop(held);
    // Once the writer is free the next search catches up.
    assert!(search("pumpkins fence").contains("Dana grows pumpkins by the fence."));
}

#[test]
fn status_then_search_then_update_never_conflicts_after_an_outside_edit() {
    let home = home_with_note();
    let garden = home.path().join("memory/topics/garden.md");
    let text = std::fs::read_to_string(&garden).expect("the topic");
    // An editor (or the Python implementation) changes a topic outside any transaction.
    std::fs::write(&garden, text.replace("# Garden", "# Garden plans")).expect("an outside edit");
    let status: Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("status");
    let revision = status["revision"].as_str().expect("a revision").to_owned();
    assert_eq!(status["outside_edits"]["adopted"], true, "{status}");
    // A search in between takes in nothing more: the revision status named still stands.
    let out = scriptorium(home.path(), &["search", "vegetable garden", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let searched: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(searched.get("outside_edits").is_none(), "{searched}");
    let now = std::fs::read_to_string(&garden).expect("the topic");
    let changes = home.path().join("changes.json");
    std::fs::write(
        &changes,
        json!([{"path": "topics/garden.md", "action": "write",
            "content": now.replace("# Garden plans", "# Garden plans for spring")}])
        .to_string(),
    )
    .expect("the change");
    let out = scriptorium(
        home.path(),
        &["update", "--base", &revision, "--changes", changes.to_str().expect("utf-8"), "--json"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
