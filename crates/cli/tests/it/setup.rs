//! `scriptorium setup <claude-code|codex>` on configuration files a user already has: the rest of
//! each file is kept (JSON keys and values; TOML comments and layout), a second run changes
//! nothing, `--uninstall` gives back the original, `--dry-run` writes nothing, and a file that
//! does not parse is refused with nothing changed.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const SETTINGS: &str = r#"{
  "model": "opus",
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "permissions": {"allow": ["Bash(ls)"]}
}
"#;

const CONFIG: &str =
    "# my codex config\nmodel = \"o4\"  # keep this comment\n\n[features]\nweb_search = true\n";

fn setup(home: &Path, user: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .arg("setup")
        .args(args)
        .env("HOME", user)
        .env_remove("CODEX_HOME")
        .env_remove("SCRIPTORIUM_HOME")
        .output()
        .expect("setup runs")
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).expect("the file")).expect("JSON")
}

/// Every hook command of `event` in a hooks file.
fn commands(doc: &Value, event: &str) -> Vec<String> {
    doc["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|group| group["hooks"].as_array().into_iter().flatten())
        .filter_map(|handler| handler["command"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn claude_code_setup_keeps_the_users_settings_is_idempotent_and_reversible() {
    let home = tempfile::tempdir().expect("a home");
    let user = tempfile::tempdir().expect("a user home");
    let settings = user.path().join(".claude/settings.json");
    fs::create_dir_all(settings.parent().expect("parent")).expect("mkdir");
    fs::write(&settings, SETTINGS).expect("the user's settings");

    let preview = ok(&setup(home.path(), user.path(), &["claude-code", "--dry-run"]));
    assert!(preview.contains("+            \"command\": "), "{preview}");
    assert_eq!(fs::read_to_string(&settings).expect("read"), SETTINGS, "a dry run writes nothing");
    assert!(!user.path().join(".claude.json").exists());

    ok(&setup(home.path(), user.path(), &["claude-code"]));
    let doc = json(&settings);
    assert_eq!(doc["model"], "opus");
    assert_eq!(doc["permissions"]["allow"][0], "Bash(ls)");
    let text = fs::read_to_string(&settings).expect("read");
    let at = |key: &str| text.find(&format!("\"{key}\":")).expect("the key");
    assert!(at("model") < at("hooks") && at("hooks") < at("permissions"), "key order kept: {text}");
    let stop = commands(&doc, "Stop");
    assert_eq!(stop.len(), 2, "the user's own Stop hook stays: {stop:?}");
    assert_eq!(stop[0], "notify-send done");
    assert!(stop[1].ends_with(" hook claude-code Stop"), "{stop:?}");
    for event in ["SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"] {
        let ours = commands(&doc, event);
        assert_eq!(ours.len(), 1, "{event}: {ours:?}");
        assert!(
            ours[0].contains(" --home ")
                && ours[0].ends_with(&format!(" hook claude-code {event}"))
        );
    }
    let mcp = json(&user.path().join(".claude.json"));
    assert_eq!(mcp["mcpServers"]["scriptorium"]["args"][2], "mcp", "{mcp}");
    let backup = user.path().join(".claude/settings.json.scriptorium-backup");
    assert_eq!(fs::read_to_string(&backup).expect("the backup"), SETTINGS);

    let installed = fs::read_to_string(&settings).expect("read");
    let again = ok(&setup(home.path(), user.path(), &["claude-code"]));
    assert!(again.contains("already set up"), "{again}");
    assert_eq!(
        fs::read_to_string(&settings).expect("read"),
        installed,
        "a second run changes nothing"
    );

    ok(&setup(home.path(), user.path(), &["claude-code", "--uninstall"]));
    let original: Value = serde_json::from_str(SETTINGS).expect("JSON");
    assert_eq!(json(&settings), original, "uninstall gives back the user's settings");
    assert!(!user.path().join(".claude.json").exists(), "the file setup created is gone");
}

/// A binary installed under a path with a space (`/Users/Jane Doe/.cargo/bin`) is written
/// quoted; setup must still know its own hooks, or every run would add another set.
#[test]
fn a_binary_path_with_a_space_is_recognized_on_the_next_run_and_by_uninstall() {
    let home = tempfile::tempdir().expect("a home");
    let user = tempfile::tempdir().expect("a user home");
    let bin = user.path().join("Jane Doe/bin");
    fs::create_dir_all(&bin).expect("mkdir");
    let exe = bin.join("scriptorium");
    fs::copy(env!("CARGO_BIN_EXE_scriptorium"), &exe).expect("copy the binary");
    let run = |args: &[&str]| {
        Command::new(&exe)
            .arg("--home")
            .arg(home.path())
            .arg("setup")
            .args(args)
            .env("HOME", user.path())
            .env_remove("CODEX_HOME")
            .env_remove("SCRIPTORIUM_HOME")
            .output()
            .expect("setup runs")
    };
    let settings = user.path().join(".claude/settings.json");
    ok(&run(&["claude-code", "--writer", "journal"]));
    let installed = fs::read_to_string(&settings).expect("the settings");
    let stop = commands(&json(&settings), "Stop");
    assert_eq!(stop.len(), 1, "{stop:?}");
    assert!(stop[0].starts_with('\'') && stop[0].contains("Jane Doe"), "quoted: {stop:?}");
    let again = ok(&run(&["claude-code"]));
    assert!(again.contains("already set up"), "{again}");
    assert_eq!(fs::read_to_string(&settings).expect("read"), installed, "nothing added");
    ok(&run(&["claude-code", "--uninstall"]));
    // Setup created the file: its hooks recognized, uninstall removes it whole.
    assert!(!settings.exists(), "{}", fs::read_to_string(&settings).unwrap_or_default());
}

#[test]
fn codex_setup_keeps_toml_comments_and_uninstall_restores_the_file_byte_for_byte() {
    let home = tempfile::tempdir().expect("a home");
    let user = tempfile::tempdir().expect("a user home");
    let config = user.path().join(".codex/config.toml");
    fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    fs::write(&config, CONFIG).expect("the user's config");

    ok(&setup(home.path(), user.path(), &["codex"]));
    let text = fs::read_to_string(&config).expect("read");
    assert!(text.starts_with("# my codex config\nmodel = \"o4\"  # keep this comment\n"), "{text}");
    let parsed: toml::Table = text.parse().expect("TOML");
    assert_eq!(parsed["features"]["hooks"].as_bool(), Some(true), "{text}");
    assert_eq!(parsed["features"]["web_search"].as_bool(), Some(true), "{text}");
    assert_eq!(parsed["mcp_servers"]["scriptorium"]["args"][2].as_str(), Some("mcp"), "{text}");
    let hooks = json(&user.path().join(".codex/hooks.json"));
    for event in ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"] {
        assert_eq!(commands(&hooks, event).len(), 1, "{event}: {hooks}");
    }
    assert!(ok(&setup(home.path(), user.path(), &["codex"])).contains("already set up"));

    ok(&setup(home.path(), user.path(), &["codex", "--uninstall"]));
    assert_eq!(fs::read_to_string(&config).expect("read"), CONFIG, "byte for byte");
    assert!(!user.path().join(".codex/hooks.json").exists());
}

#[test]
fn a_file_that_does_not_parse_is_refused_and_nothing_changes() {
    let home = tempfile::tempdir().expect("a home");
    let user = tempfile::tempdir().expect("a user home");
    let settings = user.path().join(".claude/settings.json");
    fs::create_dir_all(settings.parent().expect("parent")).expect("mkdir");
    fs::write(&settings, "{ not json").expect("a broken file");
    let out = setup(home.path(), user.path(), &["claude-code"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SETUP_UNPARSABLE") && err.contains("nothing was changed"), "{err}");
    assert_eq!(fs::read_to_string(&settings).expect("read"), "{ not json");
    assert!(!user.path().join(".claude.json").exists(), "no file of the setup was written");
}

/// The permission bits of `path` itself (a symlink is not followed).
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    fs::symlink_metadata(path).expect("the file").permissions().mode() & 0o7777
}

/// Every file and directory under `dir`, as sorted relative paths.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in fs::read_dir(&next).expect("list") {
            let path = entry.expect("entry").path();
            if fs::symlink_metadata(&path).expect("stat").is_dir() {
                pending.push(path.clone());
            }
            let relative = path.strip_prefix(dir).expect("under dir");
            found.push(relative.display().to_string());
        }
    }
    found.sort();
    found
}

/// Writes `text` to `path` (creating its directory) with `mode`.
fn write_with_mode(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn backups_and_rewritten_files_keep_the_mode_of_a_private_original() {
    let home = tempfile::tempdir().expect("a home");
    let user = tempfile::tempdir().expect("a user home");
    let settings = user.path().join(".claude/settings.json");
    let mcp = user.path().join(".claude.json");
    let config = user.path().join(".codex/config.toml");
    write_with_mode(&settings, "{\"env\": {\"ANTHROPIC_API_KEY\": \"sk-secret\"}}\n", 0o600);
    write_with_mode(&mcp, "{\"numStartups\": 3}\n", 0o640);
    write_with_mode(&config, "experimental_bearer_token = \"secret\"\n", 0o600);

    ok(&setup(home.path(), user.path(), &["claude-code"]));
    ok(&setup(home.path(), user.path(), &["codex"]));

    let backup = |path: &Path| {
        let mut name = path.as_os_str().to_owned();
        name.push(".scriptorium-backup");
        std::path::PathBuf::from(name)
    };
    for (path, want) in [(&settings, 0o600), (&mcp, 0o640), (&config, 0o600)] {
        assert_eq!(mode(path), want, "{}", path.display());
        assert_eq!(mode(&backup(path)), want, "the backup of {}", path.display());
    }
    assert_eq!(mode(&user.path().join(".codex/hooks.json")), 0o600, "a file setup creates");
    assert!(fs::read_to_string(backup(&config)).expect("backup").contains("secret"));
}

#[test]
fn symlinks_planted_at_the_temporary_and_backup_paths_are_never_followed() {
    let home = tempfile::tempdir().expect("a home");
    let user = tempfile::tempdir().expect("a user home");
    let elsewhere = tempfile::tempdir().expect("another directory");
    let victim = elsewhere.path().join("victim");
    fs::write(&victim, "victim\n").expect("the victim");
    let settings = user.path().join(".claude/settings.json");
    write_with_mode(&settings, SETTINGS, 0o600);
    let mcp = user.path().join(".claude.json");
    write_with_mode(&mcp, "{\"numStartups\": 3}\n", 0o600);
    // A link at the settings' temporary path to an existing file, and a dangling one at the
    // MCP file's backup path (writing through it would create its target).
    let temp = user.path().join(".claude/settings.json.scriptorium-tmp");
    std::os::unix::fs::symlink(&victim, &temp).expect("symlink");
    let planted = elsewhere.path().join("planted");
    std::os::unix::fs::symlink(&planted, user.path().join(".claude.json.scriptorium-backup"))
        .expect("symlink");

    ok(&setup(home.path(), user.path(), &["claude-code"]));

    assert_eq!(fs::read_to_string(&victim).expect("read"), "victim\n", "not written through");
    assert!(!planted.exists(), "nothing written through the dangling link");
    assert!(fs::symlink_metadata(&settings).expect("stat").file_type().is_file());
    assert_eq!(commands(&json(&settings), "Stop").len(), 2);
    assert!(fs::symlink_metadata(&temp).is_err(), "the stale link at the temporary path is gone");
    assert_eq!(mode(&settings), 0o600);

    // A regular file left at a temporary path by a crash does not stop a later run.
    fs::write(user.path().join(".claude.json.scriptorium-tmp"), "stale").expect("stale");
    ok(&setup(home.path(), user.path(), &["claude-code", "--uninstall"]));
    assert!(!user.path().join(".claude.json.scriptorium-tmp").exists());
    assert_eq!(json(&mcp), serde_json::json!({"numStartups": 3}));
}

#[test]
fn a_write_that_fails_leaves_no_temporary_file_and_no_backup() {
    // A file size limit (the signal it raises ignored) fails the write of the temporary file
    // deterministically, even for root: the settings are larger than 512 bytes once the hooks
    // are in, their backup is not.
    let root = tempfile::tempdir().expect("a directory");
    let home = root.path().join("home");
    let init = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(&home)
        .arg("init")
        .env_remove("SCRIPTORIUM_HOME")
        .output()
        .expect("init runs");
    ok(&init);
    let user = tempfile::tempdir().expect("a user home");
    let settings = user.path().join(".claude/settings.json");
    write_with_mode(&settings, "{\"model\": \"opus\"}\n", 0o600);

    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"trap '' XFSZ; ulimit -f 1; exec "$@""#)
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(&home)
        .args(["setup", "claude-code"])
        .env("HOME", user.path())
        .env_remove("SCRIPTORIUM_HOME")
        .output()
        .expect("setup runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("settings.json.scriptorium-tmp"), "the temporary write failed: {err}");
    assert_eq!(fs::read_to_string(&settings).expect("read"), "{\"model\": \"opus\"}\n");
    assert_eq!(
        scriptorium_testkit::file_names(&user.path().join(".claude")),
        ["settings.json"],
        "no temporary file and no backup left"
    );
    assert!(!user.path().join(".claude.json").exists());
}

#[test]
fn setup_on_a_fresh_machine_initializes_a_private_memory_home() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = tempfile::tempdir().expect("a directory");
    let home = root.path().join("scriptorium");
    let user = tempfile::tempdir().expect("a user home");

    let said = ok(&setup(&home, user.path(), &["claude-code"]));
    let memory = home.join("memory");
    assert!(
        said.contains(&format!("initialized the memory workspace at {}", memory.display())),
        "{said}"
    );
    let status = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(&home)
        .args(["status", "--json"])
        .env_remove("SCRIPTORIUM_HOME")
        .output()
        .expect("status runs");
    let doc: Value = serde_json::from_str(&ok(&status)).expect("JSON");
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(mode(&home), 0o700, "the home is private");
    assert_eq!(mode(&home.join("setup")), 0o700);
    let records = scriptorium_testkit::file_names(&home.join("setup"));
    assert_eq!(records, ["claude-code-user.json"]);
    for name in records {
        let meta = fs::metadata(home.join("setup").join(&name)).expect("stat");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600, "{name}");
    }
    let again = ok(&setup(&home, user.path(), &["claude-code"]));
    assert!(!again.contains("initialized"), "an existing memory is only opened: {again}");
}

#[test]
fn a_dry_run_on_a_fresh_machine_says_it_would_initialize_and_creates_nothing() {
    let root = tempfile::tempdir().expect("a directory");
    let home = root.path().join("scriptorium");
    let user = tempfile::tempdir().expect("a user home");
    let said = ok(&setup(&home, user.path(), &["claude-code", "--dry-run"]));
    let memory = home.join("memory");
    assert!(
        said.contains(&format!("would initialize the memory workspace at {}", memory.display())),
        "{said}"
    );
    assert!(!home.exists(), "a dry run creates no home");
    assert!(scriptorium_testkit::file_names(user.path()).is_empty(), "nor any agent file");
}

#[test]
fn hooks_or_servers_of_an_unexpected_shape_are_refused_naming_the_key() {
    let cases: [(&str, &str, &str, &str); 5] = [
        ("claude-code", ".claude/settings.json", "{\"hooks\": []}\n", "hooks is not an object"),
        (
            "claude-code",
            ".claude/settings.json",
            "{\"hooks\": {\"Stop\": {\"type\": \"command\"}}}\n",
            "hooks.Stop is not a list",
        ),
        ("claude-code", ".claude.json", "{\"mcpServers\": [1]}\n", "mcpServers is not an object"),
        ("codex", ".codex/config.toml", "mcp_servers = \"x\"\n", "mcp_servers is not a table"),
        ("codex", ".codex/config.toml", "features = true\n", "features is not a table"),
    ];
    for (agent, file, text, why) in cases {
        let root = tempfile::tempdir().expect("a directory");
        let home = root.path().join("scriptorium");
        let user = tempfile::tempdir().expect("a user home");
        let path = user.path().join(file);
        write_with_mode(&path, text, 0o600);
        let out = setup(&home, user.path(), &[agent]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{agent} {text}: {err}");
        assert!(err.contains("SETUP_UNPARSABLE") && err.contains(why), "{why}: {err}");
        assert_eq!(fs::read_to_string(&path).expect("read"), text, "{why}: unchanged");
        let mut want: Vec<String> = Path::new(file)
            .ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .map(|a| a.display().to_string())
            .collect();
        want.sort();
        assert_eq!(tree(user.path()), want, "{why}: nothing else written");
        assert!(!home.exists(), "{why}: no home created");
    }
}

#[test]
fn a_failure_on_the_second_file_leaves_the_first_as_it_was() {
    // A directory at the second file's temporary path fails its write after the first file
    // was written: the first is restored, and its backup goes with the failed run.
    let home = tempfile::tempdir().expect("a home");
    let user = tempfile::tempdir().expect("a user home");
    let settings = user.path().join(".claude/settings.json");
    write_with_mode(&settings, SETTINGS, 0o600);
    let mcp = user.path().join(".claude.json");
    write_with_mode(&mcp, "{\"numStartups\": 3}\n", 0o600);
    fs::create_dir(user.path().join(".claude.json.scriptorium-tmp")).expect("mkdir");
    let out = setup(home.path(), user.path(), &["claude-code"]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(fs::read_to_string(&settings).expect("read"), SETTINGS, "byte for byte");
    assert_eq!(mode(&settings), 0o600);
    assert_eq!(fs::read_to_string(&mcp).expect("read"), "{\"numStartups\": 3}\n");
    assert_eq!(scriptorium_testkit::file_names(&user.path().join(".claude")), ["settings.json"]);
    assert!(!home.path().join("setup/claude-code-user.json").exists(), "no record either");

    // Codex: `hooks.json`, which setup creates, is removed again when `config.toml` fails.
    let config = user.path().join(".codex/config.toml");
    write_with_mode(&config, CONFIG, 0o600);
    fs::create_dir(user.path().join(".codex/config.toml.scriptorium-tmp")).expect("mkdir");
    let out = setup(home.path(), user.path(), &["codex"]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(fs::read_to_string(&config).expect("read"), CONFIG, "byte for byte");
    assert_eq!(
        scriptorium_testkit::file_names(&user.path().join(".codex")),
        ["config.toml", "config.toml.scriptorium-tmp"],
        "no hooks.json, no backup"
    );

    // The MCP file's path is a directory: refused before anything is written.
    fs::remove_dir(user.path().join(".claude.json.scriptorium-tmp")).expect("rmdir");
    fs::remove_file(&mcp).expect("rm");
    fs::create_dir(&mcp).expect("mkdir");
    let out = setup(home.path(), user.path(), &["claude-code"]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(fs::read_to_string(&settings).expect("read"), SETTINGS, "byte for byte");
    assert_eq!(scriptorium_testkit::file_names(&user.path().join(".claude")), ["settings.json"]);
}

#[test]
fn setup_makes_the_agent_the_writer_keeps_a_configured_one_and_says_so() {
    let home = tempfile::tempdir().expect("a home");
    let user = tempfile::tempdir().expect("a user home");
    let config = home.path().join("scriptorium.toml");

    // `--dry-run` shows the writer it would set up and writes nothing.
    let dry = ok(&setup(home.path(), user.path(), &["claude-code", "--dry-run"]));
    assert!(dry.contains("would set up the writer: Claude Code writes"), "{dry}");
    assert!(!config.exists(), "nothing written");

    // The default: Claude Code itself, its cheapest model, locked down, with a budget.
    let said = ok(&setup(home.path(), user.path(), &["claude-code"]));
    let line = said.lines().find(|l| l.starts_with("writer:")).expect("one writer line");
    assert!(line.contains("Claude Code writes the memory with model haiku"), "{said}");
    assert!(line.contains("on your own Claude Code login"), "{line}");
    assert!(line.contains("--writer journal") && line.contains("edit [model]"), "{line}");
    assert_eq!(said.lines().filter(|l| l.starts_with("writer:")).count(), 1);
    let text = fs::read_to_string(&config).expect("the configuration");
    let parsed: toml::Value = toml::from_str(&text).expect("TOML");
    assert_eq!(parsed["model"]["kind"].as_str(), Some("command"));
    assert_eq!(parsed["model"]["name"].as_str(), Some("haiku"));
    let command: Vec<&str> = parsed["model"]["command"]
        .as_array()
        .expect("the command")
        .iter()
        .filter_map(toml::Value::as_str)
        .collect();
    assert_eq!(command[..2], ["claude", "-p"]);
    for flag in ["--restricted", "--strict-mcp-config", "--no-session-persistence", "{model}"] {
        assert!(command.contains(&flag), "{flag} in {command:?}");
    }
    assert_eq!(parsed["memory"]["writer"]["max_tokens_per_day"].as_integer(), Some(2_000_000));
    assert_eq!(mode(&config), 0o600);

    // Run as configured with no `claude` installed: a failure a user understands.
    crate::support::append_session(home.path(), &["Dana is planning a vegetable garden.", "Ok."]);
    let empty = tempfile::tempdir().expect("a PATH without claude");
    let out = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home.path())
        .args(["write", "--session", "s", "--force", "--json"])
        .env("PATH", empty.path())
        .env_remove("SCRIPTORIUM_HOME")
        .output()
        .expect("write runs");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["sessions"][0]["error"]["reason_code"], "WRITER_CLI_MISSING", "{report}");
    let status = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home.path())
        .arg("status")
        .env_remove("SCRIPTORIUM_HOME")
        .output()
        .expect("status runs");
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("WRITER_CLI_MISSING (permanent)"), "{status}");
    assert!(status.contains("usage       today 0 tokens"), "{status}");

    // Switching is explicit; a configured writer is kept by a plain setup.
    let said = ok(&setup(home.path(), user.path(), &["claude-code", "--writer", "journal"]));
    assert!(said.contains("writer: the journal"), "{said}");
    let said = ok(&setup(home.path(), user.path(), &["codex"]));
    assert!(said.contains("writer: kept the writer configured"), "{said}");
    let parsed: toml::Value =
        toml::from_str(&fs::read_to_string(&config).expect("read")).expect("TOML");
    assert_eq!(parsed["model"]["kind"].as_str(), Some("journal"), "kept");
    let said = ok(&setup(home.path(), user.path(), &["codex", "--writer", "none"]));
    assert!(said.contains("writer: none"), "{said}");
    let parsed: toml::Value =
        toml::from_str(&fs::read_to_string(&config).expect("read")).expect("TOML");
    assert_eq!(parsed["memory"]["writer"]["enabled"].as_bool(), Some(false));
    let said = ok(&setup(home.path(), user.path(), &["codex", "--writer-model", "gpt-5.5"]));
    assert!(said.contains("writer: kept none"), "a writer turned off stays off: {said}");
    let said = ok(&setup(
        home.path(),
        user.path(),
        &["codex", "--writer", "agent", "--writer-model", "gpt-5.5"],
    ));
    assert!(said.contains("Codex writes the memory with model gpt-5.5"), "{said}");
    let parsed: toml::Value =
        toml::from_str(&fs::read_to_string(&config).expect("read")).expect("TOML");
    assert_eq!(parsed["memory"]["writer"].get("enabled"), None, "on again");
    assert_eq!(parsed["model"]["command"][0].as_str(), Some("codex"));
}
