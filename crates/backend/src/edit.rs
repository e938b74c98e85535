//! The changes the faces make, each one transaction owned here: a topic file edited or deleted
//! ([`MemoryWorkspace::begin_edit`] → [`TopicEdit`]), a change request
//! ([`MemoryWorkspace::update`]), and the rebuild of every derived file
//! ([`MemoryWorkspace::rebuild`]). The CLI, the web API and the MCP server call these; none of
//! them runs its own begin → validate → install.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::topic::{TopicFile, Unit, line_end_ids, normalize};
use scriptorium_txn::validate::{Baseline, Required, Violation};
use scriptorium_txn::{
    BeginOptions, Error, ErrorCode, Installed, LockTimeout, Revision, Staged, UpdateContext,
    UpdateOutcome, UpdateRequest,
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
    /// With `keep_blocks`, the block IDs this edit deletes on purpose (the user was shown
    /// [`EditFailure::Rejected`]'s `deleted` and confirmed): their paragraphs go in the same
    /// transaction, every other committed block ID must still survive, and a block another
    /// file links to still refuses the edit.
    pub delete_blocks: BTreeSet<String>,
    /// The commit message.
    pub message: String,
}

/// One topic file being edited: its text read from the stage, replaced or removed, then
/// installed as one validated transaction (views, index and git follow).
pub struct TopicEdit {
    staged: Staged,
    path: String,
    /// The memory root (the archive a rejected text is normalized against, to place its
    /// violations).
    root: PathBuf,
    /// The workspace's redactor.
    redactor: scriptorium_redact::Redactor,
}

/// Why a [`TopicEdit`] did not install.
#[derive(Debug, thiserror::Error)]
pub enum EditFailure {
    /// Validation refused the text; nothing changed. Every violation of the edited file is at
    /// its line in the text the user submitted (the engine validates the normalized text, whose
    /// lines move when normalization drops empty sections). `deleted` lists the paragraphs the
    /// text deletes that [`EditOptions::delete_blocks`] did not declare; each is also one
    /// `BLOCK_ID_REMOVED` violation naming it, at line 0 (it is not in the text).
    #[error("the edit does not validate ({} violation(s))", violations.len())]
    Rejected {
        /// Every violation.
        violations: Vec<Violation>,
        /// The paragraphs the text deletes without declaring it.
        deleted: Vec<DeletedParagraph>,
    },
    /// The engine refused (a stale base revision, a held lock, IO).
    #[error(transparent)]
    Txn(#[from] Error),
}

/// A paragraph of the installed file that an edit's text leaves out.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeletedParagraph {
    /// Its block IDs (more than one when it has aliases).
    pub block_ids: Vec<String>,
    /// Its first words as installed (citations left out), `…` when cut.
    pub excerpt: String,
}

/// What deleting `deleted` means, in one line: `this edit deletes 2 paragraphs: ^a “Dana
/// moved…”, ^b “…”`.
pub fn deletion_summary(deleted: &[DeletedParagraph]) -> String {
    let listed: Vec<String> = deleted
        .iter()
        .map(|p| {
            let ids: Vec<String> = p.block_ids.iter().map(|id| format!("^{id}")).collect();
            format!("{} “{}”", ids.join(" "), p.excerpt)
        })
        .collect();
    let n = deleted.len();
    let what = if n == 1 { "1 paragraph".to_owned() } else { format!("{n} paragraphs") };
    format!("this edit deletes {what}: {}", listed.join(", "))
}

impl EditFailure {
    /// Whether deleting paragraphs is all that is wrong: the same text, with every ID of
    /// `deleted` in [`EditOptions::delete_blocks`], installs (barring a concurrent change).
    pub fn only_deletes(&self) -> bool {
        match self {
            EditFailure::Rejected { violations, deleted } => {
                !deleted.is_empty()
                    && violations.iter().all(|v| v.code == ErrorCode::BlockIdRemoved)
                    && violations.len() == deleted.len()
            }
            EditFailure::Txn(_) => false,
        }
    }

    /// The failure on the wire (a rejection carries every violation). A text that deletes
    /// paragraphs says which in its message (when that is all that is wrong) and in `details`:
    /// `delete_blocks` (every ID, what a confirmed edit declares) and `paragraphs` (each one's
    /// `block_ids` and `excerpt`).
    pub fn wire(&self) -> crate::wire::WireError {
        match self {
            EditFailure::Rejected { violations, deleted } => {
                let mut wire = crate::wire::WireError::from_txn(&Error::Rejected {
                    violations: violations.clone(),
                });
                if !deleted.is_empty() {
                    if self.only_deletes() {
                        wire.message = deletion_summary(deleted);
                    }
                    let ids: Vec<&String> = deleted.iter().flat_map(|p| &p.block_ids).collect();
                    wire.details.insert("delete_blocks".into(), serde_json::json!(ids));
                    wire.details.insert("paragraphs".into(), serde_json::json!(deleted));
                }
                wire
            }
            EditFailure::Txn(error) => crate::wire::WireError::from_txn(error),
        }
    }
}

/// A rejection as the user can act on it (see [`EditFailure::Rejected`]): the edited file's
/// `BLOCK_ID_REMOVED` violations become one per deleted paragraph, named by its first words, and
/// its other violations move from the normalized text's lines to the submitted text's. The
/// normalized text is made again here (normalization is pure; the IDs it mints may differ from
/// the engine's, its lines do not).
fn rejection(
    baseline: &Baseline,
    root: &Path,
    path: &str,
    submitted: Option<&str>,
    violations: Vec<Violation>,
) -> EditFailure {
    let (Some(rel), Some(text)) = (path.strip_prefix("topics/"), submitted) else {
        return EditFailure::Rejected { violations, deleted: Vec::new() };
    };
    let committed: HashSet<String> = baseline.block_ids().iter().cloned().collect();
    let units: Vec<Unit> = baseline.units().cloned().collect();
    let resolver = ArchiveResolver::new(FsSources::new(root));
    let normalized = normalize(&[TopicFile::new(rel, text)], &committed, &units, &resolver);
    let after = normalized.files.iter().find(|f| f.path == rel).map(|f| f.text.as_str());
    let present: HashSet<String> =
        after.map(line_end_ids).unwrap_or_default().into_iter().collect();
    let in_file = |v: &Violation| v.path.as_deref() == Some(path);
    let removed = |v: &Violation| v.code == ErrorCode::BlockIdRemoved && in_file(v);
    // The engine reports a lost ID where its paragraph was installed: find the IDs by that.
    let lines: BTreeSet<u32> = violations.iter().filter(|v| removed(v)).map(|v| v.line).collect();
    let gone: Vec<&Unit> = baseline
        .file(rel)
        .map(|state| state.units.iter().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|u| !present.contains(&u.memory_id))
        .filter(|u| {
            baseline.home(&u.memory_id).is_some_and(|(p, line)| p == rel && lines.contains(&line))
        })
        .collect();
    // One entry per paragraph (its aliases share its identity), in file order.
    let mut deleted: Vec<(u32, &str, DeletedParagraph)> = Vec::new();
    for unit in &gone {
        match deleted.iter_mut().find(|(_, identity, _)| *identity == unit.identity) {
            Some((_, _, paragraph)) => paragraph.block_ids.push(unit.memory_id.clone()),
            None => deleted.push((
                unit.line,
                &unit.identity,
                DeletedParagraph {
                    block_ids: vec![unit.memory_id.clone()],
                    excerpt: first_words(&unit.content),
                },
            )),
        }
    }
    deleted.sort_by_key(|(line, _, _)| *line);
    let deleted: Vec<DeletedParagraph> = deleted.into_iter().map(|(_, _, p)| p).collect();
    let homes: BTreeSet<u32> =
        gone.iter().filter_map(|u| baseline.home(&u.memory_id).map(|(_, line)| line)).collect();
    let map = after.map(|after| line_map(after, text));
    let dropped: BTreeSet<u32> =
        normalized.dropped.iter().filter(|d| d.path == rel).map(|d| d.line).collect();
    let mut out = Vec::with_capacity(violations.len());
    let mut said = false;
    for mut violation in violations {
        if removed(&violation) && homes.contains(&violation.line) {
            if !said {
                said = true;
                out.extend(deleted.iter().map(|p| {
                    let one = deletion_summary(std::slice::from_ref(p));
                    Violation::at(ErrorCode::BlockIdRemoved, path, 0, 0, one)
                }));
            }
            continue;
        }
        if removed(&violation) {
            // A lost ID this text does not place: its installed line is not in the text.
            violation.line = 0;
            violation.col = 0;
        } else if in_file(&violation) && violation.line > 0 {
            // `UNCITED_PARAGRAPH` of text pruning would drop is at its line before pruning,
            // which normalization keeps; every other line is the pruned text's.
            let before_pruning =
                violation.code == ErrorCode::UncitedParagraph && dropped.contains(&violation.line);
            if let (Some(map), false) = (&map, before_pruning) {
                violation.line = map_line(map, violation.line, text);
            }
        }
        out.push(violation);
    }
    EditFailure::Rejected { violations: out, deleted }
}

/// The first words of a paragraph: at most 60 characters, cut at a word, `…` when cut.
fn first_words(content: &str) -> String {
    let flat = content.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= 60 {
        return flat;
    }
    let cut: String = flat.chars().take(60).collect();
    let cut = match cut.rfind(' ') {
        Some(at) if at > 20 => &cut[..at],
        _ => cut.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', '.']))
}

/// For each line of `normalized` (index 0 is line 1), the 1-based line of `submitted` it came
/// from: equal lines map to each other, a run normalization rewrote (IDs appended, labels
/// renamed) maps line for line onto the run it replaced, and lines only the submitted text
/// has (what pruning dropped) are skipped.
fn line_map(normalized: &str, submitted: &str) -> Vec<u32> {
    use similar::DiffOp;
    let diff = similar::TextDiff::from_lines(normalized, submitted);
    let mut map = vec![0; diff.old_slices().len()];
    let line = |index: usize| u32::try_from(index + 1).unwrap_or(u32::MAX);
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { old_index, new_index, len } => {
                for i in 0..len {
                    map[old_index + i] = line(new_index + i);
                }
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                for i in 0..old_len {
                    map[old_index + i] = line(new_index + i.min(new_len.saturating_sub(1)));
                }
            }
            DiffOp::Delete { old_index, old_len, new_index } => {
                for i in 0..old_len {
                    map[old_index + i] = line(new_index);
                }
            }
            DiffOp::Insert { .. } => {}
        }
    }
    map
}

/// `line` of the normalized text as a line of `submitted` (through [`line_map`]), kept within
/// the submitted text.
fn map_line(map: &[u32], line: u32, submitted: &str) -> u32 {
    let last = u32::try_from(submitted.lines().count().max(1)).unwrap_or(u32::MAX);
    let index = usize::try_from(line).unwrap_or(usize::MAX).saturating_sub(1);
    map.get(index).copied().unwrap_or(line).clamp(1, last)
}

impl TopicEdit {
    /// The transaction's ID (drafts are kept under it).
    pub fn txn_id(&self) -> &str {
        self.staged.txn_id().as_str()
    }

    /// The revision the edit began from (a confirmed retry of the same text starts from it, so
    /// a change made in between refuses it).
    pub fn base_revision(&self) -> &Revision {
        self.staged.base_revision()
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
        Ok(self.staged.path()?.join(rel))
    }

    /// Replaces the file's text (`None`: removes the file).
    pub fn set(&mut self, text: Option<&str>) -> Result<(), Error> {
        match text {
            Some(text) => self.staged.write_file(&self.path, text),
            None => self.staged.remove_file(&self.path),
        }
    }

    /// Redacts the staged text with the workspace's redactor (secrets become
    /// `[REDACTED:<rule>]`, `<private>` spans go), whatever wrote it (`set`, or an editor on
    /// [`TopicEdit::file_on_disk`]), and returns what it redacted. [`TopicEdit::install`]
    /// calls it too; a face calls it first to say what it redacted.
    pub fn redact(&mut self) -> Result<scriptorium_redact::Counts, Error> {
        let Some(text) = self.current()? else { return Ok(Default::default()) };
        let redaction = self.redactor.redact(&text);
        if redaction.counts.is_empty() {
            return Ok(redaction.counts);
        }
        self.staged.write_file(&self.path, &redaction.text)?;
        crate::privacy::record(&self.root, &redaction.counts);
        Ok(redaction.counts)
    }

    /// Validates and installs (after [`TopicEdit::redact`]). A text that normalizes to the
    /// installed one installs nothing (`Installed::noop`). A refused text is
    /// [`EditFailure::Rejected`], placed in the text as submitted, with the paragraphs it
    /// deletes undeclared.
    pub fn install(mut self) -> Result<Installed, EditFailure> {
        self.redact()?;
        let submitted = self.current()?;
        let TopicEdit { staged, path, root, .. } = self;
        match staged.validate() {
            Ok(validated) => Ok(validated.install()?),
            Err(rejected) => {
                let (staged, violations) = rejected.into_parts();
                Err(rejection(staged.baseline(), &root, &path, submitted.as_deref(), violations))
            }
        }
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
            required: match (options.keep_blocks, options.delete_blocks.is_empty()) {
                (false, _) => Required::StillPresent,
                (true, true) => Required::All,
                (true, false) => Required::AllExcept(options.delete_blocks),
            },
            message: options.message,
            ..BeginOptions::default()
        };
        Ok(TopicEdit {
            staged: self.workspace().begin(begin)?,
            path: path.to_owned(),
            root: self.workspace().root().to_path_buf(),
            redactor: self.redactor().clone(),
        })
    }

    /// Applies a change request (whole files, a patch or record operations) as one
    /// compare-and-set transaction.
    ///
    /// Every text the request brings in (declared sources, record contents, written files, a
    /// patch's added lines) passes the workspace's redactor first
    /// ([`MemoryWorkspace::redactor`]): nothing it catches is archived, staged or installed.
    pub fn update(
        &self,
        mut request: UpdateRequest,
        context: UpdateContext,
    ) -> Result<Updated, Error> {
        let redactor = self.redactor();
        let mut redacted = scriptorium_redact::Counts::default();
        request.map_texts(&mut |text| {
            let redaction = redactor.redact(text);
            if redaction.counts.is_empty() {
                return None;
            }
            redacted.add(&redaction.counts);
            Some(redaction.text.into_owned())
        });
        let outcome = self.workspace().update_with(request, context)?;
        crate::privacy::record(self.workspace().root(), &redacted);
        Ok(Updated { outcome, redacted })
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
            delete_blocks: BTreeSet::new(),
            message: "memory: promote legacy core.md to topics/core.md".into(),
        };
        let mut edit = self.begin_edit("topics/core.md", options)?;
        edit.set(Some(&master))?;
        match edit.install() {
            Ok(_) => Ok(true),
            Err(EditFailure::Rejected { violations, .. }) => Err(RebuildError::Promote(violations)),
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
    /// The note as it is stored, or why it cannot be: terminal control sequences (ANSI escapes,
    /// BEL, backspace…) are removed from the text, since every terminal that later prints it
    /// would obey them; an empty text, a text that is no plain paragraph (a heading, a list, a
    /// footnote or a block ID of its own), a topic that is no path in `topics/`, and a time
    /// that is no date are refused with `INVALID_ARGUMENT`, in the words of a note, not of the
    /// change request it becomes.
    ///
    /// Then `redactor` redacts the text (secrets, `<private>` spans), and the counts come back
    /// with the note.
    pub fn checked(
        &self,
        redactor: &scriptorium_redact::Redactor,
    ) -> Result<(Note, scriptorium_redact::Counts), Error> {
        let invalid =
            |message: String| Error::Invalid { code: ErrorCode::InvalidArgument, message };
        let text = scriptorium_markers::clean::strip_controls(&self.text);
        let redaction = redactor.redact(&text);
        let counts = redaction.counts;
        let text = redaction.text.into_owned();
        let paragraph = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if paragraph.is_empty() {
            return Err(invalid("the note is empty".to_owned()));
        }
        let doc = scriptorium_topics_format::topic::Document::parse(&paragraph);
        let plain = doc.paragraphs().len() == 1
            && doc.paragraphs().first().is_some_and(|p| p.lines == (0..doc.lines().len()));
        if !plain || paragraph.contains("[^") || ends_with_block_id(&paragraph) {
            return Err(invalid(
                "a note is one paragraph of plain prose: it cannot be a heading, a list item or \
                 a quote, nor hold a footnote ([^…]) or end in a block ID (^…)"
                    .to_owned(),
            ));
        }
        if self.core && self.topic.as_deref().is_some_and(|t| !t.trim().is_empty()) {
            return Err(invalid("a note goes to the core or to a topic, not both".to_owned()));
        }
        let topic = match self.topic.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            Some(topic) if !self.core => {
                Some(checked_topic(topic).map_err(|(code, why)| Error::Invalid {
                    code,
                    message: format!("the topic {topic:?} {why}; name one like people/dana"),
                })?)
            }
            _ => None,
        };
        if let Some(time) = self.time.as_deref().map(str::trim)
            && time != "undated"
            && !is_date(time)
        {
            return Err(invalid(format!(
                "the time {time:?} is not YYYY, YYYY-MM, YYYY-MM-DD or undated"
            )));
        }
        Ok((Note { text, core: self.core, topic, time: self.time.clone() }, counts))
    }

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
        // Nothing takes a base revision from the caller, so no caller can re-read and retry:
        // the note does it itself. It is idempotent (a note the topic already holds is
        // `AlreadyNoted`, its archived source is appended once), and every lost round means
        // another transaction installed or another archive append landed after this round's
        // `begin` (`SOURCES_CHANGED`: a parallel note's source), so each round makes progress
        // for someone; the bound only ends a pathological storm.
        let (note, redacted) = note.checked(self.redactor())?;
        crate::privacy::record(self.workspace().root(), &redacted);
        let mut rounds = 0;
        loop {
            match self.note_once(&note, context.clone(), now) {
                Err(error)
                    if matches!(
                        error.code(),
                        ErrorCode::ConcurrentUpdate | ErrorCode::SourcesChanged
                    ) && rounds < NOTE_ROUNDS =>
                {
                    rounds += 1;
                }
                Ok(NoteOutcome::Noted(mut updated)) => {
                    updated.redacted.add(&redacted);
                    return Ok(NoteOutcome::Noted(updated));
                }
                other => return other,
            }
        }
    }

    /// One compare-and-set round of [`MemoryWorkspace::note`].
    fn note_once(
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
        // The live revision (outside edits included): the one the install compares against.
        let base = self.workspace().revision()?;
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

/// What [`MemoryWorkspace::update`] did: the engine's outcome and what the door redacted.
#[derive(Debug)]
pub struct Updated {
    /// The install.
    pub outcome: UpdateOutcome,
    /// What was redacted from the request's texts (rule → how many; never a value).
    pub redacted: scriptorium_redact::Counts,
}

impl std::ops::Deref for Updated {
    type Target = UpdateOutcome;

    fn deref(&self) -> &UpdateOutcome {
        &self.outcome
    }
}

impl Updated {
    /// The answer of every face ([`ChangeResult`] with `redactions`).
    pub fn result(&self) -> ChangeResult {
        let mut result = change_result(&self.outcome);
        result.redactions = self.redacted.0.clone();
        result
    }
}

/// How many times [`MemoryWorkspace::note`] starts over after another transaction installed
/// between its read and its install.
const NOTE_ROUNDS: u32 = 64;

/// What [`MemoryWorkspace::note`] did.
#[derive(Debug)]
pub enum NoteOutcome {
    /// Archived and installed.
    Noted(Box<Updated>),
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
            NoteOutcome::Noted(updated) => updated.result(),
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
                redactions: Default::default(),
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

/// `topic` (`people/dana`, `people/dana.md`, `topics/people/dana.md`) as a path inside
/// `topics/` without `.md`, or why it is none: every part a plain name (no empty, `.` or `..`
/// part, none starting with a dot, no control character), not absolute, `.md` at most once.
/// A path that would leave `topics/` is `PATH_OUTSIDE_WORKSPACE`, any other bad one
/// `INVALID_ARGUMENT`.
fn checked_topic(topic: &str) -> Result<String, (ErrorCode, &'static str)> {
    let inner = topic.strip_prefix("topics/").unwrap_or(topic);
    let inner = inner.strip_suffix(".md").unwrap_or(inner);
    if topic.starts_with('/') {
        return Err((ErrorCode::PathOutsideWorkspace, "is absolute"));
    }
    if inner.split('/').any(|part| part == "..") {
        return Err((ErrorCode::PathOutsideWorkspace, "leaves topics/ (a `..` part)"));
    }
    let invalid = |why| Err((ErrorCode::InvalidArgument, why));
    if inner.ends_with(".md") {
        return invalid("ends in .md twice");
    }
    if inner.chars().any(char::is_control) {
        return invalid("holds a control character");
    }
    if inner.split('/').any(|part| part.is_empty() || part.starts_with('.')) {
        return invalid("has an empty part, or one that starts with a dot");
    }
    Ok(inner.to_owned())
}

/// Whether `time` is `YYYY`, `YYYY-MM` or `YYYY-MM-DD` (a real month and day).
fn is_date(time: &str) -> bool {
    let parts: Vec<&str> = time.split('-').collect();
    let digits = |part: &str, n: usize| part.len() == n && part.bytes().all(|b| b.is_ascii_digit());
    let in_range = |part: &str, max: u32| part.parse::<u32>().is_ok_and(|v| (1..=max).contains(&v));
    match parts.as_slice() {
        [year] => digits(year, 4),
        [year, month] => digits(year, 4) && digits(month, 2) && in_range(month, 12),
        [year, month, day] => {
            digits(year, 4)
                && digits(month, 2)
                && digits(day, 2)
                && in_range(month, 12)
                && in_range(day, 31)
        }
        _ => false,
    }
}

/// Whether `text` ends in a block ID (` ^id`, or is only `^id`).
fn ends_with_block_id(text: &str) -> bool {
    let trimmed = text.trim_end();
    let base = trimmed.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '-');
    base.len() < trimmed.len()
        && base.strip_suffix('^').is_some_and(|rest| rest.is_empty() || rest.ends_with([' ', '\t']))
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
