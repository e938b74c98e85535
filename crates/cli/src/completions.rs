//! `scriptorium completions <shell>` and `scriptorium man [--out DIR]`: shell completion scripts
//! (clap_complete) and roff manual pages (clap_mangen), both generated from the same clap
//! definition the command line is parsed with, so they never drift from it.
//!
//! Neither reads nor creates the home: they describe the program, not a memory.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::output::{out, outln};

/// Arguments of `scriptorium completions`.
#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to print the completion script for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Arguments of `scriptorium man`.
#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// Write `scriptorium.1` and one `scriptorium-<command>.1` per subcommand into DIR
    /// (created when missing) instead of printing `scriptorium.1` on standard output.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Prints the completion script of `args.shell` for `command` (the whole command line).
pub(crate) fn completions(
    mut command: clap::Command,
    args: &CompletionsArgs,
) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "scriptorium", &mut script);
    let script = String::from_utf8(script).context("the completion script is not UTF-8")?;
    out!("{script}");
    Ok(ExitCode::SUCCESS)
}

/// Prints the manual page of `command`, or writes every page into `--out`.
pub(crate) fn man(mut command: clap::Command, args: &ManArgs) -> anyhow::Result<ExitCode> {
    // Deferred subcommand arguments (`defer = true` on the tree) are built here, so every
    // page lists its options.
    command.build();
    match &args.out {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page).context("rendering the man page")?;
            let page = String::from_utf8(page).context("the man page is not UTF-8")?;
            out!("{page}");
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let pages = count_pages(&command);
            clap_mangen::generate_to(command, dir)
                .with_context(|| format!("writing the manual pages to {}", dir.display()))?;
            outln!("wrote {pages} manual page(s) to {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How many pages `clap_mangen::generate_to` writes for `command`: one for it and one for each
/// visible subcommand, recursively (`scriptorium-<command>.1`, as git names its pages).
fn count_pages(command: &clap::Command) -> usize {
    1 + command.get_subcommands().filter(|s| !s.is_hide_set()).map(count_pages).sum::<usize>()
}
