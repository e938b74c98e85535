//! Validation of a staged, normalized topic tree against the baseline.
//!
//! [`validate`] runs every pure check of a transaction on the staged tree and returns **all**
//! violations at once, each with a closed [`ErrorCode`], a position and the reference's message
//! wording. It never stops at the first problem: the writer's repair turn, the CLI and the web UI
//! all show the whole list. The checks, in the order their violations are listed:
//!
//! 1. Staged paths are clean, relative `.md` paths: `PATH_OUTSIDE_WORKSPACE`
//!    `path escapes the workspace: topics/<path>`; `READ_ONLY_PATH`
//!    `only topics/**/*.md is writable: topics/<path>`.
//! 2. Size limits ([`Limits`]): `SIZE_LIMIT` `topic file exceeds the size limit: <n> > <max>
//!    bytes` (at the file) and `topic tree exceeds the size limit: <n> > <max> bytes`.
//! 3. Strict parse of every file (see `docs/format.md#memory-units`): `INVALID_TOPIC_FORMAT` with
//!    the topic diagnostic's message (see `docs/format.md#diagnostic-codes`) and the topic
//!    [`Code`] in [`Violation::diagnostic`].
//! 4. Required block IDs ([`Required`]): `BLOCK_ID_REMOVED` `block ID must not be removed: <id>`.
//! 5. Topic links of changed units target `#^id` (see `docs/format.md#topic-to-topic-links`):
//!    `TOPIC_LINK_NOT_BLOCK`
//!    `Topic-to-Topic link must target #^block-id: <topic> -> <target>`.
//! 6. Every block link resolves: `DANGLING_BLOCK_LINK` `dangling block link: <id>`.
//! 7. Every ref resolves in the live archive: `INVALID_SOURCE_REFERENCE`
//!    `invalid source reference: <ref>` (neither `D<n>:<t>` nor `<provider>/<thread>/<message>`),
//!    `MISSING_SOURCE_REFERENCE` `missing source reference: <ref>` (nothing archived vouches
//!    for it).
//! 8. A ref new to a block ID is trusted: `SOURCE_NOT_TRUSTED`
//!    `source reference is not trusted; promote it first: <ref>`.
//! 9. A ref new to the workspace is the transaction's evidence (when restricted):
//!    `SOURCE_NOT_IN_TRANSACTION` `source reference is not evidence of this transaction: <ref>`.
//!
//! Source violations (7–9) are positioned at the link in the footnote definition that cites the
//! ref; a ref cited by several blocks through one definition is reported once.
//!
//! The reference reports a lost block ID once for up to five sorted IDs; we report one violation
//! per lost ID (each positioned where the block was committed) and keep the reference's combined
//! message in [`Validation::removed_message`].
//!
//! # The organizer fix
//!
//! One of the deliberate differences from the Python implementation (see
//! `docs/format.md#where-we-deliberately-differ`, row "organizer evidence").
//!
//! The reference calls a citation "new" when the *block ID* citing it did not cite that source
//! before, and then requires every new citation to be in the transaction's evidence set. With
//! the organizer's empty set that forbids merging two committed paragraphs with different
//! sources and splitting one (the new ID inherits refs), contradicting the organize prompt.
//!
//! Here the two questions are kept apart:
//!
//! * **Trust** stays per block ID, as in the reference: a ref not among that ID's committed refs
//!   must resolve to a [trusted] source, so a pending source cannot be laundered into prose by
//!   merging, splitting or copying.
//! * **Transaction evidence** is per workspace: a ref is *new evidence* only when no committed
//!   block cited it ([`Baseline::is_committed_ref`]); only new evidence must be in
//!   [`Rules::allowed_new_sources`]. Merging, splitting and moving committed evidence, and an
//!   organizer pass with `Some(empty set)`, are therefore legal.
//!
//! This deviates from the Python implementation in one observable case: a new paragraph that
//! borrows a ref cited elsewhere, which Python refuses, is *accepted* here when the borrowed ref is
//! cited by a committed block (pinned by
//! `a_new_paragraph_may_borrow_committed_evidence_but_not_uncommitted` in
//! `crates/txn/tests/it/validate.rs`); a ref that no committed block ever cited is still refused
//! with `SOURCE_NOT_IN_TRANSACTION`. It is safe because the restriction exists to keep a writer
//! from citing evidence it was not handed (out-of-batch or pending messages), and a committed ref
//! is neither: it was validated into the workspace by an earlier transaction, it resolves in the
//! append-only archive, and it is still re-checked for trust whenever a block newly cites it.
//!
//! [trusted]: scriptorium_topics_format::source::TrustState::Trusted
//!
//! # Cascades
//!
//! A paragraph that fails the strict parse yields no unit. So that one mistake is reported once,
//! its block IDs (read from the paragraph's suffix) still count as present for the
//! `BLOCK_ID_REMOVED` and `DANGLING_BLOCK_LINK` checks.
//!
//! # Cost
//!
//! One strict parse of the staged tree; hash lookups per unit and per distinct ref (each ref's
//! archive trust is looked up once); positions of source violations are computed only for files
//! that have one. No quadratic scans.
//!
//! # Limitations
//!
//! * The existence check (7) covers every ref of every unit, committed ones included, as in the
//!   reference: a committed block whose archive was removed by hand blocks every transaction
//!   until it is repaired (`scriptorium check` reports the same ref). Trust (8) and transaction
//!   evidence (9) never re-litigate a block's committed refs.
//! * `sources/` unchanged since `begin` (`SOURCES_CHANGED`) and compare-and-set are the
//!   pipeline's checks: they need the filesystem and the revision, this module is pure.
//! * Positions of `BLOCK_ID_REMOVED` are in the committed file (where the block was), since the
//!   staged tree no longer has it.

mod baseline;
mod catalog;
mod sources;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

use scriptorium_topics_format::topic::{
    Document, check_dangling_links, check_dangling_links_in, check_topic_links_in,
    compare_topic_paths,
};
use scriptorium_topics_format::{Code, Diagnostic, TopicFile, Unit, parse_tree};

pub(crate) use baseline::TreePath;
pub use baseline::{Baseline, FileLoader, FileState};
pub use catalog::Summary;
pub use sources::{SourceCatalog, block_trust};

use crate::code::ErrorCode;

/// Which baseline block IDs must survive the transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Required {
    /// Every committed block ID (a direct edit that must not lose records).
    #[default]
    All,
    /// Every committed block ID except these (structured changes: the IDs named by delete
    /// operations).
    AllExcept(BTreeSet<String>),
    /// Only the committed IDs still present after the edit (`before ∩ staged`): any block may
    /// be deleted. Used for agents and whole-file changes and patches, where deleting a file is
    /// intentional.
    StillPresent,
}

/// Size limits on a staged tree.
///
/// A limit applies only to what the transaction grew: a file is checked when it is new or
/// larger than its committed version, the tree when its total is larger than the committed
/// total. A workspace that is already over a limit (written by hand, or under an older limit)
/// can therefore still be edited down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Maximum bytes of one topic file. Default 512 000, the Python implementation's per-change
    /// limit (512 000 patch/change bytes): a whole-file change carries a whole file, so a
    /// file no change could have written is refused whatever wrote it (an agent, the editor).
    pub max_file_bytes: u64,
    /// Maximum bytes of the whole `topics/` tree. Default 64 MiB: the reference has no such
    /// limit; this bounds the work of one transaction (about 200 000 typical blocks, twenty
    /// times the 10 000-block performance budget).
    pub max_tree_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_file_bytes: 512_000, max_tree_bytes: 64 * 1024 * 1024 }
    }
}

/// What a transaction may do, chosen by its entry point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules<'a> {
    /// Which committed block IDs must survive.
    pub required: Required,
    /// The transaction's own evidence: when `Some`, every ref that no committed block cited must
    /// be in this set (writers: the batch's refs; the organizer: the empty set). `None` (direct
    /// edits, the editor) leaves new refs unrestricted except for trust.
    pub allowed_new_sources: Option<&'a BTreeSet<String>>,
    /// Size limits.
    pub limits: Limits,
}

/// One violation of a validation rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Violation {
    /// The closed code callers match on.
    pub code: ErrorCode,
    /// Workspace-relative path (`topics/…`), `None` for a violation of the whole tree.
    pub path: Option<String>,
    /// 1-based line (0 when `path` is `None`).
    pub line: u32,
    /// 1-based column in characters (0 when `path` is `None`).
    pub col: u32,
    /// The message, in the reference's wording.
    pub message: String,
    /// The topic-format code when the violation comes from a topic [`Diagnostic`].
    pub diagnostic: Option<Code>,
}

impl Violation {
    /// Wraps a topic diagnostic: `TOPIC_LINK_NOT_BLOCK`, `DANGLING_BLOCK_LINK` and
    /// `UNCITED_PARAGRAPH` keep their own codes, every other diagnostic is
    /// `INVALID_TOPIC_FORMAT`.
    pub fn from_diagnostic(diagnostic: Diagnostic) -> Violation {
        let code = match diagnostic.code {
            Code::TopicLinkNotBlock => ErrorCode::TopicLinkNotBlock,
            Code::DanglingBlockLink => ErrorCode::DanglingBlockLink,
            Code::UncitedParagraph => ErrorCode::UncitedParagraph,
            _ => ErrorCode::InvalidTopicFormat,
        };
        Violation {
            code,
            path: Some(diagnostic.path),
            line: diagnostic.line,
            col: diagnostic.col,
            message: diagnostic.message,
            diagnostic: Some(diagnostic.code),
        }
    }

    /// A violation at `path:line:col`.
    pub fn at(
        code: ErrorCode,
        path: impl Into<String>,
        line: u32,
        col: u32,
        message: impl Into<String>,
    ) -> Violation {
        Violation {
            code,
            path: Some(path.into()),
            line,
            col,
            message: message.into(),
            diagnostic: None,
        }
    }

    /// A violation of the whole tree (no position).
    pub fn tree(code: ErrorCode, message: impl Into<String>) -> Violation {
        Violation { code, path: None, line: 0, col: 0, message: message.into(), diagnostic: None }
    }
}

impl fmt::Display for Violation {
    /// `path:line:col: CODE message`, or `CODE message` without a path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => {
                write!(f, "{path}:{}:{}: {} {}", self.line, self.col, self.code, self.message)
            }
            None => write!(f, "{} {}", self.code, self.message),
        }
    }
}

/// The result of [`validate`]: the staged units and every violation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validation {
    /// The units of the staged tree, in tree order (what parsed; complete when valid).
    pub units: Vec<Unit>,
    /// Every violation, grouped by check in the order of the module table, by position within a
    /// check.
    pub violations: Vec<Violation>,
    /// The required block IDs missing from the staged tree, sorted.
    pub removed: Vec<String>,
}

impl Validation {
    /// Whether the staged tree passed every check.
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }

    /// The reference's combined message for lost block IDs,
    /// `block ID must not be removed: <up to 5 sorted ids, comma-separated>`; `None` when no
    /// required ID was lost.
    pub fn removed_message(&self) -> Option<String> {
        (!self.removed.is_empty()).then(|| removed_message(&self.removed))
    }

    /// The distinct codes of the violations, sorted.
    pub fn codes(&self) -> BTreeSet<ErrorCode> {
        self.violations.iter().map(|v| v.code).collect()
    }
}

/// `block ID must not be removed: <up to 5 sorted ids, comma-separated>`.
pub fn removed_message<S: AsRef<str>>(ids: &[S]) -> String {
    let mut sorted: Vec<&str> = ids.iter().map(AsRef::as_ref).collect();
    sorted.sort_unstable();
    sorted.dedup();
    sorted.truncate(5);
    format!("block ID must not be removed: {}", sorted.join(", "))
}

/// Validates the normalized staged tree `staged` against `baseline` (the checks of the module
/// docs).
///
/// `staged` is the normalized staged tree (paths relative to `topics/`); `sources` resolves
/// citations and trust against the live archive (new evidence is archived before a writer
/// runs). Every violation is collected; [`Validation::is_valid`] says whether to install.
/// Pure: reads nothing but its arguments (`sources` reads archives), writes nothing.
pub fn validate(
    baseline: &Baseline,
    staged: &[TopicFile],
    sources: &dyn SourceCatalog,
    rules: &Rules<'_>,
) -> Validation {
    let mut violations = Vec::new();
    check_paths(staged, &mut violations);
    check_sizes(baseline, staged, &rules.limits, &mut violations);

    let parsed = parse_tree(staged, sources);
    let broken_files: HashSet<&str> = parsed.diagnostics.iter().map(|d| d.path.as_str()).collect();
    // IDs of paragraphs that did not parse still count as present (no cascade).
    let broken_ids = suffix_ids(staged, &broken_files);
    violations.extend(parsed.diagnostics.into_iter().map(Violation::from_diagnostic));
    let units = parsed.units;
    let mut present: HashSet<&str> = units.iter().map(|u| u.memory_id.as_str()).collect();
    present.extend(broken_ids.iter().map(String::as_str));

    let removed = check_required(baseline, &present, &rules.required, &mut violations);

    violations.extend(
        check_topic_links_in(staged, &units, &|id| baseline.unit(id))
            .into_iter()
            .map(Violation::from_diagnostic),
    );
    violations.extend(
        check_dangling_links(staged, &units)
            .into_iter()
            .filter(|d| {
                d.message
                    .strip_prefix("dangling block link: ")
                    .is_none_or(|id| !broken_ids.contains(id))
            })
            .map(Violation::from_diagnostic),
    );

    sources::check_refs(baseline, staged, &units, sources, rules, &mut violations);

    Validation { units, violations, removed }
}

/// What [`validate_changes`] found: the changed files parsed (in tree order), every
/// violation, and the required block IDs lost.
#[derive(Clone, Debug, Default)]
pub struct ChangeValidation {
    /// The changed files, each parsed on its own.
    pub files: Vec<FileState>,
    /// Every violation, grouped by check as [`validate`] groups them.
    pub violations: Vec<Violation>,
    /// The required block IDs missing after the change, sorted.
    pub removed: Vec<String>,
    /// Every block ID the change took out of the tree (required or not), sorted.
    pub gone: Vec<String>,
}

/// [`validate`] of a change rather than a whole tree: `changed` are the normalized new versions
/// of the files the transaction touched (paths relative to `topics/`, new files included) and
/// `removed` the files it deleted; every other file is the baseline's, unchanged, and is not
/// read, parsed or checked again. Cross-file checks use the baseline's indexes: a block ID the
/// change adds must not exist in an unchanged file, an ID the change drops must be allowed to
/// go (`Required`), and a link in an unchanged file to a dropped ID is dangling.
///
/// The result equals [`validate`]'s on the whole staged tree for a baseline that itself
/// validates, except in two places: a block ID duplicated between a changed and an unchanged
/// file is reported in the changed file (a whole-tree parse reports whichever comes second),
/// and the refs of unchanged blocks are not looked up again in the archive (`scriptorium
/// check` looks at every ref).
pub fn validate_changes(
    baseline: &Baseline,
    changed: &[TopicFile],
    removed: &[String],
    sources: &dyn SourceCatalog,
    rules: &Rules<'_>,
) -> ChangeValidation {
    let mut violations = Vec::new();
    check_paths(changed, &mut violations);
    let dirty: HashSet<&str> =
        changed.iter().map(|f| f.path.as_str()).chain(removed.iter().map(String::as_str)).collect();
    // Sizes: what the change grew (the unchanged files keep their committed sizes).
    let mut total = baseline.total_bytes();
    for path in &dirty {
        total = total.saturating_sub(baseline.file_bytes(path).unwrap_or(0));
    }
    let mut order: Vec<&TopicFile> = changed.iter().collect();
    order.sort_by(|a, b| compare_topic_paths(&a.path, &b.path));
    for file in &order {
        let bytes = len_u64(&file.text);
        total = total.saturating_add(bytes);
        let grew = baseline.file_bytes(&file.path).is_none_or(|before| bytes > before);
        if grew && bytes > rules.limits.max_file_bytes {
            violations.push(Violation::at(
                ErrorCode::SizeLimit,
                file.workspace_path(),
                1,
                1,
                format!(
                    "topic file exceeds the size limit: {bytes} > {} bytes",
                    rules.limits.max_file_bytes
                ),
            ));
        }
    }
    if total > rules.limits.max_tree_bytes && total > baseline.total_bytes() {
        violations.push(Violation::tree(
            ErrorCode::SizeLimit,
            format!(
                "topic tree exceeds the size limit: {total} > {} bytes",
                rules.limits.max_tree_bytes
            ),
        ));
    }

    // The strict parse of every changed file, and block IDs against the rest of the tree.
    let files: Vec<FileState> =
        order.iter().map(|f| FileState::parse((*f).clone(), sources)).collect();
    let elsewhere = |id: &str| baseline.files_of(id).iter().any(|p| !dirty.contains(p.as_str()));
    let (mut seen, mut unit_ids): (HashSet<&str>, HashSet<&str>) = Default::default();
    // Units whose ID another file holds: reported, then left out of the later checks, as a
    // whole-tree parse drops its second copy. (A duplicate within one file is the parse's own
    // diagnostic; its unit is already dropped.)
    let mut duplicates: HashSet<(usize, &str)> = HashSet::new();
    let mut shadowed: HashSet<&str> = HashSet::new();
    for (index, state) in files.iter().enumerate() {
        violations.extend(state.diagnostics.iter().cloned().map(Violation::from_diagnostic));
        for unit in &state.units {
            let id = unit.memory_id.as_str();
            let earlier = |p: &String| {
                !dirty.contains(p.as_str()) && compare_topic_paths(p, &state.file.path).is_lt()
            };
            let first_elsewhere = baseline.files_of(id).iter().any(earlier);
            if first_elsewhere || !unit_ids.insert(id) {
                violations.push(Violation::from_diagnostic(duplicate_at(state, unit)));
                duplicates.insert((index, id));
            } else if elsewhere(id) {
                // The unchanged copy comes later in the tree: the whole-tree parse keeps this
                // one and drops that one, whose links are then not checked either.
                violations.push(Violation::from_diagnostic(duplicate_at(state, unit)));
                shadowed.insert(id);
            }
        }
        // Broken paragraphs' IDs count as present (no cascade), as the units' do, but are
        // not units a duplicate is counted against (the whole-tree parse's rule).
        for id in &state.block_ids {
            seen.insert(id.as_str());
        }
    }
    let present = |id: &str| seen.contains(id) || elsewhere(id);

    // Required block IDs: only those the changed files held can be lost.
    let mut gone: Vec<String> = dirty
        .iter()
        .filter_map(|path| baseline.summary(path))
        .flat_map(|state| state.block_ids.iter())
        .filter(|id| !present(id))
        .cloned()
        .collect();
    gone.sort_unstable();
    gone.dedup();
    let except = match &rules.required {
        Required::StillPresent => None,
        Required::All => Some(None),
        Required::AllExcept(ids) => Some(Some(ids)),
    };
    let mut lost = Vec::new();
    if let Some(except) = except {
        for id in &gone {
            if except.is_some_and(|e| e.contains(id)) {
                continue;
            }
            let message = format!("block ID must not be removed: {id}");
            violations.push(match baseline.home(id) {
                Some((path, line)) => Violation::at(
                    ErrorCode::BlockIdRemoved,
                    format!("topics/{path}"),
                    line,
                    1,
                    message,
                ),
                None => Violation::tree(ErrorCode::BlockIdRemoved, message),
            });
            lost.push(id.clone());
        }
    }

    // Links: of the changed units, and of unchanged files to blocks the change dropped.
    let units: Vec<Unit> = files
        .iter()
        .enumerate()
        .flat_map(|(index, f)| {
            let duplicates = &duplicates;
            f.units.iter().filter(move |u| !duplicates.contains(&(index, u.memory_id.as_str())))
        })
        .cloned()
        .collect();
    let texts: Vec<TopicFile> = files.iter().map(|f| f.file.clone()).collect();
    violations.extend(
        check_topic_links_in(&texts, &units, &|id| baseline.unit(id))
            .into_iter()
            .map(Violation::from_diagnostic),
    );
    violations.extend(
        check_dangling_links_in(&texts, &units, &present)
            .into_iter()
            .map(Violation::from_diagnostic),
    );
    let mut linking: BTreeSet<TreePath> = BTreeSet::new();
    for id in &gone {
        for path in baseline.backlinks(id).filter(|p| !dirty.contains(p.as_str())) {
            linking.insert(TreePath(path.clone()));
        }
    }
    for path in linking {
        let Some(state) = baseline.file(&path.0) else { continue };
        let kept: Vec<Unit>;
        let units = if state.units.iter().any(|u| shadowed.contains(u.memory_id.as_str())) {
            kept = state
                .units
                .iter()
                .filter(|u| !shadowed.contains(u.memory_id.as_str()))
                .cloned()
                .collect();
            &kept[..]
        } else {
            &state.units[..]
        };
        let dangling = check_dangling_links_in(std::slice::from_ref(&state.file), units, &present);
        violations.extend(dangling.into_iter().map(Violation::from_diagnostic));
    }

    sources::check_refs(baseline, &texts, &units, sources, rules, &mut violations);
    ChangeValidation { files, violations, removed: lost, gone }
}

/// The `duplicate memory_id` diagnostic of `unit`, at its `^id` in the file.
fn duplicate_at(state: &FileState, unit: &Unit) -> Diagnostic {
    let text = &state.file.text;
    let needle = format!("^{}", unit.memory_id);
    let offset = text
        .get(unit.span.clone())
        .and_then(|p| p.rfind(&needle))
        .map_or(unit.span.start, |i| unit.span.start + i);
    let line = text[..offset.min(text.len())].matches('\n').count() + 1;
    let col =
        text[..offset.min(text.len())].rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Diagnostic::new(
        state.file.workspace_path(),
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(col).unwrap_or(u32::MAX),
        Code::DuplicateMemoryId,
        format!("duplicate memory_id: {}", unit.memory_id),
    )
}

/// Staged paths must be clean, relative, `/`-separated `.md` paths under `topics/`.
fn check_paths(staged: &[TopicFile], out: &mut Vec<Violation>) {
    let mut order: Vec<&TopicFile> = staged.iter().collect();
    order.sort_by(|a, b| compare_topic_paths(&a.path, &b.path));
    for file in order {
        let path = file.path.as_str();
        let clean = !path.is_empty()
            && !path.starts_with('/')
            && !path.contains('\\')
            && !path.contains('\0')
            && path.split('/').all(|c| !c.is_empty() && c != "." && c != "..");
        if !clean {
            out.push(Violation::tree(
                ErrorCode::PathOutsideWorkspace,
                format!("path escapes the workspace: topics/{path}"),
            ));
        } else if !path.ends_with(".md") {
            out.push(Violation::tree(
                ErrorCode::ReadOnlyPath,
                format!("only topics/**/*.md is writable: topics/{path}"),
            ));
        }
    }
}

/// File and tree byte limits, applied to what the transaction grew.
fn check_sizes(
    baseline: &Baseline,
    staged: &[TopicFile],
    limits: &Limits,
    out: &mut Vec<Violation>,
) {
    let mut order: Vec<&TopicFile> = staged.iter().collect();
    order.sort_by(|a, b| compare_topic_paths(&a.path, &b.path));
    let mut total: u64 = 0;
    for file in order {
        let bytes = len_u64(&file.text);
        total = total.saturating_add(bytes);
        let grew = baseline.file_bytes(&file.path).is_none_or(|before| bytes > before);
        if grew && bytes > limits.max_file_bytes {
            out.push(Violation::at(
                ErrorCode::SizeLimit,
                file.workspace_path(),
                1,
                1,
                format!(
                    "topic file exceeds the size limit: {bytes} > {} bytes",
                    limits.max_file_bytes
                ),
            ));
        }
    }
    if total > limits.max_tree_bytes && total > baseline.total_bytes() {
        out.push(Violation::tree(
            ErrorCode::SizeLimit,
            format!("topic tree exceeds the size limit: {total} > {} bytes", limits.max_tree_bytes),
        ));
    }
}

/// One violation per required ID that is gone; returns the lost IDs, sorted.
fn check_required(
    baseline: &Baseline,
    present: &HashSet<&str>,
    required: &Required,
    out: &mut Vec<Violation>,
) -> Vec<String> {
    let except = match required {
        Required::StillPresent => return Vec::new(),
        Required::All => None,
        Required::AllExcept(ids) => Some(ids),
    };
    let mut removed = Vec::new();
    for id in baseline.block_ids() {
        if present.contains(id.as_str()) || except.is_some_and(|e| e.contains(id)) {
            continue;
        }
        let message = format!("block ID must not be removed: {id}");
        out.push(match baseline.home(id) {
            Some((path, line)) => {
                Violation::at(ErrorCode::BlockIdRemoved, format!("topics/{path}"), line, 1, message)
            }
            None => Violation::tree(ErrorCode::BlockIdRemoved, message),
        });
        removed.push(id.clone());
    }
    removed
}

/// The suffix block IDs of every paragraph of the named (workspace-relative) files.
fn suffix_ids(files: &[TopicFile], which: &HashSet<&str>) -> HashSet<String> {
    let mut ids = HashSet::new();
    if which.is_empty() {
        return ids;
    }
    for file in files {
        if !which.contains(format!("topics/{}", file.path).as_str()) {
            continue;
        }
        let doc = Document::parse(&file.text);
        for paragraph in doc.paragraphs() {
            ids.extend(doc.block_ids(paragraph).into_iter().map(String::from));
        }
    }
    ids
}

/// A text length as `u64` (saturating on exotic targets).
fn len_u64(text: &str) -> u64 {
    u64::try_from(text.len()).unwrap_or(u64::MAX)
}

/// Topic files keyed by their path relative to `topics/`.
fn by_path(files: &[TopicFile]) -> HashMap<&str, &TopicFile> {
    files.iter().map(|f| (f.path.as_str(), f)).collect()
}
