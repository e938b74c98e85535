//! Which workspace paths belong in history, and how caller-supplied paths are checked.
//!
//! The classification is the workspace's one rule (`scriptorium_workspace_fs::is_internal_path`,
//! `docs/format.md#internal-paths`): runtime names and `.git` at the top level are internal and
//! never committed. In addition, a component that git itself refuses
//! in a tree (`.git` in any letter case, also with trailing dots or spaces, and its NTFS short name
//! `git~1`) is skipped at every depth, because gix validates tree entries the way git does and one
//! such name would otherwise fail the whole commit.

use crate::Error;

pub(crate) use scriptorium_workspace_fs::layout::is_internal_bytes;
pub use scriptorium_workspace_fs::layout::{is_internal_path, is_runtime_name};

/// Whether git would refuse `name` as a tree entry because it spells `.git` (see module docs).
pub(crate) fn is_git_reserved_name(name: &[u8]) -> bool {
    let trimmed = {
        let mut end = name.len();
        while end > 0 && matches!(name[end - 1], b'.' | b' ') {
            end -= 1;
        }
        &name[..end]
    };
    trimmed.eq_ignore_ascii_case(b".git") || name.eq_ignore_ascii_case(b"git~1")
}

/// Check a caller-supplied changed path and return it without a trailing `/`.
///
/// Refused: empty, absolute, a `.`/`..`/empty component, a backslash or NUL byte.
pub(crate) fn check_changed_path(path: &str) -> Result<&str, Error> {
    let refuse = |reason| Err(Error::InvalidPath { path: path.to_owned(), reason });
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    if trimmed.is_empty() {
        return refuse("empty path (use `changed: None` for a full scan)");
    }
    if trimmed.starts_with('/') {
        return refuse("absolute path");
    }
    if trimmed.contains(['\\', '\0']) {
        return refuse("backslash or NUL in path");
    }
    if trimmed.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return refuse("empty, `.` or `..` component");
    }
    Ok(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_paths_follow_the_reference() {
        for internal in [
            ".scriptorium",
            ".scriptorium/txn/x",
            ".scriptorium-bm25.json",
            ".scriptorium-block-backup/topics/a.md",
            ".nativemem",
            ".nativemem-x/y",
            ".git",
            ".git/HEAD",
        ] {
            assert!(is_internal_path(internal), "{internal}");
        }
        for canonical in
            ["topics/a.md", "core.md", ".scriptoriumx", "sources/.scriptorium/a", ".gitignore"]
        {
            assert!(!is_internal_path(canonical), "{canonical}");
        }
    }

    #[test]
    fn git_reserved_names() {
        for name in [".git", ".GIT", ".Git.", ".git ", "git~1", "GIT~1"] {
            assert!(is_git_reserved_name(name.as_bytes()), "{name}");
        }
        for name in [".gitignore", "git", ".gitx", "a.git"] {
            assert!(!is_git_reserved_name(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn changed_paths_are_checked() {
        assert_eq!(check_changed_path("topics/a.md").ok(), Some("topics/a.md"));
        assert_eq!(check_changed_path("timeline/").ok(), Some("timeline"));
        for bad in ["", "/", "/etc/passwd", "a/../b", "./a", "a//b", "..", "a\\b", "a\0b"] {
            assert!(check_changed_path(bad).is_err(), "{bad:?}");
        }
    }
}
