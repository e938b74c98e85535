//! The model seam: a [`Chat`] completes one turn of a tool-using conversation (the HTTP
//! wire-format clients live above this crate, in `scriptorium-model-clients`; the [`scripted`]
//! test double lives here); a [`crate::Model`] runs a whole task over the stage's tools
//! ([`ChatModel`] drives any [`Chat`] through the agent loop; [`journal`] and [`command`] work
//! without one).
//!
//! Errors carry an [`ErrorReason`] and a retryable verdict: transport errors, 429, 5xx and
//! timeouts are retryable, 400/401/403 and context-length errors are not.

pub mod command;
pub mod journal;
pub mod scripted;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use crate::agent::ChatModel;

/// A tool the model may call: its name, what it does, and the JSON schema of its arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool name (`list`, `read`, …).
    pub name: String,
    /// One paragraph for the model.
    pub description: String,
    /// A JSON schema object (`{"type":"object","properties":…,"required":…,
    /// "additionalProperties":false}`).
    pub parameters: serde_json::Value,
}

/// One tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call ID (echoed back with the result).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments exactly as the model sent them: JSON text, possibly malformed (the agent
    /// loop reports malformed arguments back to the model as a tool error).
    pub arguments: String,
}

/// One message of the conversation the agent loop keeps (the system prompt is separate).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// The task (or the repair prompt).
    User {
        /// The text.
        text: String,
    },
    /// What the model said: text and/or tool calls.
    Assistant {
        /// The text (may be empty).
        text: String,
        /// The tool calls, in order.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The call ID it answers.
        call_id: String,
        /// The tool name.
        name: String,
        /// The result text (or the error message).
        content: String,
        /// Whether the tool failed.
        is_error: bool,
    },
}

/// One completion request.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<ChatMessage>,
    /// The tools on offer.
    pub tools: Vec<ToolSpec>,
    /// Most output tokens for this turn.
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It ran out of output tokens.
    MaxTokens,
    /// Anything else the provider reported.
    Other(String),
}

/// Token usage of one completion (zeros when the provider does not say).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// The model's reply to one [`ChatRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatReply {
    /// The text (may be empty).
    pub text: String,
    /// The tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Token usage.
    pub usage: Usage,
}

/// One turn of a tool-using conversation.
pub trait Chat: Send + Sync + fmt::Debug {
    /// A short name for logs and the agent history (`openai:gpt-4.1-mini`).
    fn name(&self) -> String;

    /// Completes one turn. Bounded retries with backoff happen inside (the HTTP clients share
    /// one policy); the error that reaches the caller is final for this call.
    fn complete(&self, request: &ChatRequest) -> Result<ChatReply, ModelError>;
}

/// Why a model call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorReason {
    /// Connection refused, reset, DNS, TLS, a malformed response body.
    Transport,
    /// HTTP 429.
    RateLimit,
    /// HTTP 5xx (and 529 overloaded).
    Provider,
    /// HTTP 401, or a missing API key.
    Auth,
    /// HTTP 403.
    Authz,
    /// HTTP 400 and other 4xx.
    Invalid,
    /// The prompt does not fit the model's context window.
    Context,
    /// The provider refused the content.
    Policy,
    /// The request timed out.
    Timeout,
    /// Anything else (e.g. an external command that failed).
    Unknown,
}

impl ErrorReason {
    /// The default verdict: transport, rate limit, provider errors and timeouts are worth
    /// retrying later; everything else is permanent until the configuration changes.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorReason::Transport
                | ErrorReason::RateLimit
                | ErrorReason::Provider
                | ErrorReason::Timeout
        )
    }
}

/// A failed model call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason:?} model error{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
pub struct ModelError {
    /// Why.
    pub reason: ErrorReason,
    /// Whether retrying later can succeed.
    pub retryable: bool,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// The diagnostic (may include provider text).
    pub message: String,
    /// The write failure code this error is, when the reason's code would say less (the
    /// `command` writer's `WRITER_*` codes: not logged in, rate limited, CLI missing…).
    pub code: Option<crate::outcome::FailureCode>,
    /// What the failed run used before it failed (counted like any run's).
    pub spent: crate::usage::TokenUsage,
}

impl ModelError {
    /// An error with the reason's default verdict.
    pub fn new(reason: ErrorReason, message: impl Into<String>) -> Self {
        ModelError {
            reason,
            retryable: reason.retryable(),
            status: None,
            message: message.into(),
            code: None,
            spent: crate::usage::TokenUsage::default(),
        }
    }

    /// The same error reported as `code` (retryable as `retryable` says).
    #[must_use]
    pub fn with_code(mut self, code: crate::outcome::FailureCode, retryable: bool) -> Self {
        self.code = Some(code);
        self.retryable = retryable;
        self
    }

    /// The same error with an HTTP status.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }
}
