//! The two error types: reading a patch, and applying it.

use thiserror::Error;

/// Why a patch could not be parsed. Every message is one line.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PatchError {
    /// No file section was found.
    #[error("the patch is empty")]
    Empty,
    /// The patch text is not a well-formed unified diff.
    #[error("patch line {line}: {message}")]
    Malformed {
        /// 1-based line of the patch text.
        line: usize,
        /// What is wrong there.
        message: String,
    },
    /// A `GIT binary patch` or `Binary files ... differ` section.
    #[error("binary patches are not supported (file {})", one_line(.path))]
    Binary {
        /// The file the binary section is for.
        path: String,
    },
    /// A path that is absolute or climbs out with `..`.
    #[error("patch path escapes the workspace: {}", one_line(.path))]
    PathEscapes {
        /// The path as the patch writes it.
        path: String,
    },
    /// A path that cannot name a workspace file (empty, NUL, `.` ...).
    #[error("patch path is invalid ({reason}): {}", one_line(.path))]
    InvalidPath {
        /// The path as the patch writes it.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Why a parsed patch does not apply to the workspace. Every message is one
/// line and starts with the file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ApplyError {
    /// A hunk's context and removed lines are nowhere in the file.
    #[error("{}: hunk {hunk} at line {line} does not apply", one_line(.path))]
    HunkFailed {
        /// The file the hunk is for.
        path: String,
        /// 1-based number of the hunk within its file.
        hunk: usize,
        /// The old-side line its header names.
        line: usize,
    },
    /// The patch creates a file (or renames/copies onto one) that exists.
    #[error("{}: already exists", one_line(.path))]
    AlreadyExists {
        /// The existing path.
        path: String,
    },
    /// The patch modifies, deletes, renames or copies a file that is absent.
    #[error("{}: does not exist", one_line(.path))]
    Missing {
        /// The absent path.
        path: String,
    },
    /// The patch deletes a file whose content is not what the patch removes.
    #[error("{}: the patch deletes it but its content differs", one_line(.path))]
    DeleteMismatch {
        /// The file to delete.
        path: String,
    },
    /// Two sections of the patch change the same path.
    #[error("{}: the patch changes it more than once", one_line(.path))]
    Duplicate {
        /// The path changed twice.
        path: String,
    },
    /// The [`PatchSource`](crate::PatchSource) could not read the file.
    #[error("{}: cannot be read: {}", one_line(.path), one_line(.reason))]
    Read {
        /// The file being read.
        path: String,
        /// The source's reason.
        reason: String,
    },
}

impl ApplyError {
    /// The workspace path the error is about.
    pub fn path(&self) -> &str {
        match self {
            Self::HunkFailed { path, .. }
            | Self::AlreadyExists { path }
            | Self::Missing { path }
            | Self::DeleteMismatch { path }
            | Self::Duplicate { path }
            | Self::Read { path, .. } => path,
        }
    }

    /// The old-side line of the failing hunk, when a hunk failed.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::HunkFailed { line, .. } => Some(*line),
            _ => None,
        }
    }
}

/// Escapes control characters so a path or reason cannot break the message
/// over several lines (git allows `\n` in file names).
pub(crate) fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
