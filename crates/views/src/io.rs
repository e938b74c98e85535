//! The IO layer: reading a workspace for a rebuild and writing the derived files.
//!
//! Every file is replaced atomically (temporary file in `.scriptorium/`, `sync_data`, rename,
//! fsync of the directory) and only when its bytes change, so an unchanged view keeps its
//! mtime and a reader never sees a half-written view. The set of views as a whole is not
//! atomic: a crash between two renames leaves some views new and some old, which the next
//! rebuild repairs (views are derived and can always be rebuilt).

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use scriptorium_topics_format::catalog::{FileLookup, SourceFiles};
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::{Diagnostic, TopicFile, parse_tree};

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
            if fs::symlink_metadata(&path).is_ok() {
                fs::remove_file(&path).map_err(io_error(&path))?;
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
    match fs::symlink_metadata(&path) {
        Ok(meta) if !meta.is_dir() => {
            fs::remove_file(&path).map_err(io_error(&path))?;
            written.removed_files.push(rel.to_owned());
        }
        _ => return Ok(()),
    }
    let timeline = root.join("timeline");
    let mut dir = path.parent().map(Path::to_path_buf);
    while let Some(current) = dir.filter(|d| d.starts_with(&timeline) && *d != timeline) {
        if fs::read_dir(&current).map_err(io_error(&current))?.next().is_some() {
            sync_dir(&current)?;
            return Ok(());
        }
        fs::remove_dir(&current).map_err(io_error(&current))?;
        dir = current.parent().map(Path::to_path_buf);
    }
    sync_dir(&timeline).or(Ok(()))
}

/// Replaces files atomically through temporaries in `.scriptorium/`.
struct Writer<'a> {
    root: &'a Path,
    temp_dir: PathBuf,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The prefix of the views' temporary files in `.scriptorium/`: the engine's `tmp-*`, so a
/// temporary a killed process left behind is removed by the next open's recovery (views are
/// written under the workspace write lock, so a `tmp-*` file recovery sees has no live writer).
pub const TEMP_PREFIX: &str = "tmp-views-";

impl<'a> Writer<'a> {
    fn new(root: &'a Path) -> Result<Self, Error> {
        let temp_dir = root.join(".scriptorium");
        create_private_dir(&temp_dir)?;
        Ok(Writer { root, temp_dir })
    }

    fn put(&mut self, rel: &str, bytes: &[u8], written: &mut WrittenViews) -> Result<(), Error> {
        let target = self.root.join(rel);
        let unchanged = fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_file())
            && fs::read(&target).is_ok_and(|old| old == bytes);
        if unchanged {
            return Ok(());
        }
        let parent = target.parent().unwrap_or(self.root);
        create_private_dir(parent)?;
        let temp = self.temp_dir.join(format!(
            "{TEMP_PREFIX}{}-{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut file = private_options().open(&temp).map_err(io_error(&temp))?;
            file.write_all(bytes).map_err(io_error(&temp))?;
            file.sync_data().map_err(io_error(&temp))?;
            drop(file);
            fs::rename(&temp, &target).map_err(io_error(&target))
        })();
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result?;
        sync_dir(parent)?;
        written.changed_files.push(rel.to_owned());
        Ok(())
    }
}

fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options
}

/// Creates a directory (and its parents) owner-only, syncing each parent of a new directory.
fn create_private_dir(dir: &Path) -> Result<(), Error> {
    if fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_private_dir(parent)?;
    }
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    match builder.create(dir) {
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
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_error(dir))
}

/// Removes every entry under `timeline/` that `views` does not hold (symlinks included, never
/// followed), then the directories left empty.
fn remove_stale_timeline(
    root: &Path,
    views: &Views,
    written: &mut WrittenViews,
) -> Result<(), Error> {
    let timeline = root.join("timeline");
    let Ok(meta) = fs::symlink_metadata(&timeline) else {
        return Ok(());
    };
    if !meta.is_dir() {
        fs::remove_file(&timeline).map_err(io_error(&timeline))?;
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
    let mut entries: Vec<(PathBuf, String)> = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        entries.push((entry.path(), format!("{rel}/{name}")));
    }
    let mut empty = true;
    let mut removed_any = false;
    for (path, entry_rel) in entries {
        let meta = fs::symlink_metadata(&path).map_err(io_error(&path))?;
        if meta.is_dir() {
            if prune_dir(&path, &entry_rel, keep, written)? {
                fs::remove_dir(&path).map_err(io_error(&path))?;
                removed_any = true;
            } else {
                empty = false;
            }
        } else if meta.is_file() && keep.contains(entry_rel.as_str()) {
            empty = false;
        } else {
            fs::remove_file(&path).map_err(io_error(&path))?;
            written.removed_files.push(entry_rel);
            removed_any = true;
        }
    }
    if removed_any {
        sync_dir(dir)?;
    }
    Ok(empty)
}

/// `sources/` read from disk for a topic parse. Symlinks are refused (reported as
/// [`FileLookup::NotRegularFile`]), anywhere on the path; so are non-UTF-8 files and paths
/// outside `sources/`.
#[derive(Clone, Debug)]
pub struct FsSources {
    root: PathBuf,
}

impl FsSources {
    /// Sources under `memory_root/sources/`.
    pub fn new(memory_root: impl Into<PathBuf>) -> Self {
        FsSources { root: memory_root.into() }
    }
}

impl SourceFiles for FsSources {
    fn lookup(&self, rel: &str) -> FileLookup {
        let parts: Vec<&str> = rel.split('/').collect();
        if parts.first() != Some(&"sources")
            || parts.len() < 2
            || parts.iter().any(|p| matches!(*p, "" | "." | ".."))
        {
            return FileLookup::NotRegularFile;
        }
        let mut path = self.root.clone();
        for (i, part) in parts.iter().enumerate() {
            path.push(part);
            match fs::symlink_metadata(&path) {
                Err(_) => return FileLookup::Missing,
                Ok(meta) if meta.file_type().is_symlink() => return FileLookup::NotRegularFile,
                Ok(meta) if i + 1 == parts.len() && !meta.is_file() => {
                    return FileLookup::NotRegularFile;
                }
                Ok(_) => {}
            }
        }
        match fs::read(&path).map(String::from_utf8) {
            Ok(Ok(text)) => FileLookup::Text(Arc::from(text)),
            Ok(Err(_)) => FileLookup::NotRegularFile,
            Err(_) => FileLookup::Missing,
        }
    }
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
        && fs::symlink_metadata(&root_core).is_ok_and(|m| m.is_file())
    {
        let legacy = fs::read_to_string(&root_core).map_err(io_error(&root_core))?;
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

/// Every regular `*.md` file under `topics/` (symlinks skipped), paths relative to `topics/`.
pub fn read_topics(memory_root: &Path) -> Result<Vec<TopicFile>, Error> {
    let mut files = Vec::new();
    let topics = memory_root.join("topics");
    if fs::symlink_metadata(&topics).is_ok_and(|m| m.is_dir()) {
        walk_topics(&topics, "", &mut files)?;
    }
    Ok(files)
}

fn walk_topics(dir: &Path, rel: &str, files: &mut Vec<TopicFile>) -> Result<(), Error> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_error(dir))? {
        entries.push(entry.map_err(io_error(dir))?);
    }
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let entry_rel = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        let meta = fs::symlink_metadata(&path).map_err(io_error(&path))?;
        if meta.is_dir() {
            walk_topics(&path, &entry_rel, files)?;
        } else if meta.is_file() && name.ends_with(".md") {
            let bytes = fs::read(&path).map_err(io_error(&path))?;
            let text =
                String::from_utf8(bytes).map_err(|_| Error::NotUtf8 { path: path.clone() })?;
            files.push(TopicFile::new(entry_rel, text));
        }
    }
    Ok(())
}
