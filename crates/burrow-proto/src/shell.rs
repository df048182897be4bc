//! Interactive shells on a pseudo-terminal, living in the cell between calls.
//!
//! A shell's output is kept by the agent in a bounded buffer addressed by absolute byte
//! positions: a reader asks from a cursor and gets the next cursor back, and learns how much it
//! lost when its cursor fell out of the buffer.

use serde::{Deserialize, Serialize};

/// Shell requests (host to agent) and their answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ShellMessage {
    /// Start a shell. Answered by `Opened`.
    Open {
        /// Request id.
        id: u64,
        /// Working directory in the workspace.
        cwd: String,
        /// Terminal size.
        cols: u16,
        /// Terminal size.
        rows: u16,
        /// The whole environment.
        env: Vec<(String, String)>,
    },
    /// Output from `cursor` on. Answered by `Output` and one data chunk (channel stdout).
    Read {
        /// Request id.
        id: u64,
        /// The shell.
        shell: String,
        /// Absolute position to read from.
        cursor: u64,
        /// At most this many bytes.
        max_bytes: u64,
        /// Before answering, wait (bounded by `wait_max_ms`) until the shell has produced
        /// nothing for this long.
        wait_idle_ms: u64,
        /// Before answering, wait (bounded by `wait_max_ms`) until there is output past
        /// `cursor`.
        wait_data: bool,
        /// The longest any wait may take.
        wait_max_ms: u64,
    },
    /// Type into the shell.
    Write {
        /// Request id.
        id: u64,
        /// The shell.
        shell: String,
        /// What to type.
        data: String,
    },
    /// Send a signal to the shell's foreground process group.
    Signal {
        /// Request id.
        id: u64,
        /// The shell.
        shell: String,
        /// The signal number.
        signal: i32,
    },
    /// Change the terminal size.
    Resize {
        /// Request id.
        id: u64,
        /// The shell.
        shell: String,
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// End the shell (hang up, then kill).
    Close {
        /// Request id.
        id: u64,
        /// The shell.
        shell: String,
    },
    /// Every shell. Answered by `List`.
    ListAll {
        /// Request id.
        id: u64,
    },

    // ---- agent to host ----
    /// A shell started.
    Opened {
        /// The `Open` request.
        id: u64,
        /// Its name, for later requests.
        shell: String,
        /// Its pid in the cell.
        pid: u32,
    },
    /// Output; the bytes follow as one data chunk of `len` bytes.
    Output {
        /// The `Read` request.
        id: u64,
        /// Absolute position of the first byte returned.
        start: u64,
        /// Length of the data chunk that follows.
        len: u64,
        /// Bytes between the cursor asked for and `start` that the buffer no longer holds.
        lost: u64,
        /// Everything the shell has produced so far (the end of the buffer).
        end: u64,
        /// Set once the shell has exited.
        exit: Option<ExitStatus>,
    },
    /// The shells.
    List {
        /// The `ListAll` request.
        id: u64,
        /// One entry each.
        shells: Vec<ShellInfo>,
    },
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitStatus {
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// Signal, if one killed it.
    pub signal: Option<i32>,
}

/// A shell, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellInfo {
    /// Its name.
    pub shell: String,
    /// Its pid in the cell.
    pub pid: u32,
    /// Terminal size.
    pub cols: u16,
    /// Terminal size.
    pub rows: u16,
    /// Output produced so far.
    pub end: u64,
    /// Set once it has exited.
    pub exit: Option<ExitStatus>,
}

impl ShellMessage {
    /// The request id.
    pub fn id(&self) -> u64 {
        match self {
            ShellMessage::Open { id, .. }
            | ShellMessage::Read { id, .. }
            | ShellMessage::Write { id, .. }
            | ShellMessage::Signal { id, .. }
            | ShellMessage::Resize { id, .. }
            | ShellMessage::Close { id, .. }
            | ShellMessage::ListAll { id }
            | ShellMessage::Opened { id, .. }
            | ShellMessage::Output { id, .. }
            | ShellMessage::List { id, .. } => *id,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Message;

    use super::*;

    #[test]
    fn nested_messages_carry_both_tags() {
        let message = Message::Shell(ShellMessage::Write {
            id: 3,
            shell: "sh-1".into(),
            data: "ls\n".into(),
        });
        let json = serde_json::to_string(&message).unwrap();
        assert_eq!(
            json,
            r#"{"type":"shell","op":"write","id":3,"shell":"sh-1","data":"ls\n"}"#
        );
        assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), message);
        assert_eq!(message.id(), Some(3));
    }
}
