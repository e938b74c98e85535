//! Building the writer's [`Model`] from the `[model]` configuration.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use scriptorium_model_clients::anthropic::{Anthropic, AnthropicConfig};
use scriptorium_model_clients::http::HttpOptions;
use scriptorium_model_clients::openai::{OpenAi, OpenAiConfig};
use scriptorium_writer::model::command::{Command, CommandConfig};
use scriptorium_writer::model::journal::Journal;
use scriptorium_writer::model::scripted::Scripted;
use scriptorium_writer::model::{
    Chat, ChatMessage, ChatRequest, ErrorReason, ModelError, ToolSpec,
};
use scriptorium_writer::{ChatModel, Model, Progress};

use crate::config::{ModelConfig, ModelKind};

/// Why a model cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ModelSetupError {
    /// A required field is missing.
    #[error("{0}")]
    Missing(&'static str),
    /// The client refused the configuration (e.g. the API key variable is unset).
    #[error(transparent)]
    Client(#[from] ModelError),
    /// The script cannot be read.
    #[error("cannot read the script {path}: {source}")]
    Script {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// What `scriptorium model check` found (see [`check`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CheckReport {
    /// The model as the writer names it (`openai:llama3.1`).
    pub model: String,
    /// Whether the model called the offered tool with the asked-for argument.
    pub tool_calls_work: bool,
    /// How long the round trip took, in milliseconds.
    pub elapsed_ms: u64,
    /// What happened, in one sentence.
    pub finding: String,
    /// What to change, when something must (`None` when all is well).
    pub advice: Option<String>,
}

/// One small tool-call round trip with the model `config` describes: it is offered one tool,
/// `echo(word)`, and asked to call it with `scriptorium`. Says whether tool calls work, how long
/// the turn took, and what to change. Models that are not remote chat models (journal,
/// command, scripted) need no check and are reported as such.
pub fn check(config: &ModelConfig) -> Result<CheckReport, ModelSetupError> {
    let Some(chat) = chat_client(config)? else {
        let kind = format!("{:?}", config.kind).to_lowercase();
        return Ok(CheckReport {
            model: kind.clone(),
            tool_calls_work: true,
            elapsed_ms: 0,
            finding: format!("the {kind} writer calls no remote model: nothing to check"),
            advice: None,
        });
    };
    let request = ChatRequest {
        system: "You are testing tool calls. Call the tool you are asked to call, exactly once."
            .to_owned(),
        messages: vec![ChatMessage::User {
            text: "Call the tool `echo` with the argument word set to \"scriptorium\".".to_owned(),
        }],
        tools: vec![ToolSpec {
            name: "echo".to_owned(),
            description: "Echoes one word back.".to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"word": {"type": "string"}},
                "required": ["word"],
                "additionalProperties": false
            }),
        }],
        max_tokens: config.max_tokens.min(512),
    };
    let started = std::time::Instant::now();
    let outcome = chat.complete(&request);
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let model = chat.name();
    let report = |works: bool, finding: String, advice: Option<&str>| CheckReport {
        model: model.clone(),
        tool_calls_work: works,
        elapsed_ms,
        finding,
        advice: advice.map(str::to_owned),
    };
    Ok(match outcome {
        Ok(reply) => {
            let called = reply.tool_calls.iter().find(|c| c.name == "echo");
            let word = called
                .and_then(|c| serde_json::from_str::<serde_json::Value>(&c.arguments).ok())
                .and_then(|v| v.get("word").and_then(|w| w.as_str()).map(str::to_owned));
            match (called, word.as_deref()) {
                (Some(_), Some("scriptorium")) => report(
                    true,
                    format!("tool calls work: `echo` was called as asked in {elapsed_ms} ms"),
                    (elapsed_ms > 60_000).then_some(
                        "a turn took over a minute: a write takes several turns; a smaller \
                         max_tokens or a faster model helps",
                    ),
                ),
                (Some(call), _) => report(
                    false,
                    format!(
                        "the model called `echo` with arguments it was not asked for: {}",
                        call.arguments
                    ),
                    Some("the model follows tool schemas poorly: choose a larger model"),
                ),
                (None, _) => report(
                    false,
                    format!(
                        "the model answered without calling the tool ({} characters of text)",
                        reply.text.chars().count()
                    ),
                    Some(
                        "the server or the model does not do tool calls: choose a model with \
                         function calling (and, for a local server, enable its tool-call support)",
                    ),
                ),
            }
        }
        Err(error) => {
            let advice = match error.reason {
                ErrorReason::Transport => {
                    "the server cannot be reached: check base_url and that it runs"
                }
                ErrorReason::Auth => {
                    "set the variable api_key_env names to a valid key (or api_key_env = \"none\")"
                }
                ErrorReason::Authz => "the key may not use this model",
                ErrorReason::Timeout => {
                    "the model is too slow for timeout_secs: raise it or lower max_tokens"
                }
                ErrorReason::RateLimit => "the provider limits the rate: try again later",
                ErrorReason::Context => "the model's context is too small for a write",
                ErrorReason::Invalid => {
                    "the server refused the request: check the model name, and that it accepts tools"
                }
                ErrorReason::Provider => {
                    "the server failed: check its log (some servers fail on tool calls)"
                }
                ErrorReason::Policy | ErrorReason::Unknown => "see the message",
            };
            report(false, format!("the call failed: {error}"), Some(advice))
        }
    })
}

/// The chat client of a remote model (openai, anthropic); `None` for the others.
fn chat_client(config: &ModelConfig) -> Result<Option<Arc<dyn Chat>>, ModelSetupError> {
    let http = HttpOptions {
        timeout: Duration::from_secs(config.timeout_secs),
        max_retries: config.retries,
        ..HttpOptions::default()
    };
    let name = || {
        config.name.clone().ok_or(ModelSetupError::Missing(
            "the model name is required (--model-name, or name in [model])",
        ))
    };
    Ok(match config.kind {
        ModelKind::Openai => {
            let mut client = OpenAiConfig::openai(name()?);
            if let Some(url) = &config.base_url {
                client.base_url.clone_from(url);
            }
            client.api_key_env = match config.api_key_env.as_deref() {
                Some("none") => None,
                Some(var) => Some(var.to_owned()),
                None => client.api_key_env,
            };
            client.http = http;
            Some(Arc::new(OpenAi::new(client)?))
        }
        ModelKind::Anthropic => {
            let mut client = AnthropicConfig::new(name()?);
            if let Some(url) = &config.base_url {
                client.base_url.clone_from(url);
            }
            if let Some(var) = &config.api_key_env {
                client.api_key_env.clone_from(var);
            }
            client.http = http;
            Some(Arc::new(Anthropic::new(client)?))
        }
        ModelKind::Journal | ModelKind::Command | ModelKind::Scripted => None,
    })
}

/// The model `config` describes; relative paths (the script) are taken under `home`.
pub fn build(config: &ModelConfig, home: &Path) -> Result<Arc<dyn Model>, ModelSetupError> {
    build_with_progress(config, home, None)
}

/// [`build`], a chat model (openai, anthropic) telling `progress` of every turn.
pub fn build_with_progress(
    config: &ModelConfig,
    home: &Path,
    progress: Option<Progress>,
) -> Result<Arc<dyn Model>, ModelSetupError> {
    Ok(match config.kind {
        ModelKind::Journal => Arc::new(Journal),
        ModelKind::Openai | ModelKind::Anthropic => {
            let chat = chat_client(config)?.ok_or(ModelSetupError::Missing("a chat model"))?;
            let mut model = ChatModel::new(chat);
            model.max_tokens = config.max_tokens;
            model.progress = progress;
            model.deadline = Some(Duration::from_secs(config.deadline_secs));
            Arc::new(model)
        }
        ModelKind::Command => {
            let command = config.command_line();
            let (program, args) = command.split_first().ok_or(ModelSetupError::Missing(
                "the command is required (--command, or command in [model])",
            ))?;
            Arc::new(Command::new(CommandConfig {
                program: program.clone(),
                args: args.to_vec(),
                timeout: Duration::from_secs(config.timeout_secs),
            }))
        }
        ModelKind::Scripted => {
            let script = config.script.as_ref().ok_or(ModelSetupError::Missing(
                "the script is required (--script, or script in [model])",
            ))?;
            let path = home.join(script);
            let text = std::fs::read_to_string(&path).map_err(|source| {
                ModelSetupError::Script { path: path.display().to_string(), source }
            })?;
            Arc::new(ChatModel::new(Arc::new(Scripted::from_json(&text)?)))
        }
    })
}
