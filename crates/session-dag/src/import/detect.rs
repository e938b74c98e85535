//! Which transcript format a file is in, from the shape of its first lines.
//!
//! Each of the first [`DETECT_LINES`] non-blank lines that is a JSON object votes for the format
//! whose records it looks like, judged by keys and record types that only that format writes:
//!
//! - **Codex**: a `type` of `session_meta`, `response_item`, `event_msg`, `turn_context` or
//!   `compacted` with a `payload`.
//! - **Claude Code**: any of `sessionId`, `parentUuid`, `leafUuid`, `isSidechain`, or a `type`
//!   of `file-history-snapshot` or `queue-operation` (lines without a session).
//! - **pi**: the `session` header (`type: "session"` with an `id`), a `parentId`, or a pi entry
//!   type (`message`, `model_change`, `thinking_level_change`, `compaction`, `branch_summary`,
//!   `session_info`, `label`, `custom`, `custom_message`) without `payload`.
//! - **generic JSONL**: no `type`, and an `id` and a `role`.
//!
//! The format with the most votes wins; a tie, or no vote at all, is
//! [`Detection::Unrecognised`]. A line that is not JSON (or is cut short by the end of what
//! was read) does not vote, so one odd line does not decide.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};

use serde_json::value::RawValue;

use super::Format;
use super::util::lines;

/// How many non-blank lines [`detect`] looks at.
pub const DETECT_LINES: usize = 16;

/// After this many bytes, [`read_head`] stops at the end of the current line.
const HEAD_BYTES: usize = 1 << 20;

/// What the first lines of a file look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detection {
    /// The lines have the shape of this format.
    Format(Format),
    /// No non-blank line: there is nothing to import, in any format.
    Empty,
    /// Lines, but none of a known transcript shape (or as many of one format as of another).
    Unrecognised,
}

/// The format of a transcript whose first lines are `head` (the whole file, or its beginning
/// as [`read_head`] returns it). Pure; looks at no more than [`DETECT_LINES`] non-blank lines.
pub fn detect(head: &[u8]) -> Detection {
    let mut votes = [0usize; Format::ALL.len()];
    let mut any = false;
    for (_, line) in lines(head).take(DETECT_LINES) {
        any = true;
        if let Some(format) = line.ok().and_then(classify)
            && let Some(i) = Format::ALL.iter().position(|&f| f == format)
        {
            votes[i] += 1;
        }
    }
    if !any {
        return Detection::Empty;
    }
    let best = votes.iter().copied().max().unwrap_or(0);
    let mut winners = Format::ALL.iter().zip(votes).filter(|&(_, n)| n == best && n > 0);
    match (winners.next(), winners.next()) {
        (Some((&format, _)), None) => Detection::Format(format),
        _ => Detection::Unrecognised,
    }
}

/// The beginning of a transcript for [`detect`]: its first [`DETECT_LINES`] non-blank lines, or
/// fewer when they exceed 1 MiB (the line that crosses it is read whole, so at least one
/// complete line is there).
pub fn read_head(reader: impl Read) -> std::io::Result<Vec<u8>> {
    let mut reader = BufReader::new(reader);
    let mut head = Vec::new();
    let mut non_blank = 0;
    while non_blank < DETECT_LINES && head.len() < HEAD_BYTES {
        let start = head.len();
        if reader.read_until(b'\n', &mut head)? == 0 {
            break;
        }
        if !head[start..].iter().all(u8::is_ascii_whitespace) {
            non_blank += 1;
        }
    }
    Ok(head)
}

/// The format a single line looks like, if any.
fn classify(line: &str) -> Option<Format> {
    // Keys with their raw values: a present key counts even when its value is `null`.
    let record: BTreeMap<Cow<'_, str>, &RawValue> = serde_json::from_str(line).ok()?;
    let has = |key: &str| record.contains_key(key);
    let kind: Option<Cow<'_, str>> =
        record.get("type").and_then(|raw| serde_json::from_str(raw.get()).ok());
    let kind = kind.as_deref();
    if has("payload")
        && matches!(
            kind,
            Some("session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted")
        )
    {
        return Some(Format::Codex);
    }
    if ["sessionId", "parentUuid", "leafUuid", "isSidechain"].iter().any(|k| has(k))
        || matches!(kind, Some("file-history-snapshot" | "queue-operation"))
    {
        return Some(Format::ClaudeCode);
    }
    if (kind == Some("session") && has("id"))
        || has("parentId")
        || (!has("payload")
            && matches!(
                kind,
                Some(
                    "message"
                        | "model_change"
                        | "thinking_level_change"
                        | "compaction"
                        | "branch_summary"
                        | "session_info"
                        | "label"
                        | "custom"
                        | "custom_message"
                )
            ))
    {
        return Some(Format::Pi);
    }
    if !has("type") && has("id") && has("role") {
        return Some(Format::Jsonl);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(lines: &[&str], want: Detection) {
        let text = lines.join("\n");
        assert_eq!(detect(text.as_bytes()), want, "{text}");
    }

    #[test]
    fn each_format_by_its_shape() {
        check(
            &[
                r#"{"type":"summary","summary":"t","leafUuid":"u9"}"#,
                r#"{"type":"file-history-snapshot","messageId":"m"}"#,
                r#"{"parentUuid":null,"sessionId":"s","type":"user","uuid":"u1","message":{}}"#,
            ],
            Detection::Format(Format::ClaudeCode),
        );
        check(
            &[
                r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#,
                r#"{"timestamp":"t","type":"response_item","payload":{"type":"message"}}"#,
            ],
            Detection::Format(Format::Codex),
        );
        check(
            &[
                r#"{"type":"session","id":"x","timestamp":"t","cwd":"/w"}"#,
                r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"hi"}}"#,
            ],
            Detection::Format(Format::Pi),
        );
        check(
            &[
                r#"{"type":"session","version":3,"id":"x"}"#,
                r#"{"type":"session_info","id":"a","parentId":null,"name":"n"}"#,
            ],
            Detection::Format(Format::Pi),
        );
        check(
            &[
                r#"{"id":"m1","parent":null,"role":"user","content":"hi"}"#,
                r#"{"id":"m2","parent":"m1","role":"assistant","content":"hello"}"#,
            ],
            Detection::Format(Format::Jsonl),
        );
    }

    #[test]
    fn empty_odd_and_ambiguous_files() {
        check(&[], Detection::Empty);
        check(&["", "  ", "\r"], Detection::Empty);
        check(&["# notes", "not json"], Detection::Unrecognised);
        check(&[r#"{"a":1}"#, "[1,2]"], Detection::Unrecognised);
        // One line of each of two formats: no majority.
        check(
            &[r#"{"type":"session","id":"x"}"#, r#"{"sessionId":"s","uuid":"u"}"#],
            Detection::Unrecognised,
        );
        // One odd line among Codex lines does not decide.
        check(
            &[
                "garbage",
                r#"{"type":"session_meta","payload":{}}"#,
                r#"{"type":"event_msg","payload":{}}"#,
            ],
            Detection::Format(Format::Codex),
        );
    }

    #[test]
    fn only_the_first_lines_count() {
        let mut lines = vec![r#"{"id":"m","role":"user"}"#; DETECT_LINES];
        lines.extend([r#"{"type":"session_meta","payload":{}}"#; DETECT_LINES + 1]);
        check(&lines, Detection::Format(Format::Jsonl));
    }

    #[test]
    fn read_head_stops_after_the_first_lines() {
        let text = "\n".repeat(3) + &"{\"id\":\"m\",\"role\":\"user\"}\n".repeat(40);
        let head = read_head(text.as_bytes()).expect("read");
        assert_eq!(lines(&head).count(), DETECT_LINES);
        assert_eq!(detect(&head), detect(text.as_bytes()));
        // A first line longer than the byte budget is read whole.
        let long =
            format!("{{\"id\":\"m\",\"role\":\"user\",\"content\":\"{}\"}}\n", "x".repeat(2 << 20));
        let head = read_head(long.as_bytes()).expect("read");
        assert_eq!(head.len(), long.len());
        assert_eq!(detect(&head), Detection::Format(Format::Jsonl));
    }
}
