//! `scriptorium watch` as a process: an idle session is written by the watcher, a second watch
//! on the same home refuses to start, and SIGTERM stops it cleanly (exit 0).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::scriptorium;

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn import_one_session(home: &Path) {
    let file = home.join("talk.jsonl");
    std::fs::write(
        &file,
        "{\"id\":\"u1\",\"parent\":null,\"role\":\"user\",\"session\":\"talk\",\
         \"created_at\":\"2026-01-02T10:00:00Z\",\"content\":\"My bike is a green Brompton.\"}\n\
         {\"id\":\"a1\",\"parent\":\"u1\",\"role\":\"assistant\",\
         \"created_at\":\"2026-01-02T10:00:05Z\",\"content\":\"A fine folding bike.\"}\n",
    )
    .expect("transcript");
    let out = scriptorium(home, &["import", "jsonl", &file.to_string_lossy()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn watch_writes_idle_sessions_refuses_a_second_watch_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    assert!(scriptorium(home, &["init"]).status.success());
    import_one_session(home);
    let mut watch = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .args(["--home", &home.to_string_lossy(), "watch", "--poll", "1", "--idle", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn watch");
    let journal = home.join("memory/topics/journal/2026/01-02.md");
    wait_for("the idle session to be written", Duration::from_secs(30), || journal.is_file());
    let text = std::fs::read_to_string(&journal).expect("journal");
    assert!(text.contains("My bike is a green Brompton."), "{text}");
    // A second watcher on the same home refuses to start.
    let second = scriptorium(home, &["watch", "--poll", "1"]);
    assert_eq!(second.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("another `scriptorium watch` is already running"), "{stderr}");
    assert!(!stderr.contains("session-end"), "no internal words: {stderr}");
    // SIGTERM: a clean stop.
    let killed =
        Command::new("kill").args(["-TERM", &watch.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = watch.try_wait().expect("wait") {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "watch did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = watch.wait_with_output().expect("output");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(status.success(), "{log}");
    assert!(log.contains("watch stopped"), "{log}");
    // stderr is a pipe here, not a terminal: the log holds no colour codes.
    assert!(!log.contains('\u{1b}'), "ANSI escapes in a redirected log: {log:?}");
    let processed =
        std::fs::read_to_string(home.join("memory/.scriptorium/session-end.json")).expect("state");
    assert!(processed.contains("\"talk\""), "{processed}");
}
