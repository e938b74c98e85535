//! Rewriting the history so that content is forgotten: every commit whose tree (or an
//! ancestor's) a [`Scrub`] changes gets a new commit, and every ref moves to it.
//!
//! Key decision: the rewrite is a pure function of the objects and the scrub. Commits keep their
//! author, committer, dates and every other header (but for a signature, which the new content
//! would void), and nothing is read from the clock or the configuration, so the same history and
//! the same scrub give the same new ids on every clone. That is what lets another clone apply
//! the same forget by mapping its commits through this one's map (`known`), and what makes a
//! rewrite interrupted between two ref moves finish when it is run again: the commits already
//! moved to map to themselves, the others are rewritten to the same ids as before.
//!
//! Cost: each distinct (path, blob) and (path, tree) pair is read and scrubbed once (memoized),
//! and a tree the scrub leaves alone keeps its id, so a rewrite costs the distinct objects of the
//! history, not commits × files. Blobs are memoized with their path because the scrub is told the
//! path: the same bytes may be kept at one path and removed at another.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use gix::bstr::{BStr, BString, ByteSlice, ByteVec};
use gix::hash::ObjectId;
use gix::objs::tree::EntryMode;
use gix::refs::FullName;

use crate::scan::Scanner;
use crate::sync::oid;
use crate::{Error, History, Repo, read_settled, write_settled};

/// What a rewrite changes in each commit (implemented by the caller).
///
/// The scrub must be deterministic, and idempotent on its own output (a blob or message it
/// returns is kept when scrubbed again): rerunning an interrupted rewrite, or rewriting a
/// history that already is the rewrite, then changes nothing.
pub trait Scrub {
    /// The blob at `path` (workspace-relative, `/`-separated, e.g. `topics/people/dana.md`;
    /// lossy UTF-8 for a name that is not) rewritten: [`Scrubbed::Keep`],
    /// [`Scrubbed::Replace`] or [`Scrubbed::Remove`] (the path leaves the tree). Symlinks are
    /// blobs too (their bytes are the target); submodule entries are kept untouched.
    fn blob(&self, path: &str, bytes: &[u8]) -> Scrubbed;

    /// A commit's (or an annotated tag's) message rewritten; `None` keeps it. The message is
    /// given whole, trailers included (lossy UTF-8).
    fn message(&self, message: &str) -> Option<String>;
}

/// What [`Scrub::blob`] does with one blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scrubbed {
    /// Keep the blob as it is.
    Keep,
    /// Replace the blob's bytes (the entry keeps its name and mode).
    Replace(Vec<u8>),
    /// Remove the entry from its tree (a directory left empty goes too).
    Remove,
}

/// What [`History::rewrite`] changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// Every commit this call rewrote, old → new (hex ids), in the order rewritten (parents
    /// first). Commits replaced through `known` are not listed: the caller's whole map of this
    /// forget is `known` plus this.
    pub map: Vec<(String, String)>,
    /// Blobs this call's scrub replaced or removed (distinct old blob ids).
    pub blobs: usize,
    /// The branch's new head (`None` when `HEAD` did not change).
    pub head: Option<String>,
}

/// A rewrite whose new objects are written but whose refs have not moved yet (see
/// [`History::plan_rewrite`]); [`RewritePlan::apply`] publishes it. Dropping it publishes
/// nothing: the new objects stay unreferenced until the next prune.
#[must_use = "nothing is rewritten until the plan is applied"]
#[derive(Debug)]
pub struct RewritePlan {
    root: PathBuf,
    outcome: Rewritten,
    /// The refs to move, in order: every other ref by name, then `HEAD`'s branch (or a detached
    /// `HEAD`) last.
    moves: Vec<RefMove>,
    /// The settled marker rewritten: its transaction and the new commit.
    marker: Option<(String, ObjectId)>,
}

#[derive(Debug)]
struct RefMove {
    name: FullName,
    old: ObjectId,
    new: ObjectId,
}

impl History {
    /// Rewrites every commit reachable from the repository's refs (every ref under `refs/`,
    /// `HEAD`) whose tree, or an ancestor's, `scrub` changes, and moves the refs: a
    /// [`History::plan_rewrite`] then [`RewritePlan::apply`].
    ///
    /// Commits are rewritten parents first, trees bottom-up; author, committer, dates, extra
    /// headers and the message (scrubbed) are kept, signatures are dropped from rewritten
    /// commits, so the same history and the same scrub always give the same new ids. A commit
    /// in `known` (old → new hex ids: another clone's map of the same forget) is replaced by its
    /// mapped commit without being rewritten; the mapped commit must be in this repository
    /// (fetched), else `REVISION_NOT_FOUND` naming it. A mapped commit (a value of `known`)
    /// maps to itself.
    ///
    /// Then it moves every ref that points at a rewritten commit (loose or packed; an annotated
    /// tag gets a new tag object, its message scrubbed), `HEAD`'s branch last; rewrites the
    /// settled marker (`.git/scriptorium-settled`) when it names a rewritten commit; and
    /// rewrites `.git/index` from the new `HEAD` tree when `HEAD` moved or the index differs
    /// from that tree, so `git status` is clean when the workspace files are what the new
    /// `HEAD` holds (the caller scrubs them first).
    ///
    /// Call it under the workspace write lock.
    ///
    /// Atomicity: objects are written first, without fsync like every history write; then
    /// each ref moves in its own compare-and-set (the commit point of that ref), `HEAD`'s branch
    /// last, so once `HEAD` names the new history every other ref does too; then the marker,
    /// then the index. A crash leaves one of: new objects no ref reaches (harmless; a prune
    /// removes them); some refs moved (running the same rewrite again finishes it: the moved
    /// refs' commits map to themselves, the others are rewritten to the same ids; but its map
    /// then lacks the commits only the moved refs reached, so a caller that keeps the map
    /// records [`History::refs`] first and puts them back with [`History::set_refs`] before
    /// the rerun, or records [`RewritePlan::outcome`] before applying); every ref moved but
    /// the marker or the index not (the same rerun rewrites them; meanwhile
    /// [`History::settled`] sees a stale index and asks for repair, which
    /// [`History::catch_up`] does). The old objects stay in the repository, reachable from the
    /// reflogs, until [`History::prune`].
    pub fn rewrite(
        &self,
        scrub: &dyn Scrub,
        known: &BTreeMap<String, String>,
    ) -> Result<Rewritten, Error> {
        self.plan_rewrite(scrub, known)?.apply()
    }

    /// The first half of [`History::rewrite`]: writes every new blob, tree, commit and tag, and
    /// returns the plan (the old → new map included) without moving any ref, so that a caller can
    /// record the map before anything is published.
    ///
    /// Atomicity: writes only new objects, which nothing references until the plan is applied.
    pub fn plan_rewrite(
        &self,
        scrub: &dyn Scrub,
        known: &BTreeMap<String, String>,
    ) -> Result<RewritePlan, Error> {
        let open = self.open()?;
        let mut known_ids = HashMap::with_capacity(known.len());
        for (old, new) in known {
            known_ids.insert(oid(old)?, oid(new)?);
        }
        let mut rewriter = Rewriter::new(&open.repo, scrub, known_ids);

        let read = |op| move |source| Error::read(op, None, source);
        let refs = open.refs()?;
        let head_name = open.repo.head_name().map_err(read("read HEAD"))?;
        let head = open.repo.head().map_err(read("read HEAD"))?;
        let head_id = head.id().map(|id| id.detach());

        let mut moves = Vec::new();
        for (name, old) in &refs {
            let new = rewriter.target(name, *old)?;
            if new != *old {
                moves.push(RefMove { name: name.clone(), old: *old, new });
            }
        }
        // `HEAD`'s branch (or a detached `HEAD`) moves last: once it names the new history,
        // every other ref does too.
        let is_head = |m: &RefMove| match &head_name {
            Some(branch) => m.name == *branch,
            None => m.name.as_bstr() == "HEAD",
        };
        moves.sort_by_key(|m| is_head(m));

        // The marker names a commit `HEAD` held; it may be one no ref reaches any more (a rerun
        // after the refs moved but the marker did not), so it is rewritten in its own right.
        let mut marker = None;
        if let Some((txn, commit)) = read_settled(&self.root)
            && open.repo.find_commit(commit).is_ok()
        {
            let new = rewriter.commit(commit)?;
            if new != commit {
                marker = Some((txn, new));
            }
        }

        let new_head =
            head_id.and_then(|id| rewriter.commits.get(&id).copied().filter(|n| *n != id));
        let outcome = Rewritten {
            map: rewriter
                .map
                .iter()
                .map(|(old, new)| (old.to_hex().to_string(), new.to_hex().to_string()))
                .collect(),
            blobs: rewriter.changed_blobs.len(),
            head: new_head.map(|id| id.to_hex().to_string()),
        };
        Ok(RewritePlan { root: self.root.clone(), outcome, moves, marker })
    }

    /// What [`History::rewrite`] would change, without writing anything: every new object is
    /// hashed, none is stored, and no ref moves (a dry run's count of the commits and blobs a
    /// scrub would rewrite).
    pub fn rewrite_dry_run(&self, scrub: &dyn Scrub) -> Result<Rewritten, Error> {
        let open = self.open()?;
        let mut rewriter = Rewriter::new(&open.repo, scrub, HashMap::new());
        rewriter.dry = true;
        for (name, old) in &open.refs()? {
            rewriter.target(name, *old)?;
        }
        Ok(Rewritten {
            map: rewriter
                .map
                .iter()
                .map(|(old, new)| (old.to_hex().to_string(), new.to_hex().to_string()))
                .collect(),
            blobs: rewriter.changed_blobs.len(),
            head: None,
        })
    }

    /// Every ref that names an object, and that object (hex): the refs under `refs/`, loose or
    /// packed, and `HEAD` when it is detached (a symbolic `HEAD` is its branch). What
    /// [`History::set_refs`] puts back: a caller records it before a rewrite so that one a
    /// crash interrupted can start again from the same refs, and so give the whole map.
    pub fn refs(&self) -> Result<BTreeMap<String, String>, Error> {
        Ok(self
            .open()?
            .refs()?
            .into_iter()
            .map(|(name, id)| (name_of(&name), id.to_hex().to_string()))
            .collect())
    }

    /// Moves each ref of `refs` (as [`History::refs`] lists them) to its object, whatever it
    /// names now, creating it if missing; refs not listed are left alone. Every object must be
    /// in the repository (`REVISION_NOT_FOUND` otherwise: after a prune, the old history is
    /// gone). Call it under the workspace write lock.
    ///
    /// Atomicity: each ref moves on its own (lock file and rename); a crash leaves some moved,
    /// and running it again finishes. The settled marker and `.git/index` are not touched: the
    /// rewrite that follows rewrites them.
    pub fn set_refs(&self, refs: &BTreeMap<String, String>) -> Result<(), Error> {
        use gix::refs::transaction::PreviousValue;
        let open = self.open()?;
        let mut edits = Vec::with_capacity(refs.len());
        for (name, hex) in refs {
            let id = oid(hex)?;
            if !open.repo.has_object(id) {
                return Err(Error::RevisionNotFound {
                    rev: hex.clone(),
                    reason: "the object a ref should name is not in the repository",
                });
            }
            let full = FullName::try_from(name.as_str())
                .map_err(|_| Error::InvalidPath { path: name.clone(), reason: "not a ref name" })?;
            edits.push((full, id));
        }
        for (name, id) in edits {
            move_ref(&open.repo, &name, PreviousValue::Any, id, "scriptorium: set refs")?;
        }
        Ok(())
    }
}

impl Repo<'_> {
    /// Every ref naming an object (see [`History::refs`]), sorted by name.
    fn refs(&self) -> Result<Vec<(FullName, ObjectId)>, Error> {
        let read = |op| move |source| Error::read(op, None, source);
        let mut refs: Vec<(FullName, ObjectId)> = Vec::new();
        let platform = self.repo.references().map_err(read("list refs"))?;
        for reference in platform.all().map_err(read("list refs"))? {
            let reference = reference.map_err(|source| Error::Read {
                op: "list refs",
                path: None,
                source: gix::Error::from_error(source),
            })?;
            if let gix::refs::Target::Object(id) = &reference.inner.target {
                refs.push((reference.inner.name.clone(), *id));
            }
        }
        if self.repo.head_name().map_err(read("read HEAD"))?.is_none()
            && let Some(id) = self.repo.head().map_err(read("read HEAD"))?.id()
        {
            let name = FullName::try_from("HEAD").expect("HEAD is a valid ref name");
            refs.push((name, id.detach()));
        }
        refs.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(refs)
    }
}

/// Moves the ref `name` to `new` if it is still `expected` (a lock file, a compare, a rename).
/// The reflog entry is dated by the commit it names: no clock is read (and prune expires it).
fn move_ref(
    repo: &gix::Repository,
    name: &FullName,
    expected: gix::refs::transaction::PreviousValue,
    new: ObjectId,
    message: &str,
) -> Result<(), Error> {
    use gix::refs::transaction::{Change, LogChange, RefEdit, RefLog};
    let time = repo
        .find_commit(new)
        .ok()
        .and_then(|commit| commit.time().ok())
        .map_or(crate::Time::utc(0), crate::Time::from);
    let signature = time.signature();
    let mut time_buf = gix::date::parse::TimeBuf::default();
    let edit = RefEdit {
        change: Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                force_create_reflog: false,
                message: message.into(),
            },
            expected,
            new: gix::refs::Target::Object(new),
        },
        name: name.clone(),
        deref: false,
    };
    repo.edit_references_as(Some(edit), Some(signature.to_ref(&mut time_buf)))
        .map_err(|source| Error::Write { op: "move ref", path: Some(name_of(name)), source })?;
    Ok(())
}

impl RewritePlan {
    /// What the rewrite changes (the map is complete before anything moves).
    pub fn outcome(&self) -> &Rewritten {
        &self.outcome
    }

    /// Moves the refs, then rewrites the settled marker and `.git/index`; see
    /// [`History::rewrite`] for the order and what a crash leaves. A ref that no longer points
    /// where the plan found it fails its compare-and-set (`GIT_COMMIT_FAILED`), leaving the refs
    /// before it moved: plan again.
    pub fn apply(self) -> Result<Rewritten, Error> {
        self.apply_moves(None)
    }

    /// Test seam: applies only the first `ref_moves` ref moves and stops there, as a process
    /// killed at that point would (no marker, no index).
    #[doc(hidden)]
    pub fn apply_interrupted(self, ref_moves: usize) -> Result<(), Error> {
        self.apply_moves(Some(ref_moves)).map(drop)
    }

    /// Moves the refs (only the first `stop_after` of them when given, and nothing more),
    /// then the marker and the index.
    fn apply_moves(self, stop_after: Option<usize>) -> Result<Rewritten, Error> {
        use gix::refs::transaction::PreviousValue;
        let history = History { root: self.root };
        let open = history.open()?;
        let count = stop_after.unwrap_or(usize::MAX);
        for ref_move in self.moves.iter().take(count) {
            let expected =
                PreviousValue::MustExistAndMatch(gix::refs::Target::Object(ref_move.old));
            move_ref(&open.repo, &ref_move.name, expected, ref_move.new, "scriptorium: rewrite")?;
        }
        if stop_after.is_some() {
            return Ok(self.outcome);
        }
        if let Some((txn, commit)) = &self.marker {
            write_settled(&history.root, txn, *commit)?;
        }
        if let Some(head) = open.head()? {
            let scanner = Scanner::new(&open.repo, &history.root);
            if self.outcome.head.is_some() || !open.index_matches(head.tree, &scanner)? {
                open.write_index(head.tree, &scanner)?;
            }
        }
        Ok(self.outcome)
    }
}

impl Repo<'_> {
    /// Whether `.git/index` holds exactly the entries (path, mode, id) of `tree`.
    fn index_matches(&self, tree: ObjectId, scanner: &Scanner<'_>) -> Result<bool, Error> {
        let Some(old) = scanner.old_index() else { return Ok(false) };
        let fresh = self
            .repo
            .index_from_tree(&tree)
            .map_err(|source| Error::read("read tree", None, source))?;
        if fresh.entries().len() != old.entries().len() {
            return Ok(false);
        }
        Ok(fresh.entries().iter().zip(old.entries()).all(|(a, b)| {
            a.id == b.id
                && a.mode == b.mode
                && a.path(&fresh) == b.path(old)
                && a.stage() == b.stage()
        }))
    }
}

/// One rewrite's memo: every object decided once.
struct Rewriter<'r> {
    repo: &'r gix::Repository,
    scrub: &'r dyn Scrub,
    known: HashMap<ObjectId, ObjectId>,
    /// The mapped commits of `known`: already rewritten, they map to themselves.
    fixed: HashSet<ObjectId>,
    /// Commits decided, old → new (equal when unchanged).
    commits: HashMap<ObjectId, ObjectId>,
    /// Annotated tags decided, old → new.
    tags: HashMap<ObjectId, ObjectId>,
    /// Trees decided by (path, id); `None`: the tree became empty and leaves its parent.
    trees: HashMap<(BString, ObjectId), Option<ObjectId>>,
    /// Blobs decided by (path, id); `None`: removed.
    blobs: HashMap<(BString, ObjectId), Option<ObjectId>>,
    /// Old blob ids this call's scrub replaced or removed.
    changed_blobs: HashSet<ObjectId>,
    /// Commits rewritten by this call, in order.
    map: Vec<(ObjectId, ObjectId)>,
    /// Hash new objects without writing them ([`History::rewrite_dry_run`]).
    dry: bool,
}

/// A commit read, waiting for its parents to be decided.
struct Pending {
    data: Vec<u8>,
    tree: ObjectId,
    parents: Vec<ObjectId>,
}

impl<'r> Rewriter<'r> {
    fn new(
        repo: &'r gix::Repository,
        scrub: &'r dyn Scrub,
        known: HashMap<ObjectId, ObjectId>,
    ) -> Self {
        let fixed = known.values().copied().collect();
        Rewriter {
            repo,
            scrub,
            known,
            fixed,
            commits: HashMap::new(),
            tags: HashMap::new(),
            trees: HashMap::new(),
            blobs: HashMap::new(),
            changed_blobs: HashSet::new(),
            map: Vec::new(),
            dry: false,
        }
    }

    /// The new target of the ref `name`, which points at `id` (a commit or an annotated tag;
    /// a tree is rewritten as a root tree; a blob cannot be scrubbed without a path).
    fn target(&mut self, name: &FullName, id: ObjectId) -> Result<ObjectId, Error> {
        let header = self
            .repo
            .find_header(id)
            .map_err(|source| Error::read("read ref target", Some(&name_of(name)), source))?;
        match header.kind() {
            gix::objs::Kind::Commit => self.commit(id),
            gix::objs::Kind::Tag => self.tag(name, id),
            gix::objs::Kind::Tree => self.root_tree(id),
            gix::objs::Kind::Blob => {
                Err(Error::UnscrubbableRef { name: name_of(name), kind: "a blob" })
            }
        }
    }

    /// An annotated tag with its target rewritten and its message scrubbed.
    fn tag(&mut self, name: &FullName, id: ObjectId) -> Result<ObjectId, Error> {
        if let Some(done) = self.tags.get(&id) {
            return Ok(*done);
        }
        let read = |source| Error::read("read tag", Some(&name_of(name)), source);
        let tag = self.repo.find_tag(id).map_err(read)?;
        let data = tag.data.clone();
        let decoded = tag.decode().map_err(read)?;
        let target = decoded.target();
        let new_target = self.target(name, target)?;
        let message = self.scrubbed_message(message_of(&data));
        let new = if new_target == target && message.is_none() {
            id
        } else {
            let mut out = Vec::with_capacity(data.len());
            let (header, body) = split_message(&data);
            for line in header.lines_with_terminator() {
                if line.starts_with(b"object ") {
                    out.push_str("object ");
                    out.push_str(new_target.to_hex().to_string());
                    out.push(b'\n');
                } else {
                    out.push_str(line);
                }
            }
            out.push(b'\n');
            out.push_str(message.as_deref().unwrap_or(body));
            self.write(gix::objs::Kind::Tag, &out, "write tag")?
        };
        self.tags.insert(id, new);
        Ok(new)
    }

    /// The commit `root` rewritten, its ancestors first (an explicit stack: histories are
    /// deeper than any thread's stack).
    fn commit(&mut self, root: ObjectId) -> Result<ObjectId, Error> {
        let mut pending: HashMap<ObjectId, Pending> = HashMap::new();
        let mut stack = vec![root];
        while let Some(&id) = stack.last() {
            if self.commits.contains_key(&id) {
                stack.pop();
                continue;
            }
            if let Some(commit) = pending.get(&id) {
                if let Some(parent) = commit.parents.iter().find(|p| !self.commits.contains_key(*p))
                {
                    stack.push(*parent);
                    continue;
                }
                let commit = pending.remove(&id).expect("pending: looked up above");
                stack.pop();
                let new = self.rewrite_commit(id, commit)?;
                self.commits.insert(id, new);
                continue;
            }
            if self.fixed.contains(&id) {
                self.commits.insert(id, id);
                continue;
            }
            if let Some(&new) = self.known.get(&id) {
                self.apply_known(id, new)?;
                self.commits.insert(id, new);
                continue;
            }
            let read = |source| Error::read("read commit", None, source);
            let commit = self.repo.find_commit(id).map_err(read)?;
            let decoded = commit.decode().map_err(read)?;
            let tree = decoded.tree();
            let parents: Vec<ObjectId> = decoded.parents().collect();
            pending.insert(id, Pending { data: commit.data.clone(), tree, parents });
        }
        Ok(self.commits[&root])
    }

    fn rewrite_commit(&mut self, id: ObjectId, commit: Pending) -> Result<ObjectId, Error> {
        let tree = self.root_tree(commit.tree)?;
        let parents: Vec<ObjectId> = commit.parents.iter().map(|p| self.commits[p]).collect();
        let message = self.scrubbed_message(message_of(&commit.data));
        if tree == commit.tree && parents == commit.parents && message.is_none() {
            return Ok(id);
        }
        let (header, body) = split_message(&commit.data);
        let mut out = Vec::with_capacity(commit.data.len());
        out.push_str("tree ");
        out.push_str(tree.to_hex().to_string());
        out.push(b'\n');
        for parent in &parents {
            out.push_str("parent ");
            out.push_str(parent.to_hex().to_string());
            out.push(b'\n');
        }
        // Every other header as it was, but a signature: it signed the old content.
        let mut in_signature = false;
        for line in header.lines_with_terminator() {
            if line.starts_with(b" ") {
                if !in_signature {
                    out.push_str(line);
                }
                continue;
            }
            in_signature = line.starts_with(b"gpgsig ") || line.starts_with(b"gpgsig-sha256 ");
            if !(in_signature || line.starts_with(b"tree ") || line.starts_with(b"parent ")) {
                out.push_str(line);
            }
        }
        out.push(b'\n');
        out.push_str(message.as_deref().unwrap_or(body));
        let new = self.write(gix::objs::Kind::Commit, &out, "write commit")?;
        self.map.push((id, new));
        Ok(new)
    }

    /// A commit of `known` reached by the walk: it must be here, and its trees (the other
    /// clone's rewrite of the old ones with the same scrub) seed the memo, so the commits of
    /// this clone built on it cost only what they changed.
    fn apply_known(&mut self, old: ObjectId, new: ObjectId) -> Result<(), Error> {
        let missing = || Error::KnownCommitMissing {
            old: old.to_hex().to_string(),
            new: new.to_hex().to_string(),
        };
        if !self.repo.has_object(new) {
            return Err(missing());
        }
        let read = |source| Error::read("read commit", None, source);
        let new_tree = self.repo.find_commit(new).map_err(read)?.tree_id().map_err(read)?;
        let old_tree = self.repo.find_commit(old).map_err(read)?.tree_id().map_err(read)?;
        self.seed(BString::default(), old_tree.detach(), Some(new_tree.detach()))
    }

    /// Records that the tree `old` at `path` became `new`, and so, entry by entry, what
    /// became of everything in it: the same scrub would decide the same. Trees only are read
    /// (no blob), each (path, tree) once.
    fn seed(&mut self, path: BString, old: ObjectId, new: Option<ObjectId>) -> Result<(), Error> {
        if self.trees.contains_key(&(path.clone(), old)) {
            return Ok(());
        }
        self.trees.insert((path.clone(), old), new);
        let Some(new) = new else { return Ok(()) };
        if new == old {
            // Kept whole: so is everything in it, where it is.
            for (mode, name, id) in self.entries(path.as_bstr(), old)? {
                let child = join(path.as_bstr(), name.as_bstr());
                if mode.is_tree() {
                    self.seed(child, id, Some(id))?;
                } else if mode.is_blob_or_symlink() {
                    self.blobs.entry((child, id)).or_insert(Some(id));
                }
            }
            return Ok(());
        }
        let new_entries: HashMap<BString, (EntryMode, ObjectId)> = self
            .entries(path.as_bstr(), new)?
            .into_iter()
            .map(|(mode, name, id)| (name, (mode, id)))
            .collect();
        for (mode, name, id) in self.entries(path.as_bstr(), old)? {
            let child = join(path.as_bstr(), name.as_bstr());
            let counterpart = new_entries.get(&name);
            if mode.is_tree() {
                let new = counterpart.filter(|(mode, _)| mode.is_tree()).map(|(_, id)| *id);
                self.seed(child, id, new)?;
            } else if mode.is_blob_or_symlink() {
                let new = counterpart.filter(|(mode, _)| !mode.is_tree()).map(|(_, id)| *id);
                self.blobs.entry((child, id)).or_insert(new);
            }
        }
        Ok(())
    }

    /// A root tree rewritten (the empty tree when everything was removed).
    fn root_tree(&mut self, id: ObjectId) -> Result<ObjectId, Error> {
        match self.tree(BString::default(), id)? {
            Some(new) => Ok(new),
            None => self.write(gix::objs::Kind::Tree, &[], "write tree"),
        }
    }

    /// The tree `id` at `path` rewritten; `None` when nothing is left in it.
    fn tree(&mut self, path: BString, id: ObjectId) -> Result<Option<ObjectId>, Error> {
        if let Some(done) = self.trees.get(&(path.clone(), id)) {
            return Ok(*done);
        }
        let entries = self.entries(path.as_bstr(), id)?;
        let mut changed = false;
        let mut kept = Vec::with_capacity(entries.len());
        for (mode, name, entry_id) in entries {
            let child = join(path.as_bstr(), name.as_bstr());
            let new = if mode.is_tree() {
                self.tree(child, entry_id)?
            } else if mode.is_blob_or_symlink() {
                self.blob(child, entry_id)?
            } else {
                Some(entry_id)
            };
            match new {
                Some(new) => {
                    changed |= new != entry_id;
                    kept.push((mode, name, new));
                }
                None => changed = true,
            }
        }
        let new = if !changed {
            Some(id)
        } else if kept.is_empty() {
            None
        } else {
            let mut out = Vec::new();
            let mut mode_buf = Default::default();
            for (mode, name, id) in &kept {
                out.push_str(mode.as_bytes(&mut mode_buf));
                out.push(b' ');
                out.push_str(name);
                out.push(0);
                out.push_str(id.as_bytes());
            }
            Some(self.write(gix::objs::Kind::Tree, &out, "write tree")?)
        };
        self.trees.insert((path, id), new);
        Ok(new)
    }

    /// The blob `id` at `path` scrubbed; `None` when removed.
    fn blob(&mut self, path: BString, id: ObjectId) -> Result<Option<ObjectId>, Error> {
        if let Some(done) = self.blobs.get(&(path.clone(), id)) {
            return Ok(*done);
        }
        let path_text = path.to_str_lossy().into_owned();
        let blob = self
            .repo
            .find_blob(id)
            .map_err(|source| Error::read("read blob", Some(&path_text), source))?;
        let new = match self.scrub.blob(&path_text, &blob.data) {
            Scrubbed::Keep => Some(id),
            Scrubbed::Replace(bytes) if bytes == blob.data => Some(id),
            Scrubbed::Replace(bytes) => {
                Some(self.write(gix::objs::Kind::Blob, &bytes, "write blob")?)
            }
            Scrubbed::Remove => None,
        };
        if new != Some(id) {
            self.changed_blobs.insert(id);
        }
        self.blobs.insert((path, id), new);
        Ok(new)
    }

    /// The entries of the tree `id` (at `path`, for errors): mode, name, id.
    fn entries(
        &self,
        path: &BStr,
        id: ObjectId,
    ) -> Result<Vec<(EntryMode, BString, ObjectId)>, Error> {
        let path_text = path.to_str_lossy();
        let read = |source| Error::read("read tree", Some(&path_text), source);
        let tree = self.repo.find_tree(id).map_err(read)?;
        let decoded = tree.decode().map_err(read)?;
        Ok(decoded
            .entries
            .iter()
            .map(|entry| (entry.mode, entry.filename.to_owned(), entry.oid.to_owned()))
            .collect())
    }

    /// The scrubbed message, when the scrub changes it.
    fn scrubbed_message(&self, message: &[u8]) -> Option<Vec<u8>> {
        let text = String::from_utf8_lossy(message);
        self.scrub.message(&text).filter(|new| *new != text).map(String::into_bytes)
    }

    /// Writes an object (unless it exists) and returns its id.
    fn write(
        &self,
        kind: gix::objs::Kind,
        data: &[u8],
        op: &'static str,
    ) -> Result<ObjectId, Error> {
        if self.dry {
            return gix::objs::compute_hash(self.repo.object_hash(), kind, data)
                .map_err(|source| Error::write(op, None, source));
        }
        self.repo
            .write_object(Raw { kind, data })
            .map(gix::Id::detach)
            .map_err(|source| Error::write(op, None, source))
    }
}

/// An object's bytes, written as they are.
struct Raw<'a> {
    kind: gix::objs::Kind,
    data: &'a [u8],
}

impl gix::objs::WriteTo for Raw<'_> {
    fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        out.write_all(self.data)
    }

    fn kind(&self) -> gix::objs::Kind {
        self.kind
    }

    fn size(&self) -> u64 {
        self.data.len() as u64
    }
}

/// A commit's or tag's headers (each line with its `\n`) and its message: the split is the
/// first blank line. Without one, all of it is headers.
fn split_message(data: &[u8]) -> (&[u8], &[u8]) {
    match data.find(b"\n\n") {
        Some(at) => (&data[..=at], &data[at + 2..]),
        None => (data, &[]),
    }
}

fn message_of(data: &[u8]) -> &[u8] {
    split_message(data).1
}

fn join(prefix: &BStr, name: &BStr) -> BString {
    let mut path = BString::from(prefix);
    if !path.is_empty() {
        path.push_byte(b'/');
    }
    path.push_str(name);
    path
}

fn name_of(name: &FullName) -> String {
    name.as_bstr().to_str_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::split_message;

    #[test]
    fn the_message_starts_after_the_first_blank_line() {
        assert_eq!(
            split_message(b"tree x\nauthor a\n\nsubject\n\nbody\n"),
            (&b"tree x\nauthor a\n"[..], &b"subject\n\nbody\n"[..])
        );
        assert_eq!(split_message(b"tree x\n"), (&b"tree x\n"[..], &b""[..]));
    }
}
