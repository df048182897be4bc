//! Opening an import source and walking it: a host directory or a tar stream, in both passes.

use std::collections::{HashMap, VecDeque};
use std::fmt;
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

use super::checks::{Builder, Item, normalize, show};
use super::readers::{Capped, Exact, ReadAt};
use super::{EntryKind, ImportEntry, ImportLimits, Kind, Source, Visitor};
use crate::error::{Result, WorkspaceError};
use crate::tree::{DIR_FLAGS, open_beneath, read_children};

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

    pub(super) fn reject(&self, entry: &[u8], why: impl fmt::Display) -> WorkspaceError {
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
