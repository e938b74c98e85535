//! `scriptorium status`: what the workspace holds and whether its history is in step.

use std::process::ExitCode;

use scriptorium_topics_format::source::{ArchiveResolver, scan};
use scriptorium_topics_format::topic::parse_tree;
use scriptorium_views::{FsSources, read_topics};

use crate::home::Home;
use crate::memory;

/// Arguments of `scriptorium status`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// Counts the archive files and their valid frames under `sources/`.
fn count_sources(root: &std::path::Path) -> (usize, usize) {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut (usize, usize)) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            if kind.is_dir() {
                walk(&path, root, out);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "md") {
                out.0 += 1;
                let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy();
                if let Ok(text) = std::fs::read_to_string(&path) {
                    out.1 += scan(&rel.replace('\\', "/"), &text).frames.len();
                }
            }
        }
    }
    let mut out = (0, 0);
    walk(&root.join("sources"), root, &mut out);
    out
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    let ws = memory.workspace();
    let root = ws.root();
    let state = ws.revision_state()?;
    let files = read_topics(root)?;
    let parsed = parse_tree(&files, &ArchiveResolver::new(FsSources::new(root)));
    let (source_files, source_records) = count_sources(root);
    let head = memory.history().map(|h| h.log(None, 1));
    let (git_head, git_txn, git_error) = match head {
        Some(Ok(entries)) => match entries.into_iter().next() {
            Some(e) => (Some(e.commit), e.txn_id, None),
            None => (None, None, None),
        },
        Some(Err(err)) => (None, None, Some(err.to_string())),
        None => (None, None, memory.history_error().map(str::to_owned)),
    };
    let in_sync = git_error.is_none()
        && (state.txn_id.is_empty() || git_txn.as_deref() == Some(&state.txn_id));
    let core_exists = root.join("topics/core.md").is_file();
    if args.json {
        let out = serde_json::json!({
            "workspace": ws.workspace_id().as_str(),
            "workspace_path": root.display().to_string(),
            "revision": state.revision.as_str(),
            "transactions": state.counter,
            "last_transaction": (!state.txn_id.is_empty()).then_some(&state.txn_id),
            "topics_edited_outside": state.topics_edited_outside,
            "sources_changed_outside": state.sources_changed_outside,
            "topic_files": files.len(),
            "blocks": parsed.units.len(),
            "diagnostics": parsed.diagnostics.len(),
            "source_files": source_files,
            "source_records": source_records,
            "core_exists": core_exists,
            "git": { "head": git_head, "txn_id": git_txn, "in_sync": in_sync, "error": git_error },
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("workspace   {} at {}", ws.workspace_id().as_str(), root.display());
    println!("revision    {} ({} installs and appends)", state.revision.as_str(), state.counter);
    if state.txn_id.is_empty() {
        println!("last txn    none yet");
    } else {
        println!("last txn    {}", state.txn_id);
    }
    println!(
        "topics      {} file(s), {} block(s){}{}",
        files.len(),
        parsed.units.len(),
        if core_exists { ", core master present" } else { "" },
        match parsed.diagnostics.len() {
            0 => String::new(),
            n => format!(", {n} problem(s) (run `scriptorium check`)"),
        }
    );
    println!("sources     {source_files} archive(s), {source_records} record(s)");
    if state.topics_edited_outside {
        println!("note        topics/ was edited outside a transaction");
    }
    match (&git_error, &git_head) {
        (Some(err), _) => println!("git         unavailable: {err}"),
        (None, Some(head)) => println!(
            "git         HEAD {} ({})",
            &head[..head.len().min(12)],
            if in_sync {
                "in step with the installed transaction"
            } else {
                "behind: the next open catches up"
            }
        ),
        (None, None) => println!("git         no commits yet"),
    }
    Ok(ExitCode::SUCCESS)
}
