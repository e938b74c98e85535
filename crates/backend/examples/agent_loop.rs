//! How a runtime integrates Scriptorium: one session driven through all nine methods of
//! [`MemoryBackend`], with a scripted chat model standing in for the agent's LLM.
//!
//! Run it with `cargo run -p scriptorium-backend --example agent_loop` (a temporary home) or
//! pass a home directory to keep the result and look at it with the `scriptorium` CLI.
//!
//! The shape of the integration:
//! - session start: `initialize`, and `system_prompt` into the system prompt (fenced once);
//! - every turn: `search` with the user's message, prepended to that message (never to the
//!   system prompt, so the provider's prompt cache stays valid); after the reply is stored,
//!   `write(force = false)` — cheap when nothing is due;
//! - when the context is compacted: `extract_before_discard` with the dropped messages, and the
//!   returned blocks go into the compacted context;
//! - session end: `shutdown` (a forced write of what is owed); nightly: `reorganize`.

use std::collections::BTreeMap;
use std::sync::Arc;

use scriptorium_backend::{Config, LocalBackend, MemoryBackend};
use scriptorium_session_dag::{Node, NodeId, NodeKind, Role, SessionId, Speaker, Timestamp};
use scriptorium_writer::model::journal::Journal;

/// The agent's own chat model, scripted: it answers each user turn with a canned reply and
/// shows what memory it was given.
struct ScriptedAssistant {
    replies: Vec<&'static str>,
}

impl ScriptedAssistant {
    fn reply(&self, turn: usize, system: &str, recall: &str, user: &str) -> String {
        let base = self.replies.get(turn).copied().unwrap_or("Noted.");
        println!("  user: {user}");
        if !recall.is_empty() {
            println!("  (recalled {} line(s) of memory for this turn)", recall.lines().count());
        }
        if turn == 0 && !system.is_empty() {
            println!("  (the system prompt carries {} bytes of core memory)", system.len());
        }
        println!("  assistant: {base}");
        base.to_owned()
    }
}

const USER_TURNS: [&str; 6] = [
    "I'm Ada. I keep bees on my roof in Lisbon.",
    "The second hive swarmed last week, so I need a new queen.",
    "Please never suggest pesticides; I garden organically.",
    "What should I plant near the hives for the summer?",
    "How did the swarm happen again?",
    "Thanks, that's all for today.",
];

fn node(id: String, parent: Option<String>, user: bool, content: &str, minute: i64) -> Node {
    Node {
        id: NodeId(id),
        parent: parent.map(NodeId),
        role: if user { Role::User } else { Role::Assistant },
        kind: NodeKind::Message,
        speaker: user.then(|| Speaker { id: "owner/local".into(), display: "Ada".into() }),
        content: content.to_owned(),
        // An old conversation, so the idle allowance makes each turn's batch due at once.
        created_at: Timestamp(1_710_493_200_000 + minute * 60_000),
        metadata: BTreeMap::new(),
        rewound: false,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let home = std::env::args().nth(1).map_or_else(|| temp.path().to_path_buf(), Into::into);
    // No model configured: the journal writer files each user turn.
    let backend = LocalBackend::open(&home, Config::load(&home)?, Arc::new(Journal))?;
    let memory: &dyn MemoryBackend = &backend;
    println!("backend `{}`, available: {}", memory.name(), memory.is_available().await);

    let session = SessionId("rooftop-bees".into());
    memory.initialize(&session).await;
    let system = memory.system_prompt().await;
    let assistant = ScriptedAssistant {
        replies: vec![
            "Welcome, Ada! Rooftop bees in Lisbon sound wonderful.",
            "A swarm usually means the hive ran out of room; a new queen can be introduced in a cage.",
            "Understood: organic methods only.",
            "Lavender, rosemary and borage do well in Lisbon summers and feed the bees.",
            "The hive was crowded, so half the colony left with the old queen.",
            "Goodbye, Ada!",
        ],
    };

    let mut context: Vec<Node> = Vec::new();
    for (turn, user_text) in USER_TURNS.iter().enumerate() {
        println!("turn {turn}:");
        let recall = memory.search(user_text).await;
        let reply = assistant.reply(turn, &system, &recall, user_text);
        let parent = context.last().map(|n| n.id.0.clone());
        let user = node(format!("u{turn}"), parent, true, user_text, 2 * turn as i64);
        let answer =
            node(format!("a{turn}"), Some(user.id.0.clone()), false, &reply, 2 * turn as i64 + 1);
        context.push(user.clone());
        context.push(answer.clone());
        match memory.write(&session, &[user, answer], false).await {
            Ok(report) if !report.batches.is_empty() => {
                println!("  memory: wrote {} batch(es)", report.batches.len());
            }
            Ok(_) => {}
            Err(failure) if failure.retryable => {
                println!("  memory: retry later ({})", failure.code);
            }
            Err(failure) => println!("  memory: failed for good ({failure})"),
        }
        if context.len() > 8 {
            // The compactor drops the oldest turns; memory keeps what cites them.
            let dropped: Vec<Node> = context.drain(..4).collect();
            let kept = memory.extract_before_discard(&session, &dropped).await;
            println!(
                "  compaction: {} block(s) of memory carried over",
                kept.matches("said:").count()
            );
        }
    }
    memory.shutdown().await;
    let organized = memory.reorganize().await;
    println!("reorganize: {} over {} topic(s)", organized.status, organized.topics);
    println!("status: {}", serde_json::to_string(&backend.status())?);
    Ok(())
}
