//! Finding transcripts under command-line paths and grouping the files that must be parsed
//! together (a Claude Code session with its sidechains).
//!
//! Only regular files are read. A path named on the command line is checked with `lstat`
//! before anything opens it: a FIFO, socket or device is an [`Error::NotRegularFile`] (opening
//! a FIFO would block the import forever), and a symlink is followed only when it resolves to
//! a directory (searched) or a regular file (the user named it; `~/.claude` is often a link).
//! In a directory search, entries that are not regular `*.jsonl` files are skipped, a
//! symlinked file is followed when its target is a regular file, and symlinked directories
//! are not descended. Every open still refuses a non-regular file without blocking (see
//! `crate::files`), so a path swapped for a FIFO after the check cannot hang the import.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::detect::{Detection, detect, read_head};
use super::{Error, Format, Input, Parsed, parse};
use crate::files::{self, Access, Symlinks};

/// One file of a [`Unit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitFile {
    /// The transcript.
    pub path: PathBuf,
    /// Claude Code: a sub-agent transcript (`agent-*.jsonl`, beside the session or under
    /// `<session>/subagents/`).
    pub sidechain: bool,
    /// Claude Code: the sub-agent's `agent-*.meta.json`, when it exists.
    pub meta: Option<PathBuf>,
}

/// Files parsed together into one or more sessions: for Claude Code every file whose first
/// `sessionId` is the same (main transcripts first, then sidechains); for the other formats one
/// file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// The format.
    pub format: Format,
    /// The files, main transcripts first, each group in path order.
    pub files: Vec<UnitFile>,
}

impl Unit {
    /// The first file (named in errors).
    pub fn first_path(&self) -> &Path {
        self.files.first().map_or(Path::new(""), |f| f.path.as_path())
    }

    /// The total size of the unit's transcripts in bytes (for progress bars), 0 if unknown.
    pub fn len_bytes(&self) -> u64 {
        self.files.iter().filter_map(|f| fs::metadata(&f.path).ok()).map(|m| m.len()).sum()
    }

    /// Reads the unit's files and parses them (see [`parse`]).
    pub fn parse(&self) -> Result<Parsed, Error> {
        let mut contents = Vec::with_capacity(self.files.len());
        for file in &self.files {
            let bytes = read(&file.path)?;
            // A missing or unreadable `.meta.json` only loses the agent's description.
            let meta = file.meta.as_ref().and_then(|m| read(m).ok());
            contents.push((bytes, meta));
        }
        let inputs: Vec<Input<'_>> = self
            .files
            .iter()
            .zip(&contents)
            .map(|(file, (bytes, meta))| Input {
                path: &file.path,
                bytes,
                sidechain: file.sidechain,
                meta: meta.as_deref(),
            })
            .collect();
        parse(self.format, &inputs)
    }
}

/// Opens a transcript for reading, following a symlink to a regular file, refusing anything
/// else without blocking.
fn open(path: &Path) -> Result<fs::File, Error> {
    match files::open(path, Access::Read, Symlinks::Follow) {
        Ok(Some(file)) => Ok(file),
        Ok(None) => Err(Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        }),
        Err(err) => Err(file_error(err, path)),
    }
}

/// An error of `crate::files` as an import error about `path`.
fn file_error(err: crate::Error, path: &Path) -> Error {
    match err {
        crate::Error::NotRegularFile { path, kind } => Error::NotRegularFile { path, kind },
        crate::Error::Io { path, source } => Error::Io { path, source },
        other => Error::Io { path: path.to_path_buf(), source: std::io::Error::other(other) },
    }
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    open(path)?
        .read_to_end(&mut bytes)
        .map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    Ok(bytes)
}

/// Finds the transcripts under `paths` (files are taken as given; directories are searched
/// recursively for `*.jsonl`, symlinked directories are not followed) and groups them into
/// [`Unit`]s of `format`. Claude Code files are grouped by their first `sessionId` (see the
/// module docs), so sidechains join their session whether they sit beside it
/// (`agent-*.jsonl`) or under `<session>/subagents/`.
///
/// Each file's first lines are checked with [`detect`]: a file that looks like another format
/// is [`Error::WrongFormat`] and is not imported (parsing it as `format` would skip every
/// record and report success with nothing imported). A file of no recognisable shape is
/// taken as `format`, as asked.
///
/// A path that does not exist or cannot be listed, and a path that is not a regular file or
/// a directory (a FIFO, socket or device, or a symlink to one: [`Error::NotRegularFile`]), is
/// returned in the error list without being opened; the other paths are still discovered.
pub fn discover(format: Format, paths: &[PathBuf]) -> (Vec<Unit>, Vec<Error>) {
    let (found, mut errors) = find(paths);
    let mut files = Vec::with_capacity(found.len());
    for path in found {
        match detect_file(&path) {
            Ok(Detection::Format(other)) if other != format => {
                errors.push(Error::WrongFormat { path, expected: format, found: other });
            }
            Ok(_) => files.push(path),
            Err(err) => errors.push(err),
        }
    }
    let units = group(format, files, &mut errors);
    (units, errors)
}

/// What [`discover_auto`] found.
#[derive(Debug, Default)]
pub struct AutoDiscovery {
    /// The units, in path order, each of the format its files were detected as.
    pub units: Vec<Unit>,
    /// Files without a non-blank line: nothing to import, in any format.
    pub empty: Vec<PathBuf>,
    /// Paths that could not be read or listed, paths that are not regular files, and files of
    /// no recognised format ([`Error::Unrecognised`]).
    pub errors: Vec<Error>,
}

/// Finds the transcripts under `paths` as [`discover`] does and detects each file's format from
/// its first lines ([`detect`]); files of one format are grouped as [`discover`] groups them.
pub fn discover_auto(paths: &[PathBuf]) -> AutoDiscovery {
    let (found, mut errors) = find(paths);
    let mut by_format: Vec<Vec<PathBuf>> = vec![Vec::new(); Format::ALL.len()];
    let mut empty = Vec::new();
    for path in found {
        match detect_file(&path) {
            Ok(Detection::Format(format)) => {
                if let Some(i) = Format::ALL.iter().position(|&f| f == format) {
                    by_format[i].push(path);
                }
            }
            Ok(Detection::Empty) => empty.push(path),
            Ok(Detection::Unrecognised) => errors.push(Error::Unrecognised { path }),
            Err(err) => errors.push(err),
        }
    }
    let mut units = Vec::new();
    for (format, files) in Format::ALL.into_iter().zip(by_format) {
        units.extend(group(format, files, &mut errors));
    }
    units.sort_by(|a, b| a.first_path().cmp(b.first_path()));
    AutoDiscovery { units, empty, errors }
}

/// The format `path`'s first lines look like.
fn detect_file(path: &Path) -> Result<Detection, Error> {
    let head =
        read_head(open(path)?).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    Ok(detect(&head))
}

/// The regular files named by or found under `paths`, sorted, with the paths that failed.
fn find(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Error>) {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        // `lstat` first: a symlink is judged by what it resolves to, anything else as it is.
        let meta = fs::symlink_metadata(path)
            .and_then(|m| if m.file_type().is_symlink() { fs::metadata(path) } else { Ok(m) });
        match meta {
            Ok(m) if m.is_dir() => walk(path, &mut found, &mut errors),
            Ok(m) if m.is_file() => found.push(path.clone()),
            Ok(m) => {
                errors.push(Error::NotRegularFile { path: path.clone(), kind: files::kind(&m) });
            }
            Err(source) => errors.push(Error::Io { path: path.clone(), source }),
        }
    }
    found.sort();
    found.dedup();
    (found, errors)
}

/// Groups `files` (sorted) of `format` into units: one per file, or for Claude Code one per
/// session key, mains before sidechains, each in path order.
fn group(format: Format, files: Vec<PathBuf>, errors: &mut Vec<Error>) -> Vec<Unit> {
    if format != Format::ClaudeCode {
        return files
            .into_iter()
            .map(|path| Unit {
                format,
                files: vec![UnitFile { path, sidechain: false, meta: None }],
            })
            .collect();
    }
    let mut groups: BTreeMap<String, (Vec<UnitFile>, Vec<UnitFile>)> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for path in files {
        let sidechain = is_sidechain_path(&path);
        let key = match session_key(&path) {
            Ok(Some(key)) => key,
            Ok(None) => {
                // No record names a session: the file is its own unit.
                format!("\u{0}{}", path.display())
            }
            Err(err) => {
                errors.push(err);
                continue;
            }
        };
        let meta = sidechain.then(|| path.with_extension("meta.json")).filter(|m| m.is_file());
        let group = groups.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            (Vec::new(), Vec::new())
        });
        let file = UnitFile { path, sidechain, meta };
        if sidechain { group.1.push(file) } else { group.0.push(file) }
    }
    order
        .into_iter()
        .filter_map(|key| groups.remove(&key))
        .map(|(mut mains, sidechains)| {
            mains.extend(sidechains);
            Unit { format, files: mains }
        })
        .collect()
}

/// Whether a Claude Code file is a sub-agent transcript: `agent-*.jsonl`, or anything under a
/// `subagents` directory.
fn is_sidechain_path(path: &Path) -> bool {
    let agent = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("agent-"));
    agent || path.components().any(|c| c.as_os_str() == "subagents")
}

/// The first `sessionId` of a Claude Code file, reading only up to the first line that has one.
fn session_key(path: &Path) -> Result<Option<String>, Error> {
    #[derive(serde::Deserialize)]
    struct Peek {
        #[serde(rename = "sessionId", default)]
        session_id: Option<String>,
    }
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let mut reader = BufReader::new(open(path)?);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io)? == 0 {
            return Ok(None);
        }
        if let Ok(Peek { session_id: Some(id) }) = serde_json::from_slice::<Peek>(&line) {
            return Ok(Some(id));
        }
    }
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<Error>) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(source) => {
            errors.push(Error::Io { path: dir.to_path_buf(), source });
            return;
        }
    };
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(source) => {
                errors.push(Error::Io { path: dir.to_path_buf(), source });
                continue;
            }
        };
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, files, errors),
            Ok(_) if path.extension().is_some_and(|e| e == "jsonl") && path.is_file() => {
                files.push(path);
            }
            Ok(_) => {}
            Err(source) => errors.push(Error::Io { path, source }),
        }
    }
}
