//! `scriptorium grep`, `get` and `browse`: read-only views of the workspace files.

use std::process::ExitCode;

use scriptorium_backend::inspect::{self, DEFAULT_BROWSE_LIMIT, InspectError};

use crate::home::Home;
use crate::output::{out, outln};

/// Arguments of `scriptorium grep`.
#[derive(Debug, clap::Args)]
pub(crate) struct GrepArgs {
    /// The literal text to find.
    text: String,
    /// Only files under this workspace-relative prefix.
    #[arg(long, default_value = "")]
    prefix: String,
    /// Match case exactly (default: case-insensitive).
    #[arg(long)]
    case_sensitive: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `scriptorium get`.
#[derive(Debug, clap::Args)]
pub(crate) struct GetArgs {
    /// A workspace-relative path (`topics/people/dave.md`, `sources/…`, `core.md`).
    path: String,
    /// Only this heading's section (case-insensitive).
    #[arg(long)]
    heading: Option<String>,
    /// Only this block's paragraph and the definitions it cites; in an archive, the record
    /// with this `source-…` anchor (a citation link `sources/….md#source-…` works as the
    /// path too).
    #[arg(long)]
    block: Option<String>,
    /// Start at this line (0-based) of what is read: how to read on after a cut.
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// At most this many lines (up to 400).
    #[arg(long)]
    limit: Option<usize>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `scriptorium browse`.
#[derive(Debug, clap::Args)]
pub(crate) struct BrowseArgs {
    /// Only files under this workspace-relative prefix.
    #[arg(default_value = "")]
    prefix: String,
    /// At most this many files (up to 500).
    #[arg(long, default_value_t = DEFAULT_BROWSE_LIMIT)]
    limit: usize,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A refused read: exit 1 with the inspector's code.
fn refused(err: &InspectError) -> anyhow::Error {
    crate::output::problem(err.wire_code(), err.to_string())
}

fn root(home: &Home) -> anyhow::Result<std::path::PathBuf> {
    let root = home.memory();
    if !root.join("topics").is_dir() {
        return Err(crate::output::usage(
            scriptorium_backend::wire::Code::NoWorkspace,
            format!(
                "no memory workspace at {} (run `scriptorium init` first, or pass --home)",
                root.display()
            ),
        ));
    }
    Ok(root)
}

/// Runs `scriptorium grep`.
pub(crate) fn grep(home: &Home, args: GrepArgs) -> anyhow::Result<ExitCode> {
    let found = match inspect::grep(&root(home)?, &args.text, &args.prefix, args.case_sensitive) {
        Ok(found) => found,
        Err(err) => return Err(refused(&err)),
    };
    if args.json {
        crate::output::document(&found)?;
    } else {
        for m in &found.matches {
            outln!("{}:{}: {}", m.path, m.line, m.text);
        }
        if found.truncated {
            eprintln!("(more matches not shown)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `scriptorium get`.
pub(crate) fn get(home: &Home, args: GetArgs) -> anyhow::Result<ExitCode> {
    let window = inspect::Window { offset: args.offset, limit: args.limit };
    let root = root(home)?;
    let mut excerpt = match inspect::get(
        &root,
        &args.path,
        args.heading.as_deref(),
        args.block.as_deref(),
        window,
    ) {
        Ok(excerpt) => excerpt,
        Err(err) => return Err(refused(&err)),
    };
    // Only a record needs the workspace (its citing blocks come from the search index).
    if excerpt.record.is_some() {
        crate::memory::open_for_reading(home)?.add_citing(&mut excerpt);
    }
    if args.json {
        crate::output::document(&excerpt)?;
    } else {
        out!("{}", excerpt.text);
        if let Some(record) = &excerpt.record {
            outln!(
                "\n— turn {} of {} in {} ({})",
                record.position,
                record.records,
                excerpt.path,
                record.source_id
            );
            for (label, turn) in [("before", &record.previous), ("after", &record.next)] {
                if let Some(turn) = turn {
                    outln!("  {label}: {}#{}  {}", excerpt.path, turn.anchor, turn.snippet);
                }
            }
            for citing in &record.cited_by {
                outln!("  cited by: {} ^{}  {}", citing.path, citing.block_id, citing.snippet);
            }
        }
        if let Some(next) = excerpt.next_offset {
            eprintln!(
                "(cut: lines {}–{next} of {}; read on with --offset {next})",
                excerpt.offset + 1,
                excerpt.total_lines
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `scriptorium browse`.
pub(crate) fn browse(home: &Home, args: BrowseArgs) -> anyhow::Result<ExitCode> {
    let listing = match inspect::browse(&root(home)?, &args.prefix, args.limit) {
        Ok(listing) => listing,
        Err(err) => return Err(refused(&err)),
    };
    if args.json {
        crate::output::document(&listing)?;
    } else {
        for entry in &listing.entries {
            let derived = if entry.derived { "  (derived)" } else { "" };
            outln!("{:>9}  {}{derived}", entry.size, entry.path);
        }
        if listing.truncated {
            eprintln!("(more files not shown; use --limit or a prefix)");
        }
    }
    Ok(ExitCode::SUCCESS)
}
