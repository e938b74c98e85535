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
