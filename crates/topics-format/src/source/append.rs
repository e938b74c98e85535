//! Append planning (see `docs/format.md#appending`): which bytes each archive file must hold after
//! archiving a batch of records. Pure: the caller reads the existing files and directory entries
//! through [`ArchiveTree`] and performs the writes (temp file, fsync, rename) itself.
//!
//! Architecture Invariant: planning is idempotent. A record whose source id is already framed in
//! its (complete) archive is skipped, so planning the same batch against the planned result
//! yields no writes, and every check that can refuse the batch runs before any write is planned.

use std::collections::BTreeMap;

use unicode_normalization::UnicodeNormalization;

use super::frame::{ArchiveRecord, append_frames_to};
use super::id::{SourceId, is_v2_emittable};
use super::scan::scan;
use super::speaker::normalize_identity_header_part;
use super::unicode::{casefold, is_printable};
use crate::catalog::FileLookup;
use crate::diag::Diagnostic;

/// What planning needs to know about the live tree.
pub trait ArchiveTree {
    /// An existing file, workspace-relative (`sources/p/_v2/t.md`). Must not follow symlinks.
    fn read(&self, rel: &str) -> FileLookup;

    /// The entry names of an existing directory, workspace-relative (`""` is the memory root,
    /// `sources`, `sources/openprogram`, …); `None` when there is no directory there.
    fn list_dir(&self, rel_dir: &str) -> Option<Vec<String>>;
}

/// An in-memory tree: workspace-relative file path → text; directories are implied by paths.
impl ArchiveTree for BTreeMap<String, String> {
    fn read(&self, rel: &str) -> FileLookup {
        crate::catalog::SourceFiles::lookup(self, rel)
    }

    fn list_dir(&self, rel_dir: &str) -> Option<Vec<String>> {
        let prefix = if rel_dir.is_empty() { String::new() } else { format!("{rel_dir}/") };
        let mut names: Vec<String> = self
            .keys()
            .filter_map(|path| path.strip_prefix(&prefix))
            .filter_map(|rest| rest.split('/').next())
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect();
        names.dedup();
        (!names.is_empty() || rel_dir.is_empty()).then_some(names)
    }
}

/// One file to write: its full new text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedWrite {
    /// Workspace-relative path of the archive file.
    pub rel_path: String,
    /// The complete new contents (existing bytes unchanged, new frames appended).
    pub new_text: String,
    /// Whether the file exists now (with non-empty text).
    pub existed: bool,
    /// The source ids of the frames this write appends, in order.
    pub appended: Vec<String>,
}

/// The outcome of planning: the writes (empty when every record is already archived) and the
/// source ids of every record, archived before or now, in archive order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[must_use = "nothing is archived until the planned writes are performed"]
pub struct AppendPlan {
    /// Files to write, in path order of first appearance.
    pub writes: Vec<PlannedWrite>,
    /// Every record's source id (including skipped ones), in (provider, thread, ordinal) order.
    pub source_ids: Vec<String>,
}

/// Why a batch cannot be archived. Nothing is planned when any record or path is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The record's id has no location.
    #[error("provider source IDs require provider/thread/message")]
    NotProviderId {
        /// The offending id.
        source_id: String,
    },
    /// The id cannot be written literally into a v2 header.
    #[error("source ID is not safe for a v2 header")]
    UnsafeSourceId {
        /// The offending id.
        source_id: String,
    },
    /// The timestamp holds a non-printable character or one of `[ ] CR LF`.
    #[error("source timestamp is not safe for a header")]
    UnsafeTimestamp {
        /// The record's id.
        source_id: String,
    },
    /// The speaker label normalizes to nothing.
    #[error("source record role/speaker label is empty")]
    EmptySpeakerLabel {
        /// The record's id.
        source_id: String,
    },
    /// The target path does not stay inside `sources/`.
    #[error("source archive path escapes sources")]
    PathEscapes {
        /// The offending path.
        rel_path: String,
    },
    /// Two paths that are equal under NFC + casefold but spelled differently.
    #[error("source archive path collision: {first} and {second}")]
    PathCollision {
        /// The path seen (or planned) first.
        first: String,
        /// The colliding path.
        second: String,
    },
    /// An existing archive that does not scan complete; nothing may be appended after a fault.
    #[error("invalid or truncated v2 archive: {rel_path}")]
    InvalidArchive {
        /// The archive.
        rel_path: String,
        /// Where the scan stopped.
        fault: Option<Box<Diagnostic>>,
    },
    /// The target exists but is not a regular file (a symlink, a directory, non-UTF-8 bytes).
    #[error("source archive is not a regular file: {rel_path}")]
    NotRegularFile {
        /// The offending path.
        rel_path: String,
    },
}

/// Plans the archiving of `records` (see `docs/format.md#appending`): validates every record,
/// preflights every target path, skips source ids already framed, and returns the new full text of
/// each file that changes.
pub fn plan_append(
    records: &[ArchiveRecord],
    tree: &dyn ArchiveTree,
) -> Result<AppendPlan, AppendError> {
    let mut sorted: Vec<&ArchiveRecord> = records.iter().collect();
    sorted.sort_by(|a, b| {
        (a.provider.as_str(), a.thread.as_str(), a.ordinal).cmp(&(
            b.provider.as_str(),
            b.thread.as_str(),
            b.ordinal,
        ))
    });

    // Step 1: validate, grouping by target path in first-seen order.
    let mut groups: Vec<(String, Vec<&ArchiveRecord>)> = Vec::new();
    for record in sorted {
        let source_id = record.source_id();
        let Some(id) = SourceId::parse(&source_id) else {
            return Err(AppendError::NotProviderId { source_id });
        };
        if !is_v2_emittable(&source_id) {
            return Err(AppendError::UnsafeSourceId { source_id });
        }
        let timestamp = record.timestamp.as_deref().unwrap_or("");
        if timestamp.chars().any(|c| !is_printable(c) || matches!(c, '[' | ']' | '\r' | '\n')) {
            return Err(AppendError::UnsafeTimestamp { source_id });
        }
        if normalize_identity_header_part(&record.speaker_label()).is_empty() {
            return Err(AppendError::EmptySpeakerLabel { source_id });
        }
        let path = id.v2_path();
        match groups.iter_mut().find(|(existing, _)| *existing == path) {
            Some((_, rows)) => rows.push(record),
            None => groups.push((path, vec![record])),
        }
    }

    // Step 2: preflight every path before anything is planned.
    let paths: Vec<&str> = groups.iter().map(|(path, _)| path.as_str()).collect();
    preflight_paths(&paths, tree)?;
    let mut existing = Vec::with_capacity(groups.len());
    for (path, _) in &groups {
        let text = match tree.read(path) {
            FileLookup::Text(text) => text.to_string(),
            FileLookup::Missing => String::new(),
            FileLookup::NotRegularFile => {
                return Err(AppendError::NotRegularFile { rel_path: path.clone() });
            }
        };
        if !text.is_empty() {
            let scanned = scan(path, &text);
            if !scanned.complete {
                return Err(AppendError::InvalidArchive {
                    rel_path: path.clone(),
                    fault: scanned.fault.map(Box::new),
                });
            }
        }
        existing.push(text);
    }

    // Steps 3–4: skip what is framed, append the rest.
    let mut plan = AppendPlan::default();
    for ((path, rows), text) in groups.iter().zip(existing) {
        let scanned = scan(path, &text);
        let mut known: std::collections::HashSet<String> =
            scanned.known_source_ids().iter().map(|id| (*id).to_owned()).collect();
        let mut frames = Vec::new();
        let mut appended = Vec::new();
        for record in rows {
            let source_id = record.source_id();
            plan.source_ids.push(source_id.clone());
            if known.contains(&source_id) {
                continue;
            }
            frames.push(record.render());
            known.insert(source_id.clone());
            appended.push(source_id);
        }
        if !frames.is_empty() {
            plan.writes.push(PlannedWrite {
                rel_path: path.clone(),
                new_text: append_frames_to(&text, &frames),
                existed: !text.is_empty(),
                appended,
            });
        }
    }
    Ok(plan)
}

/// The key two spellings collide under: NFC, then Python's `casefold`.
pub fn path_key(path: &str) -> String {
    casefold(&path.nfc().collect::<String>())
}

/// The preflight (see `docs/format.md#appending`, step 2): every path inside `sources/`; no two
/// prefixes of the batch equal under [`path_key`] but spelled differently; and no existing
/// directory entry along each path that collides with the planned component.
pub fn preflight_paths(paths: &[&str], tree: &dyn ArchiveTree) -> Result<(), AppendError> {
    let mut planned: BTreeMap<String, String> = BTreeMap::new();
    for path in paths {
        let parts: Vec<&str> = path.split('/').collect();
        let inside = parts.len() >= 2
            && parts[0] == "sources"
            && parts.iter().all(|part| !part.is_empty() && *part != "." && *part != "..");
        if !inside {
            return Err(AppendError::PathEscapes { rel_path: (*path).to_owned() });
        }
        for length in 1..=parts.len() {
            let prefix = parts[..length].join("/");
            let previous = planned.entry(path_key(&prefix)).or_insert_with(|| prefix.clone());
            if *previous != prefix {
                return Err(AppendError::PathCollision { first: previous.clone(), second: prefix });
            }
        }
    }
    for path in paths {
        let mut current = String::new();
        for part in path.split('/') {
            let Some(entries) = tree.list_dir(&current) else {
                break;
            };
            let expected =
                if current.is_empty() { part.to_owned() } else { format!("{current}/{part}") };
            let key = path_key(part);
            let mut entries = entries;
            entries.sort();
            let mut exact = false;
            for name in entries {
                if path_key(&name) != key {
                    continue;
                }
                if name != part {
                    let actual =
                        if current.is_empty() { name } else { format!("{current}/{name}") };
                    return Err(AppendError::PathCollision { first: expected, second: actual });
                }
                exact = true;
            }
            if !exact {
                break;
            }
            current = expected;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(provider: &str, thread: &str, message: &str, ordinal: u64) -> ArchiveRecord {
        let mut record = ArchiveRecord::new(
            provider,
            thread,
            message,
            ordinal,
            "user",
            format!("say {message}"),
        );
        record.timestamp = Some("2024-03-15T10:00:00+08:00".into());
        record
    }

    #[test]
    fn validation_messages() {
        let tree = BTreeMap::new();
        let cases = [
            (record("", "t", "m", 1), "provider source IDs require provider/thread/message"),
            (record("..", "t", "m", 1), "provider source IDs require provider/thread/message"),
            (record("p", "t", "m]", 1), "source ID is not safe for a v2 header"),
            (record("p", "t", "m\u{200b}", 1), "source ID is not safe for a v2 header"),
        ];
        for (record, message) in cases {
            let error = plan_append(&[record], &tree).expect_err("refused");
            assert_eq!(error.to_string(), message);
        }
        let mut bad_ts = record("p", "t", "m", 1);
        bad_ts.timestamp = Some("2024]".into());
        assert_eq!(
            plan_append(&[bad_ts], &tree).expect_err("refused").to_string(),
            "source timestamp is not safe for a header"
        );
        let mut no_label = record("p", "t", "m", 1);
        no_label.role = " \n".into();
        assert_eq!(
            plan_append(&[no_label], &tree).expect_err("refused").to_string(),
            "source record role/speaker label is empty"
        );
    }

    #[test]
    fn collisions_within_the_batch_and_on_disk() {
        let tree = BTreeMap::new();
        let error = plan_append(&[record("Prov", "t", "m", 1), record("prov", "t", "m", 2)], &tree)
            .expect_err("collision");
        assert_eq!(
            error.to_string(),
            "source archive path collision: sources/Prov and sources/prov"
        );
        let error =
            plan_append(&[record("p", "Thread", "m", 1), record("p", "thread", "m", 2)], &tree)
                .expect_err("collision");
        assert_eq!(
            error.to_string(),
            "source archive path collision: sources/p/_v2/Thread.md and sources/p/_v2/thread.md"
        );
        let mut disk = BTreeMap::new();
        disk.insert("sources/OpenProgram/_v2/x.md".to_owned(), String::new());
        let error =
            plan_append(&[record("openprogram", "t", "m", 1)], &disk).expect_err("collision");
        assert_eq!(
            error.to_string(),
            "source archive path collision: sources/openprogram and sources/OpenProgram"
        );
    }

    #[test]
    fn existing_entries_collide_under_nfc_and_casefold() {
        // Names are percent-quoted, so only entries made by someone else can be non-ASCII; a
        // long s (U+017F) folds to `s`, and NFC composes e + U+0301.
        let mut disk = BTreeMap::new();
        disk.insert("\u{17f}ources/x.md".to_owned(), String::new());
        let error = plan_append(&[record("p", "t", "m", 1)], &disk).expect_err("collision");
        assert_eq!(error.to_string(), "source archive path collision: sources and \u{17f}ources");
        assert_eq!(path_key("caf\u{e9}"), path_key("CAFE\u{301}"));
        assert_eq!(path_key("Straße"), path_key("STRASSE"));
    }
}
