//! An interrupted write never duplicates memory (fault sweep over every filesystem call of a
//! forced write): whatever call of the transaction engine fails — once (the error path runs)
//! or as a crash (every later call fails too, as if the process died there) — a rerun leaves
//! exactly the topics, archived frames and markers of an uninterrupted write. The window
//! between installing a batch and marking it is covered twice: by crashes after the swap (the
//! install reports `Unfinished`) and by a session store whose marking fails.

use std::collections::BTreeMap;
use std::sync::Arc;

use scriptorium_markers::MARKER_KEY;
use scriptorium_session_dag::{SessionId, SessionStore};
use scriptorium_txn::fs::NoSync;
use scriptorium_txn::{FaultFs, Fs, Options, Workspace};
use scriptorium_writer::model::journal::Journal;
use scriptorium_writer::{Writer, WriterConfig};

use super::Fixture;

const S: &str = "s1";

/// Batches of about one turn each: a forced write installs several.
fn config() -> WriterConfig {
    WriterConfig { threshold_tokens: 12, organize: false, ..WriterConfig::default() }
}

fn session(fx: &Fixture) {
    fx.turns(
        S,
        None,
        &["u1", "a1", "u2", "a2", "u3", "a3"],
        &[
            "I'm Dana and I live in Lyon, next to the river.",
            "Nice to meet you, Dana.",
            "My garden planner is written in Rust and stores data in SQLite.",
            "A fine choice for a small planner.",
            "Tomatoes go in the south bed this year, beans in the north bed.",
            "Noted: tomatoes south, beans north.",
        ],
    );
}

/// Topics and sources byte for byte, and the marker of every node.
fn outcome(fx: &Fixture) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = fx
        .state()
        .into_iter()
        .filter(|(rel, _)| rel.starts_with("topics/") || rel.starts_with("sources/"))
        .map(|(rel, bytes)| (rel, String::from_utf8_lossy(&bytes).into_owned()))
        .collect();
    let workspace = fx.ws.workspace_id().as_str();
    for node in fx.store.branch(&SessionId(S.into()), None).expect("branch") {
        let marker = match node.metadata.get(MARKER_KEY) {
            Some(id) if id == workspace => "marked by this workspace".to_owned(),
            other => format!("{other:?}"),
        };
        out.insert(format!("marker {}", node.id.0), marker);
    }
    out
}

fn writer(fx: &Fixture, ws: Workspace) -> Writer {
    Writer::new(ws, fx.store.clone(), Arc::new(Journal), config()).with_clock(Arc::new(|| {
        time::OffsetDateTime::from_unix_timestamp(1_710_493_200 + 86_400).expect("time")
    }))
}

/// The workspace of `fx` reopened through `fs`.
fn through(fx: &Fixture, fs: Arc<dyn Fs>) -> Option<Workspace> {
    Workspace::open_with(fx.root(), Options { fs, ..Options::default() }).ok()
}

#[test]
fn an_interrupted_write_and_its_rerun_equal_an_uninterrupted_write() {
    // The reference: one uninterrupted forced write, counting its calls.
    let fx = Fixture::new();
    session(&fx);
    let counting = Arc::new(FaultFs::counting(Arc::new(NoSync)));
    let ws = through(&fx, counting.clone()).expect("open");
    let report = writer(&fx, ws).write(&SessionId(S.into()), true).expect("reference write");
    assert!(report.batches.len() >= 3, "{report:?}");
    let calls = counting.calls();
    let expected = outcome(&fx);
    assert!(fx.pending_ids(S, None).is_empty());

    let mut recovered = 0;
    for crash in [false, true] {
        for k in 0..calls {
            let fx = Fixture::new();
            session(&fx);
            let fault = if crash {
                FaultFs::crash_at(Arc::new(NoSync), k)
            } else {
                FaultFs::fail_at(Arc::new(NoSync), k)
            };
            let fault = Arc::new(fault);
            if let Some(ws) = through(&fx, fault.clone()) {
                // Interrupted (or, for a tolerated fault, complete).
                let _ = writer(&fx, ws).write(&SessionId(S.into()), true);
            }
            assert!(fault.fired(), "call {k} never happened");
            let ws = Workspace::open_with(
                fx.root(),
                Options { fs: Arc::new(NoSync), ..Options::default() },
            )
            .unwrap_or_else(|e| panic!("k={k} crash={crash}: reopen: {e}"));
            let report = writer(&fx, ws)
                .write(&SessionId(S.into()), true)
                .unwrap_or_else(|e| panic!("k={k} crash={crash}: rerun: {e}"));
            recovered += report.batches.iter().filter(|b| b.recovered).count();
            assert_eq!(outcome(&fx), expected, "k={k}/{calls} crash={crash}");
        }
    }
    // Some interruptions fell between an install and its mark, and were finished by marking.
    assert!(recovered > 0, "no interruption hit the install-to-mark window");
}
