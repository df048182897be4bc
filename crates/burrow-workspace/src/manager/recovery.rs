//! Recovery: what killed processes left half done is finished or undone by the next process
//! that opens the state, wherever the workspace's lock is free.

use std::path::Path;
use std::time::Duration;

use super::Workspaces;
use crate::cell;
use crate::error::Result;
use crate::journal;
use crate::layout::WorkspaceDir;
use crate::lock::WorkspaceLock;
use crate::names::new_id;
use crate::store::{Lifecycle, WorkspaceRecord};

/// How old a directory in `incoming/` must be before recovery takes it for the leftover of a
/// killed create (a live create locks it within microseconds and moves it within
/// milliseconds).
const STAGING_AGE: Duration = Duration::from_secs(60);

impl Workspaces {
    /// Finishes or undoes what killed processes left half done.
    pub(super) fn recover(&mut self) -> Result<()> {
        // Directories moved aside for removal.
        if let Ok(entries) = std::fs::read_dir(self.state.trash()) {
            for entry in entries.flatten() {
                let path = entry.path();
                if WorkspaceLock::try_acquire(&path.join("lock"))?.is_some() {
                    let _ = crate::tree::remove_tree(&path);
                }
            }
        }
        let records = self.store.list_workspaces()?;
        for record in &records {
            let dir = self.state.workspace(&record.id);
            match record.lifecycle {
                Lifecycle::Creating | Lifecycle::Deleting => {
                    let Some(_lock) = WorkspaceLock::try_acquire(&dir.lock())? else {
                        continue; // its create or delete is running
                    };
                    // Read again under the lock: a create that finished after `records` was
                    // read has made the workspace ready, and it must not be discarded.
                    let Some(current) = self.row(&record.id)? else {
                        continue;
                    };
                    if current.lifecycle == Lifecycle::Ready {
                        continue;
                    }
                    if let Some(cell) = &current.cell {
                        cell::stop(&dir, cell);
                    }
                    self.discard(&current);
                }
                Lifecycle::Ready => self.recover_ready(&dir, record)?,
            }
        }
        // Directories a killed create left in `incoming/`. One there may be a live create
        // that has made it but not yet locked it, so only old ones are taken; they are
        // nobody's workspace, and waiting costs nothing but their few bytes.
        if let Ok(entries) = std::fs::read_dir(self.state.incoming()) {
            for entry in entries.flatten() {
                let path = entry.path();
                if older_than(&path, STAGING_AGE)
                    && WorkspaceLock::try_acquire(&path.join("lock"))?.is_some()
                {
                    let _ = crate::tree::remove_tree(&path);
                }
            }
        }
        // Directories without a row: a create killed before it inserted one. A directory
        // enters `workspaces/` already locked by its creator (see `make_locked_dir`), so one
        // whose lock is free and which still has no row under that lock is an orphan; one
        // made after `records` was read is checked against the row again for that reason.
        let known: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        if let Ok(entries) = std::fs::read_dir(self.state.workspaces()) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(id) = name.to_str() else { continue };
                if known.contains(&id) {
                    continue;
                }
                let dir = self.state.workspace(id);
                let Some(_lock) = WorkspaceLock::try_acquire(&dir.lock())? else {
                    continue;
                };
                if self.row(id)?.is_none() {
                    let aside = self.state.trash().join(format!("{id}-{}", new_id()));
                    if std::fs::rename(dir.root(), &aside).is_ok() {
                        let _ = crate::tree::remove_tree(&aside);
                    }
                }
            }
        }
        // Name links whose workspace is gone.
        if let Ok(entries) = std::fs::read_dir(self.state.names()) {
            for entry in entries.flatten() {
                let path = entry.path();
                if std::fs::metadata(&path).is_err() {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Ok(())
    }

    /// The row of the workspace with id `id`, as it is now.
    fn row(&self, id: &str) -> Result<Option<WorkspaceRecord>> {
        Ok(self
            .store
            .find_workspace(id)?
            .filter(|record| record.id == id))
    }

    fn recover_ready(&mut self, dir: &WorkspaceDir, record: &WorkspaceRecord) -> Result<()> {
        let dead_cell = record.cell.as_ref().filter(|cell| !cell::is_alive(cell));
        let snapshots = self.store.snapshots(&record.id)?;
        let unfinished: Vec<_> = snapshots.iter().filter(|s| !s.complete).collect();
        let journal_waiting = std::fs::metadata(dir.journal()).is_ok_and(|m| m.len() > 0);
        let trash_waiting = std::fs::read_dir(dir.trash()).is_ok_and(|mut d| d.next().is_some());
        if dead_cell.is_none() && unfinished.is_empty() && !journal_waiting && !trash_waiting {
            return Ok(());
        }
        let Some(_lock) = WorkspaceLock::try_acquire(&dir.lock())? else {
            return Ok(());
        };
        // Read again under the lock: another process may have changed it since (started a
        // new cell, finished a snapshot, deleted it).
        let Some(record) = self.row(&record.id)? else {
            return Ok(());
        };
        let record = &record;
        let dead_cell = record.cell.as_ref().filter(|cell| !cell::is_alive(cell));
        let snapshots = self.store.snapshots(&record.id)?;
        let unfinished: Vec<_> = snapshots.iter().filter(|s| !s.complete).collect();
        if let Some(cell) = dead_cell {
            cell::clean_up(dir, cell);
            self.store.set_cell(&record.id, None)?;
        }
        for snapshot in unfinished {
            crate::versions::undo_snapshot(dir, record.mode, &snapshot.id)?;
            self.store.delete_snapshot(&snapshot.id)?;
        }
        if journal_waiting {
            journal::ingest(&dir.journal(), &mut self.store, &record.id)?;
        }
        if trash_waiting {
            crate::versions::empty_trash(dir);
        }
        Ok(())
    }
}

/// Whether `path` was last modified more than `age` ago (an unreadable time counts as old).
fn older_than(path: &Path, age: Duration) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|metadata| metadata.modified())
        .map(|modified| modified.elapsed().is_ok_and(|elapsed| elapsed > age))
        .unwrap_or(true)
}
