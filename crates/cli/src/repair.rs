//! `scriptorium repair --workspace-id [ID] [--new]`: what the workspace refuses to guess.
//!
//! A workspace whose `.scriptorium/workspace-id` is lost, and whose revision record predates
//! keeping the ID, opens with `WORKSPACE_ID_MISSING`: a new ID would make every turn already
//! written pending again. The session store knows the old ID: every written turn carries it in
//! its marker. Without `ID`, the repair restores the one ID the markers name; with several it
//! lists them and asks for one; `--new` starts afresh (every turn is then written again).

use std::collections::BTreeMap;
use std::process::ExitCode;

use scriptorium_backend::engine::{IdSource, RandomIds, WorkspaceId, restore_workspace_id};
use scriptorium_backend::wire::Code;
use scriptorium_markers::MARKER_KEY;
use scriptorium_session_dag::Page;

use crate::home::Home;
use crate::output::{outln, problem, usage};

/// Arguments of `scriptorium repair`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Restore a lost workspace ID: the one given, or the one the session markers name.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    workspace_id: Option<String>,
    /// With --workspace-id: give the workspace a new ID (every written turn is written again).
    #[arg(long, requires = "workspace_id")]
    new: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// How many written turns name each workspace ID, over every branch of every session.
fn marker_ids(home: &Home) -> anyhow::Result<BTreeMap<String, usize>> {
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    let Some(store) = crate::existing_session_store(home)? else {
        return Ok(ids);
    };
    let mut offset = 0;
    loop {
        let page = store.list_sessions(Page { offset, limit: 500 })?;
        for session in &page {
            let mut seen = std::collections::BTreeSet::new();
            for tip in store.tips(&session.id)? {
                for node in store.branch(&session.id, Some(&tip))? {
                    if let Some(id) = node.metadata.get(MARKER_KEY)
                        && seen.insert(node.id.0.clone())
                    {
                        *ids.entry(id.clone()).or_default() += 1;
                    }
                }
            }
        }
        if page.len() < 500 {
            return Ok(ids);
        }
        offset += page.len();
    }
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: &Args) -> anyhow::Result<ExitCode> {
    let Some(given) = &args.workspace_id else {
        return Err(usage(Code::Usage, "nothing to repair: pass --workspace-id"));
    };
    let id = if args.new {
        WorkspaceId::parse(&format!("w-{}", RandomIds::default().hex8())).ok()
    } else if given.is_empty() {
        let found = marker_ids(home)?;
        let mut valid = found.keys().filter_map(|id| WorkspaceId::parse(id).ok());
        match (valid.next(), valid.next()) {
            (Some(id), None) => Some(id),
            (None, _) => {
                return Err(problem(
                    Code::NotFound,
                    "no written turn names a workspace ID; pass the old one \
                     (`--workspace-id w-xxxxxxxx`) or start afresh with `--new` (every turn \
                     is then written again)",
                ));
            }
            (Some(_), Some(_)) => {
                let listed: Vec<String> =
                    found.iter().map(|(id, turns)| format!("{id} ({turns} turns)")).collect();
                return Err(problem(
                    Code::InvalidArgument,
                    format!(
                        "the session markers name several workspace IDs: {}; pass the one \
                         of this workspace with `--workspace-id ID`",
                        listed.join(", ")
                    ),
                ));
            }
        }
    } else {
        WorkspaceId::parse(given).ok()
    };
    let Some(id) = id else {
        return Err(usage(
            Code::InvalidArgument,
            format!("not a workspace ID (w- and 8 hex digits): {given}"),
        ));
    };
    restore_workspace_id(home.memory(), &id)?;
    if args.json {
        crate::output::document(&serde_json::json!({ "workspace_id": id.as_str() }))?;
    } else {
        outln!("workspace ID restored: {id}");
    }
    Ok(ExitCode::SUCCESS)
}
