//! `scriptorium import` over the real transcripts of `SCRIPTORIUM_TEST_DATA`, through the
//! binary: every data set imports with exit 0 and no bad line, and a second run appends nothing.

use std::path::Path;
use std::process::Command;

use scriptorium_testkit::{Failed, Trial, data_trial, fail};
use serde_json::Value;

fn run(home: &Path, args: &[&str]) -> Result<(i32, Value), Failed> {
    let out = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(args)
        .arg("--json")
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .map_err(fail)?;
    let json = serde_json::from_slice(&out.stdout).map_err(|e| {
        fail(format!(
            "{e}: stdout {:?} stderr {:?}",
            out.stdout,
            String::from_utf8_lossy(&out.stderr)
        ))
    })?;
    Ok((out.status.code().unwrap_or(-1), json))
}

/// Imports `dirs` as `format` into a fresh home twice; checks the counts.
fn import_twice(data: &Path, format: &str, dirs: &[&str], sessions: u64) -> Result<(), Failed> {
    let tmp = tempfile::tempdir().map_err(fail)?;
    let paths: Vec<String> = dirs.iter().map(|d| data.join(d).display().to_string()).collect();
    let mut args = vec!["import", format];
    args.extend(paths.iter().map(String::as_str));
    let (code, first) = run(tmp.path(), &args)?;
    if code != 0 || first["bad_lines"] != Value::Array(Vec::new()) || first["sessions"] != sessions
    {
        return Err(fail(format!("{format} {dirs:?}: exit {code}, {first:#}")));
    }
    if first["new_nodes"].as_u64().unwrap_or(0) == 0 {
        return Err(fail(format!("{format} {dirs:?}: nothing imported")));
    }
    let (code, second) = run(tmp.path(), &args)?;
    if code != 0 || second["new_nodes"] != 0 || second["existing_nodes"] != first["nodes"] {
        return Err(fail(format!("{format} {dirs:?}: re-import exit {code}, {second:#}")));
    }
    Ok(())
}

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    vec![
        data_trial("import::claude_code_real_projects", |data| {
            // Four sessions; the empty file gives none. The sidechain joins its session.
            import_twice(data, "claude-code", &["claude-code-log/real_projects"], 4)
        }),
        data_trial("import::claude_code_codemie_and_agent_history", |data| {
            // turn-1 and turn-2 are one session captured twice: 3 + 1 sessions.
            let dirs = ["codemie-code/claude", "agent-history/real_sessions/claude"];
            import_twice(data, "claude-code", &dirs, 4)
        }),
        data_trial("import::codex_rollouts", |data| {
            let dirs = ["codemie-code/codex", "agent-history/real_sessions/codex"];
            import_twice(data, "codex", &dirs, 3)
        }),
        data_trial("import::pi_sessions", |data| {
            import_twice(data, "pi", &["pi-mono", "agent-history/real_sessions/pi"], 3)
        }),
        data_trial("import::auto_gives_every_data_set_its_format", |data| {
            // The sessions of the four runs above: 4 + 4 + 3 + 3.
            let dirs = scriptorium_testkit::REAL_TRANSCRIPTS;
            import_twice(data, "auto", &dirs, 14)?;
            let tmp = tempfile::tempdir().map_err(fail)?;
            let paths: Vec<String> =
                dirs.iter().map(|d| data.join(d).display().to_string()).collect();
            let mut args = vec!["import", "auto"];
            args.extend(paths.iter().map(String::as_str));
            let (_, v) = run(tmp.path(), &args)?;
            let files = v["files"].as_array().map_or(0, Vec::len);
            if files != 17 {
                return Err(fail(format!("{files} files listed, 17 in the data: {v:#}")));
            }
            for file in v["files"].as_array().into_iter().flatten() {
                let path = file["path"].as_str().unwrap_or("");
                let want = if path.contains("/codex/") {
                    "codex"
                } else if path.contains("/pi") {
                    "pi"
                } else {
                    "claude-code"
                };
                let empty = std::fs::metadata(path).map_err(fail)?.len() == 0;
                let ok = if empty { file["format"].is_null() } else { file["format"] == want };
                if !ok {
                    return Err(fail(format!("{path}: detected {}", file["format"])));
                }
            }
            Ok(())
        }),
        data_trial("import::codex_rollouts_imported_as_pi_are_refused", |data| {
            let tmp = tempfile::tempdir().map_err(fail)?;
            let dir = data.join("codemie-code/codex").display().to_string();
            let (code, v) = run(tmp.path(), &["import", "pi", &dir])?;
            let refused = v["failed"]
                .as_array()
                .map_or(0, |f| f.iter().filter(|f| f["code"] == "WRONG_FORMAT").count());
            if code != 1 || v["nodes"] != 0 || refused != 2 {
                return Err(fail(format!("exit {code}: {v:#}")));
            }
            Ok(())
        }),
    ]
}
