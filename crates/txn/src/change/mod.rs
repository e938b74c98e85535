//! The unified change interface (see `ARCHITECTURE.md#cratestxn`): one [`Workspace::update`]
//! entry point that takes a base revision and exactly one change form, applies it to a stage
//! and installs it through the common normalize → validate → install pipeline.
//!
//! Key decision: every form is applied to the transaction's stage with [`crate::Staged::write_file`]
//! and [`crate::Staged::remove_file`], never to the live tree, so a rejected request (bad shape,
//! conflict, failed validation, stale base revision) leaves every byte of the workspace and
//! its revision unchanged.
//!
//! Supported forms: structured record operations `memory_changes` ([`records`]), whole-file
//! `changes` ([`files`]) and unified-diff `patch` ([`patch`]). The structured form begins with
//! `Required::AllExcept(<IDs named by delete operations>)`, so any other record lost by the
//! edit is refused; the whole-file forms begin with `Required::StillPresent`.
//!
//! New sources (`sources`, [`sources`] module) are archived with the provenance of the
//! [`UpdateContext`] as part of the install ([`BeginOptions::pending_sources`]): validation
//! resolves refs against the archive with their frames appended, and only an update that installs
//! archives them. Their `new-source-*` labels are substituted into the form;
//! [`UpdateContext::append_only`] refuses any rewrite of existing bytes.
//!
//! # Limitations
//!
//! - No git commit options yet: a JSON request with a `git_commit` field is refused as an
//!   unknown field.
//! - Declared sources are appended to the live `sources/` under the write lock right before the
//!   topics swap, not inside the stage, since only `topics/` is swapped. A refused update (shape,
//!   conflict, validation) writes nothing; a crash or IO failure between that append and the swap
//!   leaves the frames archived with the topics at the old revision. The archive is append-only and
//!   idempotent, so a retry with the same inputs mints the same IDs and appends nothing new.
//! - Labels are substituted into `changes` contents, the `patch` text and the `source` of
//!   `memory_changes` evidence, not into record content or link labels.
//! - `memory_changes`: legacy `mem_` units are updated and deleted in place, but cannot be
//!   moved or used as anchors (there their IDs are `MEMORY_NOT_FOUND`).
//! - Arguments are checked before the write lock is taken, so a request that is both
//!   malformed and stale reports the malformed argument.

pub mod files;
pub mod patch;
pub mod records;
pub mod sources;

use std::collections::{BTreeMap, BTreeSet};

use scriptorium_topics_format::source::SourceId;
use scriptorium_topics_format::source::id::ApiProvenance;
pub use scriptorium_topics_format::source::id::Surface;
use serde::Deserialize;

use crate::begin::BeginOptions;
use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::ids::Revision;
use crate::install::Installed;
use crate::stage::Staged;
use crate::validate::Required;
use crate::workspace::Workspace;

pub use files::{FileAction, FileChange};
pub use records::{Destination, MemoryChange, Position, SourceRef};
pub use sources::NewSource;

/// The size limits of one request (the Python implementation's defaults).
/// [`UpdateRequest::from_json_with`] applies them as it parses (the Python implementation's
/// configurable `max_patch_bytes`); the engine applies [`ChangeLimits::default`] again to whatever
/// reaches [`Workspace::update_with`], so a configured limit can lower the default values but
/// never raise them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangeLimits {
    /// Most items in `memory_changes` or `changes`.
    pub max_changes: usize,
    /// Most bytes of `memory_changes` strings, `changes` paths and contents, or a `patch`.
    pub max_change_bytes: usize,
    /// Most declared sources.
    pub max_sources: usize,
    /// Most bytes of declared source contents.
    pub max_source_bytes: usize,
}

impl Default for ChangeLimits {
    fn default() -> Self {
        ChangeLimits {
            max_changes: MAX_CHANGES,
            max_change_bytes: MAX_CHANGE_BYTES,
            max_sources: sources::MAX_SOURCES,
            max_source_bytes: sources::MAX_SOURCE_BYTES,
        }
    }
}

/// Most items in one `changes` request (the Python implementation's default).
pub const MAX_CHANGES: usize = 64;
/// Most bytes of one `patch`, or of one `changes` request's paths and contents together.
pub const MAX_CHANGE_BYTES: usize = 512_000;
/// Most characters of a commit message (longer ones are cut).
pub const MAX_MESSAGE_CHARS: usize = 500;
/// The commit message of a request that gives none (or only blanks).
pub const DEFAULT_MESSAGE: &str = "Update memory";

const EXACTLY_ONE: &str = "exactly one of patch, changes or memory_changes is required";

/// One update request: the revision the caller read, the change and an optional commit message.
///
/// Deserializes from the reference's JSON (`{"base_revision",
/// "memory_changes"|"changes"|"patch", "commit_message"?}`); unknown fields are refused. [`UpdateRequest::from_json`] maps every
/// shape error to `INVALID_ARGUMENT`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawRequest")]
pub struct UpdateRequest {
    /// Compare-and-set: the revision the change is based on (`CONCURRENT_UPDATE` otherwise).
    pub base_revision: Revision,
    /// What to change.
    pub form: ChangeForm,
    /// The commit message, normalized by [`normalize_message`].
    pub message: Option<String>,
    /// New sources, checked by [`sources::check`] (JSON `sources`, optional).
    pub sources: Vec<NewSource>,
}

/// What the caller knows about the writer, never taken from the request payload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateContext {
    /// The persisted authority new sources are archived with (see
    /// `docs/format.md#change-api-source-ids`); `None` refuses any declared source with
    /// `WRITER_PRECONDITION_FAILED`.
    pub provenance: Option<ApiProvenance>,
    /// The speaker's display name written on new source frames (not part of their identity).
    pub speaker_display: Option<String>,
    /// Paired writers: every changed file must keep its old bytes as a prefix
    /// (`APPEND_ONLY_REQUIRED` otherwise).
    pub append_only: bool,
    /// The surface the change comes through: new sources are archived under its provider
    /// (`sources/mcp/_v2/…`, see `docs/format.md#provenance`); `None` keeps the Python
    /// implementation's `claude-code`.
    pub surface: Option<Surface>,
}

impl UpdateContext {
    /// The workspace owner at a local `surface` (CLI, web UI, MCP): sources they declare are
    /// archived under the surface's provider with the local owner's authority and `origin_id`
    /// (e.g. `owner-cli/update`), never with identity fields from the payload; not append-only.
    pub fn owner(surface: Surface, origin_id: &str) -> UpdateContext {
        UpdateContext {
            provenance: Some(ApiProvenance {
                principal_id: "owner/local".into(),
                speaker_kind: "owner".into(),
                speaker_id: "owner/local".into(),
                authority_tier: "owner".into(),
                origin_id: origin_id.into(),
            }),
            speaker_display: Some("Owner".into()),
            append_only: false,
            surface: Some(surface),
        }
    }
}

/// The result of [`Workspace::update_with`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// The installed transaction.
    pub installed: Installed,
    /// Each declared label and the source ID it was archived under.
    pub source_ids: BTreeMap<String, String>,
}

/// The change of an [`UpdateRequest`]: exactly one form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeForm {
    /// Structured record operations ([`records`]).
    MemoryChanges(Vec<MemoryChange>),
    /// Whole-file writes and deletes ([`files`]).
    Changes(Vec<FileChange>),
    /// A unified diff ([`patch`]).
    Patch(String),
}

/// The JSON shape before the exactly-one check.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    base_revision: Option<String>,
    #[serde(default)]
    memory_changes: Option<serde_json::Value>,
    #[serde(default)]
    changes: Option<Vec<FileChange>>,
    #[serde(default)]
    patch: Option<String>,
    #[serde(default)]
    commit_message: Option<String>,
    #[serde(default)]
    sources: Option<Vec<NewSource>>,
}

impl TryFrom<RawRequest> for UpdateRequest {
    type Error = Error;

    fn try_from(raw: RawRequest) -> Result<UpdateRequest> {
        UpdateRequest::from_raw(raw, &ChangeLimits::default())
    }
}

impl UpdateRequest {
    fn from_raw(raw: RawRequest, limits: &ChangeLimits) -> Result<UpdateRequest> {
        let base_revision = match raw.base_revision {
            Some(base) if !base.trim().is_empty() => Revision::new(base),
            _ => return Err(invalid("base_revision is required")),
        };
        let form = match (raw.memory_changes, raw.changes, raw.patch) {
            (Some(items), None, None) => ChangeForm::MemoryChanges(records::parse(&items, limits)?),
            (None, Some(changes), None) => {
                files::check_size(&changes, limits)?;
                ChangeForm::Changes(changes)
            }
            (None, None, Some(patch)) => {
                patch::check_size(&patch, limits)?;
                ChangeForm::Patch(patch)
            }
            _ => return Err(invalid(EXACTLY_ONE)),
        };
        let sources = sources::check(raw.sources.unwrap_or_default(), limits)?;
        Ok(UpdateRequest { base_revision, form, message: raw.commit_message, sources })
    }
}

impl UpdateRequest {
    /// Passes every text the request brings in through `map` (which returns the new text, or
    /// `None` to keep it): each declared source's content, each record's content, each written
    /// file's content, and the lines a patch adds (`+…`, not the `+++` header). For a door that
    /// must see text before anything stores it (redaction); the request's shape is unchanged.
    pub fn map_texts(&mut self, map: &mut dyn FnMut(&str) -> Option<String>) {
        for source in &mut self.sources {
            if let Some(text) = map(&source.content) {
                source.content = text;
            }
        }
        match &mut self.form {
            ChangeForm::MemoryChanges(changes) => {
                for change in changes {
                    if let MemoryChange::CreateRecord { content, .. }
                    | MemoryChange::UpdateRecord { content, .. } = change
                        && let Some(text) = map(content)
                    {
                        *content = text;
                    }
                }
            }
            ChangeForm::Changes(files) => {
                for file in files {
                    if let Some(content) = &mut file.content
                        && let Some(text) = map(content)
                    {
                        *content = text;
                    }
                }
            }
            ChangeForm::Patch(patch) => {
                let mut changed = false;
                let lines: Vec<String> = patch
                    .split_inclusive('\n')
                    .map(|line| {
                        let Some(added) =
                            line.strip_prefix('+').filter(|_| !line.starts_with("+++"))
                        else {
                            return line.to_owned();
                        };
                        let (body, end) = match added.strip_suffix('\n') {
                            Some(body) => (body, "\n"),
                            None => (added, ""),
                        };
                        match map(body) {
                            Some(text) if !text.contains('\n') => {
                                changed = true;
                                format!("+{text}{end}")
                            }
                            // A replacement that spans lines would break the hunk's counts.
                            _ => line.to_owned(),
                        }
                    })
                    .collect();
                if changed {
                    *patch = lines.concat();
                }
            }
        }
    }

    /// Parses a JSON request body. Every failure is `INVALID_ARGUMENT`: a body that is not an
    /// object, an unknown field, a wrong type, a missing `base_revision`, or not exactly one
    /// of `memory_changes` / `patch` / `changes`, and every `memory_changes` shape error (see
    /// [`records`]; a destination path outside `topics/**/*.md` keeps its path code).
    pub fn from_json(body: &str) -> Result<UpdateRequest> {
        UpdateRequest::from_json_with(body, &ChangeLimits::default())
    }

    /// [`UpdateRequest::from_json`] with the caller's size limits.
    pub fn from_json_with(body: &str, limits: &ChangeLimits) -> Result<UpdateRequest> {
        let value: serde_json::Value = serde_json::from_str(body)
            .map_err(|e| invalid(format!("request body is not valid JSON: {e}")))?;
        if !value.is_object() {
            return Err(invalid("request body must be a JSON object"));
        }
        let raw: RawRequest = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        UpdateRequest::from_raw(raw, limits)
    }
}

impl Workspace {
    /// Applies one change request as one transaction: checks the arguments (`INVALID_ARGUMENT`,
    /// `PATH_OUTSIDE_WORKSPACE`, `READ_ONLY_PATH`), begins at `base_revision` (`CONCURRENT_UPDATE`
    /// when the workspace moved), applies the form to the stage (`PATCH_CONFLICT` when a file form
    /// does not apply, `MEMORY_NOT_FOUND` / `INVALID_ARGUMENT` when a record operation does not),
    /// validates and installs.
    ///
    /// Whole-file forms let any block disappear whose file they rewrite or delete
    /// (`Required::StillPresent`); `memory_changes` lets only the IDs named by its delete
    /// operations disappear (`Required::AllExcept`). Either way inbound block links refuse a
    /// deletion with `DANGLING_BLOCK_LINK`.
    ///
    /// Atomicity: that of [`crate::Validated::install`]. Any error before the install's
    /// linearization point leaves every byte of the workspace and its revision unchanged (the
    /// stage is removed).
    ///
    /// The same as [`Workspace::update_with`] with the default [`UpdateContext`]: no
    /// provenance (so a request declaring `sources` is refused) and not append-only.
    pub fn update(&self, req: UpdateRequest) -> Result<Installed> {
        self.update_with(req, UpdateContext::default()).map(|outcome| outcome.installed)
    }

    /// [`Workspace::update`] with the caller's [`UpdateContext`], in this order:
    ///
    /// 1. Declared sources without complete provenance → `WRITER_PRECONDITION_FAILED`.
    /// 2. Their IDs ([`scriptorium_topics_format::source::id::api_source_ids`]); labels
    ///    substituted into the form, longest first; an undeclared `new-source-*` label →
    ///    `MISSING_SOURCE`. The form is checked.
    /// 3. The transaction begins at the base revision (`CONCURRENT_UPDATE` otherwise), with
    ///    the declared sources pending ([`BeginOptions::pending_sources`]): planned now,
    ///    visible to validation, appended by the install.
    /// 4. New evidence is restricted to the declared sources' IDs plus, for
    ///    `memory_changes`, every source its operations name (`SOURCE_NOT_IN_TRANSACTION`).
    /// 5. After the form is applied, with `append_only`, every committed file must still
    ///    exist and start with its old bytes (`APPEND_ONLY_REQUIRED`).
    ///
    /// A refusal at any step writes nothing; see the module limitations for a crash.
    pub fn update_with(&self, req: UpdateRequest, ctx: UpdateContext) -> Result<UpdateOutcome> {
        if req.base_revision.as_str().trim().is_empty() {
            return Err(invalid("base_revision is required"));
        }
        let message = normalize_message(req.message.as_deref());
        let limits = ChangeLimits::default();
        let (archive, source_ids) = if req.sources.is_empty() {
            (Vec::new(), BTreeMap::new())
        } else {
            sources::records(
                &req.sources,
                ctx.provenance.as_ref(),
                ctx.speaker_display.as_deref(),
                ctx.surface,
            )?
        };
        let labels = sources::Labels::new(&source_ids);
        let form = substitute(req.form, &labels)?;
        let plan = match &form {
            ChangeForm::MemoryChanges(changes) => Plan::Records(changes),
            ChangeForm::Changes(changes) => Plan::Changes(files::check(changes, &limits)?),
            ChangeForm::Patch(text) => Plan::Patch(patch::parse(text, &limits)?),
        };
        let mut allowed: BTreeSet<String> = source_ids.values().cloned().collect();
        if let Plan::Records(changes) = &plan {
            allowed.extend(named_sources(changes));
        }
        let mut staged = self.begin(BeginOptions {
            base_revision: Some(req.base_revision),
            pending_sources: archive,
            allowed_new_sources: Some(allowed),
            required: match &plan {
                Plan::Records(changes) => Required::AllExcept(records::deleted_ids(changes)),
                _ => Required::StillPresent,
            },
            message,
            ..BeginOptions::default()
        })?;
        match plan {
            Plan::Records(changes) => {
                check_archived(&staged, changes)?;
                records::apply(&mut staged, changes)?;
            }
            Plan::Changes(changes) => files::apply(&mut staged, &changes)?,
            Plan::Patch(sections) => patch::apply(&mut staged, &sections)?,
        }
        if ctx.append_only {
            check_append_only(&staged)?;
        }
        let installed = staged.validate()?.install()?;
        Ok(UpdateOutcome { installed, source_ids })
    }
}

impl Staged {
    /// Applies a `memory_changes` list (the request's JSON value) to this stage, as
    /// [`Workspace::update`] does: shape and limits (`INVALID_ARGUMENT`), every named source
    /// archived (`MISSING_SOURCE`), then the operations. The operations address the committed
    /// files (the baseline): they overwrite the stage's copy of every file they touch, so call
    /// this on a stage without other edits (the writer's tools refuse the mix).
    pub fn apply_memory_changes(&mut self, value: &serde_json::Value) -> Result<()> {
        self.apply_memory_changes_with(value, &ChangeLimits::default())
    }

    /// [`Staged::apply_memory_changes`] under `limits` (the writer's tools replay every list
    /// a run accepted, each checked against the default limits when it came in).
    pub fn apply_memory_changes_with(
        &mut self,
        value: &serde_json::Value,
        limits: &ChangeLimits,
    ) -> Result<()> {
        let changes = records::parse(value, limits)?;
        check_archived(self, &changes)?;
        records::apply(self, &changes)
    }
}

/// The form with every declared label replaced by its source ID (see [`sources::Labels`]).
fn substitute(form: ChangeForm, labels: &sources::Labels) -> Result<ChangeForm> {
    Ok(match form {
        ChangeForm::Patch(text) => ChangeForm::Patch(labels.substitute(&text)?),
        ChangeForm::Changes(mut changes) => {
            for change in &mut changes {
                if let Some(content) = &mut change.content {
                    *content = labels.substitute(content)?;
                }
            }
            ChangeForm::Changes(changes)
        }
        ChangeForm::MemoryChanges(mut changes) => {
            for change in &mut changes {
                if let MemoryChange::CreateRecord { sources, .. }
                | MemoryChange::UpdateRecord { sources, .. } = change
                {
                    for source in sources {
                        source.source = labels.substitute(&source.source)?;
                    }
                }
            }
            ChangeForm::MemoryChanges(changes)
        }
    })
}

/// Every source the create and update operations name.
fn named_sources(changes: &[MemoryChange]) -> impl Iterator<Item = String> + '_ {
    changes.iter().flat_map(|change| match change {
        MemoryChange::CreateRecord { sources, .. } | MemoryChange::UpdateRecord { sources, .. } => {
            sources.iter().map(|s| s.source.clone()).collect()
        }
        _ => Vec::new(),
    })
}

/// Every source a record operation names as a source ID (`<provider>/<thread>/<message>`)
/// must be archived or declared by the request: `MISSING_SOURCE` otherwise. Other forms (a
/// `D<n>:<t>` handle, a link) are left to validation.
fn check_archived(staged: &Staged, changes: &[MemoryChange]) -> Result<()> {
    for source in named_sources(changes) {
        if SourceId::parse(&source).is_some() && staged.source_trust(&source).is_none() {
            return Err(refuse(
                ErrorCode::MissingSource,
                format!("source is not archived: {source}"),
                None,
            ));
        }
    }
    Ok(())
}

/// The append-only check: every committed topic file must still exist in the stage and start
/// with its committed bytes.
fn check_append_only(staged: &Staged) -> Result<()> {
    // Only files written through the stage can differ from the baseline, unless the stage
    // directory was handed out.
    let paths: Vec<&str> = if staged.opaque.get() {
        staged.baseline.paths().collect()
    } else {
        staged
            .dirty
            .iter()
            .map(String::as_str)
            .filter(|rel| staged.baseline.contains(rel))
            .collect()
    };
    for rel in paths {
        let Some(file) = staged.baseline.file(rel).map(|state| &state.file) else { continue };
        let path = format!("topics/{}", file.path);
        let kept = staged.read_file(&path)?.is_some_and(|text| text.starts_with(&file.text));
        if !kept {
            return Err(refuse(
                ErrorCode::AppendOnlyRequired,
                "paired memory updates may create or append, but cannot rewrite existing content",
                Some(&path),
            ));
        }
    }
    Ok(())
}

/// A checked form, ready to apply.
enum Plan<'a> {
    Records(&'a [MemoryChange]),
    Changes(Vec<files::Checked>),
    Patch(Vec<patch::Section>),
}

/// Normalizes a commit message: line breaks become spaces, other non-printable characters
/// (controls, and separators other than the space) are dropped, surrounding whitespace is trimmed,
/// the result is cut to [`MAX_MESSAGE_CHARS`] characters, and an empty result becomes
/// [`DEFAULT_MESSAGE`].
pub fn normalize_message(message: Option<&str>) -> String {
    let text: String = message
        .unwrap_or_default()
        .replace("\r\n", " ")
        .chars()
        .map(|c| if matches!(c, '\n' | '\r') { ' ' } else { c })
        .filter(|c| *c == ' ' || !(c.is_control() || c.is_whitespace() || is_format(*c)))
        .collect();
    let cut: String = text.trim().chars().take(MAX_MESSAGE_CHARS).collect();
    let cut = cut.trim_end();
    if cut.is_empty() { DEFAULT_MESSAGE.to_owned() } else { cut.to_owned() }
}

/// Invisible format characters Python's `str.isprintable` refuses (the common ones).
fn is_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
            | '\u{feff}'
    )
}

/// An `INVALID_ARGUMENT` change error without path or details.
pub(crate) fn invalid(message: impl Into<String>) -> Error {
    refuse(ErrorCode::InvalidArgument, message, None)
}

/// A change error with `code`, `message` and an optional path.
pub(crate) fn refuse(code: ErrorCode, message: impl Into<String>, path: Option<&str>) -> Error {
    Error::Change {
        code,
        message: message.into(),
        path: path.map(str::to_owned),
        details: serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_normalization() {
        assert_eq!(normalize_message(None), "Update memory");
        assert_eq!(normalize_message(Some("  \n\t ")), "Update memory");
        assert_eq!(normalize_message(Some(" Fix\r\nthe\nplan\u{7}\u{200b} ")), "Fix the plan");
        let long = "x".repeat(600);
        assert_eq!(normalize_message(Some(&long)).chars().count(), 500);
    }

    #[test]
    fn exactly_one_form() {
        let both = r#"{"base_revision":"1-a","patch":"x","changes":[]}"#;
        let neither = r#"{"base_revision":"1-a"}"#;
        for body in [both, neither] {
            let err = UpdateRequest::from_json(body).expect_err("refused");
            assert_eq!(err.code(), ErrorCode::InvalidArgument);
            assert!(err.to_string().contains(EXACTLY_ONE), "{err}");
        }
        let ok =
            UpdateRequest::from_json(r#"{"base_revision":"1-a","patch":"x","commit_message":"m"}"#)
                .expect("valid");
        assert_eq!(ok.form, ChangeForm::Patch("x".into()));
        assert_eq!(ok.message.as_deref(), Some("m"));
        for body in
            [r#"[]"#, r#"{"base_revision":"1-a","patch":"x","extra":1}"#, r#"{"patch":"x"}"#]
        {
            let err = UpdateRequest::from_json(body).expect_err("refused");
            assert_eq!(err.code(), ErrorCode::InvalidArgument, "{body}");
        }
    }
}
