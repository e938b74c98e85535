//! `scriptorium note "text"`: the owner adds one fact by hand, in one step (no JSON, no
//! footnote): the note is archived as the owner's own source record and the block citing it is
//! installed, in one transaction (see `scriptorium_backend::edit::Note`).

use std::process::ExitCode;

use scriptorium_backend::edit::{Note, NoteOutcome};
use scriptorium_backend::engine::{Surface, UpdateContext};

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// The origin recorded on the notes `scriptorium note` archives.
pub(crate) const NOTE_ORIGIN: &str = "owner-cli/note";

/// Arguments of `scriptorium note`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// What to remember, in your words.
    text: String,
    /// Pin it to the core (`topics/core.md`, injected into every conversation).
    #[arg(long, conflicts_with = "topic")]
    core: bool,
    /// The topic file to add it to (`people/dana`; default `topics/notes.md`).
    #[arg(long, value_name = "PATH")]
    topic: Option<String>,
    /// When it holds: `YYYY`, `YYYY-MM`, `YYYY-MM-DD` or `undated` (default today).
    #[arg(long, value_name = "DATE")]
    time: Option<String>,
    /// Print the result or the error as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the command: exit 0 once installed (or when the topic already holds the note: nothing
/// changes, and it says so), 1 for a note the change API refuses (a bad time,
/// an empty text, a path outside `topics/`: nothing changes), 75 when another change landed
/// first (retry).
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let note = Note { text: args.text, core: args.core, topic: args.topic, time: args.time };
    let memory = memory::open(home, false)?;
    // The person at the terminal is the owner: the note is archived as theirs, under `cli`.
    let context = UpdateContext::owner(Surface::Cli, NOTE_ORIGIN);
    let outcome = memory.note(&note, context, scriptorium_backend::memory::wall_clock())?;
    if args.json {
        crate::output::document(&outcome.result())?;
        return Ok(ExitCode::SUCCESS);
    }
    let outcome = match outcome {
        NoteOutcome::Noted(outcome) => outcome,
        NoteOutcome::AlreadyNoted { topic_path, block_id, .. } => {
            outln!("already noted in {topic_path} as ^{block_id}: nothing changed");
            return Ok(ExitCode::SUCCESS);
        }
    };
    let installed = &outcome.installed;
    let blocks: Vec<String> = installed.block_ids.values().map(|id| format!("^{id}")).collect();
    outln!(
        "noted in {} as {} (revision {})",
        note.topic_path(),
        blocks.join(", "),
        installed.revision.as_str()
    );
    let after = scriptorium_backend::memory::after(installed);
    memory::print_installed(installed, &after);
    Ok(ExitCode::SUCCESS)
}
