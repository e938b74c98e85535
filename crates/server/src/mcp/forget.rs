//! Forgetting through this crate's faces (see `scriptorium_backend::forget`): the MCP tool
//! `memory_forget` and the REST route `POST /api/memory/forget` take the same request
//! ([`ForgetArgs`]) and give the same answer ([`ForgetOutput`]).
//!
//! Key decision: without `confirm: true` a request only plans — nothing is written, and the plan
//! is the list a person confirms — so a missing confirmation cannot forget anything by
//! construction. A confirmed request plans again and carries that plan out: what goes is what
//! the store, the archive and the topics hold at that moment (a turn appended to the session
//! since the dry run goes too). The answer never holds the `matching` text, and lists the large
//! sets (a long session's messages and records) as counts.
//!
//! # Limitations
//!
//! - Forgets through one process (the MCP server, or the web server, whose requests may come at
//!   once) run one at a time ([`FORGETTING`]); a forget another process is carrying out at that
//!   moment is not detected as running: its intent is resumed here as a crashed one would be.

use std::sync::{Mutex, PoisonError};

use scriptorium_backend::forget::{self, ForgetPlan, MIN_MATCHING_CHARS, Selector};
use scriptorium_backend::memory::MemoryWorkspace;
use scriptorium_backend::wire::{Code, WireError};
use scriptorium_session_dag::SessionStore;

pub(crate) use super::schema::{ForgetArgs, ForgetOutput};
use super::schema::{ForgetDone, ForgetPlanOutput, OneOrMany};

/// Held for the whole of a forget (resume, plan, execute): two requests of one process never
/// carry out the same intent at once.
static FORGETTING: Mutex<()> = Mutex::new(());

/// A checked forget request: what to forget, and whether to do it now.
#[derive(Clone, Debug)]
pub(crate) struct ForgetRequest {
    selectors: Vec<Selector>,
    confirm: bool,
}

fn invalid(message: impl Into<String>) -> WireError {
    WireError::new(Code::InvalidArgument, message)
}

impl ForgetArgs {
    /// The request, checked: at least one selector, no empty list, no blank ID, a `matching`
    /// text of at least [`MIN_MATCHING_CHARS`] characters (`INVALID_ARGUMENT` otherwise).
    pub(crate) fn into_request(self) -> Result<ForgetRequest, WireError> {
        let mut selectors = Vec::new();
        type Kind = fn(String) -> Selector;
        let lists: [(&str, Option<OneOrMany>, Kind); 3] = [
            ("session", self.session, Selector::Session),
            ("record", self.record, Selector::Record),
            ("block", self.block, Selector::Block),
        ];
        for (name, list, selector) in lists {
            let Some(OneOrMany(items)) = list else { continue };
            if items.is_empty() {
                return Err(invalid(format!("{name} must name at least one")));
            }
            for item in items {
                if item.trim().is_empty() {
                    return Err(invalid(format!("a {name} must not be blank")));
                }
                selectors.push(selector(item.trim().to_owned()));
            }
        }
        if let Some(text) = self.matching {
            if text.trim().chars().count() < MIN_MATCHING_CHARS {
                return Err(invalid(format!(
                    "matching needs at least {MIN_MATCHING_CHARS} characters (a shorter text \
                     would forget most of the memory)"
                )));
            }
            selectors.push(Selector::Matching(text));
        }
        if selectors.is_empty() {
            return Err(invalid("say what to forget: session, record, block or matching"));
        }
        Ok(ForgetRequest { selectors, confirm: self.confirm.unwrap_or(false) })
    }
}

/// Plans `request` and, when it is confirmed and there is something to forget, carries the
/// plan out (see `scriptorium_backend::forget::execute`: every step is durable and resumable;
/// `remote` is the sync remote whose history is replaced). A forget a crash interrupted is
/// finished first.
pub(crate) fn forget(
    memory: &MemoryWorkspace,
    store: &dyn SessionStore,
    remote: Option<&str>,
    request: &ForgetRequest,
) -> Result<ForgetOutput, WireError> {
    let _one_at_a_time = FORGETTING.lock().unwrap_or_else(PoisonError::into_inner);
    if forget::under_way(memory.workspace().root()) {
        forget::resume(memory, store, remote).map_err(|e| e.wire())?;
    }
    let plan = forget::plan(memory, store, &request.selectors).map_err(|e| e.wire())?;
    if !request.confirm || plan.is_empty() {
        return Ok(ForgetOutput { ok: true, forgotten: false, plan: shown(&plan), done: None });
    }
    let report = forget::execute(memory, store, plan, remote).map_err(|e| e.wire())?;
    Ok(ForgetOutput {
        ok: true,
        forgotten: true,
        plan: shown(&report.plan),
        done: Some(ForgetDone {
            commits_rewritten: report.commits_rewritten,
            revision: report.revision,
            commit: report.commit,
            remote: report.remote,
        }),
    })
}

/// Finishes a forget a crash interrupted, if there is one (what every command that opens the
/// home does, see `scriptorium_backend::forget::resume`); a failure is logged, and the next
/// forget request tries again and reports it.
pub(crate) fn finish_interrupted(
    memory: &MemoryWorkspace,
    store: &dyn SessionStore,
    remote: Option<&str>,
) {
    let _one_at_a_time = FORGETTING.lock().unwrap_or_else(PoisonError::into_inner);
    if forget::under_way(memory.workspace().root())
        && let Err(error) = forget::resume(memory, store, remote)
    {
        tracing::warn!(%error, "an interrupted forget could not be finished yet");
    }
}

/// The plan as the faces show it: never the `matching` text.
fn shown(plan: &ForgetPlan) -> ForgetPlanOutput {
    ForgetPlanOutput {
        id: plan.id.clone(),
        sessions: plan.sessions.clone(),
        messages: plan.node_count(),
        titles: plan.titles.len(),
        records: plan.records.len(),
        blocks: plan.blocks.iter().cloned().collect(),
        uncited: plan.uncited.iter().cloned().collect(),
        files: plan.files.clone(),
        commits: plan.commits,
    }
}
