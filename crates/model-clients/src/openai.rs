//! The OpenAI chat-completions client (`POST {base_url}/chat/completions`), which also speaks to
//! the OpenAI-compatible local servers (Ollama, llama.cpp, vLLM, LM Studio).
//!
//! Key decision: tool-call arguments stay the raw text the model produced; the client never
//! parses or repairs them (the agent loop reports malformed arguments back to the model). A key
//! is optional: local servers get no `Authorization` header. Some local servers report
//! `finish_reason: "stop"` alongside tool calls; a reply with tool calls is always `ToolUse`.

use std::fmt;

use scriptorium_writer::model::{
    Chat, ChatMessage, ChatReply, ChatRequest, ErrorReason, ModelError, StopReason, ToolCall,
    ToolSpec, Usage,
};
use serde::{Deserialize, Serialize};

use crate::http::{HttpClient, HttpOptions, Sleep, read_key};

/// Where and how to reach an OpenAI-compatible server.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiConfig {
    /// The API root, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub base_url: String,
    /// The model name sent with each request.
    pub model: String,
    /// The environment variable holding the API key; `None` sends no `Authorization` header.
    pub api_key_env: Option<String>,
    /// Timeouts and retries.
    pub http: HttpOptions,
    /// The sampling temperature (`None` leaves the server default).
    pub temperature: Option<f32>,
}

impl OpenAiConfig {
    /// The OpenAI API itself, keyed by `OPENAI_API_KEY`.
    pub fn openai(model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: "https://api.openai.com/v1".to_owned(),
            model: model.into(),
            api_key_env: Some("OPENAI_API_KEY".to_owned()),
            http: HttpOptions::default(),
            temperature: None,
        }
    }

    /// A keyless OpenAI-compatible server at `base_url`.
    pub fn local(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            http: HttpOptions::default(),
            temperature: None,
        }
    }
}

/// A [`Chat`] over the chat-completions wire format.
#[derive(Clone)]
pub struct OpenAi {
    config: OpenAiConfig,
    authorization: Option<String>,
    http: HttpClient,
}

impl fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key.
        f.debug_struct("OpenAi")
            .field("config", &self.config)
            .field("keyed", &self.authorization.is_some())
            .finish_non_exhaustive()
    }
}

impl OpenAi {
    /// A client reading its key from the variable `config.api_key_env` names; a named variable
    /// that is unset or empty is an `Auth` error.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let key = match &config.api_key_env {
            Some(var) => Some(read_key(var)?),
            None => None,
        };
        Self::with_key(config, key)
    }

    /// A client with the key given directly (`None`: no `Authorization` header);
    /// `config.api_key_env` is ignored.
    pub fn with_key(config: OpenAiConfig, key: Option<String>) -> Result<Self, ModelError> {
        let http = HttpClient::new(config.http)?;
        Ok(OpenAi { config, authorization: key.map(|k| format!("Bearer {k}")), http })
    }

    /// The same client waiting through `sleep` between retries (tests record the waits).
    #[must_use]
    pub fn with_sleep(mut self, sleep: Sleep) -> Self {
        self.http = self.http.with_sleep(sleep);
        self
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.config.base_url.trim_end_matches('/'))
    }
}

impl Chat for OpenAi {
    fn name(&self) -> String {
        format!("openai:{}", self.config.model)
    }

    fn complete(&self, request: &ChatRequest) -> Result<ChatReply, ModelError> {
        let body = wire_request(&self.config, request);
        let headers: Vec<(&str, &str)> =
            self.authorization.iter().map(|a| ("authorization", a.as_str())).collect();
        let response: WireResponse = self.http.post_json(&self.url(), &headers, &body)?;
        reply(response)
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        /// Always a string, empty beside tool calls: OpenAI accepts `null` there, but
        /// OpenAI-compatible servers such as llama-cpp-python answer every such request with
        /// HTTP 500.
        content: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

/// The request body for `request`.
fn wire_request<'a>(config: &'a OpenAiConfig, request: &'a ChatRequest) -> WireRequest<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(WireMessage::System { content: &request.system });
    }
    messages.extend(request.messages.iter().map(wire_message));
    let tools: Vec<WireTool<'a>> = request.tools.iter().map(wire_tool).collect();
    WireRequest {
        model: &config.model,
        tool_choice: (!tools.is_empty()).then_some("auto"),
        messages,
        tools,
        max_tokens: request.max_tokens,
        temperature: config.temperature,
    }
}

fn wire_message(message: &ChatMessage) -> WireMessage<'_> {
    match message {
        ChatMessage::User { text } => WireMessage::User { content: text },
        ChatMessage::Assistant { text, tool_calls } => WireMessage::Assistant {
            // Null content is how the API spells "tool calls only".
            content: text.as_str(),
            tool_calls: tool_calls.iter().map(wire_tool_call).collect(),
        },
        ChatMessage::Tool { call_id, content, .. } => {
            WireMessage::Tool { tool_call_id: call_id, content }
        }
    }
}

fn wire_tool_call(call: &ToolCall) -> WireToolCall<'_> {
    WireToolCall {
        id: &call.id,
        kind: "function",
        function: WireFunctionCall { name: &call.name, arguments: &call.arguments },
    }
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    WireTool {
        kind: "function",
        function: WireFunction {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
        },
    }
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireReplyMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireReplyMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireReplyToolCall>>,
}

#[derive(Deserialize)]
struct WireReplyToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireReplyFunction,
}

#[derive(Deserialize)]
struct WireReplyFunction {
    name: String,
    /// A JSON string per the spec; some servers send the object itself.
    #[serde(default)]
    arguments: serde_json::Value,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// The reply of the first choice.
fn reply(response: WireResponse) -> Result<ChatReply, ModelError> {
    let usage = response.usage.unwrap_or_default();
    let Some(choice) = response.choices.into_iter().next() else {
        return Err(ModelError::new(ErrorReason::Transport, "response has no choices"));
    };
    let tool_calls: Vec<ToolCall> = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(tool_call)
        .collect();
    Ok(ChatReply {
        text: choice.message.content.unwrap_or_default(),
        stop: stop_reason(choice.finish_reason.as_deref(), !tool_calls.is_empty()),
        tool_calls,
        usage: Usage { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens },
    })
}

/// A reply tool call; a missing ID becomes `call_<index>` so the result can still be matched.
fn tool_call((index, call): (usize, WireReplyToolCall)) -> ToolCall {
    let arguments = match call.function.arguments {
        serde_json::Value::String(raw) => raw,
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    };
    ToolCall {
        id: call.id.filter(|id| !id.is_empty()).unwrap_or_else(|| format!("call_{index}")),
        name: call.function.name,
        arguments,
    }
}

fn stop_reason(finish_reason: Option<&str>, has_tool_calls: bool) -> StopReason {
    match finish_reason {
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("stop") | None if has_tool_calls => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some("length") => StopReason::MaxTokens,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}
