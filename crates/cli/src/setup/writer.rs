//! Who writes the memory, as `setup` configures it (`--writer agent|journal|none`, see
//! `docs/writer.md`): by default the agent being set up, run headless in the stage with its
//! cheapest capable model and a locked-down tool set, on the user's own login.
//!
//! Key decision: a writer the user configured is kept. Without `--writer`, setup only fills in
//! a `[model]` that is not there; `--writer` replaces `[model]` whole (a half-kept section,
//! e.g. an old `base_url` beside the new command, would be a writer nobody chose).
//!
//! Key decision: the command line is the whole lock-down, so it is written out in
//! `scriptorium.toml` where the user can read it, and the model stands there as `{model}`, so
//! that `[model] name` alone changes it. Each flag is explained in `docs/writer.md`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use scriptorium_backend::config::{CONFIG_FILE, Config, MODEL_PLACEHOLDER};

/// `--writer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum WriterArg {
    /// The agent itself (`claude -p` / `codex exec`) with its cheapest capable model, on your
    /// own login.
    Agent,
    /// No model: one cited paragraph per user turn under topics/journal/.
    Journal,
    /// Capture sessions, never write them automatically.
    None,
}

/// The daily token budget setup writes with the agent writer.
pub(crate) const DEFAULT_BUDGET: u64 = 2_000_000;

/// Seconds one writer run may take (the agent takes several model turns).
const TIMEOUT_SECS: i64 = 600;

/// The Claude Code tools the writer may use: the file tools, nothing else.
const CLAUDE_TOOLS: &str = "Read,Write,Edit,Glob,Grep";

/// The tools denied by name as well (a second lock behind `--tools`).
const CLAUDE_DENIED: &str = "Bash,WebFetch,WebSearch,Task,NotebookEdit";

/// The MCP servers of the Codex configuration at `config`, with Scriptorium's (which setup
/// installs there), by name, each with whether it is reached by URL: `-c mcp_servers={}` does
/// not remove them (a `-c` table merges into the configuration), so the writer's command turns
/// each off by name.
pub(crate) fn codex_mcp_servers(config: &Path) -> Vec<(String, bool)> {
    let text = std::fs::read_to_string(config).unwrap_or_default();
    let doc: toml_edit::DocumentMut = text.parse().unwrap_or_default();
    let mut servers: Vec<(String, bool)> = doc
        .get("mcp_servers")
        .and_then(toml_edit::Item::as_table_like)
        .map(|t| {
            let url = |item: &toml_edit::Item| {
                item.as_table_like().is_some_and(|server| server.contains_key("url"))
            };
            t.iter().map(|(name, item)| (name.to_owned(), url(item))).collect()
        })
        .unwrap_or_default();
    if !servers.iter().any(|(n, _)| n == "scriptorium") {
        servers.push(("scriptorium".to_owned(), false));
    }
    servers
}

/// A TOML key for a dotted `-c` path: bare when it can be, quoted otherwise.
fn toml_key(name: &str) -> String {
    let bare =
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { name.to_owned() } else { toml_edit::Value::from(name).to_string().trim().to_owned() }
}

/// The agent's writer: its default model and its command line (`{model}` standing for the
/// model), with `program` as the binary; for Codex, each of `mcp_servers` turned off.
pub(crate) fn agent_command(
    claude_code: bool,
    program: &str,
    mcp_servers: &[(String, bool)],
) -> (&'static str, Vec<String>) {
    let mut line: Vec<String> = vec![program.to_owned()];
    let settings = serde_json::json!({
        "disableAllHooks": true,
        "permissions": { "deny": CLAUDE_DENIED.split(',').collect::<Vec<_>>() },
    })
    .to_string();
    let args: Vec<String> = if claude_code {
        [
            "-p",
            "--output-format",
            "json",
            "--model",
            MODEL_PLACEHOLDER,
            "--restricted",
            "--permission-mode",
            "acceptEdits",
            "--permission-prompts",
            "none",
            "--tools",
            CLAUDE_TOOLS,
            "--allowedTools",
            CLAUDE_TOOLS,
            "--disallowedTools",
            CLAUDE_DENIED,
            "--strict-mcp-config",
            "--mcp-config",
            r#"{"mcpServers":{}}"#,
            "--settings",
            &settings,
            "--no-session-persistence",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    } else {
        [
            "exec",
            "--json",
            "--model",
            MODEL_PLACEHOLDER,
            "--sandbox",
            "workspace-write",
            "--skip-git-repo-check",
            "--ephemeral",
            "--ignore-rules",
            "--disable",
            "hooks",
            "--disable",
            "shell_tool",
            "--disable",
            "plugins",
            "--disable",
            "apps",
            "--disable",
            "multi_agent",
            "--disable",
            "image_generation",
            "--disable",
            "browser_use",
            "--disable",
            "computer_use",
            "-c",
            "mcp_servers={}",
            "-c",
            "web_search=\"disabled\"",
            "-c",
            "sandbox_workspace_write.network_access=false",
            "-c",
            "sandbox_workspace_write.exclude_slash_tmp=true",
            "-c",
            "sandbox_workspace_write.exclude_tmpdir_env_var=true",
            "-c",
            "approval_policy=\"never\"",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    line.extend(args);
    if !claude_code {
        // A whole, valid definition: `enabled=false` alone would make Codex refuse its
        // configuration ("invalid transport") for a server that is not (or no longer) there.
        for (name, url) in mcp_servers {
            let transport = if *url { "url=\"http://127.0.0.1:9/\"" } else { "command=\"true\"" };
            line.push("-c".to_owned());
            line.push(format!("mcp_servers.{}={{{transport},enabled=false}}", toml_key(name)));
        }
    }
    let model = if claude_code { "haiku" } else { "gpt-6-luna" };
    (model, line)
}

/// What setup did to the writer, in one line for the user.
pub(crate) struct Configured {
    /// The line.
    pub(crate) line: String,
    /// The configuration file's new text, when it changes.
    pub(crate) text: Option<String>,
}

/// The writer configuration of the home's `scriptorium.toml` for `choice` (explicit when the
/// user passed `--writer`), with `program` as the agent's binary (`claude`, `codex` or a path)
/// and `model` overriding the default model.
pub(crate) fn configure(
    home: &Path,
    claude_code: bool,
    choice: Option<WriterArg>,
    program: &str,
    model: Option<&str>,
    mcp_servers: &[(String, bool)],
) -> anyhow::Result<Configured> {
    let path = home.join(CONFIG_FILE);
    let before = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut = before.parse().with_context(|| {
        format!("{} is not valid TOML; fix it or pass no --writer", path.display())
    })?;
    let agent = if claude_code { "Claude Code" } else { "Codex" };
    let switch = format!(
        "switch with `scriptorium setup {} --writer journal` (no model) or edit [model] in {}",
        if claude_code { "claude-code" } else { "codex" },
        path.display()
    );
    let configured_kind =
        doc.get("model").and_then(|m| m.get("kind")).and_then(|k| k.as_str()).map(str::to_owned);
    let disabled = doc
        .get("memory")
        .and_then(|m| m.get("writer"))
        .and_then(|w| w.get("enabled"))
        .and_then(toml_edit::Item::as_bool)
        == Some(false);
    if choice.is_none() && disabled {
        return Ok(Configured {
            line: format!(
                "writer: kept none ([memory.writer] enabled = false in {}); `--writer agent` \
                 makes {agent} the writer",
                path.display()
            ),
            text: None,
        });
    }
    if choice.is_none()
        && let Some(kind) = configured_kind
    {
        return Ok(Configured {
            line: format!(
                "writer: kept the writer configured in {} (model kind {kind}); `--writer agent` \
                 makes {agent} the writer",
                path.display()
            ),
            text: None,
        });
    }
    let line = match choice.unwrap_or(WriterArg::Agent) {
        WriterArg::Agent => {
            let (default_model, command) = agent_command(claude_code, program, mcp_servers);
            let name = model.unwrap_or(default_model);
            let table = model_table(&mut doc)?;
            table["kind"] = toml_edit::value("command");
            table["name"] = toml_edit::value(name);
            let mut array = toml_edit::Array::new();
            for arg in &command {
                array.push(arg.as_str());
            }
            table["command"] = toml_edit::value(array);
            table["timeout_secs"] = toml_edit::value(TIMEOUT_SECS);
            let writer = writer_table(&mut doc)?;
            writer.remove("enabled");
            if !writer.contains_key("max_tokens_per_day") {
                writer["max_tokens_per_day"] = toml_edit::value(DEFAULT_BUDGET as i64);
            }
            let budget = writer["max_tokens_per_day"].as_integer().unwrap_or_default();
            format!(
                "writer: {agent} writes the memory with model {name}, on your own {agent} login \
                 (at most {budget} tokens a day, [memory.writer] max_tokens_per_day); {switch}"
            )
        }
        WriterArg::Journal => {
            model_table(&mut doc)?["kind"] = toml_edit::value("journal");
            writer_table(&mut doc)?.remove("enabled");
            format!(
                "writer: the journal (no model) writes one cited paragraph per user turn; \
                 `--writer agent` makes {agent} the writer"
            )
        }
        WriterArg::None => {
            writer_table(&mut doc)?["enabled"] = toml_edit::value(false);
            format!(
                "writer: none; sessions are captured and never written automatically \
                 ([memory.writer] enabled = false); `--writer agent` makes {agent} the writer"
            )
        }
    };
    let text = doc.to_string();
    // What setup writes must load: never leave a configuration every command refuses.
    let mut config = Config::parse(&text).map_err(|e| anyhow::anyhow!("{e}"))?;
    config.apply_env(|_| None).map_err(|e| anyhow::anyhow!("{e}"))?;
    config.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Configured { line, text: (text != before).then_some(text) })
}

/// `[model]`, emptied (its comments stay): a chosen writer replaces the section whole.
fn model_table(doc: &mut toml_edit::DocumentMut) -> anyhow::Result<&mut toml_edit::Table> {
    let table = doc
        .entry("model")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_mut()
        .context("[model] in scriptorium.toml is not a table")?;
    table.clear();
    Ok(table)
}

/// `[memory.writer]`, created when missing.
fn writer_table(doc: &mut toml_edit::DocumentMut) -> anyhow::Result<&mut toml_edit::Table> {
    let memory = doc
        .entry("memory")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_mut()
        .context("[memory] in scriptorium.toml is not a table")?;
    memory
        .entry("writer")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_mut()
        .context("[memory.writer] in scriptorium.toml is not a table")
}

/// The agent's binary the writer runs: the path given, else its name (found on `PATH` when the
/// writer runs, so that an update of the agent is picked up).
pub(crate) fn program(given: Option<&PathBuf>, name: &str) -> anyhow::Result<String> {
    match given {
        Some(path) => Ok(std::path::absolute(path)
            .with_context(|| format!("resolving {}", path.display()))?
            .to_string_lossy()
            .into_owned()),
        None => Ok(name.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_writer_is_kept_unless_one_is_chosen() {
        let home = tempfile::tempdir().expect("home");
        let path = home.path().join(CONFIG_FILE);
        std::fs::write(&path, "# mine\n[model]\nkind = \"openai\"\nname = \"gpt-4.1-mini\"\n")
            .expect("config");
        let kept = configure(home.path(), true, None, "claude", None, &[]).expect("configure");
        assert!(kept.text.is_none(), "nothing changes");
        assert!(kept.line.contains("kept"), "{}", kept.line);
        let chosen = configure(home.path(), true, Some(WriterArg::Agent), "claude", None, &[])
            .expect("agent");
        let text = chosen.text.expect("a new configuration");
        assert!(text.starts_with("# mine\n"), "the rest of the file stays: {text}");
        let config = Config::parse(&text).expect("parses");
        assert_eq!(config.model.name.as_deref(), Some("haiku"));
        assert_eq!(config.model.base_url, None, "the old section is replaced whole");
        assert_eq!(config.memory.writer.max_tokens_per_day, Some(DEFAULT_BUDGET));
        let line = config.model.command_line();
        assert_eq!(line[..2], ["claude", "-p"]);
        assert!(line.windows(2).any(|w| w == ["--model", "haiku"]), "{line:?}");
        assert!(chosen.line.contains("haiku") && chosen.line.contains("--writer journal"));
    }

    #[test]
    fn none_turns_the_writer_off_and_journal_needs_no_model() {
        let home = tempfile::tempdir().expect("home");
        let none =
            configure(home.path(), false, Some(WriterArg::None), "codex", None, &[]).expect("none");
        let config = Config::parse(&none.text.expect("text")).expect("parses");
        assert!(!config.memory.writer.enabled);
        std::fs::write(home.path().join(CONFIG_FILE), "[memory.writer]\nenabled = false\n")
            .expect("config");
        let journal = configure(home.path(), false, Some(WriterArg::Journal), "codex", None, &[])
            .expect("journal");
        let text = journal.text.expect("text");
        let config = Config::parse(&text).expect("parses");
        assert!(config.memory.writer.enabled);
        assert_eq!(config.model.kind, scriptorium_backend::config::ModelKind::Journal);
        std::fs::write(home.path().join(CONFIG_FILE), text).expect("config");
        let agent =
            configure(home.path(), false, Some(WriterArg::Agent), "codex", Some("gpt-5.5"), &[])
                .expect("agent");
        let config = Config::parse(&agent.text.expect("text")).expect("parses");
        assert_eq!(config.model.command_line()[..2], ["codex", "exec"]);
        assert!(config.model.command_line().windows(2).any(|w| w == ["--model", "gpt-5.5"]));
        let servers = [("scriptorium".to_owned(), false), ("my.docs".to_owned(), true)];
        let (_, line) = agent_command(false, "codex", &servers);
        let off: Vec<&str> =
            line.windows(2).filter(|w| w[0] == "-c").map(|w| w[1].as_str()).collect();
        assert!(
            off.contains(&"mcp_servers.scriptorium={command=\"true\",enabled=false}"),
            "{off:?}"
        );
        assert!(
            off.contains(&"mcp_servers.\"my.docs\"={url=\"http://127.0.0.1:9/\",enabled=false}"),
            "{off:?}"
        );
        let dir = tempfile::tempdir().expect("dir");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, "[mcp_servers.docs]\ncommand = \"x\"\n").expect("write");
        let found = codex_mcp_servers(&config);
        assert_eq!(found, [("docs".to_owned(), false), ("scriptorium".to_owned(), false)]);
    }
}
