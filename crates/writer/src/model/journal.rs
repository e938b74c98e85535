//! The `journal` model: no model at all. Each user turn of the batch becomes one condensed,
//! cited paragraph under `topics/journal/YYYY/MM-DD.md` (the day of the turn; `undated.md`
//! without a time), through the structured change API — deterministic, offline, and valid by
//! construction. The assistant replies that follow a user turn in the batch are cited by its
//! paragraph (their text is not repeated); a reply whose user turn was written in an earlier
//! batch gets a paragraph of its own, so every batch makes progress and is marked. It is the
//! default until a model is configured; organize tasks leave the topics as they are ("already
//! well organized").
//!
//! Condensing: whitespace collapsed to single spaces, the text cut at a sentence end (or a
//! word) within [`MAX_CHARS`] characters with `…`, and Markdown that would change the
//! paragraph's structure (a leading `#`, `>`, list or table marker, footnote and block-ID
//! syntax, brackets, pipes) escaped so the paragraph reads as plain text.

use serde_json::json;

use crate::agent::{Model, RunReport, Task, TaskKind, TaskTurn};
use crate::model::{ErrorReason, ModelError};
use crate::tools::Tools;

/// The most characters of a turn kept in its paragraph.
pub const MAX_CHARS: usize = 280;
/// Operations per `memory_changes` call (the change API's limit).
const PER_CALL: usize = scriptorium_txn::change::MAX_CHANGES;

/// The journal writer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Journal;

impl Model for Journal {
    fn name(&self) -> String {
        "journal".to_owned()
    }

    fn run(&self, task: &Task, tools: &mut Tools<'_>) -> Result<RunReport, ModelError> {
        if !matches!(task.kind, TaskKind::Write | TaskKind::WriteRepair) {
            return Ok(RunReport {
                reply: "already well organized".into(),
                ..RunReport::default()
            });
        }
        let ops: Vec<serde_json::Value> = entries(&task.turns).iter().map(create_op).collect();
        for chunk in ops.chunks(PER_CALL) {
            let args = json!({ "changes": chunk }).to_string();
            let result = tools.call("memory_changes", &args);
            if result.is_error {
                return Err(ModelError::new(
                    ErrorReason::Unknown,
                    format!("journal entry refused: {}", result.content),
                ));
            }
        }
        Ok(RunReport { reply: format!("filed {} turn(s)", ops.len()), ..RunReport::default() })
    }
}

/// One journal paragraph: the turn it tells, and the replies it also cites.
struct Entry<'a> {
    turn: &'a TaskTurn,
    replies: Vec<&'a TaskTurn>,
}

/// Groups the batch: each user turn with the assistant turns after it; leading assistant turns
/// (replies to a user turn of an earlier batch) stand alone.
fn entries(turns: &[TaskTurn]) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry<'_>> = Vec::new();
    for turn in turns {
        match out.last_mut() {
            Some(entry) if turn.role != "user" && entry.turn.role == "user" => {
                entry.replies.push(turn);
            }
            _ => out.push(Entry { turn, replies: Vec::new() }),
        }
    }
    out
}

/// The `create_record` operation for one entry.
fn create_op(entry: &Entry<'_>) -> serde_json::Value {
    let turn = entry.turn;
    let day = turn.timestamp.as_deref().and_then(day_of);
    let (path, heading, time) = match day {
        Some((y, m, d)) => (
            format!("topics/journal/{y}/{m}-{d}.md"),
            format!("Journal {y}-{m}-{d}"),
            Some(format!("{y}-{m}-{d}")),
        ),
        None => ("topics/journal/undated.md".to_owned(), "Journal (undated)".to_owned(), None),
    };
    let verb = if turn.role == "user" { "said" } else { "replied" };
    let mut sources = vec![json!({"source": turn.source_ref, "label": "conversation turn"})];
    sources.extend(entry.replies.iter().map(|r| json!({"source": r.source_ref, "label": "reply"})));
    json!({
        "op": "create_record",
        "content": format!("{} {verb}: {}", plain(&turn.display), condense(&turn.content)),
        "time": time,
        "sources": sources,
        "destination": {"topic_path": path, "headings": [heading], "position": "end"},
    })
}

/// `(YYYY, MM, DD)` of an RFC 3339 time.
fn day_of(timestamp: &str) -> Option<(String, String, String)> {
    let date = timestamp.get(..10)?;
    let mut parts = date.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    (digits(y, 4) && digits(m, 2) && digits(d, 2)).then(|| (y.into(), m.into(), d.into()))
}

/// The text on one line, cut to [`MAX_CHARS`], with structural Markdown escaped.
pub fn condense(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = if flat.chars().count() <= MAX_CHARS {
        flat
    } else {
        let head: String = flat.chars().take(MAX_CHARS).collect();
        let sentence = head.rfind(['.', '!', '?', '。', '！', '？']).filter(|&i| i > MAX_CHARS / 2);
        match sentence {
            Some(end) => {
                let end = end + head[end..].chars().next().map_or(1, char::len_utf8);
                format!("{} …", &head[..end])
            }
            None => {
                let word = head.rfind(' ').filter(|&i| i > MAX_CHARS / 2).unwrap_or(head.len());
                format!("{}…", head[..word].trim_end())
            }
        }
    };
    let cut = if cut.is_empty() { "(empty)".to_owned() } else { cut };
    plain(&cut)
}

/// Escapes what the topic parser would read as structure or citation syntax.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '[' | ']' | '^' | '|' | '<' | '>' | '`' | '*' | '_' | '#' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    // A leading list or heading marker after escaping: `- `, `+ `, `1. `.
    let starts_list = out.starts_with("- ")
        || out.starts_with("+ ")
        || out
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    if starts_list { format!("\\{out}") } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn condense_flattens_cuts_and_escapes() {
        assert_eq!(condense("  I like\n\n green   tea. "), "I like green tea.");
        assert_eq!(condense("# not a heading [^x] ^abc"), "\\# not a heading \\[\\^x\\] \\^abc");
        assert_eq!(condense("- item"), "\\- item");
        let long = "word ".repeat(100);
        let cut = condense(&long);
        assert!(cut.ends_with('…') && cut.chars().count() <= MAX_CHARS + 1, "{cut}");
        let sentences =
            format!("{} Second part {}", "First sentence is here.".repeat(8), "x ".repeat(80));
        assert!(condense(&sentences).ends_with(". …"), "{}", condense(&sentences));
        assert_eq!(
            day_of("2024-03-15T09:30:00.000Z"),
            Some(("2024".into(), "03".into(), "15".into()))
        );
        assert_eq!(day_of("yesterday"), None);
    }
}
