//! File operations, confined to the workspace.
//!
//! Every path is resolved with `openat2(RESOLVE_BENEATH)` from a descriptor of the workspace's
//! root: symlinks inside the workspace are followed, but nothing (`..`, an absolute path, a
//! symlink pointing out, a symlink swapped in mid-operation) resolves outside it; the kernel
//! checks it atomically, so there is no window between a check and a use. Writes go to a
//! temporary file in the target's directory and are renamed into place.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use burrow_proto::{Entry, EntryKind, ErrorCode};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

/// Prefix of the temporary files writes go through.
pub use burrow_proto::WRITE_TEMP_PREFIX as TEMP_PREFIX;

/// A failed file operation.
#[derive(Debug)]
pub struct FileError {
    /// What kind of failure.
    pub code: ErrorCode,
    /// One line for people.
    pub message: String,
}

impl FileError {
    fn new(code: ErrorCode, message: impl Into<String>) -> FileError {
        FileError {
            code,
            message: message.into(),
        }
    }

    fn from_io(path: &str, error: &io::Error) -> FileError {
        let code = match error.raw_os_error() {
            Some(libc::ENOENT) => ErrorCode::NotFound,
            Some(libc::EXDEV | libc::ELOOP) => ErrorCode::Escapes,
            Some(libc::ENOTDIR | libc::EISDIR) => ErrorCode::WrongKind,
            Some(libc::EEXIST | libc::ENOTEMPTY) => ErrorCode::Exists,
            Some(libc::EFBIG | libc::ENOSPC | libc::EDQUOT) => ErrorCode::TooLarge,
            _ => ErrorCode::Io,
        };
        let message = match code {
            ErrorCode::Escapes => format!("{path}: the path leads outside the workspace"),
            ErrorCode::NotFound => format!("{path}: no such file or directory"),
            _ => format!("{path}: {error}"),
        };
        FileError { code, message }
    }
}

type FileResult<T> = Result<T, FileError>;

trait Context<T> {
    fn at(self, path: &str) -> FileResult<T>;
}

impl<T> Context<T> for rustix::io::Result<T> {
    fn at(self, path: &str) -> FileResult<T> {
        self.map_err(|errno| FileError::from_io(path, &errno.into()))
    }
}

impl<T> Context<T> for io::Result<T> {
    fn at(self, path: &str) -> FileResult<T> {
        self.map_err(|error| FileError::from_io(path, &error))
    }
}

/// The workspace, as the agent sees it.
#[derive(Debug)]
pub struct Workspace {
    root: OwnedFd,
    root_path: PathBuf,
}

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

impl Workspace {
    /// Opens the workspace's root.
    pub fn open(root: &Path) -> io::Result<Workspace> {
        let fd = rustix::fs::open(
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Workspace {
            root: fd,
            root_path: root.to_path_buf(),
        })
    }

    /// The root's path (where commands run by default).
    pub fn root_path(&self) -> &Path {
        &self.root_path
    }

    /// The path relative to the root, from a path given relative to it or absolute under it.
    /// `..` is left for the kernel to refuse if it escapes.
    pub fn relative(&self, path: &str) -> FileResult<PathBuf> {
        if path.as_bytes().contains(&0) {
            return Err(FileError::new(
                ErrorCode::Invalid,
                "a path may not contain a NUL byte",
            ));
        }
        let given = Path::new(path);
        let relative = if given.is_absolute() {
            given.strip_prefix(&self.root_path).map_err(|_| {
                FileError::new(
                    ErrorCode::Escapes,
                    format!("{path}: the path leads outside the workspace"),
                )
            })?
        } else {
            given
        };
        let relative: PathBuf = relative
            .components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect();
        Ok(relative)
    }

    fn open_beneath(&self, relative: &Path, flags: OFlags) -> rustix::io::Result<OwnedFd> {
        let relative = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        rustix::fs::openat2(
            &self.root,
            relative,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
            BENEATH,
        )
    }

    /// The directory holding `relative`'s last component, and that component. Refuses the root
    /// itself and a last component of `..`.
    fn parent_of<'a>(&self, relative: &'a Path, path: &str) -> FileResult<(OwnedFd, &'a OsStr)> {
        let Some(Component::Normal(name)) = relative.components().next_back() else {
            return Err(FileError::new(
                ErrorCode::Invalid,
                format!("{path}: name a file or directory inside the workspace"),
            ));
        };
        let parent = relative.parent().unwrap_or(Path::new(""));
        let dir = self
            .open_beneath(parent, OFlags::PATH | OFlags::DIRECTORY)
            .at(path)?;
        Ok((dir, name))
    }

    /// Reads up to `max_bytes` from `offset`; returns the file's size and the bytes.
    pub fn read(&self, path: &str, offset: u64, max_bytes: u64) -> FileResult<(u64, Vec<u8>)> {
        let relative = self.relative(path)?;
        // O_NONBLOCK: a FIFO planted in the workspace must not hang the agent.
        let file = self
            .open_beneath(
                &relative,
                OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK,
            )
            .at(path)?;
        let stat = rustix::fs::fstat(&file).at(path)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(FileError::new(
                ErrorCode::WrongKind,
                format!("{path}: not a regular file"),
            ));
        }
        let size = stat.st_size as u64;
        let want = max_bytes.min(size.saturating_sub(offset)) as usize;
        let mut bytes = vec![0u8; want];
        let mut filled = 0;
        while filled < want {
            match rustix::io::pread(&file, &mut bytes[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(errno) => return Err(errno).at(path),
            }
        }
        bytes.truncate(filled);
        Ok((size, bytes))
    }

    /// Starts an atomic write: the returned writer fills a temporary file beside the target,
    /// and [`PendingWrite::commit`] renames it into place.
    pub fn begin_write(
        &self,
        path: &str,
        mode: Option<u32>,
        parents: bool,
    ) -> FileResult<PendingWrite> {
        let relative = self.relative(path)?;
        if parents && let Some(parent) = relative.parent() {
            self.mkdir_all(parent, path)?;
        }
        let (dir, name) = self.parent_of(&relative, path)?;
        let existing = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).ok();
        if let Some(stat) = &existing
            && FileType::from_raw_mode(stat.st_mode) == FileType::Directory
        {
            return Err(FileError::new(
                ErrorCode::WrongKind,
                format!("{path}: is a directory"),
            ));
        }
        let mode = mode
            .or(existing.map(|stat| stat.st_mode & 0o7777))
            .unwrap_or(0o644)
            & 0o777;
        // Opening the directory for real (not O_PATH) lets the temporary file be created in it.
        let dir = rustix::fs::openat(
            &dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .at(path)?;
        let temp_name = temp_name();
        let file = rustix::fs::openat(
            &dir,
            temp_name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .at(path)?;
        // The umask must not narrow an explicit mode.
        let _ = rustix::fs::fchmod(&file, Mode::from_raw_mode(mode));
        Ok(PendingWrite {
            dir,
            temp_name,
            name: name.to_os_string(),
            file: Some(file),
            path: path.to_owned(),
            committed: false,
        })
    }

    fn mkdir_all(&self, relative: &Path, path: &str) -> FileResult<()> {
        let mut current = PathBuf::new();
        for component in relative.components() {
            current.push(component);
            match self.open_beneath(&current, OFlags::PATH | OFlags::DIRECTORY) {
                Ok(_) => continue,
                Err(rustix::io::Errno::NOENT) => {}
                Err(errno) => return Err(errno).at(path),
            }
            let (dir, name) = self.parent_of(&current, path)?;
            match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(errno) => return Err(errno).at(path),
            }
        }
        Ok(())
    }

    /// Creates a directory (and, with `parents`, its missing parents; an existing directory is
    /// then fine).
    pub fn mkdir(&self, path: &str, parents: bool) -> FileResult<()> {
        let relative = self.relative(path)?;
        if parents {
            return self.mkdir_all(&relative, path);
        }
        let (dir, name) = self.parent_of(&relative, path)?;
        rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)).at(path)
    }

    /// Creates a symbolic link at `path` pointing to `target` (stored as given).
    pub fn symlink(&self, path: &str, target: &str) -> FileResult<()> {
        let relative = self.relative(path)?;
        let (dir, name) = self.parent_of(&relative, path)?;
        rustix::fs::symlinkat(target, &dir, name).at(path)
    }

    /// Removes a file or symlink, or a directory tree with `recursive`. Never follows symlinks.
    pub fn remove(&self, path: &str, recursive: bool) -> FileResult<()> {
        let relative = self.relative(path)?;
        let (dir, name) = self.parent_of(&relative, path)?;
        let stat = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).at(path)?;
        if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            if !recursive {
                return Err(FileError::new(
                    ErrorCode::WrongKind,
                    format!("{path}: is a directory (remove it recursively)"),
                ));
            }
            remove_tree(dir.as_fd(), name).at(path)
        } else {
            rustix::fs::unlinkat(&dir, name, AtFlags::empty()).at(path)
        }
    }

    /// Describes one path, without following a final symlink.
    pub fn stat(&self, path: &str) -> FileResult<Entry> {
        let relative = self.relative(path)?;
        if relative.as_os_str().is_empty() {
            let stat = rustix::fs::fstat(&self.root).at(path)?;
            return Ok(entry_of(String::new(), &stat, None));
        }
        let (dir, name) = self.parent_of(&relative, path)?;
        describe(dir.as_fd(), name, &relative).at(path)
    }

    /// Lists a directory (depth first, sorted by name), or describes a file.
    pub fn list(
        &self,
        path: &str,
        recursive: bool,
        max_entries: usize,
    ) -> FileResult<(Vec<Entry>, bool)> {
        let relative = self.relative(path)?;
        let dir = match self.open_beneath(&relative, OFlags::RDONLY | OFlags::DIRECTORY) {
            Ok(dir) => dir,
            Err(rustix::io::Errno::NOTDIR) => return Ok((vec![self.stat(path)?], false)),
            Err(errno) => return Err(errno).at(path),
        };
        let mut entries = Vec::new();
        let truncated =
            list_into(&dir, &relative, recursive, max_entries, &mut entries).at(path)?;
        Ok((entries, truncated))
    }
}

/// An atomic write in progress; dropping it without committing removes the temporary file.
#[derive(Debug)]
pub struct PendingWrite {
    dir: OwnedFd,
    temp_name: OsString,
    name: OsString,
    file: Option<OwnedFd>,
    path: String,
    committed: bool,
}

impl PendingWrite {
    /// Appends bytes.
    pub fn write(&mut self, mut bytes: &[u8]) -> FileResult<()> {
        let Some(file) = &self.file else {
            return Err(FileError::new(ErrorCode::Invalid, "the write is finished"));
        };
        while !bytes.is_empty() {
            match rustix::io::write(file, bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(rustix::io::Errno::INTR) => {}
                Err(errno) => return Err(errno).at(&self.path),
            }
        }
        Ok(())
    }

    /// Renames the complete file into place.
    pub fn commit(mut self) -> FileResult<()> {
        drop(self.file.take());
        rustix::fs::renameat(
            &self.dir,
            self.temp_name.as_os_str(),
            &self.dir,
            self.name.as_os_str(),
        )
        .at(&self.path)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for PendingWrite {
    fn drop(&mut self) {
        if !self.committed {
            let _ = rustix::fs::unlinkat(&self.dir, self.temp_name.as_os_str(), AtFlags::empty());
        }
    }
}

fn temp_name() -> OsString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    OsString::from(format!("{TEMP_PREFIX}{}-{n}", std::process::id()))
}

fn kind_of(mode: u32) -> EntryKind {
    match FileType::from_raw_mode(mode) {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Directory,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

fn entry_of(path: String, stat: &rustix::fs::Stat, target: Option<String>) -> Entry {
    Entry {
        path,
        kind: kind_of(stat.st_mode),
        size: stat.st_size as u64,
        mode: stat.st_mode & 0o7777,
        target,
    }
}

fn describe(dir: BorrowedFd<'_>, name: &OsStr, relative: &Path) -> io::Result<Entry> {
    let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    let target = if kind_of(stat.st_mode) == EntryKind::Symlink {
        let link = rustix::fs::readlinkat(dir, name, Vec::new())?;
        Some(String::from_utf8_lossy(link.as_bytes()).into_owned())
    } else {
        None
    };
    Ok(entry_of(
        relative.to_string_lossy().into_owned(),
        &stat,
        target,
    ))
}

/// Appends `dir`'s entries (and, with `recursive`, their subtrees) to `out`; true when
/// `max_entries` cut the listing short.
fn list_into(
    dir: &OwnedFd,
    relative: &Path,
    recursive: bool,
    max_entries: usize,
    out: &mut Vec<Entry>,
) -> io::Result<bool> {
    let mut names: Vec<OsString> = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name != "." && name != ".." {
            names.push(name.to_os_string());
        }
    }
    names.sort();
    for name in names {
        if out.len() >= max_entries {
            return Ok(true);
        }
        let child = relative.join(&name);
        let entry = describe(dir.as_fd(), &name, &child)?;
        let is_dir = entry.kind == EntryKind::Directory;
        out.push(entry);
        if recursive && is_dir {
            // O_NOFOLLOW: a directory swapped for a symlink since the stat is not followed.
            let sub = rustix::fs::openat(
                dir,
                name.as_os_str(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            if list_into(&sub, &child, recursive, max_entries, out)? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Removes `name` under `parent` and everything below it, never following a symlink.
fn remove_tree(parent: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    match rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(dir) => {
            let mut children = Vec::new();
            for entry in rustix::fs::Dir::read_from(&dir)? {
                let entry = entry?;
                let child = OsStr::from_bytes(entry.file_name().to_bytes());
                if child != "." && child != ".." {
                    children.push(child.to_os_string());
                }
            }
            for child in children {
                remove_tree(dir.as_fd(), &child)?;
            }
            Ok(rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)?)
        }
        // Not a directory (or a symlink to one): unlink the entry itself.
        Err(rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
            Ok(rustix::fs::unlinkat(parent, name, AtFlags::empty())?)
        }
        Err(errno) => Err(errno.into()),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let workspace = Workspace::open(&root).unwrap();
        (dir, workspace)
    }

    fn write(workspace: &Workspace, path: &str, bytes: &[u8]) -> FileResult<()> {
        let mut pending = workspace.begin_write(path, None, true)?;
        pending.write(bytes)?;
        pending.commit()
    }

    #[test]
    fn writes_are_atomic_and_leave_no_temporary_file() {
        let (_dir, ws) = workspace();
        write(&ws, "a/b/c.txt", b"one").unwrap();
        write(
            &ws,
            "/ws/a/b/c.txt"
                .replace("/ws", ws.root_path().to_str().unwrap())
                .as_str(),
            b"two",
        )
        .unwrap();
        assert_eq!(ws.read("a/b/c.txt", 0, 100).unwrap(), (3, b"two".to_vec()));
        // An abandoned write leaves the old content and no temporary file behind.
        let mut pending = ws.begin_write("a/b/c.txt", None, false).unwrap();
        pending.write(b"half").unwrap();
        drop(pending);
        assert_eq!(ws.read("a/b/c.txt", 0, 100).unwrap().1, b"two");
        let (entries, _) = ws.list("a/b", false, 100).unwrap();
        assert_eq!(entries.len(), 1);
    }

    #[test]
    fn reads_page_through_a_file() {
        let (_dir, ws) = workspace();
        write(&ws, "f", b"0123456789").unwrap();
        assert_eq!(ws.read("f", 4, 3).unwrap(), (10, b"456".to_vec()));
        assert_eq!(ws.read("f", 8, 100).unwrap(), (10, b"89".to_vec()));
        assert_eq!(ws.read("f", 20, 100).unwrap(), (10, Vec::new()));
    }

    #[test]
    fn nothing_escapes_the_workspace() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("outside"), "secret").unwrap();
        symlink(dir.path().join("outside"), ws.root_path().join("abs-link")).unwrap();
        symlink("../outside", ws.root_path().join("rel-link")).unwrap();
        symlink("..", ws.root_path().join("up")).unwrap();
        for path in [
            "../outside",
            "abs-link",
            "rel-link",
            "up/outside",
            "/etc/passwd",
            "a/../../outside",
        ] {
            let read = ws.read(path, 0, 100);
            assert!(read.is_err(), "{path} read: {read:?}");
            assert!(matches!(
                read.unwrap_err().code,
                ErrorCode::Escapes | ErrorCode::NotFound
            ));
        }
        // Writing through a symlinked parent that leads outside fails; writing over the link
        // replaces the link itself, never its target.
        assert!(write(&ws, "up/outside", b"x").is_err());
        write(&ws, "abs-link", b"replaced").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("outside")).unwrap(),
            "secret"
        );
        // Removing through a link removes the link.
        ws.remove("rel-link", false).unwrap();
        assert!(dir.path().join("outside").exists());
        assert!(ws.remove("", true).is_err());
        assert!(ws.remove("..", true).is_err());
    }

    #[test]
    fn symlinks_inside_the_workspace_are_followed() {
        let (_dir, ws) = workspace();
        write(&ws, "real/file", b"inside").unwrap();
        symlink("real", ws.root_path().join("alias")).unwrap();
        assert_eq!(ws.read("alias/file", 0, 100).unwrap().1, b"inside");
    }

    #[test]
    fn listing_is_sorted_depth_first_and_bounded() {
        let (_dir, ws) = workspace();
        for path in ["b/2", "b/1", "a", "c/d/e"] {
            write(&ws, path, b"x").unwrap();
        }
        symlink("b", ws.root_path().join("l")).unwrap();
        let (entries, truncated) = ws.list("", true, 100).unwrap();
        let paths: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["a", "b", "b/1", "b/2", "c", "c/d", "c/d/e", "l"]);
        assert!(!truncated);
        assert_eq!(entries[7].target.as_deref(), Some("b"));
        let (entries, truncated) = ws.list("", true, 3).unwrap();
        assert_eq!(entries.len(), 3);
        assert!(truncated);
    }

    #[test]
    fn removing_a_tree_never_follows_links() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("keep")).unwrap();
        std::fs::write(dir.path().join("keep/file"), "x").unwrap();
        write(&ws, "tree/sub/file", b"x").unwrap();
        symlink(dir.path().join("keep"), ws.root_path().join("tree/link")).unwrap();
        assert_eq!(
            ws.remove("tree", false).unwrap_err().code,
            ErrorCode::WrongKind
        );
        ws.remove("tree", true).unwrap();
        assert!(dir.path().join("keep/file").exists());
        assert_eq!(ws.stat("tree").unwrap_err().code, ErrorCode::NotFound);
    }
}
