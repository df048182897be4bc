//! What changed in a workspace, file by file, as `git diff` would report it.
//!
//! [`changes`] compares the merged view of the current layers with a
//! baseline (the seed, or the layers up to a snapshot) and lists the
//! non-directories that were added, modified or deleted, sorted by path.
//! In overlay mode the top layers hold every change, so only the paths they
//! name are looked at ([`Scope::TopLayers`]): the cost follows the size of
//! the change, not of the workspace. [`render`] turns the changes into a
//! git-style patch for `burrow diff`.
//!
//! Everything is read through [`LayerStack`], which never follows a link
//! that code in the cell planted.

mod render;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, WorkspaceError};
use crate::layers::{LayerStack, Node, NodeKind};

pub use render::{Rendered, render, stat_line};

/// Files are compared this many bytes at a time, so that no file is ever
/// loaded whole.
const COMPARE_CHUNK: usize = 64 * 1024;

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Not in the baseline (or a directory there), a non-directory now.
    Added,
    /// A non-directory in both, with a different kind, content, symlink
    /// target or permission bits.
    Modified,
    /// A non-directory in the baseline, absent (or a directory) now.
    Deleted,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Workspace-relative path.
    pub path: PathBuf,
    /// How it changed.
    pub kind: ChangeKind,
    /// What the baseline has there; `None` when added.
    pub old: Option<Node>,
    /// What the current view has there; `None` when deleted.
    pub new: Option<Node>,
}

/// Which paths [`changes`] considers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Overlay mode: the top `n` layers of the current stack hold every
    /// change, and the baseline is the layers below them. Only what those
    /// layers name is compared, plus the baseline's subtrees they delete or
    /// cover.
    TopLayers(usize),
    /// Copy mode: both trees are walked whole.
    Everything,
}

/// The non-directories that differ between `baseline` and `current`, sorted
/// by path (byte order, as git sorts).
pub fn changes(
    current: &LayerStack,
    baseline: &LayerStack,
    scope: Scope,
) -> Result<Vec<FileChange>> {
    let mut out = Vec::new();
    match scope {
        Scope::TopLayers(count) => {
            if count > current.len() {
                return Err(WorkspaceError::Invalid(format!(
                    "cannot diff the top {count} layers of a stack of {}",
                    current.len()
                )));
            }
            for (path, old) in candidates(current, baseline, count)? {
                let new = current.lookup(&path)?;
                out.extend(compare(current, baseline, path, old, new)?);
            }
        }
        Scope::Everything => {
            let mut before: BTreeMap<PathBuf, Node> =
                baseline.walk(Path::new(""))?.into_iter().collect();
            for (path, new) in current.walk(Path::new(""))? {
                let old = before.remove(&path);
                out.extend(compare(current, baseline, path, old, Some(new))?);
            }
            for (path, old) in before {
                out.extend(compare(current, baseline, path, Some(old), None)?);
            }
        }
    }
    out.sort_by(|a, b| by_bytes(&a.path, &b.path));
    Ok(out)
}

/// The paths the top `count` layers may have changed, each with what the
/// baseline has there: every path those layers name, and, beneath a path
/// where one of them deletes or covers a baseline directory (a whiteout, an
/// opaque directory, a non-directory), every path of the baseline's subtree.
fn candidates(
    current: &LayerStack,
    baseline: &LayerStack,
    count: usize,
) -> Result<BTreeMap<PathBuf, Option<Node>>> {
    // Path -> whether some top layer hides what lies beneath it.
    let mut touched: BTreeMap<PathBuf, bool> = BTreeMap::new();
    for index in 0..count {
        for (path, entry) in current.walk_layer(index)? {
            *touched.entry(path).or_default() |= entry.kind.hides_below();
        }
    }
    let mut found = BTreeMap::new();
    // `touched` is in pre-order, so a subtree already walked is recognised
    // by its root being a prefix of the paths that follow.
    let mut walked: Option<PathBuf> = None;
    for (path, hides) in touched {
        let inside_walked = walked.as_ref().is_some_and(|root| path.starts_with(root));
        if inside_walked {
            // The walk listed all the baseline has there: a path it did not
            // list is not in the baseline.
            found.entry(path).or_insert(None);
            continue;
        }
        let old = baseline.lookup(&path)?;
        if hides && old.as_ref().is_some_and(|node| node.kind == NodeKind::Dir) {
            found.extend(
                baseline
                    .walk(&path)?
                    .into_iter()
                    .map(|(sub, node)| (sub, Some(node))),
            );
            walked = Some(path.clone());
        }
        found.insert(path, old);
    }
    Ok(found)
}

/// The change at `path`, if any. Directories are not changes themselves.
fn compare(
    current: &LayerStack,
    baseline: &LayerStack,
    path: PathBuf,
    old: Option<Node>,
    new: Option<Node>,
) -> Result<Option<FileChange>> {
    let old = old.filter(|node| node.kind != NodeKind::Dir);
    let new = new.filter(|node| node.kind != NodeKind::Dir);
    let kind = match (&old, &new) {
        (None, None) => return Ok(None),
        (None, Some(_)) => ChangeKind::Added,
        (Some(_), None) => ChangeKind::Deleted,
        (Some(before), Some(after)) => {
            if same(current, baseline, &path, before, after)? {
                return Ok(None);
            }
            ChangeKind::Modified
        }
    };
    Ok(Some(FileChange {
        path,
        kind,
        old,
        new,
    }))
}

/// Whether two non-directories are the same as far as a diff goes.
fn same(
    current: &LayerStack,
    baseline: &LayerStack,
    path: &Path,
    old: &Node,
    new: &Node,
) -> Result<bool> {
    Ok(match (&old.kind, &new.kind) {
        (NodeKind::File, NodeKind::File) => {
            old.mode == new.mode
                && old.size == new.size
                && same_content(current, baseline, path, old, new)?
        }
        (NodeKind::Symlink(before), NodeKind::Symlink(after)) => before == after,
        // Never opened: only their permission bits can be compared.
        (NodeKind::Special, NodeKind::Special) => old.mode == new.mode,
        _ => false,
    })
}

/// Compares two regular files chunk by chunk.
fn same_content(
    current: &LayerStack,
    baseline: &LayerStack,
    path: &Path,
    old: &Node,
    new: &Node,
) -> Result<bool> {
    let mut before = baseline.open_file(path, old)?;
    let mut after = current.open_file(path, new)?;
    let mut left = vec![0_u8; COMPARE_CHUNK];
    let mut right = vec![0_u8; COMPARE_CHUNK];
    loop {
        let read_left = fill(&mut before, &mut left).map_err(WorkspaceError::io(path))?;
        let read_right = fill(&mut after, &mut right).map_err(WorkspaceError::io(path))?;
        if left.get(..read_left) != right.get(..read_right) {
            return Ok(false);
        }
        if read_left < COMPARE_CHUNK {
            return Ok(true);
        }
    }
}

/// Reads until `buf` is full or the file ends; returns how much was read.
fn fill(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let Some(rest) = buf.get_mut(filled..) else {
            break;
        };
        match file.read(rest) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

fn by_bytes(a: &Path, b: &Path) -> Ordering {
    a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes())
}
