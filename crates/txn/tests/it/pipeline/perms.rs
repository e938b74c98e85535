//! Permissions (see `docs/format.md#canonical-derived-and-runtime-files`): files 0600 and
//! directories 0700 after init and after an install; an old 0644/0755 workspace is migrated on
//! open; symlink targets are untouched.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use scriptorium_txn::{BeginOptions, Workspace};

use super::{fixture, replace};

/// Every non-symlink path under `root` with a mode other than 0700 (dirs) / 0600 (files).
fn wrong_modes(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mode = |p: &Path| std::fs::symlink_metadata(p).expect("stat").permissions().mode() & 0o7777;
    if mode(root) != 0o700 {
        out.push(format!("{}: {:o}", root.display(), mode(root)));
    }
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            let kind = entry.file_type().expect("type");
            let want = if kind.is_symlink() {
                continue;
            } else if kind.is_dir() {
                stack.push(path.clone());
                0o700
            } else {
                0o600
            };
            if mode(&path) != want {
                out.push(format!("{}: {:o}", path.display(), mode(&path)));
            }
        }
    }
    out
}

#[test]
fn init_and_install_write_owner_only_modes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("memory");
    let ws = fixture(&root);
    assert_eq!(wrong_modes(&root), Vec::<String>::new());
    replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("install");
    assert_eq!(wrong_modes(&root), Vec::<String>::new());
}

#[test]
fn an_old_workspace_is_migrated_and_symlink_targets_are_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("memory");
    std::fs::create_dir_all(root.join("topics/people")).expect("mkdir");
    std::fs::create_dir_all(root.join("sources")).expect("mkdir");
    std::fs::write(root.join("topics/people/x.md"), "").expect("write");
    std::fs::write(root.join("relations.json"), "{}").expect("write");
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "shared").expect("write");
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::os::unix::fs::symlink(&outside, root.join("link.txt")).expect("symlink");
    for (path, mode) in [
        (root.clone(), 0o755),
        (root.join("topics"), 0o755),
        (root.join("topics/people"), 0o755),
        (root.join("topics/people/x.md"), 0o644),
        (root.join("relations.json"), 0o644),
    ] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    Workspace::open(&root).expect("open");
    assert_eq!(wrong_modes(&root), Vec::<String>::new());
    let target = std::fs::metadata(&outside).expect("stat").permissions().mode() & 0o7777;
    assert_eq!(target, 0o644);
    assert!(std::fs::symlink_metadata(root.join("link.txt")).expect("stat").is_symlink());
}
