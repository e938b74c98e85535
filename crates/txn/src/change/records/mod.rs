//! Structured record operations: `memory_changes` (see `ARCHITECTURE.md#cratestxn`).
//!
//! A request is a non-empty list of at most [`super::MAX_CHANGES`] operations whose strings add up to
//! at most [`super::MAX_CHANGE_BYTES`] bytes. Each operation is one of `create_record`,
//! `update_record`, `delete_record` and `move_records`; unknown fields are refused per
//! operation. The shape, the combination rules that need no workspace (one content operation
//! and one move per ID, no delete together with a move) and the destination's shape are
//! checked here, before the transaction begins; everything that needs the stage (IDs that
//! exist, merged blocks, shared physical blocks, anchors, evidence conflicts) is checked by
//! the applier while the operations are applied.
//!
//! Legacy `mem_` units (see `docs/format.md#memory-units`) are updated and deleted in place
//! inside their shared paragraph, leaving the other units and the trailing prose alone;
//! `move_records` and anchors take block IDs only.
//!
//! The pre-release aliases `create`, `update` and `delete` are mapped (`create` takes a
//! top-level `topic_path` and `headings` and position `end`).
//!
//! Every error is `INVALID_ARGUMENT` with a `memory_changes[i]: ` prefix, except unknown IDs
//! (`MEMORY_NOT_FOUND`) and destination paths outside `topics/**/*.md`
//! (`PATH_OUTSIDE_WORKSPACE` / `READ_ONLY_PATH`).

mod apply;
mod legacy;

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value};

use super::files::plain;
use super::{ChangeLimits, invalid, refuse};
use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::stage::writable_path;

pub(crate) use apply::apply;

/// Most heading levels of a destination.
const MAX_HEADINGS: usize = 6;

const TIME_MESSAGE: &str = "time must be null or YYYY, YYYY-MM, or YYYY-MM-DD";

/// One structured record operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryChange {
    /// Adds a new record; normalization assigns its block ID.
    CreateRecord {
        /// One paragraph of text, without citations or block IDs.
        content: String,
        /// `YYYY`, `YYYY-MM` or `YYYY-MM-DD`; `None` for undated.
        time: Option<String>,
        /// The evidence's sources, in order.
        sources: Vec<SourceRef>,
        /// Where the record goes.
        destination: Destination,
    },
    /// Replaces a record's text and all its evidence, keeping its IDs and position.
    UpdateRecord {
        /// The record to update.
        memory_id: String,
        /// The new paragraph text.
        content: String,
        /// The new evidence time; `None` for undated.
        time: Option<String>,
        /// The new evidence's sources.
        sources: Vec<SourceRef>,
    },
    /// Removes one block ID (or the whole paragraph when it is the paragraph's only ID).
    DeleteRecord {
        /// The record to delete.
        memory_id: String,
    },
    /// Moves paragraphs, with their evidence, to a destination.
    MoveRecords {
        /// The records to move, in their new order.
        memory_ids: Vec<String>,
        /// Where they go.
        destination: Destination,
    },
}

/// One source of a record's evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceRef {
    /// An archived source ID.
    pub source: String,
    /// The link label, used verbatim.
    pub label: String,
}

/// Where created or moved records go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    /// Normalized workspace-relative path (`topics/…/x.md`).
    pub topic_path: String,
    /// The heading chain; empty for the lines before the first heading.
    pub headings: Vec<String>,
    /// The position inside the section.
    pub position: Position,
}

/// A position inside a destination section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Position {
    /// Right after the heading.
    Start,
    /// After the section's last line.
    End,
    /// Right before the paragraph of this memory ID.
    Before(String),
    /// Right after the paragraph of this memory ID.
    After(String),
}

/// Parses and checks a `memory_changes` value (no IO).
pub(crate) fn parse(value: &Value, limits: &ChangeLimits) -> Result<Vec<MemoryChange>> {
    let Some(items) = value.as_array().filter(|items| !items.is_empty()) else {
        return Err(invalid("memory_changes must be a non-empty list"));
    };
    let ChangeLimits { max_changes, max_change_bytes, .. } = *limits;
    if items.len() > max_changes {
        return Err(invalid(format!("memory_changes has more than {max_changes} items")));
    }
    if string_bytes(value) > max_change_bytes {
        return Err(invalid(format!("memory_changes exceed {max_change_bytes} bytes")));
    }
    let mut changes = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        changes.push(parse_item(i, item)?);
    }
    check_combinations(&changes)?;
    Ok(changes)
}

/// The IDs named by `delete_record` operations (the ones allowed to disappear).
pub(crate) fn deleted_ids(changes: &[MemoryChange]) -> BTreeSet<String> {
    changes
        .iter()
        .filter_map(|change| match change {
            MemoryChange::DeleteRecord { memory_id } => Some(memory_id.clone()),
            _ => None,
        })
        .collect()
}

/// The bytes of every string (keys excluded) in `value`.
fn string_bytes(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(string_bytes).fold(0, usize::saturating_add),
        Value::Object(map) => map.values().map(string_bytes).fold(0, usize::saturating_add),
        _ => 0,
    }
}

/// An `INVALID_ARGUMENT` error for item `i`.
pub(crate) fn item_error(i: usize, message: impl std::fmt::Display) -> Error {
    invalid(format!("memory_changes[{i}]: {message}"))
}

/// A `MEMORY_NOT_FOUND` error for item `i`.
pub(crate) fn not_found(i: usize, memory_id: &str) -> Error {
    refuse(
        ErrorCode::MemoryNotFound,
        format!("memory_changes[{i}]: memory_id does not exist: {memory_id}"),
        None,
    )
}

fn parse_item(i: usize, item: &Value) -> Result<MemoryChange> {
    let Some(obj) = item.as_object() else {
        return Err(item_error(i, "item must be an object"));
    };
    let op = obj.get("op").and_then(Value::as_str).unwrap_or_default();
    if let Some(mapped) = pre_release_alias(op, obj) {
        return parse_item(i, &mapped);
    }
    let allowed: &[&str] = match op {
        "create_record" => &["op", "content", "time", "sources", "source_refs", "destination"],
        "update_record" => &["op", "memory_id", "content", "time", "sources", "source_refs"],
        "delete_record" => &["op", "memory_id"],
        "move_records" => &["op", "memory_ids", "destination"],
        _ => {
            return Err(item_error(
                i,
                "op must be create_record, update_record, delete_record or move_records",
            ));
        }
    };
    if op == "create_record" && obj.contains_key("memory_id") {
        return Err(item_error(i, "memory_id is Runtime-assigned"));
    }
    if let Some(key) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(item_error(i, format!("unknown field: {key}")));
    }
    Ok(match op {
        "create_record" => MemoryChange::CreateRecord {
            content: content(i, obj)?,
            time: time(i, obj)?,
            sources: sources(i, obj)?,
            destination: destination(i, obj)?,
        },
        "update_record" => MemoryChange::UpdateRecord {
            memory_id: memory_id(i, obj)?,
            content: content(i, obj)?,
            time: time(i, obj)?,
            sources: sources(i, obj)?,
        },
        "delete_record" => MemoryChange::DeleteRecord { memory_id: memory_id(i, obj)? },
        _ => {
            let memory_ids = memory_ids(i, obj)?;
            let destination = destination(i, obj)?;
            if let Position::Before(anchor) | Position::After(anchor) = &destination.position
                && memory_ids.contains(anchor)
            {
                return Err(item_error(i, "move_records anchor_memory_id cannot be moved"));
            }
            MemoryChange::MoveRecords { memory_ids, destination }
        }
    })
}

/// Maps a pre-release alias to its operation: `update` and `delete` are renamed, `create`
/// takes a top-level `topic_path` and `headings` and appends at the section's end.
fn pre_release_alias(op: &str, obj: &Map<String, Value>) -> Option<Value> {
    let mut mapped = obj.clone();
    let op = match op {
        "update" => "update_record",
        "delete" => "delete_record",
        "create" => {
            let mut destination = Map::new();
            for key in ["topic_path", "headings"] {
                if let Some(value) = mapped.remove(key) {
                    destination.insert(key.to_owned(), value);
                }
            }
            destination.insert("position".to_owned(), Value::from("end"));
            mapped.insert("destination".to_owned(), Value::Object(destination));
            "create_record"
        }
        _ => return None,
    };
    mapped.insert("op".to_owned(), Value::from(op));
    Some(Value::Object(mapped))
}

fn memory_id(i: usize, obj: &Map<String, Value>) -> Result<String> {
    match obj.get("memory_id").and_then(Value::as_str).map(str::trim) {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        _ => Err(item_error(i, "memory_id is required")),
    }
}

fn memory_ids(i: usize, obj: &Map<String, Value>) -> Result<Vec<String>> {
    let error = || item_error(i, "memory_ids must be a non-empty string list");
    let items = obj.get("memory_ids").and_then(Value::as_array).ok_or_else(error)?;
    if items.is_empty() {
        return Err(error());
    }
    let mut ids = Vec::with_capacity(items.len());
    for item in items {
        match item.as_str().map(str::trim) {
            Some(id) if !id.is_empty() => {
                if ids.iter().any(|seen| seen == id) {
                    return Err(item_error(i, "memory_ids contains a duplicate"));
                }
                ids.push(id.to_owned());
            }
            _ => return Err(error()),
        }
    }
    Ok(ids)
}

fn content(i: usize, obj: &Map<String, Value>) -> Result<String> {
    let text = match obj.get("content").and_then(Value::as_str).map(str::trim) {
        Some(text) if !text.is_empty() => text,
        _ => return Err(item_error(i, "content must be a non-empty string")),
    };
    let doc = scriptorium_topics_format::topic::Document::parse(text);
    let paragraph_lines = doc.paragraphs().first().map(|p| p.lines.clone());
    let one_paragraph =
        doc.paragraphs().len() == 1 && paragraph_lines == Some(0..doc.lines().len());
    if !one_paragraph || text.contains("[^") || ends_with_block_id(text) {
        return Err(item_error(i, "content must be one final paragraph without Runtime IDs"));
    }
    Ok(text.to_owned())
}

/// Whether `text` ends with ` ^id` (or is only `^id`).
fn ends_with_block_id(text: &str) -> bool {
    let trimmed = text.trim_end();
    let base = trimmed.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '-');
    base.len() < trimmed.len()
        && base.strip_suffix('^').is_some_and(|rest| rest.is_empty() || rest.ends_with([' ', '\t']))
}

fn time(i: usize, obj: &Map<String, Value>) -> Result<Option<String>> {
    match obj.get("time") {
        Some(Value::Null) => Ok(None),
        Some(Value::String(t)) if t == "undated" => Ok(None),
        Some(Value::String(t))
            if t != "undated" && scriptorium_topics_format::topic::is_valid_temporal(t) =>
        {
            Ok(Some(t.clone()))
        }
        _ => Err(item_error(i, TIME_MESSAGE)),
    }
}

fn sources(i: usize, obj: &Map<String, Value>) -> Result<Vec<SourceRef>> {
    let list = match (obj.get("sources"), obj.get("source_refs")) {
        (Some(_), Some(_)) => {
            return Err(item_error(i, "cannot contain both source_refs and sources"));
        }
        (None, Some(refs)) => {
            let error = || item_error(i, "source_refs must be a non-empty string list");
            let items = refs.as_array().filter(|r| !r.is_empty()).ok_or_else(error)?;
            let mut list = Vec::with_capacity(items.len());
            for item in items {
                match item.as_str().map(str::trim) {
                    Some(id) if !id.is_empty() => {
                        list.push(SourceRef { source: id.to_owned(), label: id.to_owned() });
                    }
                    _ => return Err(error()),
                }
            }
            list
        }
        (sources, None) => {
            let error = || item_error(i, "sources must be a non-empty object list");
            let items = sources.and_then(Value::as_array).filter(|s| !s.is_empty());
            let items = items.ok_or_else(error)?;
            let mut list = Vec::with_capacity(items.len());
            for (j, item) in items.iter().enumerate() {
                let entry = item.as_object().ok_or_else(error)?;
                if !entry.contains_key("source") || !entry.contains_key("label") {
                    return Err(item_error(
                        i,
                        format!("sources[{j}] must contain source and label"),
                    ));
                }
                let field = |name: &str| match entry.get(name).and_then(Value::as_str) {
                    Some(s) if !s.trim().is_empty() => Ok(s.to_owned()),
                    _ => Err(item_error(i, format!("sources[{j}].{name} is required"))),
                };
                let source = field("source")?.trim().to_owned();
                list.push(SourceRef { source, label: field("label")? });
            }
            list
        }
    };
    let mut seen = HashSet::new();
    if list.iter().any(|s| !seen.insert(s.source.as_str())) {
        return Err(item_error(i, "sources contains a duplicate source"));
    }
    Ok(list)
}

fn destination(i: usize, obj: &Map<String, Value>) -> Result<Destination> {
    let Some(dest) = obj.get("destination").and_then(Value::as_object) else {
        return Err(item_error(i, "destination must be an object"));
    };
    let known = ["topic_path", "headings", "position", "anchor_memory_id"];
    if let Some(key) = dest.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(item_error(i, format!("destination has unknown field: {key}")));
    }
    for field in ["topic_path", "headings", "position"] {
        if dest.get(field).is_none_or(Value::is_null) {
            return Err(item_error(i, format!("destination {field} is required")));
        }
    }
    let raw_path = dest.get("topic_path").and_then(Value::as_str).unwrap_or_default();
    let topic_path = match writable_path(raw_path) {
        Ok(rel) => format!("topics/{rel}"),
        Err(error) => {
            return Err(refuse(
                error.code(),
                format!("memory_changes[{i}]: destination {}", plain(&error)),
                Some(raw_path),
            ));
        }
    };
    let headings_error = || item_error(i, "destination headings must be a string list");
    let raw_headings = dest.get("headings").and_then(Value::as_array).ok_or_else(headings_error)?;
    let mut headings = Vec::with_capacity(raw_headings.len());
    for heading in raw_headings {
        match heading.as_str().map(str::trim) {
            Some(h)
                if !h.is_empty()
                    && scriptorium_topics_format::topic::Document::parse(h).lines().len() == 1 =>
            {
                headings.push(h.to_owned());
            }
            _ => return Err(headings_error()),
        }
    }
    if headings.len() > MAX_HEADINGS {
        return Err(item_error(i, "destination headings has more than 6 levels"));
    }
    let anchor = match dest.get("anchor_memory_id") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_str().map(str::trim) {
            Some(id) if !id.is_empty() => Some(id.to_owned()),
            _ => return Err(item_error(i, "destination anchor_memory_id must be a string")),
        },
    };
    let position = match (dest.get("position").and_then(Value::as_str), anchor) {
        (Some("start"), None) => Position::Start,
        (Some("end"), None) => Position::End,
        (Some("before"), Some(anchor)) => Position::Before(anchor),
        (Some("after"), Some(anchor)) => Position::After(anchor),
        (Some("start" | "end"), Some(_)) => {
            return Err(item_error(i, "anchor_memory_id is only allowed for before or after"));
        }
        (Some(position @ ("before" | "after")), None) => {
            return Err(item_error(i, format!("anchor_memory_id is required for {position}")));
        }
        _ => return Err(item_error(i, "position must be start, end, before or after")),
    };
    Ok(Destination { topic_path, headings, position })
}

/// The combination rules that need no workspace.
fn check_combinations(changes: &[MemoryChange]) -> Result<()> {
    let mut content_ids: HashSet<&str> = HashSet::new();
    let mut deleted: HashSet<&str> = HashSet::new();
    let mut moved: HashSet<&str> = HashSet::new();
    for (i, change) in changes.iter().enumerate() {
        match change {
            MemoryChange::CreateRecord { .. } => {}
            MemoryChange::UpdateRecord { memory_id, .. }
            | MemoryChange::DeleteRecord { memory_id } => {
                if !content_ids.insert(memory_id) {
                    return Err(item_error(i, "duplicate content memory_id"));
                }
                if matches!(change, MemoryChange::DeleteRecord { .. }) {
                    if moved.contains(memory_id.as_str()) {
                        return Err(item_error(i, "moved memory_id cannot be deleted"));
                    }
                    deleted.insert(memory_id);
                }
            }
            MemoryChange::MoveRecords { memory_ids, .. } => {
                for id in memory_ids {
                    if deleted.contains(id.as_str()) {
                        return Err(item_error(i, "deleted memory_id cannot be moved"));
                    }
                    if !moved.insert(id) {
                        return Err(item_error(i, "duplicate moved memory_id"));
                    }
                }
            }
        }
    }
    Ok(())
}
