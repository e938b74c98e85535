//! One pass: archive → topics → markers; the repair turn; `COMMIT_REJECTED`; a held lock; a
//! crash between install and marking; below-threshold and no-change batches.

use std::fs::File;
use std::sync::{Arc, Mutex};

use scriptorium_session_dag::{MetadataBatch, SessionId, SessionStore};
use scriptorium_topics_format::source::scan;
use scriptorium_writer::{FailureCode, WriterConfig};

use super::{Fixture, commit_step, eager, scripted, source, topic, write_step};

const S: &str = "s1";

fn two_turns(fx: &Fixture) {
    fx.turns(S, None, &["u1", "a1"], &["I'm Dana and I live in Lyon.", "Nice to meet you, Dana."]);
}

#[test]
fn a_batch_is_archived_written_and_marked() {
    let fx = Fixture::new();
    two_turns(&fx);
    let (chat, model) = scripted(vec![
        write_step(
            "topics/people/dana.md",
            &topic("Dana", &[("Dana lives in Lyon.", &source(S, "u1"))]),
        ),
        commit_step(),
    ]);
    let report = fx.writer(model, eager()).write(&SessionId(S.into()), false).expect("written");
    assert_eq!(report.batches.len(), 1);
    let batch = &report.batches[0];
    assert_eq!(batch.source_ids, [source(S, "u1"), source(S, "a1")]);
    assert_eq!(batch.changed_files, ["topics/people/dana.md"]);
    assert_eq!(batch.block_ids.len(), 1);
    assert!(!batch.repaired);
    // Archive: both turns, trusted speaker fields from the node.
    let archive = fx.live("sources/openprogram/_v2/s1.md").expect("archive written");
    let scanned = scan("sources/openprogram/_v2/s1.md", &archive);
    assert!(scanned.contains(&source(S, "u1")) && scanned.contains(&source(S, "a1")));
    assert!(archive.contains("Owner"), "speaker display archived: {archive}");
    // Topic: normalized, cites the archived source through a link.
    let dana = fx.live("topics/people/dana.md").expect("topic");
    assert!(dana.contains("Dana lives in Lyon.[^e-"), "{dana}");
    assert!(dana.contains("../../sources/openprogram/_v2/s1.md#source-"), "{dana}");
    // Markers: the whole batch, nothing pending.
    assert!(fx.pending_ids(S, None).is_empty());
    // The model saw the turns as JSONL with the runtime-owned speaker.
    let prompt = match &chat.requests()[0].messages[0] {
        scriptorium_writer::model::ChatMessage::User { text } => text.clone(),
        other => panic!("first message is the task, got {other:?}"),
    };
    assert!(prompt.contains(r#"{"ref":"openprogram/s1/u1","speaker":"Owner (owner/local)","content":"I'm Dana and I live in Lyon."}"#), "{prompt}");
    assert!(prompt.contains("## Observed 2024-03-15"), "{prompt}");
}

#[test]
fn a_rejected_batch_gets_one_repair_turn_then_installs() {
    let fx = Fixture::new();
    two_turns(&fx);
    let (chat, model) = scripted(vec![
        // Undefined footnote: rejected.
        write_step("topics/people/dana.md", "# Dana\n\nDana lives in Lyon.[^e1]\n"),
        commit_step(),
        // The repair.
        write_step(
            "topics/people/dana.md",
            &topic("Dana", &[("Dana lives in Lyon.", &source(S, "u1"))]),
        ),
        commit_step(),
    ]);
    let report = fx.writer(model, eager()).write(&SessionId(S.into()), false).expect("repaired");
    assert!(report.batches[0].repaired);
    assert_eq!(chat.remaining(), 0);
    let requests = chat.requests();
    let repair = requests.iter().find_map(|r| match &r.messages[0] {
        scriptorium_writer::model::ChatMessage::User { text }
            if text.contains("undefined footnote") =>
        {
            Some(text.clone())
        }
        _ => None,
    });
    let repair = repair.expect("a repair prompt naming the violation");
    assert!(repair.contains("## Observed 2024-03-15"), "the repair repeats the task: {repair}");
    assert!(fx.pending_ids(S, None).is_empty());
}

#[test]
fn a_twice_rejected_batch_is_commit_rejected_and_changes_nothing() {
    let fx = Fixture::new();
    two_turns(&fx);
    let bad = "# Dana\n\nDana lives in Lyon.[^e1]\n";
    let (chat, model) = scripted(vec![
        write_step("topics/people/dana.md", bad),
        commit_step(),
        write_step("topics/people/dana.md", bad),
        commit_step(),
    ]);
    let writer = fx.writer(model, eager());
    // Archive first: the sources are archived before the model runs.
    let revision = fx.ws.revision().expect("revision");
    let failure = writer.write(&SessionId(S.into()), false).expect_err("rejected twice");
    assert_eq!(failure.code, FailureCode::CommitRejected);
    assert!(!failure.is_retryable());
    assert!(failure.reason.contains("repair edits were rejected too"), "{failure}");
    assert_eq!(chat.remaining(), 0, "exactly two runs");
    assert!(fx.live("topics/people/dana.md").is_none());
    assert_eq!(fx.pending_ids(S, None), ["u1", "a1"], "nothing marked");
    // Only the archive moved the revision; the topics did not change.
    let topics: Vec<String> = fx.state().into_keys().filter(|p| p.starts_with("topics/")).collect();
    assert!(topics.is_empty(), "{topics:?}");
    assert_ne!(fx.ws.revision().expect("revision"), revision, "the archive append is kept");
}

#[test]
fn a_held_lock_is_retryable_and_marks_nothing() {
    let fx = Fixture::new();
    two_turns(&fx);
    let (chat, model) = scripted(vec![commit_step()]);
    let lock = File::options()
        .read(true)
        .write(true)
        .open(fx.root().join(".scriptorium/write.lock"))
        .expect("lock file");
    lock.lock().expect("hold the write lock");
    let before = fx.state();
    let failure = fx.writer(model, eager()).write(&SessionId(S.into()), false).expect_err("busy");
    assert_eq!(failure.code, FailureCode::ConcurrentUpdate);
    assert!(failure.is_retryable());
    assert_eq!(chat.requests().len(), 0, "the model never ran");
    assert_eq!(fx.state(), before, "nothing written");
    assert_eq!(fx.pending_ids(S, None), ["u1", "a1"]);
    lock.unlock().expect("unlock");
}

/// A store whose first `merge_metadata` fails: a crash between install and marking.
#[derive(Debug)]
struct FailFirstMark {
    inner: std::sync::Arc<scriptorium_session_dag::EmbeddedStore>,
    failed: std::sync::atomic::AtomicBool,
}

impl SessionStore for FailFirstMark {
    fn append(
        &self,
        s: &SessionId,
        n: scriptorium_session_dag::Node,
    ) -> Result<(), scriptorium_session_dag::Error> {
        self.inner.append(s, n)
    }
    fn append_batch(
        &self,
        s: &SessionId,
        n: Vec<scriptorium_session_dag::Node>,
    ) -> Result<usize, scriptorium_session_dag::Error> {
        self.inner.append_batch(s, n)
    }
    fn set_head(
        &self,
        s: &SessionId,
        n: &scriptorium_session_dag::NodeId,
    ) -> Result<(), scriptorium_session_dag::Error> {
        self.inner.set_head(s, n)
    }
    fn rewind(
        &self,
        s: &SessionId,
        n: &scriptorium_session_dag::NodeId,
    ) -> Result<(), scriptorium_session_dag::Error> {
        self.inner.rewind(s, n)
    }
    fn branch(
        &self,
        s: &SessionId,
        t: Option<&scriptorium_session_dag::NodeId>,
    ) -> Result<Vec<scriptorium_session_dag::Node>, scriptorium_session_dag::Error> {
        self.inner.branch(s, t)
    }
    fn tips(
        &self,
        s: &SessionId,
    ) -> Result<Vec<scriptorium_session_dag::NodeId>, scriptorium_session_dag::Error> {
        self.inner.tips(s)
    }
    fn node(
        &self,
        s: &SessionId,
        n: &scriptorium_session_dag::NodeId,
    ) -> Result<Option<scriptorium_session_dag::Node>, scriptorium_session_dag::Error> {
        self.inner.node(s, n)
    }
    fn merge_metadata(
        &self,
        s: &SessionId,
        b: &MetadataBatch,
    ) -> Result<(), scriptorium_session_dag::Error> {
        if !self.failed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Err(scriptorium_session_dag::Error::Unsupported {
                operation: "merge_metadata (simulated crash)",
            });
        }
        self.inner.merge_metadata(s, b)
    }
    fn session(
        &self,
        s: &SessionId,
    ) -> Result<Option<scriptorium_session_dag::Session>, scriptorium_session_dag::Error> {
        self.inner.session(s)
    }
    fn list_sessions(
        &self,
        p: scriptorium_session_dag::Page,
    ) -> Result<Vec<scriptorium_session_dag::Session>, scriptorium_session_dag::Error> {
        self.inner.list_sessions(p)
    }
}

#[test]
fn a_crash_between_install_and_marking_is_finished_without_writing_the_batch_twice() {
    let fx = Fixture::new();
    two_turns(&fx);
    let store = std::sync::Arc::new(FailFirstMark {
        inner: fx.store.clone(),
        failed: std::sync::atomic::AtomicBool::new(false),
    });
    let note = topic("Dana", &[("Dana lives in Lyon.", &source(S, "u1"))]);
    let (chat, model) = scripted(vec![
        write_step("topics/people/dana.md", &note),
        commit_step(),
        // What a second run of the model would write: it must never run.
        write_step(
            "topics/people/dana2.md",
            &topic("Dana again", &[("Dana lives in Lyon (redo).", &source(S, "u1"))]),
        ),
        commit_step(),
    ]);
    let writer = scriptorium_writer::Writer::new(fx.ws.clone(), store, model, eager()).with_clock(
        std::sync::Arc::new(|| {
            time::OffsetDateTime::from_unix_timestamp(1_710_493_200 + 86_400).expect("time")
        }),
    );
    let failure = writer.write(&SessionId(S.into()), false).expect_err("marking failed");
    assert!(failure.reason.contains("could not mark"), "{failure}");
    assert!(fx.live("topics/people/dana.md").is_some(), "the install happened");
    assert_eq!(fx.pending_ids(S, None), ["u1", "a1"], "nothing marked");
    let requests = chat.requests().len();
    let before = fx.state();
    let report = writer.write(&SessionId(S.into()), false).expect("the rerun");
    assert_eq!(report.batches.len(), 1, "{report:?}");
    let batch = &report.batches[0];
    assert!(batch.recovered, "{batch:?}");
    assert_eq!(batch.source_ids, [source(S, "u1"), source(S, "a1")]);
    assert!(batch.changed_files.is_empty());
    assert_eq!(chat.requests().len(), requests, "the model ran again");
    assert!(fx.pending_ids(S, None).is_empty(), "the rerun marked the batch");
    assert_eq!(fx.state(), before, "the rerun wrote the batch again");
    assert!(fx.live("topics/people/dana2.md").is_none());
    let after = fx.live("sources/openprogram/_v2/s1.md").expect("archive");
    assert_eq!(after.matches("<!-- source-id:openprogram/s1/u1 -->").count(), 1, "{after}");
}

#[test]
fn below_threshold_and_no_change_batches_mark_nothing() {
    let fx = Fixture::new();
    two_turns(&fx);
    // Below threshold, fresh turns (the clock is at the turns' time): no model call.
    let (chat, model) = scripted(vec![commit_step()]);
    let fresh = std::sync::Arc::new(|| {
        time::OffsetDateTime::from_unix_timestamp(1_710_493_300).expect("time")
    });
    let writer = fx
        .writer(
            model.clone(),
            WriterConfig { threshold_tokens: 100_000, organize: false, ..WriterConfig::default() },
        )
        .with_clock(fresh);
    let report = writer.write(&SessionId(S.into()), false).expect("not due");
    assert!(report.batches.is_empty());
    assert!(chat.requests().is_empty(), "no model call below the threshold");
    // The idle allowance: an hour later the same small batch is due. The model changes
    // nothing: unforced, that is no report and no mark.
    let later = std::sync::Arc::new(|| {
        time::OffsetDateTime::from_unix_timestamp(1_710_493_200 + 3 * 3600).expect("time")
    });
    let writer = fx
        .writer(
            model,
            WriterConfig { threshold_tokens: 100_000, organize: false, ..WriterConfig::default() },
        )
        .with_clock(later);
    let report = writer.write(&SessionId(S.into()), false).expect("nothing changed");
    assert!(report.batches.is_empty());
    assert_eq!(chat.requests().len(), 1, "the idle batch reached the model");
    assert_eq!(fx.pending_ids(S, None), ["u1", "a1"], "a no-change batch marks nothing");
}

#[test]
fn tools_are_confined_to_topic_files_of_the_stage() {
    let fx = Fixture::new();
    two_turns(&fx);
    let escape = |args: serde_json::Value| scriptorium_writer::model::scripted::Step::Call {
        tool: "write".into(),
        arguments: args,
    };
    let (chat, model) = scripted(vec![
        escape(serde_json::json!({"path": "/etc/passwd", "content": "x"})),
        escape(serde_json::json!({"path": "topics/../../outside.md", "content": "x"})),
        escape(serde_json::json!({"path": "sources/openprogram/_v2/s1.md", "content": "x"})),
        escape(serde_json::json!({"path": ".scriptorium/runtime.json", "content": "{}"})),
        escape(serde_json::json!({"path": "core.md", "content": "x"})),
        scriptorium_writer::model::scripted::Step::Call {
            tool: "write".into(),
            arguments: serde_json::Value::String("{not json".into()),
        },
        commit_step(),
    ]);
    let before = fx.state();
    let report = fx.writer(model, eager()).write(&SessionId(S.into()), false).expect("no change");
    assert!(report.batches.is_empty());
    let results: Vec<(bool, String)> = chat
        .requests()
        .last()
        .expect("requests")
        .messages
        .iter()
        .filter_map(|m| match m {
            scriptorium_writer::model::ChatMessage::Tool { is_error, content, .. } => {
                Some((*is_error, content.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 6, "{results:?}");
    assert!(results[..6].iter().all(|(error, _)| *error), "{results:?}");
    assert!(results[0].1.contains("escapes the workspace"), "{results:?}");
    assert!(results[2].1.contains("only topics/**/*.md is writable"), "{results:?}");
    assert!(results[5].1.contains("malformed tool arguments"), "{results:?}");
    // Only the archive append changed anything.
    let changed: Vec<String> = fx
        .state()
        .into_iter()
        .filter(|(p, bytes)| before.get(p) != Some(bytes))
        .map(|(p, _)| p)
        .collect();
    assert!(
        changed.iter().all(|p| p.starts_with("sources/") || p == ".scriptorium/revision"),
        "{changed:?}"
    );
    assert!(!fx.dir.path().join("outside.md").exists());
}

/// A chat model's progress callback hears of every model turn, with the tools it called.
#[test]
fn the_progress_callback_hears_every_model_turn() {
    let fx = Fixture::new();
    two_turns(&fx);
    let chat = Arc::new(scriptorium_writer::model::scripted::Scripted::new(vec![
        write_step(
            "topics/people/dana.md",
            &topic("Dana", &[("Dana lives in Lyon.", &source(S, "u1"))]),
        ),
        commit_step(),
    ]));
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    let mut model = scriptorium_writer::ChatModel::new(chat);
    model.progress = Some(Arc::new(move |turn: &scriptorium_writer::TurnProgress| {
        sink.lock().expect("unpoisoned").push((turn.round, turn.tool_calls.clone()));
    }));
    fx.writer(Arc::new(model), eager()).write(&SessionId(S.into()), false).expect("written");
    let heard = heard.lock().expect("unpoisoned").clone();
    assert!(!heard.is_empty(), "no turn heard");
    let rounds: Vec<u32> = heard.iter().map(|(round, _)| *round).collect();
    assert_eq!(rounds, (1..=u32::try_from(heard.len()).expect("few")).collect::<Vec<_>>());
    let tools: Vec<String> = heard.into_iter().flat_map(|(_, calls)| calls).collect();
    assert!(
        tools.contains(&"write".to_owned()) && tools.contains(&"commit_edits".to_owned()),
        "{tools:?}"
    );
}

/// A run past its deadline stops before its next model turn, retryable, saying so; nothing is
/// installed or marked.
#[test]
fn a_run_past_its_deadline_stops_and_says_so() {
    let fx = Fixture::new();
    two_turns(&fx);
    let chat = Arc::new(scriptorium_writer::model::scripted::Scripted::new(vec![commit_step()]));
    let mut model = scriptorium_writer::ChatModel::new(chat);
    model.deadline = Some(std::time::Duration::ZERO);
    let failure = fx
        .writer(Arc::new(model), eager())
        .write(&SessionId(S.into()), false)
        .expect_err("past the deadline");
    assert!(failure.is_retryable(), "{failure:?}");
    assert!(failure.reason.contains("deadline of 0 s after 0 model turn(s)"), "{}", failure.reason);
    assert_eq!(fx.pending_ids(S, None).len(), 2, "nothing marked");
}
