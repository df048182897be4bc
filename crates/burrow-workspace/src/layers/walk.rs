//! Listing one layer on its own, not merged: what an upper layer touched.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rustix::fd::AsFd;

use super::sys::{self, EntryType};
use super::{LayerStack, entry};
use crate::error::Result;

/// An entry of a single layer, as [`LayerStack::walk_layer`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerEntry {
    /// What the entry is.
    pub kind: LayerEntryKind,
    /// Permission bits, without the file type.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
}

/// The kinds of [`LayerEntry`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerEntryKind {
    /// A regular file.
    File,
    /// A directory; `opaque` when it hides what lower layers have beneath it.
    Dir {
        /// Marked opaque.
        opaque: bool,
    },
    /// A symlink and its target (never followed).
    Symlink(OsString),
    /// A deletion of this path from the layers below.
    Whiteout,
    /// A FIFO, socket or device.
    Special,
}

impl LayerEntryKind {
    /// Whether this entry hides everything lower layers have beneath its
    /// path: a whiteout, an opaque directory or any non-directory.
    pub fn hides_below(&self) -> bool {
        !matches!(self, LayerEntryKind::Dir { opaque: false })
    }
}

impl LayerStack {
    /// Every entry of layer `index` alone (0 = topmost), whiteouts included,
    /// with paths relative to the layer root, parents before children
    /// (sorted by path components). Symlinks are listed, never entered.
    pub fn walk_layer(&self, index: usize) -> Result<Vec<(PathBuf, LayerEntry)>> {
        let (layer, root) = self.root(index)?;
        let mut out = Vec::new();
        // Directories still to list, by path from the layer root: each is
        // opened from the root with symlinks refused, so no descriptor per
        // level is held and a directory swapped for a link is an error.
        let mut pending = vec![PathBuf::new()];
        while let Some(dir_path) = pending.pop() {
            let dir = sys::open_dir(root, &dir_path).map_err(self.io(layer, &dir_path))?;
            let names = sys::list(dir.as_fd()).map_err(self.io(layer, &dir_path))?;
            for name in names {
                let path = dir_path.join(&name);
                let (stat, target) = entry(dir.as_fd(), &name).map_err(self.io(layer, &path))?;
                let kind = match (sys::entry_type(&stat), target) {
                    (EntryType::File, _) => LayerEntryKind::File,
                    (EntryType::Dir, _) => {
                        let sub = sys::open_dir(dir.as_fd(), Path::new(&name))
                            .map_err(self.io(layer, &path))?;
                        let opaque = sys::is_opaque(sub.as_fd()).map_err(self.io(layer, &path))?;
                        pending.push(path.clone());
                        LayerEntryKind::Dir { opaque }
                    }
                    (EntryType::Symlink, Some(target)) => LayerEntryKind::Symlink(target),
                    (EntryType::Whiteout, _) => LayerEntryKind::Whiteout,
                    (EntryType::Symlink, None) | (EntryType::Special, _) => LayerEntryKind::Special,
                };
                let entry = LayerEntry {
                    kind,
                    mode: sys::permissions(&stat),
                    size: sys::size(&stat),
                    mtime: sys::mtime(&stat),
                };
                out.push((path, entry));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}
