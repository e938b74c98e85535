//! The Claude Code plugin (`plugin/scriptorium` in the repository, listed by the marketplace
//! `.claude-plugin/marketplace.json`; see `docs/plugin.md`) and `scriptorium setup claude-code`
//! install the same hooks and MCP server. Both at once would run every hook twice (two imports,
//! two recalls injected per prompt), so exactly one set runs, and setup's wins:
//!
//! - **setup, when the plugin is enabled**: `setup claude-code` initializes the memory, writes
//!   nothing to Claude Code's files, and says so ([`enabled`], [`setup_defers`]). Its
//!   `--uninstall` works as always.
//! - **the plugin's hooks, when setup's are installed**: a hook Claude Code runs for the plugin
//!   (it sets `CLAUDE_PLUGIN_ROOT` to the plugin's directory for the plugin's hooks and for no
//!   others) reads its payload, appends one `HOOK_PLUGIN_DEFERS` line to `<home>/logs/hooks.log`
//!   and exits 0 without doing anything, when setup's hooks are in a Claude Code settings file
//!   that applies to the session ([`hook_stands_down`]).
//!
//! Setup's hooks win because they name their binary and home explicitly, and removing them is
//! one command (`scriptorium setup claude-code --uninstall`), after which the plugin's run.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::home::Home;
use crate::init;
use crate::output::outln;

/// The plugin's name in its `plugin.json` and in its id, `scriptorium@<marketplace>`.
pub(crate) const NAME: &str = "scriptorium";

/// The hook events the plugin and setup both hook.
const EVENTS: [&str; 5] = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"];

/// The most of a payload read before it is dropped (as `scriptorium hook` reads it).
const MAX_PAYLOAD: u64 = 8 * 1024 * 1024;

/// The plugin, enabled in a Claude Code settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Enabled {
    /// Its id, `scriptorium@<marketplace>`.
    pub(crate) id: String,
    /// The settings file that enables it.
    pub(crate) settings: PathBuf,
}

/// The Claude Code settings files that apply to a session in `project`, user first: the user's
/// `~/.claude/settings.json` (when `user` is known), then the project's `.claude/settings.json`
/// and `.claude/settings.local.json`.
fn settings_files(user: Option<&Path>, project: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        user.map(|u| u.join(".claude/settings.json")).into_iter().collect();
    files.push(project.join(".claude/settings.json"));
    files.push(project.join(".claude/settings.local.json"));
    files
}

/// A settings file's JSON; a missing or unparsable file is none (setup itself refuses a file it
/// must edit that does not parse, naming it).
fn settings(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The plugin, when a settings file that applies in `project` enables it
/// (`"enabledPlugins": {"scriptorium@<marketplace>": true}`).
pub(crate) fn enabled_in(user: Option<&Path>, project: &Path) -> Option<Enabled> {
    settings_files(user, project).into_iter().find_map(|path| {
        let doc = settings(&path)?;
        let id = doc["enabledPlugins"].as_object()?.iter().find_map(|(id, on)| {
            let plugin = id.split_once('@').map_or(id.as_str(), |(name, _)| name);
            (plugin == NAME && on == &Value::Bool(true)).then(|| id.clone())
        })?;
        Some(Enabled { id, settings: path })
    })
}

/// [`enabled_in`] for the user's home (`$HOME`) and the current directory.
pub(crate) fn enabled() -> Option<Enabled> {
    let user = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let project = std::env::current_dir().ok()?;
    enabled_in(user.as_deref(), &project)
}

/// Whether `command` is a `scriptorium hook claude-code <EVENT>` command, as setup writes it
/// (whatever binary path and `--home` it names).
pub(crate) fn is_hook_command(command: &str) -> bool {
    Path::new(&first_word(command)).file_name().is_some_and(|n| n == "scriptorium")
        && EVENTS.iter().any(|event| command.ends_with(&format!(" hook claude-code {event}")))
}

/// The first word of a POSIX shell command, unquoted: setup quotes a path that holds anything
/// but safe characters as `'…'` (a quote inside as `'\''`).
pub(crate) fn first_word(command: &str) -> String {
    let mut word = String::new();
    let mut chars = command.trim_start().chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => word.extend(chars.by_ref().take_while(|&c| c != '\'')),
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => break,
            c => word.push(c),
        }
    }
    word
}

/// The first settings file applying in `project` that holds a `scriptorium hook claude-code`
/// command: setup's hooks, installed.
pub(crate) fn setup_hooks_in(user: Option<&Path>, project: &Path) -> Option<PathBuf> {
    settings_files(user, project).into_iter().find(|path| {
        let Some(doc) = settings(path) else { return false };
        let Some(events) = doc["hooks"].as_object() else { return false };
        events
            .values()
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|group| group["hooks"].as_array())
            .flatten()
            .filter_map(|handler| handler["command"].as_str())
            .any(is_hook_command)
    })
}

/// Whether this process is a hook (or the MCP server) Claude Code runs for this plugin:
/// `CLAUDE_PLUGIN_ROOT` names a directory whose `.claude-plugin/plugin.json` is named
/// [`NAME`].
fn run_by_plugin() -> bool {
    let Some(root) = std::env::var_os("CLAUDE_PLUGIN_ROOT").filter(|r| !r.is_empty()) else {
        return false;
    };
    let manifest = Path::new(&root).join(".claude-plugin/plugin.json");
    settings(&manifest).is_some_and(|doc| doc["name"] == NAME)
}

/// Called before `scriptorium hook` runs: when the plugin runs the hook and setup's hooks are
/// installed too, the hook stands down — its payload read, one line in `hooks.log`, exit 0 with
/// no output — and this returns its exit code. `None` (the hook runs) otherwise; a hook not run
/// by the plugin costs one environment lookup.
pub(crate) fn hook_stands_down(home: &Home) -> Option<ExitCode> {
    if !run_by_plugin() {
        return None;
    }
    let user = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    // Claude Code runs hooks in the project's directory and names it in CLAUDE_PROJECT_DIR.
    let project = std::env::var_os("CLAUDE_PROJECT_DIR")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())?;
    let settings = setup_hooks_in(user.as_deref(), &project)?;
    // The payload is read whatever happens: the agent writing it must never meet a closed pipe.
    let mut bytes = Vec::new();
    let _ = std::io::stdin().take(MAX_PAYLOAD).read_to_end(&mut bytes);
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    let event = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|p| p["hook_event_name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "-".to_owned());
    log(
        home,
        &event,
        &format!(
            "setup's hooks are installed in {}, so the plugin's stand down (one set runs; \
             `scriptorium setup claude-code --uninstall` hands the hooks to the plugin)",
            settings.display()
        ),
    );
    Some(ExitCode::SUCCESS)
}

/// Appends one `HOOK_PLUGIN_DEFERS` line to `<home>/logs/hooks.log`, in the hooks' format
/// (best effort: a hook that cannot log still exits 0 quietly).
fn log(home: &Home, event: &str, message: &str) {
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = home.root().join("logs");
    let time = scriptorium_backend::memory::wall_clock()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let line = format!("{time} claude-code {event} HOOK_PLUGIN_DEFERS: {message}\n");
    let _ =
        scriptorium_workspace_fs::create_dir_all(&scriptorium_workspace_fs::RealFs, &dir, 0o700);
    // One `write` on an `O_APPEND` descriptor: lines of parallel hooks never interleave.
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(dir.join("hooks.log"))
        .and_then(|mut file| file.write_all(line.as_bytes()));
}

/// `setup claude-code` with the plugin enabled: the memory is initialized (the plugin's hooks
/// need it, and nothing else creates it), Claude Code's files are left alone, and the person is
/// told why and how to switch. `dry_run` changes nothing.
pub(crate) fn setup_defers(
    home: &Home,
    plugin: &Enabled,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    if dry_run {
        if !init::exists(home) {
            outln!("would initialize the memory workspace at {}", home.memory().display());
        }
    } else if init::initialize(home)?.created {
        outln!("initialized the memory workspace at {}", home.memory().display());
    }
    outln!(
        "the Claude Code plugin {} is enabled ({}): it runs the hooks and the MCP server, so \
         setup {} nothing to Claude Code's settings; to use setup's instead, run `claude plugin \
         disable {}` and then setup again",
        plugin.id,
        plugin.settings.display(),
        if dry_run { "would write" } else { "wrote" },
        plugin.id
    );
    // The plugin's commands name no home: they use the default one.
    let default = Home::resolve(None);
    if default.root() != home.root() {
        outln!(
            "note: the plugin's hooks use the default home {}, not {}: set SCRIPTORIUM_HOME \
             where Claude Code runs, or use setup's hooks",
            default.root().display(),
            home.root().display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn the_plugin_counts_as_enabled_only_when_its_id_is_true() {
        let dir = tempfile::tempdir().expect("a directory");
        let (user, project) = (dir.path().join("u"), dir.path().join("p"));
        let user_settings = user.join(".claude/settings.json");
        assert_eq!(enabled_in(Some(&user), &project), None, "no settings at all");
        write(&user_settings, r#"{"enabledPlugins": {"scriptorium@scriptorium": false}}"#);
        assert_eq!(enabled_in(Some(&user), &project), None, "disabled");
        write(&user_settings, r#"{"enabledPlugins": {"scriptorium-x@m": true, "other@m": true}}"#);
        assert_eq!(enabled_in(Some(&user), &project), None, "another plugin");
        write(&user_settings, "{ not json");
        assert_eq!(enabled_in(Some(&user), &project), None, "unparsable");
        let local = project.join(".claude/settings.local.json");
        write(&local, r#"{"enabledPlugins": {"scriptorium@team": true}}"#);
        let found = enabled_in(Some(&user), &project).expect("enabled in the project");
        assert_eq!(found, Enabled { id: "scriptorium@team".into(), settings: local });
    }

    #[test]
    fn setup_hook_commands_are_recognized_whatever_binary_and_home_they_name() {
        assert!(is_hook_command("/opt/bin/scriptorium --home /h hook claude-code Stop"));
        assert!(is_hook_command("'/a b/scriptorium' --home '/c d' hook claude-code SessionEnd"));
        assert!(is_hook_command(r"'/it'\''s/scriptorium' --home /h hook claude-code Stop"));
        assert!(!is_hook_command("'/a b/scriptorium x' --home /h hook claude-code Stop"));
        assert!(is_hook_command("scriptorium hook claude-code UserPromptSubmit"));
        assert!(!is_hook_command("scriptorium hook codex Stop"), "Codex's");
        assert!(!is_hook_command("/bin/other hook claude-code Stop"), "another program");
        assert!(!is_hook_command("scriptorium hook claude-code Notification"), "not an event");

        let dir = tempfile::tempdir().expect("a directory");
        let project = dir.path().join("p");
        let settings = project.join(".claude/settings.json");
        write(
            &settings,
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#,
        );
        assert_eq!(setup_hooks_in(None, &project), None, "another hook only");
        let ours = r#"{"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "x"},
            {"type": "command", "command": "/b/scriptorium --home /h hook claude-code Stop"}]}]}}"#;
        write(&settings, ours);
        assert_eq!(setup_hooks_in(None, &project), Some(settings));
    }
}
