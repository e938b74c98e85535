//! The forced loop at a session boundary:
//! head branch first and batch after batch, other tips only when they reach the threshold,
//! shared prefixes written once, no progress is a permanent failure.

use std::sync::{Arc, Mutex};

use scriptorium_session_dag::{NodeId, SessionId, SessionStore};
use scriptorium_writer::model::ModelError;
use scriptorium_writer::tools::Tools;
use scriptorium_writer::{FailureCode, Model, RunReport, Task, TaskKind, WriterConfig};

use super::{Fixture, eager, topic};

/// A model that files every turn of a write task in its own topic (`topics/notes/<n>.md`) and
/// remembers the refs of each task; organize tasks optionally move one file.
#[derive(Debug, Default)]
struct Echo {
    tasks: Mutex<Vec<(TaskKind, Vec<String>)>>,
    idle: bool,
    organize_move: Option<(String, String)>,
}

impl Echo {
    fn batches(&self) -> Vec<Vec<String>> {
        let tasks = self.tasks.lock().expect("tasks");
        tasks.iter().filter(|(k, _)| *k == TaskKind::Write).map(|(_, r)| r.clone()).collect()
    }

    fn kinds(&self) -> Vec<TaskKind> {
        self.tasks.lock().expect("tasks").iter().map(|(k, _)| *k).collect()
    }
}

impl Model for Echo {
    fn name(&self) -> String {
        "echo".into()
    }

    fn run(&self, task: &Task, tools: &mut Tools<'_>) -> Result<RunReport, ModelError> {
        let refs: Vec<String> = task.turns.iter().map(|t| t.source_ref.clone()).collect();
        self.tasks.lock().expect("tasks").push((task.kind, refs.clone()));
        if task.kind == TaskKind::Organize {
            if let Some((from, to)) = &self.organize_move {
                let args = serde_json::json!({"from": from, "to": to}).to_string();
                assert!(!tools.call("move", &args).is_error);
            }
            return Ok(RunReport::default());
        }
        if self.idle {
            return Ok(RunReport::default());
        }
        for source in &refs {
            let name = source.rsplit('/').next().expect("node id");
            let text = topic(name, &[(&format!("Turn {name} was said."), source.as_str())]);
            let args =
                serde_json::json!({"path": format!("topics/notes/{name}.md"), "content": text});
            let result = tools.call("write", &args.to_string());
            assert!(!result.is_error, "{}", result.content);
        }
        Ok(RunReport::default())
    }
}

fn ids(texts: usize, prefix: &str) -> Vec<String> {
    (1..=texts).map(|i| format!("{prefix}{i}")).collect()
}

#[test]
fn forced_writes_the_head_branch_batch_after_batch() {
    let fx = Fixture::new();
    let names = ids(6, "m");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    fx.turns("s", None, &names, &["eleven char"; 6]);
    let echo = Arc::new(Echo::default());
    let config = WriterConfig { threshold_tokens: 1, ..eager() };
    let report =
        fx.writer(echo.clone(), config).write(&SessionId("s".into()), true).expect("written");
    assert_eq!(report.batches.len(), 6, "one batch per turn at threshold 1");
    assert_eq!(echo.batches().len(), 6);
    assert!(echo.batches().iter().all(|b| b.len() == 1));
    assert!(fx.pending_ids("s", None).is_empty(), "nothing owed after a forced write");
}

/// Trunk t1,t2; the head branch h1,h2 off t2; an abandoned long branch l1,l2 (≥ 10 tokens)
/// and an abandoned two-token branch o1, both off t2.
fn forked(fx: &Fixture) {
    fx.turns("s", None, &["t1", "t2"], &["We share this trunk.", "Yes we do share it."]);
    fx.turns(
        "s",
        Some("t2"),
        &["l1", "l2"],
        &[
            "This abandoned branch talks for quite a while about many things.",
            "It does, at length, with detail.",
        ],
    );
    fx.turns("s", Some("t2"), &["o1"], &["Leeds."]);
    fx.turns("s", Some("t2"), &["h1", "h2"], &["The head branch.", "Written first."]);
    fx.store.set_head(&SessionId("s".into()), &NodeId("h2".into())).expect("head");
}

#[test]
fn forced_writes_head_first_then_every_other_tip_sharing_prefixes_once() {
    let fx = Fixture::new();
    forked(&fx);
    let echo = Arc::new(Echo::default());
    let config = WriterConfig { threshold_tokens: 10, ..eager() };
    let report =
        fx.writer(echo.clone(), config).write(&SessionId("s".into()), true).expect("written");
    let batches = echo.batches();
    let flat: Vec<String> = batches.concat();
    let node = |id: &str| format!("openprogram/s/{id}");
    // Head branch first (trunk + head), then the abandoned branches, whatever their size: an
    // abandoned branch is conversation too, and would otherwise stay pending for ever.
    let head_at = flat.iter().position(|r| *r == node("h2")).expect("head written");
    let long_at = flat.iter().position(|r| *r == node("l1")).expect("long branch written");
    let short_at = flat.iter().position(|r| *r == node("o1")).expect("short branch written");
    assert!(head_at < long_at && head_at < short_at, "head branch first: {flat:?}");
    // Every node sent exactly once (the shared trunk too), and nothing left pending.
    let mut sorted = flat.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), flat.len(), "a node was sent twice: {flat:?}");
    assert_eq!(flat.len(), 7, "{flat:?}");
    for tip in ["h2", "l2", "o1"] {
        assert!(fx.pending_ids("s", Some(tip)).is_empty(), "{tip} still owes");
    }
    assert!(report.batches.iter().all(|b| !b.changed_files.is_empty()));
}

#[test]
fn forced_without_progress_is_a_permanent_failure() {
    let fx = Fixture::new();
    fx.turns("s", None, &["m1", "m2"], &["The plot is by the river.", "Noted, by the river."]);
    let echo = Arc::new(Echo { idle: true, ..Echo::default() });
    let failure = fx
        .writer(echo.clone(), eager())
        .write(&SessionId("s".into()), true)
        .expect_err("no progress");
    assert_eq!(failure.code, FailureCode::WriterNoProgress);
    assert!(!failure.is_retryable());
    // The failure says what the model did.
    assert!(
        failure.reason.contains("model round(s)")
            && failure.reason.contains("no topic file changed"),
        "{}",
        failure.reason
    );
    assert_eq!(fx.pending_ids("s", None), ["m1", "m2"]);
}

#[test]
fn a_session_without_records_is_nothing_to_do() {
    let fx = Fixture::new();
    fx.turns("s", None, &["m1", "m2"], &["   ", "\n"]);
    let echo = Arc::new(Echo::default());
    let report = fx.writer(echo.clone(), eager()).write(&SessionId("s".into()), true).expect("ok");
    assert!(report.batches.is_empty());
    assert!(echo.kinds().is_empty(), "no model call");
}

#[test]
fn organize_triggers_run_and_reset_their_counters() {
    let fx = Fixture::new();
    fx.turns("s", None, &["m1", "m2", "m3", "m4"], &["one fact", "two facts", "three", "four"]);
    let echo = Arc::new(Echo::default());
    let config =
        WriterConfig { threshold_tokens: 1, organize: true, organize_batches: 2, ..eager() };
    let report =
        fx.writer(echo.clone(), config).write(&SessionId("s".into()), true).expect("written");
    assert_eq!(report.batches.len(), 4);
    // Batch 1: the first write of the day runs the global organize. Batches 2 and 4: the local
    // organize (two batches each).
    let organized: Vec<usize> = report.batches.iter().map(|b| b.organized.len()).collect();
    assert_eq!(organized, [1, 1, 0, 1], "{report:#?}");
    assert!(report.batches.iter().flat_map(|b| &b.organized).all(|o| o.status == "ok"));
    let counters = fx.ws.counters().expect("counters");
    assert_eq!(counters.local_batches, 0);
    assert_eq!(counters.write_commits_since_global, 3, "three writes since the global pass");
    assert!(counters.last_global_at.is_some());
    assert_eq!(
        echo.kinds().iter().filter(|k| **k == TaskKind::Organize).count(),
        3,
        "{:?}",
        echo.kinds()
    );
}

#[test]
fn reorganize_reports_the_files_it_changed() {
    let fx = Fixture::new();
    fx.turns("s", None, &["m1"], &["A fact."]);
    let echo = Arc::new(Echo {
        organize_move: Some(("topics/notes/m1.md".into(), "topics/facts/m1.md".into())),
        ..Echo::default()
    });
    let writer = fx.writer(echo.clone(), eager());
    writer.write(&SessionId("s".into()), true).expect("written");
    let report = writer.reorganize();
    assert_eq!(report.status, "ok", "{report:?}");
    assert_eq!(report.topics, 1);
    assert_eq!(report.changed_files, ["topics/facts/m1.md", "topics/notes/m1.md"]);
    let moved = fx.live("topics/facts/m1.md").expect("moved");
    assert!(
        moved.contains("(../../sources/openprogram/_v2/s.md#source-"),
        "links rebased: {moved}"
    );
    // Nothing to change: ok with no files.
    let idle = Arc::new(Echo::default());
    let report = fx.writer(idle, eager()).reorganize();
    assert_eq!((report.status.as_str(), report.changed_files.len()), ("ok", 0));
}
