//! Validation tests: every violation code triggered with its exact message and position, the
//! organizer fix (see `docs/format.md#where-we-deliberately-differ`), `Required` semantics, and
//! the pure cases shared with the Python implementation (a dangling link after a delete, a forged
//! target, borrowed refs, trust). The pipeline's tests show the workspace byte-identical after a
//! rejection.

use std::collections::{BTreeMap, BTreeSet};

use scriptorium_topics_format::catalog::{SourceResolver, TargetError};
use scriptorium_topics_format::source::{ArchiveRecord, ArchiveResolver, TrustState, plan_append};
use scriptorium_topics_format::{Code, TopicFile};
use scriptorium_txn::ErrorCode;
use scriptorium_txn::validate::{
    Baseline, FileLoader, FileState, Limits, Required, Rules, SourceCatalog, Validation, Violation,
    block_trust, removed_message, validate, validate_changes,
};

type Sources = BTreeMap<String, String>;

/// `openprogram/s1/<message>` for each (message, trust), archived in one v2 file.
fn archive(entries: &[(&str, TrustState)]) -> Sources {
    let records: Vec<ArchiveRecord> = entries
        .iter()
        .zip(1u64..)
        .map(|((message, trust), ordinal)| record(message, ordinal, *trust))
        .collect();
    let mut tree = Sources::new();
    let plan = plan_append(&records, &tree).expect("valid records");
    for write in plan.writes {
        tree.insert(write.rel_path, write.new_text);
    }
    tree
}

fn record(message: &str, ordinal: u64, trust: TrustState) -> ArchiveRecord {
    let mut record = ArchiveRecord::new(
        "openprogram",
        "s1",
        message,
        ordinal,
        "user",
        format!("fact {message}"),
    );
    record.timestamp = Some("2026-01-01T10:00:00+00:00".into());
    record.trust_state = trust;
    record
}

/// The owner's promotion (see `docs/format.md#trust`): rewrites exactly the frame's meta line to
/// trusted.
fn promote(sources: &mut Sources, message: &str) {
    let pending = record(message, 0, TrustState::Pending).meta().line();
    let trusted = record(message, 0, TrustState::Trusted).meta().line();
    for text in sources.values_mut() {
        *text = text.replacen(&pending, &trusted, 1);
    }
}

/// The default archive: m1–m4 trusted, p1 pending.
fn sources() -> Sources {
    archive(&[
        ("m1", TrustState::Trusted),
        ("m2", TrustState::Trusted),
        ("m3", TrustState::Trusted),
        ("m4", TrustState::Trusted),
        ("p1", TrustState::Pending),
    ])
}

/// `openprogram/s1/<message>`.
fn sref(message: &str) -> String {
    format!("openprogram/s1/{message}")
}

/// One record paragraph `<content>[^e-<id>] ^<id>` and its definition citing `refs` as plain
/// handles.
fn rec(content: &str, id: &str, refs: &[&str]) -> String {
    let links: Vec<String> = refs.iter().map(|m| format!("[{m}]({})", sref(m))).collect();
    format!(
        "{content}[^e-{id}] ^{id}\n\n[^e-{id}]: Time: `2026-01-01`; Sources: {}\n\n",
        links.join(", ")
    )
}

/// A topic file `# <title>` followed by `records`.
fn topic(path: &str, records: &[String]) -> TopicFile {
    let title = path.trim_end_matches(".md");
    TopicFile::new(path, format!("# {title}\n\n{}", records.concat()))
}

struct Case {
    sources: Sources,
    baseline: Vec<TopicFile>,
}

impl Case {
    fn new(baseline: Vec<TopicFile>) -> Case {
        Case { sources: sources(), baseline }
    }

    /// Validates the staged tree `staged` whole, and checks on the way that incremental
    /// validation of the same change says the same, both against the parsed baseline and
    /// against one read back from its catalog (files parsed on demand).
    fn run(&self, staged: &[TopicFile], rules: &Rules<'_>) -> Validation {
        let resolver = ArchiveResolver::new(self.sources.clone());
        let baseline = Baseline::read(&self.baseline, &resolver);
        assert!(baseline.diagnostics().is_empty(), "{:?}", baseline.diagnostics());
        let whole = validate(&baseline, staged, &ArchiveResolver::new(self.sources.clone()), rules);
        let incremental = agree(&self.baseline, &self.sources, staged, rules);
        assert_eq!(said(&incremental.violations), said(&whole.violations), "incremental");
        assert_eq!(incremental.removed, whole.removed, "incremental");
        whole
    }
}

/// Parses committed files on demand from memory (what the engine does from the live tree).
struct MemoryLoader {
    files: Vec<TopicFile>,
    sources: Sources,
    loads: std::sync::atomic::AtomicUsize,
}

impl FileLoader for MemoryLoader {
    fn load(&self, path: &str, hash: &str) -> Result<FileState, String> {
        self.loads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let file = self.files.iter().find(|f| f.path == path).ok_or("gone")?;
        let state = FileState::parse(file.clone(), &ArchiveResolver::new(self.sources.clone()));
        if state.hash == hash { Ok(state) } else { Err("changed".into()) }
    }
}

/// `validate_changes` of the change from `committed` to `staged` (the files that differ,
/// those removed) against the parsed baseline and against the baseline read back from its
/// catalog: both must say the same, and the catalog's must load no file it was not asked for.
fn agree(
    committed: &[TopicFile],
    sources: &Sources,
    staged: &[TopicFile],
    rules: &Rules<'_>,
) -> scriptorium_txn::validate::ChangeValidation {
    let resolver = ArchiveResolver::new(sources.clone());
    let parsed = Baseline::read(committed, &resolver);
    let loader = std::sync::Arc::new(MemoryLoader {
        files: committed.to_vec(),
        sources: sources.clone(),
        loads: std::sync::atomic::AtomicUsize::new(0),
    });
    let cataloged = Baseline::from_catalog(&parsed.catalog(), loader.clone()).expect("a catalog");
    assert_eq!(cataloged.summaries().count(), committed.len());
    let committed_text: BTreeMap<&str, &str> =
        committed.iter().map(|f| (f.path.as_str(), f.text.as_str())).collect();
    let changed: Vec<TopicFile> = staged
        .iter()
        .filter(|f| committed_text.get(f.path.as_str()) != Some(&f.text.as_str()))
        .cloned()
        .collect();
    let kept: BTreeSet<&str> = staged.iter().map(|f| f.path.as_str()).collect();
    let removed: Vec<String> = committed
        .iter()
        .filter(|f| !kept.contains(f.path.as_str()))
        .map(|f| f.path.clone())
        .collect();
    let from_parsed = validate_changes(&parsed, &changed, &removed, &resolver, rules);
    let from_catalog = validate_changes(&cataloged, &changed, &removed, &resolver, rules);
    assert!(cataloged.take_load_errors().is_empty());
    assert_eq!(lines_of(&from_catalog.violations), lines_of(&from_parsed.violations));
    assert_eq!(from_catalog.removed, from_parsed.removed);
    // Validation parses the committed files it needs, never the whole tree: an empty change
    // parses nothing, and no change parses more files than the tree has.
    let loads = loader.loads.load(std::sync::atomic::Ordering::Relaxed);
    if changed.is_empty() && removed.is_empty() {
        assert_eq!(loads, 0);
    }
    assert!(loads <= committed.len(), "{loads}");
    from_catalog
}

fn lines_of(violations: &[Violation]) -> Vec<String> {
    violations.iter().map(ToString::to_string).collect()
}

fn lines(validation: &Validation) -> Vec<String> {
    validation.violations.iter().map(ToString::to_string).collect()
}

fn restricted(allowed: &BTreeSet<String>) -> Rules<'_> {
    Rules { allowed_new_sources: Some(allowed), ..Rules::default() }
}

fn two_files() -> Vec<TopicFile> {
    vec![
        topic("a.md", &[rec("Alpha.", "aaaa0001", &["m1"])]),
        topic("b.md", &[rec("Beta.", "bbbb0001", &["m2"])]),
    ]
}

// ---- one test per code ----

#[test]
fn an_unchanged_tree_is_valid() {
    let case = Case::new(two_files());
    let validation = case.run(&case.baseline, &Rules::default());
    assert_eq!(lines(&validation), Vec::<String>::new());
    assert!(validation.is_valid());
    assert_eq!(validation.units.len(), 2);
}

#[test]
fn invalid_topic_format_carries_the_topic_diagnostic() {
    let case = Case::new(two_files());
    let mut staged = two_files();
    staged[1].text = staged[1].text.replace("Beta.[^e-bbbb0001]", "Beta.[^e-bbbb0001][^e9]");
    let validation = case.run(&staged, &Rules::default());
    assert_eq!(
        lines(&validation),
        ["topics/b.md:3:19: INVALID_TOPIC_FORMAT undefined footnote: e9"]
    );
    let violation = &validation.violations[0];
    assert_eq!(violation.code, ErrorCode::InvalidTopicFormat);
    assert_eq!(violation.diagnostic, Some(Code::UndefinedFootnote));
    assert_eq!(
        (violation.path.as_deref(), violation.line, violation.col),
        (Some("topics/b.md"), 3, 19)
    );
}

#[test]
fn block_id_removed_is_reported_per_id_where_it_was_committed() {
    let case = Case::new(two_files());
    let staged = vec![two_files().remove(0)];
    let validation = case.run(&staged, &Rules::default());
    assert_eq!(
        lines(&validation),
        ["topics/b.md:3:1: BLOCK_ID_REMOVED block ID must not be removed: bbbb0001"]
    );
    assert_eq!(validation.removed, ["bbbb0001"]);
    assert_eq!(
        validation.removed_message().as_deref(),
        Some("block ID must not be removed: bbbb0001")
    );
}

#[test]
fn the_combined_removed_message_names_up_to_five_sorted_ids() {
    let ids = ["f6", "a1", "c3", "b2", "e5", "d4", "a1"];
    assert_eq!(removed_message(&ids), "block ID must not be removed: a1, b2, c3, d4, e5");
    let records: Vec<String> = ids[..6].iter().map(|id| rec("Fact.", id, &["m1"])).collect();
    let case = Case::new(vec![topic("many.md", &records)]);
    let validation = case.run(&[], &Rules::default());
    assert_eq!(validation.removed, ["a1", "b2", "c3", "d4", "e5", "f6"]);
    assert_eq!(validation.violations.len(), 6);
    assert_eq!(
        validation.removed_message().as_deref(),
        Some("block ID must not be removed: a1, b2, c3, d4, e5")
    );
}

#[test]
fn topic_link_not_block_only_for_changed_units() {
    let linking = rec("Alpha, see [beta](b.md).", "aaaa0001", &["m1"]);
    let case =
        Case::new(vec![topic("a.md", std::slice::from_ref(&linking)), two_files().remove(1)]);
    // Unchanged: the committed bad link is not re-litigated.
    let validation = case.run(&case.baseline, &Rules::default());
    assert_eq!(lines(&validation), Vec::<String>::new());
    // Changed content: now it is checked.
    let staged = vec![
        topic("a.md", &[rec("Alpha changed, see [beta](b.md).", "aaaa0001", &["m1"])]),
        two_files().remove(1),
    ];
    let validation = case.run(&staged, &Rules::default());
    assert_eq!(
        lines(&validation),
        [
            "topics/a.md:3:27: TOPIC_LINK_NOT_BLOCK Topic-to-Topic link must target #^block-id: a.md -> b.md"
        ]
    );
    assert_eq!(validation.violations[0].diagnostic, Some(Code::TopicLinkNotBlock));
    // A block link is fine.
    let staged = vec![
        topic("a.md", &[rec("Alpha changed, see [beta](b.md#^bbbb0001).", "aaaa0001", &["m1"])]),
        two_files().remove(1),
    ];
    assert!(case.run(&staged, &Rules::default()).is_valid());
}

/// Deleting a file another topic links into is refused naming the ID (the Python
/// implementation's code is `INVALID_TOPIC_FORMAT`; ours is the specific `DANGLING_BLOCK_LINK`).
#[test]
fn dangling_block_link_when_the_target_file_is_deleted() {
    let linking = rec("Alpha, see [beta](b.md#^bbbb0001).", "aaaa0001", &["m1"]);
    let baseline = vec![topic("a.md", std::slice::from_ref(&linking)), two_files().remove(1)];
    let case = Case::new(baseline);
    let staged = vec![topic("a.md", &[linking])];
    let rules = Rules { required: Required::StillPresent, ..Rules::default() };
    let validation = case.run(&staged, &rules);
    assert_eq!(
        lines(&validation),
        ["topics/a.md:3:23: DANGLING_BLOCK_LINK dangling block link: bbbb0001"]
    );
    assert_eq!(validation.violations[0].diagnostic, Some(Code::DanglingBlockLink));
}

#[test]
fn missing_source_reference() {
    let case = Case::new(two_files());
    let mut staged = two_files();
    staged.push(topic("c.md", &[rec("Gamma.", "cccc0001", &["m1", "m9"])]));
    let validation = case.run(&staged, &Rules::default());
    assert_eq!(
        lines(&validation),
        ["topics/c.md:5:75: MISSING_SOURCE_REFERENCE missing source reference: openprogram/s1/m9"]
    );
}

/// A catalog that resolves the target `forged` to a malformed reference; the archive resolver
/// never produces one, so this is the only way the defensive check can fire.
struct Forging(ArchiveResolver<Sources>);

impl SourceResolver for Forging {
    fn resolve_target(&self, topic_path: &str, target: &str) -> Result<String, TargetError> {
        if target == "forged" {
            return Ok("not-a-reference".to_owned());
        }
        self.0.resolve(topic_path, target)
    }

    fn link_target(&self, topic_path: &str, source_ref: &str) -> String {
        self.0.link_target(topic_path, source_ref)
    }
}

impl SourceCatalog for Forging {
    fn trust(&self, source_ref: &str) -> Option<TrustState> {
        self.0.trust(source_ref)
    }
}

#[test]
fn invalid_source_reference() {
    let sources = Forging(ArchiveResolver::new(sources()));
    let committed = two_files();
    let baseline = Baseline::read(&committed, &sources);
    let mut staged = committed.clone();
    staged[0].text = staged[0].text.replace("[m1](openprogram/s1/m1)", "[m1](forged)");
    let validation = validate(&baseline, &staged, &sources, &Rules::default());
    assert_eq!(
        lines(&validation),
        ["topics/a.md:5:50: INVALID_SOURCE_REFERENCE invalid source reference: not-a-reference"]
    );
}

/// A pending source cannot be cited; after promotion the same reference validates.
#[test]
fn source_not_trusted_until_promoted() {
    let mut case = Case::new(two_files());
    let mut staged = two_files();
    staged.push(topic("c.md", &[rec("Gamma.", "cccc0001", &["p1"])]));
    let validation = case.run(&staged, &Rules::default());
    assert_eq!(
        lines(&validation),
        [
            "topics/c.md:5:50: SOURCE_NOT_TRUSTED source reference is not trusted; promote it first: openprogram/s1/p1"
        ]
    );
    promote(&mut case.sources, "p1");
    assert_eq!(lines(&case.run(&staged, &Rules::default())), Vec::<String>::new());
}

#[test]
fn source_not_in_transaction_for_a_ref_no_committed_block_cited() {
    let case = Case::new(two_files());
    let mut staged = two_files();
    staged.push(topic("c.md", &[rec("Gamma.", "cccc0001", &["m3"])]));
    let empty = BTreeSet::new();
    let validation = case.run(&staged, &restricted(&empty));
    assert_eq!(
        lines(&validation),
        [
            "topics/c.md:5:50: SOURCE_NOT_IN_TRANSACTION source reference is not evidence of this transaction: openprogram/s1/m3"
        ]
    );
    let batch = BTreeSet::from([sref("m3")]);
    assert!(case.run(&staged, &restricted(&batch)).is_valid());
    // Unrestricted (`None`): only trust matters.
    assert!(case.run(&staged, &Rules::default()).is_valid());
}

#[test]
fn a_pending_ref_outside_the_batch_gets_both_codes() {
    let case = Case::new(two_files());
    let mut staged = two_files();
    staged.push(topic("c.md", &[rec("Gamma.", "cccc0001", &["p1"])]));
    let batch = BTreeSet::from([sref("m3")]);
    let validation = case.run(&staged, &restricted(&batch));
    let codes: Vec<ErrorCode> = validation.violations.iter().map(|v| v.code).collect();
    assert_eq!(codes, [ErrorCode::SourceNotTrusted, ErrorCode::SourceNotInTransaction]);
}

#[test]
fn size_limit_per_file_and_per_tree() {
    let case = Case::new(two_files());
    let mut staged = two_files();
    staged.push(topic("c.md", &[rec("Gamma.", "cccc0001", &["m1"])]));
    let c_bytes = staged[2].text.len();
    let limits = Limits { max_file_bytes: 60, max_tree_bytes: 150 };
    let rules = Rules { limits, ..Rules::default() };
    let validation = case.run(&staged, &rules);
    let total: usize = staged.iter().map(|f| f.text.len()).sum();
    assert_eq!(
        lines(&validation),
        [
            format!(
                "topics/c.md:1:1: SIZE_LIMIT topic file exceeds the size limit: {c_bytes} > 60 bytes"
            ),
            format!("SIZE_LIMIT topic tree exceeds the size limit: {total} > 150 bytes"),
        ]
    );
    assert!(validation.violations.iter().all(|v| v.code == ErrorCode::SizeLimit));
}

#[test]
fn size_limits_apply_only_to_growth() {
    let case = Case::new(two_files());
    let limits = Limits { max_file_bytes: 10, max_tree_bytes: 10 };
    let rules = Rules { limits, ..Rules::default() };
    // Already over both limits, unchanged: valid.
    assert!(case.run(&case.baseline, &rules).is_valid());
    // Shrinking an oversize file: valid.
    let mut staged = two_files();
    staged[0].text = staged[0].text.replace("Alpha.", "A.");
    assert!(case.run(&staged, &rules).is_valid());
    // Growing it: refused.
    staged[0].text = staged[0].text.replace("A.", "Alpha grew.");
    assert_eq!(case.run(&staged, &rules).codes(), BTreeSet::from([ErrorCode::SizeLimit]));
}

#[test]
fn the_default_limits_follow_the_reference() {
    let limits = Limits::default();
    assert_eq!(limits.max_file_bytes, 512_000);
    assert_eq!(limits.max_tree_bytes, 64 * 1024 * 1024);
}

#[test]
fn staged_paths_must_be_clean_markdown_paths() {
    let case = Case::new(vec![]);
    let body = rec("Alpha.", "aaaa0001", &["m1"]);
    let staged = vec![
        TopicFile::new("../escape.md", format!("# X\n\n{body}")),
        TopicFile::new("notes.txt", "# X\n"),
    ];
    let validation = case.run(&staged, &Rules::default());
    let codes: Vec<ErrorCode> = validation.violations.iter().map(|v| v.code).collect();
    assert_eq!(codes[..2], [ErrorCode::PathOutsideWorkspace, ErrorCode::ReadOnlyPath]);
    assert_eq!(
        lines(&validation)[..2],
        [
            "PATH_OUTSIDE_WORKSPACE path escapes the workspace: topics/../escape.md",
            "READ_ONLY_PATH only topics/**/*.md is writable: topics/notes.txt",
        ]
    );
}

#[test]
fn every_violation_of_several_files_is_collected() {
    let linking = rec("Alpha, see [beta](b.md#^bbbb0001).", "aaaa0001", &["m1"]);
    let case = Case::new(vec![
        topic("a.md", &[linking]),
        two_files().remove(1),
        topic("d.md", &[rec("Delta.", "dddd0001", &["m4"])]),
    ]);
    let staged = vec![
        topic(
            "a.md",
            &[rec("Alpha, see [beta](b.md#^bbbb0001) and [c](c.md).", "aaaa0001", &["m1"])],
        ),
        topic("c.md", &[rec("Gamma.", "cccc0001", &["p1", "m9"]), "Loose prose.\n".to_owned()]),
        topic("e.md", &[rec("Eps.", "eeee0001", &["m3"])]),
    ];
    let batch = BTreeSet::from([sref("p1")]);
    let validation = case.run(&staged, &restricted(&batch));
    insta::assert_snapshot!(lines(&validation).join("\n"), @r#"
    topics/c.md:7:1: UNCITED_PARAGRAPH paragraph cites no source: "Loose prose."; every paragraph must cite the archived message it came from: end it with a footnote like [^e1] and add the line [^e1]: Time: `YYYY-MM-DD`; Sources: [label](<source ref>)
    topics/b.md:3:1: BLOCK_ID_REMOVED block ID must not be removed: bbbb0001
    topics/d.md:3:1: BLOCK_ID_REMOVED block ID must not be removed: dddd0001
    topics/a.md:3:43: TOPIC_LINK_NOT_BLOCK Topic-to-Topic link must target #^block-id: a.md -> c.md
    topics/a.md:3:23: DANGLING_BLOCK_LINK dangling block link: bbbb0001
    topics/c.md:5:50: SOURCE_NOT_TRUSTED source reference is not trusted; promote it first: openprogram/s1/p1
    topics/c.md:5:75: MISSING_SOURCE_REFERENCE missing source reference: openprogram/s1/m9
    topics/e.md:5:50: SOURCE_NOT_IN_TRANSACTION source reference is not evidence of this transaction: openprogram/s1/m3
    "#);
    assert_eq!(validation.removed, ["bbbb0001", "dddd0001"]);
}

// ---- Required ----

#[test]
fn required_all_all_except_and_still_present() {
    let case = Case::new(two_files());
    let staged = vec![two_files().remove(0)];
    let all = case.run(&staged, &Rules::default());
    assert_eq!(all.removed, ["bbbb0001"]);

    let except = Rules {
        required: Required::AllExcept(BTreeSet::from(["bbbb0001".to_owned()])),
        ..Rules::default()
    };
    assert!(case.run(&staged, &except).is_valid());
    let wrong_except = Rules {
        required: Required::AllExcept(BTreeSet::from(["aaaa0001".to_owned()])),
        ..Rules::default()
    };
    assert_eq!(case.run(&staged, &wrong_except).removed, ["bbbb0001"]);

    let still = Rules { required: Required::StillPresent, ..Rules::default() };
    assert!(case.run(&staged, &still).is_valid());
    assert!(case.run(&[], &still).is_valid(), "an agent may delete every block");
}

#[test]
fn an_alias_is_a_required_block_id() {
    let merged = "# m\n\nAlpha and beta.[^e-a][^e-b] ^aaaa0001 ^bbbb0001\n\n\
                  [^e-a]: Time: `2026-01-01`; Sources: [m1](openprogram/s1/m1)\n\
                  [^e-b]: Time: `2026-01-01`; Sources: [m2](openprogram/s1/m2)\n";
    let case = Case::new(vec![TopicFile::new("m.md", merged)]);
    let dropped = merged.replace(" ^aaaa0001 ^bbbb0001", " ^bbbb0001");
    let validation = case.run(&[TopicFile::new("m.md", dropped)], &Rules::default());
    assert_eq!(validation.removed, ["aaaa0001"]);
}

#[test]
fn a_broken_paragraph_keeps_its_id_present_no_cascade() {
    let linking = rec("Alpha, see [beta](b.md#^bbbb0001).", "aaaa0001", &["m1"]);
    let case =
        Case::new(vec![topic("a.md", std::slice::from_ref(&linking)), two_files().remove(1)]);
    let mut broken = two_files().remove(1);
    broken.text = broken.text.replace("[^e-bbbb0001] ^", "[^e-bbbb0001][^nope] ^");
    let validation = case.run(&[topic("a.md", &[linking]), broken], &Rules::default());
    assert_eq!(
        lines(&validation),
        ["topics/b.md:3:19: INVALID_TOPIC_FORMAT undefined footnote: nope"]
    );
    assert!(validation.removed.is_empty());
}

#[test]
fn a_block_broken_in_the_committed_tree_must_still_not_disappear() {
    let resolver = ArchiveResolver::new(sources());
    let mut committed = two_files();
    committed[1].text = committed[1].text.replace("[^e-bbbb0001] ^", "[^e-bbbb0001][^nope] ^");
    let baseline = Baseline::read(&committed, &resolver);
    assert_eq!(baseline.diagnostics().len(), 1);
    assert!(baseline.block_ids().contains("bbbb0001"));
    let validation = validate(&baseline, &committed[..1], &resolver, &Rules::default());
    assert_eq!(
        lines(&validation),
        ["topics/b.md:3:1: BLOCK_ID_REMOVED block ID must not be removed: bbbb0001"]
    );
}

// ---- the organizer fix (see `docs/format.md#where-we-deliberately-differ`) ----

#[test]
fn merging_paragraphs_with_different_committed_sources_is_legal() {
    let case = Case::new(two_files());
    let merged = "# a\n\nAlpha and beta.[^e-aaaa0001][^e-bbbb0001] ^aaaa0001 ^bbbb0001\n\n\
                  [^e-aaaa0001]: Time: `2026-01-01`; Sources: [m1](openprogram/s1/m1)\n\
                  [^e-bbbb0001]: Time: `2026-01-01`; Sources: [m2](openprogram/s1/m2)\n";
    let empty = BTreeSet::new();
    let validation = case.run(&[TopicFile::new("a.md", merged)], &restricted(&empty));
    assert_eq!(lines(&validation), Vec::<String>::new());
}

#[test]
fn merging_into_one_surviving_id_is_legal_when_the_other_may_go() {
    let case = Case::new(two_files());
    let merged = topic("a.md", &[rec("Alpha and beta.", "aaaa0001", &["m1", "m2"])]);
    let empty = BTreeSet::new();
    let rules = Rules {
        required: Required::AllExcept(BTreeSet::from(["bbbb0001".to_owned()])),
        ..restricted(&empty)
    };
    assert_eq!(lines(&case.run(&[merged], &rules)), Vec::<String>::new());
}

#[test]
fn splitting_a_paragraph_new_id_inherits_committed_refs() {
    let case = Case::new(vec![topic("a.md", &[rec("Alpha. Beta.", "aaaa0001", &["m1", "m2"])])]);
    let split =
        topic("a.md", &[rec("Alpha.", "aaaa0001", &["m1"]), rec("Beta.", "ffff0001", &["m2"])]);
    let empty = BTreeSet::new();
    assert_eq!(lines(&case.run(&[split], &restricted(&empty))), Vec::<String>::new());
}

#[test]
fn moving_a_block_across_directories_is_legal() {
    let sources = sources();
    let anchor = |m: &str| {
        let resolver = ArchiveResolver::new(sources.clone());
        resolver.link_target("x.md", &sref(m))
    };
    let at = |dir: &str, m: &str| format!("{dir}{}", anchor(m));
    let file = |path: &str, dir: &str| {
        TopicFile::new(
            path,
            format!(
                "# T\n\nAlpha.[^e-1] ^aaaa0001\n\n[^e-1]: Time: `2026-01-01`; Sources: [m1]({})\n",
                at(dir, "m1")
            ),
        )
    };
    let case = Case { sources: sources.clone(), baseline: vec![file("a.md", "")] };
    let empty = BTreeSet::new();
    let moved = file("archive/deep/a.md", "../../");
    let validation = case.run(&[moved], &restricted(&empty));
    assert_eq!(lines(&validation), Vec::<String>::new());
    assert_eq!(validation.units[0].refs, [sref("m1")]);
}

/// A documented deviation from Python (see `docs/format.md#where-we-deliberately-differ`, row
/// "organizer evidence"): a new paragraph that borrows a ref some *committed* block cites is
/// accepted (committed evidence); a ref no committed block cited is refused.
#[test]
fn a_new_paragraph_may_borrow_committed_evidence_but_not_uncommitted() {
    let case = Case::new(two_files());
    let empty = BTreeSet::new();
    let mut borrowing = two_files();
    borrowing.push(topic("second.md", &[rec("Second fact.", "cccc0001", &["m1"])]));
    assert_eq!(lines(&case.run(&borrowing, &restricted(&empty))), Vec::<String>::new());

    let mut uncommitted = two_files();
    uncommitted.push(topic("second.md", &[rec("Second fact.", "cccc0001", &["m3"])]));
    assert_eq!(
        case.run(&uncommitted, &restricted(&empty)).codes(),
        BTreeSet::from([ErrorCode::SourceNotInTransaction])
    );
}

/// Unrelated edits keep old refs valid (a committed block's refs are never re-litigated against
/// the transaction's set).
#[test]
fn unrelated_edits_keep_committed_refs_valid() {
    let case = Case::new(two_files());
    let mut staged = two_files();
    staged.push(topic("second.md", &[rec("Second fact.", "cccc0001", &["m3"])]));
    let batch = BTreeSet::from([sref("m3")]);
    assert!(case.run(&staged, &restricted(&batch)).is_valid());
}

#[test]
fn trust_stays_per_block_id() {
    // A committed block citing a pending source (written by hand): untouched, it validates.
    let case = Case::new(vec![topic("a.md", &[rec("Alpha.", "aaaa0001", &["m1", "p1"])])]);
    assert!(case.run(&case.baseline, &Rules::default()).is_valid());
    // Splitting it hands the pending ref to a new ID: that is new prose on pending evidence.
    let split = topic(
        "a.md",
        &[rec("Alpha.", "aaaa0001", &["m1", "p1"]), rec("Beta.", "ffff0001", &["p1"])],
    );
    let empty = BTreeSet::new();
    assert_eq!(
        lines(&case.run(&[split], &restricted(&empty))),
        [
            "topics/a.md:9:50: SOURCE_NOT_TRUSTED source reference is not trusted; promote it first: openprogram/s1/p1"
        ]
    );
}

// ---- other pure cases ----

/// A label that looks like a source ID cannot substitute for a forged target.
#[test]
fn a_forged_target_is_an_invalid_source_target() {
    let case = Case::new(vec![]);
    let forged = "# n\n\nA fact.[^e-1] ^aaaa0001\n\n[^e-1]: Time: `2026-01-01`; Sources: \
                  [openprogram/thread-missing/m9](../sources/openprogram/_v2/thread-missing.md#source-0000000000000000)\n";
    let validation = case.run(&[TopicFile::new("n.md", forged)], &Rules::default());
    assert_eq!(validation.codes(), BTreeSet::from([ErrorCode::InvalidTopicFormat]));
    assert_eq!(validation.violations[0].diagnostic, Some(Code::InvalidSourceTarget));
    assert!(validation.violations[0].message.starts_with("invalid source target: "));
}

/// A block is as trusted as all its refs (see `docs/format.md#trust`); a pending or unresolvable
/// ref makes it pending, promotion restores it.
#[test]
fn a_block_is_as_trusted_as_all_its_refs() {
    let mut sources = sources();
    let files = vec![topic(
        "a.md",
        &[
            rec("Only trusted.", "aaaa0001", &["m1", "m2"]),
            rec("One pending.", "aaaa0002", &["m1", "p1"]),
            rec("Unresolvable.", "aaaa0003", &["m9"]),
        ],
    )];
    let trust = |sources: &Sources| -> Vec<TrustState> {
        let resolver = ArchiveResolver::new(sources.clone());
        let baseline = Baseline::read(&files, &resolver);
        baseline.units().map(|u| block_trust(u, &resolver)).collect()
    };
    assert_eq!(trust(&sources), [TrustState::Trusted, TrustState::Pending, TrustState::Pending]);
    promote(&mut sources, "p1");
    assert_eq!(trust(&sources), [TrustState::Trusted, TrustState::Trusted, TrustState::Pending]);
}

// ---- helpers of the public API ----

#[test]
fn baseline_exposes_committed_ids_and_refs() {
    let resolver = ArchiveResolver::new(sources());
    let baseline = Baseline::read(&two_files(), &resolver);
    let ids: Vec<&str> = baseline.block_ids().iter().map(String::as_str).collect();
    assert_eq!(ids, ["aaaa0001", "bbbb0001"]);
    assert_eq!(baseline.refs_of("aaaa0001"), Some(BTreeSet::from([sref("m1")])));
    assert_eq!(baseline.refs_of("zzzz"), None);
    assert!(baseline.is_committed_ref(&sref("m2")));
    assert!(!baseline.is_committed_ref(&sref("m3")));
    assert_eq!(baseline.home("bbbb0001"), Some(("b.md", 3)));
    assert_eq!(baseline.file_bytes("a.md"), Some(two_files()[0].text.len() as u64));
}

#[test]
fn violation_display() {
    let at =
        Violation::at(ErrorCode::DanglingBlockLink, "topics/a.md", 3, 7, "dangling block link: x");
    assert_eq!(at.to_string(), "topics/a.md:3:7: DANGLING_BLOCK_LINK dangling block link: x");
    let tree =
        Violation::tree(ErrorCode::SizeLimit, "topic tree exceeds the size limit: 2 > 1 bytes");
    assert_eq!(tree.to_string(), "SIZE_LIMIT topic tree exceeds the size limit: 2 > 1 bytes");
}

// ---- incremental validation against the whole-tree oracle ----

/// A generated paragraph: ID number (a small pool, so duplicates happen), cited messages
/// (`p1` is pending; none is an uncited paragraph) and an optional block link.
#[derive(Clone, Debug)]
struct Gen {
    id: u8,
    refs: Vec<&'static str>,
    link: Option<u8>,
}

fn gen_id(n: u8) -> String {
    format!("cccc{n:04x}")
}

fn gen_para() -> impl proptest::strategy::Strategy<Value = Gen> {
    use proptest::prelude::*;
    const REFS: [&str; 5] = ["m1", "m2", "m3", "m4", "p1"];
    (
        0u8..12,
        proptest::collection::vec(proptest::sample::select(&REFS[..]), 0..3),
        proptest::option::of(0u8..12),
    )
        .prop_map(|(id, refs, link)| Gen { id, refs, link })
}

fn gen_text(paras: &[Gen]) -> String {
    let records: Vec<String> = paras
        .iter()
        .map(|p| {
            let id = gen_id(p.id);
            let content = match p.link {
                Some(target) => format!("Fact {id} (see [it](f0.md#^{})).", gen_id(target)),
                None => format!("Fact {id}."),
            };
            if p.refs.is_empty() {
                format!("{content} ^{id}\n\n")
            } else {
                rec(&content, &id, &p.refs)
            }
        })
        .collect();
    format!("# Generated\n\n{}", records.concat())
}

/// What a violation says, without where (a duplicate between a changed and an unchanged file
/// is reported in the changed file incrementally, in whichever parses second otherwise).
fn said(violations: &[Violation]) -> Vec<(ErrorCode, String)> {
    let mut out: Vec<(ErrorCode, String)> =
        violations.iter().map(|v| (v.code, v.message.clone())).collect();
    out.sort();
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// `validate_changes` of the changed files says what `validate` of the whole staged tree
    /// says, for a baseline that validates.
    #[test]
    fn incremental_validation_says_what_the_whole_tree_says(
        base in proptest::collection::vec(proptest::collection::vec(gen_para(), 0..4), 1..4),
        edits in proptest::collection::vec(
            (0usize..4, proptest::option::of(proptest::collection::vec(gen_para(), 0..4))), 1..3),
        still_present in proptest::bool::ANY,
    ) {
        // A valid baseline: unique cited IDs, links only to IDs it has, no pending refs.
        let mut taken = BTreeSet::new();
        let base: Vec<Vec<Gen>> = base
            .into_iter()
            .map(|paras| {
                paras
                    .into_iter()
                    .filter(|p| taken.insert(p.id))
                    .map(|mut p| {
                        p.refs.retain(|r| *r != "p1");
                        if p.refs.is_empty() {
                            p.refs.push("m1");
                        }
                        p
                    })
                    .collect()
            })
            .collect();
        let base: Vec<Vec<Gen>> = base
            .into_iter()
            .map(|paras| {
                paras
                    .into_iter()
                    .map(|mut p| {
                        p.link = p.link.filter(|t| taken.contains(t));
                        p
                    })
                    .collect()
            })
            .collect();
        let committed: Vec<TopicFile> = base
            .iter()
            .enumerate()
            .map(|(i, paras)| TopicFile::new(format!("f{i}.md"), gen_text(paras)))
            .collect();
        let resolver = ArchiveResolver::new(sources());
        let baseline = Baseline::read(&committed, &resolver);
        proptest::prop_assume!(baseline.diagnostics().is_empty());

        // The change: each edit rewrites (Some) or deletes (None) file i (f3 is new).
        let mut tree: BTreeMap<String, String> =
            committed.iter().map(|f| (f.path.clone(), f.text.clone())).collect();
        let mut changed: BTreeMap<String, String> = BTreeMap::new();
        let mut removed: BTreeSet<String> = BTreeSet::new();
        for (i, edit) in edits {
            let path = format!("f{i}.md");
            match edit {
                Some(paras) => {
                    let text = gen_text(&paras);
                    tree.insert(path.clone(), text.clone());
                    removed.remove(&path);
                    changed.insert(path, text);
                }
                None => {
                    if tree.remove(&path).is_some() {
                        changed.remove(&path);
                        if baseline.file(&path).is_some() {
                            removed.insert(path);
                        }
                    }
                }
            }
        }
        let staged: Vec<TopicFile> =
            tree.into_iter().map(|(path, text)| TopicFile::new(path, text)).collect();
        let changed: Vec<TopicFile> =
            changed.into_iter().map(|(path, text)| TopicFile::new(path, text)).collect();
        let removed: Vec<String> = removed.into_iter().collect();
        let rules = Rules {
            required: if still_present { Required::StillPresent } else { Required::All },
            ..Rules::default()
        };

        let whole = validate(&baseline, &staged, &resolver, &rules);
        let incremental = validate_changes(&baseline, &changed, &removed, &resolver, &rules);
        proptest::prop_assert_eq!(said(&incremental.violations), said(&whole.violations));
        proptest::prop_assert_eq!(&incremental.removed, &whole.removed);
        // And against the baseline read back from its catalog, files parsed on demand.
        let cataloged = agree(&committed, &sources(), &staged, &rules);
        proptest::prop_assert_eq!(said(&cataloged.violations), said(&whole.violations));
    }
}
