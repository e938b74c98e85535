//! Whole-file changes: `[{path, action: "write"|"delete", content?}]`.
//!
//! Checked before the transaction begins: 1 to [`super::MAX_CHANGES`] items, at most
//! [`super::MAX_CHANGE_BYTES`] of paths and contents together, each path normalized by
//! [`writable_path`] (only `topics/**/*.md`), no two items naming the same normalized path,
//! `content` present exactly for writes. Deleting a file the stage does not hold is
//! `PATCH_CONFLICT`.

use serde::Deserialize;

use super::{ChangeLimits, invalid, refuse};
use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::stage::{Staged, writable_path};

/// One whole-file change.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileChange {
    /// Workspace-relative path (`topics/…/x.md`).
    pub path: String,
    /// Write or delete.
    pub action: FileAction,
    /// The new text: required for [`FileAction::Write`], forbidden for [`FileAction::Delete`].
    #[serde(default)]
    pub content: Option<String>,
}

/// What a [`FileChange`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileAction {
    /// Create or replace the file with `content`.
    Write,
    /// Delete the file (it must exist).
    Delete,
}

/// A checked change: normalized path and, for a write, the content.
#[derive(Debug)]
pub(crate) struct Checked {
    path: String,
    content: Option<String>,
}

/// The count and byte limits alone (what [`crate::UpdateRequest::from_json_with`] checks).
pub(crate) fn check_size(changes: &[FileChange], limits: &ChangeLimits) -> Result<()> {
    let ChangeLimits { max_changes, max_change_bytes, .. } = *limits;
    if changes.len() > max_changes {
        return Err(invalid(format!("changes has more than {max_changes} items")));
    }
    let bytes: usize = changes
        .iter()
        .map(|c| c.path.len().saturating_add(c.content.as_ref().map_or(0, String::len)))
        .fold(0, usize::saturating_add);
    if bytes > max_change_bytes {
        return Err(invalid(format!("changes exceed {max_change_bytes} bytes")));
    }
    Ok(())
}

/// Checks the shape of a `changes` list (no IO).
pub(crate) fn check(changes: &[FileChange], limits: &ChangeLimits) -> Result<Vec<Checked>> {
    if changes.is_empty() {
        return Err(invalid("changes must be a non-empty list"));
    }
    check_size(changes, limits)?;
    let mut checked: Vec<Checked> = Vec::with_capacity(changes.len());
    for (i, change) in changes.iter().enumerate() {
        let path = match writable_path(&change.path) {
            Ok(rel) => format!("topics/{rel}"),
            Err(error) => {
                return Err(refuse(
                    error.code(),
                    format!("changes[{i}]: {}", plain(&error)),
                    Some(&change.path),
                ));
            }
        };
        if checked.iter().any(|c| c.path == path) {
            return Err(refuse(
                ErrorCode::InvalidArgument,
                format!("changes[{i}]: duplicate path {path}"),
                Some(&change.path),
            ));
        }
        let content = match (change.action, &change.content) {
            (FileAction::Write, Some(content)) => Some(content.clone()),
            (FileAction::Write, None) => {
                return Err(item(i, "content is required for write", &change.path));
            }
            (FileAction::Delete, Some(_)) => {
                return Err(item(i, "content is not allowed for delete", &change.path));
            }
            (FileAction::Delete, None) => None,
        };
        checked.push(Checked { path, content });
    }
    Ok(checked)
}

/// Applies checked changes to the stage, in request order.
pub(crate) fn apply(staged: &mut Staged, changes: &[Checked]) -> Result<()> {
    for change in changes {
        match &change.content {
            Some(content) => staged.write_file(&change.path, content)?,
            None => {
                if staged.read_file(&change.path)?.is_none() {
                    return Err(refuse(
                        ErrorCode::PatchConflict,
                        "change deletes a file that does not exist",
                        Some(&change.path),
                    ));
                }
                staged.remove_file(&change.path)?;
            }
        }
    }
    Ok(())
}

fn item(i: usize, message: &str, path: &str) -> Error {
    refuse(ErrorCode::InvalidArgument, format!("changes[{i}]: {message}"), Some(path))
}

/// The message of an error without its code prefix.
pub(crate) fn plain(error: &Error) -> String {
    match error {
        Error::Invalid { message, .. } | Error::Change { message, .. } => message.clone(),
        other => other.to_string(),
    }
}
