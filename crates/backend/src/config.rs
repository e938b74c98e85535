//! Configuration: `<home>/scriptorium.toml`, typed with serde, plus environment overrides.
//!
//! Key decision: a configuration error is never silently defaulted. An unknown key is an error
//! naming it (with its line), an invalid value an error naming the key and the allowed values;
//! only a missing file (or a missing key) means the defaults. `memory.backend = "none"`
//! disables memory everywhere: no workspace is created and every surface says so.
//!
//! ```toml
//! [memory]
//! backend = "local"            # or "none"
//!
//! [memory.writer]
//! enabled = true
//! trigger_tokens = 16000       # 8000, 16000 or 32000
//! max_turns = 20
//! max_tokens_per_day = 2000000 # the writer's daily token budget (absent: none)
//!
//! [memory.core]
//! inject = true
//!
//! [memory.recall]
//! top_k = 5                    # 1..=10
//!
//! [model]
//! kind = "openai"              # journal (default), openai, anthropic, command, scripted
//! name = "gpt-4.1-mini"
//! base_url = "http://127.0.0.1:11434/v1"
//! api_key_env = "OPENAI_API_KEY"   # the variable's name, never the key; "none" for no key
//! timeout_secs = 120          # per model call
//! retries = 2                  # retries of a call that retrying can help, 0..=10
//! max_tokens = 8192            # per model turn, 256..=200000
//! deadline_secs = 900          # per writer run: no model turn starts after it
//!
//! [sessions]
//! store = "postgres://scriptorium@db.local/scriptorium"  # default: the embedded store in
//!                                                        # <home>/sessions
//!
//! [sync]
//! remote = "git@example.com:me/memory.git"  # a path, file://, ssh:// or https:// git remote
//! interval_secs = 600          # how often `watch` syncs; 0: only `scriptorium sync`
//!
//! [watch]
//! poll_secs = 300
//! idle_secs = 1800
//! nightly_hour = 3             # local time, 0..=23
//! ```
//!
//! Environment: `SCRIPTORIUM_MEMORY_BACKEND` overrides `memory.backend`, `SCRIPTORIUM_MODEL`
//! overrides `model.kind`, `SCRIPTORIUM_SESSIONS_STORE` overrides `sessions.store`,
//! `SCRIPTORIUM_SYNC_REMOTE` overrides `sync.remote`; the home itself comes from `SCRIPTORIUM_HOME` (resolved by the
//! caller), the API key from the variable `model.api_key_env` names.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file name under the home.
pub const CONFIG_FILE: &str = "scriptorium.toml";

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, has an unknown key or a value of the wrong type.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (names the key and the line).
        message: String,
    },
    /// A value outside what the key allows.
    #[error("invalid configuration value for {key}: {message}")]
    Invalid {
        /// The dotted key, e.g. `memory.writer.trigger_tokens`.
        key: &'static str,
        /// What is allowed and what was found.
        message: String,
    },
}

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[memory]`.
    pub memory: MemoryConfig,
    /// `[model]`: who writes.
    pub model: ModelConfig,
    /// `[watch]`: the runtime services.
    pub watch: WatchConfig,
    /// `[sessions]`: where the session store lives.
    pub sessions: SessionsConfig,
    /// `[sync]`: the git remote the memory workspace syncs through.
    pub sync: SyncConfig,
    /// `[privacy]`: the owner's own patterns to redact and values to keep (the built-in rules
    /// always run; see `scriptorium_redact`).
    pub privacy: scriptorium_redact::PrivacyConfig,
}

/// `[sync]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SyncConfig {
    /// The git remote (a path, `file://`, `ssh://`, `user@host:path` or `https://`); absent:
    /// no sync.
    pub remote: Option<String>,
    /// Seconds between the syncs `watch` runs; 0 turns them off.
    pub interval_secs: u64,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig { remote: None, interval_secs: 600 }
    }
}

/// `[sessions]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsConfig {
    /// `postgres://…` (or `postgresql://…`): the session store on that PostgreSQL database;
    /// absent: the embedded store in `<home>/sessions` (see [`crate::sessions`]).
    pub store: Option<String>,
}

/// `memory.backend`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The local workspace under the home.
    #[default]
    Local,
    /// Memory disabled.
    None,
}

/// `[memory]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// `local` or `none`.
    pub backend: BackendKind,
    /// `[memory.writer]`.
    pub writer: WriterSection,
    /// `[memory.core]`.
    pub core: CoreSection,
    /// `[memory.recall]`.
    pub recall: RecallSection,
}

/// `[memory.writer]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WriterSection {
    /// Whether `write` does anything (off: every write is "nothing to report").
    pub enabled: bool,
    /// Tokens that make a batch due: 8 000, 16 000 or 32 000.
    pub trigger_tokens: usize,
    /// Most model turns per run.
    pub max_turns: u32,
    /// The most tokens the writer's model may use per day (UTC, counted in
    /// `<memory>/.scriptorium/writer-usage.jsonl`); once reached, writes end
    /// `WRITER_BUDGET_REACHED` (retryable) and the turns stay pending. Absent: no limit
    /// (`scriptorium setup` writes one when it makes the agent the writer).
    pub max_tokens_per_day: Option<u64>,
}

impl Default for WriterSection {
    fn default() -> Self {
        WriterSection {
            enabled: true,
            trigger_tokens: 16_000,
            max_turns: 20,
            max_tokens_per_day: None,
        }
    }
}

/// The placeholder in `[model] command` that stands for `[model] name` (so that the model
/// the agent runs is changed in one place).
pub const MODEL_PLACEHOLDER: &str = "{model}";

impl ModelConfig {
    /// The command with [`MODEL_PLACEHOLDER`] replaced by the model name.
    pub fn command_line(&self) -> Vec<String> {
        let name = self.name.as_deref().unwrap_or_default();
        self.command.iter().map(|arg| arg.replace(MODEL_PLACEHOLDER, name)).collect()
    }
}

/// `[memory.core]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoreSection {
    /// Whether the core block is injected into the system prompt.
    pub inject: bool,
}

impl Default for CoreSection {
    fn default() -> Self {
        CoreSection { inject: true }
    }
}

/// `[memory.recall]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecallSection {
    /// Blocks recalled per turn, 1..=10.
    pub top_k: usize,
}

impl Default for RecallSection {
    fn default() -> Self {
        RecallSection { top_k: 5 }
    }
}

/// `model.kind`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// No model: the journal writer.
    #[default]
    Journal,
    /// An OpenAI-compatible chat-completions endpoint.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
    /// An external coding agent.
    Command,
    /// A recorded script of tool calls.
    Scripted,
}

impl ModelKind {
    fn parse(text: &str) -> Option<ModelKind> {
        Some(match text {
            "journal" => ModelKind::Journal,
            "openai" => ModelKind::Openai,
            "anthropic" => ModelKind::Anthropic,
            "command" => ModelKind::Command,
            "scripted" => ModelKind::Scripted,
            _ => return None,
        })
    }
}

/// `[model]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Which model writes.
    pub kind: ModelKind,
    /// The model ID (openai, anthropic; command: what `{model}` in the command stands for).
    pub name: Option<String>,
    /// The API base URL (openai, anthropic).
    pub base_url: Option<String>,
    /// The name of the environment variable holding the API key (`none`: no key).
    pub api_key_env: Option<String>,
    /// The external agent and its arguments (command).
    pub command: Vec<String>,
    /// The script file (scripted), relative to the home.
    pub script: Option<PathBuf>,
    /// Seconds a model call may take.
    pub timeout_secs: u64,
    /// How often a failed model call is retried when retrying can help (openai, anthropic).
    pub retries: u32,
    /// The most tokens a model turn may produce (openai, anthropic); a small local model
    /// answers sooner with a lower cap.
    pub max_tokens: u32,
    /// The most seconds one writer run (all its model turns) may take (openai, anthropic):
    /// checked before each turn, so the turn under way when it passes (one call, and its
    /// retries) still finishes.
    pub deadline_secs: u64,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            kind: ModelKind::Journal,
            name: None,
            base_url: None,
            api_key_env: None,
            command: Vec::new(),
            script: None,
            timeout_secs: 120,
            retries: 2,
            max_tokens: 8_192,
            deadline_secs: 900,
        }
    }
}

/// `[watch]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WatchConfig {
    /// Seconds between scans for idle sessions.
    pub poll_secs: u64,
    /// Seconds without a new turn after which a session is written at its boundary.
    pub idle_secs: u64,
    /// Local hour of the nightly reorganize, 0..=23.
    pub nightly_hour: u8,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig { poll_secs: 300, idle_secs: 1800, nightly_hour: 3 }
    }
}

impl Config {
    /// `<home>/scriptorium.toml` (the defaults when it does not exist) with the environment
    /// overrides applied, validated.
    pub fn load(home: &Path) -> Result<Config, ConfigError> {
        let path = home.join(CONFIG_FILE);
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text).map_err(|e| match e {
                ConfigError::Parse { message, .. } => {
                    ConfigError::Parse { path: path.clone(), message }
                }
                other => other,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        config.apply_env(|key| std::env::var(key).ok())?;
        config.validate()?;
        Ok(config)
    }

    /// The redactor of every door: the built-in rules with `[privacy]`'s patterns and
    /// allowlist (an invalid regex there is `privacy` naming the entry).
    pub fn redactor(&self) -> Result<scriptorium_redact::Redactor, ConfigError> {
        scriptorium_redact::Redactor::new(&self.privacy)
            .map_err(|error| ConfigError::Invalid { key: "privacy", message: error.to_string() })
    }

    /// Parses TOML text (no environment, not validated).
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: PathBuf::from(CONFIG_FILE),
            message: e.to_string().trim_end().to_owned(),
        })
    }

    /// Applies the environment overrides read through `var`.
    pub fn apply_env(&mut self, var: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(value) = var("SCRIPTORIUM_MEMORY_BACKEND") {
            self.memory.backend = match value.as_str() {
                "local" => BackendKind::Local,
                "none" => BackendKind::None,
                other => {
                    return Err(ConfigError::Invalid {
                        key: "memory.backend",
                        message: format!(
                            "SCRIPTORIUM_MEMORY_BACKEND must be local or none (got {other:?})"
                        ),
                    });
                }
            };
        }
        if let Some(value) = var("SCRIPTORIUM_SYNC_REMOTE") {
            self.sync.remote = Some(value).filter(|v| !v.is_empty());
        }
        if let Some(value) = var("SCRIPTORIUM_SESSIONS_STORE") {
            self.sessions.store = Some(value).filter(|v| !v.is_empty());
        }
        if let Some(value) = var("SCRIPTORIUM_MODEL") {
            self.model.kind = ModelKind::parse(&value).ok_or_else(|| ConfigError::Invalid {
                key: "model.kind",
                message: format!(
                    "SCRIPTORIUM_MODEL must be journal, openai, anthropic, command or scripted \
                     (got {value:?})"
                ),
            })?;
        }
        Ok(())
    }

    /// Checks the values the types do not.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.redactor()?;
        let writer = &self.memory.writer;
        if ![8_000, 16_000, 32_000].contains(&writer.trigger_tokens) {
            return Err(ConfigError::Invalid {
                key: "memory.writer.trigger_tokens",
                message: format!("must be 8000, 16000 or 32000 (got {})", writer.trigger_tokens),
            });
        }
        if !(1..=100).contains(&writer.max_turns) {
            return Err(ConfigError::Invalid {
                key: "memory.writer.max_turns",
                message: format!("must be 1..=100 (got {})", writer.max_turns),
            });
        }
        if writer.max_tokens_per_day.is_some_and(|max| max < 1_000) {
            return Err(ConfigError::Invalid {
                key: "memory.writer.max_tokens_per_day",
                message: format!(
                    "must be at least 1000 (one write uses thousands of tokens; leave it out for \
                     no limit) (got {})",
                    writer.max_tokens_per_day.unwrap_or_default()
                ),
            });
        }
        if !(1..=10).contains(&self.memory.recall.top_k) {
            return Err(ConfigError::Invalid {
                key: "memory.recall.top_k",
                message: format!("must be 1..=10 (got {})", self.memory.recall.top_k),
            });
        }
        if self.watch.nightly_hour > 23 {
            return Err(ConfigError::Invalid {
                key: "watch.nightly_hour",
                message: format!("must be 0..=23 (got {})", self.watch.nightly_hour),
            });
        }
        if self.watch.poll_secs == 0 {
            return Err(ConfigError::Invalid {
                key: "watch.poll_secs",
                message: "must be at least 1".into(),
            });
        }
        if self.model.timeout_secs == 0 {
            return Err(ConfigError::Invalid {
                key: "model.timeout_secs",
                message: "must be at least 1".into(),
            });
        }
        if self.model.retries > 10 {
            return Err(ConfigError::Invalid {
                key: "model.retries",
                message: "must be at most 10".into(),
            });
        }
        if self.model.deadline_secs == 0 {
            return Err(ConfigError::Invalid {
                key: "model.deadline_secs",
                message: "must be at least 1".into(),
            });
        }
        if !(256..=200_000).contains(&self.model.max_tokens) {
            return Err(ConfigError::Invalid {
                key: "model.max_tokens",
                message: "must be between 256 and 200000".into(),
            });
        }
        if let Some(store) = &self.sessions.store
            && !scriptorium_session_pg::is_postgres_url(store)
        {
            return Err(ConfigError::Invalid {
                key: "sessions.store",
                message: "must be a postgres:// or postgresql:// URL (leave it out for the \
                          embedded store in <home>/sessions)"
                    .into(),
            });
        }
        if self.sync.remote.as_deref().is_some_and(|r| r.trim().is_empty() || r.starts_with('-')) {
            return Err(ConfigError::Invalid {
                key: "sync.remote",
                message: "must be a git remote: a path or a URL".into(),
            });
        }
        let needs_name = matches!(self.model.kind, ModelKind::Openai | ModelKind::Anthropic);
        if needs_name && self.model.name.as_deref().is_none_or(str::is_empty) {
            return Err(ConfigError::Invalid {
                key: "model.name",
                message: "the openai and anthropic models need a model name".into(),
            });
        }
        if self.model.kind == ModelKind::Command && self.model.command.is_empty() {
            return Err(ConfigError::Invalid {
                key: "model.command",
                message: "the command model needs the program, e.g. [\"claude\", \"-p\"]".into(),
            });
        }
        let placeholder = self.model.command.iter().any(|arg| arg.contains(MODEL_PLACEHOLDER));
        if self.model.kind == ModelKind::Command
            && placeholder
            && self.model.name.as_deref().is_none_or(str::is_empty)
        {
            return Err(ConfigError::Invalid {
                key: "model.name",
                message: format!(
                    "the command names the model as {MODEL_PLACEHOLDER}, so [model] needs a name \
                     (e.g. name = \"haiku\")"
                ),
            });
        }
        if self.model.kind == ModelKind::Scripted && self.model.script.is_none() {
            return Err(ConfigError::Invalid {
                key: "model.script",
                message: "the scripted model needs a script file".into(),
            });
        }
        Ok(())
    }

    /// Whether memory is on.
    pub fn enabled(&self) -> bool {
        self.memory.backend == BackendKind::Local
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_a_full_file() {
        assert_eq!(Config::parse("").expect("empty"), Config::default());
        let config = Config::parse(
            "[memory]\nbackend = \"none\"\n[memory.writer]\ntrigger_tokens = 8000\n\
             [model]\nkind = \"openai\"\nname = \"llama3\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n\
             api_key_env = \"none\"\n[watch]\nnightly_hour = 4\n",
        )
        .expect("parsed");
        config.validate().expect("valid");
        assert!(!config.enabled());
        assert_eq!(config.memory.writer.trigger_tokens, 8_000);
        assert_eq!(config.model.kind, ModelKind::Openai);
        assert_eq!(config.watch.nightly_hour, 4);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err =
            Config::parse("[memory]\nbackend = \"local\"\ncolour = 3\n").expect_err("unknown");
        let message = err.to_string();
        assert!(message.contains("colour") && message.contains("line 3"), "{message}");
        let err = Config::parse("[memory]\nbackend = \"remote\"\n").expect_err("variant");
        assert!(err.to_string().contains("remote"), "{err}");
        let bad = Config::parse("[memory.writer]\ntrigger_tokens = 1234\n").expect("parsed");
        let err = bad.validate().expect_err("invalid");
        assert_eq!(
            err.to_string(),
            "invalid configuration value for memory.writer.trigger_tokens: must be 8000, 16000 \
             or 32000 (got 1234)"
        );
        let bad = Config::parse("[model]\nkind = \"openai\"\n").expect("parsed");
        assert!(bad.validate().expect_err("no name").to_string().contains("model.name"));
        for (line, key) in [
            ("retries = 11", "model.retries"),
            ("max_tokens = 100", "model.max_tokens"),
            ("deadline_secs = 0", "model.deadline_secs"),
        ] {
            let bad = Config::parse(&format!("[model]\n{line}\n")).expect("parsed");
            assert!(bad.validate().expect_err(line).to_string().contains(key), "{line}");
        }
        let tuned = Config::parse("[model]\nretries = 0\nmax_tokens = 1024\n").expect("parsed");
        tuned.validate().expect("valid");
        assert_eq!((tuned.model.retries, tuned.model.max_tokens), (0, 1024));
        let bad = Config::parse("[memory.writer]\nmax_tokens_per_day = 10\n").expect("parsed");
        let err = bad.validate().expect_err("a budget too small");
        assert!(err.to_string().contains("memory.writer.max_tokens_per_day"), "{err}");
        let bad = Config::parse(
            "[model]\nkind = \"command\"\ncommand = [\"claude\", \"--model\", \"{model}\"]\n",
        )
        .expect("parsed");
        assert!(bad.validate().expect_err("no name").to_string().contains("model.name"));
    }

    #[test]
    fn the_command_names_the_configured_model() {
        let config = Config::parse(
            "[memory.writer]\nmax_tokens_per_day = 2000000\n[model]\nkind = \"command\"\n\
             name = \"haiku\"\ncommand = [\"claude\", \"-p\", \"--model\", \"{model}\"]\n",
        )
        .expect("parsed");
        config.validate().expect("valid");
        assert_eq!(config.memory.writer.max_tokens_per_day, Some(2_000_000));
        assert_eq!(config.model.command_line(), ["claude", "-p", "--model", "haiku"]);
    }

    #[test]
    fn the_session_store_is_embedded_unless_a_postgres_url_is_given() {
        assert_eq!(Config::default().sessions.store, None);
        let config = Config::parse("[sessions]\nstore = \"postgres://u@h/db\"\n").expect("parsed");
        config.validate().expect("valid");
        assert_eq!(config.sessions.store.as_deref(), Some("postgres://u@h/db"));
        let bad = Config::parse("[sessions]\nstore = \"/var/lib/sessions\"\n").expect("parsed");
        let err = bad.validate().expect_err("not a URL");
        assert!(err.to_string().contains("sessions.store"), "{err}");
        let mut config = Config::default();
        let url = "postgresql://x@127.0.0.1:5/y";
        config
            .apply_env(|k| (k == "SCRIPTORIUM_SESSIONS_STORE").then(|| url.to_owned()))
            .expect("override");
        assert_eq!(config.sessions.store.as_deref(), Some(url));
    }

    #[test]
    fn environment_overrides_win_and_are_checked() {
        let mut config = Config::default();
        config
            .apply_env(|k| (k == "SCRIPTORIUM_MEMORY_BACKEND").then(|| "none".to_owned()))
            .expect("override");
        assert!(!config.enabled());
        let err = config
            .apply_env(|k| (k == "SCRIPTORIUM_MODEL").then(|| "gpt".to_owned()))
            .expect_err("bad model");
        assert!(err.to_string().contains("model.kind"), "{err}");
    }
}
