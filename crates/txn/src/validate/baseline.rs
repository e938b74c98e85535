//! [`Baseline`]: the committed state a transaction is validated against, kept
//! file by file so that a transaction re-reads, re-parses and re-validates only the files it
//! changed, and the next baseline is the last one with those files replaced.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use scriptorium_topics_format::topic::{
    Document, TreeContext, block_link_ids, compare_topic_paths, defined_evidence_ids, line_end_ids,
};
use scriptorium_topics_format::{Diagnostic, TopicFile, Unit, parse_tree};

use super::SourceCatalog;
pub(crate) use super::catalog::Summary;
use crate::state::sha256_hex;

/// A topic path ordered as the tree is (`compare_topic_paths`), so a [`BTreeMap`] of them
/// iterates in tree order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TreePath(pub(crate) String);

impl Ord for TreePath {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_topic_paths(&self.0, &other.0)
    }
}

impl PartialOrd for TreePath {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One committed topic file, parsed on its own, and what the rest of the tree needs to know
/// of it. Immutable once built; shared between baselines.
#[derive(Clone, Debug)]
pub struct FileState {
    /// The file (path relative to `topics/`) and its text.
    pub file: TopicFile,
    /// SHA-256 (hex) of its bytes.
    pub hash: String,
    /// Its units, in parse order (`created_order` counts within the file).
    pub units: Vec<Unit>,
    /// Its strict-parse diagnostics.
    pub diagnostics: Vec<Diagnostic>,
    /// Every block ID it holds: its units' IDs, plus the suffix IDs of paragraphs that did not
    /// parse (a broken block still counts as present), each once.
    pub block_ids: Vec<String>,
    /// Where each block ID's paragraph starts (1-based line).
    lines: HashMap<String, u32>,
    /// The refs each block ID of the file cites.
    refs_by_block: HashMap<String, BTreeSet<String>>,
    /// The evidence IDs it defines.
    evidence_ids: Vec<String>,
    /// Its line-end `^token`s.
    line_end_ids: Vec<String>,
    /// The block IDs its links point at.
    link_targets: Vec<String>,
}

impl FileState {
    /// Parses `file` on its own, resolving source targets through `sources`.
    pub fn parse(file: TopicFile, sources: &dyn SourceCatalog) -> FileState {
        let hash = sha256_hex(file.text.as_bytes());
        FileState::parse_hashed(file, hash, sources)
    }

    /// [`FileState::parse`] of a file whose hash is known.
    pub(crate) fn parse_hashed(
        file: TopicFile,
        hash: String,
        sources: &dyn SourceCatalog,
    ) -> FileState {
        let parsed = parse_tree(std::slice::from_ref(&file), sources);
        let mut ids: Vec<String> = Vec::new();
        let mut lines: HashMap<String, u32> = HashMap::new();
        let mut refs_by_block: HashMap<String, BTreeSet<String>> = HashMap::new();
        for unit in &parsed.units {
            if !lines.contains_key(&unit.memory_id) {
                ids.push(unit.memory_id.clone());
                lines.insert(unit.memory_id.clone(), unit.line);
            }
            refs_by_block
                .entry(unit.memory_id.clone())
                .or_default()
                .extend(unit.refs.iter().cloned());
        }
        if !parsed.diagnostics.is_empty() {
            // A paragraph that does not parse yields no unit; its IDs still count as present.
            let doc = Document::parse(&file.text);
            for paragraph in doc.paragraphs() {
                let line = u32::try_from(paragraph.lines.start + 1).unwrap_or(u32::MAX);
                for id in doc.block_ids(paragraph).into_iter().map(String::from) {
                    if !lines.contains_key(&id) {
                        lines.insert(id.clone(), line);
                        ids.push(id);
                    }
                }
            }
        }
        FileState {
            evidence_ids: defined_evidence_ids(&file.text),
            line_end_ids: line_end_ids(&file.text),
            link_targets: block_link_ids(&file.text),
            file,
            hash,
            units: parsed.units,
            diagnostics: parsed.diagnostics,
            block_ids: ids,
            lines,
            refs_by_block,
        }
    }

    /// The path relative to `topics/`.
    pub fn path(&self) -> &str {
        &self.file.path
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> u64 {
        super::len_u64(&self.file.text)
    }

    /// The block IDs its links point at.
    pub fn link_targets(&self) -> &[String] {
        &self.link_targets
    }

    /// What the rest of the tree needs to know of it (what the catalog keeps).
    pub(crate) fn summary(&self) -> Summary {
        Summary {
            path: self.file.path.clone(),
            hash: self.hash.clone(),
            bytes: self.bytes(),
            diagnostics: !self.diagnostics.is_empty(),
            block_ids: self.block_ids.clone(),
            lines: self.lines.clone(),
            refs_by_block: self.refs_by_block.clone(),
            evidence_ids: self.evidence_ids.clone(),
            line_end_ids: self.line_end_ids.clone(),
            link_targets: self.link_targets.clone(),
        }
    }
}

/// Reads and parses a committed file the baseline knows only by its [`Summary`] (one loaded
/// from the catalog): the engine's reads the live file and checks its hash.
pub trait FileLoader: Send + Sync {
    /// The committed file `path` (relative to `topics/`) whose bytes hash to `hash`, parsed;
    /// an error names what went wrong (unreadable, or its bytes are no longer those).
    fn load(&self, path: &str, hash: &str) -> Result<FileState, String>;
}

/// One committed file of a [`Baseline`]: its summary always, its parse once someone asked.
#[derive(Clone, Debug)]
struct Slot {
    summary: Arc<Summary>,
    state: OnceLock<Arc<FileState>>,
}

impl Slot {
    fn parsed(state: Arc<FileState>) -> Slot {
        let slot = Slot { summary: Arc::new(state.summary()), state: OnceLock::new() };
        let _ = slot.state.set(state);
        slot
    }
}

/// The loader of a baseline read from a catalog, and what its loads failed on.
#[derive(Clone, Default)]
struct Lazy {
    loader: Option<Arc<dyn FileLoader>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl fmt::Debug for Lazy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lazy").field("loader", &self.loader.is_some()).finish()
    }
}

/// Committed state, read before anything touches the stage (and kept for a repair turn, never
/// re-read after the edit): every committed file parsed on its own, and indexes over the whole
/// tree (block IDs and where they live, the refs each cites, every committed ref, defined
/// evidence IDs, which files link to which blocks, sizes).
///
/// Reading it after the edit would treat the edit's own IDs as committed, and a dropped ID would
/// look as if it never existed. A committed tree that does not parse cleanly (edited by hand)
/// still yields a baseline: the units that parsed, plus the suffix block IDs of every paragraph
/// of a file with a diagnostic, so a block that is broken in the committed tree must still not
/// disappear. The committed diagnostics are kept in [`Baseline::diagnostics`].
///
/// Cost: reading is one parse per file; [`Baseline::replace`] updates the indexes for the
/// replaced files only, so a transaction's baseline work grows with what it changed. A
/// baseline made from the catalog ([`Baseline::from_summaries`]) holds every file's
/// [`Summary`] (all the indexes need) and parses a file only when asked for it
/// ([`Baseline::file`]), through its [`FileLoader`]; a load that fails is reported by
/// [`Baseline::take_load_errors`], and the file then counts as absent, so a caller that
/// asked must check that before trusting its answer.
#[derive(Clone, Debug, Default)]
pub struct Baseline {
    files: BTreeMap<TreePath, Slot>,
    /// How files known only by their summary are parsed when asked for.
    lazy: Lazy,
    /// Block ID → the files that hold it (more than one only in a broken tree).
    id_files: HashMap<String, Vec<String>>,
    block_ids: BTreeSet<String>,
    /// Committed ref → how many (file, block ID) pairs cite it.
    refs: HashMap<String, u32>,
    /// Evidence ID → how many files define it.
    evidence: HashMap<String, u32>,
    /// Line-end token → how many files end a line with it.
    line_ends: HashMap<String, u32>,
    /// Block ID → the files whose links point at it.
    backlinks: HashMap<String, BTreeSet<String>>,
    total_bytes: u64,
}

impl Baseline {
    /// Reads the committed tree `files` (paths relative to `topics/`), resolving source targets
    /// through `sources`.
    pub fn read(files: &[TopicFile], sources: &dyn SourceCatalog) -> Baseline {
        let mut baseline = Baseline::default();
        baseline.replace(
            files.iter().map(|f| Arc::new(FileState::parse(f.clone(), sources))).collect(),
            &[],
        );
        baseline
    }

    /// Replaces (or adds) the files of `changed` and removes the files named by `removed`
    /// (paths relative to `topics/`), updating every index for those files only.
    pub fn replace(&mut self, changed: Vec<Arc<FileState>>, removed: &[String]) {
        self.replace_slots(changed.into_iter().map(Slot::parsed).collect(), removed);
    }

    /// A baseline of the files `summaries` describe, parsed only when asked for through
    /// `loader` (see the type's docs), with the parsed files `parsed` beside them.
    pub fn from_summaries(
        summaries: Vec<Summary>,
        parsed: Vec<Arc<FileState>>,
        loader: Arc<dyn FileLoader>,
    ) -> Baseline {
        let mut baseline = Baseline {
            lazy: Lazy { loader: Some(loader), ..Lazy::default() },
            ..Baseline::default()
        };
        let mut slots: Vec<Slot> = summaries
            .into_iter()
            .map(|summary| Slot { summary: Arc::new(summary), state: OnceLock::new() })
            .collect();
        slots.extend(parsed.into_iter().map(Slot::parsed));
        baseline.replace_slots(slots, &[]);
        baseline
    }

    /// The catalog of this baseline (see the `catalog` module): every file's summary.
    pub fn catalog(&self) -> Vec<u8> {
        super::catalog::encode(self.summaries())
    }

    /// The baseline the catalog `bytes` describes, its files parsed on demand through
    /// `loader`; `None` when `bytes` is no whole catalog.
    pub fn from_catalog(bytes: &[u8], loader: Arc<dyn FileLoader>) -> Option<Baseline> {
        Some(Baseline::from_summaries(super::catalog::decode(bytes)?, Vec::new(), loader))
    }

    /// The summaries of the catalog `bytes`; `None` when it is no whole catalog.
    pub(crate) fn decode_catalog(bytes: &[u8]) -> Option<Vec<Summary>> {
        super::catalog::decode(bytes)
    }

    /// Every file's summary, in tree order (what the catalog keeps).
    pub fn summaries(&self) -> impl Iterator<Item = &Summary> + '_ {
        self.files.values().map(|slot| &*slot.summary)
    }

    /// What loading files known only by their summary failed on since the last call (a file
    /// unreadable, or changed since `begin`), each as `path: message`.
    pub fn take_load_errors(&self) -> Vec<String> {
        std::mem::take(&mut *self.lazy.errors.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn replace_slots(&mut self, changed: Vec<Slot>, removed: &[String]) {
        for path in removed {
            if let Some(old) = self.files.remove(&TreePath(path.clone())) {
                self.unindex(&old.summary);
            }
        }
        for slot in changed {
            let summary = Arc::clone(&slot.summary);
            // One lookup per file: the old entry (if any) comes back from the insert.
            if let Some(old) = self.files.insert(TreePath(summary.path.clone()), slot) {
                self.unindex(&old.summary);
            }
            self.index(&summary);
        }
    }

    /// The parse of `slot`, loaded now if need be (`None` when the load failed: recorded).
    fn loaded<'a>(&'a self, slot: &'a Slot) -> Option<&'a Arc<FileState>> {
        if let Some(state) = slot.state.get() {
            return Some(state);
        }
        let summary = &slot.summary;
        let failed = |message: String| {
            self.lazy
                .errors
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(format!("{}: {message}", summary.path));
        };
        let Some(loader) = &self.lazy.loader else {
            failed("not parsed and no loader".to_owned());
            return None;
        };
        match loader.load(&summary.path, &summary.hash) {
            // The parse must say what the summary said: else the catalog was wrong.
            Ok(state) if state.summary() == **summary => {
                let _ = slot.state.set(Arc::new(state));
                slot.state.get()
            }
            Ok(_) => {
                failed("the catalog's summary does not match the file".to_owned());
                None
            }
            Err(message) => {
                failed(message);
                None
            }
        }
    }

    fn index(&mut self, state: &Summary) {
        let path = &state.path;
        for id in &state.block_ids {
            let files = self.id_files.entry(id.clone()).or_default();
            if files.is_empty() {
                self.block_ids.insert(id.clone());
            }
            files.push(path.clone());
        }
        for refs in state.refs_by_block.values() {
            for source_ref in refs {
                *self.refs.entry(source_ref.clone()).or_default() += 1;
            }
        }
        for id in &state.evidence_ids {
            *self.evidence.entry(id.clone()).or_default() += 1;
        }
        for id in &state.line_end_ids {
            *self.line_ends.entry(id.clone()).or_default() += 1;
        }
        for target in &state.link_targets {
            self.backlinks.entry(target.clone()).or_default().insert(path.clone());
        }
        self.total_bytes = self.total_bytes.saturating_add(state.bytes);
    }

    fn unindex(&mut self, state: &Summary) {
        let path = &state.path;
        for id in &state.block_ids {
            if let Some(files) = self.id_files.get_mut(id) {
                if let Some(at) = files.iter().position(|f| f == path) {
                    files.remove(at);
                }
                if files.is_empty() {
                    self.id_files.remove(id);
                    self.block_ids.remove(id);
                }
            }
        }
        for refs in state.refs_by_block.values() {
            for source_ref in refs {
                decrement(&mut self.refs, source_ref);
            }
        }
        for id in &state.evidence_ids {
            decrement(&mut self.evidence, id);
        }
        for id in &state.line_end_ids {
            decrement(&mut self.line_ends, id);
        }
        for target in &state.link_targets {
            if let Some(files) = self.backlinks.get_mut(target) {
                files.remove(path);
                if files.is_empty() {
                    self.backlinks.remove(target);
                }
            }
        }
        self.total_bytes = self.total_bytes.saturating_sub(state.bytes);
    }

    /// Every committed block ID (aliases included).
    pub fn block_ids(&self) -> &BTreeSet<String> {
        &self.block_ids
    }

    /// Whether `id` is a committed block ID.
    pub fn has_block(&self, id: &str) -> bool {
        self.id_files.contains_key(id)
    }

    /// The committed units, in tree order (parses every file not parsed yet: O(tree)).
    pub fn units(&self) -> impl Iterator<Item = &Unit> + Clone + '_ {
        self.files().flat_map(|f| f.units.iter())
    }

    /// The committed files, in tree order (parses every file not parsed yet: O(tree)).
    pub fn files(&self) -> impl Iterator<Item = &Arc<FileState>> + Clone + '_ {
        self.files.values().filter_map(|slot| self.loaded(slot))
    }

    /// The committed file at `path` (relative to `topics/`), parsed now if it was not.
    pub fn file(&self, path: &str) -> Option<&Arc<FileState>> {
        self.loaded(self.files.get(&TreePath(path.to_owned()))?)
    }

    /// Whether `path` (relative to `topics/`) is a committed file (parses nothing).
    pub fn contains(&self, path: &str) -> bool {
        self.files.contains_key(&TreePath(path.to_owned()))
    }

    /// The summary of the committed file at `path` (parses nothing).
    pub(crate) fn summary(&self, path: &str) -> Option<&Summary> {
        self.files.get(&TreePath(path.to_owned())).map(|slot| &*slot.summary)
    }

    /// The committed paths, in tree order (parses nothing).
    pub fn paths(&self) -> impl Iterator<Item = &str> + '_ {
        self.files.values().map(|slot| slot.summary.path.as_str())
    }

    /// How many files the tree has.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// The files holding block `id`, in no particular order.
    pub(crate) fn files_of(&self, id: &str) -> &[String] {
        self.id_files.get(id).map_or(&[], Vec::as_slice)
    }

    /// The files whose links point at block `id`.
    pub(crate) fn backlinks(&self, id: &str) -> impl Iterator<Item = &String> + '_ {
        self.backlinks.get(id).into_iter().flatten()
    }

    /// The refs the committed block `block_id` cites; `None` when no committed unit has that ID.
    pub fn refs_of(&self, block_id: &str) -> Option<BTreeSet<String>> {
        let files = self.id_files.get(block_id)?;
        let mut refs: Option<BTreeSet<String>> = None;
        for path in files {
            let Some(cited) = self.summary(path).and_then(|f| f.refs_by_block.get(block_id)) else {
                continue;
            };
            refs.get_or_insert_with(BTreeSet::new).extend(cited.iter().cloned());
        }
        refs
    }

    /// Whether the committed block `block_id` cites `source_ref`.
    pub(crate) fn block_cites(&self, block_id: &str, source_ref: &str) -> bool {
        self.files_of(block_id).iter().any(|path| {
            self.summary(path)
                .and_then(|f| f.refs_by_block.get(block_id))
                .is_some_and(|refs| refs.contains(source_ref))
        })
    }

    /// Whether some committed block cites `source_ref`: such a ref is committed evidence, not
    /// new evidence (the organizer fix: see `docs/format.md#where-we-deliberately-differ`).
    pub fn is_committed_ref(&self, source_ref: &str) -> bool {
        self.refs.contains_key(source_ref)
    }

    /// Every ref some committed block cites.
    pub fn committed_refs(&self) -> impl Iterator<Item = &String> + '_ {
        self.refs.keys()
    }

    /// How many committed (file, block) pairs cite `source_ref`.
    pub(crate) fn ref_count(&self, source_ref: &str) -> u32 {
        self.refs.get(source_ref).copied().unwrap_or(0)
    }

    /// The committed size in bytes of the topic file at `path` (relative to `topics/`).
    pub fn file_bytes(&self, path: &str) -> Option<u64> {
        self.summary(path).map(|f| f.bytes)
    }

    /// The committed size in bytes of the whole topic tree.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Where the committed block `block_id` lives: its file (relative to `topics/`) and the
    /// 1-based line its paragraph starts on (the first file in tree order, if several).
    pub fn home(&self, block_id: &str) -> Option<(&str, u32)> {
        let path = self.files_of(block_id).iter().min_by(|a, b| compare_topic_paths(a, b))?;
        let state = self.summary(path)?;
        Some((state.path.as_str(), state.lines.get(block_id).copied().unwrap_or(1)))
    }

    /// The diagnostics of the committed tree itself (empty for a tree the runtime installed),
    /// in tree order.
    pub fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.files
            .values()
            .filter(|slot| slot.summary.diagnostics)
            .filter_map(|slot| self.loaded(slot))
            .flat_map(|f| f.diagnostics.iter())
            .collect()
    }

    /// Whether the committed tree has any diagnostic.
    pub fn has_diagnostics(&self) -> bool {
        self.files.values().any(|slot| slot.summary.diagnostics)
    }

    /// The committed unit with ID `id` (its first occurrence in tree order).
    pub fn unit(&self, id: &str) -> Option<&Unit> {
        let (path, _) = self.home(id)?;
        self.file(path)?.units.iter().find(|u| u.memory_id == id)
    }

    /// The context [`normalize_with`](scriptorium_topics_format::topic::normalize_with) needs
    /// to normalize the files named by `normalized` alone.
    pub(crate) fn context<'a>(
        &'a self,
        normalized: &'a BTreeSet<String>,
        adopted: &'a BTreeSet<String>,
    ) -> Context<'a> {
        Context { baseline: self, normalized, adopted }
    }
}

fn decrement(map: &mut HashMap<String, u32>, key: &str) {
    if let Some(count) = map.get_mut(key) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            map.remove(key);
        }
    }
}

/// The rest of the tree, as the normalization of some of its files sees it.
pub(crate) struct Context<'a> {
    baseline: &'a Baseline,
    /// The files being normalized (their baseline versions do not count as "elsewhere").
    normalized: &'a BTreeSet<String>,
    /// Block IDs committed by another clone ([`crate::BeginOptions::adopted_block_ids`]).
    adopted: &'a BTreeSet<String>,
}

impl Context<'_> {
    /// Whether some file outside the normalized ones has `id` in `list`'s terms.
    fn elsewhere(
        &self,
        counts: &HashMap<String, u32>,
        id: &str,
        of: impl Fn(&Summary) -> &[String],
    ) -> bool {
        let Some(&count) = counts.get(id) else { return false };
        let inside = self
            .normalized
            .iter()
            .filter_map(|path| self.baseline.summary(path))
            .filter(|f| of(f).binary_search_by(|x| x.as_str().cmp(id)).is_ok())
            .count();
        count as usize > inside
    }
}

impl TreeContext for Context<'_> {
    fn is_committed_block(&self, id: &str) -> bool {
        self.baseline.has_block(id) || self.adopted.contains(id)
    }

    fn committed_unit(&self, id: &str) -> Option<&Unit> {
        self.baseline.unit(id)
    }

    fn evidence_id_elsewhere(&self, id: &str) -> bool {
        self.elsewhere(&self.baseline.evidence, id, |f| &f.evidence_ids)
    }

    fn block_id_elsewhere(&self, id: &str) -> bool {
        self.elsewhere(&self.baseline.line_ends, id, |f| &f.line_end_ids)
    }
}
