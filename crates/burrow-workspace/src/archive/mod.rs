//! Reading an import source, a host directory or a tarball, without trusting it.
//!
//! `burrow import` and `burrow ws create --seed` copy a host directory or a tar archive
//! (`.tar`, `.tar.gz`, `.tgz`; gzip is recognised by its magic bytes, not by the name) into a
//! workspace. Nothing is written until the whole source has been checked, and one bad entry
//! rejects the source as a whole, with a one-line error that names the entry.
//!
//! [`Source::scan`] is the first pass: it lists every entry as an [`ImportEntry`], checked
//! against the rules below and the [`ImportLimits`], parents before children.
//! [`Source::visit`] is the second pass: it hands the same entries, in the same order, to a
//! callback together with a reader of each file's content, and fails if the source changed in
//! between. Neither pass holds file contents in memory. [`crate::tree::materialize`] writes the
//! entries into a new directory.
//!
//! Refused: absolute names, `..` components, empty, NUL-containing or non-UTF-8 names; device
//! nodes, FIFOs and sockets; symlinks that are absolute, climb above the import root, or resolve
//! through another symlink of the source; entries under a symlink; hard links to anything but
//! an earlier regular file (accepted ones become copies); other tar entry types; duplicates,
//! except a directory repeated; anything over the limits. Permission bits are kept (`& 0o777`);
//! setuid, setgid and sticky bits are dropped.
//!
//! ```no_run
//! # fn main() -> burrow_workspace::Result<()> {
//! use burrow_workspace::archive::{ImportLimits, Source};
//! let source = Source::open(std::path::Path::new("seed.tar.gz"))?;
//! let limits = ImportLimits { max_file: 1 << 30, max_total: 4 << 30, max_entries: 200_000 };
//! let entries = source.scan(&limits)?;
//! let stats = burrow_workspace::tree::materialize(&source, &entries, "/tmp/new".as_ref())?;
//! # let _ = stats; Ok(()) }
//! ```

mod checks;
mod readers;
mod source;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;

use crate::error::Result;

/// How much an import may bring in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportLimits {
    /// The largest size of one file, in bytes.
    pub max_file: u64,
    /// The largest sum of all file sizes, in bytes; a hard link counts as the copy it becomes.
    pub max_total: u64,
    /// The most entries, counting the parent directories an archive leaves implicit and each
    /// repetition of a directory.
    pub max_entries: u64,
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file (or a tar hard link, imported as a copy of the file it names).
    File {
        /// Its size in bytes; the second pass reads exactly this many.
        size: u64,
    },
    /// A directory.
    Dir,
    /// A symbolic link, relative and staying inside the import root.
    Symlink {
        /// The link's target, verbatim.
        target: String,
    },
}

/// One checked entry of an import source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportEntry {
    /// Normalized relative path: UTF-8, `/`-separated, no `.`, `..` or empty components.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Permission bits (`& 0o777`).
    pub mode: u32,
}

/// What [`Source::visit`] calls for each entry: the entry, and for a file a reader of exactly
/// its `size` bytes.
pub type Visitor<'a> = dyn FnMut(&ImportEntry, Option<&mut dyn Read>) -> Result<()> + 'a;

/// An import source opened for reading: a host directory or a tar archive.
///
/// It holds one descriptor for its whole life, so both passes read the same directory or
/// file even if the path is renamed or replaced in between.
#[derive(Debug)]
pub struct Source {
    path: PathBuf,
    kind: Kind,
    /// Bytes of tar stream the last scan read; the second pass allows no more than that.
    scanned_stream: AtomicU64,
}

#[derive(Debug)]
enum Kind {
    Dir(OwnedFd),
    Tar { file: File, gzip: bool },
}
