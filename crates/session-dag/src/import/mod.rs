//! Transcript importers: Claude Code, Codex, pi and generic JSONL.
//!
//! Each importer is a pure parse step ([`parse`]: bytes → [`Parsed`] sessions of [`Node`]s plus a
//! [`Report`]) and a store step ([`import_into`]: one [`SessionStore::append_batch`] per session,
//! then [`SessionStore::set_head`]). [`discover`] turns command-line paths into [`Unit`]s (files
//! that must be parsed together), and [`import_unit`] chains reading, parsing and storing.
//!
//! [`detect`] tells the formats apart from the shape of a file's first lines (keys and record
//! types only one format writes). [`discover`] uses it to refuse a file that is plainly in
//! another format than the one asked for ([`Error::WrongFormat`]: parsed as the wrong format,
//! every record would be skipped and the import would report success with nothing imported),
//! and [`discover_auto`] to pick each file's format.
//!
//! Key decision: node IDs derive from the source IDs (Claude `uuid`, pi `id`, generic `id`) or,
//! for formats without IDs (Codex, pi v1), from the physical line number (`line-<n>`, 1-based).
//! Re-importing the same or a grown file therefore appends only the new nodes; existing nodes and
//! their metadata (written markers included) are never touched. A source record that becomes
//! several nodes (a Claude assistant line with text and two `tool_use` blocks) gives its *last*
//! node the source ID and the earlier ones `<id>#<i>` (`i` = position in the record), so a child
//! naming the record as its parent attaches to the record's last node without any lookup.
//!
//! # What every importer guarantees
//!
//! - Every `parent` of a parsed node is a node of the same parsed session, and parents come
//!   before children in [`ParsedSession::nodes`] (a parent cycle in hostile input is cut: the
//!   node becomes a root with metadata `cycle_parent`).
//! - A parent named by the source but absent from the parsed files makes the node a **root**,
//!   with the missing ID kept in metadata `missing_parent`.
//! - Source records that carry an ID but produce no node (a thinking-only assistant line, a
//!   Claude `system`/`progress` line, a pi `model_change` entry, …) are transparent: a child
//!   naming them attaches to *their* parent, so skipping them never disconnects the DAG.
//! - A line that is not a JSON object of the expected shape is skipped and reported with its
//!   line number ([`Report::bad_lines`]); record types that are not imported are counted by
//!   reason ([`Report::skipped`]). A non-empty file with no valid line at all is an
//!   [`Error::NotJsonl`] naming the path. The empty file gives no session and no error.
//! - The speaker is set from the record's structure, never from its text: user turns are
//!   [`owner_speaker`] (`owner/local`, "Owner"), assistant turns are `model/<model>` (the model
//!   named by the record, else the tool's name), runtime turns and compaction summaries are
//!   `runtime/<format>`, tool results are `tool/<tool name>` when the name is known.
//! - Thinking / reasoning blocks are never content.
//!
//! Common metadata keys on every node: `source_format` (`claude-code`, `codex`, `pi`, `jsonl`),
//! `source_file` (the path as given), `source_line` (1-based). Tool nodes add `tool_name`,
//! `tool_call_id` and, for failed results, `is_error = "true"`. Format-specific keys are listed
//! below.
//!
//! # Claude Code (`~/.claude/projects/<project>/<session>.jsonl`)
//!
//! - **Sessions.** All files whose first `sessionId` is the same form one session, whose ID is
//!   that `sessionId` (the file stem if no record has one): the main transcript, its old-layout
//!   sidechains `agent-*.jsonl` beside it (they share the `sessionId`), the new-layout
//!   `<session>/subagents/agent-*.jsonl`, and a resumed transcript that starts with the copied
//!   history of the session it resumed. A file whose `sessionId` changes midway (resume or fork
//!   inside one file) stays one session: a store parent link cannot cross sessions, so keeping
//!   the file together keeps every `parentUuid` link. Nodes of a record whose `sessionId` differs
//!   from the session's carry `source_session_id`.
//! - **Nodes.** `user`/`assistant` records: a string content, or each run of consecutive
//!   non-empty `text` blocks (`\n`-joined), is a [`NodeKind::Message`]; each `tool_use` block a
//!   [`NodeKind::ToolCall`] (content `<name> <input JSON>`); each `tool_result` block a
//!   [`NodeKind::ToolResult`] with role [`Role::Tool`]; `thinking`, `redacted_thinking` and
//!   `image` blocks are dropped. `isMeta` user records (caveats, injected command output) are
//!   [`NodeKind::Runtime`]; so are assistant records of model `<synthetic>`.
//! - **Parents.** `parentUuid`, resolved through skipped records. `system` records with subtype
//!   `compact_boundary` have `parentUuid: null` and a `logicalParentUuid`; they resolve to the
//!   logical parent, so the `isCompactSummary` user record that follows becomes a
//!   [`NodeKind::CompactionSummary`] (role [`Role::System`]) *attached to the last node before
//!   the compaction*, and the DAG keeps one root (metadata `compact_boundary`).
//! - **Sidechains** (`isSidechain: true`, metadata `is_sidechain`, `agent_id`): a sub-agent's
//!   transcript starts with `parentUuid: null`. The link to its parent session is the main
//!   transcript's `tool_result` record whose `toolUseResult.agentId` names the agent: that
//!   result's `tool_use_id` is the `Task` call that spawned it. The sidechain's root becomes a
//!   child of that tool-call node (metadata `spawned_by_tool_call`), so the sidechain is its own
//!   branch of the parent session, sharing the prefix up to the call. A `.meta.json` beside a
//!   new-layout agent file adds `agent_type` and `agent_description` to the sidechain root.
//! - **Head.** The newest (by timestamp, then file position) non-sidechain node; after a rewind
//!   the edited branch is the newer one. A unit made only of sidechain files sets no head.
//! - **Title.** A `summary` record whose `leafUuid` is a node of the session (the last one wins).
//!   Summaries of other sessions' leaves (the common case) are counted as skipped
//!   `summary (leaf not in session)`. A session without a title gets the first line of its first
//!   user message that does not start with `<` (slash commands and command output are wrapped in
//!   tags), for every format.
//! - **Skipped and counted:** `file-history-snapshot`, `queue-operation`, `progress`,
//!   `last-prompt`, `system` (by subtype), records with nothing to import (`thinking only`,
//!   `no content`), duplicate uuids, unknown types.
//! - Other metadata: `cwd`, `git_branch`, `model`, `is_meta`, `compact_trigger`.
//!
//! # Codex rollout (`~/.codex/sessions/…/rollout-<time>-<uuid>.jsonl`)
//!
//! One file is one session, ID `session_meta.payload.id` (else the file stem). It is linear: each
//! node's parent is the previous node. Node IDs are `line-<n>`. `response_item` messages: `user`
//! → [`Role::User`] message, except runtime-injected context (text starting with
//! `<environment_context>`, `<user_instructions>`, `<permissions instructions>` or
//! `# AGENTS.md instructions`), which is [`NodeKind::Runtime`]; `assistant` → assistant message;
//! `developer`/`system` (Codex's instructions to the model, such as `<permissions
//! instructions>`) are skipped and counted, like the base instructions of `session_meta`; any
//! other role → [`Role::System`] message. `function_call`, `custom_tool_call`,
//! `web_search_call` → tool calls; `function_call_output`, `custom_tool_call_output` → tool
//! results (joined to their call by `call_id` in metadata `tool_call_id`). `compacted` →
//! [`NodeKind::CompactionSummary`]. `event_msg` `user_message` is the user's input as the CLI
//! saw it: it becomes a user message only when the same text was not already imported from a
//! `response_item` in the same turn (Codex Desktop writes only the event). `reasoning`,
//! `turn_context` and the other `event_msg`s are skipped and counted. `forked_from_id` is kept
//! in metadata `forked_from` of the first node. The assistant speaker is the model of the latest
//! `turn_context`.
//!
//! # pi (`~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`)
//!
//! One file is one session, ID the header's `id`. v1 entries (no `id`) get `line-<n>` and the
//! previous node as parent (linear); v2/v3 entries use `id`/`parentId` (a tree). `message`
//! roles: `user`, `assistant` (`text` runs → message, `toolCall` → tool call, `thinking`
//! dropped), `toolResult` → tool result, `bashExecution` (a command the user ran with `!`) → tool
//! result `$ <command>\n<output>` with metadata `bash_execution`, `custom` → runtime,
//! `branchSummary`/`compactionSummary` → compaction summary. `compaction` and `branch_summary`
//! entries → [`NodeKind::CompactionSummary`] (metadata `tokens_before`, `first_kept_entry`).
//! `session_info` gives the title. `model_change`, `thinking_level_change`, `label`, `custom`
//! and other entries are skipped and counted. The header's `branchedFrom` (v1) or
//! `parentSession` (v3) names the file this session was branched from: it is kept in metadata
//! `branched_from` (and `branched_from_session`, the UUID of that file's name) of the
//! session's roots. No node link is made: a store parent cannot cross sessions, the header
//! names no entry, and pi copies the branched-from prefix into the new file, so the new session
//! is complete on its own. The head is the last node of the file.
//!
//! # Generic JSONL
//!
//! One JSON object per line:
//!
//! ```text
//! {"id": "m2", "parent": "m1", "role": "assistant", "content": "Hello",
//!  "created_at": "2026-01-02T03:04:05Z", "speaker": {"id": "model/x", "display": "X"},
//!  "session": "s1", "kind": "message", "metadata": {"k": "v"}}
//! ```
//!
//! - `id` (string, required), `parent` (string or null), `role` (`user`, `assistant`, `system`,
//!   `tool`; required), `content` (a string or a list of `{"type":"text","text":…}` blocks),
//!   `created_at` (RFC 3339 string or integer milliseconds since the epoch; default: the previous
//!   line's).
//! - Optional: `speaker` (trusted: the file comes from the operator; default: owner for `user`,
//!   none otherwise: an assistant turn whose model is not given is labelled by its role),
//!   `session` (default: the file stem),
//!   `kind` (`message`, `tool_call`, `tool_result`, `runtime`, `compaction_summary`; default
//!   `message`), `metadata` (string values).
//! - Sessions are keyed by `session`; the head of each is its last node in the file.
//!
//! # Limitations
//!
//! - Node metadata is written once: a node imported before its parent was known (a sidechain
//!   imported alone, a main transcript imported while its sub-agent was still running) keeps the
//!   parent it was first imported with.
//! - A record whose parent appears *later* in the file resolves differently in a prefix of the
//!   file than in the whole file; transcripts write parents first, so growing files are safe.
//! - Titles go through [`SessionStore::set_title`]; a store without it keeps no title (the
//!   import still succeeds).

//!
//! [`NodeKind::CompactionSummary`]: crate::NodeKind::CompactionSummary
//! [`NodeKind::Message`]: crate::NodeKind::Message
//! [`NodeKind::Runtime`]: crate::NodeKind::Runtime
//! [`NodeKind::ToolCall`]: crate::NodeKind::ToolCall
//! [`NodeKind::ToolResult`]: crate::NodeKind::ToolResult
//! [`Role::System`]: crate::Role::System
//! [`Role::Tool`]: crate::Role::Tool
//! [`Role::User`]: crate::Role::User
mod claude;
mod codex;
mod detect;
mod discover;
mod generic;
mod pi;
mod util;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use detect::{DETECT_LINES, Detection, detect, read_head};
pub use discover::{AutoDiscovery, Unit, UnitFile, discover, discover_auto};
pub use util::owner_speaker;

use crate::{Node, NodeId, SessionId, SessionStore};

/// Errors of the importers.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A non-empty file with no valid JSONL line.
    #[error("{path}:{line}: not a JSONL transcript ({reason})")]
    NotJsonl {
        /// The file.
        path: PathBuf,
        /// The first bad line (1-based).
        line: usize,
        /// Why that line is not a JSON object.
        reason: String,
    },
    /// A path named on the command line (or a file reached through one) is a FIFO, socket,
    /// device or other non-regular file: it is never opened for reading (a FIFO would block).
    #[error("{path}: is a {kind}, not a regular file")]
    NotRegularFile {
        /// The path.
        path: PathBuf,
        /// What it is: `FIFO`, `socket`, `character device`, `block device`, …
        kind: &'static str,
    },
    /// The file's first lines have the shape of another format than the one asked for
    /// (see [`detect`]); nothing was imported from it.
    #[error("{path}: looks like {}, not {}", found.description(), expected.description())]
    WrongFormat {
        /// The file.
        path: PathBuf,
        /// The format asked for.
        expected: Format,
        /// The format its lines look like.
        found: Format,
    },
    /// The file's first lines have the shape of no known format ([`discover_auto`]); nothing
    /// was imported from it.
    #[error(
        "{path}: not a recognised transcript (its first lines look like no Claude Code, Codex, \
         pi or generic JSONL records)"
    )]
    Unrecognised {
        /// The file.
        path: PathBuf,
    },
    /// The session store failed while importing a file.
    #[error("{path}: session store: {source}")]
    Store {
        /// The (first) file of the unit being imported.
        path: PathBuf,
        /// The store's error.
        #[source]
        source: crate::Error,
    },
}

impl Error {
    /// The stable code ([`Error::Store`] gives the store error's code).
    pub fn code(&self) -> crate::ErrorCode {
        match self {
            Error::Io { .. } => crate::ErrorCode::Io,
            Error::NotJsonl { .. } => crate::ErrorCode::NotJsonl,
            Error::NotRegularFile { .. } => crate::ErrorCode::NotRegularFile,
            Error::WrongFormat { .. } => crate::ErrorCode::WrongFormat,
            Error::Unrecognised { .. } => crate::ErrorCode::UnrecognisedFormat,
            Error::Store { source, .. } => source.code(),
        }
    }

    /// The file or directory the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Error::Io { path, .. }
            | Error::NotJsonl { path, .. }
            | Error::NotRegularFile { path, .. }
            | Error::WrongFormat { path, .. }
            | Error::Unrecognised { path }
            | Error::Store { path, .. } => path,
        }
    }
}

/// A transcript format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Claude Code session JSONL.
    ClaudeCode,
    /// Codex rollout JSONL.
    Codex,
    /// pi coding-agent session JSONL (v1 linear, v2/v3 trees).
    Pi,
    /// The generic JSONL described in the module docs.
    Jsonl,
}

impl Format {
    /// Every format, in the order the CLI lists them.
    pub const ALL: [Format; 4] = [Format::ClaudeCode, Format::Codex, Format::Pi, Format::Jsonl];

    /// The format's name on the command line and in `source_format` metadata.
    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::Pi => "pi",
            Format::Jsonl => "jsonl",
        }
    }

    /// What a file of this format is, for messages: "a Codex rollout".
    pub fn description(self) -> &'static str {
        match self {
            Format::ClaudeCode => "a Claude Code session",
            Format::Codex => "a Codex rollout",
            Format::Pi => "a pi session",
            Format::Jsonl => "a generic JSONL transcript",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of [`Format::from_str`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown transcript format {0:?} (expected claude-code, codex, pi or jsonl)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// One file to parse: its bytes and how it takes part in its unit.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    /// The path, for reports and `source_file` metadata (never read by [`parse`]).
    pub path: &'a Path,
    /// The file's bytes.
    pub bytes: &'a [u8],
    /// Claude Code: the file is a sub-agent transcript (`agent-*.jsonl`).
    pub sidechain: bool,
    /// Claude Code: the bytes of the sub-agent's `agent-*.meta.json`, if any.
    pub meta: Option<&'a [u8]>,
}

impl<'a> Input<'a> {
    /// A main (non-sidechain) transcript.
    pub fn new(path: &'a Path, bytes: &'a [u8]) -> Input<'a> {
        Input { path, bytes, sidechain: false, meta: None }
    }
}

/// A line that could not be imported, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLine {
    /// The file.
    pub path: PathBuf,
    /// The line (1-based).
    pub line: usize,
    /// Why it was skipped.
    pub reason: String,
}

/// What a parse read and what it left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Non-empty lines read.
    pub lines: usize,
    /// Well-formed records that were not imported, counted by reason.
    pub skipped: BTreeMap<String, usize>,
    /// Malformed lines (not JSON, not an object, wrong field types), in file order.
    pub bad_lines: Vec<BadLine>,
    /// What the importer's caller redacted before storing (rule id → how many; never a value).
    /// The parse itself redacts nothing: this is filled in by the door that stores.
    pub redacted: BTreeMap<String, usize>,
}

impl Report {
    /// Adds `other`'s counts and bad lines to this report.
    pub fn merge(&mut self, other: Report) {
        self.lines += other.lines;
        for (reason, n) in other.skipped {
            *self.skipped.entry(reason).or_default() += n;
        }
        for (rule, n) in other.redacted {
            *self.redacted.entry(rule).or_default() += n;
        }
        self.bad_lines.extend(other.bad_lines);
    }

    /// Total skipped records (not counting bad lines).
    pub fn skipped_total(&self) -> usize {
        self.skipped.values().sum()
    }

    pub(crate) fn skip(&mut self, reason: impl Into<String>) {
        *self.skipped.entry(reason.into()).or_default() += 1;
    }
}

/// One parsed session, ready for [`import_into`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedSession {
    /// The session ID.
    pub id: SessionId,
    /// The title the transcript gives (a Claude `summary` of one of its leaves, a pi
    /// `session_info` name), if any.
    pub title: Option<String>,
    /// The first line of the first user message (at most 80 characters): the title of a session
    /// that has none.
    pub fallback_title: Option<String>,
    /// The nodes, parents before children; every parent is one of these nodes.
    pub nodes: Vec<Node>,
    /// Where the head should be after the import, if this unit decides it.
    pub head: Option<NodeId>,
    /// How many branch tips (nodes without a child) these nodes have.
    pub branches: usize,
}

/// The result of [`parse`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The sessions, in the order they first appear.
    pub sessions: Vec<ParsedSession>,
    /// What was read and skipped.
    pub report: Report,
}

/// What [`import_into`] did to one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session.
    pub session: SessionId,
    /// Its title after the import, if known.
    pub title: Option<String>,
    /// Nodes in the imported files.
    pub nodes: usize,
    /// Of those, how many were new to the store.
    pub new_nodes: usize,
    /// Branch tips among the imported nodes.
    pub branches: usize,
    /// The head after the import, if this import set it.
    pub head: Option<NodeId>,
}

/// What [`import_into`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Per session, in parse order.
    pub sessions: Vec<SessionSummary>,
    /// The parse report.
    pub report: Report,
}

impl Summary {
    /// Adds `other` to this summary.
    pub fn merge(&mut self, other: Summary) {
        self.sessions.extend(other.sessions);
        self.report.merge(other.report);
    }

    /// Nodes in the imported files.
    pub fn nodes(&self) -> usize {
        self.sessions.iter().map(|s| s.nodes).sum()
    }

    /// Nodes new to the store.
    pub fn new_nodes(&self) -> usize {
        self.sessions.iter().map(|s| s.new_nodes).sum()
    }

    /// Branch tips among the imported nodes.
    pub fn branches(&self) -> usize {
        self.sessions.iter().map(|s| s.branches).sum()
    }
}

/// Parses `inputs` as `format`. Pure: reads nothing but the given bytes.
///
/// Claude Code: all inputs form one session group (main transcripts and their sidechains, see
/// the module docs). Other formats: each input is parsed on its own and the sessions are
/// concatenated.
///
/// Errors only when a non-empty input has no valid JSONL line ([`Error::NotJsonl`]); bad lines
/// in an otherwise valid file are reported in [`Report::bad_lines`].
pub fn parse(format: Format, inputs: &[Input<'_>]) -> Result<Parsed, Error> {
    match format {
        Format::ClaudeCode => claude::parse(inputs),
        Format::Codex => each(inputs, codex::parse),
        Format::Pi => each(inputs, pi::parse),
        Format::Jsonl => each(inputs, generic::parse),
    }
}

fn each(
    inputs: &[Input<'_>],
    one: fn(&Input<'_>) -> Result<Parsed, Error>,
) -> Result<Parsed, Error> {
    let mut out = Parsed::default();
    for input in inputs {
        let parsed = one(input)?;
        out.sessions.extend(parsed.sessions);
        out.report.merge(parsed.report);
    }
    Ok(out)
}

/// The project of a working directory: the nearest directory at or above `cwd` that holds a
/// `.git` (a repository's root; `.git` may be a file, as in a worktree), else `cwd` itself (also
/// when the directory is not on this machine, as for a transcript from elsewhere). The path as
/// the transcript wrote it, without a trailing `/`.
pub fn project_of(cwd: &Path) -> String {
    let root = cwd
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .unwrap_or(cwd);
    let text = root.to_string_lossy();
    let trimmed = text.trim_end_matches('/');
    if trimmed.is_empty() { text.into_owned() } else { trimmed.to_owned() }
}

/// Writes parsed sessions to `store`: per session one [`SessionStore::append_batch`] (only the
/// nodes whose ID is new are appended, with one fsync; existing nodes and their metadata are
/// untouched, so a forgotten node stays forgotten), then, if that appended at least one node
/// and the parse chose a head, one [`SessionStore::set_head`]. The title is set with
/// [`SessionStore::set_title`] when the transcript names one that differs from the stored one,
/// or when the session has none (then the first user line), unless the session holds a
/// forgotten node ([`SessionStore::forget`]). Re-importing a file, or any prefix of it, changes
/// nothing.
///
/// Atomicity: per session, as the store's `append_batch`; a failure leaves earlier sessions of
/// `parsed` imported.
pub fn import_into<S: SessionStore + ?Sized>(
    store: &S,
    parsed: Parsed,
    path: &Path,
) -> Result<Summary, Error> {
    let store_err = |source| Error::Store { path: path.to_path_buf(), source };
    let mut summary = Summary { sessions: Vec::new(), report: parsed.report };
    for session in parsed.sessions {
        let project = session
            .nodes
            .iter()
            .find_map(|n| n.metadata.get("cwd"))
            .map(|cwd| project_of(Path::new(cwd)));
        let nodes = session.nodes.len();
        let new_nodes = if nodes == 0 {
            0
        } else {
            store.append_batch(&session.id, session.nodes).map_err(store_err)?
        };
        let stored =
            if nodes == 0 { None } else { store.session(&session.id).map_err(store_err)? };
        let current = stored.and_then(|s| s.title);
        let mut wanted = match (&session.title, &current) {
            (Some(t), c) if c.as_ref() != Some(t) => Some(t.clone()),
            (None, None) => session.fallback_title.clone(),
            _ => None,
        };
        // A forget may have erased the title with the content it was made of: an import never
        // writes a title back into a session that holds a forgotten node. (A session whose
        // every node was new holds none, so a first import reads nothing more.)
        if wanted.is_some()
            && new_nodes < nodes
            && holds_forgotten(store, &session.id).map_err(store_err)?
        {
            wanted = None;
        }
        let mut title = current;
        if let Some(t) = wanted {
            match store.set_title(&session.id, Some(t.clone())) {
                Ok(()) => title = Some(t),
                Err(crate::Error::Unsupported { .. }) => {}
                Err(e) => return Err(store_err(e)),
            }
        }
        if nodes > 0
            && let Some(project) = project
        {
            match store.set_project(&session.id, Some(project)) {
                Ok(()) | Err(crate::Error::Unsupported { .. }) => {}
                Err(e) => return Err(store_err(e)),
            }
        }
        let mut head = None;
        if new_nodes > 0
            && let Some(target) = session.head
        {
            // As of the head's own time: `updated_at` stays the transcript's, not the import's.
            let at = store.node(&session.id, &target).map_err(store_err)?.map(|n| n.created_at);
            match at {
                Some(at) => store.set_head_at(&session.id, &target, at),
                None => store.set_head(&session.id, &target),
            }
            .map_err(store_err)?;
            head = Some(target);
        }
        summary.sessions.push(SessionSummary {
            session: session.id,
            title,
            nodes,
            new_nodes,
            branches: session.branches,
            head,
        });
    }
    Ok(summary)
}

/// Whether `session` holds a node a forget erased (a store that cannot list its nodes holds
/// none, as far as an import can tell).
fn holds_forgotten<S: SessionStore + ?Sized>(
    store: &S,
    session: &SessionId,
) -> Result<bool, crate::Error> {
    match store.nodes(session) {
        Ok(nodes) => Ok(nodes.iter().any(Node::is_forgotten)),
        Err(crate::Error::Unsupported { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Reads, parses and imports one [`Unit`] into `store`.
pub fn import_unit<S: SessionStore + ?Sized>(store: &S, unit: &Unit) -> Result<Summary, Error> {
    let parsed = unit.parse()?;
    import_into(store, parsed, unit.first_path())
}
