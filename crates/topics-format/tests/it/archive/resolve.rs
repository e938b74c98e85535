//! `ArchiveResolver`: source targets, link targets, trust, and the once-per-archive cache.

use std::cell::RefCell;
use std::collections::BTreeMap;

use scriptorium_topics_format::catalog::{FileLookup, SourceFiles, SourceResolver};
use scriptorium_topics_format::source::{
    ArchiveRecord, ArchiveResolver, TrustState, anchor_for, plan_append,
};

/// A tree that counts how often each path is looked up.
struct Counting {
    files: BTreeMap<String, String>,
    not_regular: Vec<String>,
    lookups: RefCell<BTreeMap<String, usize>>,
}

impl SourceFiles for Counting {
    fn lookup(&self, rel: &str) -> FileLookup {
        *self.lookups.borrow_mut().entry(rel.to_owned()).or_default() += 1;
        if self.not_regular.iter().any(|p| p == rel) {
            return FileLookup::NotRegularFile;
        }
        self.files.lookup(rel)
    }
}

fn workspace() -> Counting {
    let mut records = Vec::new();
    for (thread, message, trust) in [
        ("sess-7f2a", "u1", TrustState::Trusted),
        ("sess-7f2a", "a1", TrustState::Trusted),
        ("sess-7f2a", "p1", TrustState::Pending),
        ("encoded id", "m1", TrustState::Trusted),
    ] {
        let mut record =
            ArchiveRecord::new("openprogram", thread, message, records.len() as u64, "user", "x");
        record.trust_state = trust;
        records.push(record);
    }
    let mut files = BTreeMap::new();
    for write in plan_append(&records, &BTreeMap::new()).expect("valid").writes {
        files.insert(write.rel_path, write.new_text);
    }
    let legacy_id = "openprogram/old/m1";
    files.insert(
        "sources/openprogram/old.md".to_owned(),
        format!(
            "# old\n\n<a id=\"{}\"></a>\n<!-- source-id:{legacy_id} -->\n[t] user: hi\n",
            anchor_for(legacy_id)
        ),
    );
    files.insert(
        "sources/D1.md".to_owned(),
        "# D1\n\n<a id=\"d1-1\"></a>\n[2023-05-08] Caroline: Hey [D1:1]\n".to_owned(),
    );
    Counting {
        files,
        not_regular: vec!["sources/link.md".to_owned()],
        lookups: RefCell::new(BTreeMap::new()),
    }
}

#[test]
fn plain_handles_are_returned_verbatim() {
    let resolver = ArchiveResolver::new(workspace());
    assert_eq!(resolver.resolve_target("x.md", "D18:11").as_deref(), Ok("D18:11"));
    assert_eq!(
        resolver.resolve_target("x.md", " openprogram/sess-7f2a/u1 ").as_deref(),
        Ok("openprogram/sess-7f2a/u1")
    );
    assert!(resolver.files().lookups.borrow().is_empty(), "plain handles read nothing");
}

#[test]
fn relative_targets_resolve_through_the_archive() {
    let resolver = ArchiveResolver::new(workspace());
    let u1 = anchor_for("openprogram/sess-7f2a/u1");
    let target = format!("../../sources/openprogram/_v2/sess-7f2a.md#{u1}");
    assert_eq!(
        resolver.resolve_target("projects/budget.md", &target).as_deref(),
        Ok("openprogram/sess-7f2a/u1")
    );
    let from_root = format!("../sources/openprogram/_v2/sess-7f2a.md#{u1}");
    assert_eq!(
        resolver.resolve_target("core.md", &from_root).as_deref(),
        Ok("openprogram/sess-7f2a/u1")
    );
    let encoded = format!(
        "../sources/openprogram/_v2/encoded%20id.md#{}",
        anchor_for("openprogram/encoded id/m1")
    );
    assert_eq!(
        resolver.resolve_target("core.md", &encoded).as_deref(),
        Ok("openprogram/encoded id/m1")
    );
    let legacy = format!("../sources/openprogram/old.md#{}", anchor_for("openprogram/old/m1"));
    assert_eq!(resolver.resolve_target("core.md", &legacy).as_deref(), Ok("openprogram/old/m1"));
    assert_eq!(
        resolver.resolve_target("a/b.md", "../../sources/D1.md#d1-1").as_deref(),
        Ok("D1:1")
    );
    assert_eq!(
        resolver.resolve_target("a/b.md", "../../sources/D9.md#D9-4").as_deref(),
        Ok("D9:4")
    );
}

#[test]
fn bad_targets_are_refused_whatever_the_label() {
    let resolver = ArchiveResolver::new(workspace());
    let forged = format!(
        "../sources/openprogram/_v2/thread-missing.md#{}",
        anchor_for("openprogram/thread-missing/m9")
    );
    for target in [
        forged.as_str(),
        "../sources/openprogram/_v2/sess-7f2a.md#source-0000000000000000",
        "../../outside/x.md#source-0000000000000000",
        "../topics/core.md#source-0000000000000000",
        "/etc/passwd#x",
        "../sources/link.md#x",
        "#source-0000000000000000",
        "openprogram/sess-7f2a/u1#x",
        "not a handle",
    ] {
        let error = resolver.resolve_target("core.md", target).expect_err(target);
        assert_eq!(error.message, format!("invalid source target: {target}"));
    }
}

#[test]
fn each_archive_is_read_once_per_resolver() {
    let resolver = ArchiveResolver::new(workspace());
    let path = "sources/openprogram/_v2/sess-7f2a.md";
    for _ in 0..5 {
        for id in ["openprogram/sess-7f2a/u1", "openprogram/sess-7f2a/a1"] {
            let target = format!("../{path}#{}", anchor_for(id));
            assert_eq!(resolver.resolve_target("core.md", &target).as_deref(), Ok(id));
        }
        assert_eq!(resolver.trust("openprogram/sess-7f2a/p1"), Some(TrustState::Pending));
        let _ = resolver.link_target("core.md", "openprogram/sess-7f2a/u1");
    }
    assert_eq!(resolver.files().lookups.borrow().get(path), Some(&1));
}

#[test]
fn link_targets_prefer_valid_v2_frames() {
    let resolver = ArchiveResolver::new(workspace());
    let u1 = anchor_for("openprogram/sess-7f2a/u1");
    assert_eq!(
        resolver.link_target("projects/budget-tracker.md", "openprogram/sess-7f2a/u1"),
        format!("../../sources/openprogram/_v2/sess-7f2a.md#{u1}")
    );
    assert_eq!(
        resolver.link_target("core.md", "openprogram/encoded id/m1"),
        format!(
            "../sources/openprogram/_v2/encoded%20id.md#{}",
            anchor_for("openprogram/encoded id/m1")
        )
    );
    assert_eq!(
        resolver.link_target("core.md", "openprogram/old/m1"),
        format!("../sources/openprogram/old.md#{}", anchor_for("openprogram/old/m1"))
    );
    assert_eq!(resolver.link_target("a/b.md", "D1:3"), "../../sources/D1.md#d1-3");
    assert_eq!(resolver.link_target("core.md", "not-a-ref"), "not-a-ref");
    assert!(resolver.try_link_target("core.md", "not-a-ref").is_err());
}

#[test]
fn trust_lookup() {
    let resolver = ArchiveResolver::new(workspace());
    assert_eq!(resolver.trust("openprogram/sess-7f2a/u1"), Some(TrustState::Trusted));
    assert_eq!(resolver.trust("openprogram/sess-7f2a/p1"), Some(TrustState::Pending));
    assert_eq!(resolver.trust("openprogram/old/m1"), Some(TrustState::Trusted));
    assert_eq!(resolver.trust("D1:1"), Some(TrustState::Trusted));
    assert_eq!(resolver.trust("D1:2"), None);
    assert_eq!(resolver.trust("openprogram/sess-7f2a/zz"), None);
    assert_eq!(resolver.trust("nonsense"), None);
}

#[test]
fn a_v2_frame_wins_over_a_legacy_record() {
    let id = "openprogram/both/m1";
    let mut record = ArchiveRecord::new("openprogram", "both", "m1", 1, "user", "x");
    record.trust_state = TrustState::Pending;
    let mut files = BTreeMap::new();
    for write in plan_append(&[record], &files.clone()).expect("valid").writes {
        files.insert(write.rel_path, write.new_text);
    }
    files.insert(
        "sources/openprogram/both.md".to_owned(),
        format!(
            "# both\n\n<a id=\"{}\"></a>\n<!-- source-id:{id} -->\n[t] user: old\n",
            anchor_for(id)
        ),
    );
    let resolver = ArchiveResolver::new(files);
    assert_eq!(resolver.trust(id), Some(TrustState::Pending));
    assert!(resolver.link_target("core.md", id).contains("/_v2/"));
}
