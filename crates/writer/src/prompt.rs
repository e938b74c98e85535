//! The writer's and organizer's prompts: the system prompt, the write, organize and repair tasks,
//! and the pieces the code renders into them (the turns as JSON lines, the workspace structure
//! listing, the rule-specific repair hint).
//!
//! Key decision: the prompt texts live in `prompts/*.md` and are embedded with `include_str!`, so
//! they read (and diff) as documents; the code fills `{placeholder}` markers in **one pass**, so a
//! turn whose content happens to contain `{structure}` is never expanded a second time.
//!
//! Turns reach the model as one compact JSON object per physical line (`ref`, `speaker`,
//! `content`): a turn body can contain newlines, quotes or a forged `{"speaker":…}` line and still
//! neither split into a second record nor change who spoke.

use scriptorium_topics_format::catalog::{SourceResolver, TargetError};
use scriptorium_topics_format::topic::{Document, LineKind, compare_topic_paths};
use scriptorium_topics_format::{TopicFile, parse_tree};

const SYSTEM: &str = include_str!("../prompts/system.md");
const WRITE: &str = include_str!("../prompts/write.md");
const ORGANIZE: &str = include_str!("../prompts/organize.md");
const REPAIR: &str = include_str!("../prompts/repair.md");

/// Longest block summary in the structure listing, in characters, `...` included.
const SUMMARY_CHARS: usize = 90;

/// One turn as the writer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn<'a> {
    /// The source handle the model cites, e.g. `openprogram/sess-7f2a/u1`.
    pub source_ref: &'a str,
    /// Who spoke, as the runtime knows it (the only trusted speaker information).
    pub speaker: &'a str,
    /// The turn's text, exactly as archived (untrusted).
    pub content: &'a str,
}

/// One compact JSON object per line: keys in order `ref`, `speaker`, `content`; separators `,`
/// and `:` with no spaces; non-ASCII literal; U+2028, U+2029 (and U+0085) escaped, so every turn
/// is exactly one physical line that decodes back to the exact body. Lines are joined with `\n`,
/// with no trailing newline.
pub fn turns_jsonl(turns: &[Turn<'_>]) -> String {
    let lines: Vec<String> = turns
        .iter()
        .map(|turn| {
            format!(
                "{{\"ref\":{},\"speaker\":{},\"content\":{}}}",
                json_string(turn.source_ref),
                json_string(turn.speaker),
                json_string(turn.content)
            )
        })
        .collect();
    lines.join("\n")
}

/// A JSON string literal on one physical line. serde_json escapes `"`, `\` and every control
/// character below U+0020 (so `\n`, `\r`, `\x0b`, `\x0c`, `\x1c`–`\x1e`); the remaining
/// characters that some readers treat as line breaks are escaped here.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned())
        .to_string()
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
        .replace('\u{85}', "\\u0085")
}

/// The "Current workspace structure" listing: every file path given
/// (workspace-relative, sorted component by component), and under each topic file
/// (`topics/**/*.md`) one line per block:
///
/// ```text
///     ^<id>  [<nearest heading text>]  <summary>
/// ```
///
/// The heading is shown only on the first block after a heading line. The summary is the
/// paragraph text without its citations and trailing block IDs, whitespace collapsed, at most
/// 90 characters (ending in `...` when cut). A merged paragraph is listed once, under its
/// identity (its last ID). Files that do not parse strictly are listed without blocks.
///
/// Source link targets are not checked against the archive here: the listing orients the model,
/// validation is the transaction's job.
pub fn structure(files: &[(String, String)]) -> String {
    let mut order: Vec<&(String, String)> = files.iter().collect();
    order.sort_by(|a, b| compare_topic_paths(&a.0, &b.0).then_with(|| a.0.cmp(&b.0)));
    let mut out = Vec::new();
    for (path, text) in order {
        out.push(path.clone());
        if let Some(rel) = path.strip_prefix("topics/").filter(|rel| rel.ends_with(".md")) {
            out.extend(block_lines(rel, text));
        }
    }
    out.join("\n")
}

/// The block lines of one topic file, empty when it does not parse strictly.
fn block_lines(rel: &str, text: &str) -> Vec<String> {
    let parsed = parse_tree(&[TopicFile::new(rel, text)], &AnyTarget);
    if !parsed.is_valid() {
        return Vec::new();
    }
    let after_heading = paragraphs_after_heading(text);
    let mut lines = Vec::new();
    for unit in parsed.units.iter().filter(|unit| unit.memory_id == unit.identity) {
        let start = usize::try_from(unit.line).unwrap_or(usize::MAX);
        let heading = match unit.headings.last() {
            Some(heading) if after_heading.contains(&start) => format!("[{heading}]  "),
            _ => String::new(),
        };
        lines.push(format!("    ^{}  {heading}{}", unit.memory_id, summary(&unit.content)));
    }
    lines
}

/// The 1-based start lines of the paragraphs that are the first after a heading line.
fn paragraphs_after_heading(text: &str) -> Vec<usize> {
    let doc = Document::parse(text);
    let mut starts = Vec::new();
    let mut pending = false;
    let mut next_paragraph = doc.paragraphs().iter().peekable();
    for (index, line) in doc.lines().iter().enumerate() {
        if matches!(line.kind, LineKind::Heading { .. }) {
            pending = true;
        }
        if let Some(paragraph) = next_paragraph.next_if(|p| p.lines.start == index) {
            if pending {
                starts.push(paragraph.lines.start + 1);
            }
            pending = false;
        }
    }
    starts
}

/// Whitespace collapsed, cut to [`SUMMARY_CHARS`] with `...`.
fn summary(content: &str) -> String {
    let collapsed = content.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= SUMMARY_CHARS {
        return collapsed;
    }
    let kept: String = collapsed.chars().take(SUMMARY_CHARS - 3).collect();
    format!("{}...", kept.trim_end())
}

/// A resolver that accepts every source link target as written: the listing needs the grammar,
/// not the archive.
struct AnyTarget;

impl SourceResolver for AnyTarget {
    fn resolve_target(&self, _topic_path: &str, target: &str) -> Result<String, TargetError> {
        Ok(target.to_owned())
    }

    fn link_target(&self, _topic_path: &str, source_ref: &str) -> String {
        source_ref.to_owned()
    }
}

/// The system prompt shared by every writer and organizer run (and their repair turns).
pub fn system_prompt() -> &'static str {
    SYSTEM
}

/// The write task: the instructions, a blank line, `## Observed <date>`, a
/// blank line, the turns as JSON lines, a blank line, `Current workspace structure:` and the
/// listing. `observed` is `YYYY-MM-DD` or `undated`; `structure` is [`structure`]'s output.
pub fn write_task(observed: &str, turns: &[Turn<'_>], structure: &str) -> String {
    write_task_for(observed, None, turns, structure)
}

/// [`write_task`] for turns of `project` (a session's project path): the prompt names the
/// project's topic directory (`topics/projects/<slug>/`, see `docs/format.md#projects`).
pub fn write_task_for(
    observed: &str,
    project: Option<&str>,
    turns: &[Turn<'_>],
    structure: &str,
) -> String {
    let project = match project {
        Some(project) => {
            let dir = scriptorium_topics_format::project::topics_dir(project);
            format!(
                "These turns come from the project `{}`: what is about the project (its \
                 decisions, design, status, people's roles in it) goes under `{dir}`, such as \
                 `{dir}decisions.md`; what holds beyond it (people, the owner's preferences) \
                 goes outside `topics/projects/`.",
                scriptorium_topics_format::project::slug(project)
            )
        }
        None => "These turns come from no known project: what is about a project goes under \
                 `topics/projects/<its name>/`."
            .to_owned(),
    };
    fill(
        WRITE,
        &[
            ("observed", observed),
            ("project", &project),
            ("turns", &turns_jsonl(turns)),
            ("structure", structure),
        ],
    )
}

/// The organize task over `topic_paths` (workspace-relative, e.g. `topics/people/dana.md`),
/// followed by the structure listing.
pub fn organize_task(topic_paths: &[String], structure: &str) -> String {
    let paths: Vec<String> = topic_paths.iter().map(|path| format!("- {path}")).collect();
    let paths = if paths.is_empty() { "(no topic files yet)".to_owned() } else { paths.join("\n") };
    fill(ORGANIZE, &[("topic_paths", &paths), ("structure", structure)])
}

/// The repair task after a rejected commit: the rejection, the rule-specific hint (see
/// [`repair_hint`]), the statement that the workspace was reset, and the original task.
pub fn repair_task(error: &str, hint: Option<&str>, original_task: &str) -> String {
    let hint = match hint {
        Some(hint) if !hint.trim().is_empty() => format!("\nHow to fix it:\n{}\n", hint.trim()),
        _ => String::new(),
    };
    fill(REPAIR, &[("error", error.trim()), ("hint", &hint), ("task", original_task)])
}

/// Replaces each `{name}` of `template` whose name is in `values`, in one pass: the inserted
/// values are never scanned again, and braces that are not a known marker stay as written.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after.find('}').and_then(|close| {
            let name = &after[..close];
            values.iter().find(|(key, _)| *key == name).map(|(_, value)| (close, *value))
        });
        match value {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A family of violations that share one fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hint {
    Footnotes,
    Labels,
    UnusedDefinition,
    DuplicateDefinition,
    Time,
    RecordShape,
    InventedId,
    DuplicateId,
    RemovedId,
    TopicLink,
    DanglingLink,
    SourceHandle,
    NotInTransaction,
    NotTrusted,
    SourcesReadOnly,
    Path,
    Size,
}

impl Hint {
    /// What to do, addressed to the model.
    fn text(self) -> &'static str {
        match self {
            Hint::Footnotes => {
                "Every citation `[^eN]` you add needs its definition line in the same file, \
                 ``[^eN]: Time: `YYYY-MM-DD`; Sources: [plain label](source handle)``, with at \
                 least one `[label](ref)` link. Leave existing `[^e-…]` citations and their \
                 definitions exactly as they are; when you move a paragraph, move the definitions \
                 it cites with it."
            }
            Hint::Labels => {
                "Every source link needs a non-empty label: `[plain label](source handle)`, a \
                 short keyword phrase (at most 8 visible characters in Chinese, Japanese or \
                 Korean, at most 6 words in English)."
            }
            Hint::UnusedDefinition => {
                "Every footnote definition must be cited by a paragraph in the same file: cite \
                 it where it belongs, or delete the definition when no paragraph uses it any \
                 more. When you move a paragraph to another file, take its definitions along."
            }
            Hint::DuplicateDefinition => {
                "Each footnote is defined once per file: give every new footnote its own number \
                 (`e1`, `e2`, …) and do not copy an existing definition line a second time."
            }
            Hint::Time => {
                "`Time:` takes exactly one of `YYYY`, `YYYY-MM`, `YYYY-MM-DD` or `undated`, \
                 between backticks, and the date must exist on the calendar."
            }
            Hint::RecordShape => {
                "Every paragraph that is not a heading must be a record: full sentences followed \
                 by a citation `[^eN]` with its definition. Bullet lists, tables, notes and \
                 introductions without a citation are rejected; turn them into cited sentences \
                 or use headings. Put each citation right after the text it supports, and put \
                 nothing but existing block IDs after the last citation."
            }
            Hint::InventedId => {
                "Do not write `^` tokens yourself: the runtime assigns block IDs. A paragraph \
                 may end only in its existing block IDs, copied exactly; remove any other `^…` \
                 token."
            }
            Hint::DuplicateId => {
                "Each block ID may stand in only one place. When you move a paragraph, remove it \
                 from its old place; when you split one, keep the ID on one part only."
            }
            Hint::RemovedId => {
                "Every existing block ID must survive: keep the `^id` at the end of each \
                 paragraph you edit or move, and when you merge paragraphs keep all their IDs at \
                 the end of the merged one (` ^abc12345 ^def45678`)."
            }
            Hint::TopicLink => {
                "A link from one topic file to another must target a block: \
                 `[text](../projects/budget-tracker.md#^6dfc15f1)`, with the ID of an existing \
                 paragraph. Add the `#^id` fragment or remove the link."
            }
            Hint::DanglingLink => {
                "A link points to a block ID that no longer exists. Point it at an existing \
                 block or remove the link; before deleting a paragraph, fix every link to its \
                 `#^id`."
            }
            Hint::SourceHandle => {
                "Cite sources only by the `ref` values given in the task, copied exactly, \
                 as in `[plain label](openprogram/sess-7f2a/u1)`; never invent, shorten or \
                 complete a handle, and copy existing source links verbatim."
            }
            Hint::NotInTransaction => {
                "A new citation may only use a `ref` of the turns in this task. Cite nothing \
                 else; in an organize task cite no new source at all and keep the existing \
                 `[^e-…]` citations and definitions instead."
            }
            Hint::NotTrusted => {
                "That source is not trusted yet and cannot be cited. Leave the fact out, or keep \
                 only the paragraph's existing citations."
            }
            Hint::SourcesReadOnly => {
                "The source archive under `sources/` is append-only and belongs to the runtime: \
                 never create, edit, move or delete anything there. Write the fact into a topic \
                 file under `topics/` instead."
            }
            Hint::Path => {
                "Only `topics/**/*.md` may be written: use workspace-relative paths such as \
                 `topics/people/dana.md` (no leading slash, no `..`, ending in `.md`) and touch \
                 no other file."
            }
            Hint::Size => {
                "A topic file or the whole tree grew past the size limit: write concisely, do \
                 not duplicate paragraphs, and split a very large file by subject."
            }
        }
    }
}

/// Which fix a violation needs, from its stable code and (for topic format violations) its
/// message. Both transaction codes and topic diagnostic codes are understood.
fn hint_for(code: &str, message: &str) -> Option<Hint> {
    let by_code = match code {
        "BLOCK_ID_REMOVED" => Some(Hint::RemovedId),
        "TOPIC_LINK_NOT_BLOCK" => Some(Hint::TopicLink),
        "DANGLING_BLOCK_LINK" => Some(Hint::DanglingLink),
        "MISSING_SOURCE_REFERENCE" | "INVALID_SOURCE_REFERENCE" | "INVALID_SOURCE_TARGET" => {
            Some(Hint::SourceHandle)
        }
        "SOURCE_NOT_IN_TRANSACTION" => Some(Hint::NotInTransaction),
        "SOURCE_NOT_TRUSTED" => Some(Hint::NotTrusted),
        "SOURCES_CHANGED" => Some(Hint::SourcesReadOnly),
        "READ_ONLY_PATH" | "PATH_OUTSIDE_WORKSPACE" => Some(Hint::Path),
        "SIZE_LIMIT" => Some(Hint::Size),
        "UNDEFINED_FOOTNOTE" | "SOURCE_LINKS_REQUIRED" => Some(Hint::Footnotes),
        "SOURCE_LABELS_REQUIRED" => Some(Hint::Labels),
        "UNUSED_FOOTNOTE" => Some(Hint::UnusedDefinition),
        "DUPLICATE_FOOTNOTE_DEFINITION" => Some(Hint::DuplicateDefinition),
        "INVALID_EVIDENCE_DATE" => Some(Hint::Time),
        "MISSING_CONTENT"
        | "FOOTNOTE_REQUIRED"
        | "CONTENT_AFTER_EVIDENCE"
        | "BLOCK_ID_REQUIRED" => Some(Hint::RecordShape),
        "INVALID_BLOCK_ID" => Some(Hint::InventedId),
        "DUPLICATE_MEMORY_ID" => Some(Hint::DuplicateId),
        _ => None,
    };
    by_code.or_else(|| hint_for_message(message))
}

/// The fix for a violation known only by its message (`INVALID_TOPIC_FORMAT` carries the topic
/// diagnostic's message; the reference's messages are matched anywhere in the text).
fn hint_for_message(message: &str) -> Option<Hint> {
    const BY_MESSAGE: &[(&str, Hint)] = &[
        ("undefined footnote", Hint::Footnotes),
        ("memory source links required", Hint::Footnotes),
        ("memory source labels required", Hint::Labels),
        ("unused footnote definition", Hint::UnusedDefinition),
        ("duplicate footnote definition", Hint::DuplicateDefinition),
        ("invalid evidence date", Hint::Time),
        ("memory block ID required", Hint::RecordShape),
        ("memory source footnote required", Hint::RecordShape),
        ("missing memory content before", Hint::RecordShape),
        ("content after final evidence", Hint::RecordShape),
        ("invalid block_id", Hint::InventedId),
        ("duplicate memory_id", Hint::DuplicateId),
        ("invalid source target", Hint::SourceHandle),
        ("invalid source reference", Hint::SourceHandle),
        ("missing source reference", Hint::SourceHandle),
        ("block ID must not be removed", Hint::RemovedId),
        ("Topic-to-Topic link must target", Hint::TopicLink),
        ("dangling block link", Hint::DanglingLink),
        ("not evidence of this transaction", Hint::NotInTransaction),
        ("is not trusted", Hint::NotTrusted),
        ("Source Memory is append-only", Hint::SourcesReadOnly),
        ("only topics/**/*.md is writable", Hint::Path),
        ("path escapes the workspace", Hint::Path),
        ("exceeds the size limit", Hint::Size),
    ];
    BY_MESSAGE.iter().find(|(needle, _)| message.contains(needle)).map(|(_, hint)| *hint)
}

/// The rule-specific fix hint for a rejection, from the `(code, message)` pairs of its
/// violations: codes of the transaction (`INVALID_TOPIC_FORMAT`, `BLOCK_ID_REMOVED`, …) or of the
/// topic diagnostics (`UNDEFINED_FOOTNOTE`, …), messages in the reference's wording
/// (`undefined footnote: e3`, …). Distinct hints are combined in the order first needed, one
/// per line (`- ` bullets when there are several); `None` when no violation has a known fix.
pub fn repair_hint(violations: &[(&str, &str)]) -> Option<String> {
    let mut hints: Vec<Hint> = Vec::new();
    for (code, message) in violations {
        if let Some(hint) = hint_for(code, message).filter(|hint| !hints.contains(hint)) {
            hints.push(hint);
        }
    }
    match hints.as_slice() {
        [] => None,
        [one] => Some(one.text().to_owned()),
        many => Some(
            many.iter().map(|hint| format!("- {}", hint.text())).collect::<Vec<_>>().join("\n"),
        ),
    }
}
