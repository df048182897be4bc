//! Workspace errors: one line each, saying what was wrong and what to do.

use std::path::PathBuf;

/// Why a workspace operation failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// No workspace has that name or id.
    #[error("no workspace named {0}; see `burrow ws list`")]
    NotFound(String),
    /// The name is taken.
    #[error("a workspace named {0} already exists; pick another name")]
    NameTaken(String),
    /// The name does not follow the rules.
    #[error(
        "`{0}` is not a valid workspace name: use letters, digits, `.`, `_` and `-` (up to 64, starting with a letter or digit)"
    )]
    InvalidName(String),
    /// A snapshot name or id that does not exist.
    #[error(
        "workspace {workspace} has no snapshot named {snapshot}; see `burrow snapshot list {workspace}`"
    )]
    SnapshotNotFound {
        /// The workspace.
        workspace: String,
        /// The snapshot.
        snapshot: String,
    },
    /// A snapshot cannot be deleted while something builds on it.
    #[error("snapshot {0} cannot be deleted: {1}")]
    SnapshotInUse(String, String),
    /// Bad input: a path, a size, a seed.
    #[error("{0}")]
    Invalid(String),
    /// The policy stored or given is invalid.
    #[error(transparent)]
    Policy(#[from] burrow_policy::PolicyError),
    /// The cell could not be started.
    #[error(transparent)]
    Sandbox(#[from] burrow_sandbox::SandboxError),
    /// The agent refused a request.
    #[error("{message}")]
    Agent {
        /// What kind of refusal.
        code: burrow_proto::ErrorCode,
        /// The agent's one-line reason (untrusted: shown, never acted on).
        message: String,
    },
    /// The workspace's cell is not running.
    #[error("workspace {0} is not running; `burrow ws start {0}`")]
    NotRunning(String),
    /// The workspace's cell is already running.
    #[error("workspace {0} is already running")]
    AlreadyRunning(String),
    /// The agent broke the protocol or went away.
    #[error("the workspace's agent stopped answering ({0}); `burrow ws stop` and retry")]
    AgentLost(String),
    /// The state database failed.
    #[error("the state database failed: {0}")]
    Database(#[from] rusqlite::Error),
    /// A file operation on the host failed.
    #[error("{path}: {error}")]
    Io {
        /// Which path.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
}

impl WorkspaceError {
    /// Whether the agent said the path does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            WorkspaceError::Agent {
                code: burrow_proto::ErrorCode::NotFound,
                ..
            }
        )
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> WorkspaceError {
        let path = path.into();
        move |error| WorkspaceError::Io { path, error }
    }
}

impl From<burrow_proto::ProtocolError> for WorkspaceError {
    fn from(error: burrow_proto::ProtocolError) -> WorkspaceError {
        WorkspaceError::AgentLost(error.to_string())
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, WorkspaceError>;
