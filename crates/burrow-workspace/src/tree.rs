//! Host-side operations on directory trees that sandboxed code has written.
//!
//! Overlay upper layers and copies of workspaces hold whatever code in a cell created:
//! symlinks to anywhere, directories with mode 000 or read-only, FIFOs, overlay whiteouts,
//! overlayfs' own `work/work` (mode 000). burrow handles them from the host, as root or as the
//! ordinary user who owns them, so everything here works relative to directory descriptors,
//! never follows a symlink, and never crosses into another mount: a directory whose device
//! (or mount id) differs from the root's is left alone, with a warning.
//!
//! - [`remove_tree`]: `rm -rf`, giving itself `u+rwx` on directories it must enter.
//! - [`copy_tree`]: files, directories and symlinks into a new directory.
//! - [`materialize`]: an [`archive::Source`] checked by [`archive::Source::scan`] into a new directory.
//! - [`sweep_files_with_prefix`]: removes the temporary files of writes a killed process left.

use std::collections::VecDeque;
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{
    AtFlags, CWD, Dir, FileType, Mode, OFlags, ResolveFlags, Stat, StatxFlags, Timespec, Timestamps,
};
use rustix::io::Errno;

use crate::archive::{self, EntryKind, ImportEntry};
use crate::error::{Result, WorkspaceError};

/// How to open a directory for reading its entries. O_NONBLOCK so that, should a name turn
/// out to be a FIFO after all, the open returns instead of waiting for a writer.
pub(crate) const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NONBLOCK);

/// How many directory descriptors [`remove_tree`] keeps open on its way down; deeper than
/// that it reopens parents through `..`, so no tree is too deep to remove.
const KEEP_OPEN: usize = 32;

/// How often [`remove_tree`] reads a directory again that was not empty when it thought it had
/// emptied it (something was still writing into it).
const MAX_PASSES: u8 = 3;

/// What a copy wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Regular files written.
    pub files: u64,
    /// Bytes of file content written.
    pub bytes: u64,
}

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

/// Every entry of a directory but `.` and `..`, with the type the directory reports (which
/// may be `Unknown`).
pub(crate) fn read_children(dir: BorrowedFd<'_>) -> rustix::io::Result<Vec<(CString, FileType)>> {
    let mut reader = Dir::read_from(dir)?;
    let mut children = Vec::new();
    while let Some(entry) = reader.read() {
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        children.push((name.to_owned(), entry.file_type()));
    }
    Ok(children)
}

/// Opens `rel` beneath `root` without following any symlink on the way (`RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS`, O_NOFOLLOW) and without leaving `root`; `extra` can add
/// `RESOLVE_NO_XDEV`. An empty `rel` opens `root` itself again.
pub(crate) fn open_beneath(
    root: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    extra: ResolveFlags,
) -> io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let resolve =
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | extra;
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(root, rel, flags, Mode::empty(), resolve) {
            // The kernel asks for a retry when a rename or mount raced with the lookup.
            Err(Errno::AGAIN) if tries < 8 => tries += 1,
            result => return result.map_err(io::Error::from),
        }
    }
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

/// Removes a partial result after a failure, which is reported instead.
fn discard(dst: &Path) {
    if let Err(error) = remove_tree(dst) {
        tracing::warn!(path = %dst.display(), %error, "could not remove a partial copy");
    }
}

fn os(path: impl Into<PathBuf>) -> impl FnOnce(Errno) -> WorkspaceError {
    let wrap = WorkspaceError::io(path);
    move |errno| wrap(errno.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{ImportLimits, Source};
    use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
    use std::time::{Duration, Instant, SystemTime};

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn mode_of(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    fn fifo(path: &Path) {
        rustix::fs::mkfifoat(CWD, path, Mode::from_raw_mode(0o600)).unwrap();
    }

    /// An outside directory with a file, to check nothing reaches it through links.
    fn outside(tmp: &tempfile::TempDir) -> PathBuf {
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(outside.join("keep")).unwrap();
        std::fs::write(outside.join("keep/precious"), b"mine").unwrap();
        outside
    }

    fn assert_outside_intact(outside: &Path) {
        assert_eq!(
            std::fs::read(outside.join("keep/precious")).unwrap(),
            b"mine"
        );
        assert_eq!(mode_of(&outside.join("keep")), 0o755);
    }

    #[test]
    fn remove_tree_removes_what_a_cell_leaves_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = outside(&tmp);
        let root = tmp.path().join("upper");
        std::fs::create_dir_all(root.join("locked/inner")).unwrap();
        std::fs::write(root.join("locked/a"), b"a").unwrap();
        std::fs::write(root.join("locked/inner/b"), b"b").unwrap();
        std::fs::create_dir_all(root.join("readonly")).unwrap();
        std::fs::write(root.join("readonly/c"), b"c").unwrap();
        std::fs::create_dir_all(root.join("work/work")).unwrap();
        std::fs::create_dir_all(root.join("noexec")).unwrap();
        std::fs::write(root.join("noexec/d"), b"d").unwrap();
        symlink(outside.join("keep"), root.join("to-outside")).unwrap();
        symlink("../../outside/keep", root.join("readonly/relative")).unwrap();
        symlink(outside.join("keep/precious"), root.join("locked/to-file")).unwrap();
        fifo(&root.join("pipe"));
        fifo(&root.join("locked/inner/pipe"));
        chmod(&root.join("locked/inner"), 0o000);
        chmod(&root.join("locked"), 0o000);
        chmod(&root.join("readonly"), 0o555);
        chmod(&root.join("work/work"), 0o000);
        chmod(&root.join("noexec"), 0o600);

        remove_tree(&root).unwrap();
        assert!(std::fs::symlink_metadata(&root).is_err());
        assert_outside_intact(&outside);
        // Missing is fine, and so is removing twice.
        remove_tree(&root).unwrap();
    }

    #[test]
    fn remove_tree_on_a_link_removes_only_the_link() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = outside(&tmp);
        let link = tmp.path().join("link");
        symlink(outside.join("keep"), &link).unwrap();
        remove_tree(&link).unwrap();
        assert!(std::fs::symlink_metadata(&link).is_err());
        assert_outside_intact(&outside);
        let root = tmp.path().join("locked-root");
        std::fs::create_dir_all(root.join("x")).unwrap();
        chmod(&root, 0o000);
        remove_tree(&root).unwrap();
        assert!(std::fs::symlink_metadata(&root).is_err());
    }

    #[test]
    fn remove_tree_handles_trees_deeper_than_its_open_descriptors() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("deep");
        std::fs::create_dir(&root).unwrap();
        let mut dir = rustix::fs::open(&root, DIR_FLAGS | OFlags::CLOEXEC, Mode::empty()).unwrap();
        for depth in 0..(KEEP_OPEN * 4) {
            rustix::fs::mkdirat(&dir, "d", Mode::from_raw_mode(0o755)).unwrap();
            rustix::fs::openat(
                &dir,
                "f",
                OFlags::CREATE | OFlags::WRONLY,
                Mode::from_raw_mode(0o644),
            )
            .unwrap();
            let next =
                rustix::fs::openat(&dir, "d", DIR_FLAGS | OFlags::CLOEXEC, Mode::empty()).unwrap();
            if depth % 7 == 0 {
                rustix::fs::fchmod(&dir, Mode::from_raw_mode(0o500)).unwrap();
            }
            dir = next;
        }
        remove_tree(&root).unwrap();
        assert!(std::fs::symlink_metadata(&root).is_err());
    }

    #[test]
    fn remove_tree_removes_ten_thousand_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("many");
        for d in 0..20 {
            let dir = root.join(format!("d{d}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..500 {
                std::fs::write(dir.join(format!("f{f}")), b"").unwrap();
            }
        }
        let started = Instant::now();
        remove_tree(&root).unwrap();
        // Printed, not asserted: timing belongs to benchmarks, not to tests.
        println!("removed 10,000 files in {:?}", started.elapsed());
        assert!(std::fs::symlink_metadata(&root).is_err());
    }

    #[test]
    fn remove_tree_leaves_another_filesystem_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("tree");
        let mount_point = root.join("sub/mnt");
        std::fs::create_dir_all(&mount_point).unwrap();
        std::fs::write(root.join("sub/file"), b"x").unwrap();
        let mounted = rustix::mount::mount(
            "none",
            &mount_point,
            "tmpfs",
            rustix::mount::MountFlags::empty(),
            None,
        );
        if mounted.is_err() {
            eprintln!("skipped: cannot mount a tmpfs here ({mounted:?})");
            return;
        }
        std::fs::write(mount_point.join("on-tmpfs"), b"keep").unwrap();
        let result = remove_tree(&root);
        let on_tmpfs = std::fs::read(mount_point.join("on-tmpfs"));
        let unmounted = rustix::mount::unmount(&mount_point, rustix::mount::UnmountFlags::DETACH);
        let message = result.unwrap_err().to_string();
        assert!(
            message.contains("is another filesystem mounted inside it"),
            "{message}"
        );
        assert!(message.contains("sub/mnt"), "{message}");
        assert_eq!(on_tmpfs.unwrap(), b"keep");
        assert!(
            std::fs::symlink_metadata(root.join("sub/file")).is_err(),
            "the rest went"
        );
        unmounted.unwrap();
        remove_tree(&root).unwrap();
    }

    #[test]
    fn copy_tree_keeps_modes_times_and_links_without_following_them() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = outside(&tmp);
        let src = tmp.path().join("src");
        std::fs::create_dir_all(src.join("bin")).unwrap();
        std::fs::create_dir_all(src.join("ro")).unwrap();
        std::fs::write(src.join("bin/tool"), b"#!/bin/sh\n").unwrap();
        chmod(&src.join("bin/tool"), 0o4751);
        std::fs::write(src.join("ro/data"), vec![5u8; 100_000]).unwrap();
        chmod(&src.join("ro/data"), 0o440);
        symlink(outside.join("keep"), src.join("linked-dir")).unwrap();
        symlink("../bin/tool", src.join("ro/rel")).unwrap();
        symlink("dangling", src.join("dangling")).unwrap();
        fifo(&src.join("pipe"));
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        std::fs::File::options()
            .write(true)
            .open(src.join("bin/tool"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        chmod(&src.join("ro"), 0o555);
        chmod(&src, 0o750);

        let dst = tmp.path().join("dst");
        let stats = copy_tree(&src, &dst).unwrap();
        assert_eq!(
            stats,
            CopyStats {
                files: 2,
                bytes: 100_010
            }
        );
        assert_eq!(mode_of(&dst), 0o750);
        assert_eq!(mode_of(&dst.join("ro")), 0o555);
        assert_eq!(mode_of(&dst.join("bin/tool")), 0o751, "setuid dropped");
        assert_eq!(mode_of(&dst.join("ro/data")), 0o440);
        assert_eq!(
            std::fs::read(dst.join("ro/data")).unwrap(),
            vec![5u8; 100_000]
        );
        assert_eq!(
            std::fs::metadata(dst.join("bin/tool"))
                .unwrap()
                .modified()
                .unwrap(),
            old
        );
        assert_eq!(
            std::fs::metadata(dst.join("ro"))
                .unwrap()
                .modified()
                .unwrap(),
            std::fs::metadata(src.join("ro"))
                .unwrap()
                .modified()
                .unwrap()
        );
        assert_eq!(
            std::fs::read_link(dst.join("linked-dir")).unwrap(),
            outside.join("keep")
        );
        assert!(
            std::fs::symlink_metadata(dst.join("linked-dir"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_link(dst.join("ro/rel")).unwrap(),
            Path::new("../bin/tool")
        );
        assert_eq!(
            std::fs::read_link(dst.join("dangling")).unwrap(),
            Path::new("dangling")
        );
        assert!(
            std::fs::symlink_metadata(dst.join("pipe")).is_err(),
            "special files are skipped"
        );
        assert_outside_intact(&outside);

        // An existing destination is refused and left as it was.
        let message = copy_tree(&src, &dst).unwrap_err().to_string();
        assert!(message.contains("exists"), "{message}");
        assert_eq!(mode_of(&dst.join("ro")), 0o555);
        // A symlinked source root is refused, not followed.
        let link = tmp.path().join("src-link");
        symlink(&src, &link).unwrap();
        assert!(copy_tree(&link, &tmp.path().join("dst2")).is_err());
        assert!(std::fs::symlink_metadata(tmp.path().join("dst2")).is_err());

        chmod(&src.join("ro"), 0o755);
        chmod(&dst.join("ro"), 0o755);
    }

    fn seed_archive(tmp: &tempfile::TempDir) -> PathBuf {
        let mut builder = tar::Builder::new(Vec::new());
        let mut add =
            |kind: tar::EntryType, path: &str, mode: u32, data: &[u8], link: Option<&str>| {
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(kind);
                header.set_mode(mode);
                header.set_size(data.len() as u64);
                match link {
                    Some(target) => builder.append_link(&mut header, path, target).unwrap(),
                    None => builder.append_data(&mut header, path, data).unwrap(),
                }
            };
        add(
            tar::EntryType::Regular,
            "src/main.rs",
            0o644,
            b"fn main() {}\n",
            None,
        );
        add(
            tar::EntryType::Regular,
            "bin/run",
            0o6755,
            b"#!/bin/sh\n",
            None,
        );
        add(tar::EntryType::Directory, "locked/", 0o000, b"", None);
        add(
            tar::EntryType::Regular,
            "locked/inside",
            0o600,
            b"secret",
            None,
        );
        add(tar::EntryType::Directory, "ro/", 0o555, b"", None);
        add(
            tar::EntryType::Link,
            "ro/same",
            0o644,
            b"",
            Some("src/main.rs"),
        );
        add(
            tar::EntryType::Symlink,
            "ro/up",
            0o777,
            b"",
            Some("../bin/run"),
        );
        let path = tmp.path().join("seed.tar");
        std::fs::write(&path, builder.into_inner().unwrap()).unwrap();
        path
    }

    const LIMITS: ImportLimits = ImportLimits {
        max_file: 1 << 20,
        max_total: 1 << 20,
        max_entries: 100,
    };

    #[test]
    fn materialize_writes_a_checked_archive() {
        let tmp = tempfile::tempdir().unwrap();
        let source = Source::open(&seed_archive(&tmp)).unwrap();
        let entries = source.scan(&LIMITS).unwrap();
        let dst = tmp.path().join("ws");
        let stats = materialize(&source, &entries, &dst).unwrap();
        assert_eq!(
            stats,
            CopyStats {
                files: 4,
                bytes: 13 + 10 + 6 + 13
            }
        );
        assert_eq!(mode_of(&dst), 0o755);
        assert_eq!(
            std::fs::read(dst.join("src/main.rs")).unwrap(),
            b"fn main() {}\n"
        );
        assert_eq!(mode_of(&dst.join("src")), 0o755, "an implicit parent");
        assert_eq!(
            mode_of(&dst.join("bin/run")),
            0o755,
            "setuid and setgid dropped"
        );
        assert_eq!(mode_of(&dst.join("locked")), 0o000);
        assert_eq!(mode_of(&dst.join("ro")), 0o555);
        assert_eq!(
            std::fs::read_link(dst.join("ro/up")).unwrap(),
            Path::new("../bin/run")
        );
        assert_eq!(
            std::fs::read(dst.join("ro/same")).unwrap(),
            b"fn main() {}\n"
        );
        let copy = std::fs::metadata(dst.join("ro/same")).unwrap();
        assert_eq!(copy.nlink(), 1, "a hard link becomes a copy");
        chmod(&dst.join("locked"), 0o700);
        assert_eq!(std::fs::read(dst.join("locked/inside")).unwrap(), b"secret");
        remove_tree(&dst).unwrap();

        // The same from a directory source, and an existing destination is refused.
        std::fs::create_dir(&dst).unwrap();
        let message = materialize(&source, &entries, &dst)
            .unwrap_err()
            .to_string();
        assert!(message.contains("exists"), "{message}");
        assert!(dst.is_dir(), "an existing destination is not removed");
    }

    #[test]
    fn materialize_removes_its_partial_result_when_the_source_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        std::fs::create_dir_all(src.join("a")).unwrap();
        std::fs::write(src.join("a/one"), b"1").unwrap();
        std::fs::write(src.join("z"), b"small").unwrap();
        let source = Source::open(&src).unwrap();
        let entries = source.scan(&LIMITS).unwrap();
        std::fs::write(src.join("z"), b"larger than it was").unwrap();
        let dst = tmp.path().join("ws");
        let message = materialize(&source, &entries, &dst)
            .unwrap_err()
            .to_string();
        assert!(message.contains("entry `z` changed"), "{message}");
        assert!(std::fs::symlink_metadata(&dst).is_err());
        std::fs::write(src.join("z"), b"small").unwrap();
        let stats = materialize(&source, &entries, &dst).unwrap();
        assert_eq!(stats, CopyStats { files: 2, bytes: 6 });
    }

    #[test]
    fn sweep_removes_prefixed_files_and_never_a_link_target() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = outside(&tmp);
        std::fs::write(outside.join(".burrow-tmp-target"), b"keep").unwrap();
        let root = tmp.path().join("upper");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join(".burrow-tmp-dir")).unwrap();
        std::fs::write(root.join(".burrow-tmp-1"), b"").unwrap();
        std::fs::write(root.join("a/b/.burrow-tmp-2"), b"").unwrap();
        std::fs::write(root.join("a/.burrow-tmp-dir-file"), b"").unwrap();
        std::fs::write(root.join("a/keep.burrow-tmp-"), b"").unwrap();
        std::fs::write(root.join(".burrow-tmp-dir/inner"), b"").unwrap();
        symlink(
            outside.join(".burrow-tmp-target"),
            root.join(".burrow-tmp-link"),
        )
        .unwrap();
        symlink(&outside, root.join("a/.burrow-tmp-outside")).unwrap();
        fifo(&root.join("a/.burrow-tmp-fifo"));

        assert_eq!(sweep_files_with_prefix(&root, ".burrow-tmp-").unwrap(), 3);
        assert!(!root.join(".burrow-tmp-1").exists());
        assert!(!root.join("a/b/.burrow-tmp-2").exists());
        assert!(!root.join("a/.burrow-tmp-dir-file").exists());
        assert!(root.join("a/keep.burrow-tmp-").exists());
        assert!(
            root.join(".burrow-tmp-dir/inner").exists(),
            "directories are walked, not removed"
        );
        assert!(
            std::fs::symlink_metadata(root.join(".burrow-tmp-link"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(std::fs::symlink_metadata(root.join("a/.burrow-tmp-fifo")).is_ok());
        assert_eq!(
            std::fs::read(outside.join(".burrow-tmp-target")).unwrap(),
            b"keep"
        );
        assert_outside_intact(&outside);

        assert_eq!(
            sweep_files_with_prefix(&tmp.path().join("missing"), ".burrow-tmp-").unwrap(),
            0
        );
        assert!(sweep_files_with_prefix(&root, "").is_err());
        assert!(sweep_files_with_prefix(&root, "a/b").is_err());
    }
}
