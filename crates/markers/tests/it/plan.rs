//! The session-boundary plan: head first, other tips by threshold, shared prefixes once.

use scriptorium_markers::{PlannedBranch, boundary_plan, mark, pending};
use scriptorium_session_dag::{EmbeddedStore, SessionId, SessionStore};

use crate::support::{ids, msg, nid, sid, ws};

/// Tokens are words.
fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn summary(plan: &[PlannedBranch]) -> Vec<(&str, bool, Vec<&str>, usize)> {
    plan.iter().map(|b| (b.tip.as_str(), b.head, ids(&b.pending), b.tokens)).collect()
}

fn text(n: usize) -> String {
    vec!["w"; n].join(" ")
}

/// Trunk t1 (marked) → t2; abandoned branches off t1: `big` (20 tokens) and `tiny` (1 token).
fn session_with_abandoned_branches(store: &EmbeddedStore, s: &SessionId) {
    store.append(s, msg("t1", None, "written", 1)).unwrap();
    let t1 = store.node(s, &nid("t1")).unwrap().unwrap();
    mark(store, s, &[t1], &ws()).unwrap();
    store.append(s, msg("big", Some("t1"), &text(20), 5)).unwrap();
    store.append(s, msg("tiny", Some("t1"), &text(1), 6)).unwrap();
    store.append(s, msg("t2", Some("t1"), &text(3), 2)).unwrap();
}

#[test]
fn head_first_then_abandoned_branches_reaching_the_threshold() {
    // T = 10; the 20-token branch is written, the 1-token one is not.
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    session_with_abandoned_branches(&store, &s);
    let plan = boundary_plan(&store, &s, &ws(), 10, &words).unwrap();
    assert_eq!(summary(&plan), [("t2", true, vec!["t2"], 3), ("big", false, vec!["big"], 20)]);
}

#[test]
fn the_explicit_head_goes_first_even_when_another_tip_is_newer() {
    // The head's short tail is written; the 1-token tip stays pending.
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    session_with_abandoned_branches(&store, &s);
    store.set_head(&s, &nid("tiny")).unwrap();
    store.append(&s, msg("newest", Some("t2"), &text(30), 50)).unwrap();
    store.set_head(&s, &nid("tiny")).unwrap();
    let tips = store.tips(&s).unwrap();
    assert_eq!(tips[0], nid("tiny"));
    let plan = boundary_plan(&store, &s, &ws(), 10, &words).unwrap();
    assert_eq!(
        summary(&plan),
        [
            ("tiny", true, vec!["tiny"], 1),
            ("newest", false, vec!["t2", "newest"], 33),
            ("big", false, vec!["big"], 20),
        ]
    );
    // Written in plan order, everything is then marked.
    for branch in &plan {
        mark(&store, &s, &branch.pending, &ws()).unwrap();
    }
    assert!(boundary_plan(&store, &s, &ws(), 10, &words).unwrap().is_empty());
}

#[test]
fn an_abandoned_one_token_tip_stays_pending() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    session_with_abandoned_branches(&store, &s);
    let plan = boundary_plan(&store, &s, &ws(), 10, &words).unwrap();
    for branch in &plan {
        mark(&store, &s, &branch.pending, &ws()).unwrap();
    }
    assert_eq!(ids(&pending(&store, &s, Some(&nid("tiny")), &ws()).unwrap()), ["tiny"]);
}

#[test]
fn a_shared_prefix_is_planned_once() {
    // Shared prefix 3 + head branch 2 + sibling 3, threshold 1: each of the 8 records exactly
    // once.
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    store.append(&s, msg("p1", None, "p one", 1)).unwrap();
    store.append(&s, msg("p2", Some("p1"), "p two", 2)).unwrap();
    store.append(&s, msg("p3", Some("p2"), "p three", 3)).unwrap();
    for (id, parent, t) in [("s1", "p3", 10), ("s2", "s1", 11), ("s3", "s2", 12)] {
        store.append(&s, msg(id, Some(parent), "sibling", t)).unwrap();
    }
    store.append(&s, msg("h1", Some("p3"), "head", 4)).unwrap();
    store.append(&s, msg("h2", Some("h1"), "head", 5)).unwrap();
    let plan = boundary_plan(&store, &s, &ws(), 1, &words).unwrap();
    assert_eq!(
        summary(&plan),
        [
            ("h2", true, vec!["p1", "p2", "p3", "h1", "h2"], 8),
            ("s3", false, vec!["s1", "s2", "s3"], 3),
        ]
    );
    // A sibling below the threshold is skipped and claims nothing.
    let plan = boundary_plan(&store, &s, &ws(), 4, &words).unwrap();
    assert_eq!(summary(&plan).len(), 1);
}

#[test]
fn a_fully_written_session_plans_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    store.append(&s, msg("m1", None, "one", 1)).unwrap();
    let branch = store.branch(&s, None).unwrap();
    mark(&store, &s, &branch, &ws()).unwrap();
    assert!(boundary_plan(&store, &s, &ws(), 0, &words).unwrap().is_empty());
}
