//! The Anthropic Messages client (`POST {base_url}/v1/messages`, `anthropic-version:
//! 2023-06-01`).
//!
//! Key decision: the agent loop's flat conversation is folded into strictly alternating turns.
//! Consecutive messages of one role become one message of content blocks, so the tool results
//! of one assistant turn (and any user text after them) travel as ONE user message, results
//! first. A recorded tool call whose arguments are not valid JSON is replayed with input `{}`
//! (the API only accepts an object; the malformed text already went back to the model as a
//! tool error). Empty text blocks are dropped (the API rejects them).

use std::fmt;

use scriptorium_writer::model::{
    Chat, ChatMessage, ChatReply, ChatRequest, ModelError, StopReason, ToolCall, ToolSpec, Usage,
};
use serde::{Deserialize, Serialize};

use crate::http::{HttpClient, HttpOptions, Sleep, read_key};

/// The `anthropic-version` header value.
pub const API_VERSION: &str = "2023-06-01";

/// Where and how to reach the Anthropic API. The output budget is the request's `max_tokens`.
#[derive(Clone, Debug, PartialEq)]
pub struct AnthropicConfig {
    /// The API root (`https://api.anthropic.com`).
    pub base_url: String,
    /// The model name sent with each request.
    pub model: String,
    /// The environment variable holding the API key (`ANTHROPIC_API_KEY`).
    pub api_key_env: String,
    /// Timeouts and retries.
    pub http: HttpOptions,
}

impl AnthropicConfig {
    /// The public API with the default key variable and HTTP options.
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicConfig {
            base_url: "https://api.anthropic.com".to_owned(),
            model: model.into(),
            api_key_env: "ANTHROPIC_API_KEY".to_owned(),
            http: HttpOptions::default(),
        }
    }
}

/// A [`Chat`] over the Anthropic Messages wire format.
#[derive(Clone)]
pub struct Anthropic {
    config: AnthropicConfig,
    key: String,
    http: HttpClient,
}

impl fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key.
        f.debug_struct("Anthropic").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Anthropic {
    /// A client reading its key from the variable `config.api_key_env` names; unset or empty
    /// is an `Auth` error.
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        let key = read_key(&config.api_key_env)?;
        Self::with_key(config, key)
    }

    /// A client with the key given directly; `config.api_key_env` is ignored.
    pub fn with_key(config: AnthropicConfig, key: String) -> Result<Self, ModelError> {
        let http = HttpClient::new(config.http)?;
        Ok(Anthropic { config, key, http })
    }

    /// The same client waiting through `sleep` between retries (tests record the waits).
    #[must_use]
    pub fn with_sleep(mut self, sleep: Sleep) -> Self {
        self.http = self.http.with_sleep(sleep);
        self
    }

    fn url(&self) -> String {
        format!("{}/v1/messages", self.config.base_url.trim_end_matches('/'))
    }
}

impl Chat for Anthropic {
    fn name(&self) -> String {
        format!("anthropic:{}", self.config.model)
    }

    fn complete(&self, request: &ChatRequest) -> Result<ChatReply, ModelError> {
        let body = wire_request(&self.config, request);
        let headers = [("x-api-key", self.key.as_str()), ("anthropic-version", API_VERSION)];
        let response: WireResponse = self.http.post_json(&self.url(), &headers, &body)?;
        Ok(reply(response))
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    system: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: Role,
    content: Vec<Block<'a>>,
}

#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Role {
    User,
    Assistant,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text { text: &'a str },
    ToolUse { id: &'a str, name: &'a str, input: serde_json::Value },
    ToolResult { tool_use_id: &'a str, content: &'a str, is_error: bool },
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a serde_json::Value,
}

/// The request body for `request`.
fn wire_request<'a>(config: &'a AnthropicConfig, request: &'a ChatRequest) -> WireRequest<'a> {
    WireRequest {
        model: &config.model,
        max_tokens: request.max_tokens,
        system: &request.system,
        messages: alternate(&request.messages),
        tools: request.tools.iter().map(wire_tool).collect(),
    }
}

/// The conversation as alternating messages: each message's blocks are appended to the last
/// wire message when the role is the same.
fn alternate(messages: &[ChatMessage]) -> Vec<WireMessage<'_>> {
    let mut wire: Vec<WireMessage<'_>> = Vec::new();
    for message in messages {
        let (role, blocks) = blocks(message);
        if blocks.is_empty() {
            continue;
        }
        match wire.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => wire.push(WireMessage { role, content: blocks }),
        }
    }
    wire
}

/// One conversation message as a role and its content blocks.
fn blocks(message: &ChatMessage) -> (Role, Vec<Block<'_>>) {
    match message {
        ChatMessage::User { text } => (Role::User, text_block(text).into_iter().collect()),
        ChatMessage::Assistant { text, tool_calls } => {
            let calls = tool_calls.iter().map(|call| Block::ToolUse {
                id: &call.id,
                name: &call.name,
                input: tool_input(&call.arguments),
            });
            (Role::Assistant, text_block(text).into_iter().chain(calls).collect())
        }
        ChatMessage::Tool { call_id, content, is_error, .. } => (
            Role::User,
            vec![Block::ToolResult { tool_use_id: call_id, content, is_error: *is_error }],
        ),
    }
}

fn text_block(text: &str) -> Option<Block<'_>> {
    (!text.is_empty()).then_some(Block::Text { text })
}

/// Recorded arguments as the `input` object; anything but a JSON object becomes `{}`.
fn tool_input(arguments: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => serde_json::Value::Object(serde_json::Map::new()),
    }
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    WireTool { name: &tool.name, description: &tool.description, input_schema: &tool.parameters }
}

#[derive(Deserialize)]
struct WireResponse {
    content: Vec<ReplyBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ReplyBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    /// Thinking and any block type added later: not part of the reply text.
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// The reply: text blocks joined with newlines, tool-use blocks as calls.
fn reply(response: WireResponse) -> ChatReply {
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in response.content {
        match block {
            ReplyBlock::Text { text } => texts.push(text),
            ReplyBlock::ToolUse { id, name, input } => {
                tool_calls.push(ToolCall { id, name, arguments: input.to_string() });
            }
            ReplyBlock::Other => {}
        }
    }
    ChatReply {
        text: texts.join("\n"),
        tool_calls,
        stop: stop_reason(response.stop_reason.as_deref()),
        usage: Usage {
            input_tokens: response.usage.input_tokens,
            output_tokens: response.usage.output_tokens,
        },
    }
}

fn stop_reason(stop_reason: Option<&str>) -> StopReason {
    match stop_reason {
        Some("end_turn" | "stop_sequence") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}
