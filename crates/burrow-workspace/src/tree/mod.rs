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
//! - [`materialize`]: an [`archive::Source`](crate::archive::Source) checked by
//!   [`Source::scan`](crate::archive::Source::scan) into a new directory.
//! - [`sweep_files_with_prefix`]: removes the temporary files of writes a killed process left.

mod copy;
mod remove;
mod sweep;
#[cfg(test)]
mod tests;

use std::ffi::CString;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Dir, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::error::WorkspaceError;

pub use copy::{CopyStats, copy_tree, materialize};
pub use remove::remove_tree;
pub use sweep::sweep_files_with_prefix;

/// How to open a directory for reading its entries. O_NONBLOCK so that, should a name turn
/// out to be a FIFO after all, the open returns instead of waiting for a writer.
pub(crate) const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NONBLOCK);

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

fn os(path: impl Into<PathBuf>) -> impl FnOnce(Errno) -> WorkspaceError {
    let wrap = WorkspaceError::io(path);
    move |errno| wrap(errno.into())
}
