//! `scriptorium sessions`: look at what was imported — `list`, `show ID`, `branches ID` — and
//! `migrate --to postgres://…`, which copies the embedded store into PostgreSQL.
//!
//! Human output by default; `--json` prints one stable JSON document on stdout. An unknown
//! session exits with 1 and a message on stderr. Warnings of the session store (torn or corrupt
//! log lines) go to stderr. This command only reads: it never creates the store directory.

use std::path::Path;
use std::process::ExitCode;

use clap::Subcommand;
use scriptorium_backend::sessions::Sessions;
use scriptorium_markers::{WorkspaceId, pending, records};
use scriptorium_session_dag::{Node, Page, Session, SessionId, Timestamp};
use serde_json::{Value, json};

use crate::home::Home;
use crate::output::outln;

/// Arguments of `scriptorium sessions`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Command,
    /// Print stable machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List sessions, most recently updated first: ID, title, last update, head, node count.
    List {
        /// Skip this many sessions.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Show at most this many sessions.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Show a session's head branch: role, kind, time and first line of each node.
    Show {
        /// The session ID.
        id: String,
    },
    /// List a session's live branch tips with their length and pending record count.
    Branches {
        /// The session ID.
        id: String,
    },
    /// Remove a session: `scriptorium forget --session ID` (its messages, its archived records,
    /// the blocks citing only them, git history and the sync remote included).
    Remove {
        /// The session ID.
        id: String,
        /// List what would go, and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Do it without asking (required when standard input is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// Copy the embedded store (`<home>/sessions`) into a PostgreSQL database, idempotently:
    /// a second run copies nothing. Then set `[sessions] store` to the same URL.
    Migrate {
        /// The database, `postgres://user@host:port/database`.
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let store = match &args.command {
        // The copy reads `<home>/sessions` whatever `[sessions] store` says.
        Command::Migrate { .. } | Command::Remove { .. } => None,
        _ => crate::existing_session_store(home)?,
    };
    let code = match args.command {
        Command::List { offset, limit } => {
            list(store.as_ref(), Page { offset, limit: limit.unwrap_or(usize::MAX) }, args.json)?
        }
        Command::Show { id } => show(store.as_ref(), &SessionId(id), args.json)?,
        Command::Branches { id } => {
            let workspace = workspace_id(&home.memory());
            branches(store.as_ref(), &SessionId(id), workspace.as_ref(), args.json)?
        }
        Command::Migrate { to } => migrate(home, &to, args.json)?,
        Command::Remove { id, dry_run, yes } => {
            return crate::forget::run(
                home,
                &crate::forget::Args::of_session(id, yes, dry_run, args.json),
            );
        }
    };
    if let Some(store) = &store {
        for warning in store.warnings() {
            eprintln!("warning: {warning}");
        }
    }
    Ok(code)
}

/// `sessions migrate --to URL`.
fn migrate(home: &Home, to: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    if !scriptorium_backend::sessions::is_postgres_url(to) {
        return Err(crate::output::usage(
            scriptorium_backend::wire::Code::InvalidArgument,
            format!("--to must be a postgres:// or postgresql:// URL (got {to:?})"),
        ));
    }
    let report = scriptorium_backend::sessions::migrate(home.root(), to)?;
    if as_json {
        crate::output::document(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    if report.sessions_changed == 0 {
        outln!(
            "nothing to copy: {} already holds all {} session(s) of {}",
            report.to,
            report.sessions,
            home.sessions().display()
        );
    } else {
        outln!(
            "copied {} node(s) into {} of {} session(s) to {}",
            report.nodes_copied,
            report.sessions_changed,
            report.sessions,
            report.to
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The workspace ID in `<memory>/.scriptorium/workspace-id`, if it is a valid one.
fn workspace_id(memory: &Path) -> Option<WorkspaceId> {
    let text = std::fs::read_to_string(memory.join(".scriptorium").join("workspace-id")).ok()?;
    WorkspaceId::parse(&text).ok()
}

fn time(at: Timestamp) -> String {
    at.to_rfc3339().unwrap_or_else(|| format!("{} ms", at.0))
}

fn not_found(id: &SessionId) -> anyhow::Error {
    crate::output::problem(
        scriptorium_backend::wire::Code::SessionNotFound,
        format!("session not found: {id}"),
    )
}

fn found(store: Option<&Sessions>, id: &SessionId) -> anyhow::Result<Option<Session>> {
    match store {
        Some(store) => Ok(store.session(id)?),
        None => Ok(None),
    }
}

/// The first non-blank line of `text`, cut to `max` characters.
fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

fn session_json(session: &Session) -> Value {
    json!({
        "id": session.id.as_str(),
        "title": session.title,
        "project": session.project,
        "updated_at": time(session.updated_at),
        "updated_at_ms": session.updated_at.0,
        "head": session.head.as_ref().map(|h| h.as_str()),
    })
}

fn print_json(value: &Value) -> anyhow::Result<()> {
    crate::output::document(value)?;
    Ok(())
}

fn list(store: Option<&Sessions>, page: Page, as_json: bool) -> anyhow::Result<ExitCode> {
    let summaries = match store {
        Some(store) => store.list_summaries(page)?,
        None => Vec::new(),
    };
    if as_json {
        let sessions: Vec<Value> = summaries
            .iter()
            .map(|s| {
                let mut value = session_json(&s.session);
                value["nodes"] = json!(s.nodes);
                value
            })
            .collect();
        print_json(&json!({ "sessions": sessions }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if summaries.is_empty() {
        outln!("no sessions");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 6]> = summaries
        .iter()
        .map(|s| {
            // The project's directory name (the whole path is in `--json`).
            let project = s.session.project.as_deref().map(|p| {
                std::path::Path::new(p)
                    .file_name()
                    .map_or_else(|| p.to_owned(), |n| n.to_string_lossy().into_owned())
            });
            [
                s.session.id.to_string(),
                time(s.session.updated_at),
                s.nodes.to_string(),
                s.session.head.as_ref().map_or_else(|| "-".to_owned(), ToString::to_string),
                project.unwrap_or_else(|| "-".to_owned()),
                s.session.title.clone().unwrap_or_else(|| "-".to_owned()),
            ]
        })
        .collect();
    print_table(["ID", "UPDATED", "NODES", "HEAD", "PROJECT", "TITLE"], &rows);
    Ok(ExitCode::SUCCESS)
}

/// Prints rows with columns padded to their widest cell (the last column is not padded).
fn print_table<const N: usize>(header: [&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                out.push_str(cell);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        outln!("{}", out.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

fn show(store: Option<&Sessions>, id: &SessionId, as_json: bool) -> anyhow::Result<ExitCode> {
    let (Some(store), Some(session)) = (store, found(store, id)?) else {
        return Err(not_found(id));
    };
    let branch = store.branch(id, None)?;
    if as_json {
        let nodes: Vec<Value> = branch.iter().map(node_json).collect();
        print_json(&json!({ "session": session_json(&session), "branch": nodes }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("session {}", session.id);
    if let Some(title) = &session.title {
        outln!("title   {title}");
    }
    outln!("updated {}", time(session.updated_at));
    outln!("head    {}", session.head.as_ref().map_or("-", |h| h.as_str()));
    outln!("{} nodes on the head branch", branch.len());
    for node in &branch {
        outln!(
            "{}  {}/{}  {}",
            time(node.created_at),
            node.role.as_str(),
            node.kind.as_str(),
            first_line(&node.content, 100)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn node_json(node: &Node) -> Value {
    json!({
        "id": node.id.as_str(),
        "parent": node.parent.as_ref().map(|p| p.as_str()),
        "role": node.role.as_str(),
        "kind": node.kind.as_str(),
        "speaker": node.speaker.as_ref().map(|s| json!({ "id": s.id, "display": s.display })),
        "created_at": time(node.created_at),
        "created_at_ms": node.created_at.0,
        "content": node.content,
        "metadata": node.metadata,
    })
}

fn branches(
    store: Option<&Sessions>,
    id: &SessionId,
    workspace: Option<&WorkspaceId>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let (Some(store), Some(session)) = (store, found(store, id)?) else {
        return Err(not_found(id));
    };
    let mut rows = Vec::new();
    for (i, tip) in store.tips(id)?.into_iter().enumerate() {
        let branch = store.branch(id, Some(&tip))?;
        let record_count = records(&branch).len();
        let pending_count = match workspace {
            Some(workspace) => pending(&**store, id, Some(&tip), workspace)?.len(),
            None => record_count,
        };
        let is_head = i == 0 && session.head.is_some();
        let updated = branch.last().map_or(Timestamp(0), |n| n.created_at);
        rows.push((tip, is_head, branch.len(), record_count, pending_count, updated));
    }
    if as_json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(tip, head, length, records, pending, updated)| {
                json!({
                    "tip": tip.as_str(),
                    "head": head,
                    "length": length,
                    "records": records,
                    "pending": pending,
                    "tip_created_at": time(*updated),
                })
            })
            .collect();
        print_json(&json!({
            "session": id.as_str(),
            "workspace_id": workspace.map(WorkspaceId::as_str),
            "branches": list,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    match workspace {
        Some(workspace) => outln!("workspace {workspace}"),
        None => outln!("workspace: no workspace yet (every record counts as pending)"),
    }
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|(tip, head, length, records, pending, updated)| {
            [
                format!("{tip}{}", if *head { " (head)" } else { "" }),
                length.to_string(),
                records.to_string(),
                pending.to_string(),
                time(*updated),
            ]
        })
        .collect();
    print_table(["TIP", "LENGTH", "RECORDS", "PENDING", "TIP CREATED"], &table);
    Ok(ExitCode::SUCCESS)
}
