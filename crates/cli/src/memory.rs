//! Opening the memory workspace for commands that change it: the transaction engine with the
//! derived views and the git history wired in as install observers.
//!
//! Order after every install (still under the write lock): derived views are rebuilt from the
//! installed units, then one git commit records the transaction's files and the views it
//! rewrote. A failure of either is reported, never turned into a rollback: the memory is
//! committed once the install returned.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use scriptorium_history::{CommitRequest, History, Time};
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_txn::{InstallEvent, InstallObserver, Options, Workspace};
use scriptorium_views::{FsSources, RUNTIME_JSON, RuntimeState, render_core, write_views};

use crate::home::Home;

/// Recent events kept in `recent_events.jsonl` (reference Appendix A).
const RECENT_LIMIT: usize = 50;
/// The core render budget in o200k_base tokens.
const CORE_BUDGET: usize = 2_000;
/// The master of the core view.
const CORE_MASTER: &str = "core.md";

/// The current wall-clock time for git (UTC).
pub(crate) fn now() -> Time {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    Time::utc(seconds)
}

/// What the observer did after the last install.
#[derive(Clone, Debug, Default)]
pub(crate) struct AfterInstall {
    /// Derived files the views rebuild wrote or removed.
    pub(crate) views_changed: Vec<String>,
    /// The views rebuild's error, if it failed.
    pub(crate) views_error: Option<String>,
    /// The git commit made (hex), if any.
    pub(crate) git_commit: Option<String>,
    /// The git error, if the commit failed.
    pub(crate) git_error: Option<String>,
}

/// Rebuilds the derived views and commits to git after every install.
pub(crate) struct Derived {
    history: Option<History>,
    last: Mutex<AfterInstall>,
}

impl Derived {
    fn rebuild_views(&self, event: &InstallEvent<'_>) -> Result<Vec<String>, String> {
        let root = event.root;
        let runtime = std::fs::read_to_string(root.join(RUNTIME_JSON)).unwrap_or_default();
        let state = RuntimeState::parse(&runtime);
        let views =
            scriptorium_views::rebuild(event.units, Some(&state.creation_order), RECENT_LIMIT);
        let master = event.files.iter().find(|f| f.path == CORE_MASTER).map(|f| f.text.as_str());
        let resolver = ArchiveResolver::new(FsSources::new(root));
        let core = render_core(master, &resolver, CORE_BUDGET);
        let master_removed =
            master.is_none() && event.installed.changed_files.iter().any(|p| p == "topics/core.md");
        let written =
            write_views(root, &views, &core, master_removed).map_err(|e| e.to_string())?;
        Ok(written.changed_files.into_iter().chain(written.removed_files).collect())
    }

    /// What happened after the last install.
    pub(crate) fn last(&self) -> AfterInstall {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl InstallObserver for Derived {
    fn name(&self) -> &str {
        "views+git"
    }

    fn installed(
        &self,
        event: &InstallEvent<'_>,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let mut after = AfterInstall::default();
        let mut changed = event.installed.changed_files.clone();
        match self.rebuild_views(event) {
            Ok(files) => {
                changed.extend(files.iter().cloned());
                after.views_changed = files;
            }
            Err(err) => after.views_error = Some(err),
        }
        changed.sort();
        changed.dedup();
        if let Some(history) = &self.history {
            let request = CommitRequest {
                txn_id: event.installed.txn_id.as_str(),
                message: &event.installed.message,
                // A failed views rebuild left unknown files behind: let git scan everything.
                changed: after.views_error.is_none().then_some(changed.as_slice()),
                time: now(),
            };
            match history.commit(request) {
                Ok(outcome) => after.git_commit = Some(outcome.commit),
                Err(err) => after.git_error = Some(err.to_string()),
            }
        }
        let failure = match (&after.views_error, &after.git_error) {
            (None, None) => None,
            (views, git) => Some(format!(
                "{}{}",
                views.as_ref().map(|e| format!("views: {e}; ")).unwrap_or_default(),
                git.as_ref().map(|e| format!("git: {e}")).unwrap_or_default()
            )),
        };
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = after;
        match failure {
            Some(message) => Err(message.into()),
            None => Ok(()),
        }
    }
}

/// An open memory workspace with its history.
pub(crate) struct Memory {
    pub(crate) workspace: Workspace,
    pub(crate) history: Option<History>,
    pub(crate) derived: Arc<Derived>,
    /// Why the history could not be opened, if it could not.
    pub(crate) history_error: Option<String>,
}

/// The memory root of a home.
pub(crate) fn memory_root(home: &Home) -> PathBuf {
    home.memory()
}

fn open_history(root: &Path, installed_txn: &str) -> Result<History, String> {
    let history = History::open_or_init(root, now()).map_err(|e| e.to_string())?;
    if !installed_txn.is_empty() {
        history.catch_up(installed_txn, now()).map_err(|e| e.to_string())?;
    }
    Ok(history)
}

/// Opens (with `create`, initializes) the workspace under `home`, runs recovery, and brings the
/// git history up to the installed transaction.
pub(crate) fn open(home: &Home, create: bool) -> anyhow::Result<Memory> {
    let root = memory_root(home);
    if !create && !root.join("topics").is_dir() && !root.join(".scriptorium").is_dir() {
        bail!(
            "no memory workspace at {} (run `scriptorium init` first, or pass --home)",
            root.display()
        );
    }
    // The history is opened before the workspace's observers exist, so the first open does its
    // recovery without them; recovery never installs anything new.
    let plain = if create { Workspace::init(&root) } else { Workspace::open(&root) }
        .with_context(|| format!("opening the memory workspace at {}", root.display()))?;
    let installed = plain.revision_state().context("reading the revision")?.txn_id;
    let (history, history_error) = match open_history(&root, &installed) {
        Ok(history) => (Some(history), None),
        Err(err) => (None, Some(err)),
    };
    let derived = Arc::new(Derived { history: history.clone(), last: Mutex::default() });
    let observers: Vec<Arc<dyn InstallObserver>> = vec![derived.clone()];
    let workspace = Workspace::open_with(&root, Options { observers, ..Options::default() })
        .with_context(|| format!("opening the memory workspace at {}", root.display()))?;
    Ok(Memory { workspace, history, derived, history_error })
}
