//! `scriptorium demo`: the whole product on a fresh machine, with no model and no network — a
//! home in `./scriptorium-demo/` (or `--home`), a bundled conversation with a fork and a
//! compaction imported, written by the configured model (the journal writer when none is),
//! two preferences pinned to the core through the change API, a few searches, a tour of what
//! to look at next, and then the web UI on that home (unless `--no-serve`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use scriptorium_backend::config::ModelKind;
use scriptorium_backend::engine::{UpdateContext, UpdateRequest};
use scriptorium_backend::{LocalBackend, models};
use scriptorium_markers::pending;
use scriptorium_session_dag::import::{Format, Input, parse};
use scriptorium_session_dag::{NodeId, SessionId};
use scriptorium_writer::source_id;

use crate::home::Home;
use crate::output::outln;

/// The bundled conversation (written for the project): a trunk, a tool call, a compaction and
/// an edit fork (the rain-barrel question was abandoned for the compost question).
const CONVERSATION: &str = include_str!("../demo/garden-planning.jsonl");
const SESSION: &str = "garden-planning";

/// Arguments of `scriptorium demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// End with the tour instead of serving the web UI.
    #[arg(long)]
    no_serve: bool,
    /// Where the web UI listens (loopback).
    #[arg(long, default_value = scriptorium_server::web::DEFAULT_ADDR)]
    addr: std::net::SocketAddr,
}

/// The demo home: `--home` when given, else `./scriptorium-demo`.
pub(crate) fn home(flag: Option<PathBuf>) -> Home {
    Home::resolve(Some(flag.unwrap_or_else(|| PathBuf::from("scriptorium-demo"))))
}

/// Runs the demo, then serves the web UI on it (unless `--no-serve`).
pub(crate) fn run(home: &Home, args: &Args) -> anyhow::Result<ExitCode> {
    tour(home)?;
    if args.no_serve {
        return Ok(ExitCode::SUCCESS);
    }
    outln!("\nThe web UI (Topics, Timeline, Recent, Core) on this home:");
    crate::serve::run(home, &crate::serve::Args::loopback(args.addr))
}

/// Everything but the server; the backend is closed when it returns.
fn tour(home: &Home) -> anyhow::Result<()> {
    let root = home.root();
    outln!("Scriptorium demo in {}", root.display());
    let config = crate::config(home)?;
    let model = models::build(&config.model, root)?;
    if config.model.kind == ModelKind::Journal {
        outln!(
            "  no model configured: writing with the journal writer (one cited paragraph per user turn)"
        );
    } else {
        outln!("  writing with the configured model: {}", model.name());
    }
    let backend =
        LocalBackend::open(root, config.clone(), model).context("opening the demo home")?;

    // 1. Import the bundled conversation (idempotent).
    let path = Path::new("garden-planning.jsonl");
    let parsed = parse(Format::Jsonl, &[Input::new(path, CONVERSATION.as_bytes())])?;
    let summary = backend.intake().import_parsed(&**backend.store(), parsed, path)?;
    outln!(
        "\n1. imported {} nodes ({} new) of session `{SESSION}`: {} branches, a tool call, a compaction",
        summary.nodes(),
        summary.new_nodes(),
        summary.branches()
    );

    // 2. Write what the session owes (forced: a session boundary).
    let session = SessionId(SESSION.into());
    let outcome = backend.writer().write(&session, true);
    // `status` tells the last write's outcome whatever ran it, the demo's too.
    scriptorium_backend::runtime::status::WriterStatus::record_outcome(
        backend.memory().workspace().root(),
        &session,
        &outcome,
    );
    let report = outcome.map_err(|f| anyhow::anyhow!("{f}"))?;
    let files: Vec<&String> = report.batches.iter().flat_map(|b| &b.changed_files).collect();
    outln!("\n2. wrote {} batch(es) into {} file(s)", report.batches.len(), files.len());
    for file in files {
        outln!("     {file}");
    }
    let ws = backend.memory().workspace().clone();
    let workspace = ws.workspace_id().clone();
    let store = backend.store();
    let head = store.session(&session)?.and_then(|s| s.head);
    for tip in store.tips(&session)? {
        let owed = pending(&**store, &session, Some(&tip), &workspace)?;
        if head.as_ref() != Some(&tip) && owed.is_empty() {
            outln!(
                "     the abandoned branch ending at {} is written too (a forced write leaves nothing pending)",
                tip.0
            );
        }
    }

    // 3. Pin two preferences to the core (the change API: structured record operations).
    pin_core(backend.memory(), &session)?;
    outln!("\n3. the core block injected into every system prompt:\n");
    outln!("{}", indent(&backend.core_block()));

    // 4. Recall before a turn.
    for query in ["when do I plant tomatoes", "compost bin", "wasps near the door"] {
        let recall = backend.recall(query);
        let shown = if recall.is_empty() { "(nothing relevant)".to_owned() } else { recall };
        outln!("\n4. recall for \"{query}\":\n\n{}", indent(&shown));
    }

    // 5. The tour.
    let status = backend.status();
    let home_arg = root.display();
    outln!(
        "\n5. revision {}, {} turn(s) pending; every change is a git commit in {}/memory.\n",
        status.revision,
        status.pending_turns.map_or("?".into(), |n| n.to_string()),
        home_arg
    );
    outln!("Look around:");
    for command in [
        "browse",
        "get topics/core.md",
        "core",
        "search \"tomato seedlings\"",
        "sessions branches garden-planning",
        "log",
        "check --workspace {home}/memory",
    ] {
        let command = command.replace("{home}", &home_arg.to_string());
        outln!("  scriptorium --home {home_arg} {command}");
    }
    Ok(())
}

/// Creates `topics/core.md` with two preferences cited from the conversation, once.
fn pin_core(
    memory: &scriptorium_backend::memory::MemoryWorkspace,
    session: &SessionId,
) -> anyhow::Result<()> {
    let ws = memory.workspace();
    if ws.root().join("topics/core.md").exists() {
        return Ok(());
    }
    let cite = |node: &str, label: &str| serde_json::json!([{"source": source_id(session, &NodeId(node.into())), "label": label}]);
    let create = |content: &str, node: &str, label: &str| {
        serde_json::json!({"op": "create_record", "content": content, "time": null,
            "sources": cite(node, label),
            "destination": {"topic_path": "topics/core.md", "headings": ["Core"], "position": "end"}})
    };
    let body = serde_json::json!({
        "base_revision": ws.revision()?.as_str(),
        "commit_message": "Pin Mara's standing preferences to the core",
        "memory_changes": [
            create("Mara wants every quantity in metric units.", "u3", "metric units"),
            create("Mara is allergic to wasps: nothing that attracts them near the door.", "u2", "wasp allergy"),
        ],
    });
    memory.update(UpdateRequest::from_json(&body.to_string())?, UpdateContext::default())?;
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}
