//! [`remove_tree`], and opening a directory burrow owns, whatever its mode, without leaving
//! the mount.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, StatxFlags};
use rustix::io::Errno;

use super::{DIR_FLAGS, os, read_children};
use crate::error::{Result, WorkspaceError};

/// How many directory descriptors [`remove_tree`] keeps open on its way down; deeper than
/// that it reopens parents through `..`, so no tree is too deep to remove.
pub(super) const KEEP_OPEN: usize = 32;

/// How often [`remove_tree`] reads a directory again that was not empty when it thought it had
/// emptied it (something was still writing into it).
const MAX_PASSES: u8 = 3;

/// Removes a directory tree completely (`rm -rf`); a missing `path` is fine.
///
/// If `path` is a symlink or a file, only that entry is removed. Directories it must enter or
/// delete from get `u+rwx` first (burrow owns them). Anything on another filesystem is left
/// in place with a warning, and then the call fails saying what is mounted where.
pub fn remove_tree(path: &Path) -> Result<()> {
    let fail = WorkspaceError::io(path);
    let stat = match rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(()),
        Err(errno) => return Err(fail(errno.into())),
    };
    if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
        // A file or a link: remove the name itself, never what a link points to.
        return match rustix::fs::unlinkat(CWD, path, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(errno) => Err(fail(errno.into())),
        };
    }
    let name = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        WorkspaceError::Invalid(format!(
            "{}: a path cannot contain a NUL byte",
            path.display()
        ))
    })?;
    let (fd, id) = match open_owned_dir(CWD, &name, None) {
        Ok(Opened::Dir(fd, id)) => (fd, id),
        // The root is compared with nothing, so it is never foreign.
        Ok(Opened::Foreign) => return Err(fail(Errno::XDEV.into())),
        Err(Errno::NOENT) => return Ok(()),
        Err(errno) => return Err(fail(errno.into())),
    };
    let children = read_children(fd.as_fd()).map_err(|errno| fail(errno.into()))?;
    let mut remover = Remover {
        root: id,
        mounted: None,
    };
    remover.run(Frame {
        fd: Some(fd),
        id,
        name,
        path: path.to_owned(),
        children,
        passes: 0,
        blocked: false,
    })?;
    match remover.mounted {
        None => Ok(()),
        Some(mounted) => Err(WorkspaceError::Invalid(format!(
            "{} was not removed completely: {} is another filesystem mounted inside it; unmount it and retry",
            path.display(),
            mounted.display()
        ))),
    }
}

/// A directory on the way down.
struct Frame {
    /// Closed for frames far below the top to bound descriptors; the top always has one.
    fd: Option<OwnedFd>,
    id: DirId,
    /// The name in its parent; for the root, the whole path (its parent is the cwd).
    name: CString,
    /// For messages.
    path: PathBuf,
    /// Entries still to remove (the directory is read completely before anything is deleted,
    /// so deleting never disturbs the reading).
    children: Vec<(CString, FileType)>,
    passes: u8,
    /// Something under it was left in place (another filesystem), so it cannot go.
    blocked: bool,
}

struct Remover {
    root: DirId,
    /// The first thing left in place because it is another filesystem.
    mounted: Option<PathBuf>,
}

impl Remover {
    /// Depth-first, with an explicit stack: a tree built by untrusted code can be deeper than
    /// any call stack.
    fn run(&mut self, root: Frame) -> Result<()> {
        let mut stack = vec![root];
        while let Some(top) = stack.last_mut() {
            if let Some((name, kind)) = top.children.pop() {
                if let Some(child) = self.remove_entry(top, &name, kind)? {
                    stack.push(child);
                    if stack.len() > KEEP_OPEN {
                        let far = stack.len() - KEEP_OPEN - 1;
                        stack[far].fd = None;
                    }
                }
                continue;
            }
            let Some(mut done) = stack.pop() else { break };
            if let Some(parent) = stack.last_mut()
                && parent.fd.is_none()
            {
                parent.fd = Some(reopen_parent(&done, parent)?);
            }
            let removed = match stack.last() {
                Some(Frame {
                    fd: Some(parent), ..
                }) => rustix::fs::unlinkat(parent, done.name.as_c_str(), AtFlags::REMOVEDIR),
                Some(Frame { fd: None, .. }) => Err(Errno::BADF),
                None => rustix::fs::unlinkat(CWD, done.name.as_c_str(), AtFlags::REMOVEDIR),
            };
            match removed {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(Errno::NOTEMPTY | Errno::EXIST) if done.blocked => {
                    if let Some(parent) = stack.last_mut() {
                        parent.blocked = true;
                    }
                }
                Err(Errno::NOTEMPTY | Errno::EXIST) if done.passes < MAX_PASSES => {
                    // Something wrote into it while we emptied it: read it again.
                    let Some(fd) = done.fd.as_ref() else {
                        return Err(WorkspaceError::io(&done.path)(Errno::BADF.into()));
                    };
                    done.children = read_children(fd.as_fd()).map_err(os(&done.path))?;
                    done.passes += 1;
                    stack.push(done);
                }
                Err(errno) => return Err(os(&done.path)(errno)),
            }
        }
        Ok(())
    }

    /// Removes one entry of `parent`; returns the frame to descend into if it is a directory.
    fn remove_entry(
        &mut self,
        parent: &mut Frame,
        name: &CStr,
        kind: FileType,
    ) -> Result<Option<Frame>> {
        let path = parent.path.join(OsStr::from_bytes(name.to_bytes()));
        let Some(dir) = parent.fd.as_ref() else {
            return Err(WorkspaceError::io(&parent.path)(Errno::BADF.into()));
        };
        if !matches!(kind, FileType::Directory | FileType::Unknown) {
            // Files, links, FIFOs, sockets, devices and whiteouts all go with one unlink.
            match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => return Ok(None),
                // It became a directory since the listing: handle it as one.
                Err(Errno::ISDIR) => {}
                Err(errno) => return Err(os(&path)(errno)),
            }
        }
        let (fd, id) = match open_owned_dir(dir.as_fd(), name, Some(&self.root)) {
            Ok(Opened::Dir(fd, id)) => (fd, id),
            Ok(Opened::Foreign) => {
                tracing::warn!(path = %path.display(), "not removing a directory on another filesystem (a mount point)");
                parent.blocked = true;
                self.mounted.get_or_insert(path);
                return Ok(None);
            }
            Err(Errno::NOENT) => return Ok(None),
            // Not a directory after all (the type was unknown, or it was replaced by a link).
            Err(Errno::NOTDIR | Errno::LOOP) => {
                return match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => Ok(None),
                    Err(errno) => Err(os(&path)(errno)),
                };
            }
            Err(errno) => return Err(os(&path)(errno)),
        };
        let children = read_children(fd.as_fd()).map_err(os(&path))?;
        Ok(Some(Frame {
            fd: Some(fd),
            id,
            name: name.to_owned(),
            path,
            children,
            passes: 0,
            blocked: false,
        }))
    }
}

/// Opens the parent of `child` again through `..`, and checks it is the same directory.
fn reopen_parent(child: &Frame, parent: &Frame) -> Result<OwnedFd> {
    let moved = || {
        WorkspaceError::Invalid(format!(
            "{} was moved while it was being removed; retry",
            parent.path.display()
        ))
    };
    let Some(fd) = child.fd.as_ref() else {
        return Err(moved());
    };
    let up = rustix::fs::openat(fd, c"..", DIR_FLAGS | OFlags::CLOEXEC, Mode::empty())
        .map_err(os(&parent.path))?;
    let id = dir_id(up.as_fd()).map_err(os(&parent.path))?;
    if id.dev != parent.id.dev || id.ino != parent.id.ino {
        return Err(moved());
    }
    Ok(up)
}

/// Which directory a descriptor is, and on which mount.
#[derive(Debug, Clone, Copy)]
struct DirId {
    dev: u64,
    ino: u64,
    /// The mount id where the kernel reports it (5.8+): it tells bind mounts of the same
    /// filesystem apart, which the device number cannot.
    mnt: Option<u64>,
    mode: u32,
}

impl DirId {
    fn same_mount(&self, other: &DirId) -> bool {
        self.dev == other.dev
            && match (self.mnt, other.mnt) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

fn dir_id(fd: BorrowedFd<'_>) -> rustix::io::Result<DirId> {
    let mask = StatxFlags::TYPE | StatxFlags::MODE | StatxFlags::INO | StatxFlags::MNT_ID;
    let stx = rustix::fs::statx(fd, c"", AtFlags::EMPTY_PATH, mask)?;
    let mnt = (stx.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(stx.stx_mnt_id);
    Ok(DirId {
        dev: rustix::fs::makedev(stx.stx_dev_major, stx.stx_dev_minor),
        ino: stx.stx_ino,
        mnt,
        mode: u32::from(stx.stx_mode),
    })
}

enum Opened {
    Dir(OwnedFd, DirId),
    /// On another mount than the root: not opened for reading, not touched.
    Foreign,
}

/// Opens directory `name` in `parent` for reading, without following a link, and makes sure
/// its owner (burrow) may read, search and delete in it.
///
/// The mount is checked before any permission is changed, so a mount point's root keeps its
/// mode. `root` is `None` for the root of the operation itself.
fn open_owned_dir(
    parent: BorrowedFd<'_>,
    name: &CStr,
    root: Option<&DirId>,
) -> rustix::io::Result<Opened> {
    let foreign = |id: &DirId| root.is_some_and(|root| !id.same_mount(root));
    match rustix::fs::openat(
        parent,
        name,
        DIR_FLAGS | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => {
            let id = dir_id(fd.as_fd())?;
            if foreign(&id) {
                return Ok(Opened::Foreign);
            }
            if id.mode & 0o700 != 0o700 {
                // Readable but not writable or searchable (say 0o500): fix it on the open
                // descriptor. If we may not (not the owner), the unlinks below say so.
                let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode((id.mode & 0o7777) | 0o700));
            }
            Ok(Opened::Dir(fd, id))
        }
        Err(Errno::ACCESS) => {
            // Mode 000 (overlayfs' work/work, or a chmod in the cell) and we are not root. An
            // O_PATH descriptor needs no permission on the directory itself. fchmod refuses
            // O_PATH descriptors, but chmod through /proc/self/fd acts on the very inode we
            // opened, never on a name that could have been swapped for a link meanwhile.
            let handle = rustix::fs::openat(
                parent,
                name,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let id = dir_id(handle.as_fd())?;
            if foreign(&id) {
                return Ok(Opened::Foreign);
            }
            let magic = format!("/proc/self/fd/{}", handle.as_raw_fd());
            rustix::fs::chmod(
                magic.as_str(),
                Mode::from_raw_mode((id.mode & 0o7777) | 0o700),
            )?;
            let fd = rustix::fs::open(magic.as_str(), DIR_FLAGS | OFlags::CLOEXEC, Mode::empty())?;
            Ok(Opened::Dir(fd, id))
        }
        Err(errno) => Err(errno),
    }
}
