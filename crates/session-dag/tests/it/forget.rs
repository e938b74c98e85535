//! The embedded store's side of a forget (what every store must do is in the conformance
//! suite): the log is rewritten whole, once, atomically; a store that waited for the lock on
//! the replaced log, or that read it before, goes to the new one; the registry keeps no stale
//! line; a crash's temporary file goes with the next write.

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use scriptorium_session_dag::{EmbeddedStore, Page, SessionStore};

use crate::suite::{chain, clock_from, ids, nid, node, sid, ticking_clock};

fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open_with_clock(dir, clock_from(&ticking_clock(1_000_000))).expect("store opens")
}

fn ino(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

/// Waits until `count` locks of this process wait for the `flock` on the file with inode
/// `ino` (read from `/proc/locks`, where a blocked request is listed with `->`): a condition,
/// not a time.
fn wait_for_waiters(ino: u64, count: usize) {
    let pid = std::process::id().to_string();
    let suffix = format!(":{ino}");
    loop {
        let locks = std::fs::read_to_string("/proc/locks").unwrap();
        let waiting = locks
            .lines()
            .filter(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                fields.get(1) == Some(&"->")
                    && fields.get(5) == Some(&pid.as_str())
                    && fields.get(6).is_some_and(|f| f.ends_with(&suffix))
            })
            .count();
        if waiting >= count {
            return;
        }
        std::thread::yield_now();
    }
}

/// What a forget does to the log while it holds the lock: a new file renamed over it.
fn replace_log(log: &Path, new: &str) {
    let tmp = log.with_extension("log.tmp");
    std::fs::write(&tmp, new).unwrap();
    std::fs::rename(&tmp, log).unwrap();
}

/// `text` with its first line (the header) counting one rewrite.
fn rewritten(text: &str) -> String {
    text.replacen(r#""id":"s"}"#, r#""id":"s","rewrites":1}"#, 1)
}

#[test]
fn a_forget_rewrites_the_log_whole_once_without_batches_corrupt_lines_or_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    let store = open(dir.path());
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    let log = store.log_path(&s);
    // A corrupt line in the middle (a damaged disk), then a node.
    let m4 = r#"{"op":"node","head":true,"node":{"id":"m4","parent":"m3","role":"user","kind":"message","speaker":null,"content":"content of m4","created_at":104,"metadata":{},"rewound":false}}"#;
    let middle = format!("{{not json\n{m4}\n");
    File::options().append(true).open(&log).unwrap().write_all(middle.as_bytes()).unwrap();
    let other = open(dir.path());
    assert_eq!(other.branch(&s, None).unwrap().len(), 4);
    assert_eq!(other.warnings().len(), 1, "the corrupt line is reported");
    File::options()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(br#"{"op":"node","head":true,"node":{"id":"m5","content":"a torn line"#)
        .unwrap();
    let before = ino(&log);

    assert_eq!(store.forget(&s, &[nid("m2")], false).unwrap(), 1);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], r#"{"op":"session","v":1,"id":"s","rewrites":1}"#);
    assert_eq!(lines.len(), 5, "the header and four nodes, each on its own line: {text}");
    assert!(!text.contains(r#""op":"batch""#) && !text.contains("not json"), "{text}");
    assert!(!text.contains("torn") && !text.contains("content of m2"), "{text}");
    assert!(text.ends_with('\n'));
    assert_ne!(ino(&log), before, "a new file took the log's name");
    let names = scriptorium_testkit::file_names(dir.path());
    assert_eq!(names, ["registry.jsonl", "registry.lock", "s_s.log"]);
    let fresh = open(dir.path());
    assert_eq!(ids(&fresh.branch(&s, None).unwrap()), ["m1", "m2", "m3", "m4"]);
    assert!(fresh.warnings().is_empty(), "{:?}", fresh.warnings());

    // Nothing to forget: the log is not touched; something more: one more rewrite.
    let after = ino(&log);
    assert_eq!(fresh.forget(&s, &[nid("m2"), nid("nope")], false).unwrap(), 0);
    assert_eq!(ino(&log), after);
    assert_eq!(fresh.forget(&s, &[nid("m3")], false).unwrap(), 1);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with(r#"{"op":"session","v":1,"id":"s","rewrites":2}"#), "{text}");
    // Appends go on after the rewrite as before.
    store.append(&s, node("m5", Some("m4"), 105)).unwrap();
    assert_eq!(ids(&open(dir.path()).branch(&s, None).unwrap()), ["m1", "m2", "m3", "m4", "m5"]);
}

#[test]
fn a_temporary_log_left_by_a_crash_is_no_session_and_goes_with_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    let store = open(dir.path());
    store.append(&s, node("m1", None, 1)).unwrap();
    // A forget killed before its rename: the old log stands, the new one lies beside it.
    let tmp = dir.path().join("s_s.log.tmp");
    std::fs::write(&tmp, b"{\"op\":\"session\",\"v\":1,\"id\":\"s\",\"rewrites\":1}\n").unwrap();
    let fresh = open(dir.path());
    let listed = fresh.list_sessions(Page { offset: 0, limit: 10 }).unwrap();
    assert_eq!(listed.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["s"]);
    assert_eq!(fresh.branch(&s, None).unwrap()[0].content, "content of m1\nsecond line");
    fresh.append(&s, node("m2", Some("m1"), 2)).unwrap();
    assert!(!tmp.exists(), "the next write removed it");
    // A forget removes one too, before it writes its own.
    std::fs::write(&tmp, b"junk").unwrap();
    assert_eq!(fresh.forget(&s, &[nid("m1")], false).unwrap(), 1);
    assert!(!tmp.exists());
    assert_eq!(ids(&open(dir.path()).branch(&s, None).unwrap()), ["m1", "m2"]);
}

/// A writer opened the log, then waited for its lock while a forget replaced it: once it holds
/// the lock it sees that the name points to another file, and appends to that one. (Appending
/// to the file it opened would lose the node: that file has no name any more.)
#[test]
fn a_writer_that_waited_on_a_replaced_log_appends_to_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    open(dir.path()).append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    let log = open(dir.path()).log_path(&s);
    let mut holder = File::options().read(true).append(true).open(&log).unwrap();
    holder.lock().unwrap();
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| open(dir.path()).append(&s, node("m4", Some("m3"), 104)));
        wait_for_waiters(holder.metadata().unwrap().ino(), 1);
        replace_log(&log, &rewritten(&std::fs::read_to_string(&log).unwrap()));
        holder.unlock().unwrap();
        writer.join().unwrap().unwrap();
    });
    let fresh = open(dir.path());
    assert_eq!(ids(&fresh.branch(&s, None).unwrap()), ["m1", "m2", "m3", "m4"]);
    assert!(fresh.warnings().is_empty(), "{:?}", fresh.warnings());
    let mut replaced = String::new();
    holder.rewind().unwrap();
    holder.read_to_string(&mut replaced).unwrap();
    assert!(!replaced.contains("\"m4\""), "nothing went to the replaced file");
}

/// The same for a reader: once it holds the lock on the file it opened, it reads the log the
/// name points to, so a read that ends after a forget never returns what the forget erased.
#[test]
fn a_reader_that_waited_on_a_replaced_log_reads_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    open(dir.path()).append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    let log = open(dir.path()).log_path(&s);
    let holder = File::options().read(true).append(true).open(&log).unwrap();
    holder.lock().unwrap();
    let forgotten =
        std::fs::read_to_string(&log).unwrap().replace(r"content of m2\nsecond line", "");
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| open(dir.path()).branch(&s, None));
        wait_for_waiters(holder.metadata().unwrap().ino(), 1);
        replace_log(&log, &rewritten(&forgotten));
        holder.unlock().unwrap();
        let branch = reader.join().unwrap().unwrap();
        assert_eq!(branch[1].content, "", "the reader read the new log");
    });
}

/// A store that read the log remembers its inode and first line: a log rewritten in place of
/// the one it read (a forget whose new file got the old inode number) is read again from the
/// start, not continued at the old offset, even when it is longer.
#[test]
fn a_store_reads_a_rewritten_log_from_the_start_even_with_the_same_inode() {
    let (dir, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let s = sid("s");
    let store = open(dir.path());
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    assert_eq!(store.branch(&s, None).unwrap().len(), 3, "read");
    // The same session elsewhere, forgotten and grown: a longer log with another header.
    let model = open(elsewhere.path());
    model.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    model.forget(&s, &[nid("m2")], false).unwrap();
    model.append_batch(&s, chain("m", None, 1..=9, 100)).unwrap();
    let new = std::fs::read(model.log_path(&s)).unwrap();
    let log = store.log_path(&s);
    assert!(new.len() > usize::try_from(std::fs::metadata(&log).unwrap().len()).unwrap());
    let inode = ino(&log);
    std::fs::write(&log, &new).unwrap();
    assert_eq!(ino(&log), inode);
    let branch = store.branch(&s, Some(&nid("m9"))).unwrap();
    assert_eq!(ids(&branch), ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"]);
    assert_eq!(branch[1].content, "");
    assert!(store.warnings().is_empty(), "{:?}", store.warnings());
}

/// After a rewrite the registry holds the new log's entry only: an old entry, whose `len` is
/// larger, would otherwise win and make every listing read the log again.
#[test]
fn after_a_forget_the_registry_describes_the_new_log() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    let store = open(dir.path());
    store.append_batch(&s, chain("m", None, 1..=20, 100)).unwrap();
    store.set_title(&s, Some("A title".into())).unwrap();
    assert_eq!(store.forget(&s, &[nid("m1"), nid("m2")], false).unwrap(), 2);
    let all = Page { offset: 0, limit: 10 };
    let fresh = open(dir.path());
    let listed = fresh.list_summaries(all).unwrap();
    assert_eq!((listed[0].nodes, listed[0].session.title.as_deref()), (20, Some("A title")));
    assert_eq!(fresh.logs_read(), 0, "the registry described the new log");
    let registry = std::fs::read_to_string(dir.path().join("registry.jsonl")).unwrap();
    assert_eq!(registry.lines().count(), 1, "{registry}");
}

/// A crash between the rename of the new log and the registry's scrub leaves the old title in
/// the cache (never served: its line describes the old log); the forget run again removes it.
#[test]
fn a_forget_run_again_after_a_crash_removes_the_title_the_registry_kept() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    let store = open(dir.path());
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    store.set_title(&s, Some("A secret title".into())).unwrap();
    let registry = dir.path().join("registry.jsonl");
    let before = std::fs::read(&registry).unwrap();
    assert_eq!(store.forget(&s, &[nid("m1")], true).unwrap(), 1);
    std::fs::write(&registry, &before).unwrap();
    let fresh = open(dir.path());
    let listed = fresh.list_sessions(Page { offset: 0, limit: 10 }).unwrap();
    assert_eq!(listed[0].title, None, "the stale line is not served");
    assert_eq!(fresh.forget(&s, &[nid("m1")], true).unwrap(), 0);
    let text = std::fs::read_to_string(&registry).unwrap();
    assert!(!text.contains("secret"), "{text}");
}
