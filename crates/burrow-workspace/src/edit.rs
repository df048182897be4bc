//! Multi-file changes through the agent, all or nothing: applying a patch, importing a tree.

use std::collections::BTreeMap;
use std::path::Path;

use burrow_patch::{Change, PatchSource};
use burrow_proto::EntryKind;
use serde::Serialize;

use crate::archive::{EntryKind as ImportKind, ImportLimits, Source};
use crate::client::AgentClient;
use crate::error::{Result, WorkspaceError};
use crate::undo::UndoLog;

/// What a patch did to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatchedFile {
    /// The path.
    pub path: String,
    /// `written` or `deleted`.
    pub action: &'static str,
}

/// Reads the files a patch touches through the agent, keeping each file's mode.
struct AgentSource<'a> {
    client: &'a mut AgentClient,
    limit: u64,
    modes: BTreeMap<String, u32>,
}

impl PatchSource for AgentSource<'_> {
    fn read(&mut self, path: &str) -> std::result::Result<Option<Vec<u8>>, String> {
        let entry = match self.client.stat(path) {
            Ok(None) => return Ok(None),
            Ok(Some(entry)) => entry,
            Err(error) => return Err(error.to_string()),
        };
        if entry.kind == EntryKind::Directory {
            return Err(format!("{path} is a directory"));
        }
        self.modes.insert(path.to_owned(), entry.mode & 0o777);
        self.client
            .read_whole(path, self.limit)
            .map(Some)
            .map_err(|error| error.to_string())
    }
}

/// Checks a unified diff against the workspace entirely, then applies it all or nothing.
pub fn apply_patch(
    client: &mut AgentClient,
    text: &[u8],
    max_write: u64,
) -> Result<Vec<PatchedFile>> {
    let patch = burrow_patch::parse(text)
        .map_err(|error| WorkspaceError::Invalid(format!("invalid patch: {error}")))?;
    let mut source = AgentSource {
        client,
        limit: max_write,
        modes: BTreeMap::new(),
    };
    let mut changes = burrow_patch::plan(&patch, &mut source)
        .map_err(|error| WorkspaceError::Invalid(format!("the patch does not apply: {error}")))?;
    let modes = std::mem::take(&mut source.modes);
    // A renamed or copied file keeps its mode (an executable stays executable) unless the
    // patch sets one.
    for file in &patch.files {
        let (Some(old), Some(new)) = (&file.old_path, &file.new_path) else {
            continue;
        };
        if old == new || file.new_mode.is_some() {
            continue;
        }
        let Some(&mode) = modes.get(old) else {
            continue;
        };
        for change in &mut changes {
            if let Change::Write {
                path,
                mode: wanted @ None,
                ..
            } = change
                && path == new
            {
                *wanted = Some(mode);
            }
        }
    }
    for change in &changes {
        if let Change::Write { path, content, .. } = change
            && content.len() as u64 > max_write
        {
            return Err(WorkspaceError::Invalid(format!(
                "{path}: the patched file would be {} bytes, more than the {max_write} a write may carry",
                content.len()
            )));
        }
    }

    let mut undo = UndoLog::default();
    let mut done = Vec::new();
    for change in &changes {
        let result = apply_change(client, &mut undo, change, max_write);
        match result {
            Ok(file) => done.push(file),
            Err(error) => return Err(rolled_back(client, undo, &error)),
        }
    }
    Ok(done)
}

fn apply_change(
    client: &mut AgentClient,
    undo: &mut UndoLog,
    change: &Change,
    max_write: u64,
) -> Result<PatchedFile> {
    match change {
        Change::Write {
            path,
            content,
            mode,
        } => {
            remember_with_parents(client, undo, path, max_write)?;
            let mode = mode.map(|mode| mode & 0o777);
            client.write_file(path, content, mode, true)?;
            Ok(PatchedFile {
                path: path.clone(),
                action: "written",
            })
        }
        Change::Delete { path } => {
            undo.remember(client, path, max_write)?;
            client.remove(path, false)?;
            Ok(PatchedFile {
                path: path.clone(),
                action: "deleted",
            })
        }
    }
}

/// Records `path` and each of its missing parent directories (which a write with parents
/// creates, and undoing removes).
fn remember_with_parents(
    client: &mut AgentClient,
    undo: &mut UndoLog,
    path: &str,
    limit: u64,
) -> Result<()> {
    let mut prefix = String::new();
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        undo.remember(client, &prefix, limit)?;
    }
    undo.remember(client, path, limit)
}

fn rolled_back(client: &mut AgentClient, undo: UndoLog, error: &WorkspaceError) -> WorkspaceError {
    let failed = undo.roll_back(client);
    if failed.is_empty() {
        WorkspaceError::Invalid(format!("{error}; nothing was changed"))
    } else {
        WorkspaceError::Invalid(format!(
            "{error}; and these could not be restored: {}",
            failed.join(", ")
        ))
    }
}

/// What an import wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportSummary {
    /// Files written.
    pub files: u64,
    /// Directories created.
    pub directories: u64,
    /// Symbolic links created.
    pub symlinks: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Imports a host directory or tarball under `dest` in the workspace, all or nothing. Every
/// entry is checked before anything is written.
pub fn import(
    client: &mut AgentClient,
    source: &Path,
    dest: &str,
    limits: &ImportLimits,
) -> Result<ImportSummary> {
    let source = Source::open(source)?;
    let entries = source.scan(limits)?;
    let dest = dest.trim_end_matches('/');
    let dest = if dest.is_empty() { "." } else { dest };
    match client.stat(dest)? {
        Some(entry) if entry.kind != EntryKind::Directory => {
            return Err(WorkspaceError::Invalid(format!(
                "--dest {dest}: is not a directory"
            )));
        }
        _ => {}
    }
    let mut undo = UndoLog::default();
    let mut summary = ImportSummary::default();
    let result = source.visit(&entries, &mut |entry, content| {
        let path = if dest == "." {
            entry.path.clone()
        } else {
            format!("{dest}/{}", entry.path)
        };
        remember_with_parents(client, &mut undo, &path, limits.max_file)?;
        match &entry.kind {
            ImportKind::Dir => {
                if !undo.was_directory(&path) {
                    client.mkdir(&path, true)?;
                    summary.directories += 1;
                }
            }
            ImportKind::File { size } => {
                let mut bytes = Vec::with_capacity(*size as usize);
                if let Some(reader) = content {
                    reader.read_to_end(&mut bytes).map_err(|error| {
                        WorkspaceError::Invalid(format!("{}: {error}", entry.path))
                    })?;
                }
                if undo.was_directory(&path) {
                    return Err(WorkspaceError::Invalid(format!(
                        "{path}: is a directory in the workspace"
                    )));
                }
                client.write_file(&path, &bytes, Some(entry.mode & 0o777), true)?;
                summary.files += 1;
                summary.bytes += bytes.len() as u64;
            }
            ImportKind::Symlink { target } => {
                if undo.was_directory(&path) {
                    return Err(WorkspaceError::Invalid(format!(
                        "{path}: is a directory in the workspace"
                    )));
                }
                let _ = client.remove(&path, false);
                client.symlink(&path, target)?;
                summary.symlinks += 1;
            }
        }
        Ok(())
    });
    match result {
        Ok(()) => Ok(summary),
        Err(error) => Err(rolled_back(client, undo, &error)),
    }
}
