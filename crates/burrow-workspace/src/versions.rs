//! The workspace's history on the host: its layers, what changed since the baseline (diff),
//! the merged files (export), going back (reset) and freezing the current state (snapshots).
//!
//! With overlayfs, the current changes are the `upper` layer: a reset sets it aside, a
//! snapshot renames it into `layers/ID` and starts an empty one; both cost what the changes
//! cost. In copy mode the workspace is one directory, and a snapshot is a copy of it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::diff::{self, Rendered, Scope};
use crate::error::{Result, WorkspaceError};
use crate::journal;
use crate::layers::LayerStack;
use crate::layout::{SEED_LAYER, WorkspaceDir};
use crate::manager::Workspaces;
use crate::names::{new_id, validate_name};
use crate::store::{SnapshotRecord, StorageMode, Store, WorkspaceRecord};

/// A snapshot as `snapshot list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotInfo {
    /// Its name.
    pub name: String,
    /// Its id.
    pub id: String,
    /// The snapshot it was taken on top of.
    pub parent: Option<String>,
    /// When it was taken (Unix seconds).
    pub created_at: i64,
    /// Whether the workspace currently builds on it.
    pub current: bool,
}

/// The layers of the workspace as it is now, topmost first, and how many of them hold the
/// changes since the baseline.
fn current_layers(dir: &WorkspaceDir, record: &WorkspaceRecord) -> (Vec<PathBuf>, Scope) {
    match record.mode {
        StorageMode::Overlay => {
            let mut layers = vec![dir.upper()];
            layers.extend(record.chain.iter().rev().map(|id| dir.layer(id)));
            let changed = layers.len();
            layers.push(dir.layer(SEED_LAYER));
            (layers, Scope::TopLayers(changed))
        }
        StorageMode::Copy => (vec![dir.tree()], Scope::Everything),
    }
}

impl Workspaces {
    /// What changed since the baseline, rendered as git would, with the workspace's secrets
    /// and redacted types (and `call_rules`') taken out.
    pub fn diff(
        &self,
        name_or_id: &str,
        call_rules: &[burrow_redact::RuleSpec],
    ) -> Result<Vec<Rendered>> {
        let record = self.get(name_or_id)?;
        let dir = self.state().workspace(&record.id);
        let (layers, scope) = current_layers(&dir, &record);
        let current = LayerStack::open(&layers)?;
        let baseline = LayerStack::open(&[dir.layer(SEED_LAYER)])?;
        let changes = diff::changes(&current, &baseline, scope)?;
        let mut rendered = diff::render(&current, &baseline, &changes)?;
        let redactor = self.redactor_of(&record, call_rules)?;
        if !redactor.is_empty() {
            for file in &mut rendered {
                let patch = redactor.redact_all(file.patch.as_bytes());
                file.patch = String::from_utf8_lossy(&patch).into_owned();
                let path = redactor.redact_all(file.path.as_bytes());
                file.path = String::from_utf8_lossy(&path).into_owned();
            }
        }
        Ok(rendered)
    }

    /// Writes the workspace's files (or those under `subpath`) to a host directory or `.tar`,
    /// with its secrets and redacted types (and `call_rules`') taken out.
    pub fn export(
        &self,
        name_or_id: &str,
        subpath: &str,
        output: &Path,
        call_rules: &[burrow_redact::RuleSpec],
    ) -> Result<crate::export::ExportSummary> {
        let record = self.get(name_or_id)?;
        let dir = self.state().workspace(&record.id);
        let subpath = relative_path(subpath)?;
        let (layers, _) = current_layers(&dir, &record);
        let stack = LayerStack::open(&layers)?;
        let redactor = self.redactor_of(&record, call_rules)?;
        crate::export::export(&stack, &subpath, output, Some(&redactor))
    }

    /// The redactor for output of a workspace.
    pub fn redactor_of(
        &self,
        record: &WorkspaceRecord,
        call_rules: &[burrow_redact::RuleSpec],
    ) -> Result<burrow_redact::Redactor> {
        let dir = self.state().workspace(&record.id);
        let rules = crate::info::ExecInfo::read(&dir)
            .map(|info| info.redact)
            .unwrap_or_default();
        crate::redaction::redactor(&dir, &rules, call_rules)
    }

    /// Discards the changes: back to the baseline, or to a snapshot. A running cell is
    /// restarted (its commands are stopped).
    pub fn reset(&mut self, name_or_id: &str, to: Option<&str>) -> Result<()> {
        self.with_cell_stopped(name_or_id, |store, dir, record| {
            let chain = match to {
                None => Vec::new(),
                Some(snapshot) => chain_of(store, record, snapshot)?,
            };
            let trash = dir.trash().join(new_id());
            std::fs::create_dir(&trash).map_err(WorkspaceError::io(&trash))?;
            match record.mode {
                StorageMode::Overlay => {
                    // Set aside, then replaced: a burrow killed in between leaves no upper
                    // layer, which the next start creates empty — the reset, done.
                    move_into(&dir.upper(), &trash)?;
                    move_into(&dir.work(), &trash)?;
                    for path in [dir.upper(), dir.work()] {
                        std::fs::create_dir(&path).map_err(WorkspaceError::io(&path))?;
                    }
                    store.set_chain(&record.id, &chain)?;
                }
                StorageMode::Copy => {
                    let source = match chain.last() {
                        Some(id) => dir.layer(id),
                        None => dir.layer(SEED_LAYER),
                    };
                    let fresh = dir.root().join("tree.new");
                    crate::tree::remove_tree(&fresh)?;
                    crate::tree::copy_tree(&source, &fresh)?;
                    move_into(&dir.tree(), &trash)?;
                    std::fs::rename(&fresh, dir.tree()).map_err(WorkspaceError::io(dir.tree()))?;
                    store.set_chain(&record.id, &chain)?;
                }
            }
            empty_trash(dir);
            journal::append(
                &dir.journal(),
                &journal::record("reset", to.unwrap_or("baseline")),
            )
        })
    }

    /// Freezes the workspace's current state as a named snapshot. A running cell is restarted.
    pub fn snapshot(&mut self, name_or_id: &str, name: &str) -> Result<SnapshotInfo> {
        validate_name(name)?;
        self.with_cell_stopped(name_or_id, |store, dir, record| {
            if store.snapshots(&record.id)?.iter().any(|s| s.name == name) {
                return Err(WorkspaceError::Invalid(format!(
                    "workspace {name_or_id} already has a snapshot named {name}"
                )));
            }
            let snapshot = SnapshotRecord {
                id: new_id(),
                name: name.to_owned(),
                parent: record.chain.last().cloned(),
                created_at: journal::now_ms() / 1000,
                complete: false,
            };
            store.insert_snapshot(&record.id, &snapshot)?;
            let layer = dir.layer(&snapshot.id);
            let frozen = match record.mode {
                StorageMode::Overlay => freeze_upper(dir, &layer),
                StorageMode::Copy => {
                    let partial = dir.layers().join(format!("{}.new", snapshot.id));
                    crate::tree::copy_tree(&dir.tree(), &partial).and_then(|_| {
                        std::fs::rename(&partial, &layer).map_err(WorkspaceError::io(&layer))
                    })
                }
            };
            if let Err(error) = frozen {
                undo_snapshot(dir, record.mode, &snapshot.id)?;
                store.delete_snapshot(&snapshot.id)?;
                return Err(error);
            }
            let mut chain = record.chain.clone();
            chain.push(snapshot.id.clone());
            store.complete_snapshot(&record.id, &snapshot.id, &chain)?;
            journal::append(&dir.journal(), &journal::record("snapshot", name))?;
            Ok(SnapshotInfo {
                name: snapshot.name,
                id: snapshot.id,
                parent: snapshot.parent,
                created_at: snapshot.created_at,
                current: true,
            })
        })
    }

    /// A workspace's snapshots, oldest first.
    pub fn snapshots(&self, name_or_id: &str) -> Result<Vec<SnapshotInfo>> {
        let record = self.get(name_or_id)?;
        let snapshots = self.store_ref().snapshots(&record.id)?;
        let name_of = |id: &str| {
            snapshots
                .iter()
                .find(|s| s.id == id)
                .map(|s| s.name.clone())
        };
        Ok(snapshots
            .iter()
            .filter(|s| s.complete)
            .map(|s| SnapshotInfo {
                name: s.name.clone(),
                id: s.id.clone(),
                parent: s.parent.as_deref().and_then(name_of),
                created_at: s.created_at,
                current: record.chain.last() == Some(&s.id),
            })
            .collect())
    }

    /// Deletes a snapshot nothing builds on.
    pub fn delete_snapshot(&mut self, name_or_id: &str, snapshot: &str) -> Result<()> {
        let record = self.get(name_or_id)?;
        let dir = self.state().workspace(&record.id);
        let _lock = crate::lock::WorkspaceLock::acquire(&dir.lock())?;
        let record = self.get(&record.id)?;
        let store = self.store();
        let snapshots = store.snapshots(&record.id)?;
        let target = snapshots
            .iter()
            .find(|s| s.complete && (s.name == snapshot || s.id == snapshot))
            .ok_or_else(|| WorkspaceError::SnapshotNotFound {
                workspace: name_or_id.to_owned(),
                snapshot: snapshot.to_owned(),
            })?;
        if record.chain.contains(&target.id) {
            return Err(WorkspaceError::SnapshotInUse(
                snapshot.to_owned(),
                "the workspace builds on it; reset to an earlier state first".to_owned(),
            ));
        }
        if let Some(child) = snapshots
            .iter()
            .find(|s| s.parent.as_deref() == Some(&target.id))
        {
            return Err(WorkspaceError::SnapshotInUse(
                snapshot.to_owned(),
                format!("snapshot {} was taken on top of it", child.name),
            ));
        }
        store.delete_snapshot(&target.id)?;
        let trash = dir.trash().join(new_id());
        std::fs::create_dir(&trash).map_err(WorkspaceError::io(&trash))?;
        move_into(&dir.layer(&target.id), &trash)?;
        empty_trash(&dir);
        Ok(())
    }
}

/// The layers under a snapshot, bottom first, ending with it.
fn chain_of(store: &Store, record: &WorkspaceRecord, snapshot: &str) -> Result<Vec<String>> {
    let snapshots = store.snapshots(&record.id)?;
    let not_found = || WorkspaceError::SnapshotNotFound {
        workspace: record.name.clone().unwrap_or(record.id.clone()),
        snapshot: snapshot.to_owned(),
    };
    let target = snapshots
        .iter()
        .find(|s| s.complete && (s.name == snapshot || s.id == snapshot))
        .ok_or_else(not_found)?;
    let mut chain = vec![target.id.clone()];
    let mut parent = target.parent.clone();
    while let Some(id) = parent {
        if chain.contains(&id) || chain.len() > snapshots.len() {
            return Err(WorkspaceError::Invalid(format!(
                "snapshot {snapshot}'s history is corrupt"
            )));
        }
        let snapshot = snapshots
            .iter()
            .find(|s| s.id == id)
            .ok_or_else(not_found)?;
        chain.push(id);
        parent = snapshot.parent.clone();
    }
    chain.reverse();
    Ok(chain)
}

/// Renames the upper layer into a snapshot layer and starts an empty one.
fn freeze_upper(dir: &WorkspaceDir, layer: &Path) -> Result<()> {
    std::fs::rename(dir.upper(), layer).map_err(WorkspaceError::io(layer))?;
    std::fs::create_dir(dir.upper()).map_err(WorkspaceError::io(dir.upper()))?;
    // overlayfs's scratch directory belongs to the old upper layer.
    let trash = dir.trash().join(new_id());
    std::fs::create_dir(&trash).map_err(WorkspaceError::io(&trash))?;
    move_into(&dir.work(), &trash)?;
    std::fs::create_dir(dir.work()).map_err(WorkspaceError::io(dir.work()))?;
    empty_trash(dir);
    Ok(())
}

/// Puts back what an unfinished snapshot moved: its layer becomes the upper layer again.
pub(crate) fn undo_snapshot(
    dir: &WorkspaceDir,
    mode: StorageMode,
    snapshot_id: &str,
) -> Result<()> {
    let layer = dir.layer(snapshot_id);
    match mode {
        StorageMode::Overlay => {
            if layer.exists() {
                // The new upper layer (if made) is empty: nothing ran on it while the snapshot
                // was unfinished.
                crate::tree::remove_tree(&dir.upper())?;
                std::fs::rename(&layer, dir.upper()).map_err(WorkspaceError::io(dir.upper()))?;
            }
        }
        StorageMode::Copy => {
            crate::tree::remove_tree(&layer)?;
            crate::tree::remove_tree(&dir.layers().join(format!("{snapshot_id}.new")))?;
        }
    }
    Ok(())
}

/// Moves `path` (if it exists) into the directory `trash`.
fn move_into(path: &Path, trash: &Path) -> Result<()> {
    let Some(name) = path.file_name() else {
        return Ok(());
    };
    match std::fs::rename(path, trash.join(name)) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(WorkspaceError::Io {
            path: path.to_owned(),
            error,
        }),
    }
}

/// Removes what was set aside; a failure only leaves garbage for the next recovery.
pub(crate) fn empty_trash(dir: &WorkspaceDir) {
    if let Ok(entries) = std::fs::read_dir(dir.trash()) {
        for entry in entries.flatten() {
            if let Err(error) = crate::tree::remove_tree(&entry.path()) {
                tracing::warn!(%error, "could not remove a discarded layer");
            }
        }
    }
}

/// A workspace path as a relative path for the host-side views: `..` and absolute paths
/// outside /workspace are refused.
fn relative_path(path: &str) -> Result<PathBuf> {
    let trimmed = match path.strip_prefix(burrow_sandbox::WORKSPACE_DIR) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ if path.starts_with('/') => {
            return Err(WorkspaceError::Invalid(format!(
                "{path}: the path leads outside the workspace"
            )));
        }
        _ => path,
    };
    let mut relative = PathBuf::new();
    for part in trimmed.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(WorkspaceError::Invalid(format!(
                    "{path}: `..` is not allowed here"
                )));
            }
            part if part.contains('\0') => {
                return Err(WorkspaceError::Invalid(
                    "a path may not contain a NUL byte".to_owned(),
                ));
            }
            part => relative.push(part),
        }
    }
    Ok(relative)
}
