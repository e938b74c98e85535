//! The changes the faces make, each one transaction owned here: a topic file edited or deleted
//! ([`MemoryWorkspace::begin_edit`] → [`TopicEdit`]), a change request
//! ([`MemoryWorkspace::update`]), and the rebuild of every derived file
//! ([`MemoryWorkspace::rebuild`]). The CLI, the web API and the MCP server call these; none of
//! them runs its own begin → validate → install.

use std::path::PathBuf;
use std::time::Duration;

use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_txn::validate::{Required, Violation};
use scriptorium_txn::{
    BeginOptions, Error, Installed, LockTimeout, Revision, Staged, UpdateContext, UpdateOutcome,
    UpdateRequest,
};
use scriptorium_views::{RebuildOptions, promote_legacy_core, rebuild_workspace};
use scriptorium_workspace_fs::read::{FsSources, read_in, read_topics};
use scriptorium_workspace_fs::{Fs as _, RealFs};

use crate::memory::MemoryWorkspace;
use crate::summary::{ChangeResult, change_result};

/// How a [`TopicEdit`] starts.
#[derive(Clone, Debug)]
pub struct EditOptions {
    /// Compare-and-set: the revision the editor read (`None`: whatever is installed).
    pub base_revision: Option<Revision>,
    /// How long to wait for the write lock.
    pub lock_wait: Duration,
    /// Whether every block ID of the file must survive (an edit); `false` lets the file's own
    /// blocks go (a delete; blocks other files link to still refuse it).
    pub keep_blocks: bool,
    /// The commit message.
    pub message: String,
}

/// One topic file being edited: its text read from the stage, replaced or removed, then
/// installed as one validated transaction (views, index and git follow).
pub struct TopicEdit {
    staged: Staged,
    path: String,
}

/// Why a [`TopicEdit`] did not install.
#[derive(Debug, thiserror::Error)]
pub enum EditFailure {
    /// Validation refused the text; nothing changed.
    #[error("the edit does not validate ({} violation(s))", .0.len())]
    Rejected(Vec<Violation>),
    /// The engine refused (a stale base revision, a held lock, IO).
    #[error(transparent)]
    Txn(#[from] Error),
}

impl EditFailure {
    /// The failure on the wire (a rejection carries every violation).
    pub fn wire(&self) -> crate::wire::WireError {
        match self {
            EditFailure::Rejected(violations) => {
                crate::wire::WireError::from_txn(&Error::Rejected {
                    violations: violations.clone(),
                })
            }
            EditFailure::Txn(error) => crate::wire::WireError::from_txn(error),
        }
    }
}

impl TopicEdit {
    /// The transaction's ID (drafts are kept under it).
    pub fn txn_id(&self) -> &str {
        self.staged.txn_id().as_str()
    }

    /// The file's text as staged (the installed text until [`TopicEdit::set`]).
    pub fn current(&self) -> Result<Option<String>, Error> {
        self.staged.read_file(&self.path)
    }

    /// The staged file on disk, created empty if missing, for an editor to change in place.
    pub fn file_on_disk(&mut self) -> Result<PathBuf, Error> {
        if self.current()?.is_none() {
            self.staged.write_file(&self.path, "")?;
        }
        let rel = self.path.strip_prefix("topics/").unwrap_or(&self.path);
        Ok(self.staged.path().join(rel))
    }

    /// Replaces the file's text (`None`: removes the file).
    pub fn set(&mut self, text: Option<&str>) -> Result<(), Error> {
        match text {
            Some(text) => self.staged.write_file(&self.path, text),
            None => self.staged.remove_file(&self.path),
        }
    }

    /// Validates and installs. A text that normalizes to the installed one installs nothing
    /// (`Installed::noop`).
    pub fn install(self) -> Result<Installed, EditFailure> {
        let validated = self
            .staged
            .validate()
            .map_err(|rejected| EditFailure::Rejected(rejected.violations().to_vec()))?;
        Ok(validated.install()?)
    }
}

/// What [`MemoryWorkspace::rebuild`] did.
#[derive(Clone, Debug)]
pub struct Rebuilt {
    /// A legacy root `core.md` was promoted to `topics/core.md` first (one transaction).
    pub promoted_legacy_core: bool,
    /// Blocks the views were built from.
    pub blocks: usize,
    /// Topic diagnostics (the views use what parsed).
    pub diagnostics: usize,
    /// View files written.
    pub changed_files: Vec<String>,
    /// View files removed.
    pub removed_files: Vec<String>,
    /// The rendered core's tokens and budget.
    pub core_tokens: usize,
    /// The core budget.
    pub core_budget: usize,
    /// Documents in the rebuilt search index.
    pub indexed_documents: u64,
}

impl MemoryWorkspace {
    /// Starts an edit of the topic file `path` (workspace-relative, `topics/…`, already checked
    /// with `writable_path`).
    pub fn begin_edit(&self, path: &str, options: EditOptions) -> Result<TopicEdit, Error> {
        let begin = BeginOptions {
            base_revision: options.base_revision,
            lock_timeout: LockTimeout::new(options.lock_wait),
            required: if options.keep_blocks { Required::All } else { Required::StillPresent },
            message: options.message,
            ..BeginOptions::default()
        };
        Ok(TopicEdit { staged: self.workspace().begin(begin)?, path: path.to_owned() })
    }

    /// Applies a change request (whole files, a patch or record operations) as one
    /// compare-and-set transaction.
    pub fn update(
        &self,
        request: UpdateRequest,
        context: UpdateContext,
    ) -> Result<UpdateOutcome, Error> {
        self.workspace().update_with(request, context)
    }

    /// Rebuilds every derived view and the search index from the canonical files. A legacy
    /// root `core.md` without a master is first promoted to `topics/core.md` through a
    /// transaction (when the tree with it parses; see `docs/format.md#core-view`). The views
    /// are rebuilt under the write lock (an install between reading the tree and writing its
    /// views would otherwise be overwritten), each file atomically; canonical files are never
    /// written otherwise.
    pub fn rebuild(&self) -> Result<Rebuilt, RebuildError> {
        let promoted_legacy_core = self.promote_legacy_core()?;
        let workspace = self.workspace();
        let report = workspace.with_write_lock(LockTimeout::DEFAULT, || {
            let options = RebuildOptions {
                creation_order: workspace.creation_order()?.to_map(),
                ..RebuildOptions::default()
            };
            Ok::<_, RebuildError>(rebuild_workspace(workspace.root(), &options)?)
        })??;
        let indexed_documents = self.rebuild_index()?;
        Ok(Rebuilt {
            promoted_legacy_core,
            blocks: report.units,
            diagnostics: report.diagnostics.len(),
            changed_files: report.written.changed_files,
            removed_files: report.written.removed_files,
            core_tokens: report.core.tokens,
            core_budget: report.core.budget,
            indexed_documents,
        })
    }

    /// Promotes a legacy root `core.md` into the master through a transaction; returns whether
    /// it did.
    fn promote_legacy_core(&self) -> Result<bool, RebuildError> {
        let root = self.workspace().root();
        // Never through a symlink: a link named `core.md` is not a legacy core.
        let legacy = read_in(&RealFs, root, "core.md").ok().and_then(|b| String::from_utf8(b).ok());
        let Some(legacy) = legacy else { return Ok(false) };
        if RealFs.metadata(&root.join("topics/core.md")).is_ok() {
            return Ok(false);
        }
        let topics = read_topics(root).map_err(scriptorium_views::Error::from)?;
        let resolver = ArchiveResolver::new(FsSources::new(root));
        let Some(master) = promote_legacy_core(&legacy, &topics, &resolver) else {
            return Ok(false);
        };
        let options = EditOptions {
            base_revision: None,
            lock_wait: LockTimeout::DEFAULT.timeout,
            keep_blocks: true,
            message: "memory: promote legacy core.md to topics/core.md".into(),
        };
        let mut edit = self.begin_edit("topics/core.md", options)?;
        edit.set(Some(&master))?;
        match edit.install() {
            Ok(_) => Ok(true),
            Err(EditFailure::Rejected(violations)) => Err(RebuildError::Promote(violations)),
            Err(EditFailure::Txn(error)) => Err(error.into()),
        }
    }
}

/// Why [`MemoryWorkspace::rebuild`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    /// The legacy root `core.md` does not validate as the master.
    #[error("the legacy core.md could not be promoted:\n{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Promote(Vec<Violation>),
    /// The engine refused.
    #[error(transparent)]
    Txn(#[from] Error),
    /// The views could not be read or written.
    #[error(transparent)]
    Views(#[from] scriptorium_views::Error),
    /// The search index could not be rebuilt.
    #[error(transparent)]
    Index(#[from] crate::memory::SearchError),
}

impl RebuildError {
    /// The failure on the wire, when the engine's (a refused promotion carries every
    /// violation); `None` for view and index failures, which the caller maps itself.
    pub fn wire(&self) -> Option<crate::wire::WireError> {
        match self {
            RebuildError::Txn(error)
            | RebuildError::Index(crate::memory::SearchError::Txn(error)) => {
                Some(crate::wire::WireError::from_txn(error))
            }
            RebuildError::Promote(violations) => {
                Some(crate::wire::WireError::from_txn(&Error::Rejected {
                    violations: violations.clone(),
                }))
            }
            _ => None,
        }
    }
}

/// An owner's note: one fact added by hand ([`MemoryWorkspace::note`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Note {
    /// What to remember, in the owner's words (one paragraph: line breaks become spaces in the
    /// block; the archived record keeps them).
    pub text: String,
    /// Pin it to the core (`topics/core.md`, injected into every conversation).
    pub core: bool,
    /// The topic file to add it to (`people/dana`, `people/dana.md` or `topics/people/dana.md`;
    /// default `topics/notes.md`). Ignored with `core`.
    pub topic: Option<String>,
    /// When the fact holds (`YYYY`, `YYYY-MM`, `YYYY-MM-DD` or `undated`; default the day of
    /// `now`).
    pub time: Option<String>,
}

/// Where a note goes by default.
pub const NOTES_TOPIC: &str = "topics/notes.md";

impl Note {
    /// The workspace-relative topic file the note goes to.
    pub fn topic_path(&self) -> String {
        if self.core {
            return "topics/core.md".to_owned();
        }
        let Some(topic) = self.topic.as_deref().map(str::trim).filter(|t| !t.is_empty()) else {
            return NOTES_TOPIC.to_owned();
        };
        let topic = topic.trim_start_matches("./").trim_start_matches('/');
        let topic = topic.strip_prefix("topics/").unwrap_or(topic);
        if topic.ends_with(".md") {
            format!("topics/{topic}")
        } else {
            format!("topics/{topic}.md")
        }
    }
}

impl MemoryWorkspace {
    /// Adds `note` in one transaction: the note archived as an owner-authored source record (the
    /// text verbatim, observed at `now`, archived with the authority, origin and surface of
    /// `context`, such as `UpdateContext::owner(Surface::Cli, "owner-cli/note")`, under the
    /// surface's provider), and a block citing it at the end of the topic
    /// ([`Note::topic_path`], under its first heading, or under a new one). The change request
    /// is the change API's (`create_record` citing one declared source), so a bad time, an empty
    /// text or a path outside `topics/` is refused with its stable code and changes nothing; the
    /// base is the installed revision (`CONCURRENT_UPDATE` if another change lands first).
    ///
    /// Idempotent: when the topic already ends a paragraph with this very text and a
    /// citation (the same note, added again after an interrupted run, say), nothing is
    /// archived or installed and [`NoteOutcome::AlreadyNoted`] names that block.
    pub fn note(
        &self,
        note: &Note,
        context: UpdateContext,
        now: time::OffsetDateTime,
    ) -> Result<NoteOutcome, Error> {
        let path = note.topic_path();
        let paragraph = note.text.split_whitespace().collect::<Vec<_>>().join(" ");
        let existing = read_in(&RealFs, self.workspace().root(), &path)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .unwrap_or_default();
        if let Some(block_id) = noted_block(&existing, &paragraph) {
            let revision = self.workspace().installed_revision()?.as_str().to_owned();
            return Ok(NoteOutcome::AlreadyNoted { topic_path: path, block_id, revision });
        }
        let observed = now
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned());
        let time = match note.time.as_deref().map(str::trim) {
            Some("undated") => serde_json::Value::Null,
            Some(time) => time.into(),
            None => observed[..10].into(),
        };
        let heading = existing
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|| default_heading(&path));
        let base = self.workspace().installed_revision()?;
        let body = serde_json::json!({
            "base_revision": base.as_str(),
            "commit_message": format!("memory: owner note in {path}"),
            "sources": [{
                "label": "new-source-note",
                "role": "user",
                "content": note.text,
                "observed_at": observed,
            }],
            "memory_changes": [{
                "op": "create_record",
                "content": paragraph,
                "time": time,
                "sources": [{"source": "new-source-note", "label": "owner note"}],
                "destination": {"topic_path": path, "headings": [heading], "position": "end"},
            }],
        });
        let request = UpdateRequest::from_json(&body.to_string())?;
        Ok(NoteOutcome::Noted(Box::new(self.update(request, context)?)))
    }
}

/// What [`MemoryWorkspace::note`] did.
#[derive(Debug)]
pub enum NoteOutcome {
    /// Archived and installed.
    Noted(Box<UpdateOutcome>),
    /// The topic already holds the note: nothing changed.
    AlreadyNoted {
        /// The topic file.
        topic_path: String,
        /// The block that holds it.
        block_id: String,
        /// The installed revision (unchanged).
        revision: String,
    },
}

impl NoteOutcome {
    /// The answer of every face: the change's [`ChangeResult`]; for a note the topic already
    /// holds, `noop` and `already_noted` with the block (keyed `<topic>#0`), nothing changed.
    pub fn result(&self) -> ChangeResult {
        match self {
            NoteOutcome::Noted(outcome) => change_result(outcome),
            NoteOutcome::AlreadyNoted { topic_path, block_id, revision } => ChangeResult {
                ok: true,
                noop: true,
                revision: revision.clone(),
                source_ids: Default::default(),
                block_ids: [(format!("{topic_path}#0"), block_id.clone())].into(),
                evidence_ids: Default::default(),
                changed_files: Vec::new(),
                adopted: Vec::new(),
                memory_committed: false,
                git_committed: false,
                git_commit: None,
                already_noted: Some(true),
                topic_path: Some(topic_path.clone()),
            },
        }
    }
}

/// The block ID of the line of `text` that is `paragraph` followed by its citations and a
/// block ID (`paragraph[^e-…] ^id`), if there is one.
fn noted_block(text: &str, paragraph: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(paragraph)?.strip_prefix("[^")?;
        let (_, id) = rest.rsplit_once(" ^")?;
        (!id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
            .then(|| id.to_owned())
    })
}

/// The heading of a new topic file: `Core`, `Notes`, or its name (`people/dana.md` → `Dana`).
fn default_heading(path: &str) -> String {
    if path == "topics/core.md" {
        return "Core".to_owned();
    }
    let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md");
    let words: Vec<String> = stem
        .split(['-', '_', ' '])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
        })
        .collect();
    if words.is_empty() { "Notes".to_owned() } else { words.join(" ") }
}
