//! What a transaction starts from: its options ([`BeginOptions`]), the facts `begin` read under
//! the lock ([`Begin`]) and the baseline, rebuilt only for the files that changed since the
//! one the workspace handle keeps ([`CachedBaseline`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use scriptorium_topics_format::TopicFile;
use scriptorium_topics_format::source::{ArchiveRecord, ArchiveResolver, PlannedWrite};

use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::ids::Revision;
use crate::live::LiveTree;
use crate::lock::LockTimeout;
use crate::sources::LiveSources;
use crate::state::{Batch, Layout, RuntimeCache};
use crate::validate::{Baseline, FileLoader, FileState, Limits, Required, Summary};

/// The resolver every step of one transaction shares: each cited archive is read and scanned
/// once per transaction (the `sources/` check at install guarantees it did not change).
pub type Resolver = ArchiveResolver<LiveSources>;

/// How a transaction starts.
#[derive(Clone, Debug, Default)]
pub struct BeginOptions {
    /// Compare-and-set: the revision the caller read. A different revision at `begin` or at
    /// install is `CONCURRENT_UPDATE`.
    pub base_revision: Option<Revision>,
    /// The transaction's own evidence: when `Some`, every ref no committed block cited must be
    /// in it (writers: the batch's refs; the organizer: the empty set).
    pub allowed_new_sources: Option<BTreeSet<String>>,
    /// How long `begin` and `install` wait for the write lock.
    pub lock_timeout: LockTimeout,
    /// Which committed block IDs must survive.
    pub required: Required,
    /// The commit message (for the history crate; one line).
    pub message: String,
    /// Size limits.
    pub limits: Limits,
    /// Sources the transaction archives as it installs (the change API's declared `sources`).
    /// `begin` plans their append against the live archive (refusing what cannot be archived)
    /// and validation resolves refs against the live archive with the planned frames
    /// appended; the install appends them under the write lock right before the swap. A
    /// transaction that is rejected, aborted or refused by the compare-and-set therefore
    /// archives nothing.
    pub pending_sources: Vec<ArchiveRecord>,
    /// The batch of session records this transaction writes (the writer's): the install
    /// records it in the revision record with the topics
    /// ([`Workspace::installed_batches`](crate::Workspace::installed_batches)).
    pub batch: Option<Batch>,
    /// Block IDs another clone of this workspace committed (a sync's merge brings its blocks):
    /// normalization keeps them as written instead of stripping them as invented, so a block
    /// keeps its ID on every clone.
    pub adopted_block_ids: BTreeSet<String>,
    /// A forget: text that normalization prunes with a section or file the forget emptied (a
    /// heading's HTML line, a fence left without a record) is dropped, not refused. Every other
    /// transaction refuses to drop written text (`UNCITED_PARAGRAPH`).
    pub forget: bool,
}

/// The baseline of one revision, kept by the [`Workspace`](crate::Workspace) handle between
/// transactions.
///
/// `begin` takes it whole when the revision, the digest of `topics/` and the `sources/`
/// digest all equal the ones it was read from; otherwise it keeps every file whose content
/// hash is unchanged and parses only the others. Any outside edit of `topics/` changes a hash,
/// any install or archive append (by any process) changes the revision, so a stale entry can
/// never be used whole, and a stale file never survives. A rejected or aborted transaction
/// changes nothing on disk and leaves the entry valid.
pub(crate) struct CachedBaseline {
    pub(crate) revision: Revision,
    /// The digest of `topics/`.
    pub(crate) topics: String,
    /// The `sources/` digest.
    pub(crate) sources: String,
    pub(crate) baseline: Arc<Baseline>,
}

/// What `begin` read under the lock, shared by the stages of one transaction.
pub(crate) struct Begin {
    pub(crate) revision: Revision,
    /// `sources/` at `begin`.
    pub(crate) sources: crate::state::SourcesScan,
    /// The append of [`BeginOptions::pending_sources`] planned at `begin`.
    pub(crate) pending: Vec<PlannedWrite>,
    /// `runtime.json` at `begin`, parsed.
    pub(crate) runtime: RuntimeCache,
    /// The live `topics/` at `begin`.
    pub(crate) live: LiveTree,
    pub(crate) resolver: Resolver,
}

/// Parses committed files on demand for a baseline read from the catalog: the live file,
/// whose bytes must still hash to the catalog's hash (else it changed since `begin`, and the
/// transaction is stale).
pub(crate) struct LiveLoader {
    pub(crate) fs: Arc<dyn Fs>,
    pub(crate) layout: Layout,
}

impl FileLoader for LiveLoader {
    fn load(&self, path: &str, hash: &str) -> std::result::Result<FileState, String> {
        let full = self.layout.topics.join(path);
        let bytes = self.fs.read(&full).map_err(|e| format!("read: {e}"))?;
        let actual = crate::state::sha256_hex(&bytes);
        if actual != hash {
            return Err("changed since the transaction began; retry".to_owned());
        }
        let text = String::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
        let sources = LiveSources::new(Arc::clone(&self.fs), self.layout.root.clone());
        let resolver = ArchiveResolver::new(sources);
        let state = FileState::parse_hashed(TopicFile::new(path, text), actual, &resolver);
        match resolver.files().take_errors().into_iter().next() {
            Some(error) => Err(format!("read sources: {error}")),
            None => Ok(state),
        }
    }
}

/// The catalog's summaries by path, empty when there is none or it is no whole catalog.
fn read_catalog(fs: &dyn Fs, layout: &Layout) -> HashMap<String, Summary> {
    let Ok(bytes) = fs.read(&layout.catalog) else { return HashMap::new() };
    crate::validate::Baseline::decode_catalog(&bytes)
        .unwrap_or_default()
        .into_iter()
        .map(|s| (s.path.clone(), s))
        .collect()
}

/// Writes the catalog of `baseline` (best effort: derived state, checked entry by entry when
/// read; not synced, a crash leaves the old catalog, the new one, or one whose trailer does
/// not match, which is no catalog).
pub(crate) fn write_catalog(fs: &dyn Fs, layout: &Layout, baseline: &Baseline) {
    let bytes = baseline.catalog();
    let temp = layout.runtime.join("tmp-catalog");
    let _ = scriptorium_workspace_fs::write_atomic(
        fs,
        &temp,
        &layout.catalog,
        &bytes,
        0o600,
        scriptorium_workspace_fs::Durability::Unsynced,
    );
}

/// The baseline of the live tree `live`: `cached` whole when it describes exactly this
/// revision, else `cached`'s files whose hashes are unchanged plus a parse of the others
/// (bytes kept by the scan, or read now). Without `cached` (a new process), the catalog's
/// entries stand for every file whose hash they match, parsed only on demand, and the others
/// are parsed now (the catalog is then written again). The resolver's IO errors are errors.
pub(crate) fn baseline_of(
    fs_arc: &Arc<dyn Fs>,
    layout: &Layout,
    live: &LiveTree,
    cached: Option<&CachedBaseline>,
    exact: bool,
    resolver: &Resolver,
) -> Result<Arc<Baseline>> {
    let fs = fs_arc.as_ref();
    if let (true, Some(cached)) = (exact, cached) {
        return Ok(Arc::clone(&cached.baseline));
    }
    let parse = |rel: &String, file: &crate::live::LiveFile| -> Result<Option<Arc<FileState>>> {
        let bytes = live.bytes(fs, &layout.topics, rel)?;
        // A file that is not UTF-8 is no topic; the transaction refuses it at validation.
        let Ok(text) = String::from_utf8(bytes) else { return Ok(None) };
        Ok(Some(Arc::new(FileState::parse_hashed(
            TopicFile::new(rel.clone(), text),
            file.hash.clone(),
            resolver,
        ))))
    };
    let resolver_errors = || -> Result<()> {
        match resolver.files().take_errors().into_iter().next() {
            Some(error) => Err(Error::Io {
                op: "read sources",
                path: layout.sources.clone(),
                source: std::io::Error::other(error),
            }),
            None => Ok(()),
        }
    };
    let Some(cached) = cached else {
        let mut catalog = read_catalog(fs, layout);
        let known = catalog.len();
        let mut summaries: Vec<Summary> = Vec::new();
        let mut parsed: Vec<Arc<FileState>> = Vec::new();
        for (rel, file) in &live.files {
            if !rel.ends_with(".md") {
                continue;
            }
            match catalog.remove(rel) {
                Some(summary) if summary.hash == file.hash => summaries.push(summary),
                _ => parsed.extend(parse(rel, file)?),
            }
        }
        resolver_errors()?;
        let stale = !parsed.is_empty() || summaries.len() != known;
        let loader = Arc::new(LiveLoader { fs: Arc::clone(fs_arc), layout: layout.clone() });
        let baseline = Baseline::from_summaries(summaries, parsed, loader);
        if stale {
            write_catalog(fs, layout, &baseline);
        }
        return Ok(Arc::new(baseline));
    };
    let mut baseline = (*cached.baseline).clone();
    let mut changed: Vec<Arc<FileState>> = Vec::new();
    for (rel, file) in &live.files {
        if !rel.ends_with(".md") {
            continue;
        }
        if baseline.summary(rel).is_some_and(|state| state.hash == file.hash) {
            continue;
        }
        changed.extend(parse(rel, file)?);
    }
    let removed: Vec<String> = baseline
        .paths()
        .filter(|rel| {
            live.files.get(*rel).is_none_or(|file| {
                // Gone, or no longer a readable topic.
                baseline.summary(rel).is_none_or(|state| state.hash != file.hash)
                    && !changed.iter().any(|c| c.path() == *rel)
            })
        })
        .map(str::to_owned)
        .collect();
    baseline.replace(changed, &removed);
    resolver_errors()?;
    Ok(Arc::new(baseline))
}
