//! An agent runtime's loop driving Scriptorium through the nine `MemoryBackend` methods: the
//! core block goes into the system prompt, each user turn is searched for before the model
//! answers, each exchange is handed to `write`, a compaction asks `extract_before_discard` for
//! what it is about to drop, and the session's end flushes (`shutdown`) and reorganizes.
//!
//! The model is scripted (no network) and so is the memory writer (`journal`: each user turn
//! becomes one cited paragraph), so the run is deterministic: the first session tells the agent
//! a few facts, the second asks about them and the agent answers from recall.
//!
//! Usage: `agent-loop [<home dir>]` (a Scriptorium home: `memory/` and `sessions/` are created
//! in it; without one, a fresh directory under the temporary directory, removed at the end).
//! Exits 1 if the second session's recall missed what the first one said.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use scriptorium_backend::{Config, LocalBackend, MemoryBackend};
use scriptorium_session_dag::{Node, NodeId, NodeKind, Role, SessionId, Speaker, Timestamp};
use scriptorium_writer::model::journal::Journal;

/// 2024-03-15T09:00:00Z in milliseconds: fixed, so the journal's file and text are the same on
/// every run, and old enough that the writer's idle allowance makes every turn due at once.
const T0: i64 = 1_710_493_200_000;

/// The scripted chat model of the agent (not the memory writer): answers from what the
/// runtime put before it, as a real model would be prompted to.
fn scripted_reply(user: &str, recall: &str) -> String {
    let remembered: Vec<&str> = recall
        .lines()
        .filter(|l| l.contains("said:"))
        .map(|l| l.trim_start_matches(['-', ' ', '*']))
        .collect();
    match remembered.first() {
        Some(fact) if user.ends_with('?') => format!("From memory: {fact}"),
        _ => "Noted.".to_owned(),
    }
}

/// One conversation turn as the runtime records it.
fn node(session: &str, i: usize, parent: Option<&NodeId>, role: Role, content: &str) -> Node {
    Node {
        id: NodeId(format!("{session}-{i:02}")),
        parent: parent.cloned(),
        role,
        kind: NodeKind::Message,
        speaker: (role == Role::User)
            .then(|| Speaker { id: "owner/local".into(), display: "Dana".into() }),
        content: content.to_owned(),
        created_at: Timestamp(T0 + 60_000 * i as i64),
        metadata: BTreeMap::new(),
        rewound: false,
    }
}

/// Runs one session through the backend; returns every assistant reply.
async fn session(backend: &dyn MemoryBackend, id: &str, user_turns: &[&str]) -> Vec<String> {
    let session = SessionId(id.into());
    backend.initialize(&session).await;
    let system = backend.system_prompt().await;
    println!("[{id}] system prompt: {} characters of memory", system.len());
    let mut history: Vec<Node> = Vec::new();
    let mut replies = Vec::new();
    for text in user_turns {
        let recall = backend.search(text).await;
        let user = node(id, history.len(), history.last().map(|n| &n.id), Role::User, text);
        let reply_text = scripted_reply(text, &recall);
        let reply = node(id, history.len() + 1, Some(&user.id), Role::Assistant, &reply_text);
        println!("[{id}] user: {text}");
        println!("[{id}]   recall: {} characters; agent: {reply_text}", recall.len());
        let exchange = [user, reply];
        match backend.write(&session, &exchange, false).await {
            Ok(report) => {
                let blocks: usize = report.batches.iter().map(|b| b.block_ids.len()).sum();
                println!("[{id}]   write: {} batches, {blocks} blocks", report.batches.len());
            }
            Err(failure) => println!("[{id}]   write failed: {}", failure.reason),
        }
        history.extend(exchange);
        replies.push(reply_text);
    }
    // A compaction is about to drop the first exchange from the context: what memory holds of
    // it comes back as blocks the runtime can keep.
    let kept = backend.extract_before_discard(&session, &history[..2]).await;
    println!("[{id}] before compaction: {} characters of blocks kept", kept.len());
    replies
}

async fn run(home: PathBuf) -> Result<bool, String> {
    let local = LocalBackend::open(&home, Config::default(), Arc::new(Journal))
        .map_err(|e| format!("cannot open {}: {e}", home.display()))?;
    let backend: &dyn MemoryBackend = &local;
    println!("backend {:?}, available: {}", backend.name(), backend.is_available().await);

    session(
        backend,
        "s1",
        &["My bike shop is called Spoke and Chain.", "The shop opens at nine on weekdays."],
    )
    .await;
    let replies = session(backend, "s2", &["When does the bike shop open?"]).await;
    backend.shutdown().await;
    let report = backend.reorganize().await;
    println!("reorganize: {} over {} topic files", report.status, report.topics);

    let status = local.status();
    println!("revision {}, pending turns {:?}", status.revision, status.pending_turns);
    let recalled = replies.iter().any(|r| r.contains("opens at nine"));
    println!("the second session recalled the opening hours: {recalled}");
    Ok(recalled && status.pending_turns == Some(0))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let given = std::env::args_os().nth(1).map(PathBuf::from);
    let home = given.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("scriptorium-agent-loop-{}", std::process::id()))
    });
    let outcome = run(home.clone()).await;
    if given.is_none() {
        // Best effort: the directory is ours and nothing else refers to it.
        let _ = std::fs::remove_dir_all(&home);
    }
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("agent-loop: {error}");
            ExitCode::from(2)
        }
    }
}
