//! [`sweep_files_with_prefix`]: deleting the temporary files of writes a killed process left.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::{DIR_FLAGS, open_beneath, os, read_children};
use crate::error::{Result, WorkspaceError};

/// Deletes the regular files under `root` whose name starts with `prefix`, the leftovers of
/// writes interrupted by a killed process; returns how many it deleted.
///
/// Never follows a link, and never deletes one: a symlink whose name has the prefix is left
/// alone, as is what it points to. Directories on another filesystem and directories it
/// cannot read are skipped with a warning. A missing `root` is fine.
pub fn sweep_files_with_prefix(root: &Path, prefix: &str) -> Result<u64> {
    if prefix.is_empty() || prefix.contains('/') {
        return Err(WorkspaceError::Invalid(format!(
            "`{prefix}` is not a file name prefix to sweep: it must be non-empty and contain no `/`"
        )));
    }
    let root_fd = match rustix::fs::open(
        root,
        DIR_FLAGS | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(0),
        Err(errno) => return Err(os(root)(errno)),
    };
    let root_dev = rustix::fs::fstat(&root_fd).map_err(os(root))?.st_dev;
    let mut swept = 0;
    let mut pending = VecDeque::from([PathBuf::new()]);
    while let Some(rel) = pending.pop_front() {
        let dir = match open_beneath(root_fd.as_fd(), &rel, DIR_FLAGS, ResolveFlags::NO_XDEV) {
            Ok(fd) => fd,
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(error) if matches!(error.raw_os_error(), Some(libc::EXDEV | libc::EACCES)) => {
                tracing::warn!(path = %root.join(&rel).display(), %error, "not sweeping a directory");
                continue;
            }
            Err(error) => return Err(WorkspaceError::io(root.join(&rel))(error)),
        };
        for (name, kind) in read_children(dir.as_fd()).map_err(os(root.join(&rel)))? {
            let child = rel.join(OsStr::from_bytes(name.as_bytes()));
            let ours = name.as_bytes().starts_with(prefix.as_bytes());
            if !ours && !matches!(kind, FileType::Directory | FileType::Unknown) {
                continue;
            }
            let stat = match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(Errno::NOENT) => continue,
                Err(errno) => return Err(os(root.join(&child))(errno)),
            };
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::Directory if stat.st_dev == root_dev => pending.push_back(child),
                FileType::Directory => {
                    tracing::warn!(path = %root.join(&child).display(), "not sweeping a directory on another filesystem");
                }
                // Unlinking a name never follows it; had it become a link since the stat,
                // the link itself would go, never its target.
                FileType::RegularFile if ours => {
                    match rustix::fs::unlinkat(&dir, &name, AtFlags::empty()) {
                        Ok(()) => swept += 1,
                        Err(Errno::NOENT) => {}
                        Err(errno) => return Err(os(root.join(&child))(errno)),
                    }
                }
                _ => {}
            }
        }
    }
    Ok(swept)
}
