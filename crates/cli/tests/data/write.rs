//! `scriptorium write --all --force` over every real transcript of `SCRIPTORIUM_TEST_DATA`,
//! with the default (journal) writer: nothing stays pending, and no command wrapper, terminal
//! escape or interrupt notice reaches a topic.

use std::path::Path;
use std::process::Command;

use scriptorium_testkit::{Failed, REAL_TRANSCRIPTS, Trial, data_trial, fail};
use serde_json::Value;

/// What must never reach a topic.
const NOISE: [&str; 6] = [
    "<command-name>",
    "command-name\\>",
    "<local-command-stdout>",
    "\u{1b}[",
    "[Request interrupted",
    "Request interrupted by user",
];

fn scriptorium(home: &Path, args: &[&str]) -> Result<(i32, String), Failed> {
    let out = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .map_err(fail)?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Ok((out.status.code().unwrap_or(-1), text + &String::from_utf8_lossy(&out.stderr)))
}

fn every_transcript_is_written_clean(data: &Path) -> Result<(), Failed> {
    let home = tempfile::tempdir().map_err(fail)?;
    let (code, out) = scriptorium(home.path(), &["init"])?;
    if code != 0 {
        return Err(fail(format!("init: {out}")));
    }
    let dirs: Vec<String> =
        REAL_TRANSCRIPTS.iter().map(|d| data.join(d).display().to_string()).collect();
    let mut import = vec!["import", "auto"];
    import.extend(dirs.iter().map(String::as_str));
    let (code, out) = scriptorium(home.path(), &import)?;
    if code != 0 {
        return Err(fail(format!("import: {out}")));
    }
    let (code, out) = scriptorium(home.path(), &["write", "--all", "--force"])?;
    if code != 0 {
        return Err(fail(format!("write: exit {code}: {out}")));
    }
    let (_, status) = scriptorium(home.path(), &["status", "--json"])?;
    let status: Value = serde_json::from_str(&status).map_err(fail)?;
    if status["pending_turns"] != 0 || status["blocks"].as_u64().unwrap_or(0) == 0 {
        return Err(fail(format!("after write --all --force: {status:#}")));
    }
    for entry in walkdir(&home.path().join("memory/topics"))? {
        let text = std::fs::read_to_string(&entry).map_err(fail)?;
        if let Some(noise) = NOISE.iter().find(|n| text.contains(*n)) {
            return Err(fail(format!("{}: holds {noise:?}", entry.display())));
        }
    }
    Ok(())
}

/// Every file under `dir`, recursively.
fn walkdir(dir: &Path) -> Result<Vec<std::path::PathBuf>, Failed> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(fail)? {
            let path = entry.map_err(fail)?.path();
            if path.is_dir() { stack.push(path) } else { out.push(path) }
        }
    }
    Ok(out)
}

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    vec![data_trial(
        "write::every_real_transcript_is_written_clean_and_nothing_stays_pending",
        every_transcript_is_written_clean,
    )]
}
