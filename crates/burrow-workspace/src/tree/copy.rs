//! Writing a new directory: [`copy_tree`] from a directory, [`materialize`] from an import
//! source.

use std::collections::VecDeque;
use std::ffi::{CStr, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat, Timespec, Timestamps};

use super::{DIR_FLAGS, open_beneath, os, read_children, remove_tree};
use crate::archive::{self, EntryKind, ImportEntry};
use crate::error::{Result, WorkspaceError};

/// What a copy wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Regular files written.
    pub files: u64,
    /// Bytes of file content written.
    pub bytes: u64,
}

/// Copies the tree at `src` into the new directory `dst`, which must not exist.
///
/// Copies regular files (content, permission bits `& 0o777`, times), directories (mode,
/// times) and symlinks (verbatim, never followed). Special files are skipped with a warning:
/// copy-mode trees have none. Directories on another filesystem are left out with a warning.
/// Owners are not copied: the copy belongs to whoever runs burrow. On error the partial `dst`
/// is removed.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<CopyStats> {
    let src_root = rustix::fs::open(
        src,
        DIR_FLAGS | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(os(src))?;
    // 0o700 while it fills; the source's mode is applied at the end.
    rustix::fs::mkdir(dst, Mode::from_raw_mode(0o700)).map_err(os(dst))?;
    let copied = copy_into(src_root.as_fd(), src, dst);
    if copied.is_err() {
        discard(dst);
    }
    copied
}

fn copy_into(src_root: BorrowedFd<'_>, src: &Path, dst: &Path) -> Result<CopyStats> {
    let dst_root = rustix::fs::open(
        dst,
        DIR_FLAGS | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(os(dst))?;
    let root_stat = rustix::fs::fstat(src_root).map_err(os(src))?;
    let mut stats = CopyStats::default();
    // Directory modes and times are applied last, deepest first: a read-only directory must
    // not be read-only while we write into it, and writing into it changes its mtime.
    let mut dirs = vec![(PathBuf::new(), root_stat.st_mode & 0o777, times(&root_stat))];
    let mut pending = VecDeque::from([PathBuf::new()]);
    while let Some(rel) = pending.pop_front() {
        let from = match open_beneath(src_root, &rel, DIR_FLAGS, ResolveFlags::NO_XDEV) {
            Ok(fd) => fd,
            Err(error) if error.raw_os_error() == Some(libc::EXDEV) => {
                tracing::warn!(path = %src.join(&rel).display(), "not copying a directory on another filesystem");
                continue;
            }
            Err(error) => return Err(WorkspaceError::io(src.join(&rel))(error)),
        };
        let to = open_beneath(dst_root.as_fd(), &rel, DIR_FLAGS, ResolveFlags::empty())
            .map_err(WorkspaceError::io(dst.join(&rel)))?;
        for (name, _) in read_children(from.as_fd()).map_err(os(src.join(&rel)))? {
            let child = rel.join(OsStr::from_bytes(name.as_bytes()));
            let stat = rustix::fs::statat(&from, &name, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(os(src.join(&child)))?;
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile => {
                    if let Some(bytes) =
                        copy_file(from.as_fd(), to.as_fd(), &name, src, dst, &child)?
                    {
                        stats.files += 1;
                        stats.bytes += bytes;
                    }
                }
                FileType::Directory => {
                    if stat.st_dev != root_stat.st_dev {
                        tracing::warn!(path = %src.join(&child).display(), "not copying a directory on another filesystem");
                        continue;
                    }
                    rustix::fs::mkdirat(&to, &name, Mode::from_raw_mode(0o700))
                        .map_err(os(dst.join(&child)))?;
                    dirs.push((child.clone(), stat.st_mode & 0o777, times(&stat)));
                    pending.push_back(child);
                }
                FileType::Symlink => {
                    let target = rustix::fs::readlinkat(&from, &name, Vec::new())
                        .map_err(os(src.join(&child)))?;
                    rustix::fs::symlinkat(target.as_c_str(), &to, &name)
                        .map_err(os(dst.join(&child)))?;
                    rustix::fs::utimensat(&to, &name, &times(&stat), AtFlags::SYMLINK_NOFOLLOW)
                        .map_err(os(dst.join(&child)))?;
                }
                other => {
                    tracing::warn!(path = %src.join(&child).display(), kind = ?other, "not copying a special file");
                }
            }
        }
    }
    for (rel, mode, times) in dirs.iter().rev() {
        let fd = open_beneath(dst_root.as_fd(), rel, DIR_FLAGS, ResolveFlags::empty())
            .map_err(WorkspaceError::io(dst.join(rel)))?;
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(*mode)).map_err(os(dst.join(rel)))?;
        rustix::fs::futimens(&fd, times).map_err(os(dst.join(rel)))?;
    }
    Ok(stats)
}

/// Copies one regular file; `None` if it turned out not to be one when opened.
fn copy_file(
    from: BorrowedFd<'_>,
    to: BorrowedFd<'_>,
    name: &CStr,
    src: &Path,
    dst: &Path,
    rel: &Path,
) -> Result<Option<u64>> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let input = rustix::fs::openat(from, name, flags, Mode::empty()).map_err(os(src.join(rel)))?;
    let stat = rustix::fs::fstat(&input).map_err(os(src.join(rel)))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        tracing::warn!(path = %src.join(rel).display(), "not copying: it stopped being a regular file");
        return Ok(None);
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let output = rustix::fs::openat(to, name, flags, Mode::from_raw_mode(0o600))
        .map_err(os(dst.join(rel)))?;
    let mut input = File::from(input);
    let mut output = File::from(output);
    // File to file, std::io::copy uses copy_file_range (reflinks where the filesystem can).
    let bytes = io::copy(&mut input, &mut output).map_err(WorkspaceError::io(dst.join(rel)))?;
    rustix::fs::fchmod(&output, Mode::from_raw_mode(stat.st_mode & 0o777))
        .map_err(os(dst.join(rel)))?;
    rustix::fs::futimens(&output, &times(&stat)).map_err(os(dst.join(rel)))?;
    Ok(Some(bytes))
}

fn times(stat: &Stat) -> Timestamps {
    Timestamps {
        last_access: Timespec {
            tv_sec: stat.st_atime,
            tv_nsec: stat.st_atime_nsec as _,
        },
        last_modification: Timespec {
            tv_sec: stat.st_mtime,
            tv_nsec: stat.st_mtime_nsec as _,
        },
    }
}

/// Writes the entries of a scanned import source into the new directory `dst`, which must
/// not exist; on error the partial `dst` is removed.
///
/// `entries` must come from [`archive::Source::scan`] on `source`; [`archive::Source::visit`]
/// fails if the source changed since. Everything is created relative to directory descriptors
/// opened beneath `dst` without following links, files with O_EXCL and O_NOFOLLOW. Directory
/// modes are applied last, deepest first; `dst` itself ends up 0o755.
pub fn materialize(
    source: &archive::Source,
    entries: &[ImportEntry],
    dst: &Path,
) -> Result<CopyStats> {
    rustix::fs::mkdir(dst, Mode::from_raw_mode(0o700)).map_err(os(dst))?;
    let written = materialize_into(source, entries, dst);
    if written.is_err() {
        discard(dst);
    }
    written
}

fn materialize_into(
    source: &archive::Source,
    entries: &[ImportEntry],
    dst: &Path,
) -> Result<CopyStats> {
    let root = rustix::fs::open(
        dst,
        DIR_FLAGS | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(os(dst))?;
    let mut stats = CopyStats::default();
    let mut dirs: Vec<(&str, u32)> = Vec::new();
    // Entries of one directory mostly come together: keep its descriptor for the next one.
    let mut parent: Option<(String, OwnedFd)> = None;
    source.visit(entries, &mut |entry, content| {
        let at = dst.join(&entry.path);
        let (dir, name) = entry
            .path
            .rsplit_once('/')
            .unwrap_or(("", entry.path.as_str()));
        if matches!(name, "" | "." | "..") {
            return Err(WorkspaceError::Invalid(format!(
                "cannot import entry `{}`: not a normalized path",
                entry.path
            )));
        }
        let dirfd = match &parent {
            Some((open, fd)) if open == dir => fd,
            _ => {
                let fd = open_beneath(
                    root.as_fd(),
                    Path::new(dir),
                    DIR_FLAGS,
                    ResolveFlags::empty(),
                )
                .map_err(WorkspaceError::io(dst.join(dir)))?;
                &parent.insert((dir.to_owned(), fd)).1
            }
        };
        match (&entry.kind, content) {
            (EntryKind::Dir, _) => {
                rustix::fs::mkdirat(dirfd, name, Mode::from_raw_mode(0o700)).map_err(os(&at))?;
            }
            (EntryKind::Symlink { target }, _) => {
                rustix::fs::symlinkat(target.as_str(), dirfd, name).map_err(os(&at))?;
            }
            (EntryKind::File { size }, Some(content)) => {
                let flags = OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                let fd = rustix::fs::openat(dirfd, name, flags, Mode::from_raw_mode(0o600))
                    .map_err(os(&at))?;
                let mut file = File::from(fd);
                let bytes = io::copy(content, &mut file).map_err(WorkspaceError::io(&at))?;
                if bytes != *size {
                    return Err(WorkspaceError::Invalid(format!(
                        "cannot import entry `{}`: got {bytes} bytes instead of {size}",
                        entry.path
                    )));
                }
                rustix::fs::fchmod(&file, Mode::from_raw_mode(entry.mode & 0o777))
                    .map_err(os(&at))?;
                stats.files += 1;
                stats.bytes += bytes;
            }
            (EntryKind::File { .. }, None) => {
                return Err(WorkspaceError::Invalid(format!(
                    "cannot import entry `{}`: no content",
                    entry.path
                )));
            }
        }
        Ok(())
    })?;
    for entry in entries {
        if entry.kind == EntryKind::Dir {
            dirs.push((entry.path.as_str(), entry.mode & 0o777));
        }
    }
    drop(parent);
    // Deepest first, and parents come before children in `entries`: no directory is
    // restricted before everything under it is done.
    for (path, mode) in dirs.iter().rev() {
        let fd = open_beneath(
            root.as_fd(),
            Path::new(path),
            DIR_FLAGS,
            ResolveFlags::empty(),
        )
        .map_err(WorkspaceError::io(dst.join(path)))?;
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(*mode)).map_err(os(dst.join(path)))?;
    }
    rustix::fs::fchmod(&root, Mode::from_raw_mode(0o755)).map_err(os(dst))?;
    Ok(stats)
}

/// Removes a partial result after a failure, which is reported instead.
fn discard(dst: &Path) {
    if let Err(error) = remove_tree(dst) {
        tracing::warn!(path = %dst.display(), %error, "could not remove a partial copy");
    }
}
