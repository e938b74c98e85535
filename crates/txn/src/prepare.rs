//! Validation of a stage ([`Staged::validate`]): which files the transaction changed, their
//! normalization and checks against the baseline (only theirs: every other file is the
//! committed one, unchanged), the link rewrite, and what the install needs ([`Prepared`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use scriptorium_topics_format::topic::{
    CITE_HINT, EvidenceAssignment, excerpt, normalize_with, rewrite_links_in,
};
use scriptorium_topics_format::{BlockId, Code, TopicFile};

use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::fs::FileKind;
use crate::install::Validated;
use crate::stage::{Rejected, Staged, parent};
use crate::state::{RuntimeState, scan_sources, sha256_hex, walk};
use crate::validate::{FileState, Rules, Violation, validate_changes};

/// What validation computed for the install.
pub(crate) struct Prepared {
    /// The changed files as installed (created or modified), in tree order.
    pub(crate) changed: Vec<Arc<FileState>>,
    /// The files deleted (paths relative to `topics/`).
    pub(crate) removed: Vec<String>,
    /// Files edited outside any transaction that this install records (relative to `topics/`).
    pub(crate) adopted: Vec<String>,
    /// The new `runtime.json` and its parse, when it differs.
    pub(crate) runtime: Option<(String, Arc<RuntimeState>)>,
    /// `topics/…` paths whose bytes change, sorted.
    pub(crate) changed_files: Vec<String>,
    pub(crate) block_ids: BTreeMap<String, BlockId>,
    pub(crate) evidence_ids: Vec<EvidenceAssignment>,
    pub(crate) covered: BTreeSet<String>,
}

impl Staged {
    /// Checks the stage and prepares the install: which files changed (the ones written or
    /// removed through the stage, every file when the directory was handed out, and files
    /// edited outside any transaction since the last install), the IO checks (only regular
    /// `*.md` files under `topics/`, `sources/` unchanged since `begin`), normalization of the
    /// changed files with the rest of the tree as context, [`validate_changes`],
    /// creation-order seeding and the link rewrite. Every violation is collected; on rejection
    /// the untouched stage is handed back in [`Rejected`]. On success the normalized files are
    /// written into the stage (nothing outside it is written).
    pub fn validate(mut self) -> std::result::Result<Validated, Rejected> {
        match self.prepare() {
            Ok(Ok(prepared)) => Ok(Validated {
                stage: self.stage,
                begin: self.begin,
                opts: self.opts,
                prepared,
                baseline: self.baseline,
            }),
            Ok(Err(violations)) => Err(Rejected { staged: Box::new(self), violations }),
            Err(error) => {
                let violations = vec![Violation::tree(error.code(), error.to_string())];
                Err(Rejected { staged: Box::new(self), violations })
            }
        }
    }

    /// The paths (relative to `topics/`) whose staged state may differ from the baseline.
    pub(crate) fn dirty_paths(&self, violations: &mut Vec<Violation>) -> Result<BTreeSet<String>> {
        let fs = self.stage.ws.fs();
        let begin = &self.begin;
        let mut dirty = self.dirty.clone();
        // Outside edits since the last install are checked like the transaction's own.
        dirty.extend(
            begin.live.outside.iter().filter(|p| begin.live.files.contains_key(*p)).cloned(),
        );
        if !self.opaque.get() {
            return Ok(dirty);
        }
        let foreign: std::collections::HashSet<&std::path::Path> =
            begin.live.foreign.iter().map(|f| f.raw.as_path()).collect();
        let mut present: BTreeSet<String> = BTreeSet::new();
        for entry in walk(fs, &self.stage.topics)? {
            let shown = format!("topics/{}", entry.rel);
            match entry.kind {
                // Carried over from the live tree: not memory.
                FileKind::File | FileKind::Dir
                    if !entry.utf8 && foreign.contains(entry.raw.as_path()) => {}
                _ if !entry.utf8 => violations.push(Violation::at(
                    ErrorCode::PathOutsideWorkspace,
                    shown.clone(),
                    0,
                    0,
                    format!("path is not valid UTF-8: {shown}"),
                )),
                FileKind::Dir => {}
                FileKind::File if entry.rel.ends_with(".md") => {
                    let path = self.stage.topics.join(&entry.rel);
                    let bytes = fs.read(&path).map_err(Error::io("read", &path))?;
                    let same = begin
                        .live
                        .files
                        .get(&entry.rel)
                        .is_some_and(|f| f.hash == sha256_hex(&bytes));
                    if !same {
                        dirty.insert(entry.rel.clone());
                    }
                    present.insert(entry.rel);
                }
                FileKind::File => {
                    if !begin.live.files.contains_key(&entry.rel) {
                        violations.push(Violation::at(
                            ErrorCode::ReadOnlyPath,
                            shown.clone(),
                            0,
                            0,
                            format!("only topics/**/*.md is writable: {shown}"),
                        ));
                    }
                }
                FileKind::Symlink | FileKind::Other => violations.push(Violation::at(
                    ErrorCode::PathOutsideWorkspace,
                    shown.clone(),
                    0,
                    0,
                    format!("path escapes the workspace (not a regular file): {shown}"),
                )),
            }
        }
        for rel in begin.live.files.keys().filter(|rel| rel.ends_with(".md")) {
            if !present.contains(rel) {
                dirty.insert(rel.clone());
            }
        }
        Ok(dirty)
    }

    fn prepare(&mut self) -> Result<std::result::Result<Prepared, Vec<Violation>>> {
        let ws = self.stage.ws.clone();
        let fs = ws.fs();
        let layout = ws.layout();
        let begin = Arc::clone(&self.begin);
        let baseline = Arc::clone(&self.baseline);
        let mut violations = Vec::new();

        // What the live tree holds that no transaction can keep.
        for (rel, kind) in &begin.live.irregular {
            let shown = format!("topics/{rel}");
            violations.push(Violation::at(
                ErrorCode::PathOutsideWorkspace,
                shown.clone(),
                0,
                0,
                format!("the live tree holds a {kind:?} that a transaction cannot keep: {shown}"),
            ));
        }
        for rel in begin.live.files.keys().filter(|rel| !rel.ends_with(".md")) {
            let shown = format!("topics/{rel}");
            violations.push(Violation::at(
                ErrorCode::ReadOnlyPath,
                shown.clone(),
                0,
                0,
                format!("only topics/**/*.md is writable: {shown}"),
            ));
        }

        // The changed files, as staged.
        let dirty = self.dirty_paths(&mut violations)?;
        if !dirty.is_empty() {
            // Files edited outside any transaction are read from the stage like the
            // transaction's own: the stage must hold the tree (writes filled it already).
            self.materialize()?;
        }
        let mut staged_files: Vec<TopicFile> = Vec::new();
        let mut removed: Vec<String> = Vec::new();
        for rel in &dirty {
            let shown = format!("topics/{rel}");
            let path = self.stage.topics.join(rel);
            let meta = match fs.metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if baseline.contains(rel) {
                        removed.push(rel.clone());
                    }
                    continue;
                }
                Err(e) => return Err(Error::io("stat", &path)(e)),
            };
            if meta.kind != FileKind::File {
                violations.push(Violation::at(
                    ErrorCode::PathOutsideWorkspace,
                    shown.clone(),
                    0,
                    0,
                    format!("path escapes the workspace (not a regular file): {shown}"),
                ));
                continue;
            }
            let bytes = fs.read(&path).map_err(Error::io("read", &path))?;
            match String::from_utf8(bytes) {
                Ok(text) => {
                    if let Some(at) = text.find('\0') {
                        let line = text[..at].matches('\n').count() + 1;
                        violations.push(Violation {
                            diagnostic: Some(Code::NulByte),
                            ..Violation::at(
                                ErrorCode::InvalidTopicFormat,
                                shown.clone(),
                                u32::try_from(line).unwrap_or(u32::MAX),
                                1,
                                format!("topic file contains a NUL byte: {shown}"),
                            )
                        });
                    }
                    staged_files.push(TopicFile::new(rel.clone(), text));
                }
                Err(_) => violations.push(Violation::at(
                    ErrorCode::InvalidTopicFormat,
                    shown.clone(),
                    1,
                    1,
                    format!("topic file is not valid UTF-8: {shown}"),
                )),
            }
        }
        let trust = crate::live::StatTrust::record_only(fs, &layout.revision);
        if scan_sources(
            fs,
            &layout.sources,
            &begin.sources.files,
            Some(&begin.sources.content),
            trust,
        )?
        .content
            != begin.sources.content
        {
            violations.push(Violation::tree(
                ErrorCode::SourcesChanged,
                "Source Memory is append-only: sources/ changed during the transaction",
            ));
        }

        // Normalize the changed files, the rest of the tree as context.
        let normalized = normalize_with(
            &staged_files,
            &baseline.context(&dirty, &self.opts.adopted_block_ids),
            &begin.resolver,
        );
        // Normalization's last step prunes sections that hold no record; written text there
        // would vanish while the change reports success. Refuse it instead.
        for dropped in normalized.dropped.iter().filter(|_| !self.opts.forget) {
            violations.push(Violation {
                diagnostic: Some(Code::UncitedParagraph),
                ..Violation::at(
                    ErrorCode::UncitedParagraph,
                    format!("topics/{}", dropped.path),
                    dropped.line,
                    1,
                    format!(
                        "text cites no source and would be dropped: {}; {CITE_HINT}",
                        excerpt(&dropped.text)
                    ),
                )
            });
        }
        for path in &normalized.deleted {
            if baseline.contains(path) {
                removed.push(path.clone());
            }
        }
        removed.sort();
        removed.dedup();
        let rules = Rules {
            required: self.opts.required.clone(),
            allowed_new_sources: self.opts.allowed_new_sources.as_ref(),
            limits: self.opts.limits,
        };
        let validation =
            validate_changes(&baseline, &normalized.files, &removed, &begin.resolver, &rules);
        violations.extend(validation.violations);
        for error in begin.resolver.files().take_errors() {
            violations.push(Violation::tree(ErrorCode::Io, error));
        }
        // A committed file parsed on demand that could not be read as `begin` saw it: what
        // validation said of it is not to be trusted.
        for error in baseline.take_load_errors() {
            violations.push(Violation::tree(ErrorCode::Io, error));
        }
        if !violations.is_empty() {
            return Ok(Err(violations));
        }

        // Rewrite links (and definitions) of the changed files and of every unchanged file
        // linking to a block whose file changed.
        let mut files: BTreeMap<String, FileState> =
            validation.files.into_iter().map(|f| (f.path().to_owned(), f)).collect();
        let homes: HashMap<String, String> = files
            .values()
            .flat_map(|f| f.units.iter().map(|u| (u.memory_id.clone(), f.path().to_owned())))
            .collect();
        let dirty_or_removed: BTreeSet<&str> =
            files.keys().map(String::as_str).chain(removed.iter().map(String::as_str)).collect();
        let mut linking: BTreeSet<String> = BTreeSet::new();
        for (id, path) in &homes {
            if baseline.home(id).is_some_and(|(home, _)| home == path) {
                continue;
            }
            linking.extend(
                baseline.backlinks(id).filter(|p| !dirty_or_removed.contains(p.as_str())).cloned(),
            );
        }
        let home = |id: &str| -> Option<String> {
            if let Some(path) = homes.get(id) {
                return Some(path.clone());
            }
            let (path, _) = baseline.home(id)?;
            (!dirty_or_removed.contains(path)).then(|| path.to_owned())
        };
        let mut texts: Vec<TopicFile> = files.values().map(|f| f.file.clone()).collect();
        let mut units: Vec<scriptorium_topics_format::Unit> =
            files.values().flat_map(|f| f.units.iter().cloned()).collect();
        for path in &linking {
            if let Some(state) = baseline.file(path) {
                texts.push(state.file.clone());
                units.extend(state.units.iter().cloned());
            }
        }
        for file in rewrite_links_in(&texts, &units, &home, &begin.resolver) {
            let state = FileState::parse(file, &begin.resolver);
            if !state.diagnostics.is_empty() {
                return Ok(Err(state
                    .diagnostics
                    .iter()
                    .cloned()
                    .map(Violation::from_diagnostic)
                    .collect()));
            }
            files.insert(state.path().to_owned(), state);
        }

        // Write the normalized tree into the stage.
        let on_stage: HashMap<&str, &str> =
            staged_files.iter().map(|f| (f.path.as_str(), f.text.as_str())).collect();
        for (rel, state) in &files {
            if on_stage.get(rel.as_str()) != Some(&state.file.text.as_str()) {
                let path = self.stage.topics.join(rel);
                fs.write(&path, state.file.text.as_bytes(), 0o600)
                    .map_err(Error::io("write", &path))?;
                self.stage.wrote(rel);
            }
        }
        for rel in &normalized.deleted {
            let path = self.stage.topics.join(rel);
            match fs.remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("unlink", &path)(e)),
            }
            self.stage.dirs_changed.insert(parent(rel).to_owned());
        }
        self.prune_empty_dirs()?;

        // What changed against the baseline.
        let changed: Vec<Arc<FileState>> = files
            .into_values()
            .filter(|state| baseline.summary(state.path()).is_none_or(|old| old.hash != state.hash))
            .map(Arc::new)
            .collect();
        let mut changed_files: BTreeSet<String> =
            changed.iter().map(|f| format!("topics/{}", f.path())).collect();
        changed_files.extend(removed.iter().map(|rel| format!("topics/{rel}")));
        let adopted: Vec<String> = begin
            .live
            .outside
            .iter()
            .filter(|rel| rel.ends_with(".md") || baseline.contains(rel))
            .cloned()
            .collect();

        // Creation order (see `docs/format.md#creation-order`).
        // The state is cloned (cheaply, see `CreationOrder`) only when something moves.
        let current = &begin.runtime.state;
        // The units this install brings in: the changed files', and those of files edited
        // outside any transaction that it adopts (their new IDs are numbered now too).
        let new_units = || {
            let outside = adopted.iter().filter_map(|rel| baseline.file(rel));
            changed.iter().chain(outside).flat_map(|f| f.units.iter())
        };
        let seeding = current.lacks(baseline.units(), new_units());
        let counting = self.counters.as_ref().filter(|counters| current.counters() != **counters);
        let runtime = if seeding || counting.is_some() {
            let mut state = RuntimeState::clone(current);
            state.seed(baseline.units(), new_units());
            if let Some(counters) = counting {
                state.set_counters(counters);
            }
            let text = state.render();
            (begin.runtime.bytes.as_deref() != Some(text.as_bytes()))
                .then(|| (text, Arc::new(state)))
        } else {
            None
        };

        // Covered refs: cited by the installed tree, with this transaction's evidence.
        let before_counts = |source_ref: &str| -> u32 {
            changed
                .iter()
                .map(|f| f.path())
                .chain(removed.iter().map(String::as_str))
                .filter_map(|path| baseline.file(path))
                .flat_map(|state| state.units.iter())
                .filter(|u| u.refs.iter().any(|r| r == source_ref))
                .count() as u32
        };
        let new_refs: BTreeSet<&String> =
            changed.iter().flat_map(|f| f.units.iter().flat_map(|u| u.refs.iter())).collect();
        let covered: BTreeSet<String> = match &self.opts.allowed_new_sources {
            Some(allowed) => allowed
                .iter()
                .filter(|r| {
                    new_refs.contains(r)
                        || baseline.ref_count(r).saturating_sub(before_counts(r)) > 0
                })
                .cloned()
                .collect(),
            None => {
                new_refs.into_iter().filter(|r| !baseline.is_committed_ref(r)).cloned().collect()
            }
        };

        if let Some(error) = baseline.take_load_errors().into_iter().next() {
            return Err(Error::Io {
                op: "read baseline",
                path: self.stage.ws.layout().topics.clone(),
                source: std::io::Error::other(error),
            });
        }
        Ok(Ok(Prepared {
            changed,
            removed,
            adopted,
            runtime,
            changed_files: changed_files.into_iter().collect(),
            block_ids: normalized.block_ids,
            evidence_ids: normalized.evidence_ids,
            covered,
        }))
    }

    /// Removes the directories of the stage that are left empty (deepest first): a
    /// transaction that drops the last file of a directory does not install the empty
    /// directory, and empty directories made outside a transaction go with the next install.
    /// Only the directories whose entries this transaction changed, and those the live tree
    /// held empty, are looked at (every directory when the stage was handed out).
    fn prune_empty_dirs(&mut self) -> Result<()> {
        let ws = self.stage.ws.clone();
        let fs = ws.fs();
        let live = &self.begin.live;
        let mut occupied: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let entries = live
            .files
            .keys()
            .map(String::as_str)
            .chain(live.foreign.iter().map(|f| f.rel.as_str()))
            .chain(live.irregular.iter().map(|(rel, _)| rel.as_str()));
        for rel in entries {
            let mut dir = parent(rel);
            while !dir.is_empty() && occupied.insert(dir) {
                dir = parent(dir);
            }
        }
        let mut queue: std::collections::BinaryHeap<(usize, String)> = self
            .stage
            .dirs_changed
            .iter()
            .cloned()
            .chain(
                live.dirs
                    .iter()
                    .filter(|d| self.opaque.get() || !occupied.contains(d.as_str()))
                    .cloned(),
            )
            .filter(|d| !d.is_empty())
            .map(|d| (d.matches('/').count(), d))
            .collect();
        if queue.is_empty() {
            return Ok(());
        }
        // Empty directories of the live tree are pruned in the stage: it must exist for that.
        self.materialize()?;
        let mut done: BTreeSet<String> = BTreeSet::new();
        while let Some((_, rel)) = queue.pop() {
            if !done.insert(rel.clone()) {
                continue;
            }
            let path = self.stage.topics.join(&rel);
            if is_empty_dir(fs, &path) {
                fs.remove_tree(&path).map_err(Error::io("rmdir", &path))?;
                let up = parent(&rel).to_owned();
                self.stage.dirs_changed.insert(up.clone());
                if !up.is_empty() {
                    queue.push((up.matches('/').count(), up));
                }
            }
        }
        Ok(())
    }
}

/// Whether `path` is a directory with no entry.
fn is_empty_dir(fs: &dyn crate::fs::Fs, path: &std::path::Path) -> bool {
    fs.metadata(path).is_ok_and(|m| m.kind == FileKind::Dir)
        && fs.read_dir(path).is_ok_and(|entries| entries.is_empty())
}
