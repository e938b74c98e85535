//! The `journal` model: no model at all. Each user turn of the batch becomes one condensed,
//! cited paragraph in the journal of the day of the turn, through the structured change API —
//! deterministic, offline, and valid by construction. The assistant replies that follow a user
//! turn in the batch are cited by its paragraph (their text is not repeated); a reply whose user
//! turn was written in an earlier batch gets a paragraph of its own, so every batch makes
//! progress and is marked. It is the default until a model is configured; organize tasks leave
//! the topics as they are ("already well organized").
//!
//! Filing: `topics/projects/<slug>/journal/YYYY/MM-DD.md` for a session with a project (see
//! `docs/format.md#projects`), titled with the project (`# garden-app journal 2024-03-15`, the
//! project directory's name when it is plain words, else its slug), else
//! `topics/journal/YYYY/MM-DD.md` (`# Journal 2024-03-15`); `…/undated.md` without a time. A
//! file that exists keeps its title (entries go under it), so journals written before project
//! titles stay as they are. A day's file rolls over to `MM-DD-2.md`, `MM-DD-3.md`, … before it would pass
//! [`FILE_BUDGET`] bytes, half the engine's per-file limit, so a busy day never makes a write
//! fail on size.
//!
//! Condensing: whitespace collapsed to single spaces, the text cut at a sentence end (or a
//! word) within [`MAX_CHARS`] characters with `…`, and only what the topic parser would read as
//! citation or block syntax escaped (brackets, `^`, backslashes, backticks, and `<` before a
//! tag or comment): the paragraph always starts with the speaker, so no line-start marker of
//! the text can make it a heading, list or table.

use std::collections::HashMap;

use serde_json::json;

use crate::agent::{Model, RunReport, Task, TaskKind, TaskTurn};
use crate::model::{ErrorReason, ModelError};
use crate::tools::Tools;

/// The most characters of a turn kept in its paragraph.
pub const MAX_CHARS: usize = 280;
/// The most bytes a journal file grows to before the day rolls over to its next part: half the
/// engine's per-file limit (512 000), leaving room for one entry of any size.
pub const FILE_BUDGET: usize = 256_000;
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
        let mut filing = Filing::new(tools, task.project.as_deref());
        let ops: Vec<serde_json::Value> =
            entries(&task.turns).iter().map(|entry| create_op(entry, &mut filing)).collect();
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

/// Where this run files entries: the journal directory, its title, and the bytes and title of
/// each file so far.
struct Filing {
    dir: String,
    /// `Journal`, or `<project> journal`.
    title: String,
    sizes: HashMap<String, usize>,
    /// The first `# ` heading of each existing file.
    headings: HashMap<String, String>,
}

impl Filing {
    fn new(tools: &Tools<'_>, project: Option<&str>) -> Filing {
        let dir = match project {
            Some(project) => {
                format!("{}journal", scriptorium_topics_format::project::topics_dir(project))
            }
            None => "topics/journal".to_owned(),
        };
        let title = match project {
            Some(project) => format!("{} journal", project_name(project)),
            None => "Journal".to_owned(),
        };
        let prefix = format!("{}/", dir.strip_prefix("topics/").unwrap_or(&dir));
        let files: Vec<_> =
            tools.staged().baseline_files().filter(|f| f.path.starts_with(&prefix)).collect();
        let sizes = files.iter().map(|f| (format!("topics/{}", f.path), f.text.len())).collect();
        let headings = files
            .iter()
            .filter_map(|f| {
                let heading = f.text.lines().find_map(|l| l.strip_prefix("# "))?;
                Some((format!("topics/{}", f.path), heading.trim().to_owned()))
            })
            .collect();
        Filing { dir, title, sizes, headings }
    }

    /// The heading entries of `path` go under: the file's own when it has one, else `title`.
    fn heading(&self, path: &str, title: String) -> String {
        self.headings.get(path).cloned().unwrap_or(title)
    }

    /// The file of `day` (`YYYY/MM-DD`, or `undated`) with room for `bytes` more: the first
    /// part that has it (a file never grows past [`FILE_BUDGET`] unless it is empty), and its
    /// heading's part suffix (`""`, `" (2)"`, …).
    fn file_for(&mut self, day: &str, bytes: usize) -> (String, String) {
        for part in 1.. {
            let path = match part {
                1 => format!("{}/{day}.md", self.dir),
                n => format!("{}/{day}-{n}.md", self.dir),
            };
            let size = self.sizes.entry(path.clone()).or_insert(0);
            if *size == 0 || *size + bytes <= FILE_BUDGET {
                *size += bytes;
                let suffix = if part == 1 { String::new() } else { format!(" ({part})") };
                return (path, suffix);
            }
        }
        unreachable!("parts are unbounded")
    }
}

/// The `create_record` operation for one entry.
fn create_op(entry: &Entry<'_>, filing: &mut Filing) -> serde_json::Value {
    let turn = entry.turn;
    let day = turn.timestamp.as_deref().and_then(day_of);
    let verb = if turn.role == "user" { "said" } else { "replied" };
    let content = format!("{} {verb}: {}", plain(&turn.display), condense(&turn.content));
    let mut sources = vec![json!({"source": turn.source_ref, "label": "conversation turn"})];
    sources.extend(entry.replies.iter().map(|r| json!({"source": r.source_ref, "label": "reply"})));
    // What the entry adds to its file: the paragraph, and a definition with one link (a
    // relative archive path and an anchor, ~120 bytes more than the handle) per source.
    let bytes = content.len()
        + 64
        + [turn].iter().chain(&entry.replies).map(|t| t.source_ref.len() + 160).sum::<usize>();
    let (heading, path, time) = match day {
        Some((y, m, d)) => {
            let (path, part) = filing.file_for(&format!("{y}/{m}-{d}"), bytes);
            let title = format!("{} {y}-{m}-{d}{part}", filing.title);
            (filing.heading(&path, title), path, Some(format!("{y}-{m}-{d}")))
        }
        None => {
            let (path, part) = filing.file_for("undated", bytes);
            let title = format!("{} (undated){part}", filing.title);
            (filing.heading(&path, title), path, None)
        }
    };
    json!({
        "op": "create_record",
        "content": content,
        "time": time,
        "sources": sources,
        "destination": {"topic_path": path, "headings": [heading], "position": "end"},
    })
}

/// How a journal title names `project` (a path): its directory's name when that is plain words
/// (letters, digits, spaces, `-`, `_`, `.`), else its slug, so the title is never Markdown.
fn project_name(project: &str) -> String {
    let name =
        project.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next().unwrap_or("").trim();
    let plain = name.chars().any(char::is_alphanumeric)
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'));
    if plain { name.to_owned() } else { scriptorium_topics_format::project::slug(project) }
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
    inline(&cut)
}

/// Escapes what the topic parser would read as citation or block syntax inside a paragraph:
/// brackets, `^`, backslashes, backticks (a code span would keep its escapes as text), and `<`
/// where it would open a tag or a comment.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let tag = c == '<'
            && chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?'));
        if matches!(c, '[' | ']' | '^' | '\\' | '`') || tag {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// [`inline`], and what would make the start of a line structure: a heading, quote, list or
/// table marker (the speaker's name starts the paragraph).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in inline(text).chars() {
        if matches!(c, '|' | '<' | '>' | '*' | '_' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    // A leading list marker after escaping: `- `, `+ `, `1. `.
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
        assert_eq!(condense("# not a heading [^x] ^abc"), "# not a heading \\[\\^x\\] \\^abc");
        // No escape noise for what cannot change the paragraph: it starts with the speaker.
        assert_eq!(condense("__init__ | a > b * c"), "__init__ | a > b * c");
        assert_eq!(
            condense("see <div> and <!-- x --> but 3 < 4"),
            "see \\<div> and \\<!-- x --> but 3 < 4"
        );
        assert_eq!(plain("- Bob_1"), "\\- Bob\\_1");
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
