//! `scriptorium`: the command-line tool of Scriptorium, long-term memory for LLM agents.
//!
//! Exit codes: 0 success; 1 the command ran and found problems (diagnostics, a rejected change);
//! 2 usage or IO errors; 75 (`EX_TEMPFAIL`) a retryable failure (lock held, concurrent update,
//! disk full). With `--json`, a failure is the JSON error document on standard output
//! (`{"ok": false, "error": {code, message, path, violations}}`), see [`output`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod check;
mod completions;
mod core;
mod demo;
mod doctor;
mod edit;
mod forget;
mod home;
mod hook;
mod import;
mod init;
mod inspect;
mod log;
mod mcp;
mod memory;
mod model;
mod note;
mod output;
mod plugin;
mod rebuild;
mod redact;
mod repair;
mod search;
mod serve;
mod sessions;
mod setup;
mod status;
mod sync;
mod update;
mod watch;
mod write;

pub(crate) use output::EXIT_RETRYABLE;

/// mimalloc: the search index allocates megabytes of zeroed tables for every segment it writes,
/// which glibc's allocator returns to the kernel and takes back page by page, fault after fault,
/// on each install of a long-lived process (`serve`, `mcp`, `watch`); mimalloc keeps and reuses
/// them. Libraries embedding the backend should choose the same (ARCHITECTURE.md, *Memory*).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The home's configuration (`scriptorium.toml` with the environment overrides); memory
/// disabled by `memory.backend = "none"` is an error here (`MEMORY_DISABLED`), so every command
/// that uses the home says so and creates nothing.
pub(crate) fn config(home: &home::Home) -> anyhow::Result<scriptorium_backend::Config> {
    let config = scriptorium_backend::Config::load(home.root())?;
    if !config.enabled() {
        return Err(output::usage(
            scriptorium_backend::wire::Code::MemoryDisabled,
            format!(
                "memory is disabled by memory.backend=none ({})",
                home.root().join(scriptorium_backend::config::CONFIG_FILE).display()
            ),
        ));
    }
    Ok(config)
}

/// The home's session store, the one `[sessions] store` names (chosen in
/// `scriptorium_backend::sessions`): the embedded store in `<home>/sessions` (created when
/// missing) or PostgreSQL.
pub(crate) fn session_store(
    home: &home::Home,
) -> anyhow::Result<scriptorium_backend::sessions::Sessions> {
    let config = scriptorium_backend::Config::load(home.root())?;
    Ok(scriptorium_backend::sessions::Sessions::open(home.root(), &config)?)
}

/// [`session_store`] for a command that only reads: `None` when the embedded store's directory
/// does not exist (it is never created here).
pub(crate) fn existing_session_store(
    home: &home::Home,
) -> anyhow::Result<Option<scriptorium_backend::sessions::Sessions>> {
    let config = scriptorium_backend::Config::load(home.root())?;
    Ok(scriptorium_backend::sessions::Sessions::open_existing(home.root(), &config)?)
}

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

/// Each subcommand's arguments are built only when it is the one invoked (`defer`): building
/// the whole tree cost a per-turn process (`search`, `hook`) about a seventh of its CPU time.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum Command {
    /// Create the home, the memory workspace and its git history (idempotent).
    Init(init::Args),
    /// Show the workspace: revision, counts, last transaction, git state.
    Status(status::Args),
    /// Edit a topic file in $EDITOR (or from a file) through a validated transaction.
    Edit(edit::Args),
    /// Show the git history of the workspace or of one file.
    Log(log::Args),
    /// Show one transaction's commit (by id, unique prefix or Txn-Id) with its diffs.
    Show(log::ShowArgs),
    /// Apply a change request (whole-file changes or a unified diff) as one compare-and-set
    /// transaction.
    Update(update::Args),
    /// Remember one fact, in your words: archived as your own record and added as a cited
    /// block (`--core` pins it to the core) in one transaction.
    Note(note::Args),
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
    /// Exchange the memory with a git remote: fetch, merge by block, install, push.
    Sync(sync::Args),
    /// Forget a conversation, a record, a block or a text everywhere: the session store, the
    /// archive, the topics, git history and the sync remote.
    Forget(forget::Args),
    /// Redact, everywhere, every secret and `<private>` span the redaction rules now match in a
    /// home written before them: the session store, the archive, the topics, git history and
    /// the sync remote.
    Redact(redact::Args),
    /// Validate a memory workspace's topics/ and sources/ and print every diagnostic.
    Check(check::Args),
    /// Repair what the workspace refuses to guess (a lost workspace ID).
    Repair(repair::Args),
    /// Import transcripts (Claude Code, Codex, pi, generic JSONL) into the session store.
    Import(import::Args),
    /// Look at imported sessions: list, show, branches.
    Sessions(sessions::Args),
    /// Write what imported sessions owe into the topics (archive → model → validate → install
    /// → mark).
    Write(write::Args),
    /// Reorganize every topic (merge, split, prune inactive memory); no new sources.
    Sleep(write::SleepArgs),
    /// The writer's model: `model check` tries one tool-call round trip with it.
    Model(model::Args),
    /// Run the runtime services: write idle sessions, reorganize nightly, import transcript
    /// folders as they grow.
    Watch(watch::Args),
    /// Serve the web UI and the REST API on loopback (prints the URL with the access token).
    Serve(serve::Args),
    /// Serve the memory tools over MCP on stdio (for Claude Code, Codex, any MCP client).
    Mcp(mcp::Args),
    /// The whole product in one command, offline: import a bundled conversation, write it,
    /// pin the core, recall, and tour (home: ./scriptorium-demo unless --home).
    Demo(demo::Args),
    /// Run an agent's command hook (Claude Code, Codex): JSON on stdin, context on stdout;
    /// always exit 0 (failures go to `<home>/logs/hooks.log`).
    Hook(hook::Args),
    /// Install the hooks and the MCP server into Claude Code's or Codex's configuration.
    Setup(setup::Args),
    /// Check that this setup works, check by check, and say what to do about each problem
    /// (home, workspace, index, git, session store, agents, writer, last writes, sync remote).
    Doctor(doctor::Args),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(completions::CompletionsArgs),
    /// Print the manual page (roff), or write every page into a directory with --out.
    Man(completions::ManArgs),
}

impl Command {
    /// Whether the command was asked for JSON (its errors are then JSON too).
    fn json(&self) -> bool {
        match self {
            Command::Init(args) => args.json,
            Command::Status(args) => args.json,
            Command::Update(args) => args.json,
            Command::Note(args) => args.json,
            Command::Core(args) => args.json,
            Command::Search(args) => args.json,
            Command::Grep(args) => args.json,
            Command::Get(args) => args.json,
            Command::Browse(args) => args.json,
            Command::Rebuild(args) => args.json,
            Command::Sync(args) => args.json,
            Command::Forget(args) => args.json,
            Command::Redact(args) => args.json,
            Command::Check(args) => args.json,
            Command::Repair(args) => args.json,
            Command::Import(args) => args.json,
            Command::Sessions(args) => args.json,
            Command::Write(args) => args.json,
            Command::Model(args) => args.json(),
            Command::Sleep(args) => args.json,
            Command::Log(args) => args.json,
            Command::Show(args) => args.json,
            Command::Doctor(args) => args.json,
            Command::Edit(_)
            | Command::Watch(_)
            | Command::Serve(_)
            | Command::Mcp(_)
            | Command::Demo(_)
            | Command::Hook(_)
            | Command::Setup(_)
            | Command::Completions(_)
            | Command::Man(_) => false,
        }
    }
}

/// Parses the command line. A usage error is reported like every other failure: as the JSON
/// error document when `--json` was given (the command could not be parsed, so its flag is
/// looked for among the raw arguments), exit 2.
fn parse() -> Result<Cli, ExitCode> {
    match Cli::try_parse() {
        Ok(cli) => Ok(cli),
        Err(err) => {
            use clap::error::ErrorKind;
            let informational = matches!(
                err.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            );
            if !informational && std::env::args_os().any(|a| a == "--json") {
                // clap's text without its usage and help lines, on one line.
                let text = err.render().to_string();
                let message = text
                    .split("\n\nUsage:")
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches("error: ")
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let error = scriptorium_backend::wire::WireError::new(
                    scriptorium_backend::wire::Code::Usage,
                    message,
                );
                output::json(&error.to_json());
                return Err(ExitCode::from(output::EXIT_USAGE));
            }
            // Help and version go to standard output (exit 0), usage errors to standard error.
            let code = if informational { 0 } else { output::EXIT_USAGE };
            let _ = err.print();
            Err(ExitCode::from(code))
        }
    }
}

fn main() -> ExitCode {
    // The process's one TLS provider, before any thread may build an HTTP client: reqwest is
    // built without one (`rustls-no-provider`) and panics without a default (gix's HTTP
    // transport for `http(s)://` sync remotes, the model clients).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = match parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let as_json = cli.command.json();
    let home = match cli.command {
        Command::Demo(_) => demo::home(cli.home),
        _ => home::Home::resolve(cli.home),
    };
    // A hook fails open: it checks the home itself and never reports an error.
    if let Command::Hook(args) = &cli.command {
        // The plugin's hooks stand down when setup's are installed too (docs/plugin.md).
        if let Some(code) = plugin::hook_stands_down(&home) {
            return code;
        }
        return hook::run(&home, args);
    }
    // Everything but `check` (which reads any directory), `doctor` (which reports a broken
    // configuration as one of its checks) and the program's own descriptions uses the home:
    // its configuration must be valid and memory enabled.
    if !matches!(
        cli.command,
        Command::Check(_) | Command::Doctor(_) | Command::Completions(_) | Command::Man(_)
    ) && let Err(err) = config(&home)
    {
        return output::report(&err, as_json);
    }
    let result = match cli.command {
        Command::Init(args) => init::run(&home, args),
        Command::Status(args) => status::run(&home, args),
        Command::Edit(args) => edit::run(&home, args),
        Command::Log(args) => log::run(&home, args),
        Command::Show(args) => log::run_show(&home, args),
        Command::Update(args) => update::run(&home, args),
        Command::Note(args) => note::run(&home, args),
        Command::Model(args) => model::run(&home, args),
        Command::Core(args) => core::run(&home, args),
        Command::Search(args) => search::run(&home, args),
        Command::Grep(args) => inspect::grep(&home, args),
        Command::Get(args) => inspect::get(&home, args),
        Command::Browse(args) => inspect::browse(&home, args),
        Command::Rebuild(args) => rebuild::run(&home, args),
        Command::Sync(args) => sync::run(&home, args),
        Command::Check(args) => check::run(&home, args),
        Command::Repair(args) => repair::run(&home, &args),
        Command::Import(args) => import::run(&home, args),
        Command::Sessions(args) => sessions::run(&home, args),
        Command::Forget(args) => forget::run(&home, &args),
        Command::Redact(args) => redact::run(&home, &args),
        Command::Write(args) => write::run(&home, args),
        Command::Sleep(args) => write::sleep(&home, args),
        Command::Watch(args) => watch::run(&home, &args),
        Command::Serve(args) => serve::run(&home, &args),
        Command::Mcp(args) => mcp::run(&home, &args),
        Command::Demo(args) => demo::run(&home, &args),
        Command::Hook(args) => Ok(hook::run(&home, &args)),
        Command::Setup(args) => setup::run(&home, &args),
        Command::Doctor(args) => doctor::run(&home, &args),
        Command::Completions(args) => {
            completions::completions(<Cli as clap::CommandFactory>::command(), &args)
        }
        Command::Man(args) => completions::man(<Cli as clap::CommandFactory>::command(), &args),
    };
    match result {
        Ok(code) => code,
        Err(err) => output::report(&err, as_json),
    }
}
