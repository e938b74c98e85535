//! `scriptorium model check`: one small tool-call round trip with the configured model (the
//! `[model]` section and the same flags as `write`), saying whether tool calls work, how long
//! the turn took, and what to change.

use std::process::ExitCode;

use crate::home::Home;
use crate::output::outln;
use crate::write::ModelArgs;

/// Arguments of `scriptorium model`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Check that the configured model does tool calls: one small round trip.
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

impl Args {
    /// Whether the command was asked for JSON.
    pub(crate) fn json(&self) -> bool {
        match &self.command {
            Sub::Check(args) => args.json,
        }
    }
}

/// Runs the command: exit 0 when tool calls work (or no remote model is configured), 1 when
/// they do not, with the finding and the advice.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let Sub::Check(args) = args.command;
    let config = crate::config(home)?;
    let model = args.model.model_config(&config.model)?;
    let report = scriptorium_backend::models::check(&model)?;
    if args.json {
        crate::output::document(&serde_json::to_value(&report)?)?;
    } else {
        outln!("{}: {}", report.model, report.finding);
        if let Some(advice) = &report.advice {
            outln!("  what to change: {advice}");
        }
    }
    Ok(if report.tool_calls_work { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
