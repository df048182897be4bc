//! Persistent command sessions: one long-lived shell whose working directory, environment and
//! functions carry from one command to the next.

use serde::{Deserialize, Serialize};

use crate::shell::ExitStatus;

/// Session requests (host to agent) and their answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum SessionMessage {
    /// Start a session. Answered by `Opened`.
    Open {
        /// Request id.
        id: u64,
        /// Working directory in the workspace.
        cwd: String,
        /// The whole environment.
        env: Vec<(String, String)>,
    },
    /// Run a command line in the session. Its output arrives as data chunks on stdout and
    /// stderr, in the order the agent read them, then `Result`.
    Exec {
        /// Request id.
        id: u64,
        /// The session.
        session: String,
        /// The command line, run by the session's shell.
        command: String,
        /// Kill what the command started after this long.
        timeout_ms: Option<u64>,
    },
    /// End a session.
    Close {
        /// Request id.
        id: u64,
        /// The session.
        session: String,
    },
    /// Every session. Answered by `List`.
    ListAll {
        /// Request id.
        id: u64,
    },

    // ---- agent to host ----
    /// A session started.
    Opened {
        /// The `Open` request.
        id: u64,
        /// Its name, for later requests.
        session: String,
        /// Its shell's pid in the cell.
        pid: u32,
    },
    /// A command finished (its output is complete).
    Result {
        /// The `Exec` request.
        id: u64,
        /// The command's exit status (`$?`), when the shell reported one.
        exit_code: Option<i32>,
        /// Whether its timeout killed it.
        timed_out: bool,
        /// Set when the session's shell itself ended (`exit N` in the command, or killed).
        ended: Option<ExitStatus>,
        /// Whether the shell had to be replaced (a timeout it could not survive): its
        /// variables and functions are gone; the working directory was kept.
        restarted: bool,
    },
    /// The sessions.
    List {
        /// The `ListAll` request.
        id: u64,
        /// One entry each.
        sessions: Vec<SessionInfo>,
    },
}

/// A session, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Its name.
    pub session: String,
    /// Its shell's pid in the cell.
    pub pid: u32,
    /// Its shell's working directory after the last command.
    pub cwd: String,
    /// Commands run so far.
    pub commands: u64,
    /// Set once its shell has ended.
    pub ended: Option<ExitStatus>,
}

impl SessionMessage {
    /// The request id.
    pub fn id(&self) -> u64 {
        match self {
            SessionMessage::Open { id, .. }
            | SessionMessage::Exec { id, .. }
            | SessionMessage::Close { id, .. }
            | SessionMessage::ListAll { id }
            | SessionMessage::Opened { id, .. }
            | SessionMessage::Result { id, .. }
            | SessionMessage::List { id, .. } => *id,
        }
    }
}
