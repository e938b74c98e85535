//! One write pass and the two entry points (see `ARCHITECTURE.md#crateswriter`):
//! `write(session, force)` and `reorganize()`.
//!
//! One pass: pending records (markers) → the first batch up to the threshold → archive the
//! batch as sources (idempotent, outside the transaction: archive first) → a transaction whose
//! new evidence is restricted to the batch → the model edits the stage → validate; on
//! rejection the stage is rolled back and the model gets exactly one repair turn with the
//! violations and a rule-specific hint; a second rejection is `COMMIT_REJECTED` → install
//! (with the organizer counters) → mark the batch, only when the install changed a topic file
//! → organize triggers.
//!
//! Key decision: effects happen in the order archive → install → mark, and the install records
//! the batch it wrote (its source IDs' key, in the revision record, atomically with the topics:
//! [`BeginOptions::batch`]). A write that dies between install and mark (a kill, ENOSPC, a
//! failing session store) is finished by the next pass, which finds the batch among the
//! workspace's installed batches and marks it without running the model again: a batch is never
//! written twice. The archive append is idempotent, so a crash before the install re-archives
//! nothing either.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use scriptorium_markers::{WorkspaceId, boundary_plan, first_batch, mark, pending};
use scriptorium_redact::{Counts, Redactor};
use scriptorium_session_dag::{Node, NodeId, Role, SessionId, SessionStore};
use scriptorium_topics_format::rewrite::{rewrite_in_view, rewrite_topic};
use scriptorium_topics_format::source::ArchiveRecord;
use scriptorium_topics_format::source::id::bounded_handle_part;
use scriptorium_topics_format::tokens;
use scriptorium_txn::validate::Required;
use scriptorium_txn::validate::Violation;
use scriptorium_txn::{
    Batch, BeginOptions, Counters, ErrorCode, Installed, LockTimeout, Rebase, Staged, StagedChange,
    Workspace,
};
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::agent::{Model, RunReport, Task, TaskKind, TaskTurn};
use crate::outcome::{FailureCode, WriteFailure};
use crate::prompt;
use crate::tools::Tools;
use crate::usage::{Ledger, LedgerEntry, TokenUsage};

/// The source provider of archived session records (see `docs/format.md#session-source-ids`).
pub const PROVIDER: &str = "openprogram";

/// How the writer behaves (the defaults are the Python implementation's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterConfig {
    /// Tokens (o200k_base, content only) that make a batch due: 16 000.
    pub threshold_tokens: usize,
    /// An unforced pass also writes a smaller batch whose newest turn is this old: 1 hour.
    pub idle_allowance: Duration,
    /// Most model turns per run: 20.
    pub max_turns: u32,
    /// How long a write waits for the workspace lock: 1 s.
    pub lock_timeout: Duration,
    /// How long an organize pass waits for the lock: 5 s.
    pub organize_lock_timeout: Duration,
    /// Local organize after this many batches: 5.
    pub organize_batches: u64,
    /// … or this many tokens: 40 000.
    pub organize_tokens: u64,
    /// Global organize at most this often: 1 day.
    pub global_interval: Duration,
    /// Whether the organize triggers run at all.
    pub organize: bool,
    /// The most tokens the writer's model runs may use per day (UTC), by the ledger
    /// ([`crate::usage::Ledger`]); once reached, a write ends `WRITER_BUDGET_REACHED`
    /// (retryable, the turns stay pending) before running the model. `None`: no limit.
    pub max_tokens_per_day: Option<u64>,
}

impl Default for WriterConfig {
    fn default() -> Self {
        WriterConfig {
            threshold_tokens: 16_000,
            idle_allowance: Duration::from_secs(3600),
            max_turns: crate::agent::MAX_TURNS,
            lock_timeout: Duration::from_secs(1),
            organize_lock_timeout: Duration::from_secs(5),
            organize_batches: 5,
            organize_tokens: 40_000,
            global_interval: Duration::from_secs(86_400),
            organize: true,
            max_tokens_per_day: None,
        }
    }
}

/// What one batch did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BatchReport {
    /// The branch tip the batch was taken from.
    pub tip: Option<String>,
    /// The batch's source IDs, oldest first.
    pub source_ids: Vec<String>,
    /// Its tokens.
    pub tokens: usize,
    /// The topic files the install changed.
    pub changed_files: Vec<String>,
    /// The block IDs normalization assigned.
    pub block_ids: Vec<String>,
    /// The installed revision.
    pub revision: String,
    /// Whether the repair turn was needed.
    pub repaired: bool,
    /// How many times the model's changes were carried onto a newer revision, because another
    /// transaction (a note, an edit, another session's write) installed while they were made.
    pub rebases: u32,
    /// The batch had been installed by an earlier, interrupted write, or written by another
    /// clone of this memory (its records are cited already), and was only marked now (no
    /// model ran; `changed_files` and `block_ids` are empty).
    pub recovered: bool,
    /// The transaction that installed the batch.
    pub txn_id: String,
    /// Organize passes this batch triggered.
    pub organized: Vec<OrganizeReport>,
    /// What this write redacted, by rule (never a value): from records the store still held
    /// unredacted (a home filled before redaction existed: run `scriptorium redact`), and from
    /// the topic text the model wrote. Empty when there was nothing to redact.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub redacted: BTreeMap<String, usize>,
    /// What the model runs of this batch used (its repair turn and the organize passes it
    /// triggered included); zero when no model ran or the model reports nothing.
    pub usage: TokenUsage,
}

/// What a completed write did (empty: nothing was owed or due).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WriteReport {
    /// The session.
    pub session: String,
    /// The batches written, in order.
    pub batches: Vec<BatchReport>,
}

/// What an organize pass did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrganizeReport {
    /// `ok`, `empty`, `busy` or `failed`.
    pub status: String,
    /// How many topic files it was given.
    pub topics: usize,
    /// The topic files the pass changed, sorted.
    pub changed_files: Vec<String>,
    /// The failure, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WriteFailure>,
}

/// The writer of one workspace.
#[derive(Clone)]
pub struct Writer {
    ws: Workspace,
    store: Option<Arc<dyn SessionStore + Send + Sync>>,
    model: Arc<dyn Model>,
    config: WriterConfig,
    clock: Arc<dyn Fn() -> OffsetDateTime + Send + Sync>,
    redactor: Redactor,
    /// What every model run of this writer (and its clones) used.
    spent: Arc<std::sync::Mutex<TokenUsage>>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("model", &self.model.name())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The result of one pass.
enum Pass {
    /// Not due (below threshold, not forced) or nothing pending.
    NotDue,
    /// The model changed no topic file: nothing installed, nothing marked. What the model did
    /// (see [`run_summary`]).
    NoChange(String),
    /// Installed and marked.
    Written(Box<BatchReport>),
}

impl Writer {
    /// A writer over `ws` (opened with whatever observers the caller wants: views, index, git)
    /// and the session `store`, running `model`.
    #[expect(clippy::disallowed_methods, reason = "the default behind the writer's injected clock")]
    pub fn new(
        ws: Workspace,
        store: Arc<dyn SessionStore + Send + Sync>,
        model: Arc<dyn Model>,
        config: WriterConfig,
    ) -> Self {
        Writer {
            ws,
            store: Some(store),
            model,
            config,
            clock: Arc::new(OffsetDateTime::now_utc),
            redactor: Redactor::builtin(),
            spent: Arc::default(),
        }
    }

    /// A writer without sessions: it can only [`Writer::reorganize`] (a `write` fails with
    /// `SESSION_NODES_UNAVAILABLE`).
    #[expect(clippy::disallowed_methods, reason = "the default behind the writer's injected clock")]
    pub fn organizer(ws: Workspace, model: Arc<dyn Model>, config: WriterConfig) -> Self {
        Writer {
            ws,
            store: None,
            model,
            config,
            clock: Arc::new(OffsetDateTime::now_utc),
            redactor: Redactor::builtin(),
            spent: Arc::default(),
        }
    }

    fn store(&self) -> Result<&(dyn SessionStore + Send + Sync), WriteFailure> {
        self.store.as_deref().ok_or_else(|| {
            WriteFailure::permanent(FailureCode::SessionNodesUnavailable, "no session store")
        })
    }

    /// The same writer with another clock (tests).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Fn() -> OffsetDateTime + Send + Sync>) -> Self {
        self.clock = clock;
        self
    }

    /// The same writer redacting with `redactor` (the owner's patterns and allowlist; the
    /// built-in rules by default). What the writer reads from the store is redacted again
    /// before it is archived or sent to the model (a store filled before redaction existed),
    /// and so is every topic text the model writes, before it is validated.
    #[must_use]
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// What the model runs of this writer (and its clones) used so far, whatever their
    /// outcome.
    pub fn spent(&self) -> TokenUsage {
        *self.spent.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The usage ledger of the workspace.
    pub fn ledger(&self) -> Ledger {
        Ledger::of(self.ws.root())
    }

    /// `WRITER_BUDGET_REACHED` (retryable) when today's usage reached the daily budget.
    fn check_budget(&self) -> Result<(), WriteFailure> {
        let Some(max) = self.config.max_tokens_per_day else { return Ok(()) };
        let today = self.ledger().totals((self.clock)()).today;
        if today.total_tokens < max {
            return Ok(());
        }
        Err(WriteFailure {
            reason: format!(
                "the writer used {} tokens today (UTC), its budget is {max} \
                 ([memory.writer] max_tokens_per_day): the turns stay pending for tomorrow's \
                 writes, or raise the budget",
                today.total_tokens
            ),
            retryable: true,
            code: FailureCode::WriterBudgetReached,
        })
    }

    /// The name of the model that writes.
    pub fn model_name(&self) -> String {
        self.model.name()
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    fn workspace_id(&self) -> Result<WorkspaceId, WriteFailure> {
        Ok(self.ws.workspace_id().clone())
    }

    /// Writes what `session` owes.
    ///
    /// Unforced: one pass over the head branch, if the batch is due (threshold or idle
    /// allowance). Forced (a session boundary): the head branch batch after batch until nothing
    /// is owed, then every other live tip with pending records the same way, whatever their
    /// size (a small abandoned branch, such as an edited and re-sent prompt, is conversation
    /// too, and would otherwise stay pending for ever); a pass that changes nothing is
    /// `WRITER_NO_PROGRESS`.
    ///
    /// `Ok` is "nothing to report" (the report lists what was written, possibly nothing); an
    /// error is retryable (lock held, model transport…) or permanent, with its code.
    pub fn write(&self, session: &SessionId, force: bool) -> Result<WriteReport, WriteFailure> {
        if session.0.trim().is_empty() {
            return Err(WriteFailure::permanent(FailureCode::MissingSessionId, "no session id"));
        }
        let workspace = self.workspace_id()?;
        let store = self.store()?;
        let mut report = WriteReport { session: session.0.clone(), batches: Vec::new() };
        if !force {
            let owed = pending(store, session, None, &workspace).map_err(unavailable)?;
            match self.pass(session, None, &owed, false)? {
                Pass::Written(batch) => report.batches.push(*batch),
                Pass::NoChange(what) if self.model.edits_expected() => {
                    return Err(no_edits(&what));
                }
                Pass::NoChange(_) | Pass::NotDue => {}
            }
            return Ok(report);
        }
        let count = |text: &str| tokens::count(text);
        // Every branch with pending records (a threshold of 0), the head first.
        let plan = boundary_plan(store, session, &workspace, 0, &count).map_err(unavailable)?;
        for branch in plan {
            loop {
                let owed =
                    pending(store, session, Some(&branch.tip), &workspace).map_err(unavailable)?;
                if owed.is_empty() {
                    break;
                }
                match self.pass(session, Some(&branch.tip), &owed, true)? {
                    Pass::Written(batch) => report.batches.push(*batch),
                    Pass::NotDue => break,
                    Pass::NoChange(what) if self.model.edits_expected() => {
                        return Err(no_edits(&what));
                    }
                    Pass::NoChange(what) => {
                        return Err(WriteFailure::permanent(
                            FailureCode::WriterNoProgress,
                            format!("the writer made no progress: {what}"),
                        ));
                    }
                }
            }
        }
        Ok(report)
    }

    /// One pass over `owed` (the pending records of the branch ending at `tip`).
    fn pass(
        &self,
        session: &SessionId,
        tip: Option<&NodeId>,
        owed: &[Node],
        force: bool,
    ) -> Result<Pass, WriteFailure> {
        if let Some(report) = self.finish_installed(session, tip, owed)? {
            return Ok(Pass::Written(Box::new(report)));
        }
        let count = |text: &str| tokens::count(text);
        let batch = first_batch(owed, self.config.threshold_tokens, &count);
        if batch.is_empty() {
            return Ok(Pass::NotDue);
        }
        let mut redacted = Counts::default();
        let batch: &[Node] = &self.redacted_nodes(batch, &mut redacted);
        let batch_tokens: usize = batch.iter().map(|n| tokens::count(&n.content)).sum();
        if !force && !self.due(batch, batch_tokens) {
            return Ok(Pass::NotDue);
        }
        // Before anything is archived or the model runs: over the budget, nothing happens.
        self.check_budget()?;
        let records: Vec<ArchiveRecord> =
            batch.iter().map(|n| archive_record(session, n)).collect();
        self.ws
            .archive_sources(&records, LockTimeout::new(self.config.lock_timeout))
            .map_err(WriteFailure::from)?;
        let turns: Vec<TaskTurn> =
            batch.iter().zip(&records).map(|(node, r)| task_turn(node, &r.source_id())).collect();
        let observed = turns
            .iter()
            .filter_map(|t| t.timestamp.as_deref())
            .max()
            .and_then(|t| t.get(..10))
            .unwrap_or("undated")
            .to_owned();
        let allowed: BTreeSet<String> = turns.iter().map(|t| t.source_ref.clone()).collect();
        let source_ids: Vec<&str> = turns.iter().map(|t| t.source_ref.as_str()).collect();
        let staged = self
            .ws
            .begin(BeginOptions {
                allowed_new_sources: Some(allowed),
                lock_timeout: LockTimeout::new(self.config.lock_timeout),
                required: Required::StillPresent,
                message: Writer::commit_subject(session, batch.len()),
                batch: Some(Batch::new(&source_ids)),
                ..BeginOptions::default()
            })
            .map_err(WriteFailure::from)?;
        // Records a block of this memory cites already were written by another clone of it
        // (synced in through git, the session shared through PostgreSQL): mark them as
        // written, never write them twice.
        let cited =
            turns.iter().take_while(|t| staged.baseline().is_committed_ref(&t.source_ref)).count();
        if cited > 0 {
            staged.abort();
            let done = &batch[..cited];
            mark(self.store()?, session, done, &self.workspace_id()?).map_err(|e| {
                WriteFailure::permanent(
                    FailureCode::WriterFailureUnknown,
                    format!("could not mark records another clone wrote: {e}"),
                )
            })?;
            return Ok(Pass::Written(Box::new(BatchReport {
                tip: tip.map(|t| t.0.clone()),
                source_ids: turns[..cited].iter().map(|t| t.source_ref.clone()).collect(),
                tokens: done.iter().map(|n| tokens::count(&n.content)).sum(),
                changed_files: Vec::new(),
                block_ids: Vec::new(),
                revision: self
                    .ws
                    .installed_revision()
                    .map_err(WriteFailure::from)?
                    .as_str()
                    .to_owned(),
                repaired: false,
                rebases: 0,
                recovered: true,
                txn_id: self.ws.installed_txn_id().map_err(WriteFailure::from)?,
                organized: Vec::new(),
                redacted: redacted.0,
                usage: TokenUsage::default(),
            })));
        }
        let prompt_turns: Vec<prompt::Turn<'_>> = turns
            .iter()
            .map(|t| prompt::Turn {
                source_ref: &t.source_ref,
                speaker: &t.speaker,
                content: &t.content,
            })
            .collect();
        let project = self.store()?.session(session).ok().flatten().and_then(|s| s.project);
        let task = Task {
            kind: TaskKind::Write,
            system: prompt::system_prompt().to_owned(),
            prompt: prompt::write_task_for(
                &observed,
                project.as_deref(),
                &prompt_turns,
                &structure(&staged),
            ),
            turns: turns.clone(),
            project,
            max_turns: self.config.max_turns,
        };
        let mut counters = staged.counters();
        counters.local_batches += 1;
        counters.local_tokens += batch_tokens as u64;
        counters.write_commits_since_global += 1;
        let mut usage = TokenUsage::default();
        let ran = self.run_and_install(staged, task, counters, &mut usage);
        let (installed, repaired, rebases) = match ran {
            Ok(Ran::Installed { installed, repaired, rebases, redacted: output }) => {
                redacted.add(&output);
                (*installed, repaired, rebases)
            }
            Ok(Ran::NoChange(what)) => return Ok(Pass::NoChange(what)),
            // Another write of this session installed the batch meanwhile (the install
            // refused it under the lock, or found the workspace moved by that install): mark it
            // as that write would, write nothing. A move by anything else stays retryable.
            Err(failure)
                if matches!(
                    failure.code,
                    FailureCode::BatchInstalled | FailureCode::ConcurrentUpdate
                ) =>
            {
                return match self.finish_installed(session, tip, owed)? {
                    Some(report) => Ok(Pass::Written(Box::new(report))),
                    None => Err(failure),
                };
            }
            Err(failure) => return Err(failure),
        };
        mark(self.store()?, session, batch, &self.workspace_id()?).map_err(|e| {
            WriteFailure::permanent(
                FailureCode::WriterFailureUnknown,
                format!("installed {} but could not mark the batch: {e}", installed.revision),
            )
        })?;
        let before = self.spent();
        let organized = if self.config.organize { self.organize_triggers() } else { Vec::new() };
        let after = self.spent();
        if after != before {
            // What the organize passes this batch triggered used.
            let cost = match (after.cost_micro_usd, before.cost_micro_usd) {
                (Some(a), Some(b)) => Some(a.saturating_sub(b)),
                (Some(a), None) if before.total_tokens == 0 => Some(a),
                _ => None,
            };
            usage.add(&TokenUsage::new(
                after.input_tokens.saturating_sub(before.input_tokens),
                after.output_tokens.saturating_sub(before.output_tokens),
                cost,
            ));
        }
        Ok(Pass::Written(Box::new(BatchReport {
            tip: tip.map(|t| t.0.clone()),
            source_ids: turns.iter().map(|t| t.source_ref.clone()).collect(),
            tokens: batch_tokens,
            changed_files: topic_files(&installed),
            block_ids: installed.block_ids.values().map(|id| id.as_str().to_owned()).collect(),
            revision: installed.revision.as_str().to_owned(),
            repaired,
            rebases,
            recovered: false,
            txn_id: installed.txn_id.as_str().to_owned(),
            organized,
            redacted: redacted.0,
            usage,
        })))
    }

    /// `nodes` with their content redacted, adding what was redacted to `counts`.
    fn redacted_nodes(&self, nodes: &[Node], counts: &mut Counts) -> Vec<Node> {
        nodes
            .iter()
            .map(|node| {
                let redaction = self.redactor.redact(&node.content);
                if redaction.counts.is_empty() {
                    return node.clone();
                }
                counts.add(&redaction.counts);
                Node { content: redaction.text.into_owned(), ..node.clone() }
            })
            .collect()
    }

    /// Redacts the topic files the model changed in `staged`, block by block (block IDs and
    /// citations are never touched), adding what was redacted to `counts`.
    fn redact_stage(&self, staged: &mut Staged, counts: &mut Counts) -> Result<(), WriteFailure> {
        let found = std::cell::RefCell::new(Counts::default());
        let map = |text: &str| {
            let redaction = self.redactor.redact(text);
            if redaction.counts.is_empty() {
                return None;
            }
            found.borrow_mut().add(&redaction.counts);
            Some(redaction.text.into_owned())
        };
        for change in staged.changes().map_err(WriteFailure::from)? {
            let Some(text) = &change.text else { continue };
            if let Some(clean) = rewrite_topic(text, &map) {
                staged.write_file(&change.path, &clean).map_err(WriteFailure::from)?;
            }
        }
        counts.add(&found.into_inner());
        Ok(())
    }

    /// Finishes a batch that an earlier write installed but did not mark (it died in between):
    /// when the oldest records of `owed` are a batch the workspace recorded as installed, marks
    /// them, without archiving or running the model again.
    fn finish_installed(
        &self,
        session: &SessionId,
        tip: Option<&NodeId>,
        owed: &[Node],
    ) -> Result<Option<BatchReport>, WriteFailure> {
        let installed = self.ws.installed_batches().map_err(WriteFailure::from)?;
        if installed.is_empty() || owed.is_empty() {
            return Ok(None);
        }
        let ids: Vec<String> = owed.iter().map(|n| source_id(session, &n.id)).collect();
        let Some(found) = installed.iter().rev().find(|stamp| {
            stamp.batch.count > 0
                && stamp.batch.count <= ids.len()
                && Batch::new(&ids[..stamp.batch.count]) == stamp.batch
        }) else {
            return Ok(None);
        };
        let batch = &owed[..found.batch.count];
        mark(self.store()?, session, batch, &self.workspace_id()?).map_err(|e| {
            WriteFailure::permanent(
                FailureCode::WriterFailureUnknown,
                format!("could not mark the batch installed by {}: {e}", found.txn_id),
            )
        })?;
        let revision = self.ws.installed_revision().map_err(WriteFailure::from)?;
        let organized = if self.config.organize { self.organize_triggers() } else { Vec::new() };
        Ok(Some(BatchReport {
            tip: tip.map(|t| t.0.clone()),
            source_ids: ids[..found.batch.count].to_vec(),
            tokens: batch.iter().map(|n| tokens::count(&n.content)).sum(),
            changed_files: Vec::new(),
            block_ids: Vec::new(),
            revision: revision.as_str().to_owned(),
            repaired: false,
            rebases: 0,
            recovered: true,
            txn_id: found.txn_id.clone(),
            organized,
            redacted: BTreeMap::new(),
            usage: TokenUsage::default(),
        }))
    }

    /// The commit subject of a batch: `memory: write 12 turns of session <id>`. The session
    /// is named by its ID, never its title: a title is conversation text, and git messages
    /// must hold none (they travel to every clone and outlive a forget of the content).
    fn commit_subject(session: &SessionId, turns: usize) -> String {
        let plural = if turns == 1 { "" } else { "s" };
        format!("memory: write {turns} turn{plural} of session {session}")
    }

    /// Due when the batch reaches the threshold, or when it is non-empty and
    /// its newest turn is older than the idle allowance.
    fn due(&self, batch: &[Node], tokens: usize) -> bool {
        if tokens >= self.config.threshold_tokens {
            return true;
        }
        let newest = batch.iter().map(|n| n.created_at.0).max().unwrap_or(i64::MAX);
        let now_ms =
            i64::try_from((self.clock)().unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX);
        let idle = i64::try_from(self.config.idle_allowance.as_millis()).unwrap_or(i64::MAX);
        tokens > 0 && now_ms.saturating_sub(newest) >= idle
    }

    /// Runs the model on the stage, validates, repairs once, installs with `counters`.
    /// [`Ran::NoChange`]: the model changed no topic file (nothing installed).
    ///
    /// Another install while the model works (a note, a person's edit, another session's
    /// write) costs no repair turn and is no failure: the model's changes are carried onto the
    /// new revision ([`Workspace::begin_rebased`]) and validated there, as often as installs
    /// keep coming, up to [`MAX_REBASES`]; only the same block changed differently on both
    /// sides ends the write, retryably, with the turns still pending.
    fn run_and_install(
        &self,
        staged: Staged,
        task: Task,
        counters: Counters,
        usage: &mut TokenUsage,
    ) -> Result<Ran, WriteFailure> {
        let opts = staged.options().clone();
        let mut staged = staged;
        let mut current = task;
        let mut repaired = false;
        let mut rebases = 0;
        let mut redacted = Counts::default();
        loop {
            let summary = self.run_model(&mut staged, &current, usage)?;
            self.redact_stage(&mut staged, &mut redacted)?;
            let organize = matches!(current.kind, TaskKind::Organize | TaskKind::OrganizeRepair);
            let violations = match self.settle(staged, &opts, &counters, organize, &mut rebases)? {
                Settled::Installed(installed) => {
                    return Ok(Ran::Installed { installed, repaired, rebases, redacted });
                }
                Settled::NoChange => return Ok(Ran::NoChange(summary)),
                Settled::Rejected(violations) => violations,
            };
            let error = violations.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("\n");
            if repaired {
                return Err(WriteFailure::permanent(
                    FailureCode::CommitRejected,
                    format!("repair edits were rejected too: {error}"),
                ));
            }
            // The repair starts from the memory as it is now, not from the tree of the first
            // `begin` (another install may have landed since).
            staged = self.ws.begin(opts.clone()).map_err(WriteFailure::from)?;
            let pairs: Vec<(&str, &str)> =
                violations.iter().map(|v| (v.code.as_str(), v.message.as_str())).collect();
            let hint = prompt::repair_hint(&pairs);
            current = Task {
                kind: match current.kind {
                    TaskKind::Organize | TaskKind::OrganizeRepair => TaskKind::OrganizeRepair,
                    _ => TaskKind::WriteRepair,
                },
                prompt: prompt::repair_task(&error, hint.as_deref(), &current.prompt),
                ..current
            };
            repaired = true;
        }
    }

    /// Validates and installs what the model left in `staged`, carrying it onto the current
    /// revision first whenever another transaction installed since its `begin` (see
    /// [`Writer::run_and_install`]).
    fn settle(
        &self,
        mut staged: Staged,
        opts: &BeginOptions,
        counters: &Counters,
        organize: bool,
        rebases: &mut u32,
    ) -> Result<Settled, WriteFailure> {
        loop {
            let changes = staged.changes().map_err(WriteFailure::from)?;
            // Another install or archive append since `begin` (an edit made outside any
            // transaction moves no counter; the install's compare-and-set catches that one).
            let moved = self.ws.installed_revision().map_err(WriteFailure::from)?.counter()
                != staged.base_revision().counter();
            if moved {
                staged = self.rebase(opts, &changes, rebases)?;
            }
            staged.set_counters(counters.clone());
            let validated = match staged.validate() {
                Ok(validated) => validated,
                // An archive append that landed after the check above (a note's source):
                // carry the changes over once more rather than blame the model.
                Err(rejected)
                    if rejected
                        .violations()
                        .iter()
                        .all(|v| v.code == ErrorCode::SourcesChanged) =>
                {
                    staged = self.rebase(opts, &changes, rebases)?;
                    continue;
                }
                Err(rejected) => return Ok(Settled::Rejected(rejected.into_parts().1)),
            };
            let changed_topics = validated.changed_files().iter().any(|p| p.starts_with("topics/"));
            if !changed_topics && !organize {
                return Ok(Settled::NoChange);
            }
            // An organize pass that changed no topic installs nothing (its counters are
            // saved, the revision stays, no commit).
            match validated.install() {
                Ok(installed) => return Ok(Settled::Installed(Box::new(installed))),
                Err(error) if error.code() == ErrorCode::ConcurrentUpdate => {
                    staged = self.rebase(opts, &changes, rebases)?;
                }
                Err(error) => return Err(WriteFailure::from(error)),
            }
        }
    }

    /// A transaction at the current revision holding `changes` (see
    /// [`Workspace::begin_rebased`]).
    fn rebase(
        &self,
        opts: &BeginOptions,
        changes: &[StagedChange],
        rebases: &mut u32,
    ) -> Result<Staged, WriteFailure> {
        *rebases += 1;
        if *rebases > MAX_REBASES {
            return Err(WriteFailure {
                reason: format!(
                    "the memory moved {MAX_REBASES} times while this write was being installed; \
                     the turns stay pending for the next write"
                ),
                retryable: true,
                code: FailureCode::ConcurrentUpdate,
            });
        }
        match self.ws.begin_rebased(opts.clone(), changes).map_err(WriteFailure::from)? {
            Rebase::Staged(staged) => Ok(*staged),
            Rebase::Conflict(paths) => Err(WriteFailure {
                reason: format!(
                    "while the model wrote, another transaction changed the same paragraphs of \
                     {}; nothing was installed and the turns stay pending for the next write",
                    paths.join(", ")
                ),
                retryable: true,
                code: FailureCode::ConcurrentUpdate,
            }),
        }
    }

    /// Runs the model; returns what it did, in words ([`run_summary`]).
    fn run_model(
        &self,
        staged: &mut Staged,
        task: &Task,
        usage: &mut TokenUsage,
    ) -> Result<String, WriteFailure> {
        let mut tools = Tools::new(staged);
        let result = self.model.run(task, &mut tools);
        self.audit(task, &tools, &result);
        self.account(task, &result, usage);
        let report = result.map_err(WriteFailure::from)?;
        Ok(run_summary(&report, tools.log()))
    }

    /// Counts what a run used, whatever its outcome: in `usage`, the writer's total and the
    /// ledger (a run that reported nothing adds nothing).
    fn account(
        &self,
        task: &Task,
        result: &Result<RunReport, crate::model::ModelError>,
        usage: &mut TokenUsage,
    ) {
        let spent = match result {
            Ok(report) => TokenUsage::new(
                report.usage.input_tokens,
                report.usage.output_tokens,
                report.cost_micro_usd,
            ),
            Err(error) => error.spent,
        };
        if spent.is_empty() {
            return;
        }
        usage.add(&spent);
        self.spent.lock().unwrap_or_else(std::sync::PoisonError::into_inner).add(&spent);
        let stage = serde_json::to_value(task.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let entry = LedgerEntry {
            at: (self.clock)().format(&Rfc3339).unwrap_or_default(),
            model: self.model.name(),
            stage,
            usage: spent,
        };
        // Best effort: the ledger is derived, a write that installed stays installed.
        let _ = self.ledger().append(&entry);
    }

    /// Appends one line to `.scriptorium/agent-history.jsonl` (best effort), redacted: the
    /// prompt is already, but the model's reply and tool calls are its own text.
    fn audit(
        &self,
        task: &Task,
        tools: &Tools<'_>,
        result: &Result<RunReport, crate::model::ModelError>,
    ) {
        let at = (self.clock)().format(&Rfc3339).unwrap_or_default();
        let mut line = serde_json::json!({
            "at": at,
            "stage": task.kind,
            "model": self.model.name(),
            "prompt": task.prompt,
            "tools": tools.log(),
        });
        match result {
            Ok(report) => {
                line["rounds"] = report.rounds.into();
                line["input_tokens"] = report.usage.input_tokens.into();
                line["output_tokens"] = report.usage.output_tokens.into();
                line["stop_reason"] = serde_json::to_value(&report.stop).unwrap_or_default();
                line["reply"] = report.reply.clone().into();
            }
            Err(error) => line["error"] = error.to_string().into(),
        }
        let line = line.to_string();
        let map = |text: &str| {
            let redaction = self.redactor.redact(text);
            (!redaction.counts.is_empty()).then(|| redaction.text.into_owned())
        };
        let line = rewrite_in_view("agent-history.jsonl", &line, &map).unwrap_or(line);
        let path = self.ws.root().join(".scriptorium").join("agent-history.jsonl");
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&path);
        if let Ok(mut file) = file {
            let _ = writeln!(file, "{line}");
        }
    }

    /// The organize triggers, after a batch installed.
    fn organize_triggers(&self) -> Vec<OrganizeReport> {
        let mut out = Vec::new();
        let Ok(counters) = self.ws.counters() else { return out };
        if counters.local_batches >= self.config.organize_batches
            || counters.local_tokens >= self.config.organize_tokens
        {
            out.push(self.organize(|c| {
                c.local_batches = 0;
                c.local_tokens = 0;
            }));
        }
        let Ok(counters) = self.ws.counters() else { return out };
        let now = (self.clock)();
        let stale = counters.last_global_at.as_deref().is_none_or(|at| {
            OffsetDateTime::parse(at, &Rfc3339).map_or(true, |last| {
                (now - last).whole_seconds() >= self.config.global_interval.as_secs() as i64
            })
        });
        if counters.write_commits_since_global > 0 && stale {
            let at = now.format(&Rfc3339).unwrap_or_default();
            out.push(self.organize(move |c| {
                c.write_commits_since_global = 0;
                c.last_global_at = Some(at.clone());
            }));
        }
        out
    }

    /// Reorganizes every topic file: restricted (no new sources), one repair
    /// turn; `{status: ok|empty|busy|failed, topics, changed_files}`.
    pub fn reorganize(&self) -> OrganizeReport {
        self.organize(|_| {})
    }

    fn organize(&self, update: impl FnOnce(&mut Counters)) -> OrganizeReport {
        if let Err(error) = self.check_budget() {
            return failed(0, error);
        }
        let staged = match self.ws.begin(BeginOptions {
            allowed_new_sources: Some(BTreeSet::new()),
            lock_timeout: LockTimeout::new(self.config.organize_lock_timeout),
            required: Required::StillPresent,
            message: "memory: reorganize topics".to_owned(),
            ..BeginOptions::default()
        }) {
            Ok(staged) => staged,
            Err(error) => return failed(0, WriteFailure::from(error)),
        };
        let topics: Vec<String> =
            staged.baseline_files().map(|f| format!("topics/{}", f.path)).collect();
        let mut counters = staged.counters();
        update(&mut counters);
        let counters_move = counters != staged.counters();
        if topics.is_empty() && !counters_move {
            return OrganizeReport {
                status: "empty".into(),
                topics: 0,
                changed_files: Vec::new(),
                error: None,
            };
        }
        let task = Task {
            kind: TaskKind::Organize,
            system: prompt::system_prompt().to_owned(),
            prompt: prompt::organize_task(&topics, &structure(&staged)),
            turns: Vec::new(),
            project: None,
            max_turns: self.config.max_turns,
        };
        match self.run_and_install(staged, task, counters, &mut TokenUsage::default()) {
            Ok(Ran::Installed { installed, .. }) => OrganizeReport {
                status: "ok".into(),
                topics: topics.len(),
                changed_files: topic_files(&installed),
                error: None,
            },
            Ok(Ran::NoChange(_)) => OrganizeReport {
                status: "ok".into(),
                topics: topics.len(),
                changed_files: Vec::new(),
                error: None,
            },
            Err(error) if error.code == FailureCode::ConcurrentUpdate => OrganizeReport {
                status: "busy".into(),
                topics: topics.len(),
                changed_files: Vec::new(),
                error: Some(error),
            },
            Err(error) => failed(topics.len(), error),
        }
    }
}

/// What a run of the model did (what `WRITER_NO_PROGRESS` reports): its rounds and stop
/// reason, the tool calls by name (with how many failed), and the start of its last reply.
fn run_summary(report: &RunReport, log: &[crate::tools::ToolLog]) -> String {
    let mut calls: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for entry in log {
        let counts = calls.entry(entry.tool.as_str()).or_default();
        counts.0 += 1;
        counts.1 += usize::from(entry.status != "ok");
    }
    let calls = if calls.is_empty() {
        "no tool calls".to_owned()
    } else {
        let listed: Vec<String> = calls
            .iter()
            .map(|(tool, (n, failed))| match failed {
                0 => format!("{tool} ×{n}"),
                f => format!("{tool} ×{n} ({f} failed)"),
            })
            .collect();
        format!("tool calls {}", listed.join(", "))
    };
    let stop = report
        .stop
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "none".to_owned());
    let reply: String = report.reply.split_whitespace().collect::<Vec<_>>().join(" ");
    let reply: String = reply.chars().take(160).collect();
    format!(
        "{} model round(s), stop reason {stop}, {calls}, no topic file changed; last reply: {:?}",
        report.rounds, reply
    )
}

/// How many times one write carries its changes onto a newer revision before it gives up
/// (retryably): each time, another transaction installed while it was being validated.
const MAX_REBASES: u32 = 16;

/// The outcome of running the model and installing what it did.
enum Ran {
    /// Installed, whether a repair turn was needed, and how many times the changes were
    /// carried onto a newer revision.
    /// And what was redacted from the model's changes.
    Installed { installed: Box<Installed>, repaired: bool, rebases: u32, redacted: Counts },
    /// The model changed no topic file; what it did (see [`run_summary`]).
    NoChange(String),
}

/// The outcome of validating and installing one model run.
enum Settled {
    Installed(Box<Installed>),
    /// The model changed no topic file.
    NoChange,
    /// Validation refused the model's changes.
    Rejected(Vec<Violation>),
}

fn failed(topics: usize, error: WriteFailure) -> OrganizeReport {
    let status = if error.code == FailureCode::ConcurrentUpdate { "busy" } else { "failed" };
    OrganizeReport { status: status.into(), topics, changed_files: Vec::new(), error: Some(error) }
}

/// `WRITER_NO_EDITS`: the agent ran and changed no topic file (`what` it did instead).
fn no_edits(what: &str) -> WriteFailure {
    WriteFailure::permanent(
        FailureCode::WriterNoEdits,
        format!("the agent ran and edited no topic file; the turns stay pending: {what}"),
    )
}

fn unavailable(error: scriptorium_markers::Error) -> WriteFailure {
    WriteFailure::permanent(FailureCode::SessionNodesUnavailable, error.to_string())
}

/// The topic files among an install's changed files.
fn topic_files(installed: &Installed) -> Vec<String> {
    installed.changed_files.iter().filter(|p| p.starts_with("topics/")).cloned().collect()
}

/// The structure listing of the stage's committed files.
fn structure(staged: &Staged) -> String {
    let files: Vec<(String, String)> =
        staged.baseline_files().map(|f| (format!("topics/{}", f.path), f.text.clone())).collect();
    prompt::structure(&files)
}

/// The archive record of a session node (its ID is [`source_id`]): the speaker fields come
/// from the node (trusted, runtime-owned), never from its content.
pub fn archive_record(session: &SessionId, node: &Node) -> ArchiveRecord {
    let role = match node.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Tool => "tool",
    };
    let ordinal = u64::try_from(node.created_at.0).unwrap_or(0);
    let mut record = ArchiveRecord::new(
        PROVIDER,
        part(&session.0, false),
        part(&node.id.0, true),
        ordinal,
        role,
        &node.content,
    );
    record.timestamp = node.created_at.to_rfc3339();
    if let Some(speaker) = &node.speaker {
        record.speaker_id = Some(speaker.id.clone());
        record.speaker_display = Some(speaker.display.clone());
    }
    record
}

/// One part of a source ID (see [`bounded_handle_part`]); an empty ID is `session`, as in the
/// reference.
fn part(id: &str, allow_slash: bool) -> String {
    if id.is_empty() { "session".to_owned() } else { bounded_handle_part(id, allow_slash) }
}

/// The source ID the writer archives node `node` of `session` under
/// (`openprogram/<session>/<node>`, see [`PROVIDER`]).
pub fn source_id(session: &SessionId, node: &NodeId) -> String {
    format!("{PROVIDER}/{}/{}", part(&session.0, false), part(&node.0, true))
}

/// The archive (workspace-relative) that holds the records of `session`: the v2 archive of
/// [`PROVIDER`] and the session's part of [`source_id`].
pub fn archive_path(session: &SessionId) -> String {
    scriptorium_topics_format::source::id::v2_path_of(PROVIDER, &part(&session.0, false))
}

fn task_turn(node: &Node, source_ref: &str) -> TaskTurn {
    let role = if node.role == Role::User { "user" } else { "assistant" };
    let fallback = if node.role == Role::User { "User" } else { "Assistant" };
    let (speaker, display) = match &node.speaker {
        Some(s) => (format!("{} ({})", s.display, s.id), s.display.clone()),
        None => (fallback.to_owned(), fallback.to_owned()),
    };
    TaskTurn {
        source_ref: source_ref.to_owned(),
        role: role.to_owned(),
        speaker,
        display,
        content: node.content.clone(),
        timestamp: node.created_at.to_rfc3339(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ids_encode_what_a_link_target_cannot_hold() {
        let id = |s: &str, n: &str| source_id(&SessionId(s.into()), &NodeId(n.into()));
        assert_eq!(
            id("ffae836b-9420-4060-ac13-7745215f90ff", "8a3c2b10-1111-2222-3333-444455556666"),
            "openprogram/ffae836b-9420-4060-ac13-7745215f90ff/8a3c2b10-1111-2222-3333-444455556666"
        );
        assert_eq!(id("a b", "line-6#0"), "openprogram/a%20b/line-6%230");
        assert_eq!(id("s", "会话(1)"), "openprogram/s/会话%281%29");
        assert_eq!(id("", "x"), "openprogram/session/x");
        // A slash in the thread would move the split: `a/b` + `c` and `a` + `b/c` differ.
        assert_eq!(id("a/b", "c"), "openprogram/a%2Fb/c");
        assert_eq!(id("a", "b/c"), "openprogram/a/b/c");
        assert_ne!(id("a/b", "c"), id("a", "b/c"));
        // Not printable: encoded, so the archive accepts the ID.
        assert_eq!(id("s", "x\u{2028}y"), "openprogram/s/x%E2%80%A8y");
        assert!(scriptorium_topics_format::source::is_v2_emittable(&id("s", "x\u{2028}y")));
    }
}
