//! Building the writer's [`Model`] from the `[model]` configuration.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use scriptorium_model_clients::anthropic::{Anthropic, AnthropicConfig};
use scriptorium_model_clients::http::HttpOptions;
use scriptorium_model_clients::openai::{OpenAi, OpenAiConfig};
use scriptorium_writer::model::ModelError;
use scriptorium_writer::model::command::{Command, CommandConfig};
use scriptorium_writer::model::journal::Journal;
use scriptorium_writer::model::scripted::Scripted;
use scriptorium_writer::{ChatModel, Model};

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

/// The model `config` describes; relative paths (the script) are taken under `home`.
pub fn build(config: &ModelConfig, home: &Path) -> Result<Arc<dyn Model>, ModelSetupError> {
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
        ModelKind::Journal => Arc::new(Journal),
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
            let mut chat = ChatModel::new(Arc::new(OpenAi::new(client)?));
            chat.max_tokens = config.max_tokens;
            Arc::new(chat)
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
            let mut chat = ChatModel::new(Arc::new(Anthropic::new(client)?));
            chat.max_tokens = config.max_tokens;
            Arc::new(chat)
        }
        ModelKind::Command => {
            let (program, args) = config.command.split_first().ok_or(ModelSetupError::Missing(
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
