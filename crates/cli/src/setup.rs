//! `scriptorium setup <claude-code|codex> [--scope user|project] [--uninstall] [--dry-run]`:
//! installs the hooks (see `docs/hooks.md`) and the MCP server into the agent's own
//! configuration, and removes exactly that again.
//!
//! | Agent, scope | Hooks | MCP server |
//! |---|---|---|
//! | Claude Code, user | `~/.claude/settings.json` | `~/.claude.json` (`mcpServers`) |
//! | Claude Code, project | `.claude/settings.json` | `.mcp.json` (`mcpServers`) |
//! | Codex, user | `$CODEX_HOME/hooks.json` (`~/.codex`) | `$CODEX_HOME/config.toml` (`[mcp_servers.scriptorium]`, `[features] hooks = true`) |
//! | Codex, project | `.codex/hooks.json` | `.codex/config.toml` |
//!
//! Every edit keeps the rest of the file: JSON keys in their order, TOML comments and layout
//! (`toml_edit`). A file that does not parse is refused (`SETUP_UNPARSABLE`) and nothing is
//! written. Before its first change a file is copied to `<file>.scriptorium-backup`. Running setup
//! again changes nothing; the hook commands name this binary and this home, so after moving
//! either, setup updates its own entries. What setup added beyond its own entries (the Codex
//! feature flag) is recorded in `<home>/setup/<agent>-<scope>.json`, so `--uninstall` removes only
//! that. `--dry-run` prints the unified diff of each file and writes nothing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use indexmap::IndexMap;
use scriptorium_backend::wire::Code;
use serde::{Deserialize, Serialize};

use crate::home::Home;
use crate::output::outln;

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
    /// The `codex` binary that trusts the installed hooks (default: `codex` on `PATH`).
    #[arg(long, value_name = "PATH")]
    codex: Option<PathBuf>,
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

/// One file setup edits: where, its bytes now, and its bytes after the edit (`None`: the file
/// goes, because setup created it and uninstalling leaves it empty).
struct Edit {
    path: PathBuf,
    before: Option<String>,
    after: Option<String>,
}

impl Edit {
    /// The edit of `path` to `after`; a file left empty that setup created (it has no backup)
    /// is removed instead.
    fn new(path: &Path, before: Option<String>, after: String, empty: bool) -> Edit {
        let after = match (&before, empty) {
            // A missing file that would be left empty is not created.
            (None, true) => None,
            (Some(_), true) if !backup_of(path).exists() => None,
            _ => Some(after),
        };
        Edit { path: path.to_path_buf(), before, after }
    }

    fn changes(&self) -> bool {
        self.before != self.after
    }
}

/// Where the original of `path` is kept.
fn backup_of(path: &Path) -> PathBuf {
    let mut backup = path.as_os_str().to_owned();
    backup.push(".scriptorium-backup");
    PathBuf::from(backup)
}

/// Runs the command: exit 0 (also when nothing changes), 1 when a file does not parse.
pub(crate) fn run(home: &Home, args: &Args) -> anyhow::Result<ExitCode> {
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
    let mut record: Record = std::fs::read(&record_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let commands = Commands { exe: &exe, home: home.root(), agent: args.agent };
    // Codex's `config.toml`, where its hooks are trusted after the edits.
    let mut codex_config = None;
    let edits = match args.agent {
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
                    hooks_json(doc, &commands, args.uninstall);
                })?,
                edit_toml(&config, &commands, args.uninstall, &mut record)?,
            ];
            codex_config = Some(config);
            edits
        }
    };
    let changed: Vec<&Edit> = edits.iter().filter(|e| e.changes()).collect();
    if args.dry_run {
        for edit in &changed {
            let name = edit.path.display().to_string();
            let (old, new) = (edit.before.as_deref(), edit.after.as_deref());
            let diff = similar::TextDiff::from_lines(old.unwrap_or(""), new.unwrap_or(""));
            outln!("{}", diff.unified_diff().header(&name, &name));
        }
        if changed.is_empty() {
            outln!("nothing to change");
        }
        return Ok(ExitCode::SUCCESS);
    }
    for edit in &changed {
        write_file(edit, args.uninstall)?;
        let done = match (&edit.after, args.uninstall) {
            (None, _) => "removed",
            (Some(_), true) => "updated",
            (Some(_), false) => "set up",
        };
        outln!("{done} {}", edit.path.display());
    }
    if changed.is_empty() {
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
                for key in trusted {
                    outln!("trusted the Codex hook {key}");
                    if !record.codex_trusted.contains(&key) {
                        record.codex_trusted.push(key);
                    }
                }
            }
            None => outln!(
                "note: no `codex` on PATH to trust the hooks with; Codex asks you to review them \
                 once (/hooks), or run setup again with --codex PATH"
            ),
        }
    }
    save_record(&record_path, &record, args.uninstall)?;
    Ok(ExitCode::SUCCESS)
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
        let program = command.split_whitespace().next().unwrap_or_default().trim_matches('\'');
        command.ends_with(&suffix)
            && Path::new(program).file_name().is_some_and(|n| n == "scriptorium")
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

/// Reads `path` (`None` when missing).
fn read(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn edit_json(path: &Path, change: impl FnOnce(&mut Json)) -> anyhow::Result<Edit> {
    let before = read(path)?;
    let mut doc = match before.as_deref() {
        None => Json::object(),
        Some(text) if text.trim().is_empty() => Json::object(),
        Some(text) => serde_json::from_str::<Json>(text).map_err(|e| unparsable(path, e))?,
    };
    if doc.as_object_mut().is_none() {
        return Err(unparsable(path, "not a JSON object"));
    }
    change(&mut doc);
    let mut after = serde_json::to_string_pretty(&doc).context("serializing JSON")?;
    after.push('\n');
    Ok(Edit::new(path, before, after, doc == Json::object()))
}

/// Installs (or removes) this agent's hook entries in a `{"hooks": {Event: [groups]}}` file.
fn hooks_json(doc: &mut Json, commands: &Commands<'_>, uninstall: bool) {
    let Some(root) = doc.as_object_mut() else { return };
    if !root.contains_key("hooks") && uninstall {
        return;
    }
    let hooks = root.entry("hooks".to_owned()).or_insert_with(Json::object);
    let Some(events) = hooks.as_object_mut() else { return };
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
}

/// Installs (or removes) `mcpServers.scriptorium` (Claude Code's `~/.claude.json`, `.mcp.json`).
fn mcp_json(doc: &mut Json, commands: &Commands<'_>, uninstall: bool) {
    let Some(root) = doc.as_object_mut() else { return };
    if uninstall {
        if let Some(servers) = root.get_mut("mcpServers").and_then(Json::as_object_mut) {
            servers.shift_remove("scriptorium");
            if servers.is_empty() {
                root.shift_remove("mcpServers");
            }
        }
        return;
    }
    let servers = root.entry("mcpServers".to_owned()).or_insert_with(Json::object);
    let Some(servers) = servers.as_object_mut() else { return };
    let mut server = IndexMap::new();
    server.insert("type".to_owned(), Json::String("stdio".into()));
    server.insert("command".to_owned(), Json::String(commands.exe.to_string_lossy().into_owned()));
    server.insert(
        "args".to_owned(),
        Json::Array(commands.mcp_args().into_iter().map(Json::String).collect()),
    );
    servers.insert("scriptorium".to_owned(), Json::Object(server));
}

/// Codex's `config.toml`: `[features] hooks = true` and `[mcp_servers.scriptorium]`, comments
/// and layout kept.
fn edit_toml(
    path: &Path,
    commands: &Commands<'_>,
    uninstall: bool,
    record: &mut Record,
) -> anyhow::Result<Edit> {
    let before = read(path)?;
    let mut doc: toml_edit::DocumentMut =
        before.as_deref().unwrap_or_default().parse().map_err(|e| unparsable(path, e))?;
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
        let features = doc.entry("features").or_insert_with(toml_edit::table);
        let on = features.get("hooks").and_then(toml_edit::Item::as_bool) == Some(true);
        if !on {
            features["hooks"] = toml_edit::value(true);
            record.codex_hooks_feature = true;
        }
        let servers = doc.entry("mcp_servers").or_insert_with(toml_edit::table);
        if let Some(table) = servers.as_table_mut() {
            table.set_implicit(true);
        }
        let mut server = toml_edit::Table::new();
        server["command"] = toml_edit::value(commands.exe.to_string_lossy().into_owned());
        let args: toml_edit::Array = commands.mcp_args().into_iter().collect();
        server["args"] = toml_edit::value(args);
        servers["scriptorium"] = toml_edit::Item::Table(server);
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
    let text = read(config)?.unwrap_or_default();
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
        state[key] = toml_edit::Item::Table(entry);
        trusted.push(key.to_owned());
    }
    if !trusted.is_empty() {
        let edit =
            Edit { path: config.to_path_buf(), before: Some(text), after: Some(doc.to_string()) };
        write_file(&edit, false)?;
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

/// Writes an edit atomically (temporary beside the file, then a rename), keeping the file's
/// mode, after copying the original to `<file>.scriptorium-backup` the first time setup
/// installs into it.
fn write_file(edit: &Edit, uninstall: bool) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = &edit.path;
    let Some(after) = &edit.after else {
        return std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()));
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let backup = backup_of(path);
    if let Some(original) = &edit.before
        && !backup.exists()
        && !uninstall
    {
        std::fs::write(&backup, original)
            .with_context(|| format!("backing up {}", path.display()))?;
    }
    let mode = std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o7777);
    let mut temp = path.as_os_str().to_owned();
    temp.push(".scriptorium-tmp");
    let temp = PathBuf::from(temp);
    std::fs::write(&temp, after).with_context(|| format!("writing {}", temp.display()))?;
    std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&temp, path).with_context(|| format!("replacing {}", path.display()))
}

fn save_record(path: &Path, record: &Record, uninstall: bool) -> anyhow::Result<()> {
    if uninstall && !record.codex_hooks_feature && record.codex_trusted.is_empty() {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => return Ok(()),
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_vec_pretty(record)?)?;
    Ok(())
}
