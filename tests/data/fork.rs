//! Real Claude Code transcripts carried from import to the written-marker walk: once one branch
//! of a user-edit fork is written (marked), the other branch owes exactly its own turns and the
//! shared prefix is never offered twice; a compaction summary is never a record.

use std::path::PathBuf;

use scriptorium_markers::{WorkspaceId, boundary_plan, mark, pending, records};
use scriptorium_session_dag::import::{Format, discover, import_unit};
use scriptorium_session_dag::{EmbeddedStore, SessionId, SessionStore};
use scriptorium_testkit::{Failed, Trial, data_trial, fail};

fn check(cond: bool, what: impl Into<String>) -> Result<(), Failed> {
    if cond { Ok(()) } else { Err(fail(what.into())) }
}

/// Imports Claude Code transcripts at `path` into a fresh store; returns the store (with the
/// directory that holds it) and the one session imported.
fn import_one(path: PathBuf) -> Result<(tempfile::TempDir, EmbeddedStore, SessionId), Failed> {
    let home = tempfile::tempdir().map_err(fail)?;
    let store = EmbeddedStore::open(home.path().join("sessions")).map_err(fail)?;
    let (units, errors) = discover(Format::ClaudeCode, &[path]);
    check(errors.is_empty(), format!("discover errors: {errors:?}"))?;
    for unit in &units {
        import_unit(&store, unit).map_err(fail)?;
    }
    let sessions = store
        .list_sessions(scriptorium_session_dag::Page { offset: 0, limit: 10 })
        .map_err(fail)?;
    check(sessions.len() == 1, format!("one session expected, got {}", sessions.len()))?;
    let session = sessions[0].id.clone();
    Ok((home, store, session))
}

fn fork_trial(data: &std::path::Path) -> Result<(), Failed> {
    let dir: PathBuf = data.join("claude-code-log/real_projects/-experiments-ideas");
    let (_home, store, session) = import_one(dir)?;
    let session = &session;
    let tips = store.tips(session).map_err(fail)?;
    check(tips.len() >= 2, format!("the edit fork gives two live tips, got {tips:?}"))?;

    let workspace = WorkspaceId::parse("w-0123abcd").map_err(fail)?;
    let (head_tip, other_tip) = (&tips[0], &tips[1]);
    let head_branch = store.branch(session, Some(head_tip)).map_err(fail)?;
    let other_branch = store.branch(session, Some(other_tip)).map_err(fail)?;
    let shared = head_branch.iter().zip(&other_branch).take_while(|(a, b)| a.id == b.id).count();
    check(shared > 0, "the two branches share a prefix")?;

    // Write the head branch: everything it owes, then mark it.
    let owed = pending(&store, session, Some(head_tip), &workspace).map_err(fail)?;
    let head_records: Vec<_> = records(&head_branch).into_iter().map(|n| n.id.clone()).collect();
    let owed_ids: Vec<_> = owed.iter().map(|n| n.id.clone()).collect();
    check(owed_ids == head_records, "an unmarked branch owes all of its records")?;
    mark(&store, session, &owed, &workspace).map_err(fail)?;
    check(
        pending(&store, session, Some(head_tip), &workspace).map_err(fail)?.is_empty(),
        "a written branch owes nothing",
    )?;

    // The other branch owes exactly its records after the fork point.
    let expected: Vec<_> =
        records(&other_branch[shared..]).into_iter().map(|n| n.id.clone()).collect();
    let other_owed: Vec<_> = pending(&store, session, Some(other_tip), &workspace)
        .map_err(fail)?
        .into_iter()
        .map(|n| n.id)
        .collect();
    check(!expected.is_empty(), "the edited branch has records of its own")?;
    check(other_owed == expected, format!("pending {other_owed:?} != {expected:?}"))?;

    // At the session boundary the head comes first; it owes nothing now, so only the other
    // branch is planned when its tokens reach the threshold.
    let plan = boundary_plan(&store, session, &workspace, 1, &|s: &str| s.len()).map_err(fail)?;
    check(plan.iter().all(|b| b.tip != *head_tip), "nothing planned for the written head")?;
    check(plan.iter().any(|b| b.tip == *other_tip), "the edited branch is planned")?;
    Ok(())
}

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    vec![
        data_trial("real_edit_fork_import_then_pending", fork_trial),
        data_trial("real_compaction_summary_is_never_a_record", compaction_trial),
    ]
}

/// The real compaction transcript: the summary node is imported as a compaction summary and is
/// never a record, so memory never writes the summary back as if it were a new turn.
fn compaction_trial(data: &std::path::Path) -> Result<(), Failed> {
    let file = data.join("codemie-code/claude/session-624a4a58.jsonl");
    let (_home, store, session) = import_one(file)?;
    let session = &session;
    let branch = store.branch(session, None).map_err(fail)?;
    let summaries: Vec<_> = branch
        .iter()
        .filter(|n| n.kind == scriptorium_session_dag::NodeKind::CompactionSummary)
        .collect();
    check(
        summaries.len() == 1,
        format!("one compaction summary on the head branch, got {}", summaries.len()),
    )?;
    let recs = records(&branch);
    check(!recs.is_empty(), "the session has records")?;
    check(
        recs.iter().all(|n| n.kind == scriptorium_session_dag::NodeKind::Message),
        "only messages are records",
    )?;
    check(!recs.iter().any(|n| n.id == summaries[0].id), "the summary is never a record")?;
    let workspace = WorkspaceId::parse("w-0123abcd").map_err(fail)?;
    let owed = pending(&store, session, None, &workspace).map_err(fail)?;
    check(owed.len() == recs.len(), "an unmarked branch owes exactly its records")?;
    Ok(())
}
