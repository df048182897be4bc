//! The few system calls the layer views make, each one refusing to follow a
//! link: layer directories hold files that code in a cell wrote, so any name
//! in them may be a symlink planted to point at the host, or be swapped for
//! one between two calls.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags, Stat};

/// How every path under a layer root is resolved: inside the root, and
/// through no symlink at all (not only the last component), so a link
/// swapped in mid-walk makes the call fail instead of leading out.
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// The xattrs that mark a directory opaque: `user.` when overlayfs is
/// mounted with `userxattr` (as in a cell), `trusted.` for a privileged mount.
const OPAQUE_XATTRS: [&str; 2] = ["user.overlay.opaque", "trusted.overlay.opaque"];

/// openat2 fails with EAGAIN when a rename elsewhere races the resolution; a
/// few retries ride that out without looping forever under a hostile writer.
const OPENAT2_ATTEMPTS: usize = 8;

/// What a directory entry is, as overlayfs reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryType {
    File,
    Dir,
    Symlink,
    /// A character device 0:0: the path is deleted in the merged view.
    Whiteout,
    /// A FIFO, socket or device: never opened.
    Special,
}

/// Classifies a stat result.
pub(crate) fn entry_type(stat: &Stat) -> EntryType {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => EntryType::File,
        FileType::Directory => EntryType::Dir,
        FileType::Symlink => EntryType::Symlink,
        FileType::CharacterDevice
            if rustix::fs::major(stat.st_rdev) == 0 && rustix::fs::minor(stat.st_rdev) == 0 =>
        {
            EntryType::Whiteout
        }
        _ => EntryType::Special,
    }
}

/// Permission bits of a stat result, without the file type.
pub(crate) fn permissions(stat: &Stat) -> u32 {
    stat.st_mode & 0o7777
}

/// Size in bytes (a negative size, which no filesystem reports, reads as 0).
pub(crate) fn size(stat: &Stat) -> u64 {
    u64::try_from(stat.st_size).unwrap_or(0)
}

/// Modification time in seconds since the epoch.
#[allow(
    clippy::useless_conversion,
    reason = "st_mtime is i64 on 64-bit targets, narrower on some others"
)]
pub(crate) fn mtime(stat: &Stat) -> i64 {
    i64::from(stat.st_mtime)
}

/// `rel` as a path argument: the base itself when empty.
fn arg(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

fn openat2_retrying(base: BorrowedFd<'_>, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match rustix::fs::openat2(base, arg(rel), flags, Mode::empty(), RESOLVE) {
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR)
                if attempt < OPENAT2_ATTEMPTS => {}
            result => return result.map_err(io::Error::from),
        }
    }
}

/// Opens the directory at `rel` under `base` for reading its entries and
/// xattrs. A symlink anywhere on the way fails with ELOOP, a non-directory
/// (a whiteout included) with ENOTDIR; neither is ever opened.
pub(crate) fn open_dir(base: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    // O_RDONLY rather than O_PATH: fgetxattr refuses O_PATH descriptors on
    // the kernels burrow supports, and opening a directory has no effects.
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    openat2_retrying(base, rel, flags)
}

/// Opens the regular file at `rel` under `base` for reading. Whatever is
/// there is opened non-blocking and checked before use, so a FIFO or device
/// swapped in after a stat is refused rather than read or waited on.
pub(crate) fn open_regular(base: BorrowedFd<'_>, rel: &Path) -> io::Result<File> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = openat2_retrying(base, rel, flags)?;
    let file = File::from(fd);
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (it changed while being read)",
        ));
    }
    Ok(file)
}

/// The entry `name` of the directory `dir`, not following a symlink.
pub(crate) fn stat_entry(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Stat> {
    Ok(rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?)
}

/// The target of the symlink `name` in `dir`, byte for byte.
pub(crate) fn read_link(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OsString> {
    let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
    Ok(OsStr::from_bytes(target.as_bytes()).to_os_string())
}

/// Whether the open directory `dir` is opaque: it hides everything lower
/// layers have beneath its path.
pub(crate) fn is_opaque(dir: BorrowedFd<'_>) -> io::Result<bool> {
    for name in OPAQUE_XATTRS {
        let mut value = [0_u8; 2];
        match rustix::fs::fgetxattr(dir, name, &mut value[..]) {
            Ok(len) => {
                if value.get(..len) == Some(b"y".as_slice()) {
                    return Ok(true);
                }
            }
            // Absent, unsupported here, or a longer value than "y" (such as
            // an unrelated use of the name): not opaque.
            Err(
                rustix::io::Errno::NODATA | rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::RANGE,
            ) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(false)
}

#[cfg(test)]
thread_local! {
    /// How many directories this thread has listed: tests check that an operation does not
    /// walk what it has no need to, by counting rather than by timing it.
    pub(crate) static LISTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The names in the open directory `dir`, without `.` and `..`, in the order
/// the filesystem gives them.
pub(crate) fn list(dir: BorrowedFd<'_>) -> io::Result<Vec<OsString>> {
    #[cfg(test)]
    LISTED.with(|listed| listed.set(listed.get() + 1));
    // A descriptor of its own, so the listing starts at the first entry
    // whatever the caller's descriptor has been used for.
    let fresh = open_dir(dir, Path::new(""))?;
    let mut names = Vec::new();
    for entry in Dir::new(fresh)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    Ok(names)
}

/// Stat of an open descriptor.
pub(crate) fn stat_fd(fd: impl AsFd) -> io::Result<Stat> {
    Ok(rustix::fs::fstat(fd)?)
}

/// Size of an open file.
pub(crate) fn file_size(file: &File) -> io::Result<u64> {
    Ok(file.metadata()?.size())
}
