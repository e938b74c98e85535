//! `scriptorium setup <claude-code|codex> [--scope user|project] [--uninstall] [--dry-run]`:
//! initializes the home's memory (as `scriptorium init` does) and installs the hooks (see
//! `docs/hooks.md`) and the MCP server into the agent's own configuration, and removes exactly
//! that again.
//!
//! | Agent, scope | Hooks | MCP server |
//! |---|---|---|
//! | Claude Code, user | `~/.claude/settings.json` | `~/.claude.json` (`mcpServers`) |
//! | Claude Code, project | `.claude/settings.json` | `.mcp.json` (`mcpServers`) |
//! | Codex, user | `$CODEX_HOME/hooks.json` (`~/.codex`) | `$CODEX_HOME/config.toml` (`[mcp_servers.scriptorium]`, `[features] hooks = true`) |
//! | Codex, project | `.codex/hooks.json` | `.codex/config.toml` |
//!
//! Every edit keeps the rest of the file: JSON keys in their order, TOML comments and layout
//! (`toml_edit`). A file that does not parse, or whose `hooks`, an event's list, `mcpServers`,
//! `[features]` or `[mcp_servers]` is not what setup must add to, is refused
//! (`SETUP_UNPARSABLE`, naming the key) and nothing is written. Running setup again changes
//! nothing; the hook commands name this binary and this home, so after moving either, setup
//! updates its own entries. What setup added beyond its own entries (the Codex feature flag) is
//! recorded in `<home>/setup/<agent>-<scope>.json`, so `--uninstall` removes only that.
//! `--dry-run` prints the unified diff of each file (and whether the memory would be
//! initialized) and writes nothing.
//!
//! # What is atomic
//!
//! Every edit is computed and validated before the first write. The files (the agent's two and
//! setup's record) are then written one after the other, each replaced atomically (a temporary
//! file beside it, fsynced, renamed over it, the directory fsynced); when one fails, the ones
//! already written are put back as they were (the same atomic replace, or removed when setup
//! created them), so either all are installed or none is. A crash between two files is not
//! undone: it leaves the files written so far, which the next run completes.
//!
//! Before its first change an agent file is copied to `<file>.scriptorium-backup`. The backup
//! and the temporary `<file>.scriptorium-tmp` are created exclusively (`O_EXCL`, `O_NOFOLLOW`:
//! never through a link planted at their path) with the original's mode (0600 for a new file,
//! as these files hold API keys and tokens), and removed when the run fails; a temporary file
//! a crashed run left is unlinked first. Setup's own files in the home are 0600 in a 0700
//! directory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use indexmap::IndexMap;
use scriptorium_backend::wire::Code;
use serde::{Deserialize, Serialize};

use crate::home::Home;
use crate::init;
use crate::output::outln;

mod writer;

/// Arguments of `scriptorium setup`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The agent to set up.
    #[arg(value_enum)]
    agent: AgentArg,
    /// Where: the user's configuration, or the current directory's project.
    #[arg(long, value_enum, default_value = "user")]
    scope: Scope,
    /// Remove what setup installed.
    #[arg(long)]
    uninstall: bool,
    /// Print the changes as a diff and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// The `codex` binary that trusts the installed hooks and writes with `--writer agent`
    /// (default: `codex` on `PATH`).
    #[arg(long, value_name = "PATH")]
    codex: Option<PathBuf>,
    /// The `claude` binary that writes with `--writer agent` (default: `claude` on `PATH`).
    #[arg(long, value_name = "PATH")]
    claude: Option<PathBuf>,
    /// Who writes the memory: `agent` (this agent itself, its cheapest capable model, on your
    /// own login; the default), `journal` (no model) or `none` (capture only). Without it, a
    /// writer already configured in scriptorium.toml is kept.
    #[arg(long, value_enum)]
    writer: Option<writer::WriterArg>,
    /// The model the agent writes with (default: haiku for Claude Code, gpt-6-luna for Codex);
    /// `[model] name` in scriptorium.toml.
    #[arg(long, value_name = "NAME")]
    writer_model: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum AgentArg {
    ClaudeCode,
    Codex,
}

impl AgentArg {
    fn name(self) -> &'static str {
        match self {
            AgentArg::ClaudeCode => "claude-code",
            AgentArg::Codex => "codex",
        }
    }

    /// The events hooked (both agents have the same five).
    fn events(self) -> &'static [&'static str] {
        &["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Scope {
    User,
    Project,
}

/// A JSON value that keeps its object keys in file order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(IndexMap<String, Json>),
}

impl Json {
    fn object() -> Json {
        Json::Object(IndexMap::new())
    }

    fn as_object_mut(&mut self) -> Option<&mut IndexMap<String, Json>> {
        match self {
            Json::Object(map) => Some(map),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }
}

/// What setup records of its own changes beyond its entries.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    /// Setup turned Codex's `[features] hooks` on (it was not on before).
    #[serde(default)]
    codex_hooks_feature: bool,
    /// The `[hooks.state."<key>"]` entries setup wrote to trust its hooks in Codex.
    #[serde(default)]
    codex_trusted: Vec<String>,
}

/// A file as setup found it.
#[derive(Clone, Debug, PartialEq)]
struct Original {
    text: String,
    /// Its permission bits (`mode & 0o777`).
    mode: u32,
}

/// Whose file an edit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// The agent's configuration: backed up before setup first changes it, its mode kept.
    Agent,
    /// Setup's record in the home: 0600 in a 0700 directory, never backed up.
    Setup,
}

/// One file setup edits: where, as it is now, and its text after the edit (`None`: the file
/// goes, because setup created it and uninstalling leaves it empty).
struct Edit {
    path: PathBuf,
    before: Option<Original>,
    after: Option<String>,
    owner: Owner,
}

impl Edit {
    /// The edit of the agent's `path` to `after`; a file left empty that setup created (it has
    /// no backup) is removed instead.
    fn new(path: &Path, before: Option<Original>, after: String, empty: bool) -> Edit {
        let after = match (&before, empty) {
            // A missing file that would be left empty is not created.
            (None, true) => None,
            (Some(_), true) if !present(&backup_of(path)) => None,
            _ => Some(after),
        };
        Edit { path: path.to_path_buf(), before, after, owner: Owner::Agent }
    }

    fn changes(&self) -> bool {
        self.before.as_ref().map(|b| &b.text) != self.after.as_ref()
    }

    /// The mode the file is written with: the original's, else 0600.
    fn mode(&self) -> u32 {
        match (self.owner, &self.before) {
            (Owner::Agent, Some(original)) => original.mode,
            _ => 0o600,
        }
    }
}

/// Where the original of `path` is kept.
fn backup_of(path: &Path) -> PathBuf {
    beside(path, ".scriptorium-backup")
}

/// The temporary file `path` is written to before it is renamed over `path`.
fn temp_of(path: &Path) -> PathBuf {
    beside(path, ".scriptorium-tmp")
}

fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The writer configuration setup gives the home for `args` (see [`writer::configure`]).
fn writer_of(home: &Home, args: &Args) -> anyhow::Result<writer::Configured> {
    let claude_code = args.agent == AgentArg::ClaudeCode;
    let program = match args.agent {
        AgentArg::ClaudeCode => writer::program(args.claude.as_ref(), "claude")?,
        AgentArg::Codex => writer::program(args.codex.as_ref(), "codex")?,
    };
    // Codex has no switch for "no MCP server": each one configured is turned off by name.
    // (The user's configuration, which the writer's run loads whatever the scope.)
    let servers = match args.agent {
        AgentArg::ClaudeCode => Vec::new(),
        AgentArg::Codex => {
            let dir = match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
                Some(dir) => PathBuf::from(dir),
                None => user_home()?.join(".codex"),
            };
            writer::codex_mcp_servers(&dir.join("config.toml"))
        }
    };
    writer::configure(
        home.root(),
        claude_code,
        args.writer,
        &program,
        args.writer_model.as_deref(),
        &servers,
    )
}

/// A dry run's account of `writer`: the diff of `scriptorium.toml` and the line.
fn preview_writer(home: &Home, writer: &writer::Configured) {
    let config = home.root().join(scriptorium_backend::config::CONFIG_FILE);
    let name = config.display().to_string();
    if let Some(text) = &writer.text {
        let old = std::fs::read_to_string(&config).unwrap_or_default();
        let diff = similar::TextDiff::from_lines(&old, text);
        outln!("{}", diff.unified_diff().header(&name, &name));
    }
    outln!("would set up the {}", writer.line);
}

/// Writes `writer`'s `scriptorium.toml` when it changes, and says what the writer is.
fn apply_writer(home: &Home, writer: &writer::Configured) -> anyhow::Result<()> {
    if let Some(text) = &writer.text {
        let config = home.root().join(scriptorium_backend::config::CONFIG_FILE);
        replace(&config, text, 0o600)
            .with_context(|| format!("writing the writer's configuration {}", config.display()))?;
    }
    outln!("{}", writer.line);
    Ok(())
}

/// Whether anything is at `path` (a symlink counts, dangling or not: it is never followed).
fn present(path: &Path) -> bool {
    !matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Runs the command: exit 0 (also when nothing changes), 1 when a file does not parse or has
/// an unexpected shape.
pub(crate) fn run(home: &Home, args: &Args) -> anyhow::Result<ExitCode> {
    // The Claude Code plugin, when enabled, runs the hooks and the MCP server (docs/plugin.md).
    if args.agent == AgentArg::ClaudeCode
        && !args.uninstall
        && let Some(plugin) = crate::plugin::enabled()
    {
        // The writer is still setup's to configure: the plugin brings hooks, not a writer.
        let writer = writer_of(home, args)?;
        let code = crate::plugin::setup_defers(home, &plugin, args.dry_run)?;
        if args.dry_run {
            preview_writer(home, &writer);
        } else {
            apply_writer(home, &writer)?;
        }
        return Ok(code);
    }
    let exe = std::env::current_exe().context("the scriptorium binary's path")?;
    let base = match args.scope {
        Scope::User => user_home()?,
        Scope::Project => std::env::current_dir().context("the current directory")?,
    };
    let record_path = home.root().join("setup").join(format!(
        "{}-{}.json",
        args.agent.name(),
        scope_name(args.scope)
    ));
    let record_before = read(&record_path)?;
    // A record that does not parse records nothing (it is rewritten whole).
    let mut record: Record =
        record_before.as_ref().and_then(|r| serde_json::from_str(&r.text).ok()).unwrap_or_default();
    let commands = Commands { exe: &exe, home: home.root(), agent: args.agent };
    // Codex's `config.toml`, where its hooks are trusted after the edits.
    let mut codex_config = None;
    let mut edits = match args.agent {
        AgentArg::ClaudeCode => {
            let (settings, mcp) = match args.scope {
                Scope::User => (base.join(".claude/settings.json"), base.join(".claude.json")),
                Scope::Project => (base.join(".claude/settings.json"), base.join(".mcp.json")),
            };
            vec![
                edit_json(&settings, |doc| hooks_json(doc, &commands, args.uninstall))?,
                edit_json(&mcp, |doc| mcp_json(doc, &commands, args.uninstall))?,
            ]
        }
        AgentArg::Codex => {
            let dir = match args.scope {
                Scope::User => std::env::var_os("CODEX_HOME")
                    .filter(|v| !v.is_empty())
                    .map_or_else(|| base.join(".codex"), PathBuf::from),
                Scope::Project => base.join(".codex"),
            };
            let config = dir.join("config.toml");
            let edits = vec![
                edit_json(&dir.join("hooks.json"), |doc| {
                    hooks_json(doc, &commands, args.uninstall)
                })?,
                edit_toml(&config, &commands, args.uninstall, &mut record)?,
            ];
            codex_config = Some(config);
            edits
        }
    };
    edits.push(record_edit(&record_path, record_before, &record, args.uninstall)?);
    // The writer (the home's scriptorium.toml; an uninstall leaves it as it is).
    let writer = if args.uninstall { None } else { Some(writer_of(home, args)?) };
    let changed: Vec<&Edit> = edits.iter().filter(|e| e.changes()).collect();
    let agent_files: Vec<&Edit> =
        changed.iter().copied().filter(|e| e.owner == Owner::Agent).collect();
    if args.dry_run {
        if !args.uninstall && !init::exists(home) {
            outln!("would initialize the memory workspace at {}", home.memory().display());
        }
        for edit in &agent_files {
            let name = edit.path.display().to_string();
            let old = edit.before.as_ref().map_or("", |b| b.text.as_str());
            let diff = similar::TextDiff::from_lines(old, edit.after.as_deref().unwrap_or(""));
            outln!("{}", diff.unified_diff().header(&name, &name));
        }
        if agent_files.is_empty() {
            outln!("nothing to change");
        }
        if let Some(writer) = &writer {
            preview_writer(home, writer);
        }
        return Ok(ExitCode::SUCCESS);
    }
    // The memory first: hooks installed without it would capture sessions whose every write
    // fails.
    if !args.uninstall {
        let initialized = init::initialize(home)?;
        if initialized.created {
            outln!("initialized the memory workspace at {}", home.memory().display());
        }
    }
    apply(&changed, args.uninstall)?;
    if let Some(writer) = &writer {
        apply_writer(home, writer)?;
    }
    for edit in &agent_files {
        let done = match (&edit.after, args.uninstall) {
            (None, _) => "removed",
            (Some(_), true) => "updated",
            (Some(_), false) => "set up",
        };
        outln!("{done} {}", edit.path.display());
    }
    if agent_files.is_empty() {
        outln!(
            "{} is {}",
            args.agent.name(),
            if args.uninstall { "not set up" } else { "already set up" }
        );
    }
    if let Some(config) = codex_config.as_deref().filter(|_| !args.uninstall) {
        match args.codex.clone().or_else(|| on_path("codex")) {
            Some(codex) => {
                let trusted = trust_codex_hooks(&codex, &base, config, &commands)
                    .context("trusting the hooks in Codex (what was set up stays)")?;
                let mut new = false;
                for key in trusted {
                    outln!("trusted the Codex hook {key}");
                    if !record.codex_trusted.contains(&key) {
                        record.codex_trusted.push(key);
                        new = true;
                    }
                }
                if new {
                    let before = read(&record_path)?;
                    let edit = record_edit(&record_path, before, &record, false)?;
                    apply(&[&edit], false)?;
                }
            }
            None => outln!(
                "note: no `codex` on PATH to trust the hooks with; Codex asks you to review them \
                 once (/hooks), or run setup again with --codex PATH"
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The edit of setup's record: rewritten with what it holds now, removed by an uninstall that
/// leaves nothing to remember.
fn record_edit(
    path: &Path,
    before: Option<Original>,
    record: &Record,
    uninstall: bool,
) -> anyhow::Result<Edit> {
    let empty = !record.codex_hooks_feature && record.codex_trusted.is_empty();
    let after = if uninstall && empty {
        None
    } else {
        Some(serde_json::to_string_pretty(record).context("serializing the setup record")?)
    };
    Ok(Edit { path: path.to_path_buf(), before, after, owner: Owner::Setup })
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::User => "user",
        Scope::Project => "project",
    }
}

fn user_home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("HOME is not set: use --scope project"))
}

/// The commands setup writes: this binary and this home.
struct Commands<'a> {
    exe: &'a Path,
    home: &'a Path,
    agent: AgentArg,
}

impl Commands<'_> {
    fn hook(&self, event: &str) -> String {
        format!(
            "{} --home {} hook {} {event}",
            shell_quote(&self.exe.to_string_lossy()),
            shell_quote(&self.home.to_string_lossy()),
            self.agent.name()
        )
    }

    fn mcp_args(&self) -> Vec<String> {
        vec!["--home".into(), self.home.to_string_lossy().into_owned(), "mcp".into()]
    }

    /// Whether `command` is a hook command setup wrote for this agent and `event` (whatever
    /// binary path and home it named).
    fn is_ours(&self, command: &str, event: &str) -> bool {
        let suffix = format!(" hook {} {event}", self.agent.name());
        // The binary path as the shell reads it: setup quotes one holding a space.
        let program = crate::plugin::first_word(command);
        command.ends_with(&suffix)
            && Path::new(&program).file_name().is_some_and(|n| n == "scriptorium")
    }
}

/// `text` quoted for a POSIX shell when it holds anything but safe characters.
fn shell_quote(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

fn unparsable(path: &Path, why: impl std::fmt::Display) -> anyhow::Error {
    crate::output::problem(
        Code::SetupUnparsable,
        format!("{} does not parse ({why}); nothing was changed", path.display()),
    )
}

/// A file that parses but where setup cannot add its entries (`why` names the key).
fn misshapen(path: &Path, why: &str) -> anyhow::Error {
    crate::output::problem(
        Code::SetupUnparsable,
        format!("{}: {why}; nothing was changed", path.display()),
    )
}

/// Reads `path` and its mode (`None` when missing); anything but a regular file (or a link to
/// one) is refused.
fn read(path: &Path) -> anyhow::Result<Option<Original>> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if !meta.is_file() {
        return Err(unparsable(path, "not a regular file"));
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Some(Original { text, mode: meta.permissions().mode() & 0o777 }))
}

/// The edit `change` makes to the JSON object in `path`; `change` refuses a shape it cannot
/// edit, naming the key.
fn edit_json(
    path: &Path,
    change: impl FnOnce(&mut Json) -> Result<(), String>,
) -> anyhow::Result<Edit> {
    let before = read(path)?;
    let mut doc = match before.as_ref().map(|b| b.text.as_str()) {
        None => Json::object(),
        Some(text) if text.trim().is_empty() => Json::object(),
        Some(text) => serde_json::from_str::<Json>(text).map_err(|e| unparsable(path, e))?,
    };
    if doc.as_object_mut().is_none() {
        return Err(unparsable(path, "not a JSON object"));
    }
    change(&mut doc).map_err(|why| misshapen(path, &why))?;
    let mut after = serde_json::to_string_pretty(&doc).context("serializing JSON")?;
    after.push('\n');
    Ok(Edit::new(path, before, after, doc == Json::object()))
}

/// Installs (or removes) this agent's hook entries in a `{"hooks": {Event: [groups]}}` file.
/// Installing refuses a `hooks` that is not an object or an event's value that is not a list
/// (it would be set up without that hook); uninstalling leaves them alone, as nothing of
/// setup's can be in them.
fn hooks_json(doc: &mut Json, commands: &Commands<'_>, uninstall: bool) -> Result<(), String> {
    let Some(root) = doc.as_object_mut() else { return Ok(()) };
    if !root.contains_key("hooks") && uninstall {
        return Ok(());
    }
    let hooks = root.entry("hooks".to_owned()).or_insert_with(Json::object);
    let Some(events) = hooks.as_object_mut() else {
        return if uninstall { Ok(()) } else { Err("hooks is not an object".into()) };
    };
    if !uninstall
        && let Some(event) = commands
            .agent
            .events()
            .iter()
            .find(|event| events.get(**event).is_some_and(|v| !matches!(v, Json::Array(_))))
    {
        return Err(format!("hooks.{event} is not a list"));
    }
    for event in commands.agent.events() {
        let wanted = commands.hook(event);
        let groups = events.entry((*event).to_owned()).or_insert_with(|| Json::Array(Vec::new()));
        let Json::Array(groups) = groups else { continue };
        let mut found = false;
        for group in groups.iter_mut() {
            let Some(Json::Array(handlers)) =
                group.as_object_mut().and_then(|g| g.get_mut("hooks"))
            else {
                continue;
            };
            handlers.retain_mut(|handler| {
                let Some(map) = handler.as_object_mut() else { return true };
                let ours = map
                    .get("command")
                    .and_then(Json::as_str)
                    .is_some_and(|c| commands.is_ours(c, event));
                if !ours {
                    return true;
                }
                if uninstall || found {
                    return false;
                }
                found = true;
                map.insert("command".into(), Json::String(wanted.clone()));
                true
            });
        }
        groups.retain(|g| match g {
            Json::Object(map) => !matches!(map.get("hooks"), Some(Json::Array(h)) if h.is_empty()),
            _ => true,
        });
        if !uninstall && !found {
            let mut handler = IndexMap::new();
            handler.insert("type".to_owned(), Json::String("command".into()));
            handler.insert("command".to_owned(), Json::String(wanted));
            let mut group = IndexMap::new();
            group.insert("hooks".to_owned(), Json::Array(vec![Json::Object(handler)]));
            groups.push(Json::Object(group));
        }
    }
    events.retain(|_, groups| !matches!(groups, Json::Array(g) if g.is_empty()));
    if events.is_empty() {
        root.shift_remove("hooks");
    }
    Ok(())
}

/// Installs (or removes) `mcpServers.scriptorium` (Claude Code's `~/.claude.json`, `.mcp.json`).
/// Installing refuses an `mcpServers` that is not an object.
fn mcp_json(doc: &mut Json, commands: &Commands<'_>, uninstall: bool) -> Result<(), String> {
    let Some(root) = doc.as_object_mut() else { return Ok(()) };
    if uninstall {
        if let Some(servers) = root.get_mut("mcpServers").and_then(Json::as_object_mut) {
            servers.shift_remove("scriptorium");
            if servers.is_empty() {
                root.shift_remove("mcpServers");
            }
        }
        return Ok(());
    }
    let servers = root.entry("mcpServers".to_owned()).or_insert_with(Json::object);
    let Some(servers) = servers.as_object_mut() else {
        return Err("mcpServers is not an object".into());
    };
    let mut server = IndexMap::new();
    server.insert("type".to_owned(), Json::String("stdio".into()));
    server.insert("command".to_owned(), Json::String(commands.exe.to_string_lossy().into_owned()));
    server.insert(
        "args".to_owned(),
        Json::Array(commands.mcp_args().into_iter().map(Json::String).collect()),
    );
    servers.insert("scriptorium".to_owned(), Json::Object(server));
    Ok(())
}

/// Codex's `config.toml`: `[features] hooks = true` and `[mcp_servers.scriptorium]`, comments
/// and layout kept. Installing refuses a `features`, `mcp_servers`, `hooks` or `hooks.state`
/// that is not a table (the last two are where the hooks are trusted after the edits).
fn edit_toml(
    path: &Path,
    commands: &Commands<'_>,
    uninstall: bool,
    record: &mut Record,
) -> anyhow::Result<Edit> {
    let before = read(path)?;
    let text = before.as_ref().map_or("", |b| b.text.as_str());
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| unparsable(path, e))?;
    if uninstall {
        if let Some(servers) = doc.get_mut("mcp_servers").and_then(|s| s.as_table_like_mut()) {
            servers.remove("scriptorium");
            if servers.is_empty() {
                doc.remove("mcp_servers");
            }
        }
        if record.codex_hooks_feature {
            if let Some(features) = doc.get_mut("features").and_then(|f| f.as_table_like_mut()) {
                features.remove("hooks");
                if features.is_empty() {
                    doc.remove("features");
                }
            }
            record.codex_hooks_feature = false;
        }
        if let Some(state) = doc
            .get_mut("hooks")
            .and_then(|h| h.as_table_like_mut())
            .and_then(|h| h.get_mut("state"))
            .and_then(|s| s.as_table_like_mut())
        {
            for key in record.codex_trusted.drain(..) {
                state.remove(&key);
            }
        }
        prune_empty(&mut doc, "hooks", "state");
    } else {
        let trust = doc.get("hooks");
        if trust.is_some_and(|h| h.as_table_like().is_none()) {
            return Err(misshapen(path, "hooks is not a table"));
        }
        let state = trust.and_then(|h| h.as_table_like()).and_then(|h| h.get("state"));
        if state.is_some_and(|s| s.as_table_like().is_none()) {
            return Err(misshapen(path, "hooks.state is not a table"));
        }
        let features = doc
            .entry("features")
            .or_insert_with(toml_edit::table)
            .as_table_like_mut()
            .ok_or_else(|| misshapen(path, "features is not a table"))?;
        let on = features.get("hooks").and_then(toml_edit::Item::as_bool) == Some(true);
        if !on {
            features.insert("hooks", toml_edit::value(true));
            record.codex_hooks_feature = true;
        }
        let servers = doc.entry("mcp_servers").or_insert_with(toml_edit::table);
        if let Some(table) = servers.as_table_mut() {
            table.set_implicit(true);
        }
        let servers = servers
            .as_table_like_mut()
            .ok_or_else(|| misshapen(path, "mcp_servers is not a table"))?;
        let mut server = toml_edit::Table::new();
        server["command"] = toml_edit::value(commands.exe.to_string_lossy().into_owned());
        let args: toml_edit::Array = commands.mcp_args().into_iter().collect();
        server["args"] = toml_edit::value(args);
        // Through `TableLike`, so an inline `mcp_servers = {…}` gets an inline entry.
        servers.insert("scriptorium", toml_edit::Item::Table(server));
    }
    let after = doc.to_string();
    let empty = after.trim().is_empty();
    Ok(Edit::new(path, before, after, empty))
}

/// Removes `doc[outer][inner]` when it is an empty table, then `doc[outer]` when that leaves it
/// empty.
fn prune_empty(doc: &mut toml_edit::DocumentMut, outer: &str, inner: &str) {
    let Some(table) = doc.get_mut(outer).and_then(|t| t.as_table_like_mut()) else { return };
    if table.get(inner).and_then(toml_edit::Item::as_table_like).is_some_and(|t| t.is_empty()) {
        table.remove(inner);
    }
    if table.is_empty() {
        doc.remove(outer);
    }
}

/// Trusts the hooks setup installed, the way Codex records a person's review: it asks Codex's
/// own app server (`codex app-server`, JSON-RPC on stdio: `initialize`, then `hooks/list` for
/// `cwd`) for each hook's key and current hash, and writes `[hooks.state."<key>"] trusted_hash`
/// for the hooks that run `scriptorium hook codex …` into `config`. Returns the keys it
/// trusted, or why it could not.
fn trust_codex_hooks(
    codex: &Path,
    cwd: &Path,
    config: &Path,
    commands: &Commands<'_>,
) -> anyhow::Result<Vec<String>> {
    use std::io::{BufRead as _, Write as _};
    let mut child = std::process::Command::new(codex)
        .arg("app-server")
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("starting {} app-server", codex.display()))?;
    let mut stdin = child.stdin.take().context("the app server's stdin")?;
    let stdout = child.stdout.take().context("the app server's stdout")?;
    let (sender, answers) = std::sync::mpsc::channel::<serde_json::Value>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(message) = serde_json::from_str::<serde_json::Value>(&line)
                && sender.send(message).is_err()
            {
                return;
            }
        }
    });
    let mut call = |id: u64,
                    method: &str,
                    params: serde_json::Value|
     -> anyhow::Result<serde_json::Value> {
        let request =
            serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        writeln!(stdin, "{request}").context("writing to the app server")?;
        stdin.flush()?;
        loop {
            let message = answers
                .recv_timeout(std::time::Duration::from_secs(60))
                .with_context(|| format!("no answer to {method} from the Codex app server"))?;
            if message["id"] == id {
                if let Some(error) = message.get("error") {
                    anyhow::bail!("the Codex app server refused {method}: {error}");
                }
                return Ok(message["result"].clone());
            }
        }
    };
    let client = serde_json::json!({ "clientInfo": {
        "name": "scriptorium", "title": "Scriptorium", "version": env!("CARGO_PKG_VERSION") } });
    let listed = call(1, "initialize", client)
        .and_then(|_| call(2, "hooks/list", serde_json::json!({ "cwds": [cwd] })));
    let _ = child.kill();
    let _ = child.wait();
    let listed = listed?;
    let mut trusted = Vec::new();
    let original = read(config)?;
    let text = original.as_ref().map_or("", |o| o.text.as_str());
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| unparsable(config, e))?;
    let hooks = listed["data"].as_array().into_iter().flatten();
    for hook in hooks.flat_map(|entry| entry["hooks"].as_array().into_iter().flatten()) {
        let (Some(key), Some(hash), Some(command)) =
            (hook["key"].as_str(), hook["currentHash"].as_str(), hook["command"].as_str())
        else {
            continue;
        };
        let ours = commands.agent.events().iter().any(|event| commands.is_ours(command, event));
        // Already trusted at this very hash (a second run): nothing to write, nothing to say.
        if !ours || hook["trustStatus"] == "trusted" {
            continue;
        }
        let hooks_table = doc.entry("hooks").or_insert_with(toml_edit::table);
        if let Some(table) = hooks_table.as_table_mut() {
            table.set_implicit(true);
        }
        let state = hooks_table
            .as_table_like_mut()
            .context("[hooks] in config.toml is not a table")?
            .entry("state")
            .or_insert_with(toml_edit::table);
        if let Some(table) = state.as_table_mut() {
            table.set_implicit(true);
        }
        let mut entry = toml_edit::Table::new();
        entry["trusted_hash"] = toml_edit::value(hash);
        state
            .as_table_like_mut()
            .context("hooks.state in config.toml is not a table")?
            .insert(key, toml_edit::Item::Table(entry));
        trusted.push(key.to_owned());
    }
    if !trusted.is_empty() {
        let mode = original.as_ref().map_or(0o600, |o| o.mode);
        replace(config, &doc.to_string(), mode)?;
    }
    Ok(trusted)
}

/// `name` on `PATH`, if it is there.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// What writing one edit did, so that it can be put back.
struct Undo<'a> {
    edit: &'a Edit,
    /// The file was replaced or removed.
    changed: bool,
    /// The backup this run created.
    backup: Option<PathBuf>,
    /// The directories this run created, outermost first.
    dirs: Vec<PathBuf>,
}

impl Undo<'_> {
    /// Puts the file back as it was (atomically) and removes what this run created beside it.
    fn run(&self) -> anyhow::Result<()> {
        let path = &self.edit.path;
        if self.changed {
            match &self.edit.before {
                Some(original) => replace(path, &original.text, original.mode)?,
                None => remove(path)?,
            }
        }
        if let Some(backup) = &self.backup {
            remove(backup)?;
        }
        for dir in self.dirs.iter().rev() {
            // A directory something else has written into meanwhile stays.
            let _ = std::fs::remove_dir(dir);
        }
        Ok(())
    }
}

/// Writes `edits` in order, all or nothing: when one fails, those written before it (and what
/// the failed one created) are put back as they were (see the module docs).
fn apply(edits: &[&Edit], uninstall: bool) -> anyhow::Result<()> {
    let mut done = Vec::new();
    for edit in edits {
        let mut undo = Undo { edit, changed: false, backup: None, dirs: Vec::new() };
        let result = write_edit(&mut undo, uninstall);
        done.push(undo);
        let Err(error) = result else { continue };
        let mut left = Vec::new();
        for undo in done.iter().rev() {
            if let Err(e) = undo.run() {
                left.push(format!("{} ({e:#})", undo.edit.path.display()));
            }
        }
        return Err(if left.is_empty() {
            error.context("setup failed and was undone: every file is as it was")
        } else {
            error.context(format!(
                "setup failed and could not put back {} (an original is in its \
                 .scriptorium-backup)",
                left.join(", ")
            ))
        });
    }
    Ok(())
}

/// Writes one edit, recording in `undo` what it did: its missing directories (0700), the
/// backup of an agent's file before its first change, then the file replaced or removed.
fn write_edit(undo: &mut Undo<'_>, uninstall: bool) -> anyhow::Result<()> {
    let edit = undo.edit;
    let path = &edit.path;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    create_dirs(dir, &mut undo.dirs)?;
    if edit.owner == Owner::Agent
        && !uninstall
        && let Some(original) = &edit.before
    {
        let backup = backup_of(path);
        // Whatever is there already (an earlier backup, or anything planted) is kept and never
        // written through.
        if !present(&backup) {
            create_exclusive(&backup, original.text.as_bytes(), original.mode)
                .with_context(|| format!("backing up {}", path.display()))?;
            undo.backup = Some(backup);
        }
    }
    match &edit.after {
        None => remove(path)?,
        Some(text) => replace_unsynced(path, text, edit.mode())?,
    }
    undo.changed = true;
    sync_dir(dir)
}

/// Creates the missing directories down to `dir` (mode 0700), pushing each onto `created`.
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    let missing: Vec<&Path> =
        dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !present(d)).collect();
    for dir in missing.into_iter().rev() {
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => created.push(dir.to_path_buf()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    Ok(())
}

/// Replaces `path` with `text` atomically, with `mode`: [`replace_unsynced`], then the
/// directory fsynced.
fn replace(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    replace_unsynced(path, text, mode)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Replaces `path` with `text`: written to `<path>.scriptorium-tmp` (created exclusively with
/// `mode`, fsynced), then renamed over `path`. A crash leaves the old or the new file; a failure
/// removes the temporary file. Whatever was at the temporary path before (a crashed run's file,
/// a planted link) is unlinked first, never followed.
fn replace_unsynced(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    let temp = temp_of(path);
    remove(&temp)?;
    create_exclusive(&temp, text.as_bytes(), mode)?;
    if let Err(e) = std::fs::rename(&temp, path) {
        let _ = std::fs::remove_file(&temp);
        return Err(e).with_context(|| format!("replacing {}", path.display()));
    }
    Ok(())
}

/// Creates `path` with `bytes` and exactly `mode` (`mode & 0o777`), fsynced: `O_EXCL` and
/// `O_NOFOLLOW`, so an existing file or link there is an error and never written through. A
/// failure after the file was created removes it.
fn create_exclusive(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let mode = mode & 0o777;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    // The umask may have narrowed `mode` at creation; the copy gets exactly the original's.
    let written = file
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
}

/// Unlinks `path` (a link itself, never its target); a missing one is fine.
fn remove(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// `fsync` of a directory: the entries renamed, created or removed in it are durable.
fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing the directory {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed rename cannot be provoked through the binary without a race (the target is
    /// read, and refused when it is no regular file, before anything is written), so the
    /// replace is tested directly: a directory where the file goes fails the rename.
    #[test]
    fn a_rename_that_fails_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("a directory");
        let target = dir.path().join("settings.json");
        std::fs::create_dir(&target).expect("mkdir");
        let err = replace(&target, "{}\n", 0o600).expect_err("the rename fails");
        assert!(format!("{err:#}").starts_with("replacing "), "{err:#}");
        assert_eq!(scriptorium_testkit::file_names(dir.path()), ["settings.json"]);
    }
}
