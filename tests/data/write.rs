//! The writer over real transcripts: a Claude Code project with an edit fork and a pi session
//! with compactions are imported, then written at the session boundary by the `scripted` model
//! (one recorded `write` + `commit_edits` per batch, generated from the batch it is shown) —
//! archive → topics → markers. Afterwards every record of the head branch is archived exactly
//! once and marked, every topic cites archived sources, and the whole tree validates.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use scriptorium_markers::{WorkspaceId, pending, records};
use scriptorium_session_dag::import::{Format, discover, import_unit};
use scriptorium_session_dag::{EmbeddedStore, Page, SessionStore};
use scriptorium_testkit::{Failed, Trial, data_trial, fail};
use scriptorium_txn::{BeginOptions, Workspace};
use scriptorium_writer::model::ModelError;
use scriptorium_writer::model::scripted::{Scripted, Step};
use scriptorium_writer::tools::Tools;
use scriptorium_writer::{
    ChatModel, Model, RunReport, Task, TaskKind, Writer, WriterConfig, source_id,
};
use serde_json::json;

fn check(cond: bool, what: impl Into<String>) -> Result<(), Failed> {
    if cond { Ok(()) } else { Err(fail(what.into())) }
}

/// A scripted model recorded per batch: one topic per batch with one cited paragraph per user
/// turn (its first words), then `commit_edits`, replayed through the real agent loop.
#[derive(Debug, Default)]
struct PerBatch {
    batches: Mutex<usize>,
}

impl Model for PerBatch {
    fn name(&self) -> String {
        "scripted-per-batch".into()
    }

    fn run(&self, task: &Task, tools: &mut Tools<'_>) -> Result<RunReport, ModelError> {
        if task.kind != TaskKind::Write {
            return Ok(RunReport::default());
        }
        let n = {
            let mut batches = self.batches.lock().map_err(|_| {
                ModelError::new(scriptorium_writer::model::ErrorReason::Unknown, "poisoned")
            })?;
            *batches += 1;
            *batches
        };
        let mut text = format!("# Batch {n}\n");
        let mut cited = 0;
        for (i, turn) in task.turns.iter().enumerate() {
            let words: Vec<&str> = turn
                .content
                .split_whitespace()
                .filter(|w| w.chars().all(|c| c.is_alphanumeric()))
                .take(8)
                .collect();
            if words.is_empty() {
                continue;
            }
            cited += 1;
            text.push_str(&format!(
                "\nThe conversation mentioned {}.[^e{i}]\n\n[^e{i}]: Time: `undated`; Sources: [turn]({})\n",
                words.join(" "),
                turn.source_ref
            ));
        }
        if cited == 0 {
            text.push_str(&format!(
                "\nA batch without plain words was reviewed.[^e0]\n\n[^e0]: Time: `undated`; Sources: [turn]({})\n",
                task.turns[0].source_ref
            ));
        }
        let steps = vec![
            Step::Call {
                tool: "write".into(),
                arguments: json!({"path": format!("topics/batches/batch-{n}.md"), "content": text}),
            },
            Step::Call { tool: "commit_edits".into(), arguments: serde_json::Value::Null },
        ];
        ChatModel::new(Arc::new(Scripted::new(steps))).run(task, tools)
    }
}

fn write_real(paths: Vec<PathBuf>, format: Format, threshold: usize) -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(fail)?;
    let store = Arc::new(EmbeddedStore::open(dir.path().join("sessions")).map_err(fail)?);
    let (units, errors) = discover(format, &paths);
    check(errors.is_empty(), format!("discover errors: {errors:?}"))?;
    for unit in &units {
        import_unit(store.as_ref(), unit).map_err(fail)?;
    }
    let ws = Workspace::init(dir.path().join("memory")).map_err(fail)?;
    let workspace = WorkspaceId::parse(ws.workspace_id().as_str()).map_err(fail)?;
    let model = Arc::new(PerBatch::default());
    let config = WriterConfig { threshold_tokens: threshold, ..WriterConfig::default() };
    let writer = Writer::new(ws.clone(), store.clone(), model.clone(), config);
    let sessions = store.list_sessions(Page { offset: 0, limit: 50 }).map_err(fail)?;
    check(!sessions.is_empty(), "sessions imported")?;
    for session in &sessions {
        let report = writer.write(&session.id, true).map_err(|e| {
            let history = ws.root().join(".scriptorium/agent-history.jsonl");
            let log = std::fs::read_to_string(history).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(1).collect();
            fail(format!(
                "{e}; last agent run: {}",
                tail.join("\n").chars().take(3000).collect::<String>()
            ))
        })?;
        check(!report.batches.is_empty(), format!("{} wrote nothing", session.id))?;
        // The head branch owes nothing and every record of it is archived exactly once.
        let owed = pending(store.as_ref(), &session.id, None, &workspace).map_err(fail)?;
        check(owed.is_empty(), format!("{} still owes {} records", session.id, owed.len()))?;
        let branch = store.branch(&session.id, None).map_err(fail)?;
        let archive_path = ws.root().join(format!("sources/openprogram/_v2/{}.md", session.id.0));
        let archive = std::fs::read_to_string(&archive_path).map_err(fail)?;
        for node in records(&branch) {
            let marker = format!("<!-- source-id:{} -->", source_id(&session.id, &node.id));
            let count = archive.matches(&marker).count();
            check(count == 1, format!("{} archived {count} times", node.id.0))?;
        }
    }
    // The whole tree validates as committed (every ref resolves, every block well formed).
    let staged = ws.begin(BeginOptions::default()).map_err(fail)?;
    let files = staged.baseline_files().count();
    check(files > 0, "topics written")?;
    drop(staged.validate().map_err(|r| fail(format!("{:?}", r.violations())))?);
    let batches = *model.batches.lock().map_err(|_| fail("poisoned"))?;
    check(files == batches, format!("{files} topic files for {batches} batches"))?;
    Ok(())
}

fn claude_code_trial(data: &Path) -> Result<(), Failed> {
    let path = data.join("claude-code-log/real_projects/-experiments-ideas");
    write_real(vec![path], Format::ClaudeCode, 2_000)
}

fn pi_trial(data: &Path) -> Result<(), Failed> {
    write_real(vec![data.join("pi-mono/before-compaction.jsonl")], Format::Pi, 16_000)
}

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    vec![
        data_trial("real_claude_code_project_written_archived_and_marked", claude_code_trial),
        data_trial("real_pi_session_with_compactions_written_batch_by_batch", pi_trial),
    ]
}
