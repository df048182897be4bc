//! All-or-nothing changes through the agent: what each path held before a multi-file change
//! (a patch, an import) touched it, so that a failure half-way puts everything back.

use burrow_proto::EntryKind;

use crate::client::AgentClient;
use crate::error::{Result, WorkspaceError};

/// What a path held before the change.
#[derive(Debug)]
enum Original {
    /// Nothing: undoing removes what the change created.
    Absent,
    /// A file with this content and mode.
    File { content: Vec<u8>, mode: u32 },
    /// A symbolic link.
    Symlink { target: String },
    /// A directory that existed: left alone.
    Directory,
}

/// The originals of the paths changed so far, in the order they were first touched.
#[derive(Debug, Default)]
pub struct UndoLog {
    originals: Vec<(String, Original)>,
}

impl UndoLog {
    /// Records what `path` holds now, unless it was recorded already. `limit` bounds the size
    /// of a file kept (a larger one cannot be restored, so the change is refused up front).
    pub fn remember(&mut self, client: &mut AgentClient, path: &str, limit: u64) -> Result<()> {
        if self.originals.iter().any(|(known, _)| known == path) {
            return Ok(());
        }
        let original = match client.stat(path)? {
            None => Original::Absent,
            Some(entry) => match entry.kind {
                EntryKind::Directory => Original::Directory,
                EntryKind::Symlink => Original::Symlink {
                    target: entry.target.unwrap_or_default(),
                },
                EntryKind::File => Original::File {
                    content: client.read_whole(path, limit)?,
                    mode: entry.mode & 0o777,
                },
                EntryKind::Other => {
                    return Err(WorkspaceError::Invalid(format!(
                        "{path}: is a special file; remove it first"
                    )));
                }
            },
        };
        self.originals.push((path.to_owned(), original));
        Ok(())
    }

    /// Whether `path` was a directory before the change (after [`UndoLog::remember`]).
    pub fn was_directory(&self, path: &str) -> bool {
        self.originals
            .iter()
            .any(|(known, original)| known == path && matches!(original, Original::Directory))
    }

    /// Puts every recorded path back, newest first. Best effort: the agent may be the reason
    /// the change failed; what could not be restored is returned.
    pub fn roll_back(self, client: &mut AgentClient) -> Vec<String> {
        let mut failed = Vec::new();
        for (path, original) in self.originals.into_iter().rev() {
            let restored = match original {
                Original::Directory => Ok(()),
                Original::Absent => match client.stat(&path) {
                    Ok(None) => Ok(()),
                    Ok(Some(entry)) => client.remove(&path, entry.kind == EntryKind::Directory),
                    Err(error) => Err(error),
                },
                Original::File { content, mode } => {
                    client.write_file(&path, &content, Some(mode), true)
                }
                Original::Symlink { target } => {
                    let _ = client.remove(&path, false);
                    client.symlink(&path, &target)
                }
            };
            if restored.is_err() {
                failed.push(path);
            }
        }
        failed
    }
}
