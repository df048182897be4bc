//! What `burrow exec` needs to reach a running workspace without opening the database: the
//! name link and a small file written once when the workspace is created.
//!
//! Opening SQLite costs more than the whole budget of an exec on a running cell, so the fast
//! path reads `names/NAME` (a symlink to the workspace's directory) and `exec.json`, connects
//! to the agent's socket, and only falls back to the database when the cell is not running,
//! the workspace has expired, or anything looks unusual.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, WorkspaceError};
use crate::layout::{StateDir, WorkspaceDir};
use crate::names::looks_like_id;

/// The contents of `exec.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecInfo {
    /// The workspace's id.
    pub id: String,
    /// Its name.
    pub name: Option<String>,
    /// Its policy (as JSON here: serde_json is already in every burrow process's hot path, a
    /// TOML parser is not).
    pub policy: burrow_policy::PolicyFile,
    /// When it expires (Unix seconds).
    pub expires_at: Option<i64>,
    /// Redaction rules for everything printed of it (besides its secrets).
    #[serde(default)]
    pub redact: Vec<burrow_redact::RuleSpec>,
}

impl ExecInfo {
    /// Whether the workspace's time is up.
    pub fn expired(&self) -> bool {
        self.expires_at
            .is_some_and(|at| at <= crate::journal::now_ms() / 1000)
    }

    /// Writes the file atomically (temporary file, then rename).
    pub fn write(&self, dir: &WorkspaceDir) -> Result<()> {
        let path = dir.exec_info();
        let temp = dir.root().join(".exec.json.tmp");
        let text = serde_json::to_vec(self).map_err(|error| {
            WorkspaceError::Invalid(format!("cannot encode exec.json: {error}"))
        })?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)
            .map_err(WorkspaceError::io(&temp))?;
        file.write_all(&text).map_err(WorkspaceError::io(&temp))?;
        std::fs::rename(&temp, &path).map_err(WorkspaceError::io(&path))
    }

    /// Reads a workspace's file; `None` if it is missing or unreadable (the caller then asks the
    /// database).
    pub fn read(dir: &WorkspaceDir) -> Option<ExecInfo> {
        let text = std::fs::read(dir.exec_info()).ok()?;
        serde_json::from_slice(&text).ok()
    }
}

/// Finds a workspace's directory by name or id without the database.
pub fn resolve(state: &StateDir, name_or_id: &str) -> Option<WorkspaceDir> {
    if crate::names::validate_name(name_or_id).is_err() {
        return None;
    }
    let id = if looks_like_id(name_or_id) && state.workspace(name_or_id).root().is_dir() {
        name_or_id.to_owned()
    } else {
        let target = std::fs::read_link(state.name_link(name_or_id)).ok()?;
        let id = target.file_name()?.to_str()?.to_owned();
        if !looks_like_id(&id) {
            return None;
        }
        id
    };
    Some(state.workspace(&id))
}

/// Creates (or replaces) the link from a name to a workspace's directory.
pub fn link_name(state: &StateDir, name: &str, id: &str) -> Result<()> {
    let link = state.name_link(name);
    let temp = state.names().join(format!(".{name}.tmp"));
    let _ = std::fs::remove_file(&temp);
    let target = Path::new("../workspaces").join(id);
    std::os::unix::fs::symlink(&target, &temp).map_err(WorkspaceError::io(&temp))?;
    std::fs::rename(&temp, &link).map_err(WorkspaceError::io(&link))
}
