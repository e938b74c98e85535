//! The agent loop: a [`Model`] runs one task over the stage's [`Tools`]; [`ChatModel`] does it
//! for any [`Chat`] by asking for a turn, running the tool calls it returns, and feeding the
//! results back, until the model stops, calls `commit_edits`, or runs out of turns.
//!
//! Key decision: the loop never validates or installs; it only edits the stage. The writer
//! validates after the run, so every model (chat, external command, journal) ends in the same
//! validate → repair → install path.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::model::{Chat, ChatMessage, ChatRequest, ModelError, StopReason, Usage};
use crate::tools::Tools;

/// The default bound on model turns per run (the Python implementation's default).
pub const MAX_TURNS: u32 = 20;

/// One turn of the batch, as structured data (the `journal` model files these directly; chat
/// models read them in the prompt).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskTurn {
    /// The source ID the turn was archived under.
    pub source_ref: String,
    /// `user` or `assistant`.
    pub role: String,
    /// The runtime-owned speaker label (`Owner (owner/local)`).
    pub speaker: String,
    /// The speaker's display name alone (`Owner`).
    pub display: String,
    /// The text, verbatim.
    pub content: String,
    /// RFC 3339 time of the turn, if known.
    pub timestamp: Option<String>,
}

/// What a run is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// Integrate a batch of turns.
    Write,
    /// Reorganize the topics (no new sources).
    Organize,
    /// The repair turn after a rejected write.
    WriteRepair,
    /// The repair turn after a rejected organize.
    OrganizeRepair,
}

/// One task for a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// What the run is for.
    pub kind: TaskKind,
    /// The system prompt.
    pub system: String,
    /// The task prompt.
    pub prompt: String,
    /// The batch (empty for organize tasks).
    pub turns: Vec<TaskTurn>,
    /// The project of the batch's session (a path, see `docs/format.md#projects`), if known.
    pub project: Option<String>,
    /// Most model turns.
    pub max_turns: u32,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RunReport {
    /// Model turns taken.
    pub rounds: u32,
    /// Tokens used, summed over the turns.
    pub usage: Usage,
    /// The price of the run in millionths of a dollar, when the model reported it (Claude
    /// Code's `total_cost_usd`).
    pub cost_micro_usd: Option<u64>,
    /// The last stop reason (`None` for models without turns).
    pub stop: Option<StopReason>,
    /// The model's final text.
    pub reply: String,
}

/// Runs one task over the stage.
pub trait Model: Send + Sync + fmt::Debug {
    /// A short name for logs and the agent history (`openai:gpt-4.1-mini`, `journal`).
    fn name(&self) -> String;

    /// Runs `task`, editing the stage through `tools`. An error means the model could not run
    /// (transport, auth, timeout, …); edits it made before failing are discarded by the caller.
    fn run(&self, task: &Task, tools: &mut Tools<'_>) -> Result<RunReport, ModelError>;

    /// Whether a write run that changes no topic file is a failure of its own,
    /// `WRITER_NO_EDITS` (an external agent told to write: it misunderstood, or could not
    /// edit), rather than "nothing to write" (a chat model may judge a batch not worth a
    /// topic when unforced). The turns stay pending either way.
    fn edits_expected(&self) -> bool {
        false
    }
}

/// One model turn of a [`ChatModel`] run, as its progress callback sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnProgress {
    /// The turn just taken (1-based).
    pub round: u32,
    /// The most turns the run may take.
    pub max_turns: u32,
    /// The tools the model called in this turn, by name, in order.
    pub tool_calls: Vec<String>,
    /// How long the turn's model call took.
    pub elapsed: std::time::Duration,
    /// Output tokens of the turn.
    pub output_tokens: u64,
}

/// Called after every model turn (a terminal shows it as progress).
pub type Progress = Arc<dyn Fn(&TurnProgress) + Send + Sync>;

/// A [`Model`] made of any [`Chat`] and the agent loop.
#[derive(Clone)]
pub struct ChatModel {
    /// The chat client.
    pub chat: Arc<dyn Chat>,
    /// Most output tokens per turn.
    pub max_tokens: u32,
    /// Told of every turn, if set.
    pub progress: Option<Progress>,
    /// The most time one run (all its turns) may take: no turn starts after it has passed.
    pub deadline: Option<std::time::Duration>,
}

impl std::fmt::Debug for ChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModel")
            .field("chat", &self.chat)
            .field("max_tokens", &self.max_tokens)
            .field("progress", &self.progress.is_some())
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl ChatModel {
    /// `chat` with 8 192 output tokens per turn, no progress callback and no deadline.
    pub fn new(chat: Arc<dyn Chat>) -> Self {
        ChatModel { chat, max_tokens: 8_192, progress: None, deadline: None }
    }
}

impl Model for ChatModel {
    fn name(&self) -> String {
        self.chat.name()
    }

    fn run(&self, task: &Task, tools: &mut Tools<'_>) -> Result<RunReport, ModelError> {
        let mut request = ChatRequest {
            system: task.system.clone(),
            messages: vec![ChatMessage::User { text: task.prompt.clone() }],
            tools: Tools::specs(),
            max_tokens: self.max_tokens,
        };
        let mut report = RunReport::default();
        let run_started = std::time::Instant::now();
        while report.rounds < task.max_turns {
            if let Some(deadline) = self.deadline
                && run_started.elapsed() >= deadline
            {
                return Err(ModelError::new(
                    crate::model::ErrorReason::Timeout,
                    format!(
                        "the run passed its deadline of {} s after {} model turn(s); raise \
                         model.deadline_secs, or lower max_tokens for a faster model",
                        deadline.as_secs(),
                        report.rounds
                    ),
                ));
            }
            let started = std::time::Instant::now();
            let reply = self.chat.complete(&request)?;
            report.rounds += 1;
            if let Some(progress) = &self.progress {
                progress(&TurnProgress {
                    round: report.rounds,
                    max_turns: task.max_turns,
                    tool_calls: reply.tool_calls.iter().map(|c| c.name.clone()).collect(),
                    elapsed: started.elapsed(),
                    output_tokens: reply.usage.output_tokens,
                });
            }
            report.usage.input_tokens += reply.usage.input_tokens;
            report.usage.output_tokens += reply.usage.output_tokens;
            report.stop = Some(reply.stop.clone());
            report.reply.clone_from(&reply.text);
            let calls = reply.tool_calls.clone();
            request
                .messages
                .push(ChatMessage::Assistant { text: reply.text, tool_calls: calls.clone() });
            if calls.is_empty() {
                break;
            }
            for call in &calls {
                let result = tools.call(&call.name, &call.arguments);
                request.messages.push(ChatMessage::Tool {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: result.content,
                    is_error: result.is_error,
                });
            }
            if tools.commit_requested() {
                break;
            }
        }
        Ok(report)
    }
}
