//! Index updates written as tantivy segments directly, without tantivy's `IndexWriter`.
//!
//! An install changes a handful of documents. Through tantivy's `IndexWriter` such a commit
//! costs several milliseconds that do not depend on its size: the writer's segment arena has a
//! 15 MB minimum, whose 512 K-entry term table is zeroed and then walked when the segment is
//! serialized; the indexing threads are joined and spawned again; and every segment with
//! pending deletes is opened anew to apply them. Here an update is one [`SegmentWriter`] with a
//! small arena (its tables grow as documents come), deletes applied through the segment readers
//! of the searcher the update already holds, and the commit is the `meta.json` tantivy itself
//! would write, through the same directory (its slot files, see `directory.rs`). The documents
//! and the deletes become visible together, at that one write, as with tantivy's commit.
//!
//! What tantivy's writer still does is merging: after a commit, when the merge policy finds
//! segments to merge, a background thread takes tantivy's writer for them and gives it up
//! when done; the next update, or `Index::finish_merges`, waits for it ([`Writer::settle`]).
//! One writer at a time holds tantivy's writer lock (`.tantivy-writer.lock`): a [`Writer`]
//! holds it from [`Writer::acquire`] to its drop, except while a merge holds it instead. From
//! a writer's second commit on, the thread after a commit also makes the next update's segment
//! writer (see [`Upkeep`]).

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use tantivy::directory::{DirectoryLock, INDEX_WRITER_LOCK, TerminatingWrite as _};
use tantivy::index::{IndexMeta, Segment, SegmentComponent, SegmentId, SegmentMeta};
use tantivy::indexer::{
    AddOperation, IndexWriterOptions, MergePolicy, NoMergePolicy, SegmentWriter,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{
    BitSet, Directory as _, DocSet, IndexWriter, Searcher, TERMINATED, TantivyDocument, Term,
};

use crate::error::{Error, Result};

/// The initial arena of an update's segment writer. Its term table starts at 32 K entries and
/// grows with the documents, so a bulk update pays for its size, and a small one for little
/// more than what it writes.
const SEGMENT_ARENA: usize = 1_000_000;
/// A bulk update starts another segment once the one being written holds this much memory.
const SEGMENT_FLUSH: usize = 64 << 20;
/// tantivy's arena for the merge writer (its minimum; a merge writer indexes no documents).
const MERGE_ARENA: usize = 15_000_000;
/// tantivy's commit record.
const META: &str = "meta.json";

/// The right to write the index: tantivy's writer lock, held here or by a running merge.
pub(crate) struct Writer {
    /// Held while no merge runs (a merge's writer holds the lock itself).
    lock: Option<DirectoryLock>,
    /// The work started after the last commit (a merge, the next segment's writer), until the
    /// next update waits for it.
    upkeep: Option<JoinHandle<Upkeep>>,
    /// Why the last merge failed, until [`Writer::take_merge_failure`].
    merge_failure: Option<String>,
    /// Updates committed through this writer.
    commits: u64,
    /// A segment and its writer, made after the last commit for the next update (see
    /// [`Upkeep`]).
    ready: Option<(Segment, SegmentWriter)>,
}

/// What runs beside the caller after a commit: a merge when the merge policy finds segments
/// to merge, then, for a writer that committed more than once (a long-lived handle: a server,
/// an agent session), the next update's segment writer. Making one costs about a quarter of a
/// one-paragraph update (tantivy allocates and zeroes its arenas, and starts the doc store's
/// compressor thread); made here, it is off the next install's path. It is made after the
/// merge, on the same thread, so that no garbage collection of ours can run while it exists
/// unused: it opens its store file at once, and our collection keeps only the files the last
/// commit names. The next update takes it (or drops it, when it writes no document) before
/// anything collects garbage again.
struct Upkeep {
    /// The merge's outcome, when one ran.
    merged: Option<tantivy::Result<()>>,
    next: Option<tantivy::Result<(Segment, SegmentWriter)>>,
}

/// An update written but not yet published: the commit record to write.
#[must_use = "an update is published by `commit` or dropped by `abort`"]
pub(crate) struct Prepared {
    meta: IndexMeta,
}

impl Writer {
    /// Takes tantivy's writer lock (`Error::Busy` when another writer holds it), then removes
    /// the files no commit uses: a writer killed mid-update leaves some behind, and its delete
    /// files would clash with this writer's, which are named by segment and opstamp the same
    /// way (the opstamps go on from the last commit).
    pub(crate) fn acquire(index: &mut tantivy::Index) -> Result<Writer> {
        let lock = index.directory().acquire_lock(&INDEX_WRITER_LOCK)?;
        collect_garbage(index)?;
        Ok(Writer { lock: Some(lock), upkeep: None, merge_failure: None, commits: 0, ready: None })
    }

    /// Waits for the work this writer started after its last commit, if any (keeping the
    /// segment writer it made), and takes the lock again. Says whether a merge ended (it may
    /// have committed: a reader loaded before is behind).
    pub(crate) fn settle(&mut self, index: &tantivy::Index) -> Result<bool> {
        let mut merged = false;
        if let Some(job) = self.upkeep.take() {
            // Its outcome only tells whether the segments it merged are merged; committed data
            // is whole either way, and the next commit's policy finds them again. A segment
            // writer it failed to make is made by the update, which reports why.
            match job.join() {
                Ok(Upkeep { merged: outcome, next }) => {
                    merged = outcome.is_some();
                    if let Some(Err(error)) = outcome {
                        self.merge_failure = Some(error.to_string());
                    }
                    self.ready = next.and_then(Result::ok);
                }
                Err(_) => {
                    merged = true;
                    self.merge_failure = Some("the index upkeep thread panicked".to_owned());
                }
            }
        }
        if self.lock.is_none() {
            self.lock = Some(index.directory().acquire_lock(&INDEX_WRITER_LOCK)?);
        }
        Ok(merged)
    }

    /// Why the last merge failed, if it did (once): merging is only upkeep, so an update never
    /// fails for it, and the next commit's policy finds the same segments again.
    pub(crate) fn take_merge_failure(&mut self) -> Option<String> {
        self.merge_failure.take()
    }

    /// Writes an update: `deletes` (terms whose documents go) applied to every committed
    /// segment the `searcher` shows, and `docs` as one new segment (more for a bulk update).
    /// Nothing is visible until [`Prepared::commit`]; what a failure leaves is collected by the
    /// next commit or [`Prepared::abort`]. The searcher must be of the last commit.
    pub(crate) fn prepare(
        &mut self,
        index: &tantivy::Index,
        searcher: &Searcher,
        deletes: &[Term],
        docs: Vec<TantivyDocument>,
    ) -> Result<Prepared> {
        self.settle(index)?;
        let mut meta = index.load_metas()?;
        let opstamp = meta.opstamp + 1;
        let mut segments = Vec::with_capacity(meta.segments.len() + 1);
        for segment_meta in &meta.segments {
            match apply_deletes(index, searcher, segment_meta, deletes, opstamp)? {
                Deleted::None => segments.push(segment_meta.clone()),
                Deleted::Some(updated) => segments.push(updated),
                // A segment left without documents (a file re-indexed again) leaves the index.
                Deleted::All => {}
            }
        }
        write_segments(index, docs, opstamp, &mut segments, self.ready.take())?;
        meta.segments = segments;
        meta.opstamp = opstamp;
        meta.payload = None;
        Ok(Prepared { meta })
    }

    /// After a commit of `segments`, starts its [`Upkeep`] on a thread: when the merge
    /// `policy` finds segments to merge, a merge with tantivy's writer, which takes the lock
    /// this writer gives up until the next update; from this writer's second commit on, the
    /// next update's segment writer.
    pub(crate) fn start_upkeep(
        &mut self,
        index: &tantivy::Index,
        segments: &[SegmentMeta],
        policy: &dyn MergePolicy,
    ) {
        self.commits += 1;
        if self.upkeep.is_some() || self.lock.is_none() {
            return;
        }
        let candidates: Vec<Vec<SegmentId>> =
            policy.compute_merge_candidates(segments).into_iter().map(|c| c.0).collect();
        let prepare_next = self.commits > 1;
        if candidates.is_empty() && !prepare_next {
            return;
        }
        let merging = index.clone();
        let merging_wanted = !candidates.is_empty();
        if merging_wanted {
            // The lock goes with the merge: released here, its writer takes it.
            self.lock = None;
        }
        let job = std::thread::Builder::new().name("index-upkeep".to_owned()).spawn(move || {
            let merged = (!candidates.is_empty()).then(|| merge(&merging, candidates));
            let next = prepare_next.then(|| {
                let segment = merging.new_segment();
                SegmentWriter::for_segment(SEGMENT_ARENA, segment.clone()).map(|w| (segment, w))
            });
            Upkeep { merged, next }
        });
        match job {
            Ok(job) => self.upkeep = Some(job),
            // Without a thread, the merge waits for a later commit (a merge failure) and the
            // next update makes its own segment writer (nothing failed).
            Err(error) if merging_wanted => {
                self.merge_failure = Some(format!("no thread for a merge: {error}"));
            }
            Err(_) => {}
        }
    }
}

/// Merges each of `candidates` with tantivy's writer.
fn merge(index: &tantivy::Index, candidates: Vec<Vec<SegmentId>>) -> tantivy::Result<()> {
    let options = IndexWriterOptions::builder()
        .memory_budget_per_thread(MERGE_ARENA)
        .num_worker_threads(1)
        .num_merge_threads(1)
        .build();
    let mut writer: IndexWriter<TantivyDocument> = index.writer_with_options(options)?;
    writer.set_merge_policy(Box::new(NoMergePolicy));
    for segment_ids in candidates {
        writer.merge(&segment_ids).wait()?;
    }
    writer.wait_merging_threads()
}

impl Prepared {
    /// Publishes the update: its commit record, with `payload`, becomes tantivy's `meta.json`
    /// (one atomic write: the old or the new commit is read, never a mix). The files the new
    /// commit no longer uses are then removed (no merge runs meanwhile: the writer waited for
    /// its merge before preparing). Returns the committed segments.
    pub(crate) fn commit(
        mut self,
        index: &mut tantivy::Index,
        payload: &str,
    ) -> Result<Vec<SegmentMeta>> {
        self.meta.payload = Some(payload.to_owned());
        let mut buffer = serde_json::to_vec_pretty(&self.meta)
            .map_err(|e| Error::Index { message: e.to_string() })?;
        buffer.push(b'\n');
        let directory = index.directory();
        directory.sync_directory().map_err(|e| Error::io(Path::new(META), e))?;
        directory
            .atomic_write(Path::new(META), &buffer)
            .map_err(|e| Error::io(Path::new(META), e))?;
        collect_garbage_keeping(index, self.meta.list_segment_files())?;
        Ok(self.meta.segments)
    }

    /// Drops the update: the files it wrote are removed; the last commit stands.
    pub(crate) fn abort(self, index: &mut tantivy::Index) -> Result<()> {
        collect_garbage(index)
    }
}

/// What deleting an update's terms does to one segment.
enum Deleted {
    /// None of its documents goes.
    None,
    /// Some go: the segment with its new delete file (written).
    Some(SegmentMeta),
    /// Every document goes.
    All,
}

fn apply_deletes(
    index: &tantivy::Index,
    searcher: &Searcher,
    segment_meta: &SegmentMeta,
    deletes: &[Term],
    opstamp: u64,
) -> Result<Deleted> {
    if deletes.is_empty() {
        return Ok(Deleted::None);
    }
    let reader = searcher
        .segment_readers()
        .iter()
        .find(|reader| reader.segment_id() == segment_meta.id())
        .ok_or_else(|| Error::Index {
            message: format!("segment {} is not in the searcher", segment_meta.id().uuid_string()),
        })?;
    let max_doc = reader.max_doc();
    let mut alive = BitSet::with_max_value_and_full(max_doc);
    if let Some(existing) = reader.alive_bitset() {
        alive.intersect_update(existing.bitset());
    }
    let before = alive.len();
    for term in deletes {
        let inverted = reader.inverted_index(term.field())?;
        let postings = inverted.read_postings(term, IndexRecordOption::Basic);
        let Some(mut postings) = postings.map_err(|e| Error::Index { message: e.to_string() })?
        else {
            continue;
        };
        let mut doc = postings.doc();
        while doc != TERMINATED {
            alive.remove(doc);
            doc = postings.advance();
        }
    }
    if alive.len() == before {
        return Ok(Deleted::None);
    }
    if alive.len() == 0 {
        return Ok(Deleted::All);
    }
    let deleted = max_doc - alive.len() as u32;
    let updated = segment_meta.clone().with_delete_meta(deleted, opstamp);
    let path = updated.relative_path(SegmentComponent::Delete);
    let mut file = index
        .segment(updated.clone())
        .open_write(SegmentComponent::Delete)
        .map_err(|e| Error::Index { message: e.to_string() })?;
    tantivy::fastfield::write_alive_bitset(&alive, &mut file).map_err(|e| Error::io(&path, e))?;
    file.terminate().map_err(|e| Error::io(&path, e))?;
    Ok(Deleted::Some(updated))
}

/// Writes `docs` as new segments (one unless their memory passes [`SEGMENT_FLUSH`]), adding
/// their metas to `segments`; the first one through `ready`, a writer made beforehand, if any
/// (dropped unused when there is no document).
fn write_segments(
    index: &tantivy::Index,
    docs: Vec<TantivyDocument>,
    opstamp: u64,
    segments: &mut Vec<SegmentMeta>,
    mut ready: Option<(Segment, SegmentWriter)>,
) -> Result<()> {
    let mut docs = docs.into_iter().peekable();
    while docs.peek().is_some() {
        let (segment, mut writer) = match ready.take() {
            Some(ready) => ready,
            None => {
                let segment = index.new_segment();
                (segment.clone(), SegmentWriter::for_segment(SEGMENT_ARENA, segment)?)
            }
        };
        let mut count = 0u32;
        for document in docs.by_ref() {
            writer.add_document(AddOperation { opstamp, document })?;
            count += 1;
            if writer.mem_usage() >= SEGMENT_FLUSH {
                break;
            }
        }
        writer.finalize()?;
        segments.push(segment.with_max_doc(count).meta().clone());
    }
    Ok(())
}

/// Removes every file tantivy created that the last commit does not use.
fn collect_garbage(index: &mut tantivy::Index) -> Result<()> {
    let living = index.load_metas()?.list_segment_files();
    collect_garbage_keeping(index, living)
}

/// [`collect_garbage`] when the last commit's files (`living`) are known.
fn collect_garbage_keeping(
    index: &mut tantivy::Index,
    mut living: std::collections::HashSet<PathBuf>,
) -> Result<()> {
    living.insert(PathBuf::from(META));
    living.insert(PathBuf::from(".managed.json"));
    index.directory_mut().garbage_collect(move || living)?;
    Ok(())
}
