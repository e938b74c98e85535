//! The write pipeline end to end with the `scripted`, `journal` and `command` models over
//! sessions built in the test: archive → topics → markers, the repair turn, `COMMIT_REJECTED`,
//! a held lock, a crash between install and marking, the forced loop and its branch rules,
//! organize triggers and `reorganize`.

mod faults;
mod forced;
mod models;
mod passes;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use scriptorium_markers::{WorkspaceId, pending};
use scriptorium_session_dag::{
    EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Speaker, Timestamp,
};
use scriptorium_txn::Workspace;
use scriptorium_writer::model::scripted::{Scripted, Step};
use scriptorium_writer::{ChatModel, Model, Writer, WriterConfig};
use serde_json::{Value, json};

/// A workspace, a session store and the directory holding both.
struct Fixture {
    dir: tempfile::TempDir,
    ws: Workspace,
    store: Arc<EmbeddedStore>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::init(dir.path().join("memory")).expect("init");
        let store = Arc::new(EmbeddedStore::open(dir.path().join("sessions")).expect("store"));
        Fixture { dir, ws, store }
    }

    fn root(&self) -> &Path {
        self.ws.root()
    }

    fn workspace_id(&self) -> WorkspaceId {
        WorkspaceId::parse(self.ws.workspace_id().as_str()).expect("workspace id")
    }

    /// Appends `turns` (alternating user/assistant, starting with user) after `parent`.
    fn turns(&self, session: &str, parent: Option<&str>, ids: &[&str], texts: &[&str]) {
        let mut parent = parent.map(|p| NodeId(p.to_owned()));
        for (i, (id, text)) in ids.iter().zip(texts).enumerate() {
            let user = i % 2 == 0;
            let node = Node {
                id: NodeId((*id).to_owned()),
                parent: parent.clone(),
                role: if user { Role::User } else { Role::Assistant },
                kind: NodeKind::Message,
                speaker: user
                    .then(|| Speaker { id: "owner/local".into(), display: "Owner".into() }),
                content: (*text).to_owned(),
                // 2024-03-15T09:00:00Z plus a minute per turn.
                created_at: Timestamp(1_710_493_200_000 + 60_000 * (i as i64)),
                metadata: BTreeMap::new(),
                rewound: false,
            };
            self.store.append(&SessionId(session.into()), node).expect("append");
            parent = Some(NodeId((*id).to_owned()));
        }
    }

    /// A writer whose clock is a day after the turns: every batch is past the idle allowance.
    fn writer(&self, model: Arc<dyn Model>, config: WriterConfig) -> Writer {
        Writer::new(self.ws.clone(), self.store.clone(), model, config).with_clock(Arc::new(|| {
            time::OffsetDateTime::from_unix_timestamp(1_710_493_200 + 86_400).expect("time")
        }))
    }

    fn pending_ids(&self, session: &str, tip: Option<&str>) -> Vec<String> {
        let tip = tip.map(|t| NodeId(t.into()));
        pending(self.store.as_ref(), &SessionId(session.into()), tip.as_ref(), &self.workspace_id())
            .expect("pending")
            .into_iter()
            .map(|n| n.id.0)
            .collect()
    }

    fn live(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root().join(rel)).ok()
    }

    /// Every file of the workspace (except runtime noise) with its bytes.
    fn state(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.root().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
                let path = entry.path();
                let rel =
                    path.strip_prefix(self.root()).expect("inside").to_string_lossy().into_owned();
                // Stages and the engine's caches, the lock, the file the next intent record
                // is written into (never read), the model log: not state.
                if rel.starts_with(".scriptorium/txn")
                    || rel == ".scriptorium/write.lock"
                    || rel == ".scriptorium/intent.next"
                    || rel == ".scriptorium/agent-history.jsonl"
                {
                    continue;
                }
                if entry.file_type().expect("type").is_dir() {
                    stack.push(path);
                } else {
                    out.insert(rel, std::fs::read(&path).expect("read"));
                }
            }
        }
        out
    }
}

/// The source ID of node `id` in `session`.
fn source(session: &str, id: &str) -> String {
    format!("openprogram/{session}/{id}")
}

/// A valid topic citing `refs` (plain source handles, normalized into links by the runtime).
fn topic(title: &str, facts: &[(&str, &str)]) -> String {
    let mut text = format!("# {title}\n");
    for (i, (fact, source)) in facts.iter().enumerate() {
        text.push_str(&format!(
            "\n{fact}[^e{n}]\n\n[^e{n}]: Time: `2024-03-15`; Sources: [turn]({source})\n",
            n = i + 1
        ));
    }
    text
}

fn write_step(path: &str, content: &str) -> Step {
    Step::Call { tool: "write".into(), arguments: json!({"path": path, "content": content}) }
}

fn commit_step() -> Step {
    Step::Call { tool: "commit_edits".into(), arguments: Value::Null }
}

/// A scripted chat model and the script it shares with the test.
fn scripted(steps: Vec<Step>) -> (Arc<Scripted>, Arc<dyn Model>) {
    let chat = Arc::new(Scripted::new(steps));
    let model: Arc<dyn Model> = Arc::new(ChatModel::new(chat.clone()));
    (chat, model)
}

/// A config whose batches hold every pending turn (a high threshold; the idle allowance makes
/// them due) and that never organizes.
fn eager() -> WriterConfig {
    WriterConfig { threshold_tokens: 100_000, organize: false, ..WriterConfig::default() }
}
