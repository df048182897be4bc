//! Where a workspace's pieces live in burrow's state directory.
//!
//! ```text
//! $BURROW_HOME/
//!   state.db                     workspaces, snapshots, audit (SQLite, WAL)
//!   names/NAME -> ../workspaces/ID   name resolution without opening the database
//!   incoming/ID/                 a workspace directory being made, locked, before it moves in
//!   workspaces/ID/
//!     layers/seed/               the baseline (read-only lower layer)
//!     layers/SNAPSHOT_ID/        frozen upper layers, stacked above the seed
//!     upper/  work/              the current changes, and overlayfs's scratch
//!     tree/                      the copying fallback's single directory
//!     trash/                     layers being removed
//!     exec.json                  what `burrow exec` needs, written once
//!     audit.journal              audit records waiting to enter the database
//!     agent.sock  agent.log      the running cell's agent
//!     lock                       held while the workspace's cell starts or stops
//!     secrets.json               its secrets, owner-only
//! ```

use std::path::{Path, PathBuf};

/// The name of the baseline layer's directory.
pub const SEED_LAYER: &str = "seed";

/// burrow's state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// The state directory at `root`.
    pub fn new(root: impl Into<PathBuf>) -> StateDir {
        StateDir { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The database.
    pub fn database(&self) -> PathBuf {
        self.root.join("state.db")
    }

    /// The directory of name links.
    pub fn names(&self) -> PathBuf {
        self.root.join("names")
    }

    /// A name's link.
    pub fn name_link(&self, name: &str) -> PathBuf {
        self.names().join(name)
    }

    /// Directories on their way out (deleted workspaces).
    pub fn trash(&self) -> PathBuf {
        self.root.join("trash")
    }

    /// Workspace directories being made. Each moves into [`StateDir::workspaces`] with its lock
    /// already held, so a directory there is never one whose creator lives but holds no lock.
    pub fn incoming(&self) -> PathBuf {
        self.root.join("incoming")
    }

    /// All workspaces' directories.
    pub fn workspaces(&self) -> PathBuf {
        self.root.join("workspaces")
    }

    /// One workspace's files.
    pub fn workspace(&self, id: &str) -> WorkspaceDir {
        WorkspaceDir {
            root: self.workspaces().join(id),
        }
    }
}

/// One workspace's directory.
#[derive(Debug, Clone)]
pub struct WorkspaceDir {
    root: PathBuf,
}

impl WorkspaceDir {
    /// The workspace directory at `root`.
    pub fn new(root: impl Into<PathBuf>) -> WorkspaceDir {
        WorkspaceDir { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// All layers.
    pub fn layers(&self) -> PathBuf {
        self.root.join("layers")
    }

    /// One layer: `seed` or a snapshot's id.
    pub fn layer(&self, id: &str) -> PathBuf {
        self.layers().join(id)
    }

    /// The current changes.
    pub fn upper(&self) -> PathBuf {
        self.root.join("upper")
    }

    /// overlayfs's work directory.
    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    /// The copying fallback's tree.
    pub fn tree(&self) -> PathBuf {
        self.root.join("tree")
    }

    /// Layers on their way out.
    pub fn trash(&self) -> PathBuf {
        self.root.join("trash")
    }

    /// What `burrow exec` needs.
    pub fn exec_info(&self) -> PathBuf {
        self.root.join("exec.json")
    }

    /// Audit records not yet in the database.
    pub fn journal(&self) -> PathBuf {
        self.root.join("audit.journal")
    }

    /// The agent's socket.
    pub fn socket(&self) -> PathBuf {
        self.root.join("agent.sock")
    }

    /// The agent's log.
    pub fn log(&self) -> PathBuf {
        self.root.join("agent.log")
    }

    /// Its secrets (owner-only; never mounted in the cell).
    pub fn secrets(&self) -> PathBuf {
        self.root.join("secrets.json")
    }

    /// The lifecycle lock.
    pub fn lock(&self) -> PathBuf {
        self.root.join("lock")
    }
}
