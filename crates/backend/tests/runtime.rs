//! The idle-session watcher against the real embedded session store: the skip rules, the
//! three-way result, the corrupt-state policy, crash resumption, paging, the watcher lock and
//! the async loop's shutdown.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scriptorium_backend::runtime::{
    Outcome, SessionWriter, Watcher, WatcherConfig, WatcherStateError, WriterStatus, run_watcher,
};
use scriptorium_session_dag::{
    EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Timestamp,
};
use scriptorium_testkit::file_names;
use scriptorium_writer::{FailureCode, WriteFailure};
use serde_json::{Value, json};
use tokio::sync::watch;

/// "Now" of the scans: 2023-11-14T22:13:20Z.
const NOW: i64 = 1_700_000_000_000;
const MINUTE: i64 = 60_000;

/// A memory root and a session store side by side in one temporary directory.
struct Home {
    dir: tempfile::TempDir,
    store: EmbeddedStore,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = EmbeddedStore::open(dir.path().join("sessions")).expect("open store");
        Home { dir, store }
    }

    fn root(&self) -> std::path::PathBuf {
        self.dir.path().join("memory")
    }

    fn watcher(&self) -> Watcher {
        Watcher::open(self.root()).expect("open watcher")
    }

    /// Appends one node to `session` created at `at` (ms), which becomes its `updated_at`.
    fn add(&self, session: &str, at: i64, role: Role, kind: NodeKind, content: &str) {
        let sid = SessionId(session.into());
        let parent = self.store.session(&sid).expect("session").and_then(|s| s.head);
        let n = self.store.branch(&sid, None).map(|b| b.len()).unwrap_or(0);
        let node = Node {
            id: NodeId(format!("{session}-n{n}")),
            parent,
            role,
            kind,
            speaker: None,
            content: content.into(),
            created_at: Timestamp(at),
            metadata: BTreeMap::new(),
            rewound: false,
        };
        self.store.append(&sid, node).expect("append");
    }

    fn turn(&self, session: &str, at: i64) {
        self.add(session, at, Role::User, NodeKind::Message, "remember the budget");
    }

    fn state(&self) -> Value {
        let text = std::fs::read_to_string(self.root().join(".scriptorium/session-end.json"))
            .expect("state file");
        serde_json::from_str(&text).expect("state json")
    }
}

/// A writer that answers from a script per session (default `Ok`) and logs every call.
#[derive(Default)]
struct Scripted {
    calls: Mutex<Vec<String>>,
    script: Mutex<HashMap<String, VecDeque<Result<(), WriteFailure>>>>,
    panic_on: Mutex<Option<String>>,
}

impl Scripted {
    fn then(&self, session: &str, outcome: Result<(), WriteFailure>) {
        let mut script = self.script.lock().expect("script");
        script.entry(session.into()).or_default().push_back(outcome);
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().expect("calls").clone()
    }
}

impl SessionWriter for Scripted {
    fn write_forced(&self, session: &SessionId) -> Result<(), WriteFailure> {
        self.calls.lock().expect("calls").push(session.0.clone());
        if self.panic_on.lock().expect("panic_on").as_deref() == Some(session.as_str()) {
            panic!("simulated crash while writing {session}");
        }
        let mut script = self.script.lock().expect("script");
        script.get_mut(session.as_str()).and_then(VecDeque::pop_front).unwrap_or(Ok(()))
    }
}

fn failure(code: FailureCode, retryable: bool) -> WriteFailure {
    WriteFailure { reason: format!("{code} happened"), retryable, code }
}

#[test]
fn idle_rules_write_only_idle_unsettled_sessions() {
    let home = Home::new();
    home.turn("old", NOW - 60 * MINUTE);
    home.turn("edge", NOW - 30 * MINUTE); // exactly idle: due
    home.turn("recent", NOW - 29 * MINUTE);
    home.turn("zero", 0);
    home.turn("settled", NOW - 120 * MINUTE);
    home.turn("changed", NOW - 90 * MINUTE);
    let state_dir = home.root().join(".scriptorium");
    std::fs::create_dir_all(&state_dir).unwrap();
    let seeded = json!({"settled": NOW - 120 * MINUTE, "changed": NOW - 100 * MINUTE,
                        "gone": 42});
    std::fs::write(state_dir.join("session-end.json"), seeded.to_string()).unwrap();

    let watcher = home.watcher();
    let writer = Scripted::default();
    let report = watcher.scan(&home.store, &writer, Timestamp(NOW)).unwrap();
    let mut calls = writer.calls();
    calls.sort();
    assert_eq!(calls, ["changed", "edge", "old"]);
    assert_eq!((report.written, report.retryable, report.permanent, report.skipped), (3, 0, 0, 3));
    assert_eq!(
        home.state(),
        json!({"settled": NOW - 120 * MINUTE, "changed": NOW - 90 * MINUTE, "gone": 42,
               "old": NOW - 60 * MINUTE, "edge": NOW - 30 * MINUTE})
    );
    assert_eq!(WriterStatus::load(&home.root()).last_outcome, Some(Outcome::Success));

    // Nothing changed: a second pass writes nothing.
    let again = watcher.scan(&home.store, &writer, Timestamp(NOW)).unwrap();
    assert_eq!(writer.calls().len(), 3);
    assert_eq!(again.skipped, 6);

    // A new turn in a settled session makes it due again once idle.
    home.turn("old", NOW + MINUTE);
    watcher.scan(&home.store, &writer, Timestamp(NOW + 31 * MINUTE)).unwrap();
    assert_eq!(writer.calls().len(), 5, "old and recent are due now");
    assert_eq!(home.state()["old"], json!(NOW + MINUTE));
}

#[test]
fn sessions_without_records_are_recorded_without_a_write() {
    let home = Home::new();
    home.add("tools", NOW - 60 * MINUTE, Role::Tool, NodeKind::ToolResult, "42");
    home.add("runtime", NOW - 60 * MINUTE, Role::User, NodeKind::Runtime, "sub-agent report");
    home.add("blank", NOW - 60 * MINUTE, Role::Assistant, NodeKind::Message, "   ");
    let watcher = home.watcher();
    let writer = Scripted::default();
    let report = watcher.scan(&home.store, &writer, Timestamp(NOW)).unwrap();
    assert!(writer.calls().is_empty());
    assert_eq!(report.skipped, 3);
    let at = NOW - 60 * MINUTE;
    assert_eq!(home.state(), json!({"tools": at, "runtime": at, "blank": at}));
    assert_eq!(WriterStatus::load(&home.root()), WriterStatus::default(), "no write, no status");
}

#[test]
fn retryable_failures_are_retried_and_permanent_ones_recorded() {
    let home = Home::new();
    home.turn("busy", NOW - 50 * MINUTE);
    home.turn("rejected", NOW - 60 * MINUTE);
    let writer = Scripted::default();
    writer.then("busy", Err(failure(FailureCode::ConcurrentUpdate, true)));
    writer.then("rejected", Err(failure(FailureCode::CommitRejected, false)));
    let watcher = home.watcher();

    let report = watcher.scan(&home.store, &writer, Timestamp(NOW)).unwrap();
    assert_eq!((report.written, report.retryable, report.permanent), (0, 1, 1));
    assert_eq!(home.state(), json!({"rejected": NOW - 60 * MINUTE}));
    let status = WriterStatus::load(&home.root());
    assert_eq!(status.last_outcome, Some(Outcome::Failure));
    // Sessions are visited newest first: "rejected" (older) failed last.
    let last = status.last_failure.unwrap();
    assert_eq!((last.reason_code, last.retryable), (FailureCode::CommitRejected, false));

    let report = watcher.scan(&home.store, &writer, Timestamp(NOW)).unwrap();
    assert_eq!(writer.calls(), ["busy", "rejected", "busy"]);
    assert_eq!((report.written, report.skipped), (1, 1));
    assert_eq!(home.state(), json!({"rejected": NOW - 60 * MINUTE, "busy": NOW - 50 * MINUTE}));
    let status = WriterStatus::load(&home.root());
    assert_eq!(status.last_outcome, Some(Outcome::Success));
    assert!(status.last_success_at.is_some());
}

#[test]
fn a_corrupt_state_file_is_an_error_and_preserved_byte_for_byte() {
    for bytes in [&b"{\"s1\": 5,"[..], b"[1, 2, 3]", b"\"text\"", b"\xff\xfe"] {
        let home = Home::new();
        home.turn("s1", NOW - 60 * MINUTE);
        let path = home.root().join(".scriptorium/session-end.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        let watcher = home.watcher();
        let writer = Scripted::default();
        let err = watcher.scan(&home.store, &writer, Timestamp(NOW)).unwrap_err();
        assert!(matches!(err, WatcherStateError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("session-end.json"), "{err}");
        assert!(writer.calls().is_empty());
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
}

#[test]
fn a_crash_on_session_two_resumes_with_only_session_two() {
    let home = Home::new();
    home.turn("s1", NOW - 40 * MINUTE); // newest: visited first
    home.turn("s2", NOW - 50 * MINUTE);
    let crashing = Scripted::default();
    *crashing.panic_on.lock().unwrap() = Some("s2".into());
    let watcher = home.watcher();
    let crash = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        watcher.scan(&home.store, &crashing, Timestamp(NOW))
    }));
    assert!(crash.is_err(), "the writer crashed");
    assert_eq!(crashing.calls(), ["s1", "s2"]);
    drop(watcher);
    assert_eq!(home.state(), json!({"s1": NOW - 40 * MINUTE}));

    let resumed = Scripted::default();
    let report = home.watcher().scan(&home.store, &resumed, Timestamp(NOW)).unwrap();
    assert_eq!(resumed.calls(), ["s2"]);
    assert_eq!((report.written, report.skipped), (1, 1));
    assert_eq!(home.state(), json!({"s1": NOW - 40 * MINUTE, "s2": NOW - 50 * MINUTE}));
}

#[test]
fn all_507_sessions_are_considered_across_pages() {
    let home = Home::new();
    for i in 0..507 {
        home.turn(&format!("s{i:03}"), NOW - 60 * MINUTE - i);
    }
    let watcher = home.watcher();
    assert_eq!(watcher.config().page, 500);
    let writer = Scripted::default();
    let report = watcher.scan(&home.store, &writer, Timestamp(NOW)).unwrap();
    let mut calls = writer.calls();
    calls.sort();
    calls.dedup();
    assert_eq!(calls.len(), 507);
    assert_eq!(writer.calls().len(), 507, "each session written once");
    assert_eq!(report.written, 507);
    assert_eq!(home.state().as_object().unwrap().len(), 507);
    let again = watcher.scan(&home.store, &writer, Timestamp(NOW)).unwrap();
    assert_eq!(again.skipped, 507);
    assert_eq!(writer.calls().len(), 507);
}

#[test]
fn a_second_watcher_is_refused_while_the_first_lives() {
    let home = Home::new();
    let first = home.watcher();
    let err = Watcher::open(home.root()).unwrap_err();
    assert!(matches!(err, WatcherStateError::Busy { .. }), "{err}");
    let memory = home.root();
    assert_eq!(
        err.to_string(),
        format!(
            "another `scriptorium watch` is already running for the memory in {}",
            memory.display()
        )
    );
    drop(first);
    let second = Watcher::open(home.root()).unwrap();
    home.turn("s1", NOW - 60 * MINUTE);
    let writer = Scripted::default();
    assert_eq!(second.scan(&home.store, &writer, Timestamp(NOW)).unwrap().written, 1);
}

#[test]
fn saves_are_private_and_leave_no_temporaries_and_open_clears_a_crashed_save() {
    let home = Home::new();
    let state_dir = home.root().join(".scriptorium");
    std::fs::create_dir_all(&state_dir).unwrap();
    std::fs::write(state_dir.join("session-end.json"), b"{\"kept\": 7}\n").unwrap();
    std::fs::write(state_dir.join(".session-end.json.tmp-4242-0"), b"{\"torn").unwrap();
    let watcher = home.watcher();
    assert_eq!(file_names(&state_dir), ["session-end.json", "session-end.lock"]);
    for i in 0..5 {
        home.turn(&format!("s{i}"), NOW - 60 * MINUTE);
    }
    let writer = Scripted::default();
    watcher.scan(&home.store, &writer, Timestamp(NOW)).unwrap();
    assert_eq!(
        file_names(&state_dir),
        ["session-end.json", "session-end.lock", "writer-status.json", "writer-status.json.lock"]
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(watcher.state_path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(home.state()["kept"], json!(7));
    assert_eq!(home.state().as_object().unwrap().len(), 6);
}

/// A store shared with the async loop.
fn shared(home: &Home) -> Arc<dyn SessionStore + Send + Sync> {
    Arc::new(EmbeddedStore::open(home.dir.path().join("sessions")).expect("reopen store"))
}

/// Counts calls; always succeeds.
#[derive(Default)]
struct Counting(AtomicUsize);

impl SessionWriter for Counting {
    fn write_forced(&self, _: &SessionId) -> Result<(), WriteFailure> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn config(poll: Duration) -> WatcherConfig {
    WatcherConfig { poll, ..WatcherConfig::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_watcher_scans_after_each_poll_and_stops_within_a_second() {
    let home = Home::new();
    #[expect(clippy::disallowed_methods, reason = "a test sets times relative to the real now")]
    let now = time::OffsetDateTime::now_utc().unix_timestamp() * 1000;
    home.turn("s1", now - 60 * MINUTE);
    let watcher = home.watcher().with_config(config(Duration::from_millis(200)));
    let writer = Arc::new(Counting::default());
    let (tx, rx) = watch::channel(false);
    let handle = tokio::spawn(run_watcher(watcher, shared(&home), writer.clone(), rx));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(writer.0.load(Ordering::SeqCst), 0, "the first scan waits one poll");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(writer.0.load(Ordering::SeqCst), 1, "written once, then settled");
    assert_eq!(home.state(), json!({"s1": now - 60 * MINUTE}));
    tx.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(1), handle).await.unwrap().unwrap();
    assert!(Watcher::open(home.root()).is_ok(), "the lock is released on return");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_watcher_stops_within_a_second_while_sleeping_and_when_the_sender_goes() {
    let home = Home::new();
    let writer = Arc::new(Counting::default());
    let watcher = home.watcher().with_config(config(Duration::from_secs(3600)));
    let (tx, rx) = watch::channel(false);
    let handle = tokio::spawn(run_watcher(watcher, shared(&home), writer.clone(), rx));
    tokio::time::sleep(Duration::from_millis(50)).await;
    tx.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(1), handle).await.unwrap().unwrap();

    let watcher = home.watcher().with_config(config(Duration::from_secs(3600)));
    let (tx, rx) = watch::channel(false);
    let handle = tokio::spawn(run_watcher(watcher, shared(&home), writer.clone(), rx));
    drop(tx);
    tokio::time::timeout(Duration::from_secs(1), handle).await.unwrap().unwrap();
    assert_eq!(writer.0.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_watcher_keeps_running_over_a_corrupt_state_file_and_leaves_it_alone() {
    let home = Home::new();
    #[expect(clippy::disallowed_methods, reason = "a test sets times relative to the real now")]
    let now = time::OffsetDateTime::now_utc().unix_timestamp() * 1000;
    home.turn("s1", now - 60 * MINUTE);
    let path = home.root().join(".scriptorium/session-end.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"{broken").unwrap();
    let watcher = home.watcher().with_config(config(Duration::from_millis(50)));
    let writer = Arc::new(Counting::default());
    let (tx, rx) = watch::channel(false);
    let handle = tokio::spawn(run_watcher(watcher, shared(&home), writer.clone(), rx));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!handle.is_finished(), "scan errors are swallowed");
    assert_eq!(writer.0.load(Ordering::SeqCst), 0);
    assert_eq!(std::fs::read(&path).unwrap(), b"{broken");
    tx.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(1), handle).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_a_scan_stops_at_the_next_session_boundary() {
    let home = Home::new();
    #[expect(clippy::disallowed_methods, reason = "a test sets times relative to the real now")]
    let now = time::OffsetDateTime::now_utc().unix_timestamp() * 1000;
    for i in 0..20 {
        home.turn(&format!("s{i:02}"), now - 60 * MINUTE - i);
    }
    /// Takes 100 ms per session.
    struct Slow(AtomicUsize);
    impl SessionWriter for Slow {
        fn write_forced(&self, _: &SessionId) -> Result<(), WriteFailure> {
            std::thread::sleep(Duration::from_millis(100));
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }
    let writer = Arc::new(Slow(AtomicUsize::new(0)));
    let watcher = home.watcher().with_config(config(Duration::from_millis(10)));
    let (tx, rx) = watch::channel(false);
    let handle = tokio::spawn(run_watcher(watcher, shared(&home), writer.clone(), rx));
    tokio::time::sleep(Duration::from_millis(350)).await;
    tx.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(1), handle).await.unwrap().unwrap();
    let written = writer.0.load(Ordering::SeqCst);
    assert!((1..20).contains(&written), "stopped mid-pass after {written}");
    assert_eq!(home.state().as_object().unwrap().len(), written, "every outcome saved");
}
