//! Copying files out of a workspace, for `burrow export`.
//!
//! [`export`] writes the merged view of a path (the whole workspace, a
//! directory, or one file) to a new directory or, when the output's name
//! ends in `.tar`, to a tar archive. The output appears whole or not at all:
//! everything is written under a temporary name beside it and renamed into
//! place at the end.
//!
//! What is read comes from [`LayerStack`], which never follows a link code in
//! the cell planted; symlinks are exported as symlinks. What is written is
//! created relative to directories this export made itself, with
//! `O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing is ever written through a
//! link either.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, Timespec, Timestamps};
use serde::Serialize;

use crate::error::{Result, WorkspaceError};
use crate::layers::{self, LayerStack, Node, NodeKind};

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ExportSummary {
    /// Regular files written.
    pub files: u64,
    /// Directories written beneath the exported one (not counting itself).
    pub directories: u64,
    /// Symlinks written, verbatim.
    pub symlinks: u64,
    /// Bytes of file content written.
    pub bytes: u64,
    /// Special files (FIFOs, sockets, devices) left out, by path (lossy).
    pub skipped: Vec<String>,
}

/// Writes the merged view at `subpath` (relative; empty for the whole
/// workspace) to `output`: a tar archive if its name ends in `.tar`, else a
/// new directory (or file or symlink, when `subpath` is one). `output` must
/// not exist; its parent must.
///
/// A directory's entries go in the archive relative to it, as
/// `tar -C DIR .` would put them (without the `./`); a single file goes in
/// under its own name. Permissions keep the read, write and execute bits
/// only; owners are not kept (an archive says uid and gid 0).
///
/// With a `redactor` that has something to do, every file's content goes through it (secrets
/// and redacted types never leave the workspace), and is held in memory to do so: a file
/// larger than [`MAX_REDACTED_FILE`] is refused.
pub fn export(
    stack: &LayerStack,
    subpath: &Path,
    output: &Path,
    redactor: Option<&burrow_redact::Redactor>,
) -> Result<ExportSummary> {
    let redactor = redactor.filter(|r| !r.is_empty());
    layers::components(subpath)?;
    let node = stack.lookup(subpath)?.ok_or_else(|| {
        WorkspaceError::Invalid(format!(
            "{} does not exist in the workspace",
            shown(subpath)
        ))
    })?;
    if node.kind == NodeKind::Special {
        return Err(WorkspaceError::Invalid(format!(
            "{} is a FIFO, socket or device; there is nothing to export",
            shown(subpath)
        )));
    }
    let target = Target::prepare(output)?;
    let temporary_path = target.parent_path.join(&target.temporary);
    // Only what this export creates may be removed if it fails: a leftover
    // of the same name (a crashed export by a process of the same id) is
    // left alone.
    match rustix::fs::statat(&target.parent, &target.temporary, AtFlags::SYMLINK_NOFOLLOW) {
        Err(rustix::io::Errno::NOENT) => {}
        Ok(_) => {
            return Err(WorkspaceError::Invalid(format!(
                "{} is left from an earlier export; remove it and retry",
                temporary_path.display()
            )));
        }
        Err(error) => return Err(WorkspaceError::io(&temporary_path)(error.into())),
    }
    let mut temporary = Temporary {
        parent: &target.parent,
        path: temporary_path,
        armed: true,
    };
    let mut summary = ExportSummary::default();
    let name = target.name.as_bytes();
    if name.len() > 4 && name.ends_with(b".tar") {
        write_tar(stack, subpath, &node, &target, &mut summary, redactor)?;
    } else {
        write_tree(stack, subpath, &node, &target, &mut summary, redactor)?;
    }
    rustix::fs::renameat_with(
        &target.parent,
        &target.temporary,
        &target.parent,
        &target.name,
        RenameFlags::NOREPLACE,
    )
    .map_err(|error| match error {
        rustix::io::Errno::EXIST => already_exists(output),
        error => WorkspaceError::io(output)(error.into()),
    })?;
    temporary.armed = false;
    Ok(summary)
}

/// Where the export goes.
struct Target {
    /// The output's parent directory.
    parent: OwnedFd,
    parent_path: PathBuf,
    /// The output's name in it.
    name: OsString,
    /// The name written to until the end.
    temporary: OsString,
}

impl Target {
    fn prepare(output: &Path) -> Result<Target> {
        match std::fs::symlink_metadata(output) {
            Ok(_) => return Err(already_exists(output)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(WorkspaceError::io(output)(error)),
        }
        let name = output
            .file_name()
            .ok_or_else(|| {
                WorkspaceError::Invalid(format!(
                    "{} does not name a file or directory to create",
                    output.display()
                ))
            })?
            .to_os_string();
        let parent_path = match output.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // The output's location is the caller's choice, so its parent may be
        // reached through a link; only what comes from the layers is not
        // trusted.
        let parent = File::open(&parent_path)
            .and_then(|dir| {
                if dir.metadata()?.is_dir() {
                    Ok(OwnedFd::from(dir))
                } else {
                    Err(io::ErrorKind::NotADirectory.into())
                }
            })
            .map_err(|error| {
                WorkspaceError::Invalid(format!(
                    "cannot write into {}: {error}; create the directory first",
                    parent_path.display()
                ))
            })?;
        let mut temporary = OsString::from(".");
        temporary.push(&name);
        temporary.push(format!(".burrow-export-{}", std::process::id()));
        Ok(Target {
            parent,
            parent_path,
            name,
            temporary,
        })
    }
}

fn already_exists(output: &Path) -> WorkspaceError {
    WorkspaceError::Invalid(format!(
        "{} already exists; choose a new path",
        output.display()
    ))
}

/// The temporary output, removed unless the export succeeded.
struct Temporary<'a> {
    parent: &'a OwnedFd,
    path: PathBuf,
    armed: bool,
}

impl Drop for Temporary<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Some(name) = self.path.file_name() else {
            return;
        };
        let is_dir = rustix::fs::statat(self.parent, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode).is_dir());
        // std's remove_dir_all does not follow symlinks inside the tree.
        let removed = match is_dir {
            Ok(true) => std::fs::remove_dir_all(&self.path),
            Ok(false) => {
                rustix::fs::unlinkat(self.parent, name, AtFlags::empty()).map_err(io::Error::from)
            }
            Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(error) => Err(error.into()),
        };
        if let Err(error) = removed {
            tracing::warn!(path = %self.path.display(), %error, "could not remove a failed export");
        }
    }
}

/// Writes a directory, a file or a symlink at `target.temporary`.
fn write_tree(
    stack: &LayerStack,
    subpath: &Path,
    node: &Node,
    target: &Target,
    summary: &mut ExportSummary,
    redactor: Option<&burrow_redact::Redactor>,
) -> Result<()> {
    let out_path = target.parent_path.join(&target.temporary);
    match &node.kind {
        NodeKind::File => {
            summary.bytes += copy_file(
                stack,
                subpath,
                node,
                target.parent.as_fd(),
                &target.temporary,
                &out_path,
                redactor,
            )?;
            summary.files += 1;
            return Ok(());
        }
        NodeKind::Symlink(link) => {
            make_symlink(link, target.parent.as_fd(), &target.temporary, node.mtime)
                .map_err(WorkspaceError::io(&out_path))?;
            summary.symlinks += 1;
            return Ok(());
        }
        NodeKind::Dir | NodeKind::Special => {}
    }
    // Directories are made writable by their owner while being filled, and
    // get their own permissions and times once everything inside is written.
    rustix::fs::mkdirat(
        &target.parent,
        &target.temporary,
        Mode::from_raw_mode(0o700),
    )
    .map_err(|error| WorkspaceError::io(&out_path)(error.into()))?;
    let root = layers::sys::open_dir(target.parent.as_fd(), Path::new(&target.temporary))
        .map_err(WorkspaceError::io(&out_path))?;
    // Directories to give their permissions and times at the end, the
    // exported directory itself first, then parents before children.
    let mut finish = vec![(PathBuf::new(), node.mode, node.mtime)];
    // The descriptor of the last parent directory used: entries come
    // parents first, siblings mostly together.
    let mut parent: Option<(PathBuf, OwnedFd)> = None;
    for (path, entry) in stack.walk(subpath)? {
        let rel = path.strip_prefix(subpath).unwrap_or(&path);
        let (Some(name), Some(dir)) = (rel.file_name(), rel.parent()) else {
            continue;
        };
        let out_entry = out_path.join(rel);
        if parent.as_ref().is_none_or(|(open, _)| open != dir) {
            let fd = layers::sys::open_dir(root.as_fd(), dir)
                .map_err(WorkspaceError::io(out_path.join(dir)))?;
            parent = Some((dir.to_path_buf(), fd));
        }
        let Some((_, dir_fd)) = &parent else {
            continue;
        };
        match &entry.kind {
            NodeKind::Dir => {
                rustix::fs::mkdirat(dir_fd, name, Mode::from_raw_mode(0o700))
                    .map_err(|error| WorkspaceError::io(&out_entry)(error.into()))?;
                finish.push((rel.to_path_buf(), entry.mode, entry.mtime));
                summary.directories += 1;
            }
            NodeKind::File => {
                summary.bytes += copy_file(
                    stack,
                    &path,
                    &entry,
                    dir_fd.as_fd(),
                    name,
                    &out_entry,
                    redactor,
                )?;
                summary.files += 1;
            }
            NodeKind::Symlink(link) => {
                make_symlink(link, dir_fd.as_fd(), name, entry.mtime)
                    .map_err(WorkspaceError::io(&out_entry))?;
                summary.symlinks += 1;
            }
            NodeKind::Special => summary.skipped.push(shown(&path)),
        }
    }
    drop(parent);
    // Deepest first, so that no directory is closed to its owner, or has
    // its time changed, before what is inside it is done.
    for (rel, mode, mtime) in finish.iter().rev() {
        let fd = layers::sys::open_dir(root.as_fd(), rel)
            .map_err(WorkspaceError::io(out_path.join(rel)))?;
        finish_inode(&fd, *mode, *mtime).map_err(WorkspaceError::io(out_path.join(rel)))?;
    }
    Ok(())
}

/// The largest file an export with redaction holds in memory.
pub const MAX_REDACTED_FILE: u64 = 256 << 20;

/// A file's content through the redactor.
fn redacted_content(
    stack: &LayerStack,
    path: &Path,
    node: &Node,
    redactor: Option<&burrow_redact::Redactor>,
) -> Result<Vec<u8>> {
    let content = stack.read_file(path, node, MAX_REDACTED_FILE)?;
    Ok(match redactor {
        Some(redactor) => redactor.redact_all(&content),
        None => content,
    })
}

/// Copies the regular file `path` of the stack to a new file `name` in
/// `dir` (`out` on the host), through the redactor if there is one; returns
/// the bytes written.
fn copy_file(
    stack: &LayerStack,
    path: &Path,
    node: &Node,
    dir: BorrowedFd<'_>,
    name: &OsStr,
    out: &Path,
    redactor: Option<&burrow_redact::Redactor>,
) -> Result<u64> {
    if redactor.is_some() {
        let content = redacted_content(stack, path, node, redactor)?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let written = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o600))
            .map_err(io::Error::from)
            .and_then(|fd| {
                let mut file = File::from(fd);
                io::Write::write_all(&mut file, &content)?;
                finish_inode(&file, node.mode, node.mtime)?;
                Ok(content.len() as u64)
            });
        return written.map_err(WorkspaceError::io(out));
    }
    let mut source = stack.open_file(path, node)?;
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let written = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o600))
        .map_err(io::Error::from)
        .and_then(|fd| {
            let mut file = File::from(fd);
            let copied = io::copy(&mut source, &mut file)?;
            finish_inode(&file, node.mode, node.mtime)?;
            Ok(copied)
        });
    written.map_err(WorkspaceError::io(out))
}

fn make_symlink(link: &OsStr, dir: BorrowedFd<'_>, name: &OsStr, mtime: i64) -> io::Result<()> {
    rustix::fs::symlinkat(link, dir, name)?;
    rustix::fs::utimensat(dir, name, &times(mtime), AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(())
}

/// Sets an exported file's or directory's permissions (no setuid, setgid
/// or sticky bit) and modification time.
fn finish_inode(fd: impl AsFd, mode: u32, mtime: i64) -> io::Result<()> {
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode & 0o777))?;
    rustix::fs::futimens(&fd, &times(mtime))?;
    Ok(())
}

fn times(mtime: i64) -> Timestamps {
    let time = Timespec {
        tv_sec: mtime,
        tv_nsec: 0,
    };
    Timestamps {
        last_access: time,
        last_modification: time,
    }
}

/// Writes a tar archive at `target.temporary`.
fn write_tar(
    stack: &LayerStack,
    subpath: &Path,
    node: &Node,
    target: &Target,
    summary: &mut ExportSummary,
    redactor: Option<&burrow_redact::Redactor>,
) -> Result<()> {
    let out_path = target.parent_path.join(&target.temporary);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(
        &target.parent,
        &target.temporary,
        flags,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|error| WorkspaceError::io(&out_path)(error.into()))?;
    let mut archive = tar::Builder::new(BufWriter::new(File::from(fd)));
    if node.kind == NodeKind::Dir {
        for (path, entry) in stack.walk(subpath)? {
            let rel = path.strip_prefix(subpath).unwrap_or(&path);
            append(&mut archive, stack, &path, rel, &entry, summary, redactor)?;
        }
    } else {
        let name = subpath.file_name().map_or(Path::new(""), Path::new);
        append(&mut archive, stack, subpath, name, node, summary, redactor)?;
    }
    let file = archive
        .into_inner()
        .and_then(|writer| writer.into_inner().map_err(io::IntoInnerError::into_error))
        .map_err(WorkspaceError::io(&out_path))?;
    // Renamed into place next: make sure the content is on disk first.
    file.sync_all().map_err(WorkspaceError::io(&out_path))?;
    Ok(())
}

/// Appends one entry: `path` in the stack, named `name` in the archive.
fn append(
    archive: &mut tar::Builder<BufWriter<File>>,
    stack: &LayerStack,
    path: &Path,
    name: &Path,
    node: &Node,
    summary: &mut ExportSummary,
    redactor: Option<&burrow_redact::Redactor>,
) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_mode(node.mode & 0o777);
    header.set_mtime(u64::try_from(node.mtime).unwrap_or(0));
    header.set_uid(0);
    header.set_gid(0);
    header.set_size(0);
    let written = match &node.kind {
        NodeKind::Dir => {
            header.set_entry_type(tar::EntryType::Directory);
            summary.directories += 1;
            archive.append_data(&mut header, name, io::empty())
        }
        NodeKind::Symlink(link) => {
            header.set_entry_type(tar::EntryType::Symlink);
            summary.symlinks += 1;
            archive.append_link(&mut header, name, Path::new(link))
        }
        NodeKind::File if redactor.is_some() => {
            let content = redacted_content(stack, path, node, redactor)?;
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(content.len() as u64);
            summary.files += 1;
            summary.bytes += content.len() as u64;
            archive.append_data(&mut header, name, content.as_slice())
        }
        NodeKind::File => {
            let file = stack.open_file(path, node)?;
            let size = file.metadata().map_err(WorkspaceError::io(path))?.len();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(size);
            summary.files += 1;
            summary.bytes += size;
            archive.append_data(&mut header, name, Exact::new(file, size))
        }
        NodeKind::Special => {
            summary.skipped.push(shown(path));
            return Ok(());
        }
    };
    written.map_err(WorkspaceError::io(path))
}

/// Reads exactly `size` bytes: the size the archive's header announced,
/// even if the file changes while it is read (the cell may be running).
struct Exact<R> {
    inner: R,
    remaining: u64,
}

impl<R: Read> Exact<R> {
    fn new(inner: R, size: u64) -> Exact<R> {
        Exact {
            inner,
            remaining: size,
        }
    }
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let Some(buf) = buf.get_mut(..want) else {
            return Ok(0);
        };
        let read = self.inner.read(buf)?;
        if read == 0 && !buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file shrank while being exported; retry with the workspace idle",
            ));
        }
        self.remaining -= read as u64;
        Ok(read)
    }
}

/// A workspace path for messages (lossy UTF-8; `.` for the root).
fn shown(path: &Path) -> String {
    if path.as_os_str().is_empty() {
        ".".to_string()
    } else {
        path.to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests;
