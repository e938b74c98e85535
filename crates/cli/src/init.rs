//! `scriptorium init`: creates the home, the memory workspace and its git history.
//!
//! [`initialize`] is the one way a command creates them (`init`, and `setup` before it installs
//! hooks that write into the memory).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use scriptorium_backend::memory::MemoryWorkspace;

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium init`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The memory workspace [`initialize`] opened.
pub(crate) struct Initialized {
    /// The workspace, open.
    pub(crate) memory: memory::Opened,
    /// Whether there was no workspace before (this call created it).
    pub(crate) created: bool,
}

/// Creates the home when it is missing (0700: it will hold every captured session), then
/// initializes the memory workspace and its git history in it, or opens (and recovers) the one
/// already there, never resetting it.
pub(crate) fn initialize(home: &Home) -> anyhow::Result<Initialized> {
    create_home(home.root())?;
    let created = !exists(home);
    let memory = memory::open(home, true)?;
    Ok(Initialized { memory, created })
}

/// Whether `home` holds a memory workspace, as the backend decides when it opens one; creates
/// nothing. A workspace that is there but does not open counts as there (opening it reports
/// why).
pub(crate) fn exists(home: &Home) -> bool {
    MemoryWorkspace::exists(&home.memory())
}

/// `mkdir` of the home with mode 0700 (its parents as usual). An existing home keeps its mode:
/// it may be a directory the person chose and set up themselves.
fn create_home(root: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(root) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(e).with_context(|| format!("creating the home {}", root.display()))
        }
        _ => Ok(()),
    }
}

/// Runs the command. Idempotent: an existing workspace is opened (and recovered), never reset.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = initialize(home)?.memory;
    let root = memory.workspace().root().display().to_string();
    let id = memory.workspace().workspace_id().as_str().to_owned();
    let revision = memory.workspace().revision()?.as_str().to_owned();
    if args.json {
        let out = serde_json::json!({
            "workspace": id, "workspace_path": root, "revision": revision,
            "git": memory.history_error().is_none(), "git_error": memory.history_error(),
        });
        crate::output::document(&out)?;
    } else {
        outln!("memory workspace {id} at {root}");
        outln!("revision {revision}");
        match &memory.history_error() {
            None => outln!("git history in {root}/.git"),
            Some(err) => outln!("git history unavailable: {err}"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
