//! The IO layer: reading a workspace for a rebuild and writing the derived files, every call
//! through `scriptorium-workspace-fs`.
//!
//! Every file is replaced atomically (temporary file in `.scriptorium/`, rename:
//! `scriptorium_workspace_fs::write_atomic`) and only when its bytes change, so an unchanged view
//! keeps its mtime and a reader never sees a half-written view. The set of views as a whole is
//! not atomic: a crash between two renames leaves some views new and some old, which the next
//! rebuild repairs (views are derived and can always be rebuilt).
//!
//! Views are not fsynced where the platform names the running boot (Linux's `boot_id`), like
//! the search index: a killed process loses nothing (the page cache keeps its writes), and
//! only a power loss or a kernel crash, which start a new boot, can leave a view old or empty.
//! Before its first unsynced view a boot is recorded, durably, in [`VIEWS_BOOT`]; a process
//! that finds another boot there ([`views_written_in_another_boot`]) rebuilds the views (the
//! backend does it when it opens the git history, under the write lock). Without a boot
//! identity each view is fsynced (not its directory: a power loss may bring an old one back,
//! whole). A promoted master written to `topics/core.md` is canonical and always durable.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::{Diagnostic, TopicFile, parse_tree};
use scriptorium_workspace_fs::read::{FsSources, TopicsError, read_topics};
use scriptorium_workspace_fs::{Durability, FileKind, Fs, RealFs, boot_id, write_atomic};

use crate::core::{
    CORE_TOPIC, CoreRender, CoreReport, DEFAULT_CORE_BUDGET, SourceTrust, TrustAll,
    promote_legacy_core, render_core,
};
use crate::views::{DEFAULT_RECENT_LIMIT, Views, ViewsUpdate, rebuild};

/// An IO failure while reading a workspace or writing a view.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A filesystem call failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path the call was about.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A topic file is not UTF-8.
    #[error("{}: topic file is not UTF-8", path.display())]
    NotUtf8 {
        /// The topic file.
        path: PathBuf,
    },
}

impl Error {
    /// Whether retrying the same call may succeed (a transient filesystem failure).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Io { source, .. } if matches!(source.kind(), io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
    }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Io { path: path.to_path_buf(), source }
}

impl From<scriptorium_workspace_fs::Error> for Error {
    fn from(e: scriptorium_workspace_fs::Error) -> Error {
        Error::Io { path: e.path, source: e.source }
    }
}

impl From<TopicsError> for Error {
    fn from(e: TopicsError) -> Error {
        match e {
            TopicsError::NotUtf8 { path } => Error::NotUtf8 { path },
            TopicsError::Io(e) => e.into(),
            other => {
                Error::Io { path: PathBuf::new(), source: io::Error::other(other.to_string()) }
            }
        }
    }
}

/// Every view is written on the real filesystem (views are derived: a fault sweep of the
/// engine covers the transaction, not the views it rebuilds).
const FS: &RealFs = &RealFs;

/// What [`write_views`] changed, as workspace-relative `/`-separated paths in sorted order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WrittenViews {
    /// Files written because their bytes changed (or did not exist).
    pub changed_files: Vec<String>,
    /// Files removed: stale timeline files, a root `core.md` whose master is gone.
    pub removed_files: Vec<String>,
}

/// Writes the views and the root `core.md` under `memory_root`.
///
/// **Atomicity:** each file is replaced atomically (temporary file in `.scriptorium/`,
/// `sync_data`, rename over the target, fsync of its directory) and only when its bytes differ,
/// so unchanged files keep their mtime. The files are replaced one after another, not as one
/// step: after a crash some views may be new and others old until the next rebuild.
///
/// Timeline files not in `views` are removed (and directories left empty). With `core.text`
/// set, the root `core.md` is written; with `None` (no master) it is removed when
/// `master_was_present` (the tree before this change had `topics/core.md`: the view disappears
/// with its master, see `docs/format.md#core-view`, step 1), and left alone otherwise (a legacy
/// root `core.md` that could not be promoted is the only copy). Runtime state (`runtime.json`)
/// is the transaction engine's: nothing here writes it.
pub fn write_views(
    memory_root: &Path,
    views: &Views,
    core: &CoreRender,
    master_was_present: bool,
) -> Result<WrittenViews, Error> {
    let mut writer = Writer::new(memory_root)?;
    let mut written = WrittenViews::default();
    remove_stale_timeline(memory_root, views, &mut written)?;
    for (rel, text) in &views.timeline {
        writer.put(rel, text.as_bytes(), &mut written)?;
    }
    writer.put("recent_events.jsonl", views.recent_events.as_bytes(), &mut written)?;
    writer.put("relations.json", views.relations.as_bytes(), &mut written)?;
    write_core(&mut writer, memory_root, Some(core), master_was_present, &mut written)?;
    written.changed_files.sort();
    written.removed_files.sort();
    Ok(written)
}

/// Writes what an install changed of the views ([`ViewsUpdate`]): the timeline files it names
/// (written, or removed with the directories they leave empty), `recent_events.jsonl`,
/// `relations.json` when given, and the root `core.md` when `core` is given (as
/// [`write_views`] does with it). Same atomicity as [`write_views`].
pub fn write_update(
    memory_root: &Path,
    update: &ViewsUpdate,
    core: Option<&CoreRender>,
    master_was_present: bool,
) -> Result<WrittenViews, Error> {
    let mut writer = Writer::new(memory_root)?;
    let mut written = WrittenViews::default();
    for (rel, text) in &update.timeline {
        match text {
            Some(text) => writer.put(rel, text.as_bytes(), &mut written)?,
            None => remove_view(memory_root, rel, &mut written)?,
        }
    }
    writer.put("recent_events.jsonl", update.recent_events.as_bytes(), &mut written)?;
    if let Some(relations) = &update.relations {
        writer.put("relations.json", relations.as_bytes(), &mut written)?;
    }
    write_core(&mut writer, memory_root, core, master_was_present, &mut written)?;
    written.changed_files.sort();
    written.removed_files.sort();
    Ok(written)
}

/// The root `core.md` from `core` (nothing when `None`; see [`write_views`] for a render
/// without a master).
fn write_core(
    writer: &mut Writer<'_>,
    memory_root: &Path,
    core: Option<&CoreRender>,
    master_was_present: bool,
    written: &mut WrittenViews,
) -> Result<(), Error> {
    let Some(core) = core else { return Ok(()) };
    match &core.text {
        Some(text) => writer.put(CORE_TOPIC, text.as_bytes(), written)?,
        None if master_was_present => {
            let path = memory_root.join(CORE_TOPIC);
            if FS.metadata(&path).is_ok() {
                FS.remove_file(&path).map_err(io_error(&path))?;
                sync_dir(memory_root)?;
                written.removed_files.push(CORE_TOPIC.to_owned());
            }
        }
        None => {}
    }
    Ok(())
}

/// Removes the timeline file `rel` if it exists, then the directories it leaves empty (up to
/// `timeline/`).
fn remove_view(root: &Path, rel: &str, written: &mut WrittenViews) -> Result<(), Error> {
    let path = root.join(rel);
    match FS.metadata(&path) {
        Ok(meta) if meta.kind != FileKind::Dir => {
            FS.remove_file(&path).map_err(io_error(&path))?;
            written.removed_files.push(rel.to_owned());
        }
        _ => return Ok(()),
    }
    let timeline = root.join("timeline");
    let mut dir = path.parent().map(Path::to_path_buf);
    while let Some(current) = dir.filter(|d| d.starts_with(&timeline) && *d != timeline) {
        if !FS.read_dir(&current).map_err(io_error(&current))?.is_empty() {
            sync_dir(&current)?;
            return Ok(());
        }
        FS.remove_dir(&current).map_err(io_error(&current))?;
        dir = current.parent().map(Path::to_path_buf);
    }
    sync_dir(&timeline).or(Ok(()))
}

/// Replaces files atomically through temporaries in `.scriptorium/`.
struct Writer<'a> {
    root: &'a Path,
    temp_dir: PathBuf,
    /// How the views are written, decided at the first one ([`Writer::views_durability`]).
    views: Option<Durability>,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The prefix of the views' temporary files in `.scriptorium/`: the engine's `tmp-*`, so a
/// temporary a killed process left behind is removed by the next open's recovery (views are
/// written under the workspace write lock, so a `tmp-*` file recovery sees has no live writer).
pub const TEMP_PREFIX: &str = "tmp-views-";

/// The boot in which the views were last written without `fsync` (the running one's
/// [`boot_id`], one line); see [`views_written_in_another_boot`].
pub const VIEWS_BOOT: &str = ".scriptorium/views-boot";

/// Whether the views were written without `fsync` in another boot than the running one: a power
/// loss or a kernel crash may then have left some of them old, or empty (the page cache was
/// lost), and they must be rebuilt (the backend does when it opens the history). `false` when
/// the platform names no boot (views are then fsynced) or nothing was written yet.
pub fn views_written_in_another_boot(memory_root: &Path) -> bool {
    let Some(boot) = boot_id() else { return false };
    FS.read(&memory_root.join(VIEWS_BOOT)).is_ok_and(|marker| marker != boot.as_bytes())
}

impl<'a> Writer<'a> {
    fn new(root: &'a Path) -> Result<Self, Error> {
        let temp_dir = root.join(".scriptorium");
        create_private_dir(&temp_dir)?;
        Ok(Writer { root, temp_dir, views: None })
    }

    /// How a view is written: without `fsync` where the platform names the boot (after
    /// [`VIEWS_BOOT`] durably names the running one, so a later boot knows to rebuild), else
    /// fsynced without its directory (`Durability::Cache`).
    fn views_durability(&mut self) -> Result<Durability, Error> {
        if let Some(durability) = self.views {
            return Ok(durability);
        }
        let durability = match boot_id() {
            None => Durability::Cache,
            Some(boot) => {
                let marker = self.root.join(VIEWS_BOOT);
                if FS.read(&marker).ok().as_deref() != Some(boot.as_bytes()) {
                    let temp = self.temp_path();
                    write_atomic(FS, &temp, &marker, boot.as_bytes(), 0o600, Durability::Durable)?;
                }
                Durability::Unsynced
            }
        };
        self.views = Some(durability);
        Ok(durability)
    }

    fn temp_path(&self) -> PathBuf {
        self.temp_dir.join(format!(
            "{TEMP_PREFIX}{}-{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ))
    }

    fn put(&mut self, rel: &str, bytes: &[u8], written: &mut WrittenViews) -> Result<(), Error> {
        // A promoted master (`topics/core.md`) is canonical: durable like every install. For a
        // view, the boot is recorded first even when nothing changes: a rebuild that found the
        // views whole after a power loss records that they were checked in this boot.
        let durability =
            if rel.starts_with("topics/") { Durability::Durable } else { self.views_durability()? };
        let target = self.root.join(rel);
        let unchanged = FS.metadata(&target).is_ok_and(|m| m.kind == FileKind::File)
            && FS.read(&target).is_ok_and(|old| old == bytes);
        if unchanged {
            return Ok(());
        }
        let parent = target.parent().unwrap_or(self.root);
        create_private_dir(parent)?;
        let temp = self.temp_path();
        write_atomic(FS, &temp, &target, bytes, 0o600, durability)?;
        written.changed_files.push(rel.to_owned());
        Ok(())
    }
}

/// Creates a directory (and its parents) owner-only, syncing each parent of a new directory.
fn create_private_dir(dir: &Path) -> Result<(), Error> {
    if FS.metadata(dir).is_ok_and(|m| m.kind == FileKind::Dir) {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_private_dir(parent)?;
    }
    match FS.create_dir(dir, 0o700) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_error(dir)(e)),
    }
    if let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<(), Error> {
    FS.sync_dir(dir).map_err(io_error(dir))
}

/// Removes every entry under `timeline/` that `views` does not hold (symlinks included, never
/// followed), then the directories left empty.
fn remove_stale_timeline(
    root: &Path,
    views: &Views,
    written: &mut WrittenViews,
) -> Result<(), Error> {
    let timeline = root.join("timeline");
    let Ok(meta) = FS.metadata(&timeline) else {
        return Ok(());
    };
    if meta.kind != FileKind::Dir {
        FS.remove_file(&timeline).map_err(io_error(&timeline))?;
        written.removed_files.push("timeline".to_owned());
        return Ok(());
    }
    let keep: BTreeSet<&str> = views.timeline.keys().map(String::as_str).collect();
    prune_dir(&timeline, "timeline", &keep, written)?;
    Ok(())
}

/// Returns whether `dir` is now empty.
fn prune_dir(
    dir: &Path,
    rel: &str,
    keep: &BTreeSet<&str>,
    written: &mut WrittenViews,
) -> Result<bool, Error> {
    let mut entries: Vec<(PathBuf, String, FileKind)> = Vec::new();
    for (name, kind) in FS.read_dir(dir).map_err(io_error(dir))? {
        let entry_rel = format!("{rel}/{}", name.to_string_lossy());
        entries.push((dir.join(name), entry_rel, kind));
    }
    let mut empty = true;
    let mut removed_any = false;
    for (path, entry_rel, kind) in entries {
        if kind == FileKind::Dir {
            if prune_dir(&path, &entry_rel, keep, written)? {
                FS.remove_dir(&path).map_err(io_error(&path))?;
                removed_any = true;
            } else {
                empty = false;
            }
        } else if kind == FileKind::File && keep.contains(entry_rel.as_str()) {
            empty = false;
        } else {
            FS.remove_file(&path).map_err(io_error(&path))?;
            written.removed_files.push(entry_rel);
            removed_any = true;
        }
    }
    if removed_any {
        sync_dir(dir)?;
    }
    Ok(empty)
}

/// How [`rebuild_workspace`] renders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RebuildOptions {
    /// Units in `recent_events.jsonl` (default 50).
    pub recent_limit: usize,
    /// The core budget in o200k_base tokens (default 2 000).
    pub core_budget: usize,
    /// Promote a legacy root `core.md` when there is no `topics/core.md` (see
    /// `docs/format.md#core-view`). This writes a canonical file, so it is off by default: the
    /// transaction path promotes in its stage.
    pub promote_legacy_core: bool,
    /// The creation order (`runtime.json`'s, which the transaction engine keeps; the caller
    /// reads it there). IDs it lacks are numbered after the others for this render.
    pub creation_order: std::collections::HashMap<String, u64>,
}

impl Default for RebuildOptions {
    fn default() -> Self {
        RebuildOptions {
            recent_limit: DEFAULT_RECENT_LIMIT,
            core_budget: DEFAULT_CORE_BUDGET,
            promote_legacy_core: false,
            creation_order: std::collections::HashMap::new(),
        }
    }
}

/// What [`rebuild_workspace`] did.
#[derive(Clone, Debug, Default)]
pub struct RebuildReport {
    /// Units the views were built from.
    pub units: usize,
    /// Every violation of the topic tree (views are built from the units that parsed).
    pub diagnostics: Vec<Diagnostic>,
    /// The core render.
    pub core: CoreReport,
    /// Whether a legacy root `core.md` was promoted to `topics/core.md`.
    pub promoted_legacy_core: bool,
    /// The files written and removed.
    pub written: WrittenViews,
}

/// Rebuilds every derived view of the workspace at `memory_root` from `topics/`, the `sources/`
/// its citations name and the creation order of `options`, and writes them with [`write_views`] (same atomicity contract). With
/// `promote_legacy_core`, a promoted master is written to `topics/core.md` atomically first.
///
/// A root `core.md` without a master is left alone. A tree with diagnostics still gets views
/// from the units that parsed; the core render then treats every source as trusted (the
/// reference's empty pending set).
pub fn rebuild_workspace(
    memory_root: &Path,
    options: &RebuildOptions,
) -> Result<RebuildReport, Error> {
    let mut files = read_topics(memory_root)?;
    let resolver = ArchiveResolver::new(FsSources::new(memory_root));
    let mut report = RebuildReport::default();
    let has_master = files.iter().any(|f| f.path == CORE_TOPIC);
    let root_core = memory_root.join(CORE_TOPIC);
    if !has_master
        && options.promote_legacy_core
        && FS.metadata(&root_core).is_ok_and(|m| m.kind == FileKind::File)
    {
        let legacy = FS.read(&root_core).map_err(io_error(&root_core))?;
        let legacy = String::from_utf8(legacy)
            .map_err(|_| io_error(&root_core)(io::ErrorKind::InvalidData.into()))?;
        if let Some(master) = promote_legacy_core(&legacy, &files, &resolver) {
            let mut writer = Writer::new(memory_root)?;
            let mut ignored = WrittenViews::default();
            writer.put(&format!("topics/{CORE_TOPIC}"), master.as_bytes(), &mut ignored)?;
            files.push(TopicFile::new(CORE_TOPIC, master));
            report.promoted_legacy_core = true;
        }
    }
    let parse = parse_tree(&files, &resolver);
    let views = rebuild(parse.units.iter(), &options.creation_order, options.recent_limit);
    let master = files.iter().find(|f| f.path == CORE_TOPIC).map(|f| f.text.as_str());
    let trust: &dyn SourceTrust = if parse.is_valid() { &resolver } else { &TrustAll };
    let core = render_core(master, trust, options.core_budget);
    report.written = write_views(memory_root, &views, &core, false)?;
    report.units = parse.units.len();
    report.diagnostics = parse.diagnostics;
    report.core = core.report;
    Ok(report)
}
