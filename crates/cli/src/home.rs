//! Where Scriptorium keeps its data: `$SCRIPTORIUM_HOME` (see `docs/format.md#the-home-directory`).

use std::path::PathBuf;

/// The resolved home directory and the well-known paths inside it.
#[derive(Clone, Debug)]
pub(crate) struct Home {
    root: PathBuf,
}

impl Home {
    /// `--home`, else `$SCRIPTORIUM_HOME`, else `$XDG_DATA_HOME/scriptorium`, else
    /// `~/.local/share/scriptorium`, else `./.scriptorium-home` when no home directory is known.
    pub(crate) fn resolve(flag: Option<PathBuf>) -> Home {
        let from_env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let root = flag
            .or_else(|| from_env("SCRIPTORIUM_HOME").map(PathBuf::from))
            .or_else(|| from_env("XDG_DATA_HOME").map(|d| PathBuf::from(d).join("scriptorium")))
            .or_else(|| from_env("HOME").map(|h| PathBuf::from(h).join(".local/share/scriptorium")))
            .unwrap_or_else(|| PathBuf::from(".scriptorium-home"));
        Home { root }
    }

    /// The home directory itself.
    pub(crate) fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// The session store directory, `<home>/sessions`.
    pub(crate) fn sessions(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// Where rejected edits are kept, `<home>/drafts`.
    pub(crate) fn drafts(&self) -> PathBuf {
        self.root.join("drafts")
    }

    /// The memory workspace, `<home>/memory`.
    pub(crate) fn memory(&self) -> PathBuf {
        self.root.join("memory")
    }
}
