//! `scriptorium`: the command-line tool of Scriptorium, long-term memory for LLM agents.
//!
//! Exit codes: 0 success; 1 the command ran and found problems (diagnostics, a rejected change);
//! 2 usage or IO errors; 75 (`EX_TEMPFAIL`) a retryable failure (lock held, concurrent update).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod check;
mod core;
mod edit;
mod home;
mod import;
mod init;
mod inspect;
mod log;
mod memory;
mod rebuild;
mod search;
mod sessions;
mod status;
mod update;
mod write;

/// The exit code of a retryable failure (lock held, concurrent update): `EX_TEMPFAIL`.
pub(crate) const EXIT_RETRYABLE: u8 = 75;

/// Long-term memory for LLM agents: conversations become cited, reviewable Markdown.
#[derive(Debug, Parser)]
#[command(name = "scriptorium", version, about, long_about = None)]
struct Cli {
    /// The Scriptorium home (default: $SCRIPTORIUM_HOME, else $XDG_DATA_HOME/scriptorium).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the home, the memory workspace and its git history (idempotent).
    Init(init::Args),
    /// Show the workspace: revision, counts, last transaction, git state.
    Status(status::Args),
    /// Edit a topic file in $EDITOR (or from a file) through a validated transaction.
    Edit(edit::Args),
    /// Show the git history of the workspace or of one file.
    Log(log::Args),
    /// Apply a change request (whole-file changes or a unified diff) as one compare-and-set
    /// transaction.
    Update(update::Args),
    /// Show the core block: canonical master, render within the budget, injected text.
    Core(core::Args),
    /// Recall topic blocks and source records for a query.
    Search(search::Args),
    /// Find literal text in the workspace files.
    Grep(inspect::GrepArgs),
    /// Print a file, one heading section, or one block with its evidence.
    Get(inspect::GetArgs),
    /// List the workspace files.
    Browse(inspect::BrowseArgs),
    /// Rebuild the derived views and the search index from the canonical files.
    Rebuild(rebuild::Args),
    /// Validate a memory workspace's topics/ and sources/ and print every diagnostic.
    Check(check::Args),
    /// Import transcripts (Claude Code, Codex, pi, generic JSONL) into the session store.
    Import(import::Args),
    /// Look at imported sessions: list, show, branches.
    Sessions(sessions::Args),
    /// Write what imported sessions owe into the topics (archive → model → validate → install
    /// → mark).
    Write(write::Args),
    /// Reorganize every topic (merge, split, prune inactive memory); no new sources.
    Sleep(write::SleepArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let home = home::Home::resolve(cli.home);
    let result = match cli.command {
        Command::Init(args) => init::run(&home, args),
        Command::Status(args) => status::run(&home, args),
        Command::Edit(args) => edit::run(&home, args),
        Command::Log(args) => log::run(&home, args),
        Command::Update(args) => update::run(&home, args),
        Command::Core(args) => core::run(&home, args),
        Command::Search(args) => search::run(&home, args),
        Command::Grep(args) => inspect::grep(&home, args),
        Command::Get(args) => inspect::get(&home, args),
        Command::Browse(args) => inspect::browse(&home, args),
        Command::Rebuild(args) => rebuild::run(&home, args),
        Command::Check(args) => check::run(&home, args),
        Command::Import(args) => import::run(&home, args),
        Command::Sessions(args) => sessions::run(&home, args),
        Command::Write(args) => write::run(&home, args),
        Command::Sleep(args) => write::sleep(&home, args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
