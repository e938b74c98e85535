//! How this crate opens files and creates directories: never blocking on a FIFO, never writing
//! through a symlink, and with private modes whatever the umask.
//!
//! Conversations are private: the store's directories are 0700 and its files 0600. The umask
//! can only remove bits from the mode given to `mkdir`/`open` (a umask of 0277 would leave a
//! directory we cannot write), so the mode is set again on what was just created (`fchmod`).
//!
//! Every open adds `O_NONBLOCK` (so opening a FIFO returns at once instead of waiting for a
//! writer; regular files ignore the flag) and checks with `fstat` that what it opened is a
//! regular file: checking the path first and opening it after could be raced by a swap.

use std::fs::File;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::Error;

/// The mode of every directory the store creates.
pub(crate) const DIR_MODE: u32 = 0o700;
/// The mode of every file the store writes.
pub(crate) const FILE_MODE: u32 = 0o600;

/// How a file is opened.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Access {
    /// Read only; a missing file is `Ok(None)`.
    Read,
    /// Read and append (`O_APPEND`); with `create`, a missing file is created 0600, else it is
    /// `Ok(None)`.
    Append {
        /// Create the file when it is missing.
        create: bool,
    },
    /// Write from the start: created 0600 if missing, truncated otherwise.
    Truncate,
    /// Read and write a file created 0600 by this open (`O_EXCL`): anything already at the
    /// path, a symlink included, is an error.
    CreateNew,
}

/// Whether a symlink as the last component of the path is followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Symlinks {
    /// Followed: the file it names must still be a regular file (transcripts named on the
    /// command line).
    Follow,
    /// Refused with [`Error::SymlinkRefused`] (`O_NOFOLLOW`: everything the store opens).
    Refuse,
}

/// Opens the regular file at `path`. `Ok(None)`: it does not exist (and was not to be
/// created). A symlink (with [`Symlinks::Refuse`]) is [`Error::SymlinkRefused`]; a FIFO,
/// socket, device or directory is [`Error::NotRegularFile`], and opening one never blocks. A
/// file opened for writing whose mode is not 0600 is set to 0600.
pub(crate) fn open(path: &Path, access: Access, symlinks: Symlinks) -> Result<Option<File>, Error> {
    let mut flags = OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    if symlinks == Symlinks::Refuse {
        flags |= OFlags::NOFOLLOW;
    }
    let (writes, may_be_missing) = match access {
        Access::Read => (false, true),
        Access::Append { create } => {
            flags |= OFlags::RDWR | OFlags::APPEND;
            if create {
                flags |= OFlags::CREATE;
            }
            (true, !create)
        }
        Access::Truncate => {
            flags |= OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC;
            (true, false)
        }
        Access::CreateNew => {
            flags |= OFlags::RDWR | OFlags::CREATE | OFlags::EXCL;
            (true, false)
        }
    };
    let fd = match rustix::fs::open(path, flags, Mode::RUSR | Mode::WUSR) {
        Ok(fd) => fd,
        Err(Errno::NOENT) if may_be_missing => return Ok(None),
        Err(errno) => return Err(refusal(path, symlinks).unwrap_or_else(|| io_error(path, errno))),
    };
    let file = File::from(fd);
    let meta = file.metadata().map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
    if !meta.is_file() {
        return Err(Error::NotRegularFile { path: path.to_path_buf(), kind: kind(&meta) });
    }
    if writes && meta.mode() & 0o777 != FILE_MODE {
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
            .map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
    }
    Ok(Some(file))
}

/// Why an open of `path` failed, when the path itself is the reason: a symlink that must not
/// be followed, or something that is not a regular file (a socket cannot be opened at all, a
/// FIFO opened for writing without a reader fails with `ENXIO`).
fn refusal(path: &Path, symlinks: Symlinks) -> Option<Error> {
    let meta = match symlinks {
        Symlinks::Refuse => std::fs::symlink_metadata(path),
        Symlinks::Follow => std::fs::metadata(path),
    }
    .ok()?;
    if meta.file_type().is_symlink() {
        Some(Error::SymlinkRefused { path: path.to_path_buf() })
    } else if !meta.is_file() {
        Some(Error::NotRegularFile { path: path.to_path_buf(), kind: kind(&meta) })
    } else {
        None
    }
}

fn io_error(path: &Path, errno: Errno) -> Error {
    Error::Io { path: path.to_path_buf(), source: io::Error::from(errno) }
}

/// What a non-regular file is, for messages.
pub(crate) fn kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_dir() {
        "directory"
    } else if t.is_symlink() {
        "symlink"
    } else {
        "special file"
    }
}

/// Makes sure `dir` is a directory that is not a symlink, creating it and its missing parents
/// with mode 0700. An existing `dir` that grants any permission to group or others (a store
/// created before its modes were set explicitly) is set to 0700; existing parents are left
/// alone.
pub(crate) fn ensure_private_dir(dir: &Path) -> Result<(), Error> {
    let io = |source| Error::Io { path: dir.to_path_buf(), source };
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            Err(Error::SymlinkRefused { path: dir.to_path_buf() })
        }
        Ok(meta) if meta.is_dir() => {
            if meta.mode() & 0o077 != 0 {
                set_dir_mode(dir).map_err(io)?;
            }
            Ok(())
        }
        Ok(_) => Err(io(io::Error::from(io::ErrorKind::NotADirectory))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            create_dirs(dir).map_err(io)?;
            // Created by someone else meanwhile: it must still be a directory, not a symlink.
            match std::fs::symlink_metadata(dir) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(meta) if meta.file_type().is_symlink() => {
                    Err(Error::SymlinkRefused { path: dir.to_path_buf() })
                }
                Ok(_) => Err(io(io::Error::from(io::ErrorKind::NotADirectory))),
                Err(e) => Err(io(e)),
            }
        }
        Err(e) => Err(io(e)),
    }
}

/// `mkdir -p` where every directory it creates is 0700 (a directory that already exists is
/// left as it is).
fn create_dirs(dir: &Path) -> io::Result<()> {
    let mkdir = |dir: &Path| std::fs::DirBuilder::new().mode(DIR_MODE).create(dir);
    match mkdir(dir) {
        Ok(()) => set_dir_mode(dir),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) else {
                return Err(e);
            };
            create_dirs(parent)?;
            match mkdir(dir) {
                Ok(()) => set_dir_mode(dir),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Sets a directory to 0700 through a descriptor opened without following a symlink.
fn set_dir_mode(dir: &Path) -> io::Result<()> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(dir, flags, Mode::empty())?;
    rustix::fs::fchmod(&fd, Mode::RWXU)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).map(|m| m.mode() & 0o777).unwrap_or(0)
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::RUSR | Mode::WUSR,
            0,
        )
        .expect("mkfifo");
        for access in [Access::Read, Access::Append { create: true }, Access::Truncate] {
            for symlinks in [Symlinks::Follow, Symlinks::Refuse] {
                let err = open(&fifo, access, symlinks).expect_err("a FIFO is refused");
                assert!(matches!(err, Error::NotRegularFile { kind: "FIFO", .. }), "{err}");
            }
        }
    }

    #[test]
    fn a_symlink_is_refused_or_followed_as_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("target");
        std::fs::write(&target, b"x").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        for access in [Access::Read, Access::Append { create: true }, Access::Truncate] {
            let err = open(&link, access, Symlinks::Refuse).expect_err("refused");
            assert!(matches!(err, Error::SymlinkRefused { .. }), "{err}");
        }
        assert!(open(&link, Access::Read, Symlinks::Follow).expect("followed").is_some());
        assert_eq!(std::fs::read(&target).expect("read"), b"x");
    }

    #[test]
    fn created_files_and_directories_are_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("a/b/sessions");
        ensure_private_dir(&store).expect("create");
        for d in [dir.path().join("a"), dir.path().join("a/b"), store.clone()] {
            assert_eq!(mode(&d), 0o700, "{}", d.display());
        }
        let log = store.join("s_x.log");
        open(&log, Access::Append { create: true }, Symlinks::Refuse).expect("create");
        assert_eq!(mode(&log), 0o600);
        // A looser store directory and file (written before modes were explicit) are tightened.
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        ensure_private_dir(&store).expect("exists");
        open(&log, Access::Append { create: false }, Symlinks::Refuse).expect("open");
        assert_eq!((mode(&store), mode(&log)), (0o700, 0o600));
    }
}
