//! Redacting a home written before its doors redacted (`scriptorium redact`): every stored text
//! the redaction rules now match (see `scriptorium_redact`) is rewritten in place, in the session
//! store, the archive, the topics, the derived views, the internal files and every commit of git
//! history, and the sync remote gets the rewritten history (see `docs/format.md#redaction-markers`).
//!
//! A redact is a purge like a forget and runs the forget's machinery ([`crate::forget`]): the
//! same intent, steps, resume after a crash, history rewrite, ledger entry, prune and lease push.
//! What differs is what each step does to a text: a forget erases what it selected by identity,
//! a redact passes every text through the redactor, and only what the rules match changes.
//!
//! Key decisions:
//! - Structure is never touched: an archive's frames keep their place, anchor and source ID
//!   (their record lines are re-counted), a topic's blocks keep their IDs and citations, JSON
//!   views stay JSON, and a `<private>` left open ends where the text it opened in ends (a
//!   block, a record, a line), never at the end of a file.
//! - The plan ([`plan`]) is the dry run: counts by place and by rule, never a value.
//! - Other clones redact too: the ledger entry says a redact happened (and how git history was
//!   rewritten); each clone redacts with its own rules on its next sync.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use scriptorium_history::{Scrub, Scrubbed};
use scriptorium_redact::{Counts, Redactor};
use scriptorium_session_dag::{Page, SessionStore};
use scriptorium_topics_format::rewrite::{rewrite_archive, rewrite_in_view, rewrite_topic};
use scriptorium_topics_format::topic::TopicFile;
use scriptorium_workspace_fs::read::read_topics;
use scriptorium_workspace_fs::{Durability, RealFs, write_atomic};
use serde::{Deserialize, Serialize};

use crate::forget::{ForgetError, ForgetReport, failed, git_failed, store_failed};
use crate::memory::MemoryWorkspace;
use crate::wire::Code;

/// The trailer of a redact's commit (`Redact: messages=3 records=3 topics=1`).
pub const TRAILER: &str = "Redact:";

/// What a redact changes, found before anything is touched (the dry run); counts only.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RedactPlan {
    /// `r-` and 16 hex digits.
    pub id: String,
    /// Sessions of the store with a message or title to redact.
    pub sessions: usize,
    /// Messages (session nodes) whose text changes.
    pub messages: usize,
    /// Session titles that change.
    pub titles: usize,
    /// Archived records whose text changes.
    pub records: usize,
    /// Topic files whose blocks change (workspace-relative).
    pub topics: Vec<String>,
    /// Archive files that change (workspace-relative).
    pub archives: Vec<String>,
    /// Commits git rewrites.
    pub commits: usize,
    /// Distinct git blobs that change.
    pub blobs: usize,
    /// Redactions by rule in the store, the archive and the topics (a value that recurs is
    /// counted where it recurs).
    pub by_rule: BTreeMap<String, usize>,
}

impl RedactPlan {
    /// Whether nothing matches anywhere (not even in git history).
    pub fn is_empty(&self) -> bool {
        self.messages == 0
            && self.titles == 0
            && self.records == 0
            && self.topics.is_empty()
            && self.archives.is_empty()
            && self.commits == 0
            && self.blobs == 0
    }

    /// Every redaction counted, summed.
    pub fn total(&self) -> usize {
        self.by_rule.values().sum()
    }
}

/// What a redact did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RedactReport {
    /// The plan carried out.
    pub plan: RedactPlan,
    /// Commits rewritten.
    pub commits_rewritten: usize,
    /// Git objects left after the prune.
    pub objects_left: usize,
    /// The revision of the redact's install.
    pub revision: String,
    /// Its commit.
    pub commit: Option<String>,
    /// What happened at the sync remote (as a forget's: `none`, `replaced`, `pending`).
    pub remote: String,
}

/// A text mapper over `redactor` that adds what it redacts to `counts`: `None` keeps the text.
pub(crate) fn counting<'a>(
    redactor: &'a Redactor,
    counts: &'a RefCell<Counts>,
) -> impl Fn(&str) -> Option<String> + 'a {
    move |text| {
        let redaction = redactor.redact(text);
        if redaction.counts.is_empty() {
            return None;
        }
        counts.borrow_mut().add(&redaction.counts);
        Some(redaction.text.into_owned())
    }
}

/// Plans a redact of the workspace and `store` with the workspace's redactor (read-only:
/// nothing is written, not even a git object).
pub fn plan(
    memory: &MemoryWorkspace,
    store: Option<&dyn SessionStore>,
) -> Result<RedactPlan, ForgetError> {
    let redactor = memory.redactor();
    let root = memory.workspace().root().to_path_buf();
    let counts = RefCell::new(Counts::default());
    let map = counting(redactor, &counts);
    let mut plan = RedactPlan::default();
    if let Some(store) = store {
        for session in all_sessions(store)? {
            let before = (plan.messages, plan.titles);
            if session.title.as_deref().is_some_and(|title| map(title).is_some()) {
                plan.titles += 1;
            }
            let nodes = store.nodes(&session.id).map_err(|e| store_failed(&e))?;
            plan.messages += nodes.iter().filter(|node| map(&node.content).is_some()).count();
            if (plan.messages, plan.titles) != before {
                plan.sessions += 1;
            }
        }
    }
    for (rel_path, text) in read_archive_files(&root)? {
        let records = RefCell::new(0usize);
        let per_record = |text: &str| {
            let out = map(text);
            if out.is_some() {
                *records.borrow_mut() += 1;
            }
            out
        };
        if rewrite_archive(&rel_path, &text, &per_record)
            .map_err(|e| failed(Code::CorruptState, e))?
            .is_some()
        {
            plan.archives.push(rel_path);
            plan.records += records.into_inner();
        }
    }
    for file in read_topics(&root).map_err(|e| failed(Code::Io, e))? {
        if rewrite_topic(&file.text, &map).is_some() {
            plan.topics.push(format!("topics/{}", file.path));
        }
    }
    drop(map);
    plan.by_rule = counts.into_inner().0;
    if let Ok(history) = memory.history_or_why() {
        let scrub = RedactScrub { redactor: redactor.clone() };
        let dry = history.rewrite_dry_run(&scrub).map_err(|e| git_failed(&e))?;
        plan.commits = dry.map.len();
        plan.blobs = dry.blobs;
    }
    plan.id = format!(
        "r-{}",
        &crate::forget::hex_sha256(&format!(
            "{}\0{}\0{:?}",
            crate::memory::wall_clock().unix_timestamp_nanos(),
            plan.messages,
            plan.by_rule
        ))[..16]
    );
    Ok(plan)
}

/// Carries out `plan` (see the module docs); `Ok(None)` when the plan is empty (nothing is
/// written, no ledger entry, no commit).
pub fn execute(
    memory: &MemoryWorkspace,
    store: Option<&dyn SessionStore>,
    plan: RedactPlan,
    remote: Option<&str>,
) -> Result<Option<RedactReport>, ForgetError> {
    if plan.is_empty() {
        return Ok(None);
    }
    let report = crate::forget::execute_redact(memory, store, plan.clone(), remote)?;
    Ok(Some(report_of(plan, report)))
}

pub(crate) fn report_of(plan: RedactPlan, report: ForgetReport) -> RedactReport {
    RedactReport {
        plan,
        commits_rewritten: report.commits_rewritten,
        objects_left: report.objects_left,
        revision: report.revision,
        commit: report.commit,
        remote: report.remote,
    }
}

/// Step 1: every session's messages and title through the redactor.
pub(crate) fn redact_store(
    store: &dyn SessionStore,
    redactor: &Redactor,
) -> Result<Counts, ForgetError> {
    let counts = RefCell::new(Counts::default());
    let map = counting(redactor, &counts);
    for session in all_sessions(store)? {
        store.rewrite_texts(&session.id, &mut |text| map(text)).map_err(|e| store_failed(&e))?;
    }
    drop(map);
    Ok(counts.into_inner())
}

/// Step 2: every archived record's text through the redactor, frames kept.
pub(crate) fn redact_archives(
    ws: &scriptorium_txn::Workspace,
    redactor: &Redactor,
) -> Result<(), ForgetError> {
    let counts = RefCell::new(Counts::default());
    let map = counting(redactor, &counts);
    ws.rewrite_archives(
        &|rel_path, text| rewrite_archive(rel_path, text, &map).map_err(|e| e.to_string()),
        scriptorium_txn::LockTimeout::DEFAULT,
    )
    .map_err(|e| crate::forget::txn_failed(&e))?;
    Ok(())
}

/// Step 4: the topic files whose blocks the redactor changes, as they become.
pub(crate) fn redact_topics(files: &[TopicFile], redactor: &Redactor) -> Vec<(String, String)> {
    let counts = RefCell::new(Counts::default());
    let map = counting(redactor, &counts);
    files
        .iter()
        .filter_map(|file| rewrite_topic(&file.text, &map).map(|text| (file.path.clone(), text)))
        .collect()
}

/// The history scrub of a redact: every blob through [`rewrite_in_view`] (structure kept, by
/// path), every commit message through the redactor.
pub(crate) struct RedactScrub {
    pub(crate) redactor: Redactor,
}

impl Scrub for RedactScrub {
    fn blob(&self, path: &str, bytes: &[u8]) -> Scrubbed {
        let Ok(text) = std::str::from_utf8(bytes) else { return Scrubbed::Keep };
        let counts = RefCell::new(Counts::default());
        let map = counting(&self.redactor, &counts);
        match rewrite_in_view(path, text, &map) {
            Some(new) if new.as_bytes() != bytes => Scrubbed::Replace(new.into_bytes()),
            _ => Scrubbed::Keep,
        }
    }

    fn message(&self, message: &str) -> Option<String> {
        let redaction = self.redactor.redact(message);
        (!redaction.counts.is_empty()).then(|| redaction.text.into_owned())
    }
}

/// Step 5: the files outside the store, the archive and the topics that may quote a text: the
/// internal files of the workspace (the writer's run log, a kept sync conflict, the forget
/// intent's neighbours) and the home's logs and drafts, each line (or JSON string) through the
/// redactor. The search index is rebuilt from scratch and the caches discarded by the caller;
/// configuration files (`*.toml`) are the owner's and are left alone. Best effort: each of
/// these is a log or a cache.
pub(crate) fn redact_internal_files(root: &Path, redactor: &Redactor) {
    // The Python implementation's BM25 cache holds block text and is rebuilt on demand: it
    // goes, as a forget removes it.
    let _ = std::fs::remove_file(root.join(".scriptorium-bm25.json"));
    let counts = RefCell::new(Counts::default());
    let map = counting(redactor, &counts);
    let mut dirs = vec![root.join(".scriptorium")];
    if let Some(home) = root.parent() {
        dirs.push(home.join("logs"));
        dirs.push(home.join("drafts"));
    }
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            if kind.is_dir() {
                // The search index is rebuilt whole; a staging area holds no text under the lock.
                if name != "index" {
                    dirs.push(path);
                }
                continue;
            }
            if !kind.is_file() || name.ends_with(".toml") || name.ends_with(".lock") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
            if let Some(new) = rewrite_in_view(&rel, &text, &map) {
                let temp = path.with_file_name(format!(".tmp-redact-{name}"));
                let mode = entry.metadata().map_or(0o600, |m| {
                    std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777
                });
                if let Err(error) =
                    write_atomic(&RealFs, &temp, &path, new.as_bytes(), mode, Durability::Durable)
                {
                    tracing::warn!(%error, file = %rel, "a file could not be redacted");
                }
            }
        }
    }
}

fn all_sessions(
    store: &dyn SessionStore,
) -> Result<Vec<scriptorium_session_dag::Session>, ForgetError> {
    store.list_sessions(Page { offset: 0, limit: usize::MAX }).map_err(|e| store_failed(&e))
}

/// Every file under `sources/` (workspace-relative, `/`-separated) that is UTF-8 text.
fn read_archive_files(root: &Path) -> Result<Vec<(String, String)>, ForgetError> {
    let mut out = Vec::new();
    let mut dirs = vec![root.join("sources")];
    while let Some(dir) = dirs.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(failed(Code::Io, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| failed(Code::Io, e))?;
            let kind = entry.file_type().map_err(|e| failed(Code::Io, e))?;
            if kind.is_dir() {
                dirs.push(entry.path());
            } else if kind.is_file()
                && let Ok(text) = std::fs::read_to_string(entry.path())
                && let Ok(rel) = entry.path().strip_prefix(root)
            {
                let rel: Vec<_> =
                    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect();
                out.push((rel.join("/"), text));
            }
        }
    }
    out.sort();
    Ok(out)
}
