//! The Claude Code plugin in the repository (`.claude-plugin/marketplace.json`,
//! `plugin/scriptorium`; docs/plugin.md): its hooks and MCP server are the commands `setup`
//! writes, run through the `scriptorium` on `PATH`; the real Claude Code (pinned, offline, in a
//! temporary user home) adds the checkout as a marketplace, installs the plugin, and a session
//! against a loopback mock of the model runs the plugin's hooks, which import the session into
//! the home; and setup and the plugin never both run hooks.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};

use crate::agents::{MockModel, Reaper, agent_cli, answered_with_memory, claude_env, run_bounded};
use crate::hook::session_ids;
use crate::support::{add_core, home_with_note};

/// What the sessions ask (the recall and the core of `home_with_note` answer it).
const QUESTION: &str = "What is Dana planning for the garden?";

/// The hook events setup and the plugin hook.
const EVENTS: [&str; 5] = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"];

/// The repository's root: the marketplace.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The plugin's directory, as the marketplace lists it.
fn plugin_dir() -> PathBuf {
    let marketplace = read_json(&checkout().join(".claude-plugin/marketplace.json"));
    let entry = marketplace["plugins"]
        .as_array()
        .and_then(|plugins| plugins.iter().find(|p| p["name"] == "scriptorium"))
        .unwrap_or_else(|| panic!("the marketplace lists the plugin: {marketplace}"));
    checkout().join(entry["source"].as_str().expect("a relative source"))
}

/// `scriptorium --home <home> setup claude-code <args>` for the user `user`, with the journal
/// writer (these tests are about the hooks: no agent writer runs whatever `claude` is on PATH).
fn setup(home: &Path, user: &Path, args: &[&str]) -> Output {
    let writer: &[&str] =
        if args.contains(&"--uninstall") { &[] } else { &["--writer", "journal"] };
    Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(["setup", "claude-code"])
        .args(writer)
        .args(args)
        .env("HOME", user)
        .env_remove("SCRIPTORIUM_HOME")
        .output()
        .expect("setup runs")
}

fn succeeded(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// Each event's hook commands in a `{"hooks": {Event: [{"hooks": [{"command"}]}]}}` document.
fn hook_commands(doc: &Value) -> Vec<(String, String)> {
    let mut commands = Vec::new();
    for (event, groups) in doc["hooks"].as_object().into_iter().flatten() {
        for group in groups.as_array().into_iter().flatten() {
            for handler in group["hooks"].as_array().into_iter().flatten() {
                assert_eq!(handler["type"], "command", "{handler}");
                let command = handler["command"].as_str().expect("a command");
                commands.push((event.clone(), command.to_owned()));
            }
        }
    }
    commands.sort();
    commands
}

#[test]
fn the_plugins_hooks_and_mcp_server_are_setups_commands_through_path() {
    let plugin = plugin_dir();
    let manifest = read_json(&plugin.join(".claude-plugin/plugin.json"));
    assert_eq!(manifest["name"], "scriptorium");
    assert_eq!(
        manifest["version"],
        env!("CARGO_PKG_VERSION"),
        "the plugin's version is the tool's"
    );

    let home = tempfile::tempdir().expect("a home");
    let user = tempfile::tempdir().expect("a user home");
    succeeded(&setup(home.path(), user.path(), &[]));
    let exe = Path::new(env!("CARGO_BIN_EXE_scriptorium")).canonicalize().expect("the binary");
    let installed = read_json(&user.path().join(".claude/settings.json"));
    // Setup names this binary and this home; the plugin, the `scriptorium` on PATH and its
    // default home: otherwise the very same commands.
    let prefix = format!("{} --home {} ", exe.display(), home.path().display());
    let setups: Vec<(String, String)> = hook_commands(&installed)
        .into_iter()
        .map(|(event, command)| {
            let rest = command.strip_prefix(&prefix).unwrap_or_else(|| panic!("{command}"));
            (event, format!("scriptorium {rest}"))
        })
        .collect();
    let plugins = hook_commands(&read_json(&plugin.join("hooks/hooks.json")));
    assert_eq!(plugins, setups);
    let mut events: Vec<&str> = plugins.iter().map(|(e, _)| e.as_str()).collect();
    events.sort_unstable();
    let mut expected = EVENTS.to_vec();
    expected.sort_unstable();
    assert_eq!(events, expected, "one hook per event");

    let server = &read_json(&user.path().join(".claude.json"))["mcpServers"]["scriptorium"];
    let home_arg = home.path().to_string_lossy();
    assert_eq!(server["args"], json!(["--home", home_arg, "mcp"]), "{server}");
    let plugins = &read_json(&plugin.join(".mcp.json"))["mcpServers"]["scriptorium"];
    assert_eq!(
        plugins,
        &json!({ "type": server["type"], "command": "scriptorium", "args": ["mcp"] })
    );
}

/// The real Claude Code (`claude`) in the user home `user`, with no model: plugin management.
fn claude_cli(claude: &Path, user: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(claude);
    command
        .args(args)
        .current_dir(user)
        .env("HOME", user)
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("CLAUDE_CONFIG_DIR");
    run_bounded(command, Duration::from_secs(120))
}

/// Adds the checkout as a marketplace and installs the plugin from it, as a user does; checks
/// that Claude Code reports it installed and enabled.
fn install_plugin(claude: &Path, user: &Path) {
    let checkout = checkout().canonicalize().expect("the checkout");
    let checkout = checkout.to_string_lossy();
    let added = succeeded(&claude_cli(
        claude,
        user,
        &["plugin", "marketplace", "add", &checkout, "--json"],
    ));
    let added: Value =
        serde_json::from_str(added.lines().last().unwrap_or_default()).expect("one JSON line");
    assert_eq!((&added["outcome"], &added["marketplace"]), (&json!("ok"), &json!("scriptorium")));
    let installed = succeeded(&claude_cli(
        claude,
        user,
        &["plugin", "install", "scriptorium@scriptorium", "--json"],
    ));
    let installed: Value =
        serde_json::from_str(installed.lines().last().unwrap_or_default()).expect("one JSON line");
    assert_eq!(installed["outcome"], "ok", "{installed}");
    let listed = succeeded(&claude_cli(claude, user, &["plugin", "list", "--json"]));
    let listed: Value = serde_json::from_str(&listed).expect("the plugin list");
    let ours = listed
        .as_array()
        .and_then(|plugins| plugins.iter().find(|p| p["id"] == "scriptorium@scriptorium"))
        .unwrap_or_else(|| panic!("the plugin is listed: {listed}"));
    assert_eq!(ours["enabled"], true, "{ours}");
    assert_eq!(ours["mcpServers"]["scriptorium"]["command"], "scriptorium", "{ours}");
}

/// The `claude` command of a session in a project of the user `user`, with this test's
/// `scriptorium` first on `PATH` and `home` as the default home (`SCRIPTORIUM_HOME`, which the
/// plugin's commands use), asking `prompt`.
fn session(claude: &Path, user: &Path, home: &Path, model: &MockModel, prompt: &str) -> Command {
    let project = user.join("garden-project");
    std::fs::create_dir_all(&project).expect("a project directory");
    let bin =
        Path::new(env!("CARGO_BIN_EXE_scriptorium")).parent().expect("the binary's directory");
    let path = std::env::join_paths(
        std::iter::once(bin.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("a PATH");
    let mut command = Command::new(claude);
    command.args(["-p", prompt]).current_dir(&project);
    claude_env(&mut command, user, model);
    command.env("PATH", path).env("SCRIPTORIUM_HOME", home);
    command
}

#[test]
fn claude_code_installs_the_plugin_from_the_checkout_and_its_hooks_capture_the_session() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    let home = home_with_note();
    add_core(home.path());
    let reaper = Reaper::new(home.path());
    let user = tempfile::tempdir().expect("a user home");
    install_plugin(&claude, user.path());
    // Nothing of setup's: the hooks that run are the plugin's.
    let settings = read_json(&user.path().join(".claude/settings.json"));
    assert_eq!(settings["hooks"], Value::Null, "{settings}");

    let model = MockModel::start();
    // The core (SessionStart) and the recall (UserPromptSubmit) reached the model, and no hook
    // failed.
    answered_with_memory(
        session(&claude, user.path(), home.path(), &model, QUESTION),
        &model,
        home.path(),
        "/v1/messages",
    );
    // Stop and SessionEnd imported the session before claude exited.
    assert_eq!(session_ids(home.path()).len(), 1, "the session is in the home's store");
    // The plugin's MCP server (the `scriptorium` on PATH) started, and its tools were offered.
    let offered = |tool: &str| model.bodies().iter().any(|(_, body)| body.contains(tool));
    assert!(offered("mcp__plugin_scriptorium_scriptorium__memory_search"), "the MCP tools");

    // `/scriptorium:memory <query>` expands to the command's task for the model.
    let command = session(&claude, user.path(), home.path(), &model, "/scriptorium:memory garden");
    let out = run_bounded(command, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(offered("The query is: garden"), "the command reached the model");
    // The detached writes the hooks started end by themselves.
    reaper.settle(Duration::from_secs(300));
}

#[test]
fn setup_and_the_plugin_never_both_run_hooks() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    // Setup's home, and the plugin's (the default home of the session).
    let setups = home_with_note();
    let plugins = home_with_note();
    let reapers = (Reaper::new(setups.path()), Reaper::new(plugins.path()));
    let user = tempfile::tempdir().expect("a user home");
    install_plugin(&claude, user.path());

    // The plugin enabled: setup initializes the memory, writes nothing to Claude Code's files,
    // and says why.
    let fresh = tempfile::tempdir().expect("a home");
    let settings_path = user.path().join(".claude/settings.json");
    let before = std::fs::read(&settings_path).expect("the settings");
    for dry_run in [true, false] {
        let args: &[&str] = if dry_run { &["--dry-run"] } else { &[] };
        let said = succeeded(&setup(fresh.path(), user.path(), args));
        assert!(said.contains("plugin scriptorium@scriptorium is enabled"), "{said}");
        assert_eq!(std::fs::read(&settings_path).expect("the settings"), before);
        let config = read_json(&user.path().join(".claude.json"));
        assert_eq!(config["mcpServers"]["scriptorium"], Value::Null, "{config}");
        assert_eq!(fresh.path().join("memory").exists(), !dry_run, "{said}");
        // The writer is still setup's: `--writer` is carried out (or previewed), not dropped.
        let toml = std::fs::read_to_string(fresh.path().join("scriptorium.toml"));
        if dry_run {
            assert!(said.contains("would set up the"), "{said}");
            assert!(toml.is_err(), "a dry run writes no configuration");
        } else {
            let toml = toml.expect("the writer's configuration");
            assert!(toml.contains("kind = \"journal\""), "{toml}");
        }
    }

    // Setup's hooks installed (with the plugin disabled), then the plugin enabled again: both
    // are configured, and only setup's run.
    succeeded(&claude_cli(&claude, user.path(), &["plugin", "disable", "scriptorium@scriptorium"]));
    let said = succeeded(&setup(setups.path(), user.path(), &[]));
    assert!(said.contains("set up"), "{said}");
    succeeded(&claude_cli(&claude, user.path(), &["plugin", "enable", "scriptorium@scriptorium"]));
    let model = MockModel::start();
    let out = run_bounded(
        session(&claude, user.path(), plugins.path(), &model, QUESTION),
        Duration::from_secs(300),
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(session_ids(setups.path()).len(), 1, "setup's hooks captured the session");
    assert_eq!(session_ids(plugins.path()), Vec::<String>::new(), "the plugin's hooks did nothing");
    let log = std::fs::read_to_string(plugins.path().join("logs/hooks.log")).unwrap_or_default();
    for event in ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"] {
        assert!(
            log.lines().any(|l| l.contains(&format!(" claude-code {event} HOOK_PLUGIN_DEFERS: "))),
            "the plugin's {event} hook stood down and said so: {log}"
        );
    }
    let log = std::fs::read_to_string(setups.path().join("logs/hooks.log")).unwrap_or_default();
    assert!(log.is_empty(), "setup's hooks ran without failing: {log}");

    // Setup's removed: the plugin's hooks are the ones that run.
    succeeded(&setup(setups.path(), user.path(), &["--uninstall"]));
    let out = run_bounded(
        session(&claude, user.path(), plugins.path(), &model, QUESTION),
        Duration::from_secs(300),
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(session_ids(plugins.path()).len(), 1, "the plugin's hooks captured the session");
    assert_eq!(session_ids(setups.path()).len(), 1, "setup's hooks ran no more");
    reapers.0.settle(Duration::from_secs(300));
    reapers.1.settle(Duration::from_secs(300));
}
