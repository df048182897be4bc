//! The control messages. Requests carry an `id` chosen by the host; every answer and data chunk
//! for that request carries it back, so one connection can run several requests at once.

use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 2;

/// A control message, either way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    // ---- host to agent ----
    /// First message on a connection.
    Hello {
        /// The host's protocol version.
        version: u32,
    },
    /// Run a command. Output arrives as data chunks on stdout and stderr, then `Exited` or
    /// `ExecFailed`.
    Exec {
        /// Request id.
        id: u64,
        /// The command and its arguments; `argv[0]` is looked up in the environment's `PATH`.
        argv: Vec<String>,
        /// The complete environment.
        env: Vec<(String, String)>,
        /// The working directory, relative to the workspace (or absolute under it).
        cwd: String,
        /// Kill the command's process group after this long.
        timeout_ms: Option<u64>,
        /// Whether stdin data chunks follow (ended by `CloseStdin`); otherwise /dev/null.
        stdin: bool,
    },
    /// Send a signal to a running command's process group.
    Signal {
        /// The `Exec` request.
        id: u64,
        /// The signal number.
        signal: i32,
    },
    /// No more stdin for a running command.
    CloseStdin {
        /// The `Exec` request.
        id: u64,
    },
    /// Read part of a file.
    ReadFile {
        /// Request id.
        id: u64,
        /// Path in the workspace.
        path: String,
        /// Where to start.
        offset: u64,
        /// How much at most.
        max_bytes: u64,
    },
    /// Replace a file atomically with `size` bytes, sent as file data chunks after this message.
    WriteFile {
        /// Request id.
        id: u64,
        /// Path in the workspace.
        path: String,
        /// The exact number of bytes that follow.
        size: u64,
        /// Permission bits; the existing file's, or 0644, when absent.
        mode: Option<u32>,
        /// Create missing parent directories.
        parents: bool,
    },
    /// List a directory (or describe a file).
    List {
        /// Request id.
        id: u64,
        /// Path in the workspace.
        path: String,
        /// Descend into subdirectories (never through symlinks).
        recursive: bool,
        /// Stop after this many entries.
        max_entries: u64,
    },
    /// Describe one path without following a final symlink.
    Stat {
        /// Request id.
        id: u64,
        /// Path in the workspace.
        path: String,
    },
    /// Remove a file, a symlink, or (with `recursive`) a directory tree.
    Remove {
        /// Request id.
        id: u64,
        /// Path in the workspace.
        path: String,
        /// Remove directories and their contents.
        recursive: bool,
    },
    /// Create a directory.
    Mkdir {
        /// Request id.
        id: u64,
        /// Path in the workspace.
        path: String,
        /// Create missing parents, and succeed if it exists.
        parents: bool,
    },
    /// Create a symbolic link.
    Symlink {
        /// Request id.
        id: u64,
        /// Path of the link in the workspace.
        path: String,
        /// What it points to (stored as given).
        target: String,
    },
    /// Stop every command and exit, ending the cell.
    Shutdown,
    /// Replace the files under /run/secrets in the cell with these (name, content).
    SetSecrets {
        /// Request id.
        id: u64,
        /// The secrets.
        files: Vec<(String, Vec<u8>)>,
    },
    /// Connect to a TCP port on the cell's loopback; after `Done`, the connection carries the
    /// TCP stream's bytes both ways, without frames (a published port).
    TcpConnect {
        /// Request id.
        id: u64,
        /// The port.
        port: u16,
    },
    /// Shells, both ways.
    Shell(crate::shell::ShellMessage),
    /// Sessions, both ways.
    Session(crate::session::SessionMessage),
    /// Services, both ways.
    Service(crate::service::ServiceMessage),

    // ---- agent to host ----
    /// Answer to `Hello`.
    HelloOk {
        /// The agent's protocol version.
        version: u32,
    },
    /// A command started.
    Started {
        /// The `Exec` request.
        id: u64,
        /// Its pid in the cell.
        pid: u32,
    },
    /// A command ended; its output is complete.
    Exited {
        /// The `Exec` request.
        id: u64,
        /// Exit code, if it exited.
        code: Option<i32>,
        /// Signal, if one killed it.
        signal: Option<i32>,
        /// Whether the agent killed it because its timeout passed.
        timed_out: bool,
    },
    /// A command could not be started.
    ExecFailed {
        /// The `Exec` request.
        id: u64,
        /// The errno of the failed exec or lookup.
        errno: i32,
    },
    /// File contents follow as one data chunk.
    FileData {
        /// The `ReadFile` request.
        id: u64,
        /// The file's whole size.
        size: u64,
        /// Where the chunk starts.
        offset: u64,
        /// The chunk's length.
        len: u64,
    },
    /// Directory entries.
    Entries {
        /// The `List` or `Stat` request.
        id: u64,
        /// The entries, depth first, sorted by name at each level.
        entries: Vec<Entry>,
        /// Whether `max_entries` cut the list short.
        truncated: bool,
    },
    /// A request succeeded.
    Done {
        /// The request.
        id: u64,
    },
    /// A request failed.
    Failed {
        /// The request.
        id: u64,
        /// What kind of failure.
        code: ErrorCode,
        /// One line for people.
        message: String,
    },
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Path relative to the workspace.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes (of the link itself, for a symlink).
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Where a symlink points.
    pub target: Option<String>,
}

/// The kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// Anything else (fifo, socket, device).
    Other,
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The path does not exist.
    NotFound,
    /// The path would leave the workspace.
    Escapes,
    /// A directory where a file was needed, or the reverse.
    WrongKind,
    /// Something already exists there.
    Exists,
    /// Too much data.
    TooLarge,
    /// The request is malformed or its fields out of range.
    Invalid,
    /// Any other failure of the operation.
    Io,
}

impl Message {
    /// The request id a message refers to, if any.
    pub fn id(&self) -> Option<u64> {
        match self {
            Message::Exec { id, .. }
            | Message::Signal { id, .. }
            | Message::CloseStdin { id }
            | Message::ReadFile { id, .. }
            | Message::WriteFile { id, .. }
            | Message::List { id, .. }
            | Message::Stat { id, .. }
            | Message::Remove { id, .. }
            | Message::Mkdir { id, .. }
            | Message::Symlink { id, .. }
            | Message::Started { id, .. }
            | Message::Exited { id, .. }
            | Message::ExecFailed { id, .. }
            | Message::FileData { id, .. }
            | Message::Entries { id, .. }
            | Message::Done { id }
            | Message::SetSecrets { id, .. }
            | Message::TcpConnect { id, .. }
            | Message::Failed { id, .. } => Some(*id),
            Message::Shell(message) => Some(message.id()),
            Message::Session(message) => Some(message.id()),
            Message::Service(message) => Some(message.id()),
            Message::Hello { .. } | Message::HelloOk { .. } | Message::Shutdown => None,
        }
    }
}
