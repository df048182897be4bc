//! Read-only views of a workspace's overlay layers, from the host.
//!
//! A [`LayerStack`] holds a directory descriptor for each layer, topmost
//! first, and answers what the merged view (what overlayfs shows in the cell)
//! has at a path: [`LayerStack::lookup`], [`LayerStack::read_dir`],
//! [`LayerStack::read_file`]. [`LayerStack::walk_layer`] lists one layer on its
//! own, whiteouts and all, which is how a diff finds what changed without
//! walking the baseline.
//!
//! The layers hold files written by code in the cell, so nothing here follows
//! a symlink: every path is resolved by the kernel beneath a layer's
//! descriptor with symlinks refused (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`), entries are `stat`ed without following, and only
//! regular files are ever opened for reading, non-blocking and checked after
//! the open.
//!
//! Overlayfs rules, as read here: a character device 0:0 is a whiteout (the
//! path is deleted); a directory with `user.overlay.opaque` (or
//! `trusted.overlay.opaque`) set to `y` hides what lower layers have beneath
//! it; a non-directory hides everything at and below its path in lower
//! layers; directories at the same path merge.

pub(crate) mod sys;
mod walk;

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;

use std::collections::{BTreeMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, Stat};

use crate::error::{Result, WorkspaceError};
use sys::EntryType;

pub use walk::{LayerEntry, LayerEntryKind};

/// A stack of overlay layers, read as overlayfs merges them.
#[derive(Debug)]
pub struct LayerStack {
    /// Topmost first.
    layers: Vec<Layer>,
}

#[derive(Debug)]
struct Layer {
    /// Where the layer is on the host, for error messages.
    dir: PathBuf,
    /// The layer's root directory, which every access starts from.
    root: OwnedFd,
}

/// What the merged view has at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// File, directory, symlink or special file.
    pub kind: NodeKind,
    /// Permission bits, setuid/setgid/sticky included; no file type.
    pub mode: u32,
    /// Size in bytes (a symlink's is its target's length).
    pub size: u64,
    /// Which layer it comes from: an index into the stack, 0 = topmost.
    pub layer: usize,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
}

/// The kinds of [`Node`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink and its target, byte for byte (never followed).
    Symlink(OsString),
    /// A FIFO, socket or device (other than a whiteout): never opened.
    Special,
}

/// A file read up to a limit.
pub(crate) enum Capped {
    /// The whole content.
    Content(Vec<u8>),
    /// More than the limit: the size seen.
    TooLarge(u64),
}

/// What one layer has at a path, as far as the merged view is concerned.
enum Probe {
    /// Nothing here; lower layers decide.
    Missing,
    /// The path is deleted or covered (a whiteout, or a non-directory
    /// ancestor); lower layers do not count.
    Hidden,
    /// Nothing here, and an opaque ancestor hides lower layers.
    Stop,
    /// An entry.
    Found {
        stat: Stat,
        /// A symlink's target.
        target: Option<OsString>,
        /// The directory, opened, and whether it is opaque (only when asked).
        dir: Option<(OwnedFd, bool)>,
    },
}

impl LayerStack {
    /// Opens the layer directories, topmost first. Each must exist.
    pub fn open(dirs: &[PathBuf]) -> Result<LayerStack> {
        let mut layers = Vec::with_capacity(dirs.len());
        for dir in dirs {
            // The layer directories themselves are burrow's (under its state
            // directory), so their own path may be followed; only what is
            // inside them is untrusted.
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let root = rustix::fs::open(dir, flags, Mode::empty())
                .map_err(|error| WorkspaceError::io(dir)(error.into()))?;
            layers.push(Layer {
                dir: dir.clone(),
                root,
            });
        }
        Ok(LayerStack { layers })
    }

    /// How many layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether the stack has no layer (its merged view is empty).
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// What the merged view has at `path` (relative, no `..`; empty for the
    /// root), or `None` if nothing: deleted, never there, or beneath a
    /// non-directory such as a symlink, which is never followed.
    pub fn lookup(&self, path: &Path) -> Result<Option<Node>> {
        let names = components(path)?;
        for (index, layer) in self.layers.iter().enumerate() {
            match self.probe(layer, &names, false)? {
                Probe::Missing => {}
                Probe::Hidden | Probe::Stop => return Ok(None),
                Probe::Found { stat, target, .. } => {
                    return Ok(Some(node(&stat, target, index)));
                }
            }
        }
        Ok(None)
    }

    /// The merged listing of the directory at `path`, sorted by name. Fails
    /// with "not found" or "not a directory" when the merged view has no
    /// directory there.
    pub fn read_dir(&self, path: &Path) -> Result<BTreeMap<OsString, Node>> {
        let names = components(path)?;
        let mut listing = BTreeMap::new();
        // Names a higher layer deleted: lower layers' entries stay hidden.
        let mut deleted: HashSet<OsString> = HashSet::new();
        let mut found = false;
        for (index, layer) in self.layers.iter().enumerate() {
            let (dir, opaque) = match self.probe(layer, &names, true)? {
                Probe::Missing => continue,
                Probe::Hidden | Probe::Stop => break,
                Probe::Found { dir: Some(dir), .. } => dir,
                Probe::Found { dir: None, .. } => {
                    // A non-directory: if a higher layer has the directory,
                    // overlayfs stops merging here; else there is none.
                    if found {
                        break;
                    }
                    return Err(not_a_directory(path, io::ErrorKind::NotADirectory));
                }
            };
            found = true;
            let entries = sys::list(dir.as_fd()).map_err(self.io(layer, path))?;
            for name in entries {
                if listing.contains_key(&name) || deleted.contains(&name) {
                    continue;
                }
                let (stat, target) = entry(dir.as_fd(), &name)
                    .map_err(|error| self.io(layer, &path.join(&name))(error))?;
                if sys::entry_type(&stat) == EntryType::Whiteout {
                    deleted.insert(name);
                } else {
                    listing.insert(name, node(&stat, target, index));
                }
            }
            if opaque {
                break;
            }
        }
        if !found {
            return Err(not_a_directory(path, io::ErrorKind::NotFound));
        }
        Ok(listing)
    }

    /// Every path beneath the directory `path` in the merged view, with its
    /// node, parents before their children (sorted by path components).
    /// Empty when `path` is not a directory. Symlinks are listed, never
    /// entered.
    pub fn walk(&self, path: &Path) -> Result<Vec<(PathBuf, Node)>> {
        components(path)?;
        let mut out = Vec::new();
        if self
            .lookup(path)?
            .is_none_or(|node| node.kind != NodeKind::Dir)
        {
            return Ok(out);
        }
        // An explicit stack rather than recursion: a cell can nest
        // directories deeper than the host's stack would allow.
        let mut pending = vec![path.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for (name, node) in self.read_dir(&dir)? {
                let child = dir.join(name);
                if node.kind == NodeKind::Dir {
                    pending.push(child.clone());
                }
                out.push((child, node));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// A regular file's content, refusing more than `limit` bytes.
    pub fn read_file(&self, path: &Path, node: &Node, limit: u64) -> Result<Vec<u8>> {
        match self.read_capped(path, node, limit)? {
            Capped::Content(content) => Ok(content),
            Capped::TooLarge(size) => Err(WorkspaceError::Invalid(format!(
                "{} is {size} bytes, more than the {limit} bytes that can be read at once",
                path.display(),
            ))),
        }
    }

    /// A regular file's content, unless it has more than `limit` bytes
    /// (checked again while reading, as a running cell may grow it).
    pub(crate) fn read_capped(&self, path: &Path, node: &Node, limit: u64) -> Result<Capped> {
        if node.size > limit {
            return Ok(Capped::TooLarge(node.size));
        }
        let file = self.open_file(path, node)?;
        let layer = self.layer(node.layer)?;
        let size = sys::file_size(&file).map_err(self.io(layer, path))?;
        if size > limit {
            return Ok(Capped::TooLarge(size));
        }
        let mut content = Vec::with_capacity(size as usize);
        file.take(limit.saturating_add(1))
            .read_to_end(&mut content)
            .map_err(self.io(layer, path))?;
        if content.len() as u64 > limit {
            return Ok(Capped::TooLarge(content.len() as u64));
        }
        Ok(Capped::Content(content))
    }

    /// Opens a regular file for streaming. Fails if what is at `path` in
    /// `node`'s layer is not a regular file (any more).
    pub fn open_file(&self, path: &Path, node: &Node) -> Result<File> {
        components(path)?;
        if node.kind != NodeKind::File {
            return Err(WorkspaceError::Invalid(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        let layer = self.layer(node.layer)?;
        sys::open_regular(layer.root.as_fd(), path).map_err(self.io(layer, path))
    }

    fn layer(&self, index: usize) -> Result<&Layer> {
        self.layers.get(index).ok_or_else(|| {
            WorkspaceError::Invalid(format!(
                "layer {index} does not exist in a stack of {}",
                self.layers.len()
            ))
        })
    }

    /// What `layer` has at the path `names`, following overlayfs's rules for
    /// the ancestors. With `want_dir`, a directory found is opened.
    fn probe(&self, layer: &Layer, names: &[&OsStr], want_dir: bool) -> Result<Probe> {
        let Some((last, ancestors)) = names.split_last() else {
            // The root: always a directory; its own opaque mark means nothing.
            let stat = sys::stat_fd(&layer.root).map_err(self.io(layer, Path::new("")))?;
            let dir = if want_dir {
                let fd = sys::open_dir(layer.root.as_fd(), Path::new(""))
                    .map_err(self.io(layer, Path::new("")))?;
                Some((fd, false))
            } else {
                None
            };
            return Ok(Probe::Found {
                stat,
                target: None,
                dir,
            });
        };
        let mut parent: Option<OwnedFd> = None;
        let mut walked = PathBuf::new();
        let mut opaque_above = false;
        for name in ancestors {
            walked.push(name);
            let base = parent.as_ref().map_or(layer.root.as_fd(), AsFd::as_fd);
            match sys::open_dir(base, Path::new(name)) {
                Ok(dir) => {
                    opaque_above |= sys::is_opaque(dir.as_fd()).map_err(self.io(layer, &walked))?;
                    parent = Some(dir);
                }
                Err(error) => {
                    return match error.raw_os_error() {
                        Some(libc::ENOENT) if opaque_above => Ok(Probe::Stop),
                        Some(libc::ENOENT) => Ok(Probe::Missing),
                        // A whiteout, file, symlink or special file as an
                        // ancestor: the path does not exist in the merged view.
                        Some(libc::ENOTDIR | libc::ELOOP) => Ok(Probe::Hidden),
                        _ => Err(self.io(layer, &walked)(error)),
                    };
                }
            }
        }
        let base = parent.as_ref().map_or(layer.root.as_fd(), AsFd::as_fd);
        let full = walked.join(last);
        let (stat, target) = match entry(base, last) {
            Ok(found) => found,
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => {
                return Ok(if opaque_above {
                    Probe::Stop
                } else {
                    Probe::Missing
                });
            }
            Err(error) => return Err(self.io(layer, &full)(error)),
        };
        let dir = match sys::entry_type(&stat) {
            EntryType::Whiteout => return Ok(Probe::Hidden),
            EntryType::Dir if want_dir => {
                let dir = sys::open_dir(base, Path::new(last)).map_err(self.io(layer, &full))?;
                let opaque = sys::is_opaque(dir.as_fd()).map_err(self.io(layer, &full))?;
                Some((dir, opaque))
            }
            _ => None,
        };
        Ok(Probe::Found { stat, target, dir })
    }

    /// Maps an OS error on `path` in `layer` to one naming the host path.
    fn io(&self, layer: &Layer, path: &Path) -> impl FnOnce(io::Error) -> WorkspaceError {
        WorkspaceError::io(layer.dir.join(path))
    }

    /// The descriptor of layer `index`'s root, for the single-layer walker.
    fn root(&self, index: usize) -> Result<(&Layer, BorrowedFd<'_>)> {
        let layer = self.layer(index)?;
        Ok((layer, layer.root.as_fd()))
    }
}

/// Why the merged view has no directory at the workspace path `path`.
fn not_a_directory(path: &Path, kind: io::ErrorKind) -> WorkspaceError {
    WorkspaceError::Io {
        path: path.to_path_buf(),
        error: kind.into(),
    }
}

/// Stat of `name` in `dir`, and its target if it is a symlink.
fn entry(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<(Stat, Option<OsString>)> {
    let stat = sys::stat_entry(dir, name)?;
    let target = match sys::entry_type(&stat) {
        EntryType::Symlink => Some(sys::read_link(dir, name)?),
        _ => None,
    };
    Ok((stat, target))
}

fn node(stat: &Stat, target: Option<OsString>, layer: usize) -> Node {
    let kind = match (sys::entry_type(stat), target) {
        (EntryType::File, _) => NodeKind::File,
        (EntryType::Dir, _) => NodeKind::Dir,
        (EntryType::Symlink, Some(target)) => NodeKind::Symlink(target),
        // A symlink whose target was not read cannot happen (`entry` reads
        // it); call it special rather than invent a target.
        (EntryType::Symlink, None) | (EntryType::Whiteout | EntryType::Special, _) => {
            NodeKind::Special
        }
    };
    Node {
        kind,
        mode: sys::permissions(stat),
        size: sys::size(stat),
        layer,
        mtime: sys::mtime(stat),
    }
}

/// The names of a workspace-relative path: `.` components dropped, `..`
/// and absolute paths refused.
pub(crate) fn components(path: &Path) -> Result<Vec<&OsStr>> {
    let mut names = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(WorkspaceError::Invalid(format!(
                    "{} is not a path inside the workspace: use a relative path without `..`",
                    path.display()
                )));
            }
        }
    }
    Ok(names)
}
