//! What the API answers when an operation fails: a code a program can act on and one line a
//! person (or a model) can.

use burrow_workspace::WorkspaceError;
use serde::Serialize;

/// The kind of failure; each maps to one HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No token, or one that is not valid (401).
    Unauthorized,
    /// No such workspace, file, shell or snapshot, for this caller (404).
    NotFound,
    /// The request is malformed or asks for something impossible (400).
    Invalid,
    /// The request clashes with the current state: a name taken, a snapshot in use (409).
    Conflict,
    /// The request carries more than the limits allow (413).
    TooLarge,
    /// The workspace's agent stopped answering, or the server is shutting down (503).
    Unavailable,
    /// burrow itself failed (500).
    Internal,
}

impl ErrorCode {
    /// The HTTP status this code is answered with.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::Unauthorized => 401,
            ErrorCode::NotFound => 404,
            ErrorCode::Invalid => 400,
            ErrorCode::Conflict => 409,
            ErrorCode::TooLarge => 413,
            ErrorCode::Unavailable => 503,
            ErrorCode::Internal => 500,
        }
    }
}

/// A failed operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{error}")]
pub struct ApiError {
    /// One line saying what is wrong and what to do.
    pub error: String,
    /// The kind of failure.
    pub code: ErrorCode,
}

impl ApiError {
    /// An error of `code` saying `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            error: one_line(&message.into()),
            code,
        }
    }

    /// Bad input.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Invalid, message)
    }

    /// Something that does not exist for this caller.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::NotFound, message)
    }

    /// A failure of burrow itself.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Internal, message)
    }
}

impl From<WorkspaceError> for ApiError {
    fn from(error: WorkspaceError) -> ApiError {
        use burrow_proto::ErrorCode as Agent;
        let code = match &error {
            // The CLI's messages point at CLI commands; an API caller gets the bare fact.
            WorkspaceError::NotFound(name) => {
                return ApiError::not_found(format!("no workspace named {name}"));
            }
            WorkspaceError::NotRunning(name) => {
                return ApiError::new(
                    ErrorCode::Conflict,
                    format!("workspace {name} is not running; start it first"),
                );
            }
            WorkspaceError::SnapshotNotFound { .. } => ErrorCode::NotFound,
            WorkspaceError::NameTaken(_)
            | WorkspaceError::SnapshotInUse(..)
            | WorkspaceError::AlreadyRunning(_) => ErrorCode::Conflict,
            WorkspaceError::InvalidName(_)
            | WorkspaceError::Invalid(_)
            | WorkspaceError::Policy(_) => ErrorCode::Invalid,
            WorkspaceError::Agent { code, .. } => match code {
                Agent::NotFound => ErrorCode::NotFound,
                Agent::Exists => ErrorCode::Conflict,
                Agent::TooLarge => ErrorCode::TooLarge,
                Agent::Escapes | Agent::WrongKind | Agent::Invalid => ErrorCode::Invalid,
                Agent::Io => ErrorCode::Internal,
            },
            WorkspaceError::AgentLost(_) => ErrorCode::Unavailable,
            WorkspaceError::Sandbox(_)
            | WorkspaceError::Database(_)
            | WorkspaceError::Io { .. } => ErrorCode::Internal,
        };
        ApiError::new(code, error.to_string())
    }
}

impl From<burrow_redact::RedactError> for ApiError {
    fn from(error: burrow_redact::RedactError) -> ApiError {
        ApiError::invalid(error.to_string())
    }
}

/// The first line of a message, and no control characters: an error is one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
        .chars()
        .filter(|c| !c.is_control())
        .collect()
}

/// Results of API operations.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_errors_keep_their_meaning() {
        let missing = ApiError::from(WorkspaceError::NotFound("web".into()));
        assert_eq!(missing.code, ErrorCode::NotFound);
        assert_eq!(missing.error, "no workspace named web");
        let taken = ApiError::from(WorkspaceError::NameTaken("web".into()));
        assert_eq!(taken.code.status(), 409);
        let lost = ApiError::from(WorkspaceError::AgentLost("eof".into()));
        assert_eq!(lost.code, ErrorCode::Unavailable);
    }

    #[test]
    fn messages_are_one_line() {
        let error = ApiError::internal("first\n\n  second\t");
        assert_eq!(error.error, "first; second");
    }
}
