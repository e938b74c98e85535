//! The Codex rollout importer (mapping documented in the module docs of [`super`]).

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::util::{
    FileMeta, Piece, content_text, file_stem, finish, model_speaker, owner_speaker, parse_rfc3339,
    push_pieces, read_lines, runtime_speaker, tool_speaker,
};
use super::{Error, Input, Parsed, Report};
use crate::{NodeId, NodeKind, Role, SessionId, Timestamp};

const FORMAT: &str = "codex";

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    #[serde(borrow, default)]
    action: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    forked_from_id: Option<Cow<'a, str>>,
}

/// Prefixes of the user-role items Codex injects itself (not typed by the user).
const INJECTED: [&str; 4] = [
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions",
];

/// A JSON string's text, or the raw JSON of any other value.
fn raw_text(raw: Option<&RawValue>) -> String {
    let Some(raw) = raw else { return String::new() };
    match serde_json::from_str::<Cow<'_, str>>(raw.get()) {
        Ok(s) => s.into_owned(),
        Err(_) => raw.get().to_owned(),
    }
}

/// A tool output: a string, or an object whose `content`/`output` is the text.
fn output_text(raw: Option<&RawValue>) -> String {
    #[derive(Deserialize)]
    struct Out<'a> {
        #[serde(borrow, default)]
        content: Option<&'a RawValue>,
        #[serde(borrow, default)]
        output: Option<&'a RawValue>,
    }
    let Some(r) = raw else { return String::new() };
    if r.get().starts_with('{')
        && let Ok(out) = serde_json::from_str::<Out<'_>>(r.get())
        && let Some(inner) = out.content.or(out.output)
    {
        return content_text(Some(inner));
    }
    raw_text(raw)
}

/// Parses one Codex rollout file.
pub(super) fn parse(input: &Input<'_>) -> Result<Parsed, Error> {
    let mut report = Report::default();
    let lines = read_lines::<Line<'_>>(input, &mut report)?;
    if lines.is_empty() {
        return Ok(Parsed { sessions: Vec::new(), report });
    }
    let file = FileMeta::new(FORMAT, input.path);
    let mut session_id: Option<String> = None;
    let mut forked_from: Option<String> = None;
    let mut model: Option<String> = None;
    let mut cwd: Option<String> = None;
    let mut nodes = Vec::with_capacity(lines.len());
    let mut last: Option<NodeId> = None;
    let mut ts = Timestamp(0);
    let mut tool_names: HashMap<String, String> = HashMap::new();
    // The user texts imported since the last non-user node, to drop the event/item duplicate.
    let mut turn_user_texts: Vec<String> = Vec::new();
    for (line_no, line) in &lines {
        if let Some(t) = line.timestamp.as_deref().and_then(parse_rfc3339) {
            ts = t;
        }
        let kind = line.kind.as_deref().unwrap_or("");
        let payload = match line.payload.map(|p| serde_json::from_str::<Payload<'_>>(p.get())) {
            Some(Ok(p)) => p,
            Some(Err(err)) => {
                report.bad_lines.push(super::BadLine {
                    path: input.path.to_path_buf(),
                    line: *line_no,
                    reason: format!("invalid payload: {err}"),
                });
                continue;
            }
            None => {
                report.skip(if kind.is_empty() {
                    "no type".to_owned()
                } else {
                    format!("{kind} (no payload)")
                });
                continue;
            }
        };
        let ptype = payload.kind.as_deref().unwrap_or("");
        let model_name = || model.clone().unwrap_or_else(|| "codex".to_owned());
        let piece: Piece = match (kind, ptype) {
            ("session_meta", _) => {
                if session_id.is_none() {
                    session_id = payload.id.as_deref().map(str::to_owned);
                    forked_from = payload.forked_from_id.as_deref().map(str::to_owned);
                    if let Some(c) = payload.cwd.as_deref() {
                        cwd = Some(c.to_owned());
                    }
                } else {
                    report.skip("session_meta (repeated)");
                }
                continue;
            }
            ("turn_context", _) => {
                if let Some(m) = payload.model.as_deref() {
                    model = Some(m.to_owned());
                }
                if let Some(c) = payload.cwd.as_deref() {
                    cwd = Some(c.to_owned());
                }
                report.skip("turn_context");
                continue;
            }
            ("event_msg", "user_message") => {
                let text = raw_text(payload.message);
                if text.trim().is_empty() || turn_user_texts.iter().any(|t| t.trim() == text.trim())
                {
                    report.skip("event_msg:user_message (duplicate)");
                    continue;
                }
                turn_user_texts.push(text.clone());
                Piece::new(Role::User, NodeKind::Message, Some(owner_speaker()), text)
            }
            ("event_msg", sub) => {
                report.skip(format!("event_msg:{sub}"));
                continue;
            }
            ("response_item", "message") => {
                let text = content_text(payload.content);
                if text.trim().is_empty() {
                    report.skip("response_item:message (no content)");
                    continue;
                }
                match payload.role.as_deref() {
                    Some("user") => {
                        if INJECTED.iter().any(|p| text.trim_start().starts_with(p)) {
                            Piece::new(
                                Role::User,
                                NodeKind::Runtime,
                                Some(runtime_speaker(FORMAT, "Codex")),
                                text,
                            )
                        } else if turn_user_texts.iter().any(|t| t.trim() == text.trim()) {
                            report.skip("response_item:message (duplicate user input)");
                            continue;
                        } else {
                            turn_user_texts.push(text.clone());
                            Piece::new(Role::User, NodeKind::Message, Some(owner_speaker()), text)
                        }
                    }
                    Some("assistant") => Piece::new(
                        Role::Assistant,
                        NodeKind::Message,
                        Some(model_speaker(&model_name())),
                        text,
                    ),
                    // Codex's own instructions to the model (`<permissions instructions>`,
                    // collaboration modes), like `session_meta`'s base instructions: nobody
                    // said them in the conversation, so they are no turn of it.
                    Some(role @ ("developer" | "system")) => {
                        report.skip(format!("response_item:message ({role})"));
                        continue;
                    }
                    _ => Piece::new(
                        Role::System,
                        NodeKind::Message,
                        Some(runtime_speaker(FORMAT, "Codex")),
                        text,
                    ),
                }
            }
            ("response_item", "function_call" | "custom_tool_call" | "web_search_call") => {
                let name = payload
                    .name
                    .as_deref()
                    .unwrap_or(if ptype == "web_search_call" { "web_search" } else { "tool" })
                    .to_owned();
                let args = raw_text(payload.arguments.or(payload.input).or(payload.action));
                let mut p = Piece::new(
                    Role::Assistant,
                    NodeKind::ToolCall,
                    Some(model_speaker(&model_name())),
                    format!("{name} {args}"),
                );
                if let Some(c) = payload.call_id.as_deref() {
                    tool_names.insert(c.to_owned(), name.clone());
                    p.meta.push(("tool_call_id", c.to_owned()));
                }
                p.meta.push(("tool_name", name));
                p
            }
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                let mut p =
                    Piece::new(Role::Tool, NodeKind::ToolResult, None, output_text(payload.output));
                if let Some(c) = payload.call_id.as_deref() {
                    p.meta.push(("tool_call_id", c.to_owned()));
                    if let Some(name) = tool_names.get(c) {
                        p.speaker = Some(tool_speaker(name));
                        p.meta.push(("tool_name", name.clone()));
                    }
                }
                p
            }
            ("response_item", sub) => {
                report.skip(format!("response_item:{sub}"));
                continue;
            }
            ("compacted", _) => Piece::new(
                Role::System,
                NodeKind::CompactionSummary,
                Some(runtime_speaker(FORMAT, "Codex")),
                raw_text(payload.message),
            ),
            ("", _) => {
                report.skip("no type");
                continue;
            }
            (other, _) => {
                report.skip(other.to_owned());
                continue;
            }
        };
        if piece.role != Role::User {
            turn_user_texts.clear();
        }
        let mut meta = file.base(*line_no);
        if let Some(c) = &cwd {
            meta.insert("cwd".to_owned(), c.clone());
        }
        if piece.role == Role::Assistant
            && let Some(m) = &model
        {
            meta.insert("model".to_owned(), m.clone());
        }
        let mut first_meta = Vec::new();
        if nodes.is_empty()
            && let Some(f) = &forked_from
        {
            first_meta.push(("forked_from", f.clone()));
        }
        let id = format!("line-{line_no}");
        last = push_pieces(&mut nodes, &id, last.take(), vec![piece], ts, &meta, first_meta);
    }
    let id = session_id.unwrap_or_else(|| file_stem(input.path));
    let session = finish(SessionId(id), None, nodes, last, &mut report);
    Ok(Parsed { sessions: vec![session], report })
}
