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

use std::collections::{HashMap, VecDeque};
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use tar::EntryType;

use crate::error::{Result, WorkspaceError};
use crate::tree::{DIR_FLAGS, open_beneath, read_children};

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

/// Limits for the second pass, which compares against the first instead of counting.
const UNLIMITED: ImportLimits = ImportLimits {
    max_file: u64::MAX,
    max_total: u64::MAX,
    max_entries: u64::MAX,
};

/// Bytes of tar stream allowed per entry on top of file contents: the header plus long-name
/// and PAX records. The tar crate reads those records into memory before we see the entry, so
/// the stream as a whole is capped to keep a hostile archive from exhausting memory there.
const STREAM_PER_ENTRY: u64 = 4096;
/// Slack on the stream cap: end-of-archive blocks, a global PAX header, a few long records.
const STREAM_SLACK: u64 = 1 << 20;

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

impl Source {
    /// Opens `path`, which must be a directory or a readable tar archive, plain or gzipped.
    ///
    /// `path` itself may be a symlink: the user named it. Everything after this is relative
    /// to the descriptor opened here.
    pub fn open(path: &Path) -> Result<Source> {
        // O_NONBLOCK so that a FIFO given as the source is refused instead of hanging the open.
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
        let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(os(path))?;
        let stat = rustix::fs::fstat(&fd).map_err(os(path))?;
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => Kind::Dir(fd),
            FileType::RegularFile => {
                let file = File::from(fd);
                let gzip = is_gzip(&file).map_err(WorkspaceError::io(path))?;
                if !starts_with_tar_header(&file, gzip) {
                    return Err(not_a_source(path, gzip));
                }
                Kind::Tar { file, gzip }
            }
            _ => return Err(not_a_source(path, false)),
        };
        Ok(Source {
            path: path.to_owned(),
            kind,
            scanned_stream: AtomicU64::new(0),
        })
    }

    /// The path the source was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the source is a directory (otherwise it is a tar archive).
    pub fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Dir(_))
    }

    /// Pass 1: every entry, checked; parents are listed before their children.
    ///
    /// Parent directories a tar archive leaves implicit are listed with mode 0o755. A
    /// directory source is listed breadth-first, names sorted. Errors name the offending entry.
    pub fn scan(&self, limits: &ImportLimits) -> Result<Vec<ImportEntry>> {
        match &self.kind {
            Kind::Dir(root) => self.scan_dir(root, limits),
            Kind::Tar { file, gzip } => self.scan_tar(file, *gzip, limits),
        }
    }

    /// Pass 2: calls `visit` for each of `entries` (as returned by [`Source::scan`] on this
    /// source) in order, with a reader of exactly `size` bytes for file entries.
    ///
    /// If the source changed since the scan, this fails with a one-line error rather than hand
    /// over something unchecked; what `visit` already wrote is the caller's to discard. A tar
    /// archive is checked again entry by entry (a size differs, an entry appeared or went).
    /// In a directory, each file is reopened beneath the root without following links and
    /// must still be a regular file of the scanned size; entries that appeared since are
    /// simply not visited. Directory and symlink entries are passed as scanned, so what is
    /// written for them is always what was checked.
    pub fn visit(&self, entries: &[ImportEntry], visit: &mut Visitor<'_>) -> Result<()> {
        match &self.kind {
            Kind::Dir(root) => self.visit_dir(root, entries, visit),
            Kind::Tar { file, gzip } => self.visit_tar(file, *gzip, entries, visit),
        }
    }

    fn scan_dir(&self, root: &OwnedFd, limits: &ImportLimits) -> Result<Vec<ImportEntry>> {
        let mut builder = Builder::new(self, *limits);
        let mut pending = VecDeque::from([String::new()]);
        while let Some(dir) = pending.pop_front() {
            let fd = open_beneath(
                root.as_fd(),
                Path::new(&dir),
                DIR_FLAGS,
                ResolveFlags::empty(),
            )
            .map_err(WorkspaceError::io(self.path.join(&dir)))?;
            let mut children = read_children(fd.as_fd()).map_err(os(self.path.join(&dir)))?;
            children.sort_by(|a, b| a.0.cmp(&b.0));
            for (name, _) in children {
                let mut rel = Vec::with_capacity(dir.len() + 1 + name.as_bytes().len());
                if !dir.is_empty() {
                    rel.extend_from_slice(dir.as_bytes());
                    rel.push(b'/');
                }
                rel.extend_from_slice(name.as_bytes());
                let host = || self.path.join(std::ffi::OsStr::from_bytes(&rel));
                // Never follow: a symlink is an entry like any other, checked and copied as a link.
                let stat = rustix::fs::statat(&fd, &name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| os(host())(e))?;
                let mode = stat.st_mode & 0o777;
                match FileType::from_raw_mode(stat.st_mode) {
                    FileType::RegularFile => {
                        let size = stat.st_size as u64;
                        builder.add(&rel, Item::File { size }, mode)?;
                    }
                    FileType::Directory => {
                        if let Some(at) = builder.add(&rel, Item::Dir, mode)? {
                            pending.push_back(builder.entries[at].path.clone());
                        }
                    }
                    FileType::Symlink => {
                        let target = rustix::fs::readlinkat(&fd, &name, Vec::new())
                            .map_err(|e| os(host())(e))?;
                        builder.add(&rel, Item::Symlink(target.into_bytes()), 0o777)?;
                    }
                    FileType::Fifo => {
                        return Err(self.reject(&rel, "is a FIFO, which cannot be imported"));
                    }
                    FileType::Socket => {
                        return Err(self.reject(&rel, "is a socket, which cannot be imported"));
                    }
                    FileType::CharacterDevice | FileType::BlockDevice => {
                        return Err(self.reject(&rel, "is a device node, which cannot be imported"));
                    }
                    FileType::Unknown => return Err(self.reject(&rel, "has an unknown file type")),
                }
            }
        }
        builder.finish()
    }

    fn visit_dir(
        &self,
        root: &OwnedFd,
        entries: &[ImportEntry],
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        for entry in entries {
            let EntryKind::File { size } = entry.kind else {
                visit(entry, None)?;
                continue;
            };
            // Opened beneath the root with no symlink followed, so a directory swapped for a
            // link since the scan fails here instead of leading out of the source.
            let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
            let fd = match open_beneath(
                root.as_fd(),
                Path::new(&entry.path),
                flags,
                ResolveFlags::empty(),
            ) {
                Ok(fd) => fd,
                Err(error)
                    if matches!(
                        error.raw_os_error(),
                        Some(libc::ENOENT | libc::ELOOP | libc::ENOTDIR | libc::EXDEV)
                    ) =>
                {
                    return Err(self.changed(&entry.path));
                }
                Err(error) => return Err(WorkspaceError::io(self.path.join(&entry.path))(error)),
            };
            let stat = rustix::fs::fstat(&fd).map_err(os(self.path.join(&entry.path)))?;
            if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile
                || stat.st_size as u64 != size
            {
                return Err(self.changed(&entry.path));
            }
            let mut content = Exact::new(File::from(fd), size, &entry.path);
            visit(entry, Some(&mut content))?;
        }
        Ok(())
    }

    fn scan_tar(&self, file: &File, gzip: bool, limits: &ImportLimits) -> Result<Vec<ImportEntry>> {
        let cap = limits
            .max_total
            .saturating_add(limits.max_entries.saturating_mul(STREAM_PER_ENTRY))
            .saturating_add(STREAM_SLACK);
        let mut archive = tar::Archive::new(Capped::new(tar_stream(file, gzip), cap));
        let mut builder = Builder::new(self, *limits);
        for entry in archive.entries().map_err(|e| self.unreadable(&e))? {
            let entry = entry.map_err(|e| self.unreadable(&e))?;
            let name = entry.path_bytes();
            if let Some((item, mode)) = self.tar_item(&entry, &name)? {
                builder.add(&name, item, mode)?;
            }
        }
        self.scanned_stream
            .store(archive.into_inner().read, Ordering::Relaxed);
        builder.finish()
    }

    fn visit_tar(
        &self,
        file: &File,
        gzip: bool,
        entries: &[ImportEntry],
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        let cap = self
            .scanned_stream
            .load(Ordering::Relaxed)
            .saturating_add(STREAM_SLACK);
        let mut archive = tar::Archive::new(Capped::new(tar_stream(file, gzip), cap));
        // The same checks run again on what is read now, and every entry they produce must
        // equal the scanned one at the same position before it is handed out.
        let mut builder = Builder::new(self, UNLIMITED);
        // Where each regular file's data starts in the (decompressed) stream, for hard links.
        let mut data_at: HashMap<String, u64> = HashMap::new();
        for entry in archive.entries().map_err(|e| self.unreadable(&e))? {
            let mut entry = entry.map_err(|e| self.unreadable(&e))?;
            let before = builder.entries.len();
            let (added, link_to) = {
                let name = entry.path_bytes().into_owned();
                let Some((item, mode)) = self.tar_item(&entry, &name)? else {
                    continue;
                };
                let link_to = match &item {
                    Item::HardLink(target) => normalize(target).ok(),
                    _ => None,
                };
                (builder.add(&name, item, mode)?, link_to)
            };
            for at in before..builder.entries.len() {
                let got = &builder.entries[at];
                let want = match entries.get(at) {
                    Some(want) if want.path == got.path && want.kind == got.kind => want,
                    _ => return Err(self.changed(&got.path)),
                };
                let EntryKind::File { size } = want.kind else {
                    visit(want, None)?;
                    continue;
                };
                if Some(at) != added || want.mode != got.mode {
                    return Err(self.changed(&got.path));
                }
                match &link_to {
                    Some(target) => {
                        let pos = data_at
                            .get(target)
                            .copied()
                            .ok_or_else(|| self.changed(&want.path))?;
                        let from = reread(file, gzip, pos).map_err(|e| self.unreadable(&e))?;
                        visit(want, Some(&mut Exact::new(from, size, &want.path)))?;
                    }
                    None => {
                        data_at.insert(want.path.clone(), entry.raw_file_position());
                        visit(want, Some(&mut Exact::new(&mut entry, size, &want.path)))?;
                    }
                }
            }
        }
        // Directory modes can still change after their entry (a repeated directory), and
        // entries can be missing at the end: compare the whole list once more.
        if builder.entries.len() != entries.len() || builder.entries != entries {
            let differs = builder
                .entries
                .iter()
                .zip(entries)
                .find(|(got, want)| got != want)
                .map(|(got, _)| got.path.as_str())
                .or_else(|| entries.get(builder.entries.len()).map(|e| e.path.as_str()))
                .or_else(|| builder.entries.get(entries.len()).map(|e| e.path.as_str()))
                .unwrap_or_default();
            return Err(self.changed(differs));
        }
        Ok(())
    }

    /// Classifies a tar entry; `None` for headers that carry no entry.
    fn tar_item<R: Read>(
        &self,
        entry: &tar::Entry<'_, R>,
        name: &[u8],
    ) -> Result<Option<(Item, u32)>> {
        let header = entry.header();
        let link = || {
            entry
                .link_name_bytes()
                .map(|target| target.into_owned())
                .ok_or_else(|| self.reject(name, "is a link without a target"))
        };
        let item = match header.entry_type() {
            // Contiguous files are regular files with a placement hint that tar ignores.
            EntryType::Regular | EntryType::Continuous => Item::File { size: entry.size() },
            EntryType::Directory => Item::Dir,
            EntryType::Symlink => Item::Symlink(link()?),
            EntryType::Link => Item::HardLink(link()?),
            EntryType::Char | EntryType::Block => {
                return Err(self.reject(name, "is a device node, which cannot be imported"));
            }
            EntryType::Fifo => return Err(self.reject(name, "is a FIFO, which cannot be imported")),
            // `git archive` writes one (the commit id); it describes no entry, and the tar
            // crate does not apply its keys to names, so what we check is what we write.
            EntryType::XGlobalHeader => return Ok(None),
            EntryType::GNUSparse => {
                let why = "is a sparse file, which cannot be imported; re-create the archive without --sparse";
                return Err(self.reject(name, why));
            }
            EntryType::GNULongName | EntryType::GNULongLink | EntryType::XHeader => {
                return Err(self.reject(name, "is a tar metadata header that describes no entry"));
            }
            other => {
                return Err(self.reject(
                    name,
                    format_args!(
                        "has tar entry type `{}`; only files, directories, symlinks and hard links can be imported",
                        show(&[other.as_byte()])
                    ),
                ));
            }
        };
        if !matches!(item, Item::File { .. }) && entry.size() != 0 {
            return Err(self.reject(
                name,
                format_args!(
                    "is {} but carries {} bytes of data",
                    item.describe(),
                    entry.size()
                ),
            ));
        }
        let mode = header
            .mode()
            .map_err(|_| self.reject(name, "has an unreadable mode field"))?;
        Ok(Some((item, mode & 0o777)))
    }

    fn reject(&self, entry: &[u8], why: impl fmt::Display) -> WorkspaceError {
        WorkspaceError::Invalid(format!(
            "cannot import {}: entry `{}` {why}",
            show(self.path.as_os_str().as_bytes()),
            show(entry)
        ))
    }

    fn changed(&self, entry: &str) -> WorkspaceError {
        WorkspaceError::Invalid(format!(
            "cannot import {}: entry `{}` changed after the source was checked; retry when nothing is writing to it",
            show(self.path.as_os_str().as_bytes()),
            show(entry.as_bytes())
        ))
    }

    fn unreadable(&self, error: &io::Error) -> WorkspaceError {
        WorkspaceError::Invalid(format!(
            "cannot import {}: not a readable tar archive: {}",
            show(self.path.as_os_str().as_bytes()),
            show(error.to_string().as_bytes())
        ))
    }
}

/// An entry as the source describes it, before checking.
enum Item {
    File { size: u64 },
    Dir,
    Symlink(Vec<u8>),
    HardLink(Vec<u8>),
}

impl Item {
    fn describe(&self) -> &'static str {
        match self {
            Item::File { .. } => "a file",
            Item::Dir => "a directory",
            Item::Symlink(_) => "a symlink",
            Item::HardLink(_) => "a hard link",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    at: usize,
    hard_link: bool,
}

/// Turns described entries into checked ones, one at a time, so that both passes apply the
/// very same rules in the very same order.
struct Builder<'s> {
    source: &'s Source,
    limits: ImportLimits,
    entries: Vec<ImportEntry>,
    index: HashMap<String, Slot>,
    total: u64,
    count: u64,
}

impl<'s> Builder<'s> {
    fn new(source: &'s Source, limits: ImportLimits) -> Builder<'s> {
        Builder {
            source,
            limits,
            entries: Vec::new(),
            index: HashMap::new(),
            total: 0,
            count: 0,
        }
    }

    /// Checks and adds one entry (and any parent directories it implies); returns where it
    /// went, or `None` for the root itself and a repeated directory.
    fn add(&mut self, name: &[u8], item: Item, mode: u32) -> Result<Option<usize>> {
        self.count_one(name)?;
        let path =
            normalize(name).map_err(|why| self.source.reject(name, format_args!("has {why}")))?;
        if path.is_empty() {
            // `./` is how `tar -C dir -cf x.tar .` names the root; it carries nothing to import.
            return match item {
                Item::Dir => Ok(None),
                _ => Err(self.source.reject(
                    name,
                    "names the import root itself, which can only be a directory",
                )),
            };
        }
        self.add_parents(name, &path)?;
        if let Some(slot) = self.index.get(&path).copied() {
            let existing = &mut self.entries[slot.at];
            if matches!(item, Item::Dir) && existing.kind == EntryKind::Dir {
                // A repeated directory: tar applies the last one's mode, and so do we.
                existing.mode = mode;
                return Ok(None);
            }
            let was = match existing.kind {
                _ if slot.hard_link => "a hard link",
                EntryKind::File { .. } => "a file",
                EntryKind::Dir => "a directory",
                EntryKind::Symlink { .. } => "a symlink",
            };
            return Err(self.source.reject(
                name,
                format_args!(
                    "appears twice in the archive, as {was} and as {}",
                    item.describe()
                ),
            ));
        }
        let (kind, hard_link) = match item {
            Item::File { size } => {
                self.charge(name, size)?;
                (EntryKind::File { size }, false)
            }
            Item::Dir => (EntryKind::Dir, false),
            Item::Symlink(target) => {
                let target = self.check_symlink(name, &path, &target)?;
                (EntryKind::Symlink { target }, false)
            }
            Item::HardLink(target) => {
                let size = self.hard_link_size(name, &target)?;
                self.charge(name, size)?;
                (EntryKind::File { size }, true)
            }
        };
        Ok(Some(self.push(path, kind, mode, hard_link)))
    }

    /// Lists missing parent directories, and refuses a path that runs through a symlink or a
    /// file of the same source: written out, `l/f` after `l -> ../..` would land outside.
    fn add_parents(&mut self, name: &[u8], path: &str) -> Result<()> {
        for (end, _) in path.match_indices('/') {
            let parent = &path[..end];
            match self.index.get(parent).copied() {
                Some(slot) => match self.entries[slot.at].kind {
                    EntryKind::Dir => {}
                    EntryKind::Symlink { .. } => {
                        return Err(self.source.reject(
                            name,
                            format_args!(
                                "lies under `{}`, a symlink of the same source; nothing is written through a link",
                                show(parent.as_bytes())
                            ),
                        ));
                    }
                    EntryKind::File { .. } => {
                        return Err(self.source.reject(
                            name,
                            format_args!(
                                "lies under `{}`, which is a file",
                                show(parent.as_bytes())
                            ),
                        ));
                    }
                },
                None => {
                    self.count_one(name)?;
                    self.push(parent.to_owned(), EntryKind::Dir, 0o755, false);
                }
            }
        }
        Ok(())
    }

    fn push(&mut self, path: String, kind: EntryKind, mode: u32, hard_link: bool) -> usize {
        let at = self.entries.len();
        self.index.insert(path.clone(), Slot { at, hard_link });
        self.entries.push(ImportEntry { path, kind, mode });
        at
    }

    fn count_one(&mut self, name: &[u8]) -> Result<()> {
        self.count += 1;
        if self.count > self.limits.max_entries {
            return Err(self.source.reject(
                name,
                format_args!("is past the limit of {} entries", self.limits.max_entries),
            ));
        }
        Ok(())
    }

    fn charge(&mut self, name: &[u8], size: u64) -> Result<()> {
        if size > self.limits.max_file {
            return Err(self.source.reject(
                name,
                format_args!(
                    "is {size} bytes, over the limit of {} bytes per file",
                    self.limits.max_file
                ),
            ));
        }
        self.total = self
            .total
            .checked_add(size)
            .filter(|total| *total <= self.limits.max_total)
            .ok_or_else(|| {
                self.source.reject(
                    name,
                    format_args!(
                        "brings the total past the limit of {} bytes",
                        self.limits.max_total
                    ),
                )
            })?;
        Ok(())
    }

    /// A hard link is accepted only to an earlier regular file (not another link), because it
    /// is written as a copy of that file's content, which must already have been checked.
    fn hard_link_size(&self, name: &[u8], target: &[u8]) -> Result<u64> {
        let path = normalize(target).map_err(|why| {
            self.source.reject(
                name,
                format_args!("is a hard link to `{}`, which has {why}", show(target)),
            )
        })?;
        match self.index.get(&path) {
            Some(slot) if !slot.hard_link => {
                if let EntryKind::File { size } = self.entries[slot.at].kind {
                    return Ok(size);
                }
            }
            _ => {}
        }
        Err(self.source.reject(
            name,
            format_args!(
                "is a hard link to `{}`, which is not an earlier regular file of the archive",
                show(target)
            ),
        ))
    }

    /// A symlink must be relative and, resolved from its own directory without following
    /// anything, must never climb above the import root.
    fn check_symlink(&self, name: &[u8], path: &str, target: &[u8]) -> Result<String> {
        let target = text(target).map_err(|why| {
            self.source
                .reject(name, format_args!("is a symlink whose target has {why}"))
        })?;
        if target.starts_with('/') {
            return Err(self.source.reject(
                name,
                format_args!(
                    "is a symlink to the absolute path `{}`; only relative links inside the source can be imported",
                    show(target.as_bytes())
                ),
            ));
        }
        let mut depth = path.matches('/').count();
        for component in target.split('/') {
            match component {
                "" | "." => {}
                ".." if depth == 0 => {
                    return Err(self.source.reject(
                        name,
                        format_args!(
                            "is a symlink to `{}`, which points outside the import root",
                            show(target.as_bytes())
                        ),
                    ));
                }
                ".." => depth -= 1,
                _ => depth += 1,
            }
        }
        Ok(target.to_owned())
    }

    /// The checks that need the whole list: a symlink whose target runs through another
    /// symlink of the source (`a/b -> ..` makes `a/l -> b/../..` climb out although it looks
    /// lexically fine), wherever in the archive that other link comes.
    fn finish(self) -> Result<Vec<ImportEntry>> {
        for entry in &self.entries {
            let EntryKind::Symlink { target } = &entry.kind else {
                continue;
            };
            let mut at: Vec<&str> = entry.path.split('/').collect();
            at.pop();
            let components: Vec<&str> = target.split('/').collect();
            for (i, component) in components.iter().enumerate() {
                match *component {
                    "" | "." => {}
                    ".." => {
                        at.pop();
                    }
                    component => {
                        at.push(component);
                        let last = i + 1 == components.len();
                        let through = at.join("/");
                        let is_link = self.index.get(&through).is_some_and(|slot| {
                            matches!(self.entries[slot.at].kind, EntryKind::Symlink { .. })
                        });
                        if !last && is_link {
                            return Err(self.source.reject(
                                entry.path.as_bytes(),
                                format_args!(
                                    "is a symlink to `{}`, which runs through `{}`, another symlink of the same source",
                                    show(target.as_bytes()),
                                    show(through.as_bytes())
                                ),
                            ));
                        }
                    }
                }
            }
        }
        Ok(self.entries)
    }
}

/// Checks that a name is text a path can hold.
fn text(bytes: &[u8]) -> std::result::Result<&str, &'static str> {
    if bytes.is_empty() {
        return Err("an empty name");
    }
    if bytes.contains(&0) {
        return Err("a NUL byte in its name");
    }
    std::str::from_utf8(bytes).map_err(|_| "a name that is not valid UTF-8")
}

/// Normalizes an entry name: relative, no `..`; `.` and empty components dropped. The root
/// itself normalizes to the empty string.
fn normalize(bytes: &[u8]) -> std::result::Result<String, &'static str> {
    let name = text(bytes)?;
    if name.starts_with('/') {
        return Err("an absolute name");
    }
    let mut path = String::with_capacity(name.len());
    for component in name.split('/') {
        match component {
            "" | "." => {}
            ".." => return Err("a `..` component in its name"),
            component => {
                if !path.is_empty() {
                    path.push('/');
                }
                path.push_str(component);
            }
        }
    }
    Ok(path)
}

/// Bytes for a one-line message: control characters and invalid UTF-8 escaped, long names cut.
fn show(bytes: &[u8]) -> String {
    const MAX: usize = 200;
    let mut out = String::new();
    'chunks: for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if out.len() >= MAX {
                out.push('…');
                break 'chunks;
            }
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out
}

fn os(path: impl Into<PathBuf>) -> impl FnOnce(Errno) -> WorkspaceError {
    let wrap = WorkspaceError::io(path);
    move |errno| wrap(errno.into())
}

fn not_a_source(path: &Path, gzip: bool) -> WorkspaceError {
    let what = if gzip {
        "gzip data but not a tar archive"
    } else {
        "neither a directory nor a tar archive (.tar, .tar.gz or .tgz)"
    };
    WorkspaceError::Invalid(format!(
        "cannot import {}: it is {what}",
        show(path.as_os_str().as_bytes())
    ))
}

fn is_gzip(file: &File) -> io::Result<bool> {
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < magic.len() {
        match file.read_at(&mut magic[got..], got as u64)? {
            0 => return Ok(false),
            n => got += n,
        }
    }
    Ok(magic == [0x1f, 0x8b])
}

/// Whether the (decompressed) file starts with a tar header whose checksum holds, or with
/// the zero block of an empty archive.
fn starts_with_tar_header(file: &File, gzip: bool) -> bool {
    let mut block = [0u8; 512];
    if tar_stream(file, gzip).read_exact(&mut block).is_err() {
        return false;
    }
    if block.iter().all(|byte| *byte == 0) {
        return true;
    }
    let mut header = tar::Header::new_old();
    header.as_mut_bytes().copy_from_slice(&block);
    let sum = block[..148]
        .iter()
        .chain(&block[156..])
        .fold(8 * u32::from(b' '), |sum, byte| sum + u32::from(*byte));
    header.cksum().is_ok_and(|cksum| cksum == sum)
}

/// The archive's tar stream from its start, read with `pread` so that the passes (and the
/// re-reads for hard links) never disturb each other's position on the shared descriptor.
fn tar_stream(file: &File, gzip: bool) -> Box<dyn Read + '_> {
    let raw = BufReader::with_capacity(64 * 1024, ReadAt { file, pos: 0 });
    if gzip {
        // Multi-member, as `cat a.gz b.gz` and some parallel compressors produce.
        Box::new(flate2::bufread::MultiGzDecoder::new(raw))
    } else {
        Box::new(raw)
    }
}

/// The stream positioned at `pos`, for the content of a hard link's target.
fn reread(file: &File, gzip: bool, pos: u64) -> io::Result<Box<dyn Read + '_>> {
    if !gzip {
        return Ok(Box::new(ReadAt { file, pos }));
    }
    // A gzip stream cannot seek: decompress again from the start. Hard links are rare.
    let mut stream = tar_stream(file, true);
    let skipped = io::copy(&mut (&mut stream).take(pos), &mut io::sink())?;
    if skipped != pos {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "archive ended early",
        ));
    }
    Ok(stream)
}

struct ReadAt<'f> {
    file: &'f File,
    pos: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Fails the stream once more than `cap` bytes have been read from it.
struct Capped<R> {
    inner: R,
    read: u64,
    cap: u64,
}

impl<R> Capped<R> {
    fn new(inner: R, cap: u64) -> Capped<R> {
        Capped {
            inner,
            read: 0,
            cap,
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = self.cap.saturating_sub(self.read);
        if room == 0 {
            // At the cap: the stream may end exactly here, which is fine.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(format!(
                    "its tar stream is longer than the {} bytes the limits allow",
                    self.cap
                ))),
            };
        }
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Yields exactly `left` bytes of `inner`: fewer is an error (the source shrank), and any
/// more are never read (it grew).
struct Exact<'p, R> {
    inner: R,
    left: u64,
    path: &'p str,
}

impl<'p, R> Exact<'p, R> {
    fn new(inner: R, size: u64, path: &'p str) -> Exact<'p, R> {
        Exact {
            inner,
            left: size,
            path,
        }
    }
}

impl<R: Read> Read for Exact<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "import entry `{}` ended before its checked size; the source changed while it was read",
                    show(self.path.as_bytes())
                ),
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::os::unix::fs::{PermissionsExt, symlink};

    const LIMITS: ImportLimits = ImportLimits {
        max_file: 1 << 20,
        max_total: 4 << 20,
        max_entries: 1000,
    };

    /// A raw header: the name bytes go straight into the header, so the tar crate's own
    /// refusal of `..` and absolute names when building does not get in the way.
    fn header(name: &[u8], kind: EntryType, size: u64, link: &[u8], mode: u32) -> tar::Header {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.as_old_mut().linkname[..link.len()].copy_from_slice(link);
        header.set_entry_type(kind);
        header.set_size(size);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_cksum();
        header
    }

    type Member = (tar::Header, Vec<u8>);

    fn file(name: &[u8], data: &[u8]) -> Member {
        (
            header(name, EntryType::Regular, data.len() as u64, b"", 0o644),
            data.to_vec(),
        )
    }

    fn dir(name: &[u8]) -> Member {
        (
            header(name, EntryType::Directory, 0, b"", 0o755),
            Vec::new(),
        )
    }

    fn symlink_to(name: &[u8], target: &[u8]) -> Member {
        (
            header(name, EntryType::Symlink, 0, target, 0o777),
            Vec::new(),
        )
    }

    fn hard_link(name: &[u8], target: &[u8]) -> Member {
        (header(name, EntryType::Link, 0, target, 0o644), Vec::new())
    }

    fn special(name: &[u8], kind: EntryType) -> Member {
        (header(name, kind, 0, b"", 0o644), Vec::new())
    }

    fn tar_bytes(members: &[Member]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (header, data) in members {
            builder.append(header, data.as_slice()).unwrap();
        }
        builder.into_inner().unwrap()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Scans an archive of `members` that must be refused; returns the message.
    fn refused(members: &[Member]) -> String {
        refused_with(members, &LIMITS)
    }

    fn refused_with(members: &[Member], limits: &ImportLimits) -> String {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(&tmp, "bad.tar", &tar_bytes(members));
        let error = Source::open(&path).unwrap().scan(limits).unwrap_err();
        let message = error.to_string();
        assert!(!message.contains('\n'), "one line: {message}");
        assert!(matches!(error, WorkspaceError::Invalid(_)), "{message}");
        message
    }

    /// Runs pass 2 and returns every entry with its content.
    fn contents(
        source: &Source,
        entries: &[ImportEntry],
    ) -> Result<Vec<(ImportEntry, Option<Vec<u8>>)>> {
        let mut seen = Vec::new();
        source.visit(entries, &mut |entry, content| {
            let data = content.map(|reader| {
                let mut data = Vec::new();
                reader.read_to_end(&mut data).map(|_| data)
            });
            let data = data.transpose().map_err(WorkspaceError::io("test"))?;
            seen.push((entry.clone(), data));
            Ok(())
        })?;
        Ok(seen)
    }

    fn entry(path: &str, kind: EntryKind, mode: u32) -> ImportEntry {
        ImportEntry {
            path: path.to_owned(),
            kind,
            mode,
        }
    }

    /// A well-formed archive as real tools write it: `./` first, implicit parents, a long
    /// name, a global PAX header (as `git archive` writes), a hard link and a symlink.
    fn good_archive() -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut global = header(
            b"pax_global_header",
            EntryType::XGlobalHeader,
            0,
            b"",
            0o644,
        );
        let record = b"52 comment=0123456789012345678901234567890123456789\n";
        global.set_size(record.len() as u64);
        global.set_cksum();
        builder.append(&global, &record[..]).unwrap();
        let (root, _) = dir(b"./");
        builder.append(&root, io::empty()).unwrap();
        let mut exec = tar::Header::new_gnu();
        exec.set_size(5);
        exec.set_mode(0o4755);
        builder
            .append_data(&mut exec, "./bin/run", &b"#!sh\n"[..])
            .unwrap();
        let long = format!("deep/{}/file.txt", "x".repeat(120));
        let mut plain = tar::Header::new_gnu();
        plain.set_size(5);
        plain.set_mode(0o644);
        builder
            .append_data(&mut plain, &long, &b"hello"[..])
            .unwrap();
        let mut ro = tar::Header::new_gnu();
        ro.set_entry_type(EntryType::Directory);
        ro.set_mode(0o555);
        ro.set_size(0);
        builder.append_data(&mut ro, "ro/", io::empty()).unwrap();
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(EntryType::Link);
        link.set_mode(0o644);
        link.set_size(0);
        builder.append_link(&mut link, "ro/copy", &long).unwrap();
        let (sym, _) = symlink_to(b"bin/up", b"../ro/copy");
        builder.append(&sym, io::empty()).unwrap();
        builder.into_inner().unwrap()
    }

    fn expect_good(source: &Source) {
        let long = format!("deep/{}", "x".repeat(120));
        let file_path = format!("{long}/file.txt");
        let entries = source.scan(&LIMITS).unwrap();
        assert_eq!(
            entries,
            vec![
                entry("bin", EntryKind::Dir, 0o755),
                entry("bin/run", EntryKind::File { size: 5 }, 0o755),
                entry("deep", EntryKind::Dir, 0o755),
                entry(&long, EntryKind::Dir, 0o755),
                entry(&file_path, EntryKind::File { size: 5 }, 0o644),
                entry("ro", EntryKind::Dir, 0o555),
                entry("ro/copy", EntryKind::File { size: 5 }, 0o644),
                entry(
                    "bin/up",
                    EntryKind::Symlink {
                        target: "../ro/copy".into()
                    },
                    0o777
                ),
            ]
        );
        let seen = contents(source, &entries).unwrap();
        let data: Vec<_> = seen
            .iter()
            .map(|(entry, data)| (entry.path.as_str(), data.as_deref()))
            .collect();
        assert_eq!(data[1], ("bin/run", Some(&b"#!sh\n"[..])));
        assert_eq!(data[4], (file_path.as_str(), Some(&b"hello"[..])));
        assert_eq!(
            data[6],
            ("ro/copy", Some(&b"hello"[..])),
            "a hard link is a copy of its target"
        );
        assert_eq!(data[7], ("bin/up", None));
        assert_eq!(data.len(), entries.len());
    }

    #[test]
    fn accepts_a_tar_archive() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(&tmp, "seed.tar", &good_archive());
        let source = Source::open(&path).unwrap();
        assert!(!source.is_dir());
        expect_good(&source);
    }

    #[test]
    fn accepts_a_gzipped_archive_whatever_its_name() {
        let tmp = tempfile::tempdir().unwrap();
        let bytes = gzip(&good_archive());
        for name in ["seed.tar.gz", "seed.tgz", "misnamed.tar"] {
            let path = write(&tmp, name, &bytes);
            expect_good(&Source::open(&path).unwrap());
        }
    }

    #[test]
    fn accepts_an_empty_archive() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(&tmp, "empty.tar", &tar_bytes(&[]));
        assert_eq!(Source::open(&path).unwrap().scan(&LIMITS).unwrap(), vec![]);
    }

    #[test]
    fn accepts_a_directory_given_through_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("src");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f"), b"data").unwrap();
        std::fs::write(root.join("top"), b"t").unwrap();
        std::fs::set_permissions(root.join("top"), std::fs::Permissions::from_mode(0o6750))
            .unwrap();
        symlink("b/f", root.join("a/l")).unwrap();
        symlink("../top", root.join("a/up")).unwrap();
        std::fs::set_permissions(root.join("a"), std::fs::Permissions::from_mode(0o750)).unwrap();
        symlink(&root, tmp.path().join("via")).unwrap();

        let source = Source::open(&tmp.path().join("via")).unwrap();
        assert!(source.is_dir());
        let entries = source.scan(&LIMITS).unwrap();
        assert_eq!(
            entries,
            vec![
                entry("a", EntryKind::Dir, 0o750),
                entry("top", EntryKind::File { size: 1 }, 0o750),
                entry("a/b", EntryKind::Dir, 0o755),
                entry(
                    "a/l",
                    EntryKind::Symlink {
                        target: "b/f".into()
                    },
                    0o777
                ),
                entry(
                    "a/up",
                    EntryKind::Symlink {
                        target: "../top".into()
                    },
                    0o777
                ),
                entry("a/b/f", EntryKind::File { size: 4 }, 0o644),
            ]
        );
        let seen = contents(&source, &entries).unwrap();
        assert_eq!(seen[5].1.as_deref(), Some(&b"data"[..]));
        assert_eq!(seen[1].1.as_deref(), Some(&b"t"[..]));
    }

    #[test]
    fn refuses_what_is_neither_a_directory_nor_a_tar() {
        let tmp = tempfile::tempdir().unwrap();
        for (name, bytes) in [
            ("empty", &b""[..]),
            (
                "text.tar",
                &b"just some text that is long enough to not be anything"[..],
            ),
            ("zeros", &[1u8; 512][..]),
        ] {
            let path = write(&tmp, name, bytes);
            let message = Source::open(&path).unwrap_err().to_string();
            assert!(
                message.contains("neither a directory nor a tar archive"),
                "{message}"
            );
        }
        let path = write(&tmp, "text.gz", &gzip(b"not a tar"));
        let message = Source::open(&path).unwrap_err().to_string();
        assert!(
            message.contains("gzip data but not a tar archive"),
            "{message}"
        );
        let fifo = tmp.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
        let message = Source::open(&fifo).unwrap_err().to_string();
        assert!(
            message.contains("neither a directory nor a tar archive"),
            "{message}"
        );
        assert!(Source::open(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn refuses_absolute_names() {
        let message = refused(&[file(b"/etc/cron.d/x", b"x")]);
        assert!(
            message.contains("entry `/etc/cron.d/x` has an absolute name"),
            "{message}"
        );
    }

    #[test]
    fn refuses_dot_dot() {
        let message = refused(&[file(b"../x", b"x")]);
        assert!(
            message.contains("entry `../x` has a `..` component"),
            "{message}"
        );
        let message = refused(&[dir(b"a/"), file(b"a/../../x", b"x")]);
        assert!(
            message.contains("entry `a/../../x` has a `..` component"),
            "{message}"
        );
        // Even one that would stay inside: there is no legitimate need for it.
        let message = refused(&[file(b"a/../b", b"x")]);
        assert!(message.contains("`a/../b`"), "{message}");
    }

    #[test]
    fn refuses_bad_names() {
        let message = refused(&[file(b"caf\xe9", b"x")]);
        assert!(
            message.contains("entry `caf\\xe9` has a name that is not valid UTF-8"),
            "{message}"
        );
        let message = refused(&[file(b"", b"x")]);
        assert!(message.contains("has an empty name"), "{message}");
        // A NUL can only come through a GNU long name.
        let long_name = b"a\0b\0";
        let mut long = header(
            b"././@LongLink",
            EntryType::GNULongName,
            long_name.len() as u64,
            b"",
            0o644,
        );
        long.set_cksum();
        let message = refused(&[(long, long_name.to_vec()), file(b"placeholder", b"x")]);
        assert!(
            message.contains("entry `a\\u{0}b` has a NUL byte in its name"),
            "{message}"
        );
        let message = refused(&[symlink_to(b"./", b"x")]);
        assert!(
            message.contains("names the import root itself"),
            "{message}"
        );
    }

    #[test]
    fn refuses_absolute_symlinks() {
        let message = refused(&[symlink_to(b"l", b"/etc")]);
        assert!(
            message.contains("entry `l` is a symlink to the absolute path `/etc`"),
            "{message}"
        );
    }

    #[test]
    fn refuses_symlinks_that_climb_out() {
        let message = refused(&[dir(b"a/"), symlink_to(b"a/l", b"../../x")]);
        assert!(
            message.contains("entry `a/l` is a symlink to `../../x`, which points outside"),
            "{message}"
        );
        let message = refused(&[symlink_to(b"l", b"..")]);
        assert!(message.contains("points outside"), "{message}");
        // Climbing up and down again is fine.
        let tmp = tempfile::tempdir().unwrap();
        let path = write(
            &tmp,
            "ok.tar",
            &tar_bytes(&[symlink_to(b"a/b/l", b"../../a/./c/")]),
        );
        Source::open(&path).unwrap().scan(&LIMITS).unwrap();
    }

    #[test]
    fn refuses_entries_under_a_symlink() {
        let message = refused(&[dir(b"sub/"), symlink_to(b"l", b"sub"), file(b"l/f", b"x")]);
        assert!(
            message.contains("entry `l/f` lies under `l`, a symlink"),
            "{message}"
        );
        // The other order: the link would replace a directory already listed.
        let message = refused(&[file(b"l/f", b"x"), symlink_to(b"l", b"sub")]);
        assert!(message.contains("entry `l` appears twice"), "{message}");
        let message = refused(&[file(b"f", b"x"), file(b"f/g", b"x")]);
        assert!(
            message.contains("lies under `f`, which is a file"),
            "{message}"
        );
    }

    #[test]
    fn refuses_symlinks_that_resolve_through_another_symlink() {
        // Each link alone stays inside; followed by the kernel, `a/l` lands above the root.
        let message = refused(&[
            dir(b"a/"),
            symlink_to(b"a/l", b"b/../.."),
            symlink_to(b"a/b", b".."),
        ]);
        assert!(
            message.contains("entry `a/l` is a symlink to `b/../..`, which runs through `a/b`"),
            "{message}"
        );
    }

    #[test]
    fn refuses_hard_links_to_anything_but_an_earlier_file() {
        let message = refused(&[hard_link(b"h", b"/etc/passwd")]);
        assert!(
            message
                .contains("entry `h` is a hard link to `/etc/passwd`, which has an absolute name"),
            "{message}"
        );
        let message = refused(&[hard_link(b"h", b"../x")]);
        assert!(message.contains("a `..` component"), "{message}");
        let message = refused(&[hard_link(b"h", b"f"), file(b"f", b"x")]);
        assert!(
            message
                .contains("entry `h` is a hard link to `f`, which is not an earlier regular file"),
            "{message}"
        );
        let message = refused(&[hard_link(b"h", b"nowhere")]);
        assert!(message.contains("not an earlier regular file"), "{message}");
        let message = refused(&[
            file(b"f", b"x"),
            hard_link(b"h1", b"f"),
            hard_link(b"h2", b"h1"),
        ]);
        assert!(
            message.contains(
                "entry `h2` is a hard link to `h1`, which is not an earlier regular file"
            ),
            "{message}"
        );
        let message = refused(&[dir(b"d/"), hard_link(b"h", b"d")]);
        assert!(message.contains("not an earlier regular file"), "{message}");
        let message = refused(&[symlink_to(b"s", b"x"), hard_link(b"h", b"s")]);
        assert!(message.contains("not an earlier regular file"), "{message}");
    }

    #[test]
    fn refuses_special_files_and_unknown_types() {
        let message = refused(&[special(b"dev/sda", EntryType::Block)]);
        assert!(
            message.contains("entry `dev/sda` is a device node"),
            "{message}"
        );
        let message = refused(&[special(b"null", EntryType::Char)]);
        assert!(
            message.contains("entry `null` is a device node"),
            "{message}"
        );
        let message = refused(&[special(b"pipe", EntryType::Fifo)]);
        assert!(message.contains("entry `pipe` is a FIFO"), "{message}");
        let message = refused(&[special(b"label", EntryType::new(b'V'))]);
        assert!(
            message.contains("entry `label` has tar entry type `V`"),
            "{message}"
        );
        let (mut data_dir, _) = dir(b"d/");
        data_dir.set_size(3);
        data_dir.set_cksum();
        let message = refused(&[(data_dir, b"abc".to_vec())]);
        assert!(
            message.contains("entry `d/` is a directory but carries 3 bytes"),
            "{message}"
        );
    }

    #[test]
    fn refuses_conflicting_duplicates_and_keeps_the_last_directory_mode() {
        let message = refused(&[file(b"x", b"1"), file(b"x", b"2")]);
        assert!(
            message.contains("entry `x` appears twice in the archive, as a file and as a file"),
            "{message}"
        );
        let message = refused(&[file(b"x", b"1"), dir(b"x/")]);
        assert!(
            message.contains("as a file and as a directory"),
            "{message}"
        );

        let (mut private, _) = dir(b"d");
        private.set_mode(0o700);
        private.set_cksum();
        let tmp = tempfile::tempdir().unwrap();
        let path = write(
            &tmp,
            "dirs.tar",
            &tar_bytes(&[file(b"d/f", b"x"), dir(b"d/"), (private, Vec::new())]),
        );
        let entries = Source::open(&path).unwrap().scan(&LIMITS).unwrap();
        assert_eq!(entries[0], entry("d", EntryKind::Dir, 0o700));
        assert_eq!(entries.len(), 2);
    }

    #[test]
    fn refuses_what_is_over_the_limits() {
        let big = vec![7u8; 2000];
        let limits = ImportLimits {
            max_file: 1000,
            max_total: 2500,
            max_entries: 5,
        };
        let message = refused_with(&[file(b"big", &big)], &limits);
        assert!(
            message.contains("entry `big` is 2000 bytes, over the limit of 1000 bytes per file"),
            "{message}"
        );
        let message = refused_with(
            &[
                file(b"a", &big[..900]),
                file(b"b", &big[..900]),
                hard_link(b"c", b"a"),
            ],
            &limits,
        );
        assert!(
            message.contains("entry `c` brings the total past the limit of 2500 bytes"),
            "{message}"
        );
        let message = refused_with(
            &[
                file(b"1", b""),
                file(b"2", b""),
                file(b"3", b""),
                file(b"4", b""),
                file(b"5", b""),
                file(b"6", b""),
            ],
            &limits,
        );
        assert!(
            message.contains("entry `6` is past the limit of 5 entries"),
            "{message}"
        );
        // Implicit parents count too.
        let message = refused_with(&[file(b"a/b/c/d/e/f", b"")], &limits);
        assert!(
            message.contains("is past the limit of 5 entries"),
            "{message}"
        );
    }

    #[test]
    fn refuses_a_directory_source_with_a_fifo_or_an_escaping_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("fifo");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            root.join("sub/pipe"),
            Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let message = Source::open(&root)
            .unwrap()
            .scan(&LIMITS)
            .unwrap_err()
            .to_string();
        assert!(message.contains("entry `sub/pipe` is a FIFO"), "{message}");

        let root = tmp.path().join("links");
        std::fs::create_dir_all(root.join("a")).unwrap();
        symlink("../../outside", root.join("a/l")).unwrap();
        let message = Source::open(&root)
            .unwrap()
            .scan(&LIMITS)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("entry `a/l` is a symlink to `../../outside`, which points outside"),
            "{message}"
        );
        std::fs::remove_file(root.join("a/l")).unwrap();
        symlink("/etc", root.join("a/l")).unwrap();
        let message = Source::open(&root)
            .unwrap()
            .scan(&LIMITS)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("entry `a/l` is a symlink to the absolute path `/etc`"),
            "{message}"
        );
    }

    #[test]
    fn does_not_descend_into_symlinked_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("src");
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::write(root.join("real/f"), b"x").unwrap();
        symlink("real", root.join("alias")).unwrap();
        let entries = Source::open(&root).unwrap().scan(&LIMITS).unwrap();
        let paths: Vec<_> = entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["alias", "real", "real/f"]);
    }

    #[test]
    fn pass_two_notices_a_file_that_changed_in_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("src");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("f"), b"small").unwrap();
        let source = Source::open(&root).unwrap();
        let entries = source.scan(&LIMITS).unwrap();
        std::fs::write(root.join("f"), b"much larger now").unwrap();
        let message = contents(&source, &entries).unwrap_err().to_string();
        assert!(
            message.contains("entry `f` changed after the source was checked"),
            "{message}"
        );

        // Replaced by a symlink to something outside: still refused, never followed.
        std::fs::write(tmp.path().join("secret"), b"small").unwrap();
        std::fs::remove_file(root.join("f")).unwrap();
        symlink(tmp.path().join("secret"), root.join("f")).unwrap();
        let message = contents(&source, &entries).unwrap_err().to_string();
        assert!(message.contains("entry `f` changed"), "{message}");
    }

    #[test]
    fn pass_two_notices_an_archive_that_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(
            &tmp,
            "seed.tar",
            &tar_bytes(&[dir(b"d/"), file(b"d/f", b"small")]),
        );
        let source = Source::open(&path).unwrap();
        let entries = source.scan(&LIMITS).unwrap();
        // Rewritten in place (the same inode the source holds open).
        std::fs::write(
            &path,
            tar_bytes(&[dir(b"d/"), file(b"d/f", b"much larger now")]),
        )
        .unwrap();
        let message = contents(&source, &entries).unwrap_err().to_string();
        assert!(message.contains("entry `d/f` changed"), "{message}");
        std::fs::write(
            &path,
            tar_bytes(&[dir(b"d/"), file(b"d/f", b"small"), file(b"d/new", b"!")]),
        )
        .unwrap();
        let message = contents(&source, &entries).unwrap_err().to_string();
        assert!(message.contains("entry `d/new` changed"), "{message}");
        std::fs::write(&path, tar_bytes(&[dir(b"d/"), file(b"d/f", b"small")])).unwrap();
        assert_eq!(contents(&source, &entries).unwrap().len(), 2);
    }

    #[test]
    fn hard_links_in_a_gzipped_archive_read_their_target() {
        let tmp = tempfile::tempdir().unwrap();
        let members = [
            file(b"a", b"first"),
            file(b"b", &[9u8; 3000]),
            hard_link(b"c", b"b"),
            hard_link(b"d", b"./a"),
        ];
        let path = write(&tmp, "links.tgz", &gzip(&tar_bytes(&members)));
        let source = Source::open(&path).unwrap();
        let entries = source.scan(&LIMITS).unwrap();
        let seen = contents(&source, &entries).unwrap();
        assert_eq!(seen[2].1.as_deref(), Some(&[9u8; 3000][..]));
        assert_eq!(seen[3].1.as_deref(), Some(&b"first"[..]));
    }

    #[test]
    fn messages_escape_what_they_quote() {
        assert_eq!(show(b"a\nb\xffc"), "a\\nb\\xffc");
        assert!(show(&[b'x'; 500]).ends_with('…'));
    }
}
