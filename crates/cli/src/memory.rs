//! Opening the memory workspace of a home for the commands that change or inspect it.

use anyhow::bail;
use scriptorium_backend::memory::{Error, MemoryWorkspace};

use crate::home::Home;

/// Opens (with `create`, initializes) the workspace under `home`: recovery, git catch-up, and
/// the views+git observer on every install.
pub(crate) fn open(home: &Home, create: bool) -> anyhow::Result<MemoryWorkspace> {
    match MemoryWorkspace::open(home.memory(), create) {
        Ok(memory) => Ok(memory),
        Err(Error::NotFound { root }) => bail!(
            "no memory workspace at {} (run `scriptorium init` first, or pass --home)",
            root.display()
        ),
        Err(err) => Err(err.into()),
    }
}
