//! The audit journal: one JSON line per operation, appended to a file in the workspace's
//! directory, moved into the database later.
//!
//! `burrow exec` on a running cell must not pay for opening SQLite (its whole budget is a few
//! hundred microseconds), so operations append here instead. Appends hold a shared lock, so
//! several processes append at once; [`ingest`] holds the exclusive lock while it copies the
//! lines into the database and empties the file. A line is appended before the operation is
//! reported to the caller, so an acknowledged operation is never missing from the log; records
//! keep their unique id, so a line ingested twice (ingest killed between the commit and the
//! truncation) is stored once.

use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rustix::fs::FlockOperation;

use crate::error::{Result, WorkspaceError};
use crate::store::{AuditRecord, Store};

/// Appends one record.
pub fn append(path: &Path, record: &AuditRecord) -> Result<()> {
    let mut line = serde_json::to_vec(record).map_err(|error| {
        WorkspaceError::Invalid(format!("cannot encode an audit record: {error}"))
    })?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(WorkspaceError::io(path))?;
    rustix::fs::flock(&file, FlockOperation::LockShared).map_err(|e| WorkspaceError::Io {
        path: path.to_owned(),
        error: e.into(),
    })?;
    // One write(2) of one line: O_APPEND places it whole at the end, whoever else appends.
    file.write_all(&line).map_err(WorkspaceError::io(path))
}

/// Moves a workspace's journal into the database.
pub fn ingest(path: &Path, store: &mut Store, workspace_id: &str) -> Result<()> {
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(WorkspaceError::Io {
                path: path.to_owned(),
                error,
            });
        }
    };
    rustix::fs::flock(&file, FlockOperation::LockExclusive).map_err(|e| WorkspaceError::Io {
        path: path.to_owned(),
        error: e.into(),
    })?;
    let mut text = Vec::new();
    file.read_to_end(&mut text)
        .map_err(WorkspaceError::io(path))?;
    if text.is_empty() {
        return Ok(());
    }
    // A line cut short by a writer killed mid-write has no newline and no valid JSON: it was
    // never acknowledged, and is dropped.
    let records: Vec<AuditRecord> = text
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect();
    store.insert_audit(workspace_id, &records)?;
    file.set_len(0).map_err(WorkspaceError::io(path))?;
    file.rewind().map_err(WorkspaceError::io(path))?;
    Ok(())
}

/// A new record of `kind` about `subject`, stamped now.
pub fn record(kind: &str, subject: impl Into<String>) -> AuditRecord {
    AuditRecord {
        uid: format!("{}{}", crate::names::new_id(), crate::names::new_id()),
        at_ms: now_ms(),
        kind: kind.to_owned(),
        subject: subject.into(),
        cwd: None,
        exit_code: None,
        duration_ms: None,
    }
}

/// Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Lifecycle, StorageMode, WorkspaceRecord};

    #[test]
    fn appended_records_reach_the_database_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("state.db")).unwrap();
        store
            .insert_workspace(&WorkspaceRecord {
                id: "aaaaaaaaaaaa".into(),
                name: None,
                created_at: 0,
                policy: String::new(),
                mode: StorageMode::Overlay,
                expires_at: None,
                labels: Default::default(),
                chain: Vec::new(),
                cell: None,
                lifecycle: Lifecycle::Ready,
                tenant: None,
            })
            .unwrap();
        let journal = dir.path().join("audit.journal");
        let first = record("exec", "make test");
        append(&journal, &first).unwrap();
        append(&journal, &record("file.write", "src/lib.rs")).unwrap();
        // A writer killed mid-line.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&journal)
            .unwrap()
            .write_all(b"{\"uid\":\"x")
            .unwrap();
        ingest(&journal, &mut store, "aaaaaaaaaaaa").unwrap();
        assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
        // Ingested again, as after a crash between commit and truncation.
        append(&journal, &first).unwrap();
        ingest(&journal, &mut store, "aaaaaaaaaaaa").unwrap();
        let audit = store.audit("aaaaaaaaaaaa").unwrap();
        assert_eq!(audit.len(), 2);
        assert_eq!(audit[0], first);
    }
}
