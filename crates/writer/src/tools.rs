//! The tools a model gets, all confined to the transaction's stage: `list`, `read`, `write`,
//! `edit`, `move`, `delete`, `memory_changes` and `commit_edits`.
//!
//! Key decision: every path goes through [`scriptorium_txn::writable_path`] and the stage's own
//! file methods, so a tool can only ever touch `topics/**/*.md` inside the stage: absolute
//! paths, `..`, `sources/`, runtime files and anything else are refused with a tool error the
//! model reads. Nothing a tool does reaches the live workspace; the writer
//! validates and installs the stage after the model stops.
//!
//! `memory_changes` (the structured change API) addresses the committed files, so it cannot be
//! mixed with file edits in one run: each call re-applies every accepted `memory_changes` list
//! of the run to a fresh copy of the baseline, and a call after a file edit (or a file edit
//! after it) is refused.

use std::fmt::Write as _;

use scriptorium_txn::{ChangeLimits, Staged, UpdateRequest, writable_path};
use serde_json::{Value, json};

use crate::model::ToolSpec;

/// The most characters `read` returns.
pub const READ_LIMIT: usize = 200_000;
/// The most entries `list` returns.
pub const LIST_LIMIT: usize = 500;

/// The result of one tool call, as the model sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    /// The text returned to the model.
    pub content: String,
    /// Whether the call failed (the model reads the message and may retry).
    pub is_error: bool,
}

impl ToolResult {
    fn ok(content: impl Into<String>) -> Self {
        ToolResult { content: content.into(), is_error: false }
    }

    fn error(content: impl Into<String>) -> Self {
        ToolResult { content: content.into(), is_error: true }
    }
}

/// One tool call as the audit log keeps it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ToolLog {
    /// The tool.
    pub tool: String,
    /// The path it concerned, if any.
    pub path: Option<String>,
    /// `ok` or `error`.
    pub status: &'static str,
    /// The error message, if any.
    pub error: Option<String>,
}

/// The tools over one stage.
#[derive(Debug)]
pub struct Tools<'a> {
    staged: &'a mut Staged,
    /// Every accepted `memory_changes` operation of this run, in order.
    record_ops: Vec<Value>,
    /// Whether a file tool changed the stage.
    file_edits: bool,
    /// Whether the model called `commit_edits`.
    commit_requested: bool,
    log: Vec<ToolLog>,
}

impl<'a> Tools<'a> {
    /// Tools over `staged`.
    pub fn new(staged: &'a mut Staged) -> Self {
        Tools {
            staged,
            record_ops: Vec::new(),
            file_edits: false,
            commit_requested: false,
            log: Vec::new(),
        }
    }

    /// The stage.
    pub fn staged(&self) -> &Staged {
        self.staged
    }

    /// The stage, to hand its directory to an external agent.
    pub fn staged_mut(&mut self) -> &mut Staged {
        self.staged
    }

    /// Marks the stage as edited by something outside the tools (an external agent).
    pub fn note_external_edits(&mut self) {
        self.file_edits = true;
    }

    /// Whether the model called `commit_edits`.
    pub fn commit_requested(&self) -> bool {
        self.commit_requested
    }

    /// The calls made so far.
    pub fn log(&self) -> &[ToolLog] {
        &self.log
    }

    /// The tool specifications offered to the model.
    pub fn specs() -> Vec<ToolSpec> {
        let path = json!({"type": "string",
            "description": "Workspace-relative path such as topics/people/dana.md"});
        let spec = |name: &str, description: &str, properties: Value, required: &[&str]| ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters: json!({"type": "object", "properties": properties,
                               "required": required, "additionalProperties": false}),
        };
        vec![
            spec(
                "list",
                "List the topic files (topics/**/*.md) with their sizes, optionally under a \
                 directory such as topics/people.",
                json!({"path": {"type": "string",
                                "description": "A directory under topics/ (default: topics)"}}),
                &[],
            ),
            spec(
                "read",
                "Read one topic file. Returns its full text (at most 200000 characters).",
                json!({"path": path}),
                &["path"],
            ),
            spec(
                "write",
                "Create or replace one topic file with the complete content given. Use it for \
                 new files; use edit for changes to existing ones.",
                json!({"path": path, "content": {"type": "string"}}),
                &["path", "content"],
            ),
            spec(
                "edit",
                "Replace an exact string in one topic file. old_string must occur exactly once \
                 unless replace_all is true.",
                json!({"path": path, "old_string": {"type": "string"},
                       "new_string": {"type": "string"},
                       "replace_all": {"type": "boolean"}}),
                &["path", "old_string", "new_string"],
            ),
            spec(
                "move",
                "Move or rename one topic file; relative links inside it are adjusted. Block \
                 IDs move with their paragraphs.",
                json!({"from": path, "to": path}),
                &["from", "to"],
            ),
            spec(
                "delete",
                "Delete one topic file. Links to its blocks from other files must be removed \
                 in the same run.",
                json!({"path": path}),
                &["path"],
            ),
            spec(
                "memory_changes",
                "Structured record operations on the committed files: create_record, \
                 update_record, delete_record, move_records (the change API). Cannot be \
                 mixed with file edits in one run.",
                json!({"changes": {"type": "array", "items": {"type": "object"}}}),
                &["changes"],
            ),
            spec(
                "commit_edits",
                "Submit your edits when you are done. The runtime validates them; call it \
                 once, as your last action.",
                json!({}),
                &[],
            ),
        ]
    }

    /// Runs one tool call. `arguments` is the JSON text the model sent; malformed JSON, an
    /// unknown tool or a refused path is a tool error, never a panic or an IO error of the
    /// writer.
    pub fn call(&mut self, name: &str, arguments: &str) -> ToolResult {
        let args: Value = match serde_json::from_str(if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        }) {
            Ok(Value::Object(map)) => Value::Object(map),
            Ok(_) => return self.logged(name, None, Err("arguments must be a JSON object".into())),
            Err(e) => {
                return self.logged(name, None, Err(format!("malformed tool arguments: {e}")));
            }
        };
        let path = args.get("path").or_else(|| args.get("from")).and_then(Value::as_str);
        let path = path.map(str::to_owned);
        let result = match name {
            "list" => self.list(&args),
            "read" => self.read(&args),
            "write" => self.write(&args),
            "edit" => self.edit(&args),
            "move" => self.move_file(&args),
            "delete" => self.delete(&args),
            "memory_changes" => self.memory_changes(&args),
            "commit_edits" => {
                self.commit_requested = true;
                Ok("Submitted. The runtime validates your edits now.".to_owned())
            }
            other => Err(format!("unknown tool: {other}")),
        };
        self.logged(name, path, result)
    }

    fn logged(
        &mut self,
        tool: &str,
        path: Option<String>,
        result: Result<String, String>,
    ) -> ToolResult {
        let (status, error) = match &result {
            Ok(_) => ("ok", None),
            Err(e) => ("error", Some(e.clone())),
        };
        self.log.push(ToolLog { tool: tool.to_owned(), path, status, error });
        match result {
            Ok(text) => ToolResult::ok(text),
            Err(text) => ToolResult::error(text),
        }
    }

    fn list(&self, args: &Value) -> Result<String, String> {
        let dir = optional_str(args, "path")?.unwrap_or("topics");
        let prefix = dir.trim_end_matches('/');
        if prefix != "topics" && !prefix.starts_with("topics/") || prefix.contains("..") {
            return Err(format!("only topics/ can be listed: {dir}"));
        }
        // Listed from the stage's own record of its files: reading the directory would make
        // the next validation compare every staged file.
        let mut files: Vec<(String, u64)> = self
            .staged
            .list_files()
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|(rel, len)| (format!("topics/{rel}"), len))
            .collect();
        files.retain(|(path, _)| path.starts_with(&format!("{prefix}/")));
        files.sort();
        if files.is_empty() {
            return Ok(format!("no topic files under {prefix}"));
        }
        let mut out = String::new();
        for (path, len) in files.iter().take(LIST_LIMIT) {
            let _ = writeln!(out, "{path}\t{len} bytes");
        }
        if files.len() > LIST_LIMIT {
            let _ = writeln!(out, "[{} more not shown]", files.len() - LIST_LIMIT);
        }
        Ok(out)
    }

    fn read(&self, args: &Value) -> Result<String, String> {
        let path = required_str(args, "path")?;
        let text = self.read_existing(path)?;
        match text.char_indices().nth(READ_LIMIT) {
            Some((cut, _)) => Ok(format!("{}\n[truncated]", &text[..cut])),
            None => Ok(text),
        }
    }

    fn write(&mut self, args: &Value) -> Result<String, String> {
        let path = required_str(args, "path")?;
        let content = required_str(args, "content")?;
        self.file_edit()?;
        self.staged.write_file(path, content).map_err(|e| e.to_string())?;
        Ok(format!("Wrote {} bytes to {path}", content.len()))
    }

    fn edit(&mut self, args: &Value) -> Result<String, String> {
        let path = required_str(args, "path")?;
        let old = required_str(args, "old_string")?;
        let new = required_str(args, "new_string")?;
        let all = args.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
        let text = self.read_existing(path)?;
        if old.is_empty() {
            return Err("old_string must not be empty".into());
        }
        let count = text.matches(old).count();
        let updated = match count {
            0 => return Err(format!("old_string was not found in {path}")),
            1 => text.replacen(old, new, 1),
            _ if all => text.replace(old, new),
            n => return Err(format!("old_string occurs {n} times in {path}; add context")),
        };
        self.file_edit()?;
        self.staged.write_file(path, &updated).map_err(|e| e.to_string())?;
        Ok(format!("Edited {path} ({count} replacement{})", if count == 1 { "" } else { "s" }))
    }

    fn move_file(&mut self, args: &Value) -> Result<String, String> {
        let from = required_str(args, "from")?;
        let to = required_str(args, "to")?;
        let text = self.read_existing(from)?;
        let to_rel = writable_path(to).map_err(|e| e.to_string())?;
        if self.staged.read_file(to).map_err(|e| e.to_string())?.is_some() {
            return Err(format!("{to} exists already"));
        }
        let from_rel = writable_path(from).map_err(|e| e.to_string())?;
        let moved = relink(&text, &from_rel, &to_rel);
        self.file_edit()?;
        self.staged.write_file(to, &moved).map_err(|e| e.to_string())?;
        self.staged.remove_file(from).map_err(|e| e.to_string())?;
        Ok(format!("Moved {from} to {to}"))
    }

    fn delete(&mut self, args: &Value) -> Result<String, String> {
        let path = required_str(args, "path")?;
        self.read_existing(path)?;
        self.file_edit()?;
        self.staged.remove_file(path).map_err(|e| e.to_string())?;
        Ok(format!("Deleted {path}"))
    }

    fn memory_changes(&mut self, args: &Value) -> Result<String, String> {
        if self.file_edits {
            return Err("memory_changes cannot follow file edits in the same run; \
                        use edit and write instead"
                .into());
        }
        let Some(new) = args.get("changes").and_then(Value::as_array) else {
            return Err("changes must be a list of operations".into());
        };
        // Each call is one request under the change API's limits; the replay of every list the
        // run accepted is not a request of its own.
        let mut all = self.record_ops.clone();
        all.extend(new.iter().cloned());
        let replay = ChangeLimits {
            max_changes: usize::MAX,
            max_change_bytes: usize::MAX,
            ..ChangeLimits::default()
        };
        let applied = records_check(new).and_then(|()| {
            self.staged.reset()?;
            self.staged.apply_memory_changes_with(&Value::Array(all.clone()), &replay)
        });
        match applied {
            Ok(()) => {
                self.record_ops = all;
                Ok(format!("Applied {} operation(s)", new.len()))
            }
            Err(error) => {
                // Put back what the run had before this call (it applied before).
                self.staged.reset().map_err(|e| e.to_string())?;
                if !self.record_ops.is_empty() {
                    let before = Value::Array(self.record_ops.clone());
                    self.staged
                        .apply_memory_changes_with(&before, &replay)
                        .map_err(|e| e.to_string())?;
                }
                Err(error.to_string())
            }
        }
    }

    /// Records a file edit, refusing it after `memory_changes`.
    fn file_edit(&mut self) -> Result<(), String> {
        if !self.record_ops.is_empty() {
            return Err("file edits cannot follow memory_changes in the same run; \
                        express the change as memory_changes"
                .into());
        }
        self.file_edits = true;
        Ok(())
    }

    fn read_existing(&self, path: &str) -> Result<String, String> {
        match self.staged.read_file(path) {
            Ok(Some(text)) => Ok(text),
            Ok(None) => Err(format!("no such file: {path}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The change API's limits on one `memory_changes` call (count and bytes).
fn records_check(new: &[Value]) -> scriptorium_txn::Result<()> {
    UpdateRequest::from_json(
        &serde_json::json!({"base_revision": "-", "memory_changes": new}).to_string(),
    )
    .map(|_| ())
}

fn required_str<'v>(args: &'v Value, key: &str) -> Result<&'v str, String> {
    optional_str(args, key)?.ok_or_else(|| format!("missing argument: {key}"))
}

fn optional_str<'v>(args: &'v Value, key: &str) -> Result<Option<&'v str>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("argument {key} must be a string")),
    }
}

/// `text` with every relative Markdown link target (`](target)`) re-anchored from the
/// directory of `from` to that of `to` (both relative to `topics/`), so source links and block
/// links keep pointing at the same files after a move.
pub fn relink(text: &str, from: &str, to: &str) -> String {
    let from_dir: Vec<&str> = parent_parts(from);
    let to_dir: Vec<&str> = parent_parts(to);
    if from_dir == to_dir {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let (head, tail) = rest.split_at(at + 2);
        out.push_str(head);
        let end = tail.find(')').unwrap_or(tail.len());
        let target = &tail[..end];
        match rebase(target, &from_dir, &to_dir) {
            Some(new) => out.push_str(&new),
            None => out.push_str(target),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn parent_parts(rel: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop();
    parts
}

/// A relative target resolved against `from_dir` (under `topics/`) and made relative to
/// `to_dir`; `None` for targets that are not relative paths (URLs, anchors, absolute paths,
/// targets with spaces) or that climb above the workspace root.
fn rebase(target: &str, from_dir: &[&str], to_dir: &[&str]) -> Option<String> {
    if target.is_empty()
        || target.starts_with('#')
        || target.starts_with('/')
        || target.contains("://")
        || target.starts_with("mailto:")
        || target.contains(char::is_whitespace)
    {
        return None;
    }
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (target, None),
    };
    // Absolute from the workspace root: topics/<from_dir>/<path>.
    let mut abs: Vec<&str> = std::iter::once("topics").chain(from_dir.iter().copied()).collect();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                abs.pop()?;
            }
            part => abs.push(part),
        }
    }
    let base: Vec<&str> = std::iter::once("topics").chain(to_dir.iter().copied()).collect();
    let common = abs.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut rel: Vec<&str> = vec![".."; base.len() - common];
    rel.extend(&abs[common..]);
    let mut out = rel.join("/");
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relink_rebases_relative_targets_only() {
        let text = "See [a](../../sources/p/_v2/t.md#source-1) and [b](dana.md#^12345678), \
                    [web](https://x.org/a) [here](#^abcdef12).";
        let moved = relink(text, "people/dana2.md", "people/friends/dana2.md");
        assert_eq!(
            moved,
            "See [a](../../../sources/p/_v2/t.md#source-1) and [b](../dana.md#^12345678), \
             [web](https://x.org/a) [here](#^abcdef12)."
        );
        assert_eq!(relink(text, "a.md", "b.md"), text);
        assert_eq!(
            relink("[s](../../sources/x.md)", "people/a.md", "a.md"),
            "[s](../sources/x.md)"
        );
        // A target that climbs above the workspace root is left alone.
        assert_eq!(relink("[s](../../../x.md)", "people/a.md", "a.md"), "[s](../../../x.md)");
    }
}
