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
