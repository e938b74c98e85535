//! The persisted index: open (or rebuild), incremental sync, search.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tantivy::collector::{DocSetCollector, TopDocs};
use tantivy::indexer::LogMergePolicy;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query as TantivyQuery, RangeQuery, TermQuery,
    TermSetQuery,
};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{
    DocAddress, DocSet, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, Searcher,
    TantivyDocument, Term,
};

use crate::directory::IndexDirectory;
use crate::error::{Error, Result};
use crate::extract::{IndexResolver, Overrides, SourceLookup, block_docs, source_docs};
use scriptorium_workspace_fs::{Fs as _, RealFs as WorkspaceFs};

use crate::fs::{FileAccess, RealFs, Stat};
use crate::model::{Changes, Hit, HitKind, Plan, ProjectScope, Query};
use crate::schema::{Fields, KIND_BLOCK, KIND_SOURCE, Key, SCHEMA_VERSION, build_schema};
use crate::segments;
use crate::tokenize::{ScriptoriumTokenizer, TOKENIZER_NAME, find_term, query_terms};

/// The manifest file, beside tantivy's own files in the index directory.
const MANIFEST: &str = "scriptorium-manifest.json";
/// tantivy's indexing arena (its minimum per thread).
const WRITER_ARENA: usize = 15_000_000;
/// The smallest segment size the merge policy distinguishes (see [`merge_policy`]).
const MIN_MERGE_LAYER: u32 = 100;
/// How many segments of one level are merged together (see [`merge_policy`]).
const MIN_MERGE_SEGMENTS: usize = 4;
/// A match in a record's context weighs this much of a match in its own text (tuned on the
/// LoCoMo dev split, `examples/recall.rs`, as are the two weights below).
const CONTEXT_WEIGHT: f32 = 0.5;
/// A query word naming a record's speaker adds this times the name's IDF to the record's score.
const SPEAKER_WEIGHT: f32 = 2.5;
/// Candidates ranked (tantivy's top documents) per hit asked for, at least [`MIN_CANDIDATES`]:
/// the floor and the collapsing of one fact's copies consume some.
const CANDIDATES_PER_HIT: usize = 8;
/// See [`CANDIDATES_PER_HIT`].
const MIN_CANDIDATES: usize = 40;
/// The relevance floor weighs terms as in a memory of at least this many documents (see
/// `search_plan`).
const FLOOR_MIN_DOCS: f32 = 1000.0;
/// Query terms kept from a long query: the rarest (highest IDF).
const MAX_QUERY_TERMS: usize = 32;
/// Bytes per compressed block of tantivy's doc store (see `index_settings`).
const DOCSTORE_BLOCK: usize = 4096;
/// Characters of recall text in a hit.
const CONTENT_CHARS: usize = 1200;
/// Characters of a snippet.
const SNIPPET_CHARS: usize = 240;

/// What the index's last commit records.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    version: u32,
    revision: String,
    /// The boot during which this commit was written without fsync (empty: it was synced);
    /// see the crate docs, *Durability*.
    #[serde(default)]
    boot: String,
}

/// The per-file state of the last sync.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Manifest {
    version: u32,
    /// The revision of the commit it was written after (checked after a reboot).
    #[serde(default)]
    revision: String,
    files: BTreeMap<String, FileStamp>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct FileStamp {
    size: u64,
    mtime_ns: i128,
    inode: u64,
    hash: u64,
}

/// What one [`Index::sync`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Files read and re-indexed (workspace-relative), sorted.
    pub reindexed: Vec<String>,
    /// Files whose documents were removed because the file is gone, sorted.
    pub removed: Vec<String>,
    /// Whether the whole workspace was walked (no usable hint or manifest).
    pub full_walk: bool,
}

/// Files an index update reads from here rather than from the workspace (workspace-relative
/// paths): a transaction's files before its install makes them live, each with the `stat` it
/// will have once live (`None`: the install deletes it). See [`Index::sync_ahead`].
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    files: BTreeMap<String, Option<(Stat, Vec<u8>)>>,
}

impl Overlay {
    /// `rel` will hold `bytes` with `stat`, or be gone (`None`).
    pub fn insert(&mut self, rel: impl Into<String>, file: Option<(Stat, Vec<u8>)>) {
        self.files.insert(rel.into(), file);
    }
}

/// What [`Index::sync_ahead`] came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ahead {
    /// Committed at the revision `decide` gave.
    Committed(SyncReport),
    /// `decide` said the install failed: nothing was published.
    Abandoned,
    /// The index does not reflect the revision the transaction began from (or has no
    /// manifest yet): nothing was prepared; sync once the install is done.
    Behind,
}

/// A persisted recall index of one memory workspace, in `<memory>/.scriptorium/index/`.
///
/// Architecture Invariant: [`Index::search`] with the revision the index already reflects
/// performs no file access through the [`FileAccess`] seam (no directory walk, no read, no
/// stat); it only reads tantivy's memory-mapped segments.
///
/// # Writer lifetime
///
/// The first [`Index::sync`] that has to write takes tantivy's writer lock and keeps it until
/// the `Index` is dropped or [`Index::release_writer`] is called (a merge it starts after a
/// commit holds the lock while it runs, and the next update waits for it), so later syncs skip
/// the writer's setup and merges run in the background instead of blocking the sync. The cost: while one `Index` holds the writer, another `Index` on the same
/// directory (in this or another process) cannot update it; its sync, or a search that needs
/// to catch up, fails with [`Error::Busy`] (retryable). Searches at a revision the index already
/// reflects never need the writer. In practice the index is updated under the workspace write
/// lock and other processes only read; a long-lived process that updates only rarely can call
/// [`Index::release_writer`] after each update to let others write.
pub struct Index {
    root: PathBuf,
    dir: PathBuf,
    fs: Arc<dyn FileAccess>,
    /// The running boot when the platform tells it: writes are then left unsynced (see the
    /// crate docs, *Durability*).
    boot: Option<String>,
    index: tantivy::Index,
    /// The index's directory (tantivy holds a clone): what an update packs (see
    /// `directory.rs`, *Packs*).
    directory: IndexDirectory,
    reader: IndexReader,
    fields: Fields,
    revision: Option<String>,
    /// The writer, taken by the first sync that writes and kept until drop or
    /// [`Index::release_writer`] (see "Writer lifetime" on [`Index`]).
    writer: Option<segments::Writer>,
    /// What the committed index said about source records in earlier updates of this `Index`
    /// (see [`SourceFacts`]).
    facts: SourceFacts,
}

/// Facts about committed source records that an update looks up for every citation it
/// indexes (a search and a stored document read each): the source ID an archive anchor names,
/// and whether a record is trusted. A record's facts never change while its archive does not
/// (records are only appended), so they are kept from one update to the next of the same
/// `Index`, as long as the committed index is the one this `Index` committed last
/// (`valid_at`, its revision) and no update changed an archive; anything else starts afresh.
/// Only what was found is kept: a record not yet indexed is looked up again.
#[derive(Debug, Default)]
struct SourceFacts {
    valid_at: Option<String>,
    anchors: HashMap<String, String>,
    trusted: HashMap<String, bool>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("root", &self.root)
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

impl Index {
    /// Opens the index of the workspace at `memory_root`. A missing, corrupt or outdated index
    /// is deleted and recreated empty (the next sync fills it): never an error for that reason.
    ///
    /// Errors only when the index directory cannot be created or written.
    pub fn open(memory_root: &Path) -> Result<Index> {
        Index::open_with(memory_root, Arc::new(RealFs))
    }

    /// [`Index::open`] with an explicit file-access seam (tests count reads through it).
    pub fn open_with(memory_root: &Path, fs: Arc<dyn FileAccess>) -> Result<Index> {
        let dir = memory_root.join(".scriptorium").join("index");
        let (schema, fields) = build_schema();
        let boot = fs.boot_id();
        let opened = open_existing(&dir, &schema, boot.as_deref(), fs.as_ref());
        let (index, directory, reader, revision) = match opened {
            Some(found) => found,
            None => create_fresh(&dir, schema, boot.as_deref())?,
        };
        Ok(Index {
            boot,
            root: memory_root.to_path_buf(),
            dir,
            fs,
            index,
            directory,
            reader,
            fields,
            revision,
            writer: None,
            facts: SourceFacts::default(),
        })
    }

    /// Releases the writer lock if this `Index` holds it; the next sync that writes takes it
    /// again. A merge still running goes on alone and commits when done (or, when the process
    /// ends first, leaves files the next writer collects); committed data is unaffected.
    pub fn release_writer(&mut self) {
        self.writer = None;
    }

    /// Waits for the segment merge this `Index`'s writer started and releases the writer (an
    /// error says the merge failed: nothing committed is lost, the merge is retried later). A
    /// process that exits right after an update calls it: merges run beside the caller and
    /// would otherwise never finish, and every update's small segment would stay (a search
    /// opens each one). Merging the small segments of recent updates costs milliseconds; the
    /// rarer merge of large levels costs more. Committed data is unaffected either way.
    pub fn finish_merges(&mut self) -> Result<()> {
        if let Some(mut writer) = self.writer.take() {
            writer.settle(&self.index)?;
            self.reader.reload()?;
            if let Some(message) = writer.take_merge_failure() {
                return Err(Error::Index { message });
            }
        }
        Ok(())
    }

    /// Whether this `Index` currently holds tantivy's writer (see "Writer lifetime").
    pub fn holds_writer(&self) -> bool {
        self.writer.is_some()
    }

    /// The workspace revision the index reflects (`None` for a fresh index).
    pub fn revision(&self) -> Option<&str> {
        self.revision.as_deref()
    }

    /// Number of segments of the last commit the reader loaded (each search opens every one;
    /// updates add one, merges fold them together).
    pub fn num_segments(&self) -> usize {
        self.reader.searcher().segment_readers().len()
    }

    /// Number of indexed documents (blocks and source records).
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Brings the index to `revision`: re-indexes only the files that changed. With a `hint`
    /// that starts from the revision the index reflects ([`Changes::since`]), only the hinted
    /// files are looked at; otherwise every `topics/**/*.md` and v2 archive is stat'ed and
    /// compared with the manifest (size, mtime, inode; the content hash only when the stat
    /// differs). Topic files citing source records whose trust changed are re-indexed too. A
    /// fresh index ignores the hint and walks everything.
    ///
    /// Atomicity: the documents and the revision are published by one tantivy commit (its
    /// `meta.json` is replaced atomically); the manifest is written after it (temp file +
    /// rename), and a stale manifest only causes files to be re-read next time. A sync killed
    /// before its commit changes nothing: the files it wrote are collected when the next sync
    /// takes the writer.
    pub fn sync(&mut self, revision: &str, hint: Option<&Changes>) -> Result<SyncReport> {
        self.reader.reload()?;
        let stored = read_payload(&self.index).map(|p| p.revision);
        if let Some(stored) = stored.as_ref().filter(|stored| *stored == revision) {
            self.revision = Some(stored.clone());
            return Ok(SyncReport::default());
        }
        // A hint covers only what changed since its revision: an index that is further behind
        // would never see the files changed in between.
        let hint = hint.filter(|h| stored.as_deref() == Some(h.since.as_str()));
        match self.update(stored.as_deref(), hint, None, || Some(revision.to_owned()))? {
            Ahead::Committed(report) => Ok(report),
            Ahead::Abandoned | Ahead::Behind => {
                unreachable!("an update without an overlay always commits")
            }
        }
    }

    /// Prepares the index update of a transaction that is about to install (its files in
    /// `overlay`, read from there instead of the workspace), then asks `decide` for the
    /// revision it installed: `Some` commits at that revision, `None` (the install failed)
    /// drops what was prepared. The work before `decide` (documents, the new segment's files
    /// and their fsyncs) thus runs beside the install's own durable steps, and nothing is
    /// visible to a search before the install happened.
    ///
    /// Only an index that reflects `hint.since` (the revision the transaction began from)
    /// and has a manifest prepares anything; otherwise the answer is [`Ahead::Behind`] at once,
    /// `decide` is not called, and the caller syncs once the install is done.
    pub fn sync_ahead(
        &mut self,
        hint: &Changes,
        overlay: &Overlay,
        decide: impl FnOnce() -> Option<String>,
    ) -> Result<Ahead> {
        self.reader.reload()?;
        let stored = read_payload(&self.index).map(|p| p.revision);
        if stored.as_deref() != Some(hint.since.as_str()) {
            return Ok(Ahead::Behind);
        }
        self.update(stored.as_deref(), Some(hint), Some(overlay), decide)
    }

    /// The update behind [`Index::sync`] and [`Index::sync_ahead`] (which passes its
    /// `overlay`); `hint` is usable (it starts at the stored revision) or `None`.
    fn update(
        &mut self,
        stored: Option<&str>,
        hint: Option<&Changes>,
        overlay: Option<&Overlay>,
        decide: impl FnOnce() -> Option<String>,
    ) -> Result<Ahead> {
        let manifest_path = self.dir.join(MANIFEST);
        let mut manifest = self.load_manifest(&manifest_path);
        let fresh = self.revision.as_deref().is_none_or(str::is_empty) || manifest.files.is_empty();
        let full_walk = fresh || hint.is_none();
        if full_walk && overlay.is_some() {
            // A walk would read the tree the transaction has not replaced yet.
            return Ok(Ahead::Behind);
        }
        let empty = Overlay::default();
        let overlay = overlay.unwrap_or(&empty);
        // Taken out of `self` for the update: on any error below it is dropped, which discards
        // the queued operations and releases the lock instead of leaking them into the next
        // commit.
        let mut writer = match self.writer.take() {
            Some(writer) => writer,
            None => segments::Writer::acquire(&mut self.index)?,
        };
        // A merge this writer started may have committed since the reader was loaded: its
        // segments are what the deletes below apply to.
        if writer.settle(&self.index)? {
            self.reader.reload()?;
        }
        let searcher = self.reader.searcher();
        let mut deletes: Vec<Term> = Vec::new();
        let mut docs: Vec<TantivyDocument> = Vec::new();
        let candidates: BTreeSet<String> = match hint {
            Some(changes) if !full_walk => {
                changes.paths.iter().filter_map(|p| normalize_rel(p)).collect()
            }
            _ => {
                let mut all = BTreeSet::new();
                self.walk("topics", &mut all)?;
                self.walk("sources", &mut all)?;
                all.extend(manifest.files.keys().cloned());
                all
            }
        };

        // Which files changed, and their new text.
        let mut changed: BTreeMap<String, Option<String>> = BTreeMap::new();
        for rel in &candidates {
            let path = self.root.join(rel);
            let staged = overlay.files.get(rel);
            let stat = match staged {
                Some(file) => file.as_ref().map(|(stat, _)| *stat),
                None => self.fs.stat(&path).map_err(|e| Error::io(&path, e))?,
            };
            let old = manifest.files.get(rel).copied();
            let Some(stat) = stat.filter(|s| s.is_file && indexable(rel)) else {
                if old.is_some() {
                    manifest.files.remove(rel);
                    changed.insert(rel.clone(), None);
                }
                continue;
            };
            if !fresh && hint.is_none() && old.is_some_and(|o| same_stat(&o, &stat)) {
                continue;
            }
            let bytes = match staged {
                Some(Some((_, bytes))) => bytes.clone(),
                _ => self.fs.read(&path).map_err(|e| Error::io(&path, e))?,
            };
            let hash = fnv1a(&bytes);
            let stamp =
                FileStamp { size: stat.size, mtime_ns: stat.mtime_ns, inode: stat.inode, hash };
            manifest.files.insert(rel.clone(), stamp);
            if !fresh && old.is_some_and(|o| o.hash == hash) {
                continue;
            }
            changed.insert(rel.clone(), Some(String::from_utf8(bytes).unwrap_or_default()));
        }

        // Kept facts hold for the commit this `Index` made last, and only for a hinted update
        // (a walk re-reads everything).
        let mut facts = std::mem::take(&mut self.facts);
        if full_walk || facts.valid_at.as_deref() != stored {
            facts = SourceFacts::default();
        }
        let facts = std::cell::RefCell::new(facts);
        let lookup = CommittedLookup { searcher: &searcher, fields: &self.fields, facts: &facts };
        let mut overrides = Overrides::default();
        let mut affected_keys: Vec<String> = Vec::new();
        let mut report = SyncReport { full_walk, ..SyncReport::default() };
        for (rel, text) in changed.iter().filter(|(rel, _)| rel.starts_with("sources/")) {
            let old = if fresh { Vec::new() } else { lookup.records_in(rel) };
            deletes.push(Key::File.term(&self.fields, rel));
            overrides.archives.insert(rel.clone());
            let mut seen = HashSet::new();
            for record in
                text.as_deref().map(|t| source_docs(&self.fields, rel, t)).unwrap_or_default()
            {
                let before = old.iter().find(|(id, _)| *id == record.id).map(|(_, t)| *t);
                if before != Some(record.trusted) {
                    affected_keys.push(record.id.clone());
                    affected_keys.push(record.akey.clone());
                }
                overrides.ids.insert(record.id.clone(), Some(record.trusted));
                overrides.anchors.insert(record.akey, record.id.clone());
                seen.insert(record.id);
                docs.push(record.doc);
            }
            for (id, _) in old.into_iter().filter(|(id, _)| !seen.contains(id)) {
                overrides.ids.insert(id.clone(), None);
                affected_keys.push(id);
            }
            if text.is_some() {
                report.reindexed.push(rel.clone());
            } else {
                report.removed.push(rel.clone());
            }
        }

        // Topic files: the changed ones, and those citing records whose trust changed.
        let mut topics: BTreeMap<String, Option<String>> = changed
            .iter()
            .filter(|(rel, _)| rel.starts_with("topics/"))
            .map(|(rel, text)| (rel.clone(), text.clone()))
            .collect();
        if !fresh {
            for rel in lookup.files_citing(&affected_keys) {
                if let std::collections::btree_map::Entry::Vacant(slot) = topics.entry(rel) {
                    let path = self.root.join(slot.key());
                    let text = match self.fs.read(&path) {
                        Ok(bytes) => Some(String::from_utf8(bytes).unwrap_or_default()),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                        Err(e) => return Err(Error::io(&path, e)),
                    };
                    slot.insert(text);
                }
            }
        }
        let resolver = IndexResolver { overrides: &overrides, lookup: &lookup };
        for (rel, text) in &topics {
            deletes.push(Key::File.term(&self.fields, rel));
            match text {
                Some(text) => {
                    docs.extend(block_docs(&self.fields, rel, text, &resolver));
                    report.reindexed.push(rel.clone());
                }
                None => report.removed.push(rel.clone()),
            }
        }
        report.reindexed.sort();
        report.removed.sort();

        // The new segment is written here; only the commit below publishes it.
        let prepared = writer.prepare(&self.index, &searcher, &deletes, docs)?;
        // Its files go to disk as one pack now, beside the install, not at the commit.
        self.directory.pack_pending().map_err(|e| Error::io(&self.dir, e))?;
        let mut facts = facts.into_inner();
        let Some(revision) = decide() else {
            prepared.abort(&mut self.index)?;
            self.writer = Some(writer);
            // The last commit stands, and what was learned of it with it.
            self.facts = facts;
            return Ok(Ahead::Abandoned);
        };
        let payload = serde_json::to_string(&Payload {
            version: SCHEMA_VERSION,
            revision: revision.clone(),
            boot: self.boot.clone().unwrap_or_default(),
        })
        .map_err(|e| Error::Index { message: e.to_string() })?;
        let segments = prepared.commit(&mut self.index, &payload)?;
        if changed.keys().any(|rel| rel.starts_with("sources/")) {
            facts = SourceFacts::default();
        }
        facts.valid_at = Some(revision.clone());
        self.facts = facts;
        writer.start_upkeep(&self.index, &segments, &merge_policy());
        self.writer = Some(writer);
        self.reader.reload()?;
        manifest.version = SCHEMA_VERSION;
        manifest.revision.clone_from(&revision);
        self.revision = Some(revision);
        let bytes =
            serde_json::to_vec(&manifest).map_err(|e| Error::Index { message: e.to_string() })?;
        self.fs
            .write_atomic(&manifest_path, &bytes, self.boot.is_none())
            .map_err(|e| Error::io(&manifest_path, e))?;
        Ok(Ahead::Committed(report))
    }

    /// Searches at `current_revision`: when the index already reflects it, nothing but the
    /// index is touched; otherwise the index first catches up ([`Index::sync`] without a hint).
    ///
    /// Errors: [`Error::InvalidArgument`] for a bad query (checked before anything else);
    /// [`Error::Busy`] when another process is updating the index.
    pub fn search(&mut self, current_revision: &str, query: &Query) -> Result<Vec<Hit>> {
        let plan = Plan::new(query)?;
        if self.revision.as_deref() != Some(current_revision) {
            self.sync(current_revision, None)?;
        }
        self.search_plan(&plan)
    }

    /// The blocks citing the source record `source_id`, in file and line order, at most
    /// `limit` (what the index holds now; see [`Index::sync`]). Blocks citing only pending
    /// records are not indexed as citing, so they are not listed.
    pub fn citing(&self, source_id: &str, limit: usize) -> Result<Vec<Hit>> {
        citing(&self.reader.searcher(), &self.fields, source_id, limit)
    }

    /// The blocks whose ID (a paragraph's identity) is one of `ids`, in file and line order
    /// (what the index holds now). An ID no block has is left out.
    pub fn blocks(&self, ids: &[&str]) -> Result<Vec<Hit>> {
        blocks(&self.reader.searcher(), &self.fields, ids)
    }

    /// Searches what the index holds now, without comparing revisions.
    pub fn search_committed(&self, query: &Query) -> Result<Vec<Hit>> {
        self.search_plan(&Plan::new(query)?)
    }

    /// The index as of its last commit, to search without this `Index` (see [`Snapshot`]).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            searcher: self.reader.searcher(),
            fields: self.fields,
            revision: self.revision.clone(),
        }
    }

    fn search_plan(&self, plan: &Plan) -> Result<Vec<Hit>> {
        search_plan(&self.reader.searcher(), &self.fields, plan)
    }
}

/// The index as of one commit: it searches without the [`Index`] it came from, so a reader never
/// waits for whoever is updating the index, and it keeps seeing that commit (its segments stay
/// mapped) until dropped. Cheap to clone.
#[derive(Clone)]
pub struct Snapshot {
    searcher: tantivy::Searcher,
    fields: Fields,
    revision: Option<String>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("revision", &self.revision).finish_non_exhaustive()
    }
}

impl Snapshot {
    /// The workspace revision the snapshot reflects (`None` for a fresh index).
    pub fn revision(&self) -> Option<&str> {
        self.revision.as_deref()
    }

    /// The blocks citing `source_id` in the snapshot (as [`Index::citing`]).
    pub fn citing(&self, source_id: &str, limit: usize) -> Result<Vec<Hit>> {
        citing(&self.searcher, &self.fields, source_id, limit)
    }

    /// The blocks with these IDs in the snapshot (as [`Index::blocks`]).
    pub fn blocks(&self, ids: &[&str]) -> Result<Vec<Hit>> {
        blocks(&self.searcher, &self.fields, ids)
    }

    /// Searches the snapshot (as [`Index::search_committed`]).
    ///
    /// Errors: [`Error::InvalidArgument`] for a bad query.
    pub fn search(&self, query: &Query) -> Result<Vec<Hit>> {
        search_plan(&self.searcher, &self.fields, &Plan::new(query)?)
    }
}

/// See [`Index::citing`]: one term lookup, then the stored fields of each citing block.
fn citing(
    searcher: &tantivy::Searcher,
    fields: &Fields,
    source_id: &str,
    limit: usize,
) -> Result<Vec<Hit>> {
    let query = BooleanQuery::new(vec![
        (
            Occur::Must,
            Box::new(TermQuery::new(Key::Ref.term(fields, source_id), IndexRecordOption::Basic))
                as Box<dyn TantivyQuery>,
        ),
        (
            Occur::Must,
            Box::new(TermQuery::new(Key::Kind.term(fields, KIND_BLOCK), IndexRecordOption::Basic)),
        ),
    ]);
    let mut hits = blocks_matching(searcher, fields, &query)?;
    hits.truncate(limit);
    Ok(hits)
}

/// See [`Index::blocks`]: one term lookup per ID.
fn blocks(searcher: &tantivy::Searcher, fields: &Fields, ids: &[&str]) -> Result<Vec<Hit>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let any: Vec<(Occur, Box<dyn TantivyQuery>)> = ids
        .iter()
        .map(|id| {
            let term = TermQuery::new(Key::Id.term(fields, id), IndexRecordOption::Basic);
            (Occur::Should, Box::new(term) as Box<dyn TantivyQuery>)
        })
        .collect();
    let query = BooleanQuery::new(vec![
        (Occur::Must, Box::new(BooleanQuery::new(any)) as Box<dyn TantivyQuery>),
        (
            Occur::Must,
            Box::new(TermQuery::new(Key::Kind.term(fields, KIND_BLOCK), IndexRecordOption::Basic)),
        ),
    ]);
    blocks_matching(searcher, fields, &query)
}

/// Every document `query` matches, as hits in file and line order.
fn blocks_matching(
    searcher: &tantivy::Searcher,
    fields: &Fields,
    query: &dyn TantivyQuery,
) -> Result<Vec<Hit>> {
    let mut hits = Vec::new();
    for address in searcher.search(query, &DocSetCollector)? {
        let doc: TantivyDocument = searcher.doc(address)?;
        hits.push(StoredDoc::read(&doc, fields).into_hit(0.0, None));
    }
    hits.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    Ok(hits)
}

fn search_plan(searcher: &tantivy::Searcher, fields: &Fields, plan: &Plan) -> Result<Vec<Hit>> {
    if plan.prefix.as_deref().is_some_and(|p| p.starts_with("sources")) && !plan.include_sources {
        return Ok(Vec::new());
    }
    let total_docs = searcher.num_docs() as f32;
    // The floor's weights: IDF as if the memory held at least `FLOOR_MIN_DOCS` documents. In a
    // small memory every word is "common" (half the documents mention the garden app) and a
    // word absent from it outweighs all the others, so "garden app deadline" would miss the
    // paragraph about the garden app's due date.
    let floor_docs = total_docs.max(FLOOR_MIN_DOCS);
    let floor_idf = |df: f32| (1.0 + (floor_docs - df + 0.5) / (df + 0.5)).ln();
    let mut terms: Vec<QueryTerm> = Vec::new();
    for term in query_terms(&plan.text) {
        let text = Term::from_field_text(fields.text, &term);
        let context = Term::from_field_text(fields.context, &term);
        let speaker = Key::SpeakerWord.term(fields, &term);
        let text_df = searcher.doc_freq(&text)?;
        terms.push(QueryTerm {
            weight: floor_idf(text_df as f32),
            text_df,
            context_df: searcher.doc_freq(&context)?,
            speaker_df: searcher.doc_freq(&speaker)?,
            term,
        });
    }
    if terms.len() > MAX_QUERY_TERMS {
        // A long prompt: its rarest words say what it is about.
        let mut by_weight: Vec<usize> = (0..terms.len()).collect();
        by_weight.sort_by(|&a, &b| terms[b].weight.total_cmp(&terms[a].weight).then(a.cmp(&b)));
        let keep: HashSet<usize> = by_weight.into_iter().take(MAX_QUERY_TERMS).collect();
        terms = terms
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep.contains(i))
            .map(|(_, t)| t)
            .collect();
    }
    let mut clauses: Vec<(Occur, Box<dyn TantivyQuery>)> = Vec::new();
    for term in &terms {
        if term.text_df > 0 {
            let t = Term::from_field_text(fields.text, &term.term);
            clauses
                .push((Occur::Should, Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs))));
        }
        if term.context_df > 0 {
            let t = Term::from_field_text(fields.context, &term.term);
            let query = TermQuery::new(t, IndexRecordOption::WithFreqs);
            clauses
                .push((Occur::Should, Box::new(BoostQuery::new(Box::new(query), CONTEXT_WEIGHT))));
        }
        if term.speaker_df > 0 {
            let t = Key::SpeakerWord.term(fields, &term.term);
            // BM25 of a name term among a document's keys (about its IDF), boosted: a term
            // scorer like the others, so a search without filters is one union of term
            // scorers, which tantivy prunes block by block (block-max WAND).
            let query = TermQuery::new(t, IndexRecordOption::Basic);
            clauses
                .push((Occur::Should, Box::new(BoostQuery::new(Box::new(query), SPEAKER_WEIGHT))));
        }
    }
    if terms.iter().all(|t| t.text_df == 0 && t.context_df == 0) {
        return Ok(Vec::new());
    }
    let total_weight: f32 = terms.iter().map(|t| t.weight).sum();
    // Pending documents hold no search terms (see `extract`): trust needs no filter.
    let mut must: Vec<(Occur, Box<dyn TantivyQuery>)> = Vec::new();
    let filter = |q: Box<dyn TantivyQuery>| -> (Occur, Box<dyn TantivyQuery>) {
        (Occur::Must, Box::new(ConstScoreQuery::new(q, 0.0)))
    };
    if !plan.include_sources {
        must.push(filter(Box::new(TermQuery::new(
            Key::Kind.term(fields, KIND_BLOCK),
            IndexRecordOption::Basic,
        ))));
    }
    if let Some(speaker) = &plan.speaker {
        must.push(filter(Box::new(TermQuery::new(
            Key::Kind.term(fields, KIND_SOURCE),
            IndexRecordOption::Basic,
        ))));
        must.push(filter(Box::new(TermQuery::new(
            Key::Speaker.term(fields, speaker),
            IndexRecordOption::Basic,
        ))));
    }
    if let Some(prefix) = &plan.prefix {
        must.push(filter(under(fields, prefix)));
    }
    if let Some(scope) = &plan.project {
        must.push(filter(project_filter(fields, scope)));
    }
    if let Some(window) = plan.window {
        let range = |key: Key, (lo, hi): (u64, u64)| -> (Occur, Box<dyn TantivyQuery>) {
            (
                Occur::Should,
                Box::new(RangeQuery::new(
                    Bound::Included(key.number_term(fields, lo)),
                    Bound::Included(key.number_term(fields, hi)),
                )),
            )
        };
        must.push(filter(Box::new(BooleanQuery::new(vec![
            range(Key::Day, window.days),
            range(Key::Month, window.months),
            range(Key::Year, window.years),
        ]))));
    }
    let terms_query = BooleanQuery::new(clauses);
    let query = if must.is_empty() {
        terms_query
    } else {
        must.insert(0, (Occur::Must, Box::new(terms_query)));
        BooleanQuery::new(must)
    };
    let limit = (plan.top_k * CANDIDATES_PER_HIT).max(MIN_CANDIDATES);
    let top = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score())?;
    let ranked = rerank(searcher, fields, &terms, total_weight, plan.min_coverage, &top)?;
    collapse(searcher, fields, plan.top_k, &terms, ranked)
}

/// One analyzed query term and its document frequencies.
struct QueryTerm {
    term: String,
    /// The term's IDF in the `text` field (as in a memory of at least [`FLOOR_MIN_DOCS`]
    /// documents): its share of the query's weight in the relevance floor.
    weight: f32,
    text_df: u64,
    context_df: u64,
    speaker_df: u64,
}

/// A candidate after [`rerank`].
struct Ranked {
    score: f32,
    address: DocAddress,
    /// The first query term the document's own text holds (for the snippet).
    first_term: Option<usize>,
}

/// Applies the relevance floor and the coordination factor to tantivy's candidates: which query
/// terms each candidate holds (in its text or its context) is read from the postings of those
/// terms, a candidate below [`Query::min_coverage`] is dropped, and the others are scored
/// `bm25 × matched terms / query terms` (the coordination factor), best first.
fn rerank(
    searcher: &Searcher,
    fields: &Fields,
    terms: &[QueryTerm],
    total_weight: f32,
    min_coverage: f32,
    top: &[(f32, DocAddress)],
) -> Result<Vec<Ranked>> {
    // in_text[c][t], in_context[c][t]: whether candidate c holds term t.
    let mut in_text = vec![vec![false; terms.len()]; top.len()];
    let mut in_context = vec![vec![false; terms.len()]; top.len()];
    let mut by_segment: BTreeMap<u32, Vec<(tantivy::DocId, usize)>> = BTreeMap::new();
    for (c, (_, address)) in top.iter().enumerate() {
        by_segment.entry(address.segment_ord).or_default().push((address.doc_id, c));
    }
    for (segment, mut docs) in by_segment {
        docs.sort_unstable();
        let reader = searcher.segment_reader(segment);
        for (field, holds, df) in [
            (fields.text, &mut in_text, (|t: &QueryTerm| t.text_df) as fn(&QueryTerm) -> u64),
            (fields.context, &mut in_context, |t: &QueryTerm| t.context_df),
        ] {
            let inverted = reader.inverted_index(field)?;
            for (t, term) in terms.iter().enumerate().filter(|(_, term)| df(term) > 0) {
                let key = Term::from_field_text(field, &term.term);
                let Some(mut postings) = inverted
                    .read_postings(&key, IndexRecordOption::Basic)
                    .map_err(tantivy::TantivyError::from)?
                else {
                    continue;
                };
                for &(doc, c) in &docs {
                    if postings.doc() < doc {
                        postings.seek(doc);
                    }
                    if postings.doc() == doc {
                        holds[c][t] = true;
                    }
                }
            }
        }
    }
    let mut ranked = Vec::with_capacity(top.len());
    for (c, &(score, address)) in top.iter().enumerate() {
        let held = |t: usize| in_text[c][t] || in_context[c][t];
        let matched = (0..terms.len()).filter(|&t| held(t)).count();
        if matched == 0 {
            continue;
        }
        let weight: f32 = (0..terms.len()).filter(|&t| held(t)).map(|t| terms[t].weight).sum();
        if total_weight > 0.0 && weight / total_weight < min_coverage {
            continue;
        }
        let coord = matched as f32 / terms.len() as f32;
        let first_term = (0..terms.len()).find(|&t| in_text[c][t]);
        ranked.push(Ranked { score: score * coord, address, first_term });
    }
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.address.cmp(&b.address)));
    Ok(ranked)
}

/// One hit per fact: walks the ranked candidates and keeps the first `top_k` that say something
/// new. A source record a kept block cites, or a hit with the text of a kept one, joins that
/// hit's [`Hit::collapsed`]; a block citing (or repeating) kept source records takes the place
/// of the best of them and absorbs them all, so the curated paragraph, with its citations, is
/// what is returned.
fn collapse(
    searcher: &Searcher,
    fields: &Fields,
    top_k: usize,
    terms: &[QueryTerm],
    ranked: Vec<Ranked>,
) -> Result<Vec<Hit>> {
    let mut hits: Vec<Hit> = Vec::with_capacity(top_k);
    let mut prints: Vec<u64> = Vec::with_capacity(top_k);
    for candidate in ranked {
        if hits.len() == top_k {
            break;
        }
        let doc: TantivyDocument = searcher.doc(candidate.address)?;
        let stored = StoredDoc::read(&doc, fields);
        let print = stored.fingerprint;
        let first_term = candidate.first_term.map(|t| terms[t].term.as_str());
        let hit = stored.into_hit(candidate.score, first_term);
        if hit.kind == HitKind::Source {
            let home = (0..hits.len())
                .find(|&i| hits[i].kind == HitKind::Block && hits[i].refs.contains(&hit.id))
                .or_else(|| prints.iter().position(|p| *p == print));
            match home {
                Some(at) => hits[at].collapsed.push(hit.id),
                None => {
                    hits.push(hit);
                    prints.push(print);
                }
            }
            continue;
        }
        if let Some(at) =
            (0..hits.len()).find(|&i| hits[i].kind == HitKind::Block && prints[i] == print)
        {
            hits[at].collapsed.push(hit.id);
            continue;
        }
        // A block stands for the kept records it cites or repeats: it takes the place of the
        // best of them.
        let absorbed: Vec<usize> = (0..hits.len())
            .filter(|&i| {
                hits[i].kind == HitKind::Source
                    && (hit.refs.contains(&hits[i].id) || prints[i] == print)
            })
            .collect();
        let Some(&best) = absorbed.first() else {
            hits.push(hit);
            prints.push(print);
            continue;
        };
        let mut block = hit;
        block.score = hits[best].score;
        for &i in absorbed.iter().rev() {
            let source = hits.remove(i);
            prints.remove(i);
            let mut ids = vec![source.id];
            ids.extend(source.collapsed);
            block.collapsed.splice(0..0, ids);
        }
        hits.insert(best, block);
        prints.insert(best, print);
    }
    Ok(hits)
}

impl Index {
    fn load_manifest(&self, path: &Path) -> Manifest {
        self.fs
            .read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Manifest>(&bytes).ok())
            .filter(|m| m.version == SCHEMA_VERSION)
            .unwrap_or_default()
    }

    /// Every regular `*.md` file under `<root>/<top>`, workspace-relative; symlinks skipped.
    fn walk(&self, top: &str, out: &mut BTreeSet<String>) -> Result<()> {
        let mut stack = vec![top.to_owned()];
        while let Some(rel_dir) = stack.pop() {
            let dir = self.root.join(&rel_dir);
            let entries = match self.fs.read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&dir, e)),
            };
            for entry in entries {
                let Some(name) = entry.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                let rel = format!("{rel_dir}/{name}");
                let Some(stat) = self.fs.stat(&entry).map_err(|e| Error::io(&entry, e))? else {
                    continue;
                };
                if stat.is_dir {
                    stack.push(rel);
                } else if stat.is_file && indexable(&rel) {
                    out.insert(rel);
                }
            }
        }
        Ok(())
    }
}

/// Topic files and v2 archives.
fn indexable(rel: &str) -> bool {
    rel.ends_with(".md")
        && (rel.starts_with("topics/")
            || (rel.starts_with("sources/")
                && scriptorium_topics_format::source::is_v2_source_path(rel)))
}

fn normalize_rel(path: &str) -> Option<String> {
    let trimmed = path.trim().trim_start_matches("./").trim_start_matches('/');
    (!trimmed.is_empty() && !trimmed.split('/').any(|c| c == "..")).then(|| trimmed.to_owned())
}

fn same_stat(old: &FileStamp, new: &Stat) -> bool {
    old.size == new.size && old.mtime_ns == new.mtime_ns && old.inode == new.inode
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

fn read_payload(index: &tantivy::Index) -> Option<Payload> {
    let metas = index.load_metas().ok()?;
    serde_json::from_str(metas.payload.as_deref()?).ok()
}

/// tantivy's log merge policy, with levels down to [`MIN_MERGE_LAYER`] documents: each
/// incremental sync adds one segment of a few documents, and with the default floor (10 000)
/// those tiny segments share a level with the large segments of the initial build, so every
/// eighth sync re-merged the whole index. With a low floor, tiny segments merge among
/// themselves (cheap) and large segments only with large ones.
fn merge_policy() -> LogMergePolicy {
    let mut policy = LogMergePolicy::default();
    policy.set_min_layer_size(MIN_MERGE_LAYER);
    // Four segments of a level merge (tantivy's default is eight): a process opens every
    // segment of the index on each search, so fewer of them is what a search pays for.
    policy.set_min_num_segments(MIN_MERGE_SEGMENTS);
    policy
}

fn register(index: &tantivy::Index) {
    index.tokenizers().register(TOKENIZER_NAME, TextAnalyzer::from(ScriptoriumTokenizer));
}

fn reader_for(index: &tantivy::Index) -> tantivy::Result<IndexReader> {
    index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()
}

/// An index of our schema version, with a working reader; `None` means "rebuild".
fn open_existing(
    dir: &Path,
    schema: &tantivy::schema::Schema,
    boot: Option<&str>,
    fs: &dyn FileAccess,
) -> Option<(tantivy::Index, IndexDirectory, IndexReader, Option<String>)> {
    let directory = IndexDirectory::open(dir, boot.is_none()).ok()?;
    let index = tantivy::Index::open(directory.clone()).ok()?;
    let payload = read_payload(&index)?;
    if payload.version != SCHEMA_VERSION || index.schema() != *schema {
        return None;
    }
    if let Some(now) = boot
        && !payload.boot.is_empty()
        && payload.boot != now
        && !survived_reboot(dir, &index, &payload, now, fs)
    {
        return None;
    }
    register(&index);
    let reader = reader_for(&index).ok()?;
    let revision = (!payload.revision.is_empty()).then_some(payload.revision);
    Some((index, directory, reader, revision))
}

/// Marks an index checked after a reboot (its content is the boot it was checked in).
const BOOT_CHECKED: &str = "scriptorium-boot-checked";

/// Whether an index last written without fsync in an earlier boot came through the reboot
/// intact (see the crate docs, *Durability*): every file its commit uses must be whole (tantivy's
/// checksum in each file's footer), and a manifest written after another commit than the one
/// read is dropped (the next sync walks the workspace). Checked once per boot.
fn survived_reboot(
    dir: &Path,
    index: &tantivy::Index,
    payload: &Payload,
    now: &str,
    fs: &dyn FileAccess,
) -> bool {
    let marker = dir.join(BOOT_CHECKED);
    if fs.read(&marker).is_ok_and(|bytes| bytes == now.as_bytes()) {
        return true;
    }
    // tantivy checks the files of the committed segments that exist against the checksum in
    // their footers; one that is missing fails the reader's open after this.
    let intact = index.validate_checksum().is_ok_and(|damaged| damaged.is_empty());
    if !intact {
        return false;
    }
    let manifest_path = dir.join(MANIFEST);
    let manifest: Option<Manifest> =
        fs.read(&manifest_path).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok());
    if manifest.is_some_and(|m| m.revision != payload.revision) {
        let _ = fs.write_atomic(&manifest_path, b"{}", false);
    }
    fs.write_atomic(&marker, now.as_bytes(), false).is_ok()
}

/// tantivy's settings, with doc store blocks of [`DOCSTORE_BLOCK`] bytes: a hit reads its stored
/// fields by decompressing its block, and a search reads a handful of documents from blocks
/// scattered over the index, so smaller blocks cost less per hit (at 16 KiB, tantivy's default,
/// reading five hits took about a third of a warm search).
fn index_settings() -> IndexSettings {
    IndexSettings { docstore_blocksize: DOCSTORE_BLOCK, ..IndexSettings::default() }
}

fn create_fresh(
    dir: &Path,
    schema: tantivy::schema::Schema,
    boot: Option<&str>,
) -> Result<(tantivy::Index, IndexDirectory, IndexReader, Option<String>)> {
    match WorkspaceFs.remove_tree(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(dir, e)),
    }
    scriptorium_workspace_fs::create_dir_all(&WorkspaceFs, dir, 0o700)
        .map_err(|e| Error::io(dir, e.source))?;
    let directory = IndexDirectory::open(dir, boot.is_none())?;
    let index = tantivy::Index::create(directory.clone(), schema, index_settings())?;
    register(&index);
    let mut writer: IndexWriter<TantivyDocument> =
        index.writer_with_num_threads(1, WRITER_ARENA)?;
    let payload = serde_json::to_string(&Payload {
        version: SCHEMA_VERSION,
        revision: String::new(),
        boot: boot.unwrap_or_default().to_owned(),
    })
    .map_err(|e| Error::Index { message: e.to_string() })?;
    let mut prepared = writer.prepare_commit()?;
    prepared.set_payload(&payload);
    prepared.commit()?;
    drop(writer);
    let reader = reader_for(&index)?;
    Ok((index, directory, reader, None))
}

/// Reads the committed index during a sync.
struct CommittedLookup<'a> {
    searcher: &'a Searcher,
    fields: &'a Fields,
    /// Answers kept from earlier lookups (see [`SourceFacts`]).
    facts: &'a std::cell::RefCell<SourceFacts>,
}

impl CommittedLookup<'_> {
    fn docs(&self, key: Key, value: &str) -> Vec<TantivyDocument> {
        let query = TermQuery::new(key.term(self.fields, value), IndexRecordOption::Basic);
        let Ok(addresses) = self.searcher.search(&query, &DocSetCollector) else {
            return Vec::new();
        };
        let mut addresses: Vec<DocAddress> = addresses.into_iter().collect();
        addresses.sort();
        addresses.into_iter().filter_map(|a| self.searcher.doc(a).ok()).collect()
    }

    fn first_str(&self, doc: &TantivyDocument, field: tantivy::schema::Field) -> Option<String> {
        doc.get_first(field).and_then(|v| v.as_str().map(str::to_owned))
    }

    /// (source id, trusted) of every record indexed from `rel`.
    fn records_in(&self, rel: &str) -> Vec<(String, bool)> {
        self.docs(Key::File, rel)
            .iter()
            .filter_map(|doc| {
                let id = self.first_str(doc, self.fields.id)?;
                let trusted = doc.get_first(self.fields.trusted).and_then(|v| v.as_u64())? == 1;
                Some((id, trusted))
            })
            .collect()
    }

    /// Topic files with a block citing any of `keys` (source ids or archive keys).
    fn files_citing(&self, keys: &[String]) -> BTreeSet<String> {
        let mut files = BTreeSet::new();
        for key in keys {
            for doc in self.docs(Key::Ref, key) {
                if let Some(file) = self.first_str(&doc, self.fields.file) {
                    files.insert(file);
                }
            }
        }
        files
    }
}

impl SourceLookup for CommittedLookup<'_> {
    fn id_for_anchor(&self, akey: &str) -> Option<String> {
        if let Some(id) = self.facts.borrow().anchors.get(akey) {
            return Some(id.clone());
        }
        let id = self
            .docs(Key::Anchor, akey)
            .first()
            .and_then(|doc| self.first_str(doc, self.fields.id))?;
        self.facts.borrow_mut().anchors.insert(akey.to_owned(), id.clone());
        Some(id)
    }

    fn trusted(&self, id: &str) -> Option<bool> {
        if let Some(trusted) = self.facts.borrow().trusted.get(id) {
            return Some(*trusted);
        }
        let trusted = self
            .docs(Key::Id, id)
            .iter()
            .find(|doc| self.first_str(doc, self.fields.kind).as_deref() == Some(KIND_SOURCE))
            .and_then(|doc| doc.get_first(self.fields.trusted).and_then(|v| v.as_u64()))
            .map(|v| v == 1)?;
        self.facts.borrow_mut().trusted.insert(id.to_owned(), trusted);
        Some(trusted)
    }
}

/// Documents with a path (file or logical path) under `prefix`.
fn under(fields: &Fields, prefix: &str) -> Box<dyn TantivyQuery> {
    Box::new(RangeQuery::new(
        Bound::Included(Key::Path.term(fields, prefix)),
        Bound::Excluded(Key::Path.term(fields, &format!("{prefix}\u{10FFFF}"))),
    ))
}

/// Documents in `scope`: blocks outside `topics/projects/`, inside the project's directory or
/// in its single file, and records of the project's archives.
fn project_filter(fields: &Fields, scope: &ProjectScope) -> Box<dyn TantivyQuery> {
    let projects = format!("topics/{}/", scriptorium_topics_format::project::PROJECTS_DIR);
    let shared: Box<dyn TantivyQuery> = Box::new(BooleanQuery::new(vec![
        (
            Occur::Must,
            Box::new(TermQuery::new(Key::Kind.term(fields, KIND_BLOCK), IndexRecordOption::Basic)),
        ),
        (Occur::MustNot, under(fields, &projects)),
    ]));
    let archives = TermSetQuery::new(scope.archives.iter().map(|a| Key::File.term(fields, a)));
    let file = TermQuery::new(Key::File.term(fields, &scope.topic_file), IndexRecordOption::Basic);
    Box::new(BooleanQuery::new(vec![
        (Occur::Should, shared),
        (Occur::Should, under(fields, &scope.topics)),
        (Occur::Should, Box::new(file)),
        (Occur::Should, Box::new(archives)),
    ]))
}

/// The stored fields of one hit.
struct StoredDoc {
    kind: HitKind,
    id: String,
    path: String,
    anchor: String,
    content: String,
    headings: Vec<String>,
    dates: Vec<String>,
    refs: Vec<String>,
    speaker_id: Option<String>,
    speaker_display: Option<String>,
    speaker_label: Option<String>,
    line: u64,
    fingerprint: u64,
}

impl StoredDoc {
    fn read(doc: &TantivyDocument, fields: &Fields) -> StoredDoc {
        let first = |field| doc.get_first(field).and_then(|v| v.as_str().map(str::to_owned));
        let all = |field| {
            doc.get_all(field).filter_map(|v| v.as_str().map(str::to_owned)).collect::<Vec<_>>()
        };
        let kind = if first(fields.kind).as_deref() == Some(KIND_SOURCE) {
            HitKind::Source
        } else {
            HitKind::Block
        };
        StoredDoc {
            kind,
            id: first(fields.id).unwrap_or_default(),
            path: first(fields.file).unwrap_or_default(),
            anchor: first(fields.anchor).unwrap_or_default(),
            content: first(fields.content).unwrap_or_default(),
            headings: all(fields.headings),
            dates: all(fields.dates),
            refs: all(fields.refs),
            speaker_id: first(fields.speaker_id),
            speaker_display: first(fields.speaker_display),
            speaker_label: first(fields.speaker_label),
            line: doc.get_first(fields.line).and_then(|v| v.as_u64()).unwrap_or(0),
            fingerprint: doc.get_first(fields.fingerprint).and_then(|v| v.as_u64()).unwrap_or(0),
        }
    }

    fn into_hit(self, score: f32, first_term: Option<&str>) -> Hit {
        let content = match self.kind {
            HitKind::Block if !self.dates.is_empty() => {
                format!("[{}] {}", self.dates.join("; "), self.content)
            }
            _ => self.content.clone(),
        };
        let snippet = snippet(&self.content, first_term);
        Hit {
            kind: self.kind,
            id: self.id,
            path: self.path,
            anchor: format!("#{}", self.anchor),
            line: self.line,
            headings: self.headings,
            snippet,
            content: truncate_chars(&content, CONTENT_CHARS),
            score,
            dates: self.dates,
            refs: self.refs,
            speaker_id: self.speaker_id,
            speaker_display: self.speaker_display,
            speaker_label: self.speaker_label,
            collapsed: Vec::new(),
        }
    }
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// About [`SNIPPET_CHARS`] characters of `content` around the first occurrence of `term`.
fn snippet(content: &str, term: Option<&str>) -> String {
    let flat = content.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut start_token = 0;
    if let Some(term) = term {
        start_token = find_term(&flat, term).unwrap_or(0);
    }
    let chars_before = flat[..start_token].chars().count();
    let skip = chars_before.saturating_sub(SNIPPET_CHARS / 4);
    let body: String = flat.chars().skip(skip).take(SNIPPET_CHARS).collect();
    let mut out = String::new();
    if skip > 0 {
        out.push('…');
    }
    out.push_str(&body);
    if flat.chars().count() > skip + SNIPPET_CHARS {
        out.push('…');
    }
    out
}
