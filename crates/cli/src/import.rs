//! `scriptorium import` (filled by the sessions issue).

use std::process::ExitCode;

use crate::home::Home;

/// Arguments of `scriptorium import`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Runs the command.
pub(crate) fn run(_home: &Home, _args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`scriptorium import` is not available yet")
}
