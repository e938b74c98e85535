//! The one tree walk.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{Error, FileKind, Fs, Meta};

/// One entry found by [`walk()`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `/`-separated path relative to the walked directory (lossy when a name is not UTF-8).
    pub rel: String,
    /// The exact relative path (differs from `rel` only when a name is not UTF-8).
    pub raw: PathBuf,
    /// What the entry itself is (a symlink is reported as one, never resolved).
    pub kind: FileKind,
    /// Whether every component of the name is valid UTF-8 (else `rel` is lossy).
    pub utf8: bool,
}

/// Every entry under `base` (directories included, symlinks reported and not followed),
/// sorted by `rel`. A missing `base` yields nothing.
///
/// # Errors
/// A directory that cannot be listed (other than a missing `base`).
pub fn walk(fs: &dyn Fs, base: &Path) -> Result<Vec<Entry>, Error> {
    walk_where(fs, base, &|_, _| true)
}

/// [`walk()`] of the entries `keep` accepts (given `rel` and the kind); a directory it refuses
/// is not descended into.
///
/// # Errors
/// See [`walk()`].
pub fn walk_where(
    fs: &dyn Fs,
    base: &Path,
    keep: &dyn Fn(&str, FileKind) -> bool,
) -> Result<Vec<Entry>, Error> {
    let list = |dir: &Path| -> Listing<()> {
        Ok(fs.read_dir(dir)?.into_iter().map(|(name, kind)| (name, kind, ())).collect())
    };
    Ok(walk_listing(base, keep, &list)?.into_iter().map(|(entry, ())| entry).collect())
}

/// [`walk()`] with the [`Fs::metadata`] of every entry, taken while listing each directory
/// ([`Fs::read_dir_meta`]): what a scan that stats every file needs, at the cost of one
/// relative `lstat` per entry instead of a walk of its whole path.
///
/// # Errors
/// See [`walk()`]; also an entry whose `lstat` fails.
pub fn walk_meta(fs: &dyn Fs, base: &Path) -> Result<Vec<(Entry, Meta)>, Error> {
    let list = |dir: &Path| -> Listing<Meta> {
        Ok(fs.read_dir_meta(dir)?.into_iter().map(|(name, meta)| (name, meta.kind, meta)).collect())
    };
    walk_listing(base, &|_, _| true, &list)
}

/// A directory's listing: each entry's name, kind and what else the walk carries.
type Listing<T> = std::io::Result<Vec<(OsString, FileKind, T)>>;

/// The walk itself, over a directory listing that yields each entry's name, kind and `T`.
fn walk_listing<T>(
    base: &Path,
    keep: &dyn Fn(&str, FileKind) -> bool,
    list: &dyn Fn(&Path) -> Listing<T>,
) -> Result<Vec<(Entry, T)>, Error> {
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, String, PathBuf, bool)> =
        vec![(base.to_path_buf(), String::new(), PathBuf::new(), true)];
    while let Some((dir, prefix, raw_prefix, utf8)) = stack.pop() {
        let entries = match list(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && prefix.is_empty() => {
                return Ok(Vec::new());
            }
            Err(e) => return Err(Error::at("read_dir", &dir)(e)),
        };
        for (name, kind, extra) in entries {
            let (text, ok) = match name.to_str() {
                Some(s) => (s.to_owned(), utf8),
                None => (name.to_string_lossy().into_owned(), false),
            };
            let rel = if prefix.is_empty() { text } else { format!("{prefix}/{text}") };
            if !keep(&rel, kind) {
                continue;
            }
            let raw = raw_prefix.join(&name);
            if kind == FileKind::Dir {
                stack.push((dir.join(&name), rel.clone(), raw.clone(), ok));
            }
            out.push((Entry { rel, raw, kind, utf8: ok }, extra));
        }
    }
    out.sort_by(|a, b| a.0.rel.cmp(&b.0.rel));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RealFs;

    #[test]
    fn walks_sorted_and_reports_symlinks_without_following_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fs = RealFs;
        let base = dir.path().join("topics");
        fs.create_dir(&base, 0o700).expect("mkdir");
        fs.create_dir(&base.join("b"), 0o700).expect("mkdir");
        fs.write(&base.join("b/z.md"), b"z", 0o600).expect("write");
        fs.write(&base.join("a.md"), b"a", 0o600).expect("write");
        let outside = dir.path().join("outside");
        fs.create_dir(&outside, 0o700).expect("mkdir");
        fs.write(&outside.join("secret.md"), b"s", 0o600).expect("write");
        std::os::unix::fs::symlink(&outside, base.join("link")).expect("symlink");
        let found: Vec<(String, FileKind)> =
            walk(&fs, &base).expect("walks").into_iter().map(|e| (e.rel, e.kind)).collect();
        assert_eq!(
            found,
            [
                ("a.md".to_owned(), FileKind::File),
                ("b".to_owned(), FileKind::Dir),
                ("b/z.md".to_owned(), FileKind::File),
                ("link".to_owned(), FileKind::Symlink),
            ]
        );
        assert!(walk(&fs, &dir.path().join("missing")).expect("nothing").is_empty());
        // With the metadata of each entry: the same entries, each with its own `lstat` (the
        // link's, not its target's), whether asked relative to the directory (the real
        // filesystem) or by whole path (the trait's default, as a `FaultFs` counts it).
        let counted = crate::FaultFs::counting(std::sync::Arc::new(RealFs));
        for fs in [&fs as &dyn Fs, &counted] {
            let with_meta = walk_meta(fs, &base).expect("walks");
            let entries: Vec<(String, FileKind)> =
                with_meta.iter().map(|(e, _)| (e.rel.clone(), e.kind)).collect();
            assert_eq!(entries, found);
            for (entry, meta) in &with_meta {
                assert_eq!(*meta, RealFs.metadata(&base.join(&entry.raw)).expect("lstat"));
            }
            assert!(walk_meta(fs, &dir.path().join("missing")).expect("nothing").is_empty());
        }
        assert_eq!(counted.calls(), 2 + 4 + 1, "two listings, four stats, the missing base");
    }
}
