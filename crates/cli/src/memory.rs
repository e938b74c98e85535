//! Opening the memory workspace of a home for the commands that change or inspect it.

use scriptorium_backend::engine::Installed;
use scriptorium_backend::memory::{AfterInstall, Error, MemoryWorkspace};

use crate::home::Home;
use crate::output::outln;

/// An open workspace for one command of this process: never freed (what must finish does, see
/// the `Drop` impl). The process exits when
/// the command returns, and freeing the parsed tree a transaction keeps (a 10 000-block
/// workspace is some 100 000 allocations) cost a quarter of an `update`'s CPU. Nothing durable
/// depends on a destructor here: every write has finished (and been synced) before the command
/// returns, and the write lock and the index writer's lock are `flock`s the exit releases.
pub(crate) struct Opened(std::mem::ManuallyDrop<MemoryWorkspace>);

impl Drop for Opened {
    /// What must finish before the process exits: the search index's merges (without them
    /// every update's segment would stay, and searches would slow down with each one), and a
    /// lazily opened history's catch-up (see `MemoryWorkspace::finish`).
    fn drop(&mut self) {
        self.0.finish();
    }
}

impl std::ops::Deref for Opened {
    type Target = MemoryWorkspace;

    fn deref(&self) -> &MemoryWorkspace {
        &self.0
    }
}

/// Opens (with `create`, initializes) the workspace under `home`: recovery, git catch-up, and
/// the views+git observer on every install.
pub(crate) fn open(home: &Home, create: bool) -> anyhow::Result<Opened> {
    with_privacy(home, opened(MemoryWorkspace::open(home.memory(), create))?)
}

/// The home's `[privacy]` redactor on the workspace's doors (notes, change requests, edits),
/// and a forget a crash interrupted finished before anything else happens (see
/// `scriptorium_backend::forget`).
fn with_privacy(home: &Home, memory: Opened) -> anyhow::Result<Opened> {
    let config = scriptorium_backend::Config::load(home.root())?;
    memory.set_redactor(config.redactor()?);
    if scriptorium_backend::forget::under_way(memory.workspace().root()) {
        let store = crate::session_store(home)?;
        let remote = config.sync.remote.clone();
        scriptorium_backend::forget::resume(&memory, &*store, remote.as_deref())
            .map_err(|e| crate::output::wire(e.wire()))?;
    }
    Ok(memory)
}

/// [`open`] for a command that only reads unless it must take in outside edits (`search`): the
/// git history is opened only before such an install.
pub(crate) fn open_for_reading(home: &Home) -> anyhow::Result<Opened> {
    with_privacy(home, opened(MemoryWorkspace::open_for_reading(home.memory()))?)
}

fn opened(result: Result<MemoryWorkspace, Error>) -> anyhow::Result<Opened> {
    match result {
        Ok(memory) => Ok(Opened(std::mem::ManuallyDrop::new(memory))),
        Err(Error::NotFound { root }) => Err(crate::output::usage(
            scriptorium_backend::wire::Code::NoWorkspace,
            format!(
                "no memory workspace at {} (run `scriptorium init` first, or pass --home)",
                root.display()
            ),
        )),
        Err(err) => Err(err.into()),
    }
}

/// Prints what an install added and what happened after it: new block IDs, the git commit, and
/// any failure of the derived views, the git commit or the index (the memory is committed
/// regardless).
pub(crate) fn print_installed(installed: &Installed, after: &AfterInstall) {
    for (key, id) in &installed.block_ids {
        outln!("  new block ^{id} ({key})");
    }
    if !installed.adopted.is_empty() {
        outln!("  also took in edits made outside a transaction: {}", installed.adopted.join(", "));
    }
    if let Some(commit) = &after.git_commit {
        outln!("  git commit {}", &commit[..commit.len().min(12)]);
    }
    let failures = [
        ("the git commit", &after.git_error),
        ("rebuilding the derived views", &after.views_error),
        ("updating the search index", &after.index_error),
    ];
    for (what, error) in failures {
        if let Some(err) = error {
            eprintln!("memory committed, but {what} failed: {err}");
        }
    }
}
