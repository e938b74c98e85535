//! The embedded store's side of a rewrite of texts (what every store must do is in the
//! conformance suite): the log is written again whole, once, with every line the map leaves
//! alone copied byte for byte and the superseded titles mapped too; the registry holds nothing
//! of the old log once the new one has its name, and a registry that cannot be cleaned stops a
//! rewrite of a title before the log is replaced.

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use scriptorium_session_dag::{EmbeddedStore, MetadataBatch, Page, SessionStore, WarningKind};

use crate::suite::{chain, clock_from, ids, nid, node, sid, ticking_clock};

fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open_with_clock(dir, clock_from(&ticking_clock(1_000_000))).expect("store opens")
}

fn ino(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

/// Every `secret` made `[gone]`.
fn redact(text: &str) -> Option<String> {
    text.contains("secret").then(|| text.replace("secret", "[gone]"))
}

#[test]
fn a_rewrite_writes_the_log_again_once_mapping_every_title_and_copying_every_other_line() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    let store = open(dir.path());
    let mut nodes = chain("m", None, 1..=4, 100);
    nodes[1].content = "the secret of m2".into();
    store.append_batch(&s, nodes).unwrap();
    store.append(&s, node("m5", Some("m4"), 105)).unwrap();
    let mut m6 = node("m6", Some("m5"), 106);
    m6.content = "another secret".into();
    store.append(&s, m6).unwrap();
    let mark = [(nid("m2"), [("note".to_owned(), "a secret note".to_owned())].into())];
    store.merge_metadata(&s, &MetadataBatch::from(mark)).unwrap();
    store.set_head(&s, &nid("m3")).unwrap();
    store.rewind(&s, &nid("m4")).unwrap();
    store.set_title(&s, Some("a secret title".into())).unwrap();
    store.set_title(&s, Some("A title".into())).unwrap();
    store.set_project(&s, Some("/srv/project".into())).unwrap();
    let log = store.log_path(&s);
    let old = std::fs::read_to_string(&log).unwrap();
    let before = ino(&log);

    // m2, m6, and a superseded title, which only the log still holds.
    assert_eq!(store.rewrite_texts(&s, &mut redact).unwrap(), 2 + 1);
    let text = std::fs::read_to_string(&log).unwrap();
    let (old_lines, lines): (Vec<&str>, Vec<&str>) =
        (old.lines().collect(), text.lines().collect());
    assert_eq!(lines[0], r#"{"op":"session","v":1,"id":"s","rewrites":1}"#);
    assert_eq!(lines.len(), old_lines.len() - 1, "the batch line goes: {text}");
    assert!(!text.contains(r#""op":"batch""#), "{text}");
    for line in &lines[1..] {
        let mapped = line.contains("[gone]");
        assert!(old_lines.contains(line) != mapped, "copied byte for byte, or mapped: {line}");
    }
    let still: Vec<&&str> = lines.iter().filter(|l| l.contains("secret")).collect();
    assert_eq!(still, [&r#"{"op":"meta","patch":{"m2":{"note":"a secret note"}}}"#]);
    assert_ne!(ino(&log), before, "a new file took the log's name");
    let names = scriptorium_testkit::file_names(dir.path());
    assert_eq!(names, ["registry.jsonl", "registry.lock", "s_s.log"]);

    // This store, a new one, and a listing (from the registry alone) see the new texts.
    let fresh = open(dir.path());
    for view in [&store, &fresh] {
        let session = view.session(&s).unwrap().unwrap();
        assert_eq!((session.title.as_deref(), session.head), (Some("A title"), Some(nid("m3"))));
        let m2 = view.node(&s, &nid("m2")).unwrap().unwrap();
        assert_eq!(
            (m2.content.as_str(), m2.metadata["note"].as_str()),
            ("the [gone] of m2", "a secret note")
        );
        assert!(view.node(&s, &nid("m4")).unwrap().unwrap().rewound);
        assert_eq!(
            ids(&view.branch(&s, Some(&nid("m6"))).unwrap()),
            ["m1", "m2", "m3", "m5", "m6"]
        );
        assert!(view.warnings().is_empty(), "{:?}", view.warnings());
    }
    let listed = open(dir.path()).list_summaries(Page { offset: 0, limit: 10 }).unwrap();
    assert_eq!(listed[0].session.title.as_deref(), Some("A title"));
    let registry = std::fs::read_to_string(dir.path().join("registry.jsonl")).unwrap();
    assert_eq!(registry.lines().count(), 1, "the new log's entry alone: {registry}");
    assert!(!registry.contains("secret"), "{registry}");

    // Nothing left to map: neither the log nor the registry is touched.
    let after = ino(&log);
    assert_eq!(fresh.rewrite_texts(&s, &mut redact).unwrap(), 0);
    assert_eq!(ino(&log), after);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), text);
    let again = std::fs::read_to_string(dir.path().join("registry.jsonl")).unwrap();
    assert_eq!(again, registry);
    // Appends go on after the rewrite as before, and a second rewrite counts one more.
    store.append(&s, node("m7", Some("m6"), 107)).unwrap();
    let mut shout = |text: &str| (text == "A title").then(|| "A TITLE".to_owned());
    assert_eq!(fresh.rewrite_texts(&s, &mut shout).unwrap(), 1);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with(r#"{"op":"session","v":1,"id":"s","rewrites":2}"#), "{text}");
    assert_eq!(open(dir.path()).branch(&s, Some(&nid("m7"))).unwrap().len(), 6);
}

/// The title of a session is in the registry too: a rewrite that changed one and cannot clean
/// the registry fails before the new log takes the old one's name, and the same call again
/// finishes it. A rewrite of contents alone goes on with a warning (the registry holds no
/// content).
#[test]
fn a_registry_that_cannot_be_cleaned_stops_a_title_rewrite_before_the_log_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    let store = open(dir.path());
    let mut nodes = chain("m", None, 1..=2, 100);
    nodes[0].content = "a secret".into();
    store.append_batch(&s, nodes).unwrap();
    store.set_title(&s, Some("a secret title".into())).unwrap();
    let log = store.log_path(&s);
    let before = (ino(&log), std::fs::read(&log).unwrap());
    // A directory where the registry's replacement would be written.
    let blocker = dir.path().join("registry.tmp");
    std::fs::create_dir(&blocker).unwrap();

    store.rewrite_texts(&s, &mut redact).unwrap_err();
    assert_eq!((ino(&log), std::fs::read(&log).unwrap()), before, "the old log stands");
    assert_eq!(store.node(&s, &nid("m1")).unwrap().unwrap().content, "a secret");
    assert!(!dir.path().join("s_s.log.tmp").exists(), "the staged log went");
    let mut contents = |text: &str| (text == "content of m2\nsecond line").then(|| "m2".into());
    assert_eq!(store.rewrite_texts(&s, &mut contents).unwrap(), 1);
    let warned = store.warnings().iter().any(|w| w.kind == WarningKind::Registry);
    assert!(warned, "{:?}", store.warnings());

    std::fs::remove_dir(&blocker).unwrap();
    assert_eq!(store.rewrite_texts(&s, &mut redact).unwrap(), 1 + 1);
    let registry = std::fs::read_to_string(dir.path().join("registry.jsonl")).unwrap();
    assert!(!registry.contains("secret"), "{registry}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("secret"), "{text}");
}

/// A store that read the session before another rewrote it reads the new log at its next
/// look (here `branch`), and writes where the rewrite left the session.
#[test]
fn a_store_that_read_the_old_log_reads_the_rewritten_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    let a = open(dir.path());
    let mut nodes = chain("m", None, 1..=3, 100);
    nodes[1].content = "a secret".into();
    a.append_batch(&s, nodes).unwrap();
    a.set_title(&s, Some("a secret title".into())).unwrap();
    assert_eq!(a.branch(&s, None).unwrap()[1].content, "a secret", "read");
    assert_eq!(open(dir.path()).rewrite_texts(&s, &mut redact).unwrap(), 1 + 1);
    assert_eq!(a.branch(&s, None).unwrap()[1].content, "a [gone]");
    assert_eq!(a.session(&s).unwrap().unwrap().title.as_deref(), Some("a [gone] title"));
    a.append(&s, node("m4", Some("m3"), 104)).unwrap();
    let fresh = open(dir.path());
    assert_eq!(ids(&fresh.branch(&s, None).unwrap()), ["m1", "m2", "m3", "m4"]);
    assert!(fresh.warnings().is_empty(), "{:?}", fresh.warnings());
    let listed = fresh.list_sessions(Page { offset: 0, limit: 10 }).unwrap();
    assert_eq!(listed[0].title.as_deref(), Some("a [gone] title"));
}
