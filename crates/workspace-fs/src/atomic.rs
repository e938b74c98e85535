//! The one temporary-then-rename write.

use std::path::Path;

use crate::{Error, Fs};

/// How durable a [`write_atomic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// The file and its directory are fsynced: the new bytes survive a power loss once the
    /// call returns. For the engine's own state.
    Durable,
    /// The file is fsynced, its directory is not: a crash leaves the old or the new bytes, a
    /// power loss may bring the old file back. For derived caches that are checked when read
    /// (the search index's manifest), where the directory fsync would only add latency.
    Cache,
    /// Nothing is fsynced: a crash of the process leaves the old or the new bytes (the page
    /// cache outlives it); after a power loss the file may hold either, or be empty. For
    /// derived state that is checked after a reboot (the search index, see its crate docs).
    Unsynced,
}

/// Replaces `target` with `bytes` atomically: `temp` (a fresh name the caller chose, in a
/// directory that is cleaned of leftovers) is written with `mode`, fsynced and renamed over
/// `target`, then (when [`Durability::Durable`]) `target`'s directory is fsynced. A crash
/// leaves the old or the new bytes, and at worst `temp`; a failure removes `temp` (best
/// effort).
///
/// # Errors
/// The first failing call.
pub fn write_atomic(
    fs: &dyn Fs,
    temp: &Path,
    target: &Path,
    bytes: &[u8],
    mode: u32,
    durability: Durability,
) -> Result<(), Error> {
    let result = (|| {
        fs.write(temp, bytes, mode).map_err(Error::at("write", temp))?;
        if durability != Durability::Unsynced {
            fs.sync_file(temp).map_err(Error::at("fsync", temp))?;
        }
        fs.rename(temp, target).map_err(Error::at("rename", temp))
    })();
    if let Err(error) = result {
        let _ = fs.remove_file(temp);
        return Err(error);
    }
    if durability != Durability::Durable {
        return Ok(());
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    fs.sync_dir(dir).map_err(Error::at("fsync dir", dir))
}

/// [`write_atomic`] for a file that only its writer reads (under a lock of its own), keeping
/// both inodes: `spare` (the file the last call left, or a new one) is written, fsynced as
/// `durability` says, then exchanged with `target` (`renameat2(RENAME_EXCHANGE)`), so that
/// `spare` holds the old bytes for the next call to overwrite; a missing `target`, or a
/// filesystem without the exchange, takes a plain rename. No inode is created or freed per
/// write, which on ext4 without a journal is most of a small write's cost when files were
/// deleted in the last minutes. Not for files other processes read without that lock: one
/// still reading the old bytes would see them overwritten by the next call.
///
/// # Errors
/// The first failing call.
pub fn write_exchanging(
    fs: &dyn Fs,
    spare: &Path,
    target: &Path,
    bytes: &[u8],
    mode: u32,
    durability: Durability,
) -> Result<(), Error> {
    fs.write(spare, bytes, mode).map_err(Error::at("write", spare))?;
    if durability != Durability::Unsynced {
        fs.sync_file(spare).map_err(Error::at("fsync", spare))?;
    }
    if let Err(error) = fs.exchange(spare, target) {
        let missing = error.kind() == std::io::ErrorKind::NotFound;
        if !(missing || crate::fs::exchange_unsupported(&error)) {
            return Err(Error::at("exchange", spare)(error));
        }
        fs.rename(spare, target).map_err(Error::at("rename", spare))?;
    }
    if durability != Durability::Durable {
        return Ok(());
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    fs.sync_dir(dir).map_err(Error::at("fsync dir", dir))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt as _;

    use super::*;
    use crate::RealFs;

    #[test]
    fn an_exchanging_write_replaces_the_target_and_keeps_both_inodes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (spare, target) = (dir.path().join("m.tmp"), dir.path().join("m.json"));
        let ino = |path: &Path| std::fs::metadata(path).expect("stat").ino();
        // No target yet: a plain rename.
        write_exchanging(&RealFs, &spare, &target, b"one", 0o600, Durability::Unsynced)
            .expect("first write");
        assert_eq!(std::fs::read(&target).expect("read"), b"one");
        assert!(!spare.exists());
        write_exchanging(&RealFs, &spare, &target, b"two, longer", 0o600, Durability::Durable)
            .expect("second write");
        assert_eq!(std::fs::read(&target).expect("read"), b"two, longer");
        assert_eq!(std::fs::read(&spare).expect("read"), b"one", "the old bytes, for the next");
        let inodes = [ino(&target), ino(&spare)];
        for (n, text) in ["3", "four"].into_iter().enumerate() {
            write_exchanging(&RealFs, &spare, &target, text.as_bytes(), 0o600, Durability::Cache)
                .expect("write");
            assert_eq!(std::fs::read(&target).expect("read"), text.as_bytes());
            let mut now = [ino(&target), ino(&spare)];
            if n % 2 == 0 {
                now.reverse();
            }
            assert_eq!(now, inodes, "the same two inodes take turns");
        }
        assert_eq!(std::fs::metadata(&target).expect("stat").mode() & 0o777, 0o600);
    }
}
