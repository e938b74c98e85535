//! Recall over a memory workspace: a persisted tantivy index of topic blocks and source
//! records in `<memory>/.scriptorium/index/`, and the `<memory-context>` fence.
//!
//! Key decision: a per-turn query never re-reads or re-hashes the trees. The index records the
//! workspace revision it reflects (in its tantivy commit); [`Index::search`] compares the
//! caller's current revision with it and, on a match, touches nothing but the memory-mapped
//! index. On a mismatch it catches up with the changed files only ([`Index::sync`]): from the
//! caller's hint when it knows what an install or an archive append changed, otherwise from a
//! per-file manifest (stat first, content hash only when the stat changed).
//!
//! What is indexed: one document per block paragraph (its identity ID, so the anchor `#^<block id>`
//! resolves in the file; aliases are not repeated) and one per v2 archive frame (anchor
//! `#source-…`). Text is analyzed into Unicode words, lower-cased and reduced to their English
//! (Snowball) stems, with CJK runs as unigrams + bigrams; a query goes through the same
//! analyzer. A document's `text` is its content, its logical path, its headings, its dates (with
//! the month by name) and its speaker; a source record also has a `context` field, the two turns
//! before it and the one after it in its session, so that a short reply is found by the question
//! it answers. A block is recallable only when every source it cites is archived and trusted;
//! pending source records are never returned, nor lend their words as context: a pending
//! document is stored (its trust is looked up, and changes with its sources) without search
//! terms, so no query can match it.
//!
//! # Ranking
//!
//! A document's score is the sum of tantivy's BM25 over `text` and over `context` (weighted
//! 0.5), plus, for each query word that names the document's speaker, 2.5 times that name's IDF
//! (so "what did Jon say about the studio" prefers Jon's words about the studio to Gina's words
//! to Jon); tantivy's best candidates are then scored `bm25 × matched terms / query terms` (a
//! coordination factor: a hit holding every query word beats one repeating a single word). A long
//! query keeps its 32 rarest terms. The weights were tuned on the LoCoMo dev split
//! (`examples/recall.rs`, `cargo xtask recall`).
//!
//! The relevance floor (see `ARCHITECTURE.md#cratessearch`): stopwords are dropped from the query,
//! so every hit matches a non-stopword term; and a hit must hold, in its text or its context, at
//! least [`Query::min_coverage`] of the query's weight (the IDF of its terms), so a query whose
//! key terms are absent from memory returns nothing even when a common word (a name,
//! "favorite") matches.
//!
//! # One hit per fact
//!
//! The ranked candidates are walked best first and a hit is kept only when it says something
//! new: a source record that a kept block cites, or a hit whose text (case and whitespace
//! folded) equals a kept hit's, is listed in that hit's [`Hit::collapsed`] instead of being
//! returned; a block that cites (or repeats) source records already kept takes the place of the
//! best of them and absorbs them. So a block and its evidence are one result, the block, with
//! the matching records it cites in `collapsed`.
//!
//! # Durability
//!
//! The index is derived state: everything in it can be rebuilt from `topics/` and `sources/`.
//! So it does not pay for durability on every commit. Where the platform names the running
//! boot ([`FileAccess::boot_id`]: Linux's `boot_id`), nothing the index writes is fsynced —
//! not its segment files, not tantivy's `meta.json` slot, not the manifest — and each commit
//! records the boot it was written in. A killed process loses nothing (the kernel's page
//! cache holds every write it made, in order); only a power loss or a kernel crash can, and
//! both mean a new boot. An index opened in another boot than its last commit's is therefore
//! checked once: every file of its committed segments must exist and match the checksum in its
//! footer (else it is rebuilt from scratch), and a manifest written after a different commit
//! than the one that survived is dropped (the next sync walks the workspace). The check is
//! recorded per boot (`scriptorium-boot-checked`), so later processes skip it. Without a boot
//! identity every write is synced as tantivy does it.
//!
//! With the engine, an install's index update is prepared beside the install's own durable
//! steps ([`Index::sync_ahead`]): the new segment is built from the staged files while the
//! engine fsyncs and swaps, and published only once the install happened.
//!
//! # Writing
//!
//! An update is written as tantivy segments directly (`segments.rs`), not through tantivy's
//! `IndexWriter`, whose commit costs the same few milliseconds whatever it holds: a 15 MB
//! minimum arena with a 512 K-entry term table zeroed and walked per segment, indexing threads
//! joined and spawned again, and every segment with pending deletes opened anew. Here an update
//! is one segment writer with a small arena (it grows with the documents), its deletes applied
//! through the segment readers the update already has (a segment left without documents leaves
//! the index), and the commit is the `meta.json` tantivy would write, in one atomic write:
//! documents and deletes become visible together. Merging stays tantivy's: after a commit that
//! leaves segments to merge (the log merge policy), a background thread merges them with
//! tantivy's writer, and the next update or [`Index::finish_merges`] waits for it. tantivy's
//! locks are `flock`s on files that stay (tantivy's own directory creates and deletes a lock
//! file each time).
//! A new segment's files are written to one file, the segment's pack, as soon as the segment
//! is written, so that an install makes and deletes one index file instead of six (see
//! `directory.rs`, *Packs*). From a writer's second commit on, the thread that merges after a commit also
//! makes the next update's segment writer, so that a long-lived handle's next update starts
//! with one (see `segments.rs`).
//!
//! # Limitations
//!
//! - Legacy forms are not indexed: `sources/<provider>/<thread>.md`, `sources/D<n>.md` and
//!   legacy `mem_` units. A block citing only legacy sources counts as pending.
//! - An archive append re-indexes that whole archive file (all its frames), not only the new
//!   frames.
//! - Only one [`Index`] can update the index at a time (tantivy's writer lock), and an `Index`
//!   keeps the writer lock from its first update until it is dropped or
//!   [`Index::release_writer`] is called (a merge it started holds the lock meanwhile); a sync
//!   or a search that needs to catch up while another `Index` holds it fails with
//!   [`Error::Busy`] (retryable).
//! - The stored revision is opaque; the caller owns the revision file.
//!
//! # Example
//!
//! ```
//! use scriptorium_search::{Index, Query, fence, recall_text};
//!
//! use scriptorium_topics_format::source::{ArchiveRecord, plan_append};
//!
//! let memory = tempfile::tempdir()?;
//! let mut record = ArchiveRecord::new("openprogram", "s1", "u1", 1, "user", "Dave runs a bike shop.");
//! record.timestamp = Some("2024-03-15T10:00:00+08:00".into());
//! let plan = plan_append(&[record], &std::collections::BTreeMap::new())?;
//! for write in &plan.writes {
//!     let path = memory.path().join(&write.rel_path);
//!     std::fs::create_dir_all(path.parent().expect("archive paths have a parent"))?;
//!     std::fs::write(path, &write.new_text)?;
//! }
//! let mut index = Index::open(memory.path())?;
//! let hits = index.search("rev-1", &Query::new("bike shop"))?;
//! assert_eq!(hits.len(), 1);
//! assert!(fence(&recall_text(&hits)).contains("Dave runs a bike shop"));
//! assert!(index.search("rev-1", &Query::new("quantum chromodynamics"))?.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod directory;
mod error;
mod extract;
mod fence;
mod fs;
mod index;
mod model;
mod pack;
mod schema;
mod segments;
mod tokenize;
pub mod watch;

pub use error::{Error, ErrorCode, Result};
pub use fence::{SYSTEM_NOTE, fence, is_fenced, sanitize};
pub use fs::{FileAccess, RealFs, Stat};
pub use index::{Ahead, Index, Overlay, Snapshot, SyncReport};
pub use model::{
    Changes, DEFAULT_MIN_COVERAGE, DEFAULT_TOP_K, Hit, HitKind, MAX_TOP_K, ProjectScope, Query,
    recall_text,
};
