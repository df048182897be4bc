//! A workspace's lifecycle lock: `flock` on a file in its directory, held while its cell starts
//! or stops and while its layers change (reset, snapshot, delete).
//!
//! flock is released by the kernel when the holder dies, so a killed burrow never leaves a
//! workspace locked; recovery uses [`WorkspaceLock::try_acquire`] to tell a half-finished
//! operation of a dead process from one still in progress.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rustix::fs::FlockOperation;

use crate::error::{Result, WorkspaceError};

/// A held lock; dropping it releases it.
#[derive(Debug)]
pub struct WorkspaceLock {
    /// `None` for the lock of a workspace whose directory is gone: there is nothing to guard.
    _file: Option<File>,
}

impl WorkspaceLock {
    /// Waits for the lock.
    pub fn acquire(path: &Path) -> Result<WorkspaceLock> {
        let file = open(path)?;
        rustix::fs::flock(&file, FlockOperation::LockExclusive).map_err(|error| {
            WorkspaceError::Io {
                path: path.to_owned(),
                error: error.into(),
            }
        })?;
        Ok(WorkspaceLock { _file: Some(file) })
    }

    /// Takes the lock if nobody holds it; `None` if somebody does. A lock whose directory is
    /// gone counts as free.
    pub fn try_acquire(path: &Path) -> Result<Option<WorkspaceLock>> {
        let file = match open(path) {
            Ok(file) => file,
            Err(WorkspaceError::Io { error, .. })
                if error.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(Some(WorkspaceLock { _file: None }));
            }
            Err(error) => return Err(error),
        };
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(WorkspaceLock { _file: Some(file) })),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
            Err(error) => Err(WorkspaceError::Io {
                path: path.to_owned(),
                error: error.into(),
            }),
        }
    }
}

fn open(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
        .map_err(WorkspaceError::io(path))
}
