//! The one tree walk.

use std::path::{Path, PathBuf};

use crate::{Error, FileKind, Fs};

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
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, String, PathBuf, bool)> =
        vec![(base.to_path_buf(), String::new(), PathBuf::new(), true)];
    while let Some((dir, prefix, raw_prefix, utf8)) = stack.pop() {
        let entries = match fs.read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && prefix.is_empty() => {
                return Ok(Vec::new());
            }
            Err(e) => return Err(Error::at("read_dir", &dir)(e)),
        };
        for (name, kind) in entries {
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
            out.push(Entry { rel, raw, kind, utf8: ok });
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
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
    }
}
