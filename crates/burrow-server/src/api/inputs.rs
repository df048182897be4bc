//! What each operation takes. One type per operation serves both surfaces: an MCP tool's
//! arguments are exactly its fields, and the HTTP API fills the same fields from the URL's path
//! and query and the JSON body. The doc comments are the field descriptions models read in the
//! tools' JSON schemas.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::error::{ApiError, ApiResult};

/// A command: a shell command line (run with `/bin/sh -c`), or a program and its arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CommandLine {
    /// A shell command line, e.g. `make test 2>&1 | tail -n 20`.
    Shell(String),
    /// A program and its arguments, run without a shell, e.g. `["python3", "-V"]`.
    Argv(Vec<String>),
}

impl CommandLine {
    /// The argument vector to run.
    pub fn argv(&self) -> ApiResult<Vec<String>> {
        match self {
            CommandLine::Shell(line) if line.trim().is_empty() => Err(ApiError::invalid(
                "`command` is empty: give a command to run",
            )),
            CommandLine::Shell(line) => Ok(vec!["/bin/sh".into(), "-c".into(), line.clone()]),
            CommandLine::Argv(argv) if argv.first().is_none_or(String::is_empty) => Err(
                ApiError::invalid("`command` is empty: give a program and its arguments"),
            ),
            CommandLine::Argv(argv) => Ok(argv.clone()),
        }
    }
}

/// What a sandbox can reach on the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// No network at all (the default).
    None,
    /// Only its own loopback interface: servers and clients inside can talk to each other.
    Loopback,
}

/// Run one command in a fresh sandbox that is thrown away afterwards.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunInput {
    /// The command: a shell command line, or a program and its arguments.
    pub command: CommandLine,
    /// Seconds before the command is killed (default 30; at most 3600).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// `none` (default) or `loopback`.
    #[serde(default)]
    pub network: Option<Network>,
    /// Hosts the command may reach through burrow's proxy, e.g. `["pypi.org",
    /// "*.pythonhosted.org"]` (`example.com`, `*.example.com`, `example.com:443`); every other
    /// host is refused, and so are private and loopback addresses.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Memory limit, e.g. `512M` or `2G`.
    #[serde(default)]
    pub memory: Option<String>,
    /// Environment variables to set.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A workspace, by name or id.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceRef {
    /// The workspace's name or id.
    pub workspace: String,
}

/// Make a new persistent workspace.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInput {
    /// A name to refer to it by (letters, digits, `.`, `_`, `-`); without one, use its id.
    #[serde(default)]
    pub name: Option<String>,
    /// Seconds until it is deleted automatically.
    #[serde(default)]
    pub ttl: Option<u64>,
    /// Labels, e.g. `{"task": "fix-123"}`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Network of its commands: `none` (default) or `loopback`.
    #[serde(default)]
    pub network: Option<Network>,
    /// Hosts its commands may reach through burrow's proxy (`example.com`, `*.example.com`,
    /// `example.com:443`); every other host is refused, and so are private addresses.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Default timeout of its commands in seconds (default 30; at most 3600).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Memory limit of its cell, e.g. `1G`.
    #[serde(default)]
    pub memory: Option<String>,
    /// Most processes its cell may hold at once (default 512).
    #[serde(default)]
    pub pids: Option<u64>,
    /// Seconds without activity after which its cell stops (0: never).
    #[serde(default)]
    pub idle_timeout: Option<u64>,
    /// Secrets, by name: kept out of every output, passed to commands only when asked for.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// Kinds of personal data to redact from everything it prints, e.g. `email`, `ip:mask`.
    #[serde(default)]
    pub redact: Vec<String>,
}

/// Run a command in a workspace.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The command: a shell command line, or a program and its arguments.
    pub command: CommandLine,
    /// Working directory, relative to /workspace (default: /workspace itself).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Environment variables to set.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds before the command is killed (default: the workspace's, 30 unless set; 0: none).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Secrets to pass as variables: `NAME`, or `NAME=VARIABLE` to rename.
    #[serde(default)]
    pub secret_env: Vec<String>,
    /// More kinds of personal data to redact from this command's output.
    #[serde(default)]
    pub redact: Vec<String>,
}

/// Go back to the baseline or a snapshot.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The snapshot to go back to (default: the baseline, before any change).
    #[serde(default)]
    pub to: Option<String>,
}

/// A snapshot of a workspace.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The snapshot's name.
    pub name: String,
}

/// Apply a unified diff.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// A unified diff as `git diff` or `diff -u` writes it; paths relative to /workspace
    /// (`a/` and `b/` prefixes are understood). New files, deletions and renames included.
    pub patch: String,
}

/// List a directory.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileListInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// Directory relative to /workspace (default `.`).
    #[serde(default = "dot")]
    pub path: String,
    /// List everything below it, not just its entries.
    #[serde(default)]
    pub recursive: bool,
}

/// Read part of a file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileReadInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// File relative to /workspace.
    pub path: String,
    /// Byte to start at (default 0); continue a long file with the `next_offset` returned.
    #[serde(default)]
    pub offset: u64,
    /// Bytes to read at most (default 65536, at most 1048576).
    #[serde(default = "default_read_size")]
    pub max_bytes: u64,
}

/// How a file's content is written in a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum Encoding {
    /// Text as it is.
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    /// Bytes in base64.
    #[serde(rename = "base64")]
    Base64,
}

/// Write a whole file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileWriteInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// File relative to /workspace; missing parent directories are made.
    pub path: String,
    /// The new content (the whole file).
    pub content: String,
    /// `utf-8` (default) or `base64`.
    #[serde(default)]
    pub encoding: Encoding,
    /// Permission bits in octal, e.g. `755` (default: kept, or `644` for a new file).
    #[serde(default)]
    pub mode: Option<String>,
}

/// Remove a file or directory.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileDeleteInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// Path relative to /workspace.
    pub path: String,
    /// Remove a directory and everything in it.
    #[serde(default)]
    pub recursive: bool,
}

/// Make a directory.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MkdirInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// Directory relative to /workspace.
    pub path: String,
    /// Make missing parents too, and accept an existing directory.
    #[serde(default)]
    pub parents: bool,
}

/// Start an interactive shell on a terminal.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellOpenInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// Working directory relative to /workspace.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Terminal width (default 120).
    #[serde(default = "default_cols")]
    pub cols: u16,
    /// Terminal height (default 30).
    #[serde(default = "default_rows")]
    pub rows: u16,
    /// Environment variables to set.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Secrets to pass as variables: `NAME`, or `NAME=VARIABLE`.
    #[serde(default)]
    pub secret_env: Vec<String>,
}

/// A shell of a workspace.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellRef {
    /// The workspace's name or id.
    pub workspace: String,
    /// The shell's id, from `shell_open`.
    pub shell: String,
}

/// Read a shell's output.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellReadInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The shell's id.
    pub shell: String,
    /// Where to read from: 0, then the `next_cursor` of the previous read.
    #[serde(default)]
    pub cursor: u64,
    /// Characters to return at most (default 65536).
    #[serde(default = "default_read_chars")]
    pub max_chars: usize,
    /// First wait until the shell has printed nothing for this many milliseconds (at most
    /// 60000): use it after writing a command, to get its whole output.
    #[serde(default)]
    pub wait_idle_ms: Option<u64>,
    /// Remove terminal escape sequences (colours, cursor moves).
    #[serde(default)]
    pub plain: bool,
}

/// Type into a shell.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellWriteInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The shell's id.
    pub shell: String,
    /// What to type.
    pub text: String,
    /// Press Enter after it (default true).
    #[serde(default = "yes")]
    pub newline: bool,
}

/// A signal for a shell's foreground programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum SignalName {
    /// Interrupt, as Ctrl-C.
    Int,
    /// Ask to terminate.
    Term,
    /// Hang up.
    Hup,
    /// Kill outright.
    Kill,
    /// Quit, as Ctrl-\.
    Quit,
}

impl SignalName {
    /// The signal's number.
    pub fn number(self) -> i32 {
        match self {
            SignalName::Int => libc::SIGINT,
            SignalName::Term => libc::SIGTERM,
            SignalName::Hup => libc::SIGHUP,
            SignalName::Kill => libc::SIGKILL,
            SignalName::Quit => libc::SIGQUIT,
        }
    }
}

/// Send a signal to a shell.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellSignalInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The shell's id.
    pub shell: String,
    /// `INT`, `TERM`, `HUP`, `KILL` or `QUIT`.
    pub signal: SignalName,
}

/// Resize a shell's terminal.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellResizeInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The shell's id.
    pub shell: String,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// Start a persistent command session.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionOpenInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// Working directory relative to /workspace.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Environment variables to set.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Secrets to pass as variables: `NAME`, or `NAME=VARIABLE`.
    #[serde(default)]
    pub secret_env: Vec<String>,
}

/// A session of a workspace.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionRef {
    /// The workspace's name or id.
    pub workspace: String,
    /// The session's id, from `session_open`.
    pub session: String,
}

/// Run a command line in a session.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionExecInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The session's id.
    pub session: String,
    /// A shell command line; `cd`, `export` and functions carry over to the next one.
    pub command: String,
    /// Seconds before it is interrupted (default: the workspace's; 0: none).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// How to tell that a service is ready.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum ReadyProbe {
    /// Ready once this file exists (relative to /workspace).
    File(String),
    /// Ready once this `HOST:PORT` accepts a connection.
    Tcp(String),
    /// Ready once this http:// URL answers with a status below 400.
    Http(String),
    /// Ready once this shell command succeeds.
    Cmd(String),
}

/// What happens when a service exits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    /// It stays exited (default).
    #[default]
    No,
    /// It is started again when it fails.
    OnFailure,
}

/// Start a long-running service (a dev server, a database).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceStartInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The service's name.
    pub name: String,
    /// The command: a shell command line, or a program and its arguments.
    pub command: CommandLine,
    /// Working directory relative to /workspace.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Environment variables to set.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Secrets to pass as variables: `NAME`, or `NAME=VARIABLE`.
    #[serde(default)]
    pub secret_env: Vec<String>,
    /// How to tell it is ready, e.g. `{"tcp": "127.0.0.1:8000"}`; without one it is ready
    /// once started.
    #[serde(default)]
    pub ready: Option<ReadyProbe>,
    /// Seconds readiness may take (default 30).
    #[serde(default = "default_ready_timeout")]
    pub ready_timeout: u64,
    /// Milliseconds between probes (default 500).
    #[serde(default = "default_ready_interval")]
    pub ready_interval_ms: u64,
    /// `no` (default) or `on-failure`.
    #[serde(default)]
    pub restart: Restart,
}

/// A service of a workspace.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceRef {
    /// The workspace's name or id.
    pub workspace: String,
    /// The service's name.
    pub name: String,
}

/// Read a service's log.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceLogsInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The service's name.
    pub name: String,
    /// Lines from the end (default 200).
    #[serde(default = "default_tail")]
    pub tail: usize,
    /// The whole log that is kept instead.
    #[serde(default)]
    pub all: bool,
}

/// Stop a service.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceStopInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The service's name.
    pub name: String,
    /// Seconds between SIGTERM and SIGKILL (default 10).
    #[serde(default = "default_grace")]
    pub grace: u64,
}

/// Set a secret.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretSetInput {
    /// The workspace's name or id.
    pub workspace: String,
    /// The secret's name (letters, digits, `_`).
    pub name: String,
    /// Its value.
    pub value: String,
}

/// A secret of a workspace.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretRef {
    /// The workspace's name or id.
    pub workspace: String,
    /// The secret's name.
    pub name: String,
}

fn dot() -> String {
    ".".to_owned()
}

fn yes() -> bool {
    true
}

fn default_read_size() -> u64 {
    64 * 1024
}

fn default_read_chars() -> usize {
    64 * 1024
}

fn default_cols() -> u16 {
    120
}

fn default_rows() -> u16 {
    30
}

fn default_ready_timeout() -> u64 {
    30
}

fn default_ready_interval() -> u64 {
    500
}

fn default_tail() -> usize {
    200
}

fn default_grace() -> u64 {
    10
}

/// Nothing: the operation takes no arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}
