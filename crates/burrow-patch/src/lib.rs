//! Unified diffs for burrow workspaces.
//!
//! Three jobs, none of which touches the filesystem:
//!
//! - [`parse()`] reads a patch as `git diff`, `git format-patch` or
//!   `diff -ruN` print it, with any number of files, into a [`Patch`]. Every
//!   path is checked to stay inside the workspace.
//! - [`plan()`] checks the whole patch against the current contents of the
//!   files it touches, read through a [`PatchSource`], and returns the
//!   [`Change`]s that make the result. Either every file applies or nothing
//!   is returned but the first [`ApplyError`]; the caller writes the changes.
//! - [`render_diff`] prints a git-style unified diff of one file, for
//!   `burrow diff`; [`diff_stat`] counts its lines.
//!
//! ```
//! use std::collections::BTreeMap;
//! use burrow_patch::{Change, parse, plan, render_diff};
//!
//! let old = b"fn main() {\n    println!(\"hi\");\n}\n";
//! let new = b"fn main() {\n    println!(\"hello\");\n}\n";
//! let diff = render_diff("src/main.rs", "src/main.rs", Some(old), Some(new));
//! assert!(diff.starts_with("diff --git a/src/main.rs b/src/main.rs\n"));
//!
//! let patch = parse(diff.as_bytes())?;
//! let mut workspace = BTreeMap::from([("src/main.rs".to_string(), old.to_vec())]);
//! let changes = plan(&patch, &mut workspace)?;
//! assert_eq!(
//!     changes,
//!     vec![Change::Write { path: "src/main.rs".into(), content: new.to_vec(), mode: None }],
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod apply;
mod error;
mod parse;
mod path;
mod plan;
mod render;

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

pub use error::{ApplyError, PatchError};
pub use parse::parse;
pub use path::quote as quote_path;
pub use plan::plan;
pub use render::{DiffStat, diff_stat, is_binary, render_diff};

/// A parsed patch: one entry per file section, in the order of the patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The file sections.
    pub files: Vec<FilePatch>,
}

/// What a patch does to one file.
///
/// `old_path == new_path` is a modification (or a mode change), different
/// paths a rename, or a copy when [`FilePatch::is_copy`] is set. Paths are
/// relative to the workspace, already stripped of git's `a/` and `b/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// The file before the patch; `None` for a new file.
    pub old_path: Option<String>,
    /// The file after the patch; `None` for a deleted file.
    pub new_path: Option<String>,
    /// From git's `old mode` or `deleted file mode` line, e.g. `0o100644`.
    pub old_mode: Option<u32>,
    /// From git's `new mode` or `new file mode` line, e.g. `0o100755`.
    pub new_mode: Option<u32>,
    /// Git's `copy from`/`copy to`: the new file starts as a copy of the old
    /// one, which stays.
    pub is_copy: bool,
    /// The hunks, in file order.
    pub hunks: Vec<Hunk>,
}

/// One `@@ -l,s +l,s @@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// First line of the old side (1-based; for an empty old side, the line
    /// after which the new lines go, 0 for the start of the file).
    pub old_start: usize,
    /// Number of old-side lines (context and removed).
    pub old_lines: usize,
    /// First line of the new side, as `old_start`.
    pub new_start: usize,
    /// Number of new-side lines (context and added).
    pub new_lines: usize,
    /// The lines, in patch order.
    pub lines: Vec<HunkLine>,
    /// The old side's last line has no final newline
    /// (`\ No newline at end of file` after it).
    pub old_missing_newline: bool,
    /// The new side's last line has no final newline.
    pub new_missing_newline: bool,
}

/// One line of a hunk: its bytes without the `'\n'` (a CRLF file keeps its
/// `'\r'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// A line both sides have (` `).
    Context(Vec<u8>),
    /// A line only the old side has (`-`).
    Removed(Vec<u8>),
    /// A line only the new side has (`+`).
    Added(Vec<u8>),
}

/// Reads the current content of workspace paths for [`plan()`].
pub trait PatchSource {
    /// Reads the current content of a workspace path: `Ok(None)` if it does
    /// not exist, `Err` with a one-line reason if it cannot be read.
    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, String>;
}

impl<S: BuildHasher> PatchSource for HashMap<String, Vec<u8>, S> {
    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self.get(path).cloned())
    }
}

impl PatchSource for BTreeMap<String, Vec<u8>> {
    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self.get(path).cloned())
    }
}

/// One change [`plan()`] asks the caller to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Create or replace `path` with `content`. `mode` is set when the patch
    /// names one (git's `new file mode`/`new mode`, e.g. `0o100755`); `None`
    /// keeps the mode an existing file has, or the caller's default.
    Write {
        /// Workspace-relative path.
        path: String,
        /// The full new content.
        content: Vec<u8>,
        /// The file mode the patch sets, if any.
        mode: Option<u32>,
    },
    /// Remove `path`.
    Delete {
        /// Workspace-relative path.
        path: String,
    },
}
