//! Forgetting: a conversation, an archived record, a block or a literal text removed from every
//! place Scriptorium keeps or sends it (see `docs/format.md#forgetting` and
//! `docs/sync.md#forgetting`).
//!
//! A forget is planned first ([`plan`]: which sessions and nodes lose their content, which
//! records become tombstones, which blocks go or lose a citation, which files change and how
//! many commits git rewrites) and carried out as one resumable operation ([`execute`]), whose
//! intent (`.scriptorium/forget.json`) is written before anything changes. Its steps, each
//! idempotent, in order:
//!
//! 1. the session store: the nodes' content (and titles) erased, their shape kept;
//! 2. the archive: the records' frames become tombstones (`Workspace::tombstone_sources`);
//! 3. git history: every commit holding the content rewritten (`History::rewrite`), the old →
//!    new commit map kept in the intent;
//! 4. topics: one transaction removes the blocks and citations and appends the forget's entry to
//!    the ledger (`forgotten.jsonl`, IDs and hashes, never content), committed with a `Forget:`
//!    trailer; the views follow, and the search index is rebuilt from scratch;
//! 5. internal files that may quote the content (the writer's run log, a kept sync conflict,
//!    drafts, a Python search cache) lose it;
//! 6. the old git objects are expired and pruned; the sync remote, when one is configured, gets
//!    the rewritten branch with a lease (`--force-with-lease`), and a remote that is a local
//!    path is pruned too.
//!
//! A crash at any point leaves the intent, and the next command that opens the home finishes
//! the forget ([`resume`]). Until it is done the intent holds what was asked (for `--matching`,
//! the text itself); it is removed when the forget completes.
//!
//! Key decisions: everything is selected by identity (session and node IDs, source IDs, block
//! IDs) once, at planning, so a resumed forget does the same thing, and another clone can do it
//! too from the ledger alone; the literal text of `--matching` never leaves this machine. A
//! forget is the one operation allowed to change archived bytes, and it changes them only into
//! tombstones.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use scriptorium_history::{History, Scrub, Scrubbed};
use scriptorium_session_dag::{NodeId, SessionId, SessionStore};
use scriptorium_topics_format::forget::{Forgetting, forget_in_tree, forget_in_view};
use scriptorium_topics_format::source::{is_v2_source_path, scan};
use scriptorium_topics_format::topic::{TopicFile, parse_tree};
use scriptorium_txn::validate::Required;
use scriptorium_txn::{BeginOptions, LockTimeout};
use scriptorium_workspace_fs::read::{FsSources, read_topics};
use scriptorium_workspace_fs::{Durability, RealFs, write_atomic};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::memory::MemoryWorkspace;
use crate::redact::{
    RedactPlan, RedactScrub, redact_archives, redact_internal_files, redact_store, redact_topics,
};
use crate::wire::{Code, WireError};

/// The ledger of forgets, at the root of the memory workspace: one JSON line per forget, synced
/// with the rest of the tree (see [`LedgerEntry`]).
pub const LEDGER: &str = "forgotten.jsonl";

/// The lock held while a forget is carried out (in `.scriptorium/`).
const LOCK: &str = "forget.lock";

/// The intent of a forget under way, in `.scriptorium/`.
const INTENT: &str = "forget.json";

/// The trailer of a forget's commit (`Forget: sessions=1 records=12 blocks=3`).
pub const TRAILER: &str = "Forget:";

/// The shortest text `--matching` takes: a shorter one would forget half the memory.
pub const MIN_MATCHING_CHARS: usize = 4;

/// What to forget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// A whole conversation (session ID).
    Session(String),
    /// One archived message: its source ID (`openprogram/<session>/<node>`), a citation's link
    /// target (`…/sources/…/x.md#source-…`) or its anchor (`source-…`).
    Record(String),
    /// One block (its ID, with or without `^`).
    Block(String),
    /// Every node, record and block containing this literal text.
    Matching(String),
}

/// What a forget removes, found before anything is touched: the dry run, and the plan the
/// intent keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForgetPlan {
    /// `f-` and 16 hex digits.
    pub id: String,
    /// Sessions forgotten whole.
    pub sessions: Vec<String>,
    /// Per session, the nodes whose content goes (whole sessions included).
    pub nodes: BTreeMap<String, Vec<String>>,
    /// Sessions whose title goes.
    pub titles: Vec<String>,
    /// Source IDs whose frames become tombstones.
    pub records: BTreeSet<String>,
    /// Blocks removed: selected, holding the text, or citing only forgotten records.
    pub blocks: BTreeSet<String>,
    /// Blocks that stay but lose a citation of a forgotten record.
    pub uncited: BTreeSet<String>,
    /// Workspace files that change now (topics and archives).
    pub files: Vec<String>,
    /// Commits git rewrites: every commit from the oldest one that holds the content.
    pub commits: usize,
    /// The SHA-256 of `--matching`'s text (the ledger's record of it).
    pub matching_sha256: Option<String>,
    /// The text itself, kept only in this machine's intent until the forget is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<String>,
}

impl ForgetPlan {
    /// Whether there is nothing to forget.
    pub fn is_empty(&self) -> bool {
        self.nodes.values().all(Vec::is_empty)
            && self.titles.is_empty()
            && self.records.is_empty()
            && self.blocks.is_empty()
            && self.uncited.is_empty()
            && self.files.is_empty()
            && self.matching.is_none()
    }

    /// How many nodes lose their content.
    pub fn node_count(&self) -> usize {
        self.nodes.values().map(Vec::len).sum()
    }

    fn forgetting(&self) -> Result<Forgetting, ForgetError> {
        Forgetting::new(&self.records, &self.blocks, self.matching.as_deref())
            .map_err(|e| ForgetError::Invalid(e.to_string()))
    }
}

/// One line of the ledger (`forgotten.jsonl`): what a forget removed, by identity and hash,
/// never by content, so that every clone applies the same forget on its next sync and no
/// importer brings it back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The format (1).
    pub version: u32,
    /// The forget's id.
    pub id: String,
    /// When (RFC 3339).
    pub at: String,
    /// Sessions forgotten whole.
    pub sessions: Vec<String>,
    /// Per session, the nodes whose content went.
    pub nodes: BTreeMap<String, Vec<String>>,
    /// Sessions whose title went.
    pub titles: Vec<String>,
    /// Source IDs whose frames are tombstones.
    pub records: Vec<String>,
    /// Blocks removed.
    pub blocks: Vec<String>,
    /// The SHA-256 of a `--matching` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching_sha256: Option<String>,
    /// Git history as it was rewritten: old commit → new commit.
    pub rewrite: Vec<(String, String)>,
    /// A redact (`scriptorium redact`), not a forget: every clone redacts its own copy with its
    /// own rules; the selectors above are empty.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redact: bool,
}

/// What a forget did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ForgetReport {
    /// The plan carried out.
    pub plan: ForgetPlan,
    /// Commits rewritten.
    pub commits_rewritten: usize,
    /// Git objects left after the prune.
    pub objects_left: usize,
    /// The revision of the forget's install.
    pub revision: String,
    /// Its commit.
    pub commit: Option<String>,
    /// What happened at the sync remote: `none` (no remote), `replaced` (the rewritten branch
    /// pushed with a lease), `pending` (not reachable now: the next `sync` replaces it).
    pub remote: String,
}

/// Why a forget cannot be planned or carried out.
#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    /// A bad selector, or nothing it names.
    #[error("{0}")]
    Invalid(String),
    /// What a selector names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The engine, the store, git or a file failed (the forget resumes on the next command).
    #[error("{0}")]
    Failed(WireError),
}

impl ForgetError {
    /// The wire error every face answers.
    pub fn wire(&self) -> WireError {
        match self {
            ForgetError::Invalid(message) => WireError::new(Code::InvalidArgument, message.clone()),
            ForgetError::NotFound(message) => WireError::new(Code::NotFound, message.clone()),
            ForgetError::Failed(error) => error.clone(),
        }
    }
}

pub(crate) fn failed(code: Code, message: impl std::fmt::Display) -> ForgetError {
    ForgetError::Failed(WireError::new(code, message.to_string()))
}

pub(crate) fn txn_failed(error: &scriptorium_txn::Error) -> ForgetError {
    ForgetError::Failed(WireError::from_txn(error))
}

pub(crate) fn store_failed(error: &scriptorium_session_dag::Error) -> ForgetError {
    ForgetError::Failed(WireError::new(error.code().into(), error.to_string()))
}

pub(crate) fn git_failed(error: &scriptorium_history::Error) -> ForgetError {
    ForgetError::Failed(WireError::new(error.code().into(), error.to_string()))
}

pub(crate) fn hex_sha256(text: &str) -> String {
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Plans a forget of `selectors` (read-only: nothing is written).
pub fn plan(
    memory: &MemoryWorkspace,
    store: &dyn SessionStore,
    selectors: &[Selector],
) -> Result<ForgetPlan, ForgetError> {
    if selectors.is_empty() {
        return Err(ForgetError::Invalid(
            "say what to forget: a session, a record, a block or a text to match".into(),
        ));
    }
    let root = memory.workspace().root().to_path_buf();
    let archives = read_archives(&root)?;
    let mut plan = ForgetPlan::default();
    let mut selected_blocks: BTreeSet<String> = BTreeSet::new();
    for selector in selectors {
        match selector {
            Selector::Session(id) => plan_session(store, &archives, id, &mut plan)?,
            Selector::Record(record) => plan_record(store, &archives, record, &mut plan)?,
            Selector::Block(id) => {
                selected_blocks.insert(id.trim().trim_start_matches('^').to_owned());
            }
            Selector::Matching(text) => plan_matching(store, &archives, text, &mut plan)?,
        }
    }
    plan.blocks = selected_blocks.clone();
    // What the topics lose: the selected blocks, the blocks holding the text, the blocks that
    // cited only forgotten records, the citations of the others.
    let files = read_topics(&root).map_err(|e| failed(Code::Io, e))?;
    let tree = forget_in_tree(&files, &plan.forgetting()?);
    let parsed = parse_tree(
        &files,
        &scriptorium_topics_format::source::ArchiveResolver::new(FsSources::new(&root)),
    );
    let known: HashSet<&str> = parsed
        .units
        .iter()
        .flat_map(|u| {
            std::iter::once(u.memory_id.as_str()).chain(u.aliases.iter().map(String::as_str))
        })
        .collect();
    if let Some(missing) = selected_blocks.iter().find(|id| !known.contains(id.as_str())) {
        return Err(ForgetError::NotFound(format!("no block ^{missing} in the topics")));
    }
    plan.blocks.extend(tree.removed_blocks.iter().cloned());
    plan.uncited.extend(tree.kept_blocks_uncited.iter().cloned());
    plan.files.extend(tree.changed.iter().map(|file| format!("topics/{}", file.path)));
    for (path, frames) in &archives {
        if frames.iter().any(|f| plan.records.contains(&f.source_id)) {
            plan.files.push(path.clone());
        }
    }
    plan.files.sort();
    plan.files.dedup();
    plan.commits = commits_to_rewrite(memory, &plan);
    plan.id = format!(
        "f-{}",
        &hex_sha256(&format!(
            "{}\0{:?}\0{:?}\0{:?}\0{:?}",
            crate::memory::wall_clock().unix_timestamp_nanos(),
            plan.nodes,
            plan.records,
            plan.blocks,
            plan.matching_sha256
        ))[..16]
    );
    Ok(plan)
}

/// One frame of an archive, as planning needs it.
struct ArchivedFrame {
    source_id: String,
    anchor: String,
    record: String,
}

/// Every v2 archive of the workspace with its frames (workspace-relative path → frames).
fn read_archives(root: &Path) -> Result<BTreeMap<String, Vec<ArchivedFrame>>, ForgetError> {
    let mut out = BTreeMap::new();
    let sources = root.join("sources");
    if !sources.is_dir() {
        return Ok(out);
    }
    let entries =
        scriptorium_workspace_fs::walk(&RealFs, &sources).map_err(|e| failed(Code::Io, e))?;
    for entry in entries {
        if entry.kind != scriptorium_workspace_fs::FileKind::File || !entry.utf8 {
            continue;
        }
        let rel = format!("sources/{}", entry.rel);
        if !is_v2_source_path(&rel) {
            continue;
        }
        let bytes = scriptorium_workspace_fs::read::read_in(&RealFs, root, &rel)
            .map_err(|e| failed(Code::Io, e))?;
        let text = String::from_utf8_lossy(&bytes);
        let scanned = scan(&rel, &text);
        let frames = scanned
            .frames
            .iter()
            .map(|f| ArchivedFrame {
                source_id: f.source_id.to_owned(),
                anchor: f.anchor.to_owned(),
                record: f.record.to_owned(),
            })
            .collect();
        out.insert(rel, frames);
    }
    Ok(out)
}

fn plan_session(
    store: &dyn SessionStore,
    archives: &BTreeMap<String, Vec<ArchivedFrame>>,
    id: &str,
    plan: &mut ForgetPlan,
) -> Result<(), ForgetError> {
    let session = SessionId(id.to_owned());
    let archive = scriptorium_writer::writer::archive_path(&session);
    let stored = store.session(&session).map_err(|e| store_failed(&e))?;
    if stored.is_none() && !archives.contains_key(&archive) {
        return Err(ForgetError::NotFound(format!(
            "no session {id} in the session store or the archive (see `scriptorium sessions list`)"
        )));
    }
    if stored.is_some() {
        let nodes = store.nodes(&session).map_err(|e| store_failed(&e))?;
        plan.nodes.entry(id.to_owned()).or_default().extend(nodes.into_iter().map(|n| n.id.0));
        plan.titles.push(id.to_owned());
    }
    plan.sessions.push(id.to_owned());
    if let Some(frames) = archives.get(&archive) {
        plan.records.extend(frames.iter().map(|f| f.source_id.clone()));
    }
    Ok(())
}

fn plan_record(
    store: &dyn SessionStore,
    archives: &BTreeMap<String, Vec<ArchivedFrame>>,
    record: &str,
    plan: &mut ForgetPlan,
) -> Result<(), ForgetError> {
    let record = record.trim();
    // A link target (`../../sources/…/s.md#source-…`), an anchor (`source-…`) or a source ID.
    let anchor = record.rsplit_once('#').map_or(record, |(_, anchor)| anchor);
    let found = archives
        .values()
        .flatten()
        .find(|f| f.source_id == record || (anchor.starts_with("source-") && f.anchor == anchor));
    let Some(frame) = found else {
        return Err(ForgetError::NotFound(format!(
            "no archived record {record} (give its source ID, its anchor `source-…`, or a \
             citation's link)"
        )));
    };
    plan.records.insert(frame.source_id.clone());
    // A session turn's record: its node loses its content too.
    if let Some((session, node)) = session_node(store, &frame.source_id)? {
        plan.nodes.entry(session).or_default().push(node);
    }
    Ok(())
}

/// The (session, node) a writer's source ID names, when the store holds it.
fn session_node(
    store: &dyn SessionStore,
    source_id: &str,
) -> Result<Option<(String, String)>, ForgetError> {
    let Some((provider, thread, message)) =
        scriptorium_topics_format::source::id::split_id(source_id)
    else {
        return Ok(None);
    };
    if provider != scriptorium_writer::writer::PROVIDER {
        return Ok(None);
    }
    let decode =
        |part: &str| percent_encoding::percent_decode_str(part).decode_utf8_lossy().into_owned();
    let session = SessionId(decode(thread));
    let node = NodeId(decode(message));
    // The part encoding can shorten long IDs: check the round trip.
    if scriptorium_writer::writer::source_id(&session, &node) != source_id {
        return Ok(None);
    }
    Ok(store.node(&session, &node).map_err(|e| store_failed(&e))?.map(|_| (session.0, node.0)))
}

fn plan_matching(
    store: &dyn SessionStore,
    archives: &BTreeMap<String, Vec<ArchivedFrame>>,
    text: &str,
    plan: &mut ForgetPlan,
) -> Result<(), ForgetError> {
    if text.trim().chars().count() < MIN_MATCHING_CHARS {
        return Err(ForgetError::Invalid(format!(
            "a text to match needs at least {MIN_MATCHING_CHARS} characters (a shorter one \
             would forget most of the memory)"
        )));
    }
    if plan.matching.is_some() {
        return Err(ForgetError::Invalid("give one text to match per forget".into()));
    }
    plan.matching = Some(text.to_owned());
    plan.matching_sha256 = Some(hex_sha256(text));
    for frame in archives.values().flatten() {
        if frame.record.contains(text) {
            plan.records.insert(frame.source_id.clone());
        }
    }
    // One listing (paging by offset could skip a session a hook moves up meanwhile).
    let sessions = store
        .list_sessions(scriptorium_session_dag::Page { offset: 0, limit: usize::MAX })
        .map_err(|e| store_failed(&e))?;
    {
        for session in sessions {
            if session.title.as_deref().is_some_and(|t| t.contains(text)) {
                plan.titles.push(session.id.0.clone());
            }
            let nodes = store.nodes(&session.id).map_err(|e| store_failed(&e))?;
            let matching: Vec<String> =
                nodes.into_iter().filter(|n| n.content.contains(text)).map(|n| n.id.0).collect();
            if !matching.is_empty() {
                plan.nodes.entry(session.id.0.clone()).or_default().extend(matching);
            }
        }
    }
    Ok(())
}

/// Every commit from the oldest first-parent commit that changed a file the forget changes (an
/// estimate for `--matching`, whose text may also sit in files no longer in the tree).
fn commits_to_rewrite(memory: &MemoryWorkspace, plan: &ForgetPlan) -> usize {
    let Some(history) = memory.history() else { return 0 };
    let Ok(all) = history.log(None, usize::MAX) else { return 0 };
    if plan.matching.is_some() {
        return all.len();
    }
    let mut oldest: Option<usize> = None;
    for file in &plan.files {
        if let Ok(entries) = history.log(Some(file), usize::MAX)
            && let Some(last) = entries.last()
            && let Some(position) = all.iter().position(|e| e.commit == last.commit)
        {
            oldest = Some(oldest.map_or(position, |o| o.max(position)));
        }
    }
    oldest.map_or(0, |o| o + 1)
}

/// The intent of a forget under way (`.scriptorium/forget.json`, 0600): the plan and how far
/// it got. Written before the first step, removed after the last.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Intent {
    version: u32,
    plan: ForgetPlan,
    /// When the forget began (RFC 3339): the ledger entry's `at`.
    at: String,
    /// Steps done (see the module docs): 0 before the first.
    done: u32,
    /// Every git ref and its commit before the rewrite (to redo it the same way).
    #[serde(default)]
    old_refs: BTreeMap<String, String>,
    /// The rewrite's old → new commit map, once it ran.
    #[serde(default)]
    rewrite: Option<Vec<(String, String)>>,
    /// Known rewrites of other clones (a forget taken from the ledger on sync).
    #[serde(default)]
    known: BTreeMap<String, String>,
    /// The ledger entry as another clone wrote it (a forget taken from the ledger): copied
    /// verbatim instead of a new one.
    #[serde(default)]
    entry: Option<LedgerEntry>,
    /// The install's revision and commit, once it ran.
    #[serde(default)]
    installed: Option<(String, Option<String>)>,
    /// A redact's plan: the purge is a redact, and `plan` is empty but for its id.
    #[serde(default)]
    redact: Option<RedactPlan>,
}

fn intent_path(root: &Path) -> PathBuf {
    root.join(".scriptorium").join(INTENT)
}

fn save_intent(root: &Path, intent: &Intent) -> Result<(), ForgetError> {
    let bytes = serde_json::to_vec(intent).map_err(|e| failed(Code::Internal, e))?;
    let dir = root.join(".scriptorium");
    write_atomic(
        &RealFs,
        &dir.join("tmp-forget.json"),
        &intent_path(root),
        &bytes,
        0o600,
        Durability::Durable,
    )
    .map_err(|e| failed(Code::Io, e))
}

fn read_intent(root: &Path) -> Result<Option<Intent>, ForgetError> {
    match std::fs::read(intent_path(root)) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            failed(Code::CorruptState, format!("the forget intent does not parse: {e}"))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(failed(Code::Io, e)),
    }
}

/// Carries out `plan` (see the module docs). `remote`: the sync remote, whose branch gets the
/// rewritten history with a lease.
pub fn execute(
    memory: &MemoryWorkspace,
    store: &dyn SessionStore,
    plan: ForgetPlan,
    remote: Option<&str>,
) -> Result<ForgetReport, ForgetError> {
    let root = memory.workspace().root().to_path_buf();
    let _owner = own(&root)?.ok_or_else(another_under_way)?;
    if read_intent(&root)?.is_some() {
        // One a crash interrupted (a live one holds the lock): finished first, and this plan,
        // made before it, is planned again by the caller.
        resume_owned(memory, Some(store), &root, remote)?;
        return Err(ForgetError::Failed(WireError::new(
            Code::Busy,
            "a forget a crash had interrupted was finished first: plan this one again",
        )));
    }
    let intent = Intent {
        version: 1,
        plan,
        at: rfc3339_now(),
        done: 0,
        old_refs: BTreeMap::new(),
        rewrite: None,
        known: BTreeMap::new(),
        entry: None,
        installed: None,
        redact: None,
    };
    save_intent(&root, &intent)?;
    run(memory, Some(store), intent, remote)
}

/// Carries out a redact (see [`crate::redact`]) as a purge of this module: the same lock,
/// intent, steps and resume.
pub(crate) fn execute_redact(
    memory: &MemoryWorkspace,
    store: Option<&dyn SessionStore>,
    plan: RedactPlan,
    remote: Option<&str>,
) -> Result<ForgetReport, ForgetError> {
    let root = memory.workspace().root().to_path_buf();
    let _owner = own(&root)?.ok_or_else(another_under_way)?;
    if read_intent(&root)?.is_some() {
        resume_owned(memory, store, &root, remote)?;
        return Err(ForgetError::Failed(WireError::new(
            Code::Busy,
            "a forget a crash had interrupted was finished first: plan this one again",
        )));
    }
    let intent = Intent {
        version: 1,
        plan: ForgetPlan { id: plan.id.clone(), ..ForgetPlan::default() },
        at: rfc3339_now(),
        done: 0,
        old_refs: BTreeMap::new(),
        rewrite: None,
        known: BTreeMap::new(),
        entry: None,
        installed: None,
        redact: Some(plan),
    };
    save_intent(&root, &intent)?;
    run(memory, store, intent, remote)
}

/// Finishes a forget a crash interrupted, if there is one (every command that opens the home
/// calls it). A forget another process is carrying out right now is left to it (`Ok(None)`).
pub fn resume(
    memory: &MemoryWorkspace,
    store: &dyn SessionStore,
    remote: Option<&str>,
) -> Result<Option<ForgetReport>, ForgetError> {
    let root = memory.workspace().root().to_path_buf();
    if !intent_path(&root).exists() {
        return Ok(None);
    }
    let Some(_owner) = own(&root)? else { return Ok(None) };
    resume_owned(memory, Some(store), &root, remote)
}

fn resume_owned(
    memory: &MemoryWorkspace,
    store: Option<&dyn SessionStore>,
    root: &Path,
    remote: Option<&str>,
) -> Result<Option<ForgetReport>, ForgetError> {
    match read_intent(root)? {
        Some(intent) => run(memory, store, intent, remote).map(Some),
        None => Ok(None),
    }
}

/// The lock a process holds while it carries out a forget (`.scriptorium/forget.lock`, a
/// `flock`): `None` when another process holds it. The intent alone cannot tell a crashed
/// forget from a running one; the lock, released by the kernel when its holder dies, can.
fn own(root: &Path) -> Result<Option<std::fs::File>, ForgetError> {
    let file = scriptorium_workspace_fs::open_lock_file(&root.join(".scriptorium").join(LOCK))
        .map_err(|e| failed(Code::Io, e))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(failed(Code::Io, e)),
    }
}

fn another_under_way() -> ForgetError {
    ForgetError::Failed(WireError::new(
        Code::Busy,
        "another forget is under way in this memory; try again when it has finished",
    ))
}

/// Applies a forget another clone made, from its ledger `entry` (a sync found it in the
/// remote's tree): the same steps, by the entry's IDs, with git history mapped through the
/// entry's old → new commit map (the new commits came with the fetch) and only this clone's
/// own commits rewritten on top; the ledger gets the entry as it is. The remote is left to the
/// sync. Without a session store (a library caller), the store is not touched (the importers
/// still skip what the ledger names).
pub fn apply_entry(
    memory: &MemoryWorkspace,
    store: Option<&dyn SessionStore>,
    entry: LedgerEntry,
) -> Result<(), ForgetError> {
    let root = memory.workspace().root().to_path_buf();
    let _owner = own(&root)?.ok_or_else(another_under_way)?;
    if read_intent(&root)?.is_some() {
        resume_owned(memory, store, &root, None)?;
    }
    if read_ledger(&root).iter().any(|e| e.id == entry.id) {
        return Ok(());
    }
    let redact = entry.redact.then(|| RedactPlan { id: entry.id.clone(), ..RedactPlan::default() });
    let mut plan = ForgetPlan {
        id: entry.id.clone(),
        sessions: entry.sessions.clone(),
        nodes: entry.nodes.clone(),
        titles: entry.titles.clone(),
        records: entry.records.iter().cloned().collect(),
        blocks: entry.blocks.iter().cloned().collect(),
        matching_sha256: entry.matching_sha256.clone(),
        ..ForgetPlan::default()
    };
    // This clone's own blocks that cite only what went.
    let files = read_topics(&root).map_err(|e| failed(Code::Io, e))?;
    let tree = forget_in_tree(&files, &plan.forgetting()?);
    plan.blocks.extend(tree.removed_blocks.iter().cloned());
    plan.uncited.extend(tree.kept_blocks_uncited.iter().cloned());
    let intent = Intent {
        version: 1,
        at: entry.at.clone(),
        known: entry.rewrite.iter().cloned().collect(),
        entry: Some(entry),
        plan,
        done: 0,
        old_refs: BTreeMap::new(),
        rewrite: None,
        installed: None,
        redact,
    };
    save_intent(&root, &intent)?;
    run(memory, store, intent, None).map(drop)
}

/// The history scrub of ledger entries this clone made but a remote does not know: what a
/// fetched commit of the remote holds that those forgets removed (see
/// `MemoryWorkspace::sync`).
pub fn scrub_for(
    memory: &MemoryWorkspace,
    entries: &[LedgerEntry],
) -> Result<Box<dyn Scrub>, ForgetError> {
    let mut plan = ForgetPlan::default();
    for entry in entries {
        plan.records.extend(entry.records.iter().cloned());
        plan.blocks.extend(entry.blocks.iter().cloned());
    }
    let forget = HistoryScrub::new(&plan)?;
    Ok(if entries.iter().any(|e| e.redact) {
        Box::new(Both(forget, RedactScrub { redactor: memory.redactor().clone() }))
    } else {
        Box::new(forget)
    })
}

/// Two scrubs, one after the other.
struct Both<A, B>(A, B);

impl<A: Scrub, B: Scrub> Scrub for Both<A, B> {
    fn blob(&self, path: &str, bytes: &[u8]) -> Scrubbed {
        match self.0.blob(path, bytes) {
            Scrubbed::Remove => Scrubbed::Remove,
            Scrubbed::Keep => self.1.blob(path, bytes),
            Scrubbed::Replace(first) => match self.1.blob(path, &first) {
                Scrubbed::Keep => Scrubbed::Replace(first),
                other => other,
            },
        }
    }

    fn message(&self, message: &str) -> Option<String> {
        let first = self.0.message(message);
        let second = self.1.message(first.as_deref().unwrap_or(message));
        second.or(first)
    }
}

/// The history scrub of the purge `intent` carries out.
fn scrub_of(memory: &MemoryWorkspace, intent: &Intent) -> Result<Box<dyn Scrub>, ForgetError> {
    Ok(match intent.redact {
        Some(_) => Box::new(RedactScrub { redactor: memory.redactor().clone() }),
        None => Box::new(HistoryScrub::new(&intent.plan)?),
    })
}

/// Whether a forget is under way in the workspace at `root` (its intent exists).
pub fn under_way(root: &Path) -> bool {
    intent_path(root).exists()
}

fn run(
    memory: &MemoryWorkspace,
    store: Option<&dyn SessionStore>,
    mut intent: Intent,
    remote: Option<&str>,
) -> Result<ForgetReport, ForgetError> {
    let root = memory.workspace().root().to_path_buf();
    let ws = memory.workspace();
    let history = memory.history_or_why().map_err(|e| failed(Code::GitUnavailable, e))?;
    let step = |intent: &mut Intent, n: u32| -> Result<(), ForgetError> {
        intent.done = n;
        save_intent(&root, intent)
    };
    // 1. The session store (a sync without one leaves it to the importers' ledger check).
    if intent.done < 1
        && let Some(store) = store
        && intent.redact.is_some()
    {
        redact_store(store, memory.redactor())?;
    } else if intent.done < 1
        && let Some(store) = store
    {
        for (session, nodes) in &intent.plan.nodes {
            let ids: Vec<NodeId> = nodes.iter().cloned().map(NodeId).collect();
            let title = intent.plan.titles.contains(session);
            store.forget(&SessionId(session.clone()), &ids, title).map_err(|e| store_failed(&e))?;
        }
        for session in intent.plan.titles.iter().filter(|s| !intent.plan.nodes.contains_key(*s)) {
            store.forget(&SessionId(session.clone()), &[], true).map_err(|e| store_failed(&e))?;
        }
    }
    if intent.done < 1 {
        step(&mut intent, 1)?;
    }
    // 2. The archive.
    if intent.done < 2 {
        if intent.redact.is_some() {
            redact_archives(ws, memory.redactor())?;
        } else {
            ws.tombstone_sources(&intent.plan.records, LockTimeout::DEFAULT)
                .map_err(|e| txn_failed(&e))?;
        }
        step(&mut intent, 2)?;
    }
    // 3. Git history, under the write lock (every commit is made under it).
    if intent.done < 3 {
        let scrub = scrub_of(memory, &intent)?;
        let rewritten = ws
            .with_write_lock(LockTimeout::DEFAULT, || -> Result<_, ForgetError> {
                if intent.old_refs.is_empty() {
                    intent.old_refs = history.refs().map_err(|e| git_failed(&e))?;
                    save_intent(&root, &intent)?;
                } else {
                    // A rewrite a crash interrupted: start again from the same refs (the old
                    // objects are still there: the prune comes last), so the map is complete.
                    history.set_refs(&intent.old_refs).map_err(|e| git_failed(&e))?;
                }
                history.rewrite(&*scrub, &intent.known).map_err(|e| git_failed(&e))
            })
            .map_err(|e| txn_failed(&e))??;
        intent.rewrite = Some(rewritten.map);
        step(&mut intent, 3)?;
    }
    // 4. Topics and the ledger, as one install and one commit.
    if intent.done < 4 {
        let installed = install_forget(memory, &intent)?;
        intent.installed = Some(installed);
        step(&mut intent, 4)?;
    }
    // 5. Commits made since the rewrite still held the content (another process's install
    // before this forget's, or the catch-up of a history a crash left behind, commits the live
    // topics): the same rewrite again takes them too (a no-op for what it already rewrote).
    // Then the search index from scratch, and the internal files that may quote the content.
    if intent.done < 5 {
        let scrub = scrub_of(memory, &intent)?;
        let known = replaced_map(&intent);
        ws.with_write_lock(LockTimeout::DEFAULT, || history.rewrite(&*scrub, &known))
            .map_err(|e| txn_failed(&e))?
            .map_err(|e| git_failed(&e))?;
        memory.rebuild_index().map_err(|e| failed(Code::IndexError, e))?;
        ws.discard_caches(LockTimeout::DEFAULT).map_err(|e| txn_failed(&e))?;
        if intent.redact.is_some() {
            redact_internal_files(&root, memory.redactor());
        } else {
            scrub_internal_files(&root, &intent.plan);
        }
        step(&mut intent, 5)?;
    }
    // 6. The old objects, at the remote and here.
    let remote_state = match remote {
        None => "none".to_owned(),
        Some(remote) => replace_remote(memory, history, &root, remote, &intent)?,
    };
    let objects_left = ws
        .with_write_lock(LockTimeout::DEFAULT, || history.prune())
        .map_err(|e| txn_failed(&e))?
        .map_err(|e| git_failed(&e))?;
    let (revision, commit) = intent.installed.clone().unwrap_or_default();
    let report = ForgetReport {
        commits_rewritten: intent.rewrite.as_ref().map_or(0, Vec::len),
        plan: ForgetPlan { matching: None, ..intent.plan.clone() },
        objects_left,
        revision,
        commit,
        remote: remote_state,
    };
    std::fs::remove_file(intent_path(&root)).map_err(|e| failed(Code::Io, e))?;
    Ok(report)
}

/// Step 4: the topics without what the forget removes, and the ledger entry, installed as one
/// transaction; returns its revision and commit.
fn install_forget(
    memory: &MemoryWorkspace,
    intent: &Intent,
) -> Result<(String, Option<String>), ForgetError> {
    let root = memory.workspace().root();
    let plan = &intent.plan;
    let entry = intent.entry.clone().unwrap_or_else(|| LedgerEntry {
        version: 1,
        id: plan.id.clone(),
        at: intent.at.clone(),
        sessions: plan.sessions.clone(),
        nodes: plan.nodes.clone(),
        titles: plan.titles.clone(),
        records: plan.records.iter().cloned().collect(),
        blocks: plan.blocks.iter().cloned().collect(),
        matching_sha256: plan.matching_sha256.clone(),
        rewrite: intent.rewrite.clone().unwrap_or_default(),
        redact: intent.redact.is_some(),
    });
    append_ledger(root, &entry)?;
    let message = match &intent.redact {
        Some(redact) => format!(
            "memory: redact {}\n\n{} messages={} records={} topics={}",
            plan.id,
            crate::redact::TRAILER,
            redact.messages,
            redact.records,
            redact.topics.len()
        ),
        None => format!(
            "memory: forget {}\n\n{TRAILER} sessions={} nodes={} records={} blocks={}",
            plan.id,
            plan.sessions.len(),
            plan.node_count(),
            plan.records.len(),
            plan.blocks.len()
        ),
    };
    let mut staged = memory
        .workspace()
        .begin(BeginOptions {
            required: Required::AllExcept(plan.blocks.iter().cloned().collect()),
            forget: true,
            message,
            lock_timeout: LockTimeout::DEFAULT,
            ..BeginOptions::default()
        })
        .map_err(|e| txn_failed(&e))?;
    let files: Vec<TopicFile> = staged.baseline_files().cloned().collect();
    let changed: Vec<(String, String)> = if intent.redact.is_some() {
        redact_topics(&files, memory.redactor())
    } else {
        let tree = forget_in_tree(&files, &plan.forgetting()?);
        tree.changed.into_iter().map(|file| (file.path, file.text)).collect()
    };
    for (path, text) in &changed {
        staged.write_file(&format!("topics/{path}"), text).map_err(|e| txn_failed(&e))?;
    }
    let installed = staged
        .validate()
        .map_err(|rejected| {
            failed(
                Code::CorruptState,
                format!(
                    "the topics without the forgotten blocks do not validate: {}",
                    rejected
                        .violations()
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            )
        })?
        .install()
        .map_err(|e| txn_failed(&e))?;
    let after = crate::memory::after(&installed);
    Ok((installed.revision.as_str().to_owned(), after.git_commit))
}

/// Appends `entry` to the ledger unless an entry with its id is there already (a resumed
/// forget), atomically.
fn append_ledger(root: &Path, entry: &LedgerEntry) -> Result<(), ForgetError> {
    let path = root.join(LEDGER);
    let mut text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(failed(Code::Io, e)),
    };
    if read_ledger_text(&text).iter().any(|e| e.id == entry.id) {
        return Ok(());
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&serde_json::to_string(entry).map_err(|e| failed(Code::Internal, e))?);
    text.push('\n');
    let temp = root.join(".scriptorium").join("tmp-forgotten.jsonl");
    write_atomic(&RealFs, &temp, &path, text.as_bytes(), 0o600, Durability::Durable)
        .map_err(|e| failed(Code::Io, e))
}

fn read_ledger_text(text: &str) -> Vec<LedgerEntry> {
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// The ledger of the workspace at `root` (empty when there is none).
pub fn read_ledger(root: &Path) -> Vec<LedgerEntry> {
    std::fs::read_to_string(root.join(LEDGER)).map(|t| read_ledger_text(&t)).unwrap_or_default()
}

/// What the importers skip: the nodes the ledger says were forgotten, and whole sessions.
#[derive(Clone, Debug, Default)]
pub struct Forgotten {
    /// Sessions forgotten whole.
    pub sessions: HashSet<String>,
    /// (session, node) pairs.
    pub nodes: HashSet<(String, String)>,
}

impl Forgotten {
    /// From the ledger of the workspace at `root`.
    pub fn of(root: &Path) -> Forgotten {
        let mut out = Forgotten::default();
        for entry in read_ledger(root) {
            out.sessions.extend(entry.sessions);
            for (session, nodes) in entry.nodes {
                out.nodes.extend(nodes.into_iter().map(|n| (session.clone(), n)));
            }
        }
        out
    }

    /// Whether node `node` of `session` was forgotten.
    pub fn contains(&self, session: &str, node: &str) -> bool {
        self.sessions.contains(session)
            || self.nodes.contains(&(session.to_owned(), node.to_owned()))
    }
}

/// What the history rewrite does to every blob and message (see [`Scrub`]): the same forget,
/// by path (`forget_in_view`: topics, tombstones in archives, the derived views, and the
/// `[FORGOTTEN]` safety net anywhere).
struct HistoryScrub {
    forgetting: Forgetting,
    blocks: HashSet<String>,
}

impl HistoryScrub {
    fn new(plan: &ForgetPlan) -> Result<HistoryScrub, ForgetError> {
        Ok(HistoryScrub {
            forgetting: plan.forgetting()?,
            blocks: plan.blocks.iter().cloned().collect(),
        })
    }
}

impl Scrub for HistoryScrub {
    fn blob(&self, path: &str, bytes: &[u8]) -> Scrubbed {
        let Ok(text) = std::str::from_utf8(bytes) else { return Scrubbed::Keep };
        match forget_in_view(path, text, &self.forgetting, &self.blocks) {
            Some(new) if new.as_bytes() != bytes => Scrubbed::Replace(new.into_bytes()),
            _ => Scrubbed::Keep,
        }
    }

    fn message(&self, message: &str) -> Option<String> {
        let text = self.forgetting.literal()?;
        let redacted = scriptorium_topics_format::forget::redact(message, text);
        (redacted != message).then(|| redacted.into_owned())
    }
}

/// Step 5: the internal files that may quote forgotten content: the writer's run log (a line
/// naming a forgotten record, or holding the text, goes), a kept sync conflict (dropped when it
/// names a removed block or holds the text), drafts holding the text, and the Python
/// implementation's search cache (derived; removed). Best effort: each is a cache or a log.
fn scrub_internal_files(root: &Path, plan: &ForgetPlan) {
    let mentions = |line: &str| {
        plan.records.iter().any(|r| line.contains(r.as_str()))
            || plan.blocks.iter().any(|b| line.contains(&format!("^{b}")))
            || plan.matching.as_deref().is_some_and(|t| line.contains(t))
    };
    let runtime = root.join(".scriptorium");
    let history = runtime.join("agent-history.jsonl");
    if let Ok(text) = std::fs::read_to_string(&history) {
        let kept: String = text.split_inclusive('\n').filter(|line| !mentions(line)).collect();
        if kept != text {
            let temp = runtime.join("tmp-agent-history.jsonl");
            let _ =
                write_atomic(&RealFs, &temp, &history, kept.as_bytes(), 0o600, Durability::Durable);
        }
    }
    let state = runtime.join("sync/state.json");
    if std::fs::read_to_string(&state).is_ok_and(|text| mentions(&text)) {
        let _ = std::fs::remove_file(&state);
    }
    let _ = std::fs::remove_file(root.join(".scriptorium-bm25.json"));
    if let Some(drafts) = root.parent().map(|home| home.join("drafts"))
        && let Ok(entries) = std::fs::read_dir(&drafts)
    {
        for entry in entries.flatten() {
            let path = entry.path();
            if std::fs::read_to_string(&path).is_ok_and(|text| mentions(&text)) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// Step 6 at the remote: pushes the rewritten branch, replacing the remote's with a lease on
/// the commit it holds (fetched now), when that commit is one this rewrite replaced (or the
/// remote is empty): no clone's push that this clone has not seen is overwritten. A remote that
/// is a local path is pruned too. `pending` when the remote cannot be reached, or holds commits
/// this clone has not seen: the next sync rewrites those, merges and replaces the branch.
fn replace_remote(
    memory: &MemoryWorkspace,
    history: &History,
    root: &Path,
    remote: &str,
    intent: &Intent,
) -> Result<String, ForgetError> {
    let branch = history.branch().map_err(|e| git_failed(&e))?;
    let Some(head) = history.head_commit().map_err(|e| git_failed(&e))? else {
        return Ok("none".to_owned());
    };
    let replaced: HashSet<&str> = intent
        .rewrite
        .iter()
        .flatten()
        .map(|(old, _)| old.as_str())
        .chain(intent.known.keys().map(String::as_str))
        .collect();
    let tip = match history.fetch(remote, &branch) {
        Ok(tip) => tip,
        Err(error) => {
            tracing::warn!(%error, "the sync remote cannot be reached: the next sync replaces it");
            return Ok("pending".to_owned());
        }
    };
    let pushed = match tip.as_deref() {
        None => history.push(remote, &head, &branch),
        Some(tip) if tip == head => Ok(scriptorium_history::Pushed::UpToDate),
        Some(tip) if replaced.contains(tip) => history.push_replacing(remote, &head, &branch, tip),
        Some(_) => return Ok("pending".to_owned()),
    };
    match pushed {
        Ok(scriptorium_history::Pushed::Updated | scriptorium_history::Pushed::UpToDate) => {
            // The fetch above kept the remote's old tip here: the history must not keep it.
            let scrub = scrub_of(memory, intent)?;
            memory
                .workspace()
                .with_write_lock(LockTimeout::DEFAULT, || {
                    history.rewrite(&*scrub, &replaced_map(intent))
                })
                .map_err(|e| txn_failed(&e))?
                .map_err(|e| git_failed(&e))?;
            if let Some(dir) = crate::sync::local_remote_dir(root, remote) {
                scriptorium_history::prune_repository(&dir).map_err(|e| git_failed(&e))?;
            }
            Ok("replaced".to_owned())
        }
        Ok(scriptorium_history::Pushed::Rejected { .. }) | Err(_) => Ok("pending".to_owned()),
    }
}

/// The whole old → new map of a forget: this clone's rewrite and the other clone's it took.
fn replaced_map(intent: &Intent) -> BTreeMap<String, String> {
    intent
        .known
        .iter()
        .map(|(a, b)| (a.clone(), b.clone()))
        .chain(intent.rewrite.iter().flatten().cloned())
        .collect()
}

fn rfc3339_now() -> String {
    crate::memory::wall_clock()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
