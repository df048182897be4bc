//! Changes as a git-style patch, for `burrow diff`.
//!
//! Text files become unified diffs that `git apply` and `burrow patch`
//! accept. Modes follow git: `100644`, `100755` (owner may execute) and
//! `120000` for a symlink, whose content is its target without a newline.
//! Binary and oversized files get git's `Binary files ... differ` line.
//! What git cannot express gets a one-line note that patch readers skip:
//! special files, and permission changes git's two file modes do not tell
//! apart (`0644` to `0600`).

use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use burrow_patch::{diff_stat, is_binary, render_diff};
use serde::Serialize;

use super::{ChangeKind, FileChange};
use crate::error::{Result, WorkspaceError};
use crate::layers::{Capped, LayerStack, Node, NodeKind};

/// Files larger than this are not shown, only named.
const RENDER_LIMIT: u64 = 8 << 20;

/// The widest `+++--` bar of a [`stat_line`].
const STAT_BAR: usize = 50;

const REGULAR: u32 = 0o100_000;
const SYMLINK: u32 = 0o120_000;

/// One change, rendered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rendered {
    /// Workspace-relative path (lossy UTF-8).
    pub path: String,
    /// How it changed.
    pub status: ChangeKind,
    /// Shown as `Binary files ... differ`: binary, not UTF-8, or too large.
    pub binary: bool,
    /// Lines added.
    pub insertions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// The git-style patch of this path (possibly two sections, when a file
    /// became a symlink or the reverse).
    pub patch: String,
}

/// Renders `changes` (from [`super::changes`] on the same stacks).
pub fn render(
    current: &LayerStack,
    baseline: &LayerStack,
    changes: &[FileChange],
) -> Result<Vec<Rendered>> {
    changes
        .iter()
        .map(|change| render_one(current, baseline, change))
        .collect()
}

/// One line of `git diff --stat`: ` path | 3 ++-`, or ` path | Bin`.
pub fn stat_line(rendered: &Rendered) -> String {
    if rendered.binary {
        return format!(" {} | Bin", rendered.path);
    }
    let total = rendered.insertions + rendered.deletions;
    if total == 0 {
        return format!(" {} | 0", rendered.path);
    }
    let scale = |count: usize| {
        if total <= STAT_BAR || count == 0 {
            count
        } else {
            (count * STAT_BAR / total).max(1)
        }
    };
    format!(
        " {} | {total} {}{}",
        rendered.path,
        "+".repeat(scale(rendered.insertions)),
        "-".repeat(scale(rendered.deletions)),
    )
}

/// One side of a change, loaded for rendering.
enum Side {
    /// A file's content or a symlink's target, with its git file type.
    Content {
        bytes: Vec<u8>,
        kind: u32,
        perm: u32,
    },
    /// A file too large to show.
    TooLarge { size: u64, perm: u32 },
    /// A FIFO, socket or device.
    Special,
}

impl Side {
    fn load(stack: &LayerStack, path: &Path, node: &Node) -> Result<Side> {
        Ok(match &node.kind {
            NodeKind::File => match stack.read_capped(path, node, RENDER_LIMIT)? {
                Capped::Content(bytes) => Side::Content {
                    bytes,
                    kind: REGULAR,
                    perm: node.mode,
                },
                Capped::TooLarge(size) => Side::TooLarge {
                    size,
                    perm: node.mode,
                },
            },
            NodeKind::Symlink(target) => Side::Content {
                bytes: target.as_bytes().to_vec(),
                kind: SYMLINK,
                perm: 0o777,
            },
            NodeKind::Special => Side::Special,
            NodeKind::Dir => {
                return Err(WorkspaceError::Invalid(format!(
                    "{} is a directory, not a file change",
                    path.display()
                )));
            }
        })
    }

    /// The bytes to diff, if they were loaded.
    fn content(&self) -> Option<&[u8]> {
        match self {
            Side::Content { bytes, .. } => Some(bytes),
            Side::TooLarge { .. } | Side::Special => None,
        }
    }

    /// git's file type bits, `None` for a special file.
    fn kind(&self) -> Option<u32> {
        match self {
            Side::Content { kind, .. } => Some(*kind),
            Side::TooLarge { .. } => Some(REGULAR),
            Side::Special => None,
        }
    }

    fn perm(&self) -> u32 {
        match self {
            Side::Content { perm, .. } | Side::TooLarge { perm, .. } => *perm,
            Side::Special => 0,
        }
    }
}

/// The rendering under way of one path.
struct Output {
    patch: String,
    binary: bool,
    insertions: usize,
    deletions: usize,
}

fn render_one(
    current: &LayerStack,
    baseline: &LayerStack,
    change: &FileChange,
) -> Result<Rendered> {
    let name = change.path.to_string_lossy().into_owned();
    let old = change
        .old
        .as_ref()
        .map(|node| Side::load(baseline, &change.path, node))
        .transpose()?;
    let new = change
        .new
        .as_ref()
        .map(|node| Side::load(current, &change.path, node))
        .transpose()?;
    let mut out = Output {
        patch: String::new(),
        binary: false,
        insertions: 0,
        deletions: 0,
    };
    match (&old, &new) {
        // Same git type (or both special): one section.
        (Some(before), Some(after)) if before.kind() == after.kind() => {
            section(&mut out, &name, Some(before), Some(after));
        }
        // git shows a change of type as a deletion and an addition.
        _ => {
            if old.is_some() {
                section(&mut out, &name, old.as_ref(), None);
            }
            if new.is_some() {
                section(&mut out, &name, None, new.as_ref());
            }
        }
    }
    Ok(Rendered {
        path: name,
        status: change.kind,
        binary: out.binary,
        insertions: out.insertions,
        deletions: out.deletions,
        patch: out.patch,
    })
}

/// Appends the section for one change of one path.
fn section(out: &mut Output, name: &str, old: Option<&Side>, new: Option<&Side>) {
    if matches!(old, Some(Side::Special)) || matches!(new, Some(Side::Special)) {
        let what = match (old, new) {
            (Some(_), Some(_)) => "changed",
            (Some(_), None) => "deleted",
            _ => "added",
        };
        // Not a patch line: `git apply` and `burrow patch` skip it.
        let _ = writeln!(
            out.patch,
            "Special file {name} {what} (a FIFO, socket or device; not shown)"
        );
        return;
    }
    let (old_mode, new_mode) = (old.map(git_mode), new.map(git_mode));
    let note = permissions_note(name, old, new);
    let mode_lines = match (old_mode, new_mode) {
        (None, Some(mode)) => format!("new file mode {mode:o}\n"),
        (Some(mode), None) => format!("deleted file mode {mode:o}\n"),
        (Some(before), Some(after)) if before != after => {
            format!("old mode {before:o}\nnew mode {after:o}\n")
        }
        _ => String::new(),
    };
    let too_large = [old, new]
        .into_iter()
        .flatten()
        .filter_map(|side| match side {
            Side::TooLarge { size, .. } => Some(*size),
            _ => None,
        })
        .max();
    if let Some(size) = too_large {
        // Ends in " differ" so that git (and burrow's parser) read it as a
        // binary change rather than an empty one.
        out.binary = true;
        let old_label = label("a", name, old.is_some());
        let new_label = label("b", name, new.is_some());
        let _ = writeln!(
            out.patch,
            "{}{mode_lines}Binary files {old_label} and {new_label} (too large to show: {size} bytes) differ",
            git_header(name),
        );
        out.patch.push_str(note.as_deref().unwrap_or_default());
        return;
    }
    let (before, after) = (old.and_then(Side::content), new.and_then(Side::content));
    let text = render_diff(name, name, before, after);
    // render_diff writes `diff --git`, then `new file mode 100644` or
    // `deleted file mode 100644` for an addition or deletion; its mode is
    // replaced with the real one, and mode changes go after the first line.
    let (first, rest) = match text.split_once('\n') {
        Some((first, rest)) => (format!("{first}\n"), rest),
        None => (git_header(name), ""),
    };
    let rest = rest
        .strip_prefix("new file mode 100644\n")
        .or_else(|| rest.strip_prefix("deleted file mode 100644\n"))
        .unwrap_or(rest);
    if !text.is_empty() || !mode_lines.is_empty() {
        out.patch.push_str(&first);
        out.patch.push_str(&mode_lines);
        out.patch.push_str(rest);
    }
    out.patch.push_str(note.as_deref().unwrap_or_default());
    // render_diff shows content that is not UTF-8 as binary too.
    let is_text = |bytes: Option<&[u8]>| {
        bytes.is_none_or(|bytes| !is_binary(bytes) && std::str::from_utf8(bytes).is_ok())
    };
    if is_text(before) && is_text(after) {
        let stat = diff_stat(before, after);
        out.insertions += stat.added;
        out.deletions += stat.removed;
    } else {
        out.binary = true;
    }
}

/// git's mode of one side: `100644`, `100755` (the owner may execute) or
/// `120000`.
fn git_mode(side: &Side) -> u32 {
    match side.kind() {
        Some(SYMLINK) => SYMLINK,
        _ if side.perm() & 0o100 != 0 => REGULAR | 0o755,
        _ => REGULAR | 0o644,
    }
}

/// A note for a change of permissions git's modes do not record (`0644` to
/// `0600`, a setuid bit): patch readers skip it, a reader sees it.
fn permissions_note(name: &str, old: Option<&Side>, new: Option<&Side>) -> Option<String> {
    let (Some(before), Some(after)) = (old, new) else {
        return None;
    };
    let (from, to) = (before.perm() & 0o7777, after.perm() & 0o7777);
    let regular = before.kind() == Some(REGULAR) && after.kind() == Some(REGULAR);
    (regular && from != to && git_mode(before) == git_mode(after)).then(|| {
        format!(
            "Permissions of {name} changed from {from:04o} to {to:04o} \
             (git records only the executable bit)\n"
        )
    })
}

/// `a/NAME` (quoted as git does), or `/dev/null` for an absent side.
fn label(prefix: &str, name: &str, present: bool) -> String {
    if present {
        burrow_patch::quote_path(&format!("{prefix}/{name}"))
    } else {
        "/dev/null".to_string()
    }
}

fn git_header(name: &str) -> String {
    format!(
        "diff --git {} {}\n",
        burrow_patch::quote_path(&format!("a/{name}")),
        burrow_patch::quote_path(&format!("b/{name}"))
    )
}
