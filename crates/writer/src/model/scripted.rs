//! The `scripted` model: a [`Chat`] that replays a recorded list of tool calls, one per turn —
//! for tests and the demo's recorded sessions. Each `complete` takes the next step; when the
//! script is used up the model ends its turn without calls.
//!
//! Script format (JSON): a list of steps, each `{"tool": NAME, "arguments": OBJECT | STRING}`
//! (a string is sent verbatim, so malformed arguments can be recorded), `{"text": STRING}` (a
//! turn that ends without tool calls), or `{"error": REASON, "message"?: STRING}` (the call
//! fails with that [`ErrorReason`], e.g. `"rate_limit"`).

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;

use super::{Chat, ChatReply, ChatRequest, ErrorReason, ModelError, StopReason, ToolCall, Usage};

/// One recorded step.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Step {
    /// One tool call.
    Call {
        /// The tool name.
        tool: String,
        /// The arguments (an object, or raw text sent verbatim).
        #[serde(default)]
        arguments: Value,
    },
    /// A turn that ends without tool calls.
    Text {
        /// What the model says.
        text: String,
    },
    /// A failing call.
    Error {
        /// The failure reason.
        error: ErrorReason,
        /// The message.
        #[serde(default)]
        message: String,
    },
}

/// A [`Chat`] that replays [`Step`]s. Shared between runs: a repair run continues where the
/// first run stopped.
#[derive(Debug)]
pub struct Scripted {
    steps: Mutex<VecDeque<Step>>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    /// A script of `steps`.
    pub fn new(steps: Vec<Step>) -> Self {
        Scripted { steps: Mutex::new(steps.into()), seen: Mutex::new(Vec::new()) }
    }

    /// Parses a JSON script.
    pub fn from_json(text: &str) -> Result<Self, ModelError> {
        let steps: Vec<Step> = serde_json::from_str(text).map_err(|e| {
            ModelError::new(ErrorReason::Invalid, format!("unreadable script: {e}"))
        })?;
        Ok(Scripted::new(steps))
    }

    /// Steps not replayed yet.
    pub fn remaining(&self) -> usize {
        self.steps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// Every request received so far (what the model was shown).
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl Chat for Scripted {
    fn name(&self) -> String {
        "scripted".to_owned()
    }

    fn complete(&self, request: &ChatRequest) -> Result<ChatReply, ModelError> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(request.clone());
        let step = self.steps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop_front();
        let usage = Usage::default();
        match step {
            None => Ok(ChatReply {
                text: String::new(),
                tool_calls: Vec::new(),
                stop: StopReason::EndTurn,
                usage,
            }),
            Some(Step::Text { text }) => {
                Ok(ChatReply { text, tool_calls: Vec::new(), stop: StopReason::EndTurn, usage })
            }
            Some(Step::Error { error, message }) => Err(ModelError::new(error, message)),
            Some(Step::Call { tool, arguments }) => {
                let arguments = match arguments {
                    Value::String(raw) => raw,
                    Value::Null => "{}".to_owned(),
                    other => other.to_string(),
                };
                let id = format!("call-{}", request.messages.len());
                Ok(ChatReply {
                    text: String::new(),
                    tool_calls: vec![ToolCall { id, name: tool, arguments }],
                    stop: StopReason::ToolUse,
                    usage,
                })
            }
        }
    }
}
