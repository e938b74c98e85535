//! The whole session lifecycle through the nine methods of `MemoryBackend`: initialize →
//! system_prompt → per-turn search and write(force = false) over 30 turns → extract_before_discard
//! at a simulated compaction → shutdown (the forced write) → reorganize. A counting wrapper proves
//! every method was called; the assertions check topics, markers and that recall is fenced exactly
//! once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;

use async_trait::async_trait;
use scriptorium_backend::{Config, LocalBackend, MemoryBackend, WriteOutcome};
use scriptorium_markers::{WorkspaceId, pending};
use scriptorium_session_dag::{Node, NodeId, NodeKind, Role, SessionId, Speaker, Timestamp};
use scriptorium_txn::{UpdateContext, UpdateRequest};
use scriptorium_writer::OrganizeReport;
use scriptorium_writer::model::journal::Journal;
use serde_json::json;

/// Delegates to the inner backend and counts the calls per method.
struct Counting<B> {
    inner: B,
    calls: Mutex<BTreeMap<&'static str, usize>>,
}

impl<B> Counting<B> {
    fn hit(&self, method: &'static str) {
        *self.calls.lock().expect("calls").entry(method).or_default() += 1;
    }
}

#[async_trait]
impl<B: MemoryBackend> MemoryBackend for Counting<B> {
    fn name(&self) -> &str {
        self.hit("name");
        self.inner.name()
    }
    async fn is_available(&self) -> bool {
        self.hit("is_available");
        self.inner.is_available().await
    }
    async fn initialize(&self, session: &SessionId) {
        self.hit("initialize");
        self.inner.initialize(session).await;
    }
    async fn system_prompt(&self) -> String {
        self.hit("system_prompt");
        self.inner.system_prompt().await
    }
    async fn search(&self, query: &str) -> String {
        self.hit("search");
        self.inner.search(query).await
    }
    async fn write(&self, session: &SessionId, messages: &[Node], force: bool) -> WriteOutcome {
        self.hit("write");
        self.inner.write(session, messages, force).await
    }
    async fn extract_before_discard(&self, session: &SessionId, messages: &[Node]) -> String {
        self.hit("extract_before_discard");
        self.inner.extract_before_discard(session, messages).await
    }
    async fn reorganize(&self) -> OrganizeReport {
        self.hit("reorganize");
        self.inner.reorganize().await
    }
    async fn shutdown(&self) {
        self.hit("shutdown");
        self.inner.shutdown().await;
    }
}

const T0: i64 = 1_710_493_200_000; // 2024-03-15T09:00:00Z: old enough for the idle allowance

fn turn(i: usize, parent: Option<&str>) -> Node {
    let user = i.is_multiple_of(2);
    let topics = ["beans", "tomatoes", "the compost heap", "rainwater", "the greenhouse"];
    Node {
        id: NodeId(format!("t{i:02}")),
        parent: parent.map(|p| NodeId(p.to_owned())),
        role: if user { Role::User } else { Role::Assistant },
        kind: NodeKind::Message,
        speaker: user.then(|| Speaker { id: "owner/local".into(), display: "Dana".into() }),
        content: if user {
            format!("Turn {i}: today I worked on {} in the garden.", topics[(i / 2) % 5])
        } else {
            format!("Noted, turn {i}.")
        },
        created_at: Timestamp(T0 + 60_000 * i as i64),
        metadata: BTreeMap::new(),
        rewound: false,
    }
}

fn fenced_once(text: &str) -> bool {
    text.matches("<memory-context>").count() == 1 && text.matches("</memory-context>").count() == 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_lifecycle_calls_all_nine_methods() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let local = LocalBackend::open(home, Config::default(), Arc::new(Journal)).expect("open");
    // A core master, cited from an owner-declared source, so the system prompt has a body.
    let ws = local.memory().workspace().clone();
    let body = json!({
        "base_revision": ws.revision().expect("revision").as_str(),
        "sources": [{"label": "new-source-pref", "role": "user",
                     "content": "I prefer short answers.", "observed_at": "2024-03-15T08:00:00Z"}],
        "changes": [{"path": "topics/core.md", "action": "write", "content":
            "# Core\n\nDana prefers short answers.[^e1]\n\n[^e1]: Time: `undated`; Sources: [short answers](new-source-pref)\n"}],
    });
    let provenance = scriptorium_topics_format::source::id::ApiProvenance {
        principal_id: "owner-local".into(),
        speaker_kind: "owner".into(),
        speaker_id: "owner/local".into(),
        authority_tier: "owner".into(),
        origin_id: "owner-test/lifecycle".into(),
    };
    ws.update_with(
        UpdateRequest::from_json(&body.to_string()).expect("request"),
        UpdateContext { provenance: Some(provenance), ..UpdateContext::default() },
    )
    .expect("core installed");

    let backend = Counting { inner: local.clone(), calls: Mutex::new(BTreeMap::new()) };
    let session = SessionId("garden".into());
    assert_eq!(backend.name(), "local");
    assert!(backend.is_available().await);
    backend.initialize(&session).await;
    let core = backend.system_prompt().await;
    assert!(fenced_once(&core), "{core}");
    assert!(core.contains("Dana prefers short answers."), "{core}");

    let mut history: Vec<Node> = Vec::new();
    let mut recalled = Vec::new();
    for i in 0..30 {
        let node = turn(i, history.last().map(|n: &Node| n.id.0.as_str()));
        if i.is_multiple_of(2) {
            let recall = backend.search(&node.content).await;
            if !recall.is_empty() {
                assert!(fenced_once(&recall), "fenced exactly once: {recall}");
                recalled.push(i);
            }
        }
        history.push(node.clone());
        // Per turn: unforced; the turns are old, so the idle allowance makes them due.
        let outcome = backend.write(&session, std::slice::from_ref(&node), false).await;
        outcome.expect("per-turn write");
        if i == 19 {
            // A compaction drops the first ten turns from the context.
            let dropped = &history[..10];
            let kept = backend.extract_before_discard(&session, dropped).await;
            assert!(fenced_once(&kept), "{kept}");
            assert!(kept.contains("Turn 0: today I worked on beans"), "{kept}");
            assert!(!kept.contains("Turn 10:"), "only blocks citing the dropped turns: {kept}");
        }
    }
    assert!(!recalled.is_empty(), "later turns recall earlier ones");
    backend.shutdown().await;
    let report = backend.reorganize().await;
    assert_eq!(report.status, "ok", "{report:?}");

    // Every user turn is in the journal, every record is marked.
    let journal = std::fs::read_to_string(
        local.memory().workspace().root().join("topics/journal/2024/03-15.md"),
    )
    .expect("journal");
    for i in (0..30).step_by(2) {
        assert!(journal.contains(&format!("Dana said: Turn {i}: ")), "turn {i} missing: {journal}");
    }
    // Written turn by turn, each reply came in a batch of its own: a paragraph of its own.
    assert!(journal.contains("Assistant replied: Noted, turn 29."), "{journal}");
    let workspace = WorkspaceId::parse(ws.workspace_id().as_str()).expect("id");
    let owed = pending(&**local.store(), &session, None, &workspace).expect("pending");
    assert!(owed.is_empty(), "{} turns still owed", owed.len());
    assert_eq!(local.status().pending_turns, Some(0));

    let calls = backend.calls.lock().expect("calls").clone();
    for method in [
        "name",
        "is_available",
        "initialize",
        "system_prompt",
        "search",
        "write",
        "extract_before_discard",
        "reorganize",
        "shutdown",
    ] {
        assert!(
            calls.get(method).copied().unwrap_or(0) > 0,
            "{method} was never called: {calls:?}"
        );
    }
    assert_eq!(calls["write"], 30);
}

#[tokio::test]
async fn a_disabled_backend_does_nothing_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = Config::default();
    config.apply_env(|k| (k == "SCRIPTORIUM_MEMORY_BACKEND").then(|| "none".into())).expect("env");
    let err = LocalBackend::open(dir.path(), config, Arc::new(Journal)).expect_err("disabled");
    assert_eq!(err.to_string(), "memory is disabled by memory.backend=none");
    assert!(std::fs::read_dir(dir.path()).expect("dir").next().is_none(), "nothing created");
    let disabled = scriptorium_backend::DisabledBackend;
    assert_eq!(disabled.name(), "none");
    assert!(!disabled.is_available().await);
    assert_eq!(disabled.system_prompt().await, "");
    assert_eq!(disabled.search("anything").await, "");
    assert_eq!(disabled.reorganize().await.status, "disabled");
}
