//! `scriptorium check` over the workspace written by the Python implementation.

use scriptorium_testkit::{Trial, data_trial, fail};

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    vec![data_trial("check_openprogram_workspace_is_clean", |data| {
        let ws = data.join("openprogram-workspace/memory");
        let home = tempfile::tempdir().map_err(fail)?;
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_scriptorium"))
            .args(["--home", home.path().to_str().unwrap_or_default()])
            .args(["check", "--json", "--workspace"])
            .arg(&ws)
            .output()
            .map_err(fail)?;
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(fail)?;
        if out.status.code() != Some(0) || json["ok"] != true {
            return Err(fail(format!("expected a clean workspace, got {json}")));
        }
        if json["blocks"] != 100 || json["topic_files"] != 5 || json["source_files"] != 5 {
            return Err(fail(format!("unexpected counts: {json}")));
        }
        Ok(())
    })]
}
