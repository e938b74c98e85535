//! Workspace transactions: staged, validated, crash-safe installs of `topics/`, and the
//! append-only source archive.
//!
//! Key decision: a transaction edits a private copy of `topics/` in
//! `.scriptorium/txn/<txn-id>/topics/` (same filesystem as the live tree, never a copy of
//! `sources/`), and installs it with one `renameat2(RENAME_EXCHANGE)` of the staged and the
//! live directory, announced by an intent record, so a reader never sees a mix of two
//! revisions and the next [`Workspace::open`] turns any crash into exactly the old or exactly
//! the new revision. The only crate of ours it depends on is `scriptorium-topics-format`;
//! derived views, the index and git history hear about an install through
//! [`InstallObserver`]s the caller registers.
//!
//! The pipeline is a typestate ([`Workspace::begin`] → [`Staged`] → [`Staged::validate`] →
//! [`Validated`] → [`Validated::install`] → [`Installed`]); a rejected validation hands the
//! stage back with every violation ([`Rejected`]). Every filesystem call of staging, install,
//! recovery and archiving goes through the [`Fs`] trait, so tests fail any one of them
//! ([`FaultFs`]).
//!
//! # On disk
//!
//! | path | what |
//! |---|---|
//! | `topics/`, `sources/` | canonical trees (directories 0700, files 0600) |
//! | `.scriptorium/` | runtime directory, 0700 |
//! | `.scriptorium/workspace-id` | `w-` + 8 hex + `\n` |
//! | `.scriptorium/write.lock` | the `flock` target, 0600, empty |
//! | `.scriptorium/revision` | the revision record (JSON, one line): `version`, `counter`, `txn_id` (last install or archive append), `topics` (digest), `sources` (digest), `runtime` (digest of `runtime.json`, informational), `files` (the `topics/` manifest: `path`, `sha256`, `len`, `mtime_ns`, `ino` per file), `source_files` (the same for `sources/`), `workspace_id`, `batches` (the last 64 session batches installed: `key`, `count`, `txn_id`), `unlisted` (the `topics/` entries the manifest leaves out, by kind) |
//! | `.scriptorium/permissions` | present once the one-time permission migration ran |
//! | `.scriptorium/intent.json` | present only during an install or archive append (see *Recovery*) |
//! | `.scriptorium/intent.next` | the last intent, renamed there on removal; the next one is written into it (no new inode per install) |
//! | `.scriptorium/runtime.json` | creation order and organizer counters (Python's layout) |
//! | `.scriptorium/txn/<txn-id>/` | a stage: `topics/`; the directory is `flock`ed by the owning process |
//! | `.scriptorium/txn/spare-stage/` | the empty stage directory the last install left, renamed by the next `begin` into its stage (a cache; recovery keeps it) |
//! | `.scriptorium/txn/spare/`, `spare.json` | the tree the last install replaced and its manifest, recycled by the next `begin` (a cache it checks file by file; recovery keeps it) |
//! | `.scriptorium/catalog` | every committed topic file's summary (block IDs with lines and refs, evidence IDs, line-end IDs, link targets, size), keyed by content hash: derived, written by every install and by a `begin` that had to parse; see `validate::catalog` |
//! | `.scriptorium/tmp-*` | temporaries of atomic writes (deleted by recovery) |
//!
//! # Revision
//!
//! [`Revision`] is `<counter>-<16 hex>`: the counter of the revision record, and the first 8
//! bytes of SHA-256 over `"scriptorium-revision/2"`, the counter, the record's `txn_id`, the
//! digest of `topics/` (SHA-256 over each file's path and content hash, in path order; a
//! symlink or special file counts by kind) and the digest of `sources/` (the same over its
//! files), NUL-separated. The counter and transaction ID come from the record; the two digests
//! are always taken from the disk, by content: a copy, a checkout or `touch` that changes no
//! byte moves no revision. Both trees are read like git's index: a file whose size, mtime and
//! inode match the record's manifest and whose mtime is older than the record is not re-read,
//! so an unchanged 500 MB archive costs one `lstat` per file. After a copy every stat differs:
//! [`Workspace::refresh_stat_cache`] records the new ones (the revision stays). So:
//!
//! - every install and every archive append moves it (the counter grows; it never wraps: at
//!   `u64::MAX` an install is refused with `CORRUPT_STATE`);
//! - a transaction that changes no byte of `topics/` and archives nothing installs nothing
//!   ([`Installed::noop`]): the revision stays, no observer runs, no git commit is made;
//! - runtime state (`runtime.json`: creation order and organizer counters), lock, status,
//!   cache and index files never move it (they are not in it);
//! - an edit of `topics/` or `sources/` made outside a transaction moves it too.
//!   [`Workspace::begin`] reads every byte of `topics/` anyway and hashes it;
//!   [`Workspace::revision`] trusts the manifests as above. [`Workspace::revision_state`]
//!   reports such an edit; the next transaction takes the edited files as its baseline and
//!   records a fresh manifest.
//!
//! # Install
//!
//! Under the write lock ([`Validated::install`]):
//!
//! 1. recovery of any crashed install; compare-and-set: the current revision must be the one
//!    read at `begin` (`CONCURRENT_UPDATE` otherwise, retryable); a transaction that changes
//!    nothing stops here (after writing `runtime.json` if its counters moved);
//!    then the observers hear that the install is coming ([`InstallObserver::installing`]:
//!    the search index prepares its new segment beside the durable steps below, and makes it
//!    visible only once told the install happened, step 8; told it failed, it drops it);
//! 2. make the stage durable: an fsync of each file the transaction wrote and of each
//!    directory whose entries changed (a stage recycled from the spare keeps the already
//!    durable inodes of unchanged files), or one `syncfs` for a stage written from scratch;
//! 3. write the intent record (`txn_id`, stage, the inodes of the live and the staged
//!    `topics/`, old and new revision, the new revision record, the new `runtime.json`):
//!    into `intent.next`, fsync, rename to `intent.json`, fsync `.scriptorium/`;
//! 4. **`renameat2(RENAME_EXCHANGE)`** of `<stage>/topics` and `topics` — the linearization
//!    point; the old tree is now `<stage>/topics`;
//! 5. fsync the memory root;
//! 6. write `runtime.json` (if creation order moved) and the revision record, each temp +
//!    fsync + rename + fsync of `.scriptorium/`;
//! 7. move the old tree to `.scriptorium/txn/spare` (best effort, no fsync; removed with the
//!    stage when a spare exists already), keep the emptied stage directory as
//!    `txn/spare-stage` (or remove the stage), remove the intent record (renamed to
//!    `intent.next`; no fsync:
//!    every step it announced is durable, and the next intent's write syncs the removal);
//! 8. tell the observers (still under the lock), release the lock. An install that fails
//!    after step 1 tells them so ([`InstallObserver::abandoned`]).
//!
//! Without `RENAME_EXCHANGE` (`EINVAL`/`ENOSYS`/`EOPNOTSUPP`, remembered per workspace
//! handle) step 4 becomes two renames: `topics` → `<stage>/old-topics`, then `<stage>/topics`
//! → `topics` (the second is the linearization point); between them `topics/` is missing.
//!
//! # Recovery
//!
//! [`Workspace::open`] runs it under the write lock (so does every install and archive append,
//! before starting). It removes `.scriptorium/tmp-*`, then reads the intent record:
//!
//! | crash point | on disk | recovery |
//! |---|---|---|
//! | during `begin`, editing, validation | stage dir, no intent | stage removed (its owner lock is free) |
//! | any time | `.scriptorium/txn/spare` | kept: `begin` keeps a spare file only when its bytes equal the live file's |
//! | before or while writing the intent (1–3) | stage, maybe `tmp-*`, no intent | temporaries and stage removed: old revision |
//! | after the intent, before the swap (3–4) | intent; live `topics/` has the old inode | stage and intent removed: old revision |
//! | fallback, between the two renames | intent; no `topics/`; `<stage>/old-topics` has the old inode | `old-topics` renamed back, stage and intent removed: old revision |
//! | after the swap (4–7) | intent; live `topics/` has the new inode | fsync root and stage, rewrite `runtime.json` and the revision record from the intent, remove the stage and the intent: new revision |
//! | after step 7, power loss | maybe the intent again; the revision record names its transaction | stage (if any) and intent removed: new revision |
//! | after step 7 | nothing | nothing |
//! | archive append, before any rename | archive intent; `sources/` digest as recorded | intent removed: old revision |
//! | archive append, after a rename | archive intent; digest moved | revision record rewritten (counter + 1, new digest and manifest), intent removed: new revision |
//!
//! Any other combination (a live `topics/` that is neither tree) is reported as
//! `CORRUPT_STATE` and left alone. Stages whose owner process is alive (its stage directory is
//! locked) are never touched, so opening a workspace does not break another process's open
//! transaction.
//!
//! Assumed of the disk: `fsync` of a file makes its bytes durable, `fsync` of a directory makes
//! its entries durable, and `rename`/`renameat2` are atomic.
//!
//! # The workspace ID
//!
//! `.scriptorium/workspace-id` names the workspace in the session store's written markers. It is
//! also kept in the revision record, so a lost file is restored on open. A new ID is minted only
//! for a workspace that never installed anything; one with installs and no recorded ID is
//! refused with `WORKSPACE_ID_MISSING` (a new ID would make every written turn pending again)
//! until [`restore_workspace_id`] sets the old one (`scriptorium repair --workspace-id`).
//!
//! # Concurrency
//!
//! One cross-process write lock (`flock` on `.scriptorium/write.lock`; timeout and poll
//! interval chosen per call, default 10 s / 50 ms; a timeout is `BUSY`, retryable, naming the
//! lock). `begin` holds it while reading the live tree; the caller edits without it; `install`
//! takes it again and compares revisions. Of several transactions based on one revision exactly
//! one installs; the others get `CONCURRENT_UPDATE` (or `BUSY`) and retry from a new `begin`.
//! The lock is not re-entrant, and no public API hands it out, so it cannot be re-entered.
//!
//! # Limitations
//!
//! - Linux only (`renameat2`, `flock`, `O_NOFOLLOW`).
//! - [`Workspace::revision`] trusts the stat of a file older than the revision record: an
//!   outside edit that keeps size and mtime (e.g. `touch -r`) is seen only by the next
//!   `begin`, which hashes every byte.
//! - A multi-file archive batch is atomic per file, not as a whole (idempotent re-run).
//! - The stage holds a full copy of `topics/` (fine for the 10 000-block budget; no
//!   copy-on-write). Creating its files costs far more than their bytes on ext4 (inode
//!   allocation), so `begin` recycles the tree the last install replaced
//!   (`.scriptorium/txn/spare`): it keeps a file only when its bytes equal the live file's and
//!   it has mode 0600 and a single link, and writes fresh files for the rest.
//! - `begin` keeps the baseline it read (or that an install of the same handle parsed) for the
//!   next `begin`, and reuses it only when the revision, the digest of every byte of `topics/`
//!   and the `sources/` digest are unchanged. A new process takes the catalog instead: every
//!   file whose live hash equals its entry is known by its summary and parsed only when a
//!   check needs its text; the others are parsed.
//! - The stage is filled on first use (a write that changes a file, a removal, a handed-out
//!   path, or an install that adopts outside edits), under the write lock; a transaction that
//!   writes nothing, or only what the files already hold, copies nothing.
//! - Still O(tree) per transaction: the stat scans of `topics/` and `sources/`, the revision
//!   record's manifest, reading and indexing the whole catalog, and, once the stage is
//!   filled, recycling the spare tree (one `lstat` per file).
//!
//! # Example
//!
//! ```
//! use scriptorium_topics_format::source::ArchiveRecord;
//! use scriptorium_txn::{BeginOptions, LockTimeout, Workspace};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let ws = Workspace::init(dir.path())?;
//! let mut record = ArchiveRecord::new("openprogram", "garden", "u1", 1, "user", "I'm Dana.");
//! record.timestamp = Some("2024-04-02T09:14:00+02:00".into());
//! ws.archive_sources(&[record], LockTimeout::DEFAULT)?;
//!
//! let mut staged = ws.begin(BeginOptions::default())?;
//! staged.write_file(
//!     "topics/people/dana.md",
//!     "# Dana\n\nThe owner is Dana.[^e1]\n\n\
//!      [^e1]: Time: `2024-04-02`; Sources: [intro](openprogram/garden/u1)\n",
//! )?;
//! let installed = staged.validate()?.install()?;
//! assert_eq!(installed.changed_files, ["topics/people/dana.md"]);
//! assert_eq!(ws.revision()?, installed.revision);
//! # Ok(())
//! # }
//! ```

mod archive;
mod begin;
pub mod change;
pub mod code;
mod error;
pub use scriptorium_workspace_fs::fs;
mod ids;
mod install;
mod live;
mod lock;
mod observer;
mod prepare;
mod rebase;
mod recover;
mod sources;
mod stage;
mod state;
pub mod validate;
mod workspace;

pub use archive::{ArchiveExtension, ArchiveOutcome, ArchiveRewrite};
pub use begin::{BeginOptions, Resolver};
pub use change::{
    ChangeForm, ChangeLimits, FileAction, FileChange, NewSource, Surface, UpdateContext,
    UpdateOutcome, UpdateRequest,
};
pub use code::ErrorCode;
pub use error::{Error, Result};
pub use fs::{FaultFs, Fs, RealFs};
pub use ids::{Clock, IdSource, RandomIds, Revision, SeqIds, SystemClock, TxnId, WorkspaceId};
pub use install::{Installed, Validated};
pub use lock::LockTimeout;
pub use observer::{
    ArchiveEvent, ChangedFile, InstallEvent, InstallObserver, InstallingEvent, Observation,
    ObserverFailure,
};
pub use rebase::{Rebase, StagedChange};
pub use sources::LiveSources;
pub use stage::{MAX_NAME_BYTES, MAX_PATH_BYTES, Rejected, Staged, writable_path};
pub use state::{Batch, Counters, CreationOrder, InstalledBatch};
pub use workspace::{Options, RevisionState, Workspace, migrate_permissions, restore_workspace_id};
